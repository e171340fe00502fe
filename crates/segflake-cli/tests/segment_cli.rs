//! `segflake segment`, `segflake stats` and `segflake serial` as a user runs them.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{Command, Output};

mod common;

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

/// A database server of the give-back tests, reached through its own command-line client.
enum Db {
    Postgres { port: u16 },
    MariaDb { port: u16, socket: PathBuf },
}

/// A statement parameter, bound as the stores bind theirs.
enum Param<'a> {
    Text(&'a str),
    Int(i64),
}

impl Db {
    /// The core's name of the dialect.
    fn store(&self) -> &'static str {
        match self {
            Db::Postgres { .. } => "postgres",
            Db::MariaDb { .. } => "mysql",
        }
    }

    /// The `--store` URL of `user` (MariaDB: its password is its name).
    fn url(&self, user: &str) -> String {
        match self {
            Db::Postgres { port } => format!("postgres://{user}@127.0.0.1:{port}/postgres"),
            Db::MariaDb { port, .. } => format!("mysql://{user}:{user}@127.0.0.1:{port}/segflake"),
        }
    }

    /// Runs `sql` as the administrator (PostgreSQL's `postgres`, MariaDB's `root`); its
    /// output, tab-separated, without the trailing newline.
    fn sql(&self, sql: &str) -> String {
        let out = match self {
            Db::Postgres { port } => Command::new(common::postgres_bin().join("psql"))
                .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres"])
                .args([
                    "-d",
                    "postgres",
                    "-v",
                    "ON_ERROR_STOP=1",
                    "-qAt",
                    "-F",
                    "\t",
                ])
                .args(["-c", sql])
                .output(),
            Db::MariaDb { socket, .. } => Command::new("mariadb")
                .args(["--no-defaults", "-uroot", "-N", "-B"])
                .arg(format!("--socket={}", socket.display()))
                .args(["segflake", "-e", sql])
                .output(),
        }
        .expect("the database's client");
        assert!(
            out.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .trim_end()
            .to_string()
    }

    /// The core's statement `call` for `leaf_alloc`, run with `params` bound (a prepared
    /// statement, as a store runs it).
    fn run_core(&self, call: &str, params: &[Param]) -> String {
        let text = segflake::segment::statements::statement(self.store(), call, "leaf_alloc")
            .unwrap_or_else(|| panic!("no {call} statement"));
        let values: Vec<String> = params
            .iter()
            .map(|p| match p {
                Param::Text(t) => format!("'{t}'"),
                Param::Int(i) => i.to_string(),
            })
            .collect();
        let values = values.join(", ");
        match self {
            Db::Postgres { .. } => {
                let text = segflake::segment::statements::numbered(&text);
                self.sql(&format!("PREPARE s AS {text}; EXECUTE s({values});"))
            }
            Db::MariaDb { .. } => self.sql(&format!(
                "PREPARE s FROM '{text}'; EXECUTE s USING {values};"
            )),
        }
    }

    fn max_id(&self, tag: &str) -> String {
        self.sql(&format!(
            "SELECT max_id FROM leaf_alloc WHERE biz_tag = '{tag}'"
        ))
    }
}

/// `segflake segment` on `url`: `count` IDs of `gb` from ranges of `step`, given back on
/// exit or not; the IDs.
fn segment_run(url: &str, tag: &str, count: u64, step: u64, give_back: bool) -> Vec<String> {
    let out = segflake(&[
        "segment",
        "--store",
        url,
        "--tag",
        tag,
        "--count",
        &count.to_string(),
        "--step",
        &step.to_string(),
        "--ignore-row-step",
        "--give-back",
        &give_back.to_string(),
    ]);
    assert!(out.status.success(), "{out:?}");
    lines(&out)
}

fn ids(range: std::ops::Range<u64>) -> Vec<String> {
    range.map(|i| i.to_string()).collect()
}

/// A give back lowers `max_id` once; run again with its token after another process
/// allocated exactly the range given back (a resent statement, a delayed duplicate), it
/// changes nothing, so that range is never handed out twice. A user without the privilege
/// to create the marker table gives nothing back (a gap), and gives back once the table is
/// made for it.
fn give_back_runs_once(db: &Db) {
    let url = db.url(match db {
        Db::Postgres { .. } => "postgres",
        Db::MariaDb { .. } => "segflake",
    });
    db.sql(
        &segflake::segment::statements::statement(db.store(), "create_table", "leaf_alloc")
            .unwrap(),
    );
    db.sql("INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('gb', 1, 1000)");
    // [1, 1001) fetched, 40 IDs issued, [41, 1001) given back.
    assert_eq!(segment_run(&url, "gb", 40, 1000, true), ids(1..41));
    assert_eq!(db.max_id("gb"), "41", "the give back lowered max_id");
    let record =
        db.sql("SELECT token, biz_tag, max_id, expected_max_id, applied FROM leaf_alloc_give_back");
    let fields: Vec<&str> = record.split('\t').collect();
    assert_eq!(fields.len(), 5, "one record: {record:?}");
    let token = fields[0];
    assert!(
        token.len() == 32 && token.bytes().all(|b| b.is_ascii_hexdigit()),
        "a 128-bit hex token: {token:?}"
    );
    assert_eq!(fields[1..], ["gb", "41", "1001", "1"]);
    // Another process allocates exactly the range given back, max_id back at 1001.
    assert_eq!(segment_run(&url, "gb", 1, 960, false), ["41"]);
    assert_eq!(db.max_id("gb"), "1001");
    // The first give back's statements once more, with its token.
    db.run_core(
        "give_back_intent",
        &[
            Param::Text(token),
            Param::Text("gb"),
            Param::Int(41),
            Param::Int(1001),
        ],
    );
    db.run_core("give_back", &[Param::Text(token)]);
    assert_eq!(
        db.max_id("gb"),
        "1001",
        "a resent give back lowered max_id again: 41.. would be handed out twice"
    );
    assert_eq!(segment_run(&url, "gb", 1, 1000, false), ["1001"]);

    // A user who may update leaf_alloc but not create tables.
    match db {
        Db::Postgres { .. } => {
            db.sql("CREATE ROLE limited LOGIN; GRANT SELECT, UPDATE ON leaf_alloc TO limited")
        }
        Db::MariaDb { .. } => db.sql(
            "CREATE USER 'limited'@'%' IDENTIFIED BY 'limited'; \
             GRANT SELECT, UPDATE ON segflake.leaf_alloc TO 'limited'@'%'",
        ),
    };
    db.sql("INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('gb2', 1, 1000)");
    let limited = db.url("limited");
    assert_eq!(segment_run(&limited, "gb2", 40, 1000, true), ids(1..41));
    assert_eq!(db.max_id("gb2"), "1001", "nothing given back: a gap");
    // The marker table made beforehand (here: above) and granted: the give back works.
    match db {
        Db::Postgres { .. } => {
            db.sql("GRANT SELECT, INSERT, UPDATE ON leaf_alloc_give_back TO limited")
        }
        Db::MariaDb { .. } => {
            db.sql("GRANT SELECT, INSERT, UPDATE ON segflake.leaf_alloc_give_back TO 'limited'@'%'")
        }
    };
    assert_eq!(
        segment_run(&limited, "gb2", 40, 1000, true),
        ids(1001..1041)
    );
    assert_eq!(db.max_id("gb2"), "1041");
}

#[test]
fn postgres_give_back_runs_once_even_when_resent() {
    let Some(pg) = common::postgres(None) else {
        return;
    };
    let db = Db::Postgres { port: pg.port };
    let result = std::panic::catch_unwind(|| give_back_runs_once(&db));
    common::stop_postgres(&pg);
    result.unwrap();
}

#[test]
fn mariadb_give_back_runs_once_even_when_resent() {
    let Some(server) = common::mariadb(None) else {
        return;
    };
    give_back_runs_once(&Db::MariaDb {
        port: server.port,
        socket: server.dir.join("mysqld.sock"),
    });
}
