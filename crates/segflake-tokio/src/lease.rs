//! The async leased snowflake: the core's [`LeaseEngine`] driven by a task that awaits an
//! [`AsyncRegistry`], feeding the fence of a [`Snowflake`].

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use segflake::clock::ClockWait;
use segflake::lease::fresh_nonce;
use segflake::{
    Clock, Error, Layout, LeaseEngine, LeaseOptions, LeaseStats, Reserve, Result, Snowflake,
    SnowflakeOptions, Step, SystemClock,
};
use tokio::sync::{oneshot, watch, Notify};
use tokio::task::JoinHandle;
use tokio::time::{timeout, Instant};

use crate::time::Origin;
use crate::traits::{AsyncRegistry, DynRegistry};

/// How long the clock may keep one reading, while [`LeasedSnowflake::next_id`] waits for
/// it, before it fails with [`Error::ClockStalled`]: the core's
/// [`STALL_MS`](segflake::clock::STALL_MS).
pub const CLOCK_STALL_MS: u64 = segflake::clock::STALL_MS;

/// The generator a [`LeasedSnowflake`] issues with (on a shared handle of its clock).
pub type LeasedGenerator<C> = Snowflake<Arc<C>>;

struct Shared {
    engine: Mutex<LeaseEngine>,
    /// Wakes the driver from a sleep (close).
    wake: Notify,
    origin: Origin,
}

impl Shared {
    fn engine(&self) -> MutexGuard<'_, LeaseEngine> {
        self.engine.lock().unwrap_or_else(|e| e.into_inner())
    }
}

type Started<C> = Result<Arc<LeasedGenerator<C>>>;

/// A snowflake generator whose worker ID is leased from an [`AsyncRegistry`]: claimed by
/// [`start`](LeasedSnowflake::start), renewed by a task on the runtime, released by
/// [`close`](LeasedSnowflake::close)`.await`. The lease protocol is the core's
/// [`LeaseEngine`] (write-ahead time mark, start-up clock checks, recovery); this type only
/// makes its registry calls and sleeps on tokio's timers.
///
/// * `next_id().await` issues synchronously (lock-free, no await point, no allocation);
///   it awaits only when the generator would wait for the clock (a tick's sequence
///   numbers and the `max_drift_ms` allowance used up), on a timer instead of spinning.
/// * IDs are refused with [`Error::LeaseExpired`] once the lease may have expired (or the
///   clock reached the accepted mark); the driver claims again and IDs resume by
///   themselves.
/// * Cancellation-safe: an ID is reserved only in the poll that returns it.
/// * Dropping it without `close` refuses further IDs and aborts the renewal task; the
///   worker ID is then freed by its lease's expiry (`lease_ttl_ms`), not released.
///
/// ```
/// use std::sync::Arc;
/// use segflake::{Layout, LeaseOptions, MemoryRegistry, Preset, SnowflakeOptions};
/// use segflake_tokio::{Blocking, LeasedSnowflake};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> segflake::Result<()> {
/// let registry = Arc::new(MemoryRegistry::new());
/// registry.set_mark(7, 1); // worker ID 7 was used (and released) long ago
/// let lease = LeaseOptions::default().with_preferred_worker_id(Some(7));
/// let generator = LeasedSnowflake::start(
///     Layout::preset(Preset::Twitter)?,
///     SnowflakeOptions::new(0), // the worker ID comes from the lease
///     lease,
///     Blocking::from_arc(Arc::clone(&registry)),
///     Some("billing".into()),
/// )
/// .await?;
/// let id = generator.next_id().await?;
/// assert_eq!(generator.worker_id(), 7);
/// assert_eq!(generator.generator().decode(id)?.worker_id, 7);
/// assert!(registry.owner_of(7).is_some());
/// generator.close().await; // released
/// assert_eq!(registry.owner_of(7), None);
/// # Ok(())
/// # }
/// ```
pub struct LeasedSnowflake<C: Clock + 'static = SystemClock> {
    generator: Arc<LeasedGenerator<C>>,
    shared: Arc<Shared>,
    driver: Mutex<Option<JoinHandle<()>>>,
    /// Its sender is dropped when the driver task ends.
    done: watch::Receiver<()>,
}

impl<C: Clock + 'static> std::fmt::Debug for LeasedSnowflake<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeasedSnowflake")
            .field("worker_id", &self.generator.worker_id())
            .finish_non_exhaustive()
    }
}

impl LeasedSnowflake<SystemClock> {
    /// Claims a worker ID of `layout` from `registry` and starts the generator on the
    /// system clock. Resolves once a worker ID is held and the clock checks passed (at
    /// most about `claim_wait_ms + clock_wait_ms`, plus `mark_ahead_ms +
    /// clock_skew_allowance_ms` for a worker ID without a mark, plus the registry calls).
    /// `options.worker_id` is ignored. `owner` is the audit label (default: the host
    /// name); the engine adds its own nonce.
    ///
    /// Runs inside a tokio runtime (any flavour); the renewal task lives on it. Dropped
    /// before it resolves (say, under `tokio::time::timeout`), the start-up goes on in the
    /// background and releases any worker ID it claims.
    pub async fn start(
        layout: Layout,
        options: SnowflakeOptions,
        lease: LeaseOptions,
        registry: impl AsyncRegistry,
        owner: Option<String>,
    ) -> Result<Self> {
        LeasedSnowflake::start_with_clock(layout, options, lease, registry, owner, SystemClock)
            .await
    }
}

impl<C: Clock + 'static> LeasedSnowflake<C> {
    /// As [`LeasedSnowflake::start`], reading wall time from `clock` (the engine measures
    /// its lease on tokio's monotonic clock).
    pub async fn start_with_clock(
        layout: Layout,
        options: SnowflakeOptions,
        lease: LeaseOptions,
        registry: impl AsyncRegistry,
        owner: Option<String>,
        clock: C,
    ) -> Result<Self> {
        let label = owner.unwrap_or_else(segflake::lease::default_label);
        let engine = LeaseEngine::new(
            layout,
            lease,
            options.max_drift_ms,
            options.not_before_ms.unwrap_or(0),
            label,
            fresh_nonce(),
            0,
        )?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|e| {
            Error::invalid_argument(
                "runtime",
                format!("a LeasedSnowflake is started inside a tokio runtime: {e}"),
            )
        })?;
        let shared = Arc::new(Shared {
            engine: Mutex::new(engine),
            wake: Notify::new(),
            origin: Origin::now(),
        });
        let (ready_tx, ready_rx) = oneshot::channel::<Started<C>>();
        let (done_tx, done) = watch::channel(());
        let registry: Arc<dyn DynRegistry> = Arc::new(registry);
        let driver = runtime.spawn(drive(
            Arc::clone(&shared),
            registry,
            Arc::new(clock),
            options,
            ready_tx,
            done_tx,
        ));
        // Dropped (the start was cancelled), it wakes the driver to give up the claim.
        let _wake = WakeOnDrop(Arc::clone(&shared));
        let generator = match ready_rx.await {
            Ok(Ok(generator)) => generator,
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(Error::Registry {
                    message: "the lease task ended before start-up did (the runtime is shutting \
                              down)"
                        .into(),
                })
            }
        };
        Ok(LeasedSnowflake {
            generator,
            shared,
            driver: Mutex::new(Some(driver)),
            done,
        })
    }

    /// The next ID: strictly greater than every ID this generator issued before.
    /// Synchronous while the generator may issue; awaits a timer (never spins) when it
    /// must wait for the clock ([`Snowflake::try_reserve`] says until when).
    ///
    /// Errors: [`Error::LeaseExpired`] while the lease is not held (it recovers by
    /// itself), [`Error::Closed`] after `close`, the clock errors of
    /// [`Snowflake::next_id`] ([`Error::ClockStalled`] if the clock keeps one reading for
    /// [`CLOCK_STALL_MS`] while awaited).
    #[inline]
    pub async fn next_id(&self) -> Result<u64> {
        loop {
            match self.generator.try_reserve(1)? {
                Reserve::Ids(run) => return Ok(run.first),
                Reserve::WaitUntil(unix_ms) => self.wait_for_clock(unix_ms).await?,
            }
        }
    }

    /// Fills `out` with strictly increasing IDs, reserving whole runs of sequence numbers
    /// at once (as [`Snowflake::next_ids`]), and awaiting a timer like
    /// [`next_id`](LeasedSnowflake::next_id) whenever the generator must wait for the
    /// clock. On error, the IDs already written are valid and unique but the batch is
    /// incomplete. Dropped while it waits, the IDs it had written are not issued again
    /// (they are lost, leaving a gap).
    ///
    /// Errors: those of [`next_id`](LeasedSnowflake::next_id).
    pub async fn next_ids(&self, out: &mut [u64]) -> Result<()> {
        let mut filled = 0usize;
        while filled < out.len() {
            let want = u64::try_from(out.len() - filled).unwrap_or(u64::MAX);
            match self.generator.try_reserve(want)? {
                Reserve::Ids(run) => filled += run.write_to(&mut out[filled..]),
                Reserve::WaitUntil(unix_ms) => self.wait_for_clock(unix_ms).await?,
            }
        }
        Ok(())
    }

    /// Sleeps on tokio's timer until the clock reads `unix_ms`, by the core's rule
    /// ([`ClockWait`]).
    #[cold]
    async fn wait_for_clock(&self, unix_ms: u64) -> Result<()> {
        let clock = self.generator.clock();
        let start = Instant::now();
        let mut wait = ClockWait::new(unix_ms, CLOCK_STALL_MS);
        loop {
            let monotonic_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
            match wait.poll(clock.now_ms(), monotonic_ms)? {
                None => return Ok(()),
                Some(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
            }
        }
    }

    /// The generator (decode, layout, high-water mark, the non-blocking
    /// [`try_reserve`](Snowflake::try_reserve)). Its own `next_id` blocks the calling
    /// thread when it must wait for the clock; call this type's
    /// [`next_id`](LeasedSnowflake::next_id) on a runtime thread.
    pub fn generator(&self) -> &Arc<LeasedGenerator<C>> {
        &self.generator
    }

    /// The worker ID IDs are composed with now (it may change after the lease was lost and
    /// another worker ID claimed).
    pub fn worker_id(&self) -> u64 {
        self.generator.worker_id()
    }

    /// The lease's state.
    pub fn stats(&self) -> LeaseStats {
        let engine = self.shared.engine();
        engine.stats(self.shared.origin.ms(), self.generator.clock().now_ms())
    }

    /// Stops issuing, releases the worker ID with the generator's final high-water mark
    /// (so its next holder need not wait), and waits for the release (at most about
    /// `registry_timeout_ms`). Idempotent; concurrent calls all wait for the release.
    /// Dropped part-way, the release goes on in the background.
    pub async fn close(&self) {
        self.shut();
        let mut done = self.done.clone();
        while done.changed().await.is_ok() {}
    }

    /// Seals the generator and starts the release.
    fn shut(&self) {
        {
            let mut engine = self.shared.engine();
            let mark = self.generator.seal();
            engine.close(mark);
        }
        self.shared.wake.notify_one();
    }
}

impl<C: Clock + 'static> Drop for LeasedSnowflake<C> {
    /// Refuses further IDs and aborts the renewal task. Never panics, inside a runtime or
    /// after it is gone.
    fn drop(&mut self) {
        self.shut();
        if let Some(driver) = self.driver.lock().unwrap_or_else(|e| e.into_inner()).take() {
            if !driver.is_finished() {
                driver.abort();
            }
        }
    }
}

struct WakeOnDrop(Arc<Shared>);

impl Drop for WakeOnDrop {
    fn drop(&mut self) {
        self.0.wake.notify_one();
    }
}

/// Answers in a row after which the driver yields to the runtime: a registry that answers
/// without I/O (in memory) would otherwise run a claim sweep without a pause.
const BURST: u32 = 64;

/// Runs the engine until it finishes: start-up (its outcome goes to `ready`), renewals,
/// recovery, release.
async fn drive<C: Clock + 'static>(
    shared: Arc<Shared>,
    registry: Arc<dyn DynRegistry>,
    clock: Arc<C>,
    options: SnowflakeOptions,
    ready: oneshot::Sender<Started<C>>,
    _done: watch::Sender<()>,
) {
    let mut ready = Some(ready);
    let limit = Duration::from_millis(shared.engine().options().registry_timeout_ms);
    let mut burst = 0u32;
    loop {
        if ready.as_ref().is_some_and(|tx| tx.is_closed()) {
            // Nobody awaits the start any more: give up the claim (released if made).
            ready = None;
            shared.engine().close(0);
        }
        let step = shared.engine().poll(shared.origin.ms(), clock.now_ms());
        match step {
            Step::Ready {
                worker_id,
                not_before_ms,
            } => {
                let mut engine = shared.engine();
                let built = engine.generator(options, Arc::clone(&clock), worker_id, not_before_ms);
                match (built, ready.take()) {
                    (Ok(generator), Some(tx)) => {
                        if let Err(Ok(unwanted)) = tx.send(Ok(Arc::new(generator))) {
                            // Nobody awaits the start any more: release the worker ID.
                            let mark = unwanted.seal();
                            engine.close(mark);
                        }
                    }
                    (Err(e), tx) => {
                        engine.close(0);
                        if let Some(tx) = tx {
                            let _ = tx.send(Err(e));
                        }
                    }
                    (Ok(_), None) => engine.close(0),
                }
            }
            Step::Failed(e) => {
                if let Some(tx) = ready.take() {
                    let _ = tx.send(Err(e));
                }
                return;
            }
            Step::Closed => {
                if let Some(tx) = ready.take() {
                    let _ = tx.send(Err(Error::Closed));
                }
                return;
            }
            Step::Call { id, call } => {
                // Past the deadline the call is dropped; the engine fails it at its next
                // poll (a late answer is never applied).
                if let Ok(answer) = timeout(limit, registry.dyn_call(&call)).await {
                    let now = clock.now_ms();
                    shared.engine().answer(id, shared.origin.ms(), now, answer);
                }
                burst += 1;
                if burst >= BURST {
                    burst = 0;
                    tokio::task::yield_now().await;
                }
            }
            Step::Sleep(ms) => {
                burst = 0;
                let _ = timeout(Duration::from_millis(ms), shared.wake.notified()).await;
            }
            // A step this driver does not know (a newer core): poll again shortly.
            #[allow(unreachable_patterns)]
            _ => {
                burst = 0;
                let _ = timeout(Duration::from_millis(10), shared.wake.notified()).await;
            }
        }
    }
}
