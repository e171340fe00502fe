//! Worker-ID leases from C: a registry given as function pointers, driven by the core's
//! thread driver (`segflake::LeasedSnowflake`).

use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

use crate::error::{boundary, invalid, segflake_status, FfiResult, SEGFLAKE_OK};
use crate::options::{record, segflake_options, segflake_record};
use crate::ptr::*;
use crate::snowflake::{segflake_snowflake, HostClock};
use segflake_core::host::{Dialect, Value};
use segflake_core::lease::peers_answer;
use segflake_core::{LeasedSnowflake, Registry, RegistryCall};

/// Capacity of the message buffer the library passes to registry callbacks (including the
/// terminating NUL).
pub const SEGFLAKE_REGISTRY_ERROR_LEN: usize = 512;

/// Most live holders a `peers` callback may report.
pub const SEGFLAKE_MAX_PEERS: usize = 4096;

/// The longest owner label `segflake_snowflake_new_leased` takes, in bytes (without the NUL).
pub const SEGFLAKE_MAX_OWNER_LABEL_LEN: usize = 128;

/// The longest owner token a registry callback receives, in bytes (without the NUL): the
/// label, `#` and 16 hex digits. Registry columns and buffers must hold this many.
pub const SEGFLAKE_MAX_OWNER_TOKEN_LEN: usize = 145;

/// The mark a `claim` or `renew` callback writes when another owner holds the worker ID
/// (or its lease ran out).
pub const SEGFLAKE_MARK_NOT_HELD: i64 = -1;

/// The mark a `renew` callback writes when the registry has no record of the lease at all
/// (the worker ID's lease and mark are gone: a restart without persistence, `FLUSHALL`,
/// eviction, a failover that lost writes). The generator stops issuing at once with
/// `SEGFLAKE_REGISTRY_LOST_DATA` and claims again. (Every value below -1 means the same;
/// the core's Redis scripts and SQL statements answer -1 for it, which a callback passes
/// on as this value, and nil/no row for "not held".)
pub const SEGFLAKE_MARK_LOST: i64 = -2;

/// One live holder's clock report, as `peers` hands it back.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct segflake_peer {
    pub worker_id: u64,
    /// The holder's clock at its last renewal (Unix ms).
    pub reported_ms: u64,
    /// How long ago that renewal was, by the registry's clock.
    pub age_ms: u64,
}

/// `claim(worker_id, owner, ttl_ms)`: if the ID is free, expired, or already `owner`'s,
/// lease it to `owner` for `ttl_ms` (atomically) and write its time mark (0 if never used
/// or unknown) to `*out_mark`; if another owner holds it, write `SEGFLAKE_MARK_NOT_HELD`
/// (-1). Return `SEGFLAKE_OK`, or any other status with an optional NUL-terminated message
/// in `error_buf` (at most `error_capacity` bytes) when the registry failed.
///
/// `owner` is the generator's token, `label#<16 hex digits>` (at most
/// `SEGFLAKE_MAX_OWNER_TOKEN_LEN` bytes): the label given to
/// `segflake_snowflake_new_leased` and a nonce of the generator's own, so two generators
/// given one label never share a lease. Compare it byte for byte; keep it whole.
pub type segflake_registry_claim_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        worker_id: u64,
        owner: *const c_char,
        ttl_ms: u64,
        out_mark: *mut i64,
        error_buf: *mut c_char,
        error_capacity: usize,
    ) -> segflake_status,
>;

/// `renew(worker_id, owner, ttl_ms, mark_ms, reported_ms)`: if `owner` holds the ID, extend
/// the lease by `ttl_ms`, raise the stored mark to at least `mark_ms`, record `reported_ms`,
/// and write the stored mark to `*out_mark`; if another owner holds it (or the lease ran
/// out), write `SEGFLAKE_MARK_NOT_HELD` (-1); if the registry has no record of it at all,
/// write `SEGFLAKE_MARK_LOST` (-2). Failures as for `claim`.
pub type segflake_registry_renew_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        worker_id: u64,
        owner: *const c_char,
        ttl_ms: u64,
        mark_ms: u64,
        reported_ms: u64,
        out_mark: *mut i64,
        error_buf: *mut c_char,
        error_capacity: usize,
    ) -> segflake_status,
>;

/// `release(worker_id, owner, mark_ms)`: if `owner` holds the ID, set its mark to `mark_ms`
/// and end the lease, writing true to `*out_released`; else write false.
pub type segflake_registry_release_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        worker_id: u64,
        owner: *const c_char,
        mark_ms: u64,
        out_released: *mut bool,
        error_buf: *mut c_char,
        error_capacity: usize,
    ) -> segflake_status,
>;

/// `peers()`: the live holders' reports, at most `capacity` of them into `out`, their
/// number into `*out_count`. Needed only with `max_peer_skew_ms` > 0.
pub type segflake_registry_peers_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        out: *mut segflake_peer,
        capacity: usize,
        out_count: *mut usize,
        error_buf: *mut c_char,
        error_capacity: usize,
    ) -> segflake_status,
>;

/// A worker-ID registry given to `segflake_snowflake_new_leased`: the four calls of the
/// lease protocol over whatever the host runs (Redis, SQL, nacos, Consul...). Each call
/// must be atomic on the registry (a compare-and-set on the owner) and marks must be
/// durable. `docs/leases.md` and `examples/c/redis_registry.c` show one. The library copies
/// this struct.
///
/// Threads: the callbacks run on the library's lease threads, never on a thread that asked
/// for an ID. For one generator they are never called concurrently, not even after a
/// timeout: a call that takes longer than `registry_timeout_ms` counts as failed (its late
/// answer is ignored), and the generator's next call starts only after it has returned (the
/// engine's calls fail at once meanwhile; a callback that never returns stops renewals, so
/// the lease runs out and IDs stop: bound the callbacks' own I/O by `registry_timeout_ms`).
/// With several generators on one `ctx` they run concurrently, so they must be thread-safe.
///
/// Frozen: this layout never changes; a registry capability added later comes as a new
/// struct and a new constructor.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct segflake_registry {
    /// Required.
    pub claim: segflake_registry_claim_fn,
    /// Required.
    pub renew: segflake_registry_renew_fn,
    /// Required.
    pub release: segflake_registry_release_fn,
    /// Optional (NULL: no peers are reported; then `max_peer_skew_ms` must stay 0).
    pub peers: segflake_registry_peers_fn,
    /// Passed to every callback; owned by the caller.
    pub ctx: *mut c_void,
    /// Optional: releases `ctx` once no callback runs any more (after the generator was
    /// freed, possibly later and from a lease thread).
    pub free_ctx: crate::segment::segflake_release_fn,
}

struct CRegistry(segflake_registry);

// SAFETY: the header requires the callbacks and their context to be thread-safe.
unsafe impl Send for CRegistry {}
// SAFETY: as above.
unsafe impl Sync for CRegistry {}

impl Drop for CRegistry {
    fn drop(&mut self) {
        if let Some(free) = self.0.free_ctx {
            // SAFETY: the caller supplied this function and context for this purpose.
            unsafe { free(self.0.ctx) };
        }
    }
}

/// The answer of a callback that returned `status` with `error` written.
fn failed(name: &str, status: segflake_status, error: &[u8]) -> String {
    let end = error.iter().position(|&b| b == 0).unwrap_or(error.len());
    let text = String::from_utf8_lossy(&error[..end]);
    if text.is_empty() {
        format!("the registry's {name} callback returned status {status}")
    } else {
        text.into_owned()
    }
}

/// A mark written by a callback: -1 is "not held by this owner"; below -1 (renew only) is
/// "no record of the lease", which the core reads from any negative integer.
fn mark_value(name: &str, mark: i64) -> Result<Value, String> {
    match mark {
        SEGFLAKE_MARK_NOT_HELD => Ok(Value::Null),
        i64::MIN => Err(format!(
            "the registry's {name} callback returned SEGFLAKE_OK without writing *out_mark"
        )),
        m => Ok(Value::Int(m.into())),
    }
}

impl Registry for CRegistry {
    fn call(&self, call: &RegistryCall) -> Result<Value, String> {
        let r = &self.0;
        let mut error = [0u8; SEGFLAKE_REGISTRY_ERROR_LEN];
        let (buf, cap) = (error.as_mut_ptr().cast::<c_char>(), error.len());
        let owner_c =
            |o: &str| CString::new(o).map_err(|_| "an owner token with a NUL".to_string());
        let missing = |name: &str| format!("the registry has no {name} callback");
        let (status, answer) = match call {
            RegistryCall::Claim {
                worker_id,
                owner,
                ttl_ms,
            } => {
                let f = r.claim.ok_or_else(|| missing("claim"))?;
                let owner = owner_c(owner)?;
                let mut mark = i64::MIN;
                // SAFETY: the caller supplied the callback and context; the pointers are
                // valid during the call.
                let status = unsafe {
                    f(
                        r.ctx,
                        *worker_id,
                        owner.as_ptr(),
                        *ttl_ms,
                        &mut mark,
                        buf,
                        cap,
                    )
                };
                (status, mark_value("claim", mark))
            }
            RegistryCall::Renew {
                worker_id,
                owner,
                ttl_ms,
                mark_ms,
                reported_ms,
            } => {
                let f = r.renew.ok_or_else(|| missing("renew"))?;
                let owner = owner_c(owner)?;
                let mut mark = i64::MIN;
                // SAFETY: as above.
                let status = unsafe {
                    f(
                        r.ctx,
                        *worker_id,
                        owner.as_ptr(),
                        *ttl_ms,
                        *mark_ms,
                        *reported_ms,
                        &mut mark,
                        buf,
                        cap,
                    )
                };
                (status, mark_value("renew", mark))
            }
            RegistryCall::Release {
                worker_id,
                owner,
                mark_ms,
            } => {
                let f = r.release.ok_or_else(|| missing("release"))?;
                let owner = owner_c(owner)?;
                let mut released = false;
                // SAFETY: as above.
                let status = unsafe {
                    f(
                        r.ctx,
                        *worker_id,
                        owner.as_ptr(),
                        *mark_ms,
                        &mut released,
                        buf,
                        cap,
                    )
                };
                (status, Ok(Value::Bool(released)))
            }
            RegistryCall::Peers => {
                let Some(f) = r.peers else {
                    return Ok(Value::List(Vec::new()));
                };
                let mut peers = vec![segflake_peer::default(); SEGFLAKE_MAX_PEERS];
                let mut count = 0usize;
                // SAFETY: as above; `peers` has `SEGFLAKE_MAX_PEERS` writable entries.
                let status =
                    unsafe { f(r.ctx, peers.as_mut_ptr(), peers.len(), &mut count, buf, cap) };
                let reports = peers[..count.min(peers.len())]
                    .iter()
                    .map(|p| (p.worker_id.into(), p.reported_ms.into(), p.age_ms.into()));
                (status, Ok(peers_answer(reports)))
            }
        };
        if status != SEGFLAKE_OK {
            return Err(failed(call.name(), status, &error));
        }
        answer
    }
}

/// Creates a generator whose worker ID is leased from `registry` (copied): claims one now
/// (blocking until a worker ID is held and the clock checks passed, at most about
/// `claim_wait_ms + clock_wait_ms`), then renews it on a library thread every third of
/// `lease_ttl_ms`. No ID carries a time above the mark the registry accepted from this
/// process, so a holder paused past its lease and its successor issue disjoint IDs.
///
/// A worker ID claimed without a mark (never used, or forgotten by the registry) starts
/// above claim time + `max_drift_ms` + `mark_ahead_ms` + `clock_skew_allowance_ms`, the
/// most an unseen predecessor could have reached: the first start on an empty registry
/// waits that long (about 4 s by default) before it returns.
///
/// `snowflake_opts`: a `"snowflake"` builder without `worker_id` (NULL: the defaults);
/// `lease_opts`: a `"lease"` builder (NULL: the defaults): `lease_ttl_ms`,
/// `mark_ahead_ms`, `preferred_worker_id`, `claim_wait_ms`, `clock_wait_ms`,
/// `max_peer_skew_ms`, `registry_timeout_ms`, `clock_skew_allowance_ms`. `owner`: this
/// generator's label for the registry's records (1 to `SEGFLAKE_MAX_OWNER_LABEL_LEN` bytes,
/// a host name, say; many generators may share it), or NULL for the host name. The
/// callbacks receive it with the generator's own nonce appended (`label#<16 hex digits>`).
///
/// The generator is used with `segflake_snowflake_next` and the other snowflake
/// functions; while no lease is held they fail with `SEGFLAKE_LEASE_EXPIRED` (the message
/// names the registry's last error), or `SEGFLAKE_REGISTRY_LOST_DATA` after a renewal
/// found no record of the lease, and recover by themselves.
/// `segflake_snowflake_free` releases the worker ID (waiting at most about
/// `registry_timeout_ms`).
///
/// Errors: `SEGFLAKE_NO_FREE_WORKER_ID`, `SEGFLAKE_CLOCK_BEHIND_MARK`,
/// `SEGFLAKE_CLOCK_SKEW`, `SEGFLAKE_REGISTRY_ERROR` (the registry kept failing; the message
/// gives its last error), `SEGFLAKE_INVALID_ARGUMENT` (NULL `registry`, `out` or a required
/// callback; `worker_id` given; an option out of range; an empty or too long `owner`).
/// On error `*out` is unchanged.
///
/// Ownership: given a non-NULL `registry` and `out`, the library takes `registry->ctx`:
/// `free_ctx` (if set) runs exactly once when no callback runs any more — after
/// `segflake_snowflake_free`, or after this function failed (possibly shortly after it
/// returns, from a lease thread). The builders stay the caller's.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_snowflake_new_leased(
    snowflake_opts: *const segflake_options,
    lease_opts: *const segflake_options,
    registry: *const segflake_registry,
    owner: *const c_char,
    out: *mut *mut segflake_snowflake,
) -> segflake_status {
    unsafe {
        make(out, || {
            // Taken at once: from here on `free_ctx` runs when the library is done with it.
            let registry = Arc::new(CRegistry(*in_ref(registry, "registry")?));
            let r = &registry.0;
            for (name, present) in [
                ("claim", r.claim.is_some()),
                ("renew", r.renew.is_some()),
                ("release", r.release.is_some()),
            ] {
                if !present {
                    return Err(invalid(format!("registry->{name} is NULL; it is required")));
                }
            }
            let mut pairs: Vec<(String, Value)> = Vec::new();
            for (opts, set) in [(snowflake_opts, "snowflake"), (lease_opts, "lease")] {
                if let Some(o) = opts.as_ref() {
                    if o.set != set {
                        return Err(invalid(format!(
                            "the {set} builder holds {} options (segflake_options_new(\"{set}\", ...))",
                            o.set
                        )));
                    }
                    pairs.extend(o.pairs().map(|(k, v)| (k.clone(), v)));
                }
            }
            let owner = match owner.is_null() {
                true => None,
                false => Some(in_str(owner, "owner")?.to_owned()),
            };
            let clock = HostClock::System;
            let (config, layout, lease) = segflake_core::lease::configure_leased(
                pairs,
                Dialect::NATIVE,
                segflake_core::Clock::now_ms(&clock),
            )?;
            let leased = LeasedSnowflake::start_with_clock(
                layout,
                config.options,
                lease,
                registry,
                owner,
                clock,
            )?;
            Ok(segflake_snowflake {
                inner: leased.generator().clone(),
                lease: Some(leased),
                origin: crate::fork::origin(),
            })
        })
    }
}

/// The lease of a generator made by `segflake_snowflake_new_leased`, as a record: `owner`,
/// `state`, `worker_id` (absent while none is held), `lease_remaining_ms`, `mark_ms`,
/// `mark_ahead_ms`, `renewals`, `last_renew_latency_ms`, `failures`,
/// `consecutive_failures`, `lost`, `last_error`.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` (NULL pointer, or a generator given its worker ID).
/// Ownership: free the record with `segflake_record_free`. Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_snowflake_lease_stats(
    generator: *const segflake_snowflake,
    out: *mut *mut segflake_record,
) -> segflake_status {
    boundary(|| unsafe {
        let g = in_ref(generator, "generator")?;
        let lease = g.lease.as_ref().ok_or_else(|| {
            invalid("this generator was given its worker ID; only a leased one has a lease")
        })?;
        let rec: FfiResult<_> = record(&lease.stats());
        write_out(out, "out", rec?)
    })
}

/// The core's script or statement for `registry` (`"redis"`, `"postgres"` or `"mysql"`) and
/// `call` (`"claim"`, `"renew"`, `"release"`, `"peers"`, and for SQL `"schema"`, `"audit"`;
/// for MySQL also `"ensure"` and `"claimed"`), so a C registry sends exactly what every
/// other language sends. SQL uses `?` placeholders in the order documented in
/// `docs/leases.md`. Returns a static NUL-terminated string, or NULL for an unknown pair.
///
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_registry_statement(
    registry: *const c_char,
    call: *const c_char,
) -> *const c_char {
    static TEXTS: std::sync::OnceLock<Vec<(&str, &str, CString)>> = std::sync::OnceLock::new();
    let texts = TEXTS.get_or_init(|| {
        segflake_core::lease::schema::STATEMENTS
            .iter()
            .filter_map(|(r, c, t)| Some((*r, *c, CString::new(*t).ok()?)))
            .collect()
    });
    let found = std::panic::catch_unwind(|| unsafe {
        let registry = in_str(registry, "registry").ok()?;
        let call = in_str(call, "call").ok()?;
        texts
            .iter()
            .find(|(r, c, _)| *r == registry && *c == call)
            .map(|(_, _, t)| t.as_ptr())
    });
    found.ok().flatten().unwrap_or(std::ptr::null())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_limits_are_the_cores() {
        use segflake_core::lease::{MAX_LABEL_BYTES, MAX_OWNER_TOKEN_BYTES};
        assert_eq!(SEGFLAKE_MAX_OWNER_LABEL_LEN, MAX_LABEL_BYTES);
        assert_eq!(SEGFLAKE_MAX_OWNER_TOKEN_LEN, MAX_OWNER_TOKEN_BYTES);
        let token = segflake_core::lease::owner_token("h", u64::MAX);
        assert_eq!(token.len(), 1 + 17);
    }

    #[test]
    fn marks_map_to_the_registry_answers() {
        assert_eq!(mark_value("renew", 7), Ok(Value::Int(7)));
        assert_eq!(mark_value("renew", SEGFLAKE_MARK_NOT_HELD), Ok(Value::Null));
        assert_eq!(mark_value("renew", SEGFLAKE_MARK_LOST), Ok(Value::Int(-2)));
        assert!(mark_value("renew", i64::MIN).is_err());
    }
}
