// Parity with the native package (`segflake`, napi), both installed from their tarballs in
// dist/: the same options give the same IDs at a fixed time, the same decodes, codec and
// obfuscation outputs, serials, segment sequences and error codes, and the same API names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import * as wasm from 'segflake-wasm';

const require = createRequire(import.meta.url);
const native = require('segflake');

/** xorshift64*: deterministic 64-bit values. */
function rng(seed) {
  let x = BigInt.asUintN(64, seed);
  return () => {
    x ^= x >> 12n;
    x = BigInt.asUintN(64, x ^ (x << 25n));
    x ^= x >> 27n;
    return BigInt.asUintN(64, x * 2685821657736338717n);
  };
}

function members(cls) {
  const out = new Set();
  for (let p = cls.prototype; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const k of Object.getOwnPropertyNames(p)) if (!k.startsWith('__') && k !== 'constructor') out.add(k);
  }
  return out;
}

/** `fn()` in both packages: the same value, or errors of the same class and code. */
function same(label, fnNative, fnWasm) {
  let a;
  let b;
  let ea;
  let eb;
  try {
    a = fnNative();
  } catch (e) {
    ea = e;
  }
  try {
    b = fnWasm();
  } catch (e) {
    eb = e;
  }
  if (ea || eb) {
    assert.ok(ea && eb, `${label}: native ${ea ? `threw ${ea.name}: ${ea.message}` : `returned ${a}`}, wasm ${eb ? `threw ${eb.name}: ${eb.message}` : `returned ${b}`}`);
    assert.equal(eb.name, ea.name, `${label}: error class (native: ${ea.message} | wasm: ${eb.message})`);
    assert.equal(eb.code, ea.code, `${label}: error code`);
    assert.ok(eb instanceof wasm.SegflakeError && ea instanceof native.SegflakeError, `${label}: SegflakeErrors`);
    return undefined;
  }
  assert.deepEqual(b, a, label);
  return a;
}

const LAYOUTS = [
  undefined,
  'twitter',
  'sonyflake',
  'js-safe',
  { preset: 'uid-generator', epochMs: '2026-06-01', minLifetimeYears: 5 },
  { timeBits: 40, workerBits: 8, sequenceBits: 15, tickMs: 2, epochMs: '2025-01-01', order: 'time-sequence-worker' },
  { timeBits: 45, workerBits: 5, sequenceBits: 13, epochMs: 1_700_000_000_000 },
];

test('parity: every export and member of the native package exists here', () => {
  const missing = Object.keys(native).filter((k) => !(k in wasm));
  assert.deepEqual(missing, []);
  for (const cls of ['Snowflake', 'Layout', 'Obfuscator', 'SegmentGenerator', 'SegmentTag', 'SerialGenerator', 'HttpStore']) {
    const here = members(wasm[cls]);
    const gone = [...members(native[cls])].filter((m) => !here.has(m));
    assert.deepEqual(gone, [], `${cls} members missing in segflake-wasm`);
  }
  assert.deepEqual(wasm.errorKinds(), native.errorKinds());
  assert.equal(wasm.coreVersion(), native.coreVersion());
  assert.deepEqual([wasm.MAX_BATCH, wasm.BASE62_LENGTH, wasm.BASE32_LENGTH], [native.MAX_BATCH, native.BASE62_LENGTH, native.BASE32_LENGTH]);
  assert.deepEqual(wasm.presets(), native.presets());
});

test('parity: layouts answer the same queries', () => {
  const keys = ['timeBits', 'workerBits', 'sequenceBits', 'totalBits', 'tickMs', 'epochMs', 'order', 'minLifetimeYears',
    'lifetimeMs', 'exhaustsAtMs', 'maxIdsPerSecond', 'jsSafeUntilMs', 'maxWorkerId', 'maxSequence', 'maxId'];
  for (const spec of LAYOUTS) {
    const a = new native.Layout(spec);
    const b = new wasm.Layout(spec);
    for (const k of keys) assert.equal(b[k], a[k], `${JSON.stringify(spec)}: ${k}`);
    assert.deepEqual(b.toJSON(), a.toJSON());
  }
  for (const [name, epoch] of [['twitter', '2024-01-01'], ['sonyflake', 1_740_000_000_000], ['js-safe', new Date('2025-03-01T00:00:00Z')]]) {
    assert.deepEqual(wasm.Layout.preset(name, epoch).toJSON(), native.Layout.preset(name, epoch).toJSON(), name);
  }
});

test('parity: compose and decode agree on 20,000 random fields', () => {
  const next = rng(0xfeedn);
  for (const spec of LAYOUTS) {
    const a = new native.Layout(spec);
    const b = new wasm.Layout(spec);
    const t0 = a.epochMs;
    for (let i = 0; i < 20_000 / LAYOUTS.length; i++) {
      const fields = {
        timestampMs: t0 + Number(next() % 10_000_000_000n),
        workerId: Number(next() % BigInt(a.maxWorkerId + 1)),
        sequence: Number(next() % BigInt(a.maxSequence + 1)),
      };
      const id = same(`compose ${JSON.stringify(fields)}`, () => a.compose(fields), () => b.compose(fields));
      same(`decode ${id}`, () => ({ ...a.decode(id) }), () => ({ ...b.decode(id) }));
      const tickFields = { tick: Number(next() % 1_000_000n), workerId: fields.workerId, sequence: fields.sequence };
      same(`compose ${JSON.stringify(tickFields)}`, () => a.compose(tickFields), () => b.compose(tickFields));
    }
  }
});

test('parity: at a fixed time the WebAssembly generator issues the IDs the native layout composes', () => {
  const T = 1_800_000_123_456;
  const real = Date.now;
  Date.now = () => T;
  try {
    for (const [layout, workerId] of [['twitter', 42], ['sonyflake', 65_000], ['js-safe', 7], [LAYOUTS[5], 200]]) {
      const g = new wasm.Snowflake({ workerId, layout });
      const nl = new native.Layout(layout);
      const ids = g.nextIds(100);
      ids.forEach((id, sequence) => {
        assert.equal(id, nl.compose({ timestampMs: T, workerId, sequence }), `${JSON.stringify(layout)} sequence ${sequence}`);
      });
      assert.equal(g.nextId(), nl.compose({ timestampMs: T, workerId, sequence: 100 }));
      assert.equal(g.nextIdString(), String(nl.compose({ timestampMs: T, workerId, sequence: 101 })));
    }
  } finally {
    Date.now = real;
  }
  // Live IDs of each decode alike in the other.
  const ng = new native.Snowflake({ workerId: 3 });
  const wg = new wasm.Snowflake({ workerId: 3 });
  for (let i = 0; i < 1000; i++) {
    const a = ng.nextId();
    const b = wg.nextId();
    assert.deepEqual({ ...wg.decode(a) }, { ...ng.decode(a) });
    assert.deepEqual({ ...ng.decode(b) }, { ...wg.decode(b) });
  }
});

test('parity: codecs and obfuscation give the same text and numbers', () => {
  const next = rng(0xc0dec0den);
  const keys = ['000102030405060708090a0b0c0d0e0f', 'ffffffffffffffffffffffffffffffff', '736567666c616b652d746573742d6b21'];
  const obf = keys.map((k) => [new native.Obfuscator(k), new wasm.Obfuscator(Uint8Array.from(Buffer.from(k, 'hex')))]);
  for (let i = 0; i < 5000; i++) {
    const id = next() >> BigInt(i % 64);
    for (const f of ['decimal', 'base62', 'base32']) {
      const text = same(`encode ${id} ${f}`, () => native.encode(id, f), () => wasm.encode(id, f));
      same(`parse ${text} ${f}`, () => native.parse(text, f), () => wasm.parse(text, f));
    }
    same(`named ${id}`, () => [native.encodeBase62(id), native.encodeBase32(id), native.encodeDecimal(id)],
      () => [wasm.encodeBase62(id), wasm.encodeBase32(id), wasm.encodeDecimal(id)]);
    const small = id >> 1n;
    for (const [a, b] of obf) {
      const x = same(`obfuscate ${small}`, () => a.obfuscate(small), () => b.obfuscate(small));
      same(`deobfuscate ${x}`, () => a.deobfuscate(x), () => b.deobfuscate(x));
    }
  }
});

test('parity: serials format, decode and prefix alike', () => {
  const next = rng(0x5e41n);
  const shapes = [{}, { sequenceDigits: 6 }, { workerDigits: 2, workerId: 37, sequenceDigits: 3 }, { utcOffsetMinutes: 480 }, { utcOffsetMinutes: -300, sequenceDigits: 7 }];
  for (const shape of shapes) {
    const a = new native.SerialGenerator(shape);
    const b = new wasm.SerialGenerator(shape);
    for (let i = 0; i < 500; i++) {
      const second = 946_684_800 + Number(next() % 3_155_000_000n);
      const seq = 1 + Number(next() % 999n);
      const s = same(`format ${second} ${seq}`, () => a.format(second, seq), () => b.format(second, seq));
      same(`prefix ${second}`, () => a.datePrefix(second), () => b.datePrefix(second));
      if (s !== undefined) same(`decode ${s}`, () => ({ ...a.decode(s) }), () => ({ ...b.decode(s) }));
    }
  }
});

test('parity: a scripted store gives the same segment IDs, stats and failures', async () => {
  const script = [[3000, 1000], [4000, 1000], [4000, 1000], [9000, 2000], [20_000, 5000]];
  const store = () => {
    let n = 0;
    return async (tag, step) => {
      const [maxId, s] = script[Math.min(n++, script.length - 1)];
      return { maxId, step: s };
    };
  };
  const a = new native.SegmentGenerator({ store: store(), step: 1000, prefetchPercent: 50, waitTimeoutMs: 500 });
  const b = new wasm.SegmentGenerator({ store: store(), step: 1000, prefetchPercent: 50, waitTimeoutMs: 500 });
  const take = async (g) => {
    const out = [];
    for (;;) {
      try {
        out.push(...(await g.nextIds('order', 250)));
      } catch (e) {
        return { out, code: e.code, cause: e.cause?.code };
      }
    }
  };
  const [ra, rb] = [await take(a), await take(b)];
  assert.deepEqual(rb.out, ra.out, 'IDs');
  assert.ok(ra.out.length >= 2000, `only ${ra.out.length} IDs`);
  assert.deepEqual([rb.code, rb.cause], [ra.code, ra.cause], 'the refused overlapping range fails alike');
  const pick = (s) => ({ currentStart: s.currentStart, currentEnd: s.currentEnd, position: s.position, remaining: s.remaining, failures: s.failures });
  assert.deepEqual(pick(b.stats('order')), pick(a.stats('order')));
  await Promise.all([a.close(), b.close()]);
});

test('parity: bad input fails with the same error class and code', () => {
  const l = [new native.Layout(), new wasm.Layout()];
  const cases = [
    ['workerId -1', (m) => new m.Snowflake({ workerId: -1 })],
    ['workerId -2n', (m) => new m.Snowflake({ workerId: -2n })],
    ['workerId 1024', (m) => new m.Snowflake({ workerId: 1024 })],
    ['workerId 1.5', (m) => new m.Snowflake({ workerId: 1.5 })],
    ['no workerId', (m) => new m.Snowflake({})],
    ['unknown option', (m) => new m.Snowflake({ workerId: 1, worker: 2 })],
    ['uid-generator', (m) => new m.Layout('uid-generator')],
    ['timeBits 7', (m) => new m.Layout({ timeBits: 7 })],
    ['bits sum 64', (m) => new m.Layout({ timeBits: 42 })],
    ['unknown preset', (m) => new m.Layout('snowflake')],
    ['future epoch', (m) => new m.Layout({ epochMs: Date.now() + 3_600_000 })],
    ['nextIdNumber on twitter', (m) => new m.Snowflake({ workerId: 1 }).nextIdNumber()],
    ['batch 0', (m) => new m.Snowflake({ workerId: 1 }).nextIds(0)],
    ['batch too large', (m) => new m.Snowflake({ workerId: 1 }).nextIds(m.MAX_BATCH + 1)],
    ['parse base62', (m) => m.parse('0000000000-', 'base62')],
    ['parse base32', (m) => m.parseBase32('0000000000U00')],
    ['parse decimal', (m) => m.parseDecimal('18446744073709551616')],
    ['bad format', (m) => m.encode(1n, 'base64')],
    ['short key', (m) => new m.Obfuscator('0011')],
    ['obfuscate 2^63', (m) => new m.Obfuscator('00'.repeat(16)).obfuscate(2n ** 63n)],
    ['serial digits', (m) => new m.SerialGenerator({ sequenceDigits: 8 })],
    ['segment step 0', (m) => new m.SegmentGenerator({ store: async () => ({}), step: 0 })],
    ['hostname', (m) => m.workerIdFromHostname('web')],
  ];
  for (const [label, call] of cases) same(label, () => call(native), () => call(wasm));
  same('decode above js-safe', () => new native.Layout('js-safe').decode(2n ** 53n), () => new wasm.Layout('js-safe').decode(2n ** 53n));
  same('decode', () => ({ ...l[0].decode(1n << 62n) }), () => ({ ...l[1].decode(1n << 62n) }));
});
