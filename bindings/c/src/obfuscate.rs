//! The keyed, reversible permutation of the 63-bit ID space.

use crate::error::{boundary_void, invalid, segflake_status};
use crate::ptr::*;
use segflake_core::Obfuscator;
use std::ffi::c_char;

/// Length of an obfuscator key in bytes.
pub const SEGFLAKE_OBFUSCATOR_KEY_LEN: usize = 16;

/// An obfuscator: an opaque handle made by `segflake_obfuscator_new` or
/// `segflake_obfuscator_new_hex`, released with `segflake_obfuscator_free`.
///
/// It is immutable: one handle may be used from any number of threads at once. The same
/// key gives the same mapping in every language segflake ships for.
pub struct segflake_obfuscator {
    inner: Obfuscator,
}

/// Creates an obfuscator from a key of exactly 16 bytes (`key_len` must be 16).
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` for another length or a NULL pointer.
/// Ownership: the key is copied; the caller frees the obfuscator with
/// `segflake_obfuscator_free`. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_obfuscator_new(
    key: *const u8,
    key_len: usize,
    out: *mut *mut segflake_obfuscator,
) -> segflake_status {
    unsafe {
        make(out, || {
            if key.is_null() {
                return Err(invalid("key is NULL; pass 16 key bytes"));
            }
            if key_len != SEGFLAKE_OBFUSCATOR_KEY_LEN {
                // Refused before any slice is made from the caller's length.
                return Err(invalid(format!(
                "invalid key: the key is {key_len} bytes; it must be exactly 16 bytes (128 bits)"
            )));
            }
            // SAFETY: the caller provides `key_len` (16) readable bytes.
            let bytes = std::slice::from_raw_parts(key, key_len);
            Ok(segflake_obfuscator {
                inner: Obfuscator::from_key_bytes(bytes)?,
            })
        })
    }
}

/// Creates an obfuscator from a key written as exactly 32 hex digits (either case).
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` for another length, a non-hex character (the
/// message gives its position) or a NULL pointer.
/// Ownership: the caller frees the obfuscator with `segflake_obfuscator_free`.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_obfuscator_new_hex(
    key_hex: *const c_char,
    out: *mut *mut segflake_obfuscator,
) -> segflake_status {
    let key = || unsafe { in_str(key_hex, "key_hex") };
    unsafe {
        make(out, || {
            Ok(segflake_obfuscator {
                inner: Obfuscator::from_hex_key(key()?)?,
            })
        })
    }
}

/// Releases an obfuscator. NULL is ignored.
///
/// Thread safety: no other thread may be using it any more.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_obfuscator_free(obfuscator: *mut segflake_obfuscator) {
    boundary_void(|| unsafe { free_box(obfuscator) })
}

/// Maps an ID below 2^63 to another ID below 2^63 (a keyed permutation).
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` for an ID at or above 2^63 or a NULL pointer.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_obfuscator_obfuscate(
    obfuscator: *const segflake_obfuscator,
    id: u64,
    out_id: *mut u64,
) -> segflake_status {
    let map = |o: &segflake_obfuscator| Ok(o.inner.obfuscate(id)?);
    unsafe { query(obfuscator, "obfuscator", out_id, "out_id", map) }
}

/// The inverse of `segflake_obfuscator_obfuscate`.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` for a value at or above 2^63 or a NULL pointer.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_obfuscator_deobfuscate(
    obfuscator: *const segflake_obfuscator,
    id: u64,
    out_id: *mut u64,
) -> segflake_status {
    let map = |o: &segflake_obfuscator| Ok(o.inner.deobfuscate(id)?);
    unsafe { query(obfuscator, "obfuscator", out_id, "out_id", map) }
}
