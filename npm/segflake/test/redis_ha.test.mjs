// Replicated Redis for the Redis adapters, over fake ioredis clients: the URL spellings the
// core reads (a server, a Sentinel-monitored primary, a Cluster) as ioredis options, and the
// core's replica wait carried by RedisStore and RedisSerialCounter (the server's replication
// read once, every write and its WAIT in one pipeline, too few acknowledgements a StoreError
// with the core's message). Runs on the backend loaded (native or wasm). The same against
// real servers (a replica frozen, a Sentinel failover): redis_servers.test.mjs.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import { createRequire } from 'node:module'
import { SerialGenerator, StoreError, InvalidArgumentError } from 'segflake'

const require = createRequire(import.meta.url)
const { RedisStore } = require('segflake/stores/redis')
const { RedisSerialCounter } = require('segflake/counters')
const { registryFromUrl, RedisRegistry } = require('segflake/registries')
const stores = path.join(path.dirname(require.resolve('segflake/registries')), 'stores')
const { redisTarget, clientOptions, luaScript } = require(path.join(stores, '_redis.js'))

const STATEMENTS = JSON.parse(require('segflake').__native.__statements()).segment_stores.redis

/** A Redis error reply, as ioredis rejects with it. */
class ReplyError extends Error {
  get name() {
    return 'ReplyError'
  }
}

/**
 * An ioredis client (`Redis`, or `Redis.Cluster` with `cluster`) over one in-memory primary
 * with `replicas` connected replicas (`ROLE`), `minReplicas` (`CONFIG GET
 * min-replicas-to-write`; null: CONFIG refused) and `acks` (what `WAIT` answers). Runs the
 * core's allocation script on its keys (EVALSHA once it has seen the script by EVAL) and
 * records what it was sent: `sent` holds one array per exchange (a pipeline, or one
 * command), of commands as arrays of strings.
 */
class FakeRedis {
  constructor({ replicas = 1, minReplicas = null, acks = 1, cluster = false } = {}) {
    Object.assign(this, { replicas, minReplicas, acks, isCluster: cluster })
    this.data = new Map([['segflake:leaf_alloc:order', '1']])
    this.scripts = new Map() // sha → lua
    this.sent = []
  }

  defineCommand(name, { lua }) {
    this[name] = async (...args) => {
      this.sent.push([[name, ...args].map(String)])
      return this.run(lua, args)
    }
  }

  /** The core's scripts this fake runs: the allocation and the serial count. */
  run(lua, [key, step]) {
    if (lua === STATEMENTS.allocate) {
      const value = String(BigInt(this.data.get(key)) + BigInt(step))
      this.data.set(key, value)
      return value
    }
    return [1, 7, Date.now()] // the serial script: count 7
  }

  reply(command, args) {
    if (command === 'ROLE') {
      const listed = Array.from({ length: this.replicas }, (_, i) => ['10.0.0.9', String(6380 + i), '0'])
      return ['master', 100, listed]
    }
    if (command === 'CONFIG') {
      if (this.minReplicas === null) throw new ReplyError("ERR unknown command 'CONFIG'")
      return ['min-replicas-to-write', String(this.minReplicas)]
    }
    if (command === 'WAIT') return this.acks
    if (command === 'EXISTS') return this.data.has(args[0]) ? 1 : 0
    if (command === 'EVALSHA') {
      const lua = this.scripts.get(args[0])
      if (lua === undefined) throw new ReplyError('NOSCRIPT No matching script.')
      return this.run(lua, args.slice(2))
    }
    if (command === 'EVAL') {
      this.scripts.set(luaScript(args[0]).sha, args[0])
      return this.run(args[0], args.slice(2))
    }
    throw new Error(`unexpected ${command}`)
  }

  async call(command, ...args) {
    this.sent.push([[command, ...args].map(String)])
    return this.reply(command, args.map(String))
  }

  async get(key) {
    this.sent.push([['GET', key]])
    return this.data.get(key) ?? null
  }

  pipeline() {
    const queued = []
    const client = this
    const add =
      (command) =>
      (...args) => (queued.push([command, ...args]), pipeline)
    const pipeline = {
      call: (command, ...args) => add(command)(...args),
      exists: add('EXISTS'),
      evalsha: add('EVALSHA'),
      eval: add('EVAL'),
      async exec() {
        client.sent.push(queued.map((command) => command.map(String)))
        return queued.map(([command, ...args]) => {
          try {
            return [null, client.reply(command, args.map(String))]
          } catch (e) {
            return [e, null]
          }
        })
      },
    }
    return pipeline
  }
}

const SHA = luaScript(STATEMENTS.allocate).sha
const MESSAGE =
  /^the allocation for order reached 0 of the 1 replica\(s\) it must reach within 1500 ms \(WAIT\); a failover could lose it, so nothing is issued from it/

test('Redis URLs: every spelling the core reads, as ioredis options; bad ones refused with what is allowed', async () => {
  const single = redisTarget('rediss://app:p%40ss@cache.internal:7000/3?replicas=2&ca=/etc/ca.pem')
  assert.deepEqual(single, {
    mode: 'single',
    service: null,
    tls: true,
    nodes: [['cache.internal', 7000]],
    db: 3,
    user: 'app',
    password: 'p@ss',
    replicas: 2,
    ca: '/etc/ca.pem',
  })
  const PEM = Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n')
  const read = (file) => {
    assert.equal(file, '/etc/ca.pem')
    return PEM
  }
  const { mode, options } = clientOptions(single, 1000, undefined, read)
  assert.equal(mode, 'single')
  assert.deepEqual(
    { ...options, retryStrategy: typeof options.retryStrategy },
    {
      host: 'cache.internal',
      port: 7000,
      db: 3,
      username: 'app',
      password: 'p@ss',
      tls: { rejectUnauthorized: true, ca: PEM },
      maxRetriesPerRequest: 1,
      connectTimeout: 1000,
      commandTimeout: 1000,
      socketTimeout: 1000,
      keepAlive: 10000,
      retryStrategy: 'function',
    },
  )

  // Sentinel: the sentinels and the service; the credentials are the data servers' only.
  const sentinel = clientOptions(redisTarget('redis+sentinel://:pw@127.0.0.1:26380,[::1]/orders/2'), 1000)
  assert.equal(sentinel.mode, 'sentinel')
  assert.deepEqual(sentinel.options.sentinels, [
    { host: '127.0.0.1', port: 26380 },
    { host: '::1', port: 26379 },
  ])
  assert.equal(sentinel.options.name, 'orders')
  assert.equal(sentinel.options.db, 2)
  assert.equal(sentinel.options.password, 'pw')
  assert.equal(sentinel.options.sentinelPassword, undefined)
  assert.equal(sentinel.options.host, undefined)
  assert.ok(sentinel.options.reconnectOnError(new ReplyError("READONLY You can't write against a read only replica.")))
  assert.ok(!sentinel.options.reconnectOnError(new ReplyError('NOTAG')))
  const secure = clientOptions(redisTarget('rediss+sentinel://s1/m'), 1000).options
  assert.deepEqual(
    [secure.enableTLSForSentinelMode, secure.sentinelTLS, secure.tls],
    [true, secure.tls, { rejectUnauthorized: true }],
  )

  // Cluster: seed nodes, the servers' options under redisOptions, no database.
  const cluster = clientOptions(redisTarget('redis+cluster://a:7000,b?replicas=0'), 1000)
  assert.equal(cluster.mode, 'cluster')
  assert.deepEqual(cluster.nodes, [
    { host: 'a', port: 7000 },
    { host: 'b', port: 6379 },
  ])
  assert.equal(cluster.options.redisOptions.commandTimeout, 1000)
  assert.equal(cluster.options.redisOptions.db, undefined)
  assert.equal(typeof cluster.options.clusterRetryStrategy, 'function')

  for (const [url, says] of [
    ['http://h', 'not a Redis scheme'],
    ['redis://a,b', 'names one server'],
    ['redis+sentinel://h', 'names the monitored primary'],
    ['redis+cluster://h/1', 'only database 0'],
    ['redis://h?replicas=-1', 'replicas="-1"'],
    ['redis://h?ca=/x.pem', 'ca=PATH is for TLS'],
  ]) {
    assert.throws(
      () => new RedisStore(url),
      (e) =>
        e instanceof InvalidArgumentError &&
        e.message.startsWith('invalid Redis URL: ') &&
        e.message.includes(says) &&
        e.message.includes('allowed: redis://'),
      url,
    )
  }
  assert.throws(() => registryFromUrl('redis+cluster://h/1'), InvalidArgumentError)
  // registryFromUrl takes every spelling (the clients are made, and closed unconnected).
  for (const url of ['redis+sentinel://127.0.0.1:1/m?replicas=1', 'rediss+cluster://127.0.0.1:1']) {
    const registry = registryFromUrl(url, { timeoutMs: 100 })
    assert.ok(registry instanceof RedisRegistry, url)
    assert.equal(registry.client.isCluster === true, url.includes('cluster'), url)
    await registry.close()
  }
  assert.throws(() => clientOptions(redisTarget('redis://h'), 1000, '/ca.pem'), /is for TLS/)
})

test('RedisStore waits for the replica ROLE listed: the script and WAIT in one pipeline; a short WAIT fails with the core message', async () => {
  const client = new FakeRedis({ replicas: 2, acks: 2 })
  const store = new RedisStore(client) // a client passed in: replicas from the server
  assert.deepEqual(await store.allocate('order', 100), { maxId: 101n, step: 100 })
  assert.deepEqual(await store.allocate('order', 100), { maxId: 201n, step: 100 })
  // Asked once (beside the residue key): ROLE, CONFIG (refused: 0); then each write is
  // EVALSHA (EVAL when the server lacks the script) and WAIT 2 (every replica ROLE listed;
  // half the 3000 ms timeout) in one pipeline, on one connection.
  const key = 'segflake:leaf_alloc:order'
  const write = (command, script) => [
    [command, script, '1', key, '100'],
    ['WAIT', '2', '1500'],
  ]
  assert.deepEqual(client.sent, [
    [['GET', 'segflake:leaf_alloc_residue']],
    [['ROLE']],
    [['CONFIG', 'GET', 'min-replicas-to-write']],
    write('EVALSHA', SHA),
    write('EVAL', STATEMENTS.allocate),
    write('EVALSHA', SHA),
  ])

  client.acks = 1
  const failed = await store.allocate('order', 100).then(
    () => assert.fail('an allocation one of the two replicas acknowledged was issued from'),
    (e) => e,
  )
  assert.ok(failed instanceof StoreError, String(failed))
  assert.match(failed.message, /^the allocation for order reached 1 of the 2 replica\(s\) it must reach within 1500 ms \(WAIT\)/)
  client.acks = 2
  assert.deepEqual(await store.allocate('order', 100), { maxId: 401n, step: 100 }, 'the next allocation waits again')
  assert.equal(client.sent.filter(([[c]]) => c === 'ROLE').length, 1, 'ROLE asked once')
})

test('the replica count: the URL’s replicas=N, else every replica ROLE lists (or min-replicas-to-write if more); 0 sends the script alone', async () => {
  const asked = async (client, timeoutMs) => {
    const store = new RedisStore(client, timeoutMs === undefined ? {} : { timeoutMs })
    await store.allocate('order', 10)
    return String(client.sent.flat().find(([c]) => c === 'WAIT') ?? null)
  }
  assert.equal(await asked(new FakeRedis({ replicas: 1, minReplicas: 2, acks: 2 })), 'WAIT,2,1500')
  assert.equal(await asked(new FakeRedis({ replicas: 3, minReplicas: 0, acks: 3 }), 800), 'WAIT,3,400')
  assert.equal(await asked(new FakeRedis({ replicas: 3, minReplicas: 2, acks: 3 }), 800), 'WAIT,3,400')
  const alone = new FakeRedis({ replicas: 0 })
  assert.equal(await asked(alone), 'null')
  assert.deepEqual(alone.sent.at(-1), [['segflakeAllocate', 'segflake:leaf_alloc:order', '10']])

  // A Cluster: ROLE and CONFIG go to the primary of the key's slot (a pipeline led by a
  // command naming the key), and so do the script and its WAIT.
  const cluster = new FakeRedis({ replicas: 1, cluster: true })
  assert.equal(await asked(cluster), 'WAIT,1,1500')
  assert.deepEqual(cluster.sent[1], [
    ['EXISTS', 'segflake:leaf_alloc:order'],
    ['ROLE'],
    ['CONFIG', 'GET', 'min-replicas-to-write'],
  ])
})

test('give backs and serial counts wait too; too few acknowledgements reject with StoreError', async () => {
  const client = new FakeRedis({ replicas: 1, acks: 0 })
  const store = new RedisStore(client)
  const e = await store.giveBack('order', 201n, 101n).then(assert.fail, (e) => e)
  assert.ok(e instanceof StoreError)
  assert.match(e.message, /^the give back for order reached 0 of the 1 replica\(s\)/)
  const [give] = client.sent.filter((commands) => commands.some(([c]) => c === 'WAIT'))
  assert.deepEqual(give[0].slice(0, 4), [
    'EVALSHA',
    luaScript(STATEMENTS.give_back).sha,
    '2',
    'segflake:leaf_alloc:order',
  ])
  assert.match(give[0][4], /^\{segflake:leaf_alloc:order\}:given_back:/)
  assert.deepEqual(give[0].slice(5), ['201', '101'])

  const counter = new FakeRedis({ replicas: 1, acks: 0 })
  const gen = new SerialGenerator({ counter: new RedisSerialCounter(counter, { prefix: 'orders' }) })
  const refused = await gen.nextFromCounter().then(assert.fail, (e) => e)
  assert.ok(refused instanceof StoreError, String(refused))
  assert.match(refused.message, /the serial count orders:serial:[0-9]+ reached 0 of the 1 replica\(s\)/)
  counter.acks = 1
  assert.equal((await gen.nextFromCounter()) % 10000n, 7n)
  const waits = counter.sent.filter((commands) => commands.some(([c]) => c === 'WAIT'))
  assert.ok(waits.length >= 2)
  for (const [[command, , keys, key], wait] of waits) {
    assert.ok(['EVAL', 'EVALSHA'].includes(command) && keys === '1' && key.startsWith('orders:serial:'), command)
    assert.deepEqual(wait, ['WAIT', '1', '1500'])
  }
})
