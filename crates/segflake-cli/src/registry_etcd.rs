//! A worker-ID lease registry on etcd v3 (`--registry etcd://…`), through etcd's JSON
//! gateway (`POST /v3/kv/txn`, `/v3/lease/…`) over a small HTTP/1.0 client: one request
//! per connection; connecting, writing and reading one request, over all the endpoints
//! tried, end within the registry timeout.
//!
//! Keys under the prefix: `worker/<id>` (the owner, on an etcd lease), `mark/<id>` (the mark
//! as 20 zero-padded digits, so etcd's byte-wise comparison is numeric) and `report/<id>`;
//! `docs/leases.md` describes the protocol, which the Python and Node registries share.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use segflake::{Registry, RegistryCall, Value};
use serde_json::{json, Value as Json};

use crate::error::CliError;

pub struct EtcdRegistry {
    endpoints: Vec<String>,
    prefix: String,
    timeout: Duration,
    /// Worker ID → the etcd lease its owner key is attached to.
    leases: Mutex<HashMap<u64, String>>,
}

impl EtcdRegistry {
    /// `url`: `etcd://HOST:PORT[,HOST:PORT][/PREFIX]` (default prefix `/segflake`).
    pub fn new(url: &str, timeout_ms: u64) -> Result<EtcdRegistry, CliError> {
        let rest = url.strip_prefix("etcd://").unwrap_or(url);
        let (hosts, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, "/segflake"),
        };
        let endpoints: Vec<String> = hosts
            .split(',')
            .filter(|h| !h.is_empty())
            .map(str::to_string)
            .collect();
        if endpoints.is_empty() || endpoints.iter().any(|h| !h.contains(':')) {
            return Err(CliError::usage_for(
                "next",
                format!("--registry {url:?}: allowed: etcd://HOST:PORT[,HOST:PORT][/PREFIX]"),
            ));
        }
        Ok(EtcdRegistry {
            endpoints,
            prefix: if prefix.is_empty() {
                "/segflake".into()
            } else {
                prefix.into()
            },
            timeout: Duration::from_millis(timeout_ms.max(1)),
            leases: Mutex::new(HashMap::new()),
        })
    }

    fn key(&self, what: &str, worker_id: u64) -> String {
        b64(format!("{}/{what}/{worker_id}", self.prefix).as_bytes())
    }

    /// POSTs `body` to `path` on the first endpoint that answers, all within the timeout.
    fn post(&self, path: &str, body: &Json) -> Result<Json, String> {
        let deadline = Instant::now() + self.timeout;
        let mut last = String::new();
        for endpoint in &self.endpoints {
            match self.post_to(endpoint, path, body, deadline) {
                Ok(v) => return Ok(v),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn post_to(
        &self,
        endpoint: &str,
        path: &str,
        body: &Json,
        deadline: Instant,
    ) -> Result<Json, String> {
        let fail = |e: std::io::Error| format!("etcd {endpoint}{path}: {e}");
        let left = || {
            deadline
                .checked_duration_since(Instant::now())
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    format!("etcd {endpoint}{path}: no answer within {:?}", self.timeout)
                })
        };
        let addr = endpoint
            .to_socket_addrs()
            .map_err(fail)?
            .next()
            .ok_or_else(|| format!("etcd {endpoint}: no address"))?;
        let mut stream = TcpStream::connect_timeout(&addr, left()?).map_err(fail)?;
        stream.set_write_timeout(Some(left()?)).map_err(fail)?;
        let body = body.to_string();
        write!(
            stream,
            "POST {path} HTTP/1.0\r\nHost: {endpoint}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .map_err(fail)?;
        // Read until the server closes (HTTP/1.0), each read bounded by the time left.
        let mut response = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            stream.set_read_timeout(Some(left()?)).map_err(fail)?;
            match stream.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => response.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(fail(e)),
            }
        }
        let text = String::from_utf8_lossy(&response);
        let (head, payload) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head.split_whitespace().nth(1).unwrap_or("");
        if status != "200" {
            return Err(format!(
                "etcd {endpoint}{path}: HTTP {status}: {}",
                payload.trim()
            ));
        }
        serde_json::from_str(payload).map_err(|e| format!("etcd {endpoint}{path}: {e}"))
    }

    /// A txn: whether it succeeded, and the values its range requests read.
    fn txn(
        &self,
        compare: Json,
        success: Json,
        failure: Json,
    ) -> Result<(bool, Vec<Option<String>>), String> {
        let r = self.post(
            "/v3/kv/txn",
            &json!({"compare": compare, "success": success, "failure": failure}),
        )?;
        let values = r["responses"]
            .as_array()
            .map(|responses| {
                responses
                    .iter()
                    .filter_map(|resp| resp.get("response_range"))
                    .map(|range| {
                        range["kvs"][0]["value"]
                            .as_str()
                            .and_then(unb64)
                            .or_else(|| range["kvs"][0].is_object().then(String::new))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok((r["succeeded"].as_bool().unwrap_or(false), values))
    }

    fn claim(&self, worker_id: u64, owner: &str, ttl_ms: u64) -> Result<Value, String> {
        let (worker, mark) = (self.key("worker", worker_id), self.key("mark", worker_id));
        let grant = self.post(
            "/v3/lease/grant",
            &json!({"TTL": ttl_ms.div_ceil(1000).max(1), "ID": 0}),
        )?;
        let lease = grant["ID"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("etcd lease grant answered {grant}"))?;
        let (ok, values) = self.txn(
            json!([{"key": worker, "result": "EQUAL", "target": "CREATE", "create_revision": "0"}]),
            json!([{"request_put": {"key": worker, "value": b64(owner.as_bytes()), "lease": lease}},
                   {"request_range": {"key": mark}}]),
            json!([{"request_range": {"key": worker}}, {"request_range": {"key": mark}}]),
        )?;
        let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
        let stored = if ok {
            leases.insert(worker_id, lease);
            values.first().cloned().flatten()
        } else {
            let _ = self.post("/v3/lease/revoke", &json!({"ID": lease}));
            if values.first().cloned().flatten().as_deref() != Some(owner)
                || !leases.contains_key(&worker_id)
            {
                return Ok(Value::Null);
            }
            values.get(1).cloned().flatten()
        };
        if stored.is_none() {
            self.txn(
                json!([{"key": mark, "result": "EQUAL", "target": "CREATE", "create_revision": "0"}]),
                json!([{"request_put": {"key": mark, "value": b64(pad(0).as_bytes())}}]),
                json!([]),
            )?;
        }
        Ok(Value::uint(parse_mark(stored.as_deref())?))
    }

    fn renew(
        &self,
        worker_id: u64,
        owner: &str,
        mark_ms: u64,
        reported_ms: u64,
    ) -> Result<Value, String> {
        let Some(lease) = self
            .leases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&worker_id)
            .cloned()
        else {
            return Ok(Value::Null);
        };
        let (worker, mark, report) = (
            self.key("worker", worker_id),
            self.key("mark", worker_id),
            self.key("report", worker_id),
        );
        let forget = || {
            self.leases
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&worker_id);
        };
        let alive = self.post("/v3/lease/keepalive", &json!({"ID": lease}))?;
        let ttl = alive["result"]["TTL"]
            .as_str()
            .and_then(|t| t.parse::<i64>().ok())
            .unwrap_or(-1);
        if ttl <= 0 {
            // The etcd lease is gone, and the worker key with it: another owner may have
            // claimed the key since (taken), or nobody has (the record is lost).
            forget();
            let (_, values) = self.txn(
                json!([]),
                json!([{"request_range": {"key": worker}}]),
                json!([]),
            )?;
            return Ok(match values.first().cloned().flatten() {
                None => Value::Int(-1),
                Some(_) => Value::Null,
            });
        }
        let owned = json!({"key": worker, "result": "EQUAL", "target": "VALUE", "value": b64(owner.as_bytes())});
        let put_report = json!({"request_put": {"key": report, "value": b64(reported_ms.to_string().as_bytes()), "lease": lease}});
        let (ok, values) = self.txn(
            json!([owned, {"key": mark, "result": "LESS", "target": "VALUE", "value": b64(pad(mark_ms).as_bytes())}]),
            json!([{"request_put": {"key": mark, "value": b64(pad(mark_ms).as_bytes())}}, put_report]),
            json!([{"request_range": {"key": worker}}, {"request_range": {"key": mark}}]),
        )?;
        if ok {
            return Ok(Value::uint(mark_ms));
        }
        let (holder, stored) = (
            values.first().cloned().flatten(),
            values.get(1).cloned().flatten(),
        );
        match (holder, stored) {
            // The worker key (or its mark) is gone while our etcd lease lives: the
            // registry lost the record.
            (None, _) | (Some(_), None) => {
                forget();
                Ok(Value::Int(-1))
            }
            (Some(h), Some(_)) if h != owner => {
                forget();
                Ok(Value::Null)
            }
            (Some(_), stored) => {
                self.txn(json!([owned]), json!([put_report]), json!([]))?;
                Ok(Value::uint(parse_mark(stored.as_deref())?))
            }
        }
    }

    fn release(&self, worker_id: u64, owner: &str, mark_ms: u64) -> Result<Value, String> {
        let lease = self
            .leases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&worker_id);
        let (worker, mark, report) = (
            self.key("worker", worker_id),
            self.key("mark", worker_id),
            self.key("report", worker_id),
        );
        let (ok, _) = self.txn(
            json!([{"key": worker, "result": "EQUAL", "target": "VALUE", "value": b64(owner.as_bytes())}]),
            json!([{"request_put": {"key": mark, "value": b64(pad(mark_ms).as_bytes())}},
                   {"request_delete_range": {"key": worker}},
                   {"request_delete_range": {"key": report}}]),
            json!([]),
        )?;
        if let Some(lease) = lease {
            let _ = self.post("/v3/lease/revoke", &json!({"ID": lease}));
        }
        Ok(Value::Bool(ok))
    }

    fn peers(&self) -> Result<Value, String> {
        let start = format!("{}/report/", self.prefix);
        let mut end = start.clone().into_bytes();
        *end.last_mut().expect("not empty") += 1; // '/' + 1: the end of the prefix range
        let r = self.post(
            "/v3/kv/range",
            &json!({"key": b64(start.as_bytes()), "range_end": b64(&end)}),
        )?;
        let mut reports = Vec::new();
        for kv in r["kvs"].as_array().into_iter().flatten() {
            let key = kv["key"].as_str().and_then(unb64).unwrap_or_default();
            let value = kv["value"].as_str().and_then(unb64).unwrap_or_default();
            if let (Some(id), Ok(reported)) = (
                key.rsplit('/').next().and_then(|s| s.parse::<i128>().ok()),
                value.parse::<i128>(),
            ) {
                reports.push((id, reported, 0));
            }
        }
        Ok(segflake::lease::peers_answer(reports))
    }
}

impl Registry for EtcdRegistry {
    fn call(&self, call: &RegistryCall) -> Result<Value, String> {
        match call {
            RegistryCall::Claim {
                worker_id,
                owner,
                ttl_ms,
            } => self.claim(*worker_id, owner, *ttl_ms),
            RegistryCall::Renew {
                worker_id,
                owner,
                mark_ms,
                reported_ms,
                ..
            } => self.renew(*worker_id, owner, *mark_ms, *reported_ms),
            RegistryCall::Release {
                worker_id,
                owner,
                mark_ms,
            } => self.release(*worker_id, owner, *mark_ms),
            RegistryCall::Peers => self.peers(),
        }
    }
}

fn pad(mark_ms: u64) -> String {
    format!("{mark_ms:020}")
}

fn parse_mark(stored: Option<&str>) -> Result<u64, String> {
    match stored {
        None | Some("") => Ok(0),
        Some(s) => s
            .parse()
            .map_err(|_| format!("the stored mark {s:?} is not a number")),
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn b64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn unb64(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len() / 4 * 3);
    let (mut n, mut bits) = (0u32, 0);
    for c in text.bytes().filter(|&c| c != b'=') {
        n = n << 6 | B64.iter().position(|&b| b == c)? as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            bytes.push((n >> bits) as u8);
        }
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for s in [
            "",
            "a",
            "ab",
            "abc",
            "/segflake/worker/1023",
            "00000001795529300458",
        ] {
            assert_eq!(unb64(&b64(s.as_bytes())).as_deref(), Some(s));
        }
        assert_eq!(b64(b"/segflake"), "L3NlZ2ZsYWtl");
    }
}
