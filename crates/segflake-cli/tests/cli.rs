//! Runs the built `segflake` binary the way a user or a script does.

use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

const BIN: &str = env!("CARGO_BIN_EXE_segflake");

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn finish(out: Output) -> Run {
    Run {
        code: out
            .status
            .code()
            .expect("exit code (not killed by a signal)"),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}

fn segflake(args: &[&str]) -> Run {
    finish(
        Command::new(BIN)
            .args(args)
            .env_remove("SEGFLAKE_OBFUSCATION_KEY")
            .stdin(Stdio::null())
            .output()
            .expect("run segflake"),
    )
}

fn segflake_stdin(args: &[&str], input: &str) -> Run {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run segflake");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    finish(child.wait_with_output().expect("wait"))
}

/// Asserts success and returns stdout.
fn ok(args: &[&str]) -> String {
    let r = segflake(args);
    assert_eq!(
        r.code, 0,
        "segflake {args:?} failed with {}:\n{}",
        r.code, r.stderr
    );
    assert!(
        r.stderr.is_empty(),
        "segflake {args:?} wrote to stderr: {}",
        r.stderr
    );
    r.stdout
}

/// Asserts the documented error shape: exit `code`, `error: ` first on stderr, nothing on
/// stdout, and every one of `contains` in the message.
fn fails(args: &[&str], code: i32, contains: &[&str]) -> String {
    let r = segflake(args);
    assert_eq!(
        r.code, code,
        "segflake {args:?}: stdout {}\nstderr {}",
        r.stdout, r.stderr
    );
    assert!(
        r.stderr.starts_with("error: "),
        "segflake {args:?}: stderr does not start with `error: `: {}",
        r.stderr
    );
    assert!(
        r.stdout.is_empty(),
        "segflake {args:?} wrote to stdout: {}",
        r.stdout
    );
    for c in contains {
        assert!(
            r.stderr.contains(c),
            "segflake {args:?}: {c:?} not in {}",
            r.stderr
        );
    }
    r.stderr
}

/// Parses every line of `text` as a JSON object.
fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            assert!(v.is_object(), "not an object: {l}");
            v
        })
        .collect()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as u64
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is not a string in {v}"))
}

fn n(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not an unsigned number in {v}"))
}

#[test]
fn next_then_decode_gives_the_worker_and_a_time_within_a_second() {
    for (layout, worker) in [("twitter", "7"), ("sonyflake", "65535"), ("js-safe", "5")] {
        let before = now_ms();
        let id = ok(&["next", "--layout", layout, "--worker", worker]);
        let id = id.trim();
        assert!(id.bytes().all(|b| b.is_ascii_digit()), "{id}");
        let after = now_ms();
        let d = &json_lines(&ok(&["decode", id, "--layout", layout, "--json"]))[0];
        assert_eq!(n(d, "worker").to_string(), worker, "{d}");
        assert_eq!(s(d, "decimal"), id);
        let t = n(d, "timestamp_ms");
        // The tick's start: at most one tick (10 ms for sonyflake) before `before`.
        assert!(
            t + 1000 >= before && t <= after + 1000,
            "{t} not within 1 s of {before}..{after}"
        );
        let iso = s(d, "time");
        assert!(iso.ends_with('Z') && iso.len() == 24, "{iso}");
        // The text form carries the same facts.
        let text = ok(&["decode", id, "--layout", layout]);
        assert!(
            text.contains(&format!("worker        {worker}\n")),
            "{text}"
        );
        assert!(text.contains(iso), "{text}");
    }
}

#[test]
fn next_json_lines_parse_and_ids_increase() {
    let out = ok(&["next", "--worker", "3", "--count", "1000", "--json"]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1000);
    let ids: Vec<u64> = lines
        .iter()
        .map(|v| s(v, "decimal").parse().unwrap())
        .collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "IDs do not strictly increase"
    );
    for v in &lines {
        assert_eq!(n(v, "worker"), 3);
        assert_eq!(s(v, "format"), "decimal");
        assert_eq!(s(v, "id"), s(v, "decimal"));
    }
    // Plain output: one ID per line, also strictly increasing.
    let plain = ok(&["next", "--worker-from-ip", "10.0.3.7", "--count", "5000"]);
    let ids: Vec<u64> = plain.lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(ids.len(), 5000);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    // 10.0.3.7 → low 10 bits = 775.
    let d = &json_lines(&ok(&["decode", &ids[0].to_string(), "--json"]))[0];
    assert_eq!(n(d, "worker"), 775);
}

#[test]
fn every_format_round_trips_through_decode() {
    for format in ["decimal", "base62", "base32"] {
        let out = ok(&[
            "next", "--worker", "9", "--format", format, "--count", "3", "--json",
        ]);
        for v in json_lines(&out) {
            let text = s(&v, "id");
            match format {
                "base62" => assert_eq!(text.len(), 11, "{text}"),
                "base32" => assert_eq!(text.len(), 13, "{text}"),
                _ => {}
            }
            for how in ["auto", format] {
                let d = &json_lines(&ok(&["decode", text, "--format", how, "--json"]))[0];
                assert_eq!(s(d, "decimal"), s(&v, "decimal"), "{format} via {how}");
                assert_eq!(s(d, "format"), format);
                assert_eq!(n(d, "worker"), 9);
                assert_eq!(n(d, "sequence"), n(&v, "sequence"));
                assert_eq!(n(d, "timestamp_ms"), n(&v, "timestamp_ms"));
            }
            // encode converts between every pair of forms and back.
            for to in ["decimal", "base62", "base32"] {
                let other = ok(&["encode", text, "--format", to]);
                let back = ok(&["encode", other.trim(), "--from", to, "--format", format]);
                assert_eq!(back.trim(), text, "{format} -> {to} -> {format}");
            }
        }
    }
}

#[test]
fn decode_reads_standard_input_with_a_dash() {
    let ids = ok(&[
        "next", "--worker", "12", "--count", "4", "--format", "base62",
    ]);
    let r = segflake_stdin(&["decode", "-", "--json"], &ids);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines = json_lines(&r.stdout);
    assert_eq!(lines.len(), 4);
    for (v, text) in lines.iter().zip(ids.lines()) {
        assert_eq!(s(v, "id"), text);
        assert_eq!(n(v, "worker"), 12);
    }
}

#[test]
fn layout_uid_generator_fails_with_its_exhaustion_date() {
    let err = fails(
        &["layout", "uid-generator"],
        1,
        &["2024-11-20", "LAYOUT_EXHAUSTED"],
    );
    assert!(err.contains("ran out of time"), "{err}");
    fails(
        &["layout", "--layout", "uid-generator", "--json"],
        1,
        &["2024-11-20"],
    );
    fails(
        &["next", "--layout", "uid-generator", "--worker", "1"],
        1,
        &["2024-11-20"],
    );
    // A newer epoch and a shorter required lifetime make it usable.
    let out = ok(&[
        "layout",
        "uid-generator",
        "--epoch",
        "2025-01-01",
        "--min-lifetime-years",
        "0",
        "--json",
    ]);
    let v = &json_lines(&out)[0];
    assert_eq!(s(v, "exhausts_at"), "2033-07-04T21:24:16.000Z");
    assert_eq!(v["modified"], Value::Bool(true));
    // Old uid-generator IDs still decode: decoding does not require a future lifetime.
    let d = &json_lines(&ok(&[
        "decode",
        "34359746560",
        "--format",
        "decimal",
        "--layout",
        "uid-generator",
        "--json",
    ]))[0];
    assert_eq!(n(d, "worker"), 1);
    assert_eq!(s(d, "time"), "2016-05-20T00:00:01.000Z");
}

#[test]
fn layout_all_lists_every_preset_with_uid_generator_error_in_place() {
    let lines = json_lines(&ok(&["layout", "--all", "--json"]));
    let names: Vec<&str> = lines.iter().map(|v| s(v, "preset")).collect();
    assert_eq!(
        names,
        [
            "twitter",
            "sonyflake",
            "uid-generator",
            "js-safe",
            "twitter-dc"
        ]
    );
    assert_eq!(n(&lines[4], "datacenter_bits"), 5);
    assert_eq!(n(&lines[0], "max_ids_per_second"), 4_096_000);
    assert_eq!(s(&lines[0], "exhausts_at"), "2080-07-10T17:30:30.209Z");
    assert_eq!(s(&lines[0], "js_safe_until"), "2010-11-28T22:14:18.305Z");
    assert_eq!(n(&lines[1], "max_ids_per_second"), 25_600);
    assert_eq!(s(&lines[1], "order"), "time-sequence-worker");
    assert_eq!(s(&lines[2]["error"], "code"), "LAYOUT_EXHAUSTED");
    assert!(s(&lines[2]["error"], "message").contains("2024-11-20"));
    assert!(lines[3]["js_safe_until_ms"].is_null());
    assert_eq!(n(&lines[3], "total_bits"), 53);

    let text = ok(&["layout", "--all"]);
    assert_eq!(text.matches("layout             ").count(), 5, "{text}");
    assert!(
        text.contains("error              layout ran out of time on 2024-11-20"),
        "{text}"
    );
    assert!(
        text.contains("worker IDs         datacenter 0..=31 (5 bits), worker 0..=31 within it"),
        "{text}"
    );
    assert!(
        text.contains("max IDs/s          4,096,000 per worker"),
        "{text}"
    );
    fails(&["layout", "--all", "twitter"], 2, &["--all"]);
    fails(
        &["layout", "--all", "--epoch", "2025-01-01"],
        2,
        &["--epoch"],
    );
}

#[test]
fn worker_errors_name_the_range_and_how_to_give_one() {
    fails(
        &["next", "--worker", "1024"],
        1,
        &["1024", "0..=1023", "WORKER_ID_OUT_OF_RANGE"],
    );
    fails(
        &["next", "--layout", "js-safe", "--worker", "8"],
        1,
        &["0..=7"],
    );
    fails(
        &["next", "--layout", "sonyflake", "--worker", "65536"],
        1,
        &["0..=65535"],
    );
    fails(
        &["next", "--worker", "-1"],
        2,
        &["invalid value '-1' for '--worker"],
    );
    fails(
        &["next"],
        2,
        &["no worker ID", "--worker N", "--worker-from-hostname"],
    );
    fails(
        &["next", "--worker", "1", "--worker-from-ip", "10.0.0.1"],
        2,
        &["one way"],
    );
    fails(&["next", "--worker-from-hostname", "web"], 1, &["web-7"]);
    fails(&["next", "--worker-from-ip", "10.0.0"], 1, &["IPv4"]);
    let out = ok(&[
        "next",
        "--worker-from-hostname",
        "ids-12.ids.default.svc",
        "--json",
    ]);
    assert_eq!(n(&json_lines(&out)[0], "worker"), 12);
}

#[test]
fn usage_errors_exit_2_runtime_errors_exit_1() {
    fails(
        &["frobnicate"],
        2,
        &["unrecognized subcommand 'frobnicate'"],
    );
    fails(
        &["next", "--worker", "1", "--cuont", "3"],
        2,
        &["unexpected argument '--cuont'", "'--count'"],
    );
    fails(
        &["next", "--worker", "1", "--count", "0"],
        2,
        &["1..=16777216"],
    );
    fails(
        &["next", "--worker", "1", "--count"],
        2,
        &["a value is required for '--count"],
    );
    fails(
        &["next", "--worker", "1", "--worker", "2"],
        2,
        &["'--worker <N>' cannot be used multiple times"],
    );
    fails(
        &["next", "--worker", "1", "--format", "hex"],
        2,
        &["decimal, base62, base32"],
    );
    // Option values are checked by the core, as in every binding: a refusal, with its code.
    fails(
        &["next", "--worker", "1", "--layout", "snowflake"],
        1,
        &[
            "invalid layout: --layout: got \"snowflake\"",
            "twitter, sonyflake",
            "INVALID_LAYOUT",
        ],
    );
    fails(
        &["next", "--worker", "1", "--max-drift-ms", "3600001"],
        1,
        &["0..=3600000"],
    );
    fails(
        &["next", "--worker", "1", "--epoch", "2099-01-01"],
        1,
        &["in the future"],
    );
    fails(&["decode", "12345678901"], 2, &["ambiguous", "--format"]);
    fails(&["decode", "not-an-id!"], 1, &["cannot tell the format"]);
    fails(
        &["decode", "0000000000-", "--format", "base62"],
        1,
        &["position 10", "PARSE_ERROR"],
    );
    fails(&["decode"], 2, &["no ID given"]);
    fails(&["encode", "1"], 2, &["--format is required"]);
    fails(&["obfuscate", "1"], 2, &["no key given"]);
    fails(&["obfuscate", "1", "--key", "xyz"], 2, &["hexadecimal"]);
    fails(&["bench", "--seconds", "0"], 2, &["0.05..=60"]);
}

#[test]
fn help_for_every_command_documents_the_exit_codes() {
    for cmd in [
        "next",
        "decode",
        "layout",
        "encode",
        "obfuscate",
        "deobfuscate",
        "bench",
    ] {
        let text = ok(&[cmd, "--help"]);
        assert!(text.contains(&format!("segflake {cmd}")), "{cmd}: {text}");
        assert!(
            text.contains("Exit status:") && text.contains("usage error"),
            "{cmd}"
        );
        assert!(text.contains("--json"), "{cmd}");
        assert_eq!(ok(&["help", cmd]), text);
    }
    assert!(ok(&["next", "--help"]).contains("--worker-bits N"));
    assert!(ok(&[]).contains("Commands:"));
    assert!(ok(&["--version"]).starts_with("segflake "));
}

#[test]
fn obfuscate_round_trips_and_hides_order() {
    let key = "00112233445566778899aabbccddeeff";
    let ids: Vec<String> = (1..=20).map(|i: u64| i.to_string()).collect();
    let mut args = vec!["obfuscate", "--key", key, "--json"];
    args.extend(ids.iter().map(String::as_str));
    let lines = json_lines(&ok(&args));
    let hidden: Vec<u64> = lines
        .iter()
        .map(|v| s(v, "decimal").parse().unwrap())
        .collect();
    assert!(hidden.iter().all(|&h| h < 1 << 63));
    assert!(
        hidden.windows(2).any(|w| w[0] > w[1]),
        "obfuscated IDs kept their order"
    );
    let mut back_args = vec!["deobfuscate", "--key", key];
    let hidden_text: Vec<String> = hidden.iter().map(u64::to_string).collect();
    back_args.extend(hidden_text.iter().map(String::as_str));
    let back: Vec<String> = ok(&back_args).lines().map(str::to_string).collect();
    assert_eq!(back, ids);
    // The key can come from the environment.
    let r = finish(
        Command::new(BIN)
            .args(["obfuscate", "1"])
            .env("SEGFLAKE_OBFUSCATION_KEY", key)
            .output()
            .unwrap(),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), hidden_text[0]);
}

#[test]
fn bench_prints_a_table_and_json_rows() {
    let text = ok(&["bench", "--seconds", "0.05", "--threads", "1"]);
    for row in ["atomic fetch_add", "segflake twitter", "segflake 41/0/22"] {
        assert!(text.contains(row), "{row} missing:\n{text}");
    }
    let rows = json_lines(&ok(&[
        "bench",
        "--seconds",
        "0.05",
        "--threads",
        "1",
        "--json",
    ]));
    assert_eq!(rows.len(), 3);
    let twitter = &rows[1];
    assert_eq!(n(twitter, "ceiling_per_second"), 4_096_000);
    assert!(n(twitter, "ids") > 0);
    assert!(twitter["ids_per_second"].as_f64().unwrap() > 0.0);
}

#[test]
fn bench_store_measures_allocations_per_tag_count_and_next_latency() {
    let dir = std::env::temp_dir().join(format!("segflake-bench-store-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = format!("file:{}", dir.join("ids.txt").display());
    // Progress (the tags it created) goes to stderr.
    let r = finish(
        Command::new(BIN)
            .args([
                "bench",
                "--store",
                &store,
                "--tags",
                "1,5",
                "--seconds",
                "0.05",
            ])
            .args(["--rate", "1000", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("created 4 tags"), "{}", r.stderr);
    let rows = json_lines(&r.stdout);
    assert_eq!(rows.len(), 3, "{rows:?}");
    for (row, tags) in rows.iter().zip([1, 5]) {
        assert_eq!(row["row"], "allocate");
        assert_eq!(n(row, "tags"), tags);
        assert!(n(row, "allocations") > 0, "{row}");
        assert!(row["p99_ms"].as_f64().unwrap() >= row["p50_ms"].as_f64().unwrap());
    }
    let next = &rows[2];
    assert_eq!(next["row"], "next");
    assert!(n(next, "calls") >= 1000, "{next}");
    assert_eq!(n(next, "failed_calls"), 0, "{next}");
    assert!(n(next, "store_allocations") >= 1, "{next}");
    // The store holds the bench tags it created, and nothing else.
    let text = std::fs::read_to_string(dir.join("ids.txt")).unwrap();
    for i in 0..5 {
        assert!(text.contains(&format!("bench-000000{i} ")), "{text}");
    }
    assert!(!text.contains("bench-0000005"), "{text}");
    // Store-only flags need a store; counts are checked.
    fails(&["bench", "--tags", "5"], 2, &["--store URL"]);
    fails(
        &["bench", "--store", &store, "--tags", "1,0"],
        2,
        &["--tags", "allowed 1..=1000000"],
    );
    fails(
        &["bench", "--store", &store, "--rate", "5"],
        2,
        &["--rate 5", "1000..=10000000"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn broken_pipe_stops_quietly() {
    let mut child = Command::new(BIN)
        .args(["next", "--worker", "1", "--count", "16777216"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// ---------------------------------------------------------------------------------------
// The shared conformance vectors (tests/vectors/*.json), through the command line.

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors")
}

fn load(name: &str) -> Value {
    let path = vectors_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn cases<'a>(file: &'a Value, key: &str) -> &'a [Value] {
    file[key]
        .as_array()
        .unwrap_or_else(|| panic!("no array {key:?}"))
        .as_slice()
}

/// The layout options for a vector's `layout` object.
fn layout_args(layout: &Value) -> Vec<String> {
    let mut args = Vec::new();
    let obj = layout.as_object().expect("layout is an object");
    for (key, value) in obj {
        let flag = match key.as_str() {
            "preset" => "--layout",
            "time_bits" => "--time-bits",
            "worker_bits" => "--worker-bits",
            "datacenter_bits" => "--datacenter-bits",
            "sequence_bits" => "--sequence-bits",
            "tick_ms" => "--tick-ms",
            "epoch_ms" => "--epoch",
            "order" => "--order",
            "min_lifetime_years" => "--min-lifetime-years",
            other => panic!("layout field {other:?} has no command-line option"),
        };
        args.push(flag.to_string());
        args.push(match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
    }
    args
}

fn with(base: &[&str], extra: &[String]) -> Vec<String> {
    base.iter()
        .map(|s| s.to_string())
        .chain(extra.iter().cloned())
        .collect()
}

fn run_owned(args: &[String]) -> Run {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    segflake(&refs)
}

/// A vector's expected error: exit 1, the code on stderr, and `message_contains`.
fn expect_vector_error(case: &Value, args: &[String]) {
    let r = run_owned(args);
    let code = s(case, "error");
    assert_eq!(
        r.code, 1,
        "{case}: segflake {args:?}: {}{}",
        r.stdout, r.stderr
    );
    assert!(r.stderr.starts_with("error: "), "{case}: {}", r.stderr);
    assert!(
        r.stderr.contains(&format!("error code: {code}\n")),
        "{case}: {}",
        r.stderr
    );
    if let Some(part) = case.get("message_contains").and_then(Value::as_str) {
        assert!(
            r.stderr.contains(part),
            "{case}: {part:?} not in {}",
            r.stderr
        );
    }
}

#[test]
fn vectors_every_file_is_handled() {
    // New vector files must be wired in here (or stated as not applying to the CLI).
    let mut names: Vec<String> = std::fs::read_dir(vectors_dir())
        .expect("tests/vectors")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    for name in &names {
        match name.as_str() {
            "layouts.json" | "snowflake.json" | "codecs.json" | "obfuscation.json"
            | "options.json" => {}
            // Segment allocation and date-prefixed serials have no snowflake command; the
            // commands that expose them run these files.
            "segments.json" | "serials.json" => {
                eprintln!("{name}: not a snowflake/codec vector file; run by the segment and serial commands' tests");
            }
            // The CLI's registries perform the core's protocols, whose conversations the
            // core's tests run (registry_vectors.rs); tests/registries.rs and the lease_cli
            // scenario run the CLI's adapters against real servers.
            "zookeeper.json" | "etcd.json" | "redis.json" | "sql.json" => {
                eprintln!("{name}: a registry protocol's conversations; run by the core's tests");
            }
            other => {
                panic!("tests/vectors/{other} is not run by the CLI tests: add it to tests/cli.rs")
            }
        }
    }
    assert!(names.len() >= 4, "{names:?}");
}

fn check_sections(file: &Value, name: &str, known: &[&str]) {
    for key in file.as_object().expect("object").keys() {
        if key == "description" {
            continue;
        }
        assert!(
            known.contains(&key.as_str()),
            "{name}: section {key:?} is not run by tests/cli.rs"
        );
    }
}

#[test]
fn vectors_layouts() {
    let file = load("layouts.json");
    check_sections(&file, "layouts.json", &["cases"]);
    for case in cases(&file, "cases") {
        let args = with(&["layout", "--json"], &layout_args(&case["layout"]));
        if case.get("error").is_some() {
            expect_vector_error(case, &args);
            continue;
        }
        let r = run_owned(&args);
        assert_eq!(r.code, 0, "{case}: {}", r.stderr);
        let got = &json_lines(&r.stdout)[0];
        for (key, want) in case["expect"].as_object().expect("expect") {
            assert_eq!(&got[key.as_str()], want, "{}: {key}", s(case, "name"));
        }
    }
}

#[test]
fn vectors_snowflake() {
    let file = load("snowflake.json");
    check_sections(
        &file,
        "snowflake.json",
        &["compose", "decode", "invalid_options", "invalid_decode"],
    );
    for section in ["compose", "decode"] {
        for case in cases(&file, section) {
            let id = s(case, "id");
            let args = with(
                &["decode", id, "--format", "decimal", "--json"],
                &layout_args(&case["layout"]),
            );
            let r = run_owned(&args);
            assert_eq!(r.code, 0, "{case}: {}", r.stderr);
            let d = &json_lines(&r.stdout)[0];
            let name = s(case, "name");
            assert_eq!(s(d, "decimal"), id, "{name}");
            assert_eq!(d["timestamp_ms"], case["timestamp_ms"], "{name}");
            assert_eq!(d["tick"], case["tick"], "{name}");
            assert_eq!(d["worker"], case["worker_id"], "{name}");
            let datacenter = case.get("datacenter_id").unwrap_or(&Value::Null);
            assert_eq!(
                d.get("datacenter").unwrap_or(&Value::Null),
                datacenter,
                "{name}"
            );
            assert_eq!(d["sequence"], case["sequence"], "{name}");
        }
    }
    for case in cases(&file, "invalid_options") {
        let worker = case["worker_id"].to_string();
        let mut args = with(
            &["next", "--worker", &worker],
            &layout_args(&case["layout"]),
        );
        if let Some(dc) = case.get("datacenter_id") {
            args.extend(["--datacenter".to_string(), dc.to_string()]);
        }
        expect_vector_error(case, &args);
    }
    for case in cases(&file, "invalid_decode") {
        let args = with(
            &["decode", s(case, "id"), "--format", "decimal"],
            &layout_args(&case["layout"]),
        );
        expect_vector_error(case, &args);
    }
}

#[test]
fn vectors_codecs() {
    let file = load("codecs.json");
    check_sections(&file, "codecs.json", &["valid", "parse_aliases", "invalid"]);
    let formats = ["decimal", "base62", "base32"];
    for case in cases(&file, "valid") {
        let id = s(case, "id");
        for to in formats {
            // Encoding the number gives exactly the vector's text...
            let out = ok(&["encode", id, "--from", "decimal", "--format", to]);
            assert_eq!(out.trim_end_matches('\n'), s(case, to), "{id} as {to}");
            // ...and parsing the text gives the number back.
            let back = ok(&["encode", s(case, to), "--from", to, "--format", "decimal"]);
            assert_eq!(back.trim_end_matches('\n'), id, "{to} {:?}", s(case, to));
        }
    }
    for case in cases(&file, "parse_aliases") {
        let out = ok(&[
            "encode",
            s(case, "text"),
            "--from",
            s(case, "format"),
            "--format",
            "decimal",
        ]);
        assert_eq!(out.trim_end_matches('\n'), s(case, "id"), "{case}");
    }
    for case in cases(&file, "invalid") {
        let args: Vec<String> = [
            "encode",
            "--from",
            s(case, "format"),
            "--format",
            "decimal",
            "--",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([s(case, "text").to_string()])
        .collect();
        expect_vector_error(case, &args);
    }
}

#[test]
fn vectors_obfuscation() {
    let file = load("obfuscation.json");
    check_sections(&file, "obfuscation.json", &["cases", "invalid"]);
    for case in cases(&file, "cases") {
        let key = s(case, "key_hex");
        let out = ok(&["obfuscate", s(case, "id"), "--key", key]);
        assert_eq!(out.trim_end_matches('\n'), s(case, "obfuscated"), "{case}");
        let back = ok(&["deobfuscate", s(case, "obfuscated"), "--key", key]);
        assert_eq!(back.trim_end_matches('\n'), s(case, "id"), "{case}");
    }
    for case in cases(&file, "invalid") {
        let id = case.get("id").and_then(Value::as_str).unwrap_or("1");
        let args: Vec<String> = ["obfuscate", "--key", s(case, "key_hex"), id]
            .iter()
            .map(|s| s.to_string())
            .collect();
        expect_vector_error(case, &args);
    }
}

/// `options.json`'s layout cases through the layout flags: the core's answer, with every
/// option named as a flag (`--time-bits`, `--layout` for the preset, `--epoch`).
#[test]
fn vectors_options_layout_cases_through_the_flags() {
    let file = load("options.json");
    let flag = |name: &str| match name {
        "preset" => "--layout".to_string(),
        "epoch_ms" => "--epoch".to_string(),
        other => format!("--{}", other.replace('_', "-")),
    };
    let mut ran = 0;
    for case in cases(&file, "cases")
        .iter()
        .filter(|c| c["set"] == "layout")
    {
        let mut args = vec!["layout".to_string(), "--json".to_string()];
        for (key, value) in case["input"].as_object().unwrap() {
            args.push(flag(key));
            args.push(match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
        }
        let r = run_owned(&args);
        let name = s(case, "name");
        if let Some(error) = case["snake"].get("error") {
            assert_eq!(r.code, 1, "{name}: {}", r.stderr);
            assert!(
                r.stderr
                    .contains(&format!("error code: {}\n", s(error, "code"))),
                "{name}: {}",
                r.stderr
            );
            let mut message = s(error, "message").to_string();
            for key in [
                "min_lifetime_years",
                "sequence_bits",
                "datacenter_bits",
                "worker_bits",
                "time_bits",
                "tick_ms",
                "epoch_ms",
            ] {
                message = message.replace(key, &flag(key));
            }
            message = message.replace(": order: ", ": --order: ");
            // The time of the check differs from the file's now_ms.
            let message = message.split(" (now is").next().unwrap();
            assert!(
                r.stderr.contains(message),
                "{name}: {message:?} not in {}",
                r.stderr
            );
        } else {
            assert_eq!(r.code, 0, "{name}: {}", r.stderr);
            let got = &json_lines(&r.stdout)[0];
            for (key, want) in case["snake"]["settings"].as_object().unwrap() {
                assert_eq!(&got[key.as_str()], want, "{name}: {key}");
            }
        }
        ran += 1;
    }
    assert!(ran >= 10, "{ran} layout cases");
}

/// A throwaway redis-server on a free port, stopped on drop.
struct Redis {
    child: std::process::Child,
    url: String,
    _dir: PathBuf,
}

impl Redis {
    fn start() -> Redis {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let dir = std::env::temp_dir().join(format!("segflake-cli-redis-{port}"));
        std::fs::create_dir_all(&dir).unwrap();
        // Durable, as a lease registry should be (otherwise `segflake` warns on stderr).
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes",
            ])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server (scripts/test-rust.sh installs redis-server)");
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Redis {
            child,
            url: format!("redis://127.0.0.1:{port}/0"),
            _dir: dir,
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn next_with_a_registry_leases_a_worker_id_and_releases_it_above_its_ids() {
    let redis = Redis::start();
    let url = redis.url.as_str();
    let run = |count: &str| {
        json_lines(&ok(&[
            "next",
            "--registry",
            url,
            "--count",
            count,
            "--json",
            "--worker-bits",
            "3",
            "--preferred-worker-id",
            "6",
        ]))
    };
    let first = run("2000");
    assert!(first.iter().all(|j| n(j, "worker") == 6));
    // Released at its last ID's time: the next run takes the same worker ID at once and
    // continues above every ID of the first.
    let second = run("3");
    assert_eq!(n(&second[0], "worker"), 6);
    let last: u64 = s(&first[1999], "decimal").parse().unwrap();
    let next: u64 = s(&second[0], "decimal").parse().unwrap();
    assert!(next > last);

    // Every worker ID of a 1-bit layout held by a live lease: a typed error in bounded time.
    let held = Command::new(BIN)
        .args([
            "next",
            "--registry",
            url,
            "--worker-bits",
            "1",
            "--count",
            "1",
        ])
        .output()
        .unwrap();
    assert!(held.status.success());
    let redis_cli = |args: &[&str]| {
        let port = url.rsplit(':').next().unwrap().trim_end_matches("/0");
        Command::new("redis-cli")
            .args(["-p", port])
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    for w in 0..2 {
        let key = format!("{{segflake}}:worker:{w}");
        redis_cli(&["SET", &key, "someone-else", "PX", "60000"]).unwrap();
    }
    let started = std::time::Instant::now();
    fails(
        &[
            "next",
            "--registry",
            url,
            "--worker-bits",
            "1",
            "--claim-wait-ms",
            "300",
        ],
        1,
        &["no free worker ID: 2 of 2", "NO_FREE_WORKER_ID"],
    );
    assert!(started.elapsed().as_secs() < 5);
}

#[test]
fn next_with_a_registry_refuses_bad_urls_and_a_second_worker_source() {
    fails(
        &["next", "--registry", "http://x"],
        2,
        &["allowed: redis://"],
    );
    fails(
        &["next", "--registry", "redis://127.0.0.1:1", "--worker", "3"],
        2,
        &["--preferred-worker-id"],
    );
    fails(
        &["next", "--lease-ttl-ms", "500", "--worker", "1"],
        2,
        &["needs --registry"],
    );
    fails(
        &[
            "next",
            "--registry",
            "redis://127.0.0.1:1",
            "--claim-wait-ms",
            "200",
        ],
        1,
        &["REGISTRY_ERROR", "Connection refused"],
    );
}

#[test]
fn completions_cover_every_command_and_an_unknown_shell_is_a_usage_error() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let script = ok(&["completions", shell]);
        // Every command, and the flags of the core's tables as well as the commands' own
        // (fish spells flags `-l name`).
        for word in [
            "serve",
            "completions",
            "store",
            "max-drift-ms",
            "worker-from-hostname",
        ] {
            assert!(script.contains(word), "{shell}: no {word:?} in the script");
        }
    }
    fails(
        &["completions", "tcsh"],
        2,
        &["invalid value 'tcsh'", "bash"],
    );
}

#[test]
fn serial_with_a_redis_counter_shares_each_second_and_refuses_a_second_outside_the_window() {
    use segflake::{SerialGenerator, SerialOptions};
    let redis = Redis::start();
    let url = redis.url.as_str();
    let base = [
        "serial",
        "--counter",
        url,
        "--counter-prefix",
        "t",
        "--sequence-digits",
        "6",
    ];
    let run = |count: &str| -> Vec<u64> {
        let mut args = base.to_vec();
        args.extend(["--count", count]);
        ok(&args).lines().map(|l| l.parse().unwrap()).collect()
    };
    // Two processes without --last: the second continues the first's per-second counter.
    let (a, b) = (run("500"), run("500"));
    let all: std::collections::HashSet<u64> = a.iter().chain(&b).copied().collect();
    assert_eq!(all.len(), 1000);
    let port = url.rsplit(':').next().unwrap().trim_end_matches("/0");
    let key = format!("t:serial:{}", b[499] / 1_000_000);
    let pttl = Command::new("redis-cli")
        .args(["-p", port, "PTTL", &key])
        .output()
        .unwrap();
    let pttl: i64 = String::from_utf8_lossy(&pttl.stdout)
        .trim()
        .parse()
        .unwrap();
    // Kept past the second's end for counter_max_behind_ms (60 s) and the 1 s grace.
    assert!((59_000..=62_000).contains(&pttl), "{key}: PTTL {pttl}");

    // A generator whose last serial lies 2 minutes ahead counts in that second: refused.
    let g = SerialGenerator::new(SerialOptions::default().with_sequence_digits(6)).unwrap();
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let future = g.format(now_s + 120, 1).unwrap().to_string();
    let mut args = base.to_vec();
    args.extend(["--last", &future]);
    let r = segflake(&args);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    assert!(r.stderr.contains("CLOCK_SKEW"), "{}", r.stderr);
    assert!(
        r.stderr.contains("more than counter_max_ahead_ms = 60000"),
        "{}",
        r.stderr
    );
    let r = segflake(&["serial", "--counter-prefix", "t"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--counter redis://"), "{}", r.stderr);
}
