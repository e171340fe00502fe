// The Redis adapters against real replicated servers (Debian's redis-server, started here on
// free 127.0.0.1 ports; SEGFLAKE_REDIS_SERVER names another binary), through ioredis:
// - a primary and one replica: writes pass while the replica acknowledges them; with the
//   replica frozen (SIGSTOP) an allocation, a serial count and a store over a client passed
//   in fail within the replica wait with the core's message instead of being issued from,
//   and `replicas=0` in the URL turns the wait off (the store's and the registry's);
// - a client made from a URL that ended for good (ioredis's "Connection is closed.") is
//   replaced by the store, the serial counter and the registry: the next call succeeds;
// - Sentinel (a primary, two replicas, one sentinel): a RedisStore made from a
//   `redis+sentinel://` URL keeps allocating after the primary is killed with SIGKILL, every
//   range above the ones before; and through three kill -9 failovers in a row (each killed
//   server restarted as a replica), every call settles within timeoutMs and an allocation
//   started after each kill succeeds;
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

/** Whether `port` on 127.0.0.1 can be listened on now. */
async function canListen(port) {
  const server = net.createServer()
  const ok = await new Promise((resolve) => {
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => resolve(true))
  })
  if (ok) await new Promise((resolve) => server.close(resolve))
  return ok
}

/** A port that is free now; for a Cluster node (`cluster`) one whose bus port (+10000) is
 * free too, below the ephemeral range, as the Python suite's `free_cluster_port`. */
async function freePort(cluster = false) {
  if (cluster) {
    for (;;) {
      const port = 20000 + Math.floor(Math.random() * 30000)
      if ((await canListen(port)) && (await canListen(port + 10000))) return port
    }
  }
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

  /** A server (`extra`: more arguments) or, with `sentinel` (its config lines), a sentinel;
   * on `port` if given (a killed server's, to restart it), else on a free one. A port found
   * free can be taken before the server binds it (by another server of the test or a
   * client's connection): a server that exits before it answers is started again on another. */
  async start(extra = [], sentinel = null, port = null) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.startOn(extra, sentinel, port ?? (await freePort(extra.includes('--cluster-enabled'))))
      } catch (e) {
        if (port !== null || !e.exitedEarly || attempt === 5) throw e
      }
    }
  }

  async startOn(extra, sentinel, port) {
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
    let ready = false
    const failed = new Promise((_, reject) => {
      child.once('error', reject)
      child.once('exit', (code, signal) => {
        if (ready) return
        const e = new Error(`${REDIS_SERVER} on port ${port} exited (${signal ?? code}) before it answered`)
        e.exitedEarly = true
        reject(e)
      })
    })
    failed.catch(() => {})
    this.processes.push(child)
    const admin = this.admin(port)
    await Promise.race([failed, until(`${REDIS_SERVER} on port ${port}`, async () => (await admin.ping()) === 'PONG')])
    ready = true
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
  'a client made from a URL that ended for good is replaced: the next call succeeds',
  { timeout: 30000 },
  async (t) => {
    // ioredis ends a client for good (every command then fails at once with "Connection is
    // closed.") when a Sentinel connection attempt is interrupted, e.g. by the sentinels'
    // failover announcement; disconnect() ends it the same way here.
    const servers = new Servers()
    const closers = []
    t.after(async () => {
      for (const close of closers) await close().catch(() => {})
      servers.close()
    })
    const server = await servers.start()
    const url = `redis://127.0.0.1:${server.port}/0`
    const own = (adapter) => (closers.push(() => adapter.close()), adapter)
    const store = own(new RedisStore(url, { timeoutMs: 2000, createMissingTags: true }))
    const counter = own(new RedisSerialCounter(url, { timeoutMs: 2000, prefix: 'ended' }))
    const serials = new SerialGenerator({ counter })
    const registry = own(new RedisRegistry(url, { timeoutMs: 2000, checkDurability: false }))
    const owner = 'ended-test#0123456789abcdef'
    for (const [what, adapter, run] of [
      ['RedisStore', store, () => store.allocate('order', 100)],
      ['RedisSerialCounter', counter, () => serials.nextFromCounter()],
      ['RedisRegistry', registry, () => registry.claim({ workerId: 0, owner, ttlMs: 5000 })],
    ]) {
      await run()
      const ended = adapter.client
      ended.disconnect()
      await until(`${what}: its client to end`, () => ended.status === 'end')
      await run() // a new client: the call succeeds
      assert.notEqual(adapter.client, ended, `${what}: the ended client was replaced`)
    }
    assert.deepEqual(await store.allocate('order', 100), { maxId: 301n, step: 100 })
  },
)

test(
  'Sentinel: three kill -9 failovers in a row, every call settles within timeoutMs and allocation resumes each time',
  { timeout: 60000 },
  async (t) => {
    const servers = new Servers()
    let store = null
    let stop = false
    const loops = []
    t.after(async () => {
      stop = true
      await Promise.allSettled(loops)
      if (store !== null) await store.close().catch(() => {})
      servers.close()
    })
    const byPort = new Map() // each data server by its port
    const start = async (extra, port = null) => {
      const server = await servers.start(extra, null, port)
      byPort.set(server.port, server)
      return server
    }
    let primary = await start()
    const follow = (port) => ['--replicaof', '127.0.0.1', port]
    await Promise.all([start(follow(primary.port)), start(follow(primary.port))])
    await until('both replicas to acknowledge writes', () => acknowledged(primary.admin, 2))
    const sentinel = await servers.start(
      [],
      [
        `sentinel monitor m 127.0.0.1 ${primary.port} 1`,
        'sentinel down-after-milliseconds m 1000',
        'sentinel failover-timeout m 3000',
      ],
    )
    /** The sentinel names `port` as the primary and knows two replicas it can promote. */
    const settled = async (port) => {
      const [, named] = await sentinel.admin.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', 'm')
      if (Number(named) !== port) return false
      const replicas = await sentinel.admin.call('SENTINEL', 'REPLICAS', 'm')
      const flags = replicas.map((fields) => fields[fields.indexOf('flags') + 1])
      return flags.filter((f) => f === 'slave').length >= 2
    }
    await until('the sentinel to know both replicas', () => settled(primary.port))

    const timeoutMs = 2000
    // replicas=1: writes go on while the killed server is away (one replica left).
    store = new RedisStore(`redis+sentinel://127.0.0.1:${sentinel.port}/m?replicas=1`, {
      timeoutMs,
      createMissingTags: true,
    })
    // Two allocating loops, as a busy generator refills: each call's time is recorded, and a
    // call that has not settled well past the deadline counts as a hang (it is not waited for).
    let lastError = null // the last failure, for messages
    const allocations = [] // { start, end, maxId } of each successful call
    const slow = [] // calls that settled (or not) later than the deadline allows, or oddly
    const hangMs = timeoutMs + 1500 // the deadline, and room for a busy machine's timers
    const loop = async () => {
      while (!stop) {
        const start = performance.now()
        let watchdog
        const outcome = await Promise.race([
          store.allocate('order', 100).then(
            (answer) => ({ answer }),
            (error) => ({ error }),
          ),
          new Promise((resolve) => (watchdog = setTimeout(() => resolve({ hang: true }), hangMs))),
        ])
        clearTimeout(watchdog)
        const end = performance.now()
        if (outcome.hang) {
          slow.push(`an allocation did not settle within ${hangMs} ms`)
          return
        }
        if (end - start > hangMs) slow.push(`an allocation settled after ${(end - start).toFixed(0)} ms`)
        if (outcome.answer) allocations.push({ start, end, maxId: outcome.answer.maxId })
        else {
          // A failure is an error the generator reports (it retries after it), never a hang.
          if (!(outcome.error instanceof Error)) slow.push(`an allocation failed with ${outcome.error}`)
          lastError = outcome.error
          await sleep(20)
        }
      }
    }
    loops.push(loop(), loop())
    await until('allocations before the first kill', () => allocations.length >= 3)

    const delays = []
    for (let round = 1; round <= 3; round++) {
      primary.child.kill('SIGKILL')
      const killed = performance.now()
      const old = primary.port
      const promoted = await until(
        `round ${round}: the sentinel to promote a replica`,
        async () => {
          const [, named] = await sentinel.admin.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', 'm')
          return Number(named) !== old && Number(named)
        },
        15000,
      )
      // Allocation resumes: a call that started after the kill succeeds (on the new primary).
      await until(
        `round ${round}: an allocation started after the kill -9 to succeed`,
        () => slow.length > 0 || allocations.some((a) => a.start > killed),
        15000,
      ).catch((e) => {
        throw new Error(`${e.message}; the last failure: ${lastError}`)
      })
      assert.deepEqual(slow, [], `round ${round}`)
      delays.push(Math.min(...allocations.filter((a) => a.start > killed).map((a) => a.end)) - killed)
      // The killed server is restarted at once as a replica of the promoted one.
      primary = byPort.get(promoted)
      await start(follow(promoted), old)
      await until(
        `round ${round}: the promoted server to have two replicas`,
        () => acknowledged(primary.admin, 2),
        15000,
      )
      await until(`round ${round}: the sentinel to settle`, () => settled(promoted), 15000)
    }
    stop = true
    await Promise.all(loops)
    assert.deepEqual(slow, [])
    // The ranges, in order, lie at least a step apart: none was handed out twice.
    const ranges = allocations.map((a) => a.maxId).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    for (let i = 1; i < ranges.length; i++) assert.ok(ranges[i] >= ranges[i - 1] + 100n, `range ${ranges[i]} twice`)
    t.diagnostic?.(
      `${allocations.length} allocations; the first after each kill -9 ended ${delays.map((d) => d.toFixed(0)).join(', ')} ms after it`,
    )
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
