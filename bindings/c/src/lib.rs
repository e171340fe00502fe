//! libsegflake: the C interface of segflake.
//!
//! Every exported function is `extern "C"`, checks every pointer it is given, catches any
//! panic before it can cross the boundary (reporting `SEGFLAKE_PANIC`), and returns a
//! `segflake_status`; the message of the last error of each thread is kept for
//! `segflake_last_error_message`. All ID logic lives in the `segflake` core crate: this
//! crate only translates types, errors and callbacks. The header `include/segflake.h` is
//! generated from these sources by cbindgen (see `cbindgen.toml`).
//!
//! Exported functions take raw pointers from C, so they are `unsafe extern "C"`; the
//! pointer rules for each one are written in its documentation, which becomes the header.
#![allow(non_camel_case_types, clippy::missing_safety_doc)]

pub mod codec;
pub mod error;
mod fork;
pub mod layout;
pub mod lease;
pub mod obfuscate;
pub mod options;
pub mod protocol;
mod ptr;
pub mod segment;
pub mod serial;
pub mod snowflake;
pub mod util;

pub use codec::*;
pub use error::*;
pub use layout::*;
pub use lease::*;
pub use obfuscate::*;
pub use options::*;
pub use protocol::*;
pub use segment::*;
pub use serial::*;
pub use snowflake::*;
pub use util::*;

use std::ffi::c_char;

/// Major version of the header (the library reports its own with `segflake_version`).
pub const SEGFLAKE_VERSION_MAJOR: u32 = 0;
/// Minor version of the header.
pub const SEGFLAKE_VERSION_MINOR: u32 = 1;
/// Patch version of the header.
pub const SEGFLAKE_VERSION_PATCH: u32 = 0;
/// `MAJOR * 10000 + MINOR * 100 + PATCH`, for `#if SEGFLAKE_VERSION_NUMBER >= ...`.
pub const SEGFLAKE_VERSION_NUMBER: u32 =
    SEGFLAKE_VERSION_MAJOR * 10000 + SEGFLAKE_VERSION_MINOR * 100 + SEGFLAKE_VERSION_PATCH;

/// The largest batch `segflake_snowflake_next_n` accepts in one call (16777216).
pub const SEGFLAKE_MAX_BATCH: usize = 1 << 24;

/// The version of the linked library, e.g. `"0.1.0"`: compare it with the header's
/// `SEGFLAKE_VERSION_*` macros to detect a header/library mismatch.
///
/// Ownership: a static string; never free it. Thread safety: any thread.
#[unsafe(no_mangle)]
pub extern "C" fn segflake_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The library's version as `MAJOR * 10000 + MINOR * 100 + PATCH`.
///
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub extern "C" fn segflake_version_number() -> u32 {
    SEGFLAKE_VERSION_NUMBER
}

// The header's constants are the core's (tests/c checks the version macros against
// `segflake_version()`, which is the crate's version).
const _: () = assert!(SEGFLAKE_MAX_BATCH == segflake_core::MAX_BATCH);
const _: () =
    assert!(SEGFLAKE_DEFAULT_MAX_DRIFT_MS == segflake_core::snowflake::DEFAULT_MAX_DRIFT_MS);
