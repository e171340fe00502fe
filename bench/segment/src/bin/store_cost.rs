//! What one allocation costs an embedded store as the number of tags grows: segflake's file
//! store (a snapshot plus appended lines), the whole-file rewrite it replaced (format 1:
//! every allocation rewrote and renamed the file), and SQLite (rusqlite, WAL,
//! `synchronous = FULL`: every commit is durable, as a store's must be). Each cell starts
//! from a file of N tags, then allocates (step 1,000) on tags picked at random for up to
//! `--seconds` or 2,000 allocations. Markdown on stdout, progress on stderr.
//!
//!   segflake-store-cost [--seconds S] [--tags 1,1000,10000,100000]

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use segflake::{FileStore, SegmentStore};

const MAX_OPS: usize = 2000;

/// xorshift64*: tags picked the same way for every store.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n as u64) as usize
    }
}

fn tag(i: usize) -> String {
    format!("tag{i:06}")
}

/// The rows of a fresh store of `n` tags, in format 1 (which every version reads).
fn seed_text(n: usize) -> String {
    let mut s = String::from("# segflake file store, format 1\n");
    for i in 0..n {
        s.push_str(&format!("{} 1 0 -\n", tag(i)));
    }
    s
}

struct Cell {
    ops: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
    bytes: u64,
}

fn measure(n: usize, secs: f64, bytes: impl Fn() -> u64, mut allocate: impl FnMut(&str)) -> Cell {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ n as u64);
    allocate(&tag(0)); // the first allocation may rewrite the seed file
    let start = Instant::now();
    let mut latencies = Vec::with_capacity(MAX_OPS);
    while latencies.len() < MAX_OPS && start.elapsed().as_secs_f64() < secs {
        let t = tag(rng.below(n));
        let t0 = Instant::now();
        allocate(&t);
        latencies.push(t0.elapsed());
    }
    Cell {
        ops: latencies.len(),
        elapsed: start.elapsed(),
        latencies,
        bytes: bytes(),
    }
}

fn file_len(p: &Path) -> u64 {
    fs::metadata(p).map_or(0, |m| m.len())
}

/// Format 1's algorithm, as segflake's file store ran it before: under an exclusive lock,
/// read and parse the whole file, change one row, write the whole file to a temporary
/// file, fsync it, rename it over the file, fsync the directory.
fn rewrite_allocate(path: &Path, tag: &str, step: u64) {
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path.with_extension("lock"))
        .unwrap();
    lock.lock().unwrap();
    let mut text = String::new();
    File::open(path).unwrap().read_to_string(&mut text).unwrap();
    let mut rows: Vec<(String, u64, u64)> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[0].to_string(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
            )
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let i = rows.binary_search_by(|r| r.0.as_str().cmp(tag)).unwrap();
    rows[i].1 += step;
    rows[i].2 = step;
    let mut out = String::from("# segflake file store, format 1\n");
    for (t, m, s) in &rows {
        out.push_str(&format!("{t} {m} {s} 2026-11-26T00:00:00.000Z\n"));
    }
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp).unwrap();
    f.write_all(out.as_bytes()).unwrap();
    f.sync_all().unwrap();
    drop(f);
    fs::rename(&tmp, path).unwrap();
    File::open(path.parent().unwrap())
        .unwrap()
        .sync_all()
        .unwrap();
    lock.unlock().unwrap();
}

fn sqlite_store(path: &Path, n: usize) -> rusqlite::Connection {
    let c = rusqlite::Connection::open(path).unwrap();
    c.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
         CREATE TABLE leaf_alloc (biz_tag TEXT PRIMARY KEY, max_id INTEGER NOT NULL,
                                  step INTEGER NOT NULL, update_time INTEGER NOT NULL);",
    )
    .unwrap();
    let tx = c.unchecked_transaction().unwrap();
    {
        let mut ins = tx
            .prepare("INSERT INTO leaf_alloc VALUES (?1, 1, 0, 0)")
            .unwrap();
        for i in 0..n {
            ins.execute([tag(i)]).unwrap();
        }
    }
    tx.commit().unwrap();
    c
}

fn main() {
    let mut secs = 3.0f64;
    let mut counts = vec![1usize, 1_000, 10_000, 100_000];
    let mut argv = std::env::args().skip(1);
    while let Some(a) = argv.next() {
        let value = argv.next();
        match (a.as_str(), value) {
            ("--seconds", Some(v)) => secs = v.parse().expect("--seconds S"),
            ("--tags", Some(v)) => {
                counts = v
                    .split(',')
                    .map(|x| x.parse().expect("--tags 1,1000,..."))
                    .collect()
            }
            _ => {
                eprintln!("usage: segflake-store-cost [--seconds S] [--tags 1,1000,10000,100000]");
                std::process::exit(2);
            }
        }
    }
    let dir: PathBuf =
        std::env::temp_dir().join(format!("segflake-store-cost-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    println!(
        "## Embedded stores: one durable allocation as the tags grow (up to {MAX_OPS} \
         allocations or {secs} s per cell, tags at random, step 1,000; directory {})\n",
        std::env::temp_dir().display()
    );
    println!("| store | tags | allocations/s | p50 | p99 | file after |");
    println!("|---|---:|---:|---:|---:|---:|");
    for &n in &counts {
        let fresh = |name: &str| {
            let p = dir.join(format!("{name}-{n}"));
            let _ = fs::remove_file(&p);
            p
        };
        let p = fresh("segflake");
        fs::write(&p, seed_text(n)).unwrap();
        let store = FileStore::open(&p).unwrap();
        eprintln!("segflake file store, {n} tags");
        let segflake = measure(
            n,
            secs,
            || file_len(&p),
            |t| {
                store.allocate(t, 1000).unwrap();
            },
        );
        let p2 = fresh("rewrite");
        fs::write(
            &p2,
            seed_text(n).replace(" 1 0 -", " 1 0 2026-11-26T00:00:00.000Z"),
        )
        .unwrap();
        eprintln!("whole-file rewrite, {n} tags");
        let rewrite = measure(
            n,
            secs,
            || file_len(&p2),
            |t| rewrite_allocate(&p2, t, 1000),
        );
        let p3 = fresh("sqlite");
        let conn = sqlite_store(&p3, n);
        let mut stmt = conn
            .prepare(
                "UPDATE leaf_alloc SET max_id = max_id + ?1, step = ?1, update_time = ?2 \
                 WHERE biz_tag = ?3 RETURNING max_id",
            )
            .unwrap();
        eprintln!("SQLite, {n} tags");
        let sqlite = measure(
            n,
            secs,
            || file_len(&p3) + file_len(Path::new(&format!("{}-wal", p3.display()))),
            |t| {
                let _: i64 = stmt
                    .query_row(rusqlite::params![1000, 0, t], |r| r.get(0))
                    .unwrap();
            },
        );
        for (name, mut c) in [
            ("segflake `FileStore` (snapshot + appended lines)", segflake),
            ("whole-file rewrite (the file store before)", rewrite),
            ("SQLite (rusqlite, WAL, synchronous = FULL)", sqlite),
        ] {
            c.latencies.sort();
            let pct = |p: f64| {
                c.latencies[((c.latencies.len() as f64 * p) as usize).min(c.latencies.len() - 1)]
            };
            println!(
                "| {name} | {n} | {:.0} | {:.2} ms | {:.2} ms | {:.1} KiB |",
                c.ops as f64 / c.elapsed.as_secs_f64(),
                pct(0.5).as_secs_f64() * 1e3,
                pct(0.99).as_secs_f64() * 1e3,
                c.bytes as f64 / 1024.0
            );
        }
    }
    let _ = fs::remove_dir_all(&dir);
}
