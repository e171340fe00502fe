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
// Every call is a conversation of the core's protocol for its registry: which requests it
// sends (scripts, statements, nodes, keys, values) and what each reply means is the same in
// every language, so Node, Python, C and CLI processes can share one registry. The classes
// here only perform the requests with their clients, one call of a registry at a time. Any
// object with `claim`, `renew`, `release` and `peers` is a registry too (docs/leases.md has
// the contract).
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
//
// TLS (the same names as in the Python package): a URL that asks for TLS never falls back
// to plaintext, the connection fails instead. Redis: `rediss://` (the certificate checked
// against `caFile` or the URL's `ca=PATH`, else Node's certificate authorities, and
// the host name). PostgreSQL: libpq's `sslmode=require|verify-ca|verify-full` and
// `sslrootcert=PATH`, mapped to pg's `ssl` option as libpq means them. MySQL: its clients'
// `ssl-mode=REQUIRED|VERIFY_CA|VERIFY_IDENTITY` and `ssl-ca=PATH`, mapped to mysql2's `ssl`.
// PostgreSQL and MySQL URLs may list several servers (`postgres://U@H1:P1,H2:P2/DB`,
// `mysql://U:P@H1:P1,H2:P2/DB`): the first that takes writes is used, as the stores do
// (`pgWritablePool`, `mysqlWritablePool`); a read-only server's refusal is
// `ReadOnlyServerError`.
// etcd: `https://` endpoints with `caFile` (URL: `etcd+tls://…?ca=PATH`). ZooKeeper:
// node-zookeeper-client has no TLS, so `tls`/`caFile` (URL: `zk+tls://` or `?tls=true`)
// are refused with an error saying so (Python's kazoo-based registry supports them).

const os = require('node:os')
const {
  checkTimeout,
  KEEPALIVE_MS,
  pgWritablePool,
  mysqlWritablePool,
  urlTls,
  takeParams,
  redisError,
  etcdHosts,
  CA_FILE_PARAM,
  coreStatements,
} = require('./stores/_common.js')
const { luaScript, scriptThenWait, RedisConnection } = require('./stores/_redis.js')

/** The loaded backend's private layer (`__native` of the addon or of segflake-wasm). */
const native = () => require('./index.js').__native

/** The core's scripts or statements for `registry` ('redis', 'postgres', 'mysql'). */
function statements(registry) {
  return coreStatements().registries[registry]
}

/** This host's name in the SQL registries' audit rows. */
const hostName = () => os.hostname().slice(0, 64) || 'unknown'

/** A client error's text, as a protocol reply carries it. */
const errorText = (e) => String(e?.message ?? e)

/** A queue that runs each function after those before it have ended: one registry's calls
 * run one at a time (its protocol holds one conversation). */
function serialQueue() {
  let tail = Promise.resolve()
  return (fn) => {
    const result = tail.then(fn)
    tail = result.then(
      () => {},
      () => {},
    )
    return result
  }
}

/**
 * Registry call `name` (its arguments in call order) as a conversation of the core's
 * `protocol` (a `__RegistryProtocol`): each request it asks for is performed by `perform(op)`,
 * which resolves to `[reply, the client's error or null]`, and the reply handed back, until
 * the protocol answers. A failed call is an `Error` with the core's message, and the
 * client's error as its `cause` when the core failed on one. `live()` throws once the
 * caller gave up on the call, so that no reply reaches the protocol after that.
 */
async function runProtocol(protocol, name, args, perform, context = null, live = () => {}) {
  let step = protocol.start(name, args, context)
  let failure = null
  while (step.op !== undefined) {
    const [reply, error] = await perform(step)
    live()
    failure = error
    step = protocol.resume(reply)
  }
  if (step.error !== undefined) throw new Error(step.error, failure === null ? undefined : { cause: failure })
  return step.answer
}

/** An adapter's request that its protocol does not make. */
const unknownRequest = (what, op) =>
  new Error(`the ${what} protocol asked for ${JSON.stringify(op)}, which this adapter does not perform`)

/**
 * The registry methods of an adapter whose calls are its core protocol's conversations:
 * which requests each call sends and what the replies mean is the core's (the same in
 * every language); the subclass's `call(name, args)` performs the requests with its client.
 */
class ProtocolRegistry {
  claim({ workerId, owner, ttlMs }) {
    return this.call('claim', [workerId, owner, ttlMs])
  }

  renew({ workerId, owner, ttlMs, markMs, reportedMs }) {
    return this.call('renew', [workerId, owner, ttlMs, markMs, reportedMs])
  }

  release({ workerId, owner, markMs }) {
    return this.call('release', [workerId, owner, markMs])
  }

  peers() {
    return this.call('peers', [])
  }
}

class RedisRegistry extends ProtocolRegistry {
  /**
   * Which script each call runs with which keys and arguments is the core's protocol; this
   * class runs the scripts with ioredis (EVALSHA). On a server with replicas (`ROLE`), a
   * renewal counts only once every connected replica acknowledged it (`WAIT` on the
   * renewal's connection, half the timeout), so a failover never loses a mark the holder
   * issued under (the core's rule, statements `REPLICATED`); a URL's `replicas=N` replaces
   * `ROLE`: every renewal waits for N replicas (0: none).
   * @param {object|string} clientOrUrl an ioredis client (`Redis` or `Redis.Cluster`), or a
   *   Redis URL for a new one (which the registry then owns and `close()` quits, with
   *   `timeoutMs` as its connect, command and socket timeouts): `redis://`,
   *   `redis+sentinel://S1,S2/SERVICE[/DB]` (the primary the sentinels name, followed
   *   through failovers) or `redis+cluster://N1,N2`; `rediss...` is TLS: the server's
   *   certificate must chain to `caFile` (or the URL's `ca=PATH`, else Node's certificate
   *   authorities) and name the host
   * @param {{ prefix?: string, timeoutMs?: number, caFile?: string }} [options]
   */
  constructor(clientOrUrl, options = {}) {
    super()
    const timeoutMs = checkTimeout(options.timeoutMs)
    // Every Redis call settles within timeoutMs; a client made here that stays broken is
    // replaced (`RedisConnection`).
    this.connection = new RedisConnection(clientOrUrl, timeoutMs, options.caFile)
    const target = this.connection.target
    this.ownsClient = this.connection.owns
    /** The start-up check's warning (null: the marks are kept, or not checked yet or at all). */
    this.durabilityWarning = null
    this.durabilityChecked = options.checkDurability === false
    this.onWarning =
      options.onWarning ?? ((message) => process.emitWarning(message, { code: 'SEGFLAKE_REDIS_DURABILITY' }))
    // A replicated renewal waits at most half the timeout for the replicas.
    const waitMs = Math.max(1, Math.floor((timeoutMs ?? 3000) / 2))
    this.prefix = options.prefix ?? 'segflake'
    this.protocol = new (native().__RegistryProtocol)('redis', {
      prefix: this.prefix,
      wait_ms: waitMs,
      // The URL's replicas=N: every renewal waits for N replicas instead of those ROLE lists.
      ...(target?.replicas == null ? {} : { replicas: target.replicas }),
    })
    this.scripts = statements('redis')
    this.luaScripts = {} // the scripts as EVALSHA and EVAL take them, by name
    this.serial = serialQueue()
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
    const replies = []
    try {
      for (const name of native().__redisDurabilitySettings()) {
        const reply = await this.connection.bounded(`CONFIG GET ${name}`, () => this.client.config('GET', name))
        replies.push(...reply.map(String))
      }
    } catch {
      return null
    }
    this.durabilityWarning = native().__redisDurabilityWarning(replies) ?? null
    if (this.durabilityWarning !== null) this.onWarning(`RedisRegistry: ${this.durabilityWarning}`)
    return this.durabilityWarning
  }

  /** Registry call `name` as the core's protocol conversation (the first claim checks the
   * server's durability first). */
  call(name, args) {
    return this.serial(async () => {
      if (name === 'claim') await this.checkDurability()
      return runProtocol(this.protocol, name, args, (op) => this.perform(op))
    })
  }

  /** The ioredis command of the core's script `name`, defined on the client once (EVALSHA,
   * with the number of keys as its first argument). */
  command(name) {
    const command = `segflakeLease${name[0].toUpperCase()}${name.slice(1)}`
    if (typeof this.client[command] !== 'function') this.client.defineCommand(command, { lua: this.scripts[name] })
    return command
  }

  /** The ioredis client of the moment (a client made from a URL is replaced when it stays broken). */
  get client() {
    return this.connection.client
  }

  /** Performs the protocol's request `op`: `[reply, the client's error or null]`, within timeoutMs. */
  async perform(op) {
    if (op.op !== 'role' && op.op !== 'eval') throw unknownRequest('Redis', op)
    try {
      return await this.connection.bounded(`the registry's ${op.op === 'role' ? 'ROLE' : op.script}`, () =>
        this.performOnce(op),
      )
    } catch (e) {
      redisError(this.client, e)
      return [{ error: errorText(e) }, e]
    }
  }

  /** One request `op` (`perform` bounds it and turns its error into the protocol's reply). */
  async performOnce(op) {
    if (op.op === 'role') {
      // The connected replicas: ROLE's third element on a primary (a port on a replica).
      // A Cluster's ROLE goes to the primary of the registry's keys (braced into one slot),
      // in a pipeline with a command naming one of them.
      const role = this.client.isCluster
        ? await this.client
            .pipeline()
            .exists(`{${this.prefix}}`)
            .call('ROLE')
            .exec()
            .then(([, [error, value]]) => {
              if (error) throw error
              return value
            })
        : await this.client.call('ROLE')
      return [{ replicas: Array.isArray(role?.[2]) ? role[2].length : 0 }, null]
    }
    const command = this.command(op.script)
    const argv = [op.keys.length, ...op.keys, ...op.args]
    if (op.wait === undefined) return [{ value: await this.client[command](...argv) }, null]
    // The script and WAIT in one pipeline: WAIT counts the writes of its own connection.
    this.luaScripts[op.script] ??= luaScript(this.scripts[op.script])
    const { replicas, timeout_ms: timeoutMs } = op.wait
    const [value, acked] = await scriptThenWait(
      this.client,
      this.luaScripts[op.script],
      op.keys,
      op.args,
      replicas,
      timeoutMs,
    )
    return [{ value, acked }, null]
  }

  async close() {
    await this.connection.close().catch(() => {})
  }
}

/** `?` placeholders as `$1, $2, ...`. */
function numbered(sql) {
  let n = 0
  return sql.replace(/\?/g, () => `$${++n}`)
}

/** Integer text as a number, or a bigint beyond 2^53. */
const integer = (text) => (Number.isSafeInteger(Number(text)) ? Number(text) : BigInt(text))

/**
 * A SQL driver's rows (arrays of columns) as the SQL protocol reads them: the columns of an
 * integer type (`integral(field)`) that the driver gives as text (PostgreSQL's BIGINT,
 * MySQL's DECIMAL or big numbers) as integers.
 */
const sqlRows = (rows, fields, integral) =>
  rows.map((row) =>
    row.map((v, i) => (typeof v === 'string' && /^-?\d+$/.test(v) && integral(fields?.[i]) ? integer(v) : v)),
  )

/** PostgreSQL's integer types: int8, int2, int4, numeric. */
const PG_INTEGERS = new Set([20, 21, 23, 1700])
/** MySQL's integer types (mysql2's column types): DECIMAL, TINY, SHORT, LONG, LONGLONG, INT24,
 * YEAR, NEWDECIMAL. */
const MYSQL_INTEGERS = new Set([0, 1, 2, 3, 8, 9, 13, 246])

class PgRegistry extends ProtocolRegistry {
  /**
   * Which statements each call runs, with which parameters, and what the rows mean is the
   * core's protocol; this class runs them with pg.
   * @param {object|string} poolOrUrl a `pg.Pool` (or Client), or a `postgres://` URL for a
   *   new pool (owned: `close()` ends it; `timeoutMs` is its `connectionTimeoutMillis`,
   *   `statement_timeout` and `query_timeout`, with TCP keepalive on). TLS as libpq names
   *   it: `sslmode=require` (encrypted; the certificate is checked only when `sslrootcert`
   *   is given), `verify-ca` (it must chain to `sslrootcert=PATH`), `verify-full` (that, and
   *   it must name the host); `allow` and `prefer` are refused (pg cannot fall back)
   * @param {{ createSchema?: boolean, timeoutMs?: number }} [options] create the tables if
   *   missing (default true); every query's `query_timeout` (default 3000: a query that got
   *   no answer fails and its connection leaves the pool)
   */
  constructor(poolOrUrl, options = {}) {
    super()
    this.timeoutMs = checkTimeout(options.timeoutMs)
    if (poolOrUrl && typeof poolOrUrl === 'object' && typeof poolOrUrl.query === 'function') {
      this.pool = poolOrUrl
      this.ownsPool = false
    } else {
      // Of several hosts in the URL, the first writable one (see pgWritablePool).
      this.pool = pgWritablePool({
        ...(typeof poolOrUrl === 'string' ? { connectionString: poolOrUrl } : { ...(poolOrUrl || {}) }),
        max: 2,
        connectionTimeoutMillis: this.timeoutMs,
        statement_timeout: this.timeoutMs,
        query_timeout: this.timeoutMs,
        keepAlive: true,
        keepAliveInitialDelayMillis: KEEPALIVE_MS,
      })
      this.ownsPool = true
    }
    this.protocol = new (native().__RegistryProtocol)('postgres', { host_name: hostName() })
    this.texts = new Map() // the protocol's statements with numbered placeholders
    this.schemaReady = options.createSchema === false ? Promise.resolve() : null
    this.serial = serialQueue()
  }

  /** Creates the lease and audit tables if missing (done before the first call unless
   * `createSchema: false`); safe to call again. */
  async ensureSchema() {
    await this.pool.query({ text: this.protocol.describe().schema, query_timeout: this.timeoutMs })
  }

  call(name, args) {
    return this.serial(async () => {
      if (this.schemaReady === null) {
        this.schemaReady = this.ensureSchema().catch((e) => {
          this.schemaReady = null
          throw e
        })
      }
      await this.schemaReady
      return runProtocol(this.protocol, name, args, (op) => this.perform(op))
    })
  }

  /** Runs the protocol's statement: `[reply, the client's error or null]`. */
  async perform(op) {
    if (op.op !== 'query') throw unknownRequest('SQL', op)
    if (!this.texts.has(op.statement)) this.texts.set(op.statement, numbered(op.statement))
    const text = this.texts.get(op.statement)
    try {
      const r = await this.pool.query({ text, values: op.params, rowMode: 'array', query_timeout: this.timeoutMs })
      const rows = sqlRows(r.rows ?? [], r.fields, (f) => PG_INTEGERS.has(f?.dataTypeID))
      return [{ rows, affected: r.rowCount ?? 0 }, null]
    } catch (e) {
      return [{ error: errorText(e) }, e]
    }
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

class MysqlRegistry extends ProtocolRegistry {
  /**
   * Which statements each call runs, with which parameters, and what the rows mean is the
   * core's protocol; this class runs each call's statements on one pooled connection.
   * @param {object|string} poolOrUrl a `mysql2/promise` pool, or a `mysql://` URL for a new
   *   one (owned: `close()` ends it; `timeoutMs` is its `connectTimeout`, with TCP keepalive
   *   on). A pool you pass must be created with `flags: ['FOUND_ROWS']` (an UPDATE then
   *   reports the rows it matched). TLS as MySQL's clients name it: `ssl-mode=REQUIRED`
   *   (encrypted, the certificate not checked), `VERIFY_CA` (it must chain to `ssl-ca=PATH`,
   *   else Node's certificate authorities), `VERIFY_IDENTITY` (that, and it must name the
   *   host); `ssl-ca` alone is `VERIFY_CA`.
   * @param {{ createSchema?: boolean, timeoutMs?: number }} [options] create the tables if
   *   missing (default true); every query's timeout (default 3000: a query that got no
   *   answer fails and its connection is destroyed, not returned to the pool)
   */
  constructor(poolOrUrl, options = {}) {
    super()
    this.timeoutMs = checkTimeout(options.timeoutMs)
    if (poolOrUrl && typeof poolOrUrl === 'object' && typeof poolOrUrl.query === 'function') {
      this.pool = poolOrUrl
      this.ownsPool = false
    } else {
      // Of several hosts in the URL, the first writable one (see mysqlWritablePool).
      this.pool = mysqlWritablePool(
        {
          ...(typeof poolOrUrl === 'string' ? { uri: poolOrUrl } : { ...(poolOrUrl || {}) }),
          connectionLimit: 2,
          connectTimeout: this.timeoutMs,
          enableKeepAlive: true,
          keepAliveInitialDelay: KEEPALIVE_MS,
          flags: ['FOUND_ROWS'],
          multipleStatements: true,
        },
        this.timeoutMs,
      )
      this.ownsPool = true
    }
    this.protocol = new (native().__RegistryProtocol)('mysql', { host_name: hostName() })
    this.schemaReady = options.createSchema === false ? Promise.resolve() : null
    this.serial = serialQueue()
  }

  /** Creates the lease and audit tables if missing (done before the first call unless
   * `createSchema: false`); safe to call again. */
  async ensureSchema() {
    const conn = await this.pool.getConnection()
    let failed = false
    try {
      for (const part of this.protocol.describe().schema.split(';')) {
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

  /** A call's statements on one connection (a failed statement fails the call, so its
   * connection is destroyed). */
  call(name, args) {
    return this.serial(() =>
      this.with((conn) => runProtocol(this.protocol, name, args, (op) => this.perform(conn, op))),
    )
  }

  /** Runs the protocol's statement on `conn` with this registry's query timeout: `[reply, the
   * client's error or null]`. */
  async perform(conn, op) {
    if (op.op !== 'query') throw unknownRequest('SQL', op)
    const query = { sql: op.statement, timeout: this.timeoutMs, rowsAsArray: true }
    try {
      const [result, fields] = await (op.params.length ? conn.execute(query, op.params) : conn.query(query))
      if (!Array.isArray(result)) return [{ rows: [], affected: result?.affectedRows ?? 0 }, null]
      const rows = sqlRows(result, fields, (f) => MYSQL_INTEGERS.has(f?.columnType ?? f?.type))
      return [{ rows, affected: 0 }, null]
    } catch (e) {
      return [{ error: errorText(e) }, e]
    }
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

/**
 * A node-zookeeper-client of this package's own whose unparsable reply drops the connection
 * instead of killing the process. The client reads replies in its socket's data handler
 * and throws there when one does not parse as it expects: an error code it does not know,
 * or the answer to its connect request read after `close()` as the answer to the close
 * (a registry call that timed out while ZooKeeper was frozen closes such a client, and the
 * answer arrives when it resumes). Nothing can catch a throw there; dropped, the client
 * fails its pending requests with CONNECTION_LOSS (and reconnects unless closed), as it
 * does itself for a reply out of order.
 */
function dropConnectionOnBadReply(client) {
  const manager = client.connectionManager
  const read = manager?.onSocketData
  if (typeof read !== 'function') return
  manager.onSocketData = function (buffer) {
    try {
      read.call(this, buffer)
    } catch {
      this.pendingBuffer = null
      this.socket?.destroy?.()
    }
  }
}

/** The refusal of TLS to ZooKeeper (node-zookeeper-client has none). */
const zkTlsUnsupported = () =>
  invalidArgument(
    'TLS to ZooKeeper is not supported by node-zookeeper-client (it has no TLS): the connection ' +
      'would be plaintext, so it is refused (the Python registry supports it through kazoo; or reach ' +
      'ZooKeeper through a TLS tunnel and connect to its local end with zk://)',
  )

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
   * `tls` and `caFile` (TLS to ZooKeeper's `secureClientPort`, as the Python registry
   * offers through kazoo) are refused: node-zookeeper-client has no TLS, and a request for
   * TLS never falls back to plaintext.
   * @param {{ hosts?: string, client?: object, root?: string, identity?: string,
   *   sessionTimeoutMs?: number, cacheFile?: string, timeoutMs?: number, tls?: boolean,
   *   caFile?: string }} options
   */
  constructor(options = {}) {
    if ((options.hosts === undefined) === (options.client === undefined)) {
      throw invalidArgument('ZooKeeperRegistry needs exactly one of hosts or client')
    }
    if (options.tls || options.caFile !== undefined) throw zkTlsUnsupported()
    this.root = options.root ?? '/snowflake/segflake'
    // Without an identity the IP is found at the first call; the placeholder checks the
    // root now.
    this.identityPending = options.identity === undefined || options.identity === null
    this.protocol = this.newProtocol(this.identityPending ? '127.0.0.1:0' : options.identity)
    this.hosts = options.hosts
    this.sessionTimeoutMs = options.sessionTimeoutMs ?? 10000
    this.timeoutMs = checkTimeout(options.timeoutMs)
    this.ownsClient = options.client === undefined
    this.client = options.client ?? null
    // node-zookeeper-client, loaded when the first client is made.
    this.zk = null
    this.workerId = null // the worker ID of the last claim answered
    this.cacheFile = options.cacheFile ?? null
    this.offline = false
    this.serial = serialQueue()
    this.closed = false
  }

  /** The core's ZooKeeper protocol for `identity` under this registry's root. */
  newProtocol(identity) {
    return new (native().__RegistryProtocol)('zookeeper', { root: this.root, identity })
  }

  /** `ip:port`, this registry's Leaf node identity (the IP is found at the first call when
   * no identity was given). */
  get identity() {
    return this.protocol.describe().identity
  }

  async ensureIdentity() {
    if (!this.identityPending) return
    const ip = await outboundIp()
    if (!this.identityPending) return
    this.protocol = this.newProtocol(`${ip}:0`)
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
    throw unknownRequest('ZooKeeper', op)
  }

  /** The connected client; an owned client whose session expired is replaced. After
   * `close()` none is made again (a call still queued then fails), so a closed registry
   * never keeps the process alive. */
  async connection() {
    if (this.closed) throw new Error(`the ZooKeeperRegistry on ${this.hosts ?? 'the client'} is closed`)
    const state = (c) => c.getState()?.code
    // node-zookeeper-client reports an expired session once ('expired'), then its state
    // reads DISCONNECTED for good and it never reconnects: such a client is replaced.
    if (this.client && this.ownsClient && (state(this.client) === ZK.EXPIRED || this.client.segflakeExpired)) {
      this.closeClient(this.client)
      this.client = null
    }
    if (!this.client) {
      this.zk ??= require('node-zookeeper-client')
      const c = this.zk.createClient(this.hosts, { sessionTimeout: this.sessionTimeoutMs, spinDelay: 200 })
      c.once('expired', () => (c.segflakeExpired = true))
      dropConnectionOnBadReply(c)
      c.connect()
      this.client = c
    }
    const c = this.client
    if (state(c) !== ZK.SYNC_CONNECTED) {
      // Shorter than the call's own bound, so the failure names its cause.
      const wait = Math.max(1, Math.floor((this.timeoutMs * 2) / 3))
      await new Promise((resolve, reject) => {
        const connected = () => (clearTimeout(timer), resolve())
        const timer = setTimeout(() => {
          c.removeListener('connected', connected)
          // A client of ours that cannot reconnect (its session gone with a restarted server,
          // or a connection stuck half-open) is replaced: the next call starts a fresh session,
          // and the protocol claims again as for any lost session.
          if (this.ownsClient && this.client === c) {
            this.closeClient(c)
            this.client = null
          }
          reject(new Error(`not connected to ZooKeeper ${this.hosts ?? ''} within ${wait} ms`))
        }, wait)
        c.once('connected', connected)
      })
    }
    return c
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
      const context = { session: c.getSessionId().readBigInt64BE(), now_ms: Date.now() }
      return runProtocol(this.protocol, name, args, (op) => this.perform(c, op), context, live)
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

  /** Closes a client this registry made. A client without a connected session has its
   * socket dropped at once: an answer to its connect request still on its way has nobody
   * to go to. Otherwise the socket is dropped a second later if the close left it open (a
   * client whose session expired may never finish closing). */
  closeClient(c) {
    const connected = c.getState()?.code === ZK.SYNC_CONNECTED
    c.close()
    if (!connected) return this.dropConnection(c)
    const drop = setTimeout(() => this.dropConnection(c), 1000)
    if (typeof drop.unref === 'function') drop.unref()
  }

  async close() {
    this.closed = true
    if (this.ownsClient && this.client) this.closeClient(this.client)
    this.client = null
  }
}

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

/** The value the `i`th request of an etcd3 transaction read (a range), or null. */
const etcdRead = (response, i) => {
  const kvs = response.responses?.[i]?.response_range?.kvs ?? []
  return kvs.length ? kvs[0].value.toString() : null
}

/** A protocol comparison as the arguments of etcd3's `if` and `and`. */
function etcdCompare(k) {
  if (k.missing) return [k.key, 'Create', '==', 0]
  if (k.less !== undefined) return [k.key, 'Value', '<', k.less]
  return [k.key, 'Value', '==', k.equal]
}

class EtcdRegistry extends ProtocolRegistry {
  /**
   * Worker-ID leases in etcd v3 (etcd3): keys under `prefix`: `worker/<id>` (the owner, on an
   * etcd lease), `mark/<id>` (zero-padded) and `report/<id>`; claims are a txn on
   * `create_revision == 0`, renewals and releases compare the owner. A renewal whose
   * etcd lease is alive but whose worker key (or mark) is gone answers -1 (etcd lost the
   * record: `RegistryLostDataError`, then a new claim). docs/leases.md. Which requests each
   * call sends and what the answers mean is the core's protocol (the same in every
   * language); this class performs them with etcd3. Calls run one at a time.
   *
   * `timeoutMs` (default 3000) bounds every registry call; a client this registry creates
   * also dials within it, puts that deadline on every unary gRPC call, and pings an idle
   * connection (gRPC keepalive every 10 s, dropped after `timeoutMs` without an answer).
   * `https://HOST:PORT` endpoints (all of them) are TLS: the members' certificates must
   * chain to `caFile` (else Node's certificate authorities) and name the host connected
   * to; `caFile` with plaintext endpoints is refused.
   * @param {{ endpoints?: string, client?: object, prefix?: string, timeoutMs?: number, caFile?: string }} options
   *   `endpoints`: `HOST:PORT[,HOST:PORT]` (or `https://HOST:PORT,...`), or `client`: an `Etcd3`
   */
  constructor(options = {}) {
    super()
    if ((options.endpoints === undefined) === (options.client === undefined)) {
      throw invalidArgument('EtcdRegistry needs exactly one of endpoints or client')
    }
    if (options.client && options.caFile !== undefined) {
      throw invalidArgument('EtcdRegistry: caFile is for a client made from endpoints')
    }
    this.timeoutMs = checkTimeout(options.timeoutMs)
    if (options.client) {
      this.client = options.client
      this.ownsClient = false
    } else {
      const { hosts, credentials } = etcdHosts(String(options.endpoints), options.caFile)
      const { Etcd3 } = require('etcd3')
      const timeoutMs = this.timeoutMs
      this.client = new Etcd3({
        hosts,
        ...(credentials === undefined ? {} : { credentials }),
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
    this.config = { prefix: options.prefix ?? '/segflake' }
    this.protocol = new (native().__RegistryProtocol)('etcd', this.config)
    /** The etcd3 `Lease` of each etcd lease ID this registry granted that the protocol holds. */
    this.leases = new Map()
    this.serial = serialQueue()
  }

  /** Registry call `name` as the core's protocol conversation, bounded as a whole by
   * `timeoutMs` (a conversation that timed out is dropped: no reply reaches the protocol
   * after that). */
  call(name, args) {
    return this.serial(() => {
      const held = new Set(this.protocol.describe().leases)
      for (const id of this.leases.keys()) if (!held.has(id)) this.leases.delete(id)
      let over = false
      const live = () => {
        if (over) throw new Error(`etcd ${name}: dropped after its deadline`)
      }
      const conversation = runProtocol(this.protocol, name, args, (op) => this.perform(op), null, live)
      const late = `etcd ${name} took longer than ${this.timeoutMs} ms`
      return deadline(conversation, this.timeoutMs, late, () => (over = true))
    })
  }

  /** Performs the protocol's request `op`: `[reply, the client's error or null]`. */
  async perform(op) {
    const c = this.client
    try {
      switch (op.op) {
        case 'grant': {
          const lease = c.lease(op.ttl_s, { autoKeepAlive: false })
          lease.on('lost', () => {})
          const id = String(await lease.grant())
          this.leases.set(id, lease)
          return [{ lease: id }, null]
        }
        case 'keepalive': {
          const lease = this.leases.get(op.lease)
          if (lease === undefined) return [{ error: `etcd lease ${op.lease} was not granted here` }, null]
          try {
            return [{ ttl: Number((await lease.keepaliveOnce()).TTL) }, null]
          } catch (e) {
            // The lease expired or was revoked: it is gone (etcd3 says so with this error).
            if (e?.constructor?.name === 'EtcdLeaseInvalidError') return [{ ttl: 0 }, null]
            throw e
          }
        }
        case 'revoke':
          await this.revoke(op.lease).catch(() => {})
          return [null, null]
        case 'prefix':
          return [{ kvs: Object.entries(await c.getAll().prefix(op.prefix).strings()) }, null]
        case 'txn':
          return [await this.txn(op), null]
      }
    } catch (e) {
      return [{ error: errorText(e) }, e]
    }
    throw unknownRequest('etcd', op)
  }

  /** Revokes etcd lease `id` (with its etcd3 `Lease`, or by ID). */
  async revoke(id) {
    const lease = this.leases.get(id)
    this.leases.delete(id)
    await (lease ? lease.revoke() : this.client.leaseClient.leaseRevoke({ ID: id }))
  }

  /** The protocol's transaction, built with etcd3's builders: `{ succeeded, values }`, the
   * value each range of the branch taken read. */
  async txn({ compare, success, failure }) {
    const c = this.client
    const ops = (list) =>
      list.map((r) => {
        if (r.range !== undefined) return c.get(r.range)
        if (r.delete !== undefined) return c.delete().key(r.delete)
        const put = c.put(r.put).value(r.value)
        return r.lease === undefined ? put : put.lease(r.lease)
      })
    let response
    if (compare.length === 0) {
      // etcd3's builder starts with a comparison: a transaction without one goes to its KV
      // client as the builder would send it.
      const requests = (list) => Promise.all(ops(list).map((o) => o.op()))
      response = await c.kv.txn({ compare: [], success: await requests(success), failure: await requests(failure) })
    } else {
      const [first, ...rest] = compare.map(etcdCompare)
      let t = c.if(...first)
      for (const k of rest) t = t.and(...k)
      response = await t
        .then(...ops(success))
        .else(...ops(failure))
        .commit()
    }
    const taken = response.succeeded ? success : failure
    const values = taken.flatMap((r, i) => (r.range === undefined ? [] : [etcdRead(response, i)]))
    return { succeeded: Boolean(response.succeeded), values }
  }

  async close() {
    // Ends the holds at once; the protocol starts over without them.
    const leases = this.protocol.describe().leases
    this.protocol = new (native().__RegistryProtocol)('etcd', this.config)
    await Promise.all(leases.map((id) => this.revoke(id).catch(() => {})))
    this.leases.clear()
    if (this.ownsClient) this.client.close()
  }
}

/**
 * A registry for a URL (the same forms as the Python package's `from_url`):
 * - `redis://` or `rediss://` (TLS) `[[USER]:PASSWORD@]HOST:PORT[/DB][?replicas=N&ca=PATH]`,
 *   `redis+sentinel://S1:26379[,S2:26379...]/SERVICE[/DB]` (a Sentinel-monitored primary),
 *   `redis+cluster://N1:7000[,N2:7000...]` (`rediss+...` for TLS);
 * - `postgres://` (`postgresql://`), TLS by `sslmode=require|verify-ca|verify-full` and
 *   `sslrootcert=PATH`;
 * - `mysql://USER:PASSWORD@HOST:PORT/DB[?ssl-mode=REQUIRED|VERIFY_CA|VERIFY_IDENTITY&ssl-ca=PATH]`;
 * - `zk://HOST:PORT[,HOST:PORT]/ROOT[?identity=IP:PORT&session_timeout_ms=N&cache_file=PATH]`
 *   (`zk+tls://` or `?tls=true` is refused: node-zookeeper-client has no TLS);
 * - `etcd://` or `etcd+tls://` (TLS: https) `HOST:PORT[,HOST:PORT][/PREFIX][?ca=PATH]`
 *   (`?tls=true` is the same as `+tls`).
 * A URL asking for TLS never falls back to plaintext. `options.timeoutMs` (default 3000):
 * the adapter's transport deadline (keep it at or below the generator's `registryTimeoutMs`).
 */
function registryFromUrl(url, options = {}) {
  const scheme = String(url).split('://')[0].toLowerCase()
  const timeoutMs = checkTimeout(options.timeoutMs)
  if (/^rediss?(\+(sentinel|cluster))?$/.test(scheme)) return new RedisRegistry(url, { timeoutMs })
  if (scheme === 'postgres' || scheme === 'postgresql') return new PgRegistry(url, { timeoutMs })
  if (scheme === 'mysql') return new MysqlRegistry(url, { timeoutMs })
  if (['zk', 'zk+tls', 'etcd', 'etcd+tls'].includes(scheme)) {
    if (scheme.startsWith('zk')) {
      // Any request for TLS (the scheme, tls=..., ca=...) is refused, never ignored.
      const { found } = takeParams(String(url), ['tls', CA_FILE_PARAM])
      if (scheme === 'zk+tls' || Object.keys(found).length > 0) throw zkTlsUnsupported()
    }
    const { url: plain, tls, caFile } = urlTls(url)
    const rest = plain.slice(scheme.length + 3)
    const [location, query = ''] = rest.split('?')
    const slash = location.indexOf('/')
    const hosts = slash < 0 ? location : location.slice(0, slash)
    const path = slash < 0 ? '' : location.slice(slash)
    const params = new URLSearchParams(query)
    if (!hosts) throw invalidArgument(`invalid registry URL ${JSON.stringify(url)}: no HOST:PORT`)
    if (scheme.startsWith('etcd')) {
      const endpoints = tls
        ? hosts
            .split(',')
            .map((h) => `https://${h}`)
            .join(',')
        : hosts
      return new EtcdRegistry({ endpoints, prefix: path || '/segflake', timeoutMs, caFile })
    }
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
    `invalid registry URL ${JSON.stringify(url)}: allowed schemes are redis://, rediss://, redis+sentinel://, ` +
      'redis+cluster:// (rediss+...), postgres://, mysql://, ' +
      'etcd+tls://, zk:// and etcd://',
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
