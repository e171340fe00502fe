//! Date-prefixed serial numbers, with the shared counter as a C callback.

use crate::error::{boundary, boundary_void, invalid, segflake_status, FfiResult};
use crate::options::{configure_pairs, configured, opt, record, segflake_options, segflake_record};
use crate::ptr::*;
use crate::segment::call_back;
use crate::snowflake::{segflake_clock_fn, HostClock};
use segflake_core::fork::Origin;
use segflake_core::serial::{SerialGenerator, SerialOptions};
use segflake_core::Value;
use std::ffi::{c_char, c_void};

/// Deprecated (frozen 0.1 layout: a field added here would change its size; use
/// `segflake_options_new("serial")` and `segflake_serial_new_with`): settings of a serial
/// generator. Initialise with `segflake_serial_options_init`.
///
/// A serial is `yyMMddHHmmss`, then `worker_digits` digits of `worker_id`, then
/// `sequence_digits` digits of the per-second sequence, as one decimal number:
/// `250413120000` + worker `7` + sequence `0001` = `25041312000070001`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct segflake_serial_options {
    /// This generator's worker number: `0..10^worker_digits` (0 when there are none).
    pub worker_id: u64,
    /// Worker digits after the date: `0..=6` (default 0).
    pub worker_digits: u32,
    /// Sequence digits at the end: `1..=7`, with `worker_digits + sequence_digits <= 7`
    /// (default 4: up to 9999 serials per second).
    pub sequence_digits: u32,
    /// Print the date at this fixed offset from UTC: `-1080..=1080` minutes (default 0).
    pub utc_offset_minutes: i32,
    /// When true, nothing at or below `last` is issued (a host-persisted last serial).
    pub has_last: bool,
    pub last: u64,
    /// A host clock, or NULL for the system clock (see `segflake_clock_fn`).
    pub clock: segflake_clock_fn,
    pub clock_ctx: *mut c_void,
}

/// The fields of a serial (`segflake_serial_decode`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct segflake_serial_parts {
    /// `yyMMddHHmmss` as a number (e.g. 250413120000).
    pub date: u64,
    /// The Unix second of `date` (the UTC offset taken back out).
    pub unix_seconds: u64,
    pub worker_id: u64,
    pub sequence: u64,
}

/// A shared per-second counter (for example Redis `INCR` on a key named after
/// `date_prefix`): write the next sequence number for `unix_second` (1 for its first
/// serial) into `*out_sequence` and return `SEGFLAKE_OK`. On failure return another status
/// and optionally write a NUL-terminated message of at most `error_capacity` bytes into
/// `error_buf`; the library copies it into a `SEGFLAKE_STORE_ERROR`.
///
/// Called on the thread that called `segflake_serial_next_with_counter`, synchronously.
pub type segflake_serial_counter_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        unix_second: u64,
        date_prefix: u64,
        out_sequence: *mut u64,
        error_buf: *mut c_char,
        error_capacity: usize,
    ) -> segflake_status,
>;

/// A script counter (for example Redis `EVAL` of `segflake_registry_statement("redis",
/// "serial")` with hiredis): run the core's serial script on the key `<your prefix>:` +
/// `key` with the `nargs` integers of `args` as its arguments, write its reply's three
/// integers into `out_reply[0..3]` and return `SEGFLAKE_OK`. On failure return another
/// status and optionally write a NUL-terminated message of at most `error_capacity` bytes
/// into `error_buf`; the library copies it into a `SEGFLAKE_STORE_ERROR`.
///
/// Called on the thread that called `segflake_serial_next_with_script`, synchronously.
pub type segflake_serial_script_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        key: *const c_char,
        args: *const u64,
        nargs: usize,
        out_reply: *mut u64,
        error_buf: *mut c_char,
        error_capacity: usize,
    ) -> segflake_status,
>;

/// A serial generator: an opaque handle made by `segflake_serial_new`, released with
/// `segflake_serial_free`. Lock-free; share it between threads.
pub struct segflake_serial {
    inner: SerialGenerator<HostClock>,
    origin: Origin,
}

issuer!(segflake_serial, "serial", "serial generator");

/// Fills `*opts` with the defaults: UTC, no worker digits, 4 sequence digits, no last
/// serial, the system clock.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` if `opts` is NULL. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_serial_options_init(
    opts: *mut segflake_serial_options,
) -> segflake_status {
    boundary(|| unsafe {
        let d = SerialOptions::default();
        write_out(
            opts,
            "opts",
            segflake_serial_options {
                worker_id: d.worker_id,
                worker_digits: u32::from(d.worker_digits),
                sequence_digits: u32::from(d.sequence_digits),
                utc_offset_minutes: d.utc_offset_minutes,
                has_last: false,
                last: 0,
                clock: None,
                clock_ctx: std::ptr::null_mut(),
            },
        )
    })
}

unsafe fn new_serial(
    out: *mut *mut segflake_serial,
    clock: HostClock,
    options: impl FnOnce() -> FfiResult<SerialOptions>,
) -> segflake_status {
    unsafe {
        make(out, || {
            let inner = SerialGenerator::with_clock(options()?, clock)?;
            Ok(segflake_serial {
                inner,
                origin: crate::fork::origin(),
            })
        })
    }
}

/// The 0.1 struct through the core's options path.
fn options_of(o: &segflake_serial_options) -> FfiResult<SerialOptions> {
    configure_pairs(vec![
        ("worker_id", Value::uint(o.worker_id)),
        ("worker_digits", Value::uint(o.worker_digits.into())),
        ("sequence_digits", Value::uint(o.sequence_digits.into())),
        (
            "utc_offset_minutes",
            Value::Int(o.utc_offset_minutes.into()),
        ),
        ("last", opt(o.has_last, o.last)),
    ])
}

/// Deprecated (use `segflake_serial_new_with`): creates a serial generator and returns it
/// in `*out`.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` naming the field and its allowed range (digits,
/// worker ID, offset, a `last` that is not a serial of this shape) or a NULL pointer.
/// Ownership: the caller frees it with `segflake_serial_free`. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_serial_new(
    opts: *const segflake_serial_options,
    out: *mut *mut segflake_serial,
) -> segflake_status {
    let o = unsafe { opts.as_ref() };
    let clock = o.map_or(HostClock::System, |o| HostClock::of(o.clock, o.clock_ctx));
    unsafe { new_serial(out, clock, || options_of(in_ref(opts, "opts")?)) }
}

/// Creates a serial generator from a `"serial"` options builder (NULL: the defaults):
/// `worker_id`, `worker_digits`, `sequence_digits`, `utc_offset_minutes` (signed: set it
/// with `segflake_options_set_i64`), `last`, `counter_timeout_ms`,
/// `counter_max_behind_ms`, `counter_max_ahead_ms`, and any option added later. `clock`
/// (may be NULL: the system clock) and `clock_ctx` are as in `segflake_serial_options`.
/// Errors as `segflake_serial_new`; the builder stays the caller's. Thread safety: any
/// thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_serial_new_with(
    opts: *const segflake_options,
    clock: segflake_clock_fn,
    clock_ctx: *mut c_void,
    out: *mut *mut segflake_serial,
) -> segflake_status {
    let clock = HostClock::of(clock, clock_ctx);
    unsafe { new_serial(out, clock, || configured(opts, "serial")) }
}

/// Releases a serial generator. NULL is ignored.
///
/// Thread safety: no other thread may be using it any more.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_serial_free(serial: *mut segflake_serial) {
    boundary_void(|| unsafe { free_box(serial) })
}

/// The next serial from the generator's own counter: above the last one, in the current
/// second (or in the last serial's second while the clock is behind it).
///
/// Errors: `SEGFLAKE_SERIAL_EXHAUSTED` (the second's sequence numbers are used up; retry
/// in the next second), `SEGFLAKE_INVALID_ARGUMENT` (a date outside 2000 to 2099, NULL).
/// Thread safety: any number of threads.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_serial_next(
    serial: *const segflake_serial,
    out_serial: *mut u64,
) -> segflake_status {
    unsafe { next(serial, out_serial, |s| Ok(s.inner.next()?)) }
}

/// The next serial with its sequence from `counter(ctx, second, date_prefix, ...)`; asks
/// again (at most 8 times) while the counter's numbers are not above the last serial.
///
/// Errors: `SEGFLAKE_STORE_ERROR` (the counter failed, with its message, or kept returning
/// numbers at or below the last serial), `SEGFLAKE_SERIAL_EXHAUSTED` (a number that does
/// not fit the sequence digits), `SEGFLAKE_INVALID_ARGUMENT` (NULL `counter` or pointer).
/// Thread safety: any number of threads (the counter is called on the calling thread).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_serial_next_with_counter(
    serial: *const segflake_serial,
    counter: segflake_serial_counter_fn,
    ctx: *mut c_void,
    out_serial: *mut u64,
) -> segflake_status {
    let next = |s: &segflake_serial| {
        let counter = counter.ok_or_else(|| invalid("counter is NULL; pass a counter function"))?;
        let g = &s.inner;
        let id = g.next_with_counter(|second| {
            let prefix = g.date_prefix(second).map_err(|e| e.to_string())?;
            let mut sequence = 0u64;
            // SAFETY: the caller passed this function and context for this purpose; the
            // pointers are valid during the call.
            call_back("counter", |buf, capacity| unsafe {
                counter(ctx, second, prefix, &mut sequence, buf, capacity)
            })?;
            Ok(sequence)
        })?;
        Ok(id)
    };
    unsafe { query(serial, "serial", out_serial, "out_serial", next) }
}

/// The next serial with its sequence from a script counter: `script(ctx, key, args, ...)`
/// runs the core's Redis script (docs/serials.md); asks again (at most 8 times) while its
/// numbers are not above the last serial.
///
/// Errors: `SEGFLAKE_CLOCK_SKEW` (the script refused the second: this host's clock is off
/// by more than `counter_max_behind_ms` / `counter_max_ahead_ms`; nothing was issued),
/// `SEGFLAKE_STORE_ERROR` (the script failed, with its message, or answered outside its
/// contract), `SEGFLAKE_SERIAL_EXHAUSTED`, `SEGFLAKE_INVALID_ARGUMENT` (NULL `script` or
/// pointer). Thread safety: any number of threads (the script is called on the calling
/// thread).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_serial_next_with_script(
    serial: *const segflake_serial,
    script: segflake_serial_script_fn,
    ctx: *mut c_void,
    out_serial: *mut u64,
) -> segflake_status {
    let next = |s: &segflake_serial| {
        let script = script.ok_or_else(|| invalid("script is NULL; pass a script function"))?;
        let g = &s.inner;
        let id = g.next_with(|second| {
            let key = std::ffi::CString::new(g.counter_key(second)?).expect("digits only");
            let args = g.counter_args(second);
            let mut reply = [0u64; 3];
            // SAFETY: the caller passed this function and context for this purpose; the
            // pointers are valid during the call.
            call_back("script", |buf, capacity| unsafe {
                script(
                    ctx,
                    key.as_ptr(),
                    args.as_ptr(),
                    args.len(),
                    reply.as_mut_ptr(),
                    buf,
                    capacity,
                )
            })
            .map_err(|message| segflake_core::Error::Store { message })?;
            let reply = Value::List(reply.iter().map(|v| Value::uint(*v)).collect());
            g.counter_sequence(second, &reply)
        })?;
        Ok(id)
    };
    unsafe { query(serial, "serial", out_serial, "out_serial", next) }
}

/// The last serial issued (or restored); 0 if none. Persist it to restore on restart.
///
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_serial_last(
    serial: *const segflake_serial,
    out_serial: *mut u64,
) -> segflake_status {
    unsafe {
        query(serial, "serial", out_serial, "out_serial", |s| {
            Ok(s.inner.last())
        })
    }
}

/// Splits a serial of this generator's shape into date, Unix second, worker and sequence.
///
/// Errors: `SEGFLAKE_PARSE_ERROR` for a serial whose date part is not a valid date,
/// `SEGFLAKE_INVALID_ARGUMENT` for a NULL pointer. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_serial_decode(
    serial: *const segflake_serial,
    value: u64,
    out: *mut segflake_serial_parts,
) -> segflake_status {
    let decode = |s: &segflake_serial| {
        let p = s.inner.decode(value)?;
        Ok(segflake_serial_parts {
            date: p.date,
            unix_seconds: p.unix_seconds,
            worker_id: p.worker_id,
            sequence: p.sequence,
        })
    };
    unsafe { query(serial, "serial", out, "out", decode) }
}

/// The fields of a serial of this generator's shape as a new record: `date`,
/// `unix_seconds`, `worker_id`, `sequence`, and any field added later. Errors as
/// `segflake_serial_decode`; free the record with `segflake_record_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_serial_decode_record(
    serial: *const segflake_serial,
    value: u64,
    out: *mut *mut segflake_record,
) -> segflake_status {
    unsafe {
        query(serial, "serial", out, "out", |s| {
            record(&s.inner.decode(value)?)
        })
    }
}

/// The serial for `sequence` in `unix_seconds` with this generator's worker digits. Pure:
/// the last-issued state is not touched.
///
/// Errors: `SEGFLAKE_SERIAL_EXHAUSTED` (the sequence does not fit),
/// `SEGFLAKE_INVALID_ARGUMENT` (outside the years 2000 to 2099, NULL pointer).
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_serial_format(
    serial: *const segflake_serial,
    unix_seconds: u64,
    sequence: u64,
    out_serial: *mut u64,
) -> segflake_status {
    let format = |s: &segflake_serial| Ok(s.inner.format(unix_seconds, sequence)?);
    unsafe { query(serial, "serial", out_serial, "out_serial", format) }
}

/// `yyMMddHHmmss` of a Unix second at this generator's UTC offset, as a number (name a
/// shared counter's key after it).
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` outside the years 2000 to 2099 or for a NULL
/// pointer. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_serial_date_prefix(
    serial: *const segflake_serial,
    unix_seconds: u64,
    out_date: *mut u64,
) -> segflake_status {
    let prefix = |s: &segflake_serial| Ok(s.inner.date_prefix(unix_seconds)?);
    unsafe { query(serial, "serial", out_date, "out_date", prefix) }
}

/// Sans-I/O shared counter, step 1: the Unix second a shared counter should count in at
/// `now_ms` (the current second, or the last serial's second while the clock is behind).
///
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_serial_counter_second(
    serial: *const segflake_serial,
    now_ms: u64,
    out_second: *mut u64,
) -> segflake_status {
    let second = |s: &segflake_serial| Ok(s.inner.counter_second(now_ms));
    unsafe { query(serial, "serial", out_second, "out_second", second) }
}

/// Sans-I/O shared counter, step 2: offers the counter's `sequence` for `unix_seconds`.
/// If the serial is above the last one issued, `*out_accepted` is true, `*out_serial`
/// receives it and it becomes the last serial; otherwise `*out_accepted` is false (ask the
/// counter again for `segflake_serial_counter_second`).
///
/// Errors: `SEGFLAKE_SERIAL_EXHAUSTED` (the sequence does not fit),
/// `SEGFLAKE_INVALID_ARGUMENT` (outside 2000 to 2099, NULL pointer).
/// Thread safety: any number of threads.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_serial_accept(
    serial: *const segflake_serial,
    unix_seconds: u64,
    sequence: u64,
    out_serial: *mut u64,
    out_accepted: *mut bool,
) -> segflake_status {
    boundary(|| unsafe {
        let s = in_ref(serial, "serial")?;
        check_ptr(out_serial.cast_const(), "out_serial")?;
        check_ptr(out_accepted.cast_const(), "out_accepted")?;
        s.origin.check("serial generator", "")?;
        put_opt(
            out_serial,
            out_accepted,
            s.inner.accept(unix_seconds, sequence)?,
        );
        Ok(())
    })
}
