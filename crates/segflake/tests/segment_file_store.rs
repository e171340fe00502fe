//! The file store: Leaf semantics, the on-disk format, several processes on one file, and
//! a child killed with SIGKILL mid-run that must not reissue anything after a restart.
//!
//! Child processes are this test binary itself, re-run with `--ignored --exact
//! file_store_child` and the `SEGFLAKE_CHILD_*` environment variables.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use segflake::{
    ErrorKind, FileStore, FileStoreOptions, SegmentGenerator, SegmentOptions, SegmentStore,
};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "segflake-file-store-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn options(step: u64) -> SegmentOptions {
    SegmentOptions::default().with_step(step)
}

#[test]
fn fresh_tag_follows_leaf_and_the_file_is_readable() {
    let dir = temp_dir("fresh");
    let path = dir.join("ids.txt");
    let store = FileStore::open(&path).unwrap();
    assert!(store.records().unwrap().is_empty());
    let a = store.allocate("order", 2000).unwrap();
    assert_eq!((a.max_id, a.step), (2001, 2000));
    let b = store.allocate("order", 2000).unwrap();
    assert_eq!((b.max_id - b.step, b.max_id), (2001, 4001));
    store.allocate("user", 10).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("# segflake file store, format 2, generation 1\n"),
        "{text}"
    );
    // The first allocation wrote a snapshot; the later ones appended a line each.
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with("order 2001 2000 20"), "{text}");
    assert!(lines[1].starts_with("+ order 4001 2000 20"), "{text}");
    assert!(lines[2].starts_with("+ user 11 10 20"), "{text}");
    // Reopening reads the same rows.
    let again = FileStore::from_spec(&format!("file:{}", path.display())).unwrap();
    let recs = again.records().unwrap();
    assert_eq!(recs[0].tag, "order");
    assert_eq!(recs[0].max_id, 4001);
    assert!(recs[0].updated_ms > 1_700_000_000_000);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_generator_over_a_file_store_continues_after_a_restart() {
    let dir = temp_dir("restart");
    let path = dir.join("ids.txt");
    let first: Vec<u64> = {
        let g = SegmentGenerator::new(FileStore::open(&path).unwrap(), options(2000)).unwrap();
        let t = g.tag("order").unwrap();
        (0..2500).map(|_| t.next_id().unwrap()).collect()
    };
    assert_eq!(first, (1..=2500).collect::<Vec<u64>>());
    let max_after_first = FileStore::open(&path).unwrap().records().unwrap()[0].max_id;
    let g = SegmentGenerator::new(FileStore::open(&path).unwrap(), options(2000)).unwrap();
    let id = g.next_id("order").unwrap();
    assert_eq!(
        id, max_after_first,
        "the restart starts at the stored max_id"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn initial_max_id_and_raising_continue_above_existing_ids() {
    let dir = temp_dir("initial");
    let path = dir.join("ids.txt");
    let store = FileStore::with_options(
        &path,
        FileStoreOptions::default().with_initial_max_id(1_000_000),
    )
    .unwrap();
    assert_eq!(store.allocate("a", 5).unwrap().max_id, 1_000_005);
    assert_eq!(store.raise_max_id("a", 7_000_000).unwrap(), 7_000_000);
    assert_eq!(
        store.raise_max_id("a", 5).unwrap(),
        7_000_000,
        "never lowers"
    );
    assert_eq!(store.allocate("a", 5).unwrap().max_id, 7_000_005);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_corrupt_file_is_refused_and_left_untouched() {
    let dir = temp_dir("corrupt");
    let path = dir.join("ids.txt");
    std::fs::write(&path, "order 4001 2000 -\norder twelve\n").unwrap();
    let err = FileStore::open(&path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Store);
    assert!(err.to_string().contains("line 2"), "{err}");
    std::fs::write(&path, "order 4001 2000 -\n").unwrap();
    let store = FileStore::open(&path).unwrap();
    std::fs::write(&path, "order 4001 2000 -\nbroken\n").unwrap();
    let msg = store.allocate("order", 10).unwrap_err().to_string();
    assert!(msg.contains("refusing to touch"), "{msg}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "order 4001 2000 -\nbroken\n"
    );
    assert!(FileStore::from_spec("mysql://x").is_err());
    assert!(FileStore::open(dir.join("missing-dir").join("ids.txt")).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn overflow_of_i64_is_a_store_error() {
    let dir = temp_dir("overflow");
    let path = dir.join("ids.txt");
    let store = FileStore::open(&path).unwrap();
    store.raise_max_id("t", i64::MAX as u64 - 5).unwrap();
    let msg = store.allocate("t", 10).unwrap_err().to_string();
    assert!(msg.contains("exhausted"), "{msg}");
    assert_eq!(
        store.allocate("t", 5).unwrap().max_id,
        i64::MAX as u64,
        "the last range up to i64::MAX"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn threads_with_separate_store_objects_on_one_file_get_disjoint_ranges() {
    let dir = temp_dir("threads");
    let path = dir.join("ids.txt");
    let ranges: Vec<(u64, u64)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let path = &path;
                s.spawn(move || {
                    let store = FileStore::open(path).unwrap();
                    (0..25)
                        .map(|_| {
                            let a = store.allocate("t", 7).unwrap();
                            (a.max_id - a.step, a.max_id)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let mut sorted = ranges.clone();
    sorted.sort_unstable();
    for w in sorted.windows(2) {
        assert_eq!(w[0].1, w[1].0, "ranges are disjoint and contiguous");
    }
    assert_eq!(sorted[0].0, 1);
    assert_eq!(sorted.last().unwrap().1, 1 + 100 * 7);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn threads_sharing_one_store_object_get_disjoint_ranges() {
    let dir = temp_dir("shared-object");
    let store = FileStore::open(dir.join("ids.txt")).unwrap();
    let mut ranges: Vec<(u64, u64)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let store = &store;
                s.spawn(move || {
                    (0..25)
                        .map(|_| {
                            let a = store.allocate("t", 3).unwrap();
                            (a.max_id - a.step, a.max_id)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        assert_eq!(w[0].1, w[1].0, "ranges are disjoint and contiguous");
    }
    assert_eq!(ranges.last().unwrap().1, 1 + 100 * 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Spawns this test binary as a child that issues IDs from `path` and prints them.
fn spawn_child(path: &Path, count: u64, step: u64) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "file_store_child", "--nocapture"])
        .env("SEGFLAKE_CHILD_STORE", path)
        .env("SEGFLAKE_CHILD_COUNT", count.to_string())
        .env("SEGFLAKE_CHILD_STEP", step.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn ids_of(child: Child) -> Vec<u64> {
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("ID "))
        .map(|s| s.trim().parse().unwrap())
        .collect()
}

/// The child: issues `SEGFLAKE_CHILD_COUNT` IDs (0 = forever) from the file store and
/// prints each as `ID <n>`. Run only as a child process.
#[test]
#[ignore = "helper run as a child process by the multi-process tests"]
fn file_store_child() {
    use std::io::Write;
    let Ok(path) = std::env::var("SEGFLAKE_CHILD_STORE") else {
        return;
    };
    let count: u64 = std::env::var("SEGFLAKE_CHILD_COUNT")
        .unwrap()
        .parse()
        .unwrap();
    let step: u64 = std::env::var("SEGFLAKE_CHILD_STEP")
        .unwrap()
        .parse()
        .unwrap();
    let o = options(step)
        .with_dynamic_step(false)
        .with_wait_timeout_ms(10_000);
    let g = SegmentGenerator::new(FileStore::open(path).unwrap(), o).unwrap();
    let t = g.tag("shared").unwrap();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut n = 0;
    while count == 0 || n < count {
        let id = t.next_id().unwrap();
        writeln!(out, "ID {id}").unwrap();
        out.flush().unwrap();
        n += 1;
    }
}

#[test]
fn two_processes_on_one_file_store_issue_disjoint_ids() {
    let dir = temp_dir("two-procs");
    let path = dir.join("ids.txt");
    let children: Vec<Child> = (0..2).map(|_| spawn_child(&path, 3000, 50)).collect();
    let all: Vec<Vec<u64>> = children.into_iter().map(ids_of).collect();
    assert_eq!(all[0].len(), 3000);
    assert_eq!(all[1].len(), 3000);
    let a: HashSet<u64> = all[0].iter().copied().collect();
    let b: HashSet<u64> = all[1].iter().copied().collect();
    assert_eq!(a.len(), 3000);
    assert_eq!(b.len(), 3000);
    assert!(a.is_disjoint(&b), "two processes issued the same ID");
    let max_id = FileStore::open(&path).unwrap().records().unwrap()[0].max_id;
    assert!(a.iter().chain(&b).all(|&id| id >= 1 && id < max_id));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_child_killed_mid_run_and_restarted_reissues_nothing() {
    let dir = temp_dir("sigkill");
    let path = dir.join("ids.txt");
    let mut seen: HashSet<u64> = HashSet::new();
    let mut floor = 0u64;
    for round in 0..4 {
        let mut child = spawn_child(&path, 0, 20);
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let mut ids = Vec::new();
        // Read until the child has issued a round-dependent number of IDs, then SIGKILL it
        // while it is still running (and fetching every 20 IDs).
        let target = 500 + round * 377;
        let deadline = Instant::now() + Duration::from_secs(30);
        for line in lines.by_ref() {
            if let Some(n) = line.unwrap().strip_prefix("ID ") {
                ids.push(n.parse::<u64>().unwrap());
            }
            if ids.len() >= target {
                break;
            }
            assert!(Instant::now() < deadline, "child too slow");
        }
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();
        for line in lines.map_while(Result::ok) {
            if let Some(n) = line.strip_prefix("ID ") {
                ids.push(n.parse::<u64>().unwrap());
            }
        }
        assert!(ids.len() >= target);
        // Nothing at or below what earlier runs could have held.
        assert!(
            ids.iter().all(|&id| id >= floor),
            "round {round}: reissued an ID below {floor}"
        );
        for &id in &ids {
            assert!(seen.insert(id), "round {round}: ID {id} issued twice");
        }
        // The file is intact after the kill and covers everything the child held.
        let recs = FileStore::open(&path).unwrap().records().unwrap();
        floor = recs[0].max_id;
        assert!(ids.iter().all(|&id| id < floor));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_format_1_file_is_read_as_it_is_and_rewritten_by_the_first_allocation() {
    let dir = temp_dir("format1");
    let path = dir.join("ids.txt");
    std::fs::write(
        &path,
        "# segflake file store, format 1\norder 4001 2000 2026-11-22T02:30:00.000Z\nuser 11\n",
    )
    .unwrap();
    let store = FileStore::open(&path).unwrap();
    assert_eq!(store.records().unwrap()[0].max_id, 4001);
    let a = store.allocate("order", 10).unwrap();
    assert_eq!((a.max_id - a.step, a.max_id), (4001, 4011));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("# segflake file store, format 2, generation 1\n"),
        "{text}"
    );
    assert!(
        text.contains("\norder 4011 10 ") && text.contains("\nuser 11 0 -\n"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_torn_last_line_is_never_applied_and_is_cut_off_by_the_next_allocation() {
    let dir = temp_dir("torn");
    let path = dir.join("ids.txt");
    let store = FileStore::open(&path).unwrap();
    store.allocate("order", 100).unwrap(); // snapshot: order 101
    store.allocate("order", 100).unwrap(); // + order 201
                                           // A crash in the middle of the next append: a line without its newline, which as a
                                           // prefix would even read as a lower max_id.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut f, b"+ order 30").unwrap();
    drop(f);
    assert_eq!(store.records().unwrap()[0].max_id, 201);
    let fresh = FileStore::open(&path).unwrap();
    let a = fresh.allocate("order", 100).unwrap();
    assert_eq!((a.max_id - a.step, a.max_id), (201, 301));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains("+ order 30\n") && !text.contains("+ order 30+"),
        "{text}"
    );
    assert!(text.ends_with('\n'), "{text}");
    // The first store object catches up with what the other appended.
    let b = store.allocate("order", 100).unwrap();
    assert_eq!(b.max_id - b.step, 301);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn appended_lines_are_compacted_into_a_new_generation() {
    let dir = temp_dir("compact");
    let path = dir.join("ids.txt");
    let store = FileStore::open(&path).unwrap();
    let other = FileStore::open(&path).unwrap();
    let mut next = std::collections::HashMap::new();
    // ~38 bytes per appended line: 64 KiB of them is ~1,700 allocations.
    for i in 0..6000u64 {
        let tag = format!("t{}", i % 7);
        let s = if i % 2 == 0 { &store } else { &other };
        let a = s.allocate(&tag, 3).unwrap();
        let start = next.entry(tag).or_insert(1u64);
        assert_eq!(a.max_id - a.step, *start, "allocation {i}");
        *start = a.max_id;
    }
    let text = std::fs::read_to_string(&path).unwrap();
    let generation: u64 = text
        .lines()
        .next()
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(generation >= 3, "rewritten at least twice: {generation}");
    assert!(text.len() < 80 * 1024, "{} bytes", text.len());
    let recs = FileStore::open(&path).unwrap().records().unwrap();
    assert_eq!(recs.len(), 7);
    for r in recs {
        assert_eq!(r.max_id, next[&r.tag]);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
