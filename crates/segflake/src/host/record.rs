//! Results as (name, value) pairs: a record's fields, their kind in each host, and its values
//! in field order.

use super::Value;

/// How a record field reads in each host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldKind {
    /// An ID or a position among IDs: `bigint` in JS, `int` in Python, `uint64_t` in C.
    Id,
    /// A count, a duration or a small number: `number` in JS, `int` in Python, `uint64_t`
    /// in C.
    Count,
    /// A rate or a ratio: `number`, `float`, `double`.
    Float,
    Bool,
    Text,
}

/// One field of a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldSpec {
    pub name: &'static str,
    pub camel: &'static str,
    pub kind: FieldKind,
    /// May be absent (`undefined`/`None`/a getter returning "not set").
    pub optional: bool,
    pub doc: &'static str,
}

pub(crate) const fn field(
    name: &'static str,
    camel: &'static str,
    kind: FieldKind,
    doc: &'static str,
) -> FieldSpec {
    FieldSpec {
        name,
        camel,
        kind,
        optional: false,
        doc: super::spec::doc_text(doc),
    }
}

pub(crate) const fn optional(
    name: &'static str,
    camel: &'static str,
    kind: FieldKind,
    doc: &'static str,
) -> FieldSpec {
    FieldSpec {
        name,
        camel,
        kind,
        optional: true,
        doc: super::spec::doc_text(doc),
    }
}

/// A result type readable as (name, value) pairs.
pub trait Record {
    /// What the record is, for docs (`"SegmentStats"`).
    const NAME: &'static str;
    const FIELDS: &'static [FieldSpec];
    /// The values, in the order of [`Record::FIELDS`]; `Value::Null` for an absent optional.
    fn values(&self) -> Vec<Value>;
}

/// The value of the field named `name` (snake or camel case).
pub fn record_value<R: Record>(record: &R, name: &str) -> Option<Value> {
    let index = R::FIELDS
        .iter()
        .position(|f| f.name == name || f.camel == name)?;
    record.values().into_iter().nth(index)
}
