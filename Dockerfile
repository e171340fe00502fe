# syntax=docker/dockerfile:1
#
# segflake serve — the ID service as a container: one static (musl) binary on an empty base
# image (`FROM scratch`: no shell, no libc, no CA bundle), running as a non-root user.
#
# Build, from the repository root:
#   bash deploy/build-static.sh                 # → target/image/amd64/segflake
#   docker build -t segflake:0.1.0 .
# Both architectures (run `bash deploy/build-static.sh arm64` too):
#   docker buildx build --platform linux/amd64,linux/arm64 -t REGISTRY/segflake:0.1.0 --push .
#
# Run (snowflake IDs with worker 3, segment IDs from a file store on a volume):
#   docker run --rm -p 8080:8080 -e POD_INDEX=3 -v segflake-data:/data segflake:0.1.0 \
#     serve --listen 0.0.0.0:8080 --worker-from-env POD_INDEX \
#           --store file:/data/segments --create-missing-tags 1000
#   curl localhost:8080/api/snowflake/get/order
# Any other subcommand works the same way (`docker run --rm segflake:0.1.0 next --worker 1`).
#
# Kubernetes: deploy/kubernetes/ (a StatefulSet whose worker IDs are pod indexes, and a
# Deployment that leases them from a registry), both over TLS from a Secret. The image has
# no shell, so probes are HTTPS GETs (/healthz, /readyz) and a preStop hook uses the
# kubelet's `sleep` action.
#
# TLS to stores and registries: there is no system CA bundle here; mount the CA that signed
# the server's certificate and name it in the URL (`rediss://…?ca=/etc/segflake/ca.pem`,
# `sslrootcert=…`, `ssl-ca=…`), as docs/tls.md describes.
#
# The binary is built outside Docker (Rust's musl target linked by zig, the toolchain the
# release artifacts use); `make test` (scripts/test-rust.sh → deploy/check.sh) runs that same
# binary from an otherwise empty root filesystem and checks this file's COPY sources.

FROM scratch

# Set by BuildKit for each --platform; the plain builder uses the default.
ARG TARGETARCH=amd64

LABEL org.opencontainers.image.title="segflake" \
      org.opencontainers.image.description="segflake serve: a Leaf-compatible HTTP ID service (snowflake and segment IDs)" \
      org.opencontainers.image.licenses="MIT OR Apache-2.0"

COPY target/image/${TARGETARCH}/segflake /segflake

# A numeric user (no /etc/passwd in the image): Kubernetes' runAsNonRoot can check it.
USER 65532:65532
EXPOSE 8080
# SIGTERM drains: stop accepting, finish requests in flight, release the worker lease, exit 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/segflake"]
# Without arguments: the command list. Kubernetes passes `serve ...` as args.
CMD ["--help"]
