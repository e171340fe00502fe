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
const { ioredisClient, checkTimeout } = require('./stores/_common.js')
const { luaScript, ReplicatedWrites, quitClient } = require('./stores/_redis.js')

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
    const { client, owns, target } = ioredisClient(clientOrUrl, timeoutMs)
    this.client = client
    this.ownsClient = owns
    this.writes = new ReplicatedWrites(client, target?.replicas, timeoutMs)
    this.script = null
    this.prefix = options.prefix ?? 'segflake'
    if (typeof this.client.segflakeSerialCount !== 'function') {
      this.client.defineCommand('segflakeSerialCount', { numberOfKeys: 1, lua: script() })
    }
  }

  /** Runs the core's script on `${prefix}:${key}` (acknowledged by the replicas the core's
   * rule asks for); resolves to its reply. */
  runSerialScript(key, args) {
    const full = `${this.prefix}:${key}`
    this.script ??= luaScript(script())
    return this.writes.run(`the serial count ${full}`, this.script, [full], args, () =>
      this.client.segflakeSerialCount(full, ...args),
    )
  }

  /** Quits the client if the counter created it. */
  async close() {
    if (this.ownsClient) await quitClient(this.client)
  }
}

module.exports = { RedisSerialCounter, script }
