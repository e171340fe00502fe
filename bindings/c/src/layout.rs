//! Layouts: presets, custom layouts, their lifetime queries, decode and compose.

use crate::error::{boundary, boundary_void, segflake_status, FfiResult};
use crate::options::{
    choice, configure_pairs, configured, record, segflake_options, segflake_record,
};
use crate::ptr::*;
use segflake_core::{FieldOrder, Layout, LayoutSpec, Preset, Value};
use std::ffi::c_char;

/// The order of the worker and sequence fields below the time field.
pub type segflake_order = u32;
/// `time | worker | sequence` (Twitter, Leaf, hutool, uid-generator).
pub const SEGFLAKE_ORDER_TIME_WORKER_SEQUENCE: segflake_order = 0;
/// `time | sequence | worker` (Sonyflake).
pub const SEGFLAKE_ORDER_TIME_SEQUENCE_WORKER: segflake_order = 1;

/// Deprecated (frozen 0.1 layout; new fields go to `segflake_options_new("layout")`):
/// unvalidated layout parameters, filled by the caller (start from
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

/// Deprecated (frozen 0.1 layout; `segflake_layout_get_record` reads every fact by name):
/// everything a layout can tell about itself (`segflake_layout_get_info`).
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

const ORDERS: [FieldOrder; 2] = [
    FieldOrder::TimeWorkerSequence,
    FieldOrder::TimeSequenceWorker,
];

pub(crate) fn spec_to_c(s: LayoutSpec) -> segflake_layout_spec {
    segflake_layout_spec {
        time_bits: u32::from(s.time_bits),
        worker_bits: u32::from(s.worker_bits),
        sequence_bits: u32::from(s.sequence_bits),
        tick_ms: s.tick_ms,
        epoch_ms: s.epoch_ms,
        order: ORDERS.iter().position(|o| *o == s.order).unwrap_or(0) as segflake_order,
        min_lifetime_years: s.min_lifetime_years,
    }
}

/// A 0.1 spec read through the core's layout options (one path, one set of messages).
pub(crate) fn spec_from_c(s: &segflake_layout_spec) -> FfiResult<LayoutSpec> {
    let names = ORDERS.map(FieldOrder::name);
    configure_pairs(vec![
        ("time_bits", Value::uint(s.time_bits.into())),
        ("worker_bits", Value::uint(s.worker_bits.into())),
        ("sequence_bits", Value::uint(s.sequence_bits.into())),
        ("tick_ms", Value::uint(s.tick_ms)),
        ("epoch_ms", Value::uint(s.epoch_ms)),
        ("order", choice(s.order, &names)),
        (
            "min_lifetime_years",
            Value::uint(s.min_lifetime_years.into()),
        ),
    ])
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
        let preset = Preset::from_name(in_str(name, "name")?)?;
        write_out(out, "out", spec_to_c(preset.spec()))
    })
}

unsafe fn new_layout(
    out: *mut *mut segflake_layout,
    spec: impl FnOnce() -> FfiResult<LayoutSpec>,
    now_ms: Option<u64>,
) -> segflake_status {
    unsafe {
        make(out, || {
            let spec = spec()?;
            let inner = now_ms.map_or_else(|| spec.build(), |now| spec.build_at(now))?;
            Ok(segflake_layout { inner })
        })
    }
}

/// Deprecated (use `segflake_layout_new_with`): validates `spec` against the system clock
/// and returns a new layout in `*out`.
///
/// Errors: `SEGFLAKE_INVALID_LAYOUT` (a width, tick, order, lifetime or epoch out of range;
/// the message names the field and what is allowed), `SEGFLAKE_LAYOUT_EXHAUSTED` (the
/// layout runs out of time within `min_lifetime_years`; the message says when),
/// `SEGFLAKE_INVALID_ARGUMENT` (NULL pointer). On error `*out` is left unchanged.
///
/// Ownership: the caller owns the new layout and frees it with `segflake_layout_free`.
/// Thread safety: safe from any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_layout_new(
    spec: *const segflake_layout_spec,
    out: *mut *mut segflake_layout,
) -> segflake_status {
    unsafe { new_layout(out, || spec_from_c(in_ref(spec, "spec")?), None) }
}

/// Like `segflake_layout_new`, but validates as if the time were `now_ms` (Unix
/// milliseconds): reproducible checks, or checks for a deployment date.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_layout_new_at(
    spec: *const segflake_layout_spec,
    now_ms: u64,
    out: *mut *mut segflake_layout,
) -> segflake_status {
    unsafe { new_layout(out, || spec_from_c(in_ref(spec, "spec")?), Some(now_ms)) }
}

/// A layout from a `"layout"` options builder (`segflake_options_new("layout", ...)`; NULL:
/// the twitter preset): `preset`, then `time_bits`, `worker_bits`, `sequence_bits`,
/// `tick_ms`, `epoch_ms` (Unix ms or `"2025-01-01"`), `order`, `min_lifetime_years`,
/// validated against the system clock (`segflake_options_check_at` checks for another
/// time). Errors as `segflake_layout_new`, plus `SEGFLAKE_INVALID_ARGUMENT` for a builder
/// of another set. Ownership: the builder stays the caller's; free the layout with
/// `segflake_layout_free`. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_layout_new_with(
    opts: *const segflake_options,
    out: *mut *mut segflake_layout,
) -> segflake_status {
    unsafe { new_layout(out, || configured(opts, "layout"), None) }
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
    unsafe {
        new_layout(
            out,
            || Ok(Preset::from_name(in_str(name, "name")?)?.spec()),
            None,
        )
    }
}

/// Releases a layout. NULL is ignored. Generators made from the layout keep working (they
/// hold their own copy).
///
/// Ownership: the handle must come from this library and must not be used afterwards.
/// Thread safety: no other thread may be using this handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_layout_free(layout: *mut segflake_layout) {
    boundary_void(|| unsafe { free_box(layout) })
}

/// Deprecated (use `segflake_layout_get_record`): fills `*out` with the layout's
/// parameters and queries: lifetime, exhaustion time, maximum IDs per second, when IDs pass
/// 2^53, largest worker ID and sequence.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` for a NULL pointer.
/// Thread safety: safe from any thread; the layout is only read.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_layout_get_info(
    layout: *const segflake_layout,
    out: *mut segflake_layout_info,
) -> segflake_status {
    unsafe { query(layout, "layout", out, "out", |l| Ok(info_of(&l.inner))) }
}

fn info_of(l: &Layout) -> segflake_layout_info {
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

/// Every fact of a layout as a new record (`segflake_record_get_u64(rec, "max_worker_id",
/// ...)`): `time_bits`, `worker_bits`, `sequence_bits`, `tick_ms`, `epoch_ms`, `order`
/// (text), `min_lifetime_years`, `total_bits`, `lifetime_ms`, `exhausts_at_ms`,
/// `max_ids_per_second`, `js_safe_until_ms` (absent when IDs never pass 2^53),
/// `max_worker_id`, `max_sequence`, `max_tick`, `max_id`, and any field added later.
///
/// Ownership: free the record with `segflake_record_free`. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_layout_get_record(
    layout: *const segflake_layout,
    out: *mut *mut segflake_record,
) -> segflake_status {
    unsafe { query(layout, "layout", out, "out", |l| record(&l.inner)) }
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
    unsafe {
        query(layout, "layout", out, "out", |l| {
            Ok(decoded_to_c(l.inner.decode(id)?))
        })
    }
}

/// The fields of `id` as a new record: `timestamp_ms`, `tick`, `worker_id`, `sequence`,
/// `datacenter_id` (absent on a layout without a datacenter field; with one, `worker_id` is
/// the worker within it), and any field added later. Errors as `segflake_layout_decode`; free the record with
/// `segflake_record_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_layout_decode_record(
    layout: *const segflake_layout,
    id: u64,
    out: *mut *mut segflake_record,
) -> segflake_status {
    unsafe {
        query(layout, "layout", out, "out", |l| {
            record(&l.inner.decode(id)?)
        })
    }
}

/// The worker field of `worker_id` within `datacenter_id`, on a layout with a datacenter
/// field (`datacenter_bits`, e.g. the `"twitter-dc"` preset: hutool's
/// `Snowflake(workerId, dataCenterId)`): `datacenter_id << (worker_bits - datacenter_bits)
/// | worker_id`, the worker ID that `segflake_layout_compose` and the snowflake options take.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` if the layout has no datacenter field, if either part
/// does not fit its bits (the message names the range), or for a NULL pointer.
/// Thread safety: safe from any thread; the layout is only read.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_layout_worker_field(
    layout: *const segflake_layout,
    datacenter_id: u64,
    worker_id: u64,
    out: *mut u64,
) -> segflake_status {
    let field = |l: &segflake_layout| Ok(l.inner.worker_field(Some(datacenter_id), worker_id)?);
    unsafe { query(layout, "layout", out, "out", field) }
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
    let compose = |l: &segflake_layout| Ok(l.inner.compose(tick, worker_id, sequence)?);
    unsafe { query(layout, "layout", out_id, "out_id", compose) }
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
    let compose =
        |l: &segflake_layout| Ok(l.inner.compose_at(timestamp_ms, worker_id, sequence)?);
    unsafe { query(layout, "layout", out_id, "out_id", compose) }
}
