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

function parseIdentity(identity) {
  if (identity === undefined || identity === null) return [null, '0']
  const i = String(identity).lastIndexOf(':')
  const ip = String(identity).slice(0, i)
  const port = String(identity).slice(i + 1)
  if (i <= 0 || !/^\d{1,5}$/.test(port) || Number(port) > 65535 || /[/-]/.test(ip)) {
    throw invalidArgument(
      `invalid identity ${JSON.stringify(identity)}: expected IP:PORT (Leaf's node address, e.g. 10.0.0.7:8080)`,
    )
  }
  return [ip, port]
}

/** A ZooKeeper stat's time field (an 8-byte buffer) in milliseconds. */
const zkMs = (time) => Number(time.readBigInt64BE())

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
   * The default identity is this host's outbound IPv4 address and port 0.
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
   * while ZooKeeper still has it) instead of waiting on a dead connection.
   *
   * `cacheFile` (opt-in) is Leaf's `workerID.properties` fallback: every accepted claim,
   * renewal and release records `workerID=N` and `markMs=M` there, and while ZooKeeper
   * cannot be reached a claim takes the recorded worker ID and renewals raise the recorded
   * mark, so the process starts and keeps issuing through an outage. The risk: nothing then
   * keeps another process from holding the same worker ID (the same identity started
   * elsewhere, or a deleted forever node's number reused), and two holders of one worker ID
   * can issue the same IDs. Use it only where each identity runs once and forever nodes are
   * never deleted. Without it, a start-up without ZooKeeper fails with `RegistryError`.
   * @param {{ hosts?: string, client?: object, root?: string, identity?: string,
   *   sessionTimeoutMs?: number, cacheFile?: string, timeoutMs?: number }} options
   */
  constructor(options = {}) {
    if ((options.hosts === undefined) === (options.client === undefined)) {
      throw invalidArgument('ZooKeeperRegistry needs exactly one of hosts or client')
    }
    const root = options.root ?? '/snowflake/segflake'
    if (!root.startsWith('/') || root.endsWith('/') || root.includes('//')) {
      throw invalidArgument(
        `invalid root ${JSON.stringify(root)}: expected an absolute znode path such as /snowflake/leaf-name`,
      )
    }
    ;[this.ip, this.port] = parseIdentity(options.identity)
    this.root = root
    this.hosts = options.hosts
    this.sessionTimeoutMs = options.sessionTimeoutMs ?? 10000
    this.timeoutMs = checkTimeout(options.timeoutMs)
    this.ownsClient = options.client === undefined
    this.client = options.client ?? null
    this.zk = require('node-zookeeper-client')
    this.node = null // [workerId, forever node path]
    // The forever node this registry created, while it holds no mark: nobody issued with
    // its worker ID (claims answer mark 0). Cleared once a renewal or release wrote a mark
    // into it, or another holder was found on its worker ID.
    this.created = null
    // The forever node's version after this registry last wrote it ({ path, version }): a
    // node still at that version was last written here, by no Leaf process.
    this.wrote = null
    this.attempted = false
    this.held = new Map() // workerId -> { session, version }
    this.cacheFile = options.cacheFile ?? null
    this.offline = false
  }

  /** `ip:port`, this registry's Leaf node identity (the IP is found at the first call when
   * no identity was given). */
  get identity() {
    return `${this.ip ?? '127.0.0.1'}:${this.port}`
  }

  async ensureIp() {
    if (this.ip === null) this.ip = await outboundIp()
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

  /** Whether `error` says ZooKeeper cannot be reached (rather than refusing a request). */
  unreachable(error) {
    const code = error?.getCode?.()
    const E = this.zk.Exception
    return code === undefined
      ? /not connected to ZooKeeper|took longer than/.test(String(error?.message))
      : code === E.CONNECTION_LOSS || code === E.SESSION_EXPIRED || code === E.OPERATION_TIMEOUT
  }

  /** Drops the socket of a client this registry created (after a request timed out on
   * it): the client reconnects, resuming its session if ZooKeeper still has it. */
  dropConnection(c) {
    if (!this.ownsClient) return
    try {
      c.connectionManager?.socket?.destroy?.()
    } catch {}
  }

  /** A node-zookeeper-client call as a Promise of its results, bounded by `timeoutMs`. */
  call(c, method, ...args) {
    const request = new Promise((resolve, reject) =>
      c[method](...args, (error, ...results) => (error ? reject(error) : resolve(results))),
    )
    return deadline(
      request,
      this.timeoutMs,
      `ZooKeeper ${method} ${args[0]} on ${this.hosts ?? 'the client'} took longer than ${this.timeoutMs} ms`,
      () => this.dropConnection(c),
    )
  }

  /** Runs `ops` as one multi: `{ failed: -1, results }` when it committed, else the index
   * of the op that failed and its error code. */
  async multi(c, ops) {
    const t = c.transaction()
    for (const [op, ...args] of ops) t[op](...args)
    const request = new Promise((resolve, reject) =>
      t.commit((error, results) => {
        if (!error) return resolve({ failed: -1, code: 0, results })
        if (!Array.isArray(results)) return reject(error)
        const failed = results.findIndex((r) => r.err !== undefined && r.err !== 0)
        resolve({
          failed: failed < 0 ? 0 : failed,
          code: failed < 0 ? error.getCode?.() : results[failed].err,
          results,
        })
      }),
    )
    return deadline(
      request,
      this.timeoutMs,
      `ZooKeeper multi on ${this.hosts ?? 'the client'} took longer than ${this.timeoutMs} ms`,
      () => this.dropConnection(c),
    )
  }

  /** The connected client; an owned client whose session expired is replaced. */
  async connection() {
    const zk = this.zk
    await this.ensureIp()
    if (this.client && this.client.getState() === zk.State.EXPIRED && this.ownsClient) {
      this.client.close()
      this.client = null
    }
    if (!this.client) {
      this.client = zk.createClient(this.hosts, { sessionTimeout: this.sessionTimeoutMs, spinDelay: 200 })
      this.client.connect()
    }
    const c = this.client
    if (c.getState() !== zk.State.SYNC_CONNECTED) {
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

  /** `this.hosts`'s calls bounded as a whole: a registry call answers within `timeoutMs`. */
  bounded(name, fn) {
    return deadline(
      fn(),
      this.timeoutMs,
      `ZooKeeper ${name} on ${this.hosts ?? 'the client'} took longer than ${this.timeoutMs} ms`,
    )
  }

  leafJson(timestamp) {
    const data = { ip: this.ip, port: this.port, timestamp: Math.max(0, timestamp) }
    return Buffer.from(JSON.stringify(data))
  }

  /** The mark in a forever node (Leaf's reported timestamp + its report interval) and the
   * node's stat. */
  async markOf(c, path) {
    const [data, stat] = await this.call(c, 'getData', path)
    let timestamp
    try {
      timestamp = JSON.parse(data.toString()).timestamp
    } catch {
      timestamp = undefined
    }
    if (!Number.isSafeInteger(timestamp)) {
      throw new Error(
        `${path} holds ${JSON.stringify(String(data).slice(0, 100))}, not Leaf's {ip, port, timestamp} JSON`,
      )
    }
    return [timestamp + LEAF_REPORT_MS, stat]
  }

  async identityNodes(c, forever) {
    const [children] = await this.call(c, 'getChildren', forever)
    const mine = []
    for (const name of children) {
      const i = name.lastIndexOf('-')
      if (name.slice(0, i) === this.identity && /^\d+$/.test(name.slice(i + 1))) {
        mine.push([Number(name.slice(i + 1)), `${forever}/${name}`])
      }
    }
    return mine.sort((a, b) => a[0] - b[0])
  }

  /** Forgets the identity's forever node (it is gone): the next claim finds or creates it. */
  forgetNode() {
    this.node = null
    this.created = null
    this.wrote = null
    this.attempted = false
  }

  async resolve(c) {
    if (this.node !== null) {
      const [stat] = await this.call(c, 'exists', this.node[1])
      // The node is gone (the ensemble lost its data, or an operator removed it): find or
      // create the identity's node again.
      if (!stat) this.forgetNode()
    }
    if (this.node === null) {
      const forever = `${this.root}/forever`
      await this.call(c, 'mkdirp', forever)
      let mine = await this.identityNodes(c, forever)
      if (mine.length === 0) {
        const mode = this.zk.CreateMode.PERSISTENT_SEQUENTIAL
        const [created] = await this.call(c, 'create', `${forever}/${this.identity}-`, this.leafJson(Date.now()), mode)
        mine = await this.identityNodes(c, forever)
        if (mine[0][1] === created) this.created = created
        // Another process of this identity created one first: share its worker ID (the
        // ephemeral node lets one of them hold it) and drop the unused one.
        else await this.call(c, 'remove', created, -1)
      }
      this.node = mine[0]
    }
    return this.node
  }

  /** Records this registry's write of the forever node `path`, now at `version`. */
  noteWrote(path, version) {
    this.wrote = { path, version }
    if (this.created === path) this.created = null
  }

  live(workerId) {
    return `${this.root}/leaf_temporary/${workerId}`
  }

  async claim({ workerId, owner }) {
    let answer
    try {
      answer = await this.bounded('claim', () => this.claimOnline(workerId, owner))
    } catch (e) {
      const cached = this.unreachable(e) ? this.readCache() : null
      if (cached === null || (this.node !== null && this.node[0] !== cached[0])) throw e
      this.offline = true
      this.attempted = true
      return { workerId: cached[0], markMs: cached[1] }
    }
    this.offline = false
    if (answer !== null) this.writeCache(answer.workerId, answer.markMs)
    return answer
  }

  async claimOnline(workerId, owner) {
    const c = await this.connection()
    const [assigned, path] = await this.resolve(c)
    if (workerId !== assigned && this.attempted) return null
    this.attempted = true
    const live = this.live(assigned)
    const session = c.getSessionId().toString('hex')
    await this.call(c, 'mkdirp', `${this.root}/leaf_temporary`)
    const data = Buffer.from(JSON.stringify({ owner, reported_ms: 0 }))
    // The live node, and the server's time of this claim's write to it (created, then
    // written once more: node-zookeeper-client's create returns no stat).
    const E = this.zk.Exception
    const made = await this.multi(c, [
      ['create', live, data, this.zk.CreateMode.EPHEMERAL],
      ['setData', live, data, 0],
    ])
    let version
    let serverNow
    if (made.failed < 0) {
      ;({ version } = made.results[1].stat)
      serverNow = zkMs(made.results[1].stat.mtime)
    } else if (made.failed === 0 && made.code === E.NODE_EXISTS) {
      const [raw, stat] = await this.call(c, 'getData', live)
      let holder = null
      try {
        holder = JSON.parse(raw.toString()).owner
      } catch {}
      if (holder !== owner || stat.ephemeralOwner.toString('hex') !== session) {
        // Another holder may issue with this worker ID: a node created here is no longer
        // unused.
        this.created = null
        return null
      }
      // Already ours (a repeated claim): written again (as it is) for the server's time.
      const [written] = await this.call(c, 'setData', live, raw, stat.version)
      version = written.version
      serverNow = zkMs(written.mtime)
    } else {
      throw E.create(made.code)
    }
    this.held.set(assigned, { session, version })
    // Created by this registry a moment ago and never written since: no mark, and no Leaf
    // process reports into it.
    if (this.created === path) return { workerId: assigned, markMs: 0 }
    const [markMs, stat] = await this.markOf(c, path)
    const answer = { workerId: assigned, markMs }
    if (this.wrote === null || this.wrote.path !== path || this.wrote.version !== stat.version) {
      // Possibly a Leaf process's node: how long ago it was written, by the server's clock,
      // so the generator can tell a live Leaf node from a stopped one.
      answer.identity = this.identity
      answer.version = stat.version
      answer.ageMs = Math.max(0, serverNow - zkMs(stat.mtime))
    }
    return answer
  }

  /** The connection and this session's hold on `workerId`, or null once it is gone. */
  async holding(workerId) {
    const held = this.held.get(workerId)
    if (!held || !this.node || this.node[0] !== workerId) return null
    const c = await this.connection()
    if (c.getSessionId().toString('hex') !== held.session) {
      // The session that held it expired: the lease ended with it (not a loss of data).
      this.held.delete(workerId)
      return null
    }
    return [c, held]
  }

  async renew({ workerId, owner, markMs, reportedMs }) {
    if (this.offline) {
      const cached = this.readCache()
      if (cached === null || cached[0] !== workerId) return null
      try {
        // Back online: hold the worker ID in ZooKeeper again, or give it up. (No waiting
        // for a connection: the renewal must answer well within the lease.)
        if (this.client?.getState() !== this.zk.State.SYNC_CONNECTED) {
          throw new Error('not connected to ZooKeeper')
        }
        if ((await this.bounded('claim', () => this.claimOnline(workerId, owner))) === null) return null
        this.offline = false
      } catch (e) {
        if (!this.unreachable(e)) throw e
        const mark = Math.max(cached[1], markMs)
        this.writeCache(workerId, mark)
        return mark
      }
    }
    const mark = await this.bounded('renew', () => this.renewOnline(workerId, owner, markMs, reportedMs))
    if (mark !== null && mark >= 0) this.writeCache(workerId, mark)
    return mark
  }

  async renewOnline(workerId, owner, markMs, reportedMs) {
    const h = await this.holding(workerId)
    if (!h) return null
    const [c, held] = h
    const E = this.zk.Exception
    const path = this.node[1]
    const live = this.live(workerId)
    // The record is gone while this session held it: the ensemble lost it (a restore, a
    // rebuilt ensemble) or an operator removed it.
    const lost = (forever) => {
      this.held.delete(workerId)
      if (forever) this.forgetNode()
      return -1
    }
    const report = Buffer.from(JSON.stringify({ owner, reported_ms: reportedMs }))
    for (let attempt = 0; attempt < 5; attempt++) {
      let stored
      let stat
      try {
        ;[stored, stat] = await this.markOf(c, path)
      } catch (e) {
        if (e.getCode?.() === E.NO_NODE) return lost(true)
        throw e
      }
      const mark = Math.max(stored, markMs)
      const r = await this.multi(c, [
        ['setData', live, report, held.version],
        ['setData', path, this.leafJson(mark - LEAF_REPORT_MS), stat.version],
      ])
      if (r.failed < 0) {
        held.version = r.results[0].stat?.version ?? held.version + 1
        this.noteWrote(path, r.results[1].stat?.version ?? stat.version + 1)
        return mark
      }
      if (r.code === E.NO_NODE) return lost(r.failed === 1)
      if (r.failed === 0) {
        // The live node changed: still this session's and this owner's (a write whose
        // answer was lost), or another holder's.
        const [raw, now] = await this.call(c, 'getData', live)
        let holder = null
        try {
          holder = JSON.parse(raw.toString()).owner
        } catch {}
        if (holder !== owner || now.ephemeralOwner.toString('hex') !== held.session) {
          this.held.delete(workerId)
          return null
        }
        held.version = now.version
      }
    }
    throw new Error(`renew of worker ID ${workerId}: ${path} kept changing under it`)
  }

  async release({ workerId, markMs }) {
    if (this.offline) {
      this.offline = false
      this.writeCache(workerId, markMs)
      return true
    }
    const released = await this.bounded('release', () => this.releaseOnline(workerId, markMs))
    if (released) this.writeCache(workerId, markMs)
    return released
  }

  async releaseOnline(workerId, markMs) {
    const h = await this.holding(workerId)
    if (!h) return false
    const [c, held] = h
    const path = this.node[1]
    for (let attempt = 0; attempt < 5; attempt++) {
      const [stored, stat] = await this.markOf(c, path)
      // The mark goes down to `markMs` (the generator's sealed high-water mark) only in a
      // node this registry wrote last; a node another process wrote since (a Leaf node that
      // still reports, after a refused start) is never lowered, nor written to at all
      // unless the mark rises.
      const ours = this.wrote !== null && this.wrote.path === path && this.wrote.version === stat.version
      const ops = []
      if (ours || markMs > stored) {
        ops.push(['setData', path, this.leafJson(markMs - LEAF_REPORT_MS), stat.version])
      }
      ops.push(['remove', this.live(workerId), held.version])
      const r = await this.multi(c, ops)
      if (r.failed < 0 && ops.length === 2) this.noteWrote(path, r.results[0].stat?.version ?? stat.version + 1)
      if (r.failed < 0 || r.failed === ops.length - 1) {
        this.held.delete(workerId)
        return r.failed < 0
      }
    }
    return false
  }

  async peers() {
    return this.bounded('peers', () => this.peersOnline())
  }

  async peersOnline() {
    const c = await this.connection()
    const children = async (path) => {
      try {
        return (await this.call(c, 'getChildren', path))[0]
      } catch (e) {
        if (e.getCode?.() === this.zk.Exception.NO_NODE) return []
        throw e
      }
    }
    const temporary = `${this.root}/leaf_temporary`
    const forever = `${this.root}/forever`
    const entries = []
    const liveIds = new Set()
    const read = async (path) => {
      try {
        const [raw, stat] = await this.call(c, 'getData', path)
        return [JSON.parse(raw.toString()), zkMs(stat.mtime)]
      } catch {
        return [null, 0]
      }
    }
    for (const name of await children(temporary)) {
      const [data, mtime] = await read(`${temporary}/${name}`)
      liveIds.add(Number(name))
      if (data && data.reported_ms > 0) entries.push([Number(name), data.reported_ms, mtime])
    }
    for (const name of await children(forever)) {
      const workerId = Number(name.slice(name.lastIndexOf('-') + 1))
      if (liveIds.has(workerId)) continue // a segflake holder: its report is in its live node
      const [data, mtime] = await read(`${forever}/${name}`)
      if (data && data.timestamp > 0) entries.push([workerId, data.timestamp, mtime])
    }
    if (entries.length === 0) return []
    const newest = Math.max(...entries.map((e) => e[2]))
    return entries.filter((e) => newest - e[2] <= 10000).map(([w, r, m]) => [w, r, newest - m])
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
