//! The growable ABI: options set by key through an opaque builder, results read by name
//! from an opaque record, both driven by the core's tables (`segflake::host`). The design
//! is documented on `segflake_options` (it becomes the header's documentation).

use crate::error::{boundary, boundary_void, invalid, segflake_status, FfiResult};
use crate::ptr::*;
use segflake_core::host::{self, Dialect, Options, Record, Value};
use segflake_core::{LayoutSpec, SegmentOptions, SerialOptions, SnowflakeConfig};
use std::ffi::{c_char, CString};

const NATIVE: Dialect = Dialect::NATIVE;

/// An options builder: the growable way to configure layouts and generators.
///
/// Options and results are set and read by key through opaque handles, driven by the
/// core's tables, so an option or result field added in a later version works from C with
/// no change to any struct: a program built against an older header keeps working with a
/// newer library, and the reverse fails cleanly (an unknown key is refused by name).
///
/// Design (the rustls-ffi way): no options or result struct crosses the ABI, so no struct
/// size can change under a program built against an older header.
///
/// * `segflake_options_new("segment", &opts)` makes a builder for one options set
///   (`"layout"`, `"snowflake"`, `"segment"`, `"serial"` or `"lease"`, the sets of the core).
/// * `segflake_options_set_u64/_i64/_f64/_bool/_str/_text/_options(opts, key, value)` and
///   `segflake_options_unset(opts, key)` check the key, the value's kind and its range at
///   once, with the core's messages (`SEGFLAKE_INVALID_ARGUMENT`, or
///   `SEGFLAKE_INVALID_LAYOUT` for a layout field); a refused call changes nothing. Checks
///   across options (`step` against `max_step`, a worker ID against its layout) run when
///   the options are used: `segflake_options_check_at` or a `*_new_with` constructor.
/// * A result is a `segflake_record`: `segflake_record_get_u64(rec, "remaining", &v, NULL)`.
///   A field that may be absent is read with a `bool *out_present`; passing NULL there
///   makes an absent value an error instead.
///
/// Ownership: the caller owns every builder and record it receives and frees each once with
/// `segflake_options_free` / `segflake_record_free` (NULL is ignored). Constructors copy what
/// they need from a builder, so it can be freed or reused right after. Strings read from a
/// record belong to the record. Threads: a builder may be read (constructors, getters) from
/// any number of threads, but not while a thread changes it; records are immutable.
///
/// NULL: every function refuses a NULL handle, key or out-pointer with
/// `SEGFLAKE_INVALID_ARGUMENT`, except `*_free` (ignored), `segflake_record_count` (0) and
/// `segflake_record_field_name` (NULL), `out_present` and `out_settings` (optional), and a
/// NULL builder given to a `*_new_with` constructor, which means the defaults.
pub struct segflake_options {
    pub(crate) set: String,
    pairs: Vec<(String, Value)>,
}

/// A result read by field name: segment stats, layout facts, decoded IDs and serials, the
/// settings of a builder. Immutable; free it with `segflake_record_free`.
pub struct segflake_record {
    fields: Vec<(CString, Value, Option<CString>)>,
}

/// Checks `key` and `value` as the set's `configure` would; an unset (Null) known key is
/// accepted.
fn check_in(set: &str, key: &str, value: &Value) -> segflake_core::Result<()> {
    if *value == Value::Null
        && host::find(segflake_core::catalog::option_set(set)?.1, key, NATIVE).is_some()
    {
        return Ok(());
    }
    match set {
        "layout" => host::check_key::<LayoutSpec>(key, value, NATIVE),
        "snowflake" => host::check_key::<SnowflakeConfig>(key, value, NATIVE),
        "segment" => host::check_key::<SegmentOptions>(key, value, NATIVE),
        "lease" => host::check_key::<segflake_core::LeaseOptions>(key, value, NATIVE),
        _ => host::check_key::<SerialOptions>(key, value, NATIVE),
    }
    .map(drop)
}

impl segflake_options {
    pub(crate) fn pairs(&self) -> impl Iterator<Item = (&String, Value)> {
        self.pairs.iter().map(|(k, v)| (k, v.clone()))
    }
}

/// The options in `opts` (NULL: the defaults), which must be of set `want`, with the
/// core's cross-field checks.
pub(crate) unsafe fn configured<T: Options>(
    opts: *const segflake_options,
    want: &str,
) -> FfiResult<T> {
    let Some(o) = (unsafe { opts.as_ref() }) else {
        return configure_pairs(Vec::new());
    };
    if o.set != want {
        return Err(invalid(format!(
            "opts holds {} options; this function takes {want} options \
             (segflake_options_new(\"{want}\", ...))",
            o.set
        )));
    }
    Ok(host::configure(o.pairs(), NATIVE)?)
}

/// Options from the fields of a 0.1 struct, through the same path as the builder's.
pub(crate) fn configure_pairs<T: Options>(pairs: Vec<(&str, Value)>) -> FfiResult<T> {
    Ok(host::configure(pairs, NATIVE)?)
}

/// A C enumeration value as the name the core's table expects (an unknown value is passed
/// on as a number, which the core refuses naming the option).
pub(crate) fn choice(value: u32, names: &[&str]) -> Value {
    names
        .get(value as usize)
        .map_or(Value::Int(value.into()), |n| Value::Str((*n).into()))
}

/// `Some(v)` as an integer, `None` as "keep the default".
pub(crate) fn opt(given: bool, v: u64) -> Value {
    if given {
        Value::uint(v)
    } else {
        Value::Null
    }
}

impl segflake_record {
    /// Nested maps (a snowflake's layout) become `outer.inner` names.
    fn from_pairs(pairs: Vec<(String, Value)>) -> segflake_record {
        let field = |(name, value): (String, Value)| {
            let text = match &value {
                Value::Str(s) => Some(CString::new(s.replace('\0', "\\0")).unwrap_or_default()),
                _ => None,
            };
            (CString::new(name).unwrap_or_default(), value, text)
        };
        let fields = host::flatten(pairs).into_iter().map(field).collect();
        segflake_record { fields }
    }
}

/// A new record of `r`'s fields, for [`crate::ptr::query`].
pub(crate) fn record<R: Record>(r: &R) -> FfiResult<*mut segflake_record> {
    let names = R::FIELDS.iter().map(|f| f.name.to_owned());
    let record = segflake_record::from_pairs(names.zip(r.values()).collect());
    Ok(Box::into_raw(Box::new(record)))
}

/// Makes a builder for the options set `set`: `"layout"`, `"snowflake"`, `"segment"` or
/// `"serial"`. Every option starts unset (its default; `worker_id` of a snowflake must be
/// set). The keys, kinds, ranges and defaults are the core's (the options reference in
/// docs/); keys are snake case (`max_step`).
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` for another set name or a NULL pointer.
/// Ownership: the caller frees the builder with `segflake_options_free`.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_options_new(
    set: *const c_char,
    out: *mut *mut segflake_options,
) -> segflake_status {
    unsafe {
        make(out, || {
            let set = in_str(set, "set")?;
            segflake_core::catalog::option_set(set)?;
            Ok(segflake_options {
                set: set.into(),
                pairs: Vec::new(),
            })
        })
    }
}

/// Releases a builder. NULL is ignored. Thread safety: no other thread may use it any more.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_options_free(opts: *mut segflake_options) {
    boundary_void(|| unsafe { free_box(opts) })
}

/// Sets `key` to the value `make` builds (from the builder's set name and the key), after
/// the core has checked it; a refused value changes nothing.
unsafe fn set(
    opts: *mut segflake_options,
    key: *const c_char,
    make: impl FnOnce(&str, &str) -> FfiResult<Value>,
) -> segflake_status {
    boundary(|| unsafe {
        let key = in_str(key, "key")?;
        let value = make(&in_ref(opts, "opts")?.set, key)?;
        let o = in_mut(opts, "opts")?;
        check_in(&o.set, key, &value)?;
        o.pairs.retain(|(k, _)| k != key);
        o.pairs.push((key.to_owned(), value));
        Ok(())
    })
}

/// Sets option `key` to an unsigned integer.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` (an unknown key: the message lists the allowed keys
/// and suggests a spelling; a value out of range or of the wrong kind: the message says
/// what is allowed; a NULL pointer), `SEGFLAKE_INVALID_LAYOUT` for a field of a layout. A
/// refused value leaves the builder unchanged; setting a key again replaces its value.
/// Thread safety: no other thread may use `opts` meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_options_set_u64(
    opts: *mut segflake_options,
    key: *const c_char,
    value: u64,
) -> segflake_status {
    unsafe { set(opts, key, |_, _| Ok(Value::uint(value))) }
}

/// Sets option `key` to a signed integer (`utc_offset_minutes`). As `segflake_options_set_u64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_options_set_i64(
    opts: *mut segflake_options,
    key: *const c_char,
    value: i64,
) -> segflake_status {
    unsafe { set(opts, key, |_, _| Ok(Value::Int(value.into()))) }
}

/// Sets option `key` to a number: where an integer is expected, only a whole number of at
/// most 2^53 - 1 is accepted. As `segflake_options_set_u64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_options_set_f64(
    opts: *mut segflake_options,
    key: *const c_char,
    value: f64,
) -> segflake_status {
    unsafe { set(opts, key, |_, _| Ok(Value::from_f64(value))) }
}

/// Sets option `key` to a boolean (`dynamic_step`). As `segflake_options_set_u64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_options_set_bool(
    opts: *mut segflake_options,
    key: *const c_char,
    value: bool,
) -> segflake_status {
    unsafe { set(opts, key, |_, _| Ok(Value::Bool(value))) }
}

/// Sets option `key` to a string (copied): a choice (`"random"`), a layout preset name
/// (`"sonyflake"`) or a time (`"2025-01-01"`; times also take Unix milliseconds through
/// `segflake_options_set_u64`). As `segflake_options_set_u64`, plus
/// `SEGFLAKE_INVALID_ARGUMENT` for text that is not UTF-8.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_options_set_str(
    opts: *mut segflake_options,
    key: *const c_char,
    value: *const c_char,
) -> segflake_status {
    unsafe {
        set(opts, key, |_, _| {
            Ok(Value::Str(in_str(value, "value")?.into()))
        })
    }
}

/// Sets option `key` from text as a configuration file or an environment variable holds
/// it, read as the option expects: `"1000"` is a number for `step`, `"true"` a boolean for
/// `dynamic_step`, other text a string. Integers of any size are read exactly (one above
/// the option's range is refused naming it). As `segflake_options_set_str`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_options_set_text(
    opts: *mut segflake_options,
    key: *const c_char,
    text: *const c_char,
) -> segflake_status {
    unsafe {
        set(opts, key, |set, key| {
            let text = in_str(text, "text")?;
            Ok(
                host::find(segflake_core::catalog::option_set(set)?.1, key, NATIVE)
                    .map_or(Value::Str(text.into()), |s| Value::from_text(&s.kind, text)),
            )
        })
    }
}

/// Sets option `key` to the options of another builder (copied now): a snowflake's
/// `layout` from a `"layout"` builder. As `segflake_options_set_u64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_options_set_options(
    opts: *mut segflake_options,
    key: *const c_char,
    value: *const segflake_options,
) -> segflake_status {
    unsafe {
        set(opts, key, |_, _| {
            Ok(Value::Map(in_ref(value, "value")?.pairs.clone()))
        })
    }
}

/// Returns option `key` to its default (a known key is required).
/// As `segflake_options_set_u64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_options_unset(
    opts: *mut segflake_options,
    key: *const c_char,
) -> segflake_status {
    unsafe { set(opts, key, |_, _| Ok(Value::Null)) }
}

/// Checks the options as a constructor would at `now_ms` (Unix milliseconds): every
/// cross-field rule, required options, and for layouts and snowflakes the layout itself and
/// the worker ID against it. On success, if `out_settings` is not NULL, it receives a new
/// record of every setting with its defaults filled in (a snowflake's layout fields are
/// named `layout.time_bits` and so on; an unset optional setting such as `last` is absent).
///
/// Errors: the status and message the constructor would give, or
/// `SEGFLAKE_INVALID_ARGUMENT` for a NULL `opts`. Ownership: the caller frees the record
/// with `segflake_record_free`. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_options_check_at(
    opts: *const segflake_options,
    now_ms: u64,
    out_settings: *mut *mut segflake_record,
) -> segflake_status {
    boundary(|| unsafe {
        let o = in_ref(opts, "opts")?;
        let settings = segflake_core::catalog::settings_of(&o.set, o.pairs(), NATIVE, now_ms)?;
        match out_settings.is_null() {
            true => Ok(()),
            false => put_box(out_settings, segflake_record::from_pairs(settings)),
        }
    })
}

/// Releases a record. NULL is ignored. Thread safety: no other thread may use it any more.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_record_free(record: *mut segflake_record) {
    boundary_void(|| unsafe { free_box(record) })
}

/// How many fields the record has (0 for NULL). Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_record_count(record: *const segflake_record) -> usize {
    unsafe { record.as_ref() }.map_or(0, |r| r.fields.len())
}

/// The name of field `index` (`0..segflake_record_count`), or NULL past the end or for a
/// NULL record. The string belongs to the record. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_record_field_name(
    record: *const segflake_record,
    index: usize,
) -> *const c_char {
    let field = unsafe { record.as_ref() }.and_then(|r| r.fields.get(index));
    field.map_or(std::ptr::null(), |f| f.0.as_ptr())
}

/// Reads field `name` with `read`, which returns `None` for a value of another type.
unsafe fn get<T>(
    record: *const segflake_record,
    name: *const c_char,
    out: *mut T,
    out_present: *mut bool,
    type_name: &str,
    read: impl FnOnce(&Value, &Option<CString>) -> Option<T>,
) -> segflake_status {
    boundary(|| unsafe {
        let r = in_ref(record, "record")?;
        let name = in_str(name, "name")?;
        check_ptr(out.cast_const(), "out")?;
        let Some((_, value, text)) = r.fields.iter().find(|f| f.0.to_bytes() == name.as_bytes())
        else {
            let names: Vec<_> = r.fields.iter().map(|f| f.0.to_string_lossy()).collect();
            return Err(invalid(format!(
                "no field {name:?} in this record; fields: {}",
                names.join(", ")
            )));
        };
        let present = *value != Value::Null;
        match (present, out_present.is_null()) {
            (false, true) => Err(invalid(format!(
                "field {name} is not set; pass out_present to read a field that may be absent"
            ))),
            (false, false) => write_out(out_present, "out_present", false),
            (true, _) => {
                let v = read(value, text)
                    .ok_or_else(|| invalid(format!("field {name} is {value}, not {type_name}")))?;
                if !out_present.is_null() {
                    write_out(out_present, "out_present", true)?;
                }
                write_out(out, "out", v)
            }
        }
    })
}

/// Reads field `name` as an unsigned integer into `*out`. `out_present` may be NULL: then an
/// absent (optional, unset) field is an error; otherwise `*out_present` says whether the
/// field is set, and `*out` is written only when it is.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` for an unknown name (the message lists the fields),
/// a field of another type (the message shows its value), an absent field without
/// `out_present`, or a NULL pointer. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_record_get_u64(
    record: *const segflake_record,
    name: *const c_char,
    out: *mut u64,
    out_present: *mut bool,
) -> segflake_status {
    let read = |v: &Value, _: &_| v.as_u64();
    unsafe { get(record, name, out, out_present, "an unsigned integer", read) }
}

/// Reads a signed integer field (`utc_offset_minutes`). As `segflake_record_get_u64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_record_get_i64(
    record: *const segflake_record,
    name: *const c_char,
    out: *mut i64,
    out_present: *mut bool,
) -> segflake_status {
    let read = |v: &Value, _: &_| match v {
        Value::Int(i) => i64::try_from(*i).ok(),
        _ => None,
    };
    unsafe { get(record, name, out, out_present, "a signed integer", read) }
}

/// Reads a number field (`ids_per_second`; integers are converted). As
/// `segflake_record_get_u64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_record_get_f64(
    record: *const segflake_record,
    name: *const c_char,
    out: *mut f64,
    out_present: *mut bool,
) -> segflake_status {
    let read = |v: &Value, _: &_| match v {
        Value::Float(f) => Some(*f),
        Value::Int(i) => Some(*i as f64),
        _ => None,
    };
    unsafe { get(record, name, out, out_present, "a number", read) }
}

/// Reads a boolean field (`next_ready`). As `segflake_record_get_u64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_record_get_bool(
    record: *const segflake_record,
    name: *const c_char,
    out: *mut bool,
    out_present: *mut bool,
) -> segflake_status {
    let read = |v: &Value, _: &_| match v {
        Value::Bool(b) => Some(*b),
        _ => None,
    };
    unsafe { get(record, name, out, out_present, "a boolean", read) }
}

/// Reads a text field (`tag`, `last_error`, `order`) as a NUL-terminated UTF-8 string that
/// belongs to the record (valid until `segflake_record_free`). As `segflake_record_get_u64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_record_get_str(
    record: *const segflake_record,
    name: *const c_char,
    out: *mut *const c_char,
    out_present: *mut bool,
) -> segflake_status {
    let read = |_: &Value, t: &Option<CString>| t.as_ref().map(|t| t.as_ptr());
    unsafe { get(record, name, out, out_present, "text", read) }
}
