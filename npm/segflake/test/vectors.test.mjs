// Runs every case of every shared vector file (tests/vectors/*.json) that applies to
// this package, and fails on any mismatch or on a vector file it does not know.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { Layout, Snowflake, Obfuscator, encode, parse } from 'segflake'
import * as sf from 'segflake'
import { vectorsDir, loadVectors, jsLayout, assertThrowsCode } from './helpers.mjs'

const HANDLED = new Set(['layouts.json', 'snowflake.json', 'codecs.json', 'obfuscation.json'])
// Files bound once the corresponding generator is available in this package.
const PENDING = new Set(['segments.json', 'serials.json'])

test('every vector file is handled', () => {
  const files = fs.readdirSync(vectorsDir).filter((f) => f.endsWith('.json'))
  assert.ok(files.length >= 4, `only ${files.length} vector files in ${vectorsDir}`)
  for (const f of files) {
    if (PENDING.has(f) && !sf.SegmentGenerator) continue
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
    }
    for (const k of Object.keys(e)) assert.equal(got[k], e[k], `${c.name}: ${k}`)
    // A built layout's parameters rebuild the same layout.
    assert.deepEqual(new Layout(l.toJSON()).toJSON(), l.toJSON(), `${c.name}: toJSON round trip`)
  }
})

test('snowflake.json compose and decode', () => {
  const v = loadVectors('snowflake.json')
  assert.ok(v.compose.length > 0 && v.decode.length > 0)
  for (const c of v.compose) {
    const l = new Layout(jsLayout(c.layout))
    const id = BigInt(c.id)
    assert.equal(l.compose({ tick: c.tick, workerId: c.worker_id, sequence: c.sequence }), id, `${c.name}: compose`)
    assert.equal(
      l.compose({ timestampMs: c.timestamp_ms, workerId: c.worker_id, sequence: c.sequence }),
      id,
      `${c.name}: compose from timestamp`,
    )
    assert.deepEqual(
      { ...l.decode(id) },
      { timestampMs: c.timestamp_ms, tick: c.tick, workerId: c.worker_id, sequence: c.sequence },
      `${c.name}: decode`,
    )
  }
  for (const c of v.decode) {
    const l = new Layout(jsLayout(c.layout))
    assert.deepEqual(
      { ...l.decode(BigInt(c.id)) },
      { timestampMs: c.timestamp_ms, tick: c.tick, workerId: c.worker_id, sequence: c.sequence },
      c.name,
    )
  }
})

test('snowflake.json refusals', () => {
  const v = loadVectors('snowflake.json')
  assert.ok(v.invalid_options.length > 0 && v.invalid_decode.length > 0)
  for (const c of v.invalid_options) {
    assertThrowsCode(
      () => new Snowflake({ workerId: c.worker_id, layout: jsLayout(c.layout) }),
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
