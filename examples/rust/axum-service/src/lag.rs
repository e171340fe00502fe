//! Measurement only: nothing here is needed to serve IDs.
//!
//! With `LAG_REPORT_FILE` set, a task on the service's runtime wakes every 10 ms and
//! records how late it woke: the runtime's task lag, which stays near zero as long as
//! nothing blocks a runtime thread (a store call, a lock held across I/O). When the
//! service shuts down, the p99 and the largest lag go to that file as JSON:
//!
//! ```json
//! {"samples": 6012, "p50_ms": 0.21, "p99_ms": 1.07, "max_ms": 4.8}
//! ```
//!
//! tests/scenarios/rust.sh reads it to check that the runtime stayed responsive through
//! the database outages.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

const PERIOD: Duration = Duration::from_millis(10);

/// The ticker task and where its report goes.
pub struct LagProbe {
    path: String,
    stop: Arc<AtomicBool>,
    task: JoinHandle<Vec<Duration>>,
}

impl LagProbe {
    /// Starts the ticker on the current runtime.
    pub fn start(path: String) -> LagProbe {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let task = tokio::spawn(async move {
            let mut lags = Vec::new();
            while !stopped.load(Ordering::Relaxed) {
                let due = Instant::now() + PERIOD;
                tokio::time::sleep(PERIOD).await;
                lags.push(Instant::now().saturating_duration_since(due));
            }
            lags
        });
        LagProbe { path, stop, task }
    }

    /// Stops the ticker and writes the report.
    pub async fn finish(self) -> std::io::Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        let mut lags = self.task.await.unwrap_or_default();
        lags.sort_unstable();
        let at = |q: f64| -> f64 {
            let i = ((lags.len() as f64 * q).ceil() as usize).clamp(1, lags.len().max(1)) - 1;
            lags.get(i).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
        };
        let report = serde_json::json!({
            "samples": lags.len(),
            "p50_ms": at(0.50),
            "p99_ms": at(0.99),
            "max_ms": at(1.0),
        });
        std::fs::write(&self.path, format!("{report}\n"))
    }
}
