//! gRPC beside HTTP (`--grpc-listen ADDR`): `proto/segflake/v1/segflake.proto` served by
//! tonic, with the standard health service and server reflection. Every call goes through
//! the same [`Service`] as the HTTP paths: its keys and tokens, limits, error codes and
//! request metrics (counted under the same routes, with the HTTP status a refusal would
//! have had).

use super::{invalid_param, Peer, Reject, Route, Service};
use hyper::StatusCode;
use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

mod pb {
    tonic::include_proto!("segflake.v1");
    /// The contract's file descriptor set, for server reflection.
    pub const DESCRIPTOR: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/segflake_descriptor.bin"));
}

use pb::segflake_server::{Segflake, SegflakeServer};

/// IDs per streamed message when the request says 0.
const DEFAULT_STREAM_COUNT: usize = 1000;

/// A refusal as a gRPC status: the code nearest the HTTP status, the message, and the
/// segflake code in the `segflake-code` trailer.
fn status_of(e: Reject) -> Status {
    let code = match e.status {
        StatusCode::BAD_REQUEST => tonic::Code::InvalidArgument,
        StatusCode::UNAUTHORIZED => tonic::Code::Unauthenticated,
        StatusCode::FORBIDDEN => tonic::Code::PermissionDenied,
        StatusCode::NOT_FOUND => tonic::Code::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => tonic::Code::Unimplemented,
        StatusCode::SERVICE_UNAVAILABLE | StatusCode::BAD_GATEWAY => tonic::Code::Unavailable,
        _ => tonic::Code::Internal,
    };
    let mut status = Status::new(code, e.message);
    if let Ok(v) = e.code.parse() {
        status.metadata_mut().insert("segflake-code", v);
    }
    status
}

/// The bearer token of a call's `authorization` metadata.
fn bearer<T>(req: &Request<T>) -> Option<&str> {
    req.metadata()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

/// `count` as a batch size: 1..=max_count, 0 meaning `default`.
fn batch_size(count: u32, default: usize, max: usize) -> Result<usize, Reject> {
    match count as usize {
        0 => Ok(default.min(max)),
        n if n <= max => Ok(n),
        n => Err(invalid_param("count", n, 1, max as u64, "")),
    }
}

pub struct Grpc {
    service: Arc<Service>,
}

impl Grpc {
    /// Counts the call under `route` with the status it had (as HTTP would have).
    fn counted<T>(&self, route: Route, answer: Result<T, Reject>) -> Result<T, Status> {
        let status = answer.as_ref().map_or_else(|e| e.status.as_u16(), |_| 200);
        self.service.requests.count(route, status);
        answer.map_err(status_of)
    }

    /// The request's key, if the caller (its token, its client certificate) may call it.
    fn key<'a, T>(&self, key: &'a str, req: &Request<T>) -> Result<Cow<'a, str>, Reject> {
        let peer = req.extensions().get::<Arc<Peer>>().map(|p| &**p);
        self.service
            .authorize(Cow::Borrowed(key), bearer(req), peer)
    }

    async fn ids(&self, segment: bool, key: &str, n: usize) -> Result<Vec<u64>, Reject> {
        if segment {
            let seg = self.service.segments()?;
            let handle = self.service.tag_handle(seg, key).await?;
            Service::segment_batch(handle, n).await
        } else {
            self.service.snowflake_batch(key, n).await
        }
    }

    async fn unary(&self, segment: bool, req: Request<pb::IdsRequest>) -> Result<pb::Ids, Reject> {
        let key = self.key(&req.get_ref().key, &req)?.into_owned();
        let n = batch_size(req.get_ref().count, 1, self.service.max_count())?;
        let ids = self.ids(segment, &key, n).await?;
        Ok(pb::Ids { key, ids })
    }

    /// A stream of batches, produced one ahead of what the client has taken.
    async fn stream(
        &self,
        segment: bool,
        req: Request<pb::StreamRequest>,
    ) -> Result<ReceiverStream<Result<pb::Ids, Status>>, Reject> {
        let key = self.key(&req.get_ref().key, &req)?.into_owned();
        let n = batch_size(
            req.get_ref().count,
            DEFAULT_STREAM_COUNT,
            self.service.max_count(),
        )?;
        let batches = req.get_ref().batches;
        // The first batch is taken before the stream starts, so a refusal (an unknown key,
        // no store) is the call's status rather than a stream that ends at once.
        let first = self.ids(segment, &key, n).await?;
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        let grpc = Grpc {
            service: self.service.clone(),
        };
        tokio::spawn(async move {
            let mut batch = Ok(first);
            let mut sent = 0u64;
            loop {
                let message = batch.map(|ids| pb::Ids {
                    key: key.clone(),
                    ids,
                });
                let failed = message.is_err();
                if tx.send(message.map_err(status_of)).await.is_err() || failed {
                    break; // the client went away, or the stream ends with the refusal
                }
                sent += 1;
                if (batches != 0 && sent >= batches)
                    || grpc.service.draining.load(Ordering::Relaxed)
                {
                    break;
                }
                batch = grpc.ids(segment, &key, n).await;
            }
        });
        Ok(ReceiverStream::new(rx))
    }
}

#[tonic::async_trait]
impl Segflake for Grpc {
    async fn next_segment_ids(
        &self,
        req: Request<pb::IdsRequest>,
    ) -> Result<Response<pb::Ids>, Status> {
        let answer = self.unary(true, req).await;
        self.counted(Route::SegmentGet, answer).map(Response::new)
    }

    async fn next_snowflake_ids(
        &self,
        req: Request<pb::IdsRequest>,
    ) -> Result<Response<pb::Ids>, Status> {
        let answer = self.unary(false, req).await;
        self.counted(Route::SnowflakeGet, answer).map(Response::new)
    }

    type StreamSegmentIdsStream = ReceiverStream<Result<pb::Ids, Status>>;

    async fn stream_segment_ids(
        &self,
        req: Request<pb::StreamRequest>,
    ) -> Result<Response<Self::StreamSegmentIdsStream>, Status> {
        let answer = self.stream(true, req).await;
        self.counted(Route::SegmentGet, answer).map(Response::new)
    }

    type StreamSnowflakeIdsStream = ReceiverStream<Result<pb::Ids, Status>>;

    async fn stream_snowflake_ids(
        &self,
        req: Request<pb::StreamRequest>,
    ) -> Result<Response<Self::StreamSnowflakeIdsStream>, Status> {
        let answer = self.stream(false, req).await;
        self.counted(Route::SnowflakeGet, answer).map(Response::new)
    }

    async fn alloc_segment(
        &self,
        req: Request<pb::AllocRequest>,
    ) -> Result<Response<pb::Segment>, Status> {
        let answer = async {
            let key = self.key(&req.get_ref().key, &req)?.into_owned();
            let step = match req.get_ref().step {
                0 => None,
                s if s <= self.service.max_alloc_step() => Some(s),
                s => {
                    let max = self.service.max_alloc_step();
                    return Err(invalid_param("step", s, 1, max, " (0: the tag's own)"));
                }
            };
            let a = self.service.allocation(&key, step).await?;
            Ok(pb::Segment {
                key,
                max_id: a.max_id,
                step: a.step,
                tag_step: a.tag_step.unwrap_or(0),
            })
        }
        .await;
        self.counted(Route::SegmentAlloc, answer).map(Response::new)
    }

    async fn decode(
        &self,
        req: Request<pb::DecodeRequest>,
    ) -> Result<Response<pb::DecodedId>, Status> {
        let id = req.get_ref().id;
        let answer = self
            .service
            .layout
            .decode(id)
            .map_err(Reject::from)
            .map(|d| pb::DecodedId {
                id,
                time: segflake::datetime::format_iso8601_ms(d.timestamp_ms),
                timestamp_ms: d.timestamp_ms,
                worker: d.worker_id,
                sequence: d.sequence,
                tick: d.tick,
                datacenter: d.datacenter_id,
            });
        self.counted(Route::Decode, answer).map(Response::new)
    }
}

/// The gRPC services: the contract, `grpc.health.v1` (following `/readyz` once a second,
/// from a task started here) and server reflection in both versions (`v1`, and `v1alpha`
/// for the clients that speak only it: grpcio-reflection, older grpcurl, Evans, Postman).
pub fn services(service: Arc<Service>) -> Result<super::listen::Grpc, String> {
    let (reporter, health) = tonic_health::server::health_reporter();
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(pb::DESCRIPTOR)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let v1 = reflection()
        .build_v1()
        .map_err(|e| format!("server reflection: {e}"))?;
    let v1alpha = reflection()
        .build_v1alpha()
        .map_err(|e| format!("server reflection: {e}"))?;
    let watched = service.clone();
    tokio::spawn(async move {
        loop {
            let status = if watched.ready().is_ok() {
                tonic_health::ServingStatus::Serving
            } else {
                tonic_health::ServingStatus::NotServing
            };
            for name in ["", "segflake.v1.Segflake"] {
                reporter.set_service_status(name, status).await;
            }
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        }
    });
    let routes = tonic::service::Routes::new(health)
        .add_service(v1)
        .add_service(v1alpha)
        .add_service(SegflakeServer::new(Grpc { service }))
        .prepare();
    Ok(hyper_util::service::TowerToHyperService::new(routes))
}
