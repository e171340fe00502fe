//! The status page of `segflake serve` (`GET /`, and Leaf's `/cache`): one server-side
//! HTML page, plain HTML and CSS, that refreshes itself. Every number on it is the one
//! `/metrics` reports at the same moment (the cells carry the metric's name in
//! `data-metric`), so the page and the scrape never disagree.

use crate::layout_cmd::group_thousands;
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
.empty{color:#57606a;font-style:italic}";

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
    let _ = write!(o, " · refreshes every {} s</p>", v.refresh_seconds);

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
    fn text_from_keys_and_errors_is_escaped() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
