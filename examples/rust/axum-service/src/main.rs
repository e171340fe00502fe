//! An axum service that hands out two kinds of 64-bit IDs:
//!
//! * `GET /segment/{tag}`: the next segment ID of `tag`, from Leaf's `leaf_alloc` table in
//!   PostgreSQL (dense, increasing per tag; the table needs a row for the tag).
//! * `GET /snowflake`: the next snowflake ID, under a worker ID leased from Redis.
//!
//! Both answer the ID as plain text (`200 text/plain`, e.g. `7281009`); errors are JSON
//! `{"code": "SEGMENTS_EXHAUSTED", "message": "…"}` with a status that says whether to
//! retry (see [`ApiError`]). `GET /healthz` answers `ok`.
//!
//! SIGTERM or Ctrl-C stops accepting connections, lets requests in flight finish, gives
//! the unused segment IDs back to PostgreSQL and releases the worker ID.
//!
//! See README.md beside this file for the configuration.

mod lag;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use segflake::{ErrorKind, Layout, LeaseOptions, Preset, SegmentOptions, SnowflakeOptions};
use segflake_backends::{RegistryOptions, StoreOptions};
use segflake_tokio::{LeasedSnowflake, SegmentGenerator};

/// How long one call to PostgreSQL may take (connect, each statement) before it counts as
/// failed. Buffered IDs keep flowing meanwhile; once they run out, callers get 503 after
/// the generator's `wait_timeout_ms` (1 s), never a hang.
const STORE_TIMEOUT_MS: u64 = 3_000;

const USAGE: &str = "\
usage: axum-service [--store URL] [--registry URL] [--listen ADDR] [--max-step N] [--current-thread]

  --store URL       segment store, Leaf's leaf_alloc table: postgres://USER[:PASSWORD]@HOST[:PORT]/DB
                    (env STORE_URL, else DATABASE_URL)
  --registry URL    worker-ID registry: redis://HOST[:PORT][/DB] (env REGISTRY_URL, else REDIS_URL)
  --listen ADDR     address to serve on (env LISTEN_ADDR, default 127.0.0.1:3000; port 0 picks one)
  --max-step N      ceiling of Leaf's dynamic step; a row's step is its floor
                    (env SEGMENT_MAX_STEP, default 1000000)
  --current-thread  run on a current-thread runtime instead of one worker thread per core";

struct Config {
    store_url: String,
    registry_url: String,
    listen: SocketAddr,
    max_step: u64,
    current_thread: bool,
    /// Measurement only (src/lag.rs): where the runtime's task lag goes at shutdown.
    lag_report: Option<String>,
}

fn config() -> Result<Config, String> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let mut store = env("STORE_URL").or_else(|| env("DATABASE_URL"));
    let mut registry = env("REGISTRY_URL").or_else(|| env("REDIS_URL"));
    let mut listen = env("LISTEN_ADDR").unwrap_or_else(|| "127.0.0.1:3000".into());
    let mut max_step = env("SEGMENT_MAX_STEP").unwrap_or_else(|| "1000000".into());
    let mut current_thread = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--store" => store = Some(value()?),
            "--registry" => registry = Some(value()?),
            "--listen" => listen = value()?,
            "--max-step" => max_step = value()?,
            "--current-thread" => current_thread = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    Ok(Config {
        store_url: store.ok_or("no store URL: --store or STORE_URL (DATABASE_URL)")?,
        registry_url: registry.ok_or("no registry URL: --registry or REGISTRY_URL (REDIS_URL)")?,
        listen: listen
            .parse()
            .map_err(|e| format!("listen address {listen:?}: {e}"))?,
        max_step: max_step
            .parse()
            .map_err(|e| format!("max step {max_step:?}: {e}"))?,
        current_thread,
        lag_report: env("LAG_REPORT_FILE"),
    })
}

fn main() -> ExitCode {
    let config = match config() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("axum-service: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut runtime = if config.current_thread {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let result = runtime
        .enable_all()
        .build()
        .map_err(Into::into)
        .and_then(|runtime| runtime.block_on(run(config)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("axum-service: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The two generators, shared by every request.
struct Ids {
    segments: SegmentGenerator,
    snowflake: LeasedSnowflake,
}

async fn run(config: Config) -> Result<(), Box<dyn std::error::Error>> {
    let lag = config.lag_report.map(lag::LagProbe::start);
    // SIGTERM or Ctrl-C from here on: during start-up it abandons the lease's start (which
    // releases a worker ID already claimed), afterwards it shuts the server down gracefully.
    let stop = shutdown_signal();

    // Segment IDs. `segflake_backends::tokio` builds async clients that run on this
    // runtime; every call has a deadline, so a silent database never hangs a request.
    let mut store_options = StoreOptions::default();
    store_options.timeout_ms = STORE_TIMEOUT_MS;
    let store = segflake_backends::tokio::store(&config.store_url, &store_options)?;
    let segment_options = SegmentOptions::default()
        .with_step(SegmentOptions::default().step.min(config.max_step))
        .with_max_step(config.max_step)
        .with_store_timeout_ms(STORE_TIMEOUT_MS);
    let segments = SegmentGenerator::new(store, segment_options)?;

    // Snowflake IDs. `start` resolves once a worker ID is held and the clock checks passed;
    // a renewal task keeps the lease (and its time mark) ahead of the IDs issued.
    let mut registry_options = RegistryOptions::default();
    registry_options.on_warning = Some(Arc::new(|w: &str| eprintln!("axum-service: {w}")));
    let registry =
        segflake_backends::tokio::registry(&config.registry_url, &registry_options).await?;
    let layout = Layout::preset(Preset::Twitter)?;
    let start = LeasedSnowflake::start(
        layout,
        SnowflakeOptions::new(0), // defaults; the worker ID comes from the lease
        LeaseOptions::default(),
        registry,
        None,
    );
    let snowflake = tokio::select! {
        started = start => started?,
        () = stop.stopped() => {
            segments.close().await;
            eprintln!("axum-service: stopped while starting");
            return Ok(());
        }
    };
    eprintln!(
        "axum-service: worker ID {} leased from {}",
        snowflake.worker_id(),
        segflake_backends::redact(&config.registry_url)
    );

    let ids = Arc::new(Ids {
        segments,
        snowflake,
    });
    let app = Router::new()
        .route("/segment/{tag}", get(segment_id))
        .route("/snowflake", get(snowflake_id))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(Arc::clone(&ids));
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    eprintln!("axum-service: listening on {}", listener.local_addr()?);
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(stop.stopped())
        .await;

    // No request is in flight any more: hand the fetched but unissued segment IDs back to
    // the table (so the next process continues without a gap), then release the worker ID
    // (so its next holder need not wait for the lease to expire).
    ids.segments.close().await;
    ids.snowflake.close().await;
    eprintln!("axum-service: segments given back, worker ID released");
    if let Some(lag) = lag {
        lag.finish().await?;
    }
    Ok(served?)
}

/// Set once SIGTERM or Ctrl-C (SIGINT) arrived.
struct Stop(tokio::sync::watch::Receiver<bool>);

impl Stop {
    /// Resolves once the signal arrived (at once if it already had).
    fn stopped(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.0.clone();
        async move {
            let _ = rx.wait_for(|stopped| *stopped).await;
        }
    }
}

/// Listens for SIGTERM and Ctrl-C from now on.
fn shutdown_signal() -> Stop {
    let (tx, rx) = tokio::sync::watch::channel(false);
    #[cfg(unix)]
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::spawn(async move {
        let ctrl_c = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        #[cfg(unix)]
        let term = async move {
            match term {
                Some(mut term) => {
                    term.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        #[cfg(not(unix))]
        let term = std::future::pending::<()>();
        tokio::select! {
            () = ctrl_c => {},
            () = term => {},
        }
        eprintln!("axum-service: shutting down");
        let _ = tx.send(true);
    });
    Stop(rx)
}

async fn segment_id(
    State(ids): State<Arc<Ids>>,
    Path(tag): Path<String>,
) -> Result<String, ApiError> {
    Ok(ids.segments.next_id(&tag).await?.to_string())
}

async fn snowflake_id(State(ids): State<Arc<Ids>>) -> Result<String, ApiError> {
    Ok(ids.snowflake.next_id().await?.to_string())
}

/// A generator's error as an HTTP answer: 503 (with `Retry-After: 1`) when the service
/// cannot serve now but will by itself (segments exhausted because the store is down or
/// slow, the lease lost, the clock stepped back, shutting down), 404 for a tag the table
/// has no row for, 400 for a malformed tag, 500 for anything else. The body carries the
/// core's error code and message, which names the cause.
struct ApiError(segflake::Error);

impl From<segflake::Error> for ApiError {
    fn from(e: segflake::Error) -> ApiError {
        ApiError(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let e = self.0;
        let status = match e.kind() {
            ErrorKind::InvalidArgument => StatusCode::BAD_REQUEST,
            ErrorKind::UnknownTag => StatusCode::NOT_FOUND,
            ErrorKind::SegmentsExhausted
            | ErrorKind::Store
            | ErrorKind::LeaseExpired
            | ErrorKind::RegistryLostData
            | ErrorKind::Registry
            | ErrorKind::ClockMovedBackwards
            | ErrorKind::ClockStalled
            | ErrorKind::Closed => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let body = Json(serde_json::json!({"code": e.code(), "message": e.to_string()}));
        if status == StatusCode::SERVICE_UNAVAILABLE {
            (status, [(header::RETRY_AFTER, "1")], body).into_response()
        } else {
            (status, body).into_response()
        }
    }
}
