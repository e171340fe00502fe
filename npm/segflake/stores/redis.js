'use strict'
// One counter per tag in Redis, advanced with INCRBY, through `ioredis` (a peer dependency).
//
//   const Redis = require('ioredis')
//   const { RedisStore } = require('segflake/stores/redis')
//   const store = new RedisStore(new Redis(process.env.REDIS_URL))
//   await store.ensureTag('order')
//
// The key `prefix + tag` holds the tag's max_id; an allocation runs INCRBY inside a small
// script that first checks the key exists (INCRBY on a missing key would start at 0).
// Durability: `appendonly yes` with `appendfsync always` (`everysec` survives a server
// process crash, not a power loss); without the append-only file a restarted server
// forgets the counters and hands the same IDs out again.

const { checkTag, checkStep, checkMaxId, toBigInt, ioredisClient, checkTimeout } = require('./_common.js')

const ALLOCATE = `
if redis.call('EXISTS', KEYS[1]) == 0 then
  return redis.error_reply('NOTAG')
end
return tostring(redis.call('INCRBY', KEYS[1], ARGV[1]))
`

class RedisStore {
  /**
   * @param {object|string} clientOrUrl an ioredis client, or a `redis://` URL for a new
   *   one (which the store then owns and `close()` quits, with `timeoutMs` as its connect,
   *   command and socket timeouts)
   * @param {{ prefix?: string, createMissingTags?: boolean, timeoutMs?: number }} [options]
   */
  constructor(clientOrUrl, options = {}) {
    const { client, owns } = ioredisClient(clientOrUrl, checkTimeout(options.timeoutMs))
    this.client = client
    this.ownsClient = owns
    this.prefix = options.prefix ?? 'segflake:leaf_alloc:'
    this.createMissingTags = options.createMissingTags ?? false
    if (typeof this.client.segflakeAllocate !== 'function') {
      this.client.defineCommand('segflakeAllocate', { numberOfKeys: 1, lua: ALLOCATE })
    }
    this.allocate = this.allocate.bind(this)
  }

  /** The Redis key holding `tag`'s max_id. */
  key(tag) {
    return this.prefix + checkTag(tag)
  }

  /**
   * Advances the tag's max_id by `step`; resolves to `{ maxId, step }`, or `null` when the
   * tag has no key (created first with `createMissingTags: true`). Redis keeps no step per
   * tag: every allocation uses the step the generator asks for.
   */
  async allocate(tag, step) {
    const key = this.key(tag)
    checkStep(step)
    for (let attempt = 0; ; attempt++) {
      try {
        return { maxId: toBigInt(await this.client.segflakeAllocate(key, step), 'INCRBY'), step }
      } catch (err) {
        if (!String(err && err.message).includes('NOTAG')) throw err
      }
      if (!this.createMissingTags || attempt > 0) return null
      await this.ensureTag(tag)
    }
  }

  /** Creates the tag's key (`SET NX`) with `maxId` (default 1); resolves to whether it was created. */
  async ensureTag(tag, { maxId = 1 } = {}) {
    const max = checkMaxId(maxId)
    const reply = await this.client.set(this.key(tag), max.toString(), 'NX')
    return reply === 'OK'
  }

  /** Quits the client if the store created it. */
  async close() {
    if (this.ownsClient) await this.client.quit()
  }
}

module.exports = { RedisStore }
