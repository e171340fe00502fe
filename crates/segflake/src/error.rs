//! The one error type of segflake.
//!
//! Every message says what was wrong and what is allowed. Bindings translate an
//! [`Error`] by its [`ErrorKind`]: the kind's [`code`](ErrorKind::code) is the stable
//! string every language exposes (JS `err.code`, Python `exc.code`), its
//! [`class_name`](ErrorKind::class_name) names the JS/Python error class, and its
//! [`status`](ErrorKind::status) is the C return code.

use std::borrow::Cow;
use std::fmt;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The one wording of a number outside its range, for every caller that refuses one (the
/// core's options, the CLI's flags, the service's parameters):
/// `"{value} is out of range; allowed {min}..={max}"`.
pub fn out_of_range(value: impl fmt::Display, min: u64, max: u64) -> String {
    format!("{value} is out of range; allowed {min}..={max}")
}

/// The one quoting of text inside a message: `quoted("a\"b")` displays as `"a\"b"`.
///
/// In double quotes; `"` and `\` escaped; tab, line feed, carriage return and NUL as `\t`,
/// `\n`, `\r`, `\0`; every character that shows nothing or moves the text around it as
/// `\u{hex}` (see [`shows_as_is`]); every other character as it is, so `"订单"` reads as
/// typed. For text without such characters this is what `{:?}` writes, without the Unicode
/// tables `{:?}` carries.
pub fn quoted<T: AsRef<str> + ?Sized>(text: &T) -> Quoted<'_> {
    Quoted(text.as_ref())
}

/// A string as [`quoted`] displays it.
#[derive(Clone, Copy)]
pub struct Quoted<'a>(&'a str);

/// One character as messages quote it: `quoted_char('x')` displays as `'x'` (`'` escaped,
/// otherwise as [`quoted`]).
pub fn quoted_char(c: char) -> QuotedChar {
    QuotedChar(c)
}

/// A character as [`quoted_char`] displays it.
#[derive(Clone, Copy)]
pub struct QuotedChar(char);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_quoted(f, self.0.chars(), '"')
    }
}

impl fmt::Display for QuotedChar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_quoted(f, std::iter::once(self.0), '\'')
    }
}

fn write_quoted(
    f: &mut fmt::Formatter<'_>,
    chars: impl Iterator<Item = char>,
    quote: char,
) -> fmt::Result {
    use fmt::Write;
    f.write_char(quote)?;
    for c in chars {
        match c {
            '\t' => f.write_str("\\t")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\0' => f.write_str("\\0")?,
            '\\' => f.write_str("\\\\")?,
            c if c == quote => {
                f.write_char('\\')?;
                f.write_char(c)?;
            }
            c if shows_as_is(c) => f.write_char(c)?,
            c => write!(f, "\\u{{{:x}}}", c as u32)?,
        }
    }
    f.write_char(quote)
}

/// Whether [`quoted`] writes `c` as it is: false for the characters that show nothing or
/// move the text around them: controls (C0, DEL, C1), spaces other than U+0020, soft
/// hyphen, zero-width, joiner and bidirectional format characters, line and paragraph
/// separators, fillers, variation selectors, the byte-order mark, interlinear annotation
/// marks, musical formatting, tags, private use and noncharacters U+FFFE and U+FFFF.
pub fn shows_as_is(c: char) -> bool {
    !matches!(
        c as u32,
        0..=0x1f
            | 0x7f..=0xa0
            | 0xad
            | 0x34f
            | 0x61c
            | 0x115f..=0x1160
            | 0x1680
            | 0x17b4..=0x17b5
            | 0x180b..=0x180f
            | 0x2000..=0x200f
            | 0x2028..=0x202f
            | 0x205f..=0x206f
            | 0x3000
            | 0x3164
            | 0xe000..=0xf8ff
            | 0xfe00..=0xfe0f
            | 0xfeff
            | 0xffa0
            | 0xfff0..=0xfffb
            | 0xfffe..=0xffff
            | 0x1d173..=0x1d17a
            | 0xe0000..=0xe0fff
            | 0xf0000..
    )
}

/// Everything that can go wrong in segflake.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A layout parameter is out of range (bit widths, tick, epoch in the future...).
    InvalidLayout {
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// The layout's time field runs out before `now + min_lifetime_years`.
    LayoutExhausted {
        /// Unix milliseconds at which the time field overflows.
        exhausts_at_ms: u64,
        /// The lifetime the layout was required to have, in years.
        min_lifetime_years: u32,
        /// The time (Unix ms) the layout was checked at.
        checked_at_ms: u64,
    },
    /// A worker ID that does not fit the layout's worker field.
    WorkerIdOutOfRange {
        /// The worker ID given.
        worker_id: u64,
        /// The width of the layout's worker field.
        worker_bits: u8,
    },
    /// The clock is behind the last issued tick by more than `max_drift_ms`
    /// (or behind a persisted high-water mark by that much).
    ClockMovedBackwards {
        /// How far the clock is behind, in milliseconds.
        by_ms: u64,
        /// The generator's drift bound.
        max_drift_ms: u64,
    },
    /// The clock reads a time before the layout's epoch.
    ClockBeforeEpoch {
        /// The clock's reading (Unix ms).
        now_ms: u64,
        /// The layout's epoch (Unix ms).
        epoch_ms: u64,
    },
    /// The layout's time field has run out: no further IDs can be issued.
    TimeExhausted {
        /// Unix milliseconds at which the time field overflowed.
        exhausts_at_ms: u64,
    },
    /// An argument is out of its allowed range or malformed.
    InvalidArgument {
        /// The argument or option, as the caller spelled it.
        name: Cow<'static, str>,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// A textual ID (decimal, base62, base32) could not be parsed.
    Parse {
        /// The text form that was expected (`"decimal"`, `"base62"`, `"base32"`).
        format: &'static str,
        /// What is wrong with the text.
        reason: String,
    },
    /// A store returned a range that is invalid or overlaps one already received.
    StoreContractViolation {
        /// The business tag.
        tag: String,
        /// What is wrong with the range.
        reason: String,
    },
    /// Both segment buffers are empty and the store did not deliver in time.
    SegmentsExhausted {
        /// The business tag.
        tag: String,
        /// Why the store did not deliver (its last error, or the wait that ran out).
        cause: String,
    },
    /// A store (or counter) operation failed.
    Store {
        /// The store's message.
        message: String,
    },
    /// A date-prefixed serial ran out of sequence numbers within one second.
    SerialExhausted {
        /// The second that ran out (`yyMMddHHmmss`).
        second: String,
        /// The serial's sequence digits.
        sequence_digits: u8,
    },
    /// The generator was closed.
    Closed,
    /// The generator was inherited by a `fork()` child and refuses to issue IDs (kind
    /// [`ErrorKind::Closed`]); the message says how to create per-process generators.
    Forked {
        /// What happened and what to do instead.
        message: String,
    },
    /// Every worker ID of the registry was held by a live lease for the whole claim wait.
    NoFreeWorkerId {
        /// How many worker IDs the layout (or the allowed range) offers.
        capacity: u64,
        /// How many of them were seen held in the last sweep.
        held: u64,
        /// How long start-up kept trying, in milliseconds.
        waited_ms: u64,
        /// A worker ID this process claimed during the wait and whose lease then ran out
        /// before a renewal succeeded, if any: the wait failed for a lease too short for
        /// this process as much as for busy holders.
        lost_worker_id: Option<u64>,
    },
    /// This process may no longer issue IDs with its worker ID: the lease could have expired,
    /// was taken by another owner, or the registry stopped accepting its time mark.
    LeaseExpired {
        /// The worker ID that was held.
        worker_id: u64,
        /// Why (the registry's last error, when there was one).
        reason: String,
    },
    /// The host's clock is behind the time mark the worker ID's previous holder reached.
    ClockBehindMark {
        /// The worker ID claimed.
        worker_id: u64,
        /// The previous holder's time mark (Unix ms).
        mark_ms: u64,
        /// This host's clock (Unix ms).
        now_ms: u64,
        /// The generator's drift bound.
        max_drift_ms: u64,
        /// How long start-up waited for the clock, in milliseconds.
        waited_ms: u64,
    },
    /// The host's clock differs from the median of the live holders' clocks by too much.
    ClockSkew {
        /// This host's clock (Unix ms).
        now_ms: u64,
        /// The median of the live holders' reported clocks (Unix ms).
        median_ms: u64,
        /// How many live holders reported.
        peers: u64,
        /// The largest accepted difference, in milliseconds.
        max_peer_skew_ms: u64,
    },
    /// A serial's shared counter refused to count in `second` (Unix seconds): the second
    /// lies outside the window the counter's clock (`server_ms`) allows (kind
    /// [`ErrorKind::ClockSkew`]). Nothing was counted, no serial was issued.
    CounterClockSkew {
        /// The second asked for (Unix seconds).
        second: u64,
        /// The counter's clock (Unix ms).
        server_ms: u64,
        /// The generator's [`counter_max_behind_ms`](crate::SerialOptions::counter_max_behind_ms).
        max_behind_ms: u64,
        /// The generator's [`counter_max_ahead_ms`](crate::SerialOptions::counter_max_ahead_ms).
        max_ahead_ms: u64,
    },
    /// A registry call failed or answered outside its contract.
    Registry {
        /// What failed.
        message: String,
    },
    /// The store has no such segment tag (Leaf's "key not exists").
    UnknownTag {
        /// The business tag.
        tag: String,
    },
    /// The registry has no record of a worker ID this process held: it lost data (a restart
    /// without persistence, `FLUSHALL`, eviction, a failover that lost writes, a restore).
    /// IDs stop at once; the generator claims a worker ID again.
    RegistryLostData {
        /// The worker ID that was held.
        worker_id: u64,
        /// What the registry answered.
        detail: String,
    },
    /// A Leaf snowflake node still reports for the node identity a claim would take over.
    LeafNodeAlive {
        /// The Leaf node identity (`ip:port`).
        identity: String,
        /// The worker ID that identity holds.
        worker_id: u64,
    },
    /// The clock kept one reading while a generator waited for it to reach the next tick
    /// (a tick's sequence numbers and the `max_drift_ms` allowance were used up). Nothing
    /// was issued by the failing call; the generator's state is unchanged.
    ClockStalled {
        /// The reading the clock kept returning (Unix ms).
        reading_ms: u64,
        /// The time the generator waited for (Unix ms).
        waiting_for_ms: u64,
        /// How long the reading stayed the same before the wait gave up ("2000 ms").
        stalled_for: String,
    },
}

/// The kind of an [`Error`], without its data. Stable across releases and languages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::InvalidLayout`]: code `INVALID_LAYOUT`, status 1.
    InvalidLayout = 1,
    /// [`Error::LayoutExhausted`]: code `LAYOUT_EXHAUSTED`, status 2.
    LayoutExhausted = 2,
    /// [`Error::WorkerIdOutOfRange`]: code `WORKER_ID_OUT_OF_RANGE`, status 3.
    WorkerIdOutOfRange = 3,
    /// [`Error::ClockMovedBackwards`]: code `CLOCK_MOVED_BACKWARDS`, status 4.
    ClockMovedBackwards = 4,
    /// [`Error::ClockBeforeEpoch`]: code `CLOCK_BEFORE_EPOCH`, status 5.
    ClockBeforeEpoch = 5,
    /// [`Error::TimeExhausted`]: code `TIME_EXHAUSTED`, status 6.
    TimeExhausted = 6,
    /// [`Error::InvalidArgument`]: code `INVALID_ARGUMENT`, status 7.
    InvalidArgument = 7,
    /// [`Error::Parse`]: code `PARSE_ERROR`, status 8.
    Parse = 8,
    /// [`Error::StoreContractViolation`]: code `STORE_CONTRACT_VIOLATION`, status 9.
    StoreContractViolation = 9,
    /// [`Error::SegmentsExhausted`]: code `SEGMENTS_EXHAUSTED`, status 10.
    SegmentsExhausted = 10,
    /// [`Error::Store`]: code `STORE_ERROR`, status 11.
    Store = 11,
    /// [`Error::SerialExhausted`]: code `SERIAL_EXHAUSTED`, status 12.
    SerialExhausted = 12,
    /// [`Error::Closed`] and [`Error::Forked`]: code `CLOSED`, status 13.
    Closed = 13,
    /// [`Error::NoFreeWorkerId`]: code `NO_FREE_WORKER_ID`, status 14.
    NoFreeWorkerId = 14,
    /// [`Error::LeaseExpired`]: code `LEASE_EXPIRED`, status 15.
    LeaseExpired = 15,
    /// [`Error::ClockBehindMark`]: code `CLOCK_BEHIND_MARK`, status 16.
    ClockBehindMark = 16,
    /// [`Error::ClockSkew`] and [`Error::CounterClockSkew`]: code `CLOCK_SKEW`, status 17.
    ClockSkew = 17,
    /// [`Error::Registry`]: code `REGISTRY_ERROR`, status 18.
    Registry = 18,
    /// [`Error::UnknownTag`]: code `UNKNOWN_TAG`, status 19.
    UnknownTag = 19,
    /// [`Error::RegistryLostData`]: code `REGISTRY_LOST_DATA`, status 20.
    RegistryLostData = 20,
    /// [`Error::LeafNodeAlive`]: code `LEAF_NODE_ALIVE`, status 21.
    LeafNodeAlive = 21,
    /// [`Error::ClockStalled`]: code `CLOCK_STALLED`, status 22.
    ClockStalled = 22,
}

impl ErrorKind {
    /// Every kind, in status order.
    pub const ALL: [ErrorKind; 22] = [
        ErrorKind::InvalidLayout,
        ErrorKind::LayoutExhausted,
        ErrorKind::WorkerIdOutOfRange,
        ErrorKind::ClockMovedBackwards,
        ErrorKind::ClockBeforeEpoch,
        ErrorKind::TimeExhausted,
        ErrorKind::InvalidArgument,
        ErrorKind::Parse,
        ErrorKind::StoreContractViolation,
        ErrorKind::SegmentsExhausted,
        ErrorKind::Store,
        ErrorKind::SerialExhausted,
        ErrorKind::Closed,
        ErrorKind::NoFreeWorkerId,
        ErrorKind::LeaseExpired,
        ErrorKind::ClockBehindMark,
        ErrorKind::ClockSkew,
        ErrorKind::Registry,
        ErrorKind::UnknownTag,
        ErrorKind::RegistryLostData,
        ErrorKind::LeafNodeAlive,
        ErrorKind::ClockStalled,
    ];

    /// The stable machine-readable code, e.g. `"CLOCK_MOVED_BACKWARDS"`.
    pub const fn code(self) -> &'static str {
        match self {
            ErrorKind::InvalidLayout => "INVALID_LAYOUT",
            ErrorKind::LayoutExhausted => "LAYOUT_EXHAUSTED",
            ErrorKind::WorkerIdOutOfRange => "WORKER_ID_OUT_OF_RANGE",
            ErrorKind::ClockMovedBackwards => "CLOCK_MOVED_BACKWARDS",
            ErrorKind::ClockBeforeEpoch => "CLOCK_BEFORE_EPOCH",
            ErrorKind::TimeExhausted => "TIME_EXHAUSTED",
            ErrorKind::InvalidArgument => "INVALID_ARGUMENT",
            ErrorKind::Parse => "PARSE_ERROR",
            ErrorKind::StoreContractViolation => "STORE_CONTRACT_VIOLATION",
            ErrorKind::SegmentsExhausted => "SEGMENTS_EXHAUSTED",
            ErrorKind::Store => "STORE_ERROR",
            ErrorKind::SerialExhausted => "SERIAL_EXHAUSTED",
            ErrorKind::Closed => "CLOSED",
            ErrorKind::NoFreeWorkerId => "NO_FREE_WORKER_ID",
            ErrorKind::LeaseExpired => "LEASE_EXPIRED",
            ErrorKind::ClockBehindMark => "CLOCK_BEHIND_MARK",
            ErrorKind::ClockSkew => "CLOCK_SKEW",
            ErrorKind::Registry => "REGISTRY_ERROR",
            ErrorKind::UnknownTag => "UNKNOWN_TAG",
            ErrorKind::RegistryLostData => "REGISTRY_LOST_DATA",
            ErrorKind::LeafNodeAlive => "LEAF_NODE_ALIVE",
            ErrorKind::ClockStalled => "CLOCK_STALLED",
        }
    }

    /// The error class name used by the JS and Python bindings, e.g. `"ClockMovedBackwardsError"`.
    pub const fn class_name(self) -> &'static str {
        match self {
            ErrorKind::InvalidLayout => "InvalidLayoutError",
            ErrorKind::LayoutExhausted => "LayoutExhaustedError",
            ErrorKind::WorkerIdOutOfRange => "WorkerIdOutOfRangeError",
            ErrorKind::ClockMovedBackwards => "ClockMovedBackwardsError",
            ErrorKind::ClockBeforeEpoch => "ClockBeforeEpochError",
            ErrorKind::TimeExhausted => "TimeExhaustedError",
            ErrorKind::InvalidArgument => "InvalidArgumentError",
            ErrorKind::Parse => "ParseError",
            ErrorKind::StoreContractViolation => "StoreContractViolationError",
            ErrorKind::SegmentsExhausted => "SegmentsExhaustedError",
            ErrorKind::Store => "StoreError",
            ErrorKind::SerialExhausted => "SerialExhaustedError",
            ErrorKind::Closed => "ClosedError",
            ErrorKind::NoFreeWorkerId => "NoFreeWorkerIdError",
            ErrorKind::LeaseExpired => "LeaseExpiredError",
            ErrorKind::ClockBehindMark => "ClockBehindMarkError",
            ErrorKind::ClockSkew => "ClockSkewError",
            ErrorKind::Registry => "RegistryError",
            ErrorKind::UnknownTag => "UnknownTagError",
            ErrorKind::RegistryLostData => "RegistryLostDataError",
            ErrorKind::LeafNodeAlive => "LeafNodeAliveError",
            ErrorKind::ClockStalled => "ClockStalledError",
        }
    }

    /// One sentence saying when this kind occurs (the docstring of each binding's class).
    pub const fn summary(self) -> &'static str {
        match self {
            ErrorKind::InvalidLayout => {
                "A layout parameter is out of range (bit widths, tick, epoch in the future)."
            }
            ErrorKind::LayoutExhausted => {
                "The layout's time field runs out before now + min_lifetime_years."
            }
            ErrorKind::WorkerIdOutOfRange => "A worker ID does not fit the layout's worker field.",
            ErrorKind::ClockMovedBackwards => {
                "The clock is behind the last issued tick by more than max_drift_ms."
            }
            ErrorKind::ClockBeforeEpoch => "The clock reads a time before the layout's epoch.",
            ErrorKind::TimeExhausted => {
                "The layout's time field has run out: no further IDs can be issued."
            }
            ErrorKind::InvalidArgument => {
                "An argument has the wrong type, is out of its allowed range or is malformed."
            }
            ErrorKind::Parse => "A textual ID (decimal, base62, base32) could not be parsed.",
            ErrorKind::StoreContractViolation => {
                "A store returned a range that is invalid or overlaps one already received."
            }
            ErrorKind::SegmentsExhausted => {
                "Both segment buffers are empty and the store did not deliver in time."
            }
            ErrorKind::Store => "A store (or counter) operation failed.",
            ErrorKind::SerialExhausted => {
                "A date-prefixed serial ran out of sequence numbers within one second."
            }
            ErrorKind::Closed => {
                "The generator was closed, or was inherited by a forked child process."
            }
            ErrorKind::NoFreeWorkerId => {
                "Every worker ID of the layout stayed leased by live holders for claim_wait_ms."
            }
            ErrorKind::LeaseExpired => {
                "The worker-ID lease may have expired or was lost, or IDs reached the time mark \
                 the registry accepted; IDs resume once a lease is held again."
            }
            ErrorKind::ClockBehindMark => {
                "This host's clock is behind the worker ID's time mark by more than max_drift_ms."
            }
            ErrorKind::ClockSkew => {
                "This host's clock differs from the live holders' median by more than \
                 max_peer_skew_ms, or from a serial counter's clock by more than \
                 counter_max_behind_ms / counter_max_ahead_ms."
            }
            ErrorKind::Registry => {
                "The worker-ID registry failed or answered outside its contract."
            }
            ErrorKind::UnknownTag => {
                "The store has no such segment tag: create it (Leaf: a leaf_alloc row), or let \
                 the store create missing tags."
            }
            ErrorKind::RegistryLostData => {
                "The registry lost the record of a worker ID this process held (a restart \
                 without persistence, FLUSHALL, eviction, a failover, a restore); IDs stopped at \
                 once and resume after a new claim."
            }
            ErrorKind::LeafNodeAlive => {
                "A Leaf snowflake node still reports for the node identity (ip:port) this \
                 process would take over; stop that Leaf node first."
            }
            ErrorKind::ClockStalled => {
                "The clock did not advance while the generator waited for the next tick: a \
                 clock frozen during synchronous work (Cloudflare Workers' Date.now() within a \
                 request) allows sequence capacity x (max_drift_ms + 1) IDs per reading."
            }
        }
    }

    /// The C status code (`SEGFLAKE_OK` is 0; every error kind is positive).
    pub const fn status(self) -> i32 {
        self as i32
    }
}

/// One datum an [`Error`] carries ([`Error::details`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail<'a> {
    /// A count, a time or a width.
    Number(u64),
    /// A tag, a reason or another text.
    Text(&'a str),
}

impl Detail<'_> {
    /// Whether this datum is a number or text.
    pub fn kind(&self) -> DetailKind {
        match self {
            Detail::Number(_) => DetailKind::Number,
            Detail::Text(_) => DetailKind::Text,
        }
    }
}

/// The kind of a [`Detail`], for declarations: a count or a time, or text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DetailKind {
    /// [`Detail::Number`].
    Number,
    /// [`Detail::Text`].
    Text,
}

impl ErrorKind {
    /// Every datum an error of this kind may carry ([`Error::details`]), by name, in order:
    /// the fields declarations list for it (Python's exception attributes). A kind with
    /// several variants (`ClockSkew`) lists the fields of each.
    pub const fn detail_fields(self) -> &'static [(&'static str, DetailKind)] {
        use DetailKind::{Number as N, Text as T};
        match self {
            ErrorKind::LayoutExhausted => &[
                ("exhausts_at_ms", N),
                ("min_lifetime_years", N),
                ("checked_at_ms", N),
            ],
            ErrorKind::WorkerIdOutOfRange => &[("worker_id", N), ("worker_bits", N)],
            ErrorKind::ClockMovedBackwards => &[("by_ms", N), ("max_drift_ms", N)],
            ErrorKind::ClockBeforeEpoch => &[("now_ms", N), ("epoch_ms", N)],
            ErrorKind::TimeExhausted => &[("exhausts_at_ms", N)],
            ErrorKind::StoreContractViolation | ErrorKind::SegmentsExhausted => &[("tag", T)],
            ErrorKind::NoFreeWorkerId => &[("capacity", N), ("held", N), ("waited_ms", N)],
            ErrorKind::LeaseExpired | ErrorKind::RegistryLostData => &[("worker_id", N)],
            ErrorKind::ClockBehindMark => &[
                ("worker_id", N),
                ("mark_ms", N),
                ("now_ms", N),
                ("max_drift_ms", N),
                ("waited_ms", N),
            ],
            ErrorKind::ClockSkew => &[
                ("now_ms", N),
                ("median_ms", N),
                ("peers", N),
                ("max_peer_skew_ms", N),
                ("second", N),
                ("server_ms", N),
                ("counter_max_behind_ms", N),
                ("counter_max_ahead_ms", N),
            ],
            ErrorKind::LeafNodeAlive => &[("worker_id", N), ("identity", T)],
            ErrorKind::ClockStalled => &[("reading_ms", N), ("waiting_for_ms", N)],
            _ => &[],
        }
    }
}

impl Error {
    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidLayout { .. } => ErrorKind::InvalidLayout,
            Error::LayoutExhausted { .. } => ErrorKind::LayoutExhausted,
            Error::WorkerIdOutOfRange { .. } => ErrorKind::WorkerIdOutOfRange,
            Error::ClockMovedBackwards { .. } => ErrorKind::ClockMovedBackwards,
            Error::ClockBeforeEpoch { .. } => ErrorKind::ClockBeforeEpoch,
            Error::TimeExhausted { .. } => ErrorKind::TimeExhausted,
            Error::InvalidArgument { .. } => ErrorKind::InvalidArgument,
            Error::Parse { .. } => ErrorKind::Parse,
            Error::StoreContractViolation { .. } => ErrorKind::StoreContractViolation,
            Error::SegmentsExhausted { .. } => ErrorKind::SegmentsExhausted,
            Error::Store { .. } => ErrorKind::Store,
            Error::SerialExhausted { .. } => ErrorKind::SerialExhausted,
            Error::Closed | Error::Forked { .. } => ErrorKind::Closed,
            Error::NoFreeWorkerId { .. } => ErrorKind::NoFreeWorkerId,
            Error::LeaseExpired { .. } => ErrorKind::LeaseExpired,
            Error::ClockBehindMark { .. } => ErrorKind::ClockBehindMark,
            Error::ClockSkew { .. } | Error::CounterClockSkew { .. } => ErrorKind::ClockSkew,
            Error::Registry { .. } => ErrorKind::Registry,
            Error::UnknownTag { .. } => ErrorKind::UnknownTag,
            Error::RegistryLostData { .. } => ErrorKind::RegistryLostData,
            Error::LeafNodeAlive { .. } => ErrorKind::LeafNodeAlive,
            Error::ClockStalled { .. } => ErrorKind::ClockStalled,
        }
    }

    /// Shorthand for [`ErrorKind::code`] of this error.
    pub fn code(&self) -> &'static str {
        self.kind().code()
    }

    /// The data this error carries besides its message, by snake-case name, for hosts that
    /// expose it as fields of their error (`e.worker_id`, `e.tag`). Names are the same for
    /// every host; counts and times are [`Detail::Number`].
    pub fn details(&self) -> Vec<(&'static str, Detail<'_>)> {
        use Detail::{Number as N, Text as T};
        match self {
            Error::LayoutExhausted {
                exhausts_at_ms,
                min_lifetime_years,
                checked_at_ms,
            } => vec![
                ("exhausts_at_ms", N(*exhausts_at_ms)),
                ("min_lifetime_years", N((*min_lifetime_years).into())),
                ("checked_at_ms", N(*checked_at_ms)),
            ],
            Error::WorkerIdOutOfRange {
                worker_id,
                worker_bits,
            } => vec![
                ("worker_id", N(*worker_id)),
                ("worker_bits", N((*worker_bits).into())),
            ],
            Error::ClockMovedBackwards {
                by_ms,
                max_drift_ms,
            } => vec![("by_ms", N(*by_ms)), ("max_drift_ms", N(*max_drift_ms))],
            Error::ClockBeforeEpoch { now_ms, epoch_ms } => {
                vec![("now_ms", N(*now_ms)), ("epoch_ms", N(*epoch_ms))]
            }
            Error::TimeExhausted { exhausts_at_ms } => vec![("exhausts_at_ms", N(*exhausts_at_ms))],
            Error::NoFreeWorkerId {
                capacity,
                held,
                waited_ms,
                ..
            } => vec![
                ("capacity", N(*capacity)),
                ("held", N(*held)),
                ("waited_ms", N(*waited_ms)),
            ],
            Error::LeaseExpired { worker_id, .. } | Error::RegistryLostData { worker_id, .. } => {
                vec![("worker_id", N(*worker_id))]
            }
            Error::LeafNodeAlive {
                identity,
                worker_id,
            } => vec![("worker_id", N(*worker_id)), ("identity", T(identity))],
            Error::ClockBehindMark {
                worker_id,
                mark_ms,
                now_ms,
                max_drift_ms,
                waited_ms,
            } => vec![
                ("worker_id", N(*worker_id)),
                ("mark_ms", N(*mark_ms)),
                ("now_ms", N(*now_ms)),
                ("max_drift_ms", N(*max_drift_ms)),
                ("waited_ms", N(*waited_ms)),
            ],
            Error::ClockSkew {
                now_ms,
                median_ms,
                peers,
                max_peer_skew_ms,
            } => vec![
                ("now_ms", N(*now_ms)),
                ("median_ms", N(*median_ms)),
                ("peers", N(*peers)),
                ("max_peer_skew_ms", N(*max_peer_skew_ms)),
            ],
            Error::CounterClockSkew {
                second,
                server_ms,
                max_behind_ms,
                max_ahead_ms,
            } => vec![
                ("second", N(*second)),
                ("server_ms", N(*server_ms)),
                ("counter_max_behind_ms", N(*max_behind_ms)),
                ("counter_max_ahead_ms", N(*max_ahead_ms)),
            ],
            Error::StoreContractViolation { tag, .. } | Error::SegmentsExhausted { tag, .. } => {
                vec![("tag", T(tag))]
            }
            Error::ClockStalled {
                reading_ms,
                waiting_for_ms,
                ..
            } => vec![
                ("reading_ms", N(*reading_ms)),
                ("waiting_for_ms", N(*waiting_for_ms)),
            ],
            _ => vec![],
        }
    }

    /// An [`Error::InvalidArgument`] naming `name`.
    pub fn invalid_argument(
        name: impl Into<Cow<'static, str>>,
        reason: impl Into<String>,
    ) -> Error {
        Error::InvalidArgument {
            name: name.into(),
            reason: reason.into(),
        }
    }

    /// `value` if it lies in `min..=max`, else an [`Error::InvalidArgument`] naming `name`
    /// with [`out_of_range`]'s wording and `note` after it (what bounds the range, or "").
    pub fn check_range(
        name: &'static str,
        value: u64,
        min: u64,
        max: u64,
        note: &str,
    ) -> Result<u64> {
        if (min..=max).contains(&value) {
            Ok(value)
        } else {
            Err(Error::invalid_argument(
                name,
                out_of_range(value, min, max) + note,
            ))
        }
    }

    pub(crate) fn parse(format: &'static str, reason: impl Into<String>) -> Error {
        Error::Parse {
            format,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::datetime::format_iso8601_ms as iso;
        match self {
            Error::InvalidLayout { reason } => write!(f, "invalid layout: {reason}"),
            Error::LayoutExhausted {
                exhausts_at_ms,
                min_lifetime_years,
                checked_at_ms,
            } => {
                let when = iso(*exhausts_at_ms);
                let date = when.get(..10).unwrap_or(&when);
                if exhausts_at_ms <= checked_at_ms {
                    write!(f, "layout ran out of time on {date} ({when}); ")?;
                } else {
                    write!(f, "layout runs out of time on {date} ({when}); ")?;
                }
                write!(
                    f,
                    "it must last at least {min_lifetime_years} years from now \
                     (min_lifetime_years; 0 disables the check): choose a newer epoch, \
                     more time bits or a longer tick"
                )
            }
            Error::WorkerIdOutOfRange {
                worker_id,
                worker_bits,
            } => {
                let max = crate::layout::max_value(*worker_bits);
                write!(
                    f,
                    "worker id {worker_id} is out of range: the layout has {worker_bits} worker \
                     bits, so worker ids are 0..={max}"
                )
            }
            Error::ClockMovedBackwards {
                by_ms,
                max_drift_ms,
            } => write!(
                f,
                "clock moved backwards by {by_ms} ms, more than max_drift_ms = {max_drift_ms}; \
                 refusing to issue IDs until the clock catches up (or raise max_drift_ms)"
            ),
            Error::ClockBeforeEpoch { now_ms, epoch_ms } => write!(
                f,
                "clock reads {} which is before the layout epoch {}; IDs need a time at or after \
                 the epoch",
                iso(*now_ms),
                iso(*epoch_ms)
            ),
            Error::TimeExhausted { exhausts_at_ms } => write!(
                f,
                "the layout's time field ran out at {}; no further IDs can be issued with this \
                 layout (use a newer epoch or more time bits)",
                iso(*exhausts_at_ms)
            ),
            Error::InvalidArgument { name, reason } => write!(f, "invalid {name}: {reason}"),
            Error::Parse { format, reason } => write!(f, "cannot parse {format} ID: {reason}"),
            Error::StoreContractViolation { tag, reason } => write!(
                f,
                "store contract violation for tag {tag}: {reason}; the range was refused and \
                 none of its IDs were issued",
                tag = quoted(tag)
            ),
            Error::SegmentsExhausted { tag, cause } => write!(
                f,
                "no IDs available for tag {tag}: both segment buffers are empty and the store \
                 did not deliver in time (cause: {cause}); the next call retries the store",
                tag = quoted(tag)
            ),
            Error::Store { message } => write!(f, "store error: {message}"),
            Error::SerialExhausted {
                second,
                sequence_digits,
            } => write!(
                f,
                "serial sequence exhausted for second {second}: {sequence_digits} sequence digits \
                 allow at most {} numbers per second (use more sequence digits)",
                10u64.saturating_pow(u32::from(*sequence_digits))
            ),
            Error::Closed => write!(f, "the generator is closed"),
            Error::Forked { message } => f.write_str(message),
            Error::NoFreeWorkerId {
                capacity,
                held,
                waited_ms,
                lost_worker_id,
            } => {
                write!(
                    f,
                    "no free worker ID: {held} of {capacity} were held by live leases \
                     throughout {waited_ms} ms of waiting (release idle holders, shorten their \
                     lease_ttl_ms, or use a layout with more worker bits)"
                )?;
                match lost_worker_id {
                    Some(w) => write!(
                        f,
                        "; this process claimed worker ID {w} meanwhile, and its lease ran out \
                         before a renewal succeeded (a process paused or starved for that \
                         long, or a registry that slow, needs a longer lease_ttl_ms)"
                    ),
                    None => Ok(()),
                }
            }
            Error::LeaseExpired { worker_id, reason } => write!(
                f,
                "worker ID {worker_id} may no longer be used by this process: {reason}; no ID \
                 above the last time mark the registry accepted was issued"
            ),
            Error::ClockBehindMark {
                worker_id,
                mark_ms,
                now_ms,
                max_drift_ms,
                waited_ms,
            } => write!(
                f,
                "this host's clock reads {} but worker ID {worker_id} was used up to {} by its \
                 previous holder: {} ms behind, more than max_drift_ms = {max_drift_ms} \
                 (waited {waited_ms} ms); fix the clock, or wait and retry",
                iso(*now_ms),
                iso(*mark_ms),
                mark_ms.saturating_sub(*now_ms)
            ),
            Error::ClockSkew {
                now_ms,
                median_ms,
                peers,
                max_peer_skew_ms,
            } => write!(
                f,
                "this host's clock reads {} but the median of {peers} live holders' clocks is \
                 {}: {} ms apart, more than max_peer_skew_ms = {max_peer_skew_ms}; fix the clock \
                 (or raise max_peer_skew_ms, 0 disables the check)",
                iso(*now_ms),
                iso(*median_ms),
                now_ms.abs_diff(*median_ms)
            ),
            Error::CounterClockSkew {
                second,
                server_ms,
                max_behind_ms,
                max_ahead_ms,
            } => {
                let start = second.saturating_mul(1000);
                let (how, by, side, option, max) = if start > *server_ms {
                    let by = start - server_ms;
                    ("starts", by, "after", "counter_max_ahead_ms", max_ahead_ms)
                } else {
                    let by = server_ms.saturating_sub(start.saturating_add(1000));
                    (
                        "ended",
                        by,
                        "before",
                        "counter_max_behind_ms",
                        max_behind_ms,
                    )
                };
                write!(
                    f,
                    "the shared counter refused to count in second {}: it {how} {by} ms {side} \
                     the counter's clock ({}), more than {option} = {max}; this host's clock is \
                     off, so no serial was issued (fix the clock; every generator sharing the \
                     counter must use the same counter_max_behind_ms)",
                    iso(start),
                    iso(*server_ms)
                )
            }
            Error::Registry { message } => write!(f, "registry error: {message}"),
            Error::UnknownTag { tag } => write!(
                f,
                "unknown tag {tag}: the store has no such tag (for Leaf's table, INSERT a \
                 leaf_alloc row; segflake's stores create it with ensure_tag, or on first use \
                 with create_missing_tags)",
                tag = quoted(tag)
            ),
            Error::RegistryLostData { worker_id, detail } => write!(
                f,
                "the registry lost the record of worker ID {worker_id} while this process held \
                 it ({detail}): IDs stopped at once and resume after a new claim, which starts \
                 above anything an unseen holder could have issued; keep the registry's data \
                 durable (Redis: appendonly yes, no eviction of segflake's keys)"
            ),
            Error::LeafNodeAlive {
                identity,
                worker_id,
            } => write!(
                f,
                "a Leaf snowflake node still reports for {identity} (worker ID {worker_id}): its \
                 ZooKeeper node changed again within one report period, so taking the worker ID \
                 over would issue the same IDs twice; stop that Leaf node, then start this one"
            ),
            Error::ClockStalled {
                reading_ms,
                waiting_for_ms,
                stalled_for,
            } => write!(
                f,
                "the clock kept reading {reading_ms} for {stalled_for} while the generator waited \
                 for {waiting_for_ms}: this tick's sequence numbers and the max_drift_ms \
                 allowance are used up, and a clock must advance with real time. A clock frozen \
                 during synchronous work (Date.now() within one Cloudflare Workers request) \
                 allows sequence capacity x (max_drift_ms + 1) IDs per reading: issue fewer IDs \
                 per request, yield between bursts, or raise max_drift_ms; nothing was issued \
                 by this call"
            ),
        }
    }
}

impl std::error::Error for Error {}
