//! Translating errors into `SegflakeError` subclasses.
//!
//! The JS classes are defined by the package's JS entry point (one per
//! `segflake::ErrorKind`, looping over [`error_kinds`]); at load time it hands this
//! module a factory `(code, message) => new Class(message)`. Every error leaving Rust is
//! built by that factory, so `instanceof` and `err.code` work on errors thrown by native
//! methods without wrapping them in JS.

use std::cell::Cell;
use std::ptr;

use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use segflake::ErrorKind;

/// A failure on its way to JS: the kind decides the class, the message is shown as is.
#[derive(Debug)]
pub struct Fail {
    pub kind: ErrorKind,
    pub message: String,
    /// The exception user code threw while the binding read an option (a `napi_value`,
    /// valid for the native call that makes the error), attached as the error's `cause`.
    pub cause: Option<usize>,
}

pub type R<T> = std::result::Result<T, Fail>;

impl From<segflake::Error> for Fail {
    fn from(e: segflake::Error) -> Fail {
        Fail::new(e.kind(), e.to_string())
    }
}

/// A napi failure (a JS exception thrown by user code we called, or an engine error)
/// that is not one of ours keeps its own error object.
impl From<napi::Error> for Fail {
    fn from(e: napi::Error) -> Fail {
        Fail::new(ErrorKind::InvalidArgument, e.reason)
    }
}

impl Fail {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Fail {
        let (message, cause) = (message.into(), None);
        Fail {
            kind,
            message,
            cause,
        }
    }

    /// A binding-level input error (`InvalidArgumentError`).
    pub fn arg(name: &str, reason: impl std::fmt::Display) -> Fail {
        Fail::new(
            ErrorKind::InvalidArgument,
            format!("invalid {name}: {reason}"),
        )
    }
}

thread_local! {
    /// `(env, reference to the factory function)` for the JS thread this runs on. Each
    /// worker thread loads the addon into its own env and registers its own factory.
    /// The reference is deliberately never deleted: it lives as long as the env.
    static FACTORY: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// Registers the function that builds error objects. Called once by the package's
/// entry point; not part of the public API.
#[napi(js_name = "__setErrorFactory")]
pub fn set_error_factory(
    env: Env,
    #[napi(ts_arg_type = "(code: string, message: string, cause?: unknown) => Error")]
    factory: Function<'_, FnArgs<(String, String)>, Unknown<'_>>,
) -> Result<()> {
    let mut reference = ptr::null_mut();
    if unsafe { sys::napi_create_reference(env.raw(), factory.raw(), 1, &mut reference) } != OK {
        return Err(Error::from_reason("cannot keep the error factory"));
    }
    FACTORY.with(|f| f.set((env.raw() as usize, reference as usize)));
    Ok(())
}

/// Every error kind: `{ code, className, status }`, in status order.
#[napi(object)]
pub struct ErrorKindInfo {
    pub code: String,
    pub class_name: String,
    pub status: i32,
}

#[napi]
pub fn error_kinds() -> Vec<ErrorKindInfo> {
    ErrorKind::ALL
        .iter()
        .map(|k| ErrorKindInfo {
            code: k.code().to_string(),
            class_name: k.class_name().to_string(),
            status: k.status(),
        })
        .collect()
}

/// Turns a [`Fail`] into the JS error napi throws. If user code we called (a getter of an
/// options object, a proxy trap) threw, that exception is rethrown unchanged instead.
pub fn to_js(env: &Env, fail: Fail) -> Error {
    let mut pending = false;
    unsafe { sys::napi_is_exception_pending(env.raw(), &mut pending) };
    if pending {
        let mut exception = ptr::null_mut();
        let status = unsafe { sys::napi_get_and_clear_last_exception(env.raw(), &mut exception) };
        if status == sys::Status::napi_ok && !exception.is_null() {
            return Error::from_unknown_without_coercion(unsafe {
                Unknown::from_raw_unchecked(env.raw(), exception)
            });
        }
    }
    let fallback = || Error::from_reason(format!("{}: {}", fail.kind.code(), fail.message));
    build(env, &fail).unwrap_or_else(fallback)
}

/// The error object made by the registered factory: `factory(code, message[, cause])`.
fn build(env: &Env, fail: &Fail) -> Option<Error> {
    let (owner, reference) = FACTORY.with(|f| f.get());
    let e = env.raw();
    let (mut func, mut undefined, mut out) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    let code = unsafe { String::to_napi_value(e, fail.kind.code().into()) }.ok()?;
    let mut args = vec![
        code,
        unsafe { String::to_napi_value(e, fail.message.clone()) }.ok()?,
    ];
    args.extend(fail.cause.map(|c| c as sys::napi_value));
    let ok = reference != 0
        && owner == e as usize
        && unsafe {
            sys::napi_get_reference_value(e, reference as sys::napi_ref, &mut func) == OK
                && sys::napi_get_undefined(e, &mut undefined) == OK
                && sys::napi_call_function(e, undefined, func, args.len(), args.as_ptr(), &mut out)
                    == OK
        };
    ok.then(|| Error::from(unsafe { Unknown::from_raw_unchecked(e, out) }))
}

const OK: sys::napi_status = sys::Status::napi_ok;

/// Runs `f`, turning its failure into the JS error.
pub fn run<T>(env: &Env, f: impl FnOnce() -> R<T>) -> Result<T> {
    f().js(env)
}

/// `r.map_err(|e| to_js(env, e))`.
pub trait IntoJs<T> {
    fn js(self, env: &Env) -> Result<T>;
}

impl<T, E: Into<Fail>> IntoJs<T> for std::result::Result<T, E> {
    #[inline]
    fn js(self, env: &Env) -> Result<T> {
        self.map_err(|e| to_js(env, e.into()))
    }
}
