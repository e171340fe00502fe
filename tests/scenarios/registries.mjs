// Node twin of registries.py: the ZooKeeper and etcd registries against real servers
// (SEGFLAKE_ZK_HOSTS, SEGFLAKE_ETCD_ENDPOINT). Prints one line; exits 1 on a failure.
import { createRequire } from 'node:module'
import { setTimeout as sleep } from 'node:timers/promises'
import assert from 'node:assert/strict'

const require = createRequire(process.cwd() + '/')
const { Snowflake } = require('segflake')
const { ZooKeeperRegistry, EtcdRegistry, LEAF_REPORT_MS } = require('segflake/registries')
const zookeeper = require('node-zookeeper-client')

const ZK = process.env.SEGFLAKE_ZK_HOSTS
const ETCD = process.env.SEGFLAKE_ETCD_ENDPOINT
const call = (c, m, ...a) => new Promise((ok, no) => c[m](...a, (e, ...r) => (e ? no(e) : ok(r))))

async function zk() {
  const c = zookeeper.createClient(ZK)
  c.connect()
  await new Promise((ok) => c.once('connected', ok))
  const root = `/snowflake/check-node-${Date.now()}`
  const now = Date.now()
  // A running Leaf node, created as Leaf's SnowflakeZookeeperHolder does.
  await call(c, 'mkdirp', `${root}/forever`)
  const leaf = JSON.stringify({
    ip: '10.0.0.9',
    port: '8080',
    timestamp: now - 1000,
  })
  const [first] = await call(
    c,
    'create',
    `${root}/forever/10.0.0.9:8080-`,
    Buffer.from(leaf),
    zookeeper.CreateMode.PERSISTENT_SEQUENTIAL,
  )
  assert.match(first, /-0000000000$/)
  const opts = {
    hosts: ZK,
    root,
    identity: '10.0.0.9:8080',
    sessionTimeoutMs: 4000,
  }
  const a = new ZooKeeperRegistry(opts)
  const b = new ZooKeeperRegistry(opts)
  try {
    // A Leaf node's record: the claim answers its version and age (by ZooKeeper's clock),
    // and writes nothing into it.
    const claimed = await a.claim({ workerId: 7, owner: 'a', ttlMs: 3000 })
    const { ageMs, ...rest } = claimed
    assert.deepEqual(rest, {
      workerId: 0,
      markMs: now - 1000 + LEAF_REPORT_MS,
      identity: '10.0.0.9:8080',
      version: 0,
    })
    assert.ok(ageMs >= 0 && ageMs < 5000, `ageMs ${ageMs}`)
    assert.equal(await b.claim({ workerId: 0, owner: 'b', ttlMs: 3000 }), null, 'a second owner of one identity')
    // Claimed again (the generator's Leaf check): the same version, a later server time.
    await sleep(200)
    const again = await a.claim({ workerId: 0, owner: 'a', ttlMs: 3000 })
    assert.equal(again.version, 0)
    assert.ok(again.ageMs >= ageMs + 150, `ageMs ${again.ageMs} after ${ageMs}`)
    assert.equal((await call(c, 'getData', first))[1].version, 0, 'a claim wrote the forever node')
    const mark = now + 60000
    assert.equal(
      await a.renew({
        workerId: 0,
        owner: 'a',
        ttlMs: 3000,
        markMs: mark,
        reportedMs: now,
      }),
      mark,
    )
    const [raw] = await call(c, 'getData', first)
    assert.equal(
      raw.toString(),
      JSON.stringify({
        ip: '10.0.0.9',
        port: '8080',
        timestamp: mark - LEAF_REPORT_MS,
      }),
    )
    assert.equal(
      await a.renew({
        workerId: 0,
        owner: 'a',
        ttlMs: 3000,
        markMs: now,
        reportedMs: now,
      }),
      mark,
      'the mark went down',
    )
    assert.equal(
      await b.renew({
        workerId: 0,
        owner: 'b',
        ttlMs: 3000,
        markMs: mark,
        reportedMs: now,
      }),
      null,
    )
    assert.deepEqual(await a.peers(), [[0, now, 0]])
    // Written last by a: its next claim answers no record (no Leaf node wrote it since).
    assert.deepEqual(await a.claim({ workerId: 0, owner: 'a', ttlMs: 3000 }), {
      workerId: 0,
      markMs: mark,
    })
    assert.equal(await a.release({ workerId: 0, owner: 'a', markMs: mark + 10 }), true)
    const taken = await b.claim({ workerId: 0, owner: 'b', ttlMs: 3000 })
    assert.equal(taken.markMs, mark + 10)
    assert.equal(taken.identity, '10.0.0.9:8080')
    // The ensemble lost the record while b held it: its live node, then the forever node.
    await call(c, 'remove', `${root}/leaf_temporary/0`, -1)
    assert.equal(
      await b.renew({
        workerId: 0,
        owner: 'b',
        ttlMs: 3000,
        markMs: mark,
        reportedMs: now,
      }),
      -1,
    )
    const back = await b.claim({ workerId: 0, owner: 'b', ttlMs: 3000 })
    assert.deepEqual([back.workerId, back.markMs], [0, mark + 10])
    await call(c, 'remove', first, -1)
    assert.equal(
      await b.renew({
        workerId: 0,
        owner: 'b',
        ttlMs: 3000,
        markMs: mark,
        reportedMs: now,
      }),
      -1,
    )
    // Found again: a new forever node, never written (mark 0, no record).
    const renewed = await b.claim({ workerId: 0, owner: 'b', ttlMs: 3000 })
    assert.equal(renewed.markMs, 0)
    assert.equal(renewed.identity, undefined)
    assert.equal(
      await b.release({
        workerId: renewed.workerId,
        owner: 'b',
        markMs: mark + 10,
      }),
      true,
    )
  } finally {
    await a.close()
    await b.close()
  }
  // End to end: a new identity gets the next sequence number.
  const registry = new ZooKeeperRegistry({
    ...opts,
    identity: '10.0.0.10:8080',
  })
  const claimedAt = Date.now()
  const gen = await Snowflake.fromRegistry(registry, {
    layout: 'twitter',
    leaseTtlMs: 4000,
    markAheadMs: 500,
    clockSkewAllowanceMs: 200,
  })
  const ids = gen.nextIds(1000)
  const [children] = await call(c, 'getChildren', `${root}/forever`)
  const own = children.find((n) => n.startsWith('10.0.0.10:8080-'))
  assert.equal(gen.workerId, Number(own.slice(own.lastIndexOf('-') + 1)))
  assert.equal(gen.decode(ids[0]).workerId, gen.workerId)
  // A new identity's node has no mark: the first ID is above the claim time + the lead.
  assert.ok(gen.decode(ids[0]).timestampMs > claimedAt + 500 + 200, 'an unmarked claim started at once')
  await gen.close()
  await registry.close()
  c.close()
  return `zookeeper: Leaf layout, takeover above the report (the record's version and age, never written by a claim), one owner per identity, marks, peers, release, a lost record (-1), generator; ${await leafAlive()}; ${await cacheFile()}`
}

// A Leaf node that still reports (every 3 s) for the identity a generator would take over:
// the start-up is refused with LeafNodeAliveError after one report period, nothing is
// written into the Leaf node's record and no live node is left behind; once the Leaf node
// stopped, the same start-up takes its worker ID at once, above its last report.
async function leafAlive() {
  const c = zookeeper.createClient(ZK)
  c.connect()
  await new Promise((ok) => c.once('connected', ok))
  const root = `/snowflake/leaf-alive-node-${Date.now()}`
  await call(c, 'mkdirp', `${root}/forever`)
  const report = () => Buffer.from(JSON.stringify({ ip: '10.0.0.3', port: '8080', timestamp: Date.now() }))
  const mode = zookeeper.CreateMode.PERSISTENT_SEQUENTIAL
  const [node] = await call(c, 'create', `${root}/forever/10.0.0.3:8080-`, report(), mode)
  let reports = 0
  const leaf = setInterval(() => {
    reports++
    call(c, 'setData', node, report(), -1).catch(() => {})
  }, 3000)
  const registry = new ZooKeeperRegistry({ hosts: ZK, root, identity: '10.0.0.3:8080' })
  const t0 = Date.now()
  let reportsAtRefusal = -1
  try {
    await assert.rejects(Snowflake.fromRegistry(registry, { layout: 'twitter' }), (e) => {
      reportsAtRefusal = reports
      assert.equal(e.code, 'LEAF_NODE_ALIVE', `${e.name}: ${e.message}`)
      assert.match(e.message, /10\.0\.0\.3:8080/)
      return true
    })
  } finally {
    clearInterval(leaf)
  }
  const refusedAfter = Date.now() - t0
  // Refused once the node changed again (the claim's repeated looks see the Leaf node's
  // next report, within one report period), not at the first look.
  assert.ok(reportsAtRefusal >= 1 && refusedAfter < 10000, `refused after ${refusedAfter} ms, ${reportsAtRefusal} reports`)
  const [raw, stat] = await call(c, 'getData', node)
  assert.equal(stat.version, reports, 'segflake wrote into the Leaf node')
  assert.deepEqual((await call(c, 'getChildren', `${root}/leaf_temporary`))[0], [], 'a live node was left')
  const last = JSON.parse(raw.toString()).timestamp
  await sleep(4600) // the Leaf node stopped more than one report period ago
  const t1 = Date.now()
  const gen = await Snowflake.fromRegistry(registry, { layout: 'twitter' })
  const took = Date.now() - t1
  const first = gen.decode(gen.nextId())
  assert.equal(first.workerId, 0)
  assert.ok(first.timestampMs > last + LEAF_REPORT_MS, "below the stopped Leaf node's reach")
  await gen.close()
  await registry.close()
  c.close()
  return `a live Leaf node: LEAF_NODE_ALIVE after ${refusedAfter} ms, its record untouched; taken over ${took} ms after it stopped`
}

// Leaf's worker-ID cache: recorded while ZooKeeper serves, used (opt-in) when it is down.
async function cacheFile() {
  const fs = await import('node:fs')
  const root = `/snowflake/cache-node-${Date.now()}`
  const path = `/tmp/segflake-cache-node-${Date.now()}/workerID.properties`
  const opts = { root, identity: '10.0.0.20:8080', sessionTimeoutMs: 4000 }
  let registry = new ZooKeeperRegistry({ ...opts, hosts: ZK, cacheFile: path })
  let gen = await Snowflake.fromRegistry(registry, {
    layout: 'twitter',
    leaseTtlMs: 3000,
  })
  const last = gen.nextIds(1000).at(-1)
  const worker = gen.workerId
  await gen.close()
  await registry.close()
  const fields = () =>
    Object.fromEntries(
      fs
        .readFileSync(path, 'utf8')
        .trim()
        .split('\n')
        .map((l) => l.split('=')),
    )
  assert.equal(Number(fields().workerID), worker)
  assert.ok(Number(fields().markMs) >= gen.decode(last).timestampMs)

  const dead = '127.0.0.1:1' // nothing listens: ZooKeeper is down
  registry = new ZooKeeperRegistry({ ...opts, hosts: dead })
  await assert.rejects(
    Snowflake.fromRegistry(registry, { layout: 'twitter', claimWaitMs: 1000 }),
    (e) => e.code === 'REGISTRY_ERROR',
  )
  await registry.close()
  registry = new ZooKeeperRegistry({ ...opts, hosts: dead, cacheFile: path })
  gen = await Snowflake.fromRegistry(registry, {
    layout: 'twitter',
    leaseTtlMs: 3000,
    claimWaitMs: 1000,
  })
  const ids = gen.nextIds(1000)
  assert.equal(gen.workerId, worker)
  assert.ok(ids[0] > last, 'the cached worker ID did not resume above its mark')
  await sleep(1500)
  const more = gen.nextIds(10)
  await gen.close()
  await registry.close()
  assert.ok(Number(fields().markMs) >= gen.decode(more.at(-1)).timestampMs, 'the offline mark was not recorded')
  return `cache file: worker ID ${worker} resumed with ZooKeeper down, above the recorded mark; refused without it`
}

async function etcd() {
  const prefix = `/segflake-check-node-${Date.now()}`
  const a = new EtcdRegistry({ endpoints: ETCD, prefix })
  const b = new EtcdRegistry({ endpoints: ETCD, prefix })
  const now = Date.now()
  try {
    assert.equal(await a.claim({ workerId: 3, owner: 'a', ttlMs: 2000 }), 0)
    assert.equal(await b.claim({ workerId: 3, owner: 'b', ttlMs: 2000 }), null)
    assert.equal(
      await a.renew({
        workerId: 3,
        owner: 'a',
        ttlMs: 2000,
        markMs: now + 5000,
        reportedMs: now,
      }),
      now + 5000,
    )
    assert.equal(
      await a.renew({
        workerId: 3,
        owner: 'a',
        ttlMs: 2000,
        markMs: now,
        reportedMs: now,
      }),
      now + 5000,
    )
    assert.equal(
      await b.renew({
        workerId: 3,
        owner: 'b',
        ttlMs: 2000,
        markMs: now,
        reportedMs: now,
      }),
      null,
    )
    assert.deepEqual(await a.peers(), [[3, now, 0]])
    assert.equal(await a.release({ workerId: 3, owner: 'a', markMs: now + 6000 }), true)
    assert.equal(await b.claim({ workerId: 3, owner: 'b', ttlMs: 2000 }), now + 6000)
    // A holder that stops renewing loses the ID with its etcd lease; the mark stays.
    assert.equal(await a.claim({ workerId: 4, owner: 'a', ttlMs: 1000 }), 0)
    assert.equal(
      await a.renew({
        workerId: 4,
        owner: 'a',
        ttlMs: 1000,
        markMs: now + 7000,
        reportedMs: now,
      }),
      now + 7000,
    )
    await sleep(3500)
    assert.equal(await b.claim({ workerId: 4, owner: 'b', ttlMs: 1000 }), now + 7000)
    assert.equal(
      await a.renew({
        workerId: 4,
        owner: 'a',
        ttlMs: 1000,
        markMs: now + 8000,
        reportedMs: now,
      }),
      null,
    )
    // etcd lost the record while the holder's etcd lease lives: -1, not "another owner".
    assert.equal(await a.claim({ workerId: 6, owner: 'a', ttlMs: 5000 }), 0)
    await a.client.delete().key(`${prefix}/worker/6`)
    assert.equal(await a.renew({ workerId: 6, owner: 'a', ttlMs: 5000, markMs: now, reportedMs: now }), -1)
  } finally {
    await a.close()
    await b.close()
  }
  const gens = []
  for (let i = 0; i < 3; i++) {
    gens.push(
      await Snowflake.fromRegistry(new EtcdRegistry({ endpoints: ETCD, prefix }), {
        layout: { preset: 'twitter', workerBits: 2 },
        markAheadMs: 500,
        clockSkewAllowanceMs: 0,
      }),
    )
  }
  const workers = gens.map((g) => g.workerId).sort()
  assert.equal(new Set(workers).size, 3)
  for (const g of gens) await g.close()
  return `etcd: claim/renew/release/peers, lease expiry, a lost record (-1), 3 generators on worker IDs ${workers.join(',')}`
}

try {
  console.log(`node registries: ${await zk()}; ${await etcd()}`)
  process.exit(0)
} catch (e) {
  console.error(e)
  process.exit(1)
}
