//! `segflake`: generate, decode and inspect distributed 64-bit IDs from the command line.
//!
//! `main` only dispatches on the subcommand name; each command lives in its own module
//! and shares argument parsing (`args`), error reporting (`error`), JSON output
//! (`output`), the layout options (`layout_opts`) and ID reading (`ids`).

mod args;
mod bench_cmd;
mod codec_cmd;
mod decode_cmd;
mod error;
mod ids;
mod layout_cmd;
mod layout_opts;
mod metrics;
mod next_cmd;
mod output;
mod registry;
mod registry_etcd;
mod registry_redis;
mod registry_zk;
mod segment_cmd;
mod serial_cmd;
mod serve_cmd;
mod server;
mod stores;

use args::Args;
use error::CliError;

const HELP: &str = "\
segflake: distributed 64-bit IDs (snowflake layouts) from the command line

Usage:
  segflake <command> [arguments] [--json]
  segflake <command> --help

Commands:
  next          generate IDs (a worker ID is required: --worker N)
  decode        split IDs into time, worker and sequence
  layout        describe a layout: bits, tick, epoch, lifetime, limits (--all: every preset)
  encode        write IDs as decimal, base62 or base32
  obfuscate     map IDs through a keyed, reversible permutation
  deobfuscate   undo obfuscate
  bench         measure ID generation on this machine
  segment       dense IDs from a Leaf-style segment store (--store URL --tag T)
  stats         the rows of a segment store
  serial        date-prefixed serial numbers (order numbers)
  serve         a Leaf-compatible ID service over HTTP (--listen ADDR --store URL)

Every command takes --json (one JSON object per ID or result, one per line) and --help.

Examples:
  segflake next --worker 7 --count 3
  segflake next --worker-from-hostname web-7 --format base62 --json
  segflake decode 1865193265891057664
  segflake layout sonyflake
  segflake layout uid-generator --epoch 2025-01-01 --min-lifetime-years 5
  segflake segment --store file:ids.txt --tag order --count 3
  segflake serial --utc-offset +08:00 --count 2
  segflake serve --listen 127.0.0.1:8080 --store postgres://leaf@db/leaf --worker 7
";

/// Exit codes, appended to every `--help`.
const EXIT_CODES: &str = "\
Exit status:
  0   success
  1   runtime error: the command was understood but segflake refused or failed
      (invalid or exhausted layout, worker ID out of range, unparsable ID, clock)
  2   usage error: unknown command or option, missing or repeated option, a value
      that is not a number or not one of the allowed words, no worker ID
Errors are printed to stderr as `error: <message>`; when segflake itself refused, a
second line gives its stable code, the same in every segflake binding
(`error code: WORKER_ID_OUT_OF_RANGE`); a usage error is followed by a --help hint.";

/// Prints a command's help, the shared layout options if it takes them, and the exit codes.
pub(crate) fn print_help(text: &str, layout_help: Option<&str>) {
    print!("{text}");
    if let Some(extra) = layout_help {
        println!("\n{extra}");
    }
    println!("\n{EXIT_CODES}");
}

fn run(argv: Vec<String>) -> Result<(), CliError> {
    let mut words = argv.into_iter().skip(1);
    let Some(command) = words.next() else {
        print_help(HELP, None);
        return Ok(());
    };
    let rest: Vec<String> = words.collect();
    match command.as_str() {
        "next" => next_cmd::run(Args::new("next", rest)),
        "decode" => decode_cmd::run(Args::new("decode", rest)),
        "layout" => layout_cmd::run(Args::new("layout", rest)),
        "encode" => codec_cmd::encode(Args::new("encode", rest)),
        "obfuscate" => codec_cmd::obfuscate(Args::new("obfuscate", rest)),
        "deobfuscate" => codec_cmd::deobfuscate(Args::new("deobfuscate", rest)),
        "bench" => bench_cmd::run(Args::new("bench", rest)),
        "segment" => segment_cmd::run(Args::new("segment", rest)),
        "stats" => segment_cmd::stats(Args::new("stats", rest)),
        "serial" => serial_cmd::run(Args::new("serial", rest)),
        "serve" => serve_cmd::run(Args::new("serve", rest)),
        "help" | "--help" | "-h" => help_for(rest.first().map(String::as_str)),
        "--version" | "-V" => {
            println!("segflake {}", segflake::VERSION);
            Ok(())
        }
        other => Err(CliError::usage_for(
            "",
            format!(
                "unknown command {other:?}; commands: next, decode, layout, encode, obfuscate, \
                 deobfuscate, bench, segment, stats, serial, serve"
            ),
        )),
    }
}

/// `segflake help [COMMAND]`.
fn help_for(command: Option<&str>) -> Result<(), CliError> {
    match command {
        None => print_help(HELP, None),
        Some("next") => print_help(next_cmd::HELP, Some(&next_cmd::extra_help())),
        Some("decode") => print_help(decode_cmd::HELP, Some(&layout_opts::help())),
        Some("layout") => print_help(layout_cmd::HELP, Some(&layout_opts::help())),
        Some("encode") => print_help(codec_cmd::ENCODE_HELP, None),
        Some("obfuscate" | "deobfuscate") => print_help(codec_cmd::OBFUSCATE_HELP, None),
        Some("bench") => print_help(bench_cmd::HELP, None),
        Some("segment") => print_help(segment_cmd::HELP, None),
        Some("stats") => print_help(segment_cmd::STATS_HELP, None),
        Some("serial") => print_help(serial_cmd::HELP, None),
        Some("serve") => print_help(serve_cmd::HELP, Some(&serve_cmd::extra_help())),
        Some(other) => {
            return Err(CliError::usage_for(
                "",
                format!("no help for unknown command {other:?}"),
            ))
        }
    }
    Ok(())
}

fn main() {
    let code = match run(std::env::args().collect()) {
        Ok(()) => 0,
        Err(e) => error::report(&e),
    };
    std::process::exit(code);
}
