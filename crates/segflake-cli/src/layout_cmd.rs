//! `segflake layout`: what a layout can do and when it runs out.

use crate::cli::LayoutArgs;
use crate::error::CliError;
use crate::layout_opts::{self, LayoutChoice};
use crate::output::{JsonObject, Out};
use segflake::datetime::format_iso8601_ms as iso;
use segflake::layout::MS_PER_YEAR;
use segflake::{Layout, Preset};

pub const HELP: &str = "\
segflake layout: describe a layout (bits, tick, epoch, lifetime, limits)

Usage:
  segflake layout [PRESET] [layout options]
  segflake layout --all

Prints the field widths and order, tick, epoch, lifetime, the date the time field runs
out, the most IDs one worker can issue per second, the worker ID range, and the date
from which IDs no longer fit a JavaScript Number (2^53). A layout that runs out of time
within --min-lifetime-years (default 10) is refused with the date it runs out:
`segflake layout uid-generator` fails (its 2016 epoch ran out on 2024-11-20) unless a
newer --epoch is given.

Options:
  --all          every preset with its default epoch; a refused preset shows its error
                 in place of its data (the command still succeeds)
  --json         one JSON object per layout
  --help         this help
";

pub fn run(args: LayoutArgs) -> Result<(), CliError> {
    let json = args.json;
    let mut out = Out::new();
    if args.all {
        if let Some((flag, _)) = args.layout.pairs.first() {
            return Err(CliError::usage_for(
                "layout",
                format!("--{flag} cannot be used with --all (--all lists every preset with its defaults; it takes no preset or layout options)"),
            ));
        }
        if let Some(preset) = &args.preset {
            return Err(CliError::usage_for(
                "layout",
                format!("unexpected argument {preset:?} with --all (--all lists every preset with its defaults; it takes no preset or layout options)"),
            ));
        }
        for (i, preset) in Preset::ALL.into_iter().enumerate() {
            let choice = LayoutChoice {
                preset,
                modified: false,
                spec: preset.spec(),
            };
            if !json && i > 0 {
                out.line("")?;
            }
            match choice.spec.build() {
                Ok(layout) => describe(&mut out, &choice, &layout, json)?,
                Err(e) => {
                    if json {
                        out.json(
                            JsonObject::new()
                                .str("layout", &choice.name())
                                .str("preset", preset.name())
                                .object(
                                    "error",
                                    JsonObject::new()
                                        .str("code", e.code())
                                        .str("message", &e.to_string()),
                                ),
                        )?;
                    } else {
                        out.line(&format!("layout             {}", choice.name()))?;
                        out.line(&format!("error              {e}"))?;
                    }
                }
            }
        }
        return out.flush();
    }
    let choice = layout_opts::from_pairs("layout", args.layout.pairs).choose(args.preset, None)?;
    let layout = choice.build()?;
    describe(&mut out, &choice, &layout, json)?;
    out.flush()
}

fn years(ms: u64) -> f64 {
    ms as f64 / MS_PER_YEAR as f64
}

fn describe(out: &mut Out, choice: &LayoutChoice, l: &Layout, json: bool) -> Result<(), CliError> {
    let js_safe = l.js_safe_until_ms();
    if json {
        let obj = JsonObject::new()
            .str("layout", &choice.name())
            .str("preset", choice.preset.name())
            .bool("modified", choice.modified)
            .u64("time_bits", u64::from(l.time_bits()))
            .u64("worker_bits", u64::from(l.worker_bits()))
            .u64("datacenter_bits", u64::from(l.datacenter_bits()))
            .u64("sequence_bits", u64::from(l.sequence_bits()))
            .u64("total_bits", u64::from(l.total_bits()))
            .str("order", l.order().name())
            .u64("tick_ms", l.tick_ms())
            .u64("epoch_ms", l.epoch_ms())
            .str("epoch", &iso(l.epoch_ms()))
            .u64("lifetime_ms", l.lifetime_ms())
            .f64(
                "lifetime_years",
                (years(l.lifetime_ms()) * 10.0).round() / 10.0,
            )
            .u64("exhausts_at_ms", l.exhausts_at_ms())
            .str("exhausts_at", &iso(l.exhausts_at_ms()))
            .u64("max_ids_per_second", l.max_ids_per_second())
            .u64("max_worker_id", l.max_worker_id())
            .u64("max_sequence", l.max_sequence())
            .u64("min_lifetime_years", u64::from(l.spec().min_lifetime_years));
        let obj = match js_safe {
            Some(ms) => obj
                .u64("js_safe_until_ms", ms)
                .str("js_safe_until", &iso(ms)),
            None => obj.null("js_safe_until_ms").null("js_safe_until"),
        };
        return out.json(obj);
    }
    let rows = [
        ("layout", choice.name()),
        (
            "bits",
            format!(
                "{} time, {} worker, {} sequence ({} of 63)",
                l.time_bits(),
                l.worker_bits(),
                l.sequence_bits(),
                l.total_bits()
            ),
        ),
        ("order", l.order().name().to_string()),
        ("tick", format!("{} ms", l.tick_ms())),
        ("epoch", format!("{} ({})", iso(l.epoch_ms()), l.epoch_ms())),
        ("lifetime", format!("{:.1} years", years(l.lifetime_ms()))),
        ("exhausts at", iso(l.exhausts_at_ms())),
        (
            "max IDs/s",
            format!("{} per worker", group_thousands(l.max_ids_per_second())),
        ),
        (
            "worker IDs",
            if l.datacenter_bits() > 0 {
                format!(
                    "datacenter 0..={} ({} bits), worker 0..={} within it",
                    l.max_datacenter_id(),
                    l.datacenter_bits(),
                    l.max_worker_in_datacenter()
                )
            } else {
                format!("0..={}", l.max_worker_id())
            },
        ),
        (
            "JS-safe until",
            match js_safe {
                Some(ms) => format!("{} (later IDs exceed 2^53)", iso(ms)),
                None => format!("always (IDs fit in {} bits)", l.total_bits()),
            },
        ),
    ];
    for (k, v) in rows {
        out.line(&format!("{k:<18} {v}"))?;
    }
    Ok(())
}

/// `4096000` → `4,096,000`.
pub fn group_thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands() {
        assert_eq!(super::group_thousands(0), "0");
        assert_eq!(super::group_thousands(999), "999");
        assert_eq!(super::group_thousands(4_096_000), "4,096,000");
        assert_eq!(super::group_thousands(1_000_000_000), "1,000,000,000");
    }
}
