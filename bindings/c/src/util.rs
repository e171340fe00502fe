//! Worker-ID helpers and UTC time conversion.

use crate::error::{boundary, segflake_status};
use crate::ptr::*;
use segflake_core::host::{self, Dialect, Kind, OptionSpec, Value};
use std::ffi::c_char;

/// The ordinal of a Kubernetes StatefulSet pod from its hostname: `"web-7"` → 7,
/// `"web-7.web.default.svc.cluster.local"` → 7. The result still has to fit the layout.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` for a hostname without a numeric ordinal or a NULL
/// pointer. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_worker_id_from_hostname(
    hostname: *const c_char,
    out_worker_id: *mut u64,
) -> segflake_status {
    boundary(|| unsafe {
        let id = segflake_core::worker_id_from_hostname(in_str(hostname, "hostname")?)?;
        write_out(out_worker_id, "out_worker_id", id)
    })
}

const WORKER_BITS: OptionSpec =
    OptionSpec::argument("worker_bits", "workerBits", Kind::UInt { min: 0, max: 32 });

/// The low `worker_bits` bits of a dotted-quad IPv4 address: `"10.0.3.7"` with 10 bits →
/// 775.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` for a malformed address, `worker_bits` above 32 or a
/// NULL pointer. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_worker_id_from_ipv4(
    address: *const c_char,
    worker_bits: u32,
    out_worker_id: *mut u64,
) -> segflake_status {
    boundary(|| unsafe {
        host::check(
            &WORKER_BITS,
            &Value::uint(worker_bits.into()),
            Dialect::NATIVE,
        )?;
        let id =
            segflake_core::worker_id_from_ipv4(in_str(address, "address")?, worker_bits as u8)?;
        write_out(out_worker_id, "out_worker_id", id)
    })
}

const TEXT_WORKER_BITS: OptionSpec =
    OptionSpec::argument("worker_bits", "workerBits", Kind::UInt { min: 0, max: 63 });

/// A decimal worker ID from `text`, the value of environment variable `name`, checked
/// against a layout with `worker_bits` worker bits: `("POD_INDEX", "3", 10)` → 3. Pass
/// `getenv(name)` as `text`: NULL means the variable is not set. Kubernetes fills such a
/// variable from the `apps.kubernetes.io/pod-index` label through the downward API.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` (naming `name`) for an unset, empty or non-decimal
/// value, `worker_bits` above 63, or a NULL `name`/`out_worker_id`;
/// `SEGFLAKE_WORKER_ID_OUT_OF_RANGE` for a number that does not fit `worker_bits`. Thread
/// safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_worker_id_from_text(
    name: *const c_char,
    text: *const c_char,
    worker_bits: u32,
    out_worker_id: *mut u64,
) -> segflake_status {
    boundary(|| unsafe {
        let name = in_str(name, "name")?;
        let text = match text.is_null() {
            true => None,
            false => Some(in_str(text, "text")?),
        };
        host::check(
            &TEXT_WORKER_BITS,
            &Value::uint(worker_bits.into()),
            Dialect::NATIVE,
        )?;
        let id = segflake_core::worker_id_from_text(name, text, worker_bits as u8)?;
        write_out(out_worker_id, "out_worker_id", id)
    })
}

/// Parses a UTC time into Unix milliseconds: `"2025-01-01"`,
/// `"2025-01-01T00:00:00.000Z"` (seconds and milliseconds optional, `Z` optional, a space
/// may replace `T`) or a plain integer of Unix milliseconds. Useful for epochs.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` (the message says what is accepted) or a NULL
/// pointer. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_parse_time_ms(
    text: *const c_char,
    out_ms: *mut u64,
) -> segflake_status {
    boundary(|| unsafe {
        let ms = segflake_core::datetime::parse_time_ms(in_str(text, "text")?)?;
        write_out(out_ms, "out_ms", ms)
    })
}

/// A buffer of this many bytes holds `segflake_format_time_ms` output for any year up to
/// 9999 (`2025-01-01T00:00:00.000Z` and a NUL).
pub const SEGFLAKE_TIME_BUF_LEN: usize = 25;

/// Writes Unix milliseconds as ISO-8601 UTC (`2025-01-01T00:00:00.000Z`) into `buf`
/// with a terminating NUL; `out_len` (may be NULL) receives the text length.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` for a short buffer (nothing written) or NULL `buf`.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_format_time_ms(
    unix_ms: u64,
    buf: *mut c_char,
    capacity: usize,
    out_len: *mut usize,
) -> segflake_status {
    boundary(|| unsafe {
        let text = segflake_core::datetime::format_iso8601_ms(unix_ms);
        write_text(&text, buf, capacity, out_len)
    })
}
