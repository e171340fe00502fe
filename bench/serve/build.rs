//! The client of proto/segflake/v1/segflake.proto for `grpc-load`, compiled in Rust (protox:
//! no protoc).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let proto = root.join("segflake/v1/segflake.proto");
    println!("cargo:rerun-if-changed={}", proto.display());
    tonic_prost_build::configure()
        .build_server(false)
        .compile_fds(protox::compile([&proto], [&root])?)?;
    Ok(())
}
