// Per-ID speed of two or more builds of segflake-wasm in one Node process, rounds
// interleaved: `node builds.mjs LABEL=PKG_DIR...`, each PKG_DIR a built npm/segflake-wasm
// (scripts/build-wasm.sh has filled its pkg/). Run by builds.sh, which builds each commit.
// Prints a Markdown table of M calls/s: the best round and the median, per build.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const ROUNDS = Number(process.env.BENCH_ROUNDS || 11);
const LAYOUT = { timeBits: 41, workerBits: 0, sequenceBits: 22 }; // 4.2 M IDs per ms: never waits
const builds = [];
for (const arg of process.argv.slice(2)) {
  const [label, dir] = arg.includes('=') ? arg.split(/=(.*)/s) : [path.basename(arg), arg];
  const load = async (entry, wasm) => {
    const m = await import(pathToFileURL(path.join(path.resolve(dir), entry)).href);
    m.initSync(readFileSync(path.join(dir, 'pkg', wasm)));
    return m;
  };
  const full = await load('core.js', 'segflake_wasm_bg.wasm');
  const snowflake = await load('snowflake-core.js', 'segflake_snowflake_bg.wasm');
  let allocations = 0;
  const segments = new full.SegmentGenerator({
    store: { allocate: async (tag, step) => ({ maxId: BigInt(step) * BigInt(++allocations), step }) },
    step: 10_000_000,
  });
  const tag = segments.tag('bench');
  await tag.nextId();
  builds.push({ label, full, snowflake, tag, serial: new full.SerialGenerator({ sequenceDigits: 7 }) });
}
if (builds.length === 0) {
  console.error('usage: node builds.mjs LABEL=PKG_DIR [LABEL=PKG_DIR...]');
  process.exit(2);
}

/** name → (build) => [calls per round, run one round]. */
const cases = {
  'full: `nextId()`': (b) => loop(2_000_000, new b.full.Snowflake({ workerId: 0, layout: LAYOUT, maxDriftMs: 3_600_000 }), 'nextId'),
  'full: `nextIdString()`': (b) => loop(300_000, new b.full.Snowflake({ workerId: 0, layout: LAYOUT, maxDriftMs: 3_600_000 }), 'nextIdString'),
  'full: `nextIds(1000)`, IDs': (b) => batch(new b.full.Snowflake({ workerId: 0, layout: LAYOUT, maxDriftMs: 3_600_000 }), 'nextIds'),
  'full: `fillIds(1000)`, IDs': (b) => batch(new b.full.Snowflake({ workerId: 0, layout: LAYOUT, maxDriftMs: 3_600_000 }), 'fillIds'),
  'full: segment `nextIdSync()`': (b) => loop(1_000_000, b.tag, 'nextIdSync'),
  'full: serial `next()`': (b) => loop(200_000, b.serial, 'next'),
  'snowflake entry: `nextId()`': (b) => loop(2_000_000, new b.snowflake.Snowflake({ workerId: 0, layout: LAYOUT, maxDriftMs: 3_600_000 }), 'nextId'),
  'snowflake entry: `nextIdString()`': (b) => loop(300_000, new b.snowflake.Snowflake({ workerId: 0, layout: LAYOUT, maxDriftMs: 3_600_000 }), 'nextIdString'),
};

function loop(n, target, method) {
  return [n, () => { for (let i = 0; i < n; i++) target[method](); }];
}

function batch(generator, method) {
  const out = new BigUint64Array(1000);
  const run = method === 'fillIds'
    ? () => { for (let i = 0; i < 2000; i++) generator.fillIds(out); }
    : () => { for (let i = 0; i < 2000; i++) generator.nextIds(1000); };
  return [2_000_000, run];
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(`| per-ID call (M/s, best / median of ${ROUNDS} rounds) | ${builds.map((b) => b.label).join(' | ')} |`);
console.log(`|---|${builds.map(() => '---:').join('|')}|`);
for (const [name, make] of Object.entries(cases)) {
  const runs = builds.map((b) => ({ b, job: make(b), rates: [] }));
  for (let r = 0; r < ROUNDS; r++) {
    for (const run of runs) {
      const [n, go] = run.job;
      const t = process.hrtime.bigint();
      go();
      run.rates.push(n / (Number(process.hrtime.bigint() - t) / 1e3));
    }
    await new Promise((resolve) => setImmediate(resolve)); // lets a segment refill land
  }
  console.log(`| ${name} | ${runs.map((x) => `${Math.max(...x.rates).toFixed(2)} / ${median(x.rates).toFixed(2)}`).join(' | ')} |`);
}
