//! `segflake segment` (IDs from a segment store) and `segflake stats` (a store's rows).

use crate::args::Args;
use crate::error::CliError;
use crate::output::{JsonObject, Out};
use segflake::datetime::format_iso8601_ms;
use segflake::{FileStore, FileStoreOptions, SegmentGenerator, SegmentOptions, MAX_BATCH};

pub const HELP: &str = "\
segflake segment: dense IDs from a Leaf-style segment store

Usage:
  segflake segment --store file:PATH --tag TAG [options]

Each run takes ranges of IDs for TAG from the store (Leaf's contract: max_id moves up by
step, the caller owns [max_id - step, max_id)) and prints IDs from them. The file store
is durable and may be shared by several processes; a later run continues above every
range handed out before, so IDs never repeat across runs, crashes or processes. The rest
of the last range is skipped when the run ends (a gap, as with any Leaf client restart).

Options:
  --store file:PATH      the store: a text file, created on first use
  --tag TAG              the business tag (1..=128 bytes, no whitespace)
  --count N              how many IDs, 1..=16777216 (default 1), one per line
  --step S               IDs per range, 1..=2^63-1 (default 1000)
  --initial-max-id N     max_id of a tag the file does not have yet (default 1: the
                         first IDs are 1, 2, ...)
  --json                 one JSON object per ID: id, tag
  --help                 this help
";

pub const STATS_HELP: &str = "\
segflake stats: the rows of a segment store

Usage:
  segflake stats --store file:PATH [--json]

Prints one line per tag: the tag, max_id (the first ID the next range hands out), the
step of the last range and when it was taken.
  --json     one JSON object per tag: tag, max_id, step, updated_at, updated_ms
  --help     this help
";

fn take_store(args: &mut Args, options: FileStoreOptions) -> Result<FileStore, CliError> {
    let spec = args
        .value("--store")?
        .ok_or_else(|| args.usage("--store is required: --store file:PATH"))?;
    let Some(path) = spec.strip_prefix("file:").filter(|p| !p.is_empty()) else {
        return Err(args.usage(format!(
            "--store {spec:?} is not supported; allowed: file:PATH"
        )));
    };
    Ok(FileStore::with_options(path, options)?)
}

pub fn run(mut args: Args) -> Result<(), CliError> {
    if args.flag("--help")? {
        crate::print_help(HELP, None);
        return Ok(());
    }
    let json = args.flag("--json")?;
    let count = match args.parsed::<usize>("--count", "1..=16777216")? {
        None => 1,
        Some(n) if (1..=MAX_BATCH).contains(&n) => n,
        Some(n) => {
            return Err(args.usage(format!(
                "--count {n} is out of range; allowed 1..={MAX_BATCH}"
            )))
        }
    };
    let step = args.options::<SegmentOptions>(&["step"])?;
    let initial_max_id = args
        .parsed::<u64>("--initial-max-id", "0..=9223372036854775807")?
        .unwrap_or(1);
    let tag = args
        .value("--tag")?
        .ok_or_else(|| args.usage("--tag is required: --tag TAG"))?;
    let store = take_store(&mut args, FileStoreOptions { initial_max_id })?;
    args.finish()?;

    // A short-lived process: fetch only when a range is used up, at the given step.
    let base = SegmentOptions {
        dynamic_step: false,
        prefetch_percent: 100,
        wait_timeout_ms: 10_000,
        ..SegmentOptions::default()
    };
    let options = segflake::host::configure_onto(base, step, segflake::Dialect::CLI)?;
    let generator = SegmentGenerator::new(store, options)?;
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

pub fn stats(mut args: Args) -> Result<(), CliError> {
    if args.flag("--help")? {
        crate::print_help(STATS_HELP, None);
        return Ok(());
    }
    let json = args.flag("--json")?;
    let store = take_store(&mut args, FileStoreOptions::default())?;
    args.finish()?;
    let records = store.records()?;
    let mut out = Out::new();
    if !json && records.is_empty() {
        eprintln!("{}: no tags yet", store.path().display());
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
