//! Status codes, the per-thread last-error message, and the boundary every exported
//! function goes through (panics are caught there and turned into `SEGFLAKE_PANIC`).

use segflake_core::{Error, ErrorKind};
use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

/// The result of every fallible segflake function: `SEGFLAKE_OK` (0) or one of the
/// positive `SEGFLAKE_*` error codes below. The same codes are the `code` strings of the
/// other language bindings (see `segflake_status_code`).
pub type segflake_status = i32;

/// Success.
pub const SEGFLAKE_OK: segflake_status = 0;
// <generated: status codes>
/// A layout parameter is out of range (bit widths, tick, epoch in the future).
pub const SEGFLAKE_INVALID_LAYOUT: segflake_status = 1;
/// The layout's time field runs out before now + min_lifetime_years.
pub const SEGFLAKE_LAYOUT_EXHAUSTED: segflake_status = 2;
/// A worker ID does not fit the layout's worker field.
pub const SEGFLAKE_WORKER_ID_OUT_OF_RANGE: segflake_status = 3;
/// The clock is behind the last issued tick by more than max_drift_ms.
pub const SEGFLAKE_CLOCK_MOVED_BACKWARDS: segflake_status = 4;
/// The clock reads a time before the layout's epoch.
pub const SEGFLAKE_CLOCK_BEFORE_EPOCH: segflake_status = 5;
/// The layout's time field has run out: no further IDs can be issued.
pub const SEGFLAKE_TIME_EXHAUSTED: segflake_status = 6;
/// An argument has the wrong type, is out of its allowed range or is malformed. Through C also: a
/// NULL pointer, a buffer that is too small, text that is not UTF-8.
pub const SEGFLAKE_INVALID_ARGUMENT: segflake_status = 7;
/// A textual ID (decimal, base62, base32) could not be parsed.
pub const SEGFLAKE_PARSE_ERROR: segflake_status = 8;
/// A store returned a range that is invalid or overlaps one already received.
pub const SEGFLAKE_STORE_CONTRACT_VIOLATION: segflake_status = 9;
/// Both segment buffers are empty and the store did not deliver in time.
pub const SEGFLAKE_SEGMENTS_EXHAUSTED: segflake_status = 10;
/// A store (or counter) operation failed. A store or counter callback returned it.
pub const SEGFLAKE_STORE_ERROR: segflake_status = 11;
/// A date-prefixed serial ran out of sequence numbers within one second.
pub const SEGFLAKE_SERIAL_EXHAUSTED: segflake_status = 12;
/// The generator was closed, or was inherited by a forked child process.
pub const SEGFLAKE_CLOSED: segflake_status = 13;
/// Every worker ID of the layout stayed leased by live holders for claim_wait_ms.
pub const SEGFLAKE_NO_FREE_WORKER_ID: segflake_status = 14;
/// The worker-ID lease may have expired or was lost, or IDs reached the time mark the registry
/// accepted; IDs resume once a lease is held again.
pub const SEGFLAKE_LEASE_EXPIRED: segflake_status = 15;
/// This host's clock is behind the worker ID's time mark by more than max_drift_ms.
pub const SEGFLAKE_CLOCK_BEHIND_MARK: segflake_status = 16;
/// This host's clock differs from the live holders' median by more than max_peer_skew_ms, or from a
/// serial counter's clock by more than counter_max_behind_ms / counter_max_ahead_ms.
pub const SEGFLAKE_CLOCK_SKEW: segflake_status = 17;
/// The worker-ID registry failed or answered outside its contract.
pub const SEGFLAKE_REGISTRY_ERROR: segflake_status = 18;
/// The store has no such segment tag: create it (Leaf: a leaf_alloc row), or let the store create
/// missing tags. A store callback returns it for a tag it does not have.
pub const SEGFLAKE_UNKNOWN_TAG: segflake_status = 19;
/// The registry lost the record of a worker ID this process held (a restart without persistence,
/// FLUSHALL, eviction, a failover, a restore); IDs stopped at once and resume after a new claim.
pub const SEGFLAKE_REGISTRY_LOST_DATA: segflake_status = 20;
/// A Leaf snowflake node still reports for the node identity (ip:port) this process would take
/// over; stop that Leaf node first.
pub const SEGFLAKE_LEAF_NODE_ALIVE: segflake_status = 21;
/// The clock did not advance while the generator waited for the next tick: a clock frozen during
/// synchronous work (Cloudflare Workers' Date.now() within a request) allows sequence capacity x
/// (max_drift_ms + 1) IDs per reading.
pub const SEGFLAKE_CLOCK_STALLED: segflake_status = 22;
// </generated>
/// A bug inside segflake was caught at the library boundary (a Rust panic). The call had
/// no effect that can be relied on; please report the message.
pub const SEGFLAKE_PANIC: segflake_status = 100;

/// An error on its way to C: a status and the message stored for `segflake_last_error_message`.
#[derive(Debug)]
pub(crate) struct FfiError {
    pub(crate) status: segflake_status,
    pub(crate) message: String,
}

impl From<Error> for FfiError {
    fn from(e: Error) -> Self {
        FfiError {
            status: e.kind().status(),
            message: e.to_string(),
        }
    }
}

/// A binding-level `SEGFLAKE_INVALID_ARGUMENT` (NULL pointer, short buffer, bad name...).
pub(crate) fn invalid(message: impl Into<String>) -> FfiError {
    FfiError {
        status: ErrorKind::InvalidArgument.status(),
        message: message.into(),
    }
}

pub(crate) type FfiResult<T = ()> = Result<T, FfiError>;

struct LastError {
    status: segflake_status,
    message: Option<CString>,
}

thread_local! {
    static LAST_ERROR: RefCell<LastError> = const {
        RefCell::new(LastError { status: SEGFLAKE_OK, message: None })
    };
}

fn set_last_error(status: segflake_status, message: String) {
    // Interior NULs cannot occur in our messages, but never let one truncate silently.
    let message = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    with_last(|l| (l.status, l.message) = (status, Some(message)));
}

/// Runs `f` on the calling thread's last error (`None` while the thread exits).
fn with_last<R>(f: impl FnOnce(&mut LastError) -> R) -> Option<R> {
    let run = |cell: &RefCell<LastError>| cell.try_borrow_mut().ok().map(|mut l| f(&mut l));
    LAST_ERROR.try_with(run).ok().flatten()
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let what = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_string()
    };
    format!("internal error in segflake (a bug; please report it): {what}")
}

/// Runs the body of an exported function: catches panics, records the last error.
#[inline]
pub(crate) fn boundary<F: FnOnce() -> FfiResult>(f: F) -> segflake_status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => SEGFLAKE_OK,
        Ok(Err(e)) => {
            set_last_error(e.status, e.message);
            e.status
        }
        Err(payload) => {
            set_last_error(SEGFLAKE_PANIC, panic_message(payload.as_ref()));
            SEGFLAKE_PANIC
        }
    }
}

/// Runs a function that cannot report a status (a destructor): panics are caught and dropped.
#[inline]
pub(crate) fn boundary_void<F: FnOnce()>(f: F) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        set_last_error(SEGFLAKE_PANIC, panic_message(payload.as_ref()));
    }
}

/// The message of the last error on the calling thread, as a NUL-terminated UTF-8 string
/// (`""` if no call on this thread has failed yet).
///
/// Like `errno`, it is set by every call that returns an error and left alone by calls that
/// succeed, so read it right after the failing call. The message says what was wrong and
/// what is allowed.
///
/// Ownership: the string belongs to the library. It stays valid until the next failing
/// segflake call on this thread, `segflake_clear_last_error`, or thread exit; copy it
/// (or use `segflake_last_error_copy`) to keep it longer. Never free it.
///
/// Thread safety: each thread has its own last error.
#[unsafe(no_mangle)]
pub extern "C" fn segflake_last_error_message() -> *const c_char {
    let message = with_last(|l| l.message.as_ref().map(|m| m.as_ptr()));
    message.flatten().unwrap_or(c"".as_ptr())
}

/// The status of the last failing call on the calling thread (`SEGFLAKE_OK` if none).
///
/// Thread safety: each thread has its own last error.
#[unsafe(no_mangle)]
pub extern "C" fn segflake_last_error_status() -> segflake_status {
    with_last(|l| l.status).unwrap_or(SEGFLAKE_OK)
}

/// Copies the last error message of the calling thread into `buf`, like `snprintf`: at
/// most `capacity - 1` bytes and a terminating NUL are written (nothing when `capacity`
/// is 0, and then `buf` may be NULL). Returns the full length of the message in bytes,
/// without the NUL; a return value `>= capacity` means the copy was truncated.
///
/// Truncation never splits a UTF-8 character.
///
/// Ownership: `buf` belongs to the caller. Thread safety: each thread has its own last error.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_last_error_copy(buf: *mut c_char, capacity: usize) -> usize {
    let mut len = 0usize;
    boundary_void(|| {
        let message = with_last(|l| l.message.as_ref().map(|m| m.to_bytes().to_vec()));
        let message = message.flatten().unwrap_or_default();
        len = message.len();
        // SAFETY: the caller provides `capacity` writable bytes at `buf`.
        unsafe { crate::ptr::copy_cut(&message, buf, capacity) };
    });
    len
}

/// Forgets the calling thread's last error (status `SEGFLAKE_OK`, message `""`) and frees
/// its message.
///
/// Thread safety: each thread has its own last error.
#[unsafe(no_mangle)]
pub extern "C" fn segflake_clear_last_error() {
    with_last(|l| (l.status, l.message) = (SEGFLAKE_OK, None));
}

/// The stable machine-readable code of a status, e.g. `"CLOCK_MOVED_BACKWARDS"` for
/// `SEGFLAKE_CLOCK_MOVED_BACKWARDS`: the same string the JavaScript and Python bindings
/// expose as `err.code`. `"OK"` for `SEGFLAKE_OK`, `"PANIC"` for `SEGFLAKE_PANIC`,
/// `"UNKNOWN"` for any other value.
///
/// Ownership: a static string; never free it. Thread safety: safe from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn segflake_status_code(status: segflake_status) -> *const c_char {
    // The codes are the core's (ErrorKind::ALL), made NUL-terminated once.
    static CODES: OnceLock<Vec<CString>> = OnceLock::new();
    let codes = CODES.get_or_init(|| {
        let codes = ErrorKind::ALL.iter().map(|k| CString::new(k.code()));
        codes.map(Result::unwrap_or_default).collect()
    });
    let kind = ErrorKind::ALL.iter().position(|k| k.status() == status);
    match status {
        SEGFLAKE_OK => c"OK".as_ptr(),
        SEGFLAKE_PANIC => c"PANIC".as_ptr(),
        _ => kind.map_or(c"UNKNOWN".as_ptr(), |i| codes[i].as_ptr()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_become_a_status_and_a_message() {
        let status = boundary(|| panic!("boom"));
        assert_eq!(status, SEGFLAKE_PANIC);
        assert_eq!(segflake_last_error_status(), SEGFLAKE_PANIC);
        let msg = unsafe { std::ffi::CStr::from_ptr(segflake_last_error_message()) };
        assert!(msg.to_str().unwrap().contains("boom"));
        segflake_clear_last_error();
        assert_eq!(segflake_last_error_status(), SEGFLAKE_OK);
    }
}
