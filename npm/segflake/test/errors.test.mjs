// Every error path reachable from the snowflake/layout/codec/obfuscator surface: each
// throws the SegflakeError subclass of its kind, with a stable code and a message that
// says what was given and what is allowed.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import * as sf from 'segflake'
import { Layout, Snowflake, Obfuscator, encode, parse, MAX_BATCH } from 'segflake'
import { assertThrowsCode } from './helpers.mjs'

test('one class per core error kind, all deriving from SegflakeError', () => {
  const kinds = sf.errorKinds()
  assert.equal(kinds.length, 22)
  assert.deepEqual(
    kinds.slice(-3).map((k) => [k.code, k.className]),
    [
      ['REGISTRY_LOST_DATA', 'RegistryLostDataError'],
      ['LEAF_NODE_ALIVE', 'LeafNodeAliveError'],
      ['CLOCK_STALLED', 'ClockStalledError'],
    ],
  )
  const statuses = new Set()
  for (const { code, className, status } of kinds) {
    const cls = sf[className]
    assert.equal(typeof cls, 'function', `${className} is exported`)
    assert.equal(cls.name, className)
    assert.equal(cls.code, code)
    const e = new cls('message')
    assert.ok(e instanceof sf.SegflakeError && e instanceof Error)
    assert.equal(e.code, code)
    assert.equal(e.name, className)
    assert.ok(status > 0 && !statuses.has(status))
    statuses.add(status)
  }
})

test('ESM and CommonJS entry points share one set of classes', () => {
  const cjs = createRequire(import.meta.url)('segflake')
  assert.equal(cjs.SegflakeError, sf.SegflakeError)
  assert.equal(cjs.Snowflake, sf.Snowflake)
  assert.equal(cjs.ClockMovedBackwardsError, sf.ClockMovedBackwardsError)
})

test('layouts: invalid parameters and short lifetimes', () => {
  const cases = [
    [{ timeBits: 7 }, 'INVALID_LAYOUT', 'invalid layout: timeBits: got 7; allowed integers 8..=63'],
    [{ timeBits: 64 }, 'INVALID_LAYOUT', 'timeBits: got 64; allowed integers 8..=63'],
    [{ workerBits: 32 }, 'INVALID_LAYOUT', 'workerBits: got 32; allowed integers 0..=31'],
    [{ timeBits: 42 }, 'INVALID_LAYOUT', 'at most 63'],
    [{ tickMs: 0 }, 'INVALID_LAYOUT', 'tickMs: got 0; allowed integers 1..=86400000'],
    [{ epochMs: Date.now() + 86_400_000 }, 'INVALID_LAYOUT', 'in the future'],
    [{ timeBits: 30, epochMs: Date.now() - 86_400_000 }, 'LAYOUT_EXHAUSTED', 'runs out of time on'],
    [{ preset: 'uid-generator' }, 'LAYOUT_EXHAUSTED', '2024-11-20'],
    ['uid-generator', 'LAYOUT_EXHAUSTED', '2024-11-20'],
    ['snowflake', 'INVALID_ARGUMENT', 'allowed: twitter, sonyflake, uid-generator, js-safe'],
    [
      { preset: 'nope' },
      'INVALID_LAYOUT',
      'preset: got "nope"; allowed one of twitter, sonyflake, uid-generator, js-safe',
    ],
    [
      { order: 'worker-time' },
      'INVALID_LAYOUT',
      'order: got "worker-time"; allowed one of time-worker-sequence, time-sequence-worker',
    ],
    [{ order: 3 }, 'INVALID_LAYOUT', 'invalid layout: order: got 3; allowed one of'],
    [{ timebits: 40 }, 'INVALID_ARGUMENT', 'unknown option "timebits" (did you mean timeBits?)'],
    [{ epochMs: 'yesterday' }, 'INVALID_LAYOUT', 'epochMs: got "yesterday"'],
    [{ epochMs: new Date(NaN) }, 'INVALID_LAYOUT', 'epochMs: got an invalid Date'],
    [
      { epochMs: {} },
      'INVALID_LAYOUT',
      'epochMs: got an object; allowed Unix milliseconds or an ISO-8601 UTC date or time',
    ],
    [{ tickMs: -1 }, 'INVALID_LAYOUT', 'tickMs: got -1; allowed integers 1..=86400000'],
    [{ minLifetimeYears: 20000 }, 'INVALID_LAYOUT', 'minLifetimeYears: got 20000; allowed integers 0..=10000'],
    [42, 'INVALID_ARGUMENT', 'invalid layout: got 42; allowed a preset name'],
  ]
  for (const [input, code, contains] of cases) {
    assertThrowsCode(
      () => new Layout(input),
      code,
      contains,
      JSON.stringify(String(input?.constructor?.name ?? input)) + JSON.stringify(input),
    )
  }
  assertThrowsCode(() => Layout.preset('twitter', Date.now() + 3_600_000), 'INVALID_LAYOUT', 'in the future')
  assertThrowsCode(() => Layout.preset(1), 'INVALID_LAYOUT', 'invalid layout: preset: got 1; allowed one of')
  // The lifetime error says when the layout runs out; 0 switches the check off.
  const e = assertThrowsCode(() => new Layout({ timeBits: 20, epochMs: Date.now() - 1000 }), 'LAYOUT_EXHAUSTED')
  assert.match(e.message, /runs out of time on \d{4}-\d{2}-\d{2}/)
  assert.equal(new Layout({ timeBits: 20, minLifetimeYears: 0, epochMs: Date.now() - 1000 }).timeBits, 20)
})

test('snowflake options', () => {
  const cases = [
    [undefined, 'INVALID_ARGUMENT', 'invalid options: got nothing; expected an options object'],
    [7, 'INVALID_ARGUMENT', 'invalid options: got 7; expected an options object'],
    [{}, 'INVALID_ARGUMENT', 'invalid workerId: is required'],
    [{ workerId: null }, 'INVALID_ARGUMENT', 'invalid workerId: is required'],
    [{ workerId: 1024 }, 'WORKER_ID_OUT_OF_RANGE', 'worker ids are 0..=1023'],
    [{ workerId: 8, layout: 'js-safe' }, 'WORKER_ID_OUT_OF_RANGE', '0..=7'],
    [{ workerId: 2n ** 64n - 1n }, 'WORKER_ID_OUT_OF_RANGE', '18446744073709551615'],
    [{ workerId: -1 }, 'INVALID_ARGUMENT', 'invalid workerId: got -1; allowed integers 0..=18446744073709551615'],
    [{ workerId: -1n }, 'INVALID_ARGUMENT', 'invalid workerId: got -1; allowed'],
    [
      { workerId: 2n ** 64n },
      'INVALID_ARGUMENT',
      'got 18446744073709551616; allowed integers 0..=18446744073709551615',
    ],
    [{ workerId: 1.5 }, 'INVALID_ARGUMENT', 'not an integer'],
    [{ workerId: NaN }, 'INVALID_ARGUMENT', 'got NaN, not an integer'],
    [{ workerId: 2 ** 53 }, 'INVALID_ARGUMENT', 'above 2^53 where numbers lose precision'],
    [{ workerId: '3' }, 'INVALID_ARGUMENT', 'the string "3"'],
    [{ workerID: 3 }, 'INVALID_ARGUMENT', 'unknown option "workerID" (did you mean workerId?)'],
    [
      { workerId: 1, maxDriftMs: 3_600_001 },
      'INVALID_ARGUMENT',
      'invalid maxDriftMs: got 3600001; allowed integers 0..=3600000',
    ],
    [{ workerId: 1, maxDriftMs: -5 }, 'INVALID_ARGUMENT', 'maxDriftMs'],
    [{ workerId: 1, sequenceStart: 'one' }, 'INVALID_ARGUMENT', 'allowed one of zero, random'],
    [{ workerId: 1, sequenceStart: true }, 'INVALID_ARGUMENT', 'the boolean true'],
    [{ workerId: 1, notBeforeMs: 'soon' }, 'INVALID_ARGUMENT', 'notBeforeMs'],
    [{ workerId: 1, layout: 'nope' }, 'INVALID_ARGUMENT', 'is not a preset'],
    [{ workerId: 1, layout: { timeBits: 30 } }, 'LAYOUT_EXHAUSTED', 'ran out of time on 2010-11-16'],
    [{ workerId: 1, epochMs: Date.now() + 60_000 }, 'INVALID_LAYOUT', 'in the future'],
    [{ workerId: 1, layout: 'uid-generator' }, 'LAYOUT_EXHAUSTED', '2024-11-20'],
  ]
  for (const [input, code, contains] of cases) {
    assertThrowsCode(
      () => new Snowflake(input),
      code,
      contains,
      String(JSON.stringify(input, (_, v) => (typeof v === 'bigint' ? `${v}n` : v))),
    )
  }
})

test('clock behind a persisted high-water mark: ClockMovedBackwardsError, then IDs once within the drift', () => {
  const future = Date.now() + 60_000
  const gen = new Snowflake({ workerId: 1, notBeforeMs: future })
  const e = assertThrowsCode(() => gen.nextId(), 'CLOCK_MOVED_BACKWARDS', 'more than max_drift_ms = 2000')
  assert.match(e.message, /clock moved backwards by \d+ ms/)
  assertThrowsCode(() => gen.nextIds(10), 'CLOCK_MOVED_BACKWARDS')
  assertThrowsCode(() => gen.nextIdString(), 'CLOCK_MOVED_BACKWARDS')
  assertThrowsCode(() => gen.fillIds(new BigUint64Array(4)), 'CLOCK_MOVED_BACKWARDS')
  // A drift bound that covers the gap issues IDs past the mark.
  const lenient = new Snowflake({ workerId: 1, notBeforeMs: future, maxDriftMs: 120_000 })
  assert.ok(lenient.decode(lenient.nextId()).timestampMs > future)
})

test('a layout whose time has run out: TimeExhaustedError', () => {
  const gen = new Snowflake({
    workerId: 0,
    layout: { timeBits: 8, workerBits: 1, sequenceBits: 1, epochMs: Date.now() - 10_000, minLifetimeYears: 0 },
  })
  assertThrowsCode(() => gen.nextId(), 'TIME_EXHAUSTED', 'ran out at')
  assertThrowsCode(() => gen.nextIds(3), 'TIME_EXHAUSTED')
})

test('generator methods refuse bad arguments', () => {
  const gen = new Snowflake({ workerId: 1 })
  assertThrowsCode(() => gen.nextIds(0), 'INVALID_ARGUMENT', 'allowed integers 1..=16777216')
  assertThrowsCode(() => gen.nextIds(MAX_BATCH + 1), 'INVALID_ARGUMENT', 'allowed integers 1..=16777216')
  assertThrowsCode(() => gen.nextIds(-3), 'INVALID_ARGUMENT', 'invalid batch size: got -3')
  assertThrowsCode(() => gen.nextIds(2.5), 'INVALID_ARGUMENT', 'not an integer')
  assertThrowsCode(() => gen.nextIds('10'), 'INVALID_ARGUMENT', 'the string "10"')
  assertThrowsCode(() => gen.nextIds(), 'INVALID_ARGUMENT', 'invalid batch size: got nothing')
  assertThrowsCode(() => gen.fillIds(new BigUint64Array(0)), 'INVALID_ARGUMENT', 'invalid batch size: got 0;')
  assertThrowsCode(() => gen.fillIds(new BigInt64Array(4)), 'INVALID_ARGUMENT', 'not a BigUint64Array')
  assertThrowsCode(() => gen.fillIds([0n, 0n]), 'INVALID_ARGUMENT', 'expected a BigUint64Array')
  assertThrowsCode(() => gen.nextIdNumber(), 'INVALID_LAYOUT', 'at most 53 bits')
  assertThrowsCode(() => gen.decode(2n ** 63n), 'INVALID_ARGUMENT', 'bits above the layout')
  assertThrowsCode(
    () => gen.decode(-1n),
    'INVALID_ARGUMENT',
    'invalid id: got -1; allowed integers 0..=18446744073709551615',
  )
  assertThrowsCode(() => gen.decode('12x'), 'PARSE_ERROR', 'position 2')
  assertThrowsCode(
    () => gen.decode({}),
    'INVALID_ARGUMENT',
    'invalid id: got an object; allowed integers 0..=18446744073709551615 or their decimal strings',
  )
  assertThrowsCode(() => gen.decode('18446744073709551616'), 'PARSE_ERROR', 'larger than the largest ID')
  assertThrowsCode(
    () => gen.compose({ timestampMs: Date.now(), tick: 1 }),
    'INVALID_ARGUMENT',
    'exactly one of tick and timestampMs',
  )
  assertThrowsCode(() => gen.compose({}), 'INVALID_ARGUMENT', 'exactly one of tick and timestampMs')
  assertThrowsCode(() => gen.compose(5), 'INVALID_ARGUMENT', 'expected an object')
  assertThrowsCode(() => gen.compose({ tick: 1, worker: 2 }), 'INVALID_ARGUMENT', 'unknown option "worker"')
  assertThrowsCode(() => gen.compose({ tick: 2n ** 41n }), 'INVALID_ARGUMENT', 'does not fit 41 time bits')
  assertThrowsCode(() => gen.compose({ tick: 1, sequence: 4096 }), 'INVALID_ARGUMENT', 'allowed 0..=4095')
  assertThrowsCode(() => gen.compose({ tick: 1, workerId: 1024 }), 'WORKER_ID_OUT_OF_RANGE', '0..=1023')
  assertThrowsCode(() => gen.compose({ timestampMs: 1000 }), 'INVALID_ARGUMENT', 'before the layout epoch')
})

test('codecs refuse bad input', () => {
  assertThrowsCode(
    () => encode(-1),
    'INVALID_ARGUMENT',
    'invalid id: got -1; allowed integers 0..=18446744073709551615',
  )
  assertThrowsCode(() => encode(2n ** 64n), 'INVALID_ARGUMENT', 'got 18446744073709551616; allowed integers')
  assertThrowsCode(() => encode(1n, 'base64'), 'INVALID_ARGUMENT', 'allowed: decimal, base62, base32')
  assertThrowsCode(() => encode(1n, 7), 'INVALID_ARGUMENT', 'invalid format')
  assertThrowsCode(() => parse(12), 'INVALID_ARGUMENT', 'invalid text: got 12; expected a string')
  assertThrowsCode(() => parse('12', 'hex'), 'INVALID_ARGUMENT', 'is not a format')
  assertThrowsCode(() => parse('1 2'), 'PARSE_ERROR', 'position 1')
  assertThrowsCode(() => sf.parseBase62('AzL8n0Y58m7!'), 'PARSE_ERROR', 'exactly 11')
  assertThrowsCode(
    () => sf.encodeBase32(1.25),
    'INVALID_ARGUMENT',
    'got the number 1.25, not an integer; allowed integers',
  )
})

test('obfuscator refuses bad keys and IDs', () => {
  assertThrowsCode(() => new Obfuscator(new Uint8Array(15)), 'INVALID_ARGUMENT', 'got 15 bytes')
  assertThrowsCode(() => new Obfuscator(new Uint8Array(17)), 'INVALID_ARGUMENT', 'got 17 bytes')
  assertThrowsCode(() => new Obfuscator(new Uint16Array(8)), 'INVALID_ARGUMENT', 'not a Uint8Array')
  assertThrowsCode(() => new Obfuscator('0011'), 'INVALID_ARGUMENT', '32 hex digits')
  assertThrowsCode(() => new Obfuscator('zz112233445566778899aabbccddeeff'), 'INVALID_ARGUMENT', '32 hex digits')
  assertThrowsCode(() => new Obfuscator(), 'INVALID_ARGUMENT', 'invalid key: got nothing')
  const o = new Obfuscator('000102030405060708090a0b0c0d0e0f')
  assertThrowsCode(() => o.obfuscate(2n ** 63n), 'INVALID_ARGUMENT', 'not below 2^63')
  assertThrowsCode(() => o.deobfuscate(2n ** 63n), 'INVALID_ARGUMENT', 'not below 2^63')
  assertThrowsCode(() => o.obfuscate(-1n), 'INVALID_ARGUMENT', 'invalid id: got -1')
})

test('worker-ID and time helpers refuse bad input', () => {
  assertThrowsCode(() => sf.workerIdFromHostname('web'), 'INVALID_ARGUMENT', "has no '-'")
  assertThrowsCode(() => sf.workerIdFromHostname(7), 'INVALID_ARGUMENT', 'invalid hostname')
  assertThrowsCode(() => sf.workerIdFromIpv4('10.0.3', 10), 'INVALID_ARGUMENT', 'dotted-quad')
  assertThrowsCode(
    () => sf.workerIdFromIpv4('10.0.3.7', 33),
    'INVALID_ARGUMENT',
    'invalid workerBits: got 33; allowed integers 0..=32',
  )
  assertThrowsCode(() => sf.parseTimeMs('2025-13-01'), 'INVALID_ARGUMENT', 'not a valid calendar date')
  assertThrowsCode(() => sf.formatTimeMs(-1), 'INVALID_ARGUMENT', 'invalid unixMs: got -1')
})

test('user code that throws while options are read: InvalidArgumentError with the exception as cause', () => {
  const boom = new RangeError('from a getter')
  const e = assertThrowsCode(
    () =>
      new Snowflake({
        get workerId() {
          throw boom
        },
      }),
    'INVALID_ARGUMENT',
    'invalid workerId: reading it threw an error: from a getter',
  )
  const trap = new Error('from a proxy trap')
  const e2 = assertThrowsCode(
    () =>
      new Layout(
        new Proxy(
          {},
          {
            ownKeys() {
              throw trap
            },
          },
        ),
      ),
    'INVALID_ARGUMENT',
    'listing its keys threw',
  )
  const e3 = assertThrowsCode(
    () =>
      new Snowflake({
        workerId: 1,
        layout: {
          get timeBits() {
            throw 42
          },
        },
      }),
    'INVALID_ARGUMENT',
    'invalid timeBits: reading it threw the number 42',
  )
  // The WebAssembly backend names the thrown value in the message but keeps no `cause`.
  if (sf.backend === 'native') {
    assert.equal(e.cause, boom)
    assert.equal(e2.cause, trap)
    assert.equal(e3.cause, 42)
  }
  // The addon keeps working afterwards.
  assert.equal(typeof new Snowflake({ workerId: 1 }).nextId(), 'bigint')
})
