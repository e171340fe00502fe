'use strict'
// Shared checks of the database stores. The error classes come from the segflake package
// itself, so a store's failures are `SegflakeError`s with a stable `code`.

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/
const MAX_STEP = 2 ** 31 - 1 // Leaf's `step` column is an INT
const MAX_ID = (1n << 63n) - 1n

function segflake() {
  return require('../index.js')
}

function invalid(message) {
  const { InvalidArgumentError } = segflake()
  return new InvalidArgumentError(message)
}

function checkTable(table) {
  if (typeof table !== 'string' || !IDENTIFIER.test(table)) {
    throw invalid(
      `invalid table name ${JSON.stringify(table)}: expected an unquoted SQL identifier ` +
        '(letters, digits and underscores, not starting with a digit, at most 63 characters)',
    )
  }
  return table
}

function checkTag(tag) {
  if (typeof tag !== 'string' || tag.length === 0 || tag.length > 128) {
    throw invalid(
      `invalid tag ${JSON.stringify(tag)}: expected a non-empty string of at most 128 characters ` +
        "(Leaf's biz_tag is a VARCHAR(128))",
    )
  }
  return tag
}

function checkStep(step) {
  if (typeof step === 'bigint') step = Number(step)
  if (!Number.isInteger(step) || step < 1 || step > MAX_STEP) {
    throw invalid(`invalid step ${String(step)}: expected an integer in 1..=${MAX_STEP}`)
  }
  return step
}

function checkMaxId(maxId) {
  let v
  try {
    v = BigInt(maxId)
  } catch {
    v = -1n
  }
  if ((typeof maxId === 'number' && !Number.isSafeInteger(maxId)) || v < 0n || v > MAX_ID) {
    throw invalid(`invalid maxId ${String(maxId)}: expected an integer in 0..=2^63-1`)
  }
  return v
}

let statements = null

/**
 * What the core's store and registry adapters send (`__native.__statements()`, parsed once):
 * `{ registries: {registry: {call: text}}, segment_stores: {store: {call: text}} }`.
 */
function coreStatements() {
  if (statements === null) statements = JSON.parse(segflake().__native.__statements())
  return statements
}

/**
 * The core's statement or script `call` for the segment store `store` ('postgres',
 * 'mysql', 'redis'; the core's `segment::statements`). With
 * `table` (checked), SQL: `{table}` replaced by it and, for PostgreSQL, the `?`
 * placeholders numbered (`$1`, `$2`, ...); no statement has `?` elsewhere.
 */
function segmentStatement(store, call, table = undefined) {
  const text = coreStatements().segment_stores?.[store]?.[call]
  if (typeof text !== 'string') throw new Error(`the core has no ${store} statement ${call}`)
  if (table === undefined) return text
  const sql = text.replaceAll('{table}', checkTable(table))
  if (store !== 'postgres') return sql
  let n = 0
  return sql.replace(/\?/g, () => `$${++n}`)
}

/**
 * Checks a give back's arguments (the tag, two max_ids) and returns them as
 * `{ expected, lowered }` bigints, or `null` when there is nothing to give back
 * (`maxId` not below `expectedMaxId`: the stores then answer false, as the core's do).
 */
function giveBackArgs(tag, expectedMaxId, maxId) {
  checkTag(tag)
  const expected = checkMaxId(expectedMaxId)
  const lowered = checkMaxId(maxId)
  return lowered < expected ? { expected, lowered } : null
}

/**
 * The core's give-back statements of the SQL store `store` ('postgres', 'mysql') for
 * `table`: `{ table, intent, apply }` (`give_back_table`, `give_back_intent`, `give_back`).
 */
function giveBackStatements(store, table) {
  return {
    table: segmentStatement(store, 'give_back_table', table),
    intent: segmentStatement(store, 'give_back_intent', table),
    apply: segmentStatement(store, 'give_back', table),
  }
}

/** A fresh random token (128 bits, hex) naming one give back: its record in the marker table. */
function giveBackToken() {
  return require('node:crypto').randomBytes(16).toString('hex')
}

/**
 * Records a give back (`give_back_intent` with `params`: the token, the tag, the new and
 * the expected max_id) through `run(sql, values)`, creating the marker table first unless
 * `store` saw it (`store.giveBackTableReady`). PostgreSQL and MySQL refuse `CREATE TABLE IF
 * NOT EXISTS` without the privilege even when the table exists, so a failed creation is
 * reported only if the record cannot be written either (a table made beforehand and
 * granted works): then a `StoreError` naming the table and the privileges needed.
 */
async function recordGiveBack(store, run, params) {
  let created = null
  if (!store.giveBackTableReady) {
    try {
      await run(store.giveBackSql.table, [])
    } catch (err) {
      created = err
    }
  }
  try {
    await run(store.giveBackSql.intent, params)
  } catch (err) {
    if (created === null) throw err
    const { StoreError } = segflake()
    throw new StoreError(
      `cannot give back: the marker table ${store.table}_give_back cannot be created (${created.message}) ` +
        `nor written (${err.message}); creating it needs the CREATE privilege (on the schema in PostgreSQL, ` +
        'on the database in MySQL), or create it beforehand (stores/sql/leaf_alloc.*.sql) and grant ' +
        'SELECT, INSERT, UPDATE on it (until then the IDs are not given back: a gap, never a duplicate)',
      { cause: err },
    )
  }
  store.giveBackTableReady = true
}

/** A database value (string, number or bigint) as a bigint, refusing lossy numbers. */
function toBigInt(value, what) {
  if (typeof value === 'bigint') return value
  if (typeof value === 'string' && /^[0-9]+$/.test(value)) return BigInt(value)
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value)
  const { StoreError } = segflake()
  throw new StoreError(`${what}: unexpected value ${String(value)} from the database`)
}

/** A database value as a JS number, refusing negative, fractional and unsafe values. */
function toCount(value, what) {
  const v = toBigInt(value, what)
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
    const { StoreError } = segflake()
    throw new StoreError(`${what}: unexpected value ${String(value)} from the database`)
  }
  return Number(v)
}

/**
 * A row's residue class `{ delta, remainder }` (Tinyid's columns), or `null` unless both
 * are set (non-NULL); `table` names the columns in errors.
 */
function residueOf(delta, remainder, table) {
  if (delta === null || delta === undefined || remainder === null || remainder === undefined) return null
  return { delta: toCount(delta, `${table}.delta`), remainder: toCount(remainder, `${table}.remainder`) }
}

/**
 * Leaf's rules for a tag's row, shared by the SQL stores:
 * - `useRowStep` (default true): the first allocation of each tag uses its row's `step`
 *   column, and every answer reports that step (`tagStep`), so the generator starts from
 *   it and never goes below it (Leaf's dynamic step); false: every allocation uses the
 *   step the generator asks for.
 * - `createMissingTags`: a step to create a tag without a row with (`maxId` 1) on first
 *   use; by default such a tag resolves to `null`, which callers see as `UnknownTagError`.
 * - Tinyid's multi-database mode: when the table has both `delta` and `remainder` columns,
 *   every answer also reports the row's residue class (`delta`, `remainder`, when both are
 *   set), so a `MultiStore` issues from this database's ranges only the IDs `≡ remainder
 *   (mod delta)`, whatever its place in the list. Whether the table has them is asked once,
 *   and again after a failed allocation (the pool then opens a new connection, which may
 *   reach another server).
 * A subclass implements `hasResidueColumns()` (resolving to whether the table has both
 * columns), `allocateRow(tag, step | null, residue)` (null: the row's step; `residue`:
 * read the row's class too), resolving to `{ maxId, step, rowStep, residue }` (`residue`:
 * `residueOf(...)` of the row) or `null` when the tag has no row, and `ensureTag`.
 */
class LeafRows {
  constructor(options = {}) {
    this.useRowStep = options.useRowStep ?? true
    if (typeof this.useRowStep !== 'boolean') {
      throw invalid(`invalid useRowStep ${String(this.useRowStep)}: expected a boolean`)
    }
    this.createMissingTags = options.createMissingTags == null ? null : checkStep(options.createMissingTags)
    this.started = new Set()
    this.residueColumns = null // a promise of whether the table has `delta` and `remainder`, once asked
    this.allocate = this.allocate.bind(this)
  }

  /** Whether the table has Tinyid's `delta` and `remainder` columns: asked once, and again after a failure. */
  askResidueColumns() {
    if (this.residueColumns === null) {
      const asked = this.hasResidueColumns()
      this.residueColumns = asked
      asked.catch(() => {
        if (this.residueColumns === asked) this.residueColumns = null
      })
    }
    return this.residueColumns
  }

  /**
   * Advances the tag's max_id; resolves to `{ maxId, step, tagStep }` (no `tagStep` with
   * `useRowStep: false`), with the row's `delta` and `remainder` when the table has those
   * columns and the row sets both, or `null` when the tag has no row.
   */
  async allocate(tag, step) {
    checkTag(tag)
    checkStep(step)
    const wanted = this.useRowStep && !this.started.has(tag) ? null : step
    let row
    try {
      const residue = await this.askResidueColumns()
      row = await this.allocateRow(tag, wanted, residue)
      if (row === null && this.createMissingTags !== null) {
        await this.ensureTag(tag, { step: this.createMissingTags, description: 'created by segflake' })
        row = await this.allocateRow(tag, wanted, residue)
      }
    } catch (err) {
      // The failed connection is replaced: the new one may reach another server.
      this.residueColumns = null
      throw err
    }
    if (row === null) return null
    this.started.add(tag)
    const answer = { maxId: row.maxId, step: row.step }
    if (this.useRowStep) answer.tagStep = row.rowStep
    if (row.residue) {
      answer.delta = row.residue.delta
      answer.remainder = row.residue.remainder
    }
    return answer
  }
}

/** The default transport deadline of every adapter here: a request (or a connection
 * attempt) on a dead or blackholed connection fails after this many milliseconds. */
const DEFAULT_TIMEOUT_MS = 3000

/** An adapter's `timeoutMs` option: its default, or an integer in 1..=600000. */
function checkTimeout(timeoutMs) {
  if (timeoutMs === undefined || timeoutMs === null) return DEFAULT_TIMEOUT_MS
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 600000) {
    throw invalid(`invalid timeoutMs ${String(timeoutMs)}: expected an integer in 1..=600000 (milliseconds)`)
  }
  return timeoutMs
}

/** TCP keepalive on idle pooled connections starts after this long (probes then follow the
 * system's settings); requests are bounded by the adapters' own deadlines. */
const KEEPALIVE_MS = 10000

/**
 * `clientOrUrl` as an ioredis client: `{ client, owns, target }`, the client itself, or a new
 * one for a Redis URL (a server, a Sentinel-monitored primary or a Cluster; see
 * `_redis.js`), which `owns` (its user quits it). A new client fails a command after one
 * reconnection attempt instead of queueing it for a whole outage (the generators retry on
 * their own), and has transport deadlines of `timeoutMs`: connecting (`connectTimeout`),
 * each command (`commandTimeout`), and a socket that stops answering while commands are
 * pending is dropped and reconnected (`socketTimeout`); TCP keepalive is on.
 */
function ioredisClient(clientOrUrl, timeoutMs = DEFAULT_TIMEOUT_MS, caFile = undefined) {
  const made = require('./_redis.js').redisClient(clientOrUrl, timeoutMs, caFile)
  if (made.owns) {
    made.client.on('error', (e) => lastRedisError.set(made.client, e))
    made.client.on('ready', () => lastRedisError.delete(made.client))
  }
  return made
}

/** The last connection error of each ioredis client made here, until it is ready again. */
const lastRedisError = new WeakMap()

/**
 * `error` (a command's on `client`), its message completed with the client's last
 * connection error when there is one: ioredis reports only that it gave up ("Reached the
 * max retries per request limit", "Command timed out"), which would hide why it could not
 * connect (a certificate the CA file does not vouch for, say).
 */
function redisError(client, error) {
  const last = lastRedisError.get(client)
  if (last && error instanceof Error && !error.message.includes(last.message)) {
    error.message = `${error.message}; the connection failed: ${last.message}`
  }
  return error
}

// ---------------------------------------------------------------------------------------
// TLS. A URL that asks for TLS never falls back to plaintext: the connection fails instead.
// The option and parameter names are the same as in the Python package.

/** The query parameter of `rediss://`, `zk+tls://` and `etcd+tls://` URLs naming a PEM file
 * of the certificate authorities to trust. */
const CA_FILE_PARAM = 'ca'

/**
 * `url` without the query parameters in `names` (case-insensitive), and their values (the
 * last of each, percent-decoded) by the name in `names`: `{ url, found }`.
 */
function takeParams(url, names) {
  const at = url.indexOf('?')
  if (at < 0) return { url, found: {} }
  const found = {}
  const kept = []
  const lowered = new Map(names.map((n) => [n.toLowerCase(), n]))
  for (const pair of url.slice(at + 1).split('&')) {
    if (!pair) continue
    const eq = pair.indexOf('=')
    const key = eq < 0 ? pair : pair.slice(0, eq)
    const value = eq < 0 ? '' : pair.slice(eq + 1)
    const name = lowered.get(decode(key).toLowerCase())
    if (name === undefined) kept.push(pair)
    else found[name] = decode(value)
  }
  return { url: kept.length ? `${url.slice(0, at)}?${kept.join('&')}` : url.slice(0, at), found }
}

const decode = (text) => decodeURIComponent(text)

/** The PEM file `path` (certificate authorities), or an InvalidArgumentError naming it. */
function readCaFile(path, what, read = require('node:fs').readFileSync) {
  if (!path) throw invalid(`${what}: the CA file parameter is empty`)
  let pem
  try {
    pem = read(path)
  } catch (e) {
    throw invalid(`${what}: the CA file ${JSON.stringify(path)} cannot be read (${e.code ?? e.message})`)
  }
  if (!String(pem).includes('-----BEGIN CERTIFICATE-----')) {
    throw invalid(`${what}: the CA file ${JSON.stringify(path)} holds no PEM certificate`)
  }
  return pem
}

/** A boolean URL parameter: true/1 or false/0. */
function parseFlag(value, what) {
  const v = String(value).trim().toLowerCase()
  if (['true', '1', 'yes', 'on'].includes(v)) return true
  if (['false', '0', 'no', 'off'].includes(v)) return false
  throw invalid(`invalid ${what} value ${JSON.stringify(value)}: expected true or false`)
}

/** Accepts any host name (the certificate authority is still checked). */
const anyHostName = () => undefined

/** libpq's connection parameters for TLS that `pgSsl` reads (and takes out of the URL). */
const PG_SSL_PARAMS = ['sslmode', 'sslrootcert', 'sslcert', 'sslkey']

/**
 * A `postgres://` URL's TLS as node-postgres's `ssl` option, with libpq's meaning:
 * `{ connectionString, ssl }`, the URL without libpq's TLS parameters (which pg would read
 * its own way) and the option (undefined when the URL has no `sslmode`).
 * - `disable`: plaintext (false);
 * - `require`: encrypted, the certificate not checked — unless `sslrootcert` is given,
 *   which libpq then checks as `verify-ca`;
 * - `verify-ca`: the certificate must chain to `sslrootcert` (else Node's certificate
 *   authorities; `sslrootcert=system` too); the host name is not checked;
 * - `verify-full`: that, and it must name the host connected to.
 * `allow` and `prefer` (libpq falls back to plaintext) are refused: pg cannot fall back.
 * `sslcert`/`sslkey` are a client certificate.
 */
function pgSsl(connectionString, read = undefined) {
  const { url, found } = takeParams(String(connectionString), PG_SSL_PARAMS)
  const mode = found.sslmode?.toLowerCase()
  if (mode === undefined) {
    if (Object.keys(found).length) {
      throw invalid(`${Object.keys(found).join(', ')} without sslmode: add sslmode=require, verify-ca or verify-full`)
    }
    return { connectionString: url, ssl: undefined }
  }
  if (mode === 'disable') {
    if (found.sslrootcert !== undefined) throw invalid('sslmode=disable contradicts sslrootcert')
    return { connectionString: url, ssl: false }
  }
  if (!['require', 'verify-ca', 'verify-full'].includes(mode)) {
    throw invalid(
      `unsupported sslmode ${JSON.stringify(found.sslmode)}: expected disable, require, verify-ca or verify-full ` +
        '(node-postgres cannot fall back to plaintext as allow and prefer do)',
    )
  }
  const root = found.sslrootcert
  const ssl = {}
  if (root !== undefined && root !== 'system') ssl.ca = readCaFile(root, 'PostgreSQL TLS (sslrootcert)', read)
  if (found.sslcert !== undefined) ssl.cert = (read ?? require('node:fs').readFileSync)(found.sslcert)
  if (found.sslkey !== undefined) ssl.key = (read ?? require('node:fs').readFileSync)(found.sslkey)
  if (mode === 'require' && root === undefined) {
    ssl.rejectUnauthorized = false
  } else {
    ssl.rejectUnauthorized = true
    if (mode !== 'verify-full') ssl.checkServerIdentity = anyHostName
  }
  return { connectionString: url, ssl }
}

/** MySQL's `ssl-mode` values (its own clients' `--ssl-mode`) accepted here. */
const MYSQL_SSL_MODES = ['DISABLED', 'REQUIRED', 'VERIFY_CA', 'VERIFY_IDENTITY']

/**
 * mysql2's `ssl` option for MySQL's `ssl-mode` and `ssl-ca` (undefined: mysql2's default,
 * plaintext): `DISABLED` plaintext; `REQUIRED` encrypted, the certificate not checked;
 * `VERIFY_CA` it must chain to `ssl-ca` (else Node's certificate authorities);
 * `VERIFY_IDENTITY` that, and it must name the host connected to. `ssl-ca` alone is
 * `VERIFY_CA` (as in MySQL's clients). `PREFERRED` (plaintext when the server has no TLS)
 * is refused.
 */
function mysqlSslOption(mode, ca, read = undefined) {
  if (mode === undefined) {
    if (ca === undefined) return undefined
    mode = 'VERIFY_CA'
  }
  const wanted = String(mode).trim().toUpperCase().replace(/-/g, '_')
  if (!MYSQL_SSL_MODES.includes(wanted)) {
    throw invalid(
      `unsupported ssl-mode ${JSON.stringify(mode)}: expected one of ${MYSQL_SSL_MODES.join(', ')} ` +
        '(PREFERRED, which falls back to plaintext, is not offered)',
    )
  }
  if (wanted === 'DISABLED') {
    if (ca !== undefined) throw invalid('ssl-mode=DISABLED contradicts ssl-ca (a CA file is for TLS)')
    return undefined
  }
  if (wanted === 'REQUIRED') return { rejectUnauthorized: false }
  const ssl = { rejectUnauthorized: true, verifyIdentity: wanted === 'VERIFY_IDENTITY' }
  if (ca !== undefined) ssl.ca = readCaFile(ca, 'MySQL TLS (ssl-ca)', read)
  return ssl
}

/**
 * A `mysql://` URL's TLS: `{ uri, ssl, stream }`, the URL without `ssl-mode` and `ssl-ca`
 * (also spelt `ssl_mode`, `ssl_ca`), mysql2's `ssl` option (see `mysqlSslOption`) and, for
 * `VERIFY_IDENTITY` to an IP address, mysql2's `stream` option (else undefined): mysql2
 * leaves the name to check to Node, which falls back to `localhost` for a socket opened to
 * an IP address, so the socket is told its address. Any other `ssl…` or `tls…` parameter
 * is refused, so a misspelt one is never ignored.
 */
function mysqlSsl(uri, read = undefined) {
  const names = ['ssl-mode', 'ssl_mode', 'ssl-ca', 'ssl_ca']
  const { url, found } = takeParams(String(uri), names)
  const query = url.indexOf('?') < 0 ? '' : url.slice(url.indexOf('?') + 1)
  for (const pair of query.split('&')) {
    const key = decode(pair.split('=')[0]).toLowerCase()
    if (key.startsWith('ssl') || key.startsWith('tls')) {
      throw invalid(`unsupported TLS parameter ${JSON.stringify(key)} in the MySQL URL; allowed: ssl-mode, ssl-ca`)
    }
  }
  const ssl = mysqlSslOption(found['ssl-mode'] ?? found.ssl_mode, found['ssl-ca'] ?? found.ssl_ca, read)
  let stream
  if (ssl?.verifyIdentity) {
    const parsed = new URL(url)
    const host = parsed.hostname.replace(/^\[|\]$/g, '')
    if (require('node:net').isIP(host)) stream = identityStream(host, Number(parsed.port || 3306))
  }
  return { uri: url, ssl, stream }
}

/** mysql2's `stream` factory: a TCP connection to `host:port` (an IP address) that Node's TLS
 * checks the server's certificate against (`_host`, which Node reads when no name is given). */
function identityStream(host, port) {
  return () => {
    const socket = require('node:net').connect(port, host)
    socket._host = host
    socket.setNoDelay(true)
    socket.on('connect', () => socket.setKeepAlive(true, KEEPALIVE_MS))
    return socket
  }
}

/**
 * etcd3's `hosts` and `credentials` for `HOST:PORT[,HOST:PORT]` endpoints (each optionally
 * `http://` or `https://`, all alike): `https://` ones are TLS, trusting `caFile` (a PEM
 * file; else Node's certificate authorities).
 */
function etcdHosts(endpoints, caFile, read = undefined) {
  const hosts = endpoints.split(',').map((h) => {
    const t = h.trim()
    if (!t.includes('://')) return `http://${t}`
    if (!/^https?:\/\//i.test(t)) throw invalid(`invalid etcd endpoint ${JSON.stringify(t)}: only http:// or https://`)
    return t
  })
  const secure = hosts.filter((h) => /^https:/i.test(h)).length
  if (secure > 0 && secure < hosts.length) {
    throw invalid(`etcd endpoints ${JSON.stringify(endpoints)} mix http:// and https://: use one for all`)
  }
  if (secure === 0) {
    if (caFile !== undefined) throw invalid('EtcdRegistry: caFile is for TLS, but the endpoints are not https://')
    return { hosts, credentials: undefined }
  }
  return {
    hosts,
    credentials: caFile === undefined ? undefined : { rootCertificate: readCaFile(caFile, 'etcd TLS', read) },
  }
}

/**
 * A `zk`/`etcd` URL's TLS request: `{ url, tls, caFile }`, the URL without `tls` and
 * `ca`, whether TLS is asked for (`+tls` on the scheme, or `tls=true`), and the CA
 * file. A CA file without TLS is refused.
 */
function urlTls(url) {
  const taken = takeParams(String(url), ['tls', CA_FILE_PARAM])
  let scheme = taken.url.split('://')[0].toLowerCase()
  let tls = scheme.endsWith('+tls')
  scheme = scheme.split('+')[0]
  if (taken.found.tls !== undefined) {
    const asked = parseFlag(taken.found.tls, 'tls')
    if (tls && !asked) throw invalid(`${scheme}+tls:// contradicts tls=${taken.found.tls}`)
    tls = tls || asked
  }
  const caFile = taken.found[CA_FILE_PARAM]
  if (caFile !== undefined && !tls) {
    throw invalid(
      `${CA_FILE_PARAM}=PATH is for TLS, but the URL ${JSON.stringify(String(url))} does not ask for it: use ${scheme}+tls://`,
    )
  }
  return { url: taken.url, tls, caFile }
}

// ---------------------------------------------------------------------------------------
// High availability: several servers in one URL, the first writable one used.

/**
 * The URL of each host of `SCHEME://[USERINFO@]HOST[:PORT][,HOST[:PORT]...][/REST]` (a
 * host may be `[IPv6]`), in the order given: `[url]` for one host. An empty entry in the
 * list is refused (InvalidArgumentError). Neither `pg` nor `mysql2` takes several hosts.
 */
function splitHosts(url) {
  const at = url.indexOf('://')
  if (at < 0) return [url]
  const scheme = url.slice(0, at)
  const rest = url.slice(at + 3)
  const ends = [rest.indexOf('/'), rest.indexOf('?')].filter((i) => i >= 0)
  const end = ends.length ? Math.min(...ends) : rest.length
  const authority = rest.slice(0, end)
  const tail = rest.slice(end)
  const userAt = authority.lastIndexOf('@')
  const userinfo = userAt < 0 ? '' : authority.slice(0, userAt + 1)
  const hosts = authority.slice(userAt + 1)
  if (!hosts.includes(',')) return [url]
  return hosts.split(',').map((h) => {
    if (!h.trim()) {
      throw invalid(`empty host in the host list ${JSON.stringify(hosts)}: expected HOST[:PORT][,HOST[:PORT]...]`)
    }
    return `${scheme}://${userinfo}${h.trim()}${tail}`
  })
}

/** The core's error codes (`read_only_errors`) with which `store`'s server refuses a write
 * because it is read-only: SQLSTATE 25006; MySQL/MariaDB 1290, 1836. */
function readOnlyCodes(store) {
  return new Set(segmentStatement(store, 'read_only_errors').split(/\s+/))
}

/** Whether `err` (pg's: `code` is the SQLSTATE; mysql2's: `errno`) is a read-only server's refusal. */
function isReadOnlyError(store, err) {
  if (!err || typeof err !== 'object') return false
  if (err.code === 'READ_ONLY_SERVER') return true
  const code = store === 'postgres' ? err.code : err.errno
  return code !== undefined && readOnlyCodes(store).has(String(code))
}

let readOnlyClass = null

/**
 * `ReadOnlyServerError` (a `StoreError`, code `READ_ONLY_SERVER`): a call reached a server
 * that takes no writes (a PostgreSQL standby, a MySQL/MariaDB replica with `read_only`):
 * the core's `writable` check refused every host of the URL, or the server refused a write
 * with one of the core's `read_only_errors`. Nothing was written and nothing is issued from
 * the call; the connections to that server are dropped, so the next call connects to the
 * first writable host of the URL (after a failover, the promoted one).
 */
function ReadOnlyServerError() {
  if (readOnlyClass === null) {
    const { StoreError } = segflake()
    readOnlyClass = class ReadOnlyServerError extends StoreError {}
    // Defined, not assigned: the WebAssembly backend's classes define `code` read-only, and
    // set each prototype's `name` (which a subclass would otherwise inherit).
    Object.defineProperty(readOnlyClass, 'code', { value: 'READ_ONLY_SERVER', enumerable: true })
    Object.defineProperty(readOnlyClass.prototype, 'name', {
      value: 'ReadOnlyServerError',
      writable: true,
      configurable: true,
    })
  }
  return readOnlyClass
}

function readOnlyError(why, cause = undefined) {
  const E = ReadOnlyServerError()
  return new E(
    `the server is read-only (${why}): nothing was written; the connection is dropped and the next call ` +
      'connects to a writable server',
    cause === undefined ? undefined : { cause },
  )
}

/**
 * A pool over the first writable server of several (or one): what the SQL stores and
 * registries make from a URL. `targets` are the per-host pool configs in order, `makePool`
 * makes a driver pool of one, `writable(pool)` runs the core's `writable` statement. The
 * pool is chosen on first use (each host in order: the first that answers writable is
 * kept, the others' pools ended), and dropped after any failed query, so the next call
 * chooses again: a server that went away or became read-only is left for the next
 * writable one. A read-only refusal is a `ReadOnlyServerError`. It offers what the stores
 * and registries use: `query`, `getConnection` (mysql2: a connection whose failed query
 * drops the pool too), `end`, `on`.
 */
class WritablePool {
  constructor(store, targets, makePool, writable) {
    this.store = store
    this.targets = targets
    this.makePool = makePool
    this.writable = writable
    this.active = null // a promise of the chosen pool
    this.ended = false
  }

  async choose() {
    const why = []
    let readOnly = 0
    for (const target of this.targets) {
      const pool = this.makePool(target)
      let ok
      try {
        ok = await this.writable(pool)
      } catch (e) {
        await pool.end().catch(() => {})
        if (this.targets.length === 1) throw this.translate(e)
        why.push(`${target.where}: ${e.message}`)
        continue
      }
      if (ok) return pool
      await pool.end().catch(() => {})
      readOnly += 1
      why.push(
        `${target.where}: ${this.store === 'postgres' ? 'in recovery (a standby) or transaction_read_only is on' : '@@global.read_only is set, a replica'}`,
      )
    }
    if (readOnly === this.targets.length) throw readOnlyError(why.join('; '))
    const { StoreError } = segflake()
    return Promise.reject(new StoreError(`no writable server among ${this.targets.length} hosts: ${why.join('; ')}`))
  }

  current() {
    if (this.ended) return Promise.reject(new Error('the pool was ended'))
    if (this.active === null) {
      const chosen = this.choose()
      this.active = chosen
      chosen.catch(() => {
        if (this.active === chosen) this.active = null
      })
    }
    return this.active
  }

  /** Forgets `pool` (if it is the chosen one) and ends it; the next call chooses again. */
  drop(pool) {
    const active = this.active
    if (active !== null) {
      active.then(
        (p) => {
          if (p === pool && this.active === active) this.active = null
        },
        () => {},
      )
    }
    // Only once it is no longer chosen: calls still running on it finish or fail first.
    setImmediate(() => pool.end().catch(() => {}))
  }

  translate(e) {
    return isReadOnlyError(this.store, e) && e.code !== 'READ_ONLY_SERVER' ? readOnlyError(e.message, e) : e
  }

  async query(...args) {
    const pool = await this.current()
    try {
      return await pool.query(...args)
    } catch (e) {
      this.drop(pool)
      throw this.translate(e)
    }
  }

  async getConnection() {
    const pool = await this.current()
    const conn = await pool.getConnection().catch((e) => {
      this.drop(pool)
      throw this.translate(e)
    })
    // A failed statement drops the pool too (a read-only refusal: the next call chooses again).
    const run =
      (method) =>
      async (...args) => {
        try {
          return await conn[method](...args)
        } catch (e) {
          this.drop(pool)
          throw this.translate(e)
        }
      }
    return {
      query: run('query'),
      execute: run('execute'),
      release: () => conn.release(),
      destroy: () => conn.destroy(),
    }
  }

  on() {
    return this
  }

  async end() {
    this.ended = true
    const active = this.active
    this.active = null
    if (active !== null) await (await active.catch(() => null))?.end().catch(() => {})
  }
}

/** `host:port` of a one-host URL, for messages. */
function hostOf(url, port) {
  try {
    const u = new URL(url)
    return `${u.hostname}:${u.port || port}`
  } catch {
    return url
  }
}

/**
 * A `WritablePool` of node-postgres pools made with `config` (a new `pg.Pool`'s): with a
 * `connectionString` (and no `ssl` of the config's own), one pool per host of it (one
 * host, or libpq's `postgres://U@H1:P1,H2:P2/DB`) with the URL's TLS (see `pgSsl`);
 * `target_session_attrs` may be left out or be `read-write` (what this does), another value
 * is refused. Else one pool of `config` as it is.
 */
function pgWritablePool(config) {
  let targets = [{ where: `${config.host ?? 'localhost'}:${config.port ?? 5432}`, config }]
  if (typeof config.connectionString === 'string' && config.ssl === undefined) {
    const { url, found } = takeParams(config.connectionString, ['target_session_attrs'])
    const attrs = found.target_session_attrs
    if (attrs !== undefined && attrs !== 'read-write') {
      throw invalid(
        `target_session_attrs=${attrs}: a store or registry writes, so it connects only to a server that ` +
          'takes writes (read-write, the default here)',
      )
    }
    targets = splitHosts(url).map((hostUrl) => {
      const { connectionString, ssl } = pgSsl(hostUrl)
      return {
        where: hostOf(connectionString, 5432),
        config: { ...config, connectionString, ...(ssl === undefined ? {} : { ssl }) },
      }
    })
  }
  const writable = segmentStatement('postgres', 'writable')
  return new WritablePool(
    'postgres',
    targets,
    (t) => {
      const { Pool } = require('pg')
      const pool = new Pool(t.config)
      // A pooled connection that the server closed emits 'error' on the pool; without a
      // listener Node would crash the process. The next query opens a new connection.
      pool.on('error', () => {})
      return pool
    },
    async (pool) => {
      const r = await pool.query({ text: writable, rowMode: 'array', query_timeout: config.query_timeout })
      return Number(r.rows[0][0]) === 1
    },
  )
}

/**
 * A `WritablePool` of mysql2 pools made with `config` (a new pool's): with a `uri` (and no
 * `ssl` of the config's own), one pool per host of it (one host, or
 * `mysql://USER:PASSWORD@H1:P1,H2:P2/DB`, segflake's spelling: mysql2 takes one host) with
 * the URL's TLS (see `mysqlSsl`); else one pool of `config` as it is. Each is checked with
 * the core's `writable` statement (`@@global.read_only`, asked explicitly: a user with
 * SUPER or READ ONLY ADMIN may write to a read-only server) within `timeoutMs`.
 */
function mysqlWritablePool(config, timeoutMs) {
  let targets = [{ where: `${config.host ?? 'localhost'}:${config.port ?? 3306}`, config }]
  if (typeof config.uri === 'string' && config.ssl === undefined) {
    targets = splitHosts(config.uri).map((hostUrl) => {
      const { uri, ssl, stream } = mysqlSsl(hostUrl)
      return {
        where: hostOf(uri, 3306),
        config: {
          ...config,
          uri,
          ...(ssl === undefined ? {} : { ssl }),
          ...(stream === undefined || config.stream !== undefined ? {} : { stream }),
        },
      }
    })
  }
  const writable = segmentStatement('mysql', 'writable')
  return new WritablePool(
    'mysql',
    targets,
    (t) => require('mysql2/promise').createPool(t.config),
    async (pool) => {
      const [rows] = await pool.query({ sql: writable, rowsAsArray: true, timeout: timeoutMs })
      return Number(rows[0][0]) === 1
    },
  )
}

module.exports = {
  splitHosts,
  isReadOnlyError,
  ReadOnlyServerError,
  WritablePool,
  pgWritablePool,
  mysqlWritablePool,
  checkTable,
  checkTag,
  checkStep,
  checkMaxId,
  toBigInt,
  residueOf,
  invalid,
  coreStatements,
  segmentStatement,
  giveBackArgs,
  giveBackStatements,
  giveBackToken,
  recordGiveBack,
  LeafRows,
  ioredisClient,
  redisError,
  CA_FILE_PARAM,
  takeParams,
  readCaFile,
  pgSsl,
  mysqlSsl,
  mysqlSslOption,
  urlTls,
  etcdHosts,
  checkTimeout,
  DEFAULT_TIMEOUT_MS,
  KEEPALIVE_MS,
}
