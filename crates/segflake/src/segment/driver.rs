//! The std driver: [`SegmentGenerator`] runs [`SegmentEngine`]s with background fetch
//! threads over a [`SegmentStore`].

use std::collections::{HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{
    check_tag, FetchRequest, GiveBack, SegmentEngine, SegmentOptions, SegmentStats, SegmentStore,
};
use crate::error::{quoted, Error, Result};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct TagState {
    engine: SegmentEngine,
    /// Waiters sleep on `cv` under `gate`; fetch threads notify after each completion.
    gate: Mutex<()>,
    cv: Condvar,
}

/// FNV-1a: tags are short and trusted by the host, so a fast non-keyed hash suits the
/// per-call lookup of `next_id(tag)`.
#[derive(Default, Clone, Copy)]
struct Fnv;

struct FnvHasher(u64);

impl std::hash::BuildHasher for Fnv {
    type Hasher = FnvHasher;
    fn build_hasher(&self) -> FnvHasher {
        FnvHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for FnvHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

struct Queue {
    jobs: VecDeque<(Arc<TagState>, FetchRequest)>,
    closed: bool,
}

struct Shared {
    store: Box<dyn SegmentStore>,
    options: SegmentOptions,
    origin: Instant,
    tags: RwLock<HashMap<Box<str>, Arc<TagState>, Fnv>>,
    queue: Mutex<Queue>,
    queue_cv: Condvar,
    closed: AtomicBool,
    workers: Mutex<Vec<JoinHandle<()>>>,
    /// Workers to retire: one is added for each worker started in place of one stuck in a
    /// store call past `store_timeout_ms`, so the count returns to `fetch_threads`.
    surplus: AtomicUsize,
}

impl Shared {
    /// Monotonic milliseconds since the generator started (the engines' time base).
    fn now_ms(&self) -> u64 {
        self.origin.elapsed().as_millis() as u64
    }

    fn kick(&self, state: &Arc<TagState>) {
        if let Some(req) = state.engine.begin_fetch(self.now_ms()) {
            let mut q = lock(&self.queue);
            if q.closed {
                return;
            }
            q.jobs.push_back((Arc::clone(state), req));
            drop(q);
            self.queue_cv.notify_one();
        }
    }

    fn spawn_worker(self: &Arc<Self>) -> Result<()> {
        let sh = Arc::clone(self);
        let handle = std::thread::Builder::new()
            .name("segflake-fetch".into())
            .spawn(move || sh.work())
            .map_err(|e| Error::Store {
                message: format!("cannot start a segment fetch thread: {e}"),
            })?;
        lock(&self.workers).push(handle);
        Ok(())
    }

    /// Fails `state`'s store call if it outlived `store_timeout_ms`, and starts a worker in
    /// place of the one inside that call, so other fetches do not wait behind it.
    fn expire(self: &Arc<Self>, state: &Arc<TagState>) {
        if state.engine.expire_overdue_fetch(self.now_ms()) {
            if self.spawn_worker().is_ok() {
                self.surplus.fetch_add(1, Ordering::AcqRel);
            }
            // The caller may hold the gate; other waiters wake by their timed waits at worst.
            state.cv.notify_all();
        }
    }

    /// Whether this worker, back from a store call, should stop: a worker was started in
    /// place of one stuck in a store call, and this one (that one or another) makes the
    /// count `fetch_threads` again.
    fn retire(&self) -> bool {
        self.surplus
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }

    fn work(&self) {
        loop {
            let job = {
                let mut q = lock(&self.queue);
                loop {
                    if q.closed {
                        break None;
                    }
                    if let Some(job) = q.jobs.pop_front() {
                        break Some(job);
                    }
                    q = self.queue_cv.wait(q).unwrap_or_else(|e| e.into_inner());
                }
            };
            let Some((state, req)) = job else { return };
            // No lock of ours is held during the store call.
            let result = catch_unwind(AssertUnwindSafe(|| {
                self.store
                    .allocate_from(req.store, state.engine.tag(), req.step)
            }))
            .unwrap_or_else(|panic| {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a non-string payload".to_string());
                Err(format!("the store panicked: {what}").into())
            });
            let _ = state
                .engine
                .complete_fetch_from(self.now_ms(), req.store, result);
            {
                let _gate = lock(&state.gate);
                state.cv.notify_all();
            }
            if self.retire() {
                return;
            }
        }
    }
}

/// The std segment generator: per-tag [`SegmentEngine`]s fed by background threads that
/// call a [`SegmentStore`]. `Send + Sync`; share it by reference or `Arc`. See the
/// [module documentation](super) for the guarantees.
pub struct SegmentGenerator {
    shared: Arc<Shared>,
    pid: u32,
}

impl std::fmt::Debug for SegmentGenerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentGenerator")
            .field("options", &self.shared.options)
            .field("closed", &self.shared.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// A handle on one tag of a [`SegmentGenerator`]: the hot path without the tag lookup.
/// Cheap to clone, `Send + Sync`. It fails with [`Error::Closed`] once the generator is
/// closed or dropped.
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
    /// Starts a generator over `store` with `options.fetch_threads` background threads.
    ///
    /// Errors: [`Error::InvalidArgument`] for bad options; [`Error::Store`] if a thread
    /// cannot be spawned.
    pub fn new(store: impl SegmentStore + 'static, options: SegmentOptions) -> Result<Self> {
        options.validate()?;
        let shared = Arc::new(Shared {
            store: Box::new(store),
            origin: Instant::now(),
            tags: RwLock::new(HashMap::default()),
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                closed: false,
            }),
            queue_cv: Condvar::new(),
            closed: AtomicBool::new(false),
            workers: Mutex::new(Vec::new()),
            surplus: AtomicUsize::new(0),
            options,
        });
        let generator = SegmentGenerator {
            shared: Arc::clone(&shared),
            pid: crate::fork::process_id(),
        };
        for _ in 0..shared.options.fetch_threads {
            shared.spawn_worker()?;
        }
        Ok(generator)
    }

    /// The options the generator runs with.
    pub fn options(&self) -> &SegmentOptions {
        &self.shared.options
    }

    /// A handle on `tag`, creating the tag's engine (and starting its first fetch) on first
    /// use. Errors: [`Error::InvalidArgument`] for a malformed tag, [`Error::Closed`].
    pub fn tag(&self, tag: &str) -> Result<TagHandle> {
        if self.shared.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if let Some(state) = self
            .shared
            .tags
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(tag)
        {
            return Ok(self.handle(Arc::clone(state)));
        }
        check_tag(tag)?;
        let state = {
            let mut tags = self.shared.tags.write().unwrap_or_else(|e| e.into_inner());
            match tags.get(tag) {
                Some(s) => Arc::clone(s),
                None => {
                    let s = Arc::new(TagState {
                        engine: SegmentEngine::with_stores(
                            tag,
                            &self.shared.options,
                            self.shared.store.store_count(),
                        )?,
                        gate: Mutex::new(()),
                        cv: Condvar::new(),
                    });
                    tags.insert(tag.into(), Arc::clone(&s));
                    s
                }
            }
        };
        self.shared.kick(&state);
        Ok(self.handle(state))
    }

    /// Stops serving `tag` while the generator goes on with the others (a service whose
    /// configuration dropped the key), and hands the tag's fetched but unissued IDs back to
    /// the store as [`close`](SegmentGenerator::close) does for every tag.
    ///
    /// * From the call on, every handle on the tag fails with [`Error::Closed`], and no ID
    ///   the give back covers can be issued by them (even by a take that raced with it).
    /// * A fetch in flight is waited for (at most `store_timeout_ms`), so its range is
    ///   offered too; one still running then is accepted later and never issued (a gap).
    /// * A later [`tag`](SegmentGenerator::tag) of the same name starts a fresh engine
    ///   whose ranges the store allocates anew (from the lowered `max_id` if the give back
    ///   was taken, else above).
    ///
    /// Returns what was offered and whether the store took it (`None`: the tag was not
    /// in use, or nothing was left to give back). Blocks on the store: call it off any
    /// latency-sensitive thread.
    pub fn retire(&self, tag: &str) -> Option<(GiveBack, bool)> {
        let state = self
            .shared
            .tags
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tag)?;
        state.engine.close();
        {
            let _gate = lock(&state.gate);
            state.cv.notify_all();
        }
        let deadline = Instant::now() + Duration::from_millis(self.shared.options.store_timeout_ms);
        while state.engine.fetch_in_flight() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let offer = state.engine.take_give_back()?;
        // A store that cannot take them back leaves a gap, nothing worse.
        let taken = self
            .shared
            .store
            .give_back(tag, offer.expected_max_id, offer.max_id)
            .unwrap_or(false);
        Some((offer, taken))
    }

    fn handle(&self, state: Arc<TagState>) -> TagHandle {
        TagHandle {
            shared: Arc::clone(&self.shared),
            state,
        }
    }

    /// The next ID of `tag` (see [`TagHandle::next_id`]). Looks the tag up on every call;
    /// hold a [`TagHandle`] on hot paths.
    pub fn next_id(&self, tag: &str) -> Result<u64> {
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
        self.tag(tag)?.next_id()
    }

    /// Fills `out` with IDs of `tag` (see [`TagHandle::next_ids`]).
    pub fn next_ids(&self, tag: &str, out: &mut [u64]) -> Result<()> {
        self.tag(tag)?.next_ids(out)
    }

    /// An ID of `tag` if one is ready now, without waiting (see [`TagHandle::try_next_id`]).
    pub fn try_next_id(&self, tag: &str) -> Result<Option<u64>> {
        self.tag(tag)?.try_next_id()
    }

    /// A snapshot of `tag`'s state. Errors: [`Error::InvalidArgument`] if this generator
    /// has not used the tag.
    pub fn stats(&self, tag: &str) -> Result<SegmentStats> {
        let tags = self.shared.tags.read().unwrap_or_else(|e| e.into_inner());
        match tags.get(tag) {
            Some(state) => Ok(state.engine.stats(self.shared.now_ms())),
            None => Err(Error::invalid_argument(
                "tag",
                format!(
                    "{tag} has not been used by this generator; known tags: [{}]",
                    {
                        let mut names: Vec<&str> = tags.keys().map(|k| &**k).collect();
                        names.sort_unstable();
                        let names: Vec<String> =
                            names.iter().map(|n| quoted(n).to_string()).collect();
                        names.join(", ")
                    },
                    tag = quoted(tag)
                ),
            )),
        }
    }

    /// The tags this generator has used, sorted.
    pub fn tags(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .shared
            .tags
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .map(|k| k.to_string())
            .collect();
        names.sort_unstable();
        names
    }

    /// Whether the generator is closed.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    /// Closes the generator: waiting callers get [`Error::Closed`], later calls too, and the
    /// fetch threads stop after their current store call. Waits for them up to
    /// `wait_timeout_ms` (at least 1 s), then leaves any thread still inside a hung store
    /// call to finish on its own. With `give_back` (the default), then hands each tag's
    /// fetched but unissued IDs back to the store ([`SegmentEngine::take_give_back`],
    /// [`SegmentStore::give_back`]), waiting at most `store_timeout_ms` for the store.
    /// Idempotent. In a child process after `fork()` it does nothing (the threads and locks
    /// it would touch belong to the parent).
    pub fn close(&self) {
        if crate::fork::process_id() != self.pid {
            return;
        }
        if self.shared.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let states: Vec<Arc<TagState>> = self
            .shared
            .tags
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        for state in &states {
            state.engine.close();
            let _gate = lock(&state.gate);
            state.cv.notify_all();
        }
        let dropped: Vec<_> = {
            let mut q = lock(&self.shared.queue);
            q.closed = true;
            q.jobs.drain(..).collect()
        };
        self.shared.queue_cv.notify_all();
        // A fetch begun but never handed to a thread ends here, so that the engine knows no
        // range is on its way (and can offer what it holds back to the store).
        for (state, req) in dropped {
            let _ = state.engine.complete_fetch_from(
                self.shared.now_ms(),
                req.store,
                Err("the generator closed before the store was called".into()),
            );
        }
        let workers: Vec<JoinHandle<()>> = std::mem::take(&mut *lock(&self.shared.workers));
        let patience = Duration::from_millis(self.shared.options.wait_timeout_ms.max(1000));
        let deadline = Instant::now() + patience;
        while workers.iter().any(|w| !w.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        for w in workers {
            if w.is_finished() {
                let _ = w.join();
            }
        }
        let offers: Vec<(Box<str>, GiveBack)> = states
            .iter()
            .filter_map(|s| Some((s.engine.tag().into(), s.engine.take_give_back()?)))
            .collect();
        if offers.is_empty() {
            return;
        }
        let shared = Arc::clone(&self.shared);
        let giving = std::thread::Builder::new()
            .name("segflake-give-back".into())
            .spawn(move || {
                for (tag, offer) in offers {
                    // A store that cannot take them back leaves a gap, nothing worse.
                    let _ = shared
                        .store
                        .give_back(&tag, offer.expected_max_id, offer.max_id);
                }
            });
        if let Ok(giving) = giving {
            let deadline =
                Instant::now() + Duration::from_millis(self.shared.options.store_timeout_ms);
            while !giving.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            if giving.is_finished() {
                let _ = giving.join();
            }
        }
    }
}

impl Drop for SegmentGenerator {
    fn drop(&mut self) {
        self.close();
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

    /// The next ID. Lock-free while a segment is ready; otherwise waits for the fetch at
    /// most `wait_timeout_ms`, then fails with [`Error::SegmentsExhausted`] (at once if the
    /// fetch it waited for failed). [`Error::Closed`] after `close`.
    #[inline]
    pub fn next_id(&self) -> Result<u64> {
        let engine = &self.state.engine;
        if let Some(id) = engine.try_next() {
            if engine.wants_fetch() {
                self.shared.kick(&self.state);
            }
            return Ok(id);
        }
        self.wait_for(|e| e.try_next())
    }

    /// An ID if one is ready now (`Ok(None)` otherwise; a fetch is started if needed).
    /// Never waits. [`Error::Closed`] after `close`.
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
    /// unique but the batch is incomplete.
    pub fn next_ids(&self, out: &mut [u64]) -> Result<()> {
        let engine = &self.state.engine;
        let mut filled = engine.try_next_batch(out);
        if engine.wants_fetch() {
            self.shared.kick(&self.state);
        }
        while filled < out.len() {
            let rest = &mut out[filled..];
            filled += self.wait_for(|e| match e.try_next_batch(rest) {
                0 => None,
                n => Some(n),
            })?;
        }
        Ok(())
    }

    /// `n` IDs in a new vector. Errors: [`Error::InvalidArgument`] for `n` of 0 or above
    /// [`MAX_BATCH`](crate::MAX_BATCH), and those of [`next_ids`](TagHandle::next_ids).
    pub fn next_ids_vec(&self, n: usize) -> Result<Vec<u64>> {
        crate::check_batch_size(n)?;
        let mut v = vec![0; n];
        self.next_ids(&mut v)?;
        Ok(v)
    }

    /// Starts a fetch if the engine wants one (for callers that take IDs through
    /// [`engine`](TagHandle::engine) directly). Never waits.
    pub fn poll_fetch(&self) {
        if self.state.engine.wants_fetch() {
            self.shared.kick(&self.state);
        }
    }

    /// A snapshot of the tag's state.
    pub fn stats(&self) -> SegmentStats {
        self.state.engine.stats(self.shared.now_ms())
    }

    #[cold]
    fn wait_for<T>(&self, mut attempt: impl FnMut(&SegmentEngine) -> Option<T>) -> Result<T> {
        let shared = &self.shared;
        let state = &self.state;
        let engine = &state.engine;
        let timeout = Duration::from_millis(shared.options.wait_timeout_ms);
        let deadline = Instant::now() + timeout;
        let failures = engine.failure_count();
        let mut gate = lock(&state.gate);
        loop {
            if shared.closed.load(Ordering::Acquire) {
                return Err(Error::Closed);
            }
            shared.expire(state);
            if engine.failure_count() != failures {
                // The fetch this call waited for failed: report it without starting another
                // (the next call retries the store), unless a fetch delivered meanwhile.
                return attempt(engine).ok_or_else(|| engine.exhausted_error(shared.now_ms()));
            }
            shared.kick(state);
            if let Some(v) = attempt(engine) {
                drop(gate);
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
                return attempt(engine).ok_or_else(|| engine.exhausted_error(shared.now_ms()));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(engine.exhausted_error(shared.now_ms()));
            }
            // Wake when the store call in flight reaches its timeout, to expire it.
            let wake = engine
                .fetch_deadline_ms()
                .map(|ms| shared.origin + Duration::from_millis(ms + 1))
                .filter(|&at| at < deadline)
                .unwrap_or(deadline);
            gate = state
                .cv
                .wait_timeout(gate, wake.saturating_duration_since(now))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}
