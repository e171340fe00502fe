//! Checked conversions of the raw pointers C hands us.

use crate::error::{invalid, FfiResult};
use std::ffi::{c_char, CStr};

/// Writes `value` through an out-pointer, refusing NULL and misaligned pointers.
///
/// # Safety
/// A non-NULL `p` must point to writable memory for a `T`.
pub(crate) unsafe fn write_out<T>(p: *mut T, name: &str, value: T) -> FfiResult {
    check_ptr(p.cast_const(), name)?;
    // SAFETY: checked non-NULL and aligned; the caller guarantees it is writable.
    unsafe { p.write(value) };
    Ok(())
}

/// Refuses NULL and misaligned pointers before anything is computed.
pub(crate) fn check_ptr<T>(p: *const T, name: &str) -> FfiResult {
    if p.is_null() {
        return Err(invalid(format!(
            "{name} is NULL; a valid pointer is required"
        )));
    }
    if !p.is_aligned() {
        return Err(invalid(format!(
            "{name} ({p:p}) is not aligned to {} bytes; pass a pointer to a properly aligned value",
            std::mem::align_of::<T>()
        )));
    }
    Ok(())
}

/// Borrows an input struct or handle, refusing NULL and misaligned pointers.
///
/// # Safety
/// A non-NULL `p` must point to a live `T` for the lifetime `'a`.
pub(crate) unsafe fn in_ref<'a, T>(p: *const T, name: &str) -> FfiResult<&'a T> {
    check_ptr(p, name)?;
    // SAFETY: checked; the caller guarantees it is live.
    Ok(unsafe { &*p })
}

/// Borrows a NUL-terminated UTF-8 string.
///
/// # Safety
/// A non-NULL `p` must point to a NUL-terminated string that lives for `'a`.
pub(crate) unsafe fn in_str<'a>(p: *const c_char, name: &str) -> FfiResult<&'a str> {
    if p.is_null() {
        return Err(invalid(format!(
            "{name} is NULL; a NUL-terminated UTF-8 string is required"
        )));
    }
    // SAFETY: non-NULL; the caller guarantees NUL termination.
    let bytes = unsafe { CStr::from_ptr(p) }.to_bytes();
    std::str::from_utf8(bytes).map_err(|e| {
        invalid(format!(
            "{name} is not valid UTF-8 (invalid byte at offset {}); text arguments must be UTF-8",
            e.valid_up_to()
        ))
    })
}

/// Copies `text` into a caller buffer of `capacity` bytes with a terminating NUL, like
/// `snprintf` but refusing to truncate. `out_len`, when not NULL, always receives the
/// length of `text` (without the NUL), so a caller can retry with a larger buffer.
///
/// # Safety
/// `buf` must have `capacity` writable bytes; a non-NULL `out_len` must be writable.
pub(crate) unsafe fn write_text(
    text: &str,
    buf: *mut c_char,
    capacity: usize,
    out_len: *mut usize,
) -> FfiResult {
    if !out_len.is_null() {
        // SAFETY: caller guarantees a non-NULL out_len is writable.
        unsafe { write_out(out_len, "out_len", text.len())? };
    }
    if buf.is_null() {
        return Err(invalid(
            "buf is NULL; pass a buffer and its capacity in bytes",
        ));
    }
    let need = text.len() + 1;
    if capacity < need {
        return Err(invalid(format!(
            "buffer too small: capacity is {capacity} bytes, the text needs {need} \
             ({} characters and the terminating NUL)",
            text.len()
        )));
    }
    // SAFETY: `capacity >= need` writable bytes at `buf`.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), text.len());
        *buf.add(text.len()) = 0;
    }
    Ok(())
}

/// Borrows a handle mutably, refusing NULL and misaligned pointers.
///
/// # Safety
/// A non-NULL `p` must point to a live `T` that nothing else uses for the lifetime `'a`.
pub(crate) unsafe fn in_mut<'a, T>(p: *mut T, name: &str) -> FfiResult<&'a mut T> {
    check_ptr(p.cast_const(), name)?;
    // SAFETY: checked; the caller guarantees exclusive access.
    Ok(unsafe { &mut *p })
}

/// Hands a new handle to C through `out` (checked).
///
/// # Safety
/// A non-NULL `out` must be writable.
pub(crate) unsafe fn put_box<T>(out: *mut *mut T, value: T) -> FfiResult {
    unsafe { write_out(out, "out", Box::into_raw(Box::new(value))) }
}

/// Releases a handle made by [`put_box`]; NULL is ignored.
///
/// # Safety
/// A non-NULL `p` must come from [`put_box`] and must not be used afterwards.
pub(crate) unsafe fn free_box<T>(p: *mut T) {
    if !p.is_null() {
        // SAFETY: the caller passes a handle made by Box::into_raw in this library.
        drop(unsafe { Box::from_raw(p) });
    }
}
