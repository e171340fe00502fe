//! What the drivers call: async stores, registries and counters, and [`Blocking`], the
//! adapter that runs the core's synchronous ones on tokio's blocking pool.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use segflake::{Allocation, Registry, RegistryCall, SegmentStore, StoreFailure, Value};
use tokio::sync::Semaphore;

/// Where a [`SegmentGenerator`](crate::SegmentGenerator)'s ranges come from: the async
/// form of [`segflake::SegmentStore`], with the same contract (Leaf's).
///
/// `allocate` must atomically raise the tag's `max_id` by `step` (or by the step it
/// prefers, which it returns) and return the new `max_id`; the generator then owns
/// `[max_id - step, max_id)`. The generator checks every answer before issuing an ID of
/// it ([`segflake::Error::StoreContractViolation`]).
///
/// The driver calls the store from tasks it spawns, never from a caller's `next_id`, with
/// a deadline of `store_timeout_ms`: past it the future is dropped (so a query in flight
/// is cancelled the way your client cancels it) and the fetch counts as failed. At most
/// one call per tag is in flight, calls for different tags may run concurrently.
///
/// Implement the methods as `async fn` (the futures must be `Send`):
///
/// ```
/// use segflake::{Allocation, StoreFailure};
/// use segflake_tokio::AsyncSegmentStore;
///
/// struct Counter(tokio::sync::Mutex<u64>);
///
/// impl AsyncSegmentStore for Counter {
///     async fn allocate(&self, _tag: &str, step: u64) -> Result<Allocation, StoreFailure> {
///         let mut max_id = self.0.lock().await; // a database round trip in real life
///         *max_id += step;
///         Ok(Allocation::new(*max_id, step))
///     }
/// }
/// ```
pub trait AsyncSegmentStore: Send + Sync + 'static {
    /// Raises `tag`'s `max_id` by `step` and returns the new `max_id` and the step used;
    /// [`StoreFailure::UnknownTag`] when the store has no such tag.
    fn allocate(
        &self,
        tag: &str,
        step: u64,
    ) -> impl Future<Output = Result<Allocation, StoreFailure>> + Send;

    /// How many databases the store spans (Tinyid's multi-database mode); 1 by default.
    fn store_count(&self) -> usize {
        1
    }

    /// `allocate` on store `store` of [`store_count`](AsyncSegmentStore::store_count).
    fn allocate_from(
        &self,
        store: usize,
        tag: &str,
        step: u64,
    ) -> impl Future<Output = Result<Allocation, StoreFailure>> + Send {
        let _ = store;
        self.allocate(tag, step)
    }

    /// Lowers `tag`'s `max_id` from `expected_max_id` to `max_id` if, and only if, it is
    /// still `expected_max_id`, in one atomic step, and must be safe to run twice (see
    /// [`segflake::SegmentStore::give_back`]). Returns whether it did. The default gives
    /// nothing back.
    fn give_back(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
    ) -> impl Future<Output = Result<bool, StoreFailure>> + Send {
        let _ = (tag, expected_max_id, max_id);
        std::future::ready(Ok(false))
    }
}

/// A registry of worker-ID leases for a [`LeasedSnowflake`](crate::LeasedSnowflake): the
/// async form of [`segflake::Registry`]. It answers each [`RegistryCall`] (`claim`,
/// `renew`, `release`, `peers`; the contract is in [`segflake::lease`]) with a
/// [`Value`], or fails with a message.
///
/// The driver makes one call at a time per generator, each with a deadline of
/// `registry_timeout_ms`: past it the future is dropped and the call counts as failed (a
/// late answer is never applied).
pub trait AsyncRegistry: Send + Sync + 'static {
    /// Answers `call`.
    fn call(&self, call: &RegistryCall) -> impl Future<Output = Result<Value, String>> + Send;
}

/// One call of a shared serial counter: the core's [`segflake::CounterRequest`].
pub use segflake::CounterRequest;

/// A shared per-second counter for a [`SerialGenerator`](crate::SerialGenerator), such as
/// Redis running [`segflake::serial::counter::REDIS_SCRIPT`] on `request.key` with
/// `request.args`, or a plain `INCR`.
///
/// The answer is a plain count (a non-negative [`Value::Int`], as from `INCR`) or the
/// script's reply `[status, sequence, now_ms]`; the generator reads it with
/// [`segflake::SerialGenerator::counter_sequence`]. Each call has a deadline of
/// `counter_timeout_ms`.
pub trait AsyncSerialCounter: Send + Sync + 'static {
    /// Counts once in `request.unix_second`.
    fn count(&self, request: &CounterRequest)
        -> impl Future<Output = Result<Value, String>> + Send;
}

/// An [`AsyncSerialCounter`] made from an async closure taking the request by value:
/// `FnCounter(|request: CounterRequest| async move { Ok(Value::uint(n)) })`.
#[derive(Debug, Clone, Copy)]
pub struct FnCounter<F>(pub F);

impl<F, Fut> AsyncSerialCounter for FnCounter<F>
where
    F: Fn(CounterRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, String>> + Send,
{
    fn count(
        &self,
        request: &CounterRequest,
    ) -> impl Future<Output = Result<Value, String>> + Send {
        (self.0)(request.clone())
    }
}

/// A synchronous store, registry or counter run on tokio's blocking pool
/// ([`tokio::task::spawn_blocking`]), so that it never blocks a runtime thread:
/// `Blocking::new(segflake::MemoryStore::new())`, `Blocking::new(FileStore::open(…)?)`,
/// `Blocking::new(MemoryRegistry::new())`, or any blocking database adapter.
///
/// * As an [`AsyncSegmentStore`] it forwards every method of [`SegmentStore`].
/// * As an [`AsyncRegistry`] it forwards [`Registry::call`], one call at a time: a call
///   that outlived the driver's deadline keeps its blocking thread until it returns, and
///   the next call through the same `Blocking` waits for it (within its own deadline), so
///   calls never overlap, as with the std driver.
/// * As an [`AsyncSerialCounter`] it calls a closure
///   `Fn(&CounterRequest) -> Result<Value, String>`.
///
/// A call whose deadline passed is abandoned, not stopped: its thread finishes on its own
/// and its answer is discarded.
///
/// A shared trait object works too: `Blocking::from_arc(registry)` with the
/// `Arc<dyn Registry>` that `segflake_backends::registry(url, …)` returns, or an
/// `Arc<dyn SegmentStore>`.
pub struct Blocking<T: ?Sized> {
    inner: Arc<T>,
    /// One permit: registry calls through this adapter never overlap.
    serial: Arc<Semaphore>,
}

impl<T> Blocking<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Blocking<T> {
        Blocking::from_arc(Arc::new(inner))
    }
}

impl<T: ?Sized> Blocking<T> {
    /// Wraps a shared `inner` (keep a clone to inspect it, e.g. a `MemoryRegistry`).
    pub fn from_arc(inner: Arc<T>) -> Blocking<T> {
        Blocking {
            inner,
            serial: Arc::new(Semaphore::new(1)),
        }
    }

    /// The wrapped value.
    pub fn get(&self) -> &Arc<T> {
        &self.inner
    }
}

impl<T: ?Sized> Clone for Blocking<T> {
    /// A clone shares the value and the one-call-at-a-time rule.
    fn clone(&self) -> Self {
        Blocking {
            inner: Arc::clone(&self.inner),
            serial: Arc::clone(&self.serial),
        }
    }
}

impl<T: ?Sized> std::fmt::Debug for Blocking<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blocking")
            .field("type", &std::any::type_name::<T>())
            .finish_non_exhaustive()
    }
}

/// `f(inner)` on the blocking pool; a panic or a runtime shutting down becomes `failed`'s
/// message.
async fn on_pool<T, R, E>(
    inner: &Arc<T>,
    f: impl FnOnce(&T) -> Result<R, E> + Send + 'static,
    failed: impl FnOnce(String) -> E,
) -> Result<R, E>
where
    T: Send + Sync + ?Sized + 'static,
    R: Send + 'static,
    E: Send + 'static,
{
    let inner = Arc::clone(inner);
    match tokio::task::spawn_blocking(move || f(&inner)).await {
        Ok(result) => result,
        Err(e) => Err(failed(join_error_text(e))),
    }
}

pub(crate) fn join_error_text(e: tokio::task::JoinError) -> String {
    if e.is_panic() {
        let panic = e.into_panic();
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-string payload".to_string());
        format!("the call panicked: {what}")
    } else {
        "the call was cancelled (the runtime is shutting down)".to_string()
    }
}

impl<T: SegmentStore + ?Sized + 'static> AsyncSegmentStore for Blocking<T> {
    fn allocate(
        &self,
        tag: &str,
        step: u64,
    ) -> impl Future<Output = Result<Allocation, StoreFailure>> + Send {
        let tag = tag.to_owned();
        on_pool(
            &self.inner,
            move |s| s.allocate(&tag, step),
            StoreFailure::Failed,
        )
    }

    fn store_count(&self) -> usize {
        self.inner.store_count()
    }

    fn allocate_from(
        &self,
        store: usize,
        tag: &str,
        step: u64,
    ) -> impl Future<Output = Result<Allocation, StoreFailure>> + Send {
        let tag = tag.to_owned();
        on_pool(
            &self.inner,
            move |s| s.allocate_from(store, &tag, step),
            StoreFailure::Failed,
        )
    }

    fn give_back(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
    ) -> impl Future<Output = Result<bool, StoreFailure>> + Send {
        let tag = tag.to_owned();
        on_pool(
            &self.inner,
            move |s| s.give_back(&tag, expected_max_id, max_id),
            StoreFailure::Failed,
        )
    }
}

impl<T: Registry + ?Sized + 'static> AsyncRegistry for Blocking<T> {
    fn call(&self, call: &RegistryCall) -> impl Future<Output = Result<Value, String>> + Send {
        let call = call.clone();
        let inner = Arc::clone(&self.inner);
        let serial = Arc::clone(&self.serial);
        async move {
            // The permit goes into the blocking call and is returned when it returns, even
            // if this future was dropped at its deadline meanwhile.
            let permit = serial
                .acquire_owned()
                .await
                .map_err(|_| "the registry adapter is closed".to_string())?;
            on_pool(
                &inner,
                move |r| {
                    let answer = r.call(&call);
                    drop(permit);
                    answer
                },
                |m| m,
            )
            .await
        }
    }
}

impl<F> AsyncSerialCounter for Blocking<F>
where
    F: Fn(&CounterRequest) -> Result<Value, String> + Send + Sync + 'static,
{
    fn count(
        &self,
        request: &CounterRequest,
    ) -> impl Future<Output = Result<Value, String>> + Send {
        let request = request.clone();
        on_pool(&self.inner, move |f| f(&request), |m| m)
    }
}

macro_rules! forward_async {
    ($($ptr:ty),*) => {$(
        impl<S: AsyncSegmentStore + ?Sized> AsyncSegmentStore for $ptr {
            fn allocate(
                &self,
                tag: &str,
                step: u64,
            ) -> impl Future<Output = Result<Allocation, StoreFailure>> + Send {
                (**self).allocate(tag, step)
            }
            fn store_count(&self) -> usize {
                (**self).store_count()
            }
            fn allocate_from(
                &self,
                store: usize,
                tag: &str,
                step: u64,
            ) -> impl Future<Output = Result<Allocation, StoreFailure>> + Send {
                (**self).allocate_from(store, tag, step)
            }
            fn give_back(
                &self,
                tag: &str,
                expected_max_id: u64,
                max_id: u64,
            ) -> impl Future<Output = Result<bool, StoreFailure>> + Send {
                (**self).give_back(tag, expected_max_id, max_id)
            }
        }

        impl<S: AsyncRegistry + ?Sized> AsyncRegistry for $ptr {
            fn call(
                &self,
                call: &RegistryCall,
            ) -> impl Future<Output = Result<Value, String>> + Send {
                (**self).call(call)
            }
        }

        impl<S: AsyncSerialCounter + ?Sized> AsyncSerialCounter for $ptr {
            fn count(
                &self,
                request: &CounterRequest,
            ) -> impl Future<Output = Result<Value, String>> + Send {
                (**self).count(request)
            }
        }
    )*};
}

forward_async!(Arc<S>, Box<S>);

// The drivers are not generic over their store, registry or counter: they keep it behind
// these object-safe forms, which box the future of each call. A call is a network round
// trip made once per segment, per renewal or per serial, never on the hot path, so one
// allocation per call costs nothing measurable, and users get plain `SegmentGenerator`
// and `LeasedSnowflake` types.

pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub(crate) trait DynStore: Send + Sync + 'static {
    fn dyn_store_count(&self) -> usize;
    fn dyn_allocate_from<'a>(
        &'a self,
        store: usize,
        tag: &'a str,
        step: u64,
    ) -> BoxFuture<'a, Result<Allocation, StoreFailure>>;
    fn dyn_give_back<'a>(
        &'a self,
        tag: &'a str,
        expected_max_id: u64,
        max_id: u64,
    ) -> BoxFuture<'a, Result<bool, StoreFailure>>;
}

impl<S: AsyncSegmentStore> DynStore for S {
    fn dyn_store_count(&self) -> usize {
        AsyncSegmentStore::store_count(self)
    }
    fn dyn_allocate_from<'a>(
        &'a self,
        store: usize,
        tag: &'a str,
        step: u64,
    ) -> BoxFuture<'a, Result<Allocation, StoreFailure>> {
        Box::pin(AsyncSegmentStore::allocate_from(self, store, tag, step))
    }
    fn dyn_give_back<'a>(
        &'a self,
        tag: &'a str,
        expected_max_id: u64,
        max_id: u64,
    ) -> BoxFuture<'a, Result<bool, StoreFailure>> {
        Box::pin(AsyncSegmentStore::give_back(
            self,
            tag,
            expected_max_id,
            max_id,
        ))
    }
}

pub(crate) trait DynRegistry: Send + Sync + 'static {
    fn dyn_call<'a>(&'a self, call: &'a RegistryCall) -> BoxFuture<'a, Result<Value, String>>;
}

impl<R: AsyncRegistry> DynRegistry for R {
    fn dyn_call<'a>(&'a self, call: &'a RegistryCall) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(AsyncRegistry::call(self, call))
    }
}

pub(crate) trait DynCounter: Send + Sync + 'static {
    fn dyn_count<'a>(&'a self, request: &'a CounterRequest)
        -> BoxFuture<'a, Result<Value, String>>;
}

impl<K: AsyncSerialCounter> DynCounter for K {
    fn dyn_count<'a>(
        &'a self,
        request: &'a CounterRequest,
    ) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(AsyncSerialCounter::count(self, request))
    }
}
