//! Text forms of IDs, into caller buffers.

use crate::error::{boundary, invalid, segflake_status, FfiResult};
use crate::ptr::*;
use segflake_core::codec::{self, Format};
use std::ffi::c_char;

/// A text form of IDs.
pub type segflake_format = u32;
/// The plain decimal number, 1 to 20 digits.
pub const SEGFLAKE_FORMAT_DECIMAL: segflake_format = 0;
/// Exactly 11 characters of `0-9A-Za-z`; byte order equals numeric order.
pub const SEGFLAKE_FORMAT_BASE62: segflake_format = 1;
/// Exactly 13 characters of Crockford's base32; byte order equals numeric order.
pub const SEGFLAKE_FORMAT_BASE32: segflake_format = 2;

/// Longest decimal ID in characters (`18446744073709551615`).
pub const SEGFLAKE_DECIMAL_MAX_LEN: usize = 20;
/// Length of a base62 ID in characters.
pub const SEGFLAKE_BASE62_LEN: usize = 11;
/// Length of a Crockford base32 ID in characters.
pub const SEGFLAKE_BASE32_LEN: usize = 13;
/// A buffer of this many bytes holds any encoded ID plus its terminating NUL.
pub const SEGFLAKE_ENCODE_BUF_LEN: usize = 21;

// The C constants are the positions in the core's list of formats.
const _: () = assert!(matches!(
    Format::ALL,
    [Format::Decimal, Format::Base62, Format::Base32]
));
const _: () = assert!(SEGFLAKE_BASE62_LEN == codec::BASE62_LEN);
const _: () = assert!(SEGFLAKE_BASE32_LEN == codec::BASE32_LEN);
const _: () = assert!(SEGFLAKE_DECIMAL_MAX_LEN == u64::MAX.ilog10() as usize + 1);
const _: () = assert!(SEGFLAKE_ENCODE_BUF_LEN == SEGFLAKE_DECIMAL_MAX_LEN + 1);

fn format_from_c(format: segflake_format) -> FfiResult<Format> {
    Format::ALL.get(format as usize).copied().ok_or_else(|| {
        invalid(format!(
            "format is {format}; allowed SEGFLAKE_FORMAT_DECIMAL (0), SEGFLAKE_FORMAT_BASE62 (1), \
             SEGFLAKE_FORMAT_BASE32 (2)"
        ))
    })
}

/// Looks a format up by name: `"decimal"`, `"base62"` or `"base32"`.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` for another name or a NULL pointer.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_format_from_name(
    name: *const c_char,
    out: *mut segflake_format,
) -> segflake_status {
    boundary(|| unsafe {
        let f = Format::from_name(in_str(name, "name")?)?;
        let c = Format::ALL.iter().position(|x| *x == f).unwrap_or(0);
        write_out(out, "out", c as segflake_format)
    })
}

/// Writes the text form of `id` in `format` into `buf` (`capacity` bytes) with a
/// terminating NUL. `SEGFLAKE_ENCODE_BUF_LEN` bytes always suffice.
///
/// `out_len` may be NULL; otherwise it receives the length of the text without the NUL,
/// also when the buffer is too small, so the caller can retry.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` for a buffer that is too small (nothing is written),
/// an unknown format or a NULL `buf`.
/// Ownership: `buf` is the caller's. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_encode(
    id: u64,
    format: segflake_format,
    buf: *mut c_char,
    capacity: usize,
    out_len: *mut usize,
) -> segflake_status {
    boundary(|| unsafe { write_text(&format_from_c(format)?.encode(id), buf, capacity, out_len) })
}

/// Parses the NUL-terminated `text` in `format` into `*out_id`.
///
/// Errors: `SEGFLAKE_PARSE_ERROR` (the message gives the position and character at fault,
/// or the expected length), `SEGFLAKE_INVALID_ARGUMENT` (unknown format, NULL pointer,
/// text that is not UTF-8).
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_parse(
    text: *const c_char,
    format: segflake_format,
    out_id: *mut u64,
) -> segflake_status {
    boundary(|| unsafe {
        let f = format_from_c(format)?;
        write_out(out_id, "out_id", f.parse(in_str(text, "text")?)?)
    })
}

/// `segflake_encode` with `SEGFLAKE_FORMAT_DECIMAL`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_encode_decimal(
    id: u64,
    buf: *mut c_char,
    capacity: usize,
    out_len: *mut usize,
) -> segflake_status {
    unsafe { segflake_encode(id, SEGFLAKE_FORMAT_DECIMAL, buf, capacity, out_len) }
}

/// `segflake_encode` with `SEGFLAKE_FORMAT_BASE62` (11 characters + NUL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_encode_base62(
    id: u64,
    buf: *mut c_char,
    capacity: usize,
    out_len: *mut usize,
) -> segflake_status {
    unsafe { segflake_encode(id, SEGFLAKE_FORMAT_BASE62, buf, capacity, out_len) }
}

/// `segflake_encode` with `SEGFLAKE_FORMAT_BASE32` (13 characters + NUL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_encode_base32(
    id: u64,
    buf: *mut c_char,
    capacity: usize,
    out_len: *mut usize,
) -> segflake_status {
    unsafe { segflake_encode(id, SEGFLAKE_FORMAT_BASE32, buf, capacity, out_len) }
}

/// `segflake_parse` with `SEGFLAKE_FORMAT_DECIMAL`: ASCII digits only, no sign or spaces.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_parse_decimal(
    text: *const c_char,
    out_id: *mut u64,
) -> segflake_status {
    unsafe { segflake_parse(text, SEGFLAKE_FORMAT_DECIMAL, out_id) }
}

/// `segflake_parse` with `SEGFLAKE_FORMAT_BASE62`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_parse_base62(
    text: *const c_char,
    out_id: *mut u64,
) -> segflake_status {
    unsafe { segflake_parse(text, SEGFLAKE_FORMAT_BASE62, out_id) }
}

/// `segflake_parse` with `SEGFLAKE_FORMAT_BASE32` (case-insensitive; `I`/`L` read as 1,
/// `O` as 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_parse_base32(
    text: *const c_char,
    out_id: *mut u64,
) -> segflake_status {
    unsafe { segflake_parse(text, SEGFLAKE_FORMAT_BASE32, out_id) }
}
