//! Hand-written argument parsing shared by every subcommand.
//!
//! A command takes what it understands out of [`Args`] (`flag`, `value`, `optional_value`,
//! `positionals`) and then calls [`Args::finish`], which refuses anything left over, so an
//! unknown or misspelt option is always an error. `--name value` and `--name=value` are
//! both accepted; an option given twice is an error; `--` ends the options.

use crate::error::CliError;
use std::str::FromStr;

/// The arguments after the subcommand name.
#[derive(Debug)]
pub struct Args {
    command: &'static str,
    items: Vec<Item>,
}

#[derive(Debug)]
enum Item {
    /// `--name` or `--name=value` (the value, if given with `=`).
    Option {
        name: String,
        inline: Option<String>,
        taken: bool,
    },
    /// Any other word (also every word after `--`, and a lone `-`).
    Word { text: String, taken: bool },
}

impl Args {
    /// Splits `argv` (without the program and subcommand names) for `command`.
    pub fn new(command: &'static str, argv: impl IntoIterator<Item = String>) -> Args {
        let mut items = Vec::new();
        let mut options_ended = false;
        for arg in argv {
            let arg = if !options_ended && arg == "-h" {
                "--help".to_string()
            } else {
                arg
            };
            if !options_ended && arg == "--" {
                options_ended = true;
            } else if !options_ended && arg.starts_with("--") {
                let (name, inline) = match arg.split_once('=') {
                    Some((n, v)) => (n.to_string(), Some(v.to_string())),
                    None => (arg, None),
                };
                items.push(Item::Option {
                    name,
                    inline,
                    taken: false,
                });
            } else {
                items.push(Item::Word {
                    text: arg,
                    taken: false,
                });
            }
        }
        Args { command, items }
    }

    /// The subcommand these arguments belong to.
    pub fn command(&self) -> &'static str {
        self.command
    }

    fn find(&self, name: &str) -> Result<Option<usize>, CliError> {
        let mut found = None;
        for (i, item) in self.items.iter().enumerate() {
            if let Item::Option { name: n, taken, .. } = item {
                if n == name && !taken {
                    if found.is_some() {
                        return Err(self.usage(format!("{name} is given more than once")));
                    }
                    found = Some(i);
                }
            }
        }
        Ok(found)
    }

    /// `true` if the flag `name` (e.g. `"--json"`) is present. A flag takes no value.
    pub fn flag(&mut self, name: &str) -> Result<bool, CliError> {
        let Some(i) = self.find(name)? else {
            return Ok(false);
        };
        if let Item::Option { inline, taken, .. } = &mut self.items[i] {
            if inline.is_some() {
                return Err(CliError::usage_for(
                    self.command,
                    format!("{name} takes no value"),
                ));
            }
            *taken = true;
        }
        Ok(true)
    }

    /// The value of `--name VALUE` or `--name=VALUE`, if the option is present.
    pub fn value(&mut self, name: &str) -> Result<Option<String>, CliError> {
        let Some(i) = self.find(name)? else {
            return Ok(None);
        };
        let command = self.command;
        let inline = match &mut self.items[i] {
            Item::Option { inline, taken, .. } => {
                *taken = true;
                inline.take()
            }
            Item::Word { .. } => unreachable!("find returns options only"),
        };
        if let Some(v) = inline {
            return Ok(Some(v));
        }
        match self.items.get_mut(i + 1) {
            Some(Item::Word { text, taken }) if !*taken => {
                *taken = true;
                Ok(Some(text.clone()))
            }
            _ => Err(CliError::usage_for(
                command,
                format!("{name} needs a value"),
            )),
        }
    }

    /// The flags of the options set `T` that are present, as (flag without dashes, value
    /// read as the core's table expects), for `segflake::host::configure` with
    /// `Dialect::CLI`; `only` limits them to these option names (empty: all).
    pub fn options<T: segflake::Options>(
        &mut self,
        only: &[&str],
    ) -> Result<Vec<(String, segflake::Value)>, CliError> {
        let mut pairs = Vec::new();
        for spec in T::SPECS {
            if !spec.accepted_by(segflake::Dialect::CLI)
                || !(only.is_empty() || only.contains(&spec.name))
            {
                continue;
            }
            let key = spec.key(segflake::Spelling::Flag);
            if let Some(text) = self.value(&format!("--{key}"))? {
                pairs.push((
                    key.into_owned(),
                    segflake::Value::from_text(&spec.kind, &text),
                ));
            }
        }
        Ok(pairs)
    }

    /// Like [`value`](Args::value), but the value may be left out: `Some(None)` means the
    /// option was given without one (the next word is not taken if it looks like an option).
    pub fn optional_value(&mut self, name: &str) -> Result<Option<Option<String>>, CliError> {
        let Some(i) = self.find(name)? else {
            return Ok(None);
        };
        let inline = match &mut self.items[i] {
            Item::Option { inline, taken, .. } => {
                *taken = true;
                inline.take()
            }
            Item::Word { .. } => unreachable!("find returns options only"),
        };
        if inline.is_some() {
            return Ok(Some(inline));
        }
        match self.items.get_mut(i + 1) {
            Some(Item::Word { text, taken }) if !*taken && text != "-" => {
                *taken = true;
                Ok(Some(Some(text.clone())))
            }
            _ => Ok(Some(None)),
        }
    }

    /// The value of `name` parsed as a number (or anything `FromStr`), with an error that
    /// names the option and what is allowed.
    pub fn parsed<T: FromStr>(&mut self, name: &str, allowed: &str) -> Result<Option<T>, CliError> {
        match self.value(name)? {
            None => Ok(None),
            Some(text) => text.trim().parse::<T>().map(Some).map_err(|_| {
                self.usage(format!("{name} {text:?} is not valid; allowed: {allowed}"))
            }),
        }
    }

    /// All words not taken as option values, in order. Call after taking every option.
    pub fn positionals(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        for item in &mut self.items {
            if let Item::Word { text, taken } = item {
                if !*taken {
                    *taken = true;
                    out.push(text.clone());
                }
            }
        }
        out
    }

    /// Refuses anything not taken: unknown options and unexpected words.
    pub fn finish(self) -> Result<(), CliError> {
        for item in &self.items {
            match item {
                Item::Option {
                    name, taken: false, ..
                } => {
                    return Err(self.usage(format!("unknown option {name}")));
                }
                Item::Word { text, taken: false } => {
                    return Err(self.usage(format!("unexpected argument {text:?}")));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A usage error for this command.
    pub fn usage(&self, message: impl Into<String>) -> CliError {
        CliError::usage_for(self.command, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Args {
        Args::new("test", words.iter().map(|s| s.to_string()))
    }

    #[test]
    fn values_flags_and_positionals() {
        let mut a = args(&["123", "--worker", "7", "--json", "--count=3", "abc"]);
        assert_eq!(a.value("--worker").unwrap().as_deref(), Some("7"));
        assert!(a.flag("--json").unwrap());
        assert!(!a.flag("--help").unwrap());
        assert_eq!(a.parsed::<u64>("--count", "1..").unwrap(), Some(3));
        assert_eq!(a.positionals(), vec!["123", "abc"]);
        a.finish().unwrap();
    }

    #[test]
    fn refuses_unknown_duplicate_and_missing() {
        let a = args(&["--wrker", "7"]);
        let e = a.finish().unwrap_err().to_string();
        assert!(e.contains("unknown option --wrker"), "{e}");

        let mut a = args(&["--worker", "1", "--worker", "2"]);
        let e = a.value("--worker").unwrap_err().to_string();
        assert!(e.contains("more than once"), "{e}");

        let mut a = args(&["--worker"]);
        assert!(a.value("--worker").is_err());
        let mut a = args(&["--worker", "--json"]);
        assert!(a.value("--worker").is_err());

        let mut a = args(&["--json=1"]);
        assert!(a.flag("--json").is_err());

        let mut a = args(&["--count", "ten"]);
        let e = a
            .parsed::<u64>("--count", "1..=16777216")
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"ten\"") && e.contains("1..=16777216"), "{e}");
    }

    #[test]
    fn optional_values_and_double_dash() {
        let mut a = args(&["--worker-from-hostname", "--json"]);
        assert_eq!(
            a.optional_value("--worker-from-hostname").unwrap(),
            Some(None)
        );
        let mut a = args(&["--worker-from-hostname", "web-3"]);
        assert_eq!(
            a.optional_value("--worker-from-hostname").unwrap(),
            Some(Some("web-3".into()))
        );
        let mut a = args(&["--", "--not-an-option"]);
        assert_eq!(a.positionals(), vec!["--not-an-option"]);
        a.finish().unwrap();
    }
}
