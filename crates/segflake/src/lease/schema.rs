//! The registries' schemas and statements, written once: every language's Redis and SQL
//! registry sends exactly these (the bindings export them in their tables), so fleets in
//! several languages share one registry.
//!
//! SQL statements use `?` for positional parameters, in the order documented on each;
//! drivers with another placeholder style replace each `?` in turn (no statement has a
//! `?` anywhere else). Durations are milliseconds; every time comparison uses the
//! database's clock.

/// Redis: one script per call. Keys are `{prefix}:worker:<id>` (the owner token, with the
/// lease as its expiry: `SET NX PX`), `{prefix}:mark:<id>` (the time mark, without
/// expiry) and `{prefix}:reports` (a hash: worker ID → `reported_ms:server_ms`). The
/// prefix is wrapped in braces so a cluster keeps them in one slot. Marks must survive a
/// restart of Redis: run it with `appendonly yes`.
pub mod redis {
    /// KEYS: worker, mark. ARGV: owner, ttl_ms. Answers the mark (0 if never used) when
    /// claimed (also when `owner` already held it: a client retry), nil when held.
    pub const CLAIM: &str = r"
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return tonumber(redis.call('GET', KEYS[2]) or '0')
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return tonumber(redis.call('GET', KEYS[2]) or '0')
end
return false
";

    /// KEYS: worker, mark, reports. ARGV: owner, ttl_ms, mark_ms, reported_ms, worker_id.
    /// Answers the stored mark after raising it, nil when another owner holds the ID, -1
    /// when nobody does (the registry lost the lease: a restart without persistence,
    /// `FLUSHALL`, eviction, a failover that lost writes).
    pub const RENEW: &str = r"
local holder = redis.call('GET', KEYS[1])
if not holder then
  return -1
end
if holder ~= ARGV[1] then
  return false
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local stored = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[3]) > stored then
  redis.call('SET', KEYS[2], ARGV[3])
  stored = tonumber(ARGV[3])
end
local t = redis.call('TIME')
redis.call('HSET', KEYS[3], ARGV[5], ARGV[4] .. ':' .. (t[1] * 1000 + math.floor(t[2] / 1000)))
return stored
";

    /// KEYS: worker, mark, reports. ARGV: owner, mark_ms, worker_id. Answers 1 when
    /// released, 0 when `owner` did not hold the ID.
    pub const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('DEL', KEYS[1])
redis.call('HDEL', KEYS[3], ARGV[3])
return 1
";

    /// KEYS: reports. ARGV: the worker key prefix (`{prefix}:worker:`). Answers
    /// `[[worker_id, reported_ms, age_ms], ...]` for the IDs held now.
    pub const PEERS: &str = r"
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local all = redis.call('HGETALL', KEYS[1])
local out = {}
for i = 1, #all, 2 do
  local reported, at = string.match(all[i + 1], '^(%d+):(%d+)$')
  if reported and redis.call('EXISTS', ARGV[1] .. all[i]) == 1 then
    out[#out + 1] = {tonumber(all[i]), tonumber(reported), now - tonumber(at)}
  end
end
return out
";

    /// The default key prefix.
    pub const PREFIX: &str = "segflake";

    /// How a renewal counts on a replicated Redis: after `RENEW`, on the same connection,
    /// `ROLE` names the connected replicas; with N of them, `WAIT N timeout` must answer N,
    /// else the renewal is a failed call (its mark is not accepted). A failover to a replica
    /// then never loses a mark the holder issued under: the holder's cap is a mark every
    /// replica has.
    pub const REPLICATED: &str = "ROLE, then WAIT <connected replicas> <timeout>";

    /// The server settings an adapter reads at start-up (`CONFIG GET name` each; a server
    /// that refuses `CONFIG`, as managed services may, is not checked) for
    /// [`durability_warning`].
    pub const DURABILITY_SETTINGS: &[&str] = &["appendonly", "maxmemory-policy"];

    /// What a Redis whose settings are `settings` (name, value) would lose on a restart or
    /// under memory pressure, as one warning for the host's log; `None` when the marks are
    /// kept. A lost mark costs no duplicate (a claim without a mark starts above anything
    /// an unseen predecessor could have issued) but costs that wait, and a holder whose
    /// lease vanished stops with `REGISTRY_LOST_DATA`.
    pub fn durability_warning(settings: &[(String, String)]) -> Option<String> {
        let get = |name: &str| {
            settings
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.to_ascii_lowercase())
        };
        let mut risks = Vec::new();
        if get("appendonly").is_some_and(|v| v != "yes") {
            risks.push("appendonly is off, so a restart loses every lease and mark");
        }
        if get("maxmemory-policy").is_some_and(|v| v.starts_with("allkeys-")) {
            risks.push("maxmemory-policy evicts keys without an expiry, such as the marks");
        }
        (!risks.is_empty()).then(|| {
            format!(
                "this Redis may lose worker-ID marks: {}; no ID is issued twice for it, but \
                 holders whose lease vanished stop (REGISTRY_LOST_DATA) and claims without a \
                 mark wait mark_ahead_ms + clock_skew_allowance_ms; run it with appendonly \
                 yes and a volatile-* or noeviction policy",
                risks.join(", and ")
            )
        })
    }

    /// [`durability_warning`] for `CONFIG GET` replies as a client returns them, flattened:
    /// `[name, value, name, value, ...]`.
    pub fn durability_warning_of_replies(flat: &[String]) -> Option<String> {
        let pairs: Vec<(String, String)> = flat
            .chunks_exact(2)
            .map(|p| (p[0].clone(), p[1].clone()))
            .collect();
        durability_warning(&pairs)
    }
}

/// PostgreSQL: the lease table, and uid-generator's `WORKER_NODE` as the audit trail.
pub mod postgres {
    /// The tables (also `stores/sql/worker_lease.postgres.sql`; a test keeps them equal).
    pub const SCHEMA: &str = r"-- Worker-ID leases (PostgreSQL). One row per worker ID ever claimed: the owner token of
-- the process holding it, the lease's expiry on the database's clock, and the time mark no
-- ID of that worker ID has exceeded (it only grows while held, survives release and
-- expiry, and a new holder starts above it). Keep synchronous_commit = on.
CREATE TABLE IF NOT EXISTS segflake_worker_lease (
    worker_id   INTEGER      NOT NULL PRIMARY KEY,
    owner       VARCHAR(160) DEFAULT NULL,
    expires_at  TIMESTAMPTZ(3) DEFAULT NULL,
    mark_ms     BIGINT       NOT NULL DEFAULT 0,
    reported_ms BIGINT       DEFAULT NULL,
    reported_at TIMESTAMPTZ(3) DEFAULT NULL
);
-- Owner tokens are a label of up to 128 bytes, '#' and 16 hex digits (tables made with
-- VARCHAR(64) are widened).
ALTER TABLE segflake_worker_lease ALTER COLUMN owner TYPE VARCHAR(160);
-- uid-generator's table, kept as the audit trail: a row per claim, PORT = worker_id@owner.
CREATE TABLE IF NOT EXISTS worker_node (
    id          BIGSERIAL    NOT NULL PRIMARY KEY,
    host_name   VARCHAR(64)  NOT NULL,
    port        VARCHAR(64)  NOT NULL,
    type        INTEGER      NOT NULL,
    launch_date DATE         NOT NULL,
    modified    TIMESTAMP    NOT NULL,
    created     TIMESTAMP    NOT NULL
);
";
    /// Parameters: worker_id, owner, ttl_ms. One row (`mark_ms`) when claimed, none when
    /// held.
    pub const CLAIM: &str = "INSERT INTO segflake_worker_lease AS l (worker_id, owner, expires_at) \
        VALUES (?, ?, now() + CAST(? AS BIGINT) * interval '1 millisecond') \
        ON CONFLICT (worker_id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at \
        WHERE l.owner IS NULL OR l.expires_at < now() OR l.owner = EXCLUDED.owner \
        RETURNING mark_ms";
    /// Parameters: ttl_ms, mark_ms, reported_ms, worker_id, owner, worker_id. One row, one
    /// column: the stored mark when renewed; NULL when another owner holds the ID (or this
    /// owner's lease expired); -1 when nobody holds it (the row is gone or released: the
    /// database lost the lease, say a failover to a replica without the last commits).
    pub const RENEW: &str = "WITH renewed AS (UPDATE segflake_worker_lease SET \
        expires_at = now() + CAST(? AS BIGINT) * interval '1 millisecond', mark_ms = GREATEST(mark_ms, ?), \
        reported_ms = ?, reported_at = now() \
        WHERE worker_id = ? AND owner = ? AND expires_at > now() RETURNING mark_ms) \
        SELECT CASE WHEN EXISTS (SELECT 1 FROM renewed) THEN (SELECT mark_ms FROM renewed) \
        WHEN EXISTS (SELECT 1 FROM segflake_worker_lease WHERE worker_id = ? AND owner IS NOT NULL) \
        THEN NULL ELSE -1 END AS mark_ms";
    /// Parameters: mark_ms, worker_id, owner. One row when released.
    pub const RELEASE: &str = "UPDATE segflake_worker_lease SET \
        owner = NULL, expires_at = NULL, mark_ms = ? \
        WHERE worker_id = ? AND owner = ? RETURNING worker_id";
    /// No parameters. Rows (worker_id, reported_ms, age_ms) of the IDs held now.
    pub const PEERS: &str = "SELECT worker_id, reported_ms, \
        CAST(EXTRACT(EPOCH FROM (now() - reported_at)) * 1000 AS BIGINT) AS age_ms \
        FROM segflake_worker_lease \
        WHERE owner IS NOT NULL AND expires_at > now() AND reported_ms IS NOT NULL";
    /// Parameters: host_name, port (`<worker_id>@<owner>`, at most 64 characters). After a
    /// claim: the audit row.
    pub const AUDIT: &str =
        "INSERT INTO worker_node (host_name, port, type, launch_date, modified, created) \
        VALUES (?, ?, 2, CURRENT_DATE, now(), now())";
}

/// MySQL and MariaDB (InnoDB; `innodb_flush_log_at_trx_commit` 1 or 2).
pub mod mysql {
    /// The tables (also `stores/sql/worker_lease.mysql.sql`; a test keeps them equal).
    pub const SCHEMA: &str = r"-- Worker-ID leases (MySQL / MariaDB, InnoDB). One row per worker ID ever claimed: the
-- owner token of the process holding it, the lease's expiry on the database's clock, and
-- the time mark no ID of that worker ID has exceeded (it only grows while held, survives
-- release and expiry, and a new holder starts above it).
-- Durability: innodb_flush_log_at_trx_commit = 1 (or 2 against process crashes only).
-- Times are UTC DATETIME(3) (TIMESTAMP ends in 2038), compared with UTC_TIMESTAMP(3).
CREATE TABLE IF NOT EXISTS `segflake_worker_lease` (
  `worker_id` int(11) NOT NULL,
  `owner` varchar(160) DEFAULT NULL,
  `expires_at` datetime(3) NULL DEFAULT NULL,
  `mark_ms` bigint(20) NOT NULL DEFAULT '0',
  `reported_ms` bigint(20) DEFAULT NULL,
  `reported_at` datetime(3) NULL DEFAULT NULL,
  PRIMARY KEY (`worker_id`)
) ENGINE=InnoDB;
-- Tables made by earlier versions: owner tokens are a label of up to 128 bytes, '#' and
-- 16 hex digits (varchar(64) is widened), and TIMESTAMP(3) columns become UTC
-- DATETIME(3) (this session converts in UTC).
SET time_zone = '+00:00';
ALTER TABLE `segflake_worker_lease` MODIFY `owner` varchar(160) DEFAULT NULL,
  MODIFY `expires_at` datetime(3) NULL DEFAULT NULL,
  MODIFY `reported_at` datetime(3) NULL DEFAULT NULL;
-- uid-generator's table, exactly as it ships, kept as the audit trail: a row per claim,
-- PORT = worker_id@owner.
CREATE TABLE IF NOT EXISTS `WORKER_NODE` (
  `ID` bigint NOT NULL AUTO_INCREMENT COMMENT 'auto increment id',
  `HOST_NAME` varchar(64) NOT NULL COMMENT 'host name',
  `PORT` varchar(64) NOT NULL COMMENT 'port',
  `TYPE` int NOT NULL COMMENT 'node type: ACTUAL or CONTAINER',
  `LAUNCH_DATE` date NOT NULL COMMENT 'launch date',
  `MODIFIED` timestamp NOT NULL COMMENT 'modified time',
  `CREATED` timestamp NOT NULL COMMENT 'created time',
  PRIMARY KEY (`ID`)
) ENGINE=InnoDB;
";
    /// Parameters: worker_id. Makes sure the ID's row exists (before `CLAIM`).
    pub const ENSURE: &str =
        "INSERT IGNORE INTO segflake_worker_lease (worker_id, mark_ms) VALUES (?, 0)";
    /// Parameters: owner, ttl_ms, worker_id, owner. Then `CLAIMED`.
    pub const CLAIM: &str = "UPDATE segflake_worker_lease SET owner = ?, \
        expires_at = DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? * 1000 MICROSECOND) \
        WHERE worker_id = ? AND (owner IS NULL OR expires_at < UTC_TIMESTAMP(3) OR owner = ?)";
    /// Parameters: worker_id, owner. One row (`mark_ms`) when `owner` holds the ID (owner
    /// tokens are unique, so this reads the claim's outcome).
    pub const CLAIMED: &str =
        "SELECT mark_ms FROM segflake_worker_lease WHERE worker_id = ? AND owner = ?";
    /// Parameters: ttl_ms, mark_ms, reported_ms, worker_id, owner. Then `RENEWED` reads the
    /// outcome.
    pub const RENEW: &str = "UPDATE segflake_worker_lease SET \
        expires_at = DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? * 1000 MICROSECOND), \
        mark_ms = GREATEST(mark_ms, ?), reported_ms = ?, reported_at = UTC_TIMESTAMP(3) \
        WHERE worker_id = ? AND owner = ? AND expires_at > UTC_TIMESTAMP(3)";
    /// Parameters: owner, worker_id. After `RENEW`: one row, one column: the stored mark
    /// when `owner` holds the ID; NULL when another owner holds it (or this owner's lease
    /// expired); -1 when nobody does (the row is gone or released: the database lost the
    /// lease).
    pub const RENEWED: &str = "SELECT CASE WHEN COUNT(*) = 0 OR MAX(owner) IS NULL THEN -1 \
        WHEN MAX(owner) = ? AND MAX(expires_at) > UTC_TIMESTAMP(3) THEN MAX(mark_ms) ELSE NULL END AS mark_ms \
        FROM segflake_worker_lease WHERE worker_id = ?";
    /// Parameters: mark_ms, worker_id, owner. One affected row when released.
    pub const RELEASE: &str = "UPDATE segflake_worker_lease SET \
        owner = NULL, expires_at = NULL, mark_ms = ? WHERE worker_id = ? AND owner = ?";
    /// No parameters. Rows (worker_id, reported_ms, age_ms) of the IDs held now.
    pub const PEERS: &str = "SELECT worker_id, reported_ms, \
        TIMESTAMPDIFF(MICROSECOND, reported_at, UTC_TIMESTAMP(3)) DIV 1000 AS age_ms \
        FROM segflake_worker_lease \
        WHERE owner IS NOT NULL AND expires_at > UTC_TIMESTAMP(3) AND reported_ms IS NOT NULL";
    /// Parameters: host_name, port (`<worker_id>@<owner>`, at most 64 characters).
    pub const AUDIT: &str =
        "INSERT INTO WORKER_NODE (HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED) \
        VALUES (?, ?, 2, CURDATE(), NOW(), NOW())";
}

/// The audit row's `PORT`: `<worker_id>@<owner>` (the owner token: its label and nonce),
/// cut to uid-generator's 64 characters.
pub fn audit_port(worker_id: u64, owner: &str) -> String {
    let mut port = format!("{worker_id}@{owner}");
    let mut end = port.len().min(64);
    while !port.is_char_boundary(end) {
        end -= 1;
    }
    port.truncate(end);
    port
}

/// Every statement as (registry, call, text), for the bindings' tables; `("redis",
/// "serial")` is the serial counter's script ([`crate::serial::counter`]).
pub const STATEMENTS: &[(&str, &str, &str)] = &[
    ("redis", "claim", redis::CLAIM),
    ("redis", "renew", redis::RENEW),
    ("redis", "release", redis::RELEASE),
    ("redis", "peers", redis::PEERS),
    ("redis", "serial", crate::serial::counter::REDIS_SCRIPT),
    ("postgres", "schema", postgres::SCHEMA),
    ("postgres", "claim", postgres::CLAIM),
    ("postgres", "renew", postgres::RENEW),
    ("postgres", "release", postgres::RELEASE),
    ("postgres", "peers", postgres::PEERS),
    ("postgres", "audit", postgres::AUDIT),
    ("mysql", "schema", mysql::SCHEMA),
    ("mysql", "ensure", mysql::ENSURE),
    ("mysql", "claim", mysql::CLAIM),
    ("mysql", "claimed", mysql::CLAIMED),
    ("mysql", "renew", mysql::RENEW),
    ("mysql", "renewed", mysql::RENEWED),
    ("mysql", "release", mysql::RELEASE),
    ("mysql", "peers", mysql::PEERS),
    ("mysql", "audit", mysql::AUDIT),
];
