//! Checked conversions of the raw pointers C hands us.

use crate::error::{boundary, invalid, segflake_status, FfiResult};
use segflake_core::fork::Origin;
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
    unsafe { copy_cut(text.as_bytes(), buf, capacity) };
    Ok(())
}

/// Copies `text` into `buf` like `snprintf`: at most `capacity - 1` bytes, cut at a UTF-8
/// character boundary, and a NUL (nothing when `buf` is NULL or `capacity` is 0).
///
/// # Safety
/// A non-NULL `buf` must have `capacity` writable bytes.
pub(crate) unsafe fn copy_cut(text: &[u8], buf: *mut c_char, capacity: usize) {
    if buf.is_null() || capacity == 0 {
        return;
    }
    let mut n = text.len().min(capacity - 1);
    while n > 0 && n < text.len() && (text[n] & 0xC0) == 0x80 {
        n -= 1;
    }
    // SAFETY: `n < capacity` writable bytes at `buf`.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
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

/// The body of a constructor: checks `out`, then hands C the new handle `f` makes.
///
/// # Safety
/// A non-NULL `out` must be writable.
pub(crate) unsafe fn make<T>(
    out: *mut *mut T,
    f: impl FnOnce() -> FfiResult<T>,
) -> segflake_status {
    boundary(|| unsafe {
        check_ptr(out.cast_const(), "out")?;
        out.write(Box::into_raw(Box::new(f()?)));
        Ok(())
    })
}

/// Releases a handle made by [`put_box`] or [`make`]; NULL is ignored.
///
/// # Safety
/// A non-NULL `p` must come from [`put_box`] and must not be used afterwards.
pub(crate) unsafe fn free_box<T>(p: *mut T) {
    if !p.is_null() {
        // SAFETY: the caller passes a handle made by Box::into_raw in this library.
        drop(unsafe { Box::from_raw(p) });
    }
}

/// The body of a query: borrows handle `h` (the argument `arg`), checks `out` (named
/// `out_name`), then writes what `f` computes.
///
/// # Safety
/// As [`in_ref`] for `h` and [`write_out`] for `out`.
pub(crate) unsafe fn query<H, T>(
    h: *const H,
    arg: &str,
    out: *mut T,
    out_name: &str,
    f: impl FnOnce(&H) -> FfiResult<T>,
) -> segflake_status {
    boundary(|| unsafe {
        let h = in_ref(h, arg)?;
        check_ptr(out.cast_const(), out_name)?;
        out.write(f(h)?);
        Ok(())
    })
}

/// A handle that issues IDs: named `ARG` in messages, refused in a forked child as `WHAT`.
pub(crate) trait Issuer {
    const ARG: &'static str;
    const WHAT: &'static str;
    fn origin(&self) -> &Origin;
}

macro_rules! issuer {
    ($handle:ty, $arg:literal, $what:literal) => {
        impl $crate::ptr::Issuer for $handle {
            const ARG: &'static str = $arg;
            const WHAT: &'static str = $what;
            fn origin(&self) -> &segflake_core::fork::Origin {
                &self.origin
            }
        }
    };
}
pub(crate) use issuer;

/// Borrows an issuing handle after `check` (its out-pointers), refusing a forked child.
unsafe fn issuing<'a, H: Issuer>(
    h: *const H,
    check: impl FnOnce() -> FfiResult,
) -> FfiResult<&'a H> {
    let h = unsafe { in_ref(h, H::ARG)? };
    check()?;
    h.origin().check(H::WHAT, "")?;
    Ok(h)
}

/// `*out_id = f(h)`: the body of every `*_next`.
///
/// # Safety
/// As [`in_ref`] for `h` and [`write_out`] for `out_id`.
pub(crate) unsafe fn next<H: Issuer>(
    h: *const H,
    out_id: *mut u64,
    f: impl FnOnce(&H) -> FfiResult<u64>,
) -> segflake_status {
    boundary(|| unsafe {
        let h = issuing(h, || check_ptr(out_id.cast_const(), "out_id"))?;
        out_id.write(f(h)?);
        Ok(())
    })
}

/// `f(h, out_ids[0..n])` with `n` in `1..=SEGFLAKE_MAX_BATCH`: the body of every `*_next_n`.
///
/// # Safety
/// A non-NULL `out_ids` must have `n` writable elements.
pub(crate) unsafe fn next_n<H: Issuer>(
    h: *const H,
    out_ids: *mut u64,
    n: usize,
    f: impl FnOnce(&H, &mut [u64]) -> FfiResult,
) -> segflake_status {
    boundary(|| unsafe {
        let h = issuing(h, || {
            check_ptr(out_ids.cast_const(), "out_ids")?;
            Ok(segflake_core::check_batch_size(n)?)
        })?;
        f(h, std::slice::from_raw_parts_mut(out_ids, n))
    })
}

/// `f(h)` into `*out_id` and `*out_ready`: the body of every `*_try_next`.
///
/// # Safety
/// As [`in_ref`] for `h` and [`write_out`] for the out-pointers.
pub(crate) unsafe fn try_next<H: Issuer>(
    h: *const H,
    out_id: *mut u64,
    out_ready: *mut bool,
    f: impl FnOnce(&H) -> FfiResult<Option<u64>>,
) -> segflake_status {
    boundary(|| unsafe {
        let h = issuing(h, || {
            check_ptr(out_id.cast_const(), "out_id")?;
            check_ptr(out_ready.cast_const(), "out_ready")
        })?;
        put_opt(out_id, out_ready, f(h)?);
        Ok(())
    })
}

/// `Some(v)`: `*flag = true` and `*out = v`; `None`: `*flag = false` (both checked before).
///
/// # Safety
/// Both pointers must be writable.
pub(crate) unsafe fn put_opt<T>(out: *mut T, flag: *mut bool, value: Option<T>) {
    unsafe {
        flag.write(value.is_some());
        if let Some(v) = value {
            out.write(v);
        }
    }
}
