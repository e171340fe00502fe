// The test cases of segflake-wasm, written once and run both in Node (node --test) and in
// headless Chromium (a page that imports the package the way a web app would).
//
// `defineCases(lib, vectors, testing?)` returns `[{ name, fn }]`; `lib` is the imported
// package, `vectors` maps each file name of tests/vectors to its parsed JSON, and `testing`
// holds the hooks of the tests' build (test/testing.mjs) where the runtime can load it.
import * as assert from './assert.js';

const camel = (s) => s.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
/** A vector's `message_contains` as JS users read it: option names in camel case. */
const spelled = (text) => (typeof text === 'string' ? camel(text) : text);

/** A vector layout ({preset?, time_bits?, ...}) as the JS layout option. */
export function jsLayout(layout) {
  const out = {};
  for (const [k, v] of Object.entries(layout)) out[camel(k)] = v;
  return out;
}

const hexBytes = (hex) => Uint8Array.from(hex.match(/../g) ?? [], (h) => parseInt(h, 16));

/** Runs `fn(clock)` with `Date.now` replaced by a clock the test controls. */
function withClock(startMs, fn) {
  const real = Date.now;
  const clock = {
    t: startMs,
    step: 0, // added after every read
    set(ms) { this.t = ms; },
    advance(ms) { this.t += ms; },
  };
  Date.now = () => {
    const now = clock.t;
    clock.t += clock.step;
    return now;
  };
  try {
    return fn(clock);
  } finally {
    Date.now = real;
  }
}

// Reference codecs written independently of the Rust ones, with BigInt arithmetic.
const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const B32 = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
function refEncode(id, alphabet, width) {
  const base = BigInt(alphabet.length);
  let out = '';
  for (let i = 0; i < width; i++) {
    out = alphabet[Number(id % base)] + out;
    id /= base;
  }
  return out;
}

/** A deterministic pseudo-random 64-bit generator (xorshift64*), for sampled checks. */
function rng(seed) {
  let x = BigInt.asUintN(64, seed);
  return () => {
    x ^= x >> 12n;
    x = BigInt.asUintN(64, x ^ (x << 25n));
    x ^= x >> 27n;
    return BigInt.asUintN(64, x * 2685821657736338717n);
  };
}

const TWITTER_EPOCH = 1288834974657;

export function defineCases(lib, vectors, testing = undefined) {
  const { Layout, Snowflake, Obfuscator } = lib;
  const cases = [];
  const test = (name, fn) => cases.push({ name, fn });
  const throwsCode = (fn, code, contains, label) => assert.throwsCode(lib, fn, code, contains, label);

  // ---------------------------------------------------------------- shared vectors
  const HANDLED = ['layouts.json', 'snowflake.json', 'codecs.json', 'obfuscation.json', 'segments.json', 'serials.json', 'options.json', 'zookeeper.json', 'etcd.json', 'redis.json', 'sql.json'];

  test('vectors: every vector file has a runner here', () => {
    const files = Object.keys(vectors);
    assert.ok(files.length >= 6, `only ${files.length} vector files`);
    for (const f of files) {
      assert.ok(HANDLED.includes(f), `vector file ${f} has no runner in this suite`);
    }
  });

  test('vectors: layouts.json', () => {
    const { cases: list } = vectors['layouts.json'];
    assert.ok(list.length > 0, 'no cases');
    for (const c of list) {
      if (c.error) {
        throwsCode(() => new Layout(jsLayout(c.layout)), c.error, c.message_contains, c.name);
        continue;
      }
      const l = new Layout(jsLayout(c.layout));
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
      };
      for (const k of Object.keys(c.expect)) assert.equal(got[k], c.expect[k], `${c.name}: ${k}`);
      assert.equal(l.totalBits, l.timeBits + l.workerBits + l.sequenceBits, `${c.name}: totalBits`);
      assert.deepEqual(new Layout(l.toJSON()).toJSON(), l.toJSON(), `${c.name}: toJSON round trip`);
      // The same layout given to a generator packs the same way.
      const g = new Snowflake({ workerId: 0, layout: jsLayout(c.layout) });
      assert.deepEqual(g.layout.toJSON(), l.toJSON(), `${c.name}: generator layout`);
    }
  });

  test('vectors: snowflake.json compose and decode', () => {
    const v = vectors['snowflake.json'];
    assert.ok(v.compose.length > 0 && v.decode.length > 0, 'no cases');
    for (const c of [...v.compose, ...v.decode]) {
      const l = new Layout(jsLayout(c.layout));
      const id = BigInt(c.id);
      // On a layout with a datacenter field, workerId is the worker within datacenterId.
      const dc = c.datacenter_id === undefined ? {} : { datacenterId: c.datacenter_id };
      const fields = { timestampMs: c.timestamp_ms, tick: c.tick, workerId: c.worker_id, sequence: c.sequence, ...dc };
      assert.deepEqual({ ...l.decode(id) }, fields, `${c.name}: decode(bigint)`);
      assert.deepEqual({ ...l.decode(c.id) }, fields, `${c.name}: decode(string)`);
      if (!v.compose.includes(c)) continue;
      assert.equal(l.compose({ tick: c.tick, workerId: c.worker_id, sequence: c.sequence, ...dc }), id, `${c.name}: compose`);
      assert.equal(
        l.compose({ timestampMs: c.timestamp_ms, workerId: c.worker_id, sequence: c.sequence, ...dc }),
        id,
        `${c.name}: compose from timestamp`,
      );
      const g = new Snowflake({ workerId: c.worker_id, layout: jsLayout(c.layout), ...dc });
      assert.equal(g.compose({ tick: c.tick, sequence: c.sequence }), id, `${c.name}: generator compose`);
      assert.deepEqual({ ...g.decode(id) }, fields, `${c.name}: generator decode`);
    }
  });

  test('vectors: snowflake.json refused options and IDs', () => {
    const v = vectors['snowflake.json'];
    assert.ok(v.invalid_options.length > 0 && v.invalid_decode.length > 0, 'no cases');
    for (const c of v.invalid_options) {
      throwsCode(
        () => new Snowflake({ workerId: c.worker_id, datacenterId: c.datacenter_id, layout: jsLayout(c.layout) }),
        c.error,
        c.message_contains,
        c.name,
      );
    }
    for (const c of v.invalid_decode) {
      const l = new Layout(jsLayout(c.layout));
      throwsCode(() => l.decode(BigInt(c.id)), c.error, c.message_contains, c.name);
      throwsCode(() => l.decode(c.id), c.error, c.message_contains, `${c.name} (string)`);
    }
  });

  test('vectors: codecs.json', () => {
    const v = vectors['codecs.json'];
    assert.ok(v.valid.length > 0 && v.invalid.length > 0 && v.parse_aliases.length > 0, 'no cases');
    const named = {
      decimal: [lib.encodeDecimal, lib.parseDecimal],
      base62: [lib.encodeBase62, lib.parseBase62],
      base32: [lib.encodeBase32, lib.parseBase32],
    };
    for (const c of v.valid) {
      const id = BigInt(c.id);
      for (const format of ['decimal', 'base62', 'base32']) {
        const [enc, dec] = named[format];
        assert.equal(lib.encode(id, format), c[format], `encode(${c.id}, ${format})`);
        assert.equal(enc(id), c[format], `named encoder ${format} of ${c.id}`);
        assert.equal(lib.parse(c[format], format), id, `parse(${c[format]}, ${format})`);
        assert.equal(dec(c[format]), id, `named parser ${format} of ${c[format]}`);
      }
      assert.equal(lib.encode(id), c.decimal, 'decimal is the default format');
      assert.equal(lib.parse(c.decimal), id, 'decimal is the default format');
    }
    for (const c of v.parse_aliases) {
      assert.equal(lib.parse(c.text, c.format), BigInt(c.id), `alias ${c.text}`);
    }
    for (const c of v.invalid) {
      throwsCode(() => lib.parse(c.text, c.format), c.error, c.message_contains, `${c.format} ${JSON.stringify(c.text)}`);
      throwsCode(() => named[c.format][1](c.text), c.error, c.message_contains, `named ${c.format} ${JSON.stringify(c.text)}`);
    }
  });

  test('vectors: obfuscation.json', () => {
    const v = vectors['obfuscation.json'];
    assert.ok(v.cases.length > 0 && v.invalid.length > 0, 'no cases');
    for (const c of v.cases) {
      for (const key of [hexBytes(c.key_hex), c.key_hex, c.key_hex.toUpperCase()]) {
        const o = new Obfuscator(key);
        assert.equal(o.obfuscate(BigInt(c.id)), BigInt(c.obfuscated), `obfuscate ${c.id} with ${c.key_hex}`);
        assert.equal(o.deobfuscate(BigInt(c.obfuscated)), BigInt(c.id), `deobfuscate ${c.obfuscated}`);
      }
    }
    for (const c of v.invalid) {
      if (c.id === undefined) {
        throwsCode(() => new Obfuscator(hexBytes(c.key_hex)), c.error, c.message_contains, c.name);
        throwsCode(() => new Obfuscator(c.key_hex), c.error, c.message_contains, `${c.name} (hex)`);
      } else {
        const o = new Obfuscator(hexBytes(c.key_hex));
        throwsCode(() => o.obfuscate(BigInt(c.id)), c.error, c.message_contains, c.name);
        throwsCode(() => o.deobfuscate(BigInt(c.id)), c.error, c.message_contains, `${c.name} (deobfuscate)`);
      }
    }
  });

  const runs = (ids) => {
    const out = [];
    for (const [a, b] of ids) for (let i = BigInt(a); i <= BigInt(b); i++) out.push(i);
    return out;
  };
  const camelKeys = (o) => Object.fromEntries(Object.entries(o ?? {}).map(([k, v]) => [camel(k), v]));
  const vectorStore = (spec) => {
    if (spec.leaf) {
      let maxId = BigInt(spec.leaf.initial_max_id);
      return async (tag, step) => {
        maxId += BigInt(step);
        return { maxId, step };
      };
    }
    let n = 0;
    return async () => {
      const e = spec.script[Math.min(n++, spec.script.length - 1)];
      return { maxId: BigInt(e.max_id), step: e.step };
    };
  };

  test('vectors: segments.json sequences through the public SegmentGenerator with an async store', async () => {
    const v = vectors['segments.json'];
    assert.ok(v.sequences.length > 0, 'no cases');
    for (const c of v.sequences) {
      const gen = new lib.SegmentGenerator({ store: vectorStore(c.store), ...camelKeys(c.options), waitTimeoutMs: 2000 });
      const want = runs(c.ids);
      assert.equal(want.length, c.take, `${c.name}: vector consistency`);
      const got = c.take > 0 ? [...(await gen.nextIds(c.tag, c.take))] : [];
      assert.deepEqual(got, want, c.name);
      if (c.then_error) {
        assert.isSegflakeError(lib, await assert.caughtAsync(() => gen.nextId(c.tag)), c.then_error, c.message_contains, c.name);
      }
      await gen.close();
    }
  });

  test('vectors: segments.json sequences one ID at a time (nextId and a tag handle)', async () => {
    const v = vectors['segments.json'];
    for (const c of v.sequences) {
      const gen = new lib.SegmentGenerator({ store: vectorStore(c.store), ...camelKeys(c.options), waitTimeoutMs: 2000 });
      const tag = gen.tag(c.tag);
      const got = [];
      for (let i = 0; i < c.take; i++) got.push(i % 2 ? await tag.nextId() : await gen.nextId(c.tag));
      assert.deepEqual(got, runs(c.ids), c.name);
      if (c.then_error) {
        assert.isSegflakeError(lib, await assert.caughtAsync(() => tag.nextId()), c.then_error, c.message_contains, c.name);
      }
      await gen.close();
    }
  });

  test('vectors: segments.json dynamic steps (engine with explicit time)', () => {
    const v = vectors['segments.json'];
    assert.ok(v.dynamic_steps.length > 0, 'no cases');
    for (const c of v.dynamic_steps) {
      const engine = new lib.__native.__SegmentEngine('t', { store: () => {}, ...camelKeys(c.options) });
      let maxId = 1n;
      for (const [i, f] of c.fetches.entries()) {
        while (engine.__takeRaw() !== undefined);
        const step = engine.__beginFetchAt(f.at_ms);
        assert.equal(step, f.step, `${c.name}: fetch ${i} at ${f.at_ms}`);
        maxId += BigInt(step);
        engine.__completeAt(f.at_ms, maxId, step);
      }
      engine.free();
    }
  });

  test('vectors: segments.json invalid options and tags', async () => {
    const v = vectors['segments.json'];
    assert.ok(v.invalid.length > 0, 'no cases');
    for (const c of v.invalid) {
      const e = await assert.caughtAsync(async () => {
        const gen = new lib.SegmentGenerator({ store: async () => ({ maxId: 10, step: 10 }), ...camelKeys(c.options) });
        await gen.nextId(c.tag);
      }, c.name);
      assert.isSegflakeError(lib, e, c.error, spelled(c.message_contains), c.name);
    }
  });

  test('vectors: serials.json', () => {
    const v = vectors['serials.json'];
    assert.ok(v.format.length > 0 && v.next.length > 0 && v.counter.length > 0 && v.invalid_options.length > 0, 'no cases');
    for (const c of v.format) {
      const gen = new lib.SerialGenerator(camelKeys(c.options));
      const sec = Math.floor(c.unix_ms / 1000);
      assert.equal(gen.format(sec, c.sequence), BigInt(c.serial), c.name);
      assert.equal(gen.datePrefix(sec), c.date, `${c.name}: date`);
      assert.deepEqual(
        { ...gen.decode(BigInt(c.serial)) },
        { date: Number(c.date), unixSeconds: c.unix_seconds, workerId: c.options.worker_id, sequence: c.sequence },
        `${c.name}: decode`,
      );
      assert.deepEqual({ ...gen.decode(c.serial) }, { ...gen.decode(BigInt(c.serial)) }, `${c.name}: decode(string)`);
    }
    for (const c of v.format_errors) {
      const gen = new lib.SerialGenerator(camelKeys(c.options));
      throwsCode(() => gen.format(Math.floor(c.unix_ms / 1000), c.sequence), c.error, c.message_contains, c.name);
    }
    for (const c of v.next) {
      const gen = lib.__native.__SerialGenerator.__withManualClock(camelKeys(c.options), c.steps[0].unix_ms);
      for (const [i, step] of c.steps.entries()) {
        gen.__setClockMs(step.unix_ms);
        if (step.error) throwsCode(() => gen.next(), step.error, step.message_contains, `${c.name} step ${i}`);
        else assert.equal(gen.next(), BigInt(step.serial), `${c.name} step ${i}`);
      }
    }
    for (const c of v.counter) {
      const gen = lib.__native.__SerialGenerator.__withManualClock(camelKeys(c.options), 0);
      for (const [i, step] of c.steps.entries()) {
        assert.equal(gen.__counterSecond(step.now_ms), step.counter_second, `${c.name} step ${i}: second`);
        const got = gen.__acceptReply(step.counter_second, step.sequence);
        assert.equal(got, step.serial === null ? null : BigInt(step.serial), `${c.name} step ${i}`);
      }
    }
    for (const c of v.invalid_options) {
      throwsCode(() => new lib.SerialGenerator(camelKeys(c.options)), c.error, spelled(c.message_contains), c.name);
    }
  });

  // ---------------------------------------------------------------- segment generator
  // options.json: every case through the module's own conversion of JS values and the
  // core's option tables, in the camel spelling: `__options(set, input, nowMs)` of the tests'
  // build (`testing`, test/testing.mjs), where the runtime can load it (Node, Bun, Deno).
  if (testing) test('vectors: options.json (camel spelling, exact settings or code and message)', () => {
    const { now_ms: nowMs, cases: list } = vectors['options.json'];
    const options = testing.__options;
    assert.ok(typeof options === 'function', 'the tests\' build exposes __options');
    assert.ok(list.length >= 40, `only ${list.length} option cases`);
    // Vector input: snake-case keys (nested layout objects too), {"int": "digits"} a bigint.
    const input = (v) => {
      if (v === null || typeof v !== 'object') return v;
      const keys = Object.keys(v);
      if (keys.length === 1 && keys[0] === 'int') return BigInt(v.int);
      return Object.fromEntries(keys.map((k) => [camel(k), input(v[k])]));
    };
    // Settings as the vectors write them: integers beyond 2^53 as decimal strings.
    const plain = (v) => {
      if (typeof v === 'bigint') return String(v);
      if (v === null || typeof v !== 'object') return v;
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
    };
    for (const c of list) {
      const expected = c.camel;
      const label = `${c.name} (${c.set} ${JSON.stringify(c.input)})`;
      const run = () => options(c.set, input(c.input), nowMs);
      if (expected.error) {
        const e = throwsCode(run, expected.error.code, [], label);
        assert.equal(e.message, expected.error.message, `${label}: message`);
      } else {
        assert.deepEqual(plain(run()), expected.settings, label);
      }
    }
  });

  // zookeeper.json, etcd.json, redis.json, sql.json: the registry protocols through the
  // module's own conversion of requests, replies and answers (segflake/registries performs
  // the requests over `__RegistryProtocol`).
  const registryProtocol = () => {
    const Protocol = lib.__native.__RegistryProtocol;
    assert.ok(typeof Protocol === 'function', 'the module exposes __RegistryProtocol');
    return Protocol;
  };
  /** The core's registry scripts and statements (`__native.__statements()`), parsed once. */
  let registryTexts;
  const registryStatements = () => (registryTexts ??= JSON.parse(lib.__native.__statements()).registries);
  /** A SQL request's statement as the vectors name it (`dialect.call`, from the core's table). */
  const vectorStep = (step) => {
    if (step.op !== 'query') return step;
    for (const [dialect, calls] of Object.entries(registryStatements())) {
      for (const [call, text] of Object.entries(calls)) {
        if (text === step.statement) return { ...step, statement: `${dialect}.${call}` };
      }
    }
    return step;
  };
  /** An integer beyond 2^53 (a power of two in the vectors, so JSON.parse kept it exact) as a bigint. */
  const vectorArg = (a) => (Number.isInteger(a) && !Number.isSafeInteger(a) ? BigInt(a) : a);
  for (const file of ['zookeeper.json', 'etcd.json', 'redis.json', 'sql.json']) {
    test(`vectors: ${file} (every request, reply and answer of the registry protocol)`, () => {
      const v = vectors[file];
      const Protocol = registryProtocol();
      assert.ok(v.cases.length >= 5, `only ${v.cases.length} cases`);
      for (const c of v.cases) {
        const p = new Protocol(c.kind ?? v.kind, v.config);
        for (const [n, call] of c.calls.entries()) {
          const label = `${c.name}, call ${n}`;
          // ZooKeeper's session as a number and as a bigint, in turn.
          const context = call.session === undefined
            ? undefined
            : { session: n % 2 === 0 ? call.session : BigInt(call.session), now_ms: call.now_ms };
          let step = p.start(call.call, call.args.map(vectorArg), context);
          for (const [i, x] of call.exchange.entries()) {
            assert.deepEqual(vectorStep(step), x.op, `${label}, request ${i}`);
            step = p.resume(x.reply);
          }
          if (call.error_contains !== undefined) {
            assert.ok(typeof step.error === 'string' && step.error.includes(call.error_contains), `${label}: ended with ${JSON.stringify(step, (k, x) => (typeof x === 'bigint' ? `${x}` : x))}`);
          } else {
            assert.deepEqual(step, { answer: call.answer }, label);
          }
        }
      }
    });
  }

  test('registry protocols: kinds and configs are checked by the core; describe() tells what adapters need', () => {
    const Protocol = registryProtocol();
    const zk = vectors['zookeeper.json'].config;
    assert.equal(new Protocol('zookeeper', zk).describe().identity, zk.identity);
    throwsCode(() => new Protocol('zookeeper', { ...zk, root: 'snowflake/x' }), 'INVALID_ARGUMENT', ['absolute znode path']);
    throwsCode(() => new Protocol('zookeeper', { ...zk, identity: '10.0.0.7' }), 'INVALID_ARGUMENT', ['not IP:PORT']);
    throwsCode(() => new Protocol('consul', {}), 'INVALID_ARGUMENT', ['zookeeper, etcd, redis, postgres, mysql']);
    throwsCode(() => new Protocol('redis', { prefix: 'x' }), 'INVALID_ARGUMENT', ['wait_ms']);
    const bad = new Protocol('zookeeper', zk).start('peers', [], { session: 2n ** 63n, now_ms: 0 });
    assert.ok(bad.error.includes('needs the context {session, now_ms}'), JSON.stringify(bad, (k, x) => (typeof x === 'bigint' ? `${x}` : x)));
    assert.ok(new Protocol('zookeeper', zk).resume(null).error.includes('no registry conversation is in progress'));
    const tables = registryStatements();
    assert.equal(new Protocol('postgres', { host_name: 'h' }).describe().schema, tables.postgres.schema);
    assert.equal(new Protocol('mysql', { host_name: 'h' }).describe().schema, tables.mysql.schema);
    assert.deepEqual(new Protocol('redis', { wait_ms: 5 }).describe(), {});
    const etcd = new Protocol('etcd', {});
    assert.deepEqual(etcd.describe(), { prefix: '/segflake', leases: [] });
    const grant = etcd.start('claim', [3, 'o', 1500]);
    assert.deepEqual(grant, { op: 'grant', ttl_s: 2 });
    const txn = etcd.resume({ lease: 77n });
    assert.equal(txn.op, 'txn');
    assert.deepEqual(etcd.resume({ succeeded: true, values: ['00000000000000000009'] }), { answer: 9 });
    assert.deepEqual(etcd.describe().leases, ['77']);
  });

  test('segments: a Leaf store yields 1..=2000 then 2001..=4000; the next segment is prefetched', async () => {
    let maxId = 1n;
    const calls = [];
    const store = {
      rows: 0,
      async allocate(tag, step) {
        this.rows++; // called as a method: `this` is the store
        calls.push([tag, step]);
        maxId += BigInt(step);
        return { maxId, step };
      },
    };
    const gen = new lib.SegmentGenerator({ store, step: 2000, dynamicStep: false });
    const order = gen.tag('order');
    assert.equal(order.name, 'order');
    const ids = await order.nextIds(2000);
    assert.deepEqual([...ids], runs([['1', '2000']]));
    const next = await order.nextId();
    assert.equal(next, 2001n);
    await new Promise((r) => setTimeout(r, 20));
    const st = order.stats();
    assert.equal(st.currentStart, 2001n);
    assert.equal(st.currentEnd, 4001n);
    assert.equal(st.position, 2002n);
    assert.equal(st.remaining, 1999);
    assert.equal(st.issued, 2001);
    assert.equal(st.tag, 'order');
    assert.ok(st.fetches >= 2 && st.failures === 0, JSON.stringify(st, (k, x) => (typeof x === 'bigint' ? `${x}` : x)));
    assert.equal(order.nextIdSync(), 2002n, 'nextIdSync from a ready segment');
    assert.ok(calls.every(([tag, step]) => tag === 'order' && step === 2000), JSON.stringify(calls));
    assert.equal(store.rows, calls.length);
    assert.deepEqual(gen.tags, ['order']);
    const other = await gen.nextId('invoice');
    assert.equal(other, maxId - 2000n, 'each tag has its own ranges');
    throwsCode(() => gen.stats('unknown'), 'INVALID_ARGUMENT', ['"unknown"']);
    await gen.close();
    assert.equal(gen.closed, true);
    assert.isSegflakeError(lib, await assert.caughtAsync(() => gen.nextId('order')), 'CLOSED');
    assert.isSegflakeError(lib, await assert.caughtAsync(() => gen.nextId('new-tag')), 'CLOSED');
  });

  test('segments: a failing store surfaces as SegmentsExhaustedError with the cause, and the next call retries', async () => {
    let fail = true;
    let maxId = 0n;
    const boom = new Error('database is down');
    const gen = new lib.SegmentGenerator({
      store: async (tag, step) => {
        if (fail) throw boom;
        maxId += BigInt(step);
        return { maxId, step };
      },
      step: 10,
    });
    const e = assert.isSegflakeError(lib, await assert.caughtAsync(() => gen.nextId('t')), 'SEGMENTS_EXHAUSTED', ['"t"', 'database is down']);
    assert.equal(e.cause, boom, 'cause is the store error');
    throwsCode(() => gen.nextIdSync('t'), 'SEGMENTS_EXHAUSTED', ['nextIdSync found no ready segment']);
    fail = false;
    assert.equal(await gen.nextId('t'), 0n, 'the next call retries the store');
    assert.ok(gen.stats('t').failures >= 1);
    await gen.close();
  });

  test('segments: contract violations, garbage answers and slow stores are refused, never issued', async () => {
    const answers = [{ maxId: 100, step: 100 }, { maxId: 150, step: 100 }, { maxId: 300, step: 100 }];
    let n = 0;
    const gen = new lib.SegmentGenerator({ store: async () => answers[Math.min(n++, answers.length - 1)], step: 100, prefetchPercent: 100, dynamicStep: false });
    const first = await gen.nextIds('t', 100);
    assert.deepEqual([...first], runs([['0', '99']]));
    // [50, 150) overlaps [0, 100): refused; the caller then gets the error, never 100..149.
    const e = assert.isSegflakeError(lib, await assert.caughtAsync(() => gen.nextId('t')), 'SEGMENTS_EXHAUSTED');
    assert.isSegflakeError(lib, e.cause, 'STORE_CONTRACT_VIOLATION', ['overlaps']);
    assert.equal(await gen.nextId('t'), 200n, 'the next range is used');
    await gen.close();

    // `null` is the store's "no such tag": UnknownTagError at once, not a contract violation.
    let asked = 0;
    const unknown = new lib.SegmentGenerator({ store: async () => { asked++; return null; } });
    assert.isSegflakeError(lib, await assert.caughtAsync(() => unknown.nextId('t')), 'UNKNOWN_TAG', ['unknown tag "t"']);
    assert.isSegflakeError(lib, await assert.caughtAsync(() => unknown.nextId('t')), 'UNKNOWN_TAG');
    assert.equal(asked, 1, 'an unknown tag is not asked for again before the retry backoff');
    await unknown.close();

    for (const [answer, contains] of [[{ maxId: -5, step: 1 }, 'negative'], [{ maxId: 10 }, 'step'], ['x', 'string']]) {
      const g = new lib.SegmentGenerator({ store: async () => answer });
      const err = assert.isSegflakeError(lib, await assert.caughtAsync(() => g.nextId('t')), 'SEGMENTS_EXHAUSTED', [], String(contains));
      assert.isSegflakeError(lib, err.cause, 'STORE_CONTRACT_VIOLATION', [contains]);
      await g.close();
    }

    const slow = new lib.SegmentGenerator({ store: () => new Promise(() => {}), storeTimeoutMs: 50, waitTimeoutMs: 1000 });
    const t0 = Date.now();
    const err = assert.isSegflakeError(lib, await assert.caughtAsync(() => slow.nextId('t')), 'SEGMENTS_EXHAUSTED', ['within 50 ms']);
    assert.ok(Date.now() - t0 < 900, 'failed at the store timeout, not the wait timeout');
    assert.isSegflakeError(lib, err.cause, 'STORE_ERROR', ['storeTimeoutMs']);
    await slow.close();

    const stuck = new lib.SegmentGenerator({ store: () => new Promise(() => {}), storeTimeoutMs: 5000, waitTimeoutMs: 60 });
    const t1 = Date.now();
    assert.isSegflakeError(lib, await assert.caughtAsync(() => stuck.nextId('t')), 'SEGMENTS_EXHAUSTED');
    assert.ok(Date.now() - t1 < 1000, 'bounded wait');
    stuck.close(); // its store never settles: do not wait for the 5 s timeout
  });

  test('segments: close gives back what was not issued (giveBack), so the next generator continues without a gap', async () => {
    // A Leaf row in memory whose giveBack is the compare-and-set of max_id.
    const rows = new Map();
    const offers = [];
    const store = {
      async allocate(tag, step) {
        const maxId = (rows.get(tag) ?? 1n) + BigInt(step);
        rows.set(tag, maxId);
        return { maxId, step };
      },
      async giveBack(tag, expectedMaxId, maxId) {
        offers.push([tag, expectedMaxId, maxId]);
        if (rows.get(tag) !== expectedMaxId || !(maxId < expectedMaxId)) return false;
        rows.set(tag, maxId);
        return true;
      },
    };
    const take = async (gen, n) => {
      const ids = [];
      for (let i = 0; i < n; i++) ids.push(await gen.nextId('order'));
      return ids;
    };
    const options = { store, step: 1000, dynamicStep: false };
    const gen = new lib.SegmentGenerator(options);
    const ids = await take(gen, 250);
    assert.equal(ids[0], 1n);
    assert.equal(ids[249], 250n);
    await new Promise((r) => setTimeout(r, 20)); // the prefetched range [1001, 2001) arrived
    assert.equal(rows.get('order'), 2001n);
    await gen.close();
    assert.deepEqual(offers, [['order', 2001n, 251n]]);
    assert.equal(rows.get('order'), 251n);
    const next = new lib.SegmentGenerator(options);
    const more = await next.nextIds('order', 1000);
    assert.equal(more[0], 251n, 'no gap');
    assert.equal(more[999], 1250n);
    await next.close();
    assert.equal(rows.get('order'), 1251n);

    // giveBack: false keeps the gap.
    offers.length = 0;
    const off = new lib.SegmentGenerator({ ...options, giveBack: false });
    assert.equal(await off.nextId('order'), 1251n);
    const top = rows.get('order');
    await off.close();
    assert.deepEqual(offers, []);
    assert.equal(rows.get('order'), top);

    // A row that moved since (another generator allocated) is not lowered.
    const a = new lib.SegmentGenerator({ ...options, prefetchPercent: 100 });
    const fromA = await take(a, 10);
    const b = new lib.SegmentGenerator({ ...options, prefetchPercent: 100 });
    const fromB = await take(b, 10);
    const moved = rows.get('order');
    await a.close();
    assert.deepEqual(offers, [['order', fromA[0] + 1000n, fromA[9] + 1n]]);
    assert.equal(rows.get('order'), moved, 'not lowered under b');
    await b.close();
    assert.equal(rows.get('order'), fromB[9] + 1n, "b's tail goes back");
  });

  test('HttpStore.giveBack: POST /api/segment/giveback/{tag}?expected_max_id=E&max_id=M&token=T, givenBack; 404 is false', async () => {
    const sent = [];
    const tokens = [];
    let status = 200;
    const fetch = async (url, init) => {
      // A random 128-bit token per give back (32 hex digits): a resent request changes nothing.
      const m = /^(.*)&token=([0-9a-f]{32})$/.exec(url);
      tokens.push(m && m[2]);
      sent.push([m ? m[1] : url, init.method, init.headers.authorization]);
      return new Response(status === 200 ? '{"key":"order","givenBack":true}' : 'Not Found', { status });
    };
    const store = new lib.HttpStore('http://ids:8080', { token: 't0k', fetch });
    assert.equal(await store.giveBack('order', 2001n, 251n), true);
    assert.deepEqual(sent, [['http://ids:8080/api/segment/giveback/order?expected_max_id=2001&max_id=251', 'POST', 'Bearer t0k']]);
    status = 404;
    assert.equal(await store.giveBack('order', 2001n, 251n), false, 'a server without give back');
    assert.equal(await store.giveBack('order', 251n, 251n), false, 'nothing to give back');
    assert.equal(sent.length, 2, 'nothing sent for an empty give back');
    assert.ok(tokens[0] !== null && tokens[1] !== null, 'each give back carries a token');
    assert.notEqual(tokens[0], tokens[1], 'a fresh token for each give back');
  });

  test('segments: options and tags are checked', async () => {
    const store = async () => ({ maxId: 10, step: 10 });
    throwsCode(() => new lib.SegmentGenerator({ store: 5 }), 'INVALID_ARGUMENT', ['invalid store', 'the number 5']);
    throwsCode(() => new lib.SegmentGenerator(), 'INVALID_ARGUMENT', ['got undefined']);
    throwsCode(() => new lib.SegmentGenerator({ store, stepp: 5 }), 'INVALID_ARGUMENT', ['unknown option "stepp"']);
    throwsCode(() => new lib.SegmentGenerator({ store, step: -1 }), 'INVALID_ARGUMENT', ['invalid step: got -1']);
    throwsCode(() => new lib.SegmentGenerator({ store, step: 0 }), 'INVALID_ARGUMENT', ['step']);
    throwsCode(() => new lib.SegmentGenerator({ store, prefetchPercent: 101 }), 'INVALID_ARGUMENT', ['0..=100']);
    throwsCode(() => new lib.SegmentGenerator({ store, dynamicStep: 'yes' }), 'INVALID_ARGUMENT', ['true or false']);
    throwsCode(() => new lib.SegmentGenerator({ store, storeTimeoutMs: 0 }), 'INVALID_ARGUMENT', ['1..=3600000']);
    const gen = new lib.SegmentGenerator({ store });
    throwsCode(() => gen.tag(''), 'INVALID_ARGUMENT', ['1..=128 bytes']);
    throwsCode(() => gen.tag('a b'), 'INVALID_ARGUMENT', ['whitespace']);
    throwsCode(() => gen.tag(7), 'INVALID_ARGUMENT', ['got 7']);
    assert.isSegflakeError(lib, await assert.caughtAsync(() => gen.nextIds('t', 0)), 'INVALID_ARGUMENT', ['got 0', '1..=16777216']);
    await gen.close();
  });

  test('serials: date prefix, counter, restore and errors', async () => {
    const s = new lib.SerialGenerator({ sequenceDigits: 4, workerDigits: 2, workerId: 7 });
    const a = s.next();
    const b = BigInt(s.nextString());
    assert.ok(b > a, 'increasing');
    assert.equal(s.last, b);
    const d = s.decode(a);
    assert.equal(d.workerId, 7);
    const now = Math.floor(Date.now() / 1000);
    assert.ok(Math.abs(d.unixSeconds - now) <= 2, `${d.unixSeconds} vs ${now}`);
    const iso = new Date(d.unixSeconds * 1000).toISOString();
    const prefix = iso.slice(2, 4) + iso.slice(5, 7) + iso.slice(8, 10) + iso.slice(11, 13) + iso.slice(14, 16) + iso.slice(17, 19);
    assert.equal(String(d.date).padStart(12, '0'), prefix, 'yyMMddHHmmss of the second');
    assert.equal(s.format(1_744_545_600, 1), 250413120000_07_0001n, 'format is pure arithmetic on the date');
    const restored = new lib.SerialGenerator({ last: 9_912_312_359_599_999n });
    throwsCode(() => restored.next(), 'SERIAL_EXHAUSTED');
    const counted = new lib.SerialGenerator({ counter: async (key, second) => (key.length === 12 && Number.isInteger(second) ? 42 : 0) });
    const c = await counted.nextFromCounter();
    assert.equal(counted.decode(c).sequence, 42);
    const broken = new lib.SerialGenerator({ counter: async () => { throw new Error('redis down'); } });
    const e = assert.isSegflakeError(lib, await assert.caughtAsync(() => broken.nextFromCounter()), 'STORE_ERROR', ['redis down']);
    assert.ok(e.cause instanceof Error);
    assert.isSegflakeError(lib, await assert.caughtAsync(() => s.nextFromCounter()), 'INVALID_ARGUMENT', ['has none']);
    throwsCode(() => new lib.SerialGenerator({ sequenceDigits: 9 }), 'INVALID_ARGUMENT', ['invalid sequenceDigits: got 9', '1..=7']);
    throwsCode(() => new lib.SerialGenerator({ counter: 5 }), 'INVALID_ARGUMENT', ['async function']);
    throwsCode(() => new lib.SerialGenerator({ counterTimeoutMs: 0 }), 'INVALID_ARGUMENT', ['1..=3600000']);
    // The engine layer: the counter timeout and the give-up error come from the core.
    const { __SerialGenerator } = lib.__native;
    assert.equal(new __SerialGenerator({ counterTimeoutMs: 250 }).__counterTimeoutMs, 250);
    assert.equal(new __SerialGenerator({}).__counterTimeoutMs, 5000, 'default counterTimeoutMs');
    throwsCode(() => new __SerialGenerator({ counterTimeoutMs: 3_600_001 }), 'INVALID_ARGUMENT', ['invalid counterTimeoutMs: got 3600001']);
    const gaveUp = new __SerialGenerator({ last: 250413120000_0005n }).__counterGaveUp();
    assert.isSegflakeError(lib, gaveUp, 'STORE_ERROR', ['sequence numbers in a row', 'last serial 2504131200000005']);
  });

  test('serials: a script counter gets the core key and arguments; its refusal is ClockSkewError', async () => {
    const calls = [];
    const counter = { async runSerialScript(key, args) { calls.push([key, args]); return [1, 3, args[0] * 1000]; } };
    const g = new lib.SerialGenerator({ counter, counterMaxBehindMs: 5000 });
    const v = await g.nextFromCounter();
    const second = g.decode(v).unixSeconds;
    assert.equal(v % 10000n, 3n);
    assert.equal(calls[0][0], `serial:${String(v / 10000n)}`);
    assert.deepEqual(calls[0][1], [second, 5000, 60000, 1000]);
    // The counter's clock is 90 s past the second: refused, nothing issued.
    const refusing = { async runSerialScript(key, args) { return [0, 0, args[0] * 1000 + 90000]; } };
    const r = new lib.SerialGenerator({ counter: refusing, counterMaxBehindMs: 5000 });
    assert.isSegflakeError(lib, await assert.caughtAsync(() => r.nextFromCounter()), 'CLOCK_SKEW', ['counter_max_behind_ms = 5000']);
    assert.equal(r.last, 0n);
    // A restart given the persisted last, on a counter that starts again at 1: above it.
    let n = 0;
    const again = new lib.SerialGenerator({ counter: { async runSerialScript(key, args) { return [1, ++n, args[0] * 1000]; } }, last: v });
    assert.ok((await again.nextFromCounter()) > v);
  });

  // ---------------------------------------------------------------- generator
  test('nextId, nextIdString, nextIds and fillIds interleaved are strictly increasing', () => {
    const g = new Snowflake({ workerId: 3 });
    let last = -1n;
    let count = 0;
    const seen = (id, how) => {
      assert.equal(typeof id, 'bigint', how);
      if (!(id > last)) throw new assert.AssertionError(`${how}: ${id} is not above ${last}`);
      last = id;
      count++;
    };
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 5000; i++) seen(g.nextId(), 'nextId');
      seen(BigInt(g.nextIdString()), 'nextIdString');
      const batch = g.nextIds(3000);
      assert.ok(batch instanceof BigUint64Array, 'nextIds returns a BigUint64Array');
      assert.equal(batch.length, 3000, 'batch length');
      for (const id of batch) seen(id, 'nextIds');
      const target = new BigUint64Array(1000);
      assert.equal(g.fillIds(target), target, 'fillIds returns its argument');
      for (const id of target) seen(id, 'fillIds');
    }
    assert.equal(count, 20 * 9001);
  });

  test('nextId works unbound, as in the native package', () => {
    const g = new Snowflake({ workerId: 2 });
    const next = g.nextId;
    const a = next();
    const b = [0].map(g.nextId)[0];
    assert.ok(b > a, 'increasing');
    assert.equal(g.decode(a).workerId, 2);
    assert.ok(g instanceof Snowflake, 'instanceof');
  });

  test('a fresh ID carries the worker ID and the current time', () => {
    const before = Date.now();
    const g = new Snowflake({ workerId: 1023 });
    const id = g.nextId();
    const after = Date.now();
    const d = g.decode(id);
    assert.equal(d.workerId, 1023, 'workerId');
    assert.ok(d.timestampMs >= before - 1 && d.timestampMs <= after + 2000, `timestamp ${d.timestampMs} not near ${before}`);
    assert.equal(d.timestampMs, TWITTER_EPOCH + d.tick, 'twitter ticks are milliseconds since its epoch');
    // Independent arithmetic: time << 22 | worker << 12 | sequence.
    assert.equal(id, (BigInt(d.tick) << 22n) | (1023n << 12n) | BigInt(d.sequence), 'bit packing');
    assert.equal(g.workerId, 1023);
    assert.equal(g.maxDriftMs, 2000, 'default maxDriftMs');
    assert.equal(g.sequenceStart, 'zero', 'default sequenceStart');
    assert.equal(g.layout.toJSON().timeBits, 41, 'twitter is the default layout');
  });

  test('one million IDs: no duplicate, strictly increasing', () => {
    const g = new Snowflake({ workerId: 9 });
    const ids = new BigUint64Array(1_000_000);
    for (let i = 0; i < ids.length; i++) ids[i] = g.nextId();
    for (let i = 1; i < ids.length; i++) {
      if (!(ids[i] > ids[i - 1])) throw new assert.AssertionError(`ID ${i} (${ids[i]}) is not above ${ids[i - 1]}`);
    }
    assert.equal(new Set(ids).size, ids.length, 'distinct');
  });

  test('a frozen clock: sequence overflow borrows ticks up to maxDriftMs, never a duplicate', () => {
    withClock(1_800_000_000_000, (clock) => {
      const g = new Snowflake({ workerId: 1, maxDriftMs: 5 });
      // 6 ticks of 4096 IDs fit: the clock's tick and 5 borrowed ones.
      const ids = g.nextIds(6 * 4096);
      for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], 'increasing');
      const last = g.decode(ids[ids.length - 1]);
      assert.equal(last.timestampMs, 1_800_000_000_005, 'ran 5 ms ahead of the clock');
      assert.equal(g.highWaterMark, 1_800_000_000_005, 'highWaterMark is the borrowed tick');
      // The next ID needs the clock to move: let it advance by 1 ms per read.
      clock.step = 1;
      const next = g.nextId();
      assert.ok(next > ids[ids.length - 1], 'increasing after waiting');
      assert.ok(g.decode(next).timestampMs >= 1_800_000_000_006, 'a later tick');
    });
  });

  test('maxDriftMs 0 waits for the next tick instead of borrowing', () => {
    withClock(1_800_000_000_000, (clock) => {
      clock.step = 0.25; // the clock advances a quarter millisecond per read
      const g = new Snowflake({ workerId: 2, maxDriftMs: 0 });
      const ids = g.nextIds(3 * 4096 + 1);
      for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], 'increasing');
      for (const id of ids) {
        const d = g.decode(id);
        assert.ok(d.timestampMs <= Math.floor(clock.t), `ID at ${d.timestampMs} is ahead of the clock ${clock.t}`);
      }
    });
  });

  test('a Date.now() that never advances makes a waiting call fail instead of hanging; the generator recovers', () => {
    const before = withClock(Date.now(), () => {
      const g = new Snowflake({ workerId: 6, maxDriftMs: 1 });
      const ids = g.nextIds(2 * 4096); // this tick and the one borrowed tick
      const t0 = performance.now();
      throwsCode(() => g.nextId(), 'CLOCK_STALLED', ['the clock kept reading', 'must advance with real time']);
      throwsCode(() => g.nextIds(5), 'CLOCK_STALLED', ['the clock kept reading']);
      assert.ok(performance.now() - t0 < 20_000, 'gave up in bounded time');
      return { g, last: ids[ids.length - 1] };
    });
    // With a running clock the same generator issues again, above what it issued before.
    const next = before.g.nextId();
    assert.ok(next > before.last, 'recovered and still increasing');
  });

  test('clock moving back within maxDriftMs keeps issuing; beyond it fails with ClockMovedBackwardsError', () => {
    withClock(1_800_000_000_000, (clock) => {
      const g = new Snowflake({ workerId: 4 });
      const a = g.nextId();
      clock.set(1_800_000_000_000 - 1500);
      const b = g.nextId();
      assert.ok(b > a, 'still increasing after a 1500 ms step back');
      clock.set(1_800_000_000_000 - 2500);
      const e = throwsCode(() => g.nextId(), 'CLOCK_MOVED_BACKWARDS', ['by 2500 ms', 'max_drift_ms = 2000']);
      throwsCode(() => g.nextIdString(), 'CLOCK_MOVED_BACKWARDS');
      throwsCode(() => g.nextIds(10), 'CLOCK_MOVED_BACKWARDS');
      assert.ok(typeof e.stack === 'string', 'errors have a stack');
      clock.set(1_800_000_000_001);
      assert.ok(g.nextId() > b, 'recovers once the clock catches up');
    });
  });

  test('a clock before the epoch fails with ClockBeforeEpochError', () => {
    withClock(1_800_000_000_000, (clock) => {
      const g = new Snowflake({ workerId: 0, layout: 'js-safe' });
      clock.set(1_700_000_000_000);
      throwsCode(() => g.nextId(), 'CLOCK_BEFORE_EPOCH', ['before the layout epoch 2025-01-01']);
    });
  });

  test('a layout whose time ran out fails with TimeExhaustedError', () => {
    const now = Date.now();
    const layout = { timeBits: 8, epochMs: now - 10_000, minLifetimeYears: 0 };
    throwsCode(() => new Snowflake({ workerId: 0, layout }).nextId(), 'TIME_EXHAUSTED', ['ran out']);
  });

  test('notBeforeMs: IDs come after a persisted high-water mark', () => {
    withClock(1_800_000_000_000, () => {
      const g = new Snowflake({ workerId: 5, notBeforeMs: 1_800_000_000_900 });
      assert.equal(g.highWaterMark, 1_800_000_000_900, 'highWaterMark before the first ID');
      const d = g.decode(g.nextId());
      assert.ok(d.timestampMs > 1_800_000_000_900, `timestamp ${d.timestampMs} not after the mark`);
      const iso = new Snowflake({ workerId: 5, notBeforeMs: new Date(1_800_000_000_900).toISOString() });
      assert.ok(iso.decode(iso.nextId()).timestampMs > 1_800_000_000_900, 'ISO string accepted');
      // A mark further ahead than maxDriftMs cannot be honoured without waiting: refused.
      const far = new Snowflake({ workerId: 5, notBeforeMs: 1_800_000_010_000 });
      throwsCode(() => far.nextId(), 'CLOCK_MOVED_BACKWARDS');
    });
  });

  test('a frozen Date.now(): the budget is sequence capacity x (maxDriftMs + 1), then ClockStalledError', () => {
    withClock(1_800_000_000_000, (clock) => {
      // js-safe: 512 sequence numbers per 1 ms tick; maxDriftMs 3 allows 4 ticks.
      const g = new Snowflake({ workerId: 2, layout: 'js-safe', maxDriftMs: 3 });
      const ids = g.nextIds(512 * 4);
      assert.equal(ids.length, 2048);
      const e = throwsCode(() => g.nextId(), 'CLOCK_STALLED', ['kept reading 1800000000000', 'max_drift_ms']);
      assert.ok(e instanceof lib.ClockStalledError && e instanceof lib.SegflakeError, e.name);
      // Nothing was issued by the failed call; once the clock moves, IDs go on above the burst.
      clock.advance(4);
      assert.ok(g.nextId() > ids[ids.length - 1]);
    });
  });

  test('sequenceStart: zero starts each tick at 0, random below 100', () => {
    withClock(1_800_000_000_000, (clock) => {
      const zero = new Snowflake({ workerId: 1, sequenceStart: 'zero' });
      const random = new Snowflake({ workerId: 1, sequenceStart: 'random' });
      const starts = [];
      for (let i = 0; i < 200; i++) {
        clock.advance(1);
        assert.equal(zero.decode(zero.nextId()).sequence, 0, 'zero');
        const first = random.decode(random.nextId()).sequence;
        assert.ok(first < 100, `random start ${first}`);
        starts.push(first);
      }
      assert.ok(new Set(starts).size > 20, `random starts are not spread: ${new Set(starts).size} distinct`);
      throwsCode(() => new Snowflake({ workerId: 1, sequenceStart: 'one' }), 'INVALID_ARGUMENT', ['zero, random']);
    });
  });

  test('nextIdNumber: exact numbers on js-safe, refused on wider layouts', () => {
    const g = new Snowflake({ workerId: 7, layout: 'js-safe' });
    let last = -1;
    for (let i = 0; i < 10_000; i++) {
      const n = g.nextIdNumber();
      assert.ok(Number.isSafeInteger(n) && n > last, `${n}`);
      last = n;
    }
    assert.equal(g.decode(last).workerId, 7);
    throwsCode(() => new Snowflake({ workerId: 7 }).nextIdNumber(), 'INVALID_LAYOUT', ['53 bits', '63 bits']);
  });

  test('highWaterMark follows the issued IDs', () => {
    const g = new Snowflake({ workerId: 8 });
    let id;
    for (let i = 0; i < 5000; i++) id = g.nextId();
    assert.equal(g.highWaterMark, g.decode(id).timestampMs);
  });

  // ---------------------------------------------------------------- layouts
  test('layout queries of the presets', () => {
    const t = new Layout();
    assert.equal(t.maxIdsPerSecond, 4_096_000);
    assert.equal(t.lifetimeMs, 2 ** 41);
    assert.equal(t.exhaustsAtMs, TWITTER_EPOCH + 2 ** 41);
    assert.equal(t.jsSafeUntilMs, TWITTER_EPOCH + 2 ** 31, 'IDs pass 2^53 once time passes 2^(53-22) ms');
    assert.equal(t.maxId, 2n ** 63n - 1n);
    assert.equal(t.maxWorkerId, 1023);
    assert.equal(t.maxSequence, 4095);
    const js = new Layout('js-safe');
    assert.equal(js.jsSafeUntilMs, null, 'js-safe never passes 2^53');
    assert.equal(js.maxId, 2n ** 53n - 1n);
    const s = new Layout('sonyflake');
    assert.equal(s.order, 'time-sequence-worker');
    assert.equal(s.tickMs, 10);
    assert.equal(s.epochMs, Date.UTC(2025, 0, 1));
    assert.deepEqual(lib.presets(), ['twitter', 'sonyflake', 'uid-generator', 'js-safe', 'twitter-dc']);
  });

  test('Layout.preset, epochs as ISO strings, Dates and bigints, and Layout objects as options', () => {
    const a = Layout.preset('twitter', '2024-01-01');
    assert.equal(a.epochMs, Date.UTC(2024, 0, 1));
    assert.equal(Layout.preset('twitter', new Date(Date.UTC(2024, 0, 1))).epochMs, a.epochMs);
    assert.equal(Layout.preset('twitter', BigInt(a.epochMs)).epochMs, a.epochMs);
    assert.equal(Layout.preset('sonyflake').epochMs, Date.UTC(2025, 0, 1));
    throwsCode(() => Layout.preset('uid-generator'), 'LAYOUT_EXHAUSTED', ['2024-11-20']);
    throwsCode(() => Layout.preset('uid-generator', '2026-01-01'), 'LAYOUT_EXHAUSTED', ['2034-07-04', '10 years']);
    const uid = new Layout({ preset: 'uid-generator', epochMs: '2026-01-01', minLifetimeYears: 5 });
    assert.equal(uid.timeBits, 28);
    const copy = new Layout(uid);
    assert.deepEqual(copy.toJSON(), uid.toJSON(), 'copy of a Layout');
    const g = new Snowflake({ workerId: 4_000_000, layout: uid });
    assert.equal(g.decode(g.nextId()).workerId, 4_000_000, 'a Layout as the generator layout');
    const e = new Snowflake({ workerId: 1, layout: 'sonyflake', epochMs: '2025-06-01T00:00:00Z' });
    assert.equal(e.layout.epochMs, Date.UTC(2025, 5, 1), 'epochMs beside a preset name overrides its epoch');
    const custom = new Layout({ timeBits: 40, workerBits: 8, sequenceBits: 15, tickMs: 2, epochMs: '2025-01-01' });
    assert.deepEqual(custom.toJSON(), {
      timeBits: 40,
      workerBits: 8,
      sequenceBits: 15,
      tickMs: 2,
      epochMs: Date.UTC(2025, 0, 1),
      order: 'time-worker-sequence',
      minLifetimeYears: 10,
    });
    const freed = new Layout('sonyflake');
    freed.free();
    throwsCode(() => new Snowflake({ workerId: 1, layout: freed }), 'INVALID_ARGUMENT', ['reading it threw'], 'a freed Layout is not read as defaults');
    const throwing = { workerId: 1, get epochMs() { throw new Error('no epoch here'); } };
    throwsCode(() => new Snowflake(throwing), 'INVALID_ARGUMENT', ['epochMs', 'no epoch here']);
    const partial = new Layout({ workerBits: 5, sequenceBits: 17 });
    assert.equal(partial.timeBits, 41, 'missing fields come from twitter');
    assert.equal(partial.epochMs, TWITTER_EPOCH);
    assert.equal(JSON.stringify(partial), JSON.stringify(partial.toJSON()), 'JSON.stringify uses toJSON');
  });

  test('compose: timestampMs or tick, defaults, and range checks', () => {
    const l = new Layout();
    const tick = 123_456_789;
    const expected = (BigInt(tick) << 22n) | (5n << 12n) | 9n;
    assert.equal(l.compose({ tick, workerId: 5, sequence: 9 }), expected);
    assert.equal(l.compose({ tick: BigInt(tick), workerId: 5n, sequence: 9n }), expected, 'bigints');
    assert.equal(l.compose({ timestampMs: TWITTER_EPOCH + tick, workerId: 5, sequence: 9 }), expected);
    assert.equal(l.compose({ timestampMs: new Date(TWITTER_EPOCH + tick), workerId: 5, sequence: 9 }), expected, 'Date');
    assert.equal(l.compose({ tick }), BigInt(tick) << 22n, 'workerId and sequence default to 0');
    const g = new Snowflake({ workerId: 5 });
    assert.equal(g.compose({ tick, sequence: 9 }), expected, 'the generator fills in its worker ID');
    throwsCode(() => l.compose({ tick, timestampMs: 1 }), 'INVALID_ARGUMENT', ['exactly one of tick and timestampMs']);
    throwsCode(() => l.compose({ workerId: 1 }), 'INVALID_ARGUMENT', ['exactly one of tick and timestampMs']);
    throwsCode(() => l.compose({ tick, workerId: 1024 }), 'WORKER_ID_OUT_OF_RANGE', ['0..=1023']);
    throwsCode(() => l.compose({ tick, sequence: 4096 }), 'INVALID_ARGUMENT', ['4096', '0..=4095']);
    throwsCode(() => l.compose({ tick: 2 ** 41 }), 'INVALID_ARGUMENT', ['41 time bits']);
    throwsCode(() => l.compose({ timestampMs: TWITTER_EPOCH - 1 }), 'INVALID_ARGUMENT', ['before the layout epoch']);
    throwsCode(() => l.compose({ tick, worker: 1 }), 'INVALID_ARGUMENT', ['unknown option "worker"']);
    throwsCode(() => l.compose(5), 'INVALID_ARGUMENT');
  });

  test('refused layouts name the problem and what is allowed', () => {
    throwsCode(() => new Layout({ timeBits: 300 }), 'INVALID_LAYOUT', ['timeBits: got 300', '8..=63']);
    throwsCode(() => new Layout({ timeBits: 42 }), 'INVALID_LAYOUT', ['at most 63']);
    throwsCode(() => new Layout({ sequenceBits: 32 }), 'INVALID_LAYOUT', ['0..=31']);
    throwsCode(() => new Layout({ tickMs: 0 }), 'INVALID_LAYOUT', ['tickMs: got 0']);
    throwsCode(() => new Layout({ epochMs: Date.now() + 60_000 }), 'INVALID_LAYOUT', ['in the future']);
    throwsCode(() => new Layout({ order: 'worker-first' }), 'INVALID_LAYOUT', ['order: got "worker-first"', 'time-worker-sequence']);
    throwsCode(() => new Layout('snowflake'), 'INVALID_ARGUMENT', ['not a preset', 'twitter, sonyflake, uid-generator, js-safe']);
    throwsCode(() => new Layout({ preset: 'x' }), 'INVALID_LAYOUT', ['preset: got "x"', 'twitter, sonyflake, uid-generator, js-safe']);
    throwsCode(() => new Layout({ timebits: 40 }), 'INVALID_ARGUMENT', ['unknown option "timebits"', 'timeBits']);
    throwsCode(() => new Layout(42), 'INVALID_ARGUMENT', ['got 42', 'preset name']);
    throwsCode(() => new Layout({ epochMs: 'yesterday' }), 'INVALID_LAYOUT', ['epochMs: got "yesterday"', 'ISO-8601']);
    throwsCode(() => new Layout({ epochMs: new Date(NaN) }), 'INVALID_LAYOUT', ['epochMs: got an invalid Date']);
    throwsCode(() => new Layout({ minLifetimeYears: 20_000 }), 'INVALID_LAYOUT', ['minLifetimeYears: got 20000', '0..=10000']);
    throwsCode(() => Layout.preset('twitter', true), 'INVALID_LAYOUT', ['epochMs: got the boolean true']);
    throwsCode(() => new Layout({ timeBits: 20 }), 'LAYOUT_EXHAUSTED', ['at least 10 years']);
  });

  // ---------------------------------------------------------------- integer inputs
  test('worker IDs: negative, fractional, unsafe or non-integer values are refused, never wrapped', () => {
    const bad = [
      [-1, 'got -1;'],
      [-2n, 'got -2;'],
      [2n ** 64n, 'got 18446744073709551616; allowed integers 0..=18446744073709551615'],
      [2n ** 64n - 1n, 'out of range'],
      [1.5, 'got the number 1.5, not an integer'],
      [NaN, 'got NaN, not an integer'],
      [Infinity, 'got Infinity, not an integer'],
      [2 ** 53, 'above 2^53'],
      ['3', 'the string "3"'],
      [true, 'got the boolean true'],
      [{}, 'got an object'],
    ];
    for (const [workerId, text] of bad) {
      const code = typeof workerId === 'bigint' && workerId === 2n ** 64n - 1n ? 'WORKER_ID_OUT_OF_RANGE' : 'INVALID_ARGUMENT';
      throwsCode(() => new Snowflake({ workerId }), code, [text], `workerId ${String(workerId)}`);
    }
    throwsCode(() => new Snowflake({ workerId: 1024 }), 'WORKER_ID_OUT_OF_RANGE', ['worker id 1024', '0..=1023']);
    throwsCode(() => new Snowflake({}), 'INVALID_ARGUMENT', ['invalid workerId: is required']);
    throwsCode(() => new Snowflake({ workerId: null }), 'INVALID_ARGUMENT', ['required']);
    throwsCode(() => new Snowflake(), 'INVALID_ARGUMENT', ['invalid workerId: is required']);
    throwsCode(() => new Snowflake(7), 'INVALID_ARGUMENT', ['got 7']);
    throwsCode(() => new Snowflake({ workerId: 1, workerID: 2 }), 'INVALID_ARGUMENT', ['unknown option "workerID"']);
    throwsCode(() => new Snowflake({ workerId: 1, maxDriftMs: -5 }), 'INVALID_ARGUMENT', ['invalid maxDriftMs: got -5']);
    throwsCode(() => new Snowflake({ workerId: 1, maxDriftMs: 3_600_001 }), 'INVALID_ARGUMENT', ['0..=3600000']);
    assert.equal(new Snowflake({ workerId: 1023n }).workerId, 1023, 'a bigint worker ID');
    assert.equal(new Snowflake({ workerId: -0 }).workerId, 0, '-0 is 0');
  });

  test('batch sizes are checked', () => {
    const g = new Snowflake({ workerId: 1 });
    throwsCode(() => g.nextIds(0), 'INVALID_ARGUMENT', ['invalid batch size: got 0', `1..=${lib.MAX_BATCH}`]);
    throwsCode(() => g.nextIds(lib.MAX_BATCH + 1), 'INVALID_ARGUMENT', [`got ${lib.MAX_BATCH + 1};`]);
    throwsCode(() => g.nextIds(2 ** 40), 'INVALID_ARGUMENT', [`got ${2 ** 40};`]);
    throwsCode(() => g.nextIds(-3), 'INVALID_ARGUMENT', ['got -3;']);
    throwsCode(() => g.nextIds(2.5), 'INVALID_ARGUMENT', ['not an integer']);
    throwsCode(() => g.nextIds('10'), 'INVALID_ARGUMENT', ['the string "10"']);
    throwsCode(() => g.fillIds(new BigUint64Array(0)), 'INVALID_ARGUMENT', ['invalid batch size: got 0;']);
    throwsCode(() => g.fillIds([1n, 2n]), 'INVALID_ARGUMENT');
    assert.equal(lib.MAX_BATCH, 2 ** 24);
    assert.equal(g.nextIds(1n).length, 1, 'a bigint batch size');
  });

  test('IDs are accepted as bigint, safe number or decimal string, and refused otherwise', () => {
    const l = new Layout();
    const id = 1050118621198921728n;
    const want = l.decode(id);
    assert.deepEqual(l.decode('1050118621198921728'), want, 'decimal string');
    assert.deepEqual(l.decode(4198401), l.decode(4198401n), 'number');
    throwsCode(() => l.decode(Number(id)), 'INVALID_ARGUMENT', ['above 2^53', 'bigint']);
    throwsCode(() => l.decode(-1n), 'INVALID_ARGUMENT', ['invalid id: got -1;']);
    throwsCode(() => l.decode(-1), 'INVALID_ARGUMENT', ['invalid id: got -1;']);
    throwsCode(() => l.decode(2n ** 64n), 'INVALID_ARGUMENT', ['got 18446744073709551616;', '0..=18446744073709551615']);
    throwsCode(() => l.decode('12x'), 'PARSE_ERROR', ['position 2']);
    throwsCode(() => l.decode('-5'), 'PARSE_ERROR');
    throwsCode(() => l.decode(2n ** 63n), 'INVALID_ARGUMENT', ['not made by this layout']);
    throwsCode(() => lib.encode(-1n), 'INVALID_ARGUMENT', ['got -1;']);
    throwsCode(() => lib.encodeBase62(2n ** 64n), 'INVALID_ARGUMENT', ['got 18446744073709551616;', '0..=18446744073709551615']);
    throwsCode(() => lib.encode(1n, 'base64'), 'INVALID_ARGUMENT', ['decimal, base62, base32']);
    throwsCode(() => lib.parse(12345), 'INVALID_ARGUMENT', ['got 12345', 'string']);
    throwsCode(() => lib.parseBase32(null), 'INVALID_ARGUMENT', ['got null']);
    assert.equal(lib.encodeDecimal(2n ** 64n - 1n), '18446744073709551615');
  });

  // ---------------------------------------------------------------- codecs and obfuscator
  test('codecs agree with an independent BigInt implementation and sort like numbers', () => {
    const next = rng(0x5eed5eedn);
    const ids = [0n, 1n, 2n ** 63n - 1n, 2n ** 64n - 1n];
    for (let i = 0; i < 2000; i++) ids.push(next() >> BigInt(i % 64));
    for (const id of ids) {
      assert.equal(lib.encodeBase62(id), refEncode(id, B62, 11), `base62 ${id}`);
      assert.equal(lib.encodeBase32(id), refEncode(id, B32, 13), `base32 ${id}`);
      assert.equal(lib.encodeDecimal(id), id.toString(), `decimal ${id}`);
      assert.equal(lib.parseBase62(lib.encodeBase62(id)), id);
      assert.equal(lib.parseBase32(lib.encodeBase32(id).toLowerCase()), id, 'base32 is case-insensitive');
    }
    const sorted = [...new Set(ids)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    for (const format of ['base62', 'base32']) {
      const texts = sorted.map((id) => lib.encode(id, format));
      for (let i = 1; i < texts.length; i++) assert.ok(texts[i - 1] < texts[i], `${format} order at ${i}`);
    }
    assert.equal(lib.BASE62_LENGTH, 11);
    assert.equal(lib.BASE32_LENGTH, 13);
  });

  test('the obfuscator is a keyed bijection below 2^63', () => {
    const key = '736567666c616b652d746573742d6b21';
    const o = new Obfuscator(key);
    const other = new Obfuscator('00'.repeat(16));
    const out = new Set();
    let differs = 0;
    for (let i = 0n; i < 5000n; i++) {
      const x = o.obfuscate(i);
      assert.ok(x >= 0n && x < 2n ** 63n, `${x} out of range`);
      assert.equal(o.deobfuscate(x), i);
      out.add(x);
      if (other.obfuscate(i) !== x) differs++;
    }
    assert.equal(out.size, 5000, 'distinct outputs');
    assert.ok(differs > 4990, 'another key gives another mapping');
    assert.equal(o.obfuscate(10), o.obfuscate(10n), 'numbers and bigints agree');
    assert.equal(o.obfuscate('10'), o.obfuscate(10n), 'decimal strings too');
    throwsCode(() => new Obfuscator(new Uint8Array(15)), 'INVALID_ARGUMENT', ['15 bytes', 'exactly 16 bytes']);
    throwsCode(() => new Obfuscator(new Uint8Array(17)), 'INVALID_ARGUMENT', ['17 bytes']);
    throwsCode(() => new Obfuscator('abc'), 'INVALID_ARGUMENT', ['32 hex digits']);
    throwsCode(() => new Obfuscator('zz'.repeat(16)), 'INVALID_ARGUMENT', ['not a hex digit']);
    throwsCode(() => new Obfuscator(12), 'INVALID_ARGUMENT', ['got 12']);
    throwsCode(() => new Obfuscator(), 'INVALID_ARGUMENT', ['got undefined']);
    throwsCode(() => o.obfuscate(2n ** 63n), 'INVALID_ARGUMENT', ['not below 2^63']);
    throwsCode(() => o.deobfuscate(-1n), 'INVALID_ARGUMENT', ['invalid id: got -1;']);
  });

  // ---------------------------------------------------------------- errors and helpers
  test('one error class per core error kind, all SegflakeErrors with the core codes', () => {
    const kinds = lib.errorKinds();
    assert.equal(kinds.length, 22);
    kinds.forEach((k, i) => {
      assert.equal(k.status, i + 1, `${k.code} status`);
      const cls = lib[k.className];
      assert.ok(typeof cls === 'function', `${k.className} is exported`);
      const e = new cls('boom');
      assert.ok(e instanceof lib.SegflakeError && e instanceof Error, `${k.className} extends SegflakeError`);
      assert.equal(e.code, k.code);
      assert.equal(e.name, k.className);
      assert.equal(e.message, 'boom');
      assert.equal(cls.code, k.code, 'static code');
    });
    assert.deepEqual(
      kinds.map((k) => k.code),
      [
        'INVALID_LAYOUT', 'LAYOUT_EXHAUSTED', 'WORKER_ID_OUT_OF_RANGE', 'CLOCK_MOVED_BACKWARDS',
        'CLOCK_BEFORE_EPOCH', 'TIME_EXHAUSTED', 'INVALID_ARGUMENT', 'PARSE_ERROR',
        'STORE_CONTRACT_VIOLATION', 'SEGMENTS_EXHAUSTED', 'STORE_ERROR', 'SERIAL_EXHAUSTED', 'CLOSED',
        'NO_FREE_WORKER_ID', 'LEASE_EXPIRED', 'CLOCK_BEHIND_MARK', 'CLOCK_SKEW', 'REGISTRY_ERROR',
        'UNKNOWN_TAG', 'REGISTRY_LOST_DATA', 'LEAF_NODE_ALIVE', 'CLOCK_STALLED',
      ],
    );
  });

  test('no input makes the module trap: every failure is a SegflakeError', () => {
    const weird = [undefined, null, true, -0, -1, 0.5, NaN, 1e308, -1e308, 2 ** 53, -(2n ** 70n), 2n ** 70n,
      '', 'x', '99999999999999999999999', '\u0000', {}, [], [1], () => 1, Symbol('s'), new Date(NaN),
      new Uint8Array(3), Object.create(null)];
    const g = new Snowflake({ workerId: 1 });
    const l = new Layout();
    const o = new Obfuscator('00'.repeat(16));
    // The snowflake entry (segflake-wasm/snowflake) has no serials and segments.
    const full = typeof lib.SegmentGenerator === 'function';
    const serial = full ? new lib.SerialGenerator({ workerDigits: 2, workerId: 5 }) : null;
    const segments = full ? new lib.SegmentGenerator({ store: async () => ({ maxId: 10, step: 10 }) }) : null;
    const calls = [
      (v) => new Snowflake(v), (v) => new Snowflake({ workerId: v }), (v) => new Snowflake({ workerId: 1, layout: v }),
      (v) => new Snowflake({ workerId: 1, epochMs: v }), (v) => new Snowflake({ workerId: 1, notBeforeMs: v }),
      (v) => new Snowflake({ workerId: 1, maxDriftMs: v }), (v) => new Snowflake({ workerId: 1, sequenceStart: v }),
      (v) => new Layout(v), (v) => new Layout({ timeBits: v }), (v) => new Layout({ tickMs: v }),
      (v) => new Layout({ epochMs: v }), (v) => new Layout({ order: v }), (v) => Layout.preset(v), (v) => Layout.preset('twitter', v),
      (v) => g.nextIds(v), (v) => g.fillIds(v), (v) => g.decode(v), (v) => g.compose(v), (v) => g.compose({ tick: v }),
      (v) => l.decode(v), (v) => l.compose({ timestampMs: v }), (v) => l.compose({ tick: 1, sequence: v }),
      (v) => lib.encode(v), (v) => lib.encode(1n, v), (v) => lib.parse(v), (v) => lib.parse('1', v),
      (v) => lib.parseBase62(v), (v) => lib.parseBase32(v), (v) => lib.parseDecimal(v), (v) => lib.encodeBase32(v),
      (v) => new Obfuscator(v), (v) => o.obfuscate(v), (v) => o.deobfuscate(v),
      (v) => lib.workerIdFromHostname(v), (v) => lib.workerIdFromIpv4(v, 10), (v) => lib.workerIdFromIpv4('10.0.0.1', v),
      (v) => lib.parseTimeMs(v), (v) => lib.formatTimeMs(v),
    ];
    if (full) calls.push(
      (v) => new lib.SerialGenerator(v), (v) => new lib.SerialGenerator({ workerDigits: v }),
      (v) => new lib.SerialGenerator({ utcOffsetMinutes: v }), (v) => new lib.SerialGenerator({ last: v }),
      (v) => serial.format(v, 1), (v) => serial.format(1_744_545_600, v), (v) => serial.datePrefix(v), (v) => serial.decode(v),
      (v) => new lib.SegmentGenerator({ store: async () => ({ maxId: 10, step: 10 }), step: v }),
      (v) => new lib.SegmentGenerator({ store: async () => ({ maxId: 10, step: 10 }), maxStep: v }),
      (v) => new lib.SegmentGenerator({ store: v }), (v) => segments.tag(v), (v) => segments.nextIdSync(v),
    );
    for (const big of full ? [2 ** 53 - 1, 2n ** 64n - 1n, 10n ** 18n] : []) {
      for (const call of [(x) => serial.format(x, 1), (x) => serial.datePrefix(x), (x) => serial.decode(x), (x) => serial.format(1_744_545_600, x)]) {
        try {
          call(big);
        } catch (e) {
          if (!(e instanceof lib.SegflakeError)) throw new assert.AssertionError(`${call} with ${big} threw ${e && e.name}: ${e && e.message}`);
        }
      }
    }
    let failures = 0;
    for (const call of calls) {
      for (const v of weird) {
        try {
          call(v);
        } catch (e) {
          failures++;
          if (!(e instanceof lib.SegflakeError)) {
            throw new assert.AssertionError(`${call} with ${String(typeof v === 'symbol' ? 'a symbol' : v)} threw ${e && e.name}: ${e && e.message}`);
          }
        }
      }
    }
    assert.ok(failures > calls.length * 10, `only ${failures} refusals`);
    // The module is still usable afterwards.
    assert.ok(g.nextId() > 0n);
    segments?.close();
  });

  test('worker-ID and time helpers', () => {
    assert.equal(lib.workerIdFromHostname('web-7'), 7);
    assert.equal(lib.workerIdFromHostname('web-12.web.default.svc.cluster.local'), 12);
    assert.equal(lib.workerIdFromIpv4('10.0.3.7', 10), (3 << 8 | 7) & 1023);
    throwsCode(() => lib.workerIdFromHostname('web'), 'INVALID_ARGUMENT', ['"web"']);
    throwsCode(() => lib.workerIdFromIpv4('10.0.3', 10), 'INVALID_ARGUMENT', ['IPv4']);
    throwsCode(() => lib.workerIdFromIpv4('10.0.3.7', 33), 'INVALID_ARGUMENT', ['0..=32']);
    assert.equal(lib.parseTimeMs('2025-01-01'), Date.UTC(2025, 0, 1));
    assert.equal(lib.parseTimeMs('2025-01-01T12:34:56.789Z'), Date.UTC(2025, 0, 1, 12, 34, 56, 789));
    assert.equal(lib.parseTimeMs('1700000000000'), 1_700_000_000_000);
    throwsCode(() => lib.parseTimeMs('01/02/2025'), 'INVALID_ARGUMENT', ['ISO-8601']);
    for (const ms of [0, 1_288_834_974_657, 1_735_689_600_000, 4_102_444_800_123]) {
      assert.equal(lib.formatTimeMs(ms), new Date(ms).toISOString(), `formatTimeMs(${ms})`);
    }
    assert.equal(lib.formatTimeMs(1_735_689_600_000n), '2025-01-01T00:00:00.000Z');
    assert.ok(/^\d+\.\d+\.\d+/.test(lib.coreVersion()), lib.coreVersion());
  });

  /** The registry contract over a Map (expiry on this clock); renew answers -1 once the record is gone. */
  function memoryRegistry() {
    const rows = new Map();
    const row = (w) => rows.get(w) ?? rows.set(w, { owner: null, expires: 0, markMs: 0 }).get(w);
    return {
      rows,
      async claim({ workerId, owner, ttlMs }) {
        const r = row(workerId);
        if (r.owner !== null && r.owner !== owner && r.expires > Date.now()) return null;
        Object.assign(r, { owner, expires: Date.now() + ttlMs });
        return r.markMs;
      },
      async renew({ workerId, owner, ttlMs, markMs }) {
        const r = row(workerId);
        if (r.owner === null) return -1;
        if (r.owner !== owner || r.expires <= Date.now()) return null;
        Object.assign(r, { expires: Date.now() + ttlMs, markMs: Math.max(r.markMs, markMs) });
        return r.markMs;
      },
      release({ workerId, owner, markMs }) {
        const r = row(workerId);
        if (r.owner !== owner) return false;
        Object.assign(r, { owner: null, expires: 0, markMs });
        return true;
      },
      peers: () => [],
    };
  }
  // A worker ID claimed without a mark starts about markAheadMs + clockSkewAllowanceMs
  // after the claim (4 s by default): kept short here.
  const FAST = { markAheadMs: 100, clockSkewAllowanceMs: 0 };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  test('leases: fromRegistry leases distinct worker IDs from a callback registry and releases them', async () => {
    const registry = memoryRegistry();
    const { rows } = registry;
    const layout = { preset: 'twitter', workerBits: 1 };
    const a = await Snowflake.fromRegistry(registry, { layout, ...FAST });
    const b = await Snowflake.fromRegistry(registry, { layout, ...FAST });
    assert.ok(a.workerId !== b.workerId, 'distinct worker IDs');
    const ids = new Set([...a.nextIds(1000), ...b.nextIds(1000)]);
    assert.equal(ids.size, 2000);
    assert.equal(a.leaseStats().state, 'held');
    // One label ('wasm'), each engine's own nonce: distinct owner tokens.
    const token = /^wasm#[0-9a-f]{16}$/;
    assert.ok(token.test(a.leaseStats().owner) && token.test(b.leaseStats().owner), a.leaseStats().owner);
    assert.ok(a.leaseStats().owner !== b.leaseStats().owner, 'distinct owner tokens');
    const e = await assert.caughtAsync(() => Snowflake.fromRegistry(registry, { layout, ...FAST, claimWaitMs: 100 }));
    assert.ok(e instanceof lib.NoFreeWorkerIdError && e.code === 'NO_FREE_WORKER_ID', `${e && e.name}: ${e && e.message}`);
    const held = a.workerId;
    await a.close();
    assert.equal(rows.get(held).owner, null, 'released');
    const again = await Snowflake.fromRegistry(registry, { layout, preferredWorkerId: held });
    assert.equal(again.workerId, held);
    await again.close();
    await b.close();
  });

  test('leases: a renewal that finds no record stops IDs with RegistryLostDataError, then the generator claims again above its IDs', async () => {
    const registry = memoryRegistry();
    const layout = { preset: 'twitter', workerBits: 1 };
    const g = await Snowflake.fromRegistry(registry, { layout, ...FAST, maxDriftMs: 100, leaseTtlMs: 3000 });
    const before = g.nextIds(100);
    registry.rows.clear(); // the registry forgot every lease and mark
    const lostAt = Date.now();
    let error = null;
    for (let i = 0; i < 300 && error === null; i++) {
      try {
        g.nextIds(10);
        await sleep(5);
      } catch (e) {
        error = e;
      }
    }
    assert.ok(error instanceof lib.RegistryLostDataError && error.code === 'REGISTRY_LOST_DATA', `${error && error.name}: ${error && error.message}`);
    assert.ok(Date.now() - lostAt < 1500, 'stopped at the next renewal, not at the end of the lease');
    let first = null;
    for (let i = 0; i < 200 && first === null; i++) {
      try {
        first = g.nextId();
      } catch {
        await sleep(25);
      }
    }
    assert.ok(first !== null, 'IDs resumed');
    assert.ok(first > before[before.length - 1], 'above the IDs issued before the loss');
    assert.ok(g.leaseStats().lost >= 1);
    await g.close();
  });

  test('free() releases a generator; using it afterwards throws instead of trapping', () => {
    const g = new Snowflake({ workerId: 1 });
    g.nextId();
    g.free();
    const e = assert.caught(() => g.nextId());
    assert.ok(e instanceof Error && !(e instanceof WebAssembly.RuntimeError), `${e && e.name}: ${e && e.message}`);
  });

  test('HttpStore: bad arguments are typed errors; an unreachable segflake serve is a StoreError, then the cause of SegmentsExhausted', async () => {
    for (const [url, options] of [
      ['ftp://ids:8080', {}],
      ['ids.internal:8080', {}],
      ['http://ids:8080', { token: 'two words' }],
      ['http://ids:8080', { timeoutMs: 0 }],
    ]) {
      assert.throwsCode(lib, () => new lib.HttpStore(url, options), 'INVALID_ARGUMENT', [], url);
    }
    // Port 9 on the loopback: nothing listens, the connection is refused at once.
    const store = new lib.HttpStore('http://127.0.0.1:9/', { timeoutMs: 2000 });
    assert.equal(store.baseUrl, 'http://127.0.0.1:9');
    const e = await assert.caughtAsync(() => store.allocate('order', 10));
    // A tag's first allocation asks for the row's own step (no ?step), as the database stores do.
    assert.isSegflakeError(lib, e, 'STORE_ERROR', ['POST http://127.0.0.1:9/api/segment/alloc/order failed']);
    const gen = new lib.SegmentGenerator({ store, waitTimeoutMs: 3000 });
    const exhausted = await assert.caughtAsync(() => gen.nextId('order'));
    assert.isSegflakeError(lib, exhausted, 'SEGMENTS_EXHAUSTED', ['alloc/order']);
    await gen.close();
  });

  test('HttpStore: ca, cert and key are for https:// only, cert with key, PEM text; through node:https where the runtime has it, refused elsewhere', async () => {
    // A CA certificate (PEM): what tls.connect's `ca` takes.
    const pem = [
    '-----BEGIN CERTIFICATE-----',
    'MIIBmDCCAT+gAwIBAgIUD801knG2OM4aGYJD19wxyaHr/U8wCgYIKoZIzj0EAwIw',
    'ITEfMB0GA1UEAwwWc2VnZmxha2UtdGVzdC1maXhlZC1jYTAgFw0yNjExMjgwNDIy',
    'NTlaGA8yMTI2MTEwNDA0MjI1OVowITEfMB0GA1UEAwwWc2VnZmxha2UtdGVzdC1m',
    'aXhlZC1jYTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABBlWQ1WhU+yLgVlKTLFQ',
    '0FQ5i2EPNli/Yf0IyBSq6rsMgaTJC60uf70pGcrb7r24/jy0sapk7EslmvemcyKe',
    'C0ijUzBRMB0GA1UdDgQWBBQxriQ2cMSQKPnGRtlaBsFOKb/a+zAfBgNVHSMEGDAW',
    'gBQxriQ2cMSQKPnGRtlaBsFOKb/a+zAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49',
    'BAMCA0cAMEQCIGax9IVi+vUB4RGCZAFMtVxHJSKvWQlUv3tVwOZTHjkzAiAWg5Oq',
    '4HFwYnPP7zuat1VB8Z6o/6NtcuPR2gAFuqzDWg==',
    '-----END CERTIFICATE-----',
  ].join('\n');
    for (const [url, options, words] of [
      ['http://ids:8080', { ca: pem }, ['ca is for TLS', 'http://ids:8080', 'use https://']],
      ['http://ids:8080', { cert: pem, key: pem }, ['cert and key are for TLS']],
      ['https://ids:8443', { cert: pem }, ['cert without key']],
      ['https://ids:8443', { ca: pem, key: pem }, ['key without cert']],
      ['https://ids:8443', { ca: '/etc/ssl/ids-ca.pem' }, ['not PEM', 'not its path']],
      ['https://ids:8443', { ca: 42 }, ['expected PEM text or bytes']],
      ['https://ids:8443', { ca: pem, fetch: async () => null }, ['options.fetch cannot be combined with ca']],
    ]) {
      throwsCode(() => new lib.HttpStore(url, options), 'INVALID_ARGUMENT', words, JSON.stringify(Object.keys(options)));
    }
    // Node and Bun load the package's Node entry (node:https); a browser and workerd do not.
    const ua = globalThis.navigator?.userAgent ?? '';
    const node = typeof globalThis.process?.versions?.node === 'string' && !ua.startsWith('Cloudflare');
    const browser = typeof globalThis.window !== 'undefined' && typeof globalThis.process === 'undefined';
    let store = null;
    try {
      store = new lib.HttpStore('https://ids:8443', { ca: pem });
    } catch (e) {
      assert.isSegflakeError(lib, e, 'INVALID_ARGUMENT', ['needs node:https', "runtime's own trust store"]);
    }
    if (store !== null) {
      assert.equal(store.baseUrl, 'https://ids:8443');
      await store.close();
      // PEM that does not load: refused at construction, not at the first allocation (Deno's
      // node:tls defers reading it to the connection).
      if (!globalThis.Deno) throwsCode(() => new lib.HttpStore('https://ids:8443', { cert: pem, key: pem }), 'INVALID_ARGUMENT', ['cert and key do not load']);
    }
    if (node && !globalThis.Deno) assert.ok(store !== null, 'Node and Bun take ca through node:https');
    if (browser) assert.ok(store === null, 'a browser refuses ca: its own trust store applies');
  });

  // The snowflake entry (segflake-wasm/snowflake, no SegmentGenerator) runs every case
  // but those of segments, serials, worker-ID leases and the registry protocols, which it
  // does not export.
  if (typeof lib.SegmentGenerator === 'function') return cases;
  return cases.filter((c) => !FULL_BUILD_ONLY.some((prefix) => c.name.startsWith(prefix)));
}

/** The cases (by name prefix) of what only the full build exports. */
export const FULL_BUILD_ONLY = [
  'vectors: segments.json', 'vectors: serials.json', 'vectors: options.json', 'vectors: zookeeper.json',
  'vectors: etcd.json', 'vectors: redis.json', 'vectors: sql.json', 'registry protocols:', 'segments:',
  'serials:', 'leases:', 'HttpStore',
];
