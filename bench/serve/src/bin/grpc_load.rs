//! gRPC load for bench/serve: the client side of `segflake serve --grpc-listen`, on one
//! thread (the server gets the other core), as wrk drives the HTTP rows.
//!
//!   grpc-load ADDR unary|stream SECONDS CONCURRENCY COUNT
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

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, addr, mode, seconds, concurrency, count] = &args[..] else {
        return Err("usage: grpc-load ADDR unary|stream SECONDS CONCURRENCY COUNT".into());
    };
    let (seconds, concurrency, count): (f64, usize, u32) =
        (seconds.parse()?, concurrency.parse()?, count.parse()?);
    let stream = match mode.as_str() {
        "unary" => false,
        "stream" => true,
        other => return Err(format!("mode {other:?}: unary or stream").into()),
    };
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))?
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
