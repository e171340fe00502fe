// Snowflake.fromRegistry with registries written in JS: the driver's calls, answers,
// failures and typed errors. The real Redis, PostgreSQL and MariaDB registries run in
// tests/scenarios (lease_*).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { Snowflake, SegflakeError, Layout } from 'segflake'

const SMALL = { preset: 'twitter', workerBits: 3 } // 8 worker IDs

/** The registry contract over a Map, with expiry on this process's clock. */
class MemoryRegistry {
  constructor({ latencyMs = 0 } = {}) {
    this.rows = new Map()
    this.latencyMs = latencyMs
  }
  row(workerId) {
    if (!this.rows.has(workerId)) this.rows.set(workerId, { owner: null, expires: 0, markMs: 0 })
    return this.rows.get(workerId)
  }
  holder(workerId) {
    const r = this.rows.get(workerId)
    return r && r.expires > Date.now() ? r.owner : null
  }
  async claim({ workerId, owner, ttlMs }) {
    if (this.latencyMs) await sleep(this.latencyMs)
    const r = this.row(workerId)
    if (r.owner !== null && r.owner !== owner && r.expires > Date.now()) return null
    Object.assign(r, { owner, expires: Date.now() + ttlMs })
    return r.markMs
  }
  async renew({ workerId, owner, ttlMs, markMs, reportedMs }) {
    const r = this.row(workerId)
    if (r.owner !== owner || r.expires <= Date.now()) return null
    Object.assign(r, { expires: Date.now() + ttlMs, markMs: Math.max(r.markMs, markMs), reportedMs })
    return r.markMs
  }
  release({ workerId, owner, markMs }) {
    const r = this.row(workerId)
    if (r.owner !== owner) return false
    Object.assign(r, { owner: null, expires: 0, markMs })
    return true
  }
  peers() {
    return [...this.rows]
      .filter(([, r]) => r.owner !== null && r.expires > Date.now() && r.reportedMs !== undefined)
      .map(([workerId, r]) => ({ workerId, reportedMs: r.reportedMs, ageMs: 0 }))
  }
}

test('leased generators take distinct worker IDs, issue distinct IDs, and release on close', async () => {
  const registry = new MemoryRegistry({ latencyMs: 2 })
  const gens = await Promise.all([1, 2, 3].map(() => Snowflake.fromRegistry(registry, { layout: SMALL })))
  const workers = new Set(gens.map((g) => g.workerId))
  assert.equal(workers.size, 3)
  const ids = new Set()
  for (const g of gens) for (const id of g.nextIds(20000)) ids.add(id)
  assert.equal(ids.size, 60000)
  const stats = gens[0].leaseStats()
  assert.equal(stats.state, 'held')
  assert.equal(stats.workerId, gens[0].workerId)
  assert.ok(stats.markMs > BigInt(Date.now()))
  const reused = gens[0].workerId
  const last = gens[0].nextId()
  for (const g of gens) {
    await g.close()
    assert.throws(
      () => g.nextId(),
      (e) => e instanceof SegflakeError && e.code === 'CLOSED',
    )
  }
  for (const w of workers) assert.equal(registry.holder(w), null)
  // Released at its last ID's time: a successor takes the ID at once, above its IDs.
  const started = Date.now()
  const again = await Snowflake.fromRegistry(registry, { layout: SMALL, preferredWorkerId: reused })
  assert.ok(Date.now() - started < 1000)
  assert.equal(again.workerId, reused)
  assert.ok(again.nextId() > last)
  await again.close()
})

test('every worker ID held is NoFreeWorkerIdError after the claim wait', async () => {
  const registry = new MemoryRegistry()
  registry.claim = async () => null
  const started = Date.now()
  await assert.rejects(Snowflake.fromRegistry(registry, { layout: SMALL, claimWaitMs: 300 }), (e) => {
    assert.ok(e instanceof SegflakeError)
    assert.equal(e.code, 'NO_FREE_WORKER_ID')
    assert.equal(e.name, 'NoFreeWorkerIdError')
    assert.match(e.message, /8 of 8/)
    return true
  })
  assert.ok(Date.now() - started < 5000)
})

test('options are checked; workerId is refused in favour of preferredWorkerId', async () => {
  await assert.rejects(Snowflake.fromRegistry(new MemoryRegistry(), { workerId: 3 }), /preferredWorkerId/)
  await assert.rejects(
    Snowflake.fromRegistry(new MemoryRegistry(), { leaseTtlMs: 5 }),
    (e) => e.code === 'INVALID_ARGUMENT' && e.message === 'invalid leaseTtlMs: got 5; allowed integers 100..=86400000',
  )
  await assert.rejects(
    Snowflake.fromRegistry(new MemoryRegistry(), { layout: SMALL, preferredWorkerId: 8 }),
    (e) => e.code === 'WORKER_ID_OUT_OF_RANGE',
  )
  await assert.rejects(
    Snowflake.fromRegistry({ claim() {} }, {}),
    (e) => e.code === 'INVALID_ARGUMENT' && /renew, release, peers/.test(e.message),
  )
})

test('a registry that fails ends the lease with its error, and IDs resume when it is back', async () => {
  const registry = new MemoryRegistry()
  const renew = registry.renew.bind(registry)
  let down = false
  registry.renew = async (args) => {
    if (down) throw new Error('registry down')
    return renew(args)
  }
  const g = await Snowflake.fromRegistry(registry, { layout: SMALL, leaseTtlMs: 300 })
  g.nextId()
  down = true
  let error
  for (let i = 0; i < 300 && !error; i++) {
    try {
      g.nextId()
    } catch (e) {
      error = e
    }
    await sleep(10)
  }
  assert.ok(error, 'IDs never stopped')
  assert.equal(error.code, 'LEASE_EXPIRED')
  assert.match(error.message, /registry down/)
  assert.ok(g.leaseStats().failures > 0)
  down = false
  let resumed = false
  for (let i = 0; i < 200 && !resumed; i++) {
    try {
      g.nextId()
      resumed = true
    } catch {
      await sleep(25)
    }
  }
  assert.ok(resumed, 'IDs did not resume')
  await g.close()
})

test('answers outside the contract are counted failures, never a raised cap', async () => {
  const registry = new MemoryRegistry()
  const renew = registry.renew.bind(registry)
  let broken = false
  registry.renew = async (args) => (broken ? 'OK' : renew(args))
  // Renewed every 200 ms; the lease (600 ms) outlives the garbage answers below.
  const g = await Snowflake.fromRegistry(registry, { layout: SMALL, leaseTtlMs: 600 })
  const mark = g.leaseStats().markMs
  broken = true
  const layout = new Layout(SMALL)
  let newest = 0
  const until = Date.now() + 350
  while (Date.now() < until) {
    try {
      for (const id of g.nextIds(100)) newest = Math.max(newest, layout.decode(id).timestampMs)
    } catch (e) {
      assert.ok(e instanceof SegflakeError, String(e))
    }
    await sleep(5)
  }
  const stats = g.leaseStats()
  assert.ok(stats.failures >= 1)
  assert.equal(stats.markMs, mark)
  assert.match(stats.lastError, /outside the registry contract/)
  // Every ID issued while the answers were garbage is at or below the accepted mark.
  assert.ok(newest > 0 && newest <= Number(mark), `an ID at ${newest} above the mark ${mark}`)
  broken = false
  await g.close()
})

test('peers answers (objects or arrays) feed the clock-skew check', async () => {
  const registry = new MemoryRegistry()
  registry.peers = () => [[1, Date.now() + 600000, 0], { workerId: 2, reportedMs: Date.now() + 600000, ageMs: 0 }]
  await assert.rejects(
    Snowflake.fromRegistry(registry, { layout: SMALL, maxPeerSkewMs: 1000 }),
    (e) => e.code === 'CLOCK_SKEW' && /median/.test(e.message),
  )
})

/** An in-memory store with Consul-style compare-and-set, for the README's KvRegistry. */
class CasStore {
  constructor() {
    this.entries = new Map()
    this.conflicts = 0
  }
  async get(key) {
    await sleep(1)
    const e = this.entries.get(key)
    return e ? { ...e } : null
  }
  async cas(key, value, version) {
    await sleep(1)
    const e = this.entries.get(key)
    if ((e ? e.version : null) !== version) {
      this.conflicts++
      return false
    }
    this.entries.set(key, { value, version: (version ?? 0) + 1 })
    return true
  }
}

test("the README's KvRegistry (a callback registry over compare-and-set) leases and releases", async () => {
  const readme = fs.readFileSync(
    path.join(path.dirname(createRequire(import.meta.url).resolve('segflake/package.json')), 'README.md'),
    'utf8',
  )
  const block = readme.match(/<!-- kv-registry[^>]*-->\s*```js\n([\s\S]*?)```/)
  assert.ok(block, 'README.md has no kv-registry example')
  const source = block[1].replace(/\nconst gen = await[^\n]*\n/, '\n')
  assert.notEqual(source, block[1], 'the example no longer ends with its fromRegistry call')
  const KvRegistry = new Function(`${source}\nreturn KvRegistry`)()
  const kv = new CasStore()
  const registry = new KvRegistry(kv)
  // Three at once on the same preferred ID: the compare-and-set sorts them out.
  const gens = await Promise.all(
    [1, 2, 3].map(() => Snowflake.fromRegistry(registry, { layout: SMALL, preferredWorkerId: 5 })),
  )
  assert.equal(new Set(gens.map((g) => g.workerId)).size, 3)
  assert.ok(gens.some((g) => g.workerId === 5))
  const ids = new Set()
  for (const g of gens) for (const id of g.nextIds(5000)) ids.add(id)
  assert.equal(ids.size, 15000)
  const holder = gens.find((g) => g.workerId === 5)
  const last = holder.nextId()
  for (const g of gens) await g.close()
  for (const g of gens) assert.equal(JSON.parse(kv.entries.get(`segflake/worker/${g.workerId}`).value).owner, null)
  const again = await Snowflake.fromRegistry(registry, { layout: SMALL, preferredWorkerId: 5 })
  assert.equal(again.workerId, 5)
  assert.ok(again.nextId() > last)
  await again.close()
})

test('registry URLs and identities are checked before any client is loaded', async () => {
  const require = createRequire(import.meta.url)
  const { registryFromUrl, ZooKeeperRegistry, EtcdRegistry } = require('segflake/registries')
  const refused = (fn, pattern) =>
    assert.throws(fn, (e) => e instanceof SegflakeError && e.code === 'INVALID_ARGUMENT' && pattern.test(e.message))
  refused(() => registryFromUrl('consul://h:8500'), /allowed schemes are .*zk:\/\/ and etcd:\/\//)
  refused(() => registryFromUrl('zk:///snowflake/x'), /no HOST:PORT/)
  refused(() => registryFromUrl('zk://h:2181/snowflake/x?identity=10.0.0.1'), /expected IP:PORT/)
  refused(() => new ZooKeeperRegistry({ hosts: 'h:2181', root: 'snowflake/x' }), /absolute znode path/)
  refused(() => new ZooKeeperRegistry({}), /exactly one of hosts or client/)
  refused(() => new EtcdRegistry({}), /exactly one of endpoints or client/)
})
