// tests/vectors/sql.json against PgRegistry and MysqlRegistry themselves: every case runs
// its calls on one registry (the case's `kind`) over a pool that answers as pg or mysql2
// does. A vector's `statement` is `dialect.call`, the core's statement of that name: the
// text the registry sends must be that statement (with `$1, $2, ...` placeholders for pg),
// with the vector's parameters. pg answers `rowMode: 'array'` queries with BIGINT columns
// as text, mysql2 answers SELECTs with rows and its other statements with a
// ResultSetHeader. Runs on the backend loaded (native or wasm).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import os from 'node:os'
import { loadVectors, replayRegistryVectors, Script } from './helpers.mjs'

const require = createRequire(import.meta.url)
const { PgRegistry, MysqlRegistry, statements } = require('segflake/registries')

/** The text of the vector statement `dialect.call`, as `dialect`'s driver takes it. */
function statementText(name) {
  const [dialect, call] = name.split('.')
  const text = statements(dialect)[call]
  assert.ok(text, `no statement ${name}`)
  if (dialect !== 'postgres') return text
  let n = 0
  return text.replace(/\?/g, () => `$${++n}`)
}

/** A sent request against a scripted one, its statement compared as text. */
const sameQuery = (sent, op) => assert.deepEqual(sent, { ...op, statement: statementText(op.statement) })

class DatabaseError extends Error {}

/** A `pg.Pool` whose queries answer from `script`; the schema is answered here. */
class FakePg {
  constructor(script) {
    this.script = script
    this.schemaRuns = 0
  }

  async query(config) {
    if (config.text === statements('postgres').schema) {
      this.schemaRuns++
      return { rows: [], rowCount: 0, fields: [] }
    }
    assert.equal(config.rowMode, 'array', 'rows as arrays of columns')
    assert.equal(typeof config.query_timeout, 'number')
    const reply = this.script.next({ op: 'query', statement: config.text, params: config.values }, sameQuery)
    if (reply.error !== undefined) throw new DatabaseError(reply.error)
    // pg reads BIGINT (int8, type 20) as text.
    const width = reply.rows[0]?.length ?? 0
    return {
      rows: reply.rows.map((row) => row.map((v) => (typeof v === 'number' ? String(v) : v))),
      rowCount: reply.affected,
      fields: Array.from({ length: width }, (_, i) => ({ name: `c${i}`, dataTypeID: 20 })),
    }
  }

  async end() {}
}

/** A mysql2/promise pool whose connections answer from `script`. */
class FakeMysql {
  constructor(script) {
    this.script = script
    this.released = 0
    this.destroyed = 0
  }

  /** A pool's query (the registry takes any object with `query` as a pool). */
  async query() {
    throw new Error('the registry runs its statements on one connection')
  }

  async getConnection() {
    const pool = this
    const run = async (options, params = []) => {
      assert.equal(options.rowsAsArray, true, 'rows as arrays of columns')
      assert.equal(typeof options.timeout, 'number')
      const reply = pool.script.next({ op: 'query', statement: options.sql, params }, sameQuery)
      if (reply.error !== undefined) throw new DatabaseError(reply.error)
      if (!/^\s*SELECT/i.test(options.sql)) return [{ affectedRows: reply.affected, insertId: 0, warningStatus: 0 }]
      const width = reply.rows[0]?.length ?? 0
      return [reply.rows, Array.from({ length: width }, (_, i) => ({ name: `c${i}`, columnType: 8 }))]
    }
    return {
      query: (options) => run(options),
      execute: (options, params) => run(options, params),
      release: () => pool.released++,
      destroy: () => pool.destroyed++,
    }
  }

  async end() {}
}

const vectors = loadVectors('sql.json')

test('sql.json: every scripted conversation through PgRegistry and MysqlRegistry and a replaying pool', async () => {
  assert.ok(vectors.cases.length >= 5, `only ${vectors.cases.length} cases`)
  const kinds = new Set(vectors.cases.map((c) => c.kind ?? vectors.kind))
  assert.deepEqual([...kinds].sort(), ['mysql', 'postgres'])
  const script = new Script()
  // The audit rows name this host: the vectors' host name stands in for it.
  const realHostname = os.hostname
  os.hostname = () => vectors.config.host_name
  try {
    await replayRegistryVectors(vectors.cases, script, (c) => {
      const registry =
        (c.kind ?? vectors.kind) === 'postgres'
          ? new PgRegistry(new FakePg(script), { createSchema: false })
          : new MysqlRegistry(new FakeMysql(script), { createSchema: false })
      return registry
    })
  } finally {
    os.hostname = realHostname
  }
})

test('the schema is the core statement, run once before the first call', async () => {
  const script = new Script()
  const pg = new FakePg(script)
  const registry = new PgRegistry(pg)
  script.load({ exchange: [] }, 'peers')
  script.steps = [{ op: { op: 'query', statement: 'postgres.peers', params: [] }, reply: { rows: [] }, i: 0 }]
  assert.deepEqual(await registry.peers(), [])
  script.steps = [{ op: { op: 'query', statement: 'postgres.peers', params: [] }, reply: { rows: [] }, i: 0 }]
  assert.deepEqual(await registry.peers(), [])
  assert.equal(pg.schemaRuns, 1)

  const mysql = new FakeMysql(script)
  const schema = []
  const getConnection = mysql.getConnection.bind(mysql)
  mysql.getConnection = async () => {
    const conn = await getConnection()
    const query = conn.query
    conn.query = (options) =>
      /^\s*(CREATE|ALTER|SET)\b/.test(options.sql) ? (schema.push(options.sql), [[]]) : query(options)
    return conn
  }
  const my = new MysqlRegistry(mysql)
  script.steps = [{ op: { op: 'query', statement: 'mysql.peers', params: [] }, reply: { rows: [[3, 1700, 20]] }, i: 0 }]
  assert.deepEqual(await my.peers(), [[3, 1700, 20]])
  const flat = (s) =>
    s
      .replace(/--[^\n]*\n/g, '')
      .replace(/\s+/g, ' ')
      .trim()
  assert.deepEqual(
    schema.map(flat),
    flat(statements('mysql').schema)
      .split(';')
      .map((s) => s.trim())
      .filter(Boolean),
  )
  assert.equal(mysql.released, 2, 'the schema connection and the call connection are returned')
})

test('a failed statement rejects with the core message, the driver error as its cause', async () => {
  const script = new Script()
  const registry = new PgRegistry(new FakePg(script), { createSchema: false })
  script.steps = [
    { op: { op: 'query', statement: 'postgres.peers', params: [] }, reply: { error: 'connection terminated' }, i: 0 },
  ]
  const e = await registry.peers().catch((e) => e)
  assert.equal(e.message, 'connection terminated')
  assert.ok(e.cause instanceof DatabaseError)

  // MySQL: the connection of a failed statement is destroyed, not returned to the pool.
  const pool = new FakeMysql(script)
  const my = new MysqlRegistry(pool, { createSchema: false })
  script.steps = [{ op: { op: 'query', statement: 'mysql.peers', params: [] }, reply: { error: 'timeout' }, i: 0 }]
  await assert.rejects(my.peers(), /timeout/)
  script.steps = [{ op: { op: 'query', statement: 'mysql.peers', params: [] }, reply: { rows: [] }, i: 0 }]
  assert.deepEqual(await my.peers(), [])
  assert.deepEqual([pool.destroyed, pool.released], [1, 1])
})

test('calls of one SQL registry run one at a time', async () => {
  const script = new Script()
  const registry = new PgRegistry(new FakePg(script), { createSchema: false })
  const peers = { op: { op: 'query', statement: 'postgres.peers', params: [] }, reply: { rows: [[5, 1800, 0]] } }
  script.load({ exchange: [peers, peers] }, 'peers twice')
  assert.deepEqual(await Promise.all([registry.peers(), registry.peers()]), [[[5, 1800, 0]], [[5, 1800, 0]]])
  assert.equal(script.steps.length, 0)
})

// --- TLS: URLs as pg's and mysql2's ssl options (no server) --------------------------------

const path = require('node:path')
const tlsCommon = require(path.join(path.dirname(require.resolve('segflake/registries')), 'stores', '_common.js'))
const PEM = Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n')
/** A file reader that knows one CA file, /ca.pem. */
const readCa = (file) => {
  if (file !== '/ca.pem') throw Object.assign(new Error(`ENOENT: ${file}`), { code: 'ENOENT' })
  return PEM
}
const invalidArgument = (pattern) => (e) => e.code === 'INVALID_ARGUMENT' && pattern.test(e.message)

test('TLS: sslmode and sslrootcert become pg ssl options with libpq meaning', () => {
  const { pgSsl } = tlsCommon
  assert.deepEqual(pgSsl('postgres://u@db/app', readCa), { connectionString: 'postgres://u@db/app', ssl: undefined })
  assert.deepEqual(pgSsl('postgres://u@db/app?sslmode=disable&application_name=x', readCa), {
    connectionString: 'postgres://u@db/app?application_name=x',
    ssl: false,
  })
  // require: encrypted, nothing checked; with a CA file libpq checks it as verify-ca.
  assert.deepEqual(pgSsl('postgres://u@db/app?sslmode=require', readCa).ssl, { rejectUnauthorized: false })
  const requireCa = pgSsl('postgres://u@db/app?sslmode=require&sslrootcert=%2Fca.pem', readCa).ssl
  assert.equal(requireCa.rejectUnauthorized, true)
  assert.equal(requireCa.checkServerIdentity('other.host', {}), undefined)
  const ca = pgSsl('postgres://u@db/app?sslmode=verify-ca&sslrootcert=/ca.pem', readCa)
  assert.equal(ca.connectionString, 'postgres://u@db/app')
  assert.equal(ca.ssl.ca, PEM)
  assert.equal(ca.ssl.rejectUnauthorized, true)
  assert.equal(ca.ssl.checkServerIdentity('other.host', {}), undefined) // the host name is not checked
  const full = pgSsl('postgresql://u@db/app?sslrootcert=/ca.pem&sslmode=verify-full', readCa).ssl
  assert.deepEqual(full, { ca: PEM, rejectUnauthorized: true }) // Node's own host name check
  assert.deepEqual(pgSsl('postgres://u@db/app?sslmode=verify-full&sslrootcert=system', readCa).ssl, {
    rejectUnauthorized: true,
  })
  for (const [url, pattern] of [
    ['postgres://u@db/app?sslmode=prefer', /cannot fall back to plaintext/],
    ['postgres://u@db/app?sslmode=allow', /expected disable, require, verify-ca or verify-full/],
    ['postgres://u@db/app?sslrootcert=/ca.pem', /sslrootcert without sslmode/],
    ['postgres://u@db/app?sslmode=verify-full&sslrootcert=/missing.pem', /CA file "\/missing.pem" cannot be read/],
  ]) {
    assert.throws(() => pgSsl(url, readCa), invalidArgument(pattern), url)
  }
})

test('TLS: ssl-mode and ssl-ca become mysql2 ssl options as MySQL clients mean them', () => {
  const { mysqlSsl } = tlsCommon
  const plain = mysqlSsl('mysql://u:p@db:3306/app?charset=utf8mb4', readCa)
  assert.deepEqual(plain, { uri: 'mysql://u:p@db:3306/app?charset=utf8mb4', ssl: undefined, stream: undefined })
  assert.equal(mysqlSsl('mysql://u@db/app?ssl-mode=DISABLED', readCa).ssl, undefined)
  assert.deepEqual(mysqlSsl('mysql://u@db/app?ssl-mode=REQUIRED', readCa).ssl, { rejectUnauthorized: false })
  assert.deepEqual(mysqlSsl('mysql://u@db/app?ssl-mode=VERIFY_CA&ssl-ca=/ca.pem', readCa), {
    uri: 'mysql://u@db/app',
    ssl: { rejectUnauthorized: true, verifyIdentity: false, ca: PEM },
    stream: undefined,
  })
  assert.deepEqual(mysqlSsl('mysql://u@db/app?ssl_ca=/ca.pem', readCa).ssl.verifyIdentity, false) // ssl-ca alone
  const byName = mysqlSsl('mysql://u@db/app?ssl_mode=verify_identity&ssl-ca=/ca.pem', readCa)
  assert.deepEqual(byName.ssl, { rejectUnauthorized: true, verifyIdentity: true, ca: PEM })
  assert.equal(byName.stream, undefined) // mysql2 checks a host name itself
  // An IP address: mysql2 leaves the check to Node, which is told the address to check.
  const byIp = mysqlSsl('mysql://u@127.0.0.2:1/app?ssl-mode=VERIFY_IDENTITY&ssl-ca=/ca.pem', readCa)
  assert.equal(typeof byIp.stream, 'function')
  const socket = byIp.stream()
  socket.on('error', () => {})
  assert.equal(socket._host, '127.0.0.2')
  socket.destroy()
  for (const [query, pattern] of [
    ['ssl-mode=PREFERRED', /PREFERRED, which falls back to plaintext, is not offered/],
    ['sslmode=REQUIRED', /unsupported TLS parameter "sslmode"/],
    ['ssl=true', /unsupported TLS parameter "ssl"/],
    ['ssl-mode=DISABLED&ssl-ca=/ca.pem', /contradicts ssl-ca/],
    ['ssl-ca=/missing.pem', /cannot be read/],
  ]) {
    assert.throws(() => mysqlSsl(`mysql://u@db/app?${query}`, readCa), invalidArgument(pattern), query)
  }
})
