'use strict'
// One counter per tag in Redis, advanced with INCRBY, through `ioredis` (a peer dependency).
//
//   const Redis = require('ioredis')
//   const { RedisStore } = require('segflake/stores/redis')
//   const store = new RedisStore(new Redis(process.env.REDIS_URL))
//   await store.ensureTag('order')
//
// Or from a URL, for a store that owns its client: `redis://HOST:PORT/DB`, a
// Sentinel-monitored primary `redis+sentinel://S1:26379,S2:26379/SERVICE[/DB]` (failovers
// followed) or a Cluster `redis+cluster://N1:7000,N2:7000` (`rediss...` for TLS; see
// `_redis.js`).
//
// Replicated servers: an allocation and a give back count only once the replicas the core's
// rule asks for acknowledged them (`WAIT` on the same connection): the URL's `replicas=N`
// (0: no wait), else every replica the primary had connected at first use (or the
// server's `min-replicas-to-write`, if more). An allocation fewer replicas acknowledged within half of
// `timeoutMs` fails with a `StoreError` (the core's message), so no range a failover could
// lose is issued from.
//
// The key `prefix + tag` holds the tag's max_id; an allocation runs INCRBY inside a small
// script that first checks the key exists (INCRBY on a missing key would start at 0).
// Durability: `appendonly yes` with `appendfsync always` (`everysec` survives a server
// process crash, not a power loss); without the append-only file a restarted server
// forgets the counters and hands the same IDs out again.
//
// A generator that closes gives back the IDs it fetched and did not issue (`giveBack`):
// the core's script sets the key to the lower value only if it still holds the expected
// one, once per give back (a marker key with a fresh token, in the key's cluster slot).
//
// Tinyid's multi-database mode: a server of a `MultiStore` states its residue class in the
// key `segflake:leaf_alloc_residue`, as `DELTA:REMAINDER`:
//   SET segflake:leaf_alloc_residue 2:0
// The store reads it at first use and again after each reconnection (the client's `ready`
// event) or failed allocation, and reports it with every allocation when it is set: the
// generator then issues from this server's ranges only the IDs ≡ REMAINDER (mod DELTA),
// whatever its place in the list, so clients that list the servers in different orders
// never overlap. Without the key the class is the store's place in the list; a value not
// of that form fails the allocation with a `StoreError` naming the key.

const {
  checkTag,
  checkStep,
  checkMaxId,
  toBigInt,
  checkTimeout,
  redisError,
  segmentStatement,
  giveBackArgs,
} = require('./_common.js')

const { randomUUID } = require('node:crypto')
const { luaScript, ReplicatedWrites, RedisConnection } = require('./_redis.js')

/**
 * The residue class `{ delta, remainder }` that `value` (the GET reply of `key`, the core's
 * `residue_key`) states, or `null` when unset.
 */
function parseResidue(value, key) {
  if (value === null || value === undefined) return null
  const text = String(value)
  const m = /^([0-9]+):([0-9]+)$/.exec(text)
  const delta = m && Number(m[1])
  const remainder = m && Number(m[2])
  if (!m || !Number.isSafeInteger(delta) || !Number.isSafeInteger(remainder)) {
    const { StoreError } = require('../index.js')
    throw new StoreError(`${key} is ${JSON.stringify(text)}, not DELTA:REMAINDER (two non-negative integers, e.g. 2:0)`)
  }
  return { delta, remainder }
}

/** The core's allocation and give-back scripts as `luaScript`s, made once. */
const once = (make) => {
  let made = null
  return () => (made ??= make())
}
const ALLOCATE = once(() => luaScript(segmentStatement('redis', 'allocate')))
const GIVE_BACK = once(() => luaScript(segmentStatement('redis', 'give_back')))

class RedisStore {
  /**
   * @param {object|string} clientOrUrl an ioredis client (`Redis` or `Redis.Cluster`), or a
   *   Redis URL for a new one (which the store then owns and `close()` quits, with
   *   `timeoutMs` as its connect, command and socket timeouts): `redis://` (one server),
   *   `redis+sentinel://` (the primary the sentinels name) or `redis+cluster://`, with
   *   `replicas=N`; `rediss...` is TLS: the server's certificate must chain to `caFile` (or
   *   the URL's `ca=PATH`, else Node's certificate authorities) and name the host (a CA
   *   file with `redis://` is refused)
   * @param {{ prefix?: string, createMissingTags?: boolean, timeoutMs?: number, caFile?: string }} [options]
   */
  constructor(clientOrUrl, options = {}) {
    const timeoutMs = checkTimeout(options.timeoutMs)
    // Every call settles within timeoutMs; a client made here that stays broken is
    // replaced (`RedisConnection`).
    this.connection = new RedisConnection(clientOrUrl, timeoutMs, options.caFile)
    this.ownsClient = this.connection.owns
    // Allocations and give backs wait for the replicas (the core's rule; see the top).
    this.writes = new ReplicatedWrites(this.connection, this.connection.target?.replicas, timeoutMs)
    this.prefix = options.prefix ?? 'segflake:leaf_alloc:'
    this.createMissingTags = options.createMissingTags ?? false
    this.residue = null // a promise of the server's residue class, once asked
    // A new connection may reach another server: its class is read again.
    this.onReady = () => {
      this.residue = null
    }
    this.connection.onClient((client) => {
      if (typeof client.segflakeAllocate !== 'function') {
        client.defineCommand('segflakeAllocate', { numberOfKeys: 1, lua: segmentStatement('redis', 'allocate') })
      }
      if (typeof client.segflakeGiveBack !== 'function') {
        client.defineCommand('segflakeGiveBack', { numberOfKeys: 2, lua: segmentStatement('redis', 'give_back') })
      }
      this.residue = null
      if (typeof client.on === 'function') client.on('ready', this.onReady)
    })
    this.allocate = this.allocate.bind(this)
    this.giveBack = this.giveBack.bind(this)
  }

  /** The ioredis client of the moment (a client made from a URL is replaced when it stays broken). */
  get client() {
    return this.connection.client
  }

  /** The server's residue class from `segflake:leaf_alloc_residue`, or `null`: read once per connection. */
  residueClass() {
    if (this.residue === null) {
      const key = segmentStatement('redis', 'residue_key')
      const asked = this.client.get(key).then((value) => parseResidue(value, key))
      this.residue = asked
      asked.catch(() => {
        if (this.residue === asked) this.residue = null
      })
    }
    return this.residue
  }

  /** The Redis key holding `tag`'s max_id. */
  key(tag) {
    return this.prefix + checkTag(tag)
  }

  /**
   * Advances the tag's max_id by `step`; resolves to `{ maxId, step }` (with `delta` and
   * `remainder` when `segflake:leaf_alloc_residue` is set), or `null` when the tag has no
   * key (created first with `createMissingTags: true`). Redis keeps no step per tag: every
   * allocation uses the step the generator asks for.
   */
  async allocate(tag, step) {
    const key = this.key(tag)
    checkStep(step)
    try {
      return await this.connection.bounded(`the allocation for ${tag}`, () => this.allocateOnce(tag, key, step))
    } catch (err) {
      this.residue = null
      throw redisError(this.client, err)
    }
  }

  /** One allocation (`allocate` bounds it): the script, with the residue class and the replica wait. */
  async allocateOnce(tag, key, step) {
    const residue = await this.residueClass()
    for (let attempt = 0; ; attempt++) {
      try {
        const maxId = await this.writes.run(`the allocation for ${tag}`, ALLOCATE(), [key], [step], () =>
          this.client.segflakeAllocate(key, step),
        )
        const answer = { maxId: toBigInt(maxId, 'INCRBY'), step }
        if (residue !== null) {
          answer.delta = residue.delta
          answer.remainder = residue.remainder
        }
        return answer
      } catch (err) {
        if (!String(err && err.message).includes('NOTAG')) throw err
      }
      if (!this.createMissingTags || attempt > 0) return null
      await this.client.set(key, '1', 'NX')
    }
  }

  /**
   * Sets the tag's key from `expectedMaxId` down to `maxId` if it still holds
   * `expectedMaxId` (nobody allocated since), in one script: the IDs `[maxId,
   * expectedMaxId)` were fetched by a generator that closed without issuing them. Resolves
   * to whether it did (false without a command when `maxId` is not below `expectedMaxId`).
   */
  async giveBack(tag, expectedMaxId, maxId) {
    const args = giveBackArgs(tag, expectedMaxId, maxId)
    if (args === null) return false
    let reply
    try {
      // The marker (a fresh token) makes a resent script (ioredis resends a command whose
      // reply a reconnect lost) change nothing the second time.
      const key = this.key(tag)
      const marker = segmentStatement('redis', 'give_back_marker')
        .replace('<key>', key)
        .replace('<token>', randomUUID())
      const argv = [args.expected.toString(), args.lowered.toString()]
      reply = await this.connection.bounded(`the give back for ${tag}`, () =>
        this.writes.run(`the give back for ${tag}`, GIVE_BACK(), [key, marker], argv, () =>
          this.client.segflakeGiveBack(key, marker, ...argv),
        ),
      )
    } catch (err) {
      throw redisError(this.client, err)
    }
    return Number(reply) === 1
  }

  /** Creates the tag's key (`SET NX`) with `maxId` (default 1); resolves to whether it was created. */
  async ensureTag(tag, { maxId = 1 } = {}) {
    const max = checkMaxId(maxId)
    let reply
    try {
      const key = this.key(tag)
      reply = await this.connection.bounded(`the creation of ${tag}`, () => this.client.set(key, max.toString(), 'NX'))
    } catch (err) {
      throw redisError(this.client, err)
    }
    return reply === 'OK'
  }

  /** Quits the client if the store created it (and stops following a client it was given). */
  async close() {
    if (typeof this.client.off === 'function') this.client.off('ready', this.onReady)
    await this.connection.close()
  }
}

module.exports = { RedisStore }
