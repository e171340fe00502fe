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
//
// Every language sends the same scripts and statements (they come from the core), so
// Node, Python, C and CLI processes can share one registry. Any object with `claim`,
// `renew`, `release` and `peers` is a registry too (docs/leases.md has the contract).

const os = require('node:os')

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
    if (clientOrUrl && typeof clientOrUrl === 'object' && typeof clientOrUrl.defineCommand === 'function') {
      this.client = clientOrUrl
      this.ownsClient = false
    } else {
      const Redis = require('ioredis')
      this.client = new Redis(clientOrUrl, {
        maxRetriesPerRequest: 1,
        connectTimeout: 3000,
        retryStrategy: (times) => Math.min(times * 50, 500),
      })
      this.client.on('error', () => {})
      this.ownsClient = true
    }
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
    const { rows } = await this.query(this.sql.renew, [ttlMs, markMs, reportedMs, workerId, owner])
    return rows.length === 0 ? null : Number(rows[0].mark_ms)
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
      const [result] = await conn.execute(this.sql.renew, [ttlMs, markMs, reportedMs, workerId, owner])
      if (result.affectedRows === 0) return null
      return this.claimed(conn, workerId, owner)
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
function registryFromUrl(url) {
  const scheme = String(url).split('://')[0]
  if (scheme === 'redis') return new RedisRegistry(url)
  if (scheme === 'postgres' || scheme === 'postgresql') return new PgRegistry(url)
  if (scheme === 'mysql') return new MysqlRegistry(url)
  const { InvalidArgumentError } = require('./index.js')
  throw new InvalidArgumentError(
    `invalid registry URL ${JSON.stringify(url)}: allowed schemes are redis://, postgres:// and mysql://`,
  )
}

module.exports = { RedisRegistry, PgRegistry, MysqlRegistry, registryFromUrl, statements }
