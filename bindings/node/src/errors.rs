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
    /// A reference (`napi_ref`) to an object whose `value` is attached as the error's
    /// `cause`: the exception user code threw while the binding read an option.
    pub cause: Option<usize>,
}

pub type R<T> = std::result::Result<T, Fail>;

impl From<segflake::Error> for Fail {
    fn from(e: segflake::Error) -> Fail {
        Fail {
            kind: e.kind(),
            message: e.to_string(),
            cause: None,
        }
    }
}

impl Fail {
    /// A binding-level input error (`InvalidArgumentError`).
    pub fn arg(name: &str, reason: impl std::fmt::Display) -> Fail {
        Fail {
            kind: ErrorKind::InvalidArgument,
            message: format!("invalid {name}: {reason}"),
            cause: None,
        }
    }

    pub fn layout(reason: impl std::fmt::Display) -> Fail {
        Fail {
            kind: ErrorKind::InvalidLayout,
            message: format!("invalid layout: {reason}"),
            cause: None,
        }
    }

    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Fail {
        Fail {
            kind,
            message: message.into(),
            cause: None,
        }
    }
}

/// A napi failure (a JS exception thrown by user code we called, or an engine error)
/// that is not one of ours keeps its own error object.
impl From<napi::Error> for Fail {
    fn from(e: napi::Error) -> Fail {
        Fail {
            kind: ErrorKind::InvalidArgument,
            message: e.reason,
            cause: None,
        }
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
    let status = unsafe { sys::napi_create_reference(env.raw(), factory.raw(), 1, &mut reference) };
    if status != sys::Status::napi_ok {
        return Err(Error::new(
            Status::GenericFailure,
            "cannot keep the error factory",
        ));
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
    match build(env, &fail) {
        Some(err) => err,
        None => Error::new(
            Status::GenericFailure,
            format!("{}: {}", fail.kind.code(), fail.message),
        ),
    }
}

fn build(env: &Env, fail: &Fail) -> Option<Error> {
    let (owner, reference) = FACTORY.with(|f| f.get());
    if reference == 0 || owner != env.raw() as usize {
        return None;
    }
    let mut func = ptr::null_mut();
    let status =
        unsafe { sys::napi_get_reference_value(env.raw(), reference as sys::napi_ref, &mut func) };
    if status != sys::Status::napi_ok || func.is_null() {
        return None;
    }
    let code = fail.kind.code().to_string();
    let value = match take_cause(env, fail.cause) {
        None => {
            let func: Function<'_, FnArgs<(String, String)>, Unknown<'_>> =
                unsafe { Function::from_napi_value(env.raw(), func) }.ok()?;
            func.call(FnArgs::from((code, fail.message.clone()))).ok()?
        }
        Some(cause) => {
            let func: Function<'_, FnArgs<(String, String, Unknown<'_>)>, Unknown<'_>> =
                unsafe { Function::from_napi_value(env.raw(), func) }.ok()?;
            func.call(FnArgs::from((code, fail.message.clone(), cause)))
                .ok()?
        }
    };
    Some(Error::from(value))
}

/// The value behind a cause reference (the reference is released).
fn take_cause<'a>(env: &Env, cause: Option<usize>) -> Option<Unknown<'a>> {
    let reference = cause? as sys::napi_ref;
    let mut holder = ptr::null_mut();
    let mut value = ptr::null_mut();
    let ok = unsafe {
        sys::napi_get_reference_value(env.raw(), reference, &mut holder) == sys::Status::napi_ok
            && !holder.is_null()
            && sys::napi_get_named_property(env.raw(), holder, c"value".as_ptr(), &mut value)
                == sys::Status::napi_ok
    };
    unsafe { sys::napi_delete_reference(env.raw(), reference) };
    if !ok || value.is_null() {
        return None;
    }
    Some(unsafe { Unknown::from_raw_unchecked(env.raw(), value) })
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
