//! The async segment generator: per-tag [`SegmentEngine`]s fed by fetch tasks that await
//! an [`AsyncSegmentStore`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use segflake::segment::{check_store_count, check_tag};
use segflake::{
    Allocation, Error, Result, SegmentEngine, SegmentOptions, SegmentStats, StoreFailure,
};
use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::{timeout, timeout_at, Instant};

use crate::time::Origin;
use crate::traits::{AsyncSegmentStore, DynStore};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct TagState {
    engine: SegmentEngine,
    /// Woken (all waiters) after every fetch completes and on close.
    changed: Notify,
    /// The latest fetch task (at most one is in flight per tag).
    fetch: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    store: Arc<dyn DynStore>,
    options: SegmentOptions,
    origin: Origin,
    runtime: Handle,
    tags: RwLock<HashMap<Box<str>, Arc<TagState>>>,
    closed: AtomicBool,
    /// Held by `close` while it closes: a second `close` waits for the first.
    closing: tokio::sync::Mutex<()>,
}

impl Shared {
    /// Starts the fetch the engine asks for, if it asks for one, as a task on the
    /// generator's runtime. Never waits.
    fn kick(&self, state: &Arc<TagState>) {
        let Some(req) = state.engine.begin_fetch(self.origin.ms()) else {
            return;
        };
        // Made before the task, so that a task the runtime drops unstarted (it is shutting
        // down) still completes the fetch.
        let flight = Flight {
            state: Arc::clone(state),
            origin: self.origin,
            store: req.store,
            done: false,
        };
        let store = Arc::clone(&self.store);
        let limit = Duration::from_millis(self.options.store_timeout_ms);
        let task = async move {
            let mut flight = flight;
            let state = Arc::clone(&flight.state);
            let call = store.dyn_allocate_from(req.store, state.engine.tag(), req.step);
            let result = timeout(limit, call).await;
            flight.finish(result.ok());
        };
        let handle = self.runtime.spawn(task);
        *lock(&state.fetch) = Some(handle);
    }
}

/// One fetch in flight: completes it in the engine exactly once, with the store's answer,
/// a timeout, or (when dropped unfinished: the task was aborted, the store panicked, the
/// runtime shut down) a failure. Then wakes the tag's waiters.
struct Flight {
    state: Arc<TagState>,
    origin: Origin,
    store: usize,
    done: bool,
}

impl Flight {
    fn finish(&mut self, result: Option<std::result::Result<Allocation, StoreFailure>>) {
        self.done = true;
        let engine = &self.state.engine;
        let now = self.origin.ms();
        match result {
            // A refused range is recorded by the engine as a failure.
            Some(answer) => drop(engine.complete_fetch_from(now, self.store, answer)),
            None => drop(engine.time_out_fetch_now(now)),
        }
        self.state.changed.notify_waiters();
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.state.engine.complete_fetch_from(
                self.origin.ms(),
                self.store,
                Err(StoreFailure::Failed(
                    "the fetch was abandoned before the store answered (the generator closed, \
                     or the store call panicked)"
                        .into(),
                )),
            );
            self.state.changed.notify_waiters();
        }
    }
}

/// Dense, Leaf-compatible IDs per tag for tokio services: the core's [`SegmentEngine`]s
/// (double buffer, dynamic step, checked store answers) driven by tasks that await an
/// [`AsyncSegmentStore`].
///
/// * `next_id(tag).await` takes an ID synchronously while a segment is ready (no await
///   point, no allocation) and awaits only when both buffers are empty, at most
///   `wait_timeout_ms`, then fails with [`Error::SegmentsExhausted`] (at once if the fetch
///   it waited for failed). [`tag`](SegmentGenerator::tag) returns a [`TagHandle`]
///   without the lookup.
/// * Store calls run as tasks on the runtime the generator was created in, with a deadline
///   of `store_timeout_ms`; never inside a caller's `next_id`.
/// * **Cancellation-safe**: an ID is taken from the engine only in the poll that returns
///   it, so a `next_id` future dropped at any point neither loses nor repeats an ID.
/// * [`close`](SegmentGenerator::close)`.await` stops issuing and gives each tag's
///   fetched but unissued IDs back to the store. Dropping the generator without it stops
///   issuing, aborts the fetch tasks and gives nothing back; it never panics.
///
/// ```
/// use segflake::{MemoryStore, SegmentOptions};
/// use segflake_tokio::{Blocking, SegmentGenerator};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> segflake::Result<()> {
/// let options = SegmentOptions::default().with_step(100);
/// let generator = SegmentGenerator::new(Blocking::new(MemoryStore::new()), options)?;
/// assert_eq!(generator.next_id("order").await?, 1);
/// let order = generator.tag("order")?;
/// assert_eq!(order.next_id().await?, 2);
/// generator.close().await; // IDs 3..=100 go back to the store
/// # Ok(())
/// # }
/// ```
pub struct SegmentGenerator {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for SegmentGenerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentGenerator")
            .field("options", &self.shared.options)
            .field("closed", &self.shared.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// One tag of a [`SegmentGenerator`]: the hot path without the tag lookup. Cheap to clone;
/// it fails with [`Error::Closed`] once the generator is closed or dropped.
#[derive(Clone)]
pub struct TagHandle {
    shared: Arc<Shared>,
    state: Arc<TagState>,
}

impl std::fmt::Debug for TagHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TagHandle")
            .field("tag", &self.state.engine.tag())
            .finish_non_exhaustive()
    }
}

impl SegmentGenerator {
    /// A generator over `store`. Fetches run as tasks on the current tokio runtime (any
    /// flavour), so call it inside one.
    ///
    /// Errors: [`Error::InvalidArgument`] for bad options, or outside a tokio runtime.
    pub fn new(store: impl AsyncSegmentStore, options: SegmentOptions) -> Result<Self> {
        options.validate()?;
        let runtime = Handle::try_current().map_err(|e| {
            Error::invalid_argument(
                "runtime",
                format!("a SegmentGenerator is created inside a tokio runtime: {e}"),
            )
        })?;
        check_store_count(store.store_count())?;
        Ok(SegmentGenerator {
            shared: Arc::new(Shared {
                store: Arc::new(store),
                options,
                origin: Origin::now(),
                runtime,
                tags: RwLock::new(HashMap::new()),
                closed: AtomicBool::new(false),
                closing: tokio::sync::Mutex::new(()),
            }),
        })
    }

    /// The options the generator runs with.
    pub fn options(&self) -> &SegmentOptions {
        &self.shared.options
    }

    /// A handle on `tag`, creating the tag's engine (and starting its first fetch) on first
    /// use. Never waits.
    ///
    /// Errors: [`Error::InvalidArgument`] for a malformed tag, [`Error::Closed`].
    pub fn tag(&self, tag: &str) -> Result<TagHandle> {
        let shared = &self.shared;
        if shared.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if let Some(state) = shared
            .tags
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(tag)
        {
            return Ok(self.handle(Arc::clone(state)));
        }
        check_tag(tag)?;
        let state = {
            let mut tags = shared.tags.write().unwrap_or_else(|e| e.into_inner());
            match tags.get(tag) {
                Some(s) => Arc::clone(s),
                None => {
                    let s = Arc::new(TagState {
                        engine: SegmentEngine::with_stores(
                            tag,
                            &shared.options,
                            shared.store.dyn_store_count(),
                        )?,
                        changed: Notify::new(),
                        fetch: Mutex::new(None),
                    });
                    tags.insert(tag.into(), Arc::clone(&s));
                    s
                }
            }
        };
        // A close that ran meanwhile did not see this tag: close it here.
        if shared.closed.load(Ordering::Acquire) {
            state.engine.close();
            return Err(Error::Closed);
        }
        shared.kick(&state);
        Ok(self.handle(state))
    }

    fn handle(&self, state: Arc<TagState>) -> TagHandle {
        TagHandle {
            shared: Arc::clone(&self.shared),
            state,
        }
    }

    /// The next ID of `tag` (see [`TagHandle::next_id`]). Looks the tag up on every call;
    /// hold a [`TagHandle`] on hot paths.
    pub async fn next_id(&self, tag: &str) -> Result<u64> {
        {
            let tags = self.shared.tags.read().unwrap_or_else(|e| e.into_inner());
            if let Some(state) = tags.get(tag) {
                if let Some(id) = state.engine.try_next() {
                    if state.engine.wants_fetch() {
                        self.shared.kick(state);
                    }
                    return Ok(id);
                }
            }
        }
        self.tag(tag)?.next_id().await
    }

    /// Fills `out` with IDs of `tag` (see [`TagHandle::next_ids`]).
    pub async fn next_ids(&self, tag: &str, out: &mut [u64]) -> Result<()> {
        self.tag(tag)?.next_ids(out).await
    }

    /// An ID of `tag` if one is ready now, without waiting (see
    /// [`TagHandle::try_next_id`]).
    pub fn try_next_id(&self, tag: &str) -> Result<Option<u64>> {
        self.tag(tag)?.try_next_id()
    }

    /// A snapshot of `tag`'s state.
    ///
    /// Errors: [`Error::InvalidArgument`] if this generator has not used the tag.
    pub fn stats(&self, tag: &str) -> Result<SegmentStats> {
        let tags = self.shared.tags.read().unwrap_or_else(|e| e.into_inner());
        match tags.get(tag) {
            Some(state) => Ok(state.engine.stats(self.shared.origin.ms())),
            None => {
                let mut known: Vec<&str> = tags.keys().map(|k| &**k).collect();
                known.sort_unstable();
                Err(Error::invalid_argument(
                    "tag",
                    format!("{tag:?} has not been used by this generator; known tags: {known:?}"),
                ))
            }
        }
    }

    /// The tags this generator has used, sorted.
    pub fn tags(&self) -> Vec<String> {
        let tags = self.shared.tags.read().unwrap_or_else(|e| e.into_inner());
        let mut names: Vec<String> = tags.keys().map(|k| k.to_string()).collect();
        names.sort_unstable();
        names
    }

    /// Whether the generator is closed.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    fn states(&self) -> Vec<Arc<TagState>> {
        let tags = self.shared.tags.read().unwrap_or_else(|e| e.into_inner());
        tags.values().cloned().collect()
    }

    /// Stops issuing (waiting and later calls get [`Error::Closed`]), then, with
    /// `give_back` (the default), hands each tag's fetched but unissued IDs back to the
    /// store ([`SegmentEngine::take_give_back`], [`AsyncSegmentStore::give_back`]), so the
    /// next process continues without a gap.
    ///
    /// A fetch in flight is first given `wait_timeout_ms` (at least 1 s) to land, so that
    /// its range can go back too; past that it is aborted. The give-backs together wait at
    /// most `store_timeout_ms`; one that fails or times out only leaves a gap. Idempotent:
    /// a second call waits for the first. Dropping this future part-way leaves the
    /// generator closed, possibly without giving back.
    pub async fn close(&self) {
        let shared = &self.shared;
        let _closing = shared.closing.lock().await;
        if shared.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let states = self.states();
        for state in &states {
            state.engine.close();
            state.changed.notify_waiters();
        }
        let patience = Duration::from_millis(shared.options.wait_timeout_ms.max(1000));
        let deadline = Instant::now() + patience;
        for state in &states {
            settle(state, deadline).await;
        }
        let offers: Vec<_> = states
            .iter()
            .filter_map(|s| Some((s, s.engine.take_give_back()?)))
            .collect();
        if offers.is_empty() {
            return;
        }
        let limit = Duration::from_millis(shared.options.store_timeout_ms);
        let give_backs = async {
            for (state, offer) in offers {
                // A store that cannot take them back leaves a gap, nothing worse.
                let _ = shared
                    .store
                    .dyn_give_back(state.engine.tag(), offer.expected_max_id, offer.max_id)
                    .await;
            }
        };
        let _ = timeout(limit, give_backs).await;
    }
}

/// Waits until `state`'s fetch in flight (if any) has completed, aborting it at `deadline`.
async fn settle(state: &TagState, deadline: Instant) {
    loop {
        let notified = state.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if !state.engine.fetch_in_flight() {
            return;
        }
        let task = lock(&state.fetch).take();
        match task {
            Some(mut task) => {
                if timeout_at(deadline, &mut task).await.is_err() {
                    task.abort();
                    let _ = task.await;
                    return;
                }
            }
            // The task is being spawned (its handle is not stored yet): wait for it.
            None => {
                if timeout_at(deadline, notified).await.is_err() {
                    if let Some(task) = lock(&state.fetch).take() {
                        task.abort();
                    }
                    return;
                }
            }
        }
    }
}

impl Drop for SegmentGenerator {
    /// Stops issuing and aborts the fetch tasks, without giving IDs back (that needs
    /// [`close`](SegmentGenerator::close)). Never panics, inside a runtime or after it is
    /// gone.
    fn drop(&mut self) {
        // Also after a `close` whose future was dropped part-way: its fetches end here.
        self.shared.closed.store(true, Ordering::Release);
        for state in self.states() {
            state.engine.close();
            state.changed.notify_waiters();
            if let Some(task) = lock(&state.fetch).take() {
                task.abort();
            }
        }
    }
}

impl TagHandle {
    /// The tag's name.
    pub fn name(&self) -> &str {
        self.state.engine.tag()
    }

    /// The tag's engine (for stats or custom driving).
    pub fn engine(&self) -> &SegmentEngine {
        &self.state.engine
    }

    /// The next ID. Taken synchronously while a segment is ready; otherwise waits for the
    /// fetch at most `wait_timeout_ms`, then fails with [`Error::SegmentsExhausted`] (at
    /// once if the fetch it waited for failed; the next call asks the store again).
    /// [`Error::Closed`] after `close`. Cancellation-safe.
    #[inline]
    pub async fn next_id(&self) -> Result<u64> {
        let engine = &self.state.engine;
        if let Some(id) = engine.try_next() {
            if engine.wants_fetch() {
                self.shared.kick(&self.state);
            }
            return Ok(id);
        }
        // Boxed so that this future stays small on the fast path; the slow path waits
        // for a store call, next to which the allocation is nothing.
        Box::pin(self.wait_for(|e| e.try_next())).await
    }

    /// An ID if one is ready now (`Ok(None)` otherwise; a fetch is started if needed).
    /// Never waits; may be called outside the runtime. [`Error::Closed`] after `close`.
    #[inline]
    pub fn try_next_id(&self) -> Result<Option<u64>> {
        let engine = &self.state.engine;
        let id = engine.try_next();
        if engine.wants_fetch() {
            self.shared.kick(&self.state);
        }
        if id.is_none() && self.shared.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(id)
    }

    /// Fills `out` with strictly increasing IDs, waiting for segments like
    /// [`next_id`](TagHandle::next_id). On error the IDs already written are valid and
    /// unique but the batch is incomplete. Dropped while it waits, the IDs it had written
    /// are not issued again (they are lost, leaving a gap).
    pub async fn next_ids(&self, out: &mut [u64]) -> Result<()> {
        let engine = &self.state.engine;
        let mut filled = engine.try_next_batch(out);
        if engine.wants_fetch() {
            self.shared.kick(&self.state);
        }
        while filled < out.len() {
            let rest = &mut out[filled..];
            filled += self
                .wait_for(|e| match e.try_next_batch(rest) {
                    0 => None,
                    n => Some(n),
                })
                .await?;
        }
        Ok(())
    }

    /// A snapshot of the tag's state.
    pub fn stats(&self) -> SegmentStats {
        self.state.engine.stats(self.shared.origin.ms())
    }

    /// The slow path: the engine's manual, step 4. `attempt` takes IDs; it runs only in a
    /// poll that returns what it took, so this future can be dropped at any await.
    #[cold]
    async fn wait_for<T>(&self, mut attempt: impl FnMut(&SegmentEngine) -> Option<T>) -> Result<T> {
        let shared = &self.shared;
        let state = &self.state;
        let engine = &state.engine;
        let deadline = Instant::now() + Duration::from_millis(shared.options.wait_timeout_ms);
        let failures = engine.failure_count();
        loop {
            // Registered before the state is read, so a completion in between is not missed.
            let notified = state.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if shared.closed.load(Ordering::Acquire) {
                return Err(Error::Closed);
            }
            if engine.failure_count() != failures {
                // The fetch this call waited for failed: report it without starting another
                // (the next call retries the store), unless a fetch delivered meanwhile.
                return attempt(engine).ok_or_else(|| engine.exhausted_error(shared.origin.ms()));
            }
            shared.kick(state);
            if let Some(v) = attempt(engine) {
                if engine.wants_fetch() {
                    shared.kick(state);
                }
                return Ok(v);
            }
            if !engine.fetch_in_flight() {
                // The fetch may have completed since the kick without giving IDs (it failed
                // over to the next store, or got a range wholly below the others'): the
                // engine then wants the next fetch, and this call waits for that one.
                shared.kick(state);
                if engine.fetch_in_flight() {
                    continue;
                }
                // Nothing will arrive (a tag the store does not have waits for its retry
                // backoff): fail now, unless a fetch completed since the attempt.
                return attempt(engine).ok_or_else(|| engine.exhausted_error(shared.origin.ms()));
            }
            if timeout_at(deadline, notified).await.is_err() {
                return attempt(engine).ok_or_else(|| engine.exhausted_error(shared.origin.ms()));
            }
        }
    }
}
