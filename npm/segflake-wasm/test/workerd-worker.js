// A Cloudflare Worker written as a user writes one: `import ... from 'segflake-wasm'` (the
// package's `workerd` entry, which imports the .wasm as a module and starts it synchronously).
// workerd.test.mjs bundles it with esbuild the way wrangler does and runs it in workerd
// through miniflare.
//   GET  /info        where it runs: user agent, backend, core version, whether it started
//   GET  /ids?n=N     N IDs from this isolate's generator (worker ID 11): decimal strings and
//                     the fields the worker decoded
//   GET  /burst?batch=B&maxDriftMs=D&freeze=1&cap=C  a fresh generator's nextIds(B) until it
//                     throws, within one request, with Date.now() frozen as deployed Workers
//                     freeze it: how many IDs one request can take, and the error that ends it
//   POST /cases       body: tests/vectors as { file name: parsed JSON }; runs the shared
//                     cases (cases.js) and answers [{ name, ok, error? }]
import * as lib from 'segflake-wasm';
// The snowflake entry too (its own workerd entry and .wasm): `?entry=snowflake` on /cases
// and /burst runs them against it.
import * as snowflakeLib from 'segflake-wasm/snowflake';
import { defineCases } from './cases.js';

const WORKER_ID = 11;
const gen = new lib.Snowflake({ workerId: WORKER_ID });

const json = (value) =>
  new Response(JSON.stringify(value, (_, x) => (typeof x === 'bigint' ? String(x) : x)), {
    headers: { 'content-type': 'application/json' },
  });

const entryOf = (url) => (url.searchParams.get('entry') === 'snowflake' ? snowflakeLib : lib);

async function runCases(lib, vectors, only) {
  const results = [];
  for (const c of defineCases(lib, vectors)) {
    if (only && c.name !== only) continue;
    try {
      await c.fn();
      results.push({ name: c.name, ok: true });
    } catch (e) {
      results.push({ name: c.name, ok: false, error: `${e && e.name}: ${e && e.message}\n${e && e.stack}` });
    }
  }
  return results;
}

/**
 * A fresh generator's nextIds(batch) until it throws (or `cap` IDs), within one request.
 * Deployed Workers return the time of the last I/O from Date.now() during synchronous work;
 * local workerd (miniflare) lets it run (workerd#6839), so `freeze` pins it for the burst.
 */
function burst(lib, { batch, maxDriftMs, freeze, cap }) {
  const realNow = Date.now;
  const clockAtStart = realNow();
  if (freeze) Date.now = () => clockAtStart;
  const g = new lib.Snowflake({ workerId: 12, maxDriftMs });
  let count = 0;
  let last = 0n;
  let increasing = true;
  let error = null;
  try {
    while (count < cap) {
      let ids;
      try {
        ids = g.nextIds(batch);
      } catch (e) {
        error = { name: e.name, code: e.code, message: e.message, isSegflakeError: e instanceof lib.SegflakeError };
        break;
      }
      if (!(ids[0] > last && ids[ids.length - 1] >= ids[0])) increasing = false;
      last = ids[ids.length - 1];
      count += ids.length;
    }
  } finally {
    Date.now = realNow;
  }
  const lastTickAheadMs = count ? g.decode(last).timestampMs - clockAtStart : null;
  g.free();
  return { count, increasing, clockAdvancedMs: realNow() - clockAtStart, lastTickAheadMs, error };
}

export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === '/info') {
      return json({
        userAgent: navigator.userAgent,
        backend: lib.backend,
        initialized: lib.isInitialized(),
        coreVersion: lib.coreVersion(),
        maxBatch: lib.MAX_BATCH,
      });
    }
    if (url.pathname === '/ids') {
      const n = Number(url.searchParams.get('n') ?? '1');
      const ids = [...gen.nextIds(n)];
      return json({ ids, decoded: ids.map((id) => gen.decode(id)) });
    }
    if (url.pathname === '/burst') {
      const q = (name, dflt) => Number(url.searchParams.get(name) ?? dflt);
      return json(burst(entryOf(url), { batch: q('batch', 4096), maxDriftMs: q('maxDriftMs', 2000), freeze: q('freeze', 1) === 1, cap: q('cap', 1e8) }));
    }
    if (url.pathname === '/cases' && request.method === 'POST') {
      return json(await runCases(entryOf(url), await request.json(), url.searchParams.get('only')));
    }
    return new Response('not found', { status: 404 });
  },
};
