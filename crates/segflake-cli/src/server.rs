//! The ID service behind `segflake serve`: HTTP on tokio and hyper, Leaf's paths, gRPC
//! beside it; TLS and mutual TLS ([`tls`]), reloads ([`reload`]), the listeners
//! ([`listen`]).
//!
//! The request path never waits on a database: segment IDs come from the core's
//! [`SegmentGenerator`], whose own threads call the store (through [`MeteredStore`]);
//! snowflake IDs from the core's generator. Only when a tag has no ready segment (an
//! outage, or a burst larger than the buffer) does a request wait, on a blocking thread,
//! at most the generator's `wait_timeout_ms`, and then answer 503 with the cause.
//!
//! * IDs issued over HTTP keep every guarantee of the generator behind them (no ID twice,
//!   segment IDs from ranges the core checked, snowflake IDs under a held lease).
//! * A response is either IDs or an error with a stable `code`; a panic in a handler is
//!   caught by the runtime and ends that connection only.
//! * SIGTERM/SIGINT: stop accepting, let requests in flight finish (bounded), close the
//!   generators, release the worker lease.
//! * Who may call a key ([`Access`]) is checked on every path, HTTP and gRPC, against the
//!   rules in force; a reload swaps them in whole.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{
    HeaderValue, ALLOW, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE,
};
use hyper::{Method, Request, Response, StatusCode};
use segflake::datetime::format_iso8601_ms;
use segflake::{
    ErrorKind, Layout, LeasedSnowflake, Options, SegmentGenerator, SegmentStore, Snowflake,
    StoreFailure, TagHandle,
};
use serde_json::json;

use crate::error::CliError;
use crate::metrics::{header, key_label, label, sample, MeteredStore, Requests, Route};
use crate::output::JsonObject;
use crate::serve_cmd::ServeConfig;
use crate::status_page;

mod access;
mod digits;
mod give_backs;
mod grpc;
pub mod history;
mod listen;
mod local;
mod reload;
pub mod tls;

pub use access::{entry_from_dir, Access};
use digits::{Digits, QuotedRun};
use give_backs::{GiveBacks, Remembered};
pub use local::LocalKeys;
use tls::Peer;

type Body = Full<Chunk>;

/// A response body's bytes: shared, or an ID's digits held in place (no allocation).
enum Chunk {
    Shared(Bytes),
    Digits { digits: Digits, at: usize },
}

impl bytes::Buf for Chunk {
    fn remaining(&self) -> usize {
        self.chunk().len()
    }

    fn chunk(&self) -> &[u8] {
        match self {
            Chunk::Shared(b) => b,
            Chunk::Digits { digits, at } => &digits.as_bytes()[*at..],
        }
    }

    fn advance(&mut self, n: usize) {
        match self {
            Chunk::Shared(b) => b.advance(n),
            Chunk::Digits { digits, at } => {
                assert!(n <= digits.as_bytes().len() - *at, "advanced past the end");
                *at += n;
            }
        }
    }
}

/// A per-key segment figure: name, type, help, and how to read it from the stats.
type SegmentGauge = (
    &'static str,
    &'static str,
    &'static str,
    fn(&segflake::SegmentStats) -> Option<f64>,
);

thread_local! {
    /// Each runtime thread's handles of the tags it served (one service per process), so the
    /// hot path touches no shared lock and no shared reference count; with the
    /// [`RETIRED`] count they were taken under.
    static LOCAL_HANDLES: std::cell::RefCell<(u64, LocalKeys<TagHandle>)> =
        std::cell::RefCell::new((0, LocalKeys::default()));
}

/// Tags retired by reloads so far: a thread whose handles were taken under an older count
/// drops them (a retired tag's handle issues nothing; served again, it has a new one).
static RETIRED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// `f` on this thread's tag handles, current with the tags retired.
#[inline]
fn local_handles<R>(f: impl FnOnce(&mut LocalKeys<TagHandle>) -> R) -> R {
    LOCAL_HANDLES.with(|cell| {
        let mut local = cell.borrow_mut();
        let retired = RETIRED.load(Ordering::Acquire);
        if local.0 != retired {
            *local = (retired, LocalKeys::default());
        }
        f(&mut local.1)
    })
}

/// How long an unknown key is remembered before the store is asked again.
const UNKNOWN_KEY_TTL: Duration = Duration::from_secs(1);
/// Unknown keys remembered at most (the list is cleared when full).
const MAX_UNKNOWN_KEYS: usize = 10_000;
/// Batches up to this size are taken on the request's own thread.
const INLINE_BATCH: usize = 4096;
/// Batches up to this size are taken into a buffer on the stack.
const STACK_BATCH: usize = 128;

/// One JSON log line on stderr: `{"ts","level","msg",...fields}`.
pub fn log(level: &str, msg: &str, fields: &[(&str, &str)]) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let mut line = serde_json::Map::new();
    line.insert("ts".into(), format_iso8601_ms(now).into());
    line.insert("level".into(), level.into());
    line.insert("msg".into(), msg.into());
    for (k, v) in fields {
        line.insert((*k).into(), (*v).into());
    }
    eprintln!("{}", serde_json::Value::Object(line));
}

/// An error answer: status, stable code, message.
#[derive(Debug)]
struct Reject {
    status: StatusCode,
    code: &'static str,
    message: String,
}

fn reject(status: StatusCode, code: &'static str, message: impl Into<String>) -> Reject {
    Reject {
        status,
        code,
        message: message.into(),
    }
}

impl From<segflake::Error> for Reject {
    fn from(e: segflake::Error) -> Reject {
        let status = match e.kind() {
            ErrorKind::InvalidArgument | ErrorKind::Parse => StatusCode::BAD_REQUEST,
            ErrorKind::UnknownTag => StatusCode::NOT_FOUND,
            ErrorKind::SegmentsExhausted
            | ErrorKind::Store
            | ErrorKind::StoreContractViolation
            | ErrorKind::ClockMovedBackwards
            | ErrorKind::ClockBehindMark
            | ErrorKind::ClockSkew
            | ErrorKind::LeaseExpired
            | ErrorKind::RegistryLostData
            | ErrorKind::LeafNodeAlive
            | ErrorKind::ClockStalled
            | ErrorKind::Registry
            | ErrorKind::NoFreeWorkerId
            | ErrorKind::Closed => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        reject(status, e.code(), e.to_string())
    }
}

/// The content types of the answers, checked when compiled.
const TEXT: &str = "text/plain; charset=utf-8";
const JSON: &str = "application/json";

fn text_type() -> HeaderValue {
    const { HeaderValue::from_static(TEXT) }
}

fn json_type() -> HeaderValue {
    const { HeaderValue::from_static(JSON) }
}

fn respond(
    status: StatusCode,
    content_type: HeaderValue,
    body: impl Into<Bytes>,
) -> Response<Body> {
    respond_with(status, content_type, Chunk::Shared(body.into()))
}

fn respond_with(status: StatusCode, content_type: HeaderValue, body: Chunk) -> Response<Body> {
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, content_type);
    r
}

fn text(body: String) -> Response<Body> {
    respond(StatusCode::OK, text_type(), body)
}

/// `200 text/plain` with the ID in decimal, as `text(id.to_string())`.
fn text_id(id: u64) -> Response<Body> {
    let digits = Digits::new(id);
    respond_with(StatusCode::OK, text_type(), Chunk::Digits { digits, at: 0 })
}

fn json_ok(value: serde_json::Value) -> Response<Body> {
    respond(StatusCode::OK, json_type(), value.to_string())
}

impl Reject {
    fn into_response(self) -> Response<Body> {
        let body = json!({"code": self.code, "message": self.message}).to_string();
        let mut r = respond(self.status, json_type(), body);
        let headers = r.headers_mut();
        match self.status {
            StatusCode::UNAUTHORIZED => {
                headers.insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            StatusCode::SERVICE_UNAVAILABLE => {
                headers.insert(RETRY_AFTER, HeaderValue::from_static("1"));
            }
            StatusCode::METHOD_NOT_ALLOWED => {
                let allow = if self.message.contains("POST only") {
                    "POST"
                } else {
                    "GET, POST"
                };
                headers.insert(ALLOW, HeaderValue::from_static(allow));
            }
            _ => {}
        }
        r
    }
}

/// The snowflake generator: a fixed worker ID or a leased one.
enum Flake {
    Fixed(Snowflake),
    Leased(LeasedSnowflake),
}

impl Flake {
    fn next_ids(&self, out: &mut [u64]) -> segflake::Result<()> {
        match self {
            Flake::Fixed(g) => g.next_ids(out),
            Flake::Leased(g) => g.next_ids(out),
        }
    }

    fn next_id(&self) -> segflake::Result<u64> {
        match self {
            Flake::Fixed(g) => g.next_id(),
            Flake::Leased(g) => g.next_id(),
        }
    }
}

/// Segment IDs: the store, the generator, and which keys the store has.
struct Segments {
    store: Arc<MeteredStore>,
    generator: SegmentGenerator,
    handles: RwLock<HashMap<String, TagHandle>>,
    known: RwLock<HashSet<String>>,
    unknown: Mutex<HashMap<String, Instant>>,
    /// The store creates missing tags: every key is known.
    creates_tags: bool,
    store_timeout: Duration,
    /// The give backs applied by token (`?token=`), answered again from here when resent.
    give_backs: Arc<GiveBacks>,
}

impl Segments {
    /// Every key's statistics, by key (what `/metrics` and the status page show).
    fn stats(&self) -> Vec<segflake::segment::SegmentStats> {
        let handles = self.handles.read().unwrap_or_else(|p| p.into_inner());
        let mut stats: Vec<_> = handles.values().map(TagHandle::stats).collect();
        stats.sort_by(|a, b| a.tag.cmp(&b.tag));
        stats
    }
}

/// What a reload replaces: who may call which key (swapped in whole) and the limits.
struct Policy {
    access: Access,
    max_count: usize,
    max_alloc_step: u64,
}

struct Service {
    layout: Layout,
    segments: Option<Segments>,
    snowflake: Option<Arc<Flake>>,
    /// Who may call which key, as the last reload left it.
    access: arc_swap::ArcSwap<Access>,
    /// No `[keys]`: every key is open (the request path then skips `access`).
    open: AtomicBool,
    max_count: std::sync::atomic::AtomicUsize,
    max_alloc_step: std::sync::atomic::AtomicU64,
    requests: Requests,
    /// Requests by mutual-TLS client (the identities `[keys]` lists, else `other`).
    clients: Mutex<std::collections::BTreeMap<String, u64>>,
    reloads: reload::Reloads,
    /// `"TLS"` or `"mutual TLS"` when the listeners speak it.
    tls_mode: Option<&'static str>,
    draining: AtomicBool,
    started: Instant,
    /// The worker registry's URL without its password (the status page shows it).
    registry: Option<String>,
    /// The recent figures the status page charts.
    history: history::History,
}

/// Runs `f` on a blocking thread; a panic there becomes a 500.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Reject> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        reject(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            format!("a handler failed: {e}"),
        )
    })
}

/// A store call on a blocking thread, bounded by the store timeout; a failure is a 503
/// whose message starts with `what`.
async fn store_call<T: Send + 'static>(
    seg: &Segments,
    what: &str,
    call: impl FnOnce(&MeteredStore) -> Result<T, String> + Send + 'static,
) -> Result<T, Reject> {
    let store = seg.store.clone();
    let unavailable = |m: String| reject(StatusCode::SERVICE_UNAVAILABLE, "STORE_ERROR", m);
    tokio::time::timeout(seg.store_timeout, blocking(move || call(&store)))
        .await
        .map_err(|_| {
            unavailable(format!(
                "{what}: the store did not answer within {} ms",
                seg.store_timeout.as_millis()
            ))
        })??
        .map_err(|e| unavailable(format!("{what}: {e}")))
}

/// `%XX` sequences decoded (percent-encoding); `None` if a `%` starts no escape or the
/// bytes do not make UTF-8.
fn percent_decode(s: &str) -> Option<std::borrow::Cow<'_, str>> {
    if !s.contains('%') {
        // Nothing to decode, and `s` is UTF-8 already (the usual key).
        return Some(std::borrow::Cow::Borrowed(s));
    }
    let b = s.as_bytes();
    let hex = |i: usize| b.get(i).is_some_and(u8::is_ascii_hexdigit);
    if (0..b.len()).any(|i| b[i] == b'%' && !(hex(i + 1) && hex(i + 2))) {
        return None;
    }
    percent_encoding::percent_decode_str(s).decode_utf8().ok()
}

/// The value of `name` in a query string (form-urlencoded), the first if repeated.
fn query_param<'a>(query: Option<&'a str>, name: &str) -> Option<std::borrow::Cow<'a, str>> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

/// The token of a request's `Authorization: Bearer TOKEN` header.
/// `key` if it is a valid key (tag). Printable ASCII has no whitespace or control
/// characters: the usual key passes `check_tag` without decoding characters.
fn checked_tag(key: std::borrow::Cow<'_, str>) -> Result<std::borrow::Cow<'_, str>, Reject> {
    let plain = (1..=segflake::segment::MAX_TAG_LEN).contains(&key.len())
        && key.bytes().all(|b| b.is_ascii_graphic());
    if !plain {
        segflake::segment::check_tag(&key)?;
    }
    Ok(key)
}

/// The mutual-TLS client a request came from.
fn peer_of<B>(req: &Request<B>) -> Option<&Peer> {
    req.extensions().get::<Arc<Peer>>().map(|p| &**p)
}

fn bearer_token(req: &Request<Incoming>) -> Option<&str> {
    req.headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
}

/// What a path asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    /// `/api/segment/get/KEY` (`segment`) or `/api/snowflake/get/KEY`.
    Get {
        segment: bool,
    },
    Alloc,
    /// `/api/segment/giveback/KEY?expected_max_id=E&max_id=M[&token=T]` (an HttpStore's
    /// give back; `T` names it, so a resend changes nothing).
    GiveBack,
    Decode,
    Metrics,
    Healthz,
    Readyz,
    /// Tinyid's paths, `/tinyid/id/CALL?bizType=KEY&token=T[&batchSize=N]`.
    Tinyid(Tinyid),
    /// `/` and Leaf's `/cache`: the status page.
    StatusPage,
}

/// Tinyid's calls, answered as its server answers them (`{"data", "code", "message"}`, or
/// plain text for the `Simple` ones) from the same stores: a Tinyid client switches by host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tinyid {
    /// `nextId`: segment IDs as `{"data": [ID, ...], "code": 200, "message": ""}`.
    Ids,
    /// `nextIdSimple`: the IDs as plain text, comma separated.
    IdsSimple,
    /// `nextSegmentId`: a segment for the client to issue from (its client mode):
    /// `{"data": {"currentId", "loadingId", "maxId", "delta", "remainder"}, ...}`, the IDs
    /// `(currentId, maxId]` that are `≡ remainder (mod delta)`.
    Segment,
    /// `nextSegmentIdSimple`: `currentId,loadingId,maxId,delta,remainder` (what Tinyid's
    /// Java client asks for).
    SegmentSimple,
}

/// Tinyid's answer codes: success, a token that is not valid, any other failure.
const TINYID_OK: u16 = 200;
const TINYID_TOKEN_ERROR: u16 = 5;
const TINYID_SYS_ERROR: u16 = 6;

/// The service's routes; a parameter left empty (`/api/decode/`) is matched as "".
fn router() -> &'static matchit::Router<Endpoint> {
    static ROUTER: std::sync::OnceLock<matchit::Router<Endpoint>> = std::sync::OnceLock::new();
    ROUTER.get_or_init(|| {
        let mut r = matchit::Router::new();
        let routes = [
            ("/api/segment/get/", Endpoint::Get { segment: true }),
            ("/api/snowflake/get/", Endpoint::Get { segment: false }),
            ("/api/segment/alloc/", Endpoint::Alloc),
            ("/api/segment/giveback/", Endpoint::GiveBack),
            ("/api/decode/", Endpoint::Decode),
        ];
        for (prefix, endpoint) in routes {
            r.insert(prefix, endpoint).expect("a valid route");
            r.insert(format!("{prefix}{{param}}"), endpoint)
                .expect("a valid route");
        }
        r.insert("/metrics", Endpoint::Metrics)
            .expect("a valid route");
        r.insert("/healthz", Endpoint::Healthz)
            .expect("a valid route");
        r.insert("/readyz", Endpoint::Readyz)
            .expect("a valid route");
        for path in ["/", "/cache"] {
            r.insert(path, Endpoint::StatusPage).expect("a valid route");
        }
        for (call, endpoint) in [
            ("nextId", Tinyid::Ids),
            ("nextIdSimple", Tinyid::IdsSimple),
            ("nextSegmentId", Tinyid::Segment),
            ("nextSegmentIdSimple", Tinyid::SegmentSimple),
        ] {
            r.insert(format!("/tinyid/id/{call}"), Endpoint::Tinyid(endpoint))
                .expect("a valid route");
        }
        r
    })
}

/// The endpoint of `path` and its parameter (leading slashes beyond one are ignored).
fn route_of(path: &str) -> Option<(Endpoint, &str)> {
    let trimmed = path.trim_start_matches('/');
    let path = &path[path.len() - trimmed.len() - usize::from(path.len() > trimmed.len())..];
    if !path.starts_with('/') {
        return None;
    }
    if let Some(get) = leaf_get(path) {
        return Some(get);
    }
    let found = router().at(path).ok()?;
    Some((*found.value, found.params.get("param").unwrap_or("")))
}

/// Leaf's two paths, as the router matches them (the key: all after the prefix, empty
/// included, if it has no `/`), without a lookup.
fn leaf_get(path: &str) -> Option<(Endpoint, &str)> {
    let (segment, key) = if let Some(key) = path.strip_prefix("/api/segment/get/") {
        (true, key)
    } else {
        (false, path.strip_prefix("/api/snowflake/get/")?)
    };
    (!key.contains('/')).then_some((Endpoint::Get { segment }, key))
}

/// A request parameter outside its range, in the core's wording: `name=VALUE is out of
/// range; allowed MIN..=MAX` and `note`.
fn invalid_param(
    name: &str,
    value: impl std::fmt::Display,
    min: u64,
    max: u64,
    note: &str,
) -> Reject {
    let reason = segflake::error::out_of_range(value, min, max);
    reject(
        StatusCode::BAD_REQUEST,
        "INVALID_ARGUMENT",
        format!("{name}={reason}{note}"),
    )
}

/// The `token` of a give back, if given: 16 to 64 of `0-9a-f` (lower case: a MySQL marker
/// table compares without case), random per give back and the same in a resend.
fn give_back_token(query: Option<&str>) -> Result<Option<String>, Reject> {
    let Some(text) = query_param(query, "token") else {
        return Ok(None);
    };
    let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    if (16..=64).contains(&text.len()) && text.bytes().all(hex) {
        return Ok(Some(text.into_owned()));
    }
    Err(reject(
        StatusCode::BAD_REQUEST,
        "INVALID_ARGUMENT",
        format!(
            "token={text:?}; allowed 16 to 64 characters of 0-9a-f (a random token naming the \
             give back, e.g. 32 for 128 bits, sent unchanged when the request is resent)"
        ),
    ))
}

fn number_param(query: Option<&str>, name: &str, max: u64) -> Result<Option<u64>, Reject> {
    let Some(text) = query_param(query, name) else {
        return Ok(None);
    };
    let text = text.as_ref();
    match text.parse::<u64>() {
        Ok(n) if (1..=max).contains(&n) => Ok(Some(n)),
        _ => Err(invalid_param(name, format_args!("{text:?}"), 1, max, "")),
    }
}

/// `{"key":KEY,"ids":["ID",...]}`: the key as serde_json writes a string, the IDs in
/// decimal, in one buffer sized for them.
fn ids_json(key: &str, ids: &[u64]) -> Response<Body> {
    let mut body = Vec::with_capacity(ids.len() * 23 + key.len() + 24);
    body.extend_from_slice(b"{\"key\":");
    // A checked key has no control characters: only `"` and `\` would be escaped.
    if key.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        body.extend_from_slice(serde_json::Value::from(key).to_string().as_bytes());
    } else {
        body.push(b'"');
        body.extend_from_slice(key.as_bytes());
        body.push(b'"');
    }
    body.extend_from_slice(b",\"ids\":[");
    if let Some(&first) = ids.first() {
        let mut run = QuotedRun::new(first);
        for &id in ids {
            run.write(id, &mut body);
        }
    }
    if ids.is_empty() {
        body.push(b']');
    } else {
        // The last ID's comma becomes the list's end.
        *body.last_mut().expect("an ID was written") = b']';
    }
    body.push(b'}');
    respond(StatusCode::OK, json_type(), body)
}

/// A request's answer: made at once, or a future for one that waits (a store call, a
/// segment not ready yet, a large batch, any path but Leaf's two).
enum Answer {
    Ready(Option<Response<Body>>),
    Later(std::pin::Pin<Box<dyn std::future::Future<Output = Response<Body>> + Send>>),
}

impl std::future::Future for Answer {
    type Output = Result<Response<Body>, Infallible>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match self.get_mut() {
            Answer::Ready(r) => std::task::Poll::Ready(Ok(r.take().expect("polled once"))),
            Answer::Later(f) => f.as_mut().poll(cx).map(Ok),
        }
    }
}

impl Service {
    /// Answers `req`: Leaf's paths at once while IDs are ready, the others through
    /// [`handle`](Service::handle). Either way the request is counted once, with the
    /// status it got.
    fn call(self: &Arc<Self>, req: Request<Incoming>) -> Answer {
        self.at_once(&req)
            .unwrap_or_else(|| Answer::Later(Box::pin(self.clone().handle(req))))
    }

    async fn handle(self: Arc<Self>, req: Request<Incoming>) -> Response<Body> {
        let (route, result) = self.route(&req).await;
        self.counted(route, result)
    }

    fn counted(&self, route: Route, result: Result<Response<Body>, Reject>) -> Response<Body> {
        let response = result.unwrap_or_else(Reject::into_response);
        self.requests.count(route, response.status().as_u16());
        response
    }

    /// Leaf's paths without a future, as [`route`](Service::route) answers them: `None`
    /// when the answer has to wait (before any ID is taken), or a batch that ran dry
    /// continued on a blocking thread.
    fn at_once(self: &Arc<Self>, req: &Request<Incoming>) -> Option<Answer> {
        let (Endpoint::Get { segment }, raw) = leaf_get(req.uri().path())? else {
            return None;
        };
        let route = if segment {
            Route::SegmentGet
        } else {
            Route::SnowflakeGet
        };
        let answer = (|| {
            if !matches!(*req.method(), Method::GET | Method::POST | Method::HEAD) {
                return Err(reject(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "METHOD_NOT_ALLOWED",
                    "use GET or POST",
                ));
            }
            let key = self.key(raw, req)?;
            let max_count = self.max_count() as u64;
            let count = number_param(req.uri().query(), "count", max_count)?;
            let count = count.map(|n| n as usize);
            if segment {
                self.segment_ids_at_once(route, &key, count)
            } else {
                self.snowflake_ids_at_once(&key, count)
            }
        })();
        match answer {
            Ok(Some(Answer::Ready(r))) => {
                // A ready answer of these paths is IDs (`text_id`, `ids_json`): a 200.
                self.requests.count(route, 200);
                Some(Answer::Ready(r))
            }
            Ok(later) => later,
            Err(e) => Some(Answer::Ready(Some(self.counted(route, Err(e))))),
        }
    }

    /// Segment IDs from this thread's handle of `key`, if it has one and IDs are ready.
    fn segment_ids_at_once(
        self: &Arc<Self>,
        route: Route,
        key: &str,
        count: Option<usize>,
    ) -> Result<Option<Answer>, Reject> {
        self.segments()?;
        let Some(n) = count else {
            let ready = local_handles(|m| m.get(key).map(TagHandle::try_next_id));
            return Ok(match ready.transpose()? {
                Some(Some(id)) => Some(Answer::Ready(Some(text_id(id)))),
                _ => None,
            });
        };
        let (mut stack, mut heap) = ([0u64; STACK_BATCH], Vec::new());
        let ids = if n <= STACK_BATCH {
            &mut stack[..n]
        } else {
            heap.resize(n, 0);
            &mut heap[..]
        };
        let taken = local_handles(|m| {
            let handle = m.get(key)?;
            let got = handle.engine().try_next_batch(ids);
            handle.poll_fetch();
            Some((got, (got < n).then(|| handle.clone())))
        });
        match taken {
            None => Ok(None),
            Some((_, None)) => Ok(Some(Answer::Ready(Some(ids_json(key, ids))))),
            Some((got, Some(handle))) => {
                // The segments ran dry mid-batch: the rest waited for, as `segment_batch`.
                let (svc, key, mut ids) = (self.clone(), key.to_owned(), ids.to_vec());
                Ok(Some(Answer::Later(Box::pin(async move {
                    let rest = blocking(move || handle.next_ids(&mut ids[got..]).map(|()| ids));
                    let answer = match rest.await {
                        Ok(Ok(ids)) => Ok(ids_json(&key, &ids)),
                        Ok(Err(e)) => Err(e.into()),
                        Err(e) => Err(e),
                    };
                    svc.counted(route, answer)
                }))))
            }
        }
    }

    /// Snowflake IDs, as `snowflake_ids` takes them, unless the batch is one for a
    /// blocking thread.
    fn snowflake_ids_at_once(
        &self,
        key: &str,
        count: Option<usize>,
    ) -> Result<Option<Answer>, Reject> {
        let Some(n) = count else {
            let id = self.snowflake()?.next_id()?;
            self.requests.snowflake_issued(key, 1);
            return Ok(Some(Answer::Ready(Some(text_id(id)))));
        };
        if n > INLINE_BATCH {
            return Ok(None);
        }
        let flake = self.snowflake()?;
        let (mut stack, mut heap) = ([0u64; STACK_BATCH], Vec::new());
        let ids = if n <= STACK_BATCH {
            &mut stack[..n]
        } else {
            heap.resize(n, 0);
            &mut heap[..]
        };
        flake.next_ids(ids)?;
        self.requests.snowflake_issued(key, n as u64);
        Ok(Some(Answer::Ready(Some(ids_json(key, ids)))))
    }

    async fn route(&self, req: &Request<Incoming>) -> (Route, Result<Response<Body>, Reject>) {
        let path = req.uri().path();
        let query = req.uri().query();
        let get_or_post = || match *req.method() {
            Method::GET | Method::POST | Method::HEAD => Ok(()),
            _ => Err(reject(
                StatusCode::METHOD_NOT_ALLOWED,
                "METHOD_NOT_ALLOWED",
                "use GET or POST",
            )),
        };
        // The segment-lease endpoints change the store: POST only.
        let post_only = |path: &str| match *req.method() {
            Method::POST => Ok(()),
            _ => Err(reject(
                StatusCode::METHOD_NOT_ALLOWED,
                "METHOD_NOT_ALLOWED",
                format!("{path} takes POST only"),
            )),
        };
        match route_of(path) {
            Some((Endpoint::Get { segment }, key)) => {
                let ids = async {
                    get_or_post()?;
                    let key = self.key(key, req)?;
                    let max_count = self.max_count() as u64;
                    let count = number_param(query, "count", max_count)?;
                    let count = count.map(|n| n as usize);
                    if segment {
                        self.segment_ids(&key, count).await
                    } else {
                        self.snowflake_ids(&key, count).await
                    }
                };
                let route = if segment { Route::SegmentGet } else { Route::SnowflakeGet };
                (route, ids.await)
            }
            Some((Endpoint::Alloc, key)) => (
                Route::SegmentAlloc,
                async {
                    post_only("/api/segment/alloc")?;
                    let key = self.key(key, req)?;
                    // Without ?step=N, the tag's own step (Leaf's leaf_alloc.step).
                    let max_step = self.max_alloc_step();
                    let step = number_param(query, "step", max_step)?;
                    self.alloc(&key, step).await
                }
                .await,
            ),
            Some((Endpoint::GiveBack, key)) => (
                Route::SegmentAlloc,
                async {
                    post_only("/api/segment/giveback")?;
                    let key = self.key(key, req)?;
                    let id = |name| -> Result<u64, Reject> {
                        let text = query_param(query, name).unwrap_or_default();
                        text.parse::<u64>()
                            .ok()
                            .filter(|&n| n <= segflake::segment::MAX_ID)
                            .ok_or_else(|| {
                                reject(
                                    StatusCode::BAD_REQUEST,
                                    "INVALID_ARGUMENT",
                                    format!(
                                        "{name}={text:?}; allowed integers 0..={}",
                                        segflake::segment::MAX_ID
                                    ),
                                )
                            })
                    };
                    let (expected, max_id) = (id("expected_max_id")?, id("max_id")?);
                    let token = give_back_token(query)?;
                    self.give_back(&key, expected, max_id, token).await
                }
                .await,
            ),
            Some((Endpoint::Decode, id)) => {
                (Route::Decode, get_or_post().and_then(|()| self.decode(id)))
            }
            Some((Endpoint::Tinyid(call), _)) => {
                let route = match call {
                    Tinyid::Ids | Tinyid::IdsSimple => Route::SegmentGet,
                    Tinyid::Segment | Tinyid::SegmentSimple => Route::SegmentAlloc,
                };
                let answer = match get_or_post() {
                    Ok(()) => self.tinyid(call, req, query).await,
                    Err(e) => Err(e),
                };
                (route, answer)
            }
            Some((Endpoint::Metrics, _)) => (Route::Metrics, Ok(self.metrics())),
            Some((Endpoint::StatusPage, _)) => (
                Route::StatusPage,
                get_or_post().map(|()| self.status_page(req, query)),
            ),
            Some((Endpoint::Healthz, _)) => (Route::Health, Ok(text("ok\n".into()))),
            Some((Endpoint::Readyz, _)) => (Route::Health, self.ready()),
            None => (
                Route::Other,
                Err(reject(
                    StatusCode::NOT_FOUND,
                    "NOT_FOUND",
                    format!(
                        "no such path {path:?}; paths: /api/segment/get/KEY, /api/snowflake/get/KEY, \
                         /api/segment/alloc/KEY?step=N, /api/segment/giveback/KEY?expected_max_id=E&max_id=M[&token=T], \
                         /api/decode/ID, /metrics, /healthz, /readyz, / (status page), \
                         /tinyid/id/{{nextId,nextIdSimple,nextSegmentId,nextSegmentIdSimple}}?bizType=KEY"
                    ),
                )),
            ),
        }
    }

    /// The key of a path, decoded, checked and authorized.
    fn key<'a>(
        &self,
        raw: &'a str,
        req: &Request<Incoming>,
    ) -> Result<std::borrow::Cow<'a, str>, Reject> {
        let key = percent_decode(raw).ok_or_else(|| {
            reject(
                StatusCode::BAD_REQUEST,
                "INVALID_ARGUMENT",
                format!("key {raw:?} is not valid percent-encoded UTF-8"),
            )
        })?;
        let peer = peer_of(req);
        if peer.is_none() && self.open.load(Ordering::Relaxed) {
            // No [keys] and no client certificate: nothing to check but the key itself.
            return checked_tag(key);
        }
        // Only a config with keys looks at the header.
        let access = self.access.load();
        let presented = access.has_keys().then(|| bearer_token(req)).flatten();
        self.authorize_with(&access, key, presented, peer)
    }

    /// `key`, checked, if this server serves it and the caller may call it: `presented`
    /// is one of its tokens and `peer` one of its clients, where it lists them.
    fn authorize<'a>(
        &self,
        key: std::borrow::Cow<'a, str>,
        presented: Option<&str>,
        peer: Option<&Peer>,
    ) -> Result<std::borrow::Cow<'a, str>, Reject> {
        self.authorize_with(&self.access.load(), key, presented, peer)
    }

    fn authorize_with<'a>(
        &self,
        access: &Access,
        key: std::borrow::Cow<'a, str>,
        presented: Option<&str>,
        peer: Option<&Peer>,
    ) -> Result<std::borrow::Cow<'a, str>, Reject> {
        let key = checked_tag(key)?;
        if let Some(peer) = peer {
            self.count_client(access.client_label(peer));
        }
        access.check(&key, presented, peer)?;
        Ok(key)
    }

    fn count_client(&self, label: &str) {
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        match clients.get_mut(label) {
            Some(n) => *n += 1,
            None => {
                clients.insert(label.to_string(), 1);
            }
        }
    }

    /// Swaps in a reloaded policy; returns the keys in use that it no longer serves.
    fn apply(&self, policy: Policy) -> Vec<String> {
        let removed = match &self.segments {
            Some(seg) => seg
                .handles
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .keys()
                .filter(|k| !policy.access.serves(k))
                .cloned()
                .collect(),
            None => Vec::new(),
        };
        self.max_count.store(policy.max_count, Ordering::Relaxed);
        self.max_alloc_step
            .store(policy.max_alloc_step, Ordering::Relaxed);
        let open = !policy.access.has_keys();
        self.access.store(Arc::new(policy.access));
        self.open.store(open, Ordering::Relaxed);
        removed
    }

    /// Stops serving a key a reload removed and gives its unissued IDs back (blocks on
    /// the store).
    fn retire(&self, key: &str) {
        let Some(seg) = &self.segments else { return };
        if self.access.load().serves(key) {
            return; // served again by a later reload
        }
        seg.handles
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
        seg.known
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
        RETIRED.fetch_add(1, Ordering::AcqRel);
        let given = match seg.generator.retire(key) {
            Some((g, true)) => format!("{}..{}", g.max_id, g.expected_max_id),
            Some((_, false)) => "none (the store refused: a gap)".into(),
            None => "none".into(),
        };
        log(
            "info",
            "key removed; its unissued IDs given back",
            &[("key", key), ("given_back", &given)],
        );
    }

    /// The largest `?count` (reloadable).
    fn max_count(&self) -> usize {
        self.max_count.load(Ordering::Relaxed)
    }

    /// The largest `?step` of an allocation (reloadable).
    fn max_alloc_step(&self) -> u64 {
        self.max_alloc_step.load(Ordering::Relaxed)
    }

    fn segments(&self) -> Result<&Segments, Reject> {
        self.segments.as_ref().ok_or_else(|| {
            reject(
                StatusCode::NOT_FOUND,
                "NOT_CONFIGURED",
                "this server has no segment store (start it with --store URL)",
            )
        })
    }

    /// Whether the store has `key`: asked once per key (unknown keys again after a second).
    /// A store that creates missing tags has every key.
    async fn check_known(&self, seg: &Segments, key: &str) -> Result<(), Reject> {
        if seg.creates_tags
            || seg
                .known
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .contains(key)
        {
            return Ok(());
        }
        let unknown = || {
            reject(
                StatusCode::NOT_FOUND,
                "UNKNOWN_TAG",
                format!(
                    "the store {} has no row for key {key:?} (Leaf: key not exists)",
                    seg.store.inner.describe()
                ),
            )
        };
        if let Some(at) = seg
            .unknown
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
        {
            if at.elapsed() < UNKNOWN_KEY_TTL {
                return Err(unknown());
            }
        }
        let owned = key.to_string();
        let found = store_call(seg, &format!("cannot look key {key:?} up"), move |store| {
            store.has_tag(&owned)
        })
        .await?;
        if !found {
            let mut unknown_keys = seg.unknown.lock().unwrap_or_else(|p| p.into_inner());
            if unknown_keys.len() >= MAX_UNKNOWN_KEYS {
                unknown_keys.clear();
            }
            unknown_keys.insert(key.to_string(), Instant::now());
            return Err(unknown());
        }
        seg.known
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_string());
        Ok(())
    }

    async fn tag_handle(&self, seg: &Segments, key: &str) -> Result<TagHandle, Reject> {
        if let Some(h) = local_handles(|m| m.get(key).cloned()) {
            return Ok(h);
        }
        if let Some(h) = seg
            .handles
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
        {
            local_handles(|m| m.insert(key, h.clone()));
            return Ok(h.clone());
        }
        self.check_known(seg, key).await?;
        let mut handles = seg.handles.write().unwrap_or_else(|p| p.into_inner());
        if let Some(h) = handles.get(key) {
            return Ok(h.clone());
        }
        let h = seg.generator.tag(key)?;
        handles.insert(key.to_string(), h.clone());
        drop(handles);
        local_handles(|m| m.insert(key, h.clone()));
        Ok(h)
    }

    async fn segment_ids(&self, key: &str, count: Option<usize>) -> Result<Response<Body>, Reject> {
        let seg = self.segments()?;
        if count.is_none() {
            // The hot path: a ready ID through this thread's own handle, no lock, no clone.
            let ready = local_handles(|m| m.get(key).map(TagHandle::try_next_id));
            if let Some(Some(id)) = ready.transpose()? {
                return Ok(text_id(id));
            }
        }
        let handle = self.tag_handle(seg, key).await?;
        match count {
            None => match handle.try_next_id()? {
                Some(id) => Ok(text_id(id)),
                None => Ok(text_id(blocking(move || handle.next_id()).await??)),
            },
            Some(n) => Ok(ids_json(key, &Self::segment_batch(handle, n).await?)),
        }
    }

    /// `n` IDs of a tag: those ready at once, the rest waited for on a blocking thread.
    async fn segment_batch(handle: TagHandle, n: usize) -> Result<Vec<u64>, Reject> {
        let mut ids = vec![0u64; n];
        let got = handle.engine().try_next_batch(&mut ids);
        handle.poll_fetch();
        if got < n {
            ids = blocking(move || handle.next_ids(&mut ids[got..]).map(|()| ids)).await??;
        }
        Ok(ids)
    }

    /// One of Tinyid's calls. Its token is the key's (`token=`, or a bearer token); its
    /// `batchSize` is `count` (1..=--max-count, refused beyond rather than cut).
    async fn tinyid(
        &self,
        call: Tinyid,
        req: &Request<Incoming>,
        query: Option<&str>,
    ) -> Result<Response<Body>, Reject> {
        let simple = matches!(call, Tinyid::IdsSimple | Tinyid::SegmentSimple);
        let answer = async {
            let biz = query_param(query, "bizType").ok_or_else(|| {
                reject(
                    StatusCode::BAD_REQUEST,
                    "INVALID_ARGUMENT",
                    "bizType=KEY is missing (Tinyid's name for the key)",
                )
            })?;
            let bearer = bearer_token(req);
            let token = query_param(query, "token");
            let key = self.authorize(biz, token.as_deref().or(bearer), peer_of(req))?;
            match call {
                Tinyid::Ids | Tinyid::IdsSimple => {
                    let max_count = self.max_count() as u64;
                    let n = number_param(query, "batchSize", max_count)?;
                    let seg = self.segments()?;
                    let handle = self.tag_handle(seg, &key).await?;
                    let ids = Self::segment_batch(handle, n.unwrap_or(1) as usize).await?;
                    Ok(if simple {
                        let list: Vec<String> = ids.iter().map(u64::to_string).collect();
                        list.join(",")
                    } else {
                        json!(ids).to_string()
                    })
                }
                Tinyid::Segment | Tinyid::SegmentSimple => {
                    let a = self.allocation(&key, None).await?;
                    // Tinyid's segment is (currentId, maxId]; the allocation's [start, max_id).
                    let current = i128::from(a.max_id) - i128::from(a.step) - 1;
                    let max = i128::from(a.max_id) - 1;
                    let loading = current + i128::from(a.step) * 20 / 100;
                    let (delta, remainder) = a.residue.map_or((1, 0), |r| (r.delta, r.remainder));
                    Ok(if simple {
                        format!("{current},{loading},{max},{delta},{remainder}")
                    } else {
                        json!({
                            "currentId": current as i64,
                            "loadingId": loading as i64,
                            "maxId": max as i64,
                            "delta": delta,
                            "remainder": remainder,
                        })
                        .to_string()
                    })
                }
            }
        }
        .await;
        if simple {
            return answer.map(text);
        }
        // Tinyid's envelope, also for a refusal (with this server's status and code too).
        let (status, body) = match answer {
            Ok(data) => (
                StatusCode::OK,
                format!("{{\"data\":{data},\"code\":{TINYID_OK},\"message\":\"\"}}"),
            ),
            Err(e) => {
                let code = match e.status {
                    StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => TINYID_TOKEN_ERROR,
                    _ => TINYID_SYS_ERROR,
                };
                let body = json!({"data": null, "code": code, "message": e.message, "segflakeCode": e.code});
                (e.status, body.to_string())
            }
        };
        Ok(respond(status, json_type(), body))
    }

    fn snowflake(&self) -> Result<&Arc<Flake>, Reject> {
        self.snowflake.as_ref().ok_or_else(|| {
            reject(
                StatusCode::NOT_FOUND,
                "NOT_CONFIGURED",
                "this server has no snowflake worker ID (start it with --worker N or --registry URL)",
            )
        })
    }

    async fn snowflake_ids(
        &self,
        key: &str,
        count: Option<usize>,
    ) -> Result<Response<Body>, Reject> {
        match count {
            None => {
                let id = self.snowflake()?.next_id()?;
                self.requests.snowflake_issued(key, 1);
                Ok(text_id(id))
            }
            Some(n) => Ok(ids_json(key, &self.snowflake_batch(key, n).await?)),
        }
    }

    /// `n` snowflake IDs, counted under `key`; a large batch on a blocking thread.
    async fn snowflake_batch(&self, key: &str, n: usize) -> Result<Vec<u64>, Reject> {
        let flake = self.snowflake()?;
        let ids = if n <= INLINE_BATCH {
            let mut ids = vec![0u64; n];
            flake.next_ids(&mut ids)?;
            ids
        } else {
            let flake = flake.clone();
            blocking(move || {
                let mut ids = vec![0u64; n];
                flake.next_ids(&mut ids).map(|()| ids)
            })
            .await??
        };
        self.requests.snowflake_issued(key, n as u64);
        Ok(ids)
    }

    async fn alloc(&self, key: &str, step: Option<u64>) -> Result<Response<Body>, Reject> {
        let allocation = self.allocation(key, step).await?;
        let mut body = json!({
            "key": key,
            "maxId": allocation.max_id.to_string(),
            "step": allocation.step,
        });
        if let Some(tag_step) = allocation.tag_step {
            body["tagStep"] = tag_step.into();
        }
        Ok(json_ok(body))
    }

    /// A segment lease: the store raises the tag's max_id by `step` (the tag's own without
    /// one) and the answer is checked.
    async fn allocation(
        &self,
        key: &str,
        step: Option<u64>,
    ) -> Result<segflake::Allocation, Reject> {
        let seg = self.segments()?;
        self.check_known(seg, key).await?;
        let owned = key.to_string();
        let answer = store_call(seg, "the store failed", move |store| {
            match store.allocate_with(&owned, step) {
                Ok(a) => Ok(Some(a)),
                Err(segflake::StoreFailure::UnknownTag) => Ok(None),
                Err(segflake::StoreFailure::Failed(e)) => Err(e),
            }
        })
        .await?;
        let allocation = answer.ok_or_else(|| segflake::Error::UnknownTag {
            tag: key.to_string(),
        })?;
        if step.is_some_and(|s| s != allocation.step)
            || allocation.step == 0
            || allocation.max_id < allocation.step
            || allocation.max_id > segflake::segment::MAX_ID
        {
            return Err(reject(
                StatusCode::BAD_GATEWAY,
                "STORE_CONTRACT_VIOLATION",
                format!(
                    "the store answered max_id {} step {} to a request for step {step:?}",
                    allocation.max_id, allocation.step
                ),
            ));
        }
        Ok(allocation)
    }

    /// An HttpStore client's unissued IDs back to the store (compare-and-set on max_id).
    /// With `token`, the store records and applies it under that token, and this server
    /// answers a resend as it answered the first (see `give_backs`); without one, the
    /// store makes a token of its own.
    async fn give_back(
        &self,
        key: &str,
        expected: u64,
        max_id: u64,
        token: Option<String>,
    ) -> Result<Response<Body>, Reject> {
        let seg = self.segments()?;
        self.check_known(seg, key).await?;
        let owned = key.to_string();
        let answer = |given: Result<bool, StoreFailure>| match given {
            Ok(done) => Ok(done),
            Err(StoreFailure::UnknownTag) => Ok(false),
            Err(StoreFailure::Failed(e)) => Err(e),
        };
        let Some(token) = token else {
            let given = store_call(seg, "the store failed", move |store| {
                answer(SegmentStore::give_back(store, &owned, expected, max_id))
            })
            .await?;
            return Ok(json_ok(json!({ "key": key, "givenBack": given })));
        };
        let record = seg.give_backs.clone();
        let request = give_backs::fingerprint(key, expected, max_id);
        let shown = token.clone();
        let remembered = store_call(seg, "the store failed", move |store| {
            // A resend arriving while its first request still runs waits for its answer.
            let _claim = record.claim(&token);
            match record.lookup(&token, request, Instant::now()) {
                Remembered::Unknown => {}
                known => return Ok(known),
            }
            let given = answer(store.give_back_as(&owned, expected, max_id, &token))?;
            record.remember(&token, request, given, Instant::now());
            Ok(Remembered::Answered(given))
        })
        .await?;
        match remembered {
            Remembered::Answered(given) => Ok(json_ok(json!({ "key": key, "givenBack": given }))),
            _ => Err(reject(
                StatusCode::BAD_REQUEST,
                "INVALID_ARGUMENT",
                format!(
                    "token={shown:?} named another give back (its key, expected_max_id or \
                     max_id differ); allowed: one token per give back, sent again only with \
                     the same request"
                ),
            )),
        }
    }

    fn decode(&self, raw: &str) -> Result<Response<Body>, Reject> {
        let id: u64 = raw.parse().map_err(|_| {
            reject(
                StatusCode::BAD_REQUEST,
                "PARSE_ERROR",
                format!("{raw:?} is not a decimal ID; allowed 0..=18446744073709551615"),
            )
        })?;
        let d = self.layout.decode(id)?;
        let fields = JsonObject::new().str("id", &id.to_string()).decoded(&d);
        Ok(json_ok(fields.into_value()))
    }

    fn ready(&self) -> Result<Response<Body>, Reject> {
        let unready = |why: String| Err(reject(StatusCode::SERVICE_UNAVAILABLE, "NOT_READY", why));
        if self.draining.load(Ordering::Relaxed) {
            return unready("shutting down".into());
        }
        if let Some(seg) = &self.segments {
            if !seg.store.healthy.load(Ordering::Relaxed) {
                return unready(format!(
                    "the store {} failed its last call",
                    seg.store.inner.describe()
                ));
            }
        }
        if let Some(flake) = &self.snowflake {
            if let Flake::Leased(l) = &**flake {
                let state = l.stats().state;
                if state != "held" {
                    return unready(format!("the worker lease is {state}, not held"));
                }
            }
        }
        Ok(text("ready\n".into()))
    }

    /// The status page: what `/metrics` reports, for people. Keys with tokens are shown
    /// only to a request that presents one of them (`?token=` or a bearer token).
    fn status_page(&self, req: &Request<Incoming>, query: Option<&str>) -> Response<Body> {
        let bearer = bearer_token(req);
        let token = query_param(query, "token");
        let presented = token.as_deref().or(bearer);
        let visible = |key: &str| {
            let access = self.access.load();
            access.check(key, presented, peer_of(req)).is_ok()
        };
        let mut view = status_page::View {
            uptime_seconds: self.started.elapsed().as_secs_f64(),
            draining: self.draining.load(Ordering::Relaxed),
            store: None,
            segments: Vec::new(),
            hidden_keys: 0,
            worker: None,
            lease: None,
            requests: self.requests.counts(),
            snowflake_ids: Vec::new(),
            refresh_seconds: 5,
            charts: self
                .history
                .charts(self.started.elapsed().as_millis() as u64, |key| {
                    key == "(other)" || visible(key)
                }),
            reloads: (
                self.reloads.applied.load(Ordering::Relaxed),
                self.reloads.failed.load(Ordering::Relaxed),
                self.reloads.last_error(),
            ),
            tls: self.tls_mode.map(|mode| {
                let not_after = self.reloads.cert_not_after.load(Ordering::Relaxed);
                (mode, not_after)
            }),
        };
        if let Some(seg) = &self.segments {
            view.store = Some((
                seg.store.inner.describe().to_string(),
                seg.store.healthy.load(Ordering::Relaxed),
            ));
            for stats in seg.stats() {
                if visible(&stats.tag) {
                    view.segments.push(stats);
                } else {
                    view.hidden_keys += 1;
                }
            }
        }
        if let Some(flake) = &self.snowflake {
            match &**flake {
                Flake::Fixed(f) => view.worker = Some(f.worker_id()),
                Flake::Leased(l) => {
                    let registry = self.registry.clone().unwrap_or_default();
                    view.lease = Some((l.stats(), registry));
                }
            }
        }
        view.snowflake_ids = self
            .requests
            .snowflake_counts()
            .into_iter()
            .filter(|(key, _)| key == "(other)" || visible(key))
            .collect();
        let mut r = respond(
            StatusCode::OK,
            HeaderValue::from_static("text/html; charset=utf-8"),
            status_page::render(&view),
        );
        r.headers_mut()
            .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        r
    }

    fn metrics(&self) -> Response<Body> {
        let mut out = String::with_capacity(4096);
        let up = u8::from(!self.draining.load(Ordering::Relaxed));
        sample(
            &mut out,
            "segflake_up",
            "gauge",
            "1 while serving, 0 while draining.",
            up,
        );
        let uptime = format!("{:.3}", self.started.elapsed().as_secs_f64());
        sample(
            &mut out,
            "segflake_uptime_seconds",
            "gauge",
            "Seconds since the server started.",
            uptime,
        );
        self.requests.render(&mut out);
        if let Some(seg) = &self.segments {
            let stats = seg.stats();
            let gauges: [SegmentGauge; 5] = [
                (
                    "segflake_segment_ids_total",
                    "counter",
                    "Segment IDs issued, by key.",
                    |s| Some(s.issued as f64),
                ),
                (
                    "segflake_segment_runway_seconds",
                    "gauge",
                    "Seconds of IDs left at the current rate if the store went down now.",
                    |s| s.runway_seconds,
                ),
                (
                    "segflake_segment_remaining_ids",
                    "gauge",
                    "IDs left in the current and the next segment.",
                    |s| {
                        Some(
                            (s.remaining
                                + if s.next_ready {
                                    s.next_end - s.next_start
                                } else {
                                    0
                                }) as f64,
                        )
                    },
                ),
                (
                    "segflake_segment_step",
                    "gauge",
                    "The step of the next refill.",
                    |s| Some(s.step as f64),
                ),
                (
                    "segflake_segment_fetch_failures_total",
                    "counter",
                    "Refills that failed, by key.",
                    |s| Some(s.failures as f64),
                ),
            ];
            for (name, kind, help, value) in gauges {
                header(&mut out, name, kind, help);
                for s in &stats {
                    if let Some(v) = value(s) {
                        let _ = writeln!(out, "{name}{{{}}} {v}", key_label(&s.tag));
                    }
                }
            }
            seg.store.render(&mut out);
        }
        if let Some(flake) = &self.snowflake {
            if let Flake::Leased(l) = &**flake {
                let s = l.stats();
                header(
                    &mut out,
                    "segflake_lease_state",
                    "gauge",
                    "1 for the worker lease's current state.",
                );
                let _ = writeln!(out, "segflake_lease_state{{state=\"{}\"}} 1", s.state);
                let worker = s.worker_id.map_or(-1, |w| w as i64);
                let remaining = s.lease_remaining_ms.unwrap_or(0) as f64 / 1000.0;
                let o = &mut out;
                sample(
                    o,
                    "segflake_lease_worker_id",
                    "gauge",
                    "The leased worker ID (-1 while none is held).",
                    worker,
                );
                sample(
                    o,
                    "segflake_lease_remaining_seconds",
                    "gauge",
                    "Time left on the lease.",
                    remaining,
                );
                if let Some(ahead) = crate::metrics::mark_ahead_seconds(&s) {
                    sample(
                        o,
                        "segflake_lease_mark_ahead_seconds",
                        "gauge",
                        "How far the lease's mark is ahead of the clock (while a worker ID is held).",
                        ahead,
                    );
                }
                sample(
                    o,
                    "segflake_lease_renewals_total",
                    "counter",
                    "Lease renewals that succeeded.",
                    s.renewals,
                );
                sample(
                    o,
                    "segflake_lease_failures_total",
                    "counter",
                    "Registry calls that failed.",
                    s.failures,
                );
                sample(
                    o,
                    "segflake_lease_lost_total",
                    "counter",
                    "Times the lease was lost.",
                    s.lost,
                );
            }
        }
        self.reload_metrics(&mut out);
        respond(
            StatusCode::OK,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            out,
        )
    }

    /// Reloads, the certificate's expiry, and requests by mutual-TLS client.
    fn reload_metrics(&self, out: &mut String) {
        let r = &self.reloads;
        header(
            out,
            "segflake_reloads_total",
            "counter",
            "Configuration reloads (SIGHUP, a file changed), by result.",
        );
        let applied = r.applied.load(Ordering::Relaxed);
        let failed = r.failed.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "segflake_reloads_total{{result=\"applied\"}} {applied}"
        );
        let _ = writeln!(out, "segflake_reloads_total{{result=\"refused\"}} {failed}");
        header(
            out,
            "segflake_reload_error_info",
            "gauge",
            "1 with the last reload's error while the last reload was refused (the old configuration serves).",
        );
        if let Some(e) = r.last_error() {
            let _ = writeln!(
                out,
                "segflake_reload_error_info{{{}}} 1",
                label("error", &e)
            );
        }
        let not_after = r.cert_not_after.load(Ordering::Relaxed);
        if not_after > 0 {
            sample(
                out,
                "segflake_tls_certificate_not_after_seconds",
                "gauge",
                "When the server certificate in use expires (Unix time).",
                not_after,
            );
        }
        let clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if !clients.is_empty() {
            header(
                out,
                "segflake_client_requests_total",
                "counter",
                "Requests by mutual-TLS client: the identities [keys] lists, else other.",
            );
            for (client, n) in clients.iter() {
                let client = label("client", client);
                let _ = writeln!(out, "segflake_client_requests_total{{{client}}} {n}");
            }
        }
    }
}

fn startup(what: &str, e: impl std::fmt::Display) -> CliError {
    CliError::runtime(format!("cannot start: {what}: {e}"))
}

/// Starts the generators, serves until SIGTERM/SIGINT (reloading on SIGHUP and file
/// changes, `reparse` reading the configuration again), then drains and releases.
pub fn run(config: ServeConfig, reparse: reload::Reparse) -> Result<(), CliError> {
    let (access, token_files) = Access::load(config.keys.as_ref()).map_err(CliError::runtime)?;
    let layout = config.layout.build().map_err(|e| {
        segflake::host::respell(e, segflake::LayoutSpec::SPECS, segflake::Spelling::Snake)
    })?;
    let segments = match &config.store {
        None => None,
        Some(url) => {
            let inner = crate::backends::open_store(
                url,
                1,
                config.segment.store_timeout_ms,
                config.store_settings,
                "serve",
            )?;
            let store = Arc::new(MeteredStore::new(inner));
            let generator = SegmentGenerator::new(store.clone(), config.segment.clone())?;
            Some(Segments {
                store,
                generator,
                handles: RwLock::new(HashMap::new()),
                known: RwLock::new(HashSet::new()),
                unknown: Mutex::new(HashMap::new()),
                creates_tags: config.store_settings.create_missing_step.is_some(),
                store_timeout: Duration::from_millis(config.segment.store_timeout_ms),
                give_backs: Arc::new(GiveBacks::default()),
            })
        }
    };
    let snowflake = if let Some(worker) = config.worker {
        let mut options = config.snowflake;
        options.worker_id = worker;
        Some(Arc::new(Flake::Fixed(Snowflake::new(layout, options)?)))
    } else if let Some(url) = &config.registry {
        let registry = crate::backends::open_registry(
            url,
            config.lease.registry_timeout_ms,
            config.identity.as_deref(),
        )?;
        // The owner label names this host in the registry's audit rows.
        let leased = LeasedSnowflake::start(
            layout,
            config.snowflake,
            config.lease,
            registry,
            crate::next_cmd::owner_label(),
        )?;
        Some(Arc::new(Flake::Leased(leased)))
    } else {
        None
    };
    let service = Arc::new(Service {
        layout,
        segments,
        snowflake,
        open: AtomicBool::new(!access.has_keys()),
        access: arc_swap::ArcSwap::from_pointee(access),
        max_count: config.max_count.into(),
        max_alloc_step: config.max_alloc_step.into(),
        requests: Requests::default(),
        clients: Mutex::default(),
        reloads: reload::Reloads::default(),
        tls_mode: config.tls.as_ref().map(|t| {
            if t.client_ca.is_some() {
                "mutual TLS"
            } else {
                "TLS"
            }
        }),
        draining: AtomicBool::new(false),
        started: Instant::now(),
        registry: config.registry.as_deref().map(crate::backends::redact),
        history: history::History::new(Duration::from_millis(config.status_sample_ms)),
    });
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .map_err(|e| startup("the runtime", e))?;
    let served = runtime.block_on(serve(service.clone(), config, reparse, token_files));
    // Requests are done: stop refills, release the worker lease.
    if let Some(seg) = &service.segments {
        seg.generator.close();
    }
    if let Some(flake) = &service.snowflake {
        if let Flake::Leased(l) = &**flake {
            l.close();
            log("info", "worker lease released", &[]);
        }
    }
    runtime.shutdown_timeout(Duration::from_secs(1));
    served?;
    log("info", "stopped", &[]);
    Ok(())
}

async fn serve(
    service: Arc<Service>,
    config: ServeConfig,
    reparse: reload::Reparse,
    token_files: Vec<std::path::PathBuf>,
) -> Result<(), CliError> {
    use listen::{Listener, Serves};
    use tokio::signal::unix::{signal, SignalKind};
    let bind = |addr: std::net::SocketAddr, what: &'static str| async move {
        tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| startup(&format!("cannot listen on {addr}{what}"), e))
    };
    let acceptor = |serves: Serves| -> Result<Option<Arc<tls::Acceptor>>, CliError> {
        config
            .tls
            .as_ref()
            .map(|files| tls::Acceptor::new(files, serves.alpn()).map(Arc::new))
            .transpose()
            .map_err(|e| startup("TLS", e))
    };
    let one_port = config.grpc_listen == Some(config.listen);
    let grpc = if config.grpc_listen.is_some() {
        Some(grpc::services(service.clone()).map_err(|e| startup("gRPC", e))?)
    } else {
        None
    };
    let mut listeners = Vec::new();
    let http_serves = if one_port { Serves::Both } else { Serves::Http };
    listeners.push(Listener {
        tcp: bind(config.listen, "").await?,
        serves: http_serves,
        tls: acceptor(http_serves)?,
        grpc: if one_port { grpc.clone() } else { None },
        access_log: config.access_log,
        idle_timeout: Duration::from_millis(config.idle_timeout_ms),
    });
    if let (Some(addr), false) = (config.grpc_listen, one_port) {
        listeners.push(Listener {
            tcp: bind(addr, " (gRPC)").await?,
            serves: Serves::Grpc,
            tls: acceptor(Serves::Grpc)?,
            grpc: grpc.clone(),
            access_log: config.access_log,
            idle_timeout: Duration::from_millis(config.idle_timeout_ms),
        });
    }
    let address = listeners[0]
        .tcp
        .local_addr()
        .map_err(|e| startup("the listener", e))?
        .to_string();
    let mut term = signal(SignalKind::terminate()).map_err(|e| startup("SIGTERM", e))?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| startup("SIGINT", e))?;
    let worker = match &service.snowflake {
        Some(f) => match &**f {
            Flake::Fixed(g) => g.worker_id().to_string(),
            Flake::Leased(l) => l.worker_id().to_string(),
        },
        None => "none".into(),
    };
    let store = service
        .segments
        .as_ref()
        .map_or("none", |s| s.store.inner.describe());
    let scheme = match config.tls.as_ref().map(|t| t.client_ca.is_some()) {
        None => "http",
        Some(false) => "https",
        Some(true) => "https (mutual TLS)",
    };
    log(
        "info",
        "listening",
        &[
            ("address", &address),
            ("scheme", scheme),
            ("grpc", if one_port { "same port" } else { "" }),
            ("store", store),
            ("worker", &worker),
        ],
    );
    if let Some(l) = listeners.get(1) {
        let addr = l.tcp.local_addr().map_err(|e| startup("the listener", e))?;
        log(
            "info",
            "listening (gRPC)",
            &[("address", &addr.to_string()), ("scheme", scheme)],
        );
    }
    if let Some(files) = &config.tls {
        let not_after = tls::not_after(files);
        service
            .reloads
            .cert_not_after
            .store(not_after, Ordering::Relaxed);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if not_after > 0 && not_after <= now {
            log(
                "warn",
                "the server certificate has expired; clients will refuse it",
                &[("cert", &files.cert.display().to_string())],
            );
        }
    }
    if let Some(seg) = &service.segments {
        // A first call, so /readyz tells whether the store answers before any request.
        let store = seg.store.clone();
        tokio::task::spawn_blocking(move || store.has_tag("segflake-readiness-probe"));
    }
    tokio::spawn(history::sample_every(service.clone()));
    let graceful = Arc::new(hyper_util::server::graceful::GracefulShutdown::new());
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let acceptors: Vec<_> = listeners.iter().filter_map(|l| l.tls.clone()).collect();
    let mut accepting = Vec::new();
    for listener in listeners {
        accepting.push(tokio::spawn(listen::accept(
            listener,
            service.clone(),
            graceful.clone(),
            stopped.clone(),
        )));
    }
    let reloader = reload::Reloader::new(reparse, config, acceptors, token_files);
    let drain_timeout_ms = reloader.drain_timeout_ms();
    tokio::spawn(reloader.run(service.clone(), stopped.clone()));
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    let _ = stop.send(true);
    for task in accepting {
        let _ = task.await; // the listener is closed when its task ends
    }
    service.draining.store(true, Ordering::Relaxed);
    log(
        "info",
        "draining",
        &[("timeout_ms", &drain_timeout_ms.to_string())],
    );
    let graceful = Arc::try_unwrap(graceful).unwrap_or_default();
    tokio::select! {
        _ = async { tokio::join!(graceful.shutdown(), listen::drain_plaintext()) } => {}
        _ = tokio::time::sleep(Duration::from_millis(drain_timeout_ms)) => {
            log("warn", "drain timed out; closing the remaining connections", &[]);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_route_as_before() {
        let get = |segment| Some(Endpoint::Get { segment });
        for (path, endpoint, param) in [
            ("/api/segment/get/order", get(true), "order"),
            ("//api/segment/get/order", get(true), "order"),
            ("/api/snowflake/get/a%2Fb", get(false), "a%2Fb"),
            ("/api/segment/get/", get(true), ""),
            ("/api/segment/alloc/t", Some(Endpoint::Alloc), "t"),
            ("/api/decode/123", Some(Endpoint::Decode), "123"),
            ("/metrics", Some(Endpoint::Metrics), ""),
            ("/healthz", Some(Endpoint::Healthz), ""),
            ("/readyz", Some(Endpoint::Readyz), ""),
            ("/", Some(Endpoint::StatusPage), ""),
            ("/cache", Some(Endpoint::StatusPage), ""),
            ("/tinyid/id/nextId", Some(Endpoint::Tinyid(Tinyid::Ids)), ""),
        ] {
            assert_eq!(route_of(path), endpoint.map(|e| (e, param)), "{path}");
        }
        for path in [
            "*",
            "/cache/x",
            "/tinyid/id/next",
            "/metrics/",
            "/api/segment/get/a/b",
            "/api/snowflake/alloc/t",
            "/api/decode/1/2",
            "/api",
        ] {
            assert_eq!(route_of(path), None, "{path}");
        }
    }

    #[test]
    fn leaf_paths_match_as_the_router_matches_them() {
        for path in [
            "/api/segment/get/order",
            "/api/snowflake/get/order",
            "/api/segment/get/",
            "/api/snowflake/get/",
            "/api/segment/get/a%2Fb",
            "/api/segment/get/a/b",
            "/api/segment/get/order/",
            "/api/snowflake/get/x/",
            "/api/segment/get/{x}",
            "/api/segment/get/*x",
            "/api/segment/get/:x",
            "/api/segment/get/ä",
            "/api/segment/gets/x",
            "/api/segment/get",
            "/api/segment/alloc/x",
        ] {
            let routed = router()
                .at(path)
                .ok()
                .map(|m| (*m.value, m.params.get("param").unwrap_or("")))
                .filter(|(e, _)| matches!(e, Endpoint::Get { .. }));
            assert_eq!(leaf_get(path), routed, "{path}");
        }
    }

    #[test]
    fn ids_json_writes_what_serde_json_writes() {
        for (key, ids) in [
            ("order", vec![]),
            ("order", vec![0, 1, u64::MAX]),
            ("a\"b\\c", vec![42]),
            ("ключ", vec![1865193265891057664]),
            // Runs across a carry, a gap, and up to u64::MAX.
            ("order", (9_990..10_012).chain(99_999..100_001).collect()),
            ("order", vec![u64::MAX - 2, u64::MAX - 1, u64::MAX, 0, 1]),
        ] {
            let want = format!(
                "{{\"key\":{},\"ids\":[{}]}}",
                serde_json::Value::from(key),
                ids.iter()
                    .map(|id| format!("\"{id}\""))
                    .collect::<Vec<_>>()
                    .join(",")
            );
            let body = ids_json(key, &ids).into_body();
            let bytes = match body_bytes(body) {
                Chunk::Shared(b) => b,
                Chunk::Digits { .. } => panic!("a JSON body is shared bytes"),
            };
            assert_eq!(std::str::from_utf8(&bytes).unwrap(), want, "{key} {ids:?}");
        }
    }

    fn body_bytes(mut body: Body) -> Chunk {
        use http_body_util::BodyExt;
        let frame = futures_ready(body.frame())
            .expect("a frame")
            .expect("no error");
        match frame.into_data() {
            Ok(data) => data,
            Err(_) => panic!("a data frame"),
        }
    }

    /// The output of a future that is ready when first polled.
    fn futures_ready<F: std::future::Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => panic!("not ready"),
        }
    }

    #[test]
    fn an_id_body_is_its_decimal_digits() {
        use bytes::Buf;
        let mut chunk = body_bytes(text_id(1865193265891057664).into_body());
        assert_eq!(chunk.remaining(), 19);
        assert_eq!(chunk.chunk(), b"1865193265891057664");
        chunk.advance(15);
        assert_eq!(chunk.chunk(), b"7664");
    }

    #[test]
    fn keys_and_query_values_are_percent_decoded() {
        assert_eq!(percent_decode("a%2Fb").as_deref(), Some("a/b"));
        assert_eq!(percent_decode("plain").as_deref(), Some("plain"));
        for bad in ["%ff", "%zz", "%4", "a%"] {
            assert_eq!(percent_decode(bad), None, "{bad}");
        }
        let count = |q| query_param(q, "count");
        assert_eq!(count(Some("x=1&count=5&count=6")).as_deref(), Some("5"));
        assert_eq!(count(Some("count")).as_deref(), Some(""));
        assert_eq!(count(None), None);
    }
}
