// Behaviour of the snowflake surface that users rely on.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import * as sf from 'segflake'
import sfDefault, { Layout, Snowflake, Obfuscator } from 'segflake'
import { assertThrowsCode } from './helpers.mjs'

function assertStrictlyIncreasing(ids, label) {
  for (let i = 1; i < ids.length; i++) {
    if (!(ids[i] > ids[i - 1])) assert.fail(`${label}: ids[${i}] = ${ids[i]} is not above ${ids[i - 1]}`)
  }
}

test('nextId, nextIdString, nextIds and fillIds interleave strictly increasing', () => {
  const gen = new Snowflake({ workerId: 77 })
  const ids = []
  const target = new BigUint64Array(1000)
  for (let round = 0; round < 50; round++) {
    ids.push(gen.nextId())
    ids.push(BigInt(gen.nextIdString()))
    ids.push(...gen.nextIds(5000))
    ids.push(...gen.fillIds(target))
  }
  assert.equal(ids.length, 50 * 6002)
  assertStrictlyIncreasing(ids, 'mixed calls')
  for (const id of [ids[0], ids[ids.length - 1]]) {
    const d = gen.decode(id)
    assert.equal(d.workerId, 77)
    assert.ok(Math.abs(d.timestampMs - Date.now()) < 5000, `timestamp ${d.timestampMs} is near now`)
  }
  assert.equal(typeof ids[0], 'bigint')
  // IDs carried as decimal strings (JSON) are accepted wherever an ID is taken.
  assert.deepEqual(gen.decode(String(ids[0])), gen.decode(ids[0]))
  assert.equal(sf.encodeBase62(String(ids[0])), sf.encodeBase62(ids[0]))
  assert.equal(gen.maxDriftMs, 2000)
  assert.equal(gen.sequenceStart, 'zero')
  assert.ok(gen.nextIds(3) instanceof BigUint64Array)
  assert.equal(gen.fillIds(target), target, 'fillIds returns its argument')
})

test('a twitter generator packs at most 4096 IDs per millisecond and borrows ahead only within maxDriftMs', () => {
  const gen = new Snowflake({ workerId: 1 })
  const start = Date.now()
  const ids = gen.nextIds(200_000)
  const perTick = new Map()
  for (const id of ids) {
    const d = gen.decode(id)
    perTick.set(d.tick, (perTick.get(d.tick) ?? 0) + 1)
    assert.ok(d.sequence <= 4095)
  }
  for (const n of perTick.values()) assert.ok(n <= 4096)
  // 200,000 IDs need at least 49 ticks; the logical time may run ahead of the clock by
  // at most 2000 ms.
  assert.ok(perTick.size >= 49)
  const last = gen.decode(ids[ids.length - 1]).timestampMs
  assert.ok(last <= Date.now() + 2000, `last ID time ${last} is within the drift bound`)
  assert.ok(gen.highWaterMark >= last && gen.highWaterMark >= start)
})

test('maxDriftMs 0 never issues an ID ahead of the clock', () => {
  const gen = new Snowflake({ workerId: 1, maxDriftMs: 0 })
  const ids = gen.nextIds(20_000)
  const after = Date.now()
  assert.ok(gen.decode(ids[ids.length - 1]).timestampMs <= after)
  assertStrictlyIncreasing(ids, 'strict')
})

test('restart above a persisted high-water mark', () => {
  const first = new Snowflake({ workerId: 3 })
  const before = first.nextIds(10_000)
  const mark = first.highWaterMark
  const restarted = new Snowflake({ workerId: 3, notBeforeMs: mark })
  const after = restarted.nextId()
  assert.ok(after > before[before.length - 1])
  assert.ok(restarted.decode(after).timestampMs > mark)
  // Dates and ISO strings are accepted for times.
  const byDate = new Snowflake({ workerId: 3, notBeforeMs: new Date(mark) })
  assert.ok(byDate.decode(byDate.nextId()).timestampMs > mark)
})

test('the js-safe layout hands out numbers that are safe integers', () => {
  const gen = new Snowflake({ workerId: 5, layout: 'js-safe' })
  assert.equal(gen.layout.jsSafeUntilMs, null)
  let prev = 0
  for (let i = 0; i < 5000; i++) {
    const n = gen.nextIdNumber()
    assert.ok(Number.isSafeInteger(n) && n > prev)
    prev = n
  }
  assert.equal(gen.decode(prev).workerId, 5)
  assert.ok(gen.nextId() > BigInt(prev))
})

test('sequenceStart random starts each tick below 100', () => {
  const gen = new Snowflake({ workerId: 2, sequenceStart: 'random' })
  const starts = new Set()
  let last = -1
  for (let i = 0; i < 30; i++) {
    const d = gen.decode(gen.nextId())
    if (d.tick !== last) {
      assert.ok(d.sequence < 100, `first sequence of a tick ${d.sequence} is below 100`)
      starts.add(d.sequence)
      last = d.tick
    }
    const until = Date.now() + 2
    while (Date.now() < until);
  }
  assert.ok(starts.size > 1, 'the start varies between ticks')
})

test('layouts: presets, epochs and queries', () => {
  assert.deepEqual(sf.presets(), ['twitter', 'sonyflake', 'uid-generator', 'js-safe', 'twitter-dc'])
  const t = new Layout()
  assert.equal(t.epochMs, 1288834974657)
  assert.equal(t.maxIdsPerSecond, 4_096_000)
  assert.equal(t.maxId, 2n ** 63n - 1n)
  const custom = Layout.preset('twitter', '2024-01-01')
  assert.equal(custom.epochMs, Date.UTC(2024, 0, 1))
  assert.equal(new Layout({ preset: 'twitter', epochMs: new Date(Date.UTC(2024, 0, 1)) }).epochMs, custom.epochMs)
  const uid = new Layout({ preset: 'uid-generator', epochMs: '2025-01-01', minLifetimeYears: 0 })
  assert.equal(uid.tickMs, 1000)
  assert.equal(uid.exhaustsAtMs, Date.UTC(2025, 0, 1) + 2 ** 28 * 1000)
  const son = new Layout('sonyflake')
  assert.equal(son.order, 'time-sequence-worker')
  const id = son.compose({ tick: 10, workerId: 3, sequence: 2 })
  assert.equal(id, (10n << 24n) | (2n << 16n) | 3n)
  // A Layout works wherever layout options are accepted.
  const gen = new Snowflake({ workerId: 9, layout: son })
  assert.equal(gen.layout.order, 'time-sequence-worker')
  assert.equal(gen.decode(gen.nextId()).workerId, 9)
  // An epoch given beside the layout replaces the layout's.
  const shifted = new Snowflake({ workerId: 9, layout: 'sonyflake', epochMs: '2025-06-01' })
  assert.equal(shifted.layout.epochMs, Date.UTC(2025, 5, 1))
  // compose on a generator defaults to its worker ID.
  assert.equal(gen.decode(gen.compose({ timestampMs: Date.now() })).workerId, 9)
})

test('codecs preserve order and obfuscation is a keyed bijection', () => {
  const gen = new Snowflake({ workerId: 4 })
  const ids = [...gen.nextIds(1000), 0n, 2n ** 64n - 1n].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  for (const format of ['base62', 'base32']) {
    const texts = ids.map((id) => sf.encode(id, format))
    assert.deepEqual([...texts].sort(), texts, `${format} sorts like the numbers`)
    assert.deepEqual(
      texts.map((t) => sf.parse(t, format)),
      ids,
    )
  }
  const o1 = new Obfuscator('000102030405060708090a0b0c0d0e0f')
  const o2 = new Obfuscator(Buffer.from('000102030405060708090a0b0c0d0e0e', 'hex'))
  const seen = new Set()
  for (const id of ids.filter((i) => i < 2n ** 63n)) {
    const x = o1.obfuscate(id)
    assert.ok(x < 2n ** 63n)
    assert.equal(o1.deobfuscate(x), id)
    assert.notEqual(o2.obfuscate(id), x)
    seen.add(x)
  }
  assert.equal(seen.size, ids.filter((i) => i < 2n ** 63n).length)
})

test('worker-ID helpers', () => {
  assert.equal(sf.workerIdFromHostname('id-gen-12.id-gen.ns.svc'), 12)
  assert.equal(sf.workerIdFromIpv4('10.0.3.7', 10), 775)
  assert.equal(sf.parseTimeMs('2025-01-01T00:00:00.000Z'), Date.UTC(2025, 0, 1))
  assert.equal(sf.formatTimeMs(Date.UTC(2025, 0, 1)), '2025-01-01T00:00:00.000Z')
})

test('nextId is bound to its generator; the native method refuses a wrong receiver', () => {
  const gen = new Snowflake({ workerId: 12 })
  const next = gen.nextId
  const a = next()
  const b = gen.nextId()
  assert.ok(b > a)
  assert.equal(gen.decode(a).workerId, 12)
  assert.ok(gen instanceof Snowflake)
  // The unbound native method (the addon's own class; the WebAssembly backend has none).
  if (sfDefault.backend !== 'native') return
  const native = sfDefault.__native
  assertThrowsCode(
    () => native.Snowflake.prototype.nextId.call({}),
    'INVALID_ARGUMENT',
    'must be called on a Snowflake',
  )
  assertThrowsCode(
    () => native.Snowflake.prototype.nextId.call(new Layout()),
    'INVALID_ARGUMENT',
    'must be called on a Snowflake',
  )
})

test('generators and their bound functions are garbage-collected safely', () => {
  const script = `
    const { Snowflake, SegmentGenerator } = require('segflake')
    let keep = []
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 4000; i++) {
        const g = new Snowflake({ workerId: i % 1024 })
        keep.push(g.nextId)
        g.nextId()
      }
      global.gc()
      for (const f of keep) f()
      keep = []
      global.gc()
    }
    let m = 1n
    for (let i = 0; i < 200; i++) new SegmentGenerator({ store: async (t, s) => ({ maxId: (m += BigInt(s)), step: s }) }).tag('t')
    global.gc()
    setTimeout(() => { global.gc(); console.log('ok') }, 50)
  `
  const r = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8', timeout: 60_000 })
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout.trim(), 'ok')
})

test('the database store adapters ship as subpath exports', async () => {
  const { createRequire } = await import('node:module')
  const require = createRequire(import.meta.url)
  assert.equal(typeof require('segflake/stores/pg').PgStore, 'function')
  assert.equal(typeof require('segflake/stores/mysql').MySQLStore, 'function')
  assert.equal(typeof (await import('segflake/stores/redis')).RedisStore, 'function')
})

test("datacenter and worker as hutool's Snowflake(workerId, dataCenterId) splits them", () => {
  // The twitter bits with the worker field 1 << 5 | 5: a twitter-layout generator with
  // worker 37 makes the same IDs.
  const gen = new sf.Snowflake({ workerId: 5, datacenterId: 1, layout: 'twitter-dc' })
  const id = gen.nextId()
  const d = gen.decode(id)
  assert.deepEqual([d.datacenterId, d.workerId], [1, 5])
  const plain = new sf.Layout('twitter').decode(id)
  assert.deepEqual([plain.workerId, plain.datacenterId], [37, undefined])
  const { timestampMs: _, ...parts } = d
  assert.equal(gen.compose(parts), id)
  assert.equal(new sf.Layout('twitter-dc').datacenterBits, 5)
  assertThrowsCode(
    () => new sf.Snowflake({ workerId: 5, datacenterId: 32, layout: 'twitter-dc' }),
    'INVALID_ARGUMENT',
    'datacenterId: 32 does not fit',
  )
  assertThrowsCode(() => new sf.Snowflake({ workerId: 5, datacenterId: 1 }), 'INVALID_ARGUMENT', 'no datacenter field')
})
