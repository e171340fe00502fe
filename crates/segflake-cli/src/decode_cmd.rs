//! `segflake decode`: split IDs into time, worker and sequence.

use crate::cli::DecodeArgs;
use crate::error::CliError;
use crate::ids::{input_format, inputs, parse_id};
use crate::layout_opts;
use crate::output::{JsonObject, Out};
use segflake::datetime::format_iso8601_ms;

pub const HELP: &str = "\
segflake decode: split IDs into time, worker and sequence

Usage:
  segflake decode ID... [options]
  segflake next --worker 1 --count 3 | segflake decode -

Prints, for each ID, its ISO-8601 UTC time, Unix milliseconds, worker, sequence and tick
under the chosen layout (twitter unless told otherwise). With -, IDs are read from
standard input, one per line.

Decoding accepts layouts whose time has already run out (old uid-generator IDs decode
with `--layout uid-generator`): --min-lifetime-years defaults to 0 here.

Options:
  --format F     how the IDs are written: auto (default), decimal, base62, base32.
                 auto: 11 characters -> base62, 13 -> base32, digits -> decimal
                 (11 or 13 digits not starting with 0 are ambiguous: say which)
  --json         one JSON object per ID: id, format, decimal, time, timestamp_ms,
                 worker, sequence, tick (and datacenter, on a layout with a
                 datacenter field such as twitter-dc: worker is then the worker
                 within it)
  --help         this help
";

pub fn run(args: DecodeArgs) -> Result<(), CliError> {
    let json = args.json;
    let choice = layout_opts::from_pairs("decode", args.layout.pairs).choose(None, Some(0))?;
    let format = input_format(args.format.as_deref())?;
    let texts = inputs("decode", args.ids)?;
    let layout = choice.build()?;
    let name = choice.name();
    let mut out = Out::new();
    let many = texts.len() > 1;
    for (i, text) in texts.iter().enumerate() {
        let (id, f) = parse_id("decode", text, format)?;
        let d = layout.decode(id)?;
        let time = format_iso8601_ms(d.timestamp_ms);
        if json {
            out.json(
                JsonObject::new()
                    .str("id", text)
                    .str("format", f.name())
                    .str("decimal", &id.to_string())
                    .str("layout", &name)
                    .decoded(&d),
            )?;
        } else {
            if many && i > 0 {
                out.line("")?;
            }
            out.line(&format!("id            {text} ({})", f.name()))?;
            if f.name() != "decimal" {
                out.line(&format!("decimal       {id}"))?;
            }
            out.line(&format!("layout        {name}"))?;
            out.line(&format!("time          {time}"))?;
            out.line(&format!("timestamp_ms  {}", d.timestamp_ms))?;
            if let Some(dc) = d.datacenter_id {
                out.line(&format!("datacenter    {dc}"))?;
            }
            out.line(&format!("worker        {}", d.worker_id))?;
            out.line(&format!("sequence      {}", d.sequence))?;
            out.line(&format!("tick          {}", d.tick))?;
        }
    }
    out.flush()
}
