//! gRPC load for bench/serve: the client side of `segflake serve --grpc-listen`, on one
//! thread (the server gets the other core), as wrk drives the HTTP rows.
//!
//!   grpc-load [--ca FILE] ADDR unary|stream SECONDS CONCURRENCY COUNT
//!
//! ADDR: `HOST:PORT` or `http://HOST:PORT` (plaintext HTTP/2), or `https://HOST:PORT` (TLS,
//! HTTP/2 by ALPN), whose certificate must chain to the CA in `--ca FILE` (PEM) and name
//! `localhost` (as tests/tls/make-certs.sh makes it).
//!
//! `unary`: CONCURRENCY calls in flight of `NextSegmentIds(count=COUNT)`; `stream`:
//! CONCURRENCY `StreamSegmentIds` streams of COUNT IDs a message. Prints
//! `RESULT calls_or_messages/s ids/s p50_ms p99_ms p999_ms errors` (latency: per call, or
//! between a stream's messages), then `TOTAL calls_or_messages ids`.

use std::time::{Duration, Instant};

mod pb {
    tonic::include_proto!("segflake.v1");
}
use pb::segflake_client::SegflakeClient;

/// The channel's endpoint: plaintext for `HOST:PORT` and `http://`, TLS for `https://`
/// (trusting the CA in `ca` only, the server's name checked as `localhost`).
fn endpoint(
    addr: &str,
    ca: Option<&str>,
) -> Result<tonic::transport::Endpoint, Box<dyn std::error::Error>> {
    use tonic::transport::{Certificate, ClientTlsConfig, Endpoint};
    if !addr.starts_with("https://") {
        if ca.is_some() {
            return Err(format!("--ca is for an https:// address, not {addr:?}").into());
        }
        let uri = if addr.starts_with("http://") {
            addr.to_string()
        } else {
            format!("http://{addr}")
        };
        return Ok(Endpoint::from_shared(uri)?);
    }
    let ca = ca.ok_or("an https:// address needs --ca FILE (the CA that signed the server)")?;
    let pem = std::fs::read(ca).map_err(|e| format!("--ca {ca}: {e}"))?;
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(pem))
        .domain_name("localhost");
    Ok(Endpoint::from_shared(addr.to_string())?.tls_config(tls)?)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let ca = if args.len() > 1 && args[0] == "--ca" {
        let file = args.remove(1);
        args.remove(0);
        Some(file)
    } else {
        None
    };
    let [addr, mode, seconds, concurrency, count] = &args[..] else {
        return Err(
            "usage: grpc-load [--ca FILE] ADDR unary|stream SECONDS CONCURRENCY COUNT".into(),
        );
    };
    let (seconds, concurrency, count): (f64, usize, u32) =
        (seconds.parse()?, concurrency.parse()?, count.parse()?);
    let stream = match mode.as_str() {
        "unary" => false,
        "stream" => true,
        other => return Err(format!("mode {other:?}: unary or stream").into()),
    };
    let channel = endpoint(addr, ca.as_deref())?
        .tcp_nodelay(true)
        .connect()
        .await?;
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let mut client = SegflakeClient::new(channel.clone()).max_decoding_message_size(256 << 20);
        tasks.push(tokio::spawn(async move {
            let (mut latencies, mut ids, mut errors) = (Vec::new(), 0u64, 0u64);
            if stream {
                let request = pb::StreamRequest {
                    key: "bench".into(),
                    count,
                    batches: 0,
                };
                let mut s = match client.stream_segment_ids(request).await {
                    Ok(r) => r.into_inner(),
                    Err(_) => return (latencies, ids, 1),
                };
                let mut last = Instant::now();
                while Instant::now() < deadline {
                    match s.message().await {
                        Ok(Some(m)) => {
                            ids += m.ids.len() as u64;
                            let now = Instant::now();
                            latencies.push(now - last);
                            last = now;
                        }
                        _ => {
                            errors += 1;
                            break;
                        }
                    }
                }
            } else {
                while Instant::now() < deadline {
                    let t0 = Instant::now();
                    let request = pb::IdsRequest {
                        key: "bench".into(),
                        count,
                    };
                    match client.next_segment_ids(request).await {
                        Ok(r) => {
                            ids += r.into_inner().ids.len() as u64;
                            latencies.push(t0.elapsed());
                        }
                        Err(_) => errors += 1,
                    }
                }
            }
            (latencies, ids, errors)
        }));
    }
    let start = Instant::now();
    let (mut latencies, mut ids, mut errors) = (Vec::new(), 0u64, 0u64);
    for t in tasks {
        let (l, i, e) = t.await?;
        latencies.extend(l);
        ids += i;
        errors += e;
    }
    let elapsed = start.elapsed().as_secs_f64().max(seconds);
    latencies.sort_unstable();
    let q = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    println!(
        "RESULT {:.0} {:.0} {:.3} {:.3} {:.3} {errors}",
        latencies.len() as f64 / elapsed,
        ids as f64 / elapsed,
        q(0.5),
        q(0.99),
        q(0.999)
    );
    println!("TOTAL {} {ids}", latencies.len());
    Ok(())
}
