//! The service's listeners: HTTP (`--listen`), gRPC (`--grpc-listen`), or both on one
//! port (the same address for both), each in plaintext or TLS ([`tls::Acceptor`]).
//!
//! * Plaintext HTTP is HTTP/1.1 only (the fast path). Its connections are watched for
//!   progress ([`Activity`]) rather than timed per request: one that starts no request and
//!   takes no response byte for `idle_timeout` (a slow or stalled request head, an idle
//!   keep-alive, a client that stopped reading) is closed within a third more of it.
//!   The other listeners time each request head with hyper's timer, for as long.
//! * Over TLS, a listener offers HTTP/2 and HTTP/1.1 by ALPN (gRPC: HTTP/2 only).
//! * On one port, a request whose content-type is `application/grpc…` goes to gRPC, any
//!   other to the HTTP paths; in plaintext the connection's first bytes choose HTTP/1.1
//!   or HTTP/2 (prior knowledge, as gRPC clients speak it).
//! * A mutual-TLS client's [`Peer`] rides in each of its requests' extensions, where key
//!   checks read it (HTTP and gRPC alike).
//! * Every connection is watched by the graceful shutdown: on SIGTERM the listeners stop
//!   accepting and requests in flight finish.
//! * With `access_log`, each request is one JSON line on stderr: method, path (never the
//!   query, which may hold a token), status, the mutual-TLS client, microseconds.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulConnection, GracefulShutdown};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};

use super::tls::{Acceptor, Peer};
use super::{log, Service};

/// The gRPC services (the contract, health, reflection), as hyper calls them.
pub type Grpc = TowerToHyperService<tonic::service::Routes>;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// A response of either side of a shared port.
type AnyBody = UnsyncBoxBody<Bytes, BoxError>;
type Answering = Pin<Box<dyn Future<Output = Result<Response<AnyBody>, Infallible>> + Send>>;

/// What a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serves {
    Http,
    Grpc,
    Both,
}

impl Serves {
    /// The protocols a TLS listener offers by ALPN, most preferred first.
    pub fn alpn(self) -> &'static [&'static [u8]] {
        match self {
            Serves::Grpc => &[b"h2"],
            Serves::Http | Serves::Both => &[b"h2", b"http/1.1"],
        }
    }

    fn name(self) -> &'static str {
        match self {
            Serves::Http => "HTTP",
            Serves::Grpc => "gRPC",
            Serves::Both => "HTTP and gRPC",
        }
    }
}

/// One listening socket and how it serves.
pub struct Listener {
    pub tcp: TcpListener,
    pub serves: Serves,
    pub tls: Option<Arc<Acceptor>>,
    /// The gRPC services, for [`Serves::Grpc`] and [`Serves::Both`].
    pub grpc: Option<Grpc>,
    pub access_log: bool,
    /// How long a connection may make no progress (see the module documentation).
    pub idle_timeout: Duration,
}

/// The plaintext HTTP/1.1 builder: no per-request timer (the connection's [`Activity`]
/// is watched instead).
fn http1() -> hyper::server::conn::http1::Builder {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.keep_alive(true);
    http
}

/// A connection builder for `versions`: HTTP/1.1 with the header timeout, HTTP/2, or
/// whichever the client's first bytes ask for.
fn builder(h1: bool, h2: bool, header_timeout: Duration) -> auto::Builder<TokioExecutor> {
    let mut b = auto::Builder::new(TokioExecutor::new());
    b.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .keep_alive(true);
    b.http2().timer(TokioTimer::new());
    match (h1, h2) {
        (true, false) => b.http1_only(),
        (false, true) => b.http2_only(),
        _ => b,
    }
}

fn boxed<B>(response: Response<B>) -> Response<AnyBody>
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Buf,
    B::Error: Into<BoxError>,
{
    response.map(|body| {
        body.map_frame(|f| f.map_data(|mut d| d.copy_to_bytes(d.remaining())))
            .map_err(Into::into)
            .boxed_unsync()
    })
}

/// A plaintext connection's progress: requests started and response bytes written, each
/// kept by the connection's own task (plain stores, no read-modify-write).
#[derive(Default)]
struct Activity {
    requests: std::sync::atomic::AtomicU64,
    written: std::sync::atomic::AtomicU64,
}

impl Activity {
    fn bump(counter: &std::sync::atomic::AtomicU64, by: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        counter.store(counter.load(Relaxed).wrapping_add(by), Relaxed);
    }

    /// Resolves once a whole `limit` passed with no request started and no byte written
    /// (looked at every third of it, so within 4/3 `limit`), or the connection's `task`
    /// ended.
    async fn stalled(&self, limit: Duration, task: &tokio::task::AbortHandle) {
        use std::sync::atomic::Ordering::Relaxed;
        let seen = || (self.requests.load(Relaxed), self.written.load(Relaxed));
        let (mut last, mut quiet) = (seen(), 0);
        loop {
            tokio::time::sleep(limit / 3).await;
            if task.is_finished() {
                return;
            }
            let now = seen();
            quiet = if now == last { quiet + 1 } else { 0 };
            if quiet >= 3 {
                return;
            }
            last = now;
        }
    }
}

/// Whether the service drains: set once, on SIGTERM, before [`DRAIN`] is notified.
static DRAINING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// Wakes the fast path's connections when draining starts.
static DRAIN: tokio::sync::Notify = tokio::sync::Notify::const_new();
/// The fast path's connections still open, and the notice that the last one closed.
static LIVE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static ALL_CLOSED: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Tells the fast path's connections to finish (each ends after its request in flight)
/// and waits until all have closed.
pub async fn drain_plaintext() {
    use std::sync::atomic::Ordering::SeqCst;
    DRAINING.store(true, SeqCst);
    DRAIN.notify_waiters();
    loop {
        let closed = ALL_CLOSED.notified();
        tokio::pin!(closed);
        closed.as_mut().enable();
        if LIVE.load(SeqCst) == 0 {
            return;
        }
        closed.await;
    }
}

/// A fast-path connection that finishes gracefully once draining starts. The drain is
/// seen by a flag read per poll: the connection's task registers with [`DRAIN`] once,
/// then checks [`DRAINING`] (set before the notice, read after registering, so it is
/// never missed).
struct Drained<C> {
    conn: Pin<Box<C>>,
    notified: Pin<Box<tokio::sync::futures::Notified<'static>>>,
    registered: bool,
    told: bool,
}

impl<C> Drained<C> {
    fn new(conn: C) -> Drained<C> {
        LIVE.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Drained {
            conn: Box::pin(conn),
            notified: Box::pin(DRAIN.notified()),
            registered: false,
            told: false,
        }
    }
}

impl<C> Drop for Drained<C> {
    fn drop(&mut self) {
        if LIVE.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) == 1 {
            ALL_CLOSED.notify_waiters();
        }
    }
}

impl<C: GracefulConnection> Future for Drained<C> {
    type Output = Result<(), C::Error>;

    fn poll(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.get_mut();
        if !this.told {
            if !this.registered {
                let _ = this.notified.as_mut().poll(cx);
                this.registered = true;
            }
            if DRAINING.load(std::sync::atomic::Ordering::SeqCst) {
                this.conn.as_mut().graceful_shutdown();
                this.told = true;
            }
        }
        this.conn.as_mut().poll(cx)
    }
}

/// A plaintext socket that counts the bytes written into its connection's [`Activity`].
struct Watched {
    io: TokioIo<TcpStream>,
    activity: Arc<Activity>,
}

impl hyper::rt::Read for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write(cx, buf);
        if let std::task::Poll::Ready(Ok(n)) = written {
            Activity::bump(&self.activity.written, n as u64);
        }
        written
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        if let std::task::Poll::Ready(Ok(n)) = written {
            Activity::bump(&self.activity.written, n as u64);
        }
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// `answer` with its body boxed, as either side of a shared port answers.
fn answering<B>(
    answer: impl Future<Output = Result<Response<B>, Infallible>> + Send + 'static,
) -> Answering
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Buf,
    B::Error: Into<BoxError>,
{
    Box::pin(async move { answer.await.map(boxed) })
}

/// The requests of one connection, answered by the HTTP paths, gRPC, or either by
/// content-type; each carries the connection's `peer`.
#[derive(Clone)]
struct Connection {
    service: Arc<Service>,
    grpc: Option<Grpc>,
    serves: Serves,
    peer: Option<Arc<Peer>>,
    access_log: bool,
}

/// One access log line.
fn access_line(
    started: std::time::Instant,
    method: &hyper::Method,
    path: &str,
    status: u16,
    peer: Option<&Peer>,
) {
    let us = started.elapsed().as_micros().to_string();
    log(
        "info",
        "request",
        &[
            ("method", method.as_str()),
            ("path", path),
            ("status", &status.to_string()),
            ("client", peer.map_or("", Peer::name)),
            ("us", &us),
        ],
    );
}

impl hyper::service::Service<Request<Incoming>> for Connection {
    type Response = Response<AnyBody>;
    type Error = Infallible;
    type Future = Answering;

    fn call(&self, mut req: Request<Incoming>) -> Answering {
        if let Some(peer) = &self.peer {
            req.extensions_mut().insert(peer.clone());
        }
        let is_grpc = match self.serves {
            Serves::Http => false,
            Serves::Grpc => true,
            Serves::Both => req
                .headers()
                .get(hyper::header::CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc")),
        };
        let logged = self.access_log.then(|| {
            let path = req.uri().path().to_string();
            (
                std::time::Instant::now(),
                req.method().clone(),
                path,
                self.peer.clone(),
            )
        });
        let answer = match (&self.grpc, is_grpc) {
            (Some(grpc), true) => answering(hyper::service::Service::call(grpc, req)),
            _ => answering(self.service.call(req)),
        };
        match logged {
            None => answer,
            Some((started, method, path, peer)) => Box::pin(async move {
                let response = answer.await?;
                let status = response.status().as_u16();
                access_line(started, &method, &path, status, peer.as_deref());
                Ok(response)
            }),
        }
    }
}

/// Accepts on `listener` until `stop` changes, serving each connection on its own task
/// under `watcher` (the graceful shutdown).
pub async fn accept(
    listener: Listener,
    service: Arc<Service>,
    graceful: Arc<GracefulShutdown>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let Listener {
        tcp,
        serves,
        tls,
        grpc,
        access_log,
        idle_timeout,
    } = listener;
    let plain_http = http1();
    let (h1, h2) = (serves != Serves::Grpc, serves != Serves::Http);
    let plain_auto = Arc::new(builder(h1, h2, idle_timeout));
    let tls_h1 = Arc::new(builder(true, false, idle_timeout));
    let tls_h2 = Arc::new(builder(false, true, idle_timeout));
    loop {
        let stream: TcpStream = tokio::select! {
            accepted = tcp.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors and the like: wait, do not spin.
                    log("warn", "accept failed", &[("error", &e.to_string())]);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stop.changed() => break,
        };
        // No Nagle delay: a small answer goes out at once (with it, a request waits for
        // the client's delayed ACK, ~40 ms).
        let _ = stream.set_nodelay(true);
        match (&tls, serves) {
            (None, Serves::Http) if !access_log => {
                // The fast path: HTTP/1.1 straight to the service, on a task of its own
                // that a watchdog task aborts when the connection stalls.
                let activity = Arc::new(Activity::default());
                let (svc, seen) = (service.clone(), activity.clone());
                let io = Watched {
                    io: TokioIo::new(stream),
                    activity: activity.clone(),
                };
                let call = hyper::service::service_fn(move |req| {
                    Activity::bump(&seen.requests, 1);
                    svc.call(req)
                });
                let conn = Drained::new(plain_http.serve_connection(io, call));
                let task = tokio::spawn(conn).abort_handle();
                tokio::spawn(async move {
                    activity.stalled(idle_timeout, &task).await;
                    task.abort();
                });
            }
            (None, _) => {
                let watch = graceful.watcher();
                let conn = Connection {
                    service: service.clone(),
                    grpc: grpc.clone(),
                    serves,
                    peer: None,
                    access_log,
                };
                let builder = plain_auto.clone();
                tokio::spawn(async move {
                    let conn = builder.serve_connection(TokioIo::new(stream), conn);
                    let _ = watch.watch(conn.into_owned()).await;
                });
            }
            (Some(acceptor), _) => {
                let watch = graceful.watcher();
                let acceptor = acceptor.clone();
                let (service, grpc) = (service.clone(), grpc.clone());
                let (h1, h2) = (tls_h1.clone(), tls_h2.clone());
                tokio::spawn(async move {
                    let accepted = match acceptor.accept(stream).await {
                        Ok(a) => a,
                        Err(e) => {
                            log(
                                "info",
                                "TLS connection refused",
                                &[("listener", serves.name()), ("reason", &e)],
                            );
                            return;
                        }
                    };
                    let conn = Connection {
                        service,
                        grpc,
                        serves,
                        peer: accepted.peer,
                        access_log,
                    };
                    let builder = if accepted.h2 || serves == Serves::Grpc {
                        h2
                    } else {
                        h1
                    };
                    let conn = builder.serve_connection(TokioIo::new(accepted.stream), conn);
                    let _ = watch.watch(conn.into_owned()).await;
                });
            }
        }
    }
}
