// SegmentGenerator with user-supplied async stores: latency, failures, garbage, hangs,
// concurrency, close, and an event loop that is never blocked or kept alive.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { SegmentGenerator, SegmentTag, SegflakeError, MultiStore } from 'segflake'
import { assertThrowsCode, assertRejectsCode, checkError } from './helpers.mjs'

/** A Leaf table in memory: `UPDATE ... SET max_id = max_id + step` then `SELECT`. */
class LeafStore {
  constructor({ start = 1n, latencyMs = 0, jitterMs = 0 } = {}) {
    this.rows = new Map()
    this.start = start
    this.latencyMs = latencyMs
    this.jitterMs = jitterMs
    this.calls = []
    this.failNext = 0
    this.failForever = false
    this.hang = false
  }
  async allocate(tag, step) {
    this.calls.push({ tag, step })
    const delay = this.latencyMs + Math.random() * this.jitterMs
    if (delay > 0) await sleep(delay)
    if (this.hang) return new Promise(() => {})
    if (this.failForever || this.failNext > 0) {
      this.failNext = Math.max(0, this.failNext - 1)
      throw new Error(`connection refused (${tag})`)
    }
    const maxId = (this.rows.get(tag) ?? this.start) + BigInt(step)
    this.rows.set(tag, maxId)
    return { maxId, step }
  }
}

function assertUniqueIncreasing(ids, label) {
  for (let i = 1; i < ids.length; i++) {
    if (!(ids[i] > ids[i - 1])) assert.fail(`${label}: ids[${i}] = ${ids[i]} is not above ${ids[i - 1]}`)
  }
}

test('a fresh Leaf row (max_id 1, step 2000) yields 1..=2000, then continues densely', async () => {
  const store = new LeafStore()
  const gen = new SegmentGenerator({ store, step: 2000, dynamicStep: false })
  const ids = []
  for (let i = 0; i < 2000; i++) ids.push(await gen.nextId('order'))
  assert.equal(ids[0], 1n)
  assert.equal(ids[1999], 2000n)
  assert.equal(await gen.nextId('order'), 2001n)
  assert.deepEqual(store.calls[0], { tag: 'order', step: 2000 })
  await gen.close()
})

test('IDs from a store with latency are dense, strictly increasing and from received ranges only', async () => {
  const store = new LeafStore({ latencyMs: 2, jitterMs: 8 })
  const gen = new SegmentGenerator({ store, step: 500 })
  const t = gen.tag('order')
  const ids = []
  let syncMisses = 0
  while (ids.length < 30_000) {
    const r = ids.length % 3
    if (r === 0) ids.push(await gen.nextId('order'))
    else if (r === 1) ids.push(...(await t.nextIds(777)))
    else {
      try {
        ids.push(t.nextIdSync())
      } catch (e) {
        checkError(e, 'SEGMENTS_EXHAUSTED', 'nextIdSync found no ready segment', 'sync miss')
        syncMisses++
        ids.push(await t.nextId())
      }
    }
  }
  assertUniqueIncreasing(ids, 'one consumer')
  assert.equal(ids[0], 1n)
  // Every ID lies below the table's max_id: nothing was invented.
  assert.ok(ids[ids.length - 1] < store.rows.get('order'))
  // A single consumer gets the ranges densely (no gaps: nothing else used the table).
  assert.equal(ids[ids.length - 1], BigInt(ids.length))
  const s = gen.stats('order')
  assert.equal(s.tag, 'order')
  assert.ok(s.fetches >= 2 && s.failures === 0)
  assert.ok(s.issued >= ids.length)
  assert.ok(typeof s.lastFetchLatencyMs === 'number' && s.lastFetchLatencyMs >= 1)
  assert.ok(s.step >= 500, 'the dynamic step never goes below the configured step')
  assert.equal(typeof s.currentStart, 'bigint')
  await gen.close()
  assert.ok(syncMisses < 100, `${syncMisses} sync misses: the double buffer keeps a segment ready`)
})

test('the double buffer: the next segment is fetched in the background', async () => {
  const store = new LeafStore({ latencyMs: 20 })
  const gen = new SegmentGenerator({ store, step: 1000, dynamicStep: false })
  const t = gen.tag('pay')
  await t.nextId() // the first segment arrives
  for (let i = 0; i < 200; i++) t.nextIdSync() // 20% used: past the 10% trigger
  await sleep(60)
  const s = t.stats()
  assert.equal(s.nextReady, true, 'the next segment is ready before the current one is used up')
  assert.equal(s.nextStart, 1001n)
  assert.equal(s.nextEnd, 2001n)
  // Sync takes run through the boundary without a miss.
  for (let i = 0; i < 1500; i++) t.nextIdSync()
  assert.ok(s.runwaySeconds === null || s.runwaySeconds > 0)
  await gen.close()
})

test('store failures: buffered IDs keep flowing, then SegmentsExhaustedError with the cause, then recovery', async () => {
  const store = new LeafStore({ latencyMs: 1 })
  const gen = new SegmentGenerator({ store, step: 100, dynamicStep: false, retryBackoffMs: 0, waitTimeoutMs: 300 })
  const t = gen.tag('order')
  await t.nextId()
  store.failForever = true
  const ids = [1n]
  let err
  const started = performance.now()
  for (;;) {
    try {
      ids.push(await t.nextId())
    } catch (e) {
      err = e
      break
    }
  }
  assert.ok(performance.now() - started < 2000, 'the failure surfaces within the bounded wait')
  checkError(err, 'SEGMENTS_EXHAUSTED', 'connection refused', 'after the buffers ran dry')
  assert.ok(
    err.cause instanceof Error && err.cause.message === 'connection refused (order)',
    'cause is the store error',
  )
  // Every ID of the ranges received before the outage was issued, once.
  assertUniqueIncreasing(ids, 'through the outage')
  assert.equal(ids[ids.length - 1], BigInt(ids.length))
  assert.ok(ids.length >= 100 && ids.length % 100 === 0, `${ids.length} IDs: whole segments`)
  assert.equal(BigInt(ids.length) + 1n, store.rows.get('order'), 'all IDs of the received ranges, no more')
  const s = t.stats()
  assert.ok(s.failures >= 1 && s.consecutiveFailures >= 1)
  assert.match(s.lastError, /connection refused/)
  // The next call retries the store.
  store.failForever = false
  const next = await t.nextId()
  assert.ok(next > ids[ids.length - 1])
  await gen.close()
})

test('stores that throw, reject with non-errors or resolve to garbage surface as typed errors', async () => {
  const cases = [
    [
      'throws synchronously',
      () => {
        throw new TypeError('sync boom')
      },
      'sync boom',
    ],
    ['rejects with a string', () => Promise.reject('plain string'), 'plain string'],
    ['rejects with undefined', () => Promise.reject(undefined), 'undefined'],
    ['resolves to a string', async () => '1000', 'the store returned the string "1000"; expected { maxId, step }'],
    ['resolves to {}', async () => ({}), 'maxId'],
    ['negative maxId', async (tag, step) => ({ maxId: -5, step }), 'negative'],
    ['fractional step', async () => ({ maxId: 1000, step: 1.5 }), 'the store returned step = the number 1.5'],
    [
      'maxId above 2^64',
      async (tag, step) => ({ maxId: 2n ** 64n, step }),
      'the store returned maxId = 18446744073709551616',
    ],
    ['maxId above i64', async (tag, step) => ({ maxId: 2n ** 63n + 5n, step }), 'STORE_CONTRACT'],
    ['zero step', async () => ({ maxId: 1000, step: 0 }), 'step'],
    ['maxId below step', async () => ({ maxId: 10, step: 1000 }), 'step'],
    [
      'getter that throws',
      async () => ({
        get maxId() {
          throw new Error('getter boom')
        },
        step: 5,
      }),
      'getter boom',
    ],
  ]
  for (const [label, fn, contains] of cases) {
    const gen = new SegmentGenerator({ store: fn, waitTimeoutMs: 500 })
    const e = await assertRejectsCode(() => gen.nextId('t'), 'SEGMENTS_EXHAUSTED', undefined, label)
    const text = `${e.message} ${e.cause?.message ?? String(e.cause)} ${e.cause?.code ?? ''}`
    assert.ok(text.includes(contains) || e.message.includes(contains), `${label}: "${text}" lacks "${contains}"`)
    assert.ok(gen.stats('t').failures >= 1, label)
    assertThrowsCode(() => gen.nextIdSync('t'), 'SEGMENTS_EXHAUSTED', undefined, label)
    await gen.close()
  }
})

test('a store resolving to null has no such tag: UnknownTagError at once, not asked again before the backoff', async () => {
  let asked = 0
  const store = async () => {
    asked++
    return null
  }
  const gen = new SegmentGenerator({ store, waitTimeoutMs: 5000 })
  const began = Date.now()
  await assertRejectsCode(() => gen.nextId('t'), 'UNKNOWN_TAG', 'unknown tag "t"')
  await assertRejectsCode(() => gen.nextId('t'), 'UNKNOWN_TAG')
  assert.ok(Date.now() - began < 1000, 'no wait for a tag the store does not have')
  assert.equal(asked, 1)
  await gen.close()
})

test('overlapping or preceding ranges are refused and none of their IDs is issued', async () => {
  let maxId = 1000n
  let replay = false
  const gen = new SegmentGenerator({
    store: async (tag, step) => {
      if (!replay) maxId += BigInt(step)
      return { maxId, step } // when replaying, the same range again
    },
    step: 100,
    dynamicStep: false,
    prefetchPercent: 100,
    retryBackoffMs: 0,
  })
  const t = gen.tag('x')
  const ids = await t.nextIds(100)
  assert.equal(ids[0], 1000n)
  assert.equal(ids[99], 1099n)
  replay = true
  const e = await assertRejectsCode(() => t.nextId(), 'SEGMENTS_EXHAUSTED', 'overlaps or precedes', 'replayed range')
  checkError(e.cause, 'STORE_CONTRACT_VIOLATION', 'none of its IDs were issued', 'cause')
  replay = false
  const after = await t.nextId()
  assert.ok(after > 1099n, `${after} is above every ID issued before`)
  await gen.close()
})

test('a hanging store: callers fail within waitTimeoutMs, the store call is abandoned after storeTimeoutMs', async () => {
  const store = new LeafStore()
  store.hang = true
  const gen = new SegmentGenerator({ store, waitTimeoutMs: 150, storeTimeoutMs: 400 })
  let t0 = performance.now()
  await assertRejectsCode(() => gen.nextId('slow'), 'SEGMENTS_EXHAUSTED', 'has not answered a fetch started')
  const waited = performance.now() - t0
  assert.ok(waited >= 140 && waited < 1000, `waited ${waited} ms`)
  await sleep(400)
  assert.match(gen.stats('slow').lastError, /storeTimeoutMs/)
  store.hang = false
  t0 = performance.now()
  assert.equal(await gen.nextId('slow'), 1n)
  await gen.close()
})

test('the event loop keeps running while the store is slow', async () => {
  const store = new LeafStore({ latencyMs: 150 })
  const gen = new SegmentGenerator({ store, waitTimeoutMs: 2000 })
  let ticks = 0
  const interval = setInterval(() => ticks++, 5)
  const id = await gen.nextId('loop')
  clearInterval(interval)
  assert.equal(id, 1n)
  assert.ok(ticks >= 10, `only ${ticks} timer ticks during a 150 ms store call`)
  await gen.close()
})

test('1000 concurrent callers on small segments get unique IDs', async () => {
  const store = new LeafStore({ latencyMs: 1, jitterMs: 3 })
  const gen = new SegmentGenerator({ store, step: 10, maxStep: 10, waitTimeoutMs: 5000 })
  const all = await Promise.all(Array.from({ length: 1000 }, () => gen.nextId('c')))
  assert.equal(new Set(all).size, 1000)
  const batches = await Promise.all(Array.from({ length: 20 }, () => gen.nextIds('c', 37)))
  const flat = batches.flatMap((b) => [...b])
  for (const b of batches) assertUniqueIncreasing([...b], 'each batch')
  assert.equal(new Set([...all, ...flat]).size, 1000 + 20 * 37)
  await gen.close()
})

test('tags are independent; class stores keep this', async () => {
  const store = new LeafStore()
  const gen = new SegmentGenerator({ store })
  assert.equal(await gen.nextId('a'), 1n)
  assert.equal(await gen.nextId('b'), 1n)
  assert.equal(await gen.nextId('a'), 2n)
  assert.deepEqual(gen.tags.sort(), ['a', 'b'])
  const h = gen.tag('a')
  assert.ok(h instanceof SegmentTag)
  assert.equal(h, gen.tag('a'))
  assert.equal(h.name, 'a')
  assert.equal(await h.nextId(), 3n)
  await gen.close()
})

test('close: waiting callers and later calls get ClosedError; close waits for the store call in flight', async () => {
  const store = new LeafStore({ latencyMs: 100 })
  const gen = new SegmentGenerator({ store })
  const waiting = gen.nextId('x')
  await sleep(10)
  let settled = false
  const closing = gen.close().then(() => (settled = true))
  await assertRejectsCode(() => waiting, 'CLOSED', 'closed')
  assert.equal(settled, false, 'close waits for the store call')
  await closing
  assert.equal(gen.closed, true)
  await assertRejectsCode(() => gen.nextId('x'), 'CLOSED')
  await assertRejectsCode(() => gen.nextId('new-tag'), 'CLOSED')
  assertThrowsCode(() => gen.nextIdSync('x'), 'CLOSED')
  assert.equal(gen.close(), gen.close(), 'close is idempotent')
})

test('a script that never calls close() still exits: nothing keeps the event loop alive', () => {
  const script = `
    const { SegmentGenerator } = require('segflake')
    let max = 1n
    const gen = new SegmentGenerator({ store: { async allocate(tag, step) { max += BigInt(step); return { maxId: max, step } } } })
    gen.nextId('order').then((id) => console.log('id', String(id)))
  `
  const t0 = performance.now()
  const r = spawnSync(process.execPath, ['-e', script], { cwd: process.cwd(), encoding: 'utf8', timeout: 10_000 })
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout.trim(), 'id 1')
  assert.ok(performance.now() - t0 < 5000, 'exited promptly')
})

test('options and arguments are validated with typed errors', async () => {
  const store = new LeafStore()
  const bad = [
    [undefined, 'expected an options object'],
    [{}, 'invalid store: got undefined'],
    [{ store: 5 }, 'invalid store: got the number 5'],
    [{ store: {} }, 'allocate(tag, step)'],
    [{ store, step: 0 }, 'invalid step: got 0; allowed integers 1..='],
    [{ store, step: 10, maxStep: 5 }, 'allowed 1..=5 (maxStep)'],
    [{ store, prefetchPercent: 101 }, 'invalid prefetchPercent: got 101; allowed integers 0..=100'],
    [{ store, waitTimeoutMs: 0 }, 'invalid waitTimeoutMs: got 0; allowed integers 1..=3600000'],
    [{ store, storeTimeoutMs: 0 }, 'invalid storeTimeoutMs: got 0; allowed integers 1..=3600000'],
    [{ store, dynamicStep: 'yes' }, 'invalid dynamicStep: got the string "yes"; allowed true or false'],
    [{ store, step: -1 }, 'invalid step: got -1'],
    [{ store, stepSize: 10 }, 'unknown option "stepSize"; allowed: step, maxStep'],
  ]
  for (const [options, contains] of bad) {
    assertThrowsCode(
      () => new SegmentGenerator(options),
      'INVALID_ARGUMENT',
      contains,
      JSON.stringify(options === undefined ? 'undefined' : Object.keys(options)),
    )
  }
  const gen = new SegmentGenerator({ store })
  for (const [tag, contains] of [
    ['', '1..=128 bytes'],
    ['a b', 'whitespace'],
    ['x'.repeat(129), '1..=128 bytes'],
    [42, 'invalid tag: got 42; expected a string'],
  ]) {
    await assertRejectsCode(() => gen.nextId(tag), 'INVALID_ARGUMENT', contains, String(tag))
    assertThrowsCode(() => gen.nextIdSync(tag), 'INVALID_ARGUMENT', contains, String(tag))
    assertThrowsCode(() => gen.tag(tag), 'INVALID_ARGUMENT', contains, String(tag))
  }
  await assertRejectsCode(() => gen.nextIds('ok', 0), 'INVALID_ARGUMENT', 'allowed integers 1..=16777216')
  await assertRejectsCode(() => gen.nextIds('ok', 1.5), 'INVALID_ARGUMENT', 'not an integer')
  await assertRejectsCode(() => gen.nextIds('ok', 2 ** 24 + 1), 'INVALID_ARGUMENT', 'allowed integers 1..=16777216')
  assertThrowsCode(() => gen.stats('never-used'), 'INVALID_ARGUMENT', 'no IDs were requested')
  assert.equal(typeof (await gen.nextId('ok')), 'bigint')
  await gen.close()
  assert.ok(new SegflakeError('x') instanceof Error)
})

test('HttpStore: bad arguments are typed errors; an unreachable service is the cause of SegmentsExhaustedError', async () => {
  const { HttpStore } = await import('segflake')
  for (const [url, options] of [
    ['ftp://ids:8080', {}],
    ['ids.internal:8080', {}],
    [42, {}],
    ['http://ids:8080', { token: '' }],
    ['http://ids:8080', { token: 'two words' }],
    ['http://ids:8080', { timeoutMs: 0 }],
    ['http://ids:8080', { timeoutMs: 1.5 }],
    ['http://ids:8080', { fetch: 'no' }],
  ]) {
    assertThrowsCode(() => new HttpStore(url, options), 'INVALID_ARGUMENT')
  }
  assert.equal(new HttpStore('http://ids:8080//').baseUrl, 'http://ids:8080')
  // Port 9 on loopback: nothing listens, the connection is refused at once.
  const store = new HttpStore('http://127.0.0.1:9', { timeoutMs: 2000 })
  await assert.rejects(store.allocate('order', 10), (e) => {
    assert.equal(e.code, 'STORE_ERROR')
    assert.match(e.message, /POST http:\/\/127\.0\.0\.1:9\/api\/segment\/alloc\/order failed/)
    return true
  })
  const gen = new SegmentGenerator({ store, waitTimeoutMs: 3000 })
  await assert.rejects(gen.nextId('order'), (e) => {
    assert.equal(e.code, 'SEGMENTS_EXHAUSTED')
    assert.match(e.message, /alloc\/order/)
    return true
  })
  await gen.close()
})

test('MultiStore: store i gives only IDs ≡ i (mod n); a stopped store is skipped without an error', async () => {
  const a = new LeafStore({ latencyMs: 1 })
  const b = new LeafStore({ latencyMs: 1 })
  const ranges = new Map([
    [a, []],
    [b, []],
  ])
  for (const s of [a, b]) {
    const allocate = s.allocate.bind(s)
    s.allocate = async (tag, step) => {
      const r = await allocate(tag, step)
      ranges.get(s).push([r.maxId - BigInt(r.step), r.maxId])
      return r
    }
  }
  const multi = new MultiStore([a, b])
  assert.deepEqual(multi.stores, [a, b])
  await assert.rejects(multi.allocate('t', 10), /picks the store/)
  const gen = new SegmentGenerator({ store: multi, step: 100, dynamicStep: false })
  const ids = []
  const take = async (n) => {
    for (let i = 0; i < n; i++) ids.push(await gen.nextId('order'))
  }
  await take(300)
  a.failForever = true
  await take(300)
  a.failForever = false
  b.failForever = true
  await take(300)
  assertUniqueIncreasing(ids, 'across the switches')
  for (const id of ids) {
    const source = id % 2n === 0n ? a : b
    assert.ok(
      ranges.get(source).some(([s, e]) => s <= id && id < e),
      `${id} comes from its residue's store`,
    )
  }
  assert.ok(ids.some((id) => id % 2n === 1n) && ids[ids.length - 1] % 2n === 0n)
  assert.match(gen.stats('order').lastError, /store 1 of 2: store error/)
  await gen.close()

  assertThrowsCode(() => new MultiStore('pg'), 'INVALID_ARGUMENT', 'expected an array of stores')
  assertThrowsCode(() => new MultiStore([a, 42]), 'INVALID_ARGUMENT', 'invalid stores[1]')
  assertThrowsCode(() => new SegmentGenerator({ store: new MultiStore([]) }), 'INVALID_ARGUMENT', '1..=64')
  // A store whose row says it is another database's (Tinyid's delta/remainder) is refused.
  const wrong = () => ({ maxId: 101n, step: 100, delta: 2, remainder: 1 })
  const single = new SegmentGenerator({ store: new MultiStore([wrong]), waitTimeoutMs: 200 })
  await assertRejectsCode(() => single.nextId('t'), 'SEGMENTS_EXHAUSTED', 'residue class 1 (mod 2)')
  await single.close()
})

/** A LeafStore that takes IDs back: `giveBack` is the compare-and-set of Leaf's row. */
class GiveBackStore extends LeafStore {
  constructor(options) {
    super(options)
    this.giveBacks = []
  }
  async giveBack(tag, expectedMaxId, maxId) {
    this.giveBacks.push({ tag, expectedMaxId, maxId })
    if (this.rows.get(tag) !== expectedMaxId || !(maxId < expectedMaxId)) return false
    this.rows.set(tag, maxId)
    return true
  }
}

async function takeIds(gen, tag, n) {
  const ids = []
  for (let i = 0; i < n; i++) ids.push(await gen.nextId(tag))
  return ids
}

test('close gives back what was not issued: the next generator continues at 251, no gap, no duplicate', async () => {
  const store = new GiveBackStore()
  const options = { store, step: 1000, dynamicStep: false }
  const gen = new SegmentGenerator(options)
  const first = await takeIds(gen, 'order', 250)
  assert.equal(first[0], 1n)
  assert.equal(first[249], 250n)
  await sleep(10) // the prefetched range [1001, 2001) has arrived
  const top = store.rows.get('order')
  assert.equal(top, 2001n)
  await gen.close()
  assert.deepEqual(store.giveBacks, [{ tag: 'order', expectedMaxId: 2001n, maxId: 251n }])
  assert.equal(store.rows.get('order'), 251n)

  const next = new SegmentGenerator(options)
  const more = await next.nextIds('order', 1000)
  assert.equal(more[0], 251n)
  assert.equal(more[999], 1250n)
  assertUniqueIncreasing([...first, ...more], 'across the two generators')
  await next.close()
  assert.equal(next.close(), next.close(), 'close is idempotent')
  assert.equal(store.giveBacks.length, 2, 'offered once')
})

test('giveBack: false keeps the gap: close offers nothing and the next generator starts above it', async () => {
  const store = new GiveBackStore()
  const gen = new SegmentGenerator({ store, step: 1000, dynamicStep: false, giveBack: false })
  await takeIds(gen, 'order', 250)
  await sleep(10)
  const top = store.rows.get('order')
  await gen.close()
  assert.deepEqual(store.giveBacks, [])
  assert.equal(store.rows.get('order'), top)
  const next = new SegmentGenerator({ store, step: 1000, dynamicStep: false })
  assert.equal(await next.nextId('order'), top)
  await next.close()
})

test('a row that moved since (another generator allocated) is not lowered', async () => {
  const store = new GiveBackStore()
  const options = { store, step: 1000, dynamicStep: false, prefetchPercent: 100 }
  const a = new SegmentGenerator(options)
  const fromA = await takeIds(a, 'order', 250) // [1, 1001), no prefetch
  const b = new SegmentGenerator(options)
  const fromB = await takeIds(b, 'order', 10) // [1001, 2001)
  assert.equal(store.rows.get('order'), 2001n)
  await a.close()
  assert.deepEqual(store.giveBacks, [{ tag: 'order', expectedMaxId: 1001n, maxId: 251n }])
  assert.equal(store.rows.get('order'), 2001n, 'the row is not lowered under b')
  fromB.push(...(await takeIds(b, 'order', 10)))
  await b.close() // b's row is still its own: its tail goes back
  assert.equal(store.rows.get('order'), 1021n)
  const c = new SegmentGenerator(options)
  const fromC = await takeIds(c, 'order', 10)
  assert.equal(fromC[0], 1021n)
  assertUniqueIncreasing([...fromA, ...fromB, ...fromC], 'a, b, then c')
  await c.close()
})

test('close waits for the fetch in flight, then gives its whole range back', async () => {
  const store = new GiveBackStore({ latencyMs: 50 })
  const gen = new SegmentGenerator({ store, step: 1000, dynamicStep: false })
  gen.tag('order') // starts the first fetch
  await sleep(5)
  await gen.close()
  assert.deepEqual(store.giveBacks, [{ tag: 'order', expectedMaxId: 1001n, maxId: 1n }])
  assert.equal(store.rows.get('order'), 1n)
})

test('a give back that hangs, throws or rejects does not fail close, which waits at most storeTimeoutMs', async () => {
  for (const [label, giveBack] of [
    ['hangs', () => new Promise(() => {})],
    [
      'throws',
      () => {
        throw new Error('no')
      },
    ],
    [
      'rejects',
      async () => {
        throw new Error('connection refused')
      },
    ],
  ]) {
    const store = new LeafStore()
    store.giveBack = giveBack
    const gen = new SegmentGenerator({ store, step: 100, storeTimeoutMs: 200 })
    await gen.nextId('order')
    const t0 = performance.now()
    await gen.close()
    const took = performance.now() - t0
    assert.ok(took < 2000, `${label}: close took ${took} ms`)
    if (label === 'hangs') assert.ok(took >= 150, `${label}: close waited ${took} ms for the store`)
  }
})

test('a MultiStore gets no give back offers', async () => {
  const a = new GiveBackStore()
  const b = new GiveBackStore()
  const gen = new SegmentGenerator({ store: new MultiStore([a, b]), step: 100, dynamicStep: false })
  await takeIds(gen, 'order', 10)
  await gen.close()
  assert.deepEqual([...a.giveBacks, ...b.giveBacks], [])
})

test('HttpStore.giveBack: POST /api/segment/giveback/{tag}?expected_max_id=E&max_id=M&token=T; 404 is false', async () => {
  const { HttpStore } = await import('segflake')
  const requests = []
  const tokens = []
  let reply = () => new Response(JSON.stringify({ key: 'order', givenBack: true }), { status: 200 })
  const fetch = async (url, init) => {
    // The give back's token: 128 random bits as 32 lowercase hex digits, what segflake
    // serve records and applies the give back under (so a resent request changes nothing).
    const [, rest, token] = /^(.*)&token=([0-9a-f]{32})$/.exec(url) ?? [, url, null]
    tokens.push(token)
    requests.push({ url: rest, method: init.method, headers: init.headers })
    return reply()
  }
  const store = new HttpStore('http://ids:8080/', { token: 'k1', fetch })
  assert.equal(await store.giveBack('or der', 2001n, 251n), true)
  assert.deepEqual(requests, [
    {
      url: 'http://ids:8080/api/segment/giveback/or%20der?expected_max_id=2001&max_id=251',
      method: 'POST',
      headers: { authorization: 'Bearer k1' },
    },
  ])
  reply = () => new Response(JSON.stringify({ key: 'order', givenBack: false }), { status: 200 })
  assert.equal(await store.giveBack('order', 2001, 251), false)
  reply = () => new Response('Not Found', { status: 404 })
  assert.equal(await store.giveBack('order', 2001n, 251n), false, 'an older server')
  reply = () => new Response(JSON.stringify({ code: 'STORE_ERROR', message: 'db down' }), { status: 503 })
  await assertRejectsCode(() => store.giveBack('order', 2001n, 251n), 'STORE_ERROR', '503 (STORE_ERROR): db down')
  reply = () => new Response('{"maxId":"5"}', { status: 200 })
  await assertRejectsCode(() => store.giveBack('order', 2001n, 251n), 'STORE_ERROR', 'not {"givenBack"}')
  const sent = requests.length
  assert.equal(await store.giveBack('order', 251n, 251n), false, 'nothing to give back')
  assert.equal(requests.length, sent, 'and nothing sent')
  await assertRejectsCode(() => store.giveBack('order', -1, 0), 'INVALID_ARGUMENT', 'expectedMaxId')
  assert.equal(tokens.length, 5)
  assert.ok(
    tokens.every((t) => t !== null),
    `every give back carries a token: ${requests.map((r) => r.url)}`,
  )
  assert.equal(new Set(tokens).size, tokens.length, 'a fresh token for each give back')
})

test('HttpStore: a closing generator gives back through the service; the next one continues densely', async () => {
  const { HttpStore } = await import('segflake')
  // A segflake serve in memory: one row per key, allocation and compare-and-set give back.
  const rows = new Map([['order', 1n]])
  const fetch = async (url) => {
    const u = new URL(url)
    const [, kind, key] = /^\/api\/segment\/(alloc|giveback)\/(.+)$/.exec(u.pathname)
    const json = (body) => new Response(JSON.stringify(body), { status: 200 })
    if (kind === 'alloc') {
      const step = Number(u.searchParams.get('step') ?? 1000)
      rows.set(key, rows.get(key) + BigInt(step))
      return json({ key, maxId: String(rows.get(key)), step, tagStep: 1000 })
    }
    const expected = BigInt(u.searchParams.get('expected_max_id'))
    const givenBack = rows.get(key) === expected
    if (givenBack) rows.set(key, BigInt(u.searchParams.get('max_id')))
    return json({ key, givenBack })
  }
  const options = { store: new HttpStore('http://ids:8080', { fetch }), step: 1000, dynamicStep: false }
  const gen = new SegmentGenerator(options)
  const first = await takeIds(gen, 'order', 250)
  await gen.close()
  assert.equal(rows.get('order'), 251n)
  const next = new SegmentGenerator({ ...options, store: new HttpStore('http://ids:8080', { fetch }) })
  assert.equal(await next.nextId('order'), 251n)
  assert.equal(first[249], 250n)
  await next.close()
})
