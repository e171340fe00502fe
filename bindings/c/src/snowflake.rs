//! The snowflake generator.

use crate::error::{boundary, boundary_void, segflake_status, FfiResult};
use crate::layout::{decoded_to_c, segflake_decoded, segflake_layout};
use crate::options::{choice, configure_pairs, configured, opt, segflake_options};
use crate::ptr::*;
use segflake_core::fork::Origin;
use segflake_core::host::spelled_settings;
use segflake_core::snowflake::DEFAULT_MAX_DRIFT_MS;
use segflake_core::{Clock, Layout, Snowflake, SnowflakeConfig, Spelling, SystemClock, Value};
use std::ffi::c_void;

/// Where the sequence starts in each new tick.
pub type segflake_sequence_start = u32;
/// At 0: densest packing (the default).
pub const SEGFLAKE_SEQUENCE_START_ZERO: segflake_sequence_start = 0;
/// At a pseudo-random value below 100 (Leaf's rule), so `id % N` sharding stays even at
/// low rates.
pub const SEGFLAKE_SEQUENCE_START_RANDOM: segflake_sequence_start = 1;

/// A host clock (`segflake_clock_fn`) that returns the same value for this long while a
/// generator waits for the next tick makes the call fail with `SEGFLAKE_CLOCK_STALLED`
/// instead of waiting forever.
pub const SEGFLAKE_CLOCK_STALL_MS: u64 = 2000;
const CLOCK_STALL_MS: u64 = SEGFLAKE_CLOCK_STALL_MS;

/// Default `max_drift_ms`.
pub const SEGFLAKE_DEFAULT_MAX_DRIFT_MS: u64 = 2000;

/// A clock supplied by the host: returns Unix time in milliseconds. It is called from
/// every thread that takes IDs, so it must be thread-safe, and it must advance with real
/// time: a generator waiting for the next tick calls it until it does, and fails with
/// `SEGFLAKE_CLOCK_STALLED` if it returns the same value for `SEGFLAKE_CLOCK_STALL_MS`.
pub type segflake_clock_fn = Option<unsafe extern "C" fn(ctx: *mut c_void) -> u64>;

/// Deprecated (frozen 0.1 layout: a field added here would change its size; use
/// `segflake_options_new("snowflake")` and `segflake_snowflake_new_with`): settings for
/// `segflake_snowflake_new`. Initialise with `segflake_snowflake_options_init`,
/// then change what you need.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct segflake_snowflake_options {
    /// This generator's worker ID, `0..=max_worker_id` of the layout. Required: there is
    /// no default, so that two processes never share one by accident.
    pub worker_id: u64,
    /// The layout, or NULL for the `"twitter"` preset. The generator copies it: the layout
    /// may be freed as soon as `segflake_snowflake_new` returns.
    pub layout: *const segflake_layout,
    /// When true, `epoch_ms` replaces the layout's epoch (the layout is validated again).
    pub has_epoch_ms: bool,
    /// Unix milliseconds of tick 0 (used when `has_epoch_ms`).
    pub epoch_ms: u64,
    /// How far the logical tick may run ahead of the clock (default 2000; 0 gives strict
    /// Twitter behaviour: wait for the next tick; at most 3600000).
    pub max_drift_ms: u64,
    /// `SEGFLAKE_SEQUENCE_START_ZERO` (default) or `SEGFLAKE_SEQUENCE_START_RANDOM`.
    pub sequence_start: segflake_sequence_start,
    /// When true, no ID will carry a timestamp at or below `not_before_ms`.
    pub has_not_before_ms: bool,
    /// A high-water mark persisted by a previous run (`segflake_snowflake_high_water_mark_ms`).
    pub not_before_ms: u64,
    /// A host clock, or NULL for the system clock.
    pub clock: segflake_clock_fn,
    /// Passed to `clock` on every call; owned by the caller, must outlive the generator.
    pub clock_ctx: *mut c_void,
}

#[derive(Clone, Copy)]
pub(crate) enum HostClock {
    System,
    Callback {
        f: unsafe extern "C" fn(*mut c_void) -> u64,
        ctx: *mut c_void,
    },
}

// SAFETY: the header requires a clock callback and its context to be thread-safe.
unsafe impl Send for HostClock {}
// SAFETY: as above.
unsafe impl Sync for HostClock {}

impl Clock for HostClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        match *self {
            HostClock::System => SystemClock.now_ms(),
            // SAFETY: the caller supplied this function and context for this purpose.
            HostClock::Callback { f, ctx } => unsafe { f(ctx) },
        }
    }

    fn wait_until_ms(&self, unix_ms: u64) -> segflake_core::Result<()> {
        match self {
            HostClock::System => SystemClock.wait_until_ms(unix_ms),
            // A host clock that never advances (say, a time cached by an event loop that
            // is blocked in this very call) fails the call after CLOCK_STALL_MS.
            HostClock::Callback { .. } => {
                segflake_core::clock::wait_until_ms_or_stall(self, unix_ms, CLOCK_STALL_MS)
            }
        }
    }
}

/// A snowflake generator: an opaque handle made by `segflake_snowflake_new_with` (or
/// `segflake_snowflake_new`), released with `segflake_snowflake_free`.
///
/// Thread safety: a generator is lock-free and may be used from any number of threads at
/// once (share one handle); every ID it returns is strictly greater than the ones before.
pub struct segflake_snowflake {
    pub(crate) inner: std::sync::Arc<Snowflake<std::sync::Arc<HostClock>>>,
    /// The worker-ID lease of a generator made by `segflake_snowflake_new_leased`.
    pub(crate) lease: Option<segflake_core::LeasedSnowflake<HostClock>>,
    pub(crate) origin: Origin,
}

issuer!(segflake_snowflake, "generator", "snowflake generator");

impl HostClock {
    pub(crate) fn of(clock: segflake_clock_fn, ctx: *mut c_void) -> HostClock {
        clock.map_or(HostClock::System, |f| HostClock::Callback { f, ctx })
    }
}

/// Fills `*opts` with the defaults (twitter layout, drift 2000 ms, sequence from zero, no
/// high-water mark, system clock) and the given worker ID.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` if `opts` is NULL. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_snowflake_options_init(
    opts: *mut segflake_snowflake_options,
    worker_id: u64,
) -> segflake_status {
    boundary(|| unsafe {
        write_out(
            opts,
            "opts",
            segflake_snowflake_options {
                worker_id,
                layout: std::ptr::null(),
                has_epoch_ms: false,
                epoch_ms: 0,
                max_drift_ms: DEFAULT_MAX_DRIFT_MS,
                sequence_start: SEGFLAKE_SEQUENCE_START_ZERO,
                has_not_before_ms: false,
                not_before_ms: 0,
                clock: None,
                clock_ctx: std::ptr::null_mut(),
            },
        )
    })
}

/// Builds the generator: `layout` is a validated layout to use as it is (0.1 options with
/// a layout handle and no epoch override); otherwise the config's layout is validated now.
unsafe fn new_snowflake(
    out: *mut *mut segflake_snowflake,
    clock: HostClock,
    config: impl FnOnce() -> FfiResult<(SnowflakeConfig, Option<Layout>)>,
) -> segflake_status {
    unsafe {
        make(out, || {
            let (config, layout) = config()?;
            let layout = match layout {
                Some(layout) => layout,
                None => config.build_at(clock.now_ms(), Spelling::Snake)?,
            };
            let inner = Snowflake::with_clock(layout, config.options, std::sync::Arc::new(clock))?;
            let origin = crate::fork::origin();
            Ok(segflake_snowflake {
                inner: std::sync::Arc::new(inner),
                lease: None,
                origin,
            })
        })
    }
}

/// The 0.1 struct as (key, value) pairs for the core.
unsafe fn config_of(
    o: &segflake_snowflake_options,
) -> FfiResult<(SnowflakeConfig, Option<Layout>)> {
    let given = match o.layout.is_null() {
        true => None,
        false => Some(unsafe { in_ref(o.layout, "opts->layout")? }.inner),
    };
    let layout = given.map_or(Value::Null, |l| {
        Value::Map(spelled_settings(&l.spec(), Spelling::Snake))
    });
    let config = configure_pairs(vec![
        ("worker_id", Value::uint(o.worker_id)),
        ("layout", layout),
        ("epoch_ms", opt(o.has_epoch_ms, o.epoch_ms)),
        ("max_drift_ms", Value::uint(o.max_drift_ms)),
        (
            "sequence_start",
            choice(o.sequence_start, &["zero", "random"]),
        ),
        ("not_before_ms", opt(o.has_not_before_ms, o.not_before_ms)),
    ])?;
    Ok((config, given.filter(|_| !o.has_epoch_ms)))
}

/// Deprecated (use `segflake_snowflake_new_with`): creates a generator from `*opts` and
/// returns it in `*out`.
///
/// Errors: `SEGFLAKE_WORKER_ID_OUT_OF_RANGE` (the message names the allowed range),
/// `SEGFLAKE_INVALID_LAYOUT` / `SEGFLAKE_LAYOUT_EXHAUSTED` (an epoch override the layout
/// cannot take), `SEGFLAKE_INVALID_ARGUMENT` (NULL pointer, `max_drift_ms` above 3600000,
/// unknown `sequence_start`). On error `*out` is left unchanged.
///
/// Ownership: `opts` and the layout it points to stay the caller's (they are copied). The
/// caller owns the new generator and frees it with `segflake_snowflake_free`.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_snowflake_new(
    opts: *const segflake_snowflake_options,
    out: *mut *mut segflake_snowflake,
) -> segflake_status {
    let o = unsafe { opts.as_ref() };
    let clock = o.map_or(HostClock::System, |o| HostClock::of(o.clock, o.clock_ctx));
    unsafe { new_snowflake(out, clock, || config_of(in_ref(opts, "opts")?)) }
}

/// Creates a generator from a `"snowflake"` options builder: `worker_id` (required),
/// `layout` (a preset name through `segflake_options_set_str`, or a `"layout"` builder
/// through `segflake_options_set_options`; default twitter), `epoch_ms`, `max_drift_ms`,
/// `sequence_start` (`"zero"`/`"random"`), `not_before_ms`, and any option added later.
/// `clock` (may be NULL: the system clock) and `clock_ctx` are as in
/// `segflake_snowflake_options`.
///
/// Errors: as `segflake_snowflake_new`; the messages are the core's, naming the option.
/// Ownership: the builder stays the caller's; free the generator with
/// `segflake_snowflake_free`. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_snowflake_new_with(
    opts: *const segflake_options,
    clock: segflake_clock_fn,
    clock_ctx: *mut c_void,
    out: *mut *mut segflake_snowflake,
) -> segflake_status {
    let clock = HostClock::of(clock, clock_ctx);
    unsafe { new_snowflake(out, clock, || Ok((configured(opts, "snowflake")?, None))) }
}

/// Releases a generator. NULL is ignored.
///
/// Thread safety: no other thread may be using the generator any more.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_snowflake_free(generator: *mut segflake_snowflake) {
    boundary_void(|| unsafe { free_box(generator) })
}

/// Takes the next ID into `*out_id`: strictly greater than every ID this generator
/// returned before, on any thread.
///
/// Never fails for sequence overflow (the generator borrows up to `max_drift_ms` of future
/// ticks, then waits for the clock). Errors: `SEGFLAKE_CLOCK_MOVED_BACKWARDS` (the clock
/// is behind the last issued tick by more than `max_drift_ms`; the message says by how
/// much), `SEGFLAKE_CLOCK_BEFORE_EPOCH`, `SEGFLAKE_TIME_EXHAUSTED`,
/// `SEGFLAKE_INVALID_ARGUMENT` (NULL pointer).
///
/// Thread safety: lock-free; call it from any number of threads on one handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_snowflake_next(
    generator: *const segflake_snowflake,
    out_id: *mut u64,
) -> segflake_status {
    unsafe { next(generator, out_id, |g| Ok(g.inner.next_id()?)) }
}

/// Fills `out_ids[0..n]` with `n` strictly increasing IDs, reserving runs of sequence
/// numbers at once (much faster than `n` calls to `segflake_snowflake_next`).
///
/// `n` must be `1..=SEGFLAKE_MAX_BATCH`. Errors as `segflake_snowflake_next`, plus
/// `SEGFLAKE_INVALID_ARGUMENT` for a bad `n` or a NULL buffer. After an error the contents
/// of `out_ids` are unspecified: discard them (IDs already written are unique, but some
/// slots were not written).
///
/// Ownership: `out_ids` is the caller's buffer of at least `n` elements.
/// Thread safety: lock-free; call it from any number of threads on one handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_snowflake_next_n(
    generator: *const segflake_snowflake,
    out_ids: *mut u64,
    n: usize,
) -> segflake_status {
    unsafe { next_n(generator, out_ids, n, |g, ids| Ok(g.inner.next_ids(ids)?)) }
}

/// Unix milliseconds of the highest tick issued so far (including ticks borrowed ahead of
/// the clock); before the first ID, it reflects `not_before_ms`.
///
/// Persist it every few seconds; a restarted generator given it as `not_before_ms` issues
/// only IDs with later timestamps.
///
/// Thread safety: any thread, concurrently with ID generation.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_snowflake_high_water_mark_ms(
    generator: *const segflake_snowflake,
    out_ms: *mut u64,
) -> segflake_status {
    let mark = |g: &segflake_snowflake| Ok(g.inner.high_water_mark_ms());
    unsafe { query(generator, "generator", out_ms, "out_ms", mark) }
}

/// This generator's worker ID.
///
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_snowflake_worker_id(
    generator: *const segflake_snowflake,
    out_worker_id: *mut u64,
) -> segflake_status {
    let worker_id = |g: &segflake_snowflake| Ok(g.inner.worker_id());
    unsafe {
        query(
            generator,
            "generator",
            out_worker_id,
            "out_worker_id",
            worker_id,
        )
    }
}

/// A new handle to a copy of the generator's layout (with any epoch override applied).
///
/// Ownership: the caller frees it with `segflake_layout_free`. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_snowflake_layout(
    generator: *const segflake_snowflake,
    out: *mut *mut segflake_layout,
) -> segflake_status {
    let copy = |g: &segflake_snowflake| {
        Ok(Box::into_raw(Box::new(segflake_layout {
            inner: *g.inner.layout(),
        })))
    };
    unsafe { query(generator, "generator", out, "out", copy) }
}

/// Splits an ID of this generator's layout into its fields (see `segflake_layout_decode`).
///
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_snowflake_decode(
    generator: *const segflake_snowflake,
    id: u64,
    out: *mut segflake_decoded,
) -> segflake_status {
    let decode = |g: &segflake_snowflake| Ok(decoded_to_c(g.inner.decode(id)?));
    unsafe { query(generator, "generator", out, "out", decode) }
}

/// Packs a tick, worker ID and sequence with this generator's layout (see
/// `segflake_layout_compose`). Nothing is reserved: the result may equal an issued ID.
///
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_snowflake_compose(
    generator: *const segflake_snowflake,
    tick: u64,
    worker_id: u64,
    sequence: u64,
    out_id: *mut u64,
) -> segflake_status {
    let compose =
        |g: &segflake_snowflake| Ok(g.inner.layout().compose(tick, worker_id, sequence)?);
    unsafe { query(generator, "generator", out_id, "out_id", compose) }
}
