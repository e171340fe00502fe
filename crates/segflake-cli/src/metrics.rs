//! What `segflake serve` counts, and `/metrics` in Prometheus' text format.
//!
//! Counters are atomics bumped on the request path (no lock); the per-key segment figures
//! (IDs issued, runway, remaining IDs, step) are read from the core's `stats` when
//! `/metrics` is scraped. Store calls are timed by [`MeteredStore`], which wraps the store
//! the core's driver calls.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use segflake::{Allocation, SegmentStore, StoreFailure};

use crate::backends::TagStore;
use crate::server::LocalKeys;

/// Upper bounds of the refill latency histogram, in seconds.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// A latency histogram (cumulative buckets as Prometheus expects are computed on render).
#[derive(Default)]
pub struct Histogram {
    counts: [AtomicU64; BUCKETS.len() + 1],
    sum_us: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, seconds: f64) {
        let i = BUCKETS
            .iter()
            .position(|b| seconds <= *b)
            .unwrap_or(BUCKETS.len());
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_us
            .fetch_add((seconds * 1e6) as u64, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut total = 0;
        for (i, bound) in BUCKETS.iter().enumerate() {
            total += self.counts[i].load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {total}");
        }
        total += self.counts[BUCKETS.len()].load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {total}");
        let sum = self.sum_seconds();
        let _ = writeln!(out, "{name}_sum{{{labels}}} {sum}");
        let _ = writeln!(out, "{name}_count{{{labels}}} {total}");
    }

    /// The `_sum` `/metrics` reports, in seconds.
    pub fn sum_seconds(&self) -> f64 {
        self.sum_us.load(Ordering::Relaxed) as f64 / 1e6
    }

    /// The `_count` `/metrics` reports: every observation.
    pub fn count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }
}

/// One key's store figures.
#[derive(Default)]
pub struct StoreCalls {
    pub latency: Histogram,
    pub errors: AtomicU64,
}

/// The store the driver calls, timed per key; remembers whether the last call succeeded
/// (for `/readyz`) and logs a failure and the recovery after it once each.
pub struct MeteredStore {
    pub inner: Arc<dyn TagStore>,
    pub calls: RwLock<HashMap<String, Arc<StoreCalls>>>,
    pub healthy: AtomicBool,
    last_error: Mutex<Option<String>>,
}

impl MeteredStore {
    pub fn new(inner: Arc<dyn TagStore>) -> MeteredStore {
        MeteredStore {
            inner,
            calls: RwLock::new(HashMap::new()),
            healthy: AtomicBool::new(true),
            last_error: Mutex::new(None),
        }
    }

    fn calls_for(&self, tag: &str) -> Arc<StoreCalls> {
        if let Some(c) = self
            .calls
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(tag)
        {
            return c.clone();
        }
        let mut all = self.calls.write().unwrap_or_else(|p| p.into_inner());
        all.entry(tag.to_string()).or_default().clone()
    }

    /// Records the outcome of any store call (allocations, tag lookups, health probes).
    pub fn record<T>(&self, result: &Result<T, String>) {
        let mut last = self.last_error.lock().unwrap_or_else(|p| p.into_inner());
        match result {
            Ok(_) => {
                if last.take().is_some() {
                    crate::server::log(
                        "info",
                        "store recovered",
                        &[("store", self.inner.describe())],
                    );
                }
                self.healthy.store(true, Ordering::Relaxed);
            }
            Err(e) => {
                if last.as_deref() != Some(e.as_str()) {
                    crate::server::log(
                        "error",
                        "store call failed",
                        &[("store", self.inner.describe()), ("error", e)],
                    );
                }
                *last = Some(e.clone());
                self.healthy.store(false, Ordering::Relaxed);
            }
        }
    }

    pub fn has_tag(&self, tag: &str) -> Result<bool, String> {
        let result = self.inner.has_tag(tag);
        self.record(&result);
        result
    }

    pub fn render(&self, out: &mut String) {
        let calls = self.calls.read().unwrap_or_else(|p| p.into_inner());
        let mut keys: Vec<&String> = calls.keys().collect();
        keys.sort();
        header(
            out,
            "segflake_store_call_duration_seconds",
            "histogram",
            "Time of each store allocation (a segment refill), by key.",
        );
        for key in &keys {
            calls[*key].latency.render(
                out,
                "segflake_store_call_duration_seconds",
                &key_label(key),
            );
        }
        header(
            out,
            "segflake_store_errors_total",
            "counter",
            "Store allocations that failed, by key.",
        );
        for key in &keys {
            let _ = writeln!(
                out,
                "segflake_store_errors_total{{{}}} {}",
                key_label(key),
                calls[*key].errors.load(Ordering::Relaxed)
            );
        }
        let up = u8::from(self.healthy.load(Ordering::Relaxed));
        sample(
            out,
            "segflake_store_up",
            "gauge",
            "1 if the store's last call succeeded.",
            up,
        );
    }
}

impl MeteredStore {
    /// Times one allocation of `tag`; a tag the store does not have is an answer, not a
    /// store failure.
    fn timed(
        &self,
        tag: &str,
        call: impl FnOnce(&dyn TagStore) -> Result<Allocation, StoreFailure>,
    ) -> Result<Allocation, StoreFailure> {
        let calls = self.calls_for(tag);
        let started = Instant::now();
        let result = call(&*self.inner);
        calls.latency.observe(started.elapsed().as_secs_f64());
        if let Err(StoreFailure::Failed(e)) = &result {
            calls.errors.fetch_add(1, Ordering::Relaxed);
            self.record::<()>(&Err(e.clone()));
        } else {
            self.record(&Ok(()));
        }
        result
    }

    /// As the inner store's [`TagStore::allocate_with`], timed.
    pub fn allocate_with(&self, tag: &str, step: Option<u64>) -> Result<Allocation, StoreFailure> {
        self.timed(tag, |store| store.allocate_with(tag, step))
    }

    /// As the inner store's [`TagStore::give_back_as`] (not timed, as `give_back`).
    pub fn give_back_as(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
        token: &str,
    ) -> Result<bool, StoreFailure> {
        self.inner.give_back_as(tag, expected_max_id, max_id, token)
    }
}

impl SegmentStore for MeteredStore {
    fn allocate(&self, tag: &str, step: u64) -> Result<Allocation, StoreFailure> {
        self.timed(tag, |store| store.allocate(tag, step))
    }

    fn give_back(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
    ) -> Result<bool, StoreFailure> {
        self.inner.give_back(tag, expected_max_id, max_id)
    }
}

/// `segflake_lease_mark_ahead_seconds`: how far the lease's mark is ahead of the clock,
/// while a worker ID is held (`None` otherwise).
pub fn mark_ahead_seconds(lease: &segflake::lease::LeaseStats) -> Option<f64> {
    lease.worker_id.map(|_| lease.mark_ahead_ms as f64 / 1000.0)
}

/// `key="order"`, escaped as the text format requires.
pub fn key_label(key: &str) -> String {
    label("key", key)
}

/// `name="value"` with the value escaped as Prometheus' text format wants.
pub fn label(name: &str, value: &str) -> String {
    let mut v = String::with_capacity(value.len() + 8);
    for c in value.chars() {
        match c {
            '\\' => v.push_str("\\\\"),
            '"' => v.push_str("\\\""),
            '\n' => v.push_str("\\n"),
            c => v.push(c),
        }
    }
    format!("{name}=\"{v}\"")
}

pub fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// A metric without labels: its header and its one sample.
pub fn sample(out: &mut String, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
    header(out, name, kind, help);
    let _ = writeln!(out, "{name} {value}");
}

/// The routes requests are counted by, in the order of [`Route::ALL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    SegmentGet,
    SnowflakeGet,
    SegmentAlloc,
    Decode,
    Metrics,
    Health,
    StatusPage,
    Other,
}

impl Route {
    const ALL: [Route; 8] = [
        Route::SegmentGet,
        Route::SnowflakeGet,
        Route::SegmentAlloc,
        Route::Decode,
        Route::Metrics,
        Route::Health,
        Route::StatusPage,
        Route::Other,
    ];

    fn name(self) -> &'static str {
        match self {
            Route::SegmentGet => "segment_get",
            Route::SnowflakeGet => "snowflake_get",
            Route::SegmentAlloc => "segment_alloc",
            Route::Decode => "decode",
            Route::Metrics => "metrics",
            Route::Health => "health",
            Route::StatusPage => "status_page",
            Route::Other => "other",
        }
    }
}

/// The status codes requests are counted by (0: any other).
const STATUSES: [u16; 9] = [200, 400, 401, 403, 404, 405, 500, 503, 0];

/// The index of `status` in [`STATUSES`].
fn status_index(status: u16) -> usize {
    match status {
        200 => 0,
        400 => 1,
        401 => 2,
        403 => 3,
        404 => 4,
        405 => 5,
        500 => 6,
        503 => 7,
        _ => 8,
    }
}

/// Requests by route and status, and snowflake IDs by key.
pub struct Requests {
    counts: [[AtomicU64; STATUSES.len()]; Route::ALL.len()],
    snowflake_ids: RwLock<HashMap<String, Arc<AtomicU64>>>,
    /// Tells this counter's entries in a thread's [`LOCAL_COUNTERS`] from another's.
    id: u64,
}

thread_local! {
    /// Each thread's snowflake counters by key (the shared ones of `snowflake_ids`, or
    /// `(other)`'s for a key counted under it), for the `Requests` whose `id` it holds.
    static LOCAL_COUNTERS: RefCell<(u64, LocalKeys<Arc<AtomicU64>>)> =
        RefCell::new((0, LocalKeys::default()));
}

/// Snowflake keys counted one by one; later keys are counted under `key="(other)"`.
const MAX_COUNTED_KEYS: usize = 1000;

impl Default for Requests {
    fn default() -> Self {
        Requests {
            counts: Default::default(),
            snowflake_ids: RwLock::new(HashMap::new()),
            id: {
                static NEXT: AtomicU64 = AtomicU64::new(1);
                NEXT.fetch_add(1, Ordering::Relaxed)
            },
        }
    }
}

impl Requests {
    pub fn count(&self, route: Route, status: u16) {
        self.counts[route as usize][status_index(status)].fetch_add(1, Ordering::Relaxed);
    }

    /// Adds `n` to the snowflake IDs of `key`: one atomic increment once this thread has
    /// seen the key.
    pub fn snowflake_issued(&self, key: &str, n: u64) {
        LOCAL_COUNTERS.with(|local| {
            let mut local = local.borrow_mut();
            let (owner, counters) = &mut *local;
            if *owner != self.id {
                *owner = self.id;
                counters.clear();
            }
            if let Some(c) = counters.get(key) {
                c.fetch_add(n, Ordering::Relaxed);
                return;
            }
            let c = self.snowflake_counter(key);
            c.fetch_add(n, Ordering::Relaxed);
            // Keys past the counted ones all share `(other)`: remember a bounded number.
            if counters.len() < 2 * MAX_COUNTED_KEYS {
                counters.insert(key, c);
            }
        })
    }

    /// The shared counter of `key`, created if the key is new (`(other)`'s once
    /// [`MAX_COUNTED_KEYS`] keys are counted).
    fn snowflake_counter(&self, key: &str) -> Arc<AtomicU64> {
        if let Some(c) = self
            .snowflake_ids
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
        {
            return c.clone();
        }
        let mut all = self
            .snowflake_ids
            .write()
            .unwrap_or_else(|p| p.into_inner());
        let key = if all.len() >= MAX_COUNTED_KEYS && !all.contains_key(key) {
            "(other)"
        } else {
            key
        };
        all.entry(key.to_string()).or_default().clone()
    }

    /// `(route, status, count)` of every pair counted so far, as `render` writes them.
    pub fn counts(&self) -> Vec<(&'static str, String, u64)> {
        let mut out = Vec::new();
        for (r, route) in Route::ALL.iter().enumerate() {
            for (s, status) in STATUSES.iter().enumerate() {
                let n = self.counts[r][s].load(Ordering::Relaxed);
                if n > 0 {
                    let status = if *status == 0 {
                        "other".to_string()
                    } else {
                        status.to_string()
                    };
                    out.push((route.name(), status, n));
                }
            }
        }
        out
    }

    /// Snowflake IDs issued, by key, sorted.
    pub fn snowflake_counts(&self) -> Vec<(String, u64)> {
        let all = self.snowflake_ids.read().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<(String, u64)> = all
            .iter()
            .map(|(k, n)| (k.clone(), n.load(Ordering::Relaxed)))
            .collect();
        out.sort();
        out
    }

    pub fn render(&self, out: &mut String) {
        header(
            out,
            "segflake_http_requests_total",
            "counter",
            "Requests (HTTP, and gRPC calls under the same routes) by route and status.",
        );
        for (route, status, n) in self.counts() {
            let _ = writeln!(
                out,
                "segflake_http_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}"
            );
        }
        header(
            out,
            "segflake_snowflake_ids_total",
            "counter",
            "Snowflake IDs issued, by key.",
        );
        for (key, n) in self.snowflake_counts() {
            let _ = writeln!(
                out,
                "segflake_snowflake_ids_total{{{}}} {n}",
                key_label(&key)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_statuses_index_their_tables() {
        for (i, route) in Route::ALL.iter().enumerate() {
            assert_eq!(*route as usize, i, "{route:?}");
        }
        for (i, status) in STATUSES.iter().enumerate() {
            assert_eq!(status_index(*status), i, "{status}");
        }
        assert_eq!(status_index(502), STATUSES.len() - 1);
    }

    #[test]
    fn snowflake_ids_are_counted_by_key_then_under_other() {
        let requests = Requests::default();
        for i in 0..MAX_COUNTED_KEYS + 5 {
            requests.snowflake_issued(&format!("k{i}"), 1);
        }
        requests.snowflake_issued("k0", 2);
        requests.snowflake_issued(&format!("k{}", MAX_COUNTED_KEYS + 1), 3);
        // Another counter on the same thread starts from nothing.
        Requests::default().snowflake_issued("k0", 7);
        let counts: HashMap<String, u64> = requests.snowflake_counts().into_iter().collect();
        assert_eq!(counts.len(), MAX_COUNTED_KEYS + 1);
        assert_eq!(counts["k0"], 3);
        assert_eq!(counts["k1"], 1);
        assert_eq!(counts["(other)"], 5 + 3);
    }
}
