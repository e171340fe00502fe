//! A worker-ID lease registry on etcd v3 (`--registry etcd://…`), through etcd's JSON
//! gateway (`POST /v3/kv/txn`, `/v3/lease/…`) over a small HTTP/1.0 client: one request
//! per connection; connecting, writing and reading one request, over all the endpoints
//! tried, end within the registry timeout.
//!
//! The protocol (keys, transactions, what each answer means) is the core's
//! [`EtcdProtocol`]; this adapter sends its requests as the gateway's JSON (keys and values
//! in base64) and hands back the answers.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use segflake::lease::conversation::Protocol;
use segflake::lease::etcd::{Compare, EtcdOp, EtcdProtocol, EtcdReply, EtcdUrl, TxnOp};
use segflake::{Registry, RegistryCall, Value};
use serde_json::{json, Value as Json};

use crate::error::CliError;

pub struct EtcdRegistry {
    endpoints: Vec<String>,
    timeout: Duration,
    protocol: Mutex<EtcdProtocol>,
}

impl EtcdRegistry {
    /// `url`: `etcd://HOST:PORT[,HOST:PORT][/PREFIX]` (default prefix `/segflake`).
    pub fn new(url: &str, timeout_ms: u64) -> Result<EtcdRegistry, CliError> {
        let parsed = EtcdUrl::parse(url)
            .map_err(|e| CliError::usage_for("next", format!("--registry {e}")))?;
        Ok(EtcdRegistry {
            endpoints: parsed.endpoints,
            timeout: Duration::from_millis(timeout_ms.max(1)),
            protocol: Mutex::new(EtcdProtocol::new(&parsed.prefix)),
        })
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

    /// Performs one of the protocol's requests.
    fn perform(&self, op: &EtcdOp) -> EtcdReply {
        let answer = match op {
            EtcdOp::Grant { ttl_s } => self
                .post("/v3/lease/grant", &json!({"TTL": ttl_s, "ID": 0}))
                .and_then(|r| match r["ID"].as_str() {
                    Some(id) => Ok(EtcdReply::Lease(id.to_string())),
                    None => Err(format!("etcd lease grant answered {r}")),
                }),
            EtcdOp::KeepAlive { lease } => self
                .post("/v3/lease/keepalive", &json!({"ID": lease}))
                .map(|r| {
                    let ttl = r["result"]["TTL"].as_str().and_then(|t| t.parse().ok());
                    EtcdReply::Ttl(ttl.unwrap_or(-1))
                }),
            EtcdOp::Revoke { lease } => self
                .post("/v3/lease/revoke", &json!({"ID": lease}))
                .map(|_| EtcdReply::Done),
            EtcdOp::Prefix { prefix } => {
                let mut end = prefix.clone().into_bytes();
                *end.last_mut().expect("not empty") += 1; // the end of the prefix range
                let body = json!({"key": b64(prefix.as_bytes()), "range_end": b64(&end)});
                self.post("/v3/kv/range", &body).map(|r| {
                    let text = |v: &Json| v.as_str().and_then(unb64).unwrap_or_default();
                    let kvs = r["kvs"].as_array().into_iter().flatten();
                    EtcdReply::Kvs(
                        kvs.map(|kv| (text(&kv["key"]), text(&kv["value"])))
                            .collect(),
                    )
                })
            }
            EtcdOp::Txn {
                compare,
                success,
                failure,
            } => {
                let ops = |ops: &[TxnOp]| Json::Array(ops.iter().map(request).collect());
                let body = json!({
                    "compare": compare.iter().map(comparison).collect::<Vec<_>>(),
                    "success": ops(success),
                    "failure": ops(failure),
                });
                self.post("/v3/kv/txn", &body).map(|r| {
                    let values = r["responses"].as_array().into_iter().flatten();
                    let values = values.filter_map(|resp| resp.get("response_range"));
                    EtcdReply::Txn {
                        succeeded: r["succeeded"].as_bool().unwrap_or(false),
                        values: values
                            .map(|range| match &range["kvs"][0] {
                                Json::Object(kv) => Some(
                                    kv.get("value")
                                        .and_then(Json::as_str)
                                        .and_then(unb64)
                                        .unwrap_or_default(),
                                ),
                                _ => None,
                            })
                            .collect(),
                    }
                })
            }
        };
        answer.unwrap_or_else(EtcdReply::Failed)
    }
}

impl Registry for EtcdRegistry {
    fn call(&self, call: &RegistryCall) -> Result<Value, String> {
        let mut protocol = self.protocol.lock().unwrap_or_else(|p| p.into_inner());
        protocol.converse(call.clone(), (), |op| self.perform(&op))
    }
}

fn comparison(c: &Compare) -> Json {
    match c {
        Compare::Missing { key } => {
            json!({"key": b64(key.as_bytes()), "result": "EQUAL", "target": "CREATE", "create_revision": "0"})
        }
        Compare::Equal { key, value } => {
            json!({"key": b64(key.as_bytes()), "result": "EQUAL", "target": "VALUE", "value": b64(value.as_bytes())})
        }
        Compare::Less { key, value } => {
            json!({"key": b64(key.as_bytes()), "result": "LESS", "target": "VALUE", "value": b64(value.as_bytes())})
        }
    }
}

fn request(op: &TxnOp) -> Json {
    match op {
        TxnOp::Put { key, value, lease } => {
            let mut put = json!({"key": b64(key.as_bytes()), "value": b64(value.as_bytes())});
            if let Some(lease) = lease {
                put["lease"] = json!(lease);
            }
            json!({ "request_put": put })
        }
        TxnOp::Range { key } => json!({"request_range": {"key": b64(key.as_bytes())}}),
        TxnOp::Delete { key } => json!({"request_delete_range": {"key": b64(key.as_bytes())}}),
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
