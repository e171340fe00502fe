//! The Leaf-compatible segment generator with the store as a C callback.

use crate::error::{
    boundary, boundary_void, invalid, segflake_status, FfiResult, SEGFLAKE_OK, SEGFLAKE_UNKNOWN_TAG,
};
use crate::options::{configure_pairs, configured, record, segflake_options, segflake_record};
use crate::ptr::*;
use segflake_core::fork::Origin;
use segflake_core::segment::{
    Allocation, SegmentEngine, SegmentGenerator, SegmentOptions, SegmentStats, SegmentStore,
    StoreFailure, TagHandle,
};
use segflake_core::Value;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Capacity of the message buffer a store or counter callback may write its error into
/// (including the terminating NUL). Longer messages are cut at the buffer's end.
pub const SEGFLAKE_CALLBACK_ERROR_LEN: usize = 1024;
/// Capacity of `segflake_segment_stats.last_error` (including the terminating NUL).
pub const SEGFLAKE_STATS_ERROR_LEN: usize = 256;

/// What a store hands out: the tag's new `max_id` and the step it used. The caller then
/// owns `[max_id - step, max_id)`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct segflake_allocation {
    pub max_id: u64,
    pub step: u64,
}

/// The store's `allocate(tag, step)`, Leaf's contract: atomically perform
/// `max_id = max_id + step` for `tag` (a NUL-terminated UTF-8 string) and write the new
/// `max_id` and the step used into `*out`; return `SEGFLAKE_OK`.
///
/// On failure return any other status and, optionally, write a NUL-terminated message of at
/// most `error_capacity` bytes (including the NUL) into `error_buf`; the library copies it
/// and reports it as the cause of `SEGFLAKE_SEGMENTS_EXHAUSTED`. Return
/// `SEGFLAKE_UNKNOWN_TAG` for a tag the store does not have: callers then get
/// `SEGFLAKE_UNKNOWN_TAG`, and the store is asked again no sooner than `retry_backoff_ms`.
/// `tag`, `out` and `error_buf` are valid only during the call.
///
/// Threads: called from the generator's background fetch threads, never from the thread
/// that asked for an ID and never with a library lock held. With `fetch_threads > 1` it is
/// called concurrently for different tags, so it must be thread-safe.
///
/// A range that overlaps or precedes one received before for the tag, a step of 0, or a
/// `max_id` below the step or above INT64_MAX is refused (`SEGFLAKE_STORE_CONTRACT_VIOLATION`
/// as the cause) and none of its IDs is issued.
pub type segflake_store_allocate_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        tag: *const c_char,
        step: u64,
        out: *mut segflake_allocation,
        error_buf: *mut c_char,
        error_capacity: usize,
    ) -> segflake_status,
>;

/// Optional store capability (see `segflake_segment_store_ext`): sets the tag's `max_id` to
/// `max_id` if, and only if, it is still `expected_max_id` (nobody allocated since), in one
/// atomic step, and sets `*given_back` to whether it did. The IDs `[max_id,
/// expected_max_id)` were fetched by a generator that is closing without issuing them.
/// Called from the thread that closes (or frees) the generator. Return `SEGFLAKE_OK`, or an
/// error status with a message in `error_buf` (the IDs are then simply not given back).
/// It must be safe to run twice: a request resent after a lost reply (by a driver, a pool,
/// a proxy) must not lower `max_id` again after others re-allocated the range, which would
/// hand those IDs out twice. A bare SQL compare-and-set (`UPDATE leaf_alloc SET max_id = ?
/// WHERE biz_tag = ? AND max_id = ?`) is not; use a token made for each give back, as the
/// SQL and Redis stores do (the core's `give_back_intent` and `give_back` statements:
/// docs/segments.md).
pub type segflake_store_give_back_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        tag: *const c_char,
        expected_max_id: u64,
        max_id: u64,
        given_back: *mut bool,
        error_buf: *mut c_char,
        error_capacity: usize,
    ) -> segflake_status,
>;

/// Called once with `ctx` when the library no longer needs the store: after
/// `segflake_segment_generator_free`, possibly later and from a background thread if a
/// store call was still running (hung) when the generator was freed.
pub type segflake_release_fn = Option<unsafe extern "C" fn(ctx: *mut c_void)>;

/// A store given to `segflake_segment_generator_new` or `_new_with`. The library copies
/// this struct.
///
/// Frozen: this layout never changes (no field is ever added), so it needs no size or
/// version field. A store capability added later comes as a new struct and a new
/// constructor taking it, next to this one.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct segflake_segment_store {
    /// Required.
    pub allocate: segflake_store_allocate_fn,
    /// Passed to `allocate` and `release`; owned by the caller.
    pub ctx: *mut c_void,
    /// Optional (may be NULL): releases `ctx` when the library is done with it.
    pub release: segflake_release_fn,
}

/// A store with the capabilities added after `segflake_segment_store`, for
/// `segflake_segment_generator_new_ext`. The library copies this struct.
///
/// Growable: set `size` to `sizeof(segflake_segment_store_ext)`; fields added in later
/// versions go at the end, and the library reads only the fields `size` covers.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct segflake_segment_store_ext {
    /// `sizeof(segflake_segment_store_ext)` as the caller was compiled.
    pub size: usize,
    /// `allocate` (required), `ctx`, `release`: as in `segflake_segment_store`.
    pub store: segflake_segment_store,
    /// Optional (may be NULL): gives unissued IDs back on close (the `give_back` option,
    /// default true). Without it a closing generator's unissued IDs are skipped.
    pub give_back: segflake_store_give_back_fn,
}

/// Deprecated (frozen 0.1 layout: a field added here would change its size; it lacks
/// `store_timeout_ms`, which keeps its default. Use `segflake_options_new("segment")` and
/// `segflake_segment_generator_new_with`): settings of a segment generator. Initialise with
/// `segflake_segment_options_init`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct segflake_segment_options {
    /// Step of the first requests and floor of the dynamic step: `1..=max_step`
    /// (default 1000).
    pub step: u64,
    /// Ceiling of the dynamic step: `step..=INT64_MAX` (default 1000000, like Leaf).
    pub max_step: u64,
    /// Leaf's dynamic step (default true): a segment that lasted under 15 minutes doubles
    /// the step, over 30 minutes halves it.
    pub dynamic_step: bool,
    /// Fetch the next segment once this percentage of the current one is used: `0..=100`
    /// (default 10).
    pub prefetch_percent: u32,
    /// After a failed prefetch, retry no sooner than this while IDs remain (default 1000;
    /// at most 3600000).
    pub retry_backoff_ms: u64,
    /// How long a caller waits for a segment before `SEGFLAKE_SEGMENTS_EXHAUSTED`:
    /// `1..=3600000` ms (default 1000).
    pub wait_timeout_ms: u64,
    /// Background threads calling the store: `1..=64` (default 1).
    pub fetch_threads: u32,
}

/// Deprecated (frozen 0.1 layout; `segflake_segment_get_stats_record` reads every field,
/// including later ones, by name): a snapshot of one tag (`segflake_segment_get_stats`).
/// Ranges are half-open `[start, end)`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct segflake_segment_stats {
    /// The current segment (`current_start == current_end` when there is none yet).
    pub current_start: u64,
    pub current_end: u64,
    /// The next ID the current segment would issue (`current_end` when it is used up).
    pub position: u64,
    /// IDs left in the current segment.
    pub remaining: u64,
    /// Whether the next segment is ready, and its range (0, 0 when not).
    pub next_ready: bool,
    pub next_start: u64,
    pub next_end: u64,
    /// The step of the fetch in flight, or of the last request.
    pub step: u64,
    pub fetch_in_flight: bool,
    /// Completed fetches (successful or not), failures among them, failures in a row.
    pub fetches: u64,
    pub failures: u64,
    pub consecutive_failures: u64,
    /// How long the last completed fetch took (when `has_last_fetch_latency`).
    pub has_last_fetch_latency: bool,
    pub last_fetch_latency_ms: u64,
    /// IDs taken from this tag's segments so far.
    pub issued: u64,
    /// Recent consumption rate.
    pub ids_per_second: f64,
    /// Seconds the buffered IDs would last at `ids_per_second` if the store went down now
    /// (when `has_runway`; false while nothing is being consumed).
    pub has_runway: bool,
    pub runway_seconds: f64,
    /// The last failure (store error or refused range), NUL-terminated, cut to fit.
    pub has_last_error: bool,
    pub last_error: [c_char; SEGFLAKE_STATS_ERROR_LEN],
}

/// A segment generator: an opaque handle made by `segflake_segment_generator_new`,
/// released with `segflake_segment_generator_free`. Safe to share between threads.
pub struct segflake_segment_generator {
    inner: SegmentGenerator,
    origin: Origin,
}

issuer!(segflake_segment_generator, "generator", "segment generator");

/// A handle on one tag of a segment generator (`segflake_segment_tag_new`): the hot path
/// without the tag lookup. Released with `segflake_segment_tag_free`; it may outlive its
/// generator, and then fails with `SEGFLAKE_CLOSED`. Safe to share between threads.
pub struct segflake_segment_tag {
    inner: TagHandle,
    origin: Origin,
}

issuer!(segflake_segment_tag, "tag", "segment tag handle");

/// The C store: calls the function pointer, copies the message, releases `ctx` on drop.
struct CStore {
    store: segflake_segment_store,
    give_back: segflake_store_give_back_fn,
    /// Set once the generator exists: a failed `new` does not release the caller's context.
    armed: Arc<AtomicBool>,
}

// SAFETY: the header requires the callback and its context to be usable from the
// library's background threads (and concurrently with fetch_threads > 1).
unsafe impl Send for CStore {}
// SAFETY: as above.
unsafe impl Sync for CStore {}

/// Runs a store or counter callback with an error buffer: its failure is the message it
/// wrote, or one naming the status it returned.
pub(crate) fn call_back(
    what: &str,
    call: impl FnOnce(*mut c_char, usize) -> segflake_status,
) -> Result<(), String> {
    let mut buf = [0u8; SEGFLAKE_CALLBACK_ERROR_LEN];
    let status = call(buf.as_mut_ptr().cast(), buf.len() - 1);
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let code = || unsafe { CStr::from_ptr(crate::error::segflake_status_code(status)) };
    match String::from_utf8_lossy(&buf[..end]).into_owned() {
        _ if status == SEGFLAKE_OK => Ok(()),
        m if m.is_empty() => Err(format!(
            "the {what} callback returned status {status} ({}) without a message",
            code().to_string_lossy()
        )),
        message => Err(message),
    }
}

impl SegmentStore for CStore {
    fn allocate(&self, tag: &str, step: u64) -> Result<Allocation, StoreFailure> {
        let tag_c =
            std::ffi::CString::new(tag).map_err(|_| format!("tag {tag:?} contains a NUL byte"))?;
        let mut out = segflake_allocation { max_id: 0, step: 0 };
        let allocate = self
            .store
            .allocate
            .ok_or("the store has no allocate function")?;
        let mut status = SEGFLAKE_OK;
        // SAFETY: the caller registered this function and context for this purpose; every
        // pointer passed is valid for the duration of the call.
        call_back("store", |buf, capacity| unsafe {
            status = allocate(
                self.store.ctx,
                tag_c.as_ptr(),
                step,
                &mut out,
                buf,
                capacity,
            );
            status
        })
        .map_err(|message| match status {
            SEGFLAKE_UNKNOWN_TAG => StoreFailure::UnknownTag,
            _ => StoreFailure::Failed(message),
        })?;
        Ok(Allocation::new(out.max_id, out.step))
    }

    fn give_back(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
    ) -> Result<bool, StoreFailure> {
        let Some(give_back) = self.give_back else {
            // The library's own file store (segflake_file_store_new) can always give back.
            if !live_file_stores().contains(&(self.store.ctx as usize)) {
                return Ok(false);
            }
            // SAFETY: the context is a live FileStore made by segflake_file_store_new (it is
            // in the set until its release runs, which happens after this generator's calls).
            let store = unsafe { &*(self.store.ctx as *const segflake_core::segment::FileStore) };
            return store.give_back(tag, expected_max_id, max_id);
        };
        let tag_c =
            std::ffi::CString::new(tag).map_err(|_| format!("tag {tag:?} contains a NUL byte"))?;
        let mut given = false;
        // SAFETY: as in `allocate`.
        call_back("store", |buf, capacity| unsafe {
            give_back(
                self.store.ctx,
                tag_c.as_ptr(),
                expected_max_id,
                max_id,
                &mut given,
                buf,
                capacity,
            )
        })?;
        Ok(given)
    }
}

impl Drop for CStore {
    fn drop(&mut self) {
        if let (Some(release), true) = (self.store.release, self.armed.load(Ordering::Acquire)) {
            // SAFETY: called once, when no allocate call can follow.
            unsafe { release(self.store.ctx) };
        }
    }
}

/// Fills `*opts` with the defaults: step 1000, max_step 1000000, dynamic step, prefetch at
/// 10%, retry backoff 1000 ms, wait timeout 1000 ms, one fetch thread.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` if `opts` is NULL. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_options_init(
    opts: *mut segflake_segment_options,
) -> segflake_status {
    let d = SegmentOptions::default();
    let o = segflake_segment_options {
        step: d.step,
        max_step: d.max_step,
        dynamic_step: d.dynamic_step,
        prefetch_percent: d.prefetch_percent.into(),
        retry_backoff_ms: d.retry_backoff_ms,
        wait_timeout_ms: d.wait_timeout_ms,
        fetch_threads: d.fetch_threads as u32,
    };
    boundary(|| unsafe { write_out(opts, "opts", o) })
}

/// The 0.1 struct (NULL: the defaults) through the core's options path.
unsafe fn options_of(opts: *const segflake_segment_options) -> FfiResult<SegmentOptions> {
    let Some(o) = (unsafe { opts.as_ref() }) else {
        return Ok(SegmentOptions::default());
    };
    configure_pairs(vec![
        ("step", Value::uint(o.step)),
        ("max_step", Value::uint(o.max_step)),
        ("dynamic_step", Value::Bool(o.dynamic_step)),
        ("prefetch_percent", Value::uint(o.prefetch_percent.into())),
        ("retry_backoff_ms", Value::uint(o.retry_backoff_ms)),
        ("wait_timeout_ms", Value::uint(o.wait_timeout_ms)),
        ("fetch_threads", Value::uint(o.fetch_threads.into())),
    ])
}

unsafe fn new_generator(
    store: *const segflake_segment_store,
    options: impl FnOnce() -> FfiResult<SegmentOptions>,
    out: *mut *mut segflake_segment_generator,
) -> segflake_status {
    unsafe { new_generator_over(store, 1, "store", None, options, out) }
}

/// A generator over `count` stores at `stores` (a `MultiStore` when `count` > 1).
unsafe fn new_generator_over(
    stores: *const segflake_segment_store,
    count: usize,
    name: &str,
    give_back: segflake_store_give_back_fn,
    options: impl FnOnce() -> FfiResult<SegmentOptions>,
    out: *mut *mut segflake_segment_generator,
) -> segflake_status {
    unsafe {
        make(out, || {
            let first = in_ref(stores, name)?;
            segflake_core::segment::check_store_count(count)?;
            // SAFETY: the caller passes `count` stores at `stores` (checked non-NULL above).
            let list = std::slice::from_raw_parts(first as *const segflake_segment_store, count);
            if let Some(i) = list.iter().position(|s| s.allocate.is_none()) {
                let at = if count > 1 {
                    format!("[{i}]")
                } else {
                    String::new()
                };
                return Err(invalid(format!(
                    "{name}{at}->allocate is NULL; a store needs an allocate function"
                )));
            }
            let options = options()?;
            let armed = Arc::new(AtomicBool::new(false));
            let mut c_stores: Vec<CStore> = list
                .iter()
                .map(|s| CStore {
                    store: *s,
                    give_back,
                    armed: Arc::clone(&armed),
                })
                .collect();
            let inner = if count == 1 {
                SegmentGenerator::new(c_stores.remove(0), options)?
            } else {
                SegmentGenerator::new(segflake_core::MultiStore::new(c_stores)?, options)?
            };
            armed.store(true, Ordering::Release);
            let origin = crate::fork::origin();
            Ok(segflake_segment_generator { inner, origin })
        })
    }
}

/// Deprecated (use `segflake_segment_generator_new_with`): starts a segment generator over
/// `store` (copied) with `opts` (NULL: the defaults), and its background fetch threads. No
/// store call happens until a tag is first used.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` (NULL `store`, `out` or `store->allocate`; an option
/// out of range, named in the message), `SEGFLAKE_STORE_ERROR` (a thread could not be
/// started). On error `store->release` is not called and `*out` is left unchanged.
///
/// Ownership: the caller frees the generator with `segflake_segment_generator_free`;
/// `store->ctx` must stay valid until `store->release` is called (or, without `release`,
/// until `segflake_segment_generator_free` returns and no store call is running).
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_generator_new(
    store: *const segflake_segment_store,
    opts: *const segflake_segment_options,
    out: *mut *mut segflake_segment_generator,
) -> segflake_status {
    unsafe { new_generator(store, || options_of(opts), out) }
}

/// Starts a segment generator over `store` with a `"segment"` options builder (NULL: the
/// defaults): `step`, `max_step`, `dynamic_step`, `prefetch_percent`, `retry_backoff_ms`,
/// `wait_timeout_ms`, `store_timeout_ms`, `fetch_threads`, and any option added later.
/// Otherwise as `segflake_segment_generator_new`; the builder stays the caller's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_generator_new_with(
    store: *const segflake_segment_store,
    opts: *const segflake_options,
    out: *mut *mut segflake_segment_generator,
) -> segflake_status {
    unsafe { new_generator(store, || configured(opts, "segment"), out) }
}

/// Tinyid's multi-database mode: a generator over `count` stores (1..=64, copied from the
/// array `stores`), one per database, each with its own row for a tag. From store `i` it
/// issues only the IDs `≡ i (mod count)` of each range, asks the store that answered last,
/// and moves to the next store at once when one fails; a tag's IDs still increase. List
/// the databases in the order of their Tinyid `remainder`. `opts` as in
/// `segflake_segment_generator_new_with`.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` (NULL `stores` or `out`, a store without
/// `allocate`, `count` out of range, an option out of range), `SEGFLAKE_STORE_ERROR` (a
/// thread could not be started). On error no `release` is called.
///
/// Ownership: as `segflake_segment_generator_new`, for each store. Thread safety: any
/// thread; each store is called from the fetch threads.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_generator_new_multi(
    stores: *const segflake_segment_store,
    count: usize,
    opts: *const segflake_options,
    out: *mut *mut segflake_segment_generator,
) -> segflake_status {
    unsafe {
        new_generator_over(
            stores,
            count,
            "stores",
            None,
            || configured(opts, "segment"),
            out,
        )
    }
}

/// `segflake_segment_generator_new_with` for a store with later capabilities (today:
/// `give_back`). `store->size` must be at least the size of the fields up to `give_back`.
///
/// Errors, ownership and thread safety: as `segflake_segment_generator_new_with`, and
/// `SEGFLAKE_INVALID_ARGUMENT` for a `size` too small.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_generator_new_ext(
    store: *const segflake_segment_store_ext,
    opts: *const segflake_options,
    out: *mut *mut segflake_segment_generator,
) -> segflake_status {
    unsafe {
        let Some(ext) = store.as_ref() else {
            return new_generator(std::ptr::null(), || configured(opts, "segment"), out);
        };
        let needed = std::mem::size_of::<segflake_segment_store_ext>();
        if ext.size < needed {
            return boundary(|| {
                Err(invalid(format!(
                    "store->size is {}; a segflake_segment_store_ext needs at least {needed} \
                     (set it to sizeof(segflake_segment_store_ext))",
                    ext.size
                )))
            });
        }
        new_generator_over(
            &ext.store,
            1,
            "store",
            ext.give_back,
            || configured(opts, "segment"),
            out,
        )
    }
}

/// Closes the generator: waiting callers get `SEGFLAKE_CLOSED`, later calls too, and the
/// fetch threads stop after their current store call (waiting for them up to
/// `wait_timeout_ms`, at least 1 s). Idempotent.
///
/// Thread safety: any thread, while other threads use the generator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_generator_close(
    generator: *const segflake_segment_generator,
) -> segflake_status {
    boundary(|| unsafe {
        in_ref(generator, "generator")?.inner.close();
        Ok(())
    })
}

/// Closes (see `segflake_segment_generator_close`) and releases a generator. NULL is
/// ignored. The store's `release` runs when the last store call has finished.
///
/// Thread safety: no other thread may be using the generator any more (tag handles may
/// outlive it).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_generator_free(
    generator: *mut segflake_segment_generator,
) {
    boundary_void(|| unsafe { free_box(generator) })
}

/// The next ID of `tag` (1 to 128 bytes of UTF-8 without whitespace or control
/// characters). Lock-free while a segment is ready; otherwise waits for the store at most
/// `wait_timeout_ms`.
///
/// Errors: `SEGFLAKE_SEGMENTS_EXHAUSTED` (both buffers empty and the store failed or did
/// not answer in time; the message gives the cause; the next call retries the store),
/// `SEGFLAKE_CLOSED`, `SEGFLAKE_INVALID_ARGUMENT` (bad tag, NULL pointer).
///
/// Thread safety: any number of threads; each sees its IDs strictly increase, and no ID is
/// ever returned twice.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_next(
    generator: *const segflake_segment_generator,
    tag: *const c_char,
    out_id: *mut u64,
) -> segflake_status {
    unsafe {
        next(generator, out_id, |g| {
            Ok(g.inner.next_id(in_str(tag, "tag")?)?)
        })
    }
}

/// Fills `out_ids[0..n]` with strictly increasing IDs of `tag` (`n` in
/// `1..=SEGFLAKE_MAX_BATCH`), waiting for segments like `segflake_segment_next`. After an
/// error the contents of `out_ids` are unspecified (the IDs written are unique; discard
/// them).
///
/// Thread safety: any number of threads.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_next_n(
    generator: *const segflake_segment_generator,
    tag: *const c_char,
    out_ids: *mut u64,
    n: usize,
) -> segflake_status {
    let take = |g: &segflake_segment_generator, ids: &mut [u64]| unsafe {
        Ok(g.inner.next_ids(in_str(tag, "tag")?, ids)?)
    };
    unsafe { next_n(generator, out_ids, n, take) }
}

/// An ID of `tag` if one is ready now, without waiting: `*out_ready` is set to true and
/// `*out_id` to the ID, or `*out_ready` to false (a fetch is started if needed).
///
/// Errors: `SEGFLAKE_CLOSED`, `SEGFLAKE_INVALID_ARGUMENT`. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_try_next(
    generator: *const segflake_segment_generator,
    tag: *const c_char,
    out_id: *mut u64,
    out_ready: *mut bool,
) -> segflake_status {
    let take =
        |g: &segflake_segment_generator| unsafe { Ok(g.inner.try_next_id(in_str(tag, "tag")?)?) };
    unsafe { try_next(generator, out_id, out_ready, take) }
}

fn stats_to_c(s: &SegmentStats) -> segflake_segment_stats {
    let mut last_error = [0 as c_char; SEGFLAKE_STATS_ERROR_LEN];
    let message = s.last_error.as_deref().unwrap_or("").as_bytes();
    // SAFETY: the buffer has SEGFLAKE_STATS_ERROR_LEN bytes.
    unsafe { copy_cut(message, last_error.as_mut_ptr(), SEGFLAKE_STATS_ERROR_LEN) };
    segflake_segment_stats {
        current_start: s.current_start,
        current_end: s.current_end,
        position: s.position,
        remaining: s.remaining,
        next_ready: s.next_ready,
        next_start: s.next_start,
        next_end: s.next_end,
        step: s.step,
        fetch_in_flight: s.fetch_in_flight,
        fetches: s.fetches,
        failures: s.failures,
        consecutive_failures: s.consecutive_failures,
        has_last_fetch_latency: s.last_fetch_latency_ms.is_some(),
        last_fetch_latency_ms: s.last_fetch_latency_ms.unwrap_or(0),
        issued: s.issued,
        ids_per_second: s.ids_per_second,
        has_runway: s.runway_seconds.is_some(),
        runway_seconds: s.runway_seconds.unwrap_or(0.0),
        has_last_error: s.last_error.is_some(),
        last_error,
    }
}

/// Deprecated (use `segflake_segment_get_stats_record`): a snapshot of `tag`: current
/// range and position, next segment, step, fetch counts and latency, the last failure, and
/// the runway (seconds of IDs left if the store went down).
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` if this generator has not used `tag`, or a NULL
/// pointer. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_get_stats(
    generator: *const segflake_segment_generator,
    tag: *const c_char,
    out: *mut segflake_segment_stats,
) -> segflake_status {
    let stats = |g: &segflake_segment_generator| unsafe {
        Ok(stats_to_c(&g.inner.stats(in_str(tag, "tag")?)?))
    };
    unsafe { query(generator, "generator", out, "out", stats) }
}

/// A snapshot of `tag` as a new record, read by field name: `tag` (text), `current_start`,
/// `current_end`, `position`, `remaining`, `next_ready` (bool), `next_start`, `next_end`,
/// `step`, `fetch_in_flight` (bool), `fetches`, `failures`, `consecutive_failures`,
/// `last_error` (text, may be absent), `last_fetch_latency_ms` (may be absent), `issued`,
/// `ids_per_second` (f64), `runway_seconds` (f64, may be absent), and any field added later:
/// `segflake_record_get_u64(stats, "remaining", &n, NULL)`.
///
/// Errors: as `segflake_segment_get_stats`. Ownership: free the record with
/// `segflake_record_free`. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_get_stats_record(
    generator: *const segflake_segment_generator,
    tag: *const c_char,
    out: *mut *mut segflake_record,
) -> segflake_status {
    let stats =
        |g: &segflake_segment_generator| unsafe { record(&g.inner.stats(in_str(tag, "tag")?)?) };
    unsafe { query(generator, "generator", out, "out", stats) }
}

/// A handle on `tag` that skips the tag lookup on hot paths; the tag's first fetch starts
/// now if it has not been used before.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` (bad tag, NULL pointer), `SEGFLAKE_CLOSED`.
/// Ownership: the caller frees the handle with `segflake_segment_tag_free`.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_tag_new(
    generator: *const segflake_segment_generator,
    tag: *const c_char,
    out: *mut *mut segflake_segment_tag,
) -> segflake_status {
    boundary(|| unsafe {
        let g = in_ref(generator, "generator")?;
        check_ptr(out.cast_const(), "out")?;
        g.origin.check("segment generator", "")?;
        let inner = g.inner.tag(in_str(tag, "tag")?)?;
        put_box(
            out,
            segflake_segment_tag {
                inner,
                origin: g.origin,
            },
        )
    })
}

/// Releases a tag handle. NULL is ignored.
///
/// Thread safety: no other thread may be using this handle any more.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_tag_free(tag: *mut segflake_segment_tag) {
    boundary_void(|| unsafe { free_box(tag) })
}

/// `segflake_segment_next` through a tag handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_tag_next(
    tag: *const segflake_segment_tag,
    out_id: *mut u64,
) -> segflake_status {
    unsafe { next(tag, out_id, |t| Ok(t.inner.next_id()?)) }
}

/// `segflake_segment_next_n` through a tag handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_tag_next_n(
    tag: *const segflake_segment_tag,
    out_ids: *mut u64,
    n: usize,
) -> segflake_status {
    unsafe { next_n(tag, out_ids, n, |t, ids| Ok(t.inner.next_ids(ids)?)) }
}

/// `segflake_segment_try_next` through a tag handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_tag_try_next(
    tag: *const segflake_segment_tag,
    out_id: *mut u64,
    out_ready: *mut bool,
) -> segflake_status {
    unsafe { try_next(tag, out_id, out_ready, |t| Ok(t.inner.try_next_id()?)) }
}

/// `segflake_segment_get_stats` through a tag handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_tag_get_stats(
    tag: *const segflake_segment_tag,
    out: *mut segflake_segment_stats,
) -> segflake_status {
    unsafe { query(tag, "tag", out, "out", |t| Ok(stats_to_c(&t.inner.stats()))) }
}

/// `segflake_segment_get_stats_record` through a tag handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_tag_get_stats_record(
    tag: *const segflake_segment_tag,
    out: *mut *mut segflake_record,
) -> segflake_status {
    unsafe { query(tag, "tag", out, "out", |t| record(&t.inner.stats())) }
}

/// The sans-I/O segment engine of one tag, for hosts that drive the store themselves (an
/// event loop, an async database client): it never blocks, never spawns threads, never
/// reads a clock and never calls a store. Made by `segflake_segment_engine_new`, released
/// with `segflake_segment_engine_free`; safe to share between threads.
///
/// Driving it: take IDs with `segflake_segment_engine_try_next`/`_try_next_n`; after every
/// take, call `segflake_segment_engine_begin_fetch(now_ms)` (cheap when nothing is
/// wanted); when it hands out a step, call your store's `allocate(tag, step)` your own way
/// and report the answer exactly once with `segflake_segment_engine_complete_fetch`. When
/// no ID is ready and you stop waiting, `segflake_segment_engine_exhausted` gives the
/// error to report. `now_ms` is any monotonic millisecond clock of yours.
pub struct segflake_segment_engine {
    inner: SegmentEngine,
    origin: Origin,
}

issuer!(segflake_segment_engine, "engine", "segment engine");

unsafe fn new_engine(
    tag: *const c_char,
    options: impl FnOnce() -> FfiResult<SegmentOptions>,
    out: *mut *mut segflake_segment_engine,
) -> segflake_status {
    unsafe {
        make(out, || {
            let inner = SegmentEngine::new(in_str(tag, "tag")?, &options()?)?;
            Ok(segflake_segment_engine {
                inner,
                origin: crate::fork::origin(),
            })
        })
    }
}

/// Deprecated (use `segflake_segment_engine_new_with`): creates an engine for `tag` with
/// `opts` (NULL: the defaults; `wait_timeout_ms` and `fetch_threads` are not used by an
/// engine). Call `segflake_segment_engine_begin_fetch` at once to start its first fetch.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` (bad tag or option, NULL pointer).
/// Ownership: the caller frees it with `segflake_segment_engine_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_engine_new(
    tag: *const c_char,
    opts: *const segflake_segment_options,
    out: *mut *mut segflake_segment_engine,
) -> segflake_status {
    unsafe { new_engine(tag, || options_of(opts), out) }
}

/// Creates an engine for `tag` with a `"segment"` options builder (NULL: the defaults).
/// Otherwise as `segflake_segment_engine_new`; the builder stays the caller's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_engine_new_with(
    tag: *const c_char,
    opts: *const segflake_options,
    out: *mut *mut segflake_segment_engine,
) -> segflake_status {
    unsafe { new_engine(tag, || configured(opts, "segment"), out) }
}

/// Releases an engine. NULL is ignored. Thread safety: no other thread may use it any more.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_engine_free(engine: *mut segflake_segment_engine) {
    boundary_void(|| unsafe { free_box(engine) })
}

/// Takes an ID if one is ready: `*out_ready` true and `*out_id` set, or `*out_ready` false.
/// Lock-free. Thread safety: any number of threads.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_engine_try_next(
    engine: *const segflake_segment_engine,
    out_id: *mut u64,
    out_ready: *mut bool,
) -> segflake_status {
    unsafe { try_next(engine, out_id, out_ready, |e| Ok(e.inner.try_next())) }
}

/// Fills up to `n` slots of `out_ids` with ready IDs (strictly increasing) and sets
/// `*out_count` to how many (0 when none is ready). `n` in `1..=SEGFLAKE_MAX_BATCH`.
/// Thread safety: any number of threads.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_engine_try_next_n(
    engine: *const segflake_segment_engine,
    out_ids: *mut u64,
    n: usize,
    out_count: *mut usize,
) -> segflake_status {
    boundary(|| unsafe {
        let e = in_ref(engine, "engine")?;
        check_ptr(out_ids.cast_const(), "out_ids")?;
        check_ptr(out_count.cast_const(), "out_count")?;
        segflake_core::check_batch_size(n)?;
        e.origin.check("segment engine", "")?;
        // SAFETY: the caller provides `n` writable elements.
        let count = e
            .inner
            .try_next_batch(std::slice::from_raw_parts_mut(out_ids, n));
        out_count.write(count);
        Ok(())
    })
}

/// Asks whether the engine wants a fetch now. If so, `*out_wanted` is true and `*out_step`
/// is the step to request from the store (at most one fetch is ever in flight); complete it
/// with `segflake_segment_engine_complete_fetch`. Otherwise `*out_wanted` is false.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_engine_begin_fetch(
    engine: *const segflake_segment_engine,
    now_ms: u64,
    out_step: *mut u64,
    out_wanted: *mut bool,
) -> segflake_status {
    boundary(|| unsafe {
        let e = in_ref(engine, "engine")?;
        check_ptr(out_step.cast_const(), "out_step")?;
        check_ptr(out_wanted.cast_const(), "out_wanted")?;
        put_opt(
            out_step,
            out_wanted,
            e.inner.begin_fetch(now_ms).map(|r| r.step),
        );
        Ok(())
    })
}

/// Reports the store's answer to the fetch in flight, exactly once: `allocation` on
/// success, or NULL and a NUL-terminated `error_message` (may be NULL) on failure.
///
/// Returns `SEGFLAKE_OK` when the range was installed; `SEGFLAKE_STORE_CONTRACT_VIOLATION`
/// when it was refused (overlapping, preceding, step 0, `max_id` out of range; none of its
/// IDs is issued); `SEGFLAKE_STORE_ERROR` echoing a reported failure;
/// `SEGFLAKE_INVALID_ARGUMENT` when no fetch was in flight (the answer is ignored).
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_engine_complete_fetch(
    engine: *const segflake_segment_engine,
    now_ms: u64,
    allocation: *const segflake_allocation,
    error_message: *const c_char,
) -> segflake_status {
    boundary(|| unsafe {
        let e = in_ref(engine, "engine")?;
        if allocation.is_null() {
            let message = (!error_message.is_null())
                .then(|| std::ffi::CStr::from_ptr(error_message).to_string_lossy());
            e.inner
                .fail_fetch(now_ms, message.as_deref().unwrap_or("no message given"))?;
        } else {
            let a = in_ref(allocation, "allocation")?;
            e.inner
                .complete_fetch(now_ms, Ok(Allocation::new(a.max_id, a.step)))?;
        }
        Ok(())
    })
}

/// Always fails: returns the error a caller should get when no ID is ready and it stops
/// waiting (`SEGFLAKE_SEGMENTS_EXHAUSTED` with the cause, or `SEGFLAKE_CLOSED`), with its
/// message in `segflake_last_error_message`. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_engine_exhausted(
    engine: *const segflake_segment_engine,
    now_ms: u64,
) -> segflake_status {
    boundary(|| unsafe {
        let e = in_ref(engine, "engine")?;
        Err(e.inner.exhausted_error(now_ms).into())
    })
}

/// How many fetches have failed so far (a store error or a refused range): compare it
/// before and after waiting to fail fast. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_engine_failure_count(
    engine: *const segflake_segment_engine,
    out_count: *mut u64,
) -> segflake_status {
    let count = |e: &segflake_segment_engine| Ok(e.inner.failure_count());
    unsafe { query(engine, "engine", out_count, "out_count", count) }
}

/// A snapshot of the engine's tag at `now_ms` (see `segflake_segment_stats`).
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_engine_get_stats(
    engine: *const segflake_segment_engine,
    now_ms: u64,
    out: *mut segflake_segment_stats,
) -> segflake_status {
    unsafe {
        query(engine, "engine", out, "out", |e| {
            Ok(stats_to_c(&e.inner.stats(now_ms)))
        })
    }
}

/// A snapshot of the engine's tag at `now_ms` as a record (see
/// `segflake_segment_get_stats_record`). Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_engine_get_stats_record(
    engine: *const segflake_segment_engine,
    now_ms: u64,
    out: *mut *mut segflake_record,
) -> segflake_status {
    unsafe {
        query(engine, "engine", out, "out", |e| {
            record(&e.inner.stats(now_ms))
        })
    }
}

/// Closes the engine: every later take finds no ID and no fetch is requested; a fetch
/// still completing is accepted (so its range is never reused) but not issued.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_engine_close(
    engine: *const segflake_segment_engine,
) -> segflake_status {
    boundary(|| unsafe {
        in_ref(engine, "engine")?.inner.close();
        Ok(())
    })
}

/// Fills `*out` with the file store (`file:PATH`): Leaf's table as a small text file at
/// `path`, shared safely by any number of threads and processes on one machine (an
/// exclusive `flock` on `PATH.lock` around each allocation; the file is replaced
/// atomically and `fsync`ed before a range is handed out, so a crash never hands a range
/// out twice). A tag's first allocation starts at `initial_max_id` (1, like a fresh Leaf
/// row: step 2000 then hands out 1..=2000; at most INT64_MAX).
///
/// Pass `*out` to `segflake_segment_generator_new`, which takes ownership of it. If you do
/// not (or that call fails), release it with `segflake_segment_store_release`.
///
/// Errors: `SEGFLAKE_STORE_ERROR` (the file exists but cannot be read or parsed, or its
/// directory does not exist), `SEGFLAKE_INVALID_ARGUMENT` (empty path, `initial_max_id`
/// out of range, NULL pointer). Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_file_store_new(
    path: *const c_char,
    initial_max_id: u64,
    out: *mut segflake_segment_store,
) -> segflake_status {
    boundary(|| unsafe {
        check_ptr(out.cast_const(), "out")?;
        if path.is_null() {
            return Err(invalid("path is NULL; pass the file store's path"));
        }
        // Unix paths are bytes; elsewhere a path must be UTF-8.
        #[cfg(unix)]
        let path = std::path::Path::new(
            <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(
                std::ffi::CStr::from_ptr(path).to_bytes(),
            ),
        );
        #[cfg(not(unix))]
        let path = std::path::Path::new(in_str(path, "path")?);
        let store = segflake_core::segment::FileStore::with_options(
            path,
            segflake_core::segment::FileStoreOptions::default().with_initial_max_id(initial_max_id),
        )?;
        let ctx: *mut c_void = Box::into_raw(Box::new(store)).cast();
        live_file_stores().push(ctx as usize);
        out.write(segflake_segment_store {
            allocate: Some(file_store_allocate),
            ctx,
            release: Some(file_store_release),
        });
        Ok(())
    })
}

unsafe extern "C" fn file_store_allocate(
    ctx: *mut c_void,
    tag: *const c_char,
    step: u64,
    out: *mut segflake_allocation,
    error_buf: *mut c_char,
    error_capacity: usize,
) -> segflake_status {
    let result = std::panic::catch_unwind(|| {
        if ctx.is_null() || tag.is_null() || out.is_null() {
            return Err("the file store was called with a NULL pointer".to_string());
        }
        // SAFETY: ctx is the Box<FileStore> made by segflake_file_store_new; tag is a
        // NUL-terminated string from the caller.
        let store = unsafe { &*ctx.cast::<segflake_core::segment::FileStore>() };
        let tag = unsafe { std::ffi::CStr::from_ptr(tag) }
            .to_str()
            .map_err(|_| "the tag is not UTF-8".to_string())?;
        store.allocate(tag, step).map_err(|e| e.to_string())
    })
    .unwrap_or_else(|_| Err("the file store panicked (a bug in segflake)".to_string()));
    match result {
        Ok(a) => {
            // SAFETY: checked non-NULL above; provided by the caller.
            unsafe {
                out.write(segflake_allocation {
                    max_id: a.max_id,
                    step: a.step,
                })
            };
            SEGFLAKE_OK
        }
        Err(message) => {
            // SAFETY: the caller provides `error_capacity` bytes at `error_buf`.
            unsafe { copy_cut(message.as_bytes(), error_buf, error_capacity) };
            segflake_core::ErrorKind::Store.status()
        }
    }
}

/// The contexts of the file stores `segflake_file_store_new` made and not yet released (so
/// a generator can tell the library's own file store, which gives back, from a caller's).
fn live_file_stores() -> std::sync::MutexGuard<'static, Vec<usize>> {
    static LIVE: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

unsafe extern "C" fn file_store_release(ctx: *mut c_void) {
    live_file_stores().retain(|&c| c != ctx as usize);
    if !ctx.is_null() {
        let _ = std::panic::catch_unwind(|| {
            // SAFETY: the Box<FileStore> made by segflake_file_store_new, released once.
            drop(unsafe { Box::from_raw(ctx.cast::<segflake_core::segment::FileStore>()) });
        });
    }
}

/// Releases a store that was not handed to a segment generator (or whose
/// `segflake_segment_generator_new` failed): calls `store->release(store->ctx)` if set,
/// then clears the struct so a second call does nothing. NULL is ignored.
///
/// Thread safety: no other thread may be using the store.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_segment_store_release(store: *mut segflake_segment_store) {
    boundary_void(|| {
        if store.is_null() || !store.is_aligned() {
            return;
        }
        // SAFETY: checked non-NULL and aligned; the caller provides a store struct.
        let s = unsafe { &mut *store };
        if let Some(release) = s.release.take() {
            // SAFETY: the store's own release function and context.
            unsafe { release(s.ctx) };
        }
        s.allocate = None;
        s.ctx = std::ptr::null_mut();
    })
}
