//! Worker-ID leases: the engine's protocol against an in-memory registry on simulated
//! time (holders paused past their lease, successors, clocks behind the mark, skewed
//! peers, bad answers), and the std driver with threads.

use std::collections::HashSet;
use std::sync::Arc;

use segflake::lease::schema;
use segflake::{
    Dialect, Error, ErrorKind, LeaseEngine, LeaseOptions, LeasedSnowflake, ManualClock,
    MemoryRegistry, Preset, Registry, RegistryCall, Snowflake, SnowflakeOptions, Step, Value,
};

const T0: u64 = 1_790_000_000_000;

/// Twitter's layout with 3 worker bits: 8 worker IDs.
fn layout() -> segflake::Layout {
    Preset::Twitter
        .spec()
        .with_worker_bits(3)
        .build_at(T0)
        .unwrap()
}

/// A registry whose worker IDs were all used and released a minute before `T0`: claims
/// find a mark and start at once.
fn marked() -> MemoryRegistry {
    let registry = MemoryRegistry::new();
    for w in 0..8 {
        registry.set_mark(w, T0 - 60_000);
    }
    registry
}

/// The owner token of a simulated engine labelled `label` (nonce 0).
fn token(label: &str) -> String {
    segflake::lease::owner_token(label, 0)
}

fn lease(ttl_ms: u64) -> LeaseOptions {
    LeaseOptions::default().with_lease_ttl_ms(ttl_ms)
}

/// One process: its engine, its wall clock and (once started) its generator. Monotonic
/// time and the registry's time are the simulation's `t`.
struct Proc {
    engine: LeaseEngine,
    clock: Arc<ManualClock>,
    generator: Option<Snowflake<Arc<ManualClock>>>,
    failed: Option<Error>,
}

impl Proc {
    fn new(owner: &str, options: LeaseOptions, wall_ms: u64) -> Proc {
        Proc::with_nonce(owner, 0, options, wall_ms)
    }

    fn with_nonce(label: &str, nonce: u64, options: LeaseOptions, wall_ms: u64) -> Proc {
        let engine = LeaseEngine::new(layout(), options, 2000, 0, label.into(), nonce, 0).unwrap();
        Proc {
            engine,
            clock: Arc::new(ManualClock::new(wall_ms)),
            generator: None,
            failed: None,
        }
    }

    /// Polls at simulated time `t`, answering every call from `registry` at once, until
    /// the engine sleeps or ends; returns the last step.
    fn run(&mut self, registry: &MemoryRegistry, t: u64) -> Step {
        self.run_with(t, |call| registry.call_at(call, t))
    }

    fn run_with(
        &mut self,
        t: u64,
        mut answer: impl FnMut(&RegistryCall) -> Result<Value, String>,
    ) -> Step {
        for _ in 0..10_000 {
            let now = segflake::Clock::now_ms(&self.clock);
            match self.engine.poll(t, now) {
                Step::Call { id, call } => {
                    let a = answer(&call);
                    self.engine.answer(id, t, now, a);
                }
                Step::Ready {
                    worker_id,
                    not_before_ms,
                } => {
                    let options =
                        SnowflakeOptions::new(worker_id).with_not_before_ms(Some(not_before_ms));
                    let fence = self.engine.fence().clone();
                    self.generator = Some(
                        Snowflake::with_fence(layout(), options, self.clock.clone(), fence)
                            .unwrap(),
                    );
                }
                Step::Failed(e) => {
                    self.failed = Some(e.clone());
                    return Step::Failed(e);
                }
                other => return other,
            }
        }
        panic!("the engine never slept");
    }

    fn ids(&self, n: usize) -> Result<Vec<u64>, Error> {
        let g = self.generator.as_ref().expect("started");
        (0..n).map(|_| g.next_id()).collect()
    }

    fn advance(&self, ms: u64) {
        self.clock.advance_ms(ms);
    }
}

fn time_of(id: u64) -> u64 {
    layout().decode(id).unwrap().timestamp_ms
}

#[test]
fn claims_the_preferred_id_and_never_issues_above_the_accepted_mark() {
    let registry = marked();
    let options = lease(30_000).with_preferred_worker_id(Some(5));
    let mut p = Proc::new("a", options, T0);
    assert!(matches!(p.run(&registry, 0), Step::Sleep(_)));
    let g = p
        .generator
        .as_ref()
        .expect("ready after claim and first renewal");
    assert_eq!(g.worker_id(), 5);
    assert_eq!(registry.owner_of(5), Some(token("a")));
    let mark = registry.mark_of(5);
    assert_eq!(mark, T0 + 2000 + 3000, "now + max_drift_ms + mark_ahead_ms");
    assert_eq!(p.engine.stats(0, T0).mark_ms, mark);

    // The renewer stalls; the clock runs past the mark: IDs stop at it.
    p.advance(5_001);
    let err = p.ids(1).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LeaseExpired, "{err}");
    assert!(err.to_string().contains("time mark"), "{err}");

    // The next renewal raises the mark and IDs resume, above everything issued.
    p.run(&registry, 5_001);
    let ids = p.ids(1000).unwrap();
    assert!(ids.iter().all(|&id| time_of(id) <= registry.mark_of(5)));
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn a_holder_paused_past_its_lease_and_its_successor_issue_disjoint_ids() {
    let registry = marked();
    let options = lease(1_000).with_preferred_worker_id(Some(0));
    let mut a = Proc::new("a", options, T0);
    a.run(&registry, 0);
    let mut before = a.ids(10_000).unwrap();
    let a_mark = registry.mark_of(0);

    // A is paused (no polls) for longer than its lease; B takes worker ID 0.
    let mut b = Proc::new("b", options, T0 + 1_500);
    let step = b.run(&registry, 1_500);
    assert!(
        b.generator.is_none(),
        "B waits for its clock to reach A's mark: {step:?}"
    );
    assert_eq!(registry.owner_of(0), Some(token("b")));
    let mut t = 1_500;
    while b.generator.is_none() {
        t += 100;
        b.advance(100);
        b.run(&registry, t);
        assert!(t < 10_000, "B never started");
    }
    let b_ids = b.ids(10_000).unwrap();
    assert!(b_ids.iter().all(|&id| time_of(id) > a_mark));

    // A resumes: whatever it still issues is at or below its mark, then it stops.
    a.advance(t);
    let late: Vec<u64> = (0..10_000).map_while(|_| a.ids(1).ok()).flatten().collect();
    assert!(late.iter().all(|&id| time_of(id) <= a_mark));
    before.extend(late);
    let all: HashSet<u64> = before.iter().chain(&b_ids).copied().collect();
    assert_eq!(all.len(), before.len() + b_ids.len(), "a duplicate ID");

    // A's next poll finds its lease gone: it claims another worker ID and goes on with it.
    a.run(&registry, t);
    assert_eq!(a.engine.stats(t, T0 + t).lost, 1);
    let g = a.generator.as_ref().unwrap();
    assert_ne!(g.worker_id(), 0);
    let after = a.ids(1_000).unwrap();
    assert!(after
        .iter()
        .all(|&id| layout().decode(id).unwrap().worker_id != 0));
    assert!(after[0] > *before.last().unwrap());
}

#[test]
fn every_id_held_gives_no_free_worker_id_after_the_claim_wait() {
    let registry = marked();
    let mut holders: Vec<Proc> = (0..8)
        .map(|i| Proc::new(&format!("h{i}"), lease(60_000), T0))
        .collect();
    for h in &mut holders {
        h.run(&registry, 0);
        assert!(h.generator.is_some());
    }
    let workers: HashSet<u64> = holders
        .iter()
        .map(|h| h.generator.as_ref().unwrap().worker_id())
        .collect();
    assert_eq!(workers.len(), 8);

    let options = lease(60_000).with_claim_wait_ms(1_000);
    let mut late = Proc::new("late", options, T0);
    let mut t = 0;
    while late.failed.is_none() {
        late.run(&registry, t);
        t += 50;
        assert!(t < 5_000, "no bounded wait");
    }
    match late.failed.unwrap() {
        Error::NoFreeWorkerId { capacity, held, .. } => {
            assert_eq!((capacity, held), (8, 8));
        }
        other => panic!("{other}"),
    }
}

/// A start-up that claimed a worker ID, stalled past its lease and found it taken says
/// so: its `NoFreeWorkerId` names the ID it lost and a lease too short for it, not only
/// busy holders (a Node process stalled under load that way in a scenario, and the old
/// message blamed the other holders alone).
#[test]
fn a_start_up_that_lost_its_claim_says_so_in_no_free_worker_id() {
    // Worker IDs 1-7 are held; 0 has no mark, so its claim waits out the mark's lead.
    let registry = MemoryRegistry::new();
    for w in 1..8 {
        registry.set_mark(w, T0 - 60_000);
    }
    for w in 1..8 {
        let mut h = Proc::new(
            &format!("h{w}"),
            lease(60_000).with_preferred_worker_id(Some(w)),
            T0,
        );
        h.run(&registry, 0);
        assert_eq!(h.generator.as_ref().map(|g| g.worker_id()), Some(w));
    }
    let options = lease(1_000)
        .with_preferred_worker_id(Some(0))
        .with_claim_wait_ms(3_000);
    let mut late = Proc::new("late", options, T0);
    late.run(&registry, 0);
    assert_eq!(registry.owner_of(0), Some(token("late")));
    assert!(
        late.generator.is_none(),
        "still in the unmarked claim's wait"
    );

    // It stalls 1.5 s (no polls); its lease runs out and another process takes the ID.
    let mut thief = Proc::new("thief", lease(60_000).with_preferred_worker_id(Some(0)), T0);
    thief.run(&registry, 1_200);
    assert_eq!(registry.owner_of(0), Some(token("thief")));
    late.advance(1_500);
    let mut t = 1_500;
    while late.failed.is_none() {
        late.run(&registry, t);
        late.advance(50);
        t += 50;
        assert!(t < 10_000, "no bounded wait");
    }
    let err = late.failed.unwrap();
    match &err {
        Error::NoFreeWorkerId {
            capacity,
            held,
            lost_worker_id,
            ..
        } => assert_eq!((*capacity, *held, *lost_worker_id), (8, 8, Some(0))),
        other => panic!("{other}"),
    }
    assert!(
        err.to_string()
            .contains("claimed worker ID 0 meanwhile, and its lease ran out"),
        "{err}"
    );

    // A start-up that never held an ID says nothing of the kind.
    let mut other = Proc::new("other", lease(1_000).with_claim_wait_ms(1_000), T0);
    let mut t = 0;
    while other.failed.is_none() {
        other.run(&registry, t);
        t += 50;
        assert!(t < 10_000, "no bounded wait");
    }
    let err = other.failed.unwrap();
    assert!(
        matches!(
            err,
            Error::NoFreeWorkerId {
                lost_worker_id: None,
                ..
            }
        ),
        "{err}"
    );
    assert!(!err.to_string().contains("meanwhile"), "{err}");
}

/// A registry that numbers identities (ZooKeeper, as Leaf does) and ran past the layout's
/// worker IDs is named as such: the start-up error says which number it gave and what to
/// do, not only that the answer broke the contract.
#[test]
fn a_registry_number_beyond_the_layout_is_named_at_start_up() {
    let options = lease(60_000).with_claim_wait_ms(1_000);
    let mut p = Proc::new("host", options, T0);
    let mut t = 0;
    while p.failed.is_none() {
        p.run_with(t, |call| match call {
            RegistryCall::Claim { .. } => Ok(Value::Map(vec![
                ("worker_id".into(), Value::uint(9)),
                ("mark_ms".into(), Value::uint(0)),
            ])),
            _ => Ok(Value::Bool(true)),
        });
        p.advance(50);
        t += 50;
        assert!(t < 10_000, "no bounded wait");
    }
    let err = p.failed.unwrap();
    assert_eq!(err.kind(), ErrorKind::Registry, "{err}");
    let text = err.to_string();
    assert!(
        text.contains("the registry assigned worker ID 9, beyond this layout's 0..=7"),
        "{text}"
    );
    assert!(text.contains("more worker bits"), "{text}");
}

/// A claim wait shorter than one sweep still tries the free worker IDs: with
/// `claim_wait_ms = 0` ("do not wait"), start-up found the first ID held and gave up,
/// although seven were free (found by the simulator: processes sharing a label all start
/// at one worker ID, and every one but the first failed for ever).
#[test]
fn a_short_claim_wait_still_sweeps_past_a_held_worker_id() {
    let registry = marked();
    let mut first = Proc::new("same", lease(60_000), T0);
    first.run(&registry, 0);
    let held = first.generator.as_ref().unwrap().worker_id();
    for wait in [0, 2] {
        let options = lease(60_000).with_claim_wait_ms(wait);
        let mut second = Proc::with_nonce("same", 1 + wait, options, T0);
        let mut t = 0;
        while second.generator.is_none() && second.failed.is_none() {
            second.run(&registry, t);
            t += 1;
            assert!(t < 1_000, "no bounded wait");
        }
        assert!(second.failed.is_none(), "{:?}", second.failed);
        assert_ne!(second.generator.as_ref().unwrap().worker_id(), held);
    }
}

#[test]
fn a_clock_behind_the_previous_holders_mark_is_refused_and_the_id_released() {
    let registry = marked();
    // A previous holder used worker ID 2 up to a minute ahead of this host's clock.
    registry
        .call_at(
            &RegistryCall::Claim {
                worker_id: 2,
                owner: "old".into(),
                ttl_ms: 100,
            },
            0,
        )
        .unwrap();
    registry
        .call_at(
            &RegistryCall::Release {
                worker_id: 2,
                owner: "old".into(),
                mark_ms: T0 + 60_000,
            },
            0,
        )
        .unwrap();
    let options = lease(30_000)
        .with_preferred_worker_id(Some(2))
        .with_clock_wait_ms(5_000);
    let mut p = Proc::new("new", options, T0);
    let step = p.run(&registry, 0);
    match step {
        Step::Failed(Error::ClockBehindMark {
            worker_id, mark_ms, ..
        }) => assert_eq!((worker_id, mark_ms), (2, T0 + 60_000)),
        other => panic!("{other:?}"),
    }
    assert_eq!(registry.owner_of(2), None, "the ID was released");
    assert_eq!(registry.mark_of(2), T0 + 60_000, "the mark stays");

    // Slightly behind (within max_drift_ms + clock_wait_ms): waits, then starts above it.
    let mut q = Proc::new("newer", options, T0 + 56_000);
    let mut t = 0;
    while q.generator.is_none() {
        q.run(&registry, t);
        t += 250;
        q.advance(250);
        assert!(t < 5_000, "never started");
    }
    assert!(time_of(q.ids(1).unwrap()[0]) > T0 + 60_000);
}

#[test]
fn a_clock_far_from_the_live_holders_median_is_refused() {
    let registry = marked();
    for i in 0..3 {
        let mut h = Proc::new(&format!("peer{i}"), lease(60_000), T0);
        h.run(&registry, 0);
        std::mem::forget(h);
    }
    let options = lease(60_000).with_max_peer_skew_ms(1_000);
    let mut skewed = Proc::new("skewed", options, T0 + 600_000);
    match skewed.run(&registry, 10) {
        Step::Failed(Error::ClockSkew {
            peers, median_ms, ..
        }) => {
            assert_eq!(peers, 3);
            assert!(median_ms.abs_diff(T0) < 100);
        }
        other => panic!("{other:?}"),
    }
    let mut fine = Proc::new("fine", options, T0 + 300);
    fine.run(&registry, 10);
    assert!(fine.generator.is_some(), "{:?}", fine.failed);
}

#[test]
fn a_renewal_reporting_another_owner_stops_ids_then_a_new_claim_resumes_them() {
    let registry = marked();
    let options = lease(30_000).with_preferred_worker_id(Some(3));
    let mut p = Proc::new("a", options, T0);
    p.run(&registry, 0);
    let first = p.ids(100).unwrap();

    // Another process takes worker ID 3 (say the registry lost A's lease) and issues.
    registry
        .call_at(
            &RegistryCall::Release {
                worker_id: 3,
                owner: token("a"),
                mark_ms: registry.mark_of(3),
            },
            1,
        )
        .unwrap();
    let mut thief = Proc::new("thief", options, T0 + 3_500);
    thief.run(&registry, 2);
    assert_eq!(thief.generator.as_ref().unwrap().worker_id(), 3);
    let thief_mark = registry.mark_of(3);

    // A's next renewal is refused: A stops, claims another worker ID, and resumes.
    p.advance(2_000);
    p.run(&registry, 2_000);
    let stats = p.engine.stats(2_000, T0 + 2_000);
    assert_eq!(stats.lost, 1);
    let resumed = p.ids(100).unwrap();
    let g = p.generator.as_ref().unwrap();
    assert_ne!(g.worker_id(), 3);
    assert!(resumed
        .iter()
        .all(|&id| layout().decode(id).unwrap().worker_id != 3));
    assert!(resumed[0] > *first.last().unwrap());
    assert!(thief_mark > 0);
}

#[test]
fn bad_answers_and_timeouts_are_counted_failures_never_ids() {
    let registry = marked();
    let options = lease(3_000)
        .with_preferred_worker_id(Some(1))
        .with_registry_timeout_ms(500);
    let mut p = Proc::new("a", options, T0);
    p.run(&registry, 0);
    let mark = registry.mark_of(1);

    // A renewal answering garbage or less than asked: a failure; the cap stays.
    p.advance(1_000);
    p.run_with(1_000, |_| Ok(Value::Str("OK".into())));
    p.run_with(1_200, |_| Ok(Value::uint(5)));
    let stats = p.engine.stats(1_200, T0 + 1_000);
    assert_eq!(stats.failures, 2, "{stats:?}");
    assert!(stats
        .last_error
        .unwrap()
        .contains("outside the registry contract"));
    assert_eq!(stats.mark_ms, mark);

    // A renewal that never answers: timed out, its late answer discarded.
    let (id, _) = match p.engine.poll(1_400, T0 + 1_000) {
        Step::Call { id, call } => (id, call),
        other => panic!("{other:?}"),
    };
    assert!(matches!(p.engine.poll(1_500, T0 + 1_000), Step::Sleep(_)));
    assert!(matches!(p.engine.poll(1_900, T0 + 1_000), Step::Sleep(_)));
    assert_eq!(p.engine.stats(1_900, T0 + 1_000).failures, 3);
    let retry = match p.engine.poll(2_100, T0 + 1_000) {
        Step::Call { id, .. } => id,
        other => panic!("{other:?}"),
    };
    p.engine
        .answer(id, 2_150, T0 + 1_000, Ok(Value::uint(u64::MAX >> 2)));
    assert_eq!(p.engine.stats(2_150, T0 + 1_000).mark_ms, mark);

    // Nothing succeeds until the lease may have expired: IDs stop.
    p.engine
        .answer(retry, 2_200, T0 + 1_000, Err("connection refused".into()));
    p.advance(2_000);
    p.run_with(3_000, |_| Err("connection refused".into()));
    let err = p.ids(1).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LeaseExpired);
    assert!(err.to_string().contains("connection refused"), "{err}");

    // A claim answered with garbage at start-up ends as a registry error.
    let options = options.with_claim_wait_ms(100);
    let mut q = Proc::new("q", options, T0);
    let (mut t, mut calls) = (0, 0);
    while q.failed.is_none() {
        q.run_with(t, |_| {
            calls += 1;
            Ok(Value::Str("garbage".into()))
        });
        t += 50;
    }
    assert_eq!(q.failed.unwrap().kind(), ErrorKind::Registry);
    assert!(
        calls <= 3,
        "a failing registry is retried after a pause, not swept: {calls}"
    );
}

#[test]
fn close_releases_at_the_sealed_mark_so_a_successor_starts_at_once() {
    let registry = marked();
    let options = lease(30_000)
        .with_preferred_worker_id(Some(4))
        .with_clock_wait_ms(0);
    let mut a = Proc::new("a", options, T0);
    a.run(&registry, 0);
    let ids = a.ids(5_000).unwrap();
    let hwm = a.generator.as_ref().unwrap().seal();
    assert!(time_of(*ids.last().unwrap()) <= hwm);
    a.engine.close(hwm);
    assert_eq!(a.run(&registry, 1), Step::Closed);
    assert_eq!(a.ids(1).unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(registry.mark_of(4), hwm);

    let mut b = Proc::new("b", options, T0);
    b.run(&registry, 2);
    let next = b.ids(1).unwrap()[0];
    assert_eq!(b.generator.as_ref().unwrap().worker_id(), 4);
    assert!(next > *ids.last().unwrap());
}

#[test]
fn leased_generators_on_threads_share_a_registry_without_duplicates() {
    let registry: Arc<MemoryRegistry> = Arc::new(MemoryRegistry::new());
    let start_with = |options: LeaseOptions| {
        LeasedSnowflake::start(
            layout(),
            SnowflakeOptions::new(0),
            options,
            registry.clone() as Arc<dyn Registry>,
            None,
        )
        .unwrap()
    };
    let start = || start_with(lease(2_000));
    let generators = [start(), start(), start()];
    let workers: HashSet<u64> = generators.iter().map(|g| g.worker_id()).collect();
    assert_eq!(workers.len(), 3);
    let reused = generators[0].worker_id();
    let ids: Vec<Vec<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = generators
            .iter()
            .flat_map(|g| (0..2).map(move |_| s.spawn(move || g.next_ids_vec(100_000).unwrap())))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let total: usize = ids.iter().map(Vec::len).sum();
    let unique: HashSet<u64> = ids.into_iter().flatten().collect();
    assert_eq!(unique.len(), total);
    let stats = generators[0].stats();
    assert_eq!(stats.state, "held");
    assert!(stats.lease_remaining_ms.unwrap() > 0);
    for g in &generators {
        let held = g.worker_id();
        g.close();
        assert_eq!(g.next_id().unwrap_err().kind(), ErrorKind::Closed);
        assert_eq!(g.worker_id(), held, "the last worker ID stays readable");
    }
    assert!(workers.iter().all(|&w| registry.owner_of(w).is_none()));

    // Restarted at once, a generator reuses a released ID without waiting.
    let t = std::time::Instant::now();
    let again = start_with(lease(2_000).with_preferred_worker_id(Some(reused)));
    assert!(t.elapsed().as_millis() < 1_000);
    assert_eq!(again.worker_id(), reused);
    let first = again.next_id().unwrap();
    assert!(!unique.contains(&first));
}

#[test]
fn leased_options_refuse_a_worker_id_and_take_lease_options_in_one_set() {
    let pairs = vec![
        ("leaseTtlMs".to_string(), Value::uint(5_000)),
        ("maxDriftMs".to_string(), Value::uint(100)),
        ("preferredWorkerId".to_string(), Value::uint(9)),
    ];
    let (config, layout, lease) =
        segflake::lease::configure_leased(pairs, Dialect::JS, T0).unwrap();
    assert_eq!(lease.lease_ttl_ms, 5_000);
    assert_eq!(lease.preferred_worker_id, Some(9));
    assert_eq!(config.options.max_drift_ms, 100);
    assert_eq!(layout.worker_bits(), 10);

    let err =
        segflake::lease::configure_leased(vec![("workerId", Value::uint(1))], Dialect::JS, T0)
            .unwrap_err();
    assert!(err.to_string().contains("preferredWorkerId"), "{err}");
    let err = segflake::lease::configure_leased(
        vec![("preferred_worker_id", Value::uint(1024))],
        Dialect::PYTHON,
        T0,
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WorkerIdOutOfRange);
}

#[test]
fn the_sql_schema_files_are_the_statements_every_language_sends() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../stores/sql/");
    let pg = std::fs::read_to_string(format!("{root}worker_lease.postgres.sql")).unwrap();
    let my = std::fs::read_to_string(format!("{root}worker_lease.mysql.sql")).unwrap();
    assert_eq!(pg, schema::postgres::SCHEMA);
    assert_eq!(my, schema::mysql::SCHEMA);
    let tables = segflake::catalog::tables_json();
    assert!(tables.contains("\"registries\": {\"redis\": {\"claim\""));
}

#[test]
fn a_claim_whose_renewals_keep_failing_gives_up_at_start_up_and_releases() {
    let registry = marked();
    let options = lease(30_000)
        .with_preferred_worker_id(Some(2))
        .with_claim_wait_ms(500);
    let mut p = Proc::new("a", options, T0);
    let mut t = 0;
    while p.failed.is_none() {
        p.run_with(t, |call| match call {
            RegistryCall::Renew { .. } => Err("no method renew()".into()),
            other => registry.call_at(other, t),
        });
        t += 100;
        assert!(t < 5_000, "start-up never gave up");
    }
    let err = p.failed.unwrap();
    assert_eq!(err.kind(), ErrorKind::Registry);
    assert!(err.to_string().contains("no method renew()"), "{err}");
    assert!(p.generator.is_none());
    assert_eq!(registry.owner_of(2), None, "the claimed ID was released");
}

/// A registry that assigns worker IDs by node identity (ZooKeeper in Leaf's layout): it
/// claims its own choice whatever ID is asked for, answering `{worker_id, mark_ms}`.
#[test]
fn a_registry_that_assigns_worker_ids_gets_its_choice_and_its_mark_respected() {
    let registry = marked();
    let assigned = 6;
    let previous_mark = T0 + 1_500;
    registry
        .call_at(
            &RegistryCall::Claim {
                worker_id: assigned,
                owner: "leaf".into(),
                ttl_ms: 1,
            },
            0,
        )
        .unwrap();
    let assigning = |call: &RegistryCall, t: u64| match call {
        RegistryCall::Claim { owner, ttl_ms, .. } => {
            let asked = RegistryCall::Claim {
                worker_id: assigned,
                owner: owner.clone(),
                ttl_ms: *ttl_ms,
            };
            let a = registry.call_at(&asked, t)?;
            Ok(match a.as_u64() {
                Some(mark) => Value::Map(vec![
                    ("worker_id".into(), Value::uint(assigned)),
                    ("mark_ms".into(), Value::uint(mark.max(previous_mark))),
                ]),
                None => Value::Null,
            })
        }
        other => registry.call_at(other, t),
    };
    let options = lease(30_000).with_preferred_worker_id(Some(1));
    let mut p = Proc::new("a", options, T0);
    assert!(matches!(
        p.run_with(10, |c| assigning(c, 10)),
        Step::Sleep(_)
    ));
    let g = p.generator.as_ref().expect("started on the assigned ID");
    assert_eq!(g.worker_id(), assigned);
    assert_eq!(registry.owner_of(assigned), Some(token("a")));
    assert_eq!(registry.owner_of(1), None, "the ID asked for was not taken");
    let ids = p.ids(100).unwrap();
    assert!(ids.iter().all(|&id| time_of(id) > previous_mark));

    // An assignment outside the layout breaks the contract: a failure, never a start.
    let mut q = Proc::new("b", lease(30_000), T0);
    let step = q.run_with(20, |c| match c {
        RegistryCall::Claim { .. } => Ok(Value::Map(vec![
            ("worker_id".into(), Value::uint(8)),
            ("mark_ms".into(), Value::uint(0)),
        ])),
        other => registry.call_at(other, 20),
    });
    assert!(matches!(step, Step::Sleep(_)), "{step:?}");
    assert!(q.generator.is_none());
    let stats = q.engine.stats(20, T0);
    assert!(
        stats.last_error.as_deref().unwrap_or("").contains("0..=7"),
        "{stats:?}"
    );
}

#[test]
fn two_engines_given_one_owner_label_never_share_a_worker_id() {
    // Simulated: the same label and preferred ID, different nonces.
    let registry = marked();
    let mut a = Proc::with_nonce("web-1", 1, lease(30_000), T0);
    let mut b = Proc::with_nonce("web-1", 2, lease(30_000), T0);
    a.run(&registry, 0);
    b.run(&registry, 0);
    let (ga, gb) = (a.generator.as_ref().unwrap(), b.generator.as_ref().unwrap());
    assert_ne!(ga.worker_id(), gb.worker_id());
    assert!(a.engine.owner().starts_with("web-1#"));
    assert_eq!(a.engine.label(), "web-1");

    // The std driver: two processes' engines labelled alike draw their own nonces.
    let registry: Arc<MemoryRegistry> = Arc::new(marked_now());
    let start = || {
        LeasedSnowflake::start(
            layout(),
            SnowflakeOptions::new(0),
            lease(30_000),
            registry.clone(),
            Some("web-1".into()),
        )
        .unwrap()
    };
    let (x, y) = (start(), start());
    assert_ne!(x.worker_id(), y.worker_id());
    assert_ne!(x.stats().owner, y.stats().owner);
    let mut ids: Vec<u64> = x.next_ids_vec(5000).unwrap();
    ids.extend(y.next_ids_vec(5000).unwrap());
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 10_000);
}

/// A registry whose 8 worker IDs were used and released a minute ago (real time).
fn marked_now() -> MemoryRegistry {
    let registry = MemoryRegistry::new();
    let now = segflake::Clock::now_ms(&segflake::SystemClock);
    for w in 0..8 {
        registry.set_mark(w, now - 60_000);
    }
    registry
}

#[test]
fn a_registry_that_forgets_never_gives_two_holders_the_same_ids() {
    let registry = marked();
    let options = lease(30_000).with_preferred_worker_id(Some(3));
    let mut a = Proc::new("a", options, T0);
    a.run(&registry, 0);
    let before = a.ids(100).unwrap();
    let a_mark = registry.mark_of(3);
    assert_eq!(a_mark, T0 + 2_000 + 3_000);

    // FLUSHALL: B finds worker ID 3 free and without a mark. It starts only above the most
    // A could have reached (claim time + max_drift_ms + mark_ahead_ms + the skew
    // allowance), so it waits about mark_ahead_ms + clock_skew_allowance_ms first.
    registry.forget();
    let mut b = Proc::with_nonce("b", 7, options, T0 + 100);
    b.run(&registry, 100);
    assert!(b.generator.is_none(), "B must wait for its floor");
    let floor = T0 + 100 + 2_000 + 3_000 + 1_000;
    b.advance(3_000);
    b.run(&registry, 3_100);
    assert!(b.generator.is_none(), "still below the floor");
    b.advance(1_000);
    b.run(&registry, 4_100);
    // The next renewal (a third of the mark's lead after the last) opens the fence.
    b.advance(700);
    b.run(&registry, 4_800);
    let gb = b.generator.as_ref().expect("B starts after the lead");
    assert_eq!(gb.worker_id(), 3);
    let b_ids = b.ids(100).unwrap();
    assert!(b_ids
        .iter()
        .all(|&id| time_of(id) > floor && time_of(id) > a_mark));

    // A's next renewal finds B's lease: A stops (and A's IDs stayed at or below its mark).
    a.advance(1_700);
    a.run(&registry, 1_700);
    assert!(before.iter().all(|&id| time_of(id) <= a_mark));
    let after: Vec<u64> = (0..100).filter_map(|_| a.ids(1).ok()).flatten().collect();
    let a_ids: HashSet<u64> = before.iter().chain(&after).copied().collect();
    assert!(b_ids.iter().all(|id| !a_ids.contains(id)));
}

/// A claim that found no mark (the registry lost it) and closes before its fence opened
/// releases no mark either: a mark from this process's generator (its high-water mark on
/// another worker ID) would tell the next holder to start below what an unseen holder of
/// this worker ID may still issue (found by the simulator, seed 4339633994194633962 of a
/// build without the lease-expiry shut).
#[test]
fn a_closed_claim_that_found_no_mark_gives_back_no_mark() {
    let registry = marked();
    let options = lease(30_000).with_preferred_worker_id(Some(3));
    let mut a = Proc::new("a", options, T0);
    a.run(&registry, 0);
    let a_mark = registry.mark_of(3);
    registry.forget();

    // B claims worker ID 3 without a mark, waits for its floor, and closes meanwhile; its
    // generator (from an earlier worker ID) had reached T0 + 100.
    let mut b = Proc::with_nonce("b", 7, options, T0 + 100);
    b.run(&registry, 100);
    assert!(b.generator.is_none(), "B must wait for its floor");
    b.engine.close(T0 + 100);
    b.run(&registry, 100);
    assert_eq!(registry.owner_of(3), None, "B released worker ID 3");
    assert!(
        registry.mark_of(3) == 0 || registry.mark_of(3) >= a_mark,
        "B gave back mark {}, below the {a_mark} A may still issue under",
        registry.mark_of(3)
    );

    // C claims it at once: it must start above everything A may issue.
    let mut c = Proc::with_nonce("c", 9, options, T0 + 200);
    let mut t = 200;
    while c.generator.is_none() {
        c.run(&registry, t);
        t += 100;
        c.advance(100);
        assert!(t < 20_000, "C never started");
    }
    a.advance(t);
    let a_ids: HashSet<u64> = a.ids(50).unwrap().into_iter().collect();
    let c_ids = c.ids(50).unwrap();
    assert!(
        c_ids.iter().all(|id| !a_ids.contains(id)),
        "A and C share IDs"
    );
    assert!(c_ids.iter().all(|&id| time_of(id) > a_mark));
}

#[test]
fn a_renewal_that_finds_no_record_stops_ids_with_registry_lost_data_and_reclaims() {
    let registry = marked();
    let options = lease(30_000).with_preferred_worker_id(Some(4));
    let mut a = Proc::new("a", options, T0);
    a.run(&registry, 0);
    let first = a.ids(10).unwrap();
    registry.forget();
    a.advance(1_700);
    // The claim after lost data waits a pause (a registry that keeps losing records is
    // not asked back to back).
    assert_eq!(a.run(&registry, 1_700), Step::Sleep(200));
    let err = a.ids(1).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RegistryLostData, "{err}");
    assert_eq!(err.code(), "REGISTRY_LOST_DATA");
    assert!(err.to_string().contains("worker ID 4"), "{err}");
    assert_eq!(a.engine.stats(1_700, T0 + 1_700).lost, 1);

    // It claims again (no mark now: it waits for its floor) and resumes above everything.
    let mut t = 1_700;
    while a.ids(1).is_err() {
        t += 500;
        a.advance(500);
        a.run(&registry, t);
        assert!(t < 20_000, "never resumed");
    }
    let resumed = a.ids(10).unwrap();
    assert!(resumed[0] > *first.last().unwrap());
    assert!(time_of(resumed[0]) > T0 + 1_700 + 2_000 + 3_000);
}

#[test]
fn a_generator_moved_to_a_lower_worker_id_starts_a_new_tick() {
    let registry = marked();
    let options = lease(30_000).with_preferred_worker_id(Some(5));
    let mut a = Proc::new("a", options, T0);
    a.run(&registry, 0);
    let before = a.ids(3).unwrap();
    // Worker IDs 5, 6 and 7 go to others; A's next claim wraps around to 0, in the same
    // tick of its (frozen) clock.
    registry
        .call_at(
            &RegistryCall::Release {
                worker_id: 5,
                owner: token("a"),
                mark_ms: registry.mark_of(5),
            },
            1,
        )
        .unwrap();
    for w in [5, 6, 7] {
        let call = RegistryCall::Claim {
            worker_id: w,
            owner: format!("other-{w}"),
            ttl_ms: 60_000,
        };
        registry.call_at(&call, 1).unwrap();
    }
    a.run(&registry, 1_700);
    let after = a.ids(3).unwrap();
    assert_eq!(layout().decode(after[0]).unwrap().worker_id, 0);
    assert!(after[0] > *before.last().unwrap(), "IDs never decrease");
    assert!(layout().decode(after[0]).unwrap().timestamp_ms > time_of(before[2]));
}

/// ZooKeeper in Leaf's layout: a claim answering its record's version and age.
fn leaf_answer(worker_id: u64, mark_ms: u64, version: u64, age_ms: u64) -> Value {
    Value::Map(vec![
        ("worker_id".into(), Value::uint(worker_id)),
        ("mark_ms".into(), Value::uint(mark_ms)),
        ("identity".into(), Value::Str("10.0.0.7:8080".into())),
        ("version".into(), Value::uint(version)),
        ("age_ms".into(), Value::uint(age_ms)),
    ])
}

#[test]
fn a_leaf_node_still_reporting_is_detected_and_refused() {
    let registry = marked();
    for (versions, alive) in [([4, 5], true), ([4, 4], false)] {
        let mut claims = 0;
        let mut p = Proc::new("a", lease(30_000), T0);
        let mut answer = |call: &RegistryCall, t: u64| match call {
            RegistryCall::Claim { owner, ttl_ms, .. } => {
                claims += 1;
                let assigned = RegistryCall::Claim {
                    worker_id: 2,
                    owner: owner.clone(),
                    ttl_ms: *ttl_ms,
                };
                registry.call_at(&assigned, t)?;
                Ok(leaf_answer(2, T0 - 500, versions[claims - 1], 800))
            }
            other => registry.call_at(other, t),
        };
        // Written 800 ms ago: the engine looks again one report period later.
        assert!(matches!(p.run_with(0, |c| answer(c, 0)), Step::Sleep(_)));
        assert!(p.generator.is_none());
        p.advance(4_500);
        let step = p.run_with(4_500, |c| answer(c, 4_500));
        if alive {
            let err = p.failed.clone().expect("refused");
            assert_eq!(err.kind(), ErrorKind::LeafNodeAlive, "{err}");
            assert!(err.to_string().contains("10.0.0.7:8080"), "{err}");
            assert!(matches!(step, Step::Failed(_)));
        } else {
            assert!(p.generator.is_some(), "{:?}", p.failed);
        }
        assert_eq!(claims, 2);
    }
}

#[test]
fn a_redis_that_would_lose_marks_is_named_in_one_warning() {
    let settings = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let durable = settings(&[("appendonly", "yes"), ("maxmemory-policy", "noeviction")]);
    assert_eq!(schema::redis::durability_warning(&durable), None);
    let lossy = settings(&[("appendonly", "no"), ("maxmemory-policy", "allkeys-lru")]);
    let warning = schema::redis::durability_warning(&lossy).unwrap();
    assert!(warning.contains("appendonly is off"), "{warning}");
    assert!(warning.contains("evicts keys"), "{warning}");
    // A server that refused CONFIG is not judged.
    assert_eq!(schema::redis::durability_warning(&[]), None);
}

#[test]
fn the_leaf_check_keeps_a_short_lease_and_is_never_cut_short() {
    // A 3 s lease is shorter than the check's report period: the repeated claims (which
    // write nothing to the Leaf node's record) keep it, and a failed look does not end
    // the period early.
    let registry = marked();
    let (mut claims, fail_next) = (Vec::new(), std::cell::Cell::new(false));
    let mut p = Proc::new("a", lease(3_000), T0);
    let mut answer = |call: &RegistryCall, t: u64| match call {
        RegistryCall::Claim { owner, ttl_ms, .. } => {
            claims.push(t);
            if fail_next.replace(false) {
                return Err("connection reset".into());
            }
            let assigned = RegistryCall::Claim {
                worker_id: 2,
                owner: owner.clone(),
                ttl_ms: *ttl_ms,
            };
            registry.call_at(&assigned, t)?;
            let version = if t >= 4_000 { 9 } else { 4 };
            Ok(leaf_answer(2, T0 - 500, version, 300))
        }
        other => registry.call_at(other, t),
    };
    p.run_with(0, |c| answer(c, 0));
    fail_next.set(true);
    let mut t = 0;
    while p.failed.is_none() && t < 10_000 {
        t += 100;
        p.advance(100);
        p.run_with(t, |c| answer(c, t));
        assert_eq!(
            p.engine.stats(t, T0 + t).lost,
            0,
            "the lease ran out at {t}"
        );
    }
    // The record changed at 4 s (within the period): a live Leaf node.
    let err = p.failed.clone().expect("refused");
    assert_eq!(err.kind(), ErrorKind::LeafNodeAlive, "{err}");
    assert!(claims.len() >= 3, "{claims:?}");
    assert!(p.generator.is_none());
}

#[test]
fn a_start_refused_for_a_fast_clock_gives_back_the_mark_it_found() {
    // A clock 30 s fast claims a worker ID without a mark; the peer check (before any
    // renewal) refuses it. The release gives back the mark found (none), not its lead, so
    // a correctly clocked process takes the ID next without waiting 30 s.
    let registry = MemoryRegistry::new();
    let options = lease(30_000)
        .with_preferred_worker_id(Some(6))
        .with_max_peer_skew_ms(1_000);
    let peers = |call: &RegistryCall| match call {
        RegistryCall::Peers => Ok(segflake::lease::peers_answer([(1, T0 as i128, 0)])),
        other => registry.call_at(other, 0),
    };
    let mut fast = Proc::new("fast", options, T0 + 30_000);
    assert!(matches!(fast.run_with(0, peers), Step::Failed(_)));
    let err = fast.failed.clone().unwrap();
    assert_eq!(err.kind(), ErrorKind::ClockSkew, "{err}");
    assert_eq!(registry.owner_of(6), None, "released");
    assert_eq!(registry.mark_of(6), 0, "the mark it found, not its clock's");
    let mut right = Proc::with_nonce("right", 1, options, T0);
    right.run_with(0, peers);
    assert!(right.failed.is_none(), "{:?}", right.failed);
}
