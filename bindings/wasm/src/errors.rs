//! Turning a [`segflake::Error`] into a typed JS error.
//!
//! The JS error classes live in the package's `errors.js` (so that bundlers and
//! TypeScript see them as ordinary exports). At start-up the package hands this module a
//! factory `(className, code, message) => Error`; until then, and if the factory itself
//! throws, errors are plain `Error`s with `name` and `code` set, so an error is never lost.

use std::cell::RefCell;

use segflake::{Error, ErrorKind};
use wasm_bindgen::prelude::*;

use crate::convert::set;

thread_local! {
    static FACTORY: RefCell<Option<js_sys::Function>> = const { RefCell::new(None) };
}

/// The error kept by the last failing sentinel-returning call (`segflake_wasm_hot::stash`),
/// as a JS error.
#[wasm_bindgen(js_name = "__takeError")]
pub fn take_error() -> JsValue {
    match segflake_wasm_hot::take_stashed() {
        Some(e) => to_js(e),
        None => to_js(Error::invalid_argument("state", "no error is pending")),
    }
}

/// Installs the function that builds JS errors: `(className, code, message) => Error`.
#[wasm_bindgen(js_name = "__setErrorFactory")]
pub fn set_error_factory(factory: js_sys::Function) {
    FACTORY.with(|f| *f.borrow_mut() = Some(factory));
}

/// Every error kind as `{ code, className, status }`, in status order (`ErrorKind::ALL`).
#[wasm_bindgen(js_name = errorKinds, unchecked_return_type = "ErrorKindInfo[]")]
pub fn error_kinds() -> js_sys::Array {
    ErrorKind::ALL
        .iter()
        .map(|kind| {
            let o = js_sys::Object::new();
            set(&o, "className", &kind.class_name().into());
            set(&o, "code", &kind.code().into());
            set(&o, "status", &kind.status().into());
            JsValue::from(o)
        })
        .collect()
}

/// The JS error for `err`.
#[cold]
pub fn to_js(err: Error) -> JsValue {
    let kind = err.kind();
    let message = err.to_string();
    let made = FACTORY.with(|f| {
        f.borrow().as_ref().and_then(|factory| {
            factory
                .call3(
                    &JsValue::UNDEFINED,
                    &kind.class_name().into(),
                    &kind.code().into(),
                    &JsValue::from_str(&message),
                )
                .ok()
        })
    });
    match made {
        Some(e) if e.is_object() => e,
        _ => {
            let e = js_sys::Error::new(&message);
            e.set_name(kind.class_name());
            set(&e, "code", &kind.code().into());
            e.into()
        }
    }
}

/// `Result<T, segflake::Error>` → `Result<T, JsValue>`.
pub trait IntoJs<T> {
    fn js(self) -> Result<T, JsValue>;
}

impl<T> IntoJs<T> for Result<T, Error> {
    #[inline]
    fn js(self) -> Result<T, JsValue> {
        self.map_err(to_js)
    }
}
