//! `segflake segment` (IDs from a segment store) and `segflake stats` (a store's rows).

use crate::backends::{self as stores, StoreSettings, TagStore};
use crate::cli::{SegmentArgs, StatsArgs, StoreFlags};
use crate::error::CliError;
use crate::output::{JsonObject, Out};
use segflake::datetime::format_iso8601_ms;
use segflake::{Allocation, SegmentGenerator, SegmentOptions, SegmentStore, StoreFailure};

/// How long a store may take to connect or answer.
const STORE_TIMEOUT_MS: u64 = 10_000;

pub const HELP: &str = "\
segflake segment: dense IDs from a Leaf-style segment store

Usage:
  segflake segment --store URL --tag TAG [options]

Each run takes ranges of IDs for TAG from the store (Leaf's contract: max_id moves up by
step, the caller owns [max_id - step, max_id)) and prints IDs from them. Every store is
durable and may be shared by several processes (and by Leaf, and segflake's Python and
Node adapters, on the same table); a later run continues above every range handed out
before, so IDs never repeat across runs, crashes or processes. The rest of the last
range is skipped when the run ends (a gap, as with any Leaf client restart).

Options:
  --store URL            the store:
                           file:PATH   a text file, created on first use; new tags
                                       start at --initial-max-id
                           postgres://USER[:PASSWORD]@HOST[:PORT]/DB (or postgresql://,
                           any URL libpq takes), mysql://USER[:PASSWORD]@HOST[:PORT]/DB
                                       Leaf's leaf_alloc table; the tag's row must exist
                                       (exit 1, UNKNOWN_TAG) unless --create-missing-tags
                           redis[s]://[[USER]:PASSWORD@]HOST[:PORT][/DB] (TLS settings
                           as `segflake next --help` says)
                                       the key segflake:leaf_alloc:TAG must exist
                         --store given n times (1..=64): one database each, Tinyid's
                         multi-database mode. A database's IDs are the residue class its
                         rows state (Tinyid's delta and remainder columns in leaf_alloc;
                         on Redis the key segflake:leaf_alloc_residue = DELTA:REMAINDER),
                         whatever its place in the list; the classes must be a
                         permutation of 0..n (delta n), or allocations are refused
                         naming the store. Databases that state none: the i-th gives
                         only IDs = i (mod n). A store that fails is skipped for the next
  --tag TAG              the business tag (1..=128 bytes, no whitespace)
  --count N              how many IDs, 1..=16777216 (default 1), one per line
  --step S               IDs per range, 1..=2^63-1 (default: the tag's row step in
                         SQL stores, as Leaf; 1000 where the store keeps none)
  --ignore-row-step      SQL stores: every range has the --step size (default 1000),
                         whatever the row's step column says
  --create-missing-tags STEP
                         create a tag that has no row (max_id 1, this step) instead of
                         failing with UNKNOWN_TAG
  --initial-max-id N     file stores: max_id of a tag the file does not have yet
                         (default 1: the first IDs are 1, 2, ...)
  --give-back BOOL       on exit, give the IDs fetched but not printed back to the store
                         when nobody allocated after them, so the next run continues
                         without a gap (default true)
  --json                 one JSON object per ID: id, tag
  --help                 this help
";

pub const STATS_HELP: &str = "\
segflake stats: the rows of a segment store

Usage:
  segflake stats --store URL [--json]

Prints one line per tag: the tag, max_id (the first ID the next range hands out), the
step (of the last range for file stores, the row's step column for SQL, 0 for Redis,
which keeps none) and when the row last changed. URL as for `segflake segment`.
  --json     one JSON object per tag: tag, max_id, step, updated_at, updated_ms
  --help     this help
";

/// A store of a multi-store run that could not be opened: every allocation fails with why.
struct Unavailable(String);

impl SegmentStore for Unavailable {
    fn allocate(&self, _tag: &str, _step: u64) -> Result<Allocation, StoreFailure> {
        Err(StoreFailure::Failed(self.0.clone()))
    }
}

fn take_store(
    command: &'static str,
    url: Option<String>,
    initial_max_id: u64,
    settings: StoreSettings,
) -> Result<std::sync::Arc<dyn TagStore>, CliError> {
    let url = url.ok_or_else(|| {
        CliError::usage_for(
            command,
            format!("--store is required: --store URL ({})", stores::ALLOWED),
        )
    })?;
    stores::open_store(&url, initial_max_id, STORE_TIMEOUT_MS, settings, command)
}

/// The store settings of `--ignore-row-step` and `--create-missing-tags`; an explicit
/// step wins over the row's, like `--ignore-row-step`.
pub fn store_settings(
    command: &'static str,
    flags: &StoreFlags,
    step: u64,
    step_given: bool,
) -> Result<StoreSettings, CliError> {
    if let Some(s) = flags.create_missing_tags {
        let int = (1, i32::MAX as u64);
        let note = " (Leaf's step column is an INT)";
        CliError::check_range(command, "--create-missing-tags", s, int, note)?;
    }
    Ok(StoreSettings {
        use_row_step: !flags.ignore_row_step && !step_given,
        create_missing_step: flags.create_missing_tags,
        default_step: step,
    })
}

pub fn run(args: SegmentArgs) -> Result<(), CliError> {
    let json = args.json;
    let count = args.count.unwrap_or(1);
    let step = args.options.pairs;
    let initial_max_id = args.initial_max_id.unwrap_or(1);
    let tag = args
        .tag
        .ok_or_else(|| CliError::usage_for("segment", "--tag is required: --tag TAG"))?;
    // A short-lived process: fetch only when a range is used up, at the given step.
    let base = SegmentOptions::default()
        .with_dynamic_step(false)
        .with_prefetch_percent(100)
        .with_wait_timeout_ms(10_000);
    let step_given = !step.is_empty();
    let options = segflake::host::configure_onto(base, step, segflake::Dialect::CLI)?;
    let settings = store_settings("segment", &args.store_flags, options.step, step_given)?;
    let generator = if args.store.len() <= 1 {
        let store = take_store(
            "segment",
            args.store.into_iter().next(),
            initial_max_id,
            settings,
        )?;
        SegmentGenerator::new(store, options)?
    } else {
        // Several databases: one that cannot be opened is one that fails, and the others
        // serve; a malformed URL is still a usage error.
        let mut stores: Vec<Box<dyn SegmentStore>> = Vec::new();
        for url in args.store {
            stores.push(
                match take_store("segment", Some(url), initial_max_id, settings) {
                    Ok(store) => Box::new(store),
                    Err(e @ CliError::Usage { .. }) => return Err(e),
                    Err(e) => Box::new(Unavailable(e.to_string())),
                },
            );
        }
        SegmentGenerator::new(segflake::MultiStore::new(stores)?, options)?
    };
    let handle = generator.tag(&tag)?;
    let mut out = Out::new();
    let mut buf = vec![0u64; count.min(1 << 16)];
    let mut left = count;
    while left > 0 {
        let chunk = &mut buf[..left.min(1 << 16)];
        handle.next_ids(chunk)?;
        for &id in chunk.iter() {
            if json {
                out.json(
                    JsonObject::new()
                        .str("id", &id.to_string())
                        .str("tag", &tag),
                )?;
            } else {
                out.line(&id.to_string())?;
            }
        }
        left -= chunk.len();
    }
    out.flush()
}

pub fn stats(args: StatsArgs) -> Result<(), CliError> {
    let json = args.json;
    let store = take_store("stats", args.store, 1, StoreSettings::default())?;
    let records = store
        .records()
        .map_err(|e| CliError::runtime(format!("cannot read {}: {e}", store.describe())))?;
    let mut out = Out::new();
    if !json && records.is_empty() {
        eprintln!("{}: no tags yet", store.describe());
    }
    let width = records
        .iter()
        .map(|r| r.tag.len())
        .max()
        .unwrap_or(3)
        .max(3);
    if !json && !records.is_empty() {
        out.line(&format!(
            "{:<width$}  {:>19}  {:>8}  updated_at",
            "tag", "max_id", "step"
        ))?;
    }
    for r in records {
        let when = (r.updated_ms > 0).then(|| format_iso8601_ms(r.updated_ms));
        if json {
            let obj = JsonObject::new()
                .str("tag", &r.tag)
                .str("max_id", &r.max_id.to_string())
                .u64("step", r.step);
            let obj = match &when {
                Some(w) => obj.str("updated_at", w).u64("updated_ms", r.updated_ms),
                None => obj.null("updated_at").null("updated_ms"),
            };
            out.json(obj)?;
        } else {
            out.line(&format!(
                "{:<width$}  {:>19}  {:>8}  {}",
                r.tag,
                r.max_id,
                r.step,
                when.as_deref().unwrap_or("-")
            ))?;
        }
    }
    out.flush()
}
