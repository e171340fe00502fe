//! One table: segflake's `Snowflake` beside the Rust ID generators users pick today, and a
//! bare `AtomicU64::fetch_add` loop as the floor.
//!
//! For each generator:
//! * IDs/s at the twitter layout (41 time / 10 worker / 12 sequence bits, 1 ms tick) on
//!   1 and 2 threads sharing one generator. The layout's ceiling is 4,096,000 IDs/s per
//!   worker; a generator that waits for the next millisecond when its sequence runs out
//!   cannot beat it, and one that borrows future ticks can, for a while (so those get a
//!   warm-up that spends their borrowing first, and the sustained rate is measured).
//! * ns/ID (wall time per ID) on 1 thread, and on 2 threads sharing one generator, under a
//!   configuration whose ceiling is above the measured rate, so the generator's own cost
//!   is measured. Peers whose layout is fixed stay throttled: the column "throttled" says so.
//! * Two floors that are not ID generators: a bare `AtomicU64::fetch_add`, and the
//!   `SystemTime::now()` read every time-based generator pays per ID.
//! * dups: duplicates among 1,000,000 IDs taken by 2 threads from one generator (at the
//!   twitter layout), and how many times an ID was not above the same thread's previous one.
//!
//! Generators that take `&mut self` run unshared on 1 thread and behind a `std::sync::Mutex`
//! on 2 threads, which is how they are shared in practice.

use segflake::{LayoutSpec, Preset, Snowflake, SnowflakeOptions};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const TWITTER_CEILING: f64 = 4_096_000.0;
const DUP_CHECK_IDS: usize = 1_000_000;

struct Config {
    seconds: Duration,
    warmup: Duration,
    /// Measuring time for generators whose rate swings in cycles of seconds.
    long_seconds: Duration,
}

impl Config {
    /// The plain warm-up: a fixed time.
    fn warm(&self) -> impl Fn(Duration) -> bool + '_ {
        move |elapsed| elapsed >= self.warmup
    }
}

/// One row of the table.
struct Row {
    name: &'static str,
    rate_1: f64,
    rate_2: f64,
    /// Wall-clock ns per ID, unthrottled configuration, 1 and 2 threads sharing it.
    ns_1: f64,
    ns_2: f64,
    throttled: &'static str,
    /// Whether "% of 4,096,000" means anything (a 64-bit snowflake layout).
    snowflake: bool,
    dups: u64,
    order_errors: u64,
    notes: String,
}

fn main() {
    let mut config = Config {
        seconds: Duration::from_secs(2),
        warmup: Duration::from_millis(300),
        long_seconds: Duration::from_secs(8),
    };
    let mut argv = std::env::args().skip(1);
    while let Some(arg) = argv.next() {
        match arg.as_str() {
            "--seconds" => {
                let v: f64 = argv
                    .next()
                    .and_then(|s| s.parse().ok())
                    .filter(|v| (0.1..=60.0).contains(v))
                    .unwrap_or_else(|| usage("--seconds needs a number of seconds, 0.1..=60"));
                config.seconds = Duration::from_secs_f64(v);
                config.long_seconds = Duration::from_secs_f64((4.0 * v).max(2.0));
            }
            "--help" | "-h" => {
                println!(
                    "segflake-bench [--seconds S]\n\nS: measuring time per cell (default 2). \
                     Prints one Markdown table to stdout, progress to stderr."
                );
                return;
            }
            other => usage(&format!("unknown argument {other:?}")),
        }
    }

    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into());
    eprintln!(
        "measuring {} s per cell on {cpus} CPUs (load average {load})",
        config.seconds.as_secs_f64()
    );

    let rows = vec![
        atomic_floor(&config),
        clock_floor(&config),
        segflake_row(&config, 0),
        segflake_row(&config, 2000),
        snowflaked_row(&config),
        rs_snowflake_row(&config),
        idgenerator_row(&config),
        ulid_row(&config),
        uuid_row(&config),
    ];
    print_table(&rows, &config, cpus, &load);
}

fn usage(message: &str) -> ! {
    eprintln!("error: {message}\nrun `segflake-bench --help` for usage");
    std::process::exit(2);
}

fn print_table(rows: &[Row], config: &Config, cpus: usize, load: &str) {
    println!(
        "| generator | IDs/s, twitter layout, 1 thread (% of 4,096,000) | IDs/s, twitter layout, \
         2 threads | ns/ID, unthrottled, 1 thread | ns/ID, unthrottled, 2 threads | throttled \
         by its own layout? | dups / order errors in 1,000,000 (2 threads) | notes |"
    );
    println!("|---|--:|--:|--:|--:|---|--:|---|");
    for r in rows {
        let pct = if r.snowflake {
            format!(" ({:.1}%)", 100.0 * r.rate_1 / TWITTER_CEILING)
        } else {
            String::new()
        };
        println!(
            "| {} | {}{} | {} | {:.1} | {:.1} | {} | {} / {} | {} |",
            r.name,
            thousands(r.rate_1),
            pct,
            thousands(r.rate_2),
            r.ns_1,
            r.ns_2,
            r.throttled,
            r.dups,
            r.order_errors,
            r.notes
        );
    }
    let load_after = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into());
    println!();
    println!(
        "{cpus} CPUs, load average {load} before and {load_after} after; {} s per cell after a \
         {} s warm-up; segflake's default row starts timing once its 2 s borrow is spent; \
         idgenerator's twitter-layout cells run {} s (its rate swings in cycles of about 2 s).",
        config.seconds.as_secs_f64(),
        config.warmup.as_secs_f64(),
        config.long_seconds.as_secs_f64()
    );
}

fn thousands(v: f64) -> String {
    let s = format!("{:.0}", v.max(0.0));
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

// ---------------------------------------------------------------------------------------
// Harness

/// When the untimed warm-up may end, given how long it has run.
type Warm<'a> = &'a dyn Fn(Duration) -> bool;

/// Calls `f` on this thread: untimed until `warm` says so, then `dur` timed.
/// Returns calls per second.
fn rate_single<T>(mut f: impl FnMut() -> T, warm: Warm, dur: Duration) -> f64 {
    const BATCH: u64 = 256;
    let warm_start = Instant::now();
    while !warm(warm_start.elapsed()) {
        for _ in 0..BATCH {
            black_box(f());
        }
    }
    let start = Instant::now();
    let mut n = 0u64;
    loop {
        for _ in 0..BATCH {
            black_box(f());
        }
        n += BATCH;
        let elapsed = start.elapsed();
        if elapsed >= dur {
            return n as f64 / elapsed.as_secs_f64();
        }
    }
}

/// Calls `f` from `threads` threads at once: untimed until `warm` says so (checked every
/// millisecond), then `dur` timed. Returns calls per second, all threads together.
fn rate_shared<T, F: Fn() -> T + Sync>(f: &F, threads: usize, warm: Warm, dur: Duration) -> f64 {
    const BATCH: u64 = 256;
    let measuring = AtomicBool::new(false);
    let stop = AtomicBool::new(false);
    let start_line = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    start_line.wait();
                    while !measuring.load(Ordering::Relaxed) {
                        for _ in 0..BATCH {
                            black_box(f());
                        }
                    }
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..BATCH {
                            black_box(f());
                        }
                        n += BATCH;
                    }
                    n
                })
            })
            .collect();
        start_line.wait();
        let warm_start = Instant::now();
        while !warm(warm_start.elapsed()) {
            std::thread::sleep(Duration::from_millis(1));
        }
        measuring.store(true, Ordering::Relaxed);
        let start = Instant::now();
        std::thread::sleep(dur);
        stop.store(true, Ordering::Relaxed);
        let elapsed = start.elapsed().as_secs_f64();
        let total: u64 = handles
            .into_iter()
            .map(|h| h.join().expect("bench thread"))
            .sum();
        total as f64 / elapsed
    })
}

/// Takes `DUP_CHECK_IDS` IDs from 2 threads sharing `f`; returns (duplicates, times an ID
/// was not above the same thread's previous ID).
fn dup_check<F: Fn() -> u128 + Sync>(f: &F) -> (u64, u64) {
    const THREADS: usize = 2;
    let per_thread = DUP_CHECK_IDS / THREADS;
    let start_line = Barrier::new(THREADS);
    let parts: Vec<Vec<u128>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                s.spawn(|| {
                    let mut v = Vec::with_capacity(per_thread);
                    start_line.wait();
                    for _ in 0..per_thread {
                        v.push(f());
                    }
                    v
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("dup thread"))
            .collect()
    });
    let order_errors = parts
        .iter()
        .map(|v| v.windows(2).filter(|w| w[1] <= w[0]).count() as u64)
        .sum();
    let mut all: Vec<u128> = parts.into_iter().flatten().collect();
    all.sort_unstable();
    let dups = all.windows(2).filter(|w| w[0] == w[1]).count() as u64;
    (dups, order_errors)
}

fn progress(name: &str) {
    eprintln!("  {name}");
}

// ---------------------------------------------------------------------------------------
// The generators

fn atomic_floor(c: &Config) -> Row {
    let name = "`AtomicU64::fetch_add` (floor)";
    progress(name);
    let counter = AtomicU64::new(0);
    let f = || counter.fetch_add(1, Ordering::Relaxed);
    let rate_1 = rate_single(f, &c.warm(), c.seconds);
    let rate_2 = rate_shared(&f, 2, &c.warm(), c.seconds);
    let ns = 1e9 / rate_single(f, &c.warm(), c.seconds);
    let ns_2 = 1e9 / rate_shared(&f, 2, &c.warm(), c.seconds);
    let (dups, order_errors) = dup_check(&|| u128::from(f()));
    Row {
        name,
        rate_1,
        rate_2,
        ns_1: ns,
        ns_2,
        throttled: "no (a counter, no time)",
        snowflake: false,
        dups,
        order_errors,
        notes: "not an ID generator: the cost of one shared atomic increment".into(),
    }
}

fn clock_floor(c: &Config) -> Row {
    let name = "`SystemTime::now()` (clock read)";
    progress(name);
    let f = || now_ms();
    let rate_1 = rate_single(f, &c.warm(), c.seconds);
    let rate_2 = rate_shared(&f, 2, &c.warm(), c.seconds);
    let ns = 1e9 / rate_single(f, &c.warm(), c.seconds);
    let ns_2 = 1e9 / rate_shared(&f, 2, &c.warm(), c.seconds);
    Row {
        name,
        rate_1,
        rate_2,
        ns_1: ns,
        ns_2,
        throttled: "-",
        snowflake: false,
        dups: 0,
        order_errors: 0,
        notes: "not an ID generator: the Unix-milliseconds clock read every time-based \
                generator here pays per ID (dups not applicable)"
            .into(),
    }
}

fn segflake_row(c: &Config, max_drift_ms: u64) -> Row {
    let name = if max_drift_ms == 0 {
        "**segflake** `Snowflake`, strict (`max_drift_ms = 0`)"
    } else {
        "**segflake** `Snowflake`, default (`max_drift_ms = 2000`)"
    };
    progress(name);
    let twitter = Preset::Twitter.spec().build().expect("twitter layout");
    let fast = LayoutSpec {
        worker_bits: 0,
        sequence_bits: 22,
        ..Preset::Twitter.spec()
    }
    .build()
    .expect("41/0/22 layout");
    let new = |layout: segflake::Layout| {
        let options = SnowflakeOptions {
            max_drift_ms,
            // Worker 1 where the layout has worker bits, like the peers.
            ..SnowflakeOptions::new(layout.max_worker_id().min(1))
        };
        Snowflake::new(layout, options).expect("generator")
    };
    // Calls that returned an error; the closure retries, so the rate counts IDs only.
    let refused = AtomicU64::new(0);
    let next = |g: &Snowflake| loop {
        match g.next_id() {
            Ok(id) => return id,
            Err(_) => {
                refused.fetch_add(1, Ordering::Relaxed);
            }
        }
    };
    // With drift, the generator first borrows up to max_drift_ms of future ticks: start
    // timing once that borrow is spent (or after 10 s), so the sustained rate is measured.
    let spent = |g: &Snowflake, elapsed: Duration| {
        elapsed >= c.warmup
            && (g.high_water_mark_ms() + 1 >= now_ms() + max_drift_ms
                || elapsed >= Duration::from_secs(10))
    };

    let g = new(twitter);
    let rate_1 = rate_single(|| next(&g), &|e| spent(&g, e), c.seconds);
    let ahead_1 = g.high_water_mark_ms().saturating_sub(now_ms());
    let g = new(twitter);
    let rate_2 = rate_shared(&|| next(&g), 2, &|e| spent(&g, e), c.seconds);
    let ahead_2 = g.high_water_mark_ms().saturating_sub(now_ms());
    let g = new(fast);
    let ns = 1e9 / rate_single(|| next(&g), &c.warm(), c.seconds);
    let ns_2 = 1e9 / rate_shared(&|| next(&g), 2, &c.warm(), c.seconds);
    let g = new(twitter);
    let (dups, order_errors) = dup_check(&|| u128::from(next(&g)));
    let mut notes = if max_drift_ms == 0 {
        "lock-free CAS; waits for the next millisecond when the tick's 4,096 sequence numbers \
         are used; a descheduled thread loses the milliseconds it missed"
            .to_string()
    } else {
        format!(
            "borrows up to 2 s of future ticks, then waits; timed after the borrow was spent \
             (the runs ended {ahead_1} and {ahead_2} ms ahead of the clock), so this is the \
             sustained rate: the borrow also makes up for milliseconds lost to descheduling"
        )
    };
    notes.push_str("; ns/ID with 41/0/22 bits (ceiling 4.19e9/s)");
    let refused = refused.load(Ordering::Relaxed);
    if refused > 0 {
        notes.push_str(&format!(
            "; **{refused} calls refused** with `ClockMovedBackwards` although the clock did \
             not step back (retried, not counted)"
        ));
    }
    Row {
        name,
        rate_1,
        rate_2,
        ns_1: ns,
        ns_2,
        throttled: "no (22 sequence bits)",
        snowflake: true,
        dups,
        order_errors,
        notes,
    }
}

fn snowflaked_row(c: &Config) -> Row {
    let name = "`snowflaked` 1.0 `sync::Generator`";
    progress(name);
    let g = snowflaked::sync::Generator::new(1);
    let rate_1 = rate_single(|| g.generate::<u64>(), &c.warm(), c.seconds);
    let g = snowflaked::sync::Generator::new(1);
    let rate_2 = rate_shared(&|| g.generate::<u64>(), 2, &c.warm(), c.seconds);
    let g = snowflaked::sync::Generator::new(1);
    let ns = 1e9 / rate_single(|| g.generate::<u64>(), &c.warm(), c.seconds);
    let ns_2 = 1e9 / rate_shared(&|| g.generate::<u64>(), 2, &c.warm(), c.seconds);
    let g = snowflaked::sync::Generator::new(1);
    let (dups, order_errors) = dup_check(&|| u128::from(g.generate::<u64>()));
    Row {
        name,
        rate_1,
        rate_2,
        ns_1: ns,
        ns_2,
        throttled: "**yes**: fixed 10 instance / 12 sequence bits (4,096,000/s)",
        snowflake: true,
        dups,
        order_errors,
        notes: "lock-free CAS; epoch = Unix epoch by default; panics if the clock moves backwards"
            .into(),
    }
}

fn rs_snowflake_row(c: &Config) -> Row {
    use snowflake::SnowflakeIdGenerator;
    let name = "`rs-snowflake` 0.6 `real_time_generate`";
    progress(name);
    let mut g = SnowflakeIdGenerator::new(1, 1);
    let rate_1 = rate_single(|| g.real_time_generate(), &c.warm(), c.seconds);
    let m = Mutex::new(SnowflakeIdGenerator::new(1, 1));
    let rate_2 = rate_shared(&|| lock(&m).real_time_generate(), 2, &c.warm(), c.seconds);
    let mut g = SnowflakeIdGenerator::new(1, 1);
    let ns = 1e9 / rate_single(|| g.real_time_generate(), &c.warm(), c.seconds);
    let m = Mutex::new(SnowflakeIdGenerator::new(1, 1));
    let ns_2 = 1e9 / rate_shared(&|| lock(&m).real_time_generate(), 2, &c.warm(), c.seconds);
    let m = Mutex::new(SnowflakeIdGenerator::new(1, 1));
    let (dups, order_errors) = dup_check(&|| lock(&m).real_time_generate() as u64 as u128);
    Row {
        name,
        rate_1,
        rate_2,
        ns_1: ns,
        ns_2,
        throttled: "**yes**: fixed 5+5 worker / 12 sequence bits (4,096,000/s)",
        snowflake: true,
        dups,
        order_errors,
        notes: "`&mut self`: a `Mutex` on 2 threads; reads the clock on every call; no \
                check for a clock moving backwards"
            .into(),
    }
}

fn idgenerator_row(c: &Config) -> Row {
    use idgenerator::{CoreIdGenerator, IdGeneratorOptions};
    let name = "`idgenerator` 2.0 (Yitter) `CoreIdGenerator`";
    progress(name);
    // Its own wrapper, `IdInstance`, is this generator in a global `parking_lot::Mutex`.
    let make = |worker_bits: u8, seq_bits: u8| {
        let mut g = CoreIdGenerator::default();
        g.init(
            IdGeneratorOptions::new()
                .worker_id(1)
                .worker_id_bit_len(worker_bits)
                .seq_bit_len(seq_bits),
        )
        .expect("idgenerator options");
        g
    };
    let mut g = make(10, 12);
    let rate_1 = rate_single(|| g.next_id(), &c.warm(), c.long_seconds);
    let m = Mutex::new(make(10, 12));
    let rate_2 = rate_shared(&|| lock(&m).next_id(), 2, &c.warm(), c.long_seconds);
    let mut g = make(1, 21);
    let ns = 1e9 / rate_single(|| g.next_id(), &c.warm(), c.seconds);
    let m = Mutex::new(make(1, 21));
    let ns_2 = 1e9 / rate_shared(&|| lock(&m).next_id(), 2, &c.warm(), c.seconds);
    let m = Mutex::new(make(10, 12));
    let (dups, order_errors) = dup_check(&|| lock(&m).next_id() as u64 as u128);
    Row {
        name,
        rate_1,
        rate_2,
        ns_1: ns,
        ns_2,
        throttled: "no (1 worker / 21 sequence bits for ns/ID)",
        snowflake: true,
        dups,
        order_errors,
        notes: "`&mut self`: a `Mutex` on 2 threads; borrows up to 2,000 future ticks \
                (\"drift\") then spins; sequences 0-4 of each tick are reserved; `init` \
                sleeps 500 ms"
            .into(),
    }
}

fn ulid_row(c: &Config) -> Row {
    let name = "`ulid` 3.0 monotonic `Generator`";
    progress(name);
    fn next(g: &mut ulid::Generator) -> u128 {
        match g.generate() {
            Ok(u) => u.0,
            Err(overflow) => overflow.commit_overflow_increment().0,
        }
    }
    let mut g = ulid::Generator::new();
    let rate_1 = rate_single(|| next(&mut g), &c.warm(), c.seconds);
    let m = Mutex::new(ulid::Generator::new());
    let rate_2 = rate_shared(&|| next(&mut lock(&m)), 2, &c.warm(), c.seconds);
    let mut g = ulid::Generator::new();
    let ns = 1e9 / rate_single(|| next(&mut g), &c.warm(), c.seconds);
    let m = Mutex::new(ulid::Generator::new());
    let ns_2 = 1e9 / rate_shared(&|| next(&mut lock(&m)), 2, &c.warm(), c.seconds);
    let m = Mutex::new(ulid::Generator::new());
    let (dups, order_errors) = dup_check(&|| next(&mut lock(&m)));
    Row {
        name,
        rate_1,
        rate_2,
        ns_1: ns,
        ns_2,
        throttled: "no (128 bits: 48 time + 80 random)",
        snowflake: false,
        dups,
        order_errors,
        notes: "128-bit, not a 64-bit ID (no layout: \"twitter layout\" columns are its plain \
                rate); `&mut self`: a `Mutex` on 2 threads"
            .into(),
    }
}

fn uuid_row(c: &Config) -> Row {
    let name = "`uuid` 1.29 `Uuid::now_v7`";
    progress(name);
    let f = || uuid::Uuid::now_v7().as_u128();
    let rate_1 = rate_single(f, &c.warm(), c.seconds);
    let rate_2 = rate_shared(&f, 2, &c.warm(), c.seconds);
    let ns = 1e9 / rate_single(f, &c.warm(), c.seconds);
    let ns_2 = 1e9 / rate_shared(&f, 2, &c.warm(), c.seconds);
    let (dups, order_errors) = dup_check(&f);
    Row {
        name,
        rate_1,
        rate_2,
        ns_1: ns,
        ns_2,
        throttled: "no (128 bits: 48 time + 74 counter/random)",
        snowflake: false,
        dups,
        order_errors,
        notes: "128-bit, not a 64-bit ID (\"twitter layout\" columns are its plain rate); one \
                process-wide context behind a `Mutex`; built with `fast-rng`"
            .into(),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
