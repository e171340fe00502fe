//! Layouts: presets, custom layouts, their lifetime queries, decode and compose.

use crate::error::{boundary, boundary_void, invalid, segflake_status, FfiError, FfiResult};
use crate::ptr::{in_ref, in_str, write_out};
use segflake_core::{FieldOrder, Layout, LayoutSpec, Preset};
use std::ffi::c_char;

/// The order of the worker and sequence fields below the time field.
pub type segflake_order = u32;
/// `time | worker | sequence` (Twitter, Leaf, hutool, uid-generator).
pub const SEGFLAKE_ORDER_TIME_WORKER_SEQUENCE: segflake_order = 0;
/// `time | sequence | worker` (Sonyflake).
pub const SEGFLAKE_ORDER_TIME_SEQUENCE_WORKER: segflake_order = 1;

/// Unvalidated layout parameters, filled by the caller (start from
/// `segflake_layout_spec_preset`) and validated by `segflake_layout_new`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct segflake_layout_spec {
    /// Width of the time field, 8..=63.
    pub time_bits: u32,
    /// Width of the worker field, 0..=31.
    pub worker_bits: u32,
    /// Width of the sequence field, 0..=31. The three widths sum to at most 63.
    pub sequence_bits: u32,
    /// Length of one time unit in milliseconds, 1..=86400000.
    pub tick_ms: u64,
    /// Unix milliseconds of tick 0; must not be in the future.
    pub epoch_ms: u64,
    /// `SEGFLAKE_ORDER_TIME_WORKER_SEQUENCE` or `SEGFLAKE_ORDER_TIME_SEQUENCE_WORKER`.
    pub order: segflake_order,
    /// Refuse the layout if its time runs out within this many years (default 10; 0 turns
    /// the check off; at most 10000).
    pub min_lifetime_years: u32,
}

/// A validated layout: an opaque handle made by `segflake_layout_new` or
/// `segflake_layout_preset` and released with `segflake_layout_free`.
///
/// A layout is immutable, so one handle may be used from any number of threads at once.
pub struct segflake_layout {
    pub(crate) inner: Layout,
}

/// Everything a layout can tell about itself (`segflake_layout_get_info`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct segflake_layout_info {
    /// The validated parameters (epoch overrides applied).
    pub spec: segflake_layout_spec,
    /// `time_bits + worker_bits + sequence_bits` (at most 63).
    pub total_bits: u32,
    /// How long the time field lasts from the epoch, in milliseconds (saturating).
    pub lifetime_ms: u64,
    /// Unix milliseconds at which the time field overflows (saturating).
    pub exhausts_at_ms: u64,
    /// IDs one worker can issue per second at most.
    pub max_ids_per_second: u64,
    /// False if IDs of this layout never exceed 2^53 (JavaScript's safe integers).
    pub has_js_safe_until: bool,
    /// When `has_js_safe_until`: Unix milliseconds from which IDs exceed 2^53; else 0.
    pub js_safe_until_ms: u64,
    /// Largest worker ID: `2^worker_bits - 1`.
    pub max_worker_id: u64,
    /// Largest sequence number: `2^sequence_bits - 1`.
    pub max_sequence: u64,
    /// Largest tick: `2^time_bits - 1`.
    pub max_tick: u64,
    /// Largest ID this layout produces.
    pub max_id: u64,
}

/// The fields of a decoded ID.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct segflake_decoded {
    /// Unix milliseconds of the start of the ID's tick.
    pub timestamp_ms: u64,
    /// Ticks since the layout's epoch.
    pub tick: u64,
    pub worker_id: u64,
    pub sequence: u64,
}

pub(crate) fn order_from_c(order: segflake_order) -> FfiResult<FieldOrder> {
    match order {
        SEGFLAKE_ORDER_TIME_WORKER_SEQUENCE => Ok(FieldOrder::TimeWorkerSequence),
        SEGFLAKE_ORDER_TIME_SEQUENCE_WORKER => Ok(FieldOrder::TimeSequenceWorker),
        other => Err(invalid(format!(
            "order is {other}; allowed SEGFLAKE_ORDER_TIME_WORKER_SEQUENCE (0) or \
             SEGFLAKE_ORDER_TIME_SEQUENCE_WORKER (1)"
        ))),
    }
}

fn order_to_c(order: FieldOrder) -> segflake_order {
    match order {
        FieldOrder::TimeWorkerSequence => SEGFLAKE_ORDER_TIME_WORKER_SEQUENCE,
        FieldOrder::TimeSequenceWorker => SEGFLAKE_ORDER_TIME_SEQUENCE_WORKER,
    }
}

pub(crate) fn spec_to_c(s: LayoutSpec) -> segflake_layout_spec {
    segflake_layout_spec {
        time_bits: u32::from(s.time_bits),
        worker_bits: u32::from(s.worker_bits),
        sequence_bits: u32::from(s.sequence_bits),
        tick_ms: s.tick_ms,
        epoch_ms: s.epoch_ms,
        order: order_to_c(s.order),
        min_lifetime_years: s.min_lifetime_years,
    }
}

pub(crate) fn spec_from_c(s: &segflake_layout_spec) -> FfiResult<LayoutSpec> {
    let bits = |name: &str, v: u32, allowed: &str| -> FfiResult<u8> {
        u8::try_from(v).map_err(|_| FfiError {
            status: segflake_core::ErrorKind::InvalidLayout.status(),
            message: format!("invalid layout: {name} is {v}; allowed {allowed}"),
        })
    };
    Ok(LayoutSpec {
        time_bits: bits("time_bits", s.time_bits, "8..=63")?,
        worker_bits: bits("worker_bits", s.worker_bits, "0..=31")?,
        sequence_bits: bits("sequence_bits", s.sequence_bits, "0..=31")?,
        tick_ms: s.tick_ms,
        epoch_ms: s.epoch_ms,
        order: order_from_c(s.order)?,
        min_lifetime_years: s.min_lifetime_years,
    })
}

fn into_handle(layout: Layout, out: *mut *mut segflake_layout) -> FfiResult {
    let handle = Box::into_raw(Box::new(segflake_layout { inner: layout }));
    // SAFETY: `out` was checked by the caller of this helper.
    unsafe { out.write(handle) };
    Ok(())
}

/// Fills `out` with the parameters of a preset: `"twitter"` (41/10/12 bits, 1 ms,
/// epoch 2010-11-04), `"sonyflake"` (39/16/8 as time-sequence-worker, 10 ms, epoch
/// 2025-01-01), `"uid-generator"` (28/22/13, 1 s, epoch 2016-05-20: give a newer epoch)
/// or `"js-safe"` (41/3/9, 53 bits in all, 1 ms, epoch 2025-01-01). Change any field
/// (usually `epoch_ms`) before `segflake_layout_new`.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` for an unknown name or a NULL pointer.
/// Ownership: both pointers belong to the caller. Thread safety: safe from any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_layout_spec_preset(
    name: *const c_char,
    out: *mut segflake_layout_spec,
) -> segflake_status {
    boundary(|| unsafe {
        crate::ptr::check_ptr(out.cast_const(), "out")?;
        let preset = Preset::from_name(in_str(name, "name")?)?;
        write_out(out, "out", spec_to_c(preset.spec()))
    })
}

/// Validates `spec` against the system clock and returns a new layout in `*out`.
///
/// Errors: `SEGFLAKE_INVALID_LAYOUT` (a width, tick or epoch out of range; the message
/// names the field and the allowed range), `SEGFLAKE_LAYOUT_EXHAUSTED` (the layout runs
/// out of time within `min_lifetime_years`; the message says when),
/// `SEGFLAKE_INVALID_ARGUMENT` (NULL pointer, bad `order`, `min_lifetime_years` too large).
/// On error `*out` is left unchanged.
///
/// Ownership: the caller owns the new layout and frees it with `segflake_layout_free`.
/// Thread safety: safe from any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_layout_new(
    spec: *const segflake_layout_spec,
    out: *mut *mut segflake_layout,
) -> segflake_status {
    boundary(|| unsafe {
        crate::ptr::check_ptr(out.cast_const(), "out")?;
        let layout = spec_from_c(in_ref(spec, "spec")?)?.build()?;
        into_handle(layout, out)
    })
}

/// Like `segflake_layout_new`, but validates as if the time were `now_ms` (Unix
/// milliseconds): reproducible checks, or checks for a deployment date.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_layout_new_at(
    spec: *const segflake_layout_spec,
    now_ms: u64,
    out: *mut *mut segflake_layout,
) -> segflake_status {
    boundary(|| unsafe {
        crate::ptr::check_ptr(out.cast_const(), "out")?;
        let layout = spec_from_c(in_ref(spec, "spec")?)?.build_at(now_ms)?;
        into_handle(layout, out)
    })
}

/// A preset layout with its default epoch (see `segflake_layout_spec_preset`), validated
/// against the system clock. `"uid-generator"` is refused with `SEGFLAKE_LAYOUT_EXHAUSTED`
/// (its time ran out on 2024-11-20): give it a newer epoch through a spec.
///
/// Ownership: the caller frees the new layout with `segflake_layout_free`.
/// Thread safety: safe from any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_layout_preset(
    name: *const c_char,
    out: *mut *mut segflake_layout,
) -> segflake_status {
    boundary(|| unsafe {
        crate::ptr::check_ptr(out.cast_const(), "out")?;
        let layout = Preset::from_name(in_str(name, "name")?)?.spec().build()?;
        into_handle(layout, out)
    })
}

/// Releases a layout. NULL is ignored. Generators made from the layout keep working (they
/// hold their own copy).
///
/// Ownership: the handle must come from this library and must not be used afterwards.
/// Thread safety: no other thread may be using this handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_layout_free(layout: *mut segflake_layout) {
    boundary_void(|| {
        if !layout.is_null() {
            // SAFETY: the caller passes a handle made by Box::into_raw in this library.
            drop(unsafe { Box::from_raw(layout) });
        }
    })
}

pub(crate) fn info_of(l: &Layout) -> segflake_layout_info {
    let js = l.js_safe_until_ms();
    segflake_layout_info {
        spec: spec_to_c(l.spec()),
        total_bits: l.total_bits(),
        lifetime_ms: l.lifetime_ms(),
        exhausts_at_ms: l.exhausts_at_ms(),
        max_ids_per_second: l.max_ids_per_second(),
        has_js_safe_until: js.is_some(),
        js_safe_until_ms: js.unwrap_or(0),
        max_worker_id: l.max_worker_id(),
        max_sequence: l.max_sequence(),
        max_tick: l.max_tick(),
        max_id: l.max_id(),
    }
}

/// Fills `*out` with the layout's parameters and queries: lifetime, exhaustion time,
/// maximum IDs per second, when IDs pass 2^53, largest worker ID and sequence.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` for a NULL pointer.
/// Thread safety: safe from any thread; the layout is only read.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_layout_get_info(
    layout: *const segflake_layout,
    out: *mut segflake_layout_info,
) -> segflake_status {
    boundary(|| unsafe {
        let l = in_ref(layout, "layout")?;
        write_out(out, "out", info_of(&l.inner))
    })
}

pub(crate) fn decoded_to_c(d: segflake_core::DecodedId) -> segflake_decoded {
    segflake_decoded {
        timestamp_ms: d.timestamp_ms,
        tick: d.tick,
        worker_id: d.worker_id,
        sequence: d.sequence,
    }
}

/// Splits `id` into its timestamp, tick, worker ID and sequence.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` if `id` has bits above the layout's total (it was
/// not made by this layout) or for a NULL pointer.
/// Thread safety: safe from any thread; the layout is only read.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_layout_decode(
    layout: *const segflake_layout,
    id: u64,
    out: *mut segflake_decoded,
) -> segflake_status {
    boundary(|| unsafe {
        let l = in_ref(layout, "layout")?;
        crate::ptr::check_ptr(out.cast_const(), "out")?;
        write_out(out, "out", decoded_to_c(l.inner.decode(id)?))
    })
}

/// Packs a tick (time units since the epoch), worker ID and sequence into an ID.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` if the tick or sequence does not fit its field,
/// `SEGFLAKE_WORKER_ID_OUT_OF_RANGE` if the worker ID does not, or for a NULL pointer.
/// Thread safety: safe from any thread; the layout is only read.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_layout_compose(
    layout: *const segflake_layout,
    tick: u64,
    worker_id: u64,
    sequence: u64,
    out_id: *mut u64,
) -> segflake_status {
    boundary(|| unsafe {
        let l = in_ref(layout, "layout")?;
        crate::ptr::check_ptr(out_id.cast_const(), "out_id")?;
        write_out(
            out_id,
            "out_id",
            l.inner.compose(tick, worker_id, sequence)?,
        )
    })
}

/// Packs a Unix time in milliseconds (rounded down to its tick), worker ID and sequence
/// into an ID. Errors as `segflake_layout_compose`, plus `SEGFLAKE_INVALID_ARGUMENT` for a
/// time before the epoch.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_layout_compose_at(
    layout: *const segflake_layout,
    timestamp_ms: u64,
    worker_id: u64,
    sequence: u64,
    out_id: *mut u64,
) -> segflake_status {
    boundary(|| unsafe {
        let l = in_ref(layout, "layout")?;
        crate::ptr::check_ptr(out_id.cast_const(), "out_id")?;
        let id = l.inner.compose_at(timestamp_ms, worker_id, sequence)?;
        write_out(out_id, "out_id", id)
    })
}
