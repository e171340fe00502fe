// The snowflake entry (segflake-wasm/snowflake, its own smaller .wasm) in Node, against the
// package installed from the packed tarball: the shared cases for everything it exports,
// the same exports, errors and bits as the full package, and the size budgets of both
// builds as a browser bundle downloads them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import * as full from 'segflake-wasm';
import * as lib from 'segflake-wasm/snowflake';
import { defineCases, FULL_BUILD_ONLY } from './cases.js';
import { loadVectors } from './vectors.mjs';
import { caught } from './assert.js';

const cases = defineCases(lib, loadVectors());
for (const c of cases) test(`snowflake entry: ${c.name}`, c.fn);

test('snowflake entry: runs every shared case but those of segments, serials, leases and registries', () => {
  const all = defineCases(full, loadVectors()).map((c) => c.name);
  const left = all.filter((n) => !cases.some((c) => c.name === n));
  assert.ok(cases.length >= 30, `only ${cases.length} cases`);
  for (const n of left) assert.ok(FULL_BUILD_ONLY.some((p) => n.startsWith(p)), `${n} does not run against the snowflake entry`);
});

/** What only the full package exports. */
const FULL_ONLY = ['SegmentGenerator', 'SegmentTag', 'SerialGenerator', 'HttpStore', 'MultiStore', '__native'];

test('snowflake entry: the full package\'s exports but segments, serials and leases, from its own module', () => {
  assert.deepEqual(Object.keys(lib).sort(), Object.keys(full).filter((k) => !FULL_ONLY.includes(k)).sort());
  assert.equal(lib.Snowflake.fromRegistry, undefined);
  assert.notEqual(lib.Snowflake, full.Snowflake);
  assert.equal(lib.coreVersion(), full.coreVersion());
  assert.deepEqual(lib.errorKinds(), full.errorKinds());
  assert.deepEqual([lib.MAX_BATCH, lib.BASE62_LENGTH, lib.BASE32_LENGTH], [full.MAX_BATCH, full.BASE62_LENGTH, full.BASE32_LENGTH]);
  assert.ok(lib.isInitialized());
});

test('snowflake entry: the same bits, texts and error messages as the full package', () => {
  for (const layout of [...full.presets().filter((p) => p !== 'uid-generator'), { timeBits: 40, workerBits: 8, sequenceBits: 10, tickMs: 2, epochMs: '2024-01-01T00:00:00Z' }]) {
    const a = new lib.Snowflake({ workerId: 3, layout });
    const b = new full.Snowflake({ workerId: 3, layout });
    assert.deepEqual(a.layout.toJSON(), b.layout.toJSON());
    for (const fields of [{ tick: 5, sequence: 7 }, { timestampMs: Date.parse('2026-01-02T03:04:05Z') }]) {
      const id = a.compose(fields);
      assert.equal(id, b.compose(fields));
      assert.deepEqual(a.decode(id), b.decode(id));
      for (const f of ['decimal', 'base62', 'base32']) assert.equal(lib.encode(id, f), full.encode(id, f));
    }
  }
  const key = '0123456789abcdef'.repeat(2);
  assert.equal(new lib.Obfuscator(key).obfuscate(123456789n), new full.Obfuscator(key).obfuscate(123456789n));
  const refusals = [
    (m) => new m.Snowflake({ workerId: 1024 }),
    (m) => new m.Layout({ timeBits: 50, workerBits: 10, sequenceBits: 12 }),
    (m) => m.parseBase62('!'),
    (m) => new m.Snowflake({ workerId: 0, layout: 'uid-generator' }),
    (m) => new m.Snowflake({ workerId: 0, bogus: 1 }),
  ];
  for (const refuse of refusals) {
    const a = caught(() => refuse(lib));
    const b = caught(() => refuse(full));
    assert.equal(a.constructor.name, b.constructor.name, String(refuse));
    assert.equal(a.code, b.code);
    assert.equal(a.message, b.message);
    assert.ok(a instanceof full.SegflakeError && a instanceof b.constructor, 'both entries throw the same classes (errors.js)');
  }
});

// ---------------------------------------------------------------- size
// What a page downloads for `new Snowflake({ workerId: 1 }).nextId()`: the esbuild browser
// bundle (--bundle --minify) and the .wasm it fetches, gzipped (-9). The ceilings hold
// today's sizes: a change that makes either larger fails here.
// Measured 2026-11-29 (zlib level 9): snowflake entry 5,418 B JS + 53,907 B wasm = 59,325 B;
// full .wasm 136,605 B (the core and the binding at opt-level "z" with the per-ID paths in
// segflake-wasm-hot at 3, wasm-opt inlining only small functions into their one caller, no
// float parsing or formatting from core, no option descriptions, no test hooks, no
// standard-library sorts, no `{:?}` quoting or panicking string slicing); the ceilings are
// those plus about 2%. (Issue 41's 150 KB goal for the full .wasm is reached; its 30 KB
// goal for the snowflake entry is not.)
const SNOWFLAKE_BUNDLE_CEILING = 60_500;
const FULL_WASM_CEILING = 139_500;

const require = createRequire(import.meta.url);
const pkgDir = path.dirname(require.resolve('segflake-wasm/package.json'));
const gz = (bytes) => zlib.gzipSync(bytes, { level: 9 }).length;
// Brotli at quality 11, as CDNs serve static assets: printed beside gzip, not held to a ceiling.
const br = (bytes) => zlib.brotliCompressSync(bytes, {
  params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: bytes.length },
}).length;

function browserBundle(entry) {
  const dir = fs.mkdtempSync(path.join(path.dirname(pkgDir), '..', '.size-'));
  try {
    fs.writeFileSync(path.join(dir, 'app.mjs'), `import { Snowflake } from '${entry}';\nnew Snowflake({ workerId: 1 }).nextId();\n`);
    execFileSync(process.env.SEGFLAKE_ESBUILD, ['app.mjs', '--bundle', '--minify', '--format=esm', '--platform=browser', '--log-level=error', '--outfile=out.js'], { cwd: dir });
    return fs.readFileSync(path.join(dir, 'out.js'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('size: the snowflake entry in a browser bundle, JS and .wasm gzipped, stays under its ceiling', (t) => {
  assert.ok(process.env.SEGFLAKE_ESBUILD, 'SEGFLAKE_ESBUILD names esbuild (scripts/test-wasm.sh sets it)');
  const js = browserBundle('segflake-wasm/snowflake');
  const text = js.toString('utf8');
  assert.ok(text.includes('segflake_snowflake_bg.wasm'), 'the bundle fetches the snowflake module');
  assert.ok(!text.includes('segflake_wasm_bg.wasm') && !text.includes('SegmentEngine'), 'nothing of the full build is bundled');
  const wasm = fs.readFileSync(path.join(pkgDir, 'pkg/segflake_snowflake_bg.wasm'));
  const total = gz(js) + gz(wasm);
  t.diagnostic(`snowflake entry: JS ${js.length} B (${gz(js)} gz, ${br(js)} br), wasm ${wasm.length} B (${gz(wasm)} gz, ${br(wasm)} br), ${total} B gzipped, ${br(js) + br(wasm)} B brotli`);
  assert.ok(total <= SNOWFLAKE_BUNDLE_CEILING, `${total} B gzipped, over the ceiling of ${SNOWFLAKE_BUNDLE_CEILING} B`);
});

test('size: the full .wasm gzipped stays under its ceiling, with no test hooks in it', (t) => {
  const glue = fs.readFileSync(path.join(pkgDir, 'pkg/segflake_wasm.js'), 'utf8');
  for (const hook of ['__options', '__tables']) {
    assert.ok(!new RegExp(`export function ${hook}\\b`).test(glue), `the published module exports ${hook}`);
    assert.ok(!(hook in full.__native), `__native has ${hook}`);
  }
  assert.equal(typeof full.__native.__statements, 'function', 'the adapters\' statements are in __native');
  const wasm = fs.readFileSync(path.join(pkgDir, 'pkg/segflake_wasm_bg.wasm'));
  t.diagnostic(`full module: ${wasm.length} B (${gz(wasm)} gz, ${br(wasm)} br)`);
  assert.ok(gz(wasm) <= FULL_WASM_CEILING, `${gz(wasm)} B gzipped, over the ceiling of ${FULL_WASM_CEILING} B`);
});
