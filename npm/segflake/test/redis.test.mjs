// tests/vectors/redis.json against RedisRegistry itself: every case runs its calls on one
// registry over a client that answers as ioredis does (integers as numbers, nil as null,
// Redis errors as rejections, a pipeline's results as [error, value] pairs). Each request
// the registry makes must be the case's next `exchange[].op`: EVALSHA of the core's script
// of that name with its keys and arguments, ROLE, and WAIT in the script's pipeline. Runs
// on the backend loaded (native or wasm).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { createHash } from 'node:crypto'
import { loadVectors, replayRegistryVectors, Script } from './helpers.mjs'

const require = createRequire(import.meta.url)
const { RedisRegistry, statements } = require('segflake/registries')

const sha1 = (text) => createHash('sha1').update(text).digest('hex')

/** A Redis error reply, as ioredis rejects with it. */
class ReplyError extends Error {}

/** The script name of the core's script `lua`. */
function scriptName(lua) {
  const found = Object.entries(statements('redis')).find(([, text]) => text === lua)
  assert.ok(found, `a script that is not the core's: ${lua.slice(0, 60)}`)
  return found[0]
}

/** An ioredis client whose scripts, ROLE and pipelines answer from `script`. */
class FakeRedis {
  constructor(script) {
    this.script = script
    this.defined = []
  }

  /** ioredis's custom command: the keys count comes first unless `numberOfKeys` is set;
   * every argument is sent as text. */
  defineCommand(name, { lua, numberOfKeys }) {
    this.defined.push(name)
    const script = scriptName(lua)
    const request = (argv) => {
      const count = numberOfKeys ?? argv.shift()
      return { op: 'eval', script, keys: argv.slice(0, count).map(String), args: argv.slice(count).map(String) }
    }
    this[name] = async (...argv) => {
      const reply = this.script.next(request(argv))
      if (reply.error !== undefined) throw new ReplyError(reply.error)
      return reply.value
    }
  }

  async call(command, ...args) {
    assert.deepEqual([command, ...args], ['ROLE'])
    const reply = this.script.next({ op: 'role' })
    if (reply.error !== undefined) throw new ReplyError(reply.error)
    const replicas = Array.from({ length: reply.replicas }, (_, i) => ['10.0.0.9', String(6380 + i), '0'])
    return ['master', 100, replicas]
  }

  /** A pipeline of one script (EVALSHA: this server has every script) and WAIT, as the
   * registry sends a replicated renewal. */
  pipeline() {
    const client = this
    const queued = []
    const pipeline = {
      call(...args) {
        queued.push(['call', ...args])
        return pipeline
      },
      async exec() {
        assert.equal(queued.length, 2, 'the script and WAIT')
        const [[evalsha, sha, count, ...argv], [call, wait, replicas, timeoutMs]] = queued
        assert.deepEqual([evalsha, call, wait], ['evalsha', 'call', 'WAIT'])
        const [script] = Object.entries(statements('redis')).find(([, lua]) => sha1(lua) === sha) ?? []
        assert.ok(script, `EVALSHA of a script that is not the core's: ${sha}`)
        const [keys, args] = [argv.slice(0, count), argv.slice(count)].map((a) => a.map(String))
        const op = { op: 'eval', script, keys, args, wait: { replicas, timeout_ms: timeoutMs } }
        const reply = client.script.next(op)
        if (reply.error !== undefined) return [[new ReplyError(reply.error)], [null, 0]]
        return [
          [null, reply.value],
          [null, reply.acked],
        ]
      },
    }
    pipeline.evalsha = (...argv) => (queued.push(['evalsha', ...argv]), pipeline)
    return pipeline
  }

  async quit() {}
}

const vectors = loadVectors('redis.json')

test('redis.json: every scripted conversation through RedisRegistry and a replaying ioredis client', async () => {
  assert.ok(vectors.cases.length >= 5, `only ${vectors.cases.length} cases`)
  assert.equal(vectors.kind, 'redis')
  const script = new Script()
  const { prefix, wait_ms: waitMs } = vectors.config
  await replayRegistryVectors(vectors.cases, script, () => {
    // WAIT waits at most half the timeout.
    const client = new FakeRedis(script)
    return new RedisRegistry(client, { prefix, timeoutMs: waitMs * 2, checkDurability: false })
  })
})

test('a Redis error reply rejects with the core message, the client error as its cause', async () => {
  const script = new Script()
  const registry = new RedisRegistry(new FakeRedis(script), { prefix: 'p', checkDurability: false })
  script.load(
    {
      exchange: [
        {
          op: { op: 'eval', script: 'claim', keys: ['{p}:worker:1', '{p}:mark:1'], args: ['o', '1000'] },
          reply: { error: 'NOSCRIPT no such script' },
        },
      ],
    },
    'claim',
  )
  const e = await registry.claim({ workerId: 1, owner: 'o', ttlMs: 1000 }).catch((e) => e)
  assert.equal(e.message, 'Redis claim: NOSCRIPT no such script')
  assert.ok(e.cause instanceof ReplyError)
})

test('calls of one Redis registry run one at a time', async () => {
  const script = new Script()
  const registry = new RedisRegistry(new FakeRedis(script), { prefix: 'p', checkDurability: false })
  const peers = {
    op: { op: 'eval', script: 'peers', keys: ['{p}:reports'], args: ['{p}:worker:'] },
    reply: { value: [] },
  }
  script.load({ exchange: [peers, peers] }, 'peers twice')
  assert.deepEqual(await Promise.all([registry.peers(), registry.peers()]), [[], []])
  assert.equal(script.steps.length, 0)
})

// --- TLS: rediss:// URLs as ioredis tls options (no server) --------------------------------

test('TLS: rediss:// verifies against ca=PATH or caFile; a CA file with redis:// is refused', () => {
  const path = require('node:path')
  const stores = path.join(path.dirname(require.resolve('segflake/registries')), 'stores')
  const { redisError, ioredisClient } = require(path.join(stores, '_common.js'))
  const { redisTarget, clientOptions } = require(path.join(stores, '_redis.js'))
  const PEM = Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n')
  const read = (file) => {
    if (file !== '/ca.pem') throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' })
    return PEM
  }
  const refused = (fn, pattern) => assert.throws(fn, (e) => e.code === 'INVALID_ARGUMENT' && pattern.test(e.message))
  const tls = (url, caFile) => clientOptions(redisTarget(url), 1000, caFile, read).options.tls
  assert.equal(tls('redis://h:6379/0'), undefined)
  assert.deepEqual(tls('rediss://:pw@h:6380/2?ca=%2Fca.pem'), { rejectUnauthorized: true, ca: PEM })
  assert.deepEqual(tls('rediss://h?ca=/other.pem', '/ca.pem').ca, PEM) // the option wins
  assert.deepEqual(tls('rediss://h'), { rejectUnauthorized: true })
  refused(() => tls('redis://h?ca=/ca.pem'), /ca=PATH is for TLS connections: use rediss/)
  refused(() => tls('redis://h', '/ca.pem'), /is for TLS, but the Redis URL is not rediss/)
  refused(() => tls('rediss://h', '/missing.pem'), /cannot be read \(ENOENT\)/)
  refused(
    () => clientOptions(redisTarget('rediss://h'), 1000, '/ca.pem', () => Buffer.from('not a pem')),
    /holds no PEM certificate/,
  )
  refused(() => ioredisClient({ defineCommand() {} }, 1000, '/ca.pem'), /caFile is for a client made from a URL/)
  // A client of someone else's making has no recorded connection error: the error is as it was.
  const e = new Error('Reached the max retries per request limit')
  assert.equal(redisError({}, e).message, 'Reached the max retries per request limit')
})
