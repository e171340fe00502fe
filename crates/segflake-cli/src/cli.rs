//! The command line, declared with clap: one struct per command for its own options, and
//! the core's option tables (layout, snowflake, segment, lease, serial) turned into flags
//! at run time by [`Table`], so their names, ranges, defaults and docs live in the core
//! only and every value is checked by the core, as in every binding.

use std::marker::PhantomData;

use clap::{Arg, ArgAction, ArgMatches, Args, FromArgMatches, Parser, Subcommand};
use segflake::{
    LayoutSpec, LeaseOptions, Options, SegmentOptions, SerialOptions, SnowflakeConfig, Spelling,
    Value, MAX_BATCH,
};

/// `segflake <command> ...`.
#[derive(Debug, Parser)]
#[command(name = "segflake", version = segflake::VERSION, disable_help_subcommand = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Cmd>,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    Next(NextArgs),
    Decode(DecodeArgs),
    Layout(LayoutArgs),
    Encode(EncodeArgs),
    Obfuscate(ObfuscateArgs),
    Deobfuscate(ObfuscateArgs),
    Bench(BenchArgs),
    Segment(SegmentArgs),
    Stats(StatsArgs),
    Serial(SerialArgs),
    Serve(Box<ServeArgs>),
    /// Help for a command: `segflake help next`.
    Help {
        command: Option<String>,
    },
    /// A shell completion script: `segflake completions bash > /etc/bash_completion.d/segflake`.
    Completions {
        shell: clap_complete::Shell,
    },
}

/// Which rows of a core option table a command takes.
pub trait TableRows {
    type T: Options;
    /// Snake-case names of the rows taken; empty: every row the command line accepts.
    const ONLY: &'static [&'static str];
}

/// The flags of a core option table: `--max-drift-ms N` and so on, as (flag without
/// dashes, value read as the table's kind expects) for `segflake::host::configure` with
/// `Dialect::CLI`.
#[derive(Debug, Clone)]
pub struct Table<R> {
    pub pairs: Vec<(String, Value)>,
    rows: PhantomData<R>,
}

fn rows<R: TableRows>() -> impl Iterator<Item = &'static segflake::host::OptionSpec> {
    R::T::SPECS.iter().filter(|s| {
        s.accepted_by(segflake::Dialect::CLI) && (R::ONLY.is_empty() || R::ONLY.contains(&s.name))
    })
}

impl<R: TableRows> FromArgMatches for Table<R> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut t = Table {
            pairs: Vec::new(),
            rows: PhantomData,
        };
        t.update_from_arg_matches(matches)?;
        Ok(t)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        for spec in rows::<R>() {
            let flag = spec.key(Spelling::Flag).into_owned();
            if let Some(text) = matches.get_one::<String>(&flag) {
                self.pairs.retain(|(k, _)| *k != flag);
                self.pairs.push((flag, Value::from_text(&spec.kind, text)));
            }
        }
        Ok(())
    }
}

impl<R: TableRows> Args for Table<R> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        rows::<R>().fold(cmd, |cmd, spec| {
            let flag = spec.key(Spelling::Flag).into_owned();
            cmd.arg(
                Arg::new(flag.clone())
                    .long(flag)
                    .value_name(crate::layout_opts::value_name(spec))
                    .action(ArgAction::Set)
                    .allow_negative_numbers(true)
                    .help(spec.doc),
            )
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

macro_rules! rows {
    ($name:ident, $table:ty, [$($only:literal),*]) => {
        #[derive(Debug, Clone)]
        pub struct $name;
        impl TableRows for $name {
            type T = $table;
            const ONLY: &'static [&'static str] = &[$($only),*];
        }
    };
}
rows!(LayoutRows, LayoutSpec, []);
rows!(
    NextSnowflakeRows,
    SnowflakeConfig,
    ["max_drift_ms", "sequence_start", "not_before_ms"]
);
rows!(
    ServeSnowflakeRows,
    SnowflakeConfig,
    ["max_drift_ms", "sequence_start"]
);
rows!(LeaseRows, LeaseOptions, []);
rows!(SegmentRows, SegmentOptions, []);
rows!(SegmentCmdRows, SegmentOptions, ["step", "give_back"]);
rows!(
    SerialRows,
    SerialOptions,
    [
        "worker_id",
        "worker_digits",
        "sequence_digits",
        "last",
        "counter_timeout_ms",
        "counter_max_behind_ms",
        "counter_max_ahead_ms"
    ]
);

/// `--count N`: 1..=MAX_BATCH.
fn count() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_BATCH as u64)
}

const OUTPUT_FORMATS: [&str; 3] = ["decimal", "base62", "base32"];
const INPUT_FORMATS: [&str; 4] = ["auto", "decimal", "base62", "base32"];

#[derive(Debug, Args)]
pub struct NextArgs {
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub worker: Option<u64>,
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub datacenter: Option<u64>,
    #[arg(long, value_name = "NAME", num_args = 0..=1)]
    pub worker_from_hostname: Option<Option<String>>,
    #[arg(long, value_name = "ADDR")]
    pub worker_from_ip: Option<String>,
    #[arg(long, value_name = "NAME")]
    pub worker_from_env: Option<String>,
    #[arg(long, value_name = "URL")]
    pub registry: Option<String>,
    #[arg(long, value_name = "IP:PORT")]
    pub identity: Option<String>,
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count())]
    pub count: Option<usize>,
    #[arg(long, value_name = "F", value_parser = OUTPUT_FORMATS)]
    pub format: Option<String>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub layout: Table<LayoutRows>,
    #[command(flatten)]
    pub snowflake: Table<NextSnowflakeRows>,
    #[command(flatten)]
    pub lease: Table<LeaseRows>,
}

#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// IDs, or - to read them from standard input.
    #[arg(value_name = "ID")]
    pub ids: Vec<String>,
    #[arg(long, value_name = "F", value_parser = INPUT_FORMATS)]
    pub format: Option<String>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub layout: Table<LayoutRows>,
}

#[derive(Debug, Args)]
pub struct LayoutArgs {
    /// A preset name (as --layout).
    #[arg(value_name = "PRESET")]
    pub preset: Option<String>,
    #[arg(long)]
    pub all: bool,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub layout: Table<LayoutRows>,
}

#[derive(Debug, Args)]
pub struct EncodeArgs {
    #[arg(value_name = "ID")]
    pub ids: Vec<String>,
    #[arg(long, value_name = "F", value_parser = OUTPUT_FORMATS)]
    pub format: Option<String>,
    #[arg(long, value_name = "F", value_parser = INPUT_FORMATS)]
    pub from: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ObfuscateArgs {
    #[arg(value_name = "ID")]
    pub ids: Vec<String>,
    #[arg(long, value_name = "HEX32")]
    pub key: Option<String>,
    #[arg(long, value_name = "F", value_parser = OUTPUT_FORMATS)]
    pub format: Option<String>,
    #[arg(long, value_name = "F", value_parser = INPUT_FORMATS)]
    pub from: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub seconds: Option<f64>,
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub threads: Option<usize>,
    #[arg(long)]
    pub json: bool,
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    #[arg(long, value_name = "N,N,...")]
    pub tags: Option<String>,
    #[arg(long, value_name = "IDS_PER_S", allow_negative_numbers = true)]
    pub rate: Option<u64>,
}

#[derive(Debug, Args)]
pub struct SegmentArgs {
    #[arg(long, value_name = "URL")]
    pub store: Vec<String>,
    #[arg(long, value_name = "TAG")]
    pub tag: Option<String>,
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count())]
    pub count: Option<usize>,
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub initial_max_id: Option<u64>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub options: Table<SegmentCmdRows>,
    #[command(flatten)]
    pub store_flags: StoreFlags,
}

/// How a database store treats a tag's row step and tags without a row.
#[derive(Debug, Clone, Args)]
pub struct StoreFlags {
    /// Leaf's leaf_alloc.step is ignored: every allocation uses the requested step.
    #[arg(long)]
    pub ignore_row_step: bool,
    /// A tag without a row is created on first use with this step (max_id 1).
    #[arg(long, value_name = "STEP", allow_negative_numbers = true)]
    pub create_missing_tags: Option<u64>,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SerialArgs {
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count())]
    pub count: Option<usize>,
    #[arg(long, value_name = "OFFSET", allow_hyphen_values = true)]
    pub utc_offset: Option<String>,
    #[arg(long)]
    pub json: bool,
    #[arg(long, value_name = "URL")]
    pub counter: Option<String>,
    #[arg(long, value_name = "PREFIX")]
    pub counter_prefix: Option<String>,
    #[command(flatten)]
    pub serial: Table<SerialRows>,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[arg(long, value_name = "FILE")]
    pub config: Option<String>,
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    #[arg(long, value_name = "ADDR")]
    pub grpc_listen: Option<String>,
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub worker: Option<u64>,
    #[arg(long, value_name = "NAME")]
    pub worker_from_env: Option<String>,
    #[arg(long, value_name = "URL")]
    pub registry: Option<String>,
    #[arg(long, value_name = "IP:PORT")]
    pub identity: Option<String>,
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_count: Option<usize>,
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_alloc_step: Option<u64>,
    #[arg(long, value_name = "MS", allow_negative_numbers = true)]
    pub drain_timeout_ms: Option<u64>,
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<String>,
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<String>,
    #[arg(long, value_name = "FILE")]
    pub tls_client_ca: Option<String>,
    #[arg(long, value_name = "MODE")]
    pub tls_client_auth: Option<String>,
    #[arg(long)]
    pub access_log: bool,
    #[arg(long, value_name = "MS", allow_negative_numbers = true)]
    pub idle_timeout_ms: Option<u64>,
    #[arg(long, value_name = "MS", allow_negative_numbers = true)]
    pub status_sample_ms: Option<u64>,
    #[command(flatten)]
    pub store_flags: StoreFlags,
    #[command(flatten)]
    pub segment: Table<SegmentRows>,
    #[command(flatten)]
    pub layout: Table<LayoutRows>,
    #[command(flatten)]
    pub snowflake: Table<ServeSnowflakeRows>,
    #[command(flatten)]
    pub lease: Table<LeaseRows>,
}

/// The parser, with each command's help text (the long form in its module, the option
/// tables, the exit codes) in place of clap's generated one.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let mut cmd = Cli::command().override_help(crate::full_help(crate::HELP, None));
    for (name, text, extra) in crate::helps() {
        cmd = cmd.mut_subcommand(name, |c| {
            c.override_help(crate::full_help(text, extra.as_deref()))
        });
    }
    cmd
}
