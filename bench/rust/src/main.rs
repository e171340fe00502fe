//! One table: segflake's `Snowflake` beside the Rust ID generators users pick today, and a
//! bare `AtomicU64::fetch_add` loop as the floor.
//!
//! For each generator:
//! * IDs/s at the twitter layout (41 time / 10 worker / 12 sequence bits, 1 ms tick) on
//!   1 and 2 threads sharing one generator. The layout's ceiling is 4,096,000 IDs/s per
//!   worker; a generator that waits for the next millisecond when its sequence runs out
//!   cannot beat it, and one that borrows future ticks can, for a while (segflake's default
//!   row is timed once its borrow is spent; idgenerator's cells run longer).
//! * ns/ID (wall time per ID) on 1 thread, and on 2 threads sharing one generator, under a
//!   configuration whose ceiling is above the measured rate, so the generator's own cost
//!   is measured. Peers whose layout is fixed stay throttled: the column "throttled" says so.
//! * dups: duplicates among 1,000,000 IDs taken by 2 threads from one generator (at the
//!   twitter layout), and how many times an ID was not above the same thread's previous one.
//! * Two floors that are not ID generators: a bare `AtomicU64::fetch_add`, and the
//!   `SystemTime::now()` read every time-based generator pays per ID.
//!
//! The machine is shared, so its load changes during a run. Every cell is measured in
//! several rounds; within a round, one measurement (say "ns/ID on 2 threads") is taken for
//! every generator in turn before the next, so a change of load hits all generators alike.
//! The table shows the median of the rounds.
//!
//! Generators that take `&mut self` run unshared on 1 thread and behind a `std::sync::Mutex`
//! on 2 threads, which is how they are shared in practice.
//!
//! A second table: segment (Leaf-style) IDs. segflake's `SegmentGenerator` over an in-memory
//! store, through a `TagHandle` and by tag name, on 1 thread and 2 threads sharing one,
//! beside two floors: a bare `AtomicU64::fetch_add`, and a `Mutex<u64>` counter (what a
//! hand-written segment cache reduces to between two store calls). Same rounds and median.

use segflake::{
    Layout, LeaseOptions, LeasedSnowflake, MemoryRegistry, MemoryStore, Preset, SegmentGenerator,
    SegmentOptions, Snowflake, SnowflakeOptions,
};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const TWITTER_CEILING: f64 = 4_096_000.0;
const DUP_CHECK_IDS: usize = 1_000_000;

struct Config {
    seconds: Duration,
    warmup: Duration,
    /// Measuring time for generators whose rate swings in cycles of seconds.
    long_seconds: Duration,
    rounds: usize,
}

impl Config {
    /// The plain warm-up: a fixed time.
    fn warm(&self) -> impl Fn(Duration) -> bool + '_ {
        move |elapsed| elapsed >= self.warmup
    }
}

/// A generator under test. Every measurement builds a fresh generator.
trait Gen {
    fn name(&self) -> &'static str;
    /// IDs/s at the twitter layout, `threads` threads sharing one generator.
    fn twitter(&self, c: &Config, threads: usize) -> f64;
    /// IDs/s under the unthrottled configuration.
    fn unthrottled(&self, c: &Config, threads: usize) -> f64;
    /// (duplicates, per-thread order errors) among `DUP_CHECK_IDS` IDs from 2 threads.
    fn dups(&self) -> (u64, u64);
    fn throttled(&self) -> &'static str;
    /// Whether "% of 4,096,000" means anything (a 64-bit snowflake layout).
    fn snowflake(&self) -> bool {
        true
    }
    /// Notes for the table, after all rounds ran.
    fn notes(&self) -> String;
}

/// One measurement of a generator: IDs per second.
type Measure = fn(&dyn Gen, &Config) -> f64;

fn main() {
    let mut config = Config {
        seconds: Duration::from_secs(1),
        warmup: Duration::from_millis(200),
        long_seconds: Duration::from_secs(4),
        rounds: 3,
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
            "--rounds" => {
                config.rounds = argv
                    .next()
                    .and_then(|s| s.parse().ok())
                    .filter(|v| (1..=20).contains(v))
                    .unwrap_or_else(|| usage("--rounds needs a whole number, 1..=20"));
            }
            "--help" | "-h" => {
                println!(
                    "segflake-bench [--seconds S] [--rounds R]\n\n\
                     S: measuring time per cell and round (default 1); R: rounds, the tables \
                     show the median (default 3).\nPrints two Markdown tables to stdout \
                     (snowflake generators, then segment IDs), progress to stderr."
                );
                return;
            }
            other => usage(&format!("unknown argument {other:?}")),
        }
    }

    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load_before = load_average();
    eprintln!(
        "{} rounds of {} s per cell on {cpus} CPUs (load average {load_before})",
        config.rounds,
        config.seconds.as_secs_f64()
    );

    let gens: Vec<Box<dyn Gen>> = vec![
        Box::new(AtomicFloor),
        Box::new(ClockFloor),
        Box::new(Segflake::new(0)),
        Box::new(Segflake::new(2000)),
        Box::new(SegflakeExclusive(Segflake::new(2000))),
        Box::new(Segflake::leased()),
        Box::new(Snowflaked),
        Box::new(RsSnowflake),
        Box::new(IdGenerator),
        Box::new(UlidGen),
        Box::new(UuidV7),
    ];

    // cells[g][m]: the rounds' values of measurement m for generator g.
    let measurements: [(&str, Measure); 4] = [
        ("twitter layout, 1 thread", |g, c| g.twitter(c, 1)),
        ("twitter layout, 2 threads", |g, c| g.twitter(c, 2)),
        ("unthrottled, 1 thread", |g, c| g.unthrottled(c, 1)),
        ("unthrottled, 2 threads", |g, c| g.unthrottled(c, 2)),
    ];
    let mut cells = vec![vec![Vec::new(); measurements.len()]; gens.len()];
    for round in 1..=config.rounds {
        for (m, (label, measure)) in measurements.iter().enumerate() {
            eprintln!("round {round}/{}: {label}", config.rounds);
            for (g, gen) in gens.iter().enumerate() {
                let v = measure(gen.as_ref(), &config);
                eprintln!("  {:<60} {:>14.0} IDs/s", gen.name(), v);
                cells[g][m].push(v);
            }
        }
    }
    eprintln!("duplicate check");
    let dups: Vec<(u64, u64)> = gens.iter().map(|g| g.dups()).collect();

    println!(
        "| generator | IDs/s, twitter layout, 1 thread (% of 4,096,000) | IDs/s, twitter layout, \
         2 threads | ns/ID, unthrottled, 1 thread | ns/ID, unthrottled, 2 threads | throttled \
         by its own layout? | dups / order errors in 1,000,000 (2 threads) | notes |"
    );
    println!("|---|--:|--:|--:|--:|---|--:|---|");
    for (g, gen) in gens.iter().enumerate() {
        let [t1, t2, u1, u2] = [0, 1, 2, 3].map(|m| median(&cells[g][m]));
        let pct = if gen.snowflake() {
            format!(" ({:.1}%)", 100.0 * t1 / TWITTER_CEILING)
        } else {
            String::new()
        };
        println!(
            "| {} | {}{} | {} | {:.1} | {:.1} | {} | {} / {} | {} |",
            gen.name(),
            thousands(t1),
            pct,
            thousands(t2),
            1e9 / u1,
            1e9 / u2,
            gen.throttled(),
            dups[g].0,
            dups[g].1,
            gen.notes()
        );
    }
    println!();
    println!(
        "{cpus} CPUs, load average {load_before} before and {} after. Median of {} rounds of \
         {} s per cell (after a {} s warm-up; idgenerator's twitter-layout cells run {} s, as \
         its rate swings in cycles of about 2 s; segflake's default row is timed once its 2 s \
         drift borrow is spent). ns/ID = wall time / IDs, all threads together.",
        load_average(),
        config.rounds,
        config.seconds.as_secs_f64(),
        config.warmup.as_secs_f64(),
        config.long_seconds.as_secs_f64()
    );

    segment_table(&config, cpus);
}

/// The second table: segment IDs beside the two floors.
fn segment_table(config: &Config, cpus: usize) {
    let load_before = load_average();
    let sources: Vec<Box<dyn SegSource>> = vec![
        Box::new(SegAtomicFloor),
        Box::new(SegMutexFloor),
        Box::new(SegflakeSegment { by_name: false }),
        Box::new(SegflakeSegment { by_name: true }),
    ];
    // cells[s][t]: the rounds' values for source s on t + 1 threads.
    let mut cells = vec![vec![Vec::new(); 2]; sources.len()];
    for round in 1..=config.rounds {
        for (t, threads) in [1, 2].into_iter().enumerate() {
            eprintln!(
                "round {round}/{}: segment IDs, {threads} thread(s)",
                config.rounds
            );
            for (s, source) in sources.iter().enumerate() {
                let v = source.rate(config, threads);
                eprintln!("  {:<60} {:>14.0} IDs/s", source.name(), v);
                cells[s][t].push(v);
            }
        }
    }
    eprintln!("duplicate check (segment IDs)");
    let dups: Vec<(u64, u64)> = sources.iter().map(|s| s.dups()).collect();

    println!();
    println!(
        "| segment ID source | IDs/s, 1 thread | IDs/s, 2 threads | ns/ID, 1 thread | ns/ID, 2 \
         threads | dups / order errors in 1,000,000 (2 threads) | notes |"
    );
    println!("|---|--:|--:|--:|--:|--:|---|");
    for (s, source) in sources.iter().enumerate() {
        let [r1, r2] = [0, 1].map(|t| median(&cells[s][t]));
        println!(
            "| {} | {} | {} | {:.1} | {:.1} | {} / {} | {} |",
            source.name(),
            thousands(r1),
            thousands(r2),
            1e9 / r1,
            1e9 / r2,
            dups[s].0,
            dups[s].1,
            source.notes()
        );
    }
    println!();
    println!(
        "{cpus} CPUs, load average {load_before} before and {} after. Median of {} rounds of \
         {} s per cell (after a {} s warm-up); a fresh source for every cell. ns/ID = wall \
         time / IDs, all threads together.",
        load_average(),
        config.rounds,
        config.seconds.as_secs_f64(),
        config.warmup.as_secs_f64()
    );
}

fn usage(message: &str) -> ! {
    eprintln!("error: {message}\nrun `segflake-bench --help` for usage");
    std::process::exit(2);
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if !n.is_multiple_of(2) => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn thousands(v: f64) -> String {
    let s = format!("{:.0}", v.max(0.0));
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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

/// A generator shared by reference (`&self` API): the same closure on 1 or more threads.
fn shared<T, F: Fn() -> T + Sync>(f: F, threads: usize, warm: Warm, dur: Duration) -> f64 {
    if threads == 1 {
        rate_single(&f, warm, dur)
    } else {
        rate_shared(&f, threads, warm, dur)
    }
}

/// A `&mut self` generator: owned on 1 thread, behind a `Mutex` on more.
fn exclusive<G: Send, T>(
    mut g: G,
    f: impl Fn(&mut G) -> T + Sync,
    threads: usize,
    warm: Warm,
    dur: Duration,
) -> f64 {
    if threads == 1 {
        rate_single(|| f(&mut g), warm, dur)
    } else {
        let m = Mutex::new(g);
        rate_shared(&|| f(&mut lock(&m)), threads, warm, dur)
    }
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

// ---------------------------------------------------------------------------------------
// The floors

struct AtomicFloor;

impl Gen for AtomicFloor {
    fn name(&self) -> &'static str {
        "`AtomicU64::fetch_add` (floor)"
    }
    fn twitter(&self, c: &Config, threads: usize) -> f64 {
        let counter = AtomicU64::new(0);
        shared(
            || counter.fetch_add(1, Ordering::Relaxed),
            threads,
            &c.warm(),
            c.seconds,
        )
    }
    fn unthrottled(&self, c: &Config, threads: usize) -> f64 {
        self.twitter(c, threads)
    }
    fn dups(&self) -> (u64, u64) {
        let counter = AtomicU64::new(0);
        dup_check(&|| u128::from(counter.fetch_add(1, Ordering::Relaxed)))
    }
    fn throttled(&self) -> &'static str {
        "no (a counter, no time)"
    }
    fn snowflake(&self) -> bool {
        false
    }
    fn notes(&self) -> String {
        "not an ID generator: the cost of one shared atomic increment".into()
    }
}

struct ClockFloor;

impl Gen for ClockFloor {
    fn name(&self) -> &'static str {
        "`SystemTime::now()` (clock read)"
    }
    fn twitter(&self, c: &Config, threads: usize) -> f64 {
        shared(now_ms, threads, &c.warm(), c.seconds)
    }
    fn unthrottled(&self, c: &Config, threads: usize) -> f64 {
        self.twitter(c, threads)
    }
    fn dups(&self) -> (u64, u64) {
        (0, 0)
    }
    fn throttled(&self) -> &'static str {
        "-"
    }
    fn snowflake(&self) -> bool {
        false
    }
    fn notes(&self) -> String {
        "not an ID generator: the Unix-milliseconds clock read that every time-based generator \
         here pays per ID (no dup check)"
            .into()
    }
}

// ---------------------------------------------------------------------------------------
// segflake

struct Segflake {
    max_drift_ms: u64,
    /// Whether the worker ID is leased (the generator capped by its lease's fence).
    leased: bool,
    twitter: Layout,
    fast: Layout,
    /// Calls that returned an error (retried, so rates count IDs only).
    refused: AtomicU64,
    /// How far ahead of the clock the twitter-layout runs ended, in ms.
    ahead: Mutex<Vec<u64>>,
}

impl Segflake {
    fn new(max_drift_ms: u64) -> Segflake {
        Segflake {
            max_drift_ms,
            leased: false,
            twitter: Preset::Twitter.spec().build().expect("twitter layout"),
            fast: Preset::Twitter
                .spec()
                .with_worker_bits(0)
                .with_sequence_bits(22)
                .build()
                .expect("41/0/22 layout"),
            refused: AtomicU64::new(0),
            ahead: Mutex::new(Vec::new()),
        }
    }

    /// The default generator with its worker ID leased from an in-process registry: the
    /// same hot path, capped by the lease's time mark.
    fn leased() -> Segflake {
        Segflake {
            leased: true,
            ..Segflake::new(2000)
        }
    }

    fn plain_generator(&self, layout: Layout) -> Snowflake {
        // Worker 1 where the layout has worker bits, like the peers.
        let options = SnowflakeOptions::new(layout.max_worker_id().min(1))
            .with_max_drift_ms(self.max_drift_ms);
        Snowflake::new(layout, options).expect("generator")
    }

    fn generator(&self, layout: Layout) -> Issuer {
        if !self.leased {
            return Issuer::Plain(self.plain_generator(layout));
        }
        let options = SnowflakeOptions::new(0).with_max_drift_ms(self.max_drift_ms);
        let lease =
            LeaseOptions::default().with_preferred_worker_id(Some(layout.max_worker_id().min(1)));
        let registry = Arc::new(MemoryRegistry::new());
        Issuer::Leased(
            LeasedSnowflake::start(layout, options, lease, registry, None).expect("leased"),
        )
    }

    fn next(&self, g: &Issuer) -> u64 {
        for _ in 0..1_000 {
            match g.next_id() {
                Ok(id) => return id,
                Err(_) => {
                    self.refused.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        // Only a real clock step back beyond the drift bound refuses this often.
        match g.next_id() {
            Ok(id) => id,
            Err(e) => {
                eprintln!("error: segflake kept refusing to issue IDs: {e}");
                std::process::exit(1);
            }
        }
    }
}

impl Gen for Segflake {
    fn name(&self) -> &'static str {
        if self.leased {
            "**segflake** `LeasedSnowflake` (worker ID leased), default"
        } else if self.max_drift_ms == 0 {
            "**segflake** `Snowflake`, strict (`max_drift_ms = 0`)"
        } else {
            "**segflake** `Snowflake`, default (`max_drift_ms = 2000`)"
        }
    }
    fn twitter(&self, c: &Config, threads: usize) -> f64 {
        let g = self.generator(self.twitter);
        // With drift, the generator first borrows up to max_drift_ms of future ticks: time
        // it once that borrow is spent (or after 10 s), so the sustained rate is measured.
        let spent = |elapsed: Duration| {
            elapsed >= c.warmup
                && (g.high_water_mark_ms() + 1 >= now_ms() + self.max_drift_ms
                    || elapsed >= Duration::from_secs(10))
        };
        let rate = shared(|| self.next(&g), threads, &spent, c.seconds);
        if self.max_drift_ms > 0 {
            lock(&self.ahead).push(g.high_water_mark_ms().saturating_sub(now_ms()));
        }
        rate
    }
    fn unthrottled(&self, c: &Config, threads: usize) -> f64 {
        let g = self.generator(self.fast);
        shared(|| self.next(&g), threads, &c.warm(), c.seconds)
    }
    fn dups(&self) -> (u64, u64) {
        let g = self.generator(self.twitter);
        dup_check(&|| u128::from(self.next(&g)))
    }
    fn throttled(&self) -> &'static str {
        "no (41/0/22 bits for ns/ID)"
    }
    fn notes(&self) -> String {
        let mut notes = if self.leased {
            "the default generator capped by its lease (an in-process registry; renewals run \
             on the lease thread): the cap is the one relaxed load of the fence word every \
             generator reads, so this row should match the default row"
                .to_string()
        } else if self.max_drift_ms == 0 {
            "lock-free CAS; waits for the next millisecond when a tick's 4,096 sequence numbers \
             are used, so a descheduled thread loses the milliseconds it missed"
                .to_string()
        } else {
            let ahead = lock(&self.ahead);
            let (lo, hi) = (
                ahead.iter().min().copied().unwrap_or(0),
                ahead.iter().max().copied().unwrap_or(0),
            );
            format!(
                "lock-free CAS; borrows up to 2 s of future ticks, then waits: timed once the \
                 borrow was spent (runs ended {lo}..{hi} ms ahead of the clock), so this is the \
                 sustained rate; the borrow also makes up for milliseconds lost to descheduling"
            )
        };
        let refused = self.refused.load(Ordering::Relaxed);
        if refused > 0 {
            let calls = if refused == 1 { "call" } else { "calls" };
            notes.push_str(&format!(
                "; **{refused} {calls} refused** with `ClockMovedBackwards` although the clock \
                 did not step back (retried, not counted)"
            ));
        }
        notes
    }
}

/// segflake's `next_id_mut`: the same generator through `&mut self` (no atomic
/// read-modify-write), compared like the peers that are `&mut self` generators.
/// A generator of either kind, issuing through `&self`.
enum Issuer {
    Plain(Snowflake),
    Leased(LeasedSnowflake),
}

impl Issuer {
    fn next_id(&self) -> segflake::Result<u64> {
        match self {
            Issuer::Plain(g) => g.next_id(),
            Issuer::Leased(g) => g.next_id(),
        }
    }
    fn high_water_mark_ms(&self) -> u64 {
        match self {
            Issuer::Plain(g) => g.high_water_mark_ms(),
            Issuer::Leased(g) => g.high_water_mark_ms(),
        }
    }
}

struct SegflakeExclusive(Segflake);

impl SegflakeExclusive {
    fn next(&self, g: &mut Snowflake) -> u64 {
        loop {
            match g.next_id_mut() {
                Ok(id) => return id,
                Err(_) => {
                    self.0.refused.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

impl Gen for SegflakeExclusive {
    fn name(&self) -> &'static str {
        "**segflake** `Snowflake::next_id_mut` (`&mut self`), default"
    }
    fn twitter(&self, c: &Config, threads: usize) -> f64 {
        let g = self.0.plain_generator(self.0.twitter);
        let layout = self.0.twitter;
        let last = AtomicU64::new(0);
        // Timed once the 2 s borrow is spent, as for the shared generator.
        let spent = |elapsed: Duration| {
            let ts = layout
                .decode(last.load(Ordering::Relaxed))
                .map_or(0, |d| d.timestamp_ms);
            elapsed >= c.warmup
                && (ts + 1 >= now_ms() + self.0.max_drift_ms || elapsed >= Duration::from_secs(10))
        };
        exclusive(
            g,
            |g| {
                let id = self.next(g);
                last.store(id, Ordering::Relaxed);
                id
            },
            threads,
            &spent,
            c.seconds,
        )
    }
    fn unthrottled(&self, c: &Config, threads: usize) -> f64 {
        let g = self.0.plain_generator(self.0.fast);
        exclusive(g, |g| self.next(g), threads, &c.warm(), c.seconds)
    }
    fn dups(&self) -> (u64, u64) {
        let m = Mutex::new(self.0.plain_generator(self.0.twitter));
        dup_check(&|| u128::from(self.next(&mut lock(&m))))
    }
    fn throttled(&self) -> &'static str {
        "no (41/0/22 bits for ns/ID)"
    }
    fn notes(&self) -> String {
        "the same IDs and clock policy as `next_id`, without atomic instructions, for a \
         generator owned by one thread; `&mut self`: a `Mutex` on 2 threads, like the peers"
            .into()
    }
}

// ---------------------------------------------------------------------------------------
// The peers

struct Snowflaked;

impl Gen for Snowflaked {
    fn name(&self) -> &'static str {
        "`snowflaked` 1.0 `sync::Generator`"
    }
    fn twitter(&self, c: &Config, threads: usize) -> f64 {
        let g = snowflaked::sync::Generator::new(1);
        shared(|| g.generate::<u64>(), threads, &c.warm(), c.seconds)
    }
    fn unthrottled(&self, c: &Config, threads: usize) -> f64 {
        // Its layout is fixed: this is the twitter-layout generator again.
        self.twitter(c, threads)
    }
    fn dups(&self) -> (u64, u64) {
        let g = snowflaked::sync::Generator::new(1);
        dup_check(&|| u128::from(g.generate::<u64>()))
    }
    fn throttled(&self) -> &'static str {
        "**yes**: fixed 10 instance / 12 sequence bits (4,096,000/s)"
    }
    fn notes(&self) -> String {
        "lock-free CAS; epoch = Unix epoch by default; panics if the clock moves backwards".into()
    }
}

struct RsSnowflake;

impl Gen for RsSnowflake {
    fn name(&self) -> &'static str {
        "`rs-snowflake` 0.6 `real_time_generate`"
    }
    fn twitter(&self, c: &Config, threads: usize) -> f64 {
        let g = snowflake::SnowflakeIdGenerator::new(1, 1);
        exclusive(g, |g| g.real_time_generate(), threads, &c.warm(), c.seconds)
    }
    fn unthrottled(&self, c: &Config, threads: usize) -> f64 {
        self.twitter(c, threads)
    }
    fn dups(&self) -> (u64, u64) {
        let m = Mutex::new(snowflake::SnowflakeIdGenerator::new(1, 1));
        dup_check(&|| lock(&m).real_time_generate() as u64 as u128)
    }
    fn throttled(&self) -> &'static str {
        "**yes**: fixed 5+5 worker / 12 sequence bits (4,096,000/s)"
    }
    fn notes(&self) -> String {
        "`&mut self`: a `Mutex` on 2 threads; reads the clock on every call; no check for a \
         clock moving backwards"
            .into()
    }
}

struct IdGenerator;

impl IdGenerator {
    fn make(worker_bits: u8, seq_bits: u8) -> idgenerator::CoreIdGenerator {
        let mut g = idgenerator::CoreIdGenerator::default();
        g.init(
            idgenerator::IdGeneratorOptions::new()
                .worker_id(1)
                .worker_id_bit_len(worker_bits)
                .seq_bit_len(seq_bits),
        )
        .expect("idgenerator options");
        g
    }
}

impl Gen for IdGenerator {
    fn name(&self) -> &'static str {
        "`idgenerator` 2.0 (Yitter) `CoreIdGenerator`"
    }
    fn twitter(&self, c: &Config, threads: usize) -> f64 {
        // Its own wrapper, `IdInstance`, is this generator in a global `parking_lot::Mutex`.
        let g = IdGenerator::make(10, 12);
        exclusive(g, |g| g.next_id(), threads, &c.warm(), c.long_seconds)
    }
    fn unthrottled(&self, c: &Config, threads: usize) -> f64 {
        let g = IdGenerator::make(1, 21);
        exclusive(g, |g| g.next_id(), threads, &c.warm(), c.seconds)
    }
    fn dups(&self) -> (u64, u64) {
        let m = Mutex::new(IdGenerator::make(10, 12));
        dup_check(&|| lock(&m).next_id() as u64 as u128)
    }
    fn throttled(&self) -> &'static str {
        "no (1 worker / 21 sequence bits for ns/ID)"
    }
    fn notes(&self) -> String {
        "`&mut self`: a `Mutex` on 2 threads; borrows up to 2,000 future ticks (\"drift\") then \
         spins until the clock catches up; sequences 0-4 of each tick are reserved; `init` \
         sleeps 500 ms"
            .into()
    }
}

struct UlidGen;

fn next_ulid(g: &mut ulid::Generator) -> u128 {
    match g.generate() {
        Ok(u) => u.0,
        Err(overflow) => overflow.commit_overflow_increment().0,
    }
}

impl Gen for UlidGen {
    fn name(&self) -> &'static str {
        "`ulid` 3.0 monotonic `Generator`"
    }
    fn twitter(&self, c: &Config, threads: usize) -> f64 {
        exclusive(
            ulid::Generator::new(),
            next_ulid,
            threads,
            &c.warm(),
            c.seconds,
        )
    }
    fn unthrottled(&self, c: &Config, threads: usize) -> f64 {
        self.twitter(c, threads)
    }
    fn dups(&self) -> (u64, u64) {
        let m = Mutex::new(ulid::Generator::new());
        dup_check(&|| next_ulid(&mut lock(&m)))
    }
    fn throttled(&self) -> &'static str {
        "no (128 bits: 48 time + 80 random)"
    }
    fn snowflake(&self) -> bool {
        false
    }
    fn notes(&self) -> String {
        "128-bit, not a 64-bit ID (no layout: the \"twitter layout\" columns are its plain \
         rate); `&mut self`: a `Mutex` on 2 threads"
            .into()
    }
}

struct UuidV7;

impl Gen for UuidV7 {
    fn name(&self) -> &'static str {
        "`uuid` 1.29 `Uuid::now_v7`"
    }
    fn twitter(&self, c: &Config, threads: usize) -> f64 {
        shared(
            || uuid::Uuid::now_v7().as_u128(),
            threads,
            &c.warm(),
            c.seconds,
        )
    }
    fn unthrottled(&self, c: &Config, threads: usize) -> f64 {
        self.twitter(c, threads)
    }
    fn dups(&self) -> (u64, u64) {
        dup_check(&|| uuid::Uuid::now_v7().as_u128())
    }
    fn throttled(&self) -> &'static str {
        "no (128 bits: 48 time + 74 counter/random)"
    }
    fn snowflake(&self) -> bool {
        false
    }
    fn notes(&self) -> String {
        "128-bit, not a 64-bit ID (the \"twitter layout\" columns are its plain rate); one \
         process-wide context behind a `Mutex`; built with `fast-rng`"
            .into()
    }
}

// ---------------------------------------------------------------------------------------
// Segment IDs (the second table)

/// A source of segment IDs under test. Every measurement builds a fresh one.
trait SegSource {
    fn name(&self) -> &'static str;
    /// IDs/s, `threads` threads sharing one source.
    fn rate(&self, c: &Config, threads: usize) -> f64;
    /// (duplicates, per-thread order errors) among `DUP_CHECK_IDS` IDs from 2 threads.
    fn dups(&self) -> (u64, u64);
    fn notes(&self) -> String;
}

struct SegAtomicFloor;

impl SegSource for SegAtomicFloor {
    fn name(&self) -> &'static str {
        "`AtomicU64::fetch_add` (floor)"
    }
    fn rate(&self, c: &Config, threads: usize) -> f64 {
        AtomicFloor.twitter(c, threads)
    }
    fn dups(&self) -> (u64, u64) {
        AtomicFloor.dups()
    }
    fn notes(&self) -> String {
        "not an ID generator: the one atomic read-modify-write any shared counter needs".into()
    }
}

struct SegMutexFloor;

fn mutex_next(m: &Mutex<u64>) -> u64 {
    let mut next = lock(m);
    *next += 1;
    *next
}

impl SegSource for SegMutexFloor {
    fn name(&self) -> &'static str {
        "`Mutex<u64>` counter (floor)"
    }
    fn rate(&self, c: &Config, threads: usize) -> f64 {
        let m = Mutex::new(0u64);
        shared(|| mutex_next(&m), threads, &c.warm(), c.seconds)
    }
    fn dups(&self) -> (u64, u64) {
        let m = Mutex::new(0u64);
        dup_check(&|| u128::from(mutex_next(&m)))
    }
    fn notes(&self) -> String {
        "not an ID generator: a `std::sync::Mutex` around a counter, what a hand-written \
         segment cache (lock, take the next ID, refill from the store when the range is used) \
         costs between two store calls"
            .into()
    }
}

/// segflake's std driver over the in-memory store, through a `TagHandle` or by tag name.
struct SegflakeSegment {
    by_name: bool,
}

impl SegflakeSegment {
    const TAG: &'static str = "bench";

    fn generator() -> SegmentGenerator {
        let options = SegmentOptions::default()
            .with_step(1_000_000)
            .with_max_step(1_000_000);
        SegmentGenerator::new(MemoryStore::new(), options).expect("segment generator")
    }

    /// Takes IDs from a fresh generator through `f`, given its first segment already.
    fn with<T>(&self, f: impl FnOnce(&(dyn Fn() -> u64 + Sync)) -> T) -> T {
        let generator = SegflakeSegment::generator();
        let handle = generator.tag(Self::TAG).expect("tag");
        handle.next_id().expect("first segment");
        if self.by_name {
            f(&|| generator.next_id(Self::TAG).expect("segment ID"))
        } else {
            f(&|| handle.next_id().expect("segment ID"))
        }
    }
}

impl SegSource for SegflakeSegment {
    fn name(&self) -> &'static str {
        if self.by_name {
            "**segflake** `SegmentGenerator::next_id(\"tag\")` (by name)"
        } else {
            "**segflake** `SegmentGenerator` `TagHandle::next_id`"
        }
    }
    fn rate(&self, c: &Config, threads: usize) -> f64 {
        self.with(|next| shared(next, threads, &c.warm(), c.seconds))
    }
    fn dups(&self) -> (u64, u64) {
        self.with(|next| dup_check(&|| u128::from(next())))
    }
    fn notes(&self) -> String {
        let how = if self.by_name {
            "looks the tag up on every call (a read lock and a hash), then takes as the handle does"
        } else {
            "a handle held by the caller: one atomic take from the current range, no lookup"
        };
        format!(
            "{how}; std driver over `MemoryStore` (a `Mutex<HashMap>`), step 1,000,000: the \
             next range is fetched on the generator's own thread before the current one is used"
        )
    }
}
