// Runs every case of every shared vector file (tests/vectors/*.json) that applies to
// this package, and fails on any mismatch or on a vector file it does not know.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import sfDefault, { Layout, Snowflake, Obfuscator, encode, parse, SegmentGenerator, SerialGenerator } from 'segflake'
import * as sf from 'segflake'
import { vectorsDir, loadVectors, jsLayout, assertThrowsCode, assertRejectsCode } from './helpers.mjs'

const native = sfDefault.__native
const camelKeys = (o) => jsLayout(o ?? {})
// Messages name options as the user spelled them: `max_step` in the vectors is `maxStep` here.
const spelled = (text) =>
  text?.replace(/\b[a-z]+(?:_[a-z0-9]+)+\b/g, (w) => w.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase()))

const HANDLED = new Set([
  'layouts.json',
  'snowflake.json',
  'codecs.json',
  'obfuscation.json',
  'segments.json',
  'serials.json',
  'options.json', // options.test.mjs
  'zookeeper.json', // zookeeper.test.mjs
  'etcd.json', // etcd.test.mjs
  'redis.json', // redis.test.mjs
  'sql.json', // sql.test.mjs
])

test('every vector file is handled', () => {
  const files = fs.readdirSync(vectorsDir).filter((f) => f.endsWith('.json'))
  assert.ok(files.length >= 4, `only ${files.length} vector files in ${vectorsDir}`)
  for (const f of files) {
    assert.ok(HANDLED.has(f), `vector file ${f} has no runner in this suite`)
  }
})

test('layouts.json', () => {
  const { cases } = loadVectors('layouts.json')
  assert.ok(cases.length > 0)
  for (const c of cases) {
    if (c.error) {
      assertThrowsCode(() => new Layout(jsLayout(c.layout)), c.error, c.message_contains, c.name)
      continue
    }
    const l = new Layout(jsLayout(c.layout))
    const e = c.expect
    const got = {
      time_bits: l.timeBits,
      worker_bits: l.workerBits,
      sequence_bits: l.sequenceBits,
      tick_ms: l.tickMs,
      epoch_ms: l.epochMs,
      order: l.order,
      lifetime_ms: l.lifetimeMs,
      exhausts_at_ms: l.exhaustsAtMs,
      max_ids_per_second: l.maxIdsPerSecond,
      js_safe_until_ms: l.jsSafeUntilMs,
      max_worker_id: l.maxWorkerId,
      max_sequence: l.maxSequence,
      datacenter_bits: l.datacenterBits,
    }
    for (const k of Object.keys(e)) assert.equal(got[k], e[k], `${c.name}: ${k}`)
    // A built layout's parameters rebuild the same layout.
    assert.deepEqual(new Layout(l.toJSON()).toJSON(), l.toJSON(), `${c.name}: toJSON round trip`)
  }
})

test('snowflake.json compose and decode', () => {
  const v = loadVectors('snowflake.json')
  assert.ok(v.compose.length > 0 && v.decode.length > 0)
  // On a layout with a datacenter field, workerId is the worker within datacenterId.
  const datacenter = (c) => (c.datacenter_id === undefined ? {} : { datacenterId: c.datacenter_id })
  const decoded = (c) => ({
    timestampMs: c.timestamp_ms,
    tick: c.tick,
    workerId: c.worker_id,
    sequence: c.sequence,
    ...datacenter(c),
  })
  for (const c of v.compose) {
    const l = new Layout(jsLayout(c.layout))
    const id = BigInt(c.id)
    const dc = datacenter(c)
    assert.equal(
      l.compose({ tick: c.tick, workerId: c.worker_id, sequence: c.sequence, ...dc }),
      id,
      `${c.name}: compose`,
    )
    assert.equal(
      l.compose({ timestampMs: c.timestamp_ms, workerId: c.worker_id, sequence: c.sequence, ...dc }),
      id,
      `${c.name}: compose from timestamp`,
    )
    assert.deepEqual({ ...l.decode(id) }, decoded(c), `${c.name}: decode`)
  }
  for (const c of v.decode) {
    const l = new Layout(jsLayout(c.layout))
    assert.deepEqual({ ...l.decode(BigInt(c.id)) }, decoded(c), c.name)
  }
})

test('snowflake.json refusals', () => {
  const v = loadVectors('snowflake.json')
  assert.ok(v.invalid_options.length > 0 && v.invalid_decode.length > 0)
  for (const c of v.invalid_options) {
    assertThrowsCode(
      () => new Snowflake({ workerId: c.worker_id, datacenterId: c.datacenter_id, layout: jsLayout(c.layout) }),
      c.error,
      c.message_contains,
      c.name,
    )
  }
  for (const c of v.invalid_decode) {
    const l = new Layout(jsLayout(c.layout))
    assertThrowsCode(() => l.decode(BigInt(c.id)), c.error, c.message_contains, c.name)
  }
})

test('codecs.json', () => {
  const v = loadVectors('codecs.json')
  assert.ok(v.valid.length > 0 && v.invalid.length > 0 && v.parse_aliases.length > 0)
  const named = {
    decimal: [sf.encodeDecimal, sf.parseDecimal],
    base62: [sf.encodeBase62, sf.parseBase62],
    base32: [sf.encodeBase32, sf.parseBase32],
  }
  for (const c of v.valid) {
    const id = BigInt(c.id)
    for (const format of ['decimal', 'base62', 'base32']) {
      assert.equal(encode(id, format), c[format], `${c.id} encode ${format}`)
      assert.equal(named[format][0](id), c[format], `${c.id} named encode ${format}`)
      assert.equal(parse(c[format], format), id, `${c.id} parse ${format}`)
      assert.equal(named[format][1](c[format]), id, `${c.id} named parse ${format}`)
    }
    assert.equal(encode(id), c.decimal, 'decimal is the default format')
  }
  for (const c of v.parse_aliases) {
    assert.equal(parse(c.text, c.format), BigInt(c.id), `alias ${c.text}`)
  }
  for (const c of v.invalid) {
    assertThrowsCode(() => parse(c.text, c.format), c.error, c.message_contains, `${c.format} ${c.text}`)
    assertThrowsCode(() => named[c.format][1](c.text), c.error, c.message_contains, `${c.format} ${c.text}`)
  }
})

test('obfuscation.json', () => {
  const v = loadVectors('obfuscation.json')
  assert.ok(v.cases.length > 0 && v.invalid.length > 0)
  for (const c of v.cases) {
    const byBytes = new Obfuscator(Buffer.from(c.key_hex, 'hex'))
    const byHex = new Obfuscator(c.key_hex)
    const id = BigInt(c.id)
    const out = BigInt(c.obfuscated)
    assert.equal(byBytes.obfuscate(id), out, `${c.key_hex} ${c.id}`)
    assert.equal(byHex.obfuscate(id), out, `${c.key_hex} ${c.id} (hex key)`)
    assert.equal(byBytes.deobfuscate(out), id, `${c.key_hex} ${c.obfuscated} back`)
  }
  for (const c of v.invalid) {
    if (c.id === undefined) {
      assertThrowsCode(() => new Obfuscator(Buffer.from(c.key_hex, 'hex')), c.error, c.message_contains, c.name)
    } else {
      const o = new Obfuscator(Buffer.from(c.key_hex, 'hex'))
      assertThrowsCode(() => o.obfuscate(BigInt(c.id)), c.error, c.message_contains, c.name)
    }
  }
})

function runs(ids) {
  const out = []
  for (const [a, b] of ids) for (let i = BigInt(a); i <= BigInt(b); i++) out.push(i)
  return out
}

function vectorStore(spec) {
  if (spec.leaf) {
    let maxId = BigInt(spec.leaf.initial_max_id)
    return async (tag, step) => {
      maxId += BigInt(step)
      return { maxId, step }
    }
  }
  const script = spec.script
  let n = 0
  return async () => {
    const e = script[Math.min(n++, script.length - 1)]
    return { maxId: BigInt(e.max_id), step: e.step }
  }
}

test('segments.json sequences (async store, public SegmentGenerator)', async () => {
  const v = loadVectors('segments.json')
  assert.ok(v.sequences.length > 0)
  for (const c of v.sequences) {
    const gen = new SegmentGenerator({ store: vectorStore(c.store), ...camelKeys(c.options), waitTimeoutMs: 2000 })
    const want = runs(c.ids)
    assert.equal(want.length, c.take, `${c.name}: vector consistency`)
    const got = []
    if (c.take > 0) got.push(...(await gen.nextIds(c.tag, c.take)))
    assert.deepEqual(got, want, c.name)
    if (c.then_error) {
      await assertRejectsCode(() => gen.nextId(c.tag), c.then_error, c.message_contains, c.name)
    }
    await gen.close()
  }
})

test('segments.json dynamic steps (engine with explicit time)', () => {
  const v = loadVectors('segments.json')
  assert.ok(v.dynamic_steps.length > 0)
  for (const c of v.dynamic_steps) {
    const engine = new native.__SegmentEngine('t', { store: () => {}, ...camelKeys(c.options) })
    let maxId = 1n
    for (const [i, f] of c.fetches.entries()) {
      while (engine.__takeRaw() != null); // null (napi) or undefined (wasm-bindgen) when empty
      const step = engine.__beginFetchAt(f.at_ms)
      assert.equal(step, f.step, `${c.name}: fetch ${i} at ${f.at_ms}`)
      maxId += BigInt(step)
      engine.__completeAt(f.at_ms, maxId, step)
    }
  }
})

test('segments.json invalid options and tags', async () => {
  const v = loadVectors('segments.json')
  assert.ok(v.invalid.length > 0)
  for (const c of v.invalid) {
    await assertRejectsCode(
      async () => {
        const gen = new SegmentGenerator({ store: async () => ({ maxId: 10, step: 10 }), ...camelKeys(c.options) })
        await gen.nextId(c.tag)
      },
      c.error,
      spelled(c.message_contains),
      c.name,
    )
  }
})

test('serials.json', () => {
  const v = loadVectors('serials.json')
  assert.ok(v.format.length > 0 && v.next.length > 0 && v.counter.length > 0)
  for (const c of v.format) {
    const gen = new SerialGenerator(camelKeys(c.options))
    const sec = Math.floor(c.unix_ms / 1000)
    assert.equal(gen.format(sec, c.sequence), BigInt(c.serial), c.name)
    assert.equal(gen.datePrefix(sec), c.date, `${c.name}: date`)
    assert.deepEqual(
      { ...gen.decode(BigInt(c.serial)) },
      { date: Number(c.date), unixSeconds: c.unix_seconds, workerId: c.options.worker_id, sequence: c.sequence },
      `${c.name}: decode`,
    )
  }
  for (const c of v.format_errors) {
    const gen = new SerialGenerator(camelKeys(c.options))
    assertThrowsCode(() => gen.format(Math.floor(c.unix_ms / 1000), c.sequence), c.error, c.message_contains, c.name)
  }
  for (const c of v.next) {
    const gen = native.__SerialGenerator.__withManualClock(camelKeys(c.options), c.steps[0].unix_ms)
    for (const [i, step] of c.steps.entries()) {
      gen.__setClockMs(step.unix_ms)
      if (step.error) assertThrowsCode(() => gen.next(), step.error, step.message_contains, `${c.name} step ${i}`)
      else assert.equal(gen.next(), BigInt(step.serial), `${c.name} step ${i}`)
    }
  }
  for (const c of v.counter) {
    const gen = native.__SerialGenerator.__withManualClock(camelKeys(c.options), 0)
    for (const [i, step] of c.steps.entries()) {
      assert.equal(gen.__counterSecond(step.now_ms), step.counter_second, `${c.name} step ${i}: second`)
      const got = gen.__acceptReply(step.counter_second, step.sequence)
      assert.equal(got, step.serial === null ? null : BigInt(step.serial), `${c.name} step ${i}`)
    }
  }
  for (const c of v.invalid_options) {
    assertThrowsCode(() => new SerialGenerator(camelKeys(c.options)), c.error, spelled(c.message_contains), c.name)
  }
})
