// Snowflake.fromRegistry with registries written in JS: the driver's calls, answers,
// failures and typed errors. The real Redis, PostgreSQL and MariaDB registries run in
// tests/scenarios (lease_*).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { Snowflake, SegflakeError, Layout, RegistryLostDataError, LeafNodeAliveError } from 'segflake'

const SMALL = { preset: 'twitter', workerBits: 3 } // 8 worker IDs
// A worker ID claimed without a mark starts above claim time + maxDriftMs + markAheadMs +
// clockSkewAllowanceMs (about 4 s after the claim by default): tests not about that wait
// keep it short.
const FAST = { markAheadMs: 200, clockSkewAllowanceMs: 0 }

/** The registry contract over a Map, with expiry on this process's clock: renew answers
 * `null` when another owner holds the ID (or ours expired), -1 when nobody does (the
 * record is gone: `forget()` loses every record, as a Redis FLUSHALL would). */
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
    if (r.owner === null) return -1
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
  forget() {
    this.rows.clear()
  }
}

test('leased generators take distinct worker IDs, issue distinct IDs, and release on close', async () => {
  const registry = new MemoryRegistry({ latencyMs: 2 })
  const gens = await Promise.all([1, 2, 3].map(() => Snowflake.fromRegistry(registry, { layout: SMALL, ...FAST })))
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
  const again = await Snowflake.fromRegistry(registry, { layout: SMALL, ...FAST, preferredWorkerId: reused })
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
    Snowflake.fromRegistry(new MemoryRegistry(), { clockSkewAllowanceMs: 3600001 }),
    (e) =>
      e.code === 'INVALID_ARGUMENT' &&
      e.message === 'invalid clockSkewAllowanceMs: got 3600001; allowed integers 0..=3600000',
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
  const g = await Snowflake.fromRegistry(registry, { layout: SMALL, ...FAST, leaseTtlMs: 300 })
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
  const g = await Snowflake.fromRegistry(registry, { layout: SMALL, ...FAST, leaseTtlMs: 600 })
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
    Snowflake.fromRegistry(registry, { layout: SMALL, ...FAST, maxPeerSkewMs: 1000 }),
    (e) => e.code === 'CLOCK_SKEW' && /median/.test(e.message),
  )
})

test('two generators with one owner label get distinct worker IDs: each engine adds its own nonce', async () => {
  // Every generator of this process has the same label (the host name), so both try the
  // same preferred worker ID first; a registry that trusted the label would give it to both.
  const registry = new MemoryRegistry()
  const claims = []
  const claim = registry.claim.bind(registry)
  registry.claim = async (args) => {
    claims.push(args)
    return claim(args)
  }
  const [a, b] = await Promise.all([1, 2].map(() => Snowflake.fromRegistry(registry, { layout: SMALL, ...FAST })))
  assert.notEqual(a.workerId, b.workerId)
  const token = /^(.+)#[0-9a-f]{16}$/
  const [ownerA, ownerB] = [a.leaseStats().owner, b.leaseStats().owner]
  assert.match(ownerA, token)
  assert.match(ownerB, token)
  assert.notEqual(ownerA, ownerB)
  assert.equal(ownerA.match(token)[1], ownerB.match(token)[1], 'one label')
  assert.equal(claims[0].workerId, claims[1].workerId, 'both tried the preferred worker ID of the label first')
  assert.equal(registry.holder(a.workerId), ownerA)
  assert.equal(registry.holder(b.workerId), ownerB)
  const ids = new Set([...a.nextIds(20000), ...b.nextIds(20000)])
  assert.equal(ids.size, 40000)
  await a.close()
  await b.close()
})

for (const answer of [false, -1]) {
  test(`a renewal answering ${answer} (no record of the lease): RegistryLostDataError at once, then a new claim`, async () => {
    const registry = new MemoryRegistry()
    const renew = registry.renew.bind(registry)
    // The first renewal after the loss answers `answer`; the registry then works again.
    let forgotten = false
    registry.renew = async (args) => {
      if (!forgotten) return renew(args)
      forgotten = false
      return answer
    }
    const options = { layout: SMALL, ...FAST, maxDriftMs: 100, leaseTtlMs: 3000 }
    const g = await Snowflake.fromRegistry(registry, options)
    const layout = new Layout(SMALL)
    let before = 0
    for (const id of g.nextIds(1000)) before = Math.max(before, layout.decode(id).timestampMs)
    const workerId = g.workerId
    // The registry loses every record (a restart without persistence, FLUSHALL, a failover).
    registry.forget()
    forgotten = true
    const lostAt = Date.now()
    let error
    for (let i = 0; i < 300 && !error; i++) {
      try {
        for (const id of g.nextIds(100)) before = Math.max(before, layout.decode(id).timestampMs)
      } catch (e) {
        error = e
      }
      if (!error) await sleep(5)
    }
    assert.ok(error, 'IDs never stopped')
    assert.ok(error instanceof RegistryLostDataError, `${error.name}: ${error.message}`)
    assert.equal(error.code, 'REGISTRY_LOST_DATA')
    assert.equal(error.name, 'RegistryLostDataError')
    assert.match(error.message, new RegExp(`worker ID ${workerId}`))
    // At the next renewal (every ~100 ms here), long before the 3 s lease could expire.
    assert.ok(Date.now() - lostAt < 1500, `stopped after ${Date.now() - lostAt} ms`)
    assert.ok(g.leaseStats().lost >= 1)
    // The engine claims again by itself; the claim finds no mark, so the generator starts
    // above anything the old holder could have issued.
    let first = null
    for (let i = 0; i < 200 && first === null; i++) {
      try {
        first = g.nextId()
      } catch {
        await sleep(25)
      }
    }
    assert.ok(first !== null, 'IDs did not resume')
    assert.ok(layout.decode(first).timestampMs > before, 'an ID after the recovery is not above the earlier ones')
    assert.equal(g.leaseStats().state, 'held')
    await g.close()
  })
}

test('a registry that answers every renewal "lost" at once does not starve the event loop', async () => {
  // claim, renew (lost), claim, ... with answers that need no I/O: the driver still lets
  // timers run, IDs stay refused, and close() ends it.
  let lost = false
  let calls = 0
  const registry = {
    claim: async () => (calls++, 0),
    renew: async ({ markMs }) => (calls++, lost ? false : markMs),
    release: () => true,
    peers: () => [],
  }
  const g = await Snowflake.fromRegistry(registry, { layout: SMALL, ...FAST, maxDriftMs: 100 })
  g.nextId()
  lost = true
  let error = null
  for (let i = 0; i < 100 && error === null; i++) {
    const t = Date.now()
    await sleep(20)
    assert.ok(Date.now() - t < 1000, `a 20 ms timer fired after ${Date.now() - t} ms`)
    try {
      g.nextId()
    } catch (e) {
      error = e
    }
  }
  assert.ok(error instanceof RegistryLostDataError, `${error?.name}: ${error?.message}`)
  // The engine keeps claiming (200 ms after each loss) and losing; timers still run.
  const before = calls
  const t = Date.now()
  await sleep(500)
  assert.ok(Date.now() - t < 1500, `a 500 ms timer fired after ${Date.now() - t} ms`)
  assert.ok(calls > before, 'the engine stopped claiming')
  assert.throws(() => g.nextId(), RegistryLostDataError)
  await g.close()
})

test('a claim without a mark waits: the first ID is above claim time + maxDriftMs + markAheadMs + clockSkewAllowanceMs', async () => {
  const registry = new MemoryRegistry()
  const claim = registry.claim.bind(registry)
  let claimedAt = null
  registry.claim = async (args) => {
    const mark = await claim(args)
    if (mark !== null) claimedAt = Date.now()
    return mark
  }
  const options = { layout: SMALL, maxDriftMs: 100, markAheadMs: 300, clockSkewAllowanceMs: 700, leaseTtlMs: 3000 }
  const started = Date.now()
  const g = await Snowflake.fromRegistry(registry, options)
  const waited = Date.now() - started
  const floor = claimedAt + 100 + 300 + 700
  // The clock must come within maxDriftMs of the floor: about markAheadMs + clockSkewAllowanceMs.
  assert.ok(waited >= 950, `started after ${waited} ms`)
  const layout = new Layout(SMALL)
  const ids = g.nextIds(5000)
  assert.ok(
    layout.decode(ids[0]).timestampMs > floor,
    `first ID at ${layout.decode(ids[0]).timestampMs}, floor ${floor}`,
  )
  const last = g.nextId()
  await g.close()
  // Released with a mark: the next claim of that worker ID starts at once.
  const again = Date.now()
  const h = await Snowflake.fromRegistry(registry, { ...options, preferredWorkerId: g.workerId })
  assert.ok(Date.now() - again < 900, `a marked claim waited ${Date.now() - again} ms`)
  assert.ok(h.nextId() > last)
  await h.close()
})

test('a Leaf node still reporting refuses the start (LeafNodeAliveError); a stopped one is taken over at once', async () => {
  // A registry that assigns worker IDs, as ZooKeeper in Leaf's layout does: its claim
  // answers the identity's record, and a claim never writes it.
  const leaf = { version: 7, writtenAt: Date.now() - 100, running: true }
  const calls = []
  const registry = {
    claim(args) {
      calls.push('claim')
      if (leaf.running) {
        leaf.version += 1 // the Leaf node reports again every 3 s
        leaf.writtenAt = Date.now()
      }
      return {
        worker_id: 3,
        mark_ms: Date.now() - 5000,
        identity: '10.0.0.7:8080',
        version: leaf.version,
        age_ms: Date.now() - leaf.writtenAt,
      }
    },
    renew({ markMs }) {
      calls.push('renew')
      return markMs
    },
    release() {
      calls.push('release')
      return true
    },
    peers: () => [],
  }
  const started = Date.now()
  await assert.rejects(Snowflake.fromRegistry(registry, { layout: SMALL, ...FAST }), (e) => {
    assert.ok(e instanceof LeafNodeAliveError, `${e.name}: ${e.message}`)
    assert.equal(e.code, 'LEAF_NODE_ALIVE')
    assert.match(e.message, /10\.0\.0\.7:8080/)
    return true
  })
  // The second look (a repeated claim: at the renewal interval, which keeps the lease,
  // or after one report period) saw the record changed; nothing was written.
  assert.ok(Date.now() - started >= 200, `refused after ${Date.now() - started} ms`)
  assert.deepEqual(calls.slice(0, 2), ['claim', 'claim'])
  assert.ok(!calls.includes('renew'))
  // The Leaf node stopped long ago: its record is old, so the claim is taken at once.
  leaf.running = false
  leaf.writtenAt = Date.now() - 60000
  calls.length = 0
  const again = Date.now()
  const g = await Snowflake.fromRegistry(registry, { layout: SMALL, ...FAST })
  assert.ok(Date.now() - again < 2000, `took ${Date.now() - again} ms`)
  assert.equal(g.workerId, 3)
  assert.deepEqual(calls.slice(0, 2), ['claim', 'renew'])
  await g.close()
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
    [1, 2, 3].map(() => Snowflake.fromRegistry(registry, { layout: SMALL, ...FAST, preferredWorkerId: 5 })),
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
  const again = await Snowflake.fromRegistry(registry, { layout: SMALL, ...FAST, preferredWorkerId: 5 })
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
  refused(() => registryFromUrl('zk://h:2181/snowflake/x?identity=10.0.0.1'), /is not IP:PORT/)
  refused(() => new ZooKeeperRegistry({ hosts: 'h:2181', root: 'snowflake/x' }), /absolute znode path/)
  refused(() => new ZooKeeperRegistry({}), /exactly one of hosts or client/)
  refused(() => new EtcdRegistry({}), /exactly one of endpoints or client/)
})

/** What RedisRegistry asks of an ioredis client before its first claim (`config` null: the
 * server refuses CONFIG, as managed services may). */
class FakeRedis {
  constructor(config) {
    this.settings = config
    this.configCalls = 0
  }
  defineCommand(name) {
    this[name] = async () => 0 // every script answers 0 (a claim that found mark 0)
  }
  async config(verb, name) {
    this.configCalls++
    if (this.settings === null) throw new Error("ERR unknown command 'CONFIG'")
    return name in this.settings ? [name, this.settings[name]] : []
  }
}

test('the Redis registry warns once, before its first claim, when a restart or eviction would lose marks', async () => {
  const require = createRequire(import.meta.url)
  const { RedisRegistry } = require('segflake/registries')
  const claim = { workerId: 0, owner: 'web-1#0123456789abcdef', ttlMs: 1000 }
  const warnings = []
  const risky = new RedisRegistry(new FakeRedis({ appendonly: 'no', 'maxmemory-policy': 'allkeys-lru' }), {
    onWarning: (m) => warnings.push(m),
  })
  assert.equal(risky.durabilityWarning, null) // not read before the first claim
  assert.equal(await risky.claim(claim), 0)
  await risky.claim(claim)
  assert.equal(warnings.length, 1)
  assert.match(warnings[0], /^RedisRegistry: .*appendonly is off.*maxmemory-policy/)
  assert.equal(risky.client.configCalls, 2) // appendonly and maxmemory-policy, once
  assert.match(risky.durabilityWarning, /REGISTRY_LOST_DATA/)
  for (const [client, options] of [
    [new FakeRedis({ appendonly: 'yes', 'maxmemory-policy': 'volatile-lru' }), {}],
    [new FakeRedis(null), {}], // CONFIG refused: not checked
    [new FakeRedis({ appendonly: 'no' }), { checkDurability: false }],
  ]) {
    const quiet = new RedisRegistry(client, { ...options, onWarning: (m) => warnings.push(m) })
    await quiet.claim(claim)
    assert.equal(quiet.durabilityWarning, null)
  }
  assert.equal(warnings.length, 1)
})
