// The Redis adapters against real replicated servers (Debian's redis-server, started here on
// free 127.0.0.1 ports; SEGFLAKE_REDIS_SERVER names another binary), through ioredis:
// - a primary and one replica: writes pass while the replica acknowledges them; with the
//   replica frozen (SIGSTOP) an allocation, a serial count and a store over a client passed
//   in fail within the replica wait with the core's message instead of being issued from,
//   and `replicas=0` in the URL turns the wait off (the store's and the registry's);
// - Sentinel (a primary, two replicas, one sentinel): a RedisStore made from a
//   `redis+sentinel://` URL keeps allocating after the primary is killed with SIGKILL, every
//   range above the ones before;
// - Cluster (three primaries with a replica each, made by redis-cli --cluster create):
//   tags on several primaries, each allocation (and the registry's renewal) and its WAIT
//   sent to the primary holding the key; a frozen replica refuses the allocations of its
//   primary's keys only.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { promisify } from 'node:util'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { setTimeout as sleep } from 'node:timers/promises'
import { SerialGenerator, StoreError } from 'segflake'

const require = createRequire(import.meta.url)
const Redis = require('ioredis')
const { RedisStore } = require('segflake/stores/redis')
const { RedisSerialCounter } = require('segflake/counters')
const { RedisRegistry } = require('segflake/registries')

const REDIS_SERVER = process.env.SEGFLAKE_REDIS_SERVER || 'redis-server'
const REDIS_CLI = process.env.SEGFLAKE_REDIS_CLI || 'redis-cli'

/** A port nobody listens on now. */
async function freePort() {
  const server = net.createServer()
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Polls `check` (truthy when done) every 20 ms; fails naming `what` after `ms`. */
async function until(what, check, ms = 8000) {
  const end = Date.now() + ms
  for (;;) {
    try {
      const done = await check()
      if (done) return done
    } catch {
      // not yet
    }
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await sleep(20)
  }
}

/** Redis servers and sentinels of one test, in a directory of their own; `close()` kills them all. */
class Servers {
  constructor() {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'segflake-redis-'))
    this.processes = []
    this.admins = []
  }

  /** A server (`extra`: more arguments) or, with `sentinel` (its config lines), a sentinel. */
  async start(extra = [], sentinel = null) {
    const port = await freePort()
    let argv
    if (sentinel === null) {
      // No persistence (the durability of one server is not what these tests are about);
      // replicas sync at once instead of after diskless sync's 5 s delay.
      argv = ['--port', port, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir]
      argv.push('--dbfilename', `dump-${port}.rdb`, '--repl-diskless-sync-delay', '0', ...extra)
      if (extra.includes('--cluster-enabled')) argv.push('--cluster-config-file', `nodes-${port}.conf`)
    } else {
      const file = path.join(this.dir, `sentinel-${port}.conf`)
      fs.writeFileSync(file, [`port ${port}`, 'bind 127.0.0.1', `dir ${this.dir}`, ...sentinel, ''].join('\n'))
      argv = [file, '--sentinel']
    }
    const child = spawn(REDIS_SERVER, argv.map(String), { stdio: ['ignore', 'ignore', 'inherit'] })
    const failed = new Promise((_, reject) => child.once('error', reject))
    failed.catch(() => {})
    this.processes.push(child)
    const admin = this.admin(port)
    await Promise.race([failed, until(`${REDIS_SERVER} on port ${port}`, async () => (await admin.ping()) === 'PONG')])
    return { port, child, admin }
  }

  /** A client for checks, which never retries for long. */
  admin(port) {
    const client = new Redis({
      host: '127.0.0.1',
      port,
      lazyConnect: false,
      retryStrategy: () => 50,
      maxRetriesPerRequest: 0,
    })
    client.on('error', () => {})
    this.admins.push(client)
    return client
  }

  close() {
    for (const client of this.admins) client.disconnect()
    for (const child of this.processes) if (child.exitCode === null) child.kill('SIGKILL')
    fs.rmSync(this.dir, { recursive: true, force: true })
  }
}

/** Whether `count` replicas of `primary` (an admin client) acknowledge its writes (WAIT). */
async function acknowledged(primary, count) {
  await primary.set('segflake-test:probe', String(Date.now()))
  return (await primary.call('WAIT', count, 200)) >= count
}

const NOT_ISSUED =
  /reached 0 of the 1 replica\(s\) it must reach within 1000 ms \(WAIT\); a failover could lose it, so nothing is issued from it/

test(
  'a frozen replica: writes fail within the wait with the core message instead of being issued',
  { timeout: 30000 },
  async (t) => {
    const servers = new Servers()
    const closers = []
    t.after(async () => {
      for (const close of closers) await close().catch(() => {})
      servers.close()
    })
    const primary = await servers.start()
    const replica = await servers.start(['--replicaof', '127.0.0.1', primary.port])
    await until('the replica to acknowledge writes', () => acknowledged(primary.admin, 1))

    const url = `redis://127.0.0.1:${primary.port}/0`
    const own = (adapter) => (closers.push(() => adapter.close()), adapter)
    // Two seconds of timeout: the wait is half of it.
    const store = own(new RedisStore(url, { timeoutMs: 2000, createMissingTags: true }))
    const passedIn = own(new RedisStore(primary.admin, { timeoutMs: 2000 }))
    const counter = own(new RedisSerialCounter(url, { timeoutMs: 2000, prefix: 'ha' }))
    const serials = new SerialGenerator({ counter })
    const unwaited = own(new RedisStore(`${url}?replicas=0`, { timeoutMs: 2000 }))
    const registry = own(new RedisRegistry(`${url}?replicas=0`, { timeoutMs: 2000, checkDurability: false }))

    assert.deepEqual(await store.allocate('order', 100), { maxId: 101n, step: 100 })
    assert.deepEqual(await passedIn.allocate('order', 100), { maxId: 201n, step: 100 })
    await serials.nextFromCounter()
    const owner = 'ha-test#0123456789abcdef'
    await registry.claim({ workerId: 0, owner, ttlMs: 5000 })

    replica.child.kill('SIGSTOP')
    try {
      for (const [what, run] of [
        ['RedisStore (URL)', () => store.allocate('order', 100)],
        ['RedisStore (client passed in)', () => passedIn.allocate('order', 100)],
        ['RedisSerialCounter', () => serials.nextFromCounter()],
      ]) {
        const started = performance.now()
        const error = await run().then(
          (answer) => assert.fail(`${what}: issued from a write no replica acknowledged: ${answer}`),
          (e) => e,
        )
        const ms = performance.now() - started
        assert.ok(error instanceof StoreError, `${what}: ${error}`)
        assert.match(error.message, NOT_ISSUED, what)
        assert.ok(ms >= 950 && ms < 2000, `${what}: failed after ${ms.toFixed(0)} ms, not within the 1000 ms wait`)
      }
      // replicas=0: no wait, as asked (the store's allocation and the registry's renewal).
      assert.deepEqual(await unwaited.allocate('order', 100), { maxId: 501n, step: 100 })
      const renewal = { workerId: 0, owner, ttlMs: 5000, markMs: Date.now() + 3000, reportedMs: Date.now() }
      await registry.renew(renewal)
    } finally {
      replica.child.kill('SIGCONT')
    }
    // The failed allocations' ranges are skipped, never issued; the next ones wait again.
    assert.deepEqual(await store.allocate('order', 100), { maxId: 601n, step: 100 })
    assert.deepEqual(await passedIn.allocate('order', 100), { maxId: 701n, step: 100 })
  },
)

test(
  'Sentinel: a store from redis+sentinel:// keeps allocating after the primary is killed',
  { timeout: 30000 },
  async (t) => {
    const servers = new Servers()
    let store = null
    t.after(async () => {
      if (store !== null) await store.close().catch(() => {})
      servers.close()
    })
    const primary = await servers.start()
    const follow = ['--replicaof', '127.0.0.1', primary.port]
    await Promise.all([servers.start(follow), servers.start(follow)])
    await until('both replicas to acknowledge writes', () => acknowledged(primary.admin, 2))
    const sentinel = await servers.start(
      [],
      [
        `sentinel monitor m 127.0.0.1 ${primary.port} 1`,
        'sentinel down-after-milliseconds m 1000',
        'sentinel failover-timeout m 5000',
      ],
    )
    await until('the sentinel to know both replicas', async () => {
      const replicas = await sentinel.admin.call('SENTINEL', 'REPLICAS', 'm')
      return replicas.length === 2
    })

    // replicas=1: writes go on through the failover; the default (every replica, here two)
    // would refuse them until the killed server rejoins as a replica.
    store = new RedisStore(`redis+sentinel://127.0.0.1:${sentinel.port}/m?replicas=1`, {
      timeoutMs: 2000,
      createMissingTags: true,
    })
    const maxIds = []
    for (let i = 0; i < 3; i++) maxIds.push((await store.allocate('order', 100)).maxId)

    primary.child.kill('SIGKILL')
    const killed = performance.now()
    let recoveredMs = null
    let failures = 0
    await until(
      'three allocations on the new primary',
      async () => {
        try {
          maxIds.push((await store.allocate('order', 100)).maxId)
          recoveredMs ??= performance.now() - killed
        } catch {
          failures++
          await sleep(50)
        }
        return maxIds.length >= 6
      },
      15000,
    )
    const [host, port] = await sentinel.admin.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', 'm')
    assert.notEqual(`${host}:${port}`, `127.0.0.1:${primary.port}`, 'the sentinel promoted a replica')
    // Every range lies above the ones before: none was handed out twice.
    for (let i = 1; i < maxIds.length; i++) {
      assert.ok(maxIds[i] >= maxIds[i - 1] + 100n, `range ${i} (max ${maxIds[i]}) overlaps ${maxIds[i - 1]}`)
    }
    t.diagnostic?.(
      `first allocation on the new primary ${recoveredMs.toFixed(0)} ms after kill -9; ${failures} failed meanwhile`,
    )
  },
)

test(
  'Cluster: each allocation and its WAIT go to the primary holding the key; a frozen replica refuses only its primary’s',
  { timeout: 30000 },
  async (t) => {
    const servers = new Servers()
    const stores = []
    t.after(async () => {
      for (const store of stores) await store.close().catch(() => {})
      servers.close()
    })
    const cluster = ['--cluster-enabled', 'yes', '--cluster-node-timeout', '1000']
    const nodes = await Promise.all(Array.from({ length: 6 }, () => servers.start(cluster)))
    await promisify(execFile)(REDIS_CLI, [
      '--cluster',
      'create',
      ...nodes.map(({ port }) => `127.0.0.1:${port}`),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ])
    // Each primary, by port: its node ID, slot ranges and replica.
    const byPort = new Map(nodes.map((node) => [node.port, node]))
    const primaries = await until('three primaries with a replica online each', async () => {
      const lines = (await nodes[0].admin.call('CLUSTER', 'NODES'))
        .trim()
        .split('\n')
        .map((l) => l.split(' '))
      const found = lines.filter((l) => l[2].includes('master'))
      for (const primary of found) {
        const replica = lines.find((l) => l[3] === primary[0])
        const info = replica && (await byPort.get(Number(primary[1].split(/[:@]/)[1])).admin.info('replication'))
        if (!info || !/^slave0:.*state=online/m.test(info)) return null
        primary.replica = byPort.get(Number(replica[1].split(/[:@]/)[1]))
        primary.port = Number(primary[1].split(/[:@]/)[1])
        primary.slots = primary.slice(8).map((r) => r.split('-').map(Number))
      }
      const states = await Promise.all(nodes.map(({ admin }) => admin.call('CLUSTER', 'INFO')))
      return found.length === 3 && states.every((i) => i.includes('cluster_state:ok')) ? found : null
    })
    const holder = async (key) => {
      const slot = await nodes[0].admin.call('CLUSTER', 'KEYSLOT', key)
      return primaries.find((p) => p.slots.some(([from, to]) => slot >= from && slot <= (to ?? from)))
    }
    const waits = async () =>
      Promise.all(
        primaries.map(async ({ port }) => {
          const stats = await byPort.get(port).admin.info('commandstats')
          return Number(/^cmdstat_wait:calls=([0-9]+)/m.exec(stats)?.[1] ?? 0)
        }),
      )

    const url = `redis+cluster://127.0.0.1:${nodes[0].port},127.0.0.1:${nodes[1].port}`
    const store = new RedisStore(url, { timeoutMs: 2000, createMissingTags: true })
    const unwaited = new RedisStore(`${url}?replicas=0`, { timeoutMs: 2000 })
    stores.push(store, unwaited)
    const tags = ['order', 'user', 'pay', 'ship', 'cart', 'item']
    // Each tag's first allocation creates its key (and loads the script); each next one is
    // one script and one WAIT, both on the primary holding the key.
    for (const tag of tags) assert.deepEqual(await store.allocate(tag, 100), { maxId: 101n, step: 100 }, tag)
    const used = new Set()
    for (const tag of tags) {
      const before = await waits()
      assert.deepEqual(await store.allocate(tag, 100), { maxId: 201n, step: 100 }, tag)
      const at = primaries.indexOf(await holder(store.key(tag)))
      used.add(at)
      const expected = before.map((n, i) => (i === at ? n + 1 : n))
      assert.deepEqual(await waits(), expected, `${tag}: one WAIT, on the primary holding its key`)
    }
    assert.ok(used.size >= 2, 'the tags lie on several primaries')

    // The registry: ROLE of its keys' primary, each renewal's script and WAIT sent there.
    const registry = new RedisRegistry(url, { timeoutMs: 2000, checkDurability: false })
    stores.push(registry)
    const owner = 'ha-test#0123456789abcdef'
    await registry.claim({ workerId: 1, owner, ttlMs: 5000 })
    const keysAt = primaries.indexOf(await holder('{segflake}:worker:1'))
    const renewal = { workerId: 1, owner, ttlMs: 5000, markMs: Date.now() + 3000, reportedMs: Date.now() }
    await registry.renew(renewal) // loads the script on this connection
    const before = await waits()
    await registry.renew(renewal)
    const expected = before.map((n, i) => (i === keysAt ? n + 1 : n))
    assert.deepEqual(await waits(), expected, 'the renewal: one WAIT, on the primary holding its keys')

    const order = await holder(store.key('order'))
    const elsewhere = []
    for (const tag of tags) if ((await holder(store.key(tag))) !== order) elsewhere.push(tag)
    order.replica.child.kill('SIGSTOP')
    try {
      const error = await store.allocate('order', 100).then(assert.fail, (e) => e)
      assert.ok(error instanceof StoreError, String(error))
      assert.match(error.message, NOT_ISSUED)
      // The other primaries' replicas still acknowledge; replicas=0 does not wait (the
      // core's script through ioredis's defineCommand on the Cluster).
      assert.deepEqual(await store.allocate(elsewhere[0], 100), { maxId: 301n, step: 100 })
      assert.deepEqual(await unwaited.allocate('order', 100), { maxId: 401n, step: 100 })
    } finally {
      order.replica.child.kill('SIGCONT')
    }
    assert.deepEqual(await store.allocate('order', 100), { maxId: 501n, step: 100 })
  },
)
