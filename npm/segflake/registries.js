'use strict'
// Worker-ID registries for `Snowflake.fromRegistry` on the servers a fleet already runs,
// through the usual clients (peer dependencies):
//
//   const { Snowflake } = require('segflake')
//   const { RedisRegistry } = require('segflake/registries')   // or 'segflake/registries/redis'
//   const gen = await Snowflake.fromRegistry(new RedisRegistry(new Redis(url)))
//
// * RedisRegistry (ioredis): keys `{segflake}:worker:<id>` (SET NX PX), `{segflake}:mark:<id>`
//   and `{segflake}:reports`, one Lua script per call.
// * PgRegistry (pg): the `segflake_worker_lease` table, expiry on the database's clock,
//   uid-generator's `worker_node` rows as the audit trail.
// * MysqlRegistry (mysql2/promise): the same on MySQL or MariaDB.
// * ZooKeeperRegistry (node-zookeeper-client): Leaf's `/snowflake/{leaf.name}/forever` nodes
//   (a worker ID per node identity, Leaf's reported timestamps as marks) and ephemeral
//   `leaf_temporary/<id>` nodes, so a Leaf snowflake fleet is taken over node by node.
// * EtcdRegistry (etcd3): keys on an etcd lease, txn compare-and-set.
//
// Every language sends the same scripts and statements (they come from the core), so
// Node, Python, C and CLI processes can share one registry. Any object with `claim`,
// `renew`, `release` and `peers` is a registry too (docs/leases.md has the contract).
//
// Transport deadlines: every adapter takes `timeoutMs` (default 3000, the generator's
// `registryTimeoutMs`), and a client it creates itself fails a request on a dead or
// blackholed connection within it, then connects again, instead of waiting for TCP to give
// up (about 15 minutes): Redis (connect, command and socket timeouts), PostgreSQL
// (`connectionTimeoutMillis`, `statement_timeout`, `query_timeout`, TCP keepalive), MySQL
// (`connectTimeout`, a timeout per query, after which the connection is destroyed, TCP
// keepalive), ZooKeeper (every request, and the wait for a connection) and etcd (a deadline
// on every call, gRPC keepalive). A client you pass in keeps its own settings; PostgreSQL
// and MySQL queries still carry the per-query timeout.

const os = require('node:os')
const { ioredisClient, checkTimeout, KEEPALIVE_MS } = require('./stores/_common.js')

let statementsByRegistry = null
/** The core's scripts or statements for `registry` ('redis', 'postgres', 'mysql'). */
function statements(registry) {
  if (statementsByRegistry === null) {
    const native = require('./index.js').__native
    statementsByRegistry = JSON.parse(native.__tables()).registries
  }
  return statementsByRegistry[registry]
}

function auditRow(workerId, owner) {
  const native = require('./index.js').__native
  return [os.hostname().slice(0, 64) || 'unknown', native.__auditPort(workerId, owner)]
}

const num = (v) => (v === null || v === undefined ? null : Number(v))

class RedisRegistry {
  /**
   * @param {object|string} clientOrUrl an ioredis client, or a `redis://` URL for a new one
   *   (which the registry then owns and `close()` quits, with `timeoutMs` as its connect,
   *   command and socket timeouts)
   * @param {{ prefix?: string, timeoutMs?: number }} [options]
   */
  constructor(clientOrUrl, options = {}) {
    const timeoutMs = checkTimeout(options.timeoutMs)
    const { client, owns } = ioredisClient(clientOrUrl, timeoutMs)
    this.client = client
    this.ownsClient = owns
    this.prefix = `{${options.prefix ?? 'segflake'}}`
    /** The start-up check's warning (null: the marks are kept, or not checked yet or at all). */
    this.durabilityWarning = null
    this.durabilityChecked = options.checkDurability === false
    this.onWarning =
      options.onWarning ?? ((message) => process.emitWarning(message, { code: 'SEGFLAKE_REDIS_DURABILITY' }))
    this.waitMs = Math.max(1, Math.floor((timeoutMs ?? 3000) / 2))
    const scripts = statements('redis')
    for (const [name, keys] of [
      ['claim', 2],
      ['renew', 3],
      ['release', 3],
      ['peers', 1],
    ]) {
      const command = `segflakeLease${name[0].toUpperCase()}${name.slice(1)}`
      if (typeof this.client[command] !== 'function') {
        this.client.defineCommand(command, { numberOfKeys: keys, lua: scripts[name] })
      }
    }
  }

  keys(workerId) {
    return [`${this.prefix}:worker:${workerId}`, `${this.prefix}:mark:${workerId}`, `${this.prefix}:reports`]
  }

  /**
   * Once, before the first claim: the server's persistence and eviction settings (`CONFIG
   * GET`). A server that would lose marks on a restart or under memory pressure gets one
   * warning, the core's (`onWarning`, by default a process warning with the code
   * SEGFLAKE_REDIS_DURABILITY). A server that refuses CONFIG (managed services) is not
   * checked. Lost marks cause no duplicate IDs, but holders stop with
   * RegistryLostDataError and claims without a mark wait.
   */
  async checkDurability() {
    if (this.durabilityChecked) return this.durabilityWarning
    this.durabilityChecked = true
    const native = require('./index.js').__native
    const replies = []
    try {
      for (const name of native.__redisDurabilitySettings()) {
        replies.push(...(await this.client.config('GET', name)).map(String))
      }
    } catch {
      return null
    }
    this.durabilityWarning = native.__redisDurabilityWarning(replies) ?? null
    if (this.durabilityWarning !== null) this.onWarning(`RedisRegistry: ${this.durabilityWarning}`)
    return this.durabilityWarning
  }

  async claim({ workerId, owner, ttlMs }) {
    await this.checkDurability()
    const [worker, mark] = this.keys(workerId)
    return num(await this.client.segflakeLeaseClaim(worker, mark, owner, ttlMs))
  }

  /**
   * On a server with replicas (`ROLE`), a renewal counts only once every connected replica
   * acknowledged it (`WAIT` on the renewal's connection, half the timeout), so a failover
   * never loses a mark the holder issued under (the core's rule, statements `REPLICATED`).
   */
  async renew({ workerId, owner, ttlMs, markMs, reportedMs }) {
    const args = [...this.keys(workerId), owner, ttlMs, markMs, reportedMs, workerId]
    const replicas = await this.replicas()
    if (replicas === 0) return num(await this.client.segflakeLeaseRenew(...args))
    const [[renewError, mark], [waitError, acked]] = await this.client
      .pipeline()
      .segflakeLeaseRenew(...args)
      .call('WAIT', replicas, this.waitMs)
      .exec()
    if (renewError) throw renewError
    if (waitError) throw waitError
    if (mark !== null && Number(mark) >= 0 && Number(acked) < replicas) {
      throw new Error(
        `the renewal reached ${acked} of the ${replicas} replicas within ${this.waitMs} ms (WAIT); it does not count until every replica has it`,
      )
    }
    return num(mark)
  }

  /** How many replicas are connected to the server now (`ROLE`; 0 if refused). */
  async replicas() {
    try {
      const role = await this.client.call('ROLE')
      return Array.isArray(role?.[2]) ? role[2].length : 0
    } catch {
      return 0
    }
  }

  async release({ workerId, owner, markMs }) {
    return Number(await this.client.segflakeLeaseRelease(...this.keys(workerId), owner, markMs, workerId)) === 1
  }

  async peers() {
    const rows = await this.client.segflakeLeasePeers(`${this.prefix}:reports`, `${this.prefix}:worker:`)
    return rows.map(([workerId, reportedMs, ageMs]) => [Number(workerId), Number(reportedMs), Number(ageMs)])
  }

  async close() {
    if (this.ownsClient) await this.client.quit().catch(() => {})
  }
}

/** `?` placeholders as `$1, $2, ...`. */
function numbered(sql) {
  let n = 0
  return sql.replace(/\?/g, () => `$${++n}`)
}

class PgRegistry {
  /**
   * @param {object|string} poolOrUrl a `pg.Pool` (or Client), or a `postgres://` URL for a
   *   new pool (owned: `close()` ends it; `timeoutMs` is its `connectionTimeoutMillis`,
   *   `statement_timeout` and `query_timeout`, with TCP keepalive on)
   * @param {{ createSchema?: boolean, timeoutMs?: number }} [options] create the tables if
   *   missing (default true); every query's `query_timeout` (default 3000: a query that got
   *   no answer fails and its connection leaves the pool)
   */
  constructor(poolOrUrl, options = {}) {
    this.timeoutMs = checkTimeout(options.timeoutMs)
    if (poolOrUrl && typeof poolOrUrl === 'object' && typeof poolOrUrl.query === 'function') {
      this.pool = poolOrUrl
      this.ownsPool = false
    } else {
      const { Pool } = require('pg')
      this.pool = new Pool({
        connectionString: poolOrUrl,
        max: 2,
        connectionTimeoutMillis: this.timeoutMs,
        statement_timeout: this.timeoutMs,
        query_timeout: this.timeoutMs,
        keepAlive: true,
        keepAliveInitialDelayMillis: KEEPALIVE_MS,
      })
      this.pool.on('error', () => {})
      this.ownsPool = true
    }
    const s = statements('postgres')
    this.sql = Object.fromEntries(Object.entries(s).map(([k, v]) => [k, numbered(v)]))
    this.schemaReady = options.createSchema === false ? Promise.resolve() : null
  }

  /** Creates the lease and audit tables if missing (done before the first call unless
   * `createSchema: false`); safe to call again. */
  async ensureSchema() {
    await this.pool.query({ text: this.sql.schema, query_timeout: this.timeoutMs })
  }

  async query(sql, params) {
    if (this.schemaReady === null) {
      this.schemaReady = this.ensureSchema().catch((e) => {
        this.schemaReady = null
        throw e
      })
    }
    await this.schemaReady
    return this.pool.query({ text: sql, values: params, query_timeout: this.timeoutMs })
  }

  async claim({ workerId, owner, ttlMs }) {
    const { rows } = await this.query(this.sql.claim, [workerId, owner, ttlMs])
    if (rows.length === 0) return null
    await this.query(this.sql.audit, auditRow(workerId, owner))
    return Number(rows[0].mark_ms)
  }

  async renew({ workerId, owner, ttlMs, markMs, reportedMs }) {
    const { rows } = await this.query(this.sql.renew, [ttlMs, markMs, reportedMs, workerId, owner, workerId])
    return rows.length === 0 || rows[0].mark_ms === null ? null : Number(rows[0].mark_ms)
  }

  async release({ workerId, owner, markMs }) {
    const { rows } = await this.query(this.sql.release, [markMs, workerId, owner])
    return rows.length === 1
  }

  async peers() {
    const { rows } = await this.query(this.sql.peers, [])
    return rows.map((r) => [Number(r.worker_id), Number(r.reported_ms), Math.max(0, Number(r.age_ms))])
  }

  async close() {
    if (this.ownsPool) await this.pool.end().catch(() => {})
  }
}

/** Returns a pooled mysql2 connection, or destroys it after a failed query. */
function done(conn, failed) {
  try {
    if (failed) conn.destroy()
    else conn.release()
  } catch {}
}

class MysqlRegistry {
  /**
   * @param {object|string} poolOrUrl a `mysql2/promise` pool, or a `mysql://` URL for a new
   *   one (owned: `close()` ends it; `timeoutMs` is its `connectTimeout`, with TCP keepalive
   *   on). A pool you pass must be created with `flags: ['FOUND_ROWS']` (an UPDATE then
   *   reports the rows it matched).
   * @param {{ createSchema?: boolean, timeoutMs?: number }} [options] create the tables if
   *   missing (default true); every query's timeout (default 3000: a query that got no
   *   answer fails and its connection is destroyed, not returned to the pool)
   */
  constructor(poolOrUrl, options = {}) {
    this.timeoutMs = checkTimeout(options.timeoutMs)
    if (poolOrUrl && typeof poolOrUrl === 'object' && typeof poolOrUrl.query === 'function') {
      this.pool = poolOrUrl
      this.ownsPool = false
    } else {
      const mysql = require('mysql2/promise')
      this.pool = mysql.createPool({
        uri: poolOrUrl,
        connectionLimit: 2,
        connectTimeout: this.timeoutMs,
        enableKeepAlive: true,
        keepAliveInitialDelay: KEEPALIVE_MS,
        flags: ['FOUND_ROWS'],
        multipleStatements: true,
      })
      this.ownsPool = true
    }
    this.sql = statements('mysql')
    this.schemaReady = options.createSchema === false ? Promise.resolve() : null
  }

  /** Creates the lease and audit tables if missing (done before the first call unless
   * `createSchema: false`); safe to call again. */
  async ensureSchema() {
    const conn = await this.pool.getConnection()
    let failed = false
    try {
      for (const part of this.sql.schema.split(';')) {
        const body = part
          .split('\n')
          .filter((l) => !l.trim().startsWith('--'))
          .join('\n')
        if (body.trim()) await conn.query({ sql: body, timeout: this.timeoutMs })
      }
    } catch (e) {
      failed = true
      throw e
    } finally {
      done(conn, failed)
    }
  }

  async connection() {
    if (this.schemaReady === null) {
      this.schemaReady = this.ensureSchema().catch((e) => {
        this.schemaReady = null
        throw e
      })
    }
    await this.schemaReady
    return this.pool.getConnection()
  }

  /** Runs `fn(conn)` on a pooled connection; a connection whose query failed (it may be
   * broken, or still busy with a query that timed out) is destroyed, not returned. */
  async with(fn) {
    const conn = await this.connection()
    let failed = false
    try {
      return await fn(conn)
    } catch (e) {
      failed = true
      throw e
    } finally {
      done(conn, failed)
    }
  }

  /** `conn.execute` with this registry's query timeout. */
  execute(conn, sql, params) {
    return conn.execute({ sql, timeout: this.timeoutMs }, params)
  }

  async claimed(conn, workerId, owner) {
    const [rows] = await this.execute(conn, this.sql.claimed, [workerId, owner])
    return rows.length === 0 ? null : Number(rows[0].mark_ms)
  }

  claim({ workerId, owner, ttlMs }) {
    return this.with(async (conn) => {
      await this.execute(conn, this.sql.ensure, [workerId])
      await this.execute(conn, this.sql.claim, [owner, ttlMs, workerId, owner])
      const mark = await this.claimed(conn, workerId, owner)
      if (mark !== null) await this.execute(conn, this.sql.audit, auditRow(workerId, owner))
      return mark
    })
  }

  renew({ workerId, owner, ttlMs, markMs, reportedMs }) {
    return this.with(async (conn) => {
      await this.execute(conn, this.sql.renew, [ttlMs, markMs, reportedMs, workerId, owner])
      const [rows] = await this.execute(conn, this.sql.renewed, [owner, workerId])
      return rows.length === 0 || rows[0].mark_ms === null ? null : Number(rows[0].mark_ms)
    })
  }

  release({ workerId, owner, markMs }) {
    return this.with(async (conn) => {
      const [result] = await this.execute(conn, this.sql.release, [markMs, workerId, owner])
      return result.affectedRows === 1
    })
  }

  peers() {
    return this.with(async (conn) => {
      const [rows] = await conn.query({ sql: this.sql.peers, timeout: this.timeoutMs })
      return rows.map((r) => [Number(r.worker_id), Number(r.reported_ms), Math.max(0, Number(r.age_ms))])
    })
  }

  async close() {
    if (this.ownsPool) await this.pool.end().catch(() => {})
  }
}

/** A Leaf node reports its clock every 3 s, so it may have issued IDs up to its reported
 * `timestamp` plus this; a forever node's mark is `timestamp + LEAF_REPORT_MS`. */
const LEAF_REPORT_MS = 3000

function invalidArgument(message) {
  const { InvalidArgumentError } = require('./index.js')
  return new InvalidArgumentError(message)
}

/** This host's outbound IPv4 address (no packet is sent), else 127.0.0.1: the default
 * identity's IP, as the Python and CLI registries choose it. */
function outboundIp() {
  return new Promise((resolve) => {
    const socket = require('node:dgram').createSocket('udp4')
    const done = (ip) => {
      try {
        socket.close()
      } catch {}
      resolve(ip)
    }
    socket.on('error', () => done('127.0.0.1'))
    try {
      socket.connect(1, '10.255.255.255', () => {
        try {
          done(socket.address().address)
        } catch {
          done('127.0.0.1')
        }
      })
    } catch {
      done('127.0.0.1')
    }
  })
}

/** A ZooKeeper stat's time field (an 8-byte buffer) in milliseconds. */
const zkMs = (time) => Number(time.readBigInt64BE())

/** A node-zookeeper-client stat as the core's protocol reads it (the owner session as a
 * bigint: session IDs exceed 2^53). */
const zkStat = (stat) => ({
  version: stat.version,
  ctime: zkMs(stat.ctime),
  mtime: zkMs(stat.mtime),
  ephemeral_owner: stat.ephemeralOwner.readBigInt64BE(),
})

/** ZooKeeper's error codes and client states, as node-zookeeper-client reports them. */
const ZK = {
  CONNECTION_LOSS: -4,
  OPERATION_TIMEOUT: -7,
  NO_NODE: -101,
  BAD_VERSION: -103,
  NODE_EXISTS: -110,
  SESSION_EXPIRED: -112,
  SYNC_CONNECTED: 3,
  EXPIRED: -122,
}
/** The protocol's names of the errors it tells apart (any other is the client's text). */
const ZK_ERRORS = { [ZK.NO_NODE]: 'no_node', [ZK.NODE_EXISTS]: 'node_exists', [ZK.BAD_VERSION]: 'bad_version' }
/** node-zookeeper-client's CreateMode values. */
const ZK_MODES = { persistent: 0, ephemeral: 1, persistent_sequential: 2 }

/** A client error as the protocol's reply. */
const zkFailure = (code, error, index) => ({ error: ZK_ERRORS[code] ?? String(error?.message ?? error), index })

/** `promise`, or a rejection with `message` once `ms` passed (`onTimeout` runs then). */
function deadline(promise, ms, message, onTimeout) {
  let timer
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => {
      if (onTimeout) onTimeout()
      reject(new Error(message))
    }, ms)
  })
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer))
}

class ZooKeeperRegistry {
  /**
   * Worker-ID leases in ZooKeeper, in Leaf's layout (node-zookeeper-client): the identity's
   * persistent sequential node `{root}/forever/{ip}:{port}-{seq}` gives the worker ID and,
   * through its Leaf `timestamp`, the mark; an ephemeral `{root}/leaf_temporary/{id}` holds
   * the lease. A Leaf node is taken over by a process with its identity. docs/leases.md.
   * The default identity is this host's outbound IPv4 address and port 0. Which nodes are
   * read and written, with which data and versions, and what the answers mean is the core's
   * protocol (the same in every language); this class performs its requests.
   *
   * A claim never writes the forever node (a Leaf process may still report into it): it
   * answers `{ workerId, markMs, identity, version, ageMs }`, the node's version and how long
   * ago it was last written by the ZooKeeper server's clock, so the generator can wait one
   * Leaf report period and claim again to tell a live Leaf node (`LeafNodeAliveError`) from
   * a stopped one. A node this registry created (mark 0) or wrote last has no Leaf writer:
   * its answer is `{ workerId, markMs }`. A renewal that finds this session's ephemeral node
   * or the forever node gone answers -1 (the ensemble lost the record:
   * `RegistryLostDataError`, then a new claim).
   *
   * `timeoutMs` (default 3000) bounds every ZooKeeper request and every registry call, and
   * waiting for a connection (two thirds of it): node-zookeeper-client has no request
   * timeout of its own, so a request on a connection that went silent (a blackholed
   * network) would wait for TCP to give up. When a request of a client this registry
   * created times out, its socket is dropped, so the client reconnects (keeping its session
   * while ZooKeeper still has it) instead of waiting on a dead connection. Calls run one at
   * a time.
   *
   * `cacheFile` (opt-in) is Leaf's `workerID.properties` fallback: every accepted claim,
   * renewal and release records `workerID=N` and `markMs=M` there, and while ZooKeeper
   * cannot be reached a claim takes the recorded worker ID and renewals raise the recorded
   * mark, so the process starts and keeps issuing through an outage. The risk: nothing then
   * keeps another process from holding the same worker ID (the same identity started
   * elsewhere, or a deleted forever node's number reused), and two holders of one worker ID
   * can issue the same IDs. Use it only where each identity runs once and forever nodes are
   * never deleted. Without it, a start-up without ZooKeeper fails with `RegistryError`.
   *
   * `client` may be any object with node-zookeeper-client's `Client` methods (`getState`,
   * `getSessionId`, `mkdirp`, `create`, `exists`, `getData`, `getChildren`, `setData`,
   * `remove`, `transaction`), as the tests replay scripted conversations.
   * @param {{ hosts?: string, client?: object, root?: string, identity?: string,
   *   sessionTimeoutMs?: number, cacheFile?: string, timeoutMs?: number }} options
   */
  constructor(options = {}) {
    if ((options.hosts === undefined) === (options.client === undefined)) {
      throw invalidArgument('ZooKeeperRegistry needs exactly one of hosts or client')
    }
    this.Protocol = require('./index.js').__native.__ZooKeeperProtocol
    this.root = options.root ?? '/snowflake/segflake'
    // Without an identity the IP is found at the first call; the placeholder checks the
    // root now.
    this.identityPending = options.identity === undefined || options.identity === null
    this.protocol = new this.Protocol(this.root, this.identityPending ? '127.0.0.1:0' : options.identity)
    this.hosts = options.hosts
    this.sessionTimeoutMs = options.sessionTimeoutMs ?? 10000
    this.timeoutMs = checkTimeout(options.timeoutMs)
    this.ownsClient = options.client === undefined
    this.client = options.client ?? null
    this.zk = this.ownsClient ? require('node-zookeeper-client') : null
    this.workerId = null // the worker ID of the last claim answered
    this.cacheFile = options.cacheFile ?? null
    this.offline = false
    this.queue = Promise.resolve()
  }

  /** `ip:port`, this registry's Leaf node identity (the IP is found at the first call when
   * no identity was given). */
  get identity() {
    return this.protocol.identity
  }

  async ensureIdentity() {
    if (!this.identityPending) return
    const ip = await outboundIp()
    if (!this.identityPending) return
    this.protocol = new this.Protocol(this.root, `${ip}:0`)
    this.identityPending = false
  }

  /** The recorded `[workerId, markMs]`, if a cache file is configured and readable. */
  readCache() {
    if (this.cacheFile === null) return null
    try {
      const fields = Object.fromEntries(
        require('node:fs')
          .readFileSync(this.cacheFile, 'utf8')
          .split('\n')
          .filter((l) => l.includes('='))
          .map((l) => l.split('=', 2)),
      )
      const workerId = Number(fields.workerID)
      const markMs = Number(fields.markMs ?? 0)
      return Number.isSafeInteger(workerId) && Number.isSafeInteger(markMs) ? [workerId, markMs] : null
    } catch {
      return null
    }
  }

  writeCache(workerId, markMs) {
    if (this.cacheFile === null) return
    const fs = require('node:fs')
    const path = require('node:path')
    fs.mkdirSync(path.dirname(path.resolve(this.cacheFile)), { recursive: true })
    const tmp = `${this.cacheFile}.tmp`
    const fd = fs.openSync(tmp, 'w')
    fs.writeSync(fd, `workerID=${workerId}\nmarkMs=${markMs}\n`)
    fs.fsyncSync(fd)
    fs.closeSync(fd)
    fs.renameSync(tmp, this.cacheFile)
  }

  /** Whether `error` (or the client's error that caused it) says ZooKeeper cannot be
   * reached (rather than refusing a request). */
  unreachable(error) {
    const code = (error?.cause ?? error)?.getCode?.()
    return code === undefined
      ? /not connected to ZooKeeper|took longer than/.test(String(error?.message))
      : code === ZK.CONNECTION_LOSS || code === ZK.SESSION_EXPIRED || code === ZK.OPERATION_TIMEOUT
  }

  /** Drops the socket of a client this registry created (after a request timed out on
   * it): the client reconnects, resuming its session if ZooKeeper still has it. */
  dropConnection(c) {
    if (!this.ownsClient) return
    try {
      c.connectionManager?.socket?.destroy?.()
    } catch {}
  }

  /** `request`, bounded by `timeoutMs`. */
  bound(c, request, what) {
    return deadline(
      request,
      this.timeoutMs,
      `ZooKeeper ${what} on ${this.hosts ?? 'the client'} took longer than ${this.timeoutMs} ms`,
      () => this.dropConnection(c),
    )
  }

  /** A node-zookeeper-client call as a Promise of its results, bounded by `timeoutMs`. */
  call(c, method, ...args) {
    const request = new Promise((resolve, reject) =>
      c[method](...args, (error, ...results) => (error ? reject(error) : resolve(results))),
    )
    return this.bound(c, request, `${method} ${args[0]}`)
  }

  /** The protocol's `multi` (`set`s and `delete`s) as one transaction: its reply. */
  multi(c, ops) {
    const t = c.transaction()
    for (const op of ops) {
      if (op.op === 'set') t.setData(op.path, Buffer.from(op.data), op.version)
      else t.remove(op.path, op.version)
      // node-zookeeper-client's transaction reads version 0 as any version (`version ||
      // -1`): the request carries the version the protocol asked for.
      if (op.version === 0 && Array.isArray(t.ops) && t.ops.length > 0) t.ops[t.ops.length - 1].version = 0
    }
    const request = new Promise((resolve, reject) =>
      t.commit((error, results) => {
        if (!error) return resolve([null, null])
        if (!Array.isArray(results)) return reject(error)
        const failed = results.findIndex((r) => r.err !== undefined && r.err !== 0)
        const code = failed < 0 ? error.getCode?.() : results[failed].err
        resolve([zkFailure(code, error, Math.max(0, failed)), error])
      }),
    )
    return this.bound(c, request, 'multi')
  }

  /** Performs the protocol's request `op` on `c`: `[reply, the client's error or null]`. A
   * failure without a ZooKeeper error code (a timeout) is thrown. */
  async perform(c, op) {
    try {
      switch (op.op) {
        case 'mkdir':
          await this.call(c, 'mkdirp', op.path)
          return [null, null]
        case 'create': {
          const [created] = await this.call(c, 'create', op.path, Buffer.from(op.data), ZK_MODES[op.mode])
          return [{ created }, null]
        }
        case 'exists': {
          const [stat] = await this.call(c, 'exists', op.path)
          return [{ stat: stat ? zkStat(stat) : null }, null]
        }
        case 'get': {
          const [data, stat] = await this.call(c, 'getData', op.path)
          return [{ data: data ? data.toString('utf8') : '', stat: zkStat(stat) }, null]
        }
        case 'children': {
          const [children] = await this.call(c, 'getChildren', op.path)
          return [{ children }, null]
        }
        case 'set': {
          const [stat] = await this.call(c, 'setData', op.path, Buffer.from(op.data), op.version)
          return [{ stat: zkStat(stat) }, null]
        }
        case 'delete':
          await this.call(c, 'remove', op.path, op.version)
          return [null, null]
        case 'multi':
          return await this.multi(c, op.ops)
      }
    } catch (e) {
      if (typeof e?.getCode !== 'function') throw e
      return [zkFailure(e.getCode(), e), e]
    }
    throw new Error(`the ZooKeeper protocol asked for ${JSON.stringify(op)}, which this adapter does not perform`)
  }

  /** The connected client; an owned client whose session expired is replaced. */
  async connection() {
    const state = (c) => c.getState()?.code
    if (this.client && this.ownsClient && state(this.client) === ZK.EXPIRED) {
      this.client.close()
      this.client = null
    }
    if (!this.client) {
      this.client = this.zk.createClient(this.hosts, { sessionTimeout: this.sessionTimeoutMs, spinDelay: 200 })
      this.client.connect()
    }
    const c = this.client
    if (state(c) !== ZK.SYNC_CONNECTED) {
      // Shorter than the call's own bound, so the failure names its cause.
      const wait = Math.max(1, Math.floor((this.timeoutMs * 2) / 3))
      await new Promise((resolve, reject) => {
        const connected = () => (clearTimeout(timer), resolve())
        const timer = setTimeout(() => {
          c.removeListener('connected', connected)
          reject(new Error(`not connected to ZooKeeper ${this.hosts ?? ''} within ${wait} ms`))
        }, wait)
        c.once('connected', connected)
      })
    }
    return c
  }

  /** Runs `fn` after the calls before it have ended. */
  serial(fn) {
    const result = this.queue.then(fn)
    this.queue = result.then(
      () => {},
      () => {},
    )
    return result
  }

  /**
   * Registry call `name` (its arguments in call order) as the core's protocol conversation,
   * bounded as a whole by `timeoutMs`: each request it asks for is performed and the
   * client's reply handed back. A conversation that timed out is dropped (no reply reaches
   * the protocol after that). A failed call is an `Error` with the core's message, and the
   * client's error as its `cause` when the core failed on one.
   */
  converse(name, args) {
    let over = false
    const live = () => {
      if (over) throw new Error(`ZooKeeper ${name}: dropped after its deadline`)
    }
    const conversation = async () => {
      await this.ensureIdentity()
      const c = await this.connection()
      live()
      let step = this.protocol.start(name, args, c.getSessionId().readBigInt64BE(), Date.now())
      let failure = null
      while (step.op !== undefined) {
        const [reply, error] = await this.perform(c, step)
        live()
        failure = error
        step = this.protocol.resume(reply)
      }
      if (step.error !== undefined) throw new Error(step.error, failure === null ? undefined : { cause: failure })
      return step.answer
    }
    return deadline(
      conversation(),
      this.timeoutMs,
      `ZooKeeper ${name} on ${this.hosts ?? 'the client'} took longer than ${this.timeoutMs} ms`,
      () => (over = true),
    )
  }

  /** An online claim: the protocol's answer in this package's spelling. */
  async claimOnline(workerId, owner, ttlMs) {
    const a = await this.converse('claim', [workerId, owner, ttlMs ?? 0])
    if (a === null) return null
    const answer = { workerId: a.worker_id, markMs: a.mark_ms }
    if (a.identity !== undefined) Object.assign(answer, { identity: a.identity, version: a.version, ageMs: a.age_ms })
    this.workerId = answer.workerId
    return answer
  }

  claim({ workerId, owner, ttlMs }) {
    return this.serial(async () => {
      let answer
      try {
        answer = await this.claimOnline(workerId, owner, ttlMs)
      } catch (e) {
        const cached = this.unreachable(e) ? this.readCache() : null
        if (cached === null || (this.workerId !== null && this.workerId !== cached[0])) throw e
        this.offline = true
        this.workerId = cached[0]
        return { workerId: cached[0], markMs: cached[1] }
      }
      this.offline = false
      if (answer !== null) this.writeCache(answer.workerId, answer.markMs)
      return answer
    })
  }

  renew({ workerId, owner, ttlMs, markMs, reportedMs }) {
    return this.serial(async () => {
      if (this.offline) {
        const cached = this.readCache()
        if (cached === null || cached[0] !== workerId) return null
        try {
          // Back online: hold the worker ID in ZooKeeper again, or give it up. (No waiting
          // for a connection: the renewal must answer well within the lease.)
          if (this.client?.getState()?.code !== ZK.SYNC_CONNECTED) throw new Error('not connected to ZooKeeper')
          if ((await this.claimOnline(workerId, owner, ttlMs))?.workerId !== workerId) return null
          this.offline = false
        } catch (e) {
          if (!this.unreachable(e)) throw e
          const mark = Math.max(cached[1], markMs)
          this.writeCache(workerId, mark)
          return mark
        }
      }
      const mark = await this.converse('renew', [workerId, owner, ttlMs ?? 0, markMs, reportedMs])
      if (mark !== null && mark >= 0) this.writeCache(workerId, mark)
      return mark
    })
  }

  release({ workerId, owner, markMs }) {
    return this.serial(async () => {
      if (this.offline) {
        this.offline = false
        this.writeCache(workerId, markMs)
        return true
      }
      const released = await this.converse('release', [workerId, owner ?? '', markMs])
      if (released) this.writeCache(workerId, markMs)
      return released
    })
  }

  peers() {
    return this.serial(() => this.converse('peers', []))
  }

  async close() {
    if (this.ownsClient && this.client) this.client.close()
    this.client = null
  }
}

/** A mark as 20 zero-padded digits, so etcd's byte-wise comparison is numeric. */
const pad = (markMs) => String(markMs).padStart(20, '0')

/**
 * etcd3's per-host circuit breaker, reopened for a trial call after `min(timeoutMs, 1 s)`
 * instead of its default 5 s: a host that answers again is used again within the registry
 * timeout. (undefined, etcd3's defaults, when its cockatiel cannot be loaded.)
 */
function etcdFaultHandling(timeoutMs) {
  try {
    const etcd3 = require.resolve('etcd3')
    const cockatiel = require(require.resolve('cockatiel', { paths: [require('node:path').dirname(etcd3)] }))
    const { isRecoverableError } = require('etcd3')
    if (typeof cockatiel.circuitBreaker !== 'function' || typeof isRecoverableError !== 'function') return undefined
    return {
      host: () =>
        cockatiel.circuitBreaker(cockatiel.handleWhen(isRecoverableError), {
          halfOpenAfter: Math.min(timeoutMs, 1000),
          breaker: new cockatiel.ConsecutiveBreaker(3),
        }),
    }
  } catch {
    return undefined
  }
}

class EtcdRegistry {
  /**
   * Worker-ID leases in etcd v3 (etcd3): keys under `prefix`: `worker/<id>` (the owner, on an
   * etcd lease), `mark/<id>` (zero-padded) and `report/<id>`; claims are a txn on
   * `create_revision == 0`, renewals and releases compare the owner. A renewal whose
   * etcd lease is alive but whose worker key (or mark) is gone answers -1 (etcd lost the
   * record: `RegistryLostDataError`, then a new claim). docs/leases.md.
   *
   * `timeoutMs` (default 3000) bounds every registry call; a client this registry creates
   * also dials within it, puts that deadline on every unary gRPC call, and pings an idle
   * connection (gRPC keepalive every 10 s, dropped after `timeoutMs` without an answer).
   * @param {{ endpoints?: string, client?: object, prefix?: string, timeoutMs?: number }} options
   *   `endpoints`: `HOST:PORT[,HOST:PORT]`, or `client`: an `Etcd3`
   */
  constructor(options = {}) {
    if ((options.endpoints === undefined) === (options.client === undefined)) {
      throw invalidArgument('EtcdRegistry needs exactly one of endpoints or client')
    }
    this.timeoutMs = checkTimeout(options.timeoutMs)
    if (options.client) {
      this.client = options.client
      this.ownsClient = false
    } else {
      const { Etcd3 } = require('etcd3')
      const hosts = String(options.endpoints)
        .split(',')
        .map((h) => (h.includes('://') ? h : `http://${h}`))
      const timeoutMs = this.timeoutMs
      this.client = new Etcd3({
        hosts,
        dialTimeout: timeoutMs,
        defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + timeoutMs }),
        grpcOptions: {
          'grpc.keepalive_time_ms': KEEPALIVE_MS,
          'grpc.keepalive_timeout_ms': timeoutMs,
          'grpc.keepalive_permit_without_calls': 1,
        },
        faultHandling: etcdFaultHandling(timeoutMs),
      })
      this.ownsClient = true
    }
    this.prefix = (options.prefix ?? '/segflake').replace(/\/+$/, '')
    this.leases = new Map()
  }

  key(what, workerId) {
    return `${this.prefix}/${what}/${workerId}`
  }

  /** The value a txn's range request read, or null. */
  static read(response, i) {
    const kvs = response.responses[i]?.response_range?.kvs ?? []
    return kvs.length ? kvs[0].value.toString() : null
  }

  /** `fn()`, failing once `timeoutMs` passed (a late answer is dropped). */
  bounded(name, fn) {
    return deadline(fn(), this.timeoutMs, `etcd ${name} took longer than ${this.timeoutMs} ms`)
  }

  claim(args) {
    return this.bounded('claim', () => this.claimOnline(args))
  }

  renew(args) {
    return this.bounded('renew', () => this.renewOnline(args))
  }

  release(args) {
    return this.bounded('release', () => this.releaseOnline(args))
  }

  peers() {
    return this.bounded('peers', () => this.peersOnline())
  }

  async claimOnline({ workerId, owner, ttlMs }) {
    const c = this.client
    const [worker, mark] = [this.key('worker', workerId), this.key('mark', workerId)]
    const lease = c.lease(Math.max(1, Math.ceil(ttlMs / 1000)), { autoKeepAlive: false })
    lease.on('lost', () => {})
    const id = await lease.grant()
    const r = await c
      .if(worker, 'Create', '==', 0)
      .then(c.put(worker).value(owner).lease(id), c.get(mark))
      .else(c.get(worker), c.get(mark))
      .commit()
    let stored
    if (r.succeeded) {
      this.leases.set(workerId, lease)
      stored = EtcdRegistry.read(r, 1)
    } else {
      await lease.revoke().catch(() => {})
      if (EtcdRegistry.read(r, 0) !== owner || !this.leases.has(workerId)) return null
      stored = EtcdRegistry.read(r, 1)
    }
    if (stored === null) {
      await c
        .if(mark, 'Create', '==', 0)
        .then(c.put(mark).value(pad(0)))
        .commit()
    }
    return Number(stored ?? 0)
  }

  async renewOnline({ workerId, owner, markMs, reportedMs }) {
    const c = this.client
    const lease = this.leases.get(workerId)
    if (!lease) return null
    const [worker, mark, report] = ['worker', 'mark', 'report'].map((w) => this.key(w, workerId))
    try {
      await lease.keepaliveOnce()
    } catch (e) {
      if (e instanceof require('etcd3').EtcdLeaseInvalidError) {
        // The etcd lease is gone, and the worker key with it: another owner may have
        // claimed the key since (taken), or nobody has (the record is gone: -1).
        this.leases.delete(workerId)
        return (await c.get(worker).string()) === null ? -1 : null
      }
      throw e
    }
    const id = await lease.grant()
    const putReport = () => c.put(report).value(String(reportedMs)).lease(id)
    const r = await c
      .if(worker, 'Value', '==', owner)
      .and(mark, 'Value', '<', pad(markMs))
      .then(c.put(mark).value(pad(markMs)), putReport())
      .else(c.get(worker), c.get(mark))
      .commit()
    if (r.succeeded) return markMs
    const holder = EtcdRegistry.read(r, 0)
    const stored = EtcdRegistry.read(r, 1)
    if (holder === null || (holder === owner && stored === null)) {
      // The worker key (or its mark) is gone while our etcd lease lives: etcd lost the
      // record (a restore, a rebuilt cluster, an operator's delete).
      this.leases.delete(workerId)
      await lease.revoke().catch(() => {})
      return -1
    }
    if (holder !== owner) {
      this.leases.delete(workerId)
      return null
    }
    await c.if(worker, 'Value', '==', owner).then(putReport()).commit()
    return Number(stored)
  }

  async releaseOnline({ workerId, owner, markMs }) {
    const c = this.client
    const lease = this.leases.get(workerId)
    this.leases.delete(workerId)
    const [worker, mark, report] = ['worker', 'mark', 'report'].map((w) => this.key(w, workerId))
    const r = await c
      .if(worker, 'Value', '==', owner)
      .then(c.put(mark).value(pad(markMs)), c.delete().key(worker), c.delete().key(report))
      .commit()
    if (lease) await lease.revoke().catch(() => {})
    return Boolean(r.succeeded)
  }

  async peersOnline() {
    const reports = await this.client.getAll().prefix(`${this.prefix}/report/`).strings()
    return Object.entries(reports).map(([key, value]) => [
      Number(key.slice(key.lastIndexOf('/') + 1)),
      Number(value),
      0,
    ])
  }

  async close() {
    const leases = [...this.leases.values()]
    this.leases.clear()
    await Promise.all(leases.map((l) => l.revoke().catch(() => {})))
    if (this.ownsClient) this.client.close()
  }
}

/**
 * A registry for a `redis://`, `postgres://` (`postgresql://`), `mysql://`,
 * `zk://HOST:PORT[,HOST:PORT]/ROOT[?identity=IP:PORT&session_timeout_ms=N&cache_file=PATH]` or
 * `etcd://HOST:PORT[,HOST:PORT][/PREFIX]` URL. `options.timeoutMs` (default 3000): the
 * adapter's transport deadline (keep it at or below the generator's `registryTimeoutMs`).
 */
function registryFromUrl(url, options = {}) {
  const scheme = String(url).split('://')[0]
  const timeoutMs = checkTimeout(options.timeoutMs)
  if (scheme === 'redis') return new RedisRegistry(url, { timeoutMs })
  if (scheme === 'postgres' || scheme === 'postgresql') return new PgRegistry(url, { timeoutMs })
  if (scheme === 'mysql') return new MysqlRegistry(url, { timeoutMs })
  if (scheme === 'zk' || scheme === 'etcd') {
    const rest = String(url).slice(scheme.length + 3)
    const [location, query = ''] = rest.split('?')
    const slash = location.indexOf('/')
    const hosts = slash < 0 ? location : location.slice(0, slash)
    const path = slash < 0 ? '' : location.slice(slash)
    const params = new URLSearchParams(query)
    if (!hosts) throw invalidArgument(`invalid registry URL ${JSON.stringify(url)}: no HOST:PORT`)
    if (scheme === 'etcd') return new EtcdRegistry({ endpoints: hosts, prefix: path || '/segflake', timeoutMs })
    const timeout = params.get('session_timeout_ms')
    return new ZooKeeperRegistry({
      hosts,
      root: path || '/snowflake/segflake',
      identity: params.get('identity') ?? undefined,
      sessionTimeoutMs: timeout === null ? undefined : Number(timeout),
      cacheFile: params.get('cache_file') ?? undefined,
      timeoutMs,
    })
  }
  throw invalidArgument(
    `invalid registry URL ${JSON.stringify(url)}: allowed schemes are redis://, postgres://, mysql://, zk:// and etcd://`,
  )
}

module.exports = {
  RedisRegistry,
  PgRegistry,
  MysqlRegistry,
  ZooKeeperRegistry,
  EtcdRegistry,
  LEAF_REPORT_MS,
  registryFromUrl,
  statements,
}
