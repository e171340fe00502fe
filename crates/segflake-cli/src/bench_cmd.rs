//! `segflake bench`: how fast this machine issues IDs.

use crate::cli::BenchArgs;
use crate::error::CliError;
use crate::layout_cmd::group_thousands;
use crate::output::{JsonObject, Out};
use segflake::{Layout, Preset, Snowflake, SnowflakeOptions};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

pub const HELP: &str = "\
segflake bench: measure ID generation on this machine

Usage:
  segflake bench [--seconds S] [--threads N] [--json]
  segflake bench --store URL [--tags N,N,...] [--seconds S] [--rate IDS_PER_S] [--json]

Runs one generator shared by 1..N threads for S seconds per row and prints IDs per
second and nanoseconds per ID (wall time / IDs, all threads together):
  * atomic fetch_add: a bare AtomicU64::fetch_add loop, the floor for any shared counter;
  * segflake twitter: the twitter layout (41/10/12 bits, 1 ms tick), whose ceiling is
    4,096,000 IDs/s per worker, with the default options. The default 2000 ms drift lets a
    burst of up to 8.2 million IDs run ahead of the clock first; timing starts once that
    borrow is spent, so the sustained rate is shown;
  * segflake 41/0/22: 22 sequence bits, a ceiling of 4.19e9 IDs/s that is never reached,
    so the generator's own cost is measured, not the layout's limit.

A call refused with an error is retried and not counted as an ID; the table says how
many were (--json: refused_calls).

With --store, measures a segment store instead (the stores of `segflake segment`):
  * allocations: for each count N of --tags, allocations of step 1,000 on tags picked at
    random among bench-0000000 .. bench-{N-1} (those the store lacks are created first),
    for up to S seconds or 10,000 allocations: allocations per second, p50, p99, max;
  * next_id: one tag at a steady --rate for 5 x S seconds (at least 5), with the library's
    default segment options: the latency of every call, store allocations, final step.
    Run it against a slow store to see that callers do not wait on it.

Options:
  --seconds S      seconds per row, 0.05..=60 (default 0.5; with --store 2)
  --threads N      the most threads to run, 1..=256 (default: the number of CPUs)
  --store URL      the segment store to measure: file:PATH, postgres://, mysql://, redis://
  --tags N,N,...   with --store: tag counts, each 1..=1000000 (default 1,1000,10000,100000)
  --rate IDS_PER_S with --store: next_id calls per second, 1000..=10000000 (default
                   100000); 0 skips the next_id row
  --json           one JSON object per row
  --help         this help
";

/// One measured row.
struct Row {
    generator: &'static str,
    layout: &'static str,
    threads: usize,
    ids: u64,
    seconds: f64,
    ceiling: Option<u64>,
    /// Calls that returned an error and were retried (not counted as IDs).
    refused: u64,
}

pub fn run(args: BenchArgs) -> Result<(), CliError> {
    if let Some(url) = &args.store {
        return crate::bench_store::run(url, &args);
    }
    if args.tags.is_some() || args.rate.is_some() {
        return Err(CliError::usage_for(
            "bench",
            "--tags and --rate measure a store: give --store URL too",
        ));
    }
    let json = args.json;
    let seconds = args.seconds.unwrap_or(0.5);
    if !(0.05..=60.0).contains(&seconds) {
        return Err(CliError::usage_for(
            "bench",
            format!("--seconds {seconds} is out of range; allowed 0.05..=60"),
        ));
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let max_threads = args.threads.unwrap_or(cpus);
    CliError::check_range("bench", "--threads", max_threads as u64, (1, 256), "")?;
    let dur = Duration::from_secs_f64(seconds);

    let twitter = Preset::Twitter.spec().build()?;
    let unthrottled = Preset::Twitter
        .spec()
        .with_worker_bits(0)
        .with_sequence_bits(22)
        .build()?;

    let mut out = Out::new();
    if !json {
        out.line(&format!(
            "segflake bench: {seconds} s per row, {cpus} CPUs; ns/ID = wall time / IDs"
        ))?;
        out.line(&format!(
            "{:<20} {:<22} {:>7} {:>15} {:>9} {:>10}",
            "generator", "layout", "threads", "IDs/s", "ns/ID", "% ceiling"
        ))?;
        out.flush()?;
    }
    let emit = |out: &mut Out, row: Row| -> Result<(), CliError> {
        let rate = row.ids as f64 / row.seconds;
        let ns = if row.ids == 0 { f64::NAN } else { 1e9 / rate };
        let pct = row.ceiling.map(|c| 100.0 * rate / (c as f64));
        if json {
            let obj = JsonObject::new()
                .str("generator", row.generator)
                .str("layout", row.layout)
                .u64("threads", row.threads as u64)
                .u64("ids", row.ids)
                .f64("seconds", row.seconds)
                .f64("ids_per_second", rate.round())
                .f64("ns_per_id", (ns * 100.0).round() / 100.0);
            let obj = match (row.ceiling, pct) {
                (Some(c), Some(p)) => obj
                    .u64("ceiling_per_second", c)
                    .f64("percent_of_ceiling", (p * 100.0).round() / 100.0),
                _ => obj.null("ceiling_per_second").null("percent_of_ceiling"),
            };
            out.json(obj.u64("refused_calls", row.refused))?;
        } else {
            out.line(&format!(
                "{:<20} {:<22} {:>7} {:>15} {:>9.2} {:>10}",
                row.generator,
                row.layout,
                row.threads,
                group_thousands(rate.round() as u64),
                ns,
                pct.map_or("-".to_string(), |p| format!("{p:.2}%"))
            ))?;
            if row.refused > 0 {
                out.line(&format!(
                    "  ({} {} refused with an error and retried, not counted as IDs)",
                    group_thousands(row.refused),
                    if row.refused == 1 { "call" } else { "calls" }
                ))?;
            }
        }
        out.flush()
    };

    for threads in 1..=max_threads {
        let counter = AtomicU64::new(0);
        let (ids, secs) = measure(
            &|| counter.fetch_add(1, Ordering::Relaxed),
            threads,
            &|| true,
            dur,
        );
        emit(
            &mut out,
            Row {
                generator: "atomic fetch_add",
                layout: "-",
                threads,
                ids,
                seconds: secs,
                ceiling: None,
                refused: 0,
            },
        )?;
    }
    for threads in 1..=max_threads {
        let row = snowflake_row(
            twitter,
            2000,
            threads,
            dur,
            "segflake twitter",
            "41/10/12, drift 2000",
        )?;
        emit(&mut out, row)?;
    }
    for threads in 1..=max_threads {
        let row = snowflake_row(
            unthrottled,
            2000,
            threads,
            dur,
            "segflake 41/0/22",
            "41/0/22, drift 2000",
        )?;
        emit(&mut out, row)?;
    }
    out.flush()
}

fn snowflake_row(
    layout: Layout,
    max_drift_ms: u64,
    threads: usize,
    dur: Duration,
    generator: &'static str,
    label: &'static str,
) -> Result<Row, CliError> {
    let options = SnowflakeOptions::new(0).with_max_drift_ms(max_drift_ms);
    let g = Snowflake::new(layout, options)?;
    // Calls refused with an error. They are retried, so the rates count IDs only; an error
    // that persists (a real clock step back beyond the drift bound) ends the row.
    let refused = AtomicU64::new(0);
    let failure: std::sync::Mutex<Option<segflake::Error>> = std::sync::Mutex::new(None);
    // With a tick ceiling in reach, the generator first borrows up to max_drift_ms of
    // future ticks; time only once that borrow is spent, so the rate is the sustained one.
    let ceiling_in_reach = layout.max_ids_per_second() < 100_000_000;
    let warmed_up = || {
        !ceiling_in_reach
            || g.high_water_mark_ms()
                >= segflake::Clock::now_ms(g.clock())
                    + max_drift_ms.saturating_sub(layout.tick_ms())
    };
    let next = || {
        let mut attempts = 0;
        loop {
            match g.next_id() {
                Ok(id) => return id,
                Err(e) => {
                    refused.fetch_add(1, Ordering::Relaxed);
                    attempts += 1;
                    if attempts == 1000 {
                        if let Ok(mut f) = failure.lock() {
                            f.get_or_insert(e);
                        }
                        return 0;
                    }
                }
            }
        }
    };
    let (ids, seconds) = measure(&next, threads, &warmed_up, dur);
    if let Some(e) = failure.into_inner().ok().flatten() {
        return Err(CliError::runtime(format!(
            "{generator} on {threads} threads: the generator kept refusing to issue IDs: {e}"
        )));
    }
    Ok(Row {
        generator,
        layout: label,
        threads,
        ids,
        seconds,
        ceiling: Some(layout.max_ids_per_second()),
        refused: refused.load(Ordering::Relaxed),
    })
}

/// Calls `f` from `threads` threads: untimed until `warmed_up()` holds (checked every
/// millisecond, for at most 20 × `dur` within 0.5..=10 s), then timed for `dur`. Returns the number of timed
/// calls and the elapsed seconds.
fn measure<F: Fn() -> u64 + Sync>(
    f: &F,
    threads: usize,
    warmed_up: &dyn Fn() -> bool,
    dur: Duration,
) -> (u64, f64) {
    const BATCH: u64 = 256;
    let timing = AtomicBool::new(false);
    let stop = AtomicBool::new(false);
    let start_line = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    start_line.wait();
                    while !timing.load(Ordering::Relaxed) {
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
        let warm_limit = (dur * 20).clamp(Duration::from_millis(500), Duration::from_secs(10));
        while !warmed_up() && warm_start.elapsed() < warm_limit {
            std::thread::sleep(Duration::from_millis(1));
        }
        timing.store(true, Ordering::Relaxed);
        let start = Instant::now();
        std::thread::sleep(dur);
        stop.store(true, Ordering::Relaxed);
        let total: u64 = handles.into_iter().map(|h| h.join().unwrap_or(0)).sum();
        (total, start.elapsed().as_secs_f64())
    })
}
