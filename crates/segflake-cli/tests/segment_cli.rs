//! `segflake segment`, `segflake stats` and `segflake serial` as a user runs them.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{Command, Output};

fn segflake(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_segflake"))
        .args(args)
        .output()
        .unwrap()
}

fn lines(out: &Output) -> Vec<String> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn temp_store(name: &str) -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(format!(
        "segflake-cli-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let spec = format!("file:{}", dir.join("ids.txt").display());
    (dir, spec)
}

#[test]
fn segment_ids_survive_a_restart_on_the_file_store() {
    let (dir, store) = temp_store("restart");
    let first = segflake(&[
        "segment", "--store", &store, "--tag", "order", "--count", "3", "--step", "2000",
    ]);
    assert!(first.status.success(), "{first:?}");
    assert_eq!(lines(&first), ["1", "2", "3"]);
    let second = segflake(&[
        "segment", "--store", &store, "--tag", "order", "--count", "2",
    ]);
    assert_eq!(
        lines(&second),
        ["4", "5"],
        "continues where the first run stopped: it gave back what it did not issue"
    );
    let json = segflake(&[
        "segment", "--store", &store, "--tag", "order", "--json", "--step", "5",
    ]);
    assert_eq!(lines(&json), [r#"{"id":"6","tag":"order"}"#]);
    let stats = segflake(&["stats", "--store", &store, "--json"]);
    let rows = lines(&stats);
    assert_eq!(rows.len(), 1);
    assert!(
        rows[0].starts_with(r#"{"tag":"order","max_id":"7","step":5,"updated_at":"20"#),
        "{}",
        rows[0]
    );
    let text = segflake(&["stats", "--store", &store]);
    assert!(lines(&text)[1].starts_with("order"), "{text:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn concurrent_cli_processes_never_share_an_id() {
    let (dir, store) = temp_store("concurrent");
    let children: Vec<_> = (0..3)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_segflake"))
                .args([
                    "segment", "--store", &store, "--tag", "t", "--count", "2000", "--step", "64",
                ])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut all = HashSet::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        for l in lines(&out) {
            assert!(all.insert(l.parse::<u64>().unwrap()), "duplicate {l}");
        }
    }
    assert_eq!(all.len(), 6000);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn segment_usage_errors_exit_2_and_refusals_exit_1() {
    let (dir, store) = temp_store("errors");
    let out = segflake(&["segment", "--store", "sqlite:ids.db", "--tag", "t"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("allowed: file:PATH") && err.contains("redis://"),
        "{err}"
    );
    // A database that is down is a runtime error naming it (nothing listens on port 9).
    let out = segflake(&["segment", "--store", "redis://127.0.0.1:9", "--tag", "t"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("SEGMENTS_EXHAUSTED") && err.contains("refused"),
        "{err}"
    );
    let out = segflake(&["segment", "--store", &store]);
    assert_eq!(out.status.code(), Some(2));
    // Option values are refused by the core, with their code, as in every binding.
    let out = segflake(&["segment", "--store", &store, "--tag", "t", "--step", "0"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid --step: got 0; allowed integers 1..="),
        "{err}"
    );
    assert!(err.contains("INVALID_ARGUMENT"), "{err}");
    let out = segflake(&["segment", "--store", &store, "--tag", "a b"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("INVALID_ARGUMENT"));
    std::fs::write(dir.join("ids.txt"), "t not-a-number\n").unwrap();
    let out = segflake(&["segment", "--store", &store, "--tag", "t"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 1"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn serials_have_the_documented_shape_and_increase() {
    let out = segflake(&[
        "serial",
        "--count",
        "5",
        "--worker",
        "7",
        "--worker-digits",
        "1",
        "--sequence-digits",
        "3",
    ]);
    assert!(out.status.success(), "{out:?}");
    let serials: Vec<u64> = lines(&out).iter().map(|l| l.parse().unwrap()).collect();
    assert!(serials.windows(2).all(|w| w[0] < w[1]));
    for s in &serials {
        let text = s.to_string();
        assert_eq!(text.len(), 16, "{text}");
        assert_eq!(&text[12..13], "7", "worker digit in {text}");
    }
    // A persisted last serial far in the future: the next one continues above it.
    let out = segflake(&[
        "serial",
        "--json",
        "--utc-offset",
        "+08:00",
        "--last",
        "9912312359590005",
    ]);
    assert_eq!(
        lines(&out),
        [
            r#"{"serial":"9912312359590006","date":"991231235959","worker":0,"sequence":6,"time":"2099-12-31T15:59:59.000Z"}"#
        ]
    );
    let out = segflake(&["serial", "--utc-offset", "8"]);
    assert!(out.status.success());
    let out = segflake(&["serial", "--utc-offset", "+8"]);
    assert_eq!(out.status.code(), Some(2));
    let out = segflake(&["serial", "--sequence-digits", "9"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("1..=7"));
}

#[test]
fn several_stores_give_their_residue_classes_and_a_broken_one_is_skipped() {
    let (dir_a, a) = temp_store("multi-a");
    let (dir_b, b) = temp_store("multi-b");
    let run = || {
        segflake(&[
            "segment", "--store", &a, "--store", &b, "--tag", "order", "--count", "3", "--step",
            "100",
        ])
    };
    let first = run();
    assert!(first.status.success(), "{first:?}");
    assert_eq!(
        lines(&first),
        ["2", "4", "6"],
        "the first store's class: even"
    );
    // The first store's file no longer parses: the second store serves, odd IDs.
    std::fs::write(dir_a.join("ids.txt"), "not a store file\n").unwrap();
    let second = run();
    assert!(second.status.success(), "{second:?}");
    assert_eq!(
        lines(&second),
        ["1", "3", "5"],
        "the second store's class: odd"
    );
    std::fs::remove_dir_all(&dir_a).unwrap();
    std::fs::remove_dir_all(&dir_b).unwrap();
}
