//! `segflake`: generate, decode and inspect distributed 64-bit IDs from the command line.
//!
//! `main` parses the command line (`cli`: clap, with the core's option tables as flags)
//! and dispatches; each command lives in its own module and shares error reporting
//! (`error`), JSON output (`output`), the layout options (`layout_opts`) and ID reading
//! (`ids`). The service is `serve_cmd` (its configuration) and `server` (HTTP), with
//! `metrics`; the stores, registries and counter behind `--store`, `--registry` and
//! `--counter` come from the segflake-backends crate (`backends`).

mod backends;
mod bench_cmd;
mod bench_store;
mod cli;
mod codec_cmd;
mod decode_cmd;
mod error;
mod ids;
mod layout_cmd;
mod layout_opts;
mod metrics;
mod next_cmd;
mod output;
mod segment_cmd;
mod serial_cmd;
mod serve_cmd;
mod server;
mod status_page;

use cli::Cmd;
use error::CliError;

pub(crate) const HELP: &str = "\
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
  completions   a shell completion script (bash, zsh, fish, powershell, elvish)

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

/// A command's help: its text, the option tables it takes, and the exit codes.
pub(crate) fn full_help(text: &str, layout_help: Option<&str>) -> String {
    let mut help = text.to_string();
    if let Some(extra) = layout_help {
        help.push('\n');
        help.push_str(extra);
        help.push('\n');
    }
    help.push('\n');
    help.push_str(EXIT_CODES);
    help.push('\n');
    help
}

/// Every command's name, help text and the option tables listed after it.
pub(crate) fn helps() -> Vec<(&'static str, &'static str, Option<String>)> {
    vec![
        ("next", next_cmd::HELP, Some(next_cmd::extra_help())),
        ("decode", decode_cmd::HELP, Some(layout_opts::help())),
        ("layout", layout_cmd::HELP, Some(layout_opts::help())),
        ("encode", codec_cmd::ENCODE_HELP, None),
        ("obfuscate", codec_cmd::OBFUSCATE_HELP, None),
        ("deobfuscate", codec_cmd::OBFUSCATE_HELP, None),
        ("bench", bench_cmd::HELP, None),
        ("segment", segment_cmd::HELP, None),
        ("stats", segment_cmd::STATS_HELP, None),
        ("serial", serial_cmd::HELP, None),
        ("serve", serve_cmd::HELP, Some(serve_cmd::extra_help())),
        ("completions", COMPLETIONS_HELP, None),
    ]
}

const COMPLETIONS_HELP: &str = "\
segflake completions: a shell completion script on standard output

Usage:
  segflake completions bash|zsh|fish|powershell|elvish

Examples:
  segflake completions bash > /etc/bash_completion.d/segflake
  segflake completions zsh > \"${fpath[1]}/_segflake\"
";

fn run(argv: Vec<String>) -> Result<(), CliError> {
    use clap::FromArgMatches;
    let mut parser = cli::command();
    let matches = match parser.try_get_matches_from_mut(argv) {
        Ok(m) => m,
        Err(e) => {
            let code = e.exit_code();
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let parsed =
        cli::Cli::from_arg_matches(&matches).map_err(|e| CliError::usage_for("", e.to_string()))?;
    let Some(command) = parsed.command else {
        print!("{}", full_help(HELP, None));
        return Ok(());
    };
    match command {
        Cmd::Next(a) => next_cmd::run(a),
        Cmd::Decode(a) => decode_cmd::run(a),
        Cmd::Layout(a) => layout_cmd::run(a),
        Cmd::Encode(a) => codec_cmd::encode(a),
        Cmd::Obfuscate(a) => codec_cmd::obfuscate(a),
        Cmd::Deobfuscate(a) => codec_cmd::deobfuscate(a),
        Cmd::Bench(a) => bench_cmd::run(a),
        Cmd::Segment(a) => segment_cmd::run(a),
        Cmd::Stats(a) => segment_cmd::stats(a),
        Cmd::Serial(a) => serial_cmd::run(a),
        Cmd::Serve(a) => serve_cmd::run(*a),
        Cmd::Help { command } => help_for(command.as_deref()),
        Cmd::Completions { shell } => {
            clap_complete::generate(shell, &mut parser, "segflake", &mut std::io::stdout());
            Ok(())
        }
    }
}

/// `segflake help [COMMAND]`.
fn help_for(command: Option<&str>) -> Result<(), CliError> {
    let Some(name) = command else {
        print!("{}", full_help(HELP, None));
        return Ok(());
    };
    match helps().into_iter().find(|(n, _, _)| *n == name) {
        Some((_, text, extra)) => {
            print!("{}", full_help(text, extra.as_deref()));
            Ok(())
        }
        None => Err(CliError::usage_for(
            "",
            format!("no help for unknown command {name:?}"),
        )),
    }
}

fn main() {
    let code = match run(std::env::args().collect()) {
        Ok(()) => 0,
        Err(e) => error::report(&e),
    };
    std::process::exit(code);
}
