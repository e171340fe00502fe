//! `--worker-from-env NAME`: the worker ID from an environment variable, as Kubernetes'
//! downward API sets POD_INDEX from the `apps.kubernetes.io/pod-index` label
//! (deploy/kubernetes/statefulset.yaml), for `segflake next` and `segflake serve`.

use std::process::{Command, Stdio};

mod common;
use common::{free_port, get, wait_for_port, Server};

const BIN: &str = env!("CARGO_BIN_EXE_segflake");

/// Runs segflake with `env` set (and POD_INDEX removed unless given): (exit code, stdout,
/// stderr).
fn run(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(args).env_remove("POD_INDEX").stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run segflake");
    (
        out.status.code().expect("an exit code"),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn worker_of(stdout: &str) -> u64 {
    let v: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    v["worker"].as_u64().unwrap()
}

#[test]
fn next_reads_the_worker_id_from_the_variable() {
    let (code, out, err) = run(
        &["next", "--worker-from-env", "POD_INDEX", "--json"],
        &[("POD_INDEX", "3")],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(worker_of(&out), 3);
    let (code, out, err) = run(
        &[
            "next",
            "--layout",
            "sonyflake",
            "--worker-from-env",
            "MY_ID",
            "--json",
        ],
        &[("MY_ID", "65535")],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(worker_of(&out), 65535);
}

#[test]
fn next_refuses_unset_non_decimal_and_out_of_range_values() {
    let (code, out, err) = run(&["next", "--worker-from-env", "POD_INDEX"], &[]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(
        err.starts_with("error: ")
            && err.contains("POD_INDEX is not set")
            && err.contains("0..=1023"),
        "{err}"
    );
    let (code, _, err) = run(
        &["next", "--worker-from-env", "POD_INDEX"],
        &[("POD_INDEX", "web-3")],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("POD_INDEX=\"web-3\" is not a decimal number"),
        "{err}"
    );
    let (code, _, err) = run(
        &[
            "next",
            "--layout",
            "js-safe",
            "--worker-from-env",
            "POD_INDEX",
        ],
        &[("POD_INDEX", "8")],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("worker id 8 is out of range") && err.contains("0..=7"),
        "{err}"
    );
    let (code, _, err) = run(
        &["next", "--worker", "1", "--worker-from-env", "POD_INDEX"],
        &[("POD_INDEX", "1")],
    );
    assert_eq!(code, 2);
    assert!(err.contains("one way"), "{err}");
    let (code, _, err) = run(&["next", "--worker-from-env", "A=B"], &[]);
    assert_eq!(code, 2);
    assert!(err.contains("not an environment variable name"), "{err}");
}

/// Starts `segflake serve` on a free port with `env` and `args` (and a config file).
fn serve(name: &str, args: &[&str], config: Option<&str>, env: &[(&str, &str)]) -> Server {
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("segflake-wenv-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = Command::new(BIN);
    cmd.arg("serve")
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .args(args)
        .env_remove("POD_INDEX")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(text) = config {
        std::fs::write(dir.join("serve.toml"), text).unwrap();
        cmd.arg("--config").arg(dir.join("serve.toml"));
    }
    let child = cmd.spawn().expect("segflake serve starts");
    let server = Server { child, port, dir };
    wait_for_port(port);
    server
}

fn served_worker(s: &Server) -> u64 {
    let id = get(s.port, "/api/snowflake/get/any");
    assert_eq!(id.status, 200, "{}", id.body);
    let d = get(s.port, &format!("/api/decode/{}", id.body.trim()));
    assert_eq!(d.status, 200, "{}", d.body);
    d.json()["worker"].as_u64().unwrap()
}

#[test]
fn serve_takes_the_worker_id_from_the_flag_or_the_config_file() {
    let s = serve(
        "flag",
        &["--worker-from-env", "POD_INDEX"],
        None,
        &[("POD_INDEX", "4")],
    );
    assert_eq!(served_worker(&s), 4);
    drop(s);
    let s = serve(
        "file",
        &[],
        Some("worker_from_env = \"ORDINAL\"\n"),
        &[("ORDINAL", "9")],
    );
    assert_eq!(served_worker(&s), 9);
}

#[test]
fn serve_does_not_start_without_a_valid_value() {
    let (code, _, err) = run(&["serve", "--worker-from-env", "POD_INDEX"], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("POD_INDEX is not set"), "{err}");
    let (code, _, err) = run(
        &["serve", "--worker-from-env", "POD_INDEX"],
        &[("POD_INDEX", "1024")],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("worker id 1024 is out of range"), "{err}");
    let (code, _, err) = run(
        &["serve", "--worker", "1", "--worker-from-env", "POD_INDEX"],
        &[("POD_INDEX", "1")],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("one way"), "{err}");
}
