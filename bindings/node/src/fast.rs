//! Hand-written Node-API callbacks for the hot paths.
//!
//! napi-derive's generated glue for a class method costs several hundred nanoseconds per
//! call (argument conversion scopes, borrow tracking); a bare Node-API callback costs
//! about as much as a no-op call. The few methods called once per ID are therefore
//! written against Node-API directly and installed on the class prototypes by the
//! package's entry point. They check the receiver's type tag before using it, exactly as
//! the generated glue does, and throw the same typed errors.

use std::ptr;

use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;

use crate::errors::{to_js, Fail};
use crate::segment::{now_ms, SegmentEngine};
use crate::snowflake::Snowflake;

/// The receiver, if it is an instance of `T`; otherwise throws `InvalidArgumentError`.
unsafe fn receiver<'a, T: TypeTag>(
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

unsafe fn throw(env: sys::napi_env, fail: Fail) {
    let err = to_js(&Env::from_raw(env), fail);
    unsafe { JsError::from(err).throw_into(env) };
}

unsafe fn bigint(env: sys::napi_env, v: u64) -> sys::napi_value {
    let mut out = ptr::null_mut();
    unsafe { sys::napi_create_bigint_uint64(env, v, &mut out) };
    out
}

unsafe fn this_and_args<const N: usize>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> (sys::napi_value, [sys::napi_value; N], usize) {
    let mut argc = N;
    let mut argv = [ptr::null_mut(); N];
    let mut this = ptr::null_mut();
    unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.as_mut_ptr(),
            &mut this,
            ptr::null_mut(),
        )
    };
    (this, argv, argc)
}

/// `Snowflake.prototype.nextId`.
unsafe extern "C" fn snowflake_next_id(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let (this, _, _) = unsafe { this_and_args::<0>(env, info) };
    let Some(gen) = (unsafe { receiver::<Snowflake>(env, this, "nextId", "Snowflake") }) else {
        return ptr::null_mut();
    };
    match gen.inner.next_id() {
        Ok(id) => unsafe { bigint(env, id) },
        Err(e) => {
            unsafe { throw(env, e.into()) };
            ptr::null_mut()
        }
    }
}

/// `__SegmentEngine.prototype.take(onFetch)`: one ID or `null`; calls `onFetch(step)`
/// when the engine wants a segment.
unsafe extern "C" fn engine_take(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let (this, argv, _) = unsafe { this_and_args::<1>(env, info) };
    let Some(engine) = (unsafe { receiver::<SegmentEngine>(env, this, "take", "SegmentEngine") })
    else {
        return ptr::null_mut();
    };
    unsafe { take_with(env, &engine.inner, argv[0]) }
}

unsafe fn take_with(
    env: sys::napi_env,
    engine: &segflake::SegmentEngine,
    on_fetch: sys::napi_value,
) -> sys::napi_value {
    let id = engine.try_next();
    if engine.wants_fetch() {
        if let Some(req) = engine.begin_fetch(now_ms()) {
            let mut step = ptr::null_mut();
            let mut undefined = ptr::null_mut();
            let mut result = ptr::null_mut();
            unsafe {
                sys::napi_create_double(env, req.step as f64, &mut step);
                sys::napi_get_undefined(env, &mut undefined);
                if sys::napi_call_function(env, undefined, on_fetch, 1, &step, &mut result)
                    != sys::Status::napi_ok
                {
                    // The exception (if any) propagates; a fetch failure is the driver's.
                    return ptr::null_mut();
                }
            }
        }
    }
    match id {
        Some(id) => unsafe { bigint(env, id) },
        None => {
            let mut null = ptr::null_mut();
            unsafe { sys::napi_get_null(env, &mut null) };
            null
        }
    }
}

/// The `Arc` behind a bound function's data pointer.
unsafe fn data_of<'a, T>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> (&'a T, [sys::napi_value; 1]) {
    let mut argc = 1usize;
    let mut argv = [ptr::null_mut(); 1];
    let mut data = ptr::null_mut();
    unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.as_mut_ptr(),
            ptr::null_mut(),
            &mut data,
        )
    };
    (unsafe { &*(data as *const T) }, argv)
}

/// A bound `nextId`: the generator travels in the function's data (no receiver lookup).
unsafe extern "C" fn bound_next_id(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let (gen, _) = unsafe { data_of::<segflake::Snowflake>(env, info) };
    match gen.next_id() {
        Ok(id) => unsafe { bigint(env, id) },
        Err(e) => {
            unsafe { throw(env, e.into()) };
            ptr::null_mut()
        }
    }
}

/// A bound `nextIdString`.
unsafe extern "C" fn bound_next_id_string(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let (gen, _) = unsafe { data_of::<segflake::Snowflake>(env, info) };
    match gen.next_id() {
        Ok(id) => {
            let mut buf = [0u8; 20];
            let mut i = buf.len();
            let mut v = id;
            loop {
                i -= 1;
                buf[i] = b'0' + (v % 10) as u8;
                v /= 10;
                if v == 0 {
                    break;
                }
            }
            let mut out = ptr::null_mut();
            unsafe {
                sys::napi_create_string_latin1(
                    env,
                    buf[i..].as_ptr().cast(),
                    (buf.len() - i) as isize,
                    &mut out,
                )
            };
            out
        }
        Err(e) => {
            unsafe { throw(env, e.into()) };
            ptr::null_mut()
        }
    }
}

/// A bound `nextIdNumber` (layouts of at most 53 bits).
unsafe extern "C" fn bound_next_id_number(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let (gen, _) = unsafe { data_of::<segflake::Snowflake>(env, info) };
    let bits = gen.layout().total_bits();
    if bits > 53 {
        let fail = Fail::layout(format!(
            "nextIdNumber() needs a layout of at most 53 bits (such as \"js-safe\"); this layout has {bits} bits: \
             use nextId() (bigint) or nextIdString()"
        ));
        unsafe { throw(env, fail) };
        return ptr::null_mut();
    }
    match gen.next_id() {
        Ok(id) => {
            let mut out = ptr::null_mut();
            unsafe { sys::napi_create_double(env, id as f64, &mut out) };
            out
        }
        Err(e) => {
            unsafe { throw(env, e.into()) };
            ptr::null_mut()
        }
    }
}

/// A bound `take(onFetch)`.
unsafe extern "C" fn bound_take(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let (engine, argv) = unsafe { data_of::<segflake::SegmentEngine>(env, info) };
    unsafe { take_with(env, engine, argv[0]) }
}

unsafe extern "C" fn drop_arc<T>(
    _env: sys::napi_env,
    data: *mut std::ffi::c_void,
    _hint: *mut std::ffi::c_void,
) {
    drop(unsafe { std::sync::Arc::from_raw(data as *const T) });
}

/// A function calling `cb` with `value` as its data; the `Arc` is released when the
/// function is garbage-collected.
fn bound<T>(
    env: &Env,
    name: &str,
    cb: sys::napi_callback,
    value: std::sync::Arc<T>,
) -> Result<Unknown<'static>> {
    let data = std::sync::Arc::into_raw(value) as *mut std::ffi::c_void;
    let mut f = ptr::null_mut();
    let status = unsafe {
        sys::napi_create_function(
            env.raw(),
            name.as_ptr().cast(),
            name.len() as isize,
            cb,
            data,
            &mut f,
        )
    };
    if status != sys::Status::napi_ok {
        drop(unsafe { std::sync::Arc::from_raw(data as *const T) });
        return Err(Error::new(
            Status::GenericFailure,
            format!("cannot create {name}"),
        ));
    }
    let status = unsafe {
        sys::napi_add_finalizer(
            env.raw(),
            f,
            data,
            Some(drop_arc::<T>),
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    if status != sys::Status::napi_ok {
        drop(unsafe { std::sync::Arc::from_raw(data as *const T) });
        return Err(Error::new(
            Status::GenericFailure,
            format!("cannot finalize {name}"),
        ));
    }
    Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), f) })
}

/// `nextId` bound to a generator (installed as an own property by the entry point).
#[napi(js_name = "__bindNextId")]
pub fn bind_next_id(env: Env, gen: &Snowflake) -> Result<Unknown<'static>> {
    bound(&env, "nextId", Some(bound_next_id), gen.inner.clone())
}

/// `nextIdString` bound to a generator.
#[napi(js_name = "__bindNextIdString")]
pub fn bind_next_id_string(env: Env, gen: &Snowflake) -> Result<Unknown<'static>> {
    bound(
        &env,
        "nextIdString",
        Some(bound_next_id_string),
        gen.inner.clone(),
    )
}

/// `nextIdNumber` bound to a generator.
#[napi(js_name = "__bindNextIdNumber")]
pub fn bind_next_id_number(env: Env, gen: &Snowflake) -> Result<Unknown<'static>> {
    bound(
        &env,
        "nextIdNumber",
        Some(bound_next_id_number),
        gen.inner.clone(),
    )
}

/// `take(onFetch)` bound to an engine.
#[napi(js_name = "__bindTake")]
pub fn bind_take(env: Env, engine: &SegmentEngine) -> Result<Unknown<'static>> {
    bound(&env, "take", Some(bound_take), engine.inner.clone())
}

fn function(env: &Env, name: &str, cb: sys::napi_callback) -> Result<Unknown<'static>> {
    let mut f = ptr::null_mut();
    let status = unsafe {
        sys::napi_create_function(
            env.raw(),
            name.as_ptr().cast(),
            name.len() as isize,
            cb,
            ptr::null_mut(),
            &mut f,
        )
    };
    if status != sys::Status::napi_ok {
        return Err(Error::new(
            Status::GenericFailure,
            format!("cannot create {name}"),
        ));
    }
    Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), f) })
}

/// The fast methods, installed on the prototypes by `index.js`.
#[napi(module_exports)]
pub fn fast_exports(mut exports: Object, env: Env) -> Result<()> {
    let mut fast = Object::new(&env)?;
    fast.set(
        "snowflakeNextId",
        function(&env, "nextId", Some(snowflake_next_id))?,
    )?;
    fast.set("engineTake", function(&env, "take", Some(engine_take))?)?;
    exports.set("__fast", fast)?;
    Ok(())
}
