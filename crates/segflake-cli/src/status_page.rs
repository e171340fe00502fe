//! The status page of `segflake serve` (`GET /`, and Leaf's `/cache`): one server-side
//! HTML page, plain HTML and CSS, that refreshes itself. Every number on it is the one
//! `/metrics` reports at the same moment (the cells carry the metric's name in
//! `data-metric`), so the page and the scrape never disagree.
//!
//! Its charts (inline SVG) show the samples of those figures the server keeps
//! (`server::history`); each `figure` carries the metric it is drawn from in
//! `data-metric`, the key in `data-key`, and every point in `data-points`, a JSON array of
//! arrays whose entries `data-columns` names: the time (ms since the start, the clock of
//! `segflake_uptime_seconds`), the charted value, then the `/metrics` samples behind it.

use crate::layout_cmd::group_thousands;
use crate::server::history::{Charts, Kind, Series};
use segflake::lease::LeaseStats;
use segflake::segment::SegmentStats;
use std::fmt::Write;

/// What the page shows, gathered by the server for one request.
pub struct View {
    pub uptime_seconds: f64,
    pub draining: bool,
    /// The store's description (password hidden) and whether its last call succeeded.
    pub store: Option<(String, bool)>,
    /// The keys this request may see, sorted.
    pub segments: Vec<SegmentStats>,
    /// Keys held back because they have tokens the request did not present.
    pub hidden_keys: usize,
    /// A fixed worker ID, or the lease and the registry it comes from (redacted).
    pub worker: Option<u64>,
    pub lease: Option<(LeaseStats, String)>,
    /// `(route, status, count)` of the requests served so far.
    pub requests: Vec<(&'static str, String, u64)>,
    /// Snowflake IDs issued, by key (visible keys only).
    pub snowflake_ids: Vec<(String, u64)>,
    /// Seconds between refreshes.
    pub refresh_seconds: u32,
    /// The recent past, for the keys this request may see.
    pub charts: Charts,
    /// Configuration reloads applied and refused, and the last one's error while the last
    /// one was refused.
    pub reloads: (u64, u64, Option<String>),
    /// `"TLS"` or `"mutual TLS"` on the listeners, and the certificate's `notAfter` (Unix
    /// seconds).
    pub tls: Option<(&'static str, u64)>,
}

/// `s` with HTML's special characters escaped.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A table cell holding `metric`'s value `n` (for the page and `/metrics` to be compared).
fn metric_cell(out: &mut String, metric: &str, n: u64) {
    let _ = write!(
        out,
        "<td class=\"num\" data-metric=\"{metric}\" data-value=\"{n}\">{}</td>",
        group_thousands(n)
    );
}

const STYLE: &str = "\
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:1.5rem;color:#1d232a;background:#fafbfc}\
h1{font-size:1.35rem;margin:0 0 .2rem}h2{font-size:1.05rem;margin:1.6rem 0 .5rem}\
.meta{color:#57606a;margin:0}.ok{color:#1a7f37}.bad{color:#cf222e;font-weight:600}\
table{border-collapse:collapse;background:#fff;box-shadow:0 0 0 1px #d0d7de;border-radius:6px}\
th,td{padding:.35rem .7rem;text-align:left;border-bottom:1px solid #eaeef2;white-space:nowrap}\
th{background:#f6f8fa;font-weight:600;font-size:.85rem;color:#424a53}\
td.num{text-align:right;font-variant-numeric:tabular-nums}td.err{white-space:normal;max-width:28rem;color:#cf222e}\
.bar{display:inline-block;width:6rem;height:.55rem;background:#eaeef2;border-radius:3px;vertical-align:middle;margin-left:.4rem}\
.bar>i{display:block;height:100%;background:#2da44e;border-radius:3px}\
.empty{color:#57606a;font-style:italic}\
.chartrow{display:flex;flex-wrap:wrap;gap:.6rem;align-items:flex-start;margin:.2rem 0 .8rem}\
.chartrow>h3{flex-basis:100%;font-size:.9rem;font-weight:600;margin:0}\
figure.chart{margin:0;padding:.3rem .5rem .1rem;background:#fff;box-shadow:0 0 0 1px #d0d7de;border-radius:6px}\
figure.chart figcaption{font-size:.8rem;color:#424a53}figure.chart figcaption b{color:#1d232a;font-variant-numeric:tabular-nums}\
figure.chart svg{display:block;width:300px;height:84px}\
figure.chart text{font:9px system-ui,sans-serif;fill:#57606a}";

/// The whole page.
pub fn render(v: &View) -> String {
    let mut o = String::with_capacity(8192);
    let _ = write!(
        o,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"{}\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>segflake serve</title><style>{STYLE}</style></head><body>",
        v.refresh_seconds
    );
    o.push_str("<h1>segflake serve</h1><p class=\"meta\">");
    let _ = write!(
        o,
        "up <span data-metric=\"segflake_uptime_seconds\">{:.0}</span> s · {}",
        v.uptime_seconds,
        if v.draining {
            "<span class=\"bad\" data-metric=\"segflake_up\" data-value=\"0\">draining</span>"
        } else {
            "<span class=\"ok\" data-metric=\"segflake_up\" data-value=\"1\">serving</span>"
        }
    );
    if let Some((store, healthy)) = &v.store {
        let _ = write!(
            o,
            " · store <code>{}</code> {}",
            escape(store),
            if *healthy {
                "<span class=\"ok\">answering</span>"
            } else {
                "<span class=\"bad\">failing</span>"
            }
        );
    }
    if let Some((mode, not_after)) = v.tls {
        let _ = write!(
            o,
            " · {mode}, certificate valid until <span data-metric=\"segflake_tls_certificate_not_after_seconds\" data-value=\"{not_after}\">{}</span>",
            segflake::datetime::format_iso8601_ms(not_after.saturating_mul(1000))
        );
    }
    let (applied, refused, last_error) = &v.reloads;
    let _ = write!(
        o,
        " · reloads: <span data-metric=\"segflake_reloads_total\" data-result=\"applied\">{applied}</span> applied, \
         <span data-metric=\"segflake_reloads_total\" data-result=\"refused\">{refused}</span> refused"
    );
    let _ = write!(o, " · refreshes every {} s</p>", v.refresh_seconds);
    if let Some(e) = last_error {
        let _ = write!(
            o,
            "<p class=\"bad\" data-metric=\"segflake_reload_error_info\">The last reload was refused; \
             the configuration before it serves: <code>{}</code></p>",
            escape(e)
        );
    }

    charts(&mut o, &v.charts);
    segments(&mut o, v);
    worker(&mut o, v);
    requests(&mut o, v);
    o.push_str("</body></html>\n");
    o
}

fn segments(o: &mut String, v: &View) {
    if v.store.is_none() {
        return;
    }
    o.push_str("<h2>Segments</h2>");
    if v.segments.is_empty() {
        o.push_str("<p class=\"empty\">No key has been asked for yet.</p>");
    } else {
        o.push_str(
            "<table id=\"segments\"><tr><th>key</th><th>IDs issued</th><th>current segment</th>\
             <th>used</th><th>left (current + next)</th><th>next segment</th><th>step</th>\
             <th>runway</th><th>last refill</th><th>refills</th><th>failed</th><th>last error</th></tr>",
        );
        for s in &v.segments {
            let _ = write!(
                o,
                "<tr data-key=\"{0}\"><td><code>{0}</code></td>",
                escape(&s.tag)
            );
            metric_cell(o, "segflake_segment_ids_total", s.issued);
            let len = s.current_end.saturating_sub(s.current_start);
            let used = s.position.saturating_sub(s.current_start).min(len);
            let pct = (used * 100).checked_div(len).unwrap_or(0);
            if len == 0 {
                o.push_str("<td class=\"empty\">none yet</td><td></td>");
            } else {
                let _ = write!(
                    o,
                    "<td class=\"num\">[{}, {})</td><td class=\"num\">{pct}%<span class=\"bar\"><i style=\"width:{pct}%\"></i></span></td>",
                    s.current_start, s.current_end
                );
            }
            let next = if s.next_ready {
                s.next_end - s.next_start
            } else {
                0
            };
            metric_cell(o, "segflake_segment_remaining_ids", s.remaining + next);
            if s.next_ready {
                let _ = write!(
                    o,
                    "<td class=\"num\">[{}, {})</td>",
                    s.next_start, s.next_end
                );
            } else if s.fetch_in_flight {
                o.push_str("<td>loading…</td>");
            } else {
                o.push_str("<td class=\"empty\">not loaded</td>");
            }
            metric_cell(o, "segflake_segment_step", s.step);
            match s.runway_seconds {
                Some(r) => {
                    let _ = write!(o, "<td class=\"num\">{r:.1} s</td>");
                }
                None => o.push_str("<td class=\"empty\">idle</td>"),
            }
            match s.last_fetch_latency_ms {
                Some(ms) => {
                    let _ = write!(o, "<td class=\"num\">{ms} ms</td>");
                }
                None => o.push_str("<td></td>"),
            }
            let _ = write!(o, "<td class=\"num\">{}</td>", group_thousands(s.fetches));
            metric_cell(o, "segflake_segment_fetch_failures_total", s.failures);
            let _ = write!(
                o,
                "<td class=\"err\">{}</td></tr>",
                s.last_error.as_deref().map(escape).unwrap_or_default()
            );
        }
        o.push_str("</table>");
    }
    if v.hidden_keys > 0 {
        let _ = write!(
            o,
            "<p class=\"meta\">{} key{} with tokens not shown: add <code>?token=…</code>.</p>",
            v.hidden_keys,
            if v.hidden_keys == 1 { "" } else { "s" }
        );
    }
}

fn worker(o: &mut String, v: &View) {
    if let Some(w) = v.worker {
        let _ = write!(
            o,
            "<h2>Snowflake</h2><p>worker ID <strong>{w}</strong> (fixed)</p>"
        );
    }
    if let Some((l, registry)) = &v.lease {
        o.push_str("<h2>Worker lease</h2><table id=\"lease\">");
        let _ = write!(
            o,
            "<tr><th>registry</th><td><code>{}</code></td></tr>\
             <tr><th>state</th><td data-metric=\"segflake_lease_state\" data-value=\"{1}\" class=\"{2}\">{1}</td></tr>",
            escape(registry),
            l.state,
            if l.state == "held" { "ok" } else { "bad" }
        );
        match l.worker_id {
            Some(w) => {
                let _ = write!(
                    o,
                    "<tr><th>worker ID</th><td class=\"num\" data-metric=\"segflake_lease_worker_id\" \
                     data-value=\"{w}\"><strong>{w}</strong></td></tr>"
                );
            }
            None => o.push_str("<tr><th>worker ID</th><td class=\"empty\">none held</td></tr>"),
        }
        let _ = write!(
            o,
            "<tr><th>owner</th><td><code>{}</code></td></tr>\
             <tr><th>expires in</th><td class=\"num\">{}</td></tr>\
             <tr><th>mark</th><td class=\"num\">{} ({:+} ms ahead of the clock)</td></tr>",
            escape(&l.owner),
            l.lease_remaining_ms
                .map_or("-".to_string(), |ms| format!("{:.1} s", ms as f64 / 1000.0)),
            segflake::datetime::format_iso8601_ms(l.mark_ms),
            l.mark_ahead_ms
        );
        o.push_str("<tr><th>renewals</th>");
        metric_cell(o, "segflake_lease_renewals_total", l.renewals);
        o.push_str("</tr><tr><th>registry failures</th>");
        metric_cell(o, "segflake_lease_failures_total", l.failures);
        o.push_str("</tr><tr><th>times lost</th>");
        metric_cell(o, "segflake_lease_lost_total", l.lost);
        let _ = write!(
            o,
            "</tr><tr><th>last error</th><td class=\"err\">{}</td></tr></table>",
            l.last_error.as_deref().map(escape).unwrap_or_default()
        );
    }
    if !v.snowflake_ids.is_empty() {
        o.push_str("<h2>Snowflake IDs by key</h2><table id=\"snowflake\"><tr><th>key</th><th>IDs issued</th></tr>");
        for (key, n) in &v.snowflake_ids {
            let _ = write!(
                o,
                "<tr data-key=\"{0}\"><td><code>{0}</code></td>",
                escape(key)
            );
            metric_cell(o, "segflake_snowflake_ids_total", *n);
            o.push_str("</tr>");
        }
        o.push_str("</table>");
    }
}

/// `ms` as people say it: `15 min`, `22.5 s`.
fn span(ms: u64) -> String {
    let short = |x: f64| {
        let s = format!("{x:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    if ms >= 3_600_000 && ms.is_multiple_of(3_600_000) {
        format!("{} h", ms / 3_600_000)
    } else if ms >= 60_000 {
        format!("{} min", short(ms as f64 / 60_000.0))
    } else {
        format!("{} s", short(ms as f64 / 1000.0))
    }
}

/// A chart's value as its axis and caption show it.
fn label(kind: Kind, v: f64) -> String {
    match kind {
        Kind::SegmentRate | Kind::SnowflakeRate if v >= 100.0 => {
            format!("{}/s", group_thousands(v.round() as u64))
        }
        Kind::SegmentRate | Kind::SnowflakeRate if v.fract() == 0.0 => format!("{v:.0}/s"),
        Kind::SegmentRate | Kind::SnowflakeRate => format!("{v:.1}/s"),
        Kind::RefillLatency | Kind::Runway if v == 0.0 => {
            format!("0 {}", if kind == Kind::Runway { "s" } else { "ms" })
        }
        Kind::RefillLatency => {
            let ms = v * 1000.0;
            if ms >= 100.0 {
                format!("{ms:.0} ms")
            } else if ms >= 1.0 {
                format!("{ms:.1} ms")
            } else {
                format!("{ms:.2} ms")
            }
        }
        Kind::Runway if v >= 100.0 => format!("{v:.0} s"),
        Kind::Runway => format!("{v:.1} s"),
        Kind::LeaseAhead => format!("{:+.0} ms", v * 1000.0),
    }
}

/// A value in `data-points` (JSON: `null` for none).
fn json_number(o: &mut String, v: Option<f64>) {
    match v {
        Some(v) if v.is_finite() => {
            let _ = write!(o, "{v}");
        }
        _ => o.push_str("null"),
    }
}

/// The plot's box in the SVG's coordinates: left, top, right, bottom.
const PLOT: (f64, f64, f64, f64) = (50.0, 6.0, 294.0, 64.0);

/// One series as a `figure`: a caption with the latest value, and an SVG line chart over
/// the window ending at `c.now_ms`, its y axis labelled with its bounds, its x axis with
/// the window's start and "now". A gap in the series is a gap in the line.
fn chart(o: &mut String, c: &Charts, key: Option<&str>, s: &Series) {
    let kind = s.kind;
    let _ = write!(
        o,
        "<figure class=\"chart\" data-metric=\"{}\"",
        kind.metric()
    );
    if let Some(key) = key {
        let _ = write!(o, " data-key=\"{}\"", escape(key));
    }
    let _ = write!(
        o,
        " data-columns=\"{}\" data-points=\"[",
        kind.columns().join(",")
    );
    for (i, p) in s.points.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        let _ = write!(o, "[{},", p.at_ms);
        json_number(o, p.value);
        for r in &p.raw {
            o.push(',');
            json_number(o, *r);
        }
        o.push(']');
    }
    o.push_str("]\">");
    // The caption: the latest point's value; for refill latency, that of the latest
    // refills (there may have been none since).
    let latest = match kind {
        Kind::RefillLatency => s.points.iter().rev().find_map(|p| p.value),
        _ => s.points.last().and_then(|p| p.value),
    };
    let none = if kind == Kind::Runway { "idle" } else { "–" };
    let _ = write!(
        o,
        "<figcaption>{} <b>{}</b></figcaption>",
        kind.title(),
        latest.map_or_else(|| none.to_string(), |v| label(kind, v))
    );
    // Each point by its age at `now_ms`; the right end is now.
    let shown: Vec<(u64, Option<f64>)> = s
        .points
        .iter()
        .filter_map(|p| {
            let age = c.now_ms.checked_sub(p.at_ms)?;
            (age <= c.window_ms).then_some((age, p.value))
        })
        .collect();
    let values = shown.iter().filter_map(|(_, v)| *v);
    let (min, max) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let (lo, hi) = if min > max {
        (0.0, 1.0)
    } else {
        let lo = if kind.signed() { min } else { min.min(0.0) };
        if max > lo {
            (lo, max)
        } else {
            (
                lo - 0.5f64.max(lo.abs() * 0.1),
                max + 0.5f64.max(max.abs() * 0.1),
            )
        }
    };
    let (left, top, right, bottom) = PLOT;
    let x = |age: u64| right - (right - left) * age as f64 / c.window_ms.max(1) as f64;
    let y = |v: f64| bottom - (bottom - top) * (v - lo) / (hi - lo);
    let _ = write!(
        o,
        "<svg viewBox=\"0 0 300 84\" role=\"img\" aria-label=\"{}\">\
         <path d=\"M{left} {top}V{bottom}H{right}\" fill=\"none\" stroke=\"#d0d7de\"/>",
        kind.title()
    );
    if kind.signed() && lo < 0.0 && hi > 0.0 {
        let _ = write!(
            o,
            "<path d=\"M{left} {:.1}H{right}\" stroke=\"#eaeef2\" stroke-dasharray=\"3 3\"/>",
            y(0.0)
        );
    }
    // Each run of points without a gap is one line; a lone point is a dot.
    let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for (age, v) in &shown {
        match v {
            Some(v) => runs.last_mut().expect("a run").push((x(*age), y(*v))),
            None if runs.last().is_some_and(|r| !r.is_empty()) => runs.push(Vec::new()),
            None => {}
        }
    }
    for run in runs.iter().filter(|r| !r.is_empty()) {
        if let [(px, py)] = run.as_slice() {
            let _ = write!(
                o,
                "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"1.6\" fill=\"#2da44e\"/>"
            );
            continue;
        }
        o.push_str("<polyline fill=\"none\" stroke=\"#2da44e\" stroke-width=\"1.5\" points=\"");
        for (i, (px, py)) in run.iter().enumerate() {
            let _ = write!(o, "{}{px:.1},{py:.1}", if i > 0 { " " } else { "" });
        }
        o.push_str("\"/>");
    }
    let _ = write!(
        o,
        "<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\" dominant-baseline=\"hanging\">{2}</text>\
         <text x=\"{0}\" y=\"{3}\" text-anchor=\"end\">{4}</text>\
         <text x=\"{left}\" y=\"78\">−{5}</text>\
         <text x=\"{right}\" y=\"78\" text-anchor=\"end\">now</text></svg></figure>",
        left - 4.0,
        top,
        label(kind, hi),
        bottom,
        label(kind, lo),
        span(c.window_ms)
    );
}

fn charts(o: &mut String, c: &Charts) {
    let _ = write!(o, "<h2>Last {}</h2>", span(c.window_ms));
    if !c.sampled {
        o.push_str("<p class=\"empty\">No sample taken yet.</p>");
        return;
    }
    let _ = write!(
        o,
        "<p class=\"meta\">A sample of the figures of <code>/metrics</code> every {}: \
         IDs per second are a counter's increase between two samples, refill latency the \
         mean of the refills between them. At most {} keys are charted, the busiest",
        span(c.interval_ms),
        c.max_keys
    );
    if c.left_out > 0 {
        let _ = write!(
            o,
            "; {} other key{} not charted",
            c.left_out,
            if c.left_out == 1 { " is" } else { "s are" }
        );
    }
    o.push_str(".</p><div id=\"charts\">");
    for (key, series) in &c.keys {
        if series.is_empty() {
            continue;
        }
        let _ = write!(
            o,
            "<div class=\"chartrow\" data-key=\"{0}\"><h3><code>{0}</code></h3>",
            escape(key)
        );
        for s in series {
            chart(o, c, Some(key), s);
        }
        o.push_str("</div>");
    }
    if let Some(lease) = &c.lease {
        o.push_str("<div class=\"chartrow\"><h3>worker lease</h3>");
        chart(o, c, None, lease);
        o.push_str("</div>");
    }
    o.push_str("</div>");
}

fn requests(o: &mut String, v: &View) {
    o.push_str("<h2>Requests</h2>");
    if v.requests.is_empty() {
        o.push_str("<p class=\"empty\">None yet.</p>");
        return;
    }
    o.push_str(
        "<table id=\"requests\"><tr><th>route</th><th>status</th><th>requests</th>\
         <th>per second since start</th></tr>",
    );
    for (route, status, n) in &v.requests {
        let class = if status.starts_with('2') { "ok" } else { "bad" };
        let _ = write!(
            o,
            "<tr data-route=\"{route}\" data-status=\"{status}\"><td>{route}</td><td class=\"{class}\">{status}</td>"
        );
        metric_cell(o, "segflake_http_requests_total", *n);
        let rate = *n as f64 / v.uptime_seconds.max(1.0);
        let _ = write!(o, "<td class=\"num\">{rate:.1}</td></tr>");
    }
    o.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_as_people_say_them() {
        assert_eq!(span(900_000), "15 min");
        assert_eq!(span(22_500), "22.5 s");
        assert_eq!(span(9_000), "9 s");
        assert_eq!(span(5_400_000), "90 min");
        assert_eq!(span(7_200_000), "2 h");
        assert_eq!(span(250), "0.25 s");
        assert_eq!(span(10_000), "10 s");
    }

    #[test]
    fn a_chart_carries_its_points_and_draws_gaps_as_gaps() {
        use crate::server::history::{History, KeyFigures, Reading};
        // One key charted at most: at 500 a busier one takes the place of a<b, which has
        // a gap there.
        let h = History::with_max_keys(std::time::Duration::from_millis(250), 1);
        let flakes = |n| KeyFigures {
            snowflake_ids: Some(n),
            ..KeyFigures::default()
        };
        for (at, n) in [(0, 0), (250, 500), (500, 700), (750, 900), (1000, 1000)] {
            let mut r = Reading {
                at_ms: at,
                ..Reading::default()
            };
            r.keys.insert("a<b".into(), flakes(n));
            if at == 500 {
                r.keys.insert("z".into(), flakes(1_000_000));
            }
            h.record(r);
        }
        let c = h.charts(1000, |_| true);
        let mut o = String::new();
        charts(&mut o, &c);
        assert!(o.contains("<h2>Last 22.5 s</h2>"), "{o}");
        assert!(o.contains("data-key=\"a&lt;b\""), "{o}");
        assert!(!o.contains("a<b"), "{o}");
        let attr = |name: &str| {
            let at = o.find(&format!(" {name}=\"")).expect(name) + name.len() + 3;
            o[at..at + o[at..].find('"').unwrap()].to_string()
        };
        assert_eq!(attr("data-metric"), "segflake_snowflake_ids_total");
        assert_eq!(
            attr("data-columns"),
            "t_ms,per_second,segflake_snowflake_ids_total"
        );
        let points: serde_json::Value = serde_json::from_str(&attr("data-points")).unwrap();
        assert_eq!(
            points,
            serde_json::json!([
                [0, null, 0],
                [250, 2000, 500],
                [500, null, null],
                [750, null, 900],
                [1000, 400, 1000]
            ])
        );
        // Two points with a gap between them: two dots, no line across the gap.
        assert_eq!(o.matches("<circle").count(), 2, "{o}");
        // The last point, taken at the moment drawn, is at the right end.
        assert!(o.contains("<circle cx=\"294.0\""), "{o}");
        assert!(!o.contains("<polyline"), "{o}");
        assert!(o.contains("<b>400/s</b>"), "{o}");
        assert!(
            o.contains(">−22.5 s</text>") && o.contains(">now</text>"),
            "{o}"
        );
    }

    #[test]
    fn text_from_keys_and_errors_is_escaped() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
