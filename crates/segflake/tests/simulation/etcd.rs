//! An etcd v3 cluster as the core's etcd protocol meets it: keys, leases that expire on the
//! server's clock (taking their keys with them), keepalive and revoke, and transactions
//! whose comparisons choose the branch applied.
//!
//! What the model follows, from etcd's server (`lease/lessor.go`, `etcdserver/apply.go`,
//! `v3rpc/lease.go`):
//! * A lease's TTL is raised to the minimum etcd grants (1.5 election timeouts rounded up
//!   to whole seconds: 2 s with the default 1 s election timeout). A keepalive restarts the
//!   TTL and answers it; a keepalive of a lease that is gone (expired or revoked) answers
//!   TTL 0 (the gRPC stream's answer for "lease not found").
//! * A lease that expires or is revoked deletes every key attached to it; a `put` without a
//!   lease detaches the key.
//! * A transaction compares, then runs the branch taken; a `put` of that branch on a lease
//!   that does not exist fails the whole transaction (`ErrLeaseNotFound`), nothing applied.
//!   A value comparison on a missing key is false; "missing" is `create_revision == 0`.
//! * Revoking a lease that is gone fails ("requested lease not found").
//!
//! Simplified: an expired lease's keys vanish at the expiry itself (etcd revokes expired
//! leases from a loop every 500 ms, through raft, so they live a little longer); lease IDs
//! count up from an arbitrary start; revisions are not kept (the protocol reads none but
//! `create_revision == 0`); one member (a leader change refreshes every lease's TTL, which
//! only lengthens holds).

use std::collections::BTreeMap;

use segflake::lease::etcd::{Compare, EtcdOp, EtcdReply, TxnOp};

/// The shortest lease etcd grants, in seconds (with its default election timeout).
pub const MIN_TTL_S: u64 = 2;

const LEASE_NOT_FOUND: &str = "etcdserver: requested lease not found";

#[derive(Debug, Clone)]
struct Kv {
    value: String,
    lease: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
struct Lease {
    ttl_s: u64,
    /// On the server's clock (ms).
    expires: u64,
}

#[derive(Debug, Clone)]
pub struct EtcdServer {
    /// The protocol's key prefix (`/segflake`).
    prefix: String,
    keys: BTreeMap<String, Kv>,
    leases: BTreeMap<u64, Lease>,
    next_lease: u64,
    /// Leases that expired (not revoked).
    pub expired: u64,
}

impl EtcdServer {
    pub fn new(prefix: &str) -> EtcdServer {
        EtcdServer {
            prefix: prefix.to_string(),
            keys: BTreeMap::new(),
            leases: BTreeMap::new(),
            next_lease: 0x694d_71a5_0000_0001,
            expired: 0,
        }
    }

    /// Ends the leases due by `now` (server ms), with their keys.
    fn expire(&mut self, now: u64) {
        if self.leases.values().all(|l| l.expires > now) {
            return;
        }
        let due: Vec<u64> = self
            .leases
            .iter()
            .filter(|(_, l)| l.expires <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            self.expired += 1;
            self.revoke(id);
        }
    }

    fn revoke(&mut self, id: u64) -> bool {
        let found = self.leases.remove(&id).is_some();
        if found {
            self.keys.retain(|_, kv| kv.lease != Some(id));
        }
        found
    }

    /// Applies one request at server time `now` (ms).
    pub fn apply(&mut self, op: &EtcdOp, now: u64) -> EtcdReply {
        self.expire(now);
        let lease_id = |text: &str| text.parse::<u64>().ok();
        match op {
            EtcdOp::Grant { ttl_s } => {
                let ttl_s = (*ttl_s).max(MIN_TTL_S);
                let id = self.next_lease;
                self.next_lease += 1;
                self.leases.insert(
                    id,
                    Lease {
                        ttl_s,
                        expires: now + ttl_s * 1000,
                    },
                );
                EtcdReply::Lease(id.to_string())
            }
            EtcdOp::KeepAlive { lease } => {
                match lease_id(lease).and_then(|id| self.leases.get_mut(&id)) {
                    Some(l) => {
                        l.expires = now + l.ttl_s * 1000;
                        EtcdReply::Ttl(l.ttl_s as i64)
                    }
                    None => EtcdReply::Ttl(0),
                }
            }
            EtcdOp::Revoke { lease } => match lease_id(lease).is_some_and(|id| self.revoke(id)) {
                true => EtcdReply::Done,
                false => EtcdReply::Failed(LEASE_NOT_FOUND.into()),
            },
            EtcdOp::Prefix { prefix } => EtcdReply::Kvs(
                self.keys
                    .range(prefix.clone()..)
                    .take_while(|(k, _)| k.starts_with(prefix.as_str()))
                    .map(|(k, kv)| (k.clone(), kv.value.clone()))
                    .collect(),
            ),
            EtcdOp::Txn {
                compare,
                success,
                failure,
            } => {
                let succeeded = compare.iter().all(|c| self.holds(c));
                let ops = if succeeded { success } else { failure };
                let leases_exist = ops.iter().all(|op| match op {
                    TxnOp::Put {
                        lease: Some(lease), ..
                    } => lease_id(lease).is_some_and(|id| self.leases.contains_key(&id)),
                    _ => true,
                });
                if !leases_exist {
                    return EtcdReply::Failed(LEASE_NOT_FOUND.into());
                }
                let mut values = Vec::new();
                for op in ops {
                    match op {
                        TxnOp::Put { key, value, lease } => {
                            let lease = lease.as_deref().and_then(lease_id);
                            let value = value.clone();
                            self.keys.insert(key.clone(), Kv { value, lease });
                        }
                        TxnOp::Range { key } => {
                            values.push(self.keys.get(key).map(|kv| kv.value.clone()))
                        }
                        TxnOp::Delete { key } => {
                            self.keys.remove(key);
                        }
                    }
                }
                EtcdReply::Txn { succeeded, values }
            }
        }
    }

    fn holds(&self, c: &Compare) -> bool {
        match c {
            Compare::Missing { key } => !self.keys.contains_key(key),
            Compare::Equal { key, value } => {
                self.keys.get(key).is_some_and(|kv| kv.value == *value)
            }
            Compare::Less { key, value } => self
                .keys
                .get(key)
                .is_some_and(|kv| kv.value.as_bytes() < value.as_bytes()),
        }
    }

    fn key(&self, what: &str, worker: u64) -> String {
        format!("{}/{what}/{worker}", self.prefix)
    }

    /// Data lost: every key and lease (a cluster restored empty), or one worker ID's mark
    /// key (`mark_only`) or its worker, mark and report keys.
    pub fn lose(&mut self, worker: Option<u64>, mark_only: bool) {
        let Some(w) = worker else {
            self.keys.clear();
            self.leases.clear();
            return;
        };
        self.keys.remove(&self.key("mark", w));
        if !mark_only {
            self.keys.remove(&self.key("worker", w));
            self.keys.remove(&self.key("report", w));
        }
    }

    /// Who holds `worker` now (its worker key's value) and its mark, when both keys are
    /// there.
    pub fn holder_mark(&self, worker: u64) -> Option<(String, u64)> {
        let owner = self.keys.get(&self.key("worker", worker))?.value.clone();
        let mark = self
            .keys
            .get(&self.key("mark", worker))?
            .value
            .parse()
            .ok()?;
        Some((owner, mark))
    }
}

/// The worker ID whose keys a transaction reads or writes, if any.
pub fn touched(op: &EtcdOp) -> Option<u64> {
    let EtcdOp::Txn {
        compare,
        success,
        failure,
    } = op
    else {
        return None;
    };
    let worker = |key: &str| {
        let mut parts = key.rsplit('/');
        let id = parts.next()?.parse().ok()?;
        matches!(parts.next()?, "worker" | "mark").then_some(id)
    };
    let compared = compare.iter().map(|c| match c {
        Compare::Missing { key } | Compare::Equal { key, .. } | Compare::Less { key, .. } => key,
    });
    let requested = success.iter().chain(failure).map(|op| match op {
        TxnOp::Put { key, .. } | TxnOp::Range { key } | TxnOp::Delete { key } => key,
    });
    compared.chain(requested).find_map(|k| worker(k))
}
