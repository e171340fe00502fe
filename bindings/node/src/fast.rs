//! Hand-written Node-API callbacks for the hot paths.
//!
//! napi-derive's generated glue for a class method costs several hundred nanoseconds per
//! call (argument conversion scopes, borrow tracking); a bare Node-API callback costs
//! about as much as a no-op call. The few methods called once per ID are therefore
//! written against Node-API directly and installed on the class prototypes by the
//! package's entry point. They check the receiver's type tag before using it, exactly as
//! the generated glue does, and throw the same typed errors.

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;

use crate::errors::{to_js, Fail};
use crate::segment::{now_ms, SegmentEngine};
use crate::snowflake::Snowflake;

/// The receiver, if it is an instance of `T`; otherwise throws `InvalidArgumentError`.
pub(crate) unsafe fn receiver<'a, T: TypeTag>(
    env: sys::napi_env,
    this: sys::napi_value,
    method: &str,
    class: &str,
) -> Option<&'a T> {
    let mut matches = false;
    let tag = T::type_tag();
    let ok = !this.is_null()
        && unsafe { sys::napi_check_object_type_tag(env, this, &tag, &mut matches) }
            == sys::Status::napi_ok
        && matches;
    let mut wrapped = ptr::null_mut();
    if ok
        && unsafe { sys::napi_unwrap(env, this, &mut wrapped) } == sys::Status::napi_ok
        && !wrapped.is_null()
    {
        return Some(unsafe { &*(wrapped as *const T) });
    }
    let fail = Fail::arg(
        "receiver",
        format!("{method}() must be called on a {class} (keep the object: `gen.{method}()`, or bind it)"),
    );
    unsafe { throw(env, fail) };
    None
}

unsafe fn throw(env: sys::napi_env, fail: Fail) -> sys::napi_value {
    let err = to_js(&Env::from_raw(env), fail);
    unsafe { JsError::from(err).throw_into(env) };
    ptr::null_mut()
}

unsafe fn this_and_args(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> (sys::napi_value, sys::napi_value, *mut c_void) {
    let (mut argc, mut arg, mut this, mut data) =
        (1usize, ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    unsafe { sys::napi_get_cb_info(env, info, &mut argc, &mut arg, &mut this, &mut data) };
    (this, arg, data)
}

const BIGINT: u8 = 0;
const STRING: u8 = 1;
const NUMBER: u8 = 2;

/// The next ID of `gen` as a bigint, a decimal string or a number.
unsafe fn next_id_as(env: sys::napi_env, gen: &segflake::Snowflake, form: u8) -> sys::napi_value {
    let checked = if form == NUMBER {
        gen.layout().check_js_number().map_err(Fail::from)
    } else {
        Ok(())
    };
    let id = match checked.and_then(|()| Ok(gen.next_id()?)) {
        Ok(id) => id,
        Err(fail) => return unsafe { throw(env, fail) },
    };
    let mut out = ptr::null_mut();
    match form {
        BIGINT => unsafe { sys::napi_create_bigint_uint64(env, id, &mut out) },
        NUMBER => unsafe { sys::napi_create_double(env, id as f64, &mut out) },
        _ => {
            let (mut buf, mut i, mut v) = ([0u8; 20], 20, id);
            loop {
                i -= 1;
                buf[i] = b'0' + (v % 10) as u8;
                v /= 10;
                if v == 0 {
                    break;
                }
            }
            let text = &buf[i..];
            unsafe {
                sys::napi_create_string_latin1(
                    env,
                    text.as_ptr().cast(),
                    text.len() as isize,
                    &mut out,
                )
            }
        }
    };
    out
}

/// `Snowflake.prototype.nextId`, `nextIdString`, `nextIdNumber` (`FORM`).
unsafe extern "C" fn snowflake_next_id<const FORM: u8>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let (this, _, _) = unsafe { this_and_args(env, info) };
    let method = ["nextId", "nextIdString", "nextIdNumber"][FORM as usize];
    match unsafe { receiver::<Snowflake>(env, this, method, "Snowflake") } {
        Some(gen) => unsafe { next_id_as(env, &gen.inner, FORM) },
        None => ptr::null_mut(),
    }
}

/// `__SegmentEngine.prototype.take(onFetch)`: one ID or `null`; calls `onFetch(step)`
/// when the engine wants a segment.
unsafe extern "C" fn engine_take(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let (this, on_fetch, _) = unsafe { this_and_args(env, info) };
    match unsafe { receiver::<SegmentEngine>(env, this, "take", "SegmentEngine") } {
        Some(engine) => unsafe { take_with(env, &engine.inner, on_fetch) },
        None => ptr::null_mut(),
    }
}

unsafe fn take_with(
    env: sys::napi_env,
    engine: &segflake::SegmentEngine,
    on_fetch: sys::napi_value,
) -> sys::napi_value {
    let id = engine.try_next();
    let mut out = ptr::null_mut();
    if let Some(req) = engine
        .wants_fetch()
        .then(|| engine.begin_fetch(now_ms()))
        .flatten()
    {
        let (mut step, mut undefined) = (ptr::null_mut(), ptr::null_mut());
        unsafe {
            sys::napi_create_double(env, req.step as f64, &mut step);
            sys::napi_get_undefined(env, &mut undefined);
            if sys::napi_call_function(env, undefined, on_fetch, 1, &step, &mut out)
                != sys::Status::napi_ok
            {
                // The exception (if any) propagates; a fetch failure is the driver's.
                return ptr::null_mut();
            }
        }
    }
    match id {
        Some(id) => unsafe { sys::napi_create_bigint_uint64(env, id, &mut out) },
        None => unsafe { sys::napi_get_null(env, &mut out) },
    };
    out
}

/// A bound `nextId`/`nextIdString`/`nextIdNumber` (`FORM`): the generator travels in the
/// function's data (no receiver lookup).
unsafe extern "C" fn bound_next_id<const FORM: u8>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let (_, _, data) = unsafe { this_and_args(env, info) };
    unsafe { next_id_as(env, &*(data as *const segflake::Snowflake), FORM) }
}

/// A bound `take(onFetch)`.
unsafe extern "C" fn bound_take(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let (_, on_fetch, data) = unsafe { this_and_args(env, info) };
    unsafe { take_with(env, &*(data as *const segflake::SegmentEngine), on_fetch) }
}

unsafe extern "C" fn drop_arc<T>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    drop(unsafe { Arc::from_raw(data as *const T) });
}

/// A function calling `cb`; with `value`, the `Arc` travels as the function's data and is
/// released when the function is garbage-collected.
fn function<T>(
    env: &Env,
    name: &str,
    cb: Callback,
    value: Option<Arc<T>>,
) -> Result<Unknown<'static>> {
    let data = value.map_or(ptr::null_mut(), |v| Arc::into_raw(v) as *mut c_void);
    let (e, mut f) = (env.raw(), ptr::null_mut());
    let ok = unsafe {
        sys::napi_create_function(
            e,
            name.as_ptr().cast(),
            name.len() as isize,
            Some(cb),
            data,
            &mut f,
        ) == OK
            && (data.is_null()
                || sys::napi_add_finalizer(
                    e,
                    f,
                    data,
                    Some(drop_arc::<T>),
                    ptr::null_mut(),
                    ptr::null_mut(),
                ) == OK)
    };
    if !ok {
        if !data.is_null() {
            drop(unsafe { Arc::from_raw(data as *const T) });
        }
        return Err(Error::from_reason(format!("cannot create {name}")));
    }
    Ok(unsafe { Unknown::from_raw_unchecked(e, f) })
}

type Callback = unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;
const OK: sys::napi_status = sys::Status::napi_ok;
const ATTRIBUTES: i32 = sys::PropertyAttributes::configurable | sys::PropertyAttributes::writable;

/// `nextId` bound to a generator (installed as an own property by the entry point).
#[napi(js_name = "__bindNextId")]
pub fn bind_next_id(env: Env, gen: &Snowflake) -> Result<Unknown<'static>> {
    function(
        &env,
        "nextId",
        bound_next_id::<BIGINT>,
        Some(gen.inner.clone()),
    )
}

/// `nextIdString` bound to a generator.
#[napi(js_name = "__bindNextIdString")]
pub fn bind_next_id_string(env: Env, gen: &Snowflake) -> Result<Unknown<'static>> {
    function(
        &env,
        "nextIdString",
        bound_next_id::<STRING>,
        Some(gen.inner.clone()),
    )
}

/// `nextIdNumber` bound to a generator.
#[napi(js_name = "__bindNextIdNumber")]
pub fn bind_next_id_number(env: Env, gen: &Snowflake) -> Result<Unknown<'static>> {
    function(
        &env,
        "nextIdNumber",
        bound_next_id::<NUMBER>,
        Some(gen.inner.clone()),
    )
}

/// `take(onFetch)` bound to an engine.
#[napi(js_name = "__bindTake")]
pub fn bind_take(env: Env, engine: &SegmentEngine) -> Result<Unknown<'static>> {
    function(&env, "take", bound_take, Some(engine.inner.clone()))
}

/// Defines `(name, callback, is a getter, data)` on `exports[class].prototype`.
fn define(
    env: &Env,
    exports: &Object<'_>,
    class: &str,
    props: &[(&str, Callback, bool, usize)],
) -> Result<()> {
    let missing = || Error::from_reason(format!("no class {class}"));
    let proto: Object<'_> = exports
        .get::<Object<'_>>(class)?
        .ok_or_else(missing)?
        .get("prototype")?
        .ok_or_else(missing)?;
    let mut descriptors = Vec::new();
    for &(name, cb, getter, data) in props {
        descriptors.push(sys::napi_property_descriptor {
            utf8name: ptr::null(),
            name: unsafe { String::to_napi_value(env.raw(), name.to_string())? },
            method: (!getter).then_some(cb),
            getter: getter.then_some(cb),
            setter: None,
            value: ptr::null_mut(),
            // Like class members: configurable, not enumerable (Node-API ignores
            // `writable` for accessors).
            attributes: ATTRIBUTES,
            data: data as *mut c_void,
        });
    }
    match unsafe {
        sys::napi_define_properties(
            env.raw(),
            proto.raw(),
            descriptors.len(),
            descriptors.as_ptr(),
        )
    } {
        OK => Ok(()),
        _ => Err(Error::from_reason(format!(
            "cannot define the methods of {class}"
        ))),
    }
}

/// The methods and getters written against Node-API directly: `nextId`, `nextIdString`
/// and `nextIdNumber` of `Snowflake`, the `Layout` getters (one per field of the core's
/// layout record), and `__fast` (installed on the prototypes by `index.js`).
#[napi(module_exports)]
pub fn fast_exports(mut exports: Object, env: Env) -> Result<()> {
    let no_data = None::<Arc<()>>;
    let mut fast = Object::new(&env)?;
    fast.set(
        "snowflakeNextId",
        function(&env, "nextId", snowflake_next_id::<BIGINT>, no_data.clone())?,
    )?;
    fast.set("engineTake", function(&env, "take", engine_take, no_data)?)?;
    exports.set("__fast", fast)?;
    let methods = [
        ("nextId", snowflake_next_id::<BIGINT> as Callback, false, 0),
        ("nextIdString", snowflake_next_id::<STRING>, false, 0),
        ("nextIdNumber", snowflake_next_id::<NUMBER>, false, 0),
    ];
    define(&env, &exports, "Snowflake", &methods)?;
    define(
        &env,
        &exports,
        "__SegmentEngine",
        &[("take", engine_take, false, 0)],
    )?;
    let fields = <segflake::Layout as segflake::host::Record>::FIELDS
        .iter()
        .enumerate();
    let getters: Vec<_> = fields
        .map(|(i, f)| (f.camel, crate::layout::layout_field as Callback, true, i))
        .collect();
    define(&env, &exports, "Layout", &getters)
}
