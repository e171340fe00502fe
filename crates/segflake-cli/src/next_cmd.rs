//! `segflake next`: generate IDs.

use crate::cli::NextArgs;
use crate::error::CliError;
use crate::layout_opts;
use crate::output::{JsonObject, Out};
use segflake::host::configure_onto;
use segflake::{
    worker_id_from_hostname, worker_id_from_ipv4, worker_id_from_text, Dialect, Format, Layout,
    LeaseOptions, LeasedSnowflake, Options, Snowflake, SnowflakeConfig, SnowflakeOptions, Spelling,
};

pub const HELP: &str = "\
segflake next: generate snowflake IDs

Usage:
  segflake next --worker N [options]
  segflake next --worker-from-hostname [NAME] [options]
  segflake next --worker-from-ip ADDR [options]
  segflake next --worker-from-env NAME [options]
  segflake next --registry URL [--identity IP:PORT] [lease options] [options]

A worker ID is required: segflake never picks one silently, because two processes
with the same worker ID can issue the same IDs.
  --worker N                     the worker ID, 0..2^worker_bits (0..=1023 for twitter)
  --datacenter N                 with a layout that has a datacenter field (twitter-dc:
                                 5 + 5 bits, hutool's Snowflake(workerId, dataCenterId)):
                                 the datacenter, and --worker the worker within it
  --worker-from-hostname [NAME]  the ordinal of a Kubernetes StatefulSet pod name
                                 (web-7 -> 7); NAME defaults to this host's name
  --worker-from-ip ADDR          the low worker_bits bits of an IPv4 address
  --worker-from-env NAME         the decimal worker ID in environment variable NAME, such
                                 as POD_INDEX set from Kubernetes' pod-index label
                                 (metadata.labels['apps.kubernetes.io/pod-index'] through
                                 the downward API); unset or not a number is an error
  --registry URL                 lease a free worker ID from a shared registry:
                                 redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] (also
                                 redis+sentinel://HOST[:PORT][,...]/SERVICE[/DB] and
                                 redis+cluster://HOST[:PORT][,...]; ?replicas=N: the
                                 replicas a renewal must reach),
                                 postgres://USER[:PASSWORD]@HOST[:PORT]/DB,
                                 mysql://USER[:PASSWORD]@HOST[:PORT]/DB (tables created
                                 if missing), etcd://HOST:PORT[,HOST:PORT][/PREFIX] or
                                 zk://HOST:PORT[,HOST:PORT]/snowflake/LEAF_NAME (Leaf's
                                 layout: the worker ID of the --identity's node, starting
                                 above the time it last reported; the URL may add
                                 ?identity=IP:PORT&session_timeout_ms=N); no ID carries a
                                 time above the mark the registry accepted, a later holder
                                 of the worker ID starts above it, and the ID is released
                                 when the run ends. TLS: rediss://…[?ca=PATH];
                                 postgres://…?sslmode=require|verify-ca|verify-full
                                 [&sslrootcert=PATH]; mysql://…?ssl-mode=REQUIRED|
                                 VERIFY_CA|VERIFY_IDENTITY[&ssl-ca=PATH]; etcd+tls://…
                                 [?ca=PATH]; zk+tls://…[?ca=PATH] (PATH: a PEM file
                                 of the CA that signed the server's certificate)
  --identity IP:PORT             with zk://: Leaf's node identity, the address of the Leaf
                                 service this run replaces (default: this host's IPv4
                                 address and port 0)

Options:
  --count N                      how many IDs, 1..=16777216 (default 1), one per line
  --format F                     decimal (default), base62 (11 chars) or base32 (13 chars)
  --max-drift-ms N               how far the logical clock may run ahead of the wall
                                 clock, 0..=3600000 (default 2000; 0 = strict)
  --sequence-start zero|random   where the sequence starts in each tick (default zero)
  --not-before ISO|MS            a persisted high-water mark: only IDs after this time
  --json                         one JSON object per ID: id, decimal, time, timestamp_ms,
                                 worker, sequence, tick
  --help                         this help
";

enum WorkerSource {
    Explicit(u64),
    Hostname(Option<String>),
    Ip(String),
    Env(String),
}

pub fn run(args: NextArgs) -> Result<(), CliError> {
    let json = args.json;
    let choice = layout_opts::from_pairs("next", args.layout.pairs).choose(None, None)?;
    let worker = take_worker(
        args.worker,
        args.worker_from_hostname,
        args.worker_from_ip,
        args.worker_from_env,
    )?;
    let registry = args.registry;
    let identity = args.identity;
    let lease_pairs = args.lease.pairs;
    let count = args.count.unwrap_or(1);
    let format = match args.format {
        Some(name) => Format::from_name(&name)?,
        None => Format::Decimal,
    };
    let pairs = args.snowflake.pairs;
    let base = SnowflakeConfig {
        layout: choice.spec,
        options: SnowflakeOptions::new(0),
        datacenter_id: None,
    };
    let mut options = configure_onto(base, pairs, Dialect::CLI)?.options;
    if registry.is_none() {
        if let Some((flag, _)) = lease_pairs.first() {
            return Err(CliError::usage_for(
                "next",
                format!("--{flag} is a lease option: it needs --registry URL"),
            ));
        }
    }
    let layout = choice.build()?;
    if let Some(url) = registry {
        if worker.is_some() || args.datacenter.is_some() {
            return Err(CliError::usage_for(
                "next",
                "give either a worker ID or --registry (which leases one), not both; to try \
                 a worker ID first, pass --preferred-worker-id N",
            ));
        }
        let lease: LeaseOptions = segflake::configure(lease_pairs, Dialect::CLI)?;
        if let Some(p) = lease.preferred_worker_id {
            layout.check_worker(p)?;
        }
        let registry =
            crate::backends::open_registry(&url, lease.registry_timeout_ms, identity.as_deref())?;
        // The owner label names this host in the registry's audit rows.
        let leased = LeasedSnowflake::start(layout, options, lease, registry, owner_label())?;
        let result = print_ids(&leased, &layout, count, format, json);
        leased.close();
        return result;
    }
    let worker = worker.ok_or_else(|| {
        CliError::usage_for(
            "next",
            "no worker ID given: pass --worker N, --worker-from-hostname [NAME], \
             --worker-from-ip ADDR, --worker-from-env NAME or --registry URL (segflake has no default worker, so that \
             two processes never share one by accident)",
        )
    })?;
    options.worker_id = match (args.datacenter, worker) {
        (None, worker) => resolve_worker(worker, &layout)?,
        (Some(dc), WorkerSource::Explicit(w)) => layout
            .worker_field(Some(dc), w)
            .map_err(|e| segflake::host::respell(e, SnowflakeConfig::SPECS, Spelling::Flag))?,
        (Some(_), _) => {
            return Err(CliError::usage_for(
                "next",
                "--datacenter needs --worker N (the worker within that datacenter)",
            ))
        }
    };
    let generator = Snowflake::new(layout, options)?;
    print_ids(&generator, &layout, count, format, json)
}

/// The layout and lease options, after the command's own help.
pub fn extra_help() -> String {
    format!(
        "{}\n\n{}",
        layout_opts::help(),
        layout_opts::table_help::<LeaseOptions>("Lease options (with --registry):")
    )
}

/// Prints `count` IDs of `generator`, in chunks.
fn print_ids<C: segflake::Clock>(
    generator: &Snowflake<C>,
    layout: &Layout,
    count: usize,
    format: Format,
    json: bool,
) -> Result<(), CliError> {
    let mut out = Out::new();
    let mut buf = vec![0u64; count.min(1 << 16)];
    let mut left = count;
    while left > 0 {
        let chunk = &mut buf[..left.min(1 << 16)];
        generator.next_ids(chunk)?;
        for &id in chunk.iter() {
            if json {
                out.json(id_json(layout, id, format)?)?;
            } else {
                out.line(&format.encode(id))?;
            }
        }
        left -= chunk.len();
    }
    out.flush()
}

/// The JSON object describing one generated ID.
fn id_json(layout: &Layout, id: u64, format: Format) -> Result<JsonObject, CliError> {
    let d = layout.decode(id)?;
    Ok(JsonObject::new()
        .str("id", &format.encode(id))
        .str("format", format.name())
        .str("decimal", &id.to_string())
        .decoded(&d))
}

fn take_worker(
    explicit: Option<u64>,
    hostname: Option<Option<String>>,
    ip: Option<String>,
    env: Option<String>,
) -> Result<Option<WorkerSource>, CliError> {
    let given = [
        explicit.is_some(),
        hostname.is_some(),
        ip.is_some(),
        env.is_some(),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err(CliError::usage_for(
            "next",
            "give the worker ID one way only: --worker, --worker-from-hostname, --worker-from-ip \
             or --worker-from-env",
        ));
    }
    Ok(if let Some(n) = explicit {
        Some(WorkerSource::Explicit(n))
    } else if let Some(name) = hostname {
        Some(WorkerSource::Hostname(name))
    } else if let Some(addr) = ip {
        Some(WorkerSource::Ip(addr))
    } else {
        env.map(WorkerSource::Env)
    })
}

fn resolve_worker(source: WorkerSource, layout: &Layout) -> Result<u64, CliError> {
    let id = match source {
        WorkerSource::Explicit(n) => n,
        WorkerSource::Hostname(name) => {
            let name = match name {
                Some(n) => n,
                None => this_hostname()?,
            };
            worker_id_from_hostname(&name)?
        }
        WorkerSource::Ip(addr) => worker_id_from_ipv4(&addr, layout.worker_bits())?,
        WorkerSource::Env(name) => worker_id_from_env("next", &name, layout.worker_bits())?,
    };
    layout.check_worker(id)?;
    Ok(id)
}

/// The worker ID in environment variable `name` (decimal, checked against `worker_bits`
/// by the core, which words every binding's error the same way).
pub(crate) fn worker_id_from_env(
    command: &'static str,
    name: &str,
    worker_bits: u8,
) -> Result<u64, CliError> {
    if name.is_empty() || name.contains(['=', '\0']) {
        return Err(CliError::usage_for(
            command,
            format!("--worker-from-env {name:?} is not an environment variable name"),
        ));
    }
    let value = std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
    Ok(worker_id_from_text(name, value.as_deref(), worker_bits)?)
}

/// The owner label of a leased generator: this host's name when it makes a label (the
/// core adds each generator's own nonce), else the core's default.
pub(crate) fn owner_label() -> Option<String> {
    this_hostname()
        .ok()
        .filter(|h| h.len() <= segflake::lease::MAX_LABEL_BYTES && !h.contains('\0'))
}

/// This machine's host name: `$HOSTNAME`, else the kernel's.
pub(crate) fn this_hostname() -> Result<String, CliError> {
    if let Ok(h) = std::env::var("HOSTNAME") {
        if !h.trim().is_empty() {
            return Ok(h.trim().to_string());
        }
    }
    for path in ["/proc/sys/kernel/hostname", "/etc/hostname"] {
        if let Ok(h) = std::fs::read_to_string(path) {
            if !h.trim().is_empty() {
                return Ok(h.trim().to_string());
            }
        }
    }
    Err(CliError::runtime(
        "cannot read this host's name ($HOSTNAME, /proc/sys/kernel/hostname and /etc/hostname \
         are all empty or missing); pass it: --worker-from-hostname NAME",
    ))
}
