//! `segflake serve`: the command line and the TOML file that configure the ID service
//! (`server.rs`). A flag wins over the same key in the file; every option table of the
//! core (layout, snowflake, segment, lease) is read through the core's tables, so names,
//! ranges and defaults are those of every binding.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use segflake::host::{self, Options, Value};
use segflake::{
    Dialect, LayoutSpec, LeaseOptions, SegmentOptions, SnowflakeConfig, SnowflakeOptions, Spelling,
    MAX_BATCH,
};
use serde::Deserialize;

use crate::cli::ServeArgs;
use crate::error::CliError;
use crate::layout_opts;
use crate::server::tls::{ClientAuth, TlsFiles};

pub const HELP: &str = "\
segflake serve: a Leaf-compatible ID service over HTTP

Usage:
  segflake serve --listen ADDR --store URL [--worker N | --worker-from-env NAME |
                 --registry URL] [--config FILE]

Serves segment IDs from a store and snowflake IDs from a worker ID (given, or leased from
a registry). Leaf clients switch by changing the host: the paths and plain-text bodies
are Leaf's.

Endpoints:
  GET  /api/segment/get/KEY           the next segment ID of KEY (a leaf_alloc biz_tag),
                                      as text; ?count=N: {\"key\",\"ids\":[\"1\",\"2\",...]}
  GET  /api/snowflake/get/KEY         the next snowflake ID, as text; ?count=N as above
  POST /api/segment/alloc/KEY?step=N  a whole segment for a client's own generator:
                                      {\"key\",\"maxId\":\"3001\",\"step\":1000,
                                      \"tagStep\":1000}; the client owns [maxId - step,
                                      maxId) (the HttpStore of the Node, WebAssembly and
                                      Python packages); without ?step, the row's step;
                                      tagStep is the row's step (SQL stores)
  GET  /api/decode/ID                 {\"id\",\"time\",\"timestamp_ms\",\"worker\",\"sequence\"}
                                      under the server's layout
  GET  /metrics                       Prometheus text: IDs per key, refill latency, runway,
                                      store errors, lease state, requests
  GET  /healthz                       200 while the process runs
  GET  /readyz                        200 when it can serve: not draining, the store's last
                                      call succeeded, the lease (if any) is held; else 503
IDs in JSON are decimal strings (64-bit integers do not survive JavaScript's JSON.parse).
Errors are JSON, {\"code\",\"message\"}, with the status: 400 a bad request (count, step,
key, ID), 401 no bearer token / 403 a wrong one, 404 an unknown key (UNKNOWN_TAG) or path,
405 a wrong method, 503 the store or the lease cannot serve now (the message names the
cause; IDs buffered before an outage keep flowing until they run out).
SIGTERM or SIGINT: stop accepting, finish requests in flight (at most
--drain-timeout-ms), release the worker lease, exit 0.
SIGHUP, or a change of the config file, a certificate, key or CA file, or a token file:
reload keys, tokens, clients, max_count, max_alloc_step and the certificates. Connections
in flight keep going; keys added are served at once; keys removed are refused and their
unissued segment IDs given back. A config that does not load is refused whole (logged,
segflake_reloads_total{result=\"refused\"}, segflake_reload_error_info, the status page)
and the old one keeps serving. Other settings (addresses, store, worker, layout, options,
idle_timeout_ms, access_log, status_sample_ms) need a restart: a reload that changes them
says so in the log and keeps them.

Options:
  --listen ADDR              where to listen (default 127.0.0.1:8080)
  --grpc-listen ADDR         also serve gRPC (proto/segflake/v1/segflake.proto, with
                             grpc.health.v1 and reflection, v1 and v1alpha) on this
                             address; the --listen address itself: HTTP and gRPC on one
                             port (gRPC told by content-type: application/grpc)
  --tls-cert FILE            TLS on every listener: the certificate chain (PEM); HTTP/2
                             by ALPN beside HTTP/1.1; TLS 1.2 and 1.3 only
  --tls-key FILE             its private key (PEM: PKCS#8, PKCS#1 or SEC1)
  --tls-client-ca FILE       mutual TLS: clients present a certificate this CA (PEM)
                             signed; keys may then list the `clients` allowed
  --tls-client-auth MODE     with --tls-client-ca: required (default; a client without a
                             certificate fails the handshake) or optional (it may
                             connect; keys that list clients refuse it)
  --store URL                the segment store: file:PATH, postgres://USER[:PASSWORD]@HOST
                             [:PORT]/DB (or postgresql://, as libpq takes them),
                             mysql://USER[:PASSWORD]@HOST[:PORT]/DB (Leaf's leaf_alloc),
                             redis[s]://[[USER]:PASSWORD@]HOST[:PORT][/DB] (TLS
                             settings as `segflake next --help` says)
  --worker N                 the snowflake worker ID
  --worker-from-env NAME     the worker ID in environment variable NAME (decimal), such
                             as POD_INDEX from Kubernetes' pod-index label through the
                             downward API (deploy/kubernetes/statefulset.yaml)
  --registry URL             lease the worker ID instead (redis://, postgres://, mysql://,
                             zk://, etcd://, as `segflake next --registry`)
  --identity IP:PORT         Leaf's node identity in a zk:// registry
  --config FILE              a TOML file with any of these keys (below)
  --max-count N              the largest ?count (1..=16777216, default 10000)
  --max-alloc-step N         the largest ?step of /alloc (1..=9223372036854775807,
                             default 1000000)
  --drain-timeout-ms N       how long SIGTERM waits for requests in flight (default 10000)
  --idle-timeout-ms N        close a connection that starts no request and takes no
                             response byte for this long: idle keep-alive, a request
                             head sent too slowly, a client that stopped reading
                             (1000..=3600000, default 30000)
  --access-log               one JSON line a request on stderr: method, path (no query),
                             status, mutual-TLS client, microseconds
  --status-sample-ms N       how often the status page's charts sample the figures of
                             /metrics; they show the last 90 samples (100..=60000,
                             default 10000: 15 minutes)
  --ignore-row-step          SQL stores: ranges use the segment step, not the row's step
                             column (by default a tag's first range uses its row's step,
                             which is also the floor of the dynamic step, as in Leaf)
  --create-missing-tags STEP create a key that has no row (max_id 1, this step) on first
                             use; by default an unknown key is 404 UNKNOWN_TAG
  --help                     this help
At least one of --store and --worker/--worker-from-env/--registry is required. Segment options (--step,
--max-step, --wait-timeout-ms, ...), layout options (--layout, --epoch, ...), snowflake
options (--max-drift-ms, --sequence-start) and lease options are listed below.

Configuration file (TOML; every key optional, flags win):
  listen = \"0.0.0.0:8080\"
  grpc_listen = \"0.0.0.0:9090\"
  store = \"postgres://leaf:secret@db/leaf\"
  worker = 7                      # or: registry = \"zk://zk1:2181/snowflake/leaf\"
                                  # or: worker_from_env = \"POD_INDEX\"
  identity = \"10.0.0.7:8080\"
  max_count = 10000
  max_alloc_step = 1000000
  drain_timeout_ms = 10000
  idle_timeout_ms = 30000
  access_log = false
  status_sample_ms = 10000
  ignore_row_step = false
  create_missing_tags = 1000      # omit to answer 404 UNKNOWN_TAG for a missing key
  [segment]                       # segment options, snake_case: step, max_step,
  step = 1000                     # dynamic_step, prefetch_percent, wait_timeout_ms, ...
  [layout]                        # layout options: preset, epoch, time_bits, ...
  preset = \"twitter\"
  [snowflake]                     # max_drift_ms, sequence_start
  [lease]                         # lease options: lease_ms, claim_wait_ms, ...
  [tls]                           # as the --tls-* flags
  cert = \"/etc/segflake/tls/tls.crt\"
  key = \"/etc/segflake/tls/tls.key\"
  client_ca = \"/etc/segflake/tls/ca.crt\"
  client_auth = \"required\"
  [keys.order]                    # with [keys], only the keys listed are served
  tokens = [\"sha256:9f86d0...\"]   # (\"*\" matches any key); requests for a key with
  clients = [\"order-svc\"]         # tokens need `Authorization: Bearer TOKEN`; with
  [keys.\"*\"]                      # clients, a client certificate naming one of them
  tokens = []                     # (CN or DNS/URI subjectAltName); both: both. None: open
A token is given as itself, as sha256:HEX (its SHA-256, `printf %s TOKEN | sha256sum`;
only the digest is then stored), as env:NAME (a variable's value) or as file:PATH (one
token or sha256:HEX a line; # comments). Tokens are held and compared as SHA-256 digests,
in constant time, and never shown.
";

/// The extra help: the option tables the service reads.
pub fn extra_help() -> String {
    [
        layout_opts::table_help::<SegmentOptions>("Segment options:"),
        layout_opts::help(),
        layout_opts::table_help::<LeaseOptions>("Lease options (with --registry):"),
    ]
    .join("\n\n")
}

/// The snowflake options the service takes besides the layout.
const SNOWFLAKE_KEYS: &[&str] = &["max_drift_ms", "sequence_start"];

/// Everything the service needs, checked.
#[derive(Debug)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub grpc_listen: Option<SocketAddr>,
    pub store: Option<String>,
    pub worker: Option<u64>,
    pub registry: Option<String>,
    pub identity: Option<String>,
    pub max_count: usize,
    pub max_alloc_step: u64,
    pub drain_timeout_ms: u64,
    pub access_log: bool,
    pub idle_timeout_ms: u64,
    /// Milliseconds between two samples of the status page's charts.
    pub status_sample_ms: u64,
    pub segment: SegmentOptions,
    pub layout: LayoutSpec,
    pub snowflake: SnowflakeOptions,
    pub lease: LeaseOptions,
    /// `None`: every key is served without a token.
    pub keys: Option<BTreeMap<String, KeyConfig>>,
    /// TLS on every listener.
    pub tls: Option<TlsFiles>,
    /// The config file (watched for changes).
    pub config_path: Option<PathBuf>,
    pub store_settings: crate::backends::StoreSettings,
}

impl ServeConfig {
    /// The settings a reload cannot change (they need a restart) that differ in `new`.
    pub fn needs_restart(&self, new: &ServeConfig) -> Vec<&'static str> {
        fn differs(a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug) -> bool {
            format!("{a:?}") != format!("{b:?}")
        }
        let (a, b) = (self, new);
        [
            ("listen", differs(&a.listen, &b.listen)),
            ("grpc_listen", differs(&a.grpc_listen, &b.grpc_listen)),
            ("store", differs(&a.store, &b.store)),
            ("worker", differs(&a.worker, &b.worker)),
            ("registry", differs(&a.registry, &b.registry)),
            ("identity", differs(&a.identity, &b.identity)),
            ("drain_timeout_ms", a.drain_timeout_ms != b.drain_timeout_ms),
            ("access_log", a.access_log != b.access_log),
            ("idle_timeout_ms", a.idle_timeout_ms != b.idle_timeout_ms),
            ("status_sample_ms", a.status_sample_ms != b.status_sample_ms),
            ("segment", differs(&a.segment, &b.segment)),
            ("layout", differs(&a.layout, &b.layout)),
            ("snowflake", differs(&a.snowflake, &b.snowflake)),
            ("lease", differs(&a.lease, &b.lease)),
            (
                "store options",
                differs(&a.store_settings, &b.store_settings),
            ),
            ("tls (on or off)", a.tls.is_some() != b.tls.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, changed)| changed.then_some(name))
        .collect()
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<String>,
    grpc_listen: Option<String>,
    store: Option<String>,
    worker: Option<u64>,
    worker_from_env: Option<String>,
    registry: Option<String>,
    identity: Option<String>,
    max_count: Option<usize>,
    max_alloc_step: Option<u64>,
    drain_timeout_ms: Option<u64>,
    access_log: Option<bool>,
    idle_timeout_ms: Option<u64>,
    status_sample_ms: Option<u64>,
    ignore_row_step: Option<bool>,
    create_missing_tags: Option<u64>,
    #[serde(default)]
    segment: toml::Table,
    #[serde(default)]
    layout: toml::Table,
    #[serde(default)]
    snowflake: toml::Table,
    #[serde(default)]
    lease: toml::Table,
    tls: Option<TlsConfig>,
    keys: Option<BTreeMap<String, KeyConfig>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsConfig {
    cert: Option<String>,
    key: Option<String>,
    client_ca: Option<String>,
    client_auth: Option<String>,
}

/// One key of `[keys]`: its tokens (as written: a token, `sha256:`, `env:` or `file:`)
/// and the client identities allowed.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyConfig {
    #[serde(default)]
    pub tokens: Vec<String>,
    #[serde(default)]
    pub clients: Vec<String>,
}

fn toml_value(v: &toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::Str(s.clone()),
        toml::Value::Integer(i) => Value::Int((*i).into()),
        toml::Value::Float(f) => Value::from_f64(*f),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::Str(d.to_string()),
        toml::Value::Array(items) => Value::List(items.iter().map(toml_value).collect()),
        toml::Value::Table(t) => {
            Value::Map(t.iter().map(|(k, v)| (k.clone(), toml_value(v))).collect())
        }
    }
}

/// One option table from the file's section and the command line, in snake case: the
/// file's keys first, then the flags (so a flag wins).
fn merged<T: Options>(
    section: &str,
    file: &toml::Table,
    flags: Vec<(String, Value)>,
    only: &[&str],
) -> Result<Vec<(String, Value)>, CliError> {
    let mut pairs: Vec<(String, Value)> = Vec::new();
    for (key, value) in file {
        if !only.is_empty() && !only.contains(&key.as_str()) {
            return Err(CliError::runtime(format!(
                "config [{section}]: unknown key {key:?}; allowed: {}",
                only.join(", ")
            )));
        }
        pairs.push((key.clone(), toml_value(value)));
    }
    for (flag, value) in flags {
        let spec = T::SPECS
            .iter()
            .find(|s| s.key(Spelling::Flag) == flag)
            .expect("cli::Table returns the table's flags");
        let snake = spec.key(Spelling::Snake).into_owned();
        pairs.retain(|(k, _)| *k != snake);
        pairs.push((snake, value));
    }
    Ok(pairs)
}

/// The config file, its relative file paths (`[tls]`'s files, `file:` tokens) taken
/// from its own directory, as they are wherever the service is started.
fn read_file(path: &str) -> Result<FileConfig, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::runtime(format!("cannot read --config {path:?}: {e}")))?;
    let mut file: FileConfig =
        toml::from_str(&text).map_err(|e| CliError::runtime(format!("--config {path:?}: {e}")))?;
    let dir = Path::new(path).parent().unwrap_or(Path::new(""));
    let from_dir = |p: &mut String| {
        if Path::new(p.as_str()).is_relative() {
            *p = dir.join(p.as_str()).display().to_string();
        }
    };
    if let Some(tls) = &mut file.tls {
        [&mut tls.cert, &mut tls.key, &mut tls.client_ca]
            .into_iter()
            .flatten()
            .for_each(from_dir);
    }
    for key in file.keys.iter_mut().flat_map(|keys| keys.values_mut()) {
        for token in &mut key.tokens {
            *token = crate::server::entry_from_dir(token, dir);
        }
    }
    Ok(file)
}

/// Reads the flags and the file into a [`ServeConfig`].
pub fn parse(args: ServeArgs) -> Result<ServeConfig, CliError> {
    let ServeArgs {
        config,
        listen,
        grpc_listen,
        store,
        worker,
        worker_from_env,
        registry,
        identity,
        max_count,
        max_alloc_step,
        drain_timeout_ms,
        tls_cert,
        tls_key,
        tls_client_ca,
        tls_client_auth,
        access_log,
        idle_timeout_ms,
        status_sample_ms,
        mut store_flags,
        ..
    } = args;
    let (segment_flags, layout_flags) = (args.segment.pairs, args.layout.pairs);
    let (snowflake_flags, lease_flags) = (args.snowflake.pairs, args.lease.pairs);
    let file = match &config {
        Some(path) => read_file(path)?,
        None => FileConfig::default(),
    };
    let usage = |m: String| CliError::usage_for("serve", m);

    let listen = listen
        .or(file.listen)
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    let listen: SocketAddr = listen.parse().map_err(|_| {
        usage(format!(
            "--listen {listen:?} is not an address; allowed: IP:PORT"
        ))
    })?;
    let grpc_listen = match grpc_listen.or(file.grpc_listen) {
        None => None,
        Some(text) => Some(text.parse::<SocketAddr>().map_err(|_| {
            usage(format!(
                "--grpc-listen {text:?} is not an address; allowed: IP:PORT"
            ))
        })?),
    };
    if listen.port() == 0 && grpc_listen == Some(listen) {
        return Err(usage(format!(
            "--grpc-listen {listen}: port 0 picks a port per listener; for HTTP and gRPC on one port give that port"
        )));
    }
    let tls_file = file.tls.unwrap_or_default();
    let tls = match (tls_cert.or(tls_file.cert), tls_key.or(tls_file.key)) {
        (Some(cert), Some(key)) => {
            let auth = tls_client_auth.or(tls_file.client_auth);
            let client_auth = match auth.as_deref() {
                None => ClientAuth::default(),
                Some(mode) => ClientAuth::parse(mode).ok_or_else(|| {
                    usage(format!(
                        "--tls-client-auth {mode:?}; allowed: {}",
                        ClientAuth::NAMES
                    ))
                })?,
            };
            let client_ca = tls_client_ca.or(tls_file.client_ca);
            if auth.is_some() && client_ca.is_none() {
                return Err(usage(
                    "--tls-client-auth needs --tls-client-ca (the CA client certificates are checked against)".into(),
                ));
            }
            Some(TlsFiles {
                cert: cert.into(),
                key: key.into(),
                client_ca: client_ca.map(PathBuf::from),
                client_auth,
            })
        }
        (None, None) => {
            if tls_client_ca.is_some() || tls_file.client_ca.is_some() {
                return Err(usage(
                    "--tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS first)"
                        .into(),
                ));
            }
            None
        }
        (Some(_), None) => {
            return Err(usage("--tls-cert needs --tls-key (its private key)".into()))
        }
        (None, Some(_)) => {
            return Err(usage(
                "--tls-key needs --tls-cert (its certificate chain)".into(),
            ))
        }
    };
    let range = |name, value, bounds| CliError::check_range("serve", name, value, bounds, "");
    let max_count = max_count.or(file.max_count).unwrap_or(10_000);
    let max_count = range("max_count", max_count as u64, (1, MAX_BATCH as u64))? as usize;
    let max_alloc_step = max_alloc_step.or(file.max_alloc_step).unwrap_or(1_000_000);
    range(
        "max_alloc_step",
        max_alloc_step,
        (1, segflake::segment::MAX_ID),
    )?;
    let drain_timeout_ms = drain_timeout_ms.or(file.drain_timeout_ms).unwrap_or(10_000);
    range("drain_timeout_ms", drain_timeout_ms, (0, 3_600_000))?;
    let idle_timeout_ms = idle_timeout_ms.or(file.idle_timeout_ms).unwrap_or(30_000);
    range("idle_timeout_ms", idle_timeout_ms, (1000, 3_600_000))?;
    let status_sample_ms = status_sample_ms.or(file.status_sample_ms).unwrap_or(10_000);
    range("status_sample_ms", status_sample_ms, (100, 60_000))?;

    store_flags.ignore_row_step |= file.ignore_row_step.unwrap_or(false);
    store_flags.create_missing_tags = store_flags.create_missing_tags.or(file.create_missing_tags);
    let segment_pairs = merged::<SegmentOptions>("segment", &file.segment, segment_flags, &[])?;
    // A long-running service refills in the background, like a Leaf server.
    let segment = host::configure_onto(SegmentOptions::default(), segment_pairs, Dialect::NATIVE)?;
    // A service keeps Leaf's rule: the row's step even where [segment] step is set.
    let store_settings =
        crate::segment_cmd::store_settings("serve", &store_flags, segment.step, false)?;
    let layout: LayoutSpec = host::configure(
        merged::<LayoutSpec>("layout", &file.layout, layout_flags, &[])?,
        Dialect::NATIVE,
    )?;
    let snowflake_pairs = merged::<SnowflakeConfig>(
        "snowflake",
        &file.snowflake,
        snowflake_flags,
        SNOWFLAKE_KEYS,
    )?;
    let base = SnowflakeConfig {
        layout,
        options: SnowflakeOptions::new(0),
        datacenter_id: None,
    };
    let snowflake = host::configure_onto(base, snowflake_pairs, Dialect::NATIVE)?.options;
    let lease: LeaseOptions = host::configure(
        merged::<LeaseOptions>("lease", &file.lease, lease_flags, &[])?,
        Dialect::NATIVE,
    )?;

    let store = store.or(file.store);
    // The command line's worker settings replace the file's as a whole.
    let (worker, worker_from_env, registry) = match (worker, worker_from_env, registry) {
        (None, None, None) => (file.worker, file.worker_from_env, file.registry),
        given => given,
    };
    if worker.is_some() && worker_from_env.is_some() {
        return Err(usage(
            "give the worker ID one way only: worker or worker_from_env".into(),
        ));
    }
    let worker = match worker_from_env {
        Some(name) => Some(crate::next_cmd::worker_id_from_env(
            "serve",
            &name,
            layout.worker_bits,
        )?),
        None => worker,
    };
    if worker.is_some() && registry.is_some() {
        return Err(usage(
            "give either a worker ID or a registry (which leases one), not both".into(),
        ));
    }
    if store.is_none() && worker.is_none() && registry.is_none() {
        return Err(usage(
            "nothing to serve: give --store URL (segment IDs) and/or --worker N, \
             --worker-from-env NAME or --registry URL (snowflake IDs)"
                .into(),
        ));
    }
    let keys = file.keys;
    if let Some(keys) = &keys {
        for key in keys.keys() {
            if key != "*" {
                segflake::segment::check_tag(key)
                    .map_err(|e| CliError::runtime(format!("config [keys.{key:?}]: {e}")))?;
            }
        }
        // Tokens (their files and variables) and clients are read and checked here too.
        crate::server::Access::load(Some(keys)).map_err(CliError::runtime)?;
    }
    Ok(ServeConfig {
        listen,
        grpc_listen,
        store,
        worker,
        registry,
        identity: identity.or(file.identity),
        max_count,
        max_alloc_step,
        drain_timeout_ms,
        access_log: access_log || file.access_log.unwrap_or(false),
        idle_timeout_ms,
        status_sample_ms,
        segment,
        layout,
        snowflake,
        lease,
        keys,
        tls,
        config_path: config.map(PathBuf::from),
        store_settings,
    })
}

pub fn run(args: ServeArgs) -> Result<(), CliError> {
    let config = parse(args.clone())?;
    // A reload reads the same flags and the file again.
    crate::server::run(config, Box::new(move || parse(args.clone())))
}
