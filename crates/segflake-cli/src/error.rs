//! Errors of the command-line tool and how they are reported.
//!
//! Every error is printed to stderr as one line, `error: <message>`, and the process
//! exits with:
//! * 2 for a usage error: the command line itself is wrong (unknown command or option,
//!   a missing or repeated option, a malformed value of a command-only flag such as
//!   `--count` or `--format`, no worker ID);
//! * 1 for a runtime error: the command was understood but segflake refused or failed
//!   (an option value the core's tables refuse — out of range, not one of the allowed
//!   words, the same refusal every binding gives —, an invalid or exhausted layout, a
//!   worker ID out of range, an ID that does not parse or does not fit the layout, the
//!   clock, an I/O error). When segflake itself refused, a second line gives the stable
//!   error code: `error code: WORKER_ID_OUT_OF_RANGE`.

/// Exit code of a usage error.
pub const EXIT_USAGE: i32 = 2;
/// Exit code of a runtime error.
pub const EXIT_RUNTIME: i32 = 1;

/// An error that ends the command.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The command line is wrong; `command` names the subcommand for the `--help` hint.
    #[error("{message}")]
    Usage {
        command: &'static str,
        message: String,
    },
    /// segflake refused: the message, and on the next line its stable code
    /// (`error code: WORKER_ID_OUT_OF_RANGE`, the same code every binding reports).
    #[error(transparent)]
    Core(#[from] segflake::Error),
    /// The command was understood but failed.
    #[error("{0}")]
    Runtime(String),
    /// The reader of our output went away (`segflake next --count 1000000 | head`):
    /// stop quietly with status 0, as other filters do.
    #[error("broken pipe")]
    BrokenPipe,
}

impl CliError {
    /// A usage error of `command` (`""` for the top level).
    pub fn usage_for(command: &'static str, message: impl Into<String>) -> CliError {
        CliError::Usage {
            command,
            message: message.into(),
        }
    }

    /// `value` if it lies in `min..=max`; else a usage error of `command` in the core's
    /// wording, `"{flag} {value} is out of range; allowed {min}..={max}"`, and `note`.
    pub fn check_range(
        command: &'static str,
        flag: &str,
        value: u64,
        (min, max): (u64, u64),
        note: &str,
    ) -> Result<u64, CliError> {
        if (min..=max).contains(&value) {
            return Ok(value);
        }
        let reason = segflake::error::out_of_range(format_args!("{flag} {value}"), min, max);
        Err(CliError::usage_for(command, reason + note))
    }

    /// A runtime error.
    pub fn runtime(message: impl Into<String>) -> CliError {
        CliError::Runtime(message.into())
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage { .. } => EXIT_USAGE,
            CliError::Core(_) | CliError::Runtime(_) => EXIT_RUNTIME,
            CliError::BrokenPipe => 0,
        }
    }

    /// The hint printed after a usage error.
    pub fn hint(&self) -> Option<String> {
        match self {
            CliError::Usage { command: "", .. } => Some("run `segflake --help` for usage".into()),
            CliError::Usage { command, .. } => {
                Some(format!("run `segflake {command} --help` for usage"))
            }
            CliError::Core(e) => Some(format!("error code: {}", e.code())),
            CliError::Runtime(_) | CliError::BrokenPipe => None,
        }
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> CliError {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return CliError::BrokenPipe;
        }
        CliError::Runtime(format!("I/O error: {e}"))
    }
}

/// Prints `error: <message>` (and a usage hint) to stderr and returns the exit code.
pub fn report(e: &CliError) -> i32 {
    if let CliError::BrokenPipe = e {
        return e.exit_code();
    }
    eprintln!("error: {e}");
    if let Some(hint) = e.hint() {
        eprintln!("{hint}");
    }
    e.exit_code()
}
