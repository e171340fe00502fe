//! The host layer: every option a binding accepts, described once, set through one
//! generic path; every result readable as (name, value) pairs.
//!
//! A binding converts its host's values (a JS object, Python keyword arguments, C setter
//! calls, command-line flags) into [`Value`]s and calls [`configure()`](fn@configure) with the
//! [`Dialect`] of its users. The options type's table ([`Options::SPECS`]) checks each
//! key, kind and range; every refusal names the option as the user spelled it
//! (`maxStep` in JS, `max_step` in Python, C and Rust, `--max-step` on the command line)
//! and says what is allowed. Results go the other way: a [`Record`] lists its
//! [`FieldSpec`]s and its values in the same order, so a binding builds a JS object, a
//! Python object or C getters with one loop.
//!
//! Adding an option is one row in a table here plus its field in the options struct; no
//! binding changes.

mod configure;
mod float;
mod record;
mod spec;
mod value;

pub use configure::{check_key, configure, configure_onto, flatten, spelled_settings};
pub(crate) use record::{field, optional};
pub use record::{record_value, FieldKind, FieldSpec, Record};
pub use spec::{
    batch_size_of, check, find, id_of, respell, respell_text, Dialect, Kind, OptionSpec, Options,
    Setting, Spelling, BATCH_SIZE, ID, MAX_WAIT_MS,
};
pub(crate) use spec::{doc_text, opt, uint};
pub use value::{json_string, json_string_into, Value, MAX_SAFE_INTEGER};

// Each domain's table lives beside its type; these keep the paths bindings use.
pub use crate::layout::{compose_of, layout_of, ComposeFields};
#[cfg(feature = "segment")]
pub use crate::segment::{allocation_of, store_failed_message, store_timeout_message};
#[cfg(feature = "serial")]
pub use crate::serial::counter_timeout_error;
pub use crate::snowflake::SnowflakeConfig;

#[cfg(all(test, feature = "segment"))]
mod tests;
