//! `segflake serve` over real HTTP on 127.0.0.1 with a `file:` store: Leaf's paths and
//! bodies, batches, segment leases, decode, tokens, bad requests, metrics, drain; a give back
//! resent with its token also on real PostgreSQL, MariaDB and Redis. The database stores'
//! other paths and outages are exercised by tests/scenarios/serve.sh.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{free_port, get, request, wait_for_port, Reply, Server};

/// Starts `segflake serve` with a fresh file store, `args` and an optional config file.
fn serve(name: &str, args: &[&str], config: Option<&str>) -> Server {
    serve_store(name, None, args, config)
}

/// Starts `segflake serve` on the store `url` (a fresh file store without one), with
/// `args` and an optional config file.
fn serve_store(name: &str, url: Option<&str>, args: &[&str], config: Option<&str>) -> Server {
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("segflake-serve-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = url.map_or_else(
        || format!("file:{}", dir.join("ids.txt").display()),
        str::to_string,
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_segflake"));
    cmd.arg("serve")
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--store")
        .arg(store)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(text) = config {
        std::fs::write(dir.join("serve.toml"), text).unwrap();
        cmd.arg("--config").arg(dir.join("serve.toml"));
    }
    let child = cmd.spawn().expect("segflake serve starts");
    let server = Server { child, port, dir };
    wait_for_port(port);
    server
}

#[test]
fn leaf_paths_serve_dense_segment_ids_and_snowflake_ids_that_decode() {
    let s = serve("leaf", &["--worker", "5", "--step", "100"], None);
    // A fresh tag starts like a fresh Leaf row: 1, 2, 3, as plain text.
    for expected in 1..=3u64 {
        let r = get(s.port, "/api/segment/get/order");
        assert_eq!((r.status, r.body.clone()), (200, expected.to_string()));
        assert!(r.head.contains("content-type: text/plain"), "{}", r.head);
    }
    let r = get(s.port, "/api/segment/get/order?count=250");
    assert_eq!(r.status, 200);
    let ids: Vec<u64> = r.json()["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(
        ids,
        (4..254).collect::<Vec<u64>>(),
        "a batch spanning segments stays dense"
    );

    // A segment lease: the range is the caller's alone; the server's own IDs skip it.
    let r = request(s.port, "POST", "/api/segment/alloc/order?step=1000", &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    let max_id: u64 = r.json()["maxId"].as_str().unwrap().parse().unwrap();
    assert_eq!(r.json()["step"], 1000);
    let next: u64 = get(s.port, "/api/segment/get/order").body.parse().unwrap();
    assert!(
        !(max_id - 1000..max_id).contains(&next),
        "{next} lies in the leased range"
    );
    // An HttpStore gives back the tail of its range while nobody allocated after it. A tag
    // the server hands out no IDs of: its own prefetch of "order" may allocate at any time,
    // and a give-back after that is rightly refused.
    let top = alloc(s.port, "handed", 100);
    assert_eq!(
        given_back(&give_back(s.port, "handed", top + 1, top - 50, None)),
        (200, Some(false)),
        "a max_id that is not the row's is refused"
    );
    assert_eq!(
        given_back(&give_back(s.port, "handed", top, top - 50, None)),
        (200, Some(true))
    );
    assert_eq!(
        alloc(s.port, "handed", 10),
        top - 40,
        "continues at the given-back tail"
    );
    let r = request(s.port, "POST", "/api/segment/giveback/handed?max_id=1", &[]);
    assert_eq!(
        (r.status, r.json()["code"].as_str()),
        (400, Some("INVALID_ARGUMENT"))
    );

    let a: u64 = get(s.port, "/api/snowflake/get/anything")
        .body
        .parse()
        .unwrap();
    let b: u64 = get(s.port, "/api/snowflake/get/anything")
        .body
        .parse()
        .unwrap();
    assert!(b > a, "snowflake IDs increase");
    let d = get(s.port, &format!("/api/decode/{b}")).json();
    assert_eq!(d["worker"], 5);
    assert_eq!(d["id"], b.to_string());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let t = d["timestamp_ms"].as_u64().unwrap();
    assert!(
        now.abs_diff(t) < 60_000,
        "decoded time {t} is not now ({now})"
    );
}

/// `POST /api/segment/alloc/KEY?step=N`: the answer's `maxId`.
fn alloc(port: u16, key: &str, step: u64) -> u64 {
    let r = request(
        port,
        "POST",
        &format!("/api/segment/alloc/{key}?step={step}"),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["maxId"].as_str().unwrap().parse().unwrap()
}

/// `POST /api/segment/giveback/KEY?expected_max_id=E&max_id=M[&token=T]`.
fn give_back(port: u16, key: &str, expected: u64, max_id: u64, token: Option<&str>) -> Reply {
    let token = token.map_or(String::new(), |t| format!("&token={t}"));
    let path =
        format!("/api/segment/giveback/{key}?expected_max_id={expected}&max_id={max_id}{token}");
    request(port, "POST", &path, &[])
}

/// The status and `givenBack` of a give back's answer.
fn given_back(r: &Reply) -> (u16, Option<bool>) {
    (r.status, r.json()["givenBack"].as_bool())
}

/// A give back (the tail `[top - 960, top)` of a range of 1000), then another client
/// allocating exactly that range again, then the first request resent with its token (a
/// client, proxy or load balancer that resends after a lost reply): to the server `first`
/// answered, then to `other` (the same server, or another one on the same store). The
/// resends change nothing: the next allocation continues above `top`.
fn resent_give_back_changes_nothing(first: u16, other: u16, key: &str, other_answers: bool) {
    let token = "9f86d081884c7d659a2feaa0c55ad015";
    let top = alloc(first, key, 1000);
    let low = top - 960;
    let r = give_back(first, key, top, low, Some(token));
    assert_eq!(given_back(&r), (200, Some(true)), "{}", r.body);
    assert_eq!(
        alloc(other, key, 960),
        top,
        "the range given back, allocated again"
    );
    let r = give_back(other, key, top, low, Some(token));
    assert_eq!(given_back(&r), (200, Some(other_answers)), "{}", r.body);
    let r = give_back(first, key, top, low, Some(token));
    assert_eq!(
        given_back(&r),
        (200, Some(true)),
        "answered as the first time: {}",
        r.body
    );
    assert_eq!(
        alloc(first, key, 10),
        top + 10,
        "a resent give back lowered max_id again: [{low}, {top}) would be handed out twice"
    );
}

#[test]
fn a_give_back_resent_with_its_token_changes_nothing_and_a_bad_token_is_refused() {
    let s = serve("resend", &[], None);
    // The file store keeps no tokens: the server remembers them.
    resent_give_back_changes_nothing(s.port, s.port, "order", true);
    // The same token with another give back is refused, and changes nothing.
    let token = "9f86d081884c7d659a2feaa0c55ad015";
    let top = alloc(s.port, "order", 100);
    let r = give_back(s.port, "order", top, top - 50, Some(token));
    assert_eq!((r.status, r.code()), (400, "INVALID_ARGUMENT".into()));
    assert!(r.body.contains("another give back"), "{}", r.body);
    assert_eq!(alloc(s.port, "order", 1), top + 1);
    // Tokens of 16 and 64 digits are taken; without one, as before.
    let top = alloc(s.port, "order", 100);
    let r = give_back(s.port, "order", top, top - 10, Some(&"0".repeat(16)));
    assert_eq!(given_back(&r), (200, Some(true)), "{}", r.body);
    let r = give_back(s.port, "order", top - 10, top - 20, Some(&"f".repeat(64)));
    assert_eq!(given_back(&r), (200, Some(true)), "{}", r.body);
    let r = give_back(s.port, "order", top - 20, top - 30, None);
    assert_eq!(given_back(&r), (200, Some(true)), "{}", r.body);
    assert_eq!(alloc(s.port, "order", 1), top - 29);
    for bad in [
        String::new(),
        "abc".into(),
        "a".repeat(15),
        "a".repeat(65),
        "A".repeat(32),
        "g".repeat(32),
        "0123456789abcdef%20".into(),
    ] {
        let top = alloc(s.port, "order", 10);
        let r = give_back(s.port, "order", top, top - 5, Some(&bad));
        assert_eq!(
            (r.status, r.code()),
            (400, "INVALID_ARGUMENT".into()),
            "{bad:?}"
        );
        let message = r.json()["message"].as_str().unwrap().to_string();
        assert!(
            message.starts_with("token=") && message.contains("16 to 64 characters of 0-9a-f"),
            "{bad:?}: {message}"
        );
        assert_eq!(
            alloc(s.port, "order", 1),
            top + 1,
            "{bad:?}: nothing given back"
        );
    }
}

/// Two servers on the store `url` (its tag created on first use): a give back resent with
/// its token to the other server (which has not seen the token: the store's marker decides)
/// and to the first changes nothing.
fn give_back_resent_across_servers(name: &str, url: &str) {
    let args = ["--create-missing-tags", "1000"];
    let a = serve_store(&format!("{name}-a"), Some(url), &args, None);
    let b = serve_store(&format!("{name}-b"), Some(url), &args, None);
    resent_give_back_changes_nothing(a.port, b.port, "resent", false);
}

/// The core's `leaf_alloc` table, made by the database's own client as its administrator.
fn create_leaf_alloc(client: &mut Command, store: &str) {
    let sql = segflake::segment::statements::statement(store, "create_table", "leaf_alloc")
        .expect("the core's create_table");
    let out = client.arg(sql).output().expect("the database's client");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn postgres_give_back_resent_with_its_token_changes_nothing() {
    let Some(pg) = common::postgres(None) else {
        return;
    };
    let result = std::panic::catch_unwind(|| {
        create_leaf_alloc(
            Command::new(common::postgres_bin().join("psql"))
                .args(["-h", "127.0.0.1", "-p", &pg.port.to_string()])
                .args([
                    "-U",
                    "postgres",
                    "-d",
                    "postgres",
                    "-v",
                    "ON_ERROR_STOP=1",
                    "-c",
                ]),
            "postgres",
        );
        let url = format!("postgres://postgres@127.0.0.1:{}/postgres", pg.port);
        give_back_resent_across_servers("resend-pg", &url);
    });
    common::stop_postgres(&pg);
    result.unwrap();
}

#[test]
fn mariadb_give_back_resent_with_its_token_changes_nothing() {
    let Some(db) = common::mariadb(None) else {
        return;
    };
    create_leaf_alloc(
        Command::new("mariadb")
            .args(["--no-defaults", "-uroot"])
            .arg(format!("--socket={}", db.dir.join("mysqld.sock").display()))
            .args(["segflake", "-e"]),
        "mysql",
    );
    let url = format!("mysql://segflake:segflake@127.0.0.1:{}/segflake", db.port);
    give_back_resent_across_servers("resend-mariadb", &url);
}

#[test]
fn redis_give_back_resent_with_its_token_changes_nothing() {
    let Some(redis) = common::redis(None) else {
        return;
    };
    let url = format!("redis://127.0.0.1:{}", redis.port);
    give_back_resent_across_servers("resend-redis", &url);
}

#[test]
fn bad_requests_get_their_status_and_code_and_the_server_keeps_serving() {
    let s = serve("bad", &["--max-count", "1000"], None);
    let long_key = format!("/api/segment/get/{}", "k".repeat(129));
    let cases: &[(&str, &str, u16, &str)] = &[
        (
            "GET",
            "/api/segment/get/order?count=0",
            400,
            "INVALID_ARGUMENT",
        ),
        (
            "GET",
            "/api/segment/get/order?count=1001",
            400,
            "INVALID_ARGUMENT",
        ),
        (
            "GET",
            "/api/segment/get/order?count=99999999999999999999999",
            400,
            "INVALID_ARGUMENT",
        ),
        (
            "GET",
            "/api/segment/get/order?count=ten",
            400,
            "INVALID_ARGUMENT",
        ),
        ("GET", "/api/segment/get/a%20b", 400, "INVALID_ARGUMENT"),
        ("GET", "/api/segment/get/%ff", 400, "INVALID_ARGUMENT"),
        ("GET", &long_key, 400, "INVALID_ARGUMENT"),
        ("GET", "/api/segment/get/", 400, "INVALID_ARGUMENT"),
        ("GET", "/api/segment/get/order/extra", 404, "NOT_FOUND"),
        ("GET", "/api/segment", 404, "NOT_FOUND"),
        ("GET", "/../../etc/passwd", 404, "NOT_FOUND"),
        (
            "DELETE",
            "/api/segment/get/order",
            405,
            "METHOD_NOT_ALLOWED",
        ),
        (
            "GET",
            "/api/segment/alloc/order?step=10",
            405,
            "METHOD_NOT_ALLOWED",
        ),
        (
            "POST",
            "/api/segment/alloc/order?step=0",
            400,
            "INVALID_ARGUMENT",
        ),
        (
            "POST",
            "/api/segment/alloc/order?step=1000001",
            400,
            "INVALID_ARGUMENT",
        ),
        ("GET", "/api/decode/abc", 400, "PARSE_ERROR"),
        (
            "GET",
            "/api/decode/18446744073709551616",
            400,
            "PARSE_ERROR",
        ),
        ("GET", "/api/snowflake/get/order", 404, "NOT_CONFIGURED"),
    ];
    for (method, path, status, code) in cases {
        let r = request(s.port, method, path, &[]);
        assert_eq!(
            (r.status, r.code()),
            (*status, code.to_string()),
            "{method} {path}: {}",
            r.body
        );
        assert!(!r.json()["message"].as_str().unwrap().is_empty());
    }
    let r = request(s.port, "GET", "/api/segment/alloc/order?step=10", &[]);
    assert!(r.head.contains("allow: post"), "{}", r.head);
    // A malformed request line is answered (400) or dropped, never a crash.
    let mut raw = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    raw.write_all(b"\x00\x01garbage\r\n\r\n").unwrap();
    let mut sink = Vec::new();
    let _ = raw.read_to_end(&mut sink);
    let r = get(s.port, "/api/segment/get/order");
    assert_eq!((r.status, r.body.as_str()), (200, "1"));
}

#[test]
fn tokens_guard_their_keys_and_unlisted_keys_are_unknown() {
    let config = r#"
[keys.order]
tokens = ["s3cret", "rotated"]
[keys.open]
tokens = []
"#;
    let s = serve("tokens", &[], Some(config));
    let r = get(s.port, "/api/segment/get/order");
    assert_eq!((r.status, r.code()), (401, "UNAUTHORIZED".into()));
    assert!(r.head.contains("www-authenticate: bearer"), "{}", r.head);
    let r = request(
        s.port,
        "GET",
        "/api/segment/get/order",
        &["Authorization: Bearer wrong"],
    );
    assert_eq!((r.status, r.code()), (403, "FORBIDDEN".into()));
    let r = request(
        s.port,
        "POST",
        "/api/segment/alloc/order?step=5",
        &["Authorization: Bearer wrong"],
    );
    assert_eq!(r.status, 403, "segment leases are guarded too");
    for token in ["s3cret", "rotated"] {
        let auth = format!("Authorization: Bearer {token}");
        let r = request(s.port, "GET", "/api/segment/get/order", &[&auth]);
        assert_eq!(r.status, 200, "{}", r.body);
    }
    assert_eq!(get(s.port, "/api/segment/get/open").status, 200);
    let r = get(s.port, "/api/segment/get/other");
    assert_eq!((r.status, r.code()), (404, "UNKNOWN_TAG".into()));
}

/// Tinyid's client mode, as its Java client runs it: a segment `(currentId, maxId]` from
/// `nextSegmentIdSimple`, aligned to `remainder (mod delta)`, then every ID stepped by
/// `delta` up to `maxId`.
fn tinyid_client_segment(port: u16, query: &str) -> (Vec<u64>, i64, i64) {
    let r = request(
        port,
        "POST",
        &format!("/tinyid/id/nextSegmentIdSimple?{query}"),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let f: Vec<i64> = r.body.split(',').map(|x| x.parse().unwrap()).collect();
    let [current, loading, max, delta, remainder] = f[..] else {
        panic!("five fields expected: {}", r.body)
    };
    assert!(current < loading && loading <= max, "{}", r.body);
    let mut id = current;
    while id.rem_euclid(delta) != remainder {
        id += 1;
    }
    let mut ids = Vec::new();
    while id + delta <= max {
        id += delta;
        ids.push(id as u64);
    }
    (ids, current, max)
}

#[test]
fn tinyid_paths_answer_as_tinyid_and_its_client_mode_never_repeats_an_id() {
    let token = "0f673adf80504e2eaa552f5d791b644c";
    let config = format!("[keys.test]\ntokens = [\"{token}\"]\n[keys.open]\ntokens = []\n");
    let s = serve("tinyid", &["--step", "100"], Some(&config));
    let q = format!("bizType=test&token={token}");
    let mut issued = Vec::new();
    // nextIdSimple: plain text, comma separated with batchSize.
    let r = get(s.port, &format!("/tinyid/id/nextIdSimple?{q}"));
    assert_eq!((r.status, r.body.as_str()), (200, "1"));
    issued.push(1);
    let r = get(s.port, &format!("/tinyid/id/nextIdSimple?{q}&batchSize=3"));
    assert_eq!((r.status, r.body.as_str()), (200, "2,3,4"));
    issued.extend([2, 3, 4]);
    // nextId: Tinyid's envelope with numbers, by GET or POST (its client posts).
    let r = request(
        s.port,
        "POST",
        &format!("/tinyid/id/nextId?{q}&batchSize=2"),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json(),
        serde_json::json!({"data": [5, 6], "code": 200, "message": ""})
    );
    issued.extend([5, 6]);
    // A bearer token works as well as token=; a key without tokens needs none.
    let auth = format!("Authorization: Bearer {token}");
    let r = request(
        s.port,
        "GET",
        "/tinyid/id/nextIdSimple?bizType=test",
        &[&auth],
    );
    assert_eq!((r.status, r.body.as_str()), (200, "7"));
    issued.push(7);
    assert_eq!(
        get(s.port, "/tinyid/id/nextIdSimple?bizType=open").body,
        "1"
    );

    // The client mode: segments from the same store, never overlapping the IDs the server
    // issues itself or each other.
    let (a, current, max) = tinyid_client_segment(s.port, &q);
    assert!(!a.is_empty() && max > current, "{a:?}");
    let r = get(s.port, &format!("/tinyid/id/nextSegmentId?{q}"));
    assert_eq!(
        (r.status, r.json()["code"].as_i64()),
        (200, Some(200)),
        "{}",
        r.body
    );
    let data = &r.json()["data"];
    for field in ["currentId", "loadingId", "maxId", "delta", "remainder"] {
        assert!(data[field].is_i64(), "{field} missing: {}", r.body);
    }
    let (delta, remainder) = (
        data["delta"].as_i64().unwrap(),
        data["remainder"].as_i64().unwrap(),
    );
    assert_eq!((delta, remainder), (1, 0), "one store: every ID");
    let b: Vec<u64> = (data["currentId"].as_i64().unwrap() + 1..=data["maxId"].as_i64().unwrap())
        .map(|i| i as u64)
        .collect();
    let r = get(
        s.port,
        &format!("/tinyid/id/nextIdSimple?{q}&batchSize=300"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let later: Vec<u64> = r.body.split(',').map(|x| x.parse().unwrap()).collect();
    let mut all: Vec<u64> = issued
        .iter()
        .chain(&a)
        .chain(&b)
        .chain(&later)
        .copied()
        .collect();
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "an ID was issued twice");

    // Refusals: Tinyid's codes in its envelope (5: the token, 6: anything else), with this
    // server's status and code beside them; the Simple calls answer the status and a message.
    let r = get(s.port, "/tinyid/id/nextId?bizType=test&token=wrong");
    assert_eq!(r.status, 403);
    let body = r.json();
    assert_eq!(
        (body["code"].as_i64(), body["data"].is_null()),
        (Some(5), true),
        "{body}"
    );
    assert_eq!(body["segflakeCode"], "FORBIDDEN");
    let r = get(s.port, "/tinyid/id/nextId?bizType=test");
    assert_eq!((r.status, r.json()["code"].as_i64()), (401, Some(5)));
    let r = get(s.port, &format!("/tinyid/id/nextId?token={token}"));
    assert_eq!((r.status, r.json()["code"].as_i64()), (400, Some(6)));
    assert!(r.body.contains("bizType=KEY is missing"), "{}", r.body);
    for bad in ["0", "-1", "x", "100000000"] {
        let r = get(s.port, &format!("/tinyid/id/nextId?{q}&batchSize={bad}"));
        assert_eq!(
            (r.status, r.json()["code"].as_i64()),
            (400, Some(6)),
            "{bad}"
        );
        assert!(r.body.contains("batchSize"), "{}", r.body);
    }
    let r = get(
        s.port,
        &format!("/tinyid/id/nextIdSimple?bizType=other&token={token}"),
    );
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(r.body.contains("not served here"), "{}", r.body);
    let r = request(s.port, "DELETE", &format!("/tinyid/id/nextId?{q}"), &[]);
    assert_eq!(r.status, 405);
}

/// The `data-points` of the status page's chart of `metric` for `key`.
fn chart_points(page: &str, metric: &str, key: &str) -> Vec<Vec<serde_json::Value>> {
    let head = format!("data-metric=\"{metric}\" data-key=\"{key}\"");
    let at = page
        .find(&head)
        .unwrap_or_else(|| panic!("no chart {head}:\n{page}"));
    let rest = &page[at..];
    let start = rest.find("data-points=\"").expect("data-points") + "data-points=\"".len();
    let json = &rest[start..start + rest[start..].find('"').unwrap()];
    serde_json::from_str(json).unwrap()
}

#[test]
fn the_status_page_charts_samples_of_what_metrics_reports() {
    let s = serve(
        "charts",
        &["--worker", "1"],
        Some("status_sample_ms = 100\n"),
    );
    assert_eq!(get(s.port, "/api/segment/get/order?count=500").status, 200);
    assert_eq!(get(s.port, "/api/snowflake/get/users?count=7").status, 200);
    std::thread::sleep(Duration::from_millis(400));
    let page = get(s.port, "/").body;
    let metrics = get(s.port, "/metrics").body;
    for (metric, key, total) in [
        ("segflake_segment_ids_total", "order", 500.0),
        ("segflake_snowflake_ids_total", "users", 7.0),
    ] {
        assert!(metrics.contains(&format!("{metric}{{key=\"{key}\"}} {total}")));
        let points = chart_points(&page, metric, key);
        assert!(points.len() >= 3, "{points:?}");
        // [t_ms, per second, counter]: the counter is /metrics', the rate its increase.
        let last = points.last().unwrap();
        assert_eq!(last[2].as_f64(), Some(total), "{points:?}");
        let charted: f64 = points
            .windows(2)
            .filter_map(|w| {
                Some(w[1][1].as_f64()? * (w[1][0].as_f64()? - w[0][0].as_f64()?) / 1000.0)
            })
            .sum();
        assert!(
            (charted - total).abs() < 1e-6,
            "{charted} charted of {total}: {points:?}"
        );
    }
    let refills = chart_points(&page, "segflake_store_call_duration_seconds", "order");
    assert_eq!(refills.last().unwrap().len(), 4, "{refills:?}");
    assert!(page.contains("data-metric=\"segflake_segment_runway_seconds\" data-key=\"order\""));

    let out = Command::new(env!("CARGO_BIN_EXE_segflake"))
        .args(["serve", "--worker", "1", "--status-sample-ms", "50"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("status_sample_ms 50 is out of range; allowed 100..=60000"),
        "{err}"
    );
}

#[test]
fn metrics_count_ids_per_key_and_sigterm_drains_and_exits_zero() {
    let mut s = serve("metrics", &["--worker", "1"], None);
    for _ in 0..5 {
        assert_eq!(get(s.port, "/api/segment/get/order").status, 200);
    }
    get(s.port, "/api/snowflake/get/users?count=7");
    let m = get(s.port, "/metrics").body;
    for line in [
        "segflake_segment_ids_total{key=\"order\"} 5",
        "segflake_snowflake_ids_total{key=\"users\"} 7",
        "segflake_http_requests_total{route=\"segment_get\",status=\"200\"} 5",
        "segflake_store_call_duration_seconds_count{key=\"order\"}",
        "segflake_segment_runway_seconds{key=\"order\"}",
        "segflake_store_up 1",
    ] {
        assert!(m.contains(line), "/metrics lacks {line:?}:\n{m}");
    }
    assert_eq!(get(s.port, "/readyz").status, 200);
    assert_eq!(get(s.port, "/healthz").status, 200);

    // A keep-alive client mid-conversation, then SIGTERM: the server stops and exits 0.
    let mut conn = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    conn.write_all(b"GET /api/segment/get/order HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let status = Command::new("kill")
        .args(["-TERM", &s.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(15);
    let code = loop {
        if let Some(code) = s.child.try_wait().unwrap() {
            break code;
        }
        assert!(
            Instant::now() < deadline,
            "segflake serve did not stop after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(code.success(), "exit status {code}");
    let mut log = String::new();
    s.child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    assert!(
        log.contains("\"msg\":\"draining\"") && log.contains("\"msg\":\"stopped\""),
        "{log}"
    );
    // The server gave back what it had fetched and not issued: the next process goes on
    // right after the last ID it served (5, or 6 with the keep-alive request).
    let stats = Command::new(env!("CARGO_BIN_EXE_segflake"))
        .args(["stats", "--json", "--store"])
        .arg(format!("file:{}", s.dir.join("ids.txt").display()))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&stats.stdout);
    assert!(
        text.contains(r#""max_id":"6""#) || text.contains(r#""max_id":"7""#),
        "{text}"
    );
}

#[test]
fn configuration_errors_name_the_key_and_what_is_allowed() {
    let dir = std::env::temp_dir().join(format!("segflake-serve-conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |args: &[&str], config: &str| {
        std::fs::write(dir.join("c.toml"), config).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_segflake"))
            .arg("serve")
            .args(args)
            .arg("--config")
            .arg(dir.join("c.toml"))
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["--worker", "1"], "listn = \"127.0.0.1:1\"\n");
    assert_eq!(code, Some(1));
    assert!(err.contains("listn"), "{err}");
    let (code, err) = run(&["--worker", "1"], "[segment]\nstep = 0\n");
    assert_eq!(code, Some(1));
    assert!(err.contains("step") && err.contains("allowed"), "{err}");
    let (code, err) = run(&[], "worker = 1\nregistry = \"redis://127.0.0.1:1\"\n");
    assert_eq!(code, Some(2));
    assert!(err.contains("not both"), "{err}");
    let (code, err) = run(&[], "");
    assert_eq!(code, Some(2));
    assert!(err.contains("nothing to serve"), "{err}");
    let (code, err) = run(&["--worker", "1"], "[keys.\"bad key\"]\ntokens = [\"t\"]\n");
    assert_eq!(code, Some(1));
    assert!(err.contains("bad key"), "{err}");
    let (code, err) = run(&["--worker", "1", "--idle-timeout-ms", "10"], "");
    assert_eq!(code, Some(2));
    assert!(
        err.contains("idle_timeout_ms") && err.contains("1000..=3600000"),
        "{err}"
    );
    let (code, err) = run(&["--worker", "1"], "[keys.k]\ntokens = [\"sha256:12\"]\n");
    assert_eq!(code, Some(1));
    assert!(err.contains("64 hex digits"), "{err}");
    let (code, err) = run(&["--worker", "1", "--tls-cert", "/no/such.pem"], "");
    assert_eq!(code, Some(2));
    assert!(err.contains("--tls-cert needs --tls-key"), "{err}");
    let (code, err) = run(
        &[
            "--worker",
            "1",
            "--tls-cert",
            "/no/such.pem",
            "--tls-key",
            "/no/such.key",
        ],
        "",
    );
    assert_eq!(code, Some(1));
    assert!(err.contains("/no/such.pem"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn connections_without_progress_are_closed_and_busy_ones_kept() {
    let s = serve(
        "idle",
        &["--worker", "1", "--idle-timeout-ms", "1000"],
        None,
    );
    let open = || {
        let c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        c
    };
    // Closed: the server's end reads as end-of-file within the timeout and a third.
    let closed_within = |mut c: TcpStream| {
        let t0 = Instant::now();
        let mut rest = Vec::new();
        let _ = c.read_to_end(&mut rest);
        t0.elapsed()
    };
    // A request head that never ends.
    let mut half = open();
    half.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let waited = closed_within(half);
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    // An idle keep-alive connection, after its one request.
    let mut idle = open();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let waited = closed_within(idle);
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    // A head sent a byte at a time (slowloris): bytes arrive, no request starts.
    let slow = open();
    let mut writer = slow.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        for b in b"GET /healthz HTTP/1.1\r\nX-Slow: "
            .iter()
            .chain([b'a'; 400].iter())
        {
            if writer.write_all(&[*b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let waited = closed_within(slow);
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    trickle.join().unwrap();
    // A connection with a request every 200 ms stays open for three timeouts.
    let mut busy = open();
    let mut buf = [0u8; 4096];
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(3) {
        busy.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let n = busy.read(&mut buf).unwrap();
        assert!(
            n > 0 && buf.starts_with(b"HTTP/1.1 200"),
            "closed while busy"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
