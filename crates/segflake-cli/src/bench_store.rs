//! `segflake bench --store URL`: what a segment store costs as its tags grow, and what
//! callers of `next_id` see while it answers.
//!
//! The tags measured are `bench-0000000` … `bench-{N-1}`: the ones the store lacks are
//! created first (with step 1,000), so a table seeded in bulk is used as it is.

use crate::backends::{self as stores, StoreSettings, TagStore};
use crate::cli::BenchArgs;
use crate::error::CliError;
use crate::layout_cmd::group_thousands;
use crate::output::{JsonObject, Out};
use segflake::{SegmentGenerator, SegmentOptions};
use std::collections::HashSet;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The step of a created tag and of every measured allocation.
const STEP: u64 = 1000;
/// The most allocations one cell makes.
const MAX_ALLOCATIONS: usize = 10_000;
const MAX_TAGS: usize = 1_000_000;

pub fn tag(i: usize) -> String {
    format!("bench-{i:07}")
}

/// `--tags 1,1000,10000`: each count `1..=1,000,000`.
fn parse_tags(text: &str) -> Result<Vec<usize>, CliError> {
    text.split(',')
        .map(|t| match t.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_TAGS).contains(&n) => Ok(n),
            _ => Err(CliError::usage_for(
                "bench",
                format!("--tags {text:?}: {t:?} is not a tag count; allowed 1..=1000000, comma-separated"),
            )),
        })
        .collect()
}

/// The `p` quantile (0..=1) of sorted `v`.
fn quantile<T: Copy>(v: &[T], p: f64) -> T {
    v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e5).round() / 100.0
}

/// Creates the first `n` bench tags the store lacks; returns how many it created.
fn seed(store: &dyn TagStore, n: usize, have: &mut HashSet<String>) -> Result<usize, CliError> {
    let mut created = 0;
    for i in 0..n {
        let t = tag(i);
        if have.contains(&t) {
            continue;
        }
        store.allocate_with(&t, Some(STEP)).map_err(|e| {
            CliError::runtime(format!("creating tag {t} in {}: {e}", store.describe()))
        })?;
        have.insert(t);
        created += 1;
        if created % 10_000 == 0 {
            eprintln!("created {created} tags");
        }
    }
    Ok(created)
}

pub fn run(url: &str, args: &BenchArgs) -> Result<(), CliError> {
    let seconds = args.seconds.unwrap_or(2.0);
    if !(0.05..=60.0).contains(&seconds) {
        return Err(CliError::usage_for(
            "bench",
            format!("--seconds {seconds} is out of range; allowed 0.05..=60"),
        ));
    }
    let counts = parse_tags(args.tags.as_deref().unwrap_or("1,1000,10000,100000"))?;
    let rate = args.rate.unwrap_or(100_000);
    if rate != 0 && !(1_000..=10_000_000).contains(&rate) {
        return Err(CliError::usage_for(
            "bench",
            format!("--rate {rate} is out of range; allowed 1000..=10000000 IDs/s, or 0"),
        ));
    }
    let settings = StoreSettings {
        create_missing_step: Some(STEP),
        ..StoreSettings::default()
    };
    let store = stores::open_store(url, 1, 10_000, settings, "bench")?;
    // The store's rows, listed once (one query; on Redis a SCAN and an MGET per 1,000 keys).
    let mut have: HashSet<String> = store
        .records()
        .map_err(|e| CliError::runtime(format!("listing {}: {e}", store.describe())))?
        .into_iter()
        .map(|r| r.tag)
        .collect();
    let json = args.json;
    let mut out = Out::new();
    if !json {
        out.line(&format!(
            "segflake bench --store {}: allocations (step {STEP}) on tags picked at random, \
             up to {seconds} s or {MAX_ALLOCATIONS} per row",
            store.describe()
        ))?;
        out.line(&format!(
            "{:>9} {:>14} {:>9} {:>9} {:>9}",
            "tags", "allocations/s", "p50 ms", "p99 ms", "max ms"
        ))?;
        out.flush()?;
    }
    for &n in &counts {
        let created = seed(&*store, n, &mut have)?;
        if created > 0 {
            eprintln!("created {created} tags in {}", store.describe());
        }
        let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ n as u64;
        let mut latencies = Vec::with_capacity(MAX_ALLOCATIONS);
        let fail = |t: &str, e: segflake::StoreFailure| {
            CliError::runtime(format!("allocating {t} in {}: {e}", store.describe()))
        };
        store
            .allocate_with(&tag(0), Some(STEP))
            .map_err(|e| fail(&tag(0), e))?;
        let start = Instant::now();
        while latencies.len() < MAX_ALLOCATIONS && start.elapsed().as_secs_f64() < seconds {
            // xorshift64*: the same tags for every store.
            rng ^= rng >> 12;
            rng ^= rng << 25;
            rng ^= rng >> 27;
            let t = tag((rng.wrapping_mul(0x2545_F491_4F6C_DD1D) % n as u64) as usize);
            let t0 = Instant::now();
            store
                .allocate_with(&t, Some(STEP))
                .map_err(|e| fail(&t, e))?;
            latencies.push(t0.elapsed());
        }
        let elapsed = start.elapsed().as_secs_f64();
        latencies.sort_unstable();
        let per_second = latencies.len() as f64 / elapsed;
        let (p50, p99, max) = (
            ms(quantile(&latencies, 0.5)),
            ms(quantile(&latencies, 0.99)),
            ms(*latencies.last().expect("one allocation at least")),
        );
        if json {
            out.json(
                JsonObject::new()
                    .str("row", "allocate")
                    .u64("tags", n as u64)
                    .u64("allocations", latencies.len() as u64)
                    .f64("seconds", elapsed)
                    .f64("allocations_per_second", per_second.round())
                    .f64("p50_ms", p50)
                    .f64("p99_ms", p99)
                    .f64("max_ms", max),
            )?;
        } else {
            out.line(&format!(
                "{:>9} {:>14} {p50:>9.2} {p99:>9.2} {max:>9.2}",
                group_thousands(n as u64),
                group_thousands(per_second.round() as u64),
            ))?;
        }
        out.flush()?;
    }
    if rate == 0 {
        return Ok(());
    }
    next_latency(store, rate, seconds, json, &mut out)
}

/// `next_id` on one tag of the store at a steady `rate` for 5 × `seconds` (at least 5 s),
/// with the library's default segment options (dynamic step from the row's 1,000,
/// prefetch at 10% used): the latency of every call.
fn next_latency(
    store: Arc<dyn TagStore>,
    rate: u64,
    seconds: f64,
    json: bool,
    out: &mut Out,
) -> Result<(), CliError> {
    let generator = SegmentGenerator::new(store, SegmentOptions::default())?;
    let handle = generator.tag(&tag(0))?;
    let run_for = Duration::from_secs_f64((seconds * 5.0).max(5.0));
    let per_ms = (rate / 1000) as usize;
    let mut latencies: Vec<u32> = Vec::with_capacity(per_ms * run_for.as_millis() as usize);
    let mut failures = 0u64;
    let start = Instant::now();
    let mut tick = start;
    // The calls of the first second, while the dynamic step grows to what the rate needs.
    let mut first_second = None;
    while start.elapsed() < run_for {
        if first_second.is_none() && start.elapsed() >= Duration::from_secs(1) {
            first_second = Some(latencies.len());
        }
        for _ in 0..per_ms {
            let t0 = Instant::now();
            if black_box(handle.next_id()).is_err() {
                failures += 1;
            }
            latencies.push(t0.elapsed().as_nanos().min(u32::MAX as u128) as u32);
        }
        tick += Duration::from_millis(1);
        if let Some(rest) = tick.checked_duration_since(Instant::now()) {
            std::thread::sleep(rest);
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let stats = handle.stats();
    drop(handle);
    generator.close();
    let slow = |v: &[u32]| v.iter().filter(|&&n| n > 1_000_000).count() as u64;
    let over_1ms = slow(&latencies);
    let over_1ms_later = slow(&latencies[first_second.unwrap_or(latencies.len())..]);
    latencies.sort_unstable();
    let q = |p: f64| quantile(&latencies, p) as f64 / 1000.0;
    let (p50, p99, p999, max) = (q(0.5), q(0.99), q(0.999), q(1.0));
    let achieved = latencies.len() as f64 / elapsed;
    if json {
        out.json(
            JsonObject::new()
                .str("row", "next")
                .u64("calls", latencies.len() as u64)
                .f64("seconds", elapsed)
                .f64("ids_per_second", achieved.round())
                .u64("store_allocations", stats.fetches)
                .u64("final_step", stats.step)
                .u64("failed_calls", failures)
                .u64("calls_over_1ms", over_1ms)
                .u64("calls_over_1ms_after_first_second", over_1ms_later)
                .f64("p50_us", p50)
                .f64("p99_us", p99)
                .f64("p999_us", p999)
                .f64("max_us", max),
        )?;
    } else {
        out.line(&format!(
            "next_id at {} IDs/s for {elapsed:.1} s: {} calls, {} store allocations (step grew \
             to {}), {failures} failed, {over_1ms} over 1 ms ({over_1ms_later} after the first \
             second)",
            group_thousands(achieved.round() as u64),
            group_thousands(latencies.len() as u64),
            stats.fetches,
            group_thousands(stats.step),
        ))?;
        out.line(&format!(
            "  p50 {p50:.2} µs, p99 {p99:.2} µs, p99.9 {p999:.2} µs, max {max:.1} µs"
        ))?;
    }
    out.flush()
}
