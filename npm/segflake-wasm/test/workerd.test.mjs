// segflake-wasm in Cloudflare's runtime, as a Worker's author uses it: workerd-worker.js
// imports the package by name, esbuild bundles it the way wrangler does (the `workerd`,
// `worker` and `browser` conditions, the .wasm kept as a module file), and workerd (the
// `workerd` npm package, through miniflare, with the CompiledWasm rule wrangler applies)
// runs the bundle. Requests get IDs, and the shared cases and vectors run inside workerd.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as lib from 'segflake-wasm';
import * as snowflakeLib from 'segflake-wasm/snowflake';
import { defineCases } from './cases.js';
import { loadVectors } from './vectors.mjs';
import { bundleWorker, workerOptions } from './workerd.js';

const here = path.dirname(fileURLToPath(import.meta.url));
// miniflare and workerd are test tools: resolved from $SEGFLAKE_TOOLS_DIR (npm/segflake-wasm/test).
const tools = createRequire(path.join(process.env.SEGFLAKE_TOOLS_DIR || here, 'noop.js'));

let out;
let mf;

before(async () => {
  const esbuild = process.env.SEGFLAKE_ESBUILD;
  assert.ok(esbuild && fs.existsSync(esbuild), `SEGFLAKE_ESBUILD must point at esbuild (got ${esbuild})`);
  out = fs.mkdtempSync(path.join(os.tmpdir(), 'segflake-workerd-'));
  bundleWorker(esbuild, path.join(here, 'workerd-worker.js'), out, path.dirname(here), [`--metafile=${path.join(out, 'meta.json')}`]);
  const { Miniflare } = await import(pathToFileURL(tools.resolve('miniflare')).href);
  mf = new Miniflare(workerOptions(out, 'workerd-worker.js'));
});

after(async () => {
  await mf?.dispose();
  if (out) fs.rmSync(out, { recursive: true, force: true });
});

async function get(pathname, init) {
  const res = await mf.dispatchFetch(`http://segflake.test${pathname}`, init);
  const body = await res.text();
  assert.equal(res.status, 200, `${pathname}: ${body}`);
  return JSON.parse(body);
}

test('workerd: the bundle takes the package\'s workerd entry and keeps the .wasm as a module', (t) => {
  const meta = JSON.parse(fs.readFileSync(path.join(out, 'meta.json'), 'utf8'));
  const inputs = Object.keys(meta.inputs).map((f) => f.replace(/\\/g, '/'));
  assert.ok(inputs.some((f) => f.endsWith('node_modules/segflake-wasm/workerd.js')), inputs.join('\n'));
  assert.ok(inputs.some((f) => f.endsWith('node_modules/segflake-wasm/snowflake-workerd.js')), inputs.join('\n'));
  for (const other of ['index.js', 'node.js', 'node.cjs', 'snowflake.js', 'snowflake-node.js']) {
    assert.ok(!inputs.some((f) => f.endsWith(`node_modules/segflake-wasm/${other}`)), `${other} was bundled`);
  }
  const files = fs.readdirSync(out);
  const wasm = files.filter((f) => f.endsWith('.wasm'));
  // The full module and the snowflake entry's, each imported as a module.
  assert.equal(wasm.length, 2, files.join(', '));
  const bundle = fs.readFileSync(path.join(out, 'workerd-worker.js'), 'utf8');
  for (const w of wasm) assert.match(bundle, new RegExp(`^import \\w+ from "\\./${w.replace('.', '\\.')}";$`, 'm'));
  const workerd = tools.resolve('workerd/package.json');
  t.diagnostic(`workerd ${JSON.parse(fs.readFileSync(workerd, 'utf8')).version}, miniflare ${
    JSON.parse(fs.readFileSync(tools.resolve('miniflare/package.json'), 'utf8')).version}`);
});

test('workerd: the worker starts and runs the WebAssembly build', async () => {
  assert.deepEqual(await get('/info'), {
    userAgent: 'Cloudflare-Workers',
    backend: 'wasm',
    initialized: true,
    coreVersion: lib.coreVersion(),
    maxBatch: lib.MAX_BATCH,
  });
});

test('workerd: requests get strictly increasing IDs that decode to the worker\'s fields', async () => {
  const layout = new lib.Layout('twitter');
  let last = 0n;
  for (let i = 0; i < 20; i++) {
    const { ids, decoded } = await get(`/ids?n=${i === 0 ? 1 : 1000}`);
    assert.equal(ids.length, i === 0 ? 1 : 1000);
    for (let k = 0; k < ids.length; k++) {
      const id = BigInt(ids[k]);
      assert.ok(id > last, `request ${i}, ID ${k}: ${id} after ${last}`);
      last = id;
      assert.deepEqual(decoded[k], layout.decode(id), `request ${i}, ID ${k}`);
      assert.equal(decoded[k].workerId, 11);
    }
  }
  // Concurrent requests share the isolate's generator: every ID distinct.
  const batches = await Promise.all(Array.from({ length: 8 }, () => get('/ids?n=500')));
  const all = new Set(batches.flatMap((b) => b.ids));
  assert.equal(all.size, 8 * 500);
  for (const b of batches) {
    for (let k = 1; k < b.ids.length; k++) assert.ok(BigInt(b.ids[k]) > BigInt(b.ids[k - 1]), 'increasing');
    assert.ok(BigInt(b.ids[0]) > last, 'after the sequential requests');
  }
});

for (const [query, entryLib, label] of [['', lib, ''], ['?entry=snowflake', snowflakeLib, ', snowflake entry']]) {
test(`workerd${label}: the shared cases and vectors`, { timeout: 300_000 }, async (t) => {
  const vectors = loadVectors();
  const results = await get(`/cases${query}`, { method: 'POST', body: JSON.stringify(vectors) });
  // workerd ran exactly the cases Node runs.
  assert.deepEqual(results.map((r) => r.name), defineCases(entryLib, vectors).map((c) => c.name));
  for (const r of results) {
    await t.test(`workerd${label}: ${r.name}`, () => {
      if (!r.ok) throw new Error(r.error);
    });
  }
});
}

// Deployed Workers freeze Date.now() during synchronous work (local workerd does not: the
// worker pins it for the burst). One request then gets the IDs of one tick plus the
// maxDriftMs allowance, 4,096 × (maxDriftMs + 1) with the twitter layout, and the next
// call fails with ClockStalledError once the clock has read the same 2^24 times.
// The snowflake entry runs the shorter of the two bursts.
for (const [query, drifts, label] of [['', [100, 2000], ''], ['&entry=snowflake', [100], ', snowflake entry']]) {
test(`workerd${label}: with Date.now() frozen, a burst ends with an error after 4096 × (maxDriftMs + 1) IDs`, async (t) => {
  for (const maxDriftMs of drifts) {
    const r = await get(`/burst?batch=4096&maxDriftMs=${maxDriftMs}&freeze=1${query}`);
    t.diagnostic(`maxDriftMs ${maxDriftMs}: ${r.count} IDs, then ${r.error && r.error.code} (${r.error && r.error.name})`);
    assert.equal(r.count, 4096 * (maxDriftMs + 1));
    assert.equal(r.increasing, true);
    assert.equal(r.lastTickAheadMs, maxDriftMs);
    assert.ok(r.error && r.error.isSegflakeError, JSON.stringify(r.error));
    assert.equal(r.error.code, 'CLOCK_STALLED');
    assert.equal(r.error.name, 'ClockStalledError');
    assert.match(r.error.message, /clock kept reading \d+ for 2\^24 readings in a row/);
  }
});
}
