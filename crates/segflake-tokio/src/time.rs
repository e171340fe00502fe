//! The drivers' monotonic time base: tokio's [`Instant`], so the engines' deadlines and
//! the driver's timers agree (also under `tokio::time::pause`).

use tokio::time::Instant;

/// Milliseconds since a driver started.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Origin(Instant);

impl Origin {
    pub(crate) fn now() -> Origin {
        Origin(Instant::now())
    }

    /// Monotonic milliseconds since the origin.
    pub(crate) fn ms(&self) -> u64 {
        u64::try_from(self.0.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}
