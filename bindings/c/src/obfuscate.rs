//! The keyed, reversible permutation of the 63-bit ID space.

use crate::error::{boundary, boundary_void, invalid, segflake_status, FfiResult};
use crate::ptr::{check_ptr, in_ref, in_str, write_out};
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

fn into_handle(inner: Obfuscator, out: *mut *mut segflake_obfuscator) {
    // SAFETY: `out` was checked by the caller of this helper.
    unsafe { out.write(Box::into_raw(Box::new(segflake_obfuscator { inner }))) };
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
    boundary(|| unsafe {
        check_ptr(out.cast_const(), "out")?;
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
        into_handle(Obfuscator::from_key_bytes(bytes)?, out);
        Ok(())
    })
}

fn parse_hex_key(hex: &str) -> FfiResult<[u8; 16]> {
    let digits = hex.as_bytes();
    if digits.len() != 2 * SEGFLAKE_OBFUSCATOR_KEY_LEN {
        return Err(invalid(format!(
            "invalid key: {hex:?} has {} characters; a hex key is exactly 32 hex digits (16 bytes)",
            hex.chars().count()
        )));
    }
    let mut key = [0u8; 16];
    for (i, pair) in digits.chunks(2).enumerate() {
        let nibble = |pos: usize| -> FfiResult<u8> {
            let c = digits[pos];
            (c as char).to_digit(16).map(|d| d as u8).ok_or_else(|| {
                invalid(format!(
                    "invalid key: {:?} at position {pos} is not a hex digit; allowed 0-9, a-f, A-F",
                    c as char
                ))
            })
        };
        let _ = pair;
        key[i] = (nibble(2 * i)? << 4) | nibble(2 * i + 1)?;
    }
    Ok(key)
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
    boundary(|| unsafe {
        check_ptr(out.cast_const(), "out")?;
        let key = parse_hex_key(in_str(key_hex, "key_hex")?)?;
        into_handle(Obfuscator::new(key), out);
        Ok(())
    })
}

/// Releases an obfuscator. NULL is ignored.
///
/// Thread safety: no other thread may be using it any more.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_obfuscator_free(obfuscator: *mut segflake_obfuscator) {
    boundary_void(|| {
        if !obfuscator.is_null() {
            // SAFETY: a handle made by Box::into_raw in this module.
            drop(unsafe { Box::from_raw(obfuscator) });
        }
    })
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
    boundary(|| unsafe {
        let o = in_ref(obfuscator, "obfuscator")?;
        write_out(out_id, "out_id", o.inner.obfuscate(id)?)
    })
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
    boundary(|| unsafe {
        let o = in_ref(obfuscator, "obfuscator")?;
        write_out(out_id, "out_id", o.inner.deobfuscate(id)?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_keys() {
        assert_eq!(
            parse_hex_key("000102030405060708090a0b0c0d0E0F").unwrap(),
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
        );
        let e = parse_hex_key("000102030405060708090a0b0c0d0e").unwrap_err();
        assert!(e.message.contains("32 hex digits"), "{}", e.message);
        let e = parse_hex_key("000102030405060708090a0b0c0d0e0g").unwrap_err();
        assert!(e.message.contains("position 31"), "{}", e.message);
    }
}
