//! `options_struct!`: an options struct with public fields and one chainable setter per
//! field, so that a field can be added later without breaking code that builds the options
//! with `X::default().with_a(..).with_b(..)`.

/// Defines a struct whose fields are all public and, for each field `f`, a
/// `const fn with_f(self, f) -> Self` documented with the field's own doc comment.
///
/// ```text
/// options_struct! {
///     /// Settings.
///     #[derive(Debug, Clone)]
///     pub struct Settings {
///         /// How many.
///         pub count: u64 => with_count,
///     }
/// }
/// ```
macro_rules! options_struct {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $doc:expr])*
                $fvis:vis $field:ident : $ty:ty => $setter:ident
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $(
                $(#[doc = $doc])*
                $fvis $field: $ty,
            )*
        }

        impl $name {
            $(
                #[doc = concat!(
                    "Sets [`", stringify!($field), "`](Self::", stringify!($field),
                    ") and returns the options, for chaining."
                )]
                #[doc = ""]
                $(#[doc = $doc])*
                #[must_use]
                #[inline]
                pub const fn $setter(mut self, $field: $ty) -> Self {
                    self.$field = $field;
                    self
                }
            )*
        }
    };
}
