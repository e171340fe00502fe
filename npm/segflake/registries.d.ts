import type { Registry } from './index'

/**
 * The registry methods every adapter here has (as `Snowflake.fromRegistry` calls them), and
 * `close()`. `owner` is the engine's token, `label#<16 hex digits>`.
 */
export interface RegistryAdapter<Claimed = number | null> {
  /** The worker ID's mark when it is now leased to `owner`, or `null` when another owner holds it. */
  claim(args: { workerId: number; owner: string; ttlMs: number }): Promise<Claimed>
  /**
   * The stored mark (raised to at least `markMs`); `null` when another owner holds the
   * worker ID; -1 when the registry has no record of the lease at all (it lost data:
   * `RegistryLostDataError`, then a new claim).
   */
  renew(args: {
    workerId: number
    owner: string
    ttlMs: number
    markMs: number
    reportedMs: number
  }): Promise<number | null>
  release(args: { workerId: number; owner: string; markMs: number }): Promise<boolean>
  peers(): Promise<Array<[number, number, number]>>
  /** Closes the client if the registry created it. */
  close(): Promise<void>
}

/**
 * The transport deadline of an adapter, in milliseconds (default 3000, 1..=600000): a
 * request on a dead or blackholed connection fails within it instead of waiting for TCP to
 * give up. Keep it at or below the generator's `registryTimeoutMs`.
 */
export interface TimeoutOption {
  timeoutMs?: number
}

/**
 * A PEM file of the certificate authorities to trust for TLS (Python: `ca_file`; in URLs
 * `ca=PATH`); without one, Node's.
 */
export interface CaFileOption {
  caFile?: string
}

/** Worker-ID leases in Redis through `ioredis` (needs `appendonly yes`). */
export interface RedisRegistry extends RegistryAdapter {}
export declare class RedisRegistry implements Registry {
  /**
   * An ioredis client (`Redis` or `Redis.Cluster`), or a Redis URL for a new one that the
   * registry owns, with `timeoutMs` as its connect, command and socket timeouts: `redis://`,
   * `redis+sentinel://HOSTS/SERVICE[/DB]` (the primary the sentinels name, followed through
   * failovers) or `redis+cluster://HOSTS`, as `RedisStore` takes them. A renewal counts
   * once every replica `ROLE` lists acknowledged it; the URL's `replicas=N` waits for N
   * instead (0: none). `rediss...` is TLS: the server's certificate must chain to `caFile`
   * (or the URL's `ca=PATH`) and name the host connected to; a CA file with a plaintext
   * URL is refused.
   */
  constructor(
    clientOrUrl: object | string,
    options?: {
      prefix?: string
      /** Read the server's `appendonly` and `maxmemory-policy` before the first claim (default true). */
      checkDurability?: boolean
      /** Receives the warning for a server that may lose marks (default: `process.emitWarning`, code SEGFLAKE_REDIS_DURABILITY). */
      onWarning?: (message: string) => void
    } & TimeoutOption &
      CaFileOption,
  )
  /** The start-up check's warning: null when the marks are kept, or before or without the check. */
  readonly durabilityWarning: string | null
  /** Reads the settings once (the first claim does it) and returns the warning, or null. */
  checkDurability(): Promise<string | null>
}

/** Worker-ID leases in PostgreSQL through `pg` (the `segflake_worker_lease` table). */
export interface PgRegistry extends RegistryAdapter {}
export declare class PgRegistry implements Registry {
  /**
   * A `pg.Pool`, or a `postgres://` URL for a new pool that the registry owns (with
   * `timeoutMs` as its `connectionTimeoutMillis`, `statement_timeout` and `query_timeout`, and
   * TCP keepalive). Every query carries `query_timeout: timeoutMs`. TLS as libpq names it:
   * `sslmode=require` (encrypted; checked as `verify-ca` only when `sslrootcert` is given),
   * `verify-ca` (the certificate must chain to `sslrootcert=PATH`), `verify-full` (that, and
   * it must name the host); `allow` and `prefer` are refused (pg cannot fall back). Several
   * servers (`postgres://U@H1:P1,H2:P2/DB`): the first that takes writes is used, as by
   * `PgStore`; a read-only server's refusal is a `ReadOnlyServerError` (`READ_ONLY_SERVER`).
   */
  constructor(poolOrUrl: object | string, options?: { createSchema?: boolean } & TimeoutOption)
  /** Creates the tables if missing (also done before the first call unless `createSchema: false`). */
  ensureSchema(): Promise<void>
}

/** Worker-ID leases in MySQL or MariaDB through `mysql2/promise`. */
export interface MysqlRegistry extends RegistryAdapter {}
export declare class MysqlRegistry implements Registry {
  /**
   * A mysql2 pool created with `flags: ['FOUND_ROWS']`, or a `mysql://` URL for a new one
   * (with `timeoutMs` as its `connectTimeout`, and TCP keepalive). Every query has a timeout
   * of `timeoutMs`; a connection whose query failed is destroyed, not returned to the pool.
   * TLS as MySQL's clients name it: `ssl-mode=REQUIRED` (encrypted, not checked),
   * `VERIFY_CA` (the certificate must chain to `ssl-ca=PATH`), `VERIFY_IDENTITY` (that, and
   * it must name the host); `ssl-ca` alone means `VERIFY_CA`; `PREFERRED` is refused.
   * Several servers (`mysql://U:P@H1:P1,H2:P2/DB`): the first whose `@@global.read_only` is
   * off is used, as by `MySQLStore`; a read-only server's refusal is a `ReadOnlyServerError`
   * (`READ_ONLY_SERVER`).
   */
  constructor(poolOrUrl: object | string, options?: { createSchema?: boolean } & TimeoutOption)
  /** Creates the tables if missing (also done before the first call unless `createSchema: false`). */
  ensureSchema(): Promise<void>
}

/** A Leaf node may have issued IDs up to its reported `timestamp` plus this (its report interval). */
export declare const LEAF_REPORT_MS: 3000

/** A ZooKeeper claim's answer: the identity's worker ID and mark, and, when a process other
 * than this registry may have written the forever node last (a Leaf node), its `identity`,
 * `version` and `ageMs` (how long ago it was written, by the ZooKeeper server's clock). */
export type ZooKeeperClaim =
  | { workerId: number; markMs: number }
  | { workerId: number; markMs: number; identity: string; version: number; ageMs: number }

/**
 * Worker-ID leases in ZooKeeper in Leaf's layout, through `node-zookeeper-client`: the
 * identity's persistent sequential node `{root}/forever/{ip}:{port}-{seq}` gives the worker
 * ID and (its Leaf `timestamp` + 3 s) the mark; an ephemeral `{root}/leaf_temporary/{id}`
 * holds the lease. A Leaf snowflake node is taken over by a process with its identity; a
 * claim never writes the forever node, and a Leaf node that still reports into it refuses
 * the start-up (`LeafNodeAliveError`). A renewal that finds this session's ephemeral node or
 * the forever node gone answers -1 (`RegistryLostDataError`). Every request and registry
 * call is bounded by `timeoutMs`.
 */
export interface ZooKeeperRegistry extends RegistryAdapter<ZooKeeperClaim | null> {}
export declare class ZooKeeperRegistry implements Registry {
  constructor(options: {
    /** `HOST:PORT[,HOST:PORT]` for a new client that the registry owns (or `client`). */
    hosts?: string
    /** A node-zookeeper-client `Client`, connected or connecting. */
    client?: object
    /** Leaf's `/snowflake/{leaf.name}` (default `/snowflake/segflake`). */
    root?: string
    /** Leaf's node identity `IP:PORT` (default: this host's outbound IPv4 address and port 0). */
    identity?: string
    /** The ZooKeeper session timeout (default 10000); keep it at or below `leaseTtlMs`. */
    sessionTimeoutMs?: number
    /**
     * Opt-in: Leaf's `workerID.properties` fallback. Records the worker ID and mark, and
     * serves claims and renewals from them while ZooKeeper cannot be reached. Risk: nothing
     * then keeps another process from holding the same worker ID; use only where each
     * identity runs once and forever nodes are never deleted (docs/leases.md).
     */
    cacheFile?: string
    /**
     * Bounds every ZooKeeper request, every registry call and the wait for a connection (2/3
     * of it); a request that times out on a client the registry created drops its socket, so
     * it reconnects. Default 3000.
     */
    timeoutMs?: number
    /**
     * Refused (an `InvalidArgumentError`): node-zookeeper-client has no TLS, and a request for
     * TLS never falls back to plaintext. (Python's registry, through kazoo, supports `tls` and
     * `ca_file`; in URLs `zk+tls://` or `?tls=true`, which `registryFromUrl` refuses here.)
     */
    tls?: boolean
    /** Refused, as `tls` is. */
    caFile?: string
  })
  readonly identity: string
}

/** Worker-ID leases in etcd v3 through `etcd3`: keys on an etcd lease, txn compare-and-set. */
export interface EtcdRegistry extends RegistryAdapter {}
export declare class EtcdRegistry implements Registry {
  constructor(options: {
    /**
     * `HOST:PORT[,HOST:PORT]` for a new client that the registry owns (or `client`);
     * `https://HOST:PORT[,https://HOST:PORT]` for TLS: the members' certificates must chain
     * to `caFile` (else Node's certificate authorities) and name the host connected to.
     */
    endpoints?: string
    /** A PEM file of the certificate authorities for `https://` endpoints (Python: `ca_file`). */
    caFile?: string
    /** An `Etcd3` client. */
    client?: object
    /** The key prefix (default `/segflake`). */
    prefix?: string
    /**
     * Bounds every registry call; a client the registry creates also dials within it, puts it
     * as the deadline of every unary call, and pings idle connections (gRPC keepalive).
     * Default 3000.
     */
    timeoutMs?: number
  })
}

/**
 * A registry for a URL (the same forms as Python's `segflake.registries.from_url`):
 * - `redis://` or `rediss://` (TLS) `[[USER]:PASSWORD@]HOST:PORT[/DB][?replicas=N&ca=PATH]`,
 *   `redis+sentinel://S1:26379[,S2:26379...]/SERVICE[/DB]`, `redis+cluster://N1:7000[,N2:7000...]`
 *   (`rediss+...` for TLS);
 * - `postgres://` (`postgresql://`), TLS by `sslmode=require|verify-ca|verify-full` and
 *   `sslrootcert=PATH`;
 * - `mysql://USER:PASSWORD@HOST:PORT/DB[?ssl-mode=REQUIRED|VERIFY_CA|VERIFY_IDENTITY&ssl-ca=PATH]`;
 * - `zk://HOST:PORT[,HOST:PORT]/ROOT[?identity=IP:PORT&session_timeout_ms=N&cache_file=PATH]`
 *   (`zk+tls://`, `tls=true` or `ca=` is refused: node-zookeeper-client has no TLS);
 * - `etcd://` or `etcd+tls://` (TLS: https) `HOST:PORT[,HOST:PORT][/PREFIX][?ca=PATH]`
 *   (`tls=true` is the same as `+tls`).
 * A URL asking for TLS never falls back to plaintext.
 */
export declare function registryFromUrl(
  url: string,
  options?: TimeoutOption,
): RedisRegistry | PgRegistry | MysqlRegistry | ZooKeeperRegistry | EtcdRegistry

/** The core's scripts or statements for `registry`, by call name (SQL with `?` placeholders). */
export declare function statements(registry: 'redis' | 'postgres' | 'mysql'): Record<string, string>
