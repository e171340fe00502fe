'use strict'
// Shared per-second counters for `SerialGenerator#nextFromCounter`:
//
//   const { SerialGenerator } = require('segflake')
//   const { RedisSerialCounter } = require('segflake/counters')
//   const gen = new SerialGenerator({ counter: new RedisSerialCounter('redis://127.0.0.1:6379/0') })
//   const serial = await gen.nextFromCounter()
//
// A script counter is any object with `runSerialScript(key, args)`: the generator hands it
// the core's key (`serial:<yyMMddHHmmss><worker digits>`, after the counter's prefix and a
// colon) and arguments, and reads the reply itself. The script, the key naming, the expiry
// rule and the refusal of seconds outside `counterMaxBehindMs`/`counterMaxAheadMs`
// (ClockSkewError) come from the core, so every language counts alike (docs/serials.md).
//
// A counter made from a URL takes every spelling of the Redis stores (`redis://`,
// `redis+sentinel://…/SERVICE`, `redis+cluster://…`, `rediss…`, `replicas=N`), and on a
// replicated server a count is used only once the replicas the core's rule asks for
// acknowledged it (`WAIT` on the same connection; see `stores/_redis.js`): one fewer
// replicas acknowledged fails with a `StoreError`, so a failover never hands the same
// number out again.

const { statements } = require('./registries.js')
const { checkTimeout, redisError } = require('./stores/_common.js')
const { luaScript, ReplicatedWrites, RedisConnection } = require('./stores/_redis.js')

/** The core's Redis script (KEYS: the second's key; ARGV: second, counterMaxBehindMs, counterMaxAheadMs, graceMs). */
function script() {
  return statements('redis').serial
}

class RedisSerialCounter {
  /**
   * @param {object|string} clientOrUrl an ioredis client (`Redis` or `Redis.Cluster`), or a
   *   Redis URL for a new one (which the counter then owns and `close()` quits, with
   *   `timeoutMs`, default 3000, as its connect, command and socket timeouts)
   * @param {{ prefix?: string, timeoutMs?: number }} [options] keys are `${prefix}:${key}` (default 'segflake')
   */
  constructor(clientOrUrl, options = {}) {
    const timeoutMs = checkTimeout(options.timeoutMs)
    // Every count settles within timeoutMs; a client made here that stays broken is
    // replaced (`RedisConnection`).
    this.connection = new RedisConnection(clientOrUrl, timeoutMs)
    this.ownsClient = this.connection.owns
    this.writes = new ReplicatedWrites(this.connection, this.connection.target?.replicas, timeoutMs)
    this.script = null
    this.prefix = options.prefix ?? 'segflake'
    this.connection.onClient((client) => {
      if (typeof client.segflakeSerialCount !== 'function') {
        client.defineCommand('segflakeSerialCount', { numberOfKeys: 1, lua: script() })
      }
    })
  }

  /** The ioredis client of the moment (a client made from a URL is replaced when it stays broken). */
  get client() {
    return this.connection.client
  }

  /** Runs the core's script on `${prefix}:${key}` (acknowledged by the replicas the core's
   * rule asks for); resolves to its reply. */
  async runSerialScript(key, args) {
    const full = `${this.prefix}:${key}`
    this.script ??= luaScript(script())
    try {
      return await this.connection.bounded(`the serial count ${full}`, () =>
        this.writes.run(`the serial count ${full}`, this.script, [full], args, () =>
          this.client.segflakeSerialCount(full, ...args),
        ),
      )
    } catch (err) {
      throw redisError(this.client, err)
    }
  }

  /** Quits the client if the counter created it. */
  async close() {
    await this.connection.close()
  }
}

module.exports = { RedisSerialCounter, script }
