//! A seeded, deterministic simulation of every lease and segment protocol: the real
//! engines, driven as their drivers drive them, against registry and store models, with
//! faults drawn from the seed. See docs/reliability.md ("The simulator").
//!
//! * `cargo test -p segflake --test simulation` runs the CI seeds: a fixed list, plus
//!   seeds derived from `SEGFLAKE_SIM_COMMIT` when set (the test scripts set the commit).
//! * `SEGFLAKE_SIM_SEED=<seed>` replays exactly one seed; `SEGFLAKE_SIM_SEEDS=<n>` runs n
//!   seeds from a random start; `SEGFLAKE_SIM_SECONDS=<s>` runs seeds for that long.
//! * A violation prints `SEGFLAKE_SIM_SEED=<seed>`, the invariant broken, what shows it,
//!   the options and faults drawn, and the last 200 events; a replay prints the same.

mod etcd;
mod lease;
mod registry;
mod segment;
#[path = "../common/vector_json.rs"]
mod vector_json;
mod vectors;
mod world;
mod zookeeper;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use world::{splitmix64, Outcome};

/// A world a seed runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Lease(lease::Regime),
    Segment(segment::Regime),
}

impl Which {
    fn name(self) -> String {
        match self {
            Which::Lease(r) => format!("lease/{r:?}"),
            Which::Segment(r) => format!("segment/{r:?}"),
        }
    }

    fn run(self, seed: u64, keep_trace: bool) -> Outcome {
        match self {
            Which::Lease(r) => lease::run(seed, r, None, keep_trace),
            Which::Segment(r) => segment::run(seed, r, keep_trace),
        }
    }
}

/// The worlds whose faults the protocols must survive: every seed runs in each.
const GUARANTEED: [Which; 2] = [
    Which::Lease(lease::Regime::Guaranteed),
    Which::Segment(segment::Regime::Guaranteed),
];

/// Every world, guaranteed or beyond the guarantee, by name.
const WORLDS: [Which; 8] = [
    Which::Lease(lease::Regime::Guaranteed),
    Which::Segment(segment::Regime::Guaranteed),
    Which::Lease(lease::Regime::Rollback),
    Which::Lease(lease::Regime::AsyncStandby),
    Which::Lease(lease::Regime::LossWithSkew),
    Which::Segment(segment::Regime::StoreRollback),
    Which::Segment(segment::Regime::CompareGiveBack),
    Which::Segment(segment::Regime::UnwaitedReplica),
];

/// The worlds a run explores: the guaranteed ones, or the one `SEGFLAKE_SIM_WORLD` names
/// (`lease/Guaranteed`, `segment/CompareGiveBack`, ...).
fn worlds() -> Vec<Which> {
    match std::env::var("SEGFLAKE_SIM_WORLD") {
        Err(_) => GUARANTEED.to_vec(),
        Ok(name) => {
            let found = WORLDS.iter().find(|w| w.name() == name);
            let names: Vec<String> = WORLDS.iter().map(|w| w.name()).collect();
            vec![*found.unwrap_or_else(|| {
                panic!(
                    "SEGFLAKE_SIM_WORLD={name:?}: the worlds are {}",
                    names.join(", ")
                )
            })]
        }
    }
}

/// The CI seeds: fixed, so a failure found once stays a regression case.
const FIXED_SEEDS: u64 = 400;

/// Seeds that once broke an invariant, with what they found; each runs in every
/// guaranteed world on every CI run.
const REGRESSIONS: &[(u64, &str)] = &[
    (
        4587189493690083362,
        "claim_wait_ms below one sweep's length: start-up gave up at the first held worker \
         ID, and processes sharing a label restarted for ever (lease engine, SWEEP_MIN_IDS)",
    ),
    (
        951247427460174777,
        "a claim without a mark waited exactly its lead on the monotonic clock while a \
         slower wall clock closed it: with clock_wait_ms = 0 it gave up a millisecond short \
         at every restart (lease engine, unmarked_wait's rate margin)",
    ),
    (
        181,
        "ZooKeeper's peers aged the forever nodes of stopped processes against each other, \
         not the server's time: a cold start after a long outage refused every host \
         (ClockSkew) at every restart (lease/zookeeper.rs peers)",
    ),
    (
        1601053134651434270,
        "the Redis model's replica link cut held back writes made before the cut, and \
         promoted a replica without marks WAIT had acknowledged (a model error)",
    ),
    (
        6983130148885043148,
        "the Redis model's replica link cut delayed writes WAIT had already acknowledged \
         (a model error, found through a build without the lease-expiry shut)",
    ),
    (
        5053448377507191940,
        "several stores and a step below their number: a process whose ranges from one \
         store others kept at the wrong residues fetched for ever without issuing (segment \
         engine, begin_fetch asks at least one ID per store)",
    ),
    (
        335485204726855215,
        "two hosts further apart than max_peer_skew_ms, the only ones whose worker IDs fit: \
         the first to hold kept the other out (ClockSkew), as designed; the healed-phase \
         check expected both, judging skew against every host's median (an oracle error)",
    ),
];

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a non-negative integer")),
    )
}

/// Runs `seed` in `which`; on a violation, replays it with the trace kept and returns the
/// report (checking that the replay breaks the same invariant the same way).
fn check(which: Which, seed: u64) -> Result<Outcome, String> {
    let first = which.run(seed, false);
    if first.violation.is_none() {
        return Ok(first);
    }
    let replay = which.run(seed, true);
    let mut report = replay.report(&which.name(), seed);
    if replay.violation != first.violation || replay.trace_hash != first.trace_hash {
        report.push_str(
            "THE REPLAY DIFFERS FROM THE FIRST RUN: the simulation is not deterministic\n",
        );
    }
    Err(report)
}

/// Fault coverage and speed over many runs.
#[derive(Default)]
struct Tally {
    runs: u64,
    events: u64,
    ids: u64,
    faults: BTreeMap<String, u64>,
}

impl Tally {
    fn add(&mut self, which: Which, o: &Outcome) {
        self.runs += 1;
        self.events += o.events;
        self.ids += o.ids;
        for (class, n) in &o.faults {
            let key = format!(
                "{} {class}",
                if matches!(which, Which::Lease(_)) {
                    "lease"
                } else {
                    "segment"
                }
            );
            *self.faults.entry(key).or_insert(0) += n;
        }
    }

    /// `worlds`: how many worlds each seed ran in.
    fn print(&self, elapsed: Duration, worlds: usize) {
        let s = elapsed.as_secs_f64().max(1e-9);
        let seeds = self.runs / worlds.max(1) as u64;
        println!(
            "simulation: {seeds} seeds, {} runs, {} events, {} IDs in {:.1} s: {:.0} seeds/s, \
             {:.0} runs/s, {:.0} events/s",
            self.runs,
            self.events,
            self.ids,
            s,
            seeds as f64 / s,
            self.runs as f64 / s,
            self.events as f64 / s
        );
        println!("fault classes drawn (occurrences):");
        for (class, n) in &self.faults {
            println!("  {n:>8}  {class}");
        }
    }
}

/// Runs `seeds` in every guaranteed world on all cores; stops at the first violation
/// (or when `deadline` passes) and returns its report.
fn explore(
    seeds: impl Iterator<Item = u64> + Send,
    deadline: Option<Instant>,
) -> (Tally, Option<String>) {
    let seeds = Mutex::new(seeds);
    let tally = Mutex::new(Tally::default());
    let failure = Mutex::new(None);
    let stop = AtomicBool::new(false);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let worlds = worlds();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
                    return;
                }
                let Some(seed) = seeds.lock().unwrap().next() else {
                    return;
                };
                for &which in &worlds {
                    match check(which, seed) {
                        Ok(o) => tally.lock().unwrap().add(which, &o),
                        Err(report) => {
                            stop.store(true, Ordering::Relaxed);
                            failure.lock().unwrap().get_or_insert(report);
                            return;
                        }
                    }
                }
            });
        }
    });
    (tally.into_inner().unwrap(), failure.into_inner().unwrap())
}

fn random_start() -> u64 {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut x = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ u64::from(std::process::id()) << 32
        ^ COUNT.fetch_add(1, Ordering::Relaxed);
    splitmix64(&mut x) >> 1
}

/// The seeds of this run: one replayed, n or a time budget from a random start, or the
/// CI seeds.
#[test]
fn seeds_keep_every_invariant() {
    let started = Instant::now();
    let (tally, failure) = if let Some(seed) = env_u64("SEGFLAKE_SIM_SEED") {
        explore(std::iter::once(seed), None)
    } else if let Some(n) = env_u64("SEGFLAKE_SIM_SEEDS") {
        let start = random_start();
        println!("simulation: {n} seeds from {start}");
        explore(start..start + n, None)
    } else if let Some(secs) = env_u64("SEGFLAKE_SIM_SECONDS") {
        let start = random_start();
        println!("simulation: seeds from {start} for {secs} s");
        explore(start.., Some(started + Duration::from_secs(secs)))
    } else {
        let mut seeds: Vec<u64> = REGRESSIONS.iter().map(|(seed, _)| *seed).collect();
        seeds.extend(1..=FIXED_SEEDS);
        if let Ok(commit) = std::env::var("SEGFLAKE_SIM_COMMIT") {
            let mut x = commit
                .bytes()
                .fold(0u64, |h, b| h.rotate_left(5) ^ u64::from(b));
            seeds.extend((0..FIXED_SEEDS / 4).map(|_| splitmix64(&mut x) >> 1));
        }
        explore(seeds.into_iter(), None)
    };
    tally.print(started.elapsed(), worlds().len());
    if let Some(report) = failure {
        panic!("a seed broke an invariant:\n{report}");
    }
}

/// The same seed gives the same run: events, IDs and trace hash.
#[test]
fn a_seed_replays_exactly() {
    for which in GUARANTEED {
        for seed in [3u64, 17, 99] {
            let a = which.run(seed, false);
            let b = which.run(seed, true);
            assert_eq!(
                (a.trace_hash, a.events, a.ids, &a.drawn),
                (b.trace_hash, b.events, b.ids, &b.drawn),
                "{} seed {seed} ran differently twice",
                which.name()
            );
            assert!(
                a.events > 100,
                "{} seed {seed} ran only {} events",
                which.name(),
                a.events
            );
        }
    }
}

/// Runs seeds from 1 in `which` until one breaks an invariant; returns it and its report.
fn first_violation(which: Which, limit: u64) -> Option<(u64, Outcome)> {
    (1..=limit).find_map(|seed| {
        let o = which.run(seed, false);
        o.violation.is_some().then_some((seed, o))
    })
}

/// Where the guarantee ends, the simulator shows it: each class outside the protocols'
/// reach breaks an invariant within a few seeds (docs/reliability.md lists them).
#[test]
fn faults_beyond_the_guarantee_are_shown() {
    let boundaries = [
        Which::Lease(lease::Regime::Rollback),
        Which::Lease(lease::Regime::AsyncStandby),
        Which::Lease(lease::Regime::LossWithSkew),
        Which::Segment(segment::Regime::StoreRollback),
        Which::Segment(segment::Regime::CompareGiveBack),
        Which::Segment(segment::Regime::UnwaitedReplica),
    ];
    for which in boundaries {
        match first_violation(which, 3000) {
            Some((seed, o)) => println!(
                "{}: seed {seed} breaks \"{}\"",
                which.name(),
                o.violation.as_ref().map_or("", |v| v.invariant)
            ),
            None => panic!("{}: no seed up to 3000 breaks an invariant", which.name()),
        }
    }
}
