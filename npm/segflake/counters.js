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

const { statements } = require('./registries.js')
const { ioredisClient, checkTimeout } = require('./stores/_common.js')

/** The core's Redis script (KEYS: the second's key; ARGV: second, counterMaxBehindMs, counterMaxAheadMs, graceMs). */
function script() {
  return statements('redis').serial
}

class RedisSerialCounter {
  /**
   * @param {object|string} clientOrUrl an ioredis client, or a `redis://` URL for a new one
   *   (which the counter then owns and `close()` quits, with `timeoutMs`, default 3000, as
   *   its connect, command and socket timeouts)
   * @param {{ prefix?: string, timeoutMs?: number }} [options] keys are `${prefix}:${key}` (default 'segflake')
   */
  constructor(clientOrUrl, options = {}) {
    const { client, owns } = ioredisClient(clientOrUrl, checkTimeout(options.timeoutMs))
    this.client = client
    this.ownsClient = owns
    this.prefix = options.prefix ?? 'segflake'
    if (typeof this.client.segflakeSerialCount !== 'function') {
      this.client.defineCommand('segflakeSerialCount', { numberOfKeys: 1, lua: script() })
    }
  }

  /** Runs the core's script on `${prefix}:${key}`; resolves to its reply. */
  runSerialScript(key, args) {
    return this.client.segflakeSerialCount(`${this.prefix}:${key}`, ...args)
  }

  /** Quits the client if the counter created it. */
  async close() {
    if (this.ownsClient) await this.client.quit()
  }
}

module.exports = { RedisSerialCounter, script }
