'use strict'
// Redis deployments for the Redis adapters (`RedisStore`, `RedisRegistry`,
// `RedisSerialCounter`), through ioredis (a peer dependency):
//
//   redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]
//   redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/SERVICE[/DB]
//   redis+cluster://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]
//
// `rediss...` for TLS; parameters `replicas=N` and (TLS) `ca=PATH`. The core reads the URL
// (the same spelling in every language) and decides the replica wait; this module builds the
// ioredis client (`Redis` for a server or a Sentinel-monitored primary, whose failovers
// ioredis follows; `Redis.Cluster`, which follows MOVED and ASK) and carries the wait: a
// write segflake issues from is followed by `WAIT` on the same connection, and a write
// fewer replicas acknowledged fails with the core's message.

const { createHash } = require('node:crypto')
const { invalid, readCaFile, DEFAULT_TIMEOUT_MS, KEEPALIVE_MS } = require('./_common.js')

/** The loaded backend's private layer (`__native` of the addon or of segflake-wasm). */
const native = () => require('../index.js').__native

/**
 * The Redis URL `url` as the core reads it: `{ mode: 'single' | 'sentinel' | 'cluster',
 * service, tls, nodes: [[host, port], ...], db, user, password, replicas, ca }` (absent
 * values `null`). Throws `InvalidArgumentError` saying what is wrong and what is allowed.
 */
function redisTarget(url) {
  return JSON.parse(native().__redisTarget(url))
}

/** A connection attempt again after 50 ms, 100 ms, ... at most every 500 ms. */
const retryStrategy = (times) => Math.min(times * 50, 500)

/**
 * What `redisClient` gives ioredis for `target` (see `redisTarget`): `{ mode, nodes, options }`,
 * the options of `new Redis(options)` (single server, Sentinel) or of `new Redis.Cluster(nodes,
 * options)`. Every connection has transport deadlines of `timeoutMs` and fails a command
 * after one reconnection attempt. TLS checks the certificate against `caFile` (else the URL's
 * `ca=PATH`, else Node's certificate authorities) and the host name; `read` reads the CA file.
 */
function clientOptions(target, timeoutMs = DEFAULT_TIMEOUT_MS, caFile = undefined, read = undefined) {
  let tls
  if (target.tls) {
    tls = { rejectUnauthorized: true }
    const ca = caFile ?? target.ca ?? undefined
    if (ca !== undefined) tls.ca = readCaFile(ca, 'Redis TLS', read)
  } else if (caFile !== undefined) {
    throw invalid('a CA file (caFile) is for TLS, but the Redis URL is not rediss...: use rediss://')
  }
  const server = {
    ...(target.user === null ? {} : { username: target.user }),
    ...(target.password === null ? {} : { password: target.password }),
    maxRetriesPerRequest: 1,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    keepAlive: KEEPALIVE_MS,
    ...(tls === undefined ? {} : { tls }),
  }
  const nodes = target.nodes.map(([host, port]) => ({ host, port }))
  if (target.mode === 'cluster') {
    return {
      mode: 'cluster',
      nodes,
      options: { redisOptions: server, clusterRetryStrategy: retryStrategy, slotsRefreshTimeout: timeoutMs },
    }
  }
  const options = { ...server, db: target.db, retryStrategy }
  if (target.mode === 'sentinel') {
    // The sentinels are asked without the data servers' credentials; a primary that became
    // a replica (READONLY) makes the client ask them again.
    Object.assign(options, {
      sentinels: nodes,
      name: target.service,
      sentinelCommandTimeout: timeoutMs,
      // The sentinels' +switch-master announcements move the client at once (`quitClient`
      // closes these subscriptions).
      failoverDetector: true,
      reconnectOnError: (error) => /^READONLY/.test(error.message),
      ...(tls === undefined ? {} : { enableTLSForSentinelMode: true, sentinelTLS: tls }),
    })
  } else {
    Object.assign(options, nodes[0])
  }
  return { mode: target.mode, nodes, options }
}

/**
 * `clientOrUrl` as an ioredis client: `{ client, owns, target }`. A client passed in is used
 * as it is (`owns` false, `target` null); a URL (any spelling of `redisTarget`) makes a new
 * one (`owns` true: its user quits it) with `clientOptions`.
 */
function redisClient(clientOrUrl, timeoutMs = DEFAULT_TIMEOUT_MS, caFile = undefined) {
  if (clientOrUrl && typeof clientOrUrl === 'object' && typeof clientOrUrl.defineCommand === 'function') {
    if (caFile !== undefined) throw invalid('caFile is for a client made from a URL, not for a client passed in')
    return { client: clientOrUrl, owns: false, target: null }
  }
  if (typeof clientOrUrl !== 'string') {
    throw invalid(
      `invalid Redis client ${String(clientOrUrl)}: expected an ioredis client (Redis or Redis.Cluster) or a Redis URL`,
    )
  }
  const target = redisTarget(clientOrUrl)
  const { mode, nodes, options } = clientOptions(target, timeoutMs, caFile)
  const Redis = require('ioredis')
  const client = mode === 'cluster' ? new Redis.Cluster(nodes, options) : new Redis(options)
  return { client, owns: true, target }
}

// ---------------------------------------------------------------------------------------
// Every call bounded; a client that stays broken replaced.

/**
 * An adapter's ioredis client (`redisClient`, through `_common.js`'s `ioredisClient`) and its
 * deadline. `bounded` runs a call with the client of the moment and settles it within
 * `timeoutMs` whatever ioredis does (a command in the offline queue has no `commandTimeout`;
 * a pipeline a connection close left waiting; a Sentinel client whose reconnection stalled):
 * a call that has not settled by then rejects with a `StoreError`. A client the adapter made
 * from a URL that missed the deadline, or that ended (status `end`: every command fails at
 * once with "Connection is closed."), is disconnected and replaced by a new one made the
 * same way, which asks the sentinels (or the cluster) afresh, so the next call finds the
 * new primary. A client passed in is never replaced. `onClient(setup)` runs `setup(client)`
 * on the client now and on each replacement (command definitions, listeners).
 */
class RedisConnection {
  constructor(clientOrUrl, timeoutMs = DEFAULT_TIMEOUT_MS, caFile = undefined) {
    const { ioredisClient } = require('./_common.js')
    this.make = () => ioredisClient(clientOrUrl, timeoutMs, caFile)
    const { client, owns, target } = this.make()
    this.client = client
    this.owns = owns
    this.target = target
    this.timeoutMs = timeoutMs
    this.setups = []
    this.closed = false
    this.replaced = 0 // clients replaced so far
  }

  /** Runs `setup(client)` on the client now and on every client that replaces it. */
  onClient(setup) {
    this.setups.push(setup)
    setup(this.client)
  }

  /** Replaces `broken` (if it is still the client, made here, and not closed) by a new client. */
  replace(broken) {
    if (!this.owns || this.closed || this.client !== broken) return
    const { client } = this.make()
    this.client = client
    this.replaced++
    for (const setup of this.setups) setup(client)
    broken.removeAllListeners('ready')
    // Its subscriptions to the sentinels too; an 'error' listener stays (ioredis may still emit).
    broken.disconnect()
  }

  /**
   * `run(client)` (a promise) with the client of the moment, settled within `timeoutMs`:
   * else rejected with a `StoreError` saying that `what` timed out (the client is then
   * replaced, as one that ended is; see the class).
   */
  async bounded(what, run) {
    let client = this.client
    if (client.status === 'end') {
      this.replace(client)
      client = this.client
    }
    let timer
    let late = false
    const deadline = new Promise((_, reject) => {
      timer = setTimeout(() => {
        late = true
        const { StoreError } = require('../index.js')
        const error = new StoreError(
          `Redis: ${what} timed out: no answer within ${this.timeoutMs} ms (timeoutMs); ` +
            (this.owns
              ? 'the client is replaced, the next call asks for the primary again'
              : 'the client is not answering'),
        )
        require('./_common.js').redisError(client, error)
        reject(error)
      }, this.timeoutMs)
    })
    try {
      return await Promise.race([Promise.resolve().then(() => run(client)), deadline])
    } catch (error) {
      if (late || client.status === 'end') this.replace(client)
      throw error
    } finally {
      clearTimeout(timer)
    }
  }

  /** Quits the client if it was made here; no client is made after. */
  async close() {
    this.closed = true
    if (this.owns) await quitClient(this.client)
  }
}

// ---------------------------------------------------------------------------------------
// The replica wait.

/** A Lua script as EVALSHA and EVAL take it: `{ lua, sha }`. */
function luaScript(lua) {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') }
}

/**
 * Runs `script` (`luaScript`) on `keys` with `args`, then `WAIT replicas timeoutMs`, in one
 * pipeline, so on one connection (with a Cluster, to the node that holds the keys' slot):
 * `WAIT` counts the replicas that have that connection's writes. EVALSHA first, EVAL when
 * the server lacks the script (nothing ran then). Never ioredis's own script commands here:
 * on NOSCRIPT they send the script again outside the pipeline, after its WAIT. Resolves to
 * `[reply, acked]`; rejects with the script's error or WAIT's.
 */
async function scriptThenWait(client, script, keys, args, replicas, timeoutMs) {
  for (const sha of [true, false]) {
    const pipeline = client.pipeline()
    if (sha) pipeline.evalsha(script.sha, keys.length, ...keys, ...args)
    else pipeline.eval(script.lua, keys.length, ...keys, ...args)
    pipeline.call('WAIT', replicas, timeoutMs)
    const [[error, value], [waitError, acked]] = await pipeline.exec()
    if (error) {
      if (sha && /^NOSCRIPT/.test(error.message)) continue
      throw error
    }
    if (waitError) throw waitError
    return [value, Number(acked)]
  }
  throw new Error('EVAL answered NOSCRIPT')
}

/** An error Redis answered with (a refused command), not one of the connection. */
const isReply = (error) => error?.name === 'ReplyError'

/** The server's replication, read once per client: `client` → a promise of `{ config, connected }`. */
const replication = new WeakMap()

/**
 * What the primary holding `key` says of its replication: `config`, its `CONFIG GET
 * min-replicas-to-write` reply (`[]` when refused, as managed services do), and `connected`,
 * the replicas `ROLE` lists (0 when refused). Asked once per client (a failed question is
 * asked again); with a Cluster, of the node that holds `key`'s slot.
 */
function serverReplication(client, key) {
  let asked = replication.get(client)
  if (asked === undefined) {
    asked = askReplication(client, key)
    replication.set(client, asked)
    asked.catch(() => {
      if (replication.get(client) === asked) replication.delete(client)
    })
  }
  return asked
}

async function askReplication(client, key) {
  const commands = [['ROLE'], ['CONFIG', 'GET', 'min-replicas-to-write']]
  let replies
  if (client.isCluster) {
    // A pipeline goes to the node of its keys' slot; EXISTS names the key.
    const pipeline = client.pipeline().exists(key)
    for (const command of commands) pipeline.call(...command)
    replies = (await pipeline.exec()).slice(1)
  } else {
    replies = await Promise.all(
      commands.map((command) =>
        client.call(...command).then(
          (value) => [null, value],
          (error) => [error, null],
        ),
      ),
    )
  }
  for (const [error] of replies) if (error && !isReply(error)) throw error
  const [[, role], [, config]] = replies
  return {
    connected: Array.isArray(role?.[2]) ? role[2].length : 0,
    config: Array.isArray(config) ? config.map(String) : [],
  }
}

/**
 * The writes an adapter issues from (segment allocations and give backs, serial counts),
 * each acknowledged by the replicas the core's rule asks for (`ReplicaWait`): the URL's
 * `replicas=N` (`configured`; null: not given), else every replica the primary had at
 * first use (or `min-replicas-to-write`, if more); `WAIT` waits at most half of
 * `timeoutMs`.
 */
class ReplicatedWrites {
  /** `connection`: anything whose `client` is the ioredis client of the moment (`RedisConnection`). */
  constructor(connection, configured, timeoutMs) {
    this.connection = connection
    this.configured = configured ?? null
    this.timeoutMs = timeoutMs
    this.resolved = null // the wait `{ replicas, timeoutMs }`, once known
  }

  get client() {
    return this.connection.client
  }

  /** The wait, resolved at the first write (on `key`'s primary). */
  async wait(key) {
    if (this.resolved === null) {
      const { config, connected } =
        this.configured === null ? await serverReplication(this.client, key) : { config: [], connected: 0 }
      this.resolved = native().__replicaWait(this.configured, config, connected, this.timeoutMs)
    }
    return this.resolved
  }

  /**
   * Runs `script` (`luaScript`) on `keys` with `args` as the write `what` (for messages):
   * without a wait, `plain()`; with one, the script and `WAIT` (`scriptThenWait`). Resolves
   * to the script's reply; rejects with the script's error, or with a `StoreError` carrying
   * the core's message when too few replicas acknowledged it (nothing may be issued from it).
   */
  async run(what, script, keys, args, plain) {
    const wait = await this.wait(keys[0])
    if (wait.replicas === 0) return plain()
    const [value, acked] = await scriptThenWait(this.client, script, keys, args, wait.replicas, wait.timeoutMs)
    const refused = native().__replicaWaitCheck(wait.replicas, wait.timeoutMs, what, acked)
    if (refused != null) {
      const { StoreError } = require('../index.js')
      throw new StoreError(refused)
    }
    return value
  }
}

/**
 * Quits a client made here: `QUIT`, then the connections QUIT leaves open are closed too
 * (with Sentinel, ioredis's subscriptions to the sentinels' failover announcements).
 */
async function quitClient(client) {
  try {
    await client.quit()
  } finally {
    client.disconnect()
  }
}

module.exports = {
  redisTarget,
  clientOptions,
  redisClient,
  RedisConnection,
  luaScript,
  scriptThenWait,
  ReplicatedWrites,
  quitClient,
}
