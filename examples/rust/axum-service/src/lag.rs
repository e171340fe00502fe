//! Measurement only: nothing here is needed to serve IDs.
//!
//! With `LAG_REPORT_FILE` set, a task on the service's runtime wakes every 10 ms and
//! records how late it woke: the runtime's task lag, which stays near zero as long as
//! nothing blocks a runtime thread (a store call, a lock held across I/O). When the
//! service shuts down, the p50, p99 and largest lag go to that file as JSON, with the five
//! worst ticks (Unix time, lag in ms):
//!
//! ```json
//! {"samples": 6012, "p50_ms": 0.21, "p99_ms": 1.07, "max_ms": 4.8,
//!  "worst": [[1795818163.52, 4.8], [1795818170.01, 3.9], …]}
//! ```
//!
//! tests/scenarios/rust.sh reads it to check that the runtime stayed responsive through
//! the database outages.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::task::JoinHandle;

const PERIOD: Duration = Duration::from_millis(10);

/// The ticker task and where its report goes.
pub struct LagProbe {
    path: String,
    stop: Arc<AtomicBool>,
    task: JoinHandle<Vec<(Duration, f64)>>,
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
                let lag = Instant::now().saturating_duration_since(due);
                let at = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default();
                lags.push((lag, at.as_secs_f64()));
            }
            lags
        });
        LagProbe { path, stop, task }
    }

    /// Stops the ticker and writes the report.
    pub async fn finish(self) -> std::io::Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        let mut lags = self.task.await.unwrap_or_default();
        lags.sort_unstable_by_key(|&(lag, _)| lag);
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let at = |q: f64| -> f64 {
            let i = ((lags.len() as f64 * q).ceil() as usize).clamp(1, lags.len().max(1)) - 1;
            lags.get(i).map_or(0.0, |&(d, _)| ms(d))
        };
        let worst: Vec<(f64, f64)> = lags
            .iter()
            .rev()
            .take(5)
            .map(|&(d, t)| (t, ms(d)))
            .collect();
        let report = serde_json::json!({
            "samples": lags.len(),
            "p50_ms": at(0.50),
            "p99_ms": at(0.99),
            "max_ms": at(1.0),
            "worst": worst,
        });
        std::fs::write(&self.path, format!("{report}\n"))
    }
}
