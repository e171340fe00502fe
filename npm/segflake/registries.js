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

const os = require('node:os')
const { ioredisClient } = require('./stores/_common.js')

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
   *   (which the registry then owns and `close()` quits)
   * @param {{ prefix?: string }} [options]
   */
  constructor(clientOrUrl, options = {}) {
    const { client, owns } = ioredisClient(clientOrUrl, 3000)
    this.client = client
    this.ownsClient = owns
    this.prefix = `{${options.prefix ?? 'segflake'}}`
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

  async claim({ workerId, owner, ttlMs }) {
    const [worker, mark] = this.keys(workerId)
    return num(await this.client.segflakeLeaseClaim(worker, mark, owner, ttlMs))
  }

  async renew({ workerId, owner, ttlMs, markMs, reportedMs }) {
    return num(await this.client.segflakeLeaseRenew(...this.keys(workerId), owner, ttlMs, markMs, reportedMs, workerId))
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
   *   new pool (owned: `close()` ends it)
   * @param {{ createSchema?: boolean }} [options] create the tables if missing (default true)
   */
  constructor(poolOrUrl, options = {}) {
    if (poolOrUrl && typeof poolOrUrl === 'object' && typeof poolOrUrl.query === 'function') {
      this.pool = poolOrUrl
      this.ownsPool = false
    } else {
      const { Pool } = require('pg')
      this.pool = new Pool({ connectionString: poolOrUrl, max: 2, connectionTimeoutMillis: 3000 })
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
    await this.pool.query(this.sql.schema)
  }

  async query(sql, params) {
    if (this.schemaReady === null) {
      this.schemaReady = this.ensureSchema().catch((e) => {
        this.schemaReady = null
        throw e
      })
    }
    await this.schemaReady
    return this.pool.query(sql, params)
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

class MysqlRegistry {
  /**
   * @param {object|string} poolOrUrl a `mysql2/promise` pool, or a `mysql://` URL for a new
   *   one (owned: `close()` ends it). A pool you pass must be created with
   *   `flags: ['FOUND_ROWS']` (an UPDATE then reports the rows it matched).
   * @param {{ createSchema?: boolean }} [options] create the tables if missing (default true)
   */
  constructor(poolOrUrl, options = {}) {
    if (poolOrUrl && typeof poolOrUrl === 'object' && typeof poolOrUrl.query === 'function') {
      this.pool = poolOrUrl
      this.ownsPool = false
    } else {
      const mysql = require('mysql2/promise')
      this.pool = mysql.createPool({
        uri: poolOrUrl,
        connectionLimit: 2,
        connectTimeout: 3000,
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
    try {
      for (const part of this.sql.schema.split(';')) {
        const body = part
          .split('\n')
          .filter((l) => !l.trim().startsWith('--'))
          .join('\n')
        if (body.trim()) await conn.query(body)
      }
    } finally {
      conn.release()
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

  async with(fn) {
    const conn = await this.connection()
    try {
      return await fn(conn)
    } finally {
      conn.release()
    }
  }

  async claimed(conn, workerId, owner) {
    const [rows] = await conn.execute(this.sql.claimed, [workerId, owner])
    return rows.length === 0 ? null : Number(rows[0].mark_ms)
  }

  claim({ workerId, owner, ttlMs }) {
    return this.with(async (conn) => {
      await conn.execute(this.sql.ensure, [workerId])
      await conn.execute(this.sql.claim, [owner, ttlMs, workerId, owner])
      const mark = await this.claimed(conn, workerId, owner)
      if (mark !== null) await conn.execute(this.sql.audit, auditRow(workerId, owner))
      return mark
    })
  }

  renew({ workerId, owner, ttlMs, markMs, reportedMs }) {
    return this.with(async (conn) => {
      await conn.execute(this.sql.renew, [ttlMs, markMs, reportedMs, workerId, owner])
      const [rows] = await conn.execute(this.sql.renewed, [owner, workerId])
      return rows.length === 0 || rows[0].mark_ms === null ? null : Number(rows[0].mark_ms)
    })
  }

  release({ workerId, owner, markMs }) {
    return this.with(async (conn) => {
      const [result] = await conn.execute(this.sql.release, [markMs, workerId, owner])
      return result.affectedRows === 1
    })
  }

  peers() {
    return this.with(async (conn) => {
      const [rows] = await conn.query(this.sql.peers)
      return rows.map((r) => [Number(r.worker_id), Number(r.reported_ms), Math.max(0, Number(r.age_ms))])
    })
  }

  async close() {
    if (this.ownsPool) await this.pool.end().catch(() => {})
  }
}

/** A registry for a `redis://`, `postgres://` (`postgresql://`) or `mysql://` URL. */
/** A Leaf node reports its clock every 3 s, so it may have issued IDs up to its reported
 * `timestamp` plus this; a forever node's mark is `timestamp + LEAF_REPORT_MS`. */
const LEAF_REPORT_MS = 3000

function invalidArgument(message) {
  const { InvalidArgumentError } = require('./index.js')
  return new InvalidArgumentError(message)
}

/** This host's first non-internal IPv4 address, else 127.0.0.1. */
function defaultIp() {
  for (const addresses of Object.values(os.networkInterfaces())) {
    for (const a of addresses ?? []) if (a.family === 'IPv4' && !a.internal) return a.address
  }
  return '127.0.0.1'
}

function parseIdentity(identity) {
  if (identity === undefined || identity === null) return [defaultIp(), '0']
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

/** A node-zookeeper-client call as a Promise. */
function zkCall(client, method, ...args) {
  return new Promise((resolve, reject) =>
    client[method](...args, (error, ...results) => (error ? reject(error) : resolve(results))),
  )
}

class ZooKeeperRegistry {
  /**
   * Worker-ID leases in ZooKeeper, in Leaf's layout (node-zookeeper-client): the identity's
   * persistent sequential node `{root}/forever/{ip}:{port}-{seq}` gives the worker ID and,
   * through its Leaf `timestamp`, the mark; an ephemeral `{root}/leaf_temporary/{id}` holds
   * the lease. A Leaf node is taken over by a process with its identity. docs/leases.md.
   * `cacheFile` (opt-in) is Leaf's `workerID.properties` fallback: every accepted claim,
   * renewal and release records `workerID=N` and `markMs=M` there, and while ZooKeeper
   * cannot be reached a claim takes the recorded worker ID and renewals raise the recorded
   * mark, so the process starts and keeps issuing through an outage. The risk: nothing then
   * keeps another process from holding the same worker ID (the same identity started
   * elsewhere, or a deleted forever node's number reused), and two holders of one worker ID
   * can issue the same IDs. Use it only where each identity runs once and forever nodes are
   * never deleted. Without it, a start-up without ZooKeeper fails with `RegistryError`.
   * @param {{ hosts?: string, client?: object, root?: string, identity?: string,
   *   sessionTimeoutMs?: number, cacheFile?: string }} options
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
    this.identity = `${this.ip}:${this.port}`
    this.root = root
    this.hosts = options.hosts
    this.sessionTimeoutMs = options.sessionTimeoutMs ?? 10000
    this.ownsClient = options.client === undefined
    this.client = options.client ?? null
    this.zk = require('node-zookeeper-client')
    this.node = null // [workerId, forever node path]
    this.fresh = false
    this.attempted = false
    this.held = new Map() // workerId -> { session, version }
    this.cacheFile = options.cacheFile ?? null
    this.offline = false
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
      ? /not connected to ZooKeeper/.test(String(error?.message))
      : code === E.CONNECTION_LOSS || code === E.SESSION_EXPIRED || code === E.OPERATION_TIMEOUT
  }

  /** The connected client; an owned client whose session expired is replaced. */
  async connection() {
    const zk = this.zk
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
      await new Promise((resolve, reject) => {
        const connected = () => (clearTimeout(timer), resolve())
        const timer = setTimeout(() => {
          c.removeListener('connected', connected)
          reject(new Error('not connected to ZooKeeper within 2 s'))
        }, 2000)
        c.once('connected', connected)
      })
    }
    return c
  }

  leafJson(timestamp) {
    const data = { ip: this.ip, port: this.port, timestamp: Math.max(0, timestamp) }
    return Buffer.from(JSON.stringify(data))
  }

  async markOf(c, path) {
    const [data, stat] = await zkCall(c, 'getData', path)
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
    return [timestamp + LEAF_REPORT_MS, stat.version]
  }

  async identityNodes(c, forever) {
    const [children] = await zkCall(c, 'getChildren', forever)
    const mine = []
    for (const name of children) {
      const i = name.lastIndexOf('-')
      if (name.slice(0, i) === this.identity && /^\d+$/.test(name.slice(i + 1))) {
        mine.push([Number(name.slice(i + 1)), `${forever}/${name}`])
      }
    }
    return mine.sort((a, b) => a[0] - b[0])
  }

  async resolve(c) {
    if (this.node === null) {
      const forever = `${this.root}/forever`
      await zkCall(c, 'mkdirp', forever)
      let mine = await this.identityNodes(c, forever)
      if (mine.length === 0) {
        const mode = this.zk.CreateMode.PERSISTENT_SEQUENTIAL
        const [created] = await zkCall(c, 'create', `${forever}/${this.identity}-`, this.leafJson(Date.now()), mode)
        mine = await this.identityNodes(c, forever)
        if (mine[0][1] === created) this.fresh = true
        // Another process of this identity created one first: share its worker ID (the
        // ephemeral node lets one of them hold it) and drop the unused one.
        else await zkCall(c, 'remove', created, -1)
      }
      this.node = mine[0]
    }
    return this.node
  }

  live(workerId) {
    return `${this.root}/leaf_temporary/${workerId}`
  }

  async claim({ workerId, owner }) {
    let answer
    try {
      answer = await this.claimOnline(workerId, owner)
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
    let version = 0
    try {
      await zkCall(c, 'mkdirp', `${this.root}/leaf_temporary`)
      const data = Buffer.from(JSON.stringify({ owner, reported_ms: 0 }))
      await zkCall(c, 'create', live, data, this.zk.CreateMode.EPHEMERAL)
    } catch (e) {
      if (e.getCode?.() !== this.zk.Exception.NODE_EXISTS) throw e
      const [raw, stat] = await zkCall(c, 'getData', live)
      let holder = null
      try {
        holder = JSON.parse(raw.toString()).owner
      } catch {}
      if (holder !== owner || stat.ephemeralOwner.toString('hex') !== session) return null
      version = stat.version
    }
    const markMs = this.fresh ? 0 : (await this.markOf(c, path))[0]
    this.fresh = false
    this.held.set(assigned, { session, version })
    return { workerId: assigned, markMs }
  }

  /** The connection and this session's hold on `workerId`, or null once it is gone. */
  async holding(workerId) {
    const held = this.held.get(workerId)
    if (!held || !this.node || this.node[0] !== workerId) return null
    const c = await this.connection()
    if (c.getSessionId().toString('hex') !== held.session) {
      this.held.delete(workerId)
      return null
    }
    return [c, held]
  }

  /** Runs `ops` as one multi; answers the index of the op that failed, or -1. */
  async multi(c, ops) {
    const t = c.transaction()
    for (const [op, ...args] of ops) t[op](...args)
    return new Promise((resolve, reject) =>
      t.commit((error, results) => {
        if (!error) return resolve(-1)
        if (!Array.isArray(results)) return reject(error)
        const failed = results.findIndex((r) => r.err !== undefined && r.err !== 0)
        resolve(failed < 0 ? 0 : failed)
      }),
    )
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
        if ((await this.claimOnline(workerId, owner)) === null) return null
        this.offline = false
      } catch (e) {
        if (!this.unreachable(e)) throw e
        const mark = Math.max(cached[1], markMs)
        this.writeCache(workerId, mark)
        return mark
      }
    }
    const mark = await this.renewOnline(workerId, owner, markMs, reportedMs)
    if (mark !== null) this.writeCache(workerId, mark)
    return mark
  }

  async renewOnline(workerId, owner, markMs, reportedMs) {
    const h = await this.holding(workerId)
    if (!h) return null
    const [c, held] = h
    const path = this.node[1]
    const report = Buffer.from(JSON.stringify({ owner, reported_ms: reportedMs }))
    for (let attempt = 0; attempt < 5; attempt++) {
      const [stored, foreverVersion] = await this.markOf(c, path)
      const mark = Math.max(stored, markMs)
      const failed = await this.multi(c, [
        ['setData', this.live(workerId), report, held.version],
        ['setData', path, this.leafJson(mark - LEAF_REPORT_MS), foreverVersion],
      ])
      if (failed < 0) {
        held.version += 1
        return mark
      }
      if (failed === 0) {
        // The live node is gone or not the one this session wrote.
        this.held.delete(workerId)
        return null
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
    const released = await this.releaseOnline(workerId, markMs)
    if (released) this.writeCache(workerId, markMs)
    return released
  }

  async releaseOnline(workerId, markMs) {
    const h = await this.holding(workerId)
    if (!h) return false
    const [c, held] = h
    const path = this.node[1]
    for (let attempt = 0; attempt < 5; attempt++) {
      const foreverVersion = (await this.markOf(c, path))[1]
      const failed = await this.multi(c, [
        ['setData', path, this.leafJson(markMs - LEAF_REPORT_MS), foreverVersion],
        ['remove', this.live(workerId), held.version],
      ])
      if (failed < 0 || failed === 1) {
        this.held.delete(workerId)
        return failed < 0
      }
    }
    return false
  }

  async peers() {
    const c = await this.connection()
    const children = async (path) => {
      try {
        return (await zkCall(c, 'getChildren', path))[0]
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
        const [raw, stat] = await zkCall(c, 'getData', path)
        return [JSON.parse(raw.toString()), Number(stat.mtime.readBigInt64BE())]
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

class EtcdRegistry {
  /**
   * Worker-ID leases in etcd v3 (etcd3): keys under `prefix`: `worker/<id>` (the owner, on an
   * etcd lease), `mark/<id>` (zero-padded) and `report/<id>`; claims are a txn on
   * `create_revision == 0`, renewals and releases compare the owner. docs/leases.md.
   * @param {{ endpoints?: string, client?: object, prefix?: string }} options `endpoints`:
   *   `HOST:PORT[,HOST:PORT]`, or `client`: an `Etcd3`
   */
  constructor(options = {}) {
    if ((options.endpoints === undefined) === (options.client === undefined)) {
      throw invalidArgument('EtcdRegistry needs exactly one of endpoints or client')
    }
    if (options.client) {
      this.client = options.client
      this.ownsClient = false
    } else {
      const { Etcd3 } = require('etcd3')
      const hosts = String(options.endpoints)
        .split(',')
        .map((h) => (h.includes('://') ? h : `http://${h}`))
      this.client = new Etcd3({ hosts, dialTimeout: 3000 })
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

  async claim({ workerId, owner, ttlMs }) {
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

  async renew({ workerId, owner, markMs, reportedMs }) {
    const c = this.client
    const lease = this.leases.get(workerId)
    if (!lease) return null
    try {
      await lease.keepaliveOnce()
    } catch (e) {
      if (e instanceof require('etcd3').EtcdLeaseInvalidError) {
        this.leases.delete(workerId)
        return null
      }
      throw e
    }
    const [worker, mark, report] = ['worker', 'mark', 'report'].map((w) => this.key(w, workerId))
    const id = await lease.grant()
    const putReport = () => c.put(report).value(String(reportedMs)).lease(id)
    const r = await c
      .if(worker, 'Value', '==', owner)
      .and(mark, 'Value', '<', pad(markMs))
      .then(c.put(mark).value(pad(markMs)), putReport())
      .else(c.get(worker), c.get(mark))
      .commit()
    if (r.succeeded) return markMs
    const stored = EtcdRegistry.read(r, 1)
    if (EtcdRegistry.read(r, 0) !== owner || stored === null) return null
    await c.if(worker, 'Value', '==', owner).then(putReport()).commit()
    return Number(stored)
  }

  async release({ workerId, owner, markMs }) {
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

  async peers() {
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
 * `etcd://HOST:PORT[,HOST:PORT][/PREFIX]` URL.
 */
function registryFromUrl(url) {
  const scheme = String(url).split('://')[0]
  if (scheme === 'redis') return new RedisRegistry(url)
  if (scheme === 'postgres' || scheme === 'postgresql') return new PgRegistry(url)
  if (scheme === 'mysql') return new MysqlRegistry(url)
  if (scheme === 'zk' || scheme === 'etcd') {
    const rest = String(url).slice(scheme.length + 3)
    const [location, query = ''] = rest.split('?')
    const slash = location.indexOf('/')
    const hosts = slash < 0 ? location : location.slice(0, slash)
    const path = slash < 0 ? '' : location.slice(slash)
    const params = new URLSearchParams(query)
    if (!hosts) throw invalidArgument(`invalid registry URL ${JSON.stringify(url)}: no HOST:PORT`)
    if (scheme === 'etcd') return new EtcdRegistry({ endpoints: hosts, prefix: path || '/segflake' })
    const timeout = params.get('session_timeout_ms')
    return new ZooKeeperRegistry({
      hosts,
      root: path || '/snowflake/segflake',
      identity: params.get('identity') ?? undefined,
      sessionTimeoutMs: timeout === null ? undefined : Number(timeout),
      cacheFile: params.get('cache_file') ?? undefined,
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
