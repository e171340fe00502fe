//! The std driver: a [`LeaseEngine`] run by a background thread over a [`Registry`].

use std::collections::HashMap;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{LeaseEngine, LeaseOptions, LeaseStats, RegistryCall, Step};
use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::fork::Origin;
use crate::host::Value;
use crate::layout::Layout;
use crate::snowflake::{Snowflake, SnowflakeOptions};

/// A registry of worker-ID leases: answers the calls of the contract in
/// [the module docs](super) with host values, or fails with a message.
///
/// Calls come from the driver's threads, one at a time per generator: a call that
/// outlives `registry_timeout_ms` counts as failed and its answer is discarded, and no
/// other call starts until it has returned (the engine's next call fails at once meanwhile,
/// and is retried).
pub trait Registry: Send + Sync {
    /// Performs `call` against the registry and returns its answer (see the contract in
    /// [the module docs](super)), or a message saying why it failed.
    fn call(&self, call: &RegistryCall) -> std::result::Result<Value, String>;
}

impl<F> Registry for F
where
    F: Fn(&RegistryCall) -> std::result::Result<Value, String> + Send + Sync,
{
    fn call(&self, call: &RegistryCall) -> std::result::Result<Value, String> {
        self(call)
    }
}

enum Message {
    Answer(u64, std::result::Result<Value, String>),
    Wake,
}

/// Start-up's outcome (the worker ID and mark to start from, or why not), handed from the
/// lease thread to the caller of `start`.
type StartOutcome = (Mutex<Option<Result<Option<(u64, u64)>>>>, Condvar);

struct Shared {
    engine: Mutex<LeaseEngine>,
    wake: Mutex<Sender<Message>>,
    started: Instant,
    /// A registry call is running (it may have timed out and still be running).
    calling: Arc<std::sync::atomic::AtomicBool>,
}

impl Shared {
    fn mono_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }
}

/// A snowflake generator whose worker ID is leased from a [`Registry`]: claimed at start,
/// renewed by a background thread, released on [`close`](LeasedSnowflake::close) or drop.
///
/// IDs never carry a time above the mark the registry accepted from this owner, and a
/// worker ID reused after another holder starts above that holder's mark. When the lease
/// may have expired, IDs are refused with [`Error::LeaseExpired`] and the driver claims a
/// worker ID again; IDs resume once it holds one.
///
/// It dereferences to its [`Snowflake`]. Over an in-process [`MemoryRegistry`] (a fleet
/// uses a shared one, through a [`Registry`] of its own or `segflake-backends`):
/// ```
/// use std::sync::Arc;
/// use segflake::{Layout, LeaseOptions, LeasedSnowflake, MemoryRegistry, Preset, SnowflakeOptions};
///
/// let layout = Layout::preset(Preset::Twitter)?;
/// let registry = Arc::new(MemoryRegistry::new());
/// // The previous holder of worker ID 5 released it with this mark: a worker ID that
/// // carries a mark is taken at once, and its IDs start above the mark.
/// let mark_ms = segflake::Clock::now_ms(&segflake::SystemClock) - 60_000;
/// registry.set_mark(5, mark_ms);
/// let lease = LeaseOptions::default().with_preferred_worker_id(Some(5));
/// let generator =
///     LeasedSnowflake::start(layout, SnowflakeOptions::new(0), lease, registry.clone(), None)?;
/// assert_eq!(generator.worker_id(), 5);
/// let id = generator.next_id()?;
/// assert!(layout.decode(id)?.timestamp_ms > mark_ms);
/// assert_eq!(generator.stats().state, "held");
/// generator.close(); // releases worker ID 5, leaving a mark above every ID it issued
/// assert!(registry.mark_of(5) >= layout.decode(id)?.timestamp_ms);
/// # Ok::<(), segflake::Error>(())
/// ```
pub struct LeasedSnowflake<C: Clock + 'static = SystemClock> {
    /// The clock is shared with the driver thread.
    generator: Arc<Snowflake<Arc<C>>>,
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
    origin: Origin,
}

impl LeasedSnowflake<SystemClock> {
    /// Claims a worker ID of `layout` from `registry` and starts the generator on the
    /// system clock. Blocks until a worker ID is held and the clock checks passed (at
    /// most about `claim_wait_ms + clock_wait_ms`, plus `mark_ahead_ms +
    /// clock_skew_allowance_ms` for a worker ID without a mark). `options.worker_id` is
    /// ignored. `owner` is the audit label (default: the host name); the engine adds its
    /// own nonce.
    pub fn start(
        layout: Layout,
        options: SnowflakeOptions,
        lease: LeaseOptions,
        registry: Arc<dyn Registry>,
        owner: Option<String>,
    ) -> Result<Self> {
        LeasedSnowflake::start_with_clock(layout, options, lease, registry, owner, SystemClock)
    }
}

impl<C: Clock + 'static> LeasedSnowflake<C> {
    /// As [`LeasedSnowflake::start`], reading time from `clock`; `owner` defaults to
    /// [`super::default_label`].
    pub fn start_with_clock(
        layout: Layout,
        options: SnowflakeOptions,
        lease: LeaseOptions,
        registry: Arc<dyn Registry>,
        owner: Option<String>,
        clock: C,
    ) -> Result<Self> {
        let label = owner.unwrap_or_else(super::default_label);
        let started = Instant::now();
        let engine = LeaseEngine::new(
            layout,
            lease,
            options.max_drift_ms,
            options.not_before_ms.unwrap_or(0),
            label,
            super::fresh_nonce(),
            0,
        )?;
        let (tx, rx) = channel();
        let shared = Arc::new(Shared {
            engine: Mutex::new(engine),
            wake: Mutex::new(tx),
            started,
            calling: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        });
        let clock = Arc::new(clock);
        // Start-up runs on the lease thread too; this thread only waits on a condition
        // variable for its outcome (it never blocks in a channel, so a host's main thread
        // gets no lazily made thread handle from this call).
        let outcome: Arc<StartOutcome> = Arc::new((Mutex::new(None), Condvar::new()));
        let thread = {
            let (shared, clock, outcome) = (shared.clone(), clock.clone(), outcome.clone());
            std::thread::Builder::new()
                .name("segflake-lease".into())
                .spawn(move || {
                    let ready = drive(&shared, &registry, &rx, &*clock, true);
                    let go_on = matches!(ready, Ok(Some(_)));
                    let (slot, signal) = &*outcome;
                    *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(ready);
                    signal.notify_all();
                    if go_on {
                        let _ = drive(&shared, &registry, &rx, &*clock, false);
                    }
                })
                .map_err(|e| Error::Registry {
                    message: format!("cannot start the lease thread: {e}"),
                })?
        };
        let ready = {
            let (slot, signal) = &*outcome;
            let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                match slot.take() {
                    Some(ready) => break ready,
                    None => slot = signal.wait(slot).unwrap_or_else(|p| p.into_inner()),
                }
            }
        };
        let (worker_id, not_before_ms) = match ready {
            Ok(Some(ready)) => ready,
            failed => {
                // Start-up ended (and released any claimed ID): the thread is done.
                let _ = thread.join();
                return Err(failed.err().unwrap_or(Error::Closed));
            }
        };
        let built = shared
            .engine
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .generator(options, clock.clone(), worker_id, not_before_ms);
        let generator = match built {
            Ok(g) => Arc::new(g),
            Err(e) => {
                shared
                    .engine
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .close(0);
                let _ = shared
                    .wake
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .send(Message::Wake);
                let _ = thread.join();
                return Err(e);
            }
        };
        Ok(LeasedSnowflake {
            generator,
            shared,
            thread: Mutex::new(Some(thread)),
            origin: Origin::here(),
        })
    }

    /// The generator: issue IDs with it from any thread.
    pub fn generator(&self) -> &Arc<Snowflake<Arc<C>>> {
        &self.generator
    }

    /// The lease's state.
    pub fn stats(&self) -> LeaseStats {
        let engine = self.shared.engine.lock().unwrap_or_else(|p| p.into_inner());
        engine.stats(self.shared.mono_ms(), self.generator.clock().now_ms())
    }

    /// Stops issuing, releases the worker ID with the generator's final high-water mark,
    /// and waits for the release (at most about `registry_timeout_ms`). Idempotent. In a
    /// forked child it only refuses further IDs: the lease is the parent's.
    pub fn close(&self) {
        if self.origin.is_forked() {
            self.generator.fence().shut_in_child();
            return;
        }
        {
            let mut engine = self.shared.engine.lock().unwrap_or_else(|p| p.into_inner());
            let mark = self.generator.seal();
            engine.close(mark);
        }
        let _ = self
            .shared
            .wake
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(Message::Wake);
        let thread = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

impl<C: Clock + 'static> std::ops::Deref for LeasedSnowflake<C> {
    type Target = Snowflake<Arc<C>>;
    fn deref(&self) -> &Snowflake<Arc<C>> {
        &self.generator
    }
}

impl<C: Clock + 'static> Drop for LeasedSnowflake<C> {
    fn drop(&mut self) {
        self.close();
    }
}

/// Runs the engine until start-up ends (`until_ready`: returns the worker ID and mark to
/// start from) or the engine finishes.
fn drive(
    shared: &Arc<Shared>,
    registry: &Arc<dyn Registry>,
    rx: &Receiver<Message>,
    clock: &dyn Clock,
    until_ready: bool,
) -> Result<Option<(u64, u64)>> {
    loop {
        let step = {
            let mut engine = shared.engine.lock().unwrap_or_else(|p| p.into_inner());
            engine.poll(shared.mono_ms(), clock.now_ms())
        };
        let wait_ms = match step {
            Step::Ready {
                worker_id,
                not_before_ms,
            } => {
                if until_ready {
                    return Ok(Some((worker_id, not_before_ms)));
                }
                continue;
            }
            Step::Failed(e) => return Err(e),
            Step::Closed => return Ok(None),
            Step::Call { id, call } => {
                use std::sync::atomic::Ordering;
                if shared.calling.swap(true, Ordering::AcqRel) {
                    let mut engine = shared.engine.lock().unwrap_or_else(|p| p.into_inner());
                    let message = "the previous registry call has not returned yet (it \
                                   outlived registry_timeout_ms); calls never overlap"
                        .to_string();
                    engine.answer(id, shared.mono_ms(), clock.now_ms(), Err(message));
                    drop(engine);
                    // Wait for that call (its answer wakes this thread) or the next step.
                    let _ = rx.recv_timeout(Duration::from_millis(50));
                    continue;
                }
                let registry = registry.clone();
                let tx = shared
                    .wake
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone();
                let calling = shared.calling.clone();
                let spawned = std::thread::Builder::new()
                    .name("segflake-registry".into())
                    .spawn(move || {
                        let answer = registry.call(&call);
                        calling.store(false, Ordering::Release);
                        let _ = tx.send(Message::Answer(id, answer));
                    });
                if let Err(e) = spawned {
                    shared.calling.store(false, Ordering::Release);
                    let mut engine = shared.engine.lock().unwrap_or_else(|p| p.into_inner());
                    let message = format!("cannot start a registry call: {e}");
                    engine.answer(id, shared.mono_ms(), clock.now_ms(), Err(message));
                }
                continue;
            }
            Step::Sleep(ms) => ms,
        };
        match rx.recv_timeout(Duration::from_millis(wait_ms)) {
            Ok(Message::Answer(id, answer)) => {
                let mut engine = shared.engine.lock().unwrap_or_else(|p| p.into_inner());
                engine.answer(id, shared.mono_ms(), clock.now_ms(), answer);
            }
            Ok(Message::Wake) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Ok(None),
        }
    }
}

/// An in-process registry: the contract over a map, on this process's monotonic clock.
/// For tests, simulations and single-process use; fleets need a shared registry.
#[derive(Debug, Default)]
pub struct MemoryRegistry {
    entries: Mutex<HashMap<u64, Entry>>,
    started: Option<Instant>,
}

#[derive(Debug, Clone, Default)]
struct Entry {
    owner: Option<String>,
    expires_ms: u64,
    mark_ms: u64,
    reported_ms: Option<u64>,
    reported_at_ms: u64,
}

impl MemoryRegistry {
    /// An empty registry: every worker ID free and without a mark.
    pub fn new() -> MemoryRegistry {
        MemoryRegistry {
            entries: Mutex::new(HashMap::new()),
            started: Some(Instant::now()),
        }
    }

    fn now(&self) -> u64 {
        self.started.map_or(0, |s| s.elapsed().as_millis() as u64)
    }

    /// The stored mark of `worker_id` (0 if never used).
    pub fn mark_of(&self, worker_id: u64) -> u64 {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.get(&worker_id).map_or(0, |e| e.mark_ms)
    }

    /// Sets the stored mark of `worker_id`, as a holder's release would have left it.
    pub fn set_mark(&self, worker_id: u64, mark_ms: u64) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.entry(worker_id).or_default().mark_ms = mark_ms;
    }

    /// Forgets every lease and mark, as a Redis `FLUSHALL` or a restart without
    /// persistence does.
    pub fn forget(&self) {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// The owner holding `worker_id` by a live lease.
    pub fn owner_of(&self, worker_id: u64) -> Option<String> {
        let now = self.now();
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .get(&worker_id)
            .filter(|e| e.expires_ms > now)
            .and_then(|e| e.owner.clone())
    }
}

impl Registry for MemoryRegistry {
    fn call(&self, call: &RegistryCall) -> std::result::Result<Value, String> {
        self.call_at(call, self.now())
    }
}

impl MemoryRegistry {
    /// Answers `call` as if the registry's clock read `now` (for simulations).
    pub fn call_at(&self, call: &RegistryCall, now: u64) -> std::result::Result<Value, String> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let live = |e: &Entry, owner: &str| e.expires_ms > now && e.owner.as_deref() == Some(owner);
        Ok(match call {
            RegistryCall::Claim {
                worker_id,
                owner,
                ttl_ms,
            } => {
                let e = entries.entry(*worker_id).or_default();
                if e.owner.is_none() || e.expires_ms <= now || live(e, owner) {
                    e.owner = Some(owner.clone());
                    e.expires_ms = now + ttl_ms;
                    Value::uint(e.mark_ms)
                } else {
                    Value::Null
                }
            }
            RegistryCall::Renew {
                worker_id,
                owner,
                ttl_ms,
                mark_ms,
                reported_ms,
            } => match entries.get_mut(worker_id) {
                Some(e) if live(e, owner) => {
                    e.expires_ms = now + ttl_ms;
                    e.mark_ms = e.mark_ms.max(*mark_ms);
                    e.reported_ms = Some(*reported_ms);
                    e.reported_at_ms = now;
                    Value::uint(e.mark_ms)
                }
                // Another owner holds it, or this owner's lease expired.
                Some(e) if e.owner.is_some() => Value::Null,
                // Nobody holds it: the registry lost the lease.
                _ => Value::Int(-1),
            },
            RegistryCall::Release {
                worker_id,
                owner,
                mark_ms,
            } => match entries.get_mut(worker_id) {
                Some(e) if live(e, owner) => {
                    e.owner = None;
                    e.expires_ms = 0;
                    e.mark_ms = *mark_ms;
                    Value::Bool(true)
                }
                _ => Value::Bool(false),
            },
            RegistryCall::Peers => Value::List(
                entries
                    .iter()
                    .filter(|(_, e)| e.expires_ms > now)
                    .filter_map(|(id, e)| {
                        let reported = e.reported_ms?;
                        Some(Value::Map(vec![
                            ("worker_id".into(), Value::uint(*id)),
                            ("reported_ms".into(), Value::uint(reported)),
                            ("age_ms".into(), Value::uint(now - e.reported_at_ms)),
                        ]))
                    })
                    .collect(),
            ),
        })
    }
}
