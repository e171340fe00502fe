//! Date-prefixed serials whose per-second sequence comes from an [`AsyncSerialCounter`].

use std::sync::Arc;
use std::time::Duration;

use segflake::{Clock, Result, SerialOptions, SystemClock};
use tokio::time::timeout;

use crate::traits::{AsyncSerialCounter, DynCounter};

/// Date-prefixed serial numbers (order numbers, `yyMMddHHmmss` + worker digits +
/// sequence) whose per-second sequence comes from a shared [`AsyncSerialCounter`] (Redis
/// running the core's script, a plain `INCR`...). The core's
/// [`segflake::SerialGenerator`] decides which second to count in and keeps the last
/// serial (an atomic max), so serials never decrease, even when the clock steps back;
/// this type only awaits the counter.
///
/// Each counter call has a deadline of `counter_timeout_ms`. A `next` future dropped
/// while the counter runs loses at most that count (a gap), never repeats a serial: the
/// serial is recorded only in the poll that returns it.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use segflake::{SerialOptions, Value};
/// use segflake_tokio::{CounterRequest, FnCounter, SerialGenerator};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> segflake::Result<()> {
/// let count = Arc::new(AtomicU64::new(0)); // Redis INCR on request.key in real life
/// let counter = FnCounter(move |_request: CounterRequest| {
///     let n = count.fetch_add(1, Ordering::SeqCst) + 1;
///     async move { Ok(Value::uint(n)) }
/// });
/// let serials = SerialGenerator::new(SerialOptions::default(), counter)?;
/// let first = serials.next().await?;
/// let second = serials.next().await?;
/// assert!(second > first);
/// assert_eq!(serials.generator().decode(first)?.sequence, 1);
/// # Ok(())
/// # }
/// ```
pub struct SerialGenerator<C: Clock = SystemClock> {
    inner: segflake::SerialGenerator<C>,
    counter: Arc<dyn DynCounter>,
}

impl<C: Clock + std::fmt::Debug> std::fmt::Debug for SerialGenerator<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SerialGenerator")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl SerialGenerator<SystemClock> {
    /// A generator on the system clock over `counter`.
    ///
    /// Errors: [`Error::InvalidArgument`](segflake::Error::InvalidArgument) for bad options.
    pub fn new(options: SerialOptions, counter: impl AsyncSerialCounter) -> Result<Self> {
        SerialGenerator::with_clock(options, counter, SystemClock)
    }
}

impl<C: Clock> SerialGenerator<C> {
    /// A generator reading time from `clock`.
    pub fn with_clock(
        options: SerialOptions,
        counter: impl AsyncSerialCounter,
        clock: C,
    ) -> Result<Self> {
        Ok(SerialGenerator {
            inner: segflake::SerialGenerator::with_clock(options, clock)?,
            counter: Arc::new(counter),
        })
    }

    /// The core generator (formatting, decoding, `last`, and its local counter
    /// [`next`](segflake::SerialGenerator::next), which never waits).
    pub fn generator(&self) -> &segflake::SerialGenerator<C> {
        &self.inner
    }

    /// The last serial issued (persist it; give it back as [`SerialOptions::last`]).
    pub fn last(&self) -> u64 {
        self.inner.last()
    }

    /// The next serial from the counter, by the core's protocol
    /// ([`segflake::SerialCount`]): asks it again (at most
    /// [`COUNTER_ATTEMPTS`](segflake::serial::COUNTER_ATTEMPTS) times) while its numbers are
    /// not above the last serial.
    ///
    /// Errors: [`Error::Store`](segflake::Error::Store) when the counter fails, answers
    /// something else than a count, outlives `counter_timeout_ms` or keeps answering
    /// numbers at or below the last serial;
    /// [`Error::CounterClockSkew`](segflake::Error::CounterClockSkew) when the counter's
    /// script refuses the second; [`Error::SerialExhausted`](segflake::Error::SerialExhausted)
    /// past the sequence digits.
    pub async fn next(&self) -> Result<u64> {
        let limit = Duration::from_millis(self.inner.options().counter_timeout_ms);
        let mut count = self.inner.begin_count();
        loop {
            let request = count.request()?;
            let reply = match timeout(limit, self.counter.dyn_count(&request)).await {
                Ok(Ok(reply)) => reply,
                Ok(Err(message)) => return Err(count.failed(&message)),
                Err(_) => return Err(count.timed_out()),
            };
            if let Some(serial) = count.accept_reply(&reply)? {
                return Ok(serial);
            }
        }
    }
}
