//! The recent past the status page charts: a ring of samples of the figures `/metrics`
//! exports, taken by one task ([`sample_every`]) every `status_sample_ms`.
//!
//! * A sample holds, per key, what `/metrics` would report at that moment:
//!   `segflake_segment_ids_total`, `segflake_snowflake_ids_total`, the `_sum` and `_count`
//!   of `segflake_store_call_duration_seconds`, `segflake_segment_runway_seconds`; and
//!   `segflake_lease_mark_ahead_seconds`. Its time is the server's uptime in milliseconds
//!   (the clock of `segflake_uptime_seconds`).
//! * A charted rate is a counter's increase between two consecutive samples, over the time
//!   between them; a charted refill latency is the increase of the sum over that of the
//!   count (the mean of the refills in between, none if there were none). Both can be
//!   recomputed from the points the page carries. A key a sample does not list had issued
//!   nothing then (its counters start at 0) if the sample left no key out for the cap;
//!   otherwise its figures then are unknown and the charts have a gap.
//! * Memory is bounded: at most [`POINTS`] samples, each holding at most `max_keys` keys
//!   (the busiest: see [`History::record`]), plus each key's ID total at the last sample
//!   (the keys `/metrics` lists, which the server holds anyway).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Flake, Service};

/// Samples kept: 15 minutes at the default interval of 10 s.
pub const POINTS: usize = 90;
/// Keys charted at most.
pub const MAX_KEYS: usize = 50;

/// What `/metrics` reports for one key at one moment (`None`: no such sample).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeyFigures {
    /// `segflake_segment_ids_total`.
    pub segment_ids: Option<u64>,
    /// `segflake_snowflake_ids_total`.
    pub snowflake_ids: Option<u64>,
    /// `segflake_store_call_duration_seconds_sum` and `_count`.
    pub refills: Option<(f64, u64)>,
    /// `segflake_segment_runway_seconds`.
    pub runway_seconds: Option<f64>,
}

impl KeyFigures {
    /// IDs of both kinds issued for the key (what "busiest" ranks by).
    fn ids(&self) -> u64 {
        self.segment_ids
            .unwrap_or(0)
            .saturating_add(self.snowflake_ids.unwrap_or(0))
    }
}

/// One look at every figure the charts follow.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// Milliseconds since the server started.
    pub at_ms: u64,
    /// Every key `/metrics` lists.
    pub keys: BTreeMap<String, KeyFigures>,
    /// `segflake_lease_mark_ahead_seconds` (only while a worker ID is held).
    pub lease_ahead_seconds: Option<f64>,
}

/// A reading as kept: the keys charted, sorted, sharing their names with the other samples.
struct Sample {
    at_ms: u64,
    /// No key was left out for the cap: a key missing here was not in `/metrics`.
    complete: bool,
    keys: Vec<(Arc<str>, KeyFigures)>,
    lease_ahead_seconds: Option<f64>,
}

impl Sample {
    fn get(&self, key: &str) -> Option<&KeyFigures> {
        self.keys
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &self.keys[i].1)
    }
}

#[derive(Default)]
struct Ring {
    /// Oldest first; at most [`POINTS`].
    samples: VecDeque<Sample>,
    /// Every key's [`KeyFigures::ids`] at the last reading.
    totals: HashMap<String, u64>,
    /// Each charted key's IDs at the reading before it was last taken in (at most
    /// `max_keys` entries).
    entered: HashMap<Arc<str>, u64>,
    /// Keys of the last reading left out for the cap.
    left_out: usize,
}

/// The samples, shared by the sampling task and the status page.
pub struct History {
    interval: Duration,
    max_keys: usize,
    ring: Mutex<Ring>,
}

/// What one chart shows. Its columns, in the page's `data-columns`, name what each point
/// carries: the time, the charted value, then the `/metrics` samples it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    SegmentRate,
    SnowflakeRate,
    RefillLatency,
    Runway,
    LeaseAhead,
}

impl Kind {
    /// The charts of a key, in the page's order.
    const PER_KEY: [Kind; 4] = [
        Kind::SegmentRate,
        Kind::SnowflakeRate,
        Kind::RefillLatency,
        Kind::Runway,
    ];

    /// The `/metrics` metric the chart is drawn from.
    pub fn metric(self) -> &'static str {
        match self {
            Kind::SegmentRate => "segflake_segment_ids_total",
            Kind::SnowflakeRate => "segflake_snowflake_ids_total",
            Kind::RefillLatency => "segflake_store_call_duration_seconds",
            Kind::Runway => "segflake_segment_runway_seconds",
            Kind::LeaseAhead => "segflake_lease_mark_ahead_seconds",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Kind::SegmentRate => "segment IDs per second",
            Kind::SnowflakeRate => "snowflake IDs per second",
            Kind::RefillLatency => "refill latency (mean)",
            Kind::Runway => "runway",
            Kind::LeaseAhead => "lease mark ahead of the clock",
        }
    }

    /// The names of a point's values: `t_ms`, the charted value, the metric samples.
    pub fn columns(self) -> &'static [&'static str] {
        match self {
            Kind::SegmentRate => &["t_ms", "per_second", "segflake_segment_ids_total"],
            Kind::SnowflakeRate => &["t_ms", "per_second", "segflake_snowflake_ids_total"],
            Kind::RefillLatency => &[
                "t_ms",
                "mean_seconds",
                "segflake_store_call_duration_seconds_sum",
                "segflake_store_call_duration_seconds_count",
            ],
            Kind::Runway => &["t_ms", "segflake_segment_runway_seconds"],
            Kind::LeaseAhead => &["t_ms", "segflake_lease_mark_ahead_seconds"],
        }
    }

    /// Whether the value can be negative (the others are charted from 0).
    pub fn signed(self) -> bool {
        self == Kind::LeaseAhead
    }
}

/// One sample's point of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Milliseconds since the server started.
    pub at_ms: u64,
    /// The charted value (`None`: a gap).
    pub value: Option<f64>,
    /// The metric samples behind it, as many as [`Kind::columns`] names after the value.
    pub raw: Vec<Option<f64>>,
}

/// One chart: a series with a point for every sample in the ring.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub kind: Kind,
    pub points: Vec<Point>,
}

/// Everything the page charts, for the keys one request may see.
#[derive(Debug, Clone, Default)]
pub struct Charts {
    /// The time the page is drawn at (ms since the start): the right end of every chart.
    pub now_ms: u64,
    /// The span every chart covers (the ring's capacity × the interval).
    pub window_ms: u64,
    pub interval_ms: u64,
    pub max_keys: usize,
    /// Keys of the last sample left out for the cap (visible or not).
    pub left_out: usize,
    /// The charted keys this request may see, sorted, each with its series.
    pub keys: Vec<(String, Vec<Series>)>,
    pub lease: Option<Series>,
    /// Whether any sample was taken yet.
    pub sampled: bool,
}

/// `(b - a) / seconds` for a counter read at `a` and `b`, `None` if it went down.
fn rate(a: u64, b: u64, ms: u64) -> Option<f64> {
    (b >= a && ms > 0).then(|| (b - a) as f64 * 1000.0 / ms as f64)
}

impl History {
    pub fn new(interval: Duration) -> History {
        History::with_max_keys(interval, MAX_KEYS)
    }

    pub fn with_max_keys(interval: Duration, max_keys: usize) -> History {
        History {
            interval,
            max_keys,
            ring: Mutex::new(Ring::default()),
        }
    }

    fn ring(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a reading, dropping the oldest sample past [`POINTS`]. Past `max_keys` keys it
    /// keeps the busiest: a key charted in the last sample counts the IDs issued since the
    /// oldest sample (or, if that does not hold it, since the reading before it was taken
    /// in), any other key those since the last reading; ties go to keys already charted,
    /// then by name.
    pub fn record(&self, reading: Reading) {
        let mut ring = self.ring();
        let kept = ring.busiest(&reading, self.max_keys);
        let keys: Vec<(Arc<str>, KeyFigures)> = kept
            .iter()
            .map(|k| (ring.shared(k), reading.keys[*k].clone()))
            .collect();
        let last = ring.samples.back();
        let entering: Vec<(Arc<str>, u64)> = keys
            .iter()
            .filter(|(k, _)| last.is_none_or(|s| s.get(k).is_none()))
            .map(|(k, _)| (k.clone(), ring.totals.get(&**k).copied().unwrap_or(0)))
            .collect();
        ring.entered
            .retain(|k, _| keys.binary_search_by(|(x, _)| x.cmp(k)).is_ok());
        ring.entered.extend(entering);
        ring.left_out = reading.keys.len() - keys.len();
        ring.totals = reading
            .keys
            .iter()
            .map(|(k, f)| (k.clone(), f.ids()))
            .collect();
        if ring.samples.len() == POINTS {
            ring.samples.pop_front();
        }
        let complete = ring.left_out == 0;
        ring.samples.push_back(Sample {
            at_ms: reading.at_ms,
            complete,
            keys,
            lease_ahead_seconds: reading.lease_ahead_seconds,
        });
    }

    /// The charts of the keys `visible` admits, drawn at `now_ms`.
    pub fn charts(&self, now_ms: u64, visible: impl Fn(&str) -> bool) -> Charts {
        let ring = self.ring();
        let interval_ms = self.interval.as_millis() as u64;
        let mut charts = Charts {
            now_ms,
            window_ms: interval_ms * POINTS as u64,
            interval_ms,
            max_keys: self.max_keys,
            left_out: ring.left_out,
            sampled: !ring.samples.is_empty(),
            ..Charts::default()
        };
        let Some(last) = ring.samples.back() else {
            return charts;
        };
        for (key, _) in &last.keys {
            if !visible(key) {
                continue;
            }
            let series = Kind::PER_KEY
                .iter()
                .filter_map(|kind| ring.series(*kind, Some(key)))
                .collect();
            charts.keys.push((key.to_string(), series));
        }
        charts.lease = ring.series(Kind::LeaseAhead, None);
        charts
    }
}

impl Ring {
    /// The keys to keep of `reading`, sorted (see [`History::record`]).
    fn busiest<'a>(&self, reading: &'a Reading, max_keys: usize) -> Vec<&'a str> {
        if reading.keys.len() <= max_keys {
            return reading.keys.keys().map(String::as_str).collect();
        }
        let last = self.samples.back();
        let first = self.samples.front();
        let mut scored: Vec<(u64, bool, &str)> = reading
            .keys
            .iter()
            .map(|(k, f)| {
                let charted = last.is_some_and(|s| s.get(k).is_some());
                let since = if !charted {
                    self.totals.get(k).copied()
                } else if let Some(oldest) = first.and_then(|s| s.get(k)) {
                    Some(oldest.ids())
                } else {
                    self.entered.get(k.as_str()).copied()
                };
                (
                    f.ids().saturating_sub(since.unwrap_or(0)),
                    charted,
                    k.as_str(),
                )
            })
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(b.2)));
        scored.truncate(max_keys);
        let mut kept: Vec<&str> = scored.into_iter().map(|(_, _, k)| k).collect();
        kept.sort_unstable();
        kept
    }

    /// `key` as the last sample holds it (one allocation per key, not per sample).
    fn shared(&self, key: &str) -> Arc<str> {
        self.samples
            .back()
            .and_then(|s| {
                s.keys
                    .binary_search_by(|(k, _)| (**k).cmp(key))
                    .ok()
                    .map(|i| s.keys[i].0.clone())
            })
            .unwrap_or_else(|| Arc::from(key))
    }

    /// The series of `kind` (of `key`, or the lease's), if any sample has its figure.
    fn series(&self, kind: Kind, key: Option<&str>) -> Option<Series> {
        let figures = |s: &Sample| key.and_then(|k| s.get(k)).cloned().unwrap_or_default();
        // A counter a complete sample lacks was 0 (see the module's comment).
        let counter = |s: &Sample, f: &KeyFigures| {
            let n = match kind {
                Kind::SegmentRate => f.segment_ids,
                _ => f.snowflake_ids,
            };
            n.or(s.complete.then_some(0))
        };
        let refills = |s: &Sample, f: &KeyFigures| f.refills.or(s.complete.then_some((0.0, 0)));
        let mut any = false;
        let mut points = Vec::with_capacity(self.samples.len());
        let mut previous: Option<(&Sample, KeyFigures)> = None;
        for s in &self.samples {
            let f = figures(s);
            let (value, raw) = match kind {
                Kind::SegmentRate | Kind::SnowflakeRate => {
                    any |= match kind {
                        Kind::SegmentRate => f.segment_ids.is_some(),
                        _ => f.snowflake_ids.is_some(),
                    };
                    let now = counter(s, &f);
                    let value = match (&previous, now) {
                        (Some((p, pf)), Some(b)) => {
                            counter(p, pf).and_then(|a| rate(a, b, s.at_ms - p.at_ms))
                        }
                        _ => None,
                    };
                    (value, vec![now.map(|n| n as f64)])
                }
                Kind::RefillLatency => {
                    any |= f.refills.is_some();
                    let now = refills(s, &f);
                    let before = previous.as_ref().and_then(|(p, pf)| refills(p, pf));
                    let value = match (before, now) {
                        (Some((sa, ca)), Some((sb, cb))) if cb > ca => {
                            Some((sb - sa).max(0.0) / (cb - ca) as f64)
                        }
                        _ => None,
                    };
                    let raw = vec![now.map(|(s, _)| s), now.map(|(_, c)| c as f64)];
                    (value, raw)
                }
                Kind::Runway => {
                    any |= f.segment_ids.is_some();
                    (f.runway_seconds, vec![])
                }
                Kind::LeaseAhead => {
                    any |= s.lease_ahead_seconds.is_some();
                    (s.lease_ahead_seconds, vec![])
                }
            };
            points.push(Point {
                at_ms: s.at_ms,
                value,
                raw,
            });
            previous = Some((s, f));
        }
        any.then_some(Series { kind, points })
    }
}

/// The figures `/metrics` would report now.
fn read(service: &Service) -> Reading {
    let at_ms = service.started.elapsed().as_millis() as u64;
    let mut keys: BTreeMap<String, KeyFigures> = BTreeMap::new();
    if let Some(seg) = &service.segments {
        for s in seg.stats() {
            let f = keys.entry(s.tag).or_default();
            f.segment_ids = Some(s.issued);
            f.runway_seconds = s.runway_seconds;
        }
        let calls = seg.store.calls.read().unwrap_or_else(|p| p.into_inner());
        for (key, c) in calls.iter() {
            let refills = (c.latency.sum_seconds(), c.latency.count());
            keys.entry(key.clone()).or_default().refills = Some(refills);
        }
    }
    for (key, n) in service.requests.snowflake_counts() {
        keys.entry(key).or_default().snowflake_ids = Some(n);
    }
    let lease_ahead_seconds = match service.snowflake.as_deref() {
        Some(Flake::Leased(l)) => crate::metrics::mark_ahead_seconds(&l.stats()),
        _ => None,
    };
    Reading {
        at_ms,
        keys,
        lease_ahead_seconds,
    }
}

/// Takes a reading into the service's history every interval, the first at once.
pub(super) async fn sample_every(service: Arc<Service>) {
    let mut tick = tokio::time::interval(service.history.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        service.history.record(read(&service));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(at_ms: u64, keys: &[(&str, u64)]) -> Reading {
        Reading {
            at_ms,
            keys: keys
                .iter()
                .map(|(k, n)| {
                    let f = KeyFigures {
                        segment_ids: Some(*n),
                        ..KeyFigures::default()
                    };
                    (k.to_string(), f)
                })
                .collect(),
            lease_ahead_seconds: None,
        }
    }

    fn values(s: &Series) -> Vec<Option<f64>> {
        s.points.iter().map(|p| p.value).collect()
    }

    fn keys(c: &Charts) -> Vec<&str> {
        c.keys.iter().map(|(k, _)| k.as_str()).collect()
    }

    #[test]
    fn rates_are_counter_increases_over_the_time_between_samples() {
        let h = History::new(Duration::from_millis(250));
        h.record(reading(0, &[("a", 0)]));
        h.record(reading(250, &[("a", 100)]));
        h.record(reading(750, &[("a", 100), ("b", 7)]));
        h.record(reading(1000, &[("a", 600), ("b", 9)]));
        let c = h.charts(1010, |_| true);
        assert_eq!(keys(&c), ["a", "b"]);
        let a = &c.keys[0].1;
        // Only segment figures were read: the segment rate and the runway.
        assert_eq!(
            a.iter().map(|s| s.kind).collect::<Vec<_>>(),
            [Kind::SegmentRate, Kind::Runway]
        );
        assert_eq!(values(&a[0]), [None, Some(400.0), Some(0.0), Some(2000.0)]);
        assert_eq!(a[0].points[3].raw, [Some(600.0)]);
        assert_eq!(a[0].points[3].at_ms, 1000);
        // Before b was listed it had issued nothing.
        assert_eq!(
            values(&c.keys[1].1[0]),
            [None, Some(0.0), Some(14.0), Some(8.0)]
        );
        assert_eq!(c.keys[1].1[0].points[1].raw, [Some(0.0)]);
        assert_eq!(c.window_ms, 250 * POINTS as u64);
    }

    #[test]
    fn refill_latency_is_the_mean_between_samples_and_lease_lead_the_gauge() {
        let h = History::new(Duration::from_secs(10));
        let mut r = Reading::default();
        let refills = |sum, count| KeyFigures {
            refills: Some((sum, count)),
            ..KeyFigures::default()
        };
        for (at, sum, count, lead) in [
            (0, 0.0, 0, Some(3.2)),
            (10_000, 0.25, 5, Some(3.1)),
            (20_000, 0.25, 5, None),
            (30_000, 0.75, 6, Some(-0.5)),
        ] {
            r.at_ms = at;
            r.keys.insert("k".into(), refills(sum, count));
            r.lease_ahead_seconds = lead;
            h.record(r.clone());
        }
        let c = h.charts(30_000, |_| true);
        let k = &c.keys[0].1;
        assert_eq!(k.len(), 1);
        assert_eq!(k[0].kind, Kind::RefillLatency);
        assert_eq!(values(&k[0]), [None, Some(0.05), None, Some(0.5)]);
        assert_eq!(k[0].points[3].raw, [Some(0.75), Some(6.0)]);
        let lease = c.lease.expect("a lease series");
        assert_eq!(values(&lease), [Some(3.2), Some(3.1), None, Some(-0.5)]);
        assert!(lease.kind.signed());
    }

    #[test]
    fn the_ring_keeps_the_last_points_only() {
        let h = History::new(Duration::from_millis(100));
        for i in 0..POINTS as u64 + 25 {
            h.record(reading(i * 100, &[("a", i * 10)]));
        }
        let c = h.charts(0, |_| true);
        let points = &c.keys[0].1[0].points;
        assert_eq!(points.len(), POINTS);
        assert_eq!(points[0].at_ms, 2500);
        // The oldest point's rate would need the sample dropped before it.
        assert_eq!(points[0].value, None);
        assert_eq!(points[1].value, Some(100.0));
        assert_eq!(points[POINTS - 1].at_ms, (POINTS as u64 + 24) * 100);
    }

    #[test]
    fn past_the_cap_the_busiest_keys_are_charted() {
        let h = History::with_max_keys(Duration::from_secs(1), 2);
        h.record(reading(0, &[("a", 0), ("b", 0)]));
        h.record(reading(1000, &[("a", 10), ("b", 50)]));
        // A third key: over the cap. It issued 30 since the last reading; a issued 20 and b
        // 60 over the window: c takes a's place.
        h.record(reading(2000, &[("a", 20), ("b", 60), ("c", 30)]));
        let c = h.charts(2000, |_| true);
        assert_eq!(keys(&c), ["b", "c"]);
        assert_eq!(c.left_out, 1);
        // c was not listed before (no key was left out then): its IDs count from 0.
        assert_eq!(values(&c.keys[1].1[0]), [None, Some(0.0), Some(30.0)]);
        // A quiet newcomer does not displace c, whose 30 IDs from before it was taken in
        // count.
        h.record(reading(3000, &[("a", 20), ("b", 61), ("c", 30), ("d", 1)]));
        let c = h.charts(3000, |_| true);
        assert_eq!(keys(&c), ["b", "c"]);
        assert_eq!(
            values(&c.keys[0].1[0]),
            [None, Some(50.0), Some(10.0), Some(1.0)]
        );
        // While keys were left out, one missing from a sample is a gap, not a 0.
        let a = h.ring().series(Kind::SegmentRate, Some("a")).unwrap();
        assert_eq!(values(&a), [None, Some(10.0), None, None]);
        assert_eq!(a.points[2].raw, [None]);
        // A burst of a (40 since the last reading) beats c's 30 over the window.
        h.record(reading(4000, &[("a", 60), ("b", 61), ("c", 30), ("d", 1)]));
        let c = h.charts(4000, |_| true);
        assert_eq!(keys(&c), ["a", "b"]);
        assert_eq!(c.left_out, 2);
        // c's 60 since the last reading ties a's 60 over the window: a stays.
        h.record(reading(5000, &[("a", 60), ("b", 61), ("c", 90), ("d", 1)]));
        assert_eq!(keys(&h.charts(5000, |_| true)), ["a", "b"]);
        let ring = h.ring();
        assert!(ring.samples.iter().all(|s| s.keys.len() <= 2));
        assert_eq!(ring.totals.len(), 4);
        assert_eq!(ring.entered.len(), 2);
    }

    #[test]
    fn hidden_keys_are_not_charted() {
        let h = History::new(Duration::from_secs(1));
        h.record(reading(0, &[("open", 1), ("secret", 2)]));
        let c = h.charts(0, |k| k != "secret");
        assert_eq!(keys(&c), ["open"]);
        assert!(c.sampled);
        assert!(
            !History::new(Duration::from_secs(1))
                .charts(0, |_| true)
                .sampled
        );
    }
}
