//! The core's Redis rules (`segflake::redis`) for `segflake.stores` and the registries:
//! the one URL spelling (single server, Sentinel, Cluster) and the replica wait that makes a
//! write count only once replicas have it. Translation only.

use crate::errors::invalid;
use pyo3::prelude::*;
use segflake::redis::{min_replicas_to_write, RedisTarget, ReplicaWait};

/// The Redis URL `url` parsed by the core, as JSON (`RedisTarget::to_json`);
/// `InvalidArgumentError` with the core's message (what was wrong, the allowed spellings).
#[pyfunction]
pub fn _redis_target(py: Python<'_>, url: &str) -> PyResult<String> {
    RedisTarget::parse(url)
        .map(|t| t.to_json())
        .map_err(|e| invalid(py, "Redis URL", e))
}

/// `ReplicaWait::resolve`: `(replicas, timeout_ms)` of the `WAIT` that follows each write.
#[pyfunction]
pub fn _replica_wait(
    configured: Option<u64>,
    min_replicas_to_write: u64,
    connected_replicas: u64,
    timeout_ms: u64,
) -> (u64, u64) {
    let wait = ReplicaWait::resolve(
        configured,
        min_replicas_to_write,
        connected_replicas,
        timeout_ms,
    );
    (wait.replicas, wait.timeout_ms)
}

/// `ReplicaWait::check`: `None` when `acked` replicas are enough for the wait `(replicas,
/// timeout_ms)`, else the core's message for the write `what`.
#[pyfunction]
pub fn _replica_wait_check(
    replicas: u64,
    timeout_ms: u64,
    what: &str,
    acked: u64,
) -> Option<String> {
    ReplicaWait {
        replicas,
        timeout_ms,
    }
    .check(what, acked)
    .err()
}

/// The number in `CONFIG GET min-replicas-to-write`'s reply `[name, value]`, or 0.
#[pyfunction]
pub fn _min_replicas_to_write(reply: Vec<String>) -> u64 {
    min_replicas_to_write(&reply)
}
