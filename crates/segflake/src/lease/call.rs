//! What the engine asks of its driver: the registry calls and the driver's next step, as
//! Rust values and as host values.

use crate::error::{quoted, Error};
use crate::host::{Spelling, Value};

/// One registry call the driver must make (see the module docs for the contract).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryCall {
    /// Claim `worker_id` for `owner` for `ttl_ms` if it is free, expired or already
    /// `owner`'s; answers its mark (0 if never used), or `null` when another owner holds it.
    Claim {
        /// The worker ID to claim.
        worker_id: u64,
        /// The owner token.
        owner: String,
        /// How long the lease lasts without a renewal.
        ttl_ms: u64,
    },
    /// If `owner` holds `worker_id`: extend the lease, raise the mark to at least `mark_ms`,
    /// record the report, and answer the stored mark; else `null`.
    Renew {
        /// The worker ID held.
        worker_id: u64,
        /// The owner token.
        owner: String,
        /// How long the lease lasts from now without another renewal.
        ttl_ms: u64,
        /// The time mark to raise the stored mark to (Unix ms).
        mark_ms: u64,
        /// This host's clock, reported for the peers check (Unix ms).
        reported_ms: u64,
    },
    /// If `owner` holds `worker_id`: set the mark to `mark_ms` and end the lease; answers
    /// whether it did.
    Release {
        /// The worker ID held.
        worker_id: u64,
        /// The owner token.
        owner: String,
        /// The mark to leave (the generator's sealed high-water mark).
        mark_ms: u64,
    },
    /// The live holders' reports: a list of `{worker_id, reported_ms, age_ms}`.
    Peers,
}

impl RegistryCall {
    /// The call named `name` with its arguments in call order (as
    /// [`args`](RegistryCall::args) lists them), for protocols driven by a host.
    pub fn from_args(name: &str, args: &[Value]) -> std::result::Result<RegistryCall, String> {
        let want = match name {
            "claim" => 3,
            "renew" => 5,
            "release" => 3,
            "peers" => 0,
            other => {
                return Err(format!(
                    "no registry call {other}; the calls are claim, renew, release and peers",
                    other = quoted(other)
                ))
            }
        };
        if args.len() != want {
            return Err(format!("{name} takes {want} arguments, not {}", args.len()));
        }
        let int = |i: usize| {
            args[i].as_u64().ok_or_else(|| {
                format!(
                    "argument {} of {name} is {}, not a non-negative integer",
                    i + 1,
                    args[i].to_json()
                )
            })
        };
        let owner = || match &args[1] {
            Value::Str(s) => Ok(s.clone()),
            other => Err(format!(
                "the owner of {name} is {}, not a string",
                other.to_json()
            )),
        };
        Ok(match name {
            "claim" => RegistryCall::Claim {
                worker_id: int(0)?,
                owner: owner()?,
                ttl_ms: int(2)?,
            },
            "renew" => RegistryCall::Renew {
                worker_id: int(0)?,
                owner: owner()?,
                ttl_ms: int(2)?,
                mark_ms: int(3)?,
                reported_ms: int(4)?,
            },
            "release" => RegistryCall::Release {
                worker_id: int(0)?,
                owner: owner()?,
                mark_ms: int(2)?,
            },
            _ => RegistryCall::Peers,
        })
    }

    /// The method name: `claim`, `renew`, `release` or `peers`.
    pub fn name(&self) -> &'static str {
        match self {
            RegistryCall::Claim { .. } => "claim",
            RegistryCall::Renew { .. } => "renew",
            RegistryCall::Release { .. } => "release",
            RegistryCall::Peers => "peers",
        }
    }

    /// The arguments in call order, named as `spelling` spells them.
    pub fn args(&self, spelling: Spelling) -> Vec<(&'static str, Value)> {
        let camel = spelling == Spelling::Camel;
        let name = |snake: &'static str, camel_name: &'static str| {
            if camel {
                camel_name
            } else {
                snake
            }
        };
        let owner_of = |o: &String| (name("owner", "owner"), Value::Str(o.clone()));
        match self {
            RegistryCall::Claim {
                worker_id,
                owner,
                ttl_ms,
            } => vec![
                (name("worker_id", "workerId"), Value::uint(*worker_id)),
                owner_of(owner),
                (name("ttl_ms", "ttlMs"), Value::uint(*ttl_ms)),
            ],
            RegistryCall::Renew {
                worker_id,
                owner,
                ttl_ms,
                mark_ms,
                reported_ms,
            } => vec![
                (name("worker_id", "workerId"), Value::uint(*worker_id)),
                owner_of(owner),
                (name("ttl_ms", "ttlMs"), Value::uint(*ttl_ms)),
                (name("mark_ms", "markMs"), Value::uint(*mark_ms)),
                (name("reported_ms", "reportedMs"), Value::uint(*reported_ms)),
            ],
            RegistryCall::Release {
                worker_id,
                owner,
                mark_ms,
            } => vec![
                (name("worker_id", "workerId"), Value::uint(*worker_id)),
                owner_of(owner),
                (name("mark_ms", "markMs"), Value::uint(*mark_ms)),
            ],
            RegistryCall::Peers => vec![],
        }
    }
}

/// What the driver does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Make this registry call and pass its answer to [`LeaseEngine::answer`](super::LeaseEngine::answer) with `id`.
    Call {
        /// The call's number, to hand back with its answer.
        id: u64,
        /// The registry call to make.
        call: RegistryCall,
    },
    /// Poll again after this many milliseconds (or sooner, after an answer or `close`).
    Sleep(u64),
    /// Start-up succeeded: build the generator for `worker_id` with `not_before_ms` and the
    /// engine's [`fence`](super::LeaseEngine::fence), then keep polling. Returned once.
    Ready {
        /// The worker ID claimed.
        worker_id: u64,
        /// The generator's `not_before_ms`: above every ID a previous holder could issue.
        not_before_ms: u64,
    },
    /// Start-up failed (any claimed worker ID is already released). Terminal.
    Failed(Error),
    /// Closed and released. Terminal.
    Closed,
}

impl Step {
    /// The step as a host value, for drivers written in the host's language:
    /// `{step: "call", id, name, args}`, `{step: "sleep", ms}`, `{step: "ready", worker_id}`,
    /// `{step: "failed", code, message}` or `{step: "closed"}`, with `worker_id` and the
    /// call's argument names as `spelling` spells them.
    pub fn to_value(&self, spelling: Spelling) -> Value {
        let text = |t: &str| Value::Str(t.to_owned());
        let mut pairs = Vec::new();
        let mut add = |k: &str, v: Value| pairs.push((k.to_owned(), v));
        match self {
            Step::Call { id, call } => {
                add("step", text("call"));
                add("id", Value::uint(*id));
                add("name", text(call.name()));
                let args = call.args(spelling).into_iter();
                add(
                    "args",
                    Value::Map(args.map(|(k, v)| (k.to_owned(), v)).collect()),
                );
            }
            Step::Sleep(ms) => {
                add("step", text("sleep"));
                add("ms", Value::uint(*ms));
            }
            Step::Ready { worker_id, .. } => {
                add("step", text("ready"));
                let key = if spelling == Spelling::Camel {
                    "workerId"
                } else {
                    "worker_id"
                };
                add(key, Value::uint(*worker_id));
            }
            Step::Failed(e) => {
                add("step", text("failed"));
                add("code", text(e.code()));
                add("message", Value::Str(e.to_string()));
            }
            Step::Closed => add("step", text("closed")),
        }
        Value::Map(pairs)
    }
}

/// The `peers` answer for the live holders' reports `(worker_id, reported_ms, age_ms)`, as
/// registries written in Rust or C build it; a negative age (the registry's clock read the
/// report before it was stored) counts as 0.
pub fn peers_answer(reports: impl IntoIterator<Item = (i128, i128, i128)>) -> Value {
    let entry = |(w, reported, age): (i128, i128, i128)| {
        Value::List(vec![
            Value::Int(w),
            Value::Int(reported),
            Value::Int(age.max(0)),
        ])
    };
    Value::List(reports.into_iter().map(entry).collect())
}
