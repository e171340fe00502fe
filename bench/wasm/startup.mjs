// Start-up cost of segflake-wasm's two builds (the full module, `segflake-wasm`, and the
// snowflake build, `segflake-wasm/snowflake`): the time to import the entry's JS without
// starting it (`…/core`), to compile and instantiate the .wasm from bytes already in memory
// (`initSync(bytes)` in Node, `await init(bytes)` in Chromium), and the first ID. Each run is
// a fresh Node process or a fresh Chromium page; the table gives the median of BENCH_ROUNDS
// (default 9). Run through bench/wasm/run.sh (or `node startup.mjs` once the package is
// installed here); this is the first of the two Markdown tables it prints.
//
// Then workerd, Cloudflare's runtime, through miniflare: inside a Worker the clock does not
// advance during synchronous work, so the start-up is timed from outside. Three Workers,
// bundled with esbuild as wrangler bundles them (the `workerd` condition, the .wasm kept as a
// module file and given to workerd as a compiled module): an empty one (the floor), one that
// imports `segflake-wasm/snowflake` and one that imports `segflake-wasm`, each answering one
// ID from a generator made at the top of the module. BENCH_ROUNDS times each, in an order
// rotated each round after one unrecorded round: a fresh `Miniflare` (its own workerd
// process), `await mf.ready`, the first `dispatchFetch` until its body is read, `dispose()`.
// A second table gives the medians and the difference to the empty Worker.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Miniflare } from 'miniflare';
import { serve } from '../../npm/segflake-wasm/test/server.mjs';
import { launch } from '../../npm/segflake-wasm/test/browser.js';
import { bundleWorker, workerOptions } from '../../npm/segflake-wasm/test/workerd.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgDir = path.dirname(createRequire(import.meta.url).resolve('segflake-wasm/package.json'));
const rounds = Number(process.env.BENCH_ROUNDS || 9);
const BUILDS = [
  { name: 'segflake-wasm (full)', entry: 'segflake-wasm/core', js: 'core.js', wasm: 'pkg/segflake_wasm_bg.wasm' },
  { name: 'segflake-wasm/snowflake', entry: 'segflake-wasm/snowflake/core', js: 'snowflake-core.js', wasm: 'pkg/segflake_snowflake_bg.wasm' },
];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function nodeRun(b) {
  const source = `
    import { readFileSync } from 'node:fs';
    const bytes = readFileSync(${JSON.stringify(path.join(pkgDir, b.wasm))});
    const t0 = performance.now();
    const m = await import(${JSON.stringify(b.entry)});
    const t1 = performance.now();
    m.initSync(bytes);
    const t2 = performance.now();
    new m.Snowflake({ workerId: 1 }).nextId();
    const t3 = performance.now();
    console.log(JSON.stringify({ importMs: t1 - t0, instantiateMs: t2 - t1, firstIdMs: t3 - t2 }));`;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', source], { cwd: here, encoding: 'utf8' }));
}

const results = new Map(BUILDS.map((b) => [b.name, { node: [], chromium: [] }]));
for (let i = 0; i < rounds; i++) for (const b of BUILDS) results.get(b.name).node.push(nodeRun(b));

const server = await serve({ '/pkg/': pkgDir, '/bench/': here });
const browser = await launch();
let chromium = '';
try {
  for (let i = 0; i < rounds; i++) {
    for (const b of BUILDS) {
      const page = await browser.context.newPage();
      await page.goto(`${server.url}/bench/browser/startup.html`);
      const r = await page.evaluate(async ({ js, wasm }) => {
        const bytes = await (await fetch(`/pkg/${wasm}`)).arrayBuffer();
        const t0 = performance.now();
        const m = await import(`/pkg/${js}`);
        const t1 = performance.now();
        await m.init(bytes);
        const t2 = performance.now();
        new m.Snowflake({ workerId: 1 }).nextId();
        const t3 = performance.now();
        return { importMs: t1 - t0, instantiateMs: t2 - t1, firstIdMs: t3 - t2, ua: navigator.userAgent };
      }, b);
      chromium = r.ua.match(/Chrome\/[\d.]+/)?.[0] ?? r.ua;
      results.get(b.name).chromium.push(r);
      await page.close();
    }
  }
} finally {
  await browser.close();
  await server.close();
}

const ms = (runs, k) => median(runs.map((r) => r[k])).toFixed(2);
const size = (f) => {
  const bytes = fs.readFileSync(path.join(pkgDir, f));
  return `${bytes.length.toLocaleString('en-US')} B (${zlib.gzipSync(bytes, { level: 9 }).length.toLocaleString('en-US')} gz)`;
};
const load = os.loadavg().map((x) => x.toFixed(2)).join(' ');
const lines = [
  `Median of ${rounds} fresh processes / pages; Node ${process.versions.node}, ${chromium} (headless); ${os.cpus().length} cores, load average ${load}. Times in ms.`,
  '',
  '| build | .wasm | Node import | Node instantiate | Node first ID | Chromium import | Chromium instantiate | Chromium first ID |',
  '|---|---:|---:|---:|---:|---:|---:|---:|',
];
for (const b of BUILDS) {
  const { node, chromium: c } = results.get(b.name);
  lines.push(`| ${b.name} | ${size(b.wasm)} | ${ms(node, 'importMs')} | ${ms(node, 'instantiateMs')} | ${ms(node, 'firstIdMs')} | ${ms(c, 'importMs')} | ${ms(c, 'instantiateMs')} | ${ms(c, 'firstIdMs')} |`);
}
console.log(lines.join('\n'));

// ---------------------------------------------------------------- workerd (miniflare)
const WORKERS = [
  { name: 'empty Worker (floor)', source: `export default { fetch: () => new Response('0') };` },
  { name: 'segflake-wasm/snowflake', entry: 'segflake-wasm/snowflake' },
  { name: 'segflake-wasm (full)', entry: 'segflake-wasm' },
];
const outRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'segflake-startup-workerd-'));
for (const [i, w] of WORKERS.entries()) {
  const source =
    w.source ??
    `import { Snowflake } from '${w.entry}';
const gen = new Snowflake({ workerId: 1 });
export default { fetch: () => new Response(String(gen.nextId())) };`;
  w.dir = path.join(outRoot, String(i));
  // The source beside this script, so that its imports resolve to the packages installed here.
  const file = path.join(here, `.startup-worker-${i}.js`);
  fs.writeFileSync(file, source);
  try {
    bundleWorker(path.join(here, 'node_modules/.bin/esbuild'), file, w.dir, here, ['--entry-names=worker']);
  } finally {
    fs.rmSync(file, { force: true });
  }
  w.bytes = fs.readdirSync(w.dir).reduce((sum, f) => sum + fs.statSync(path.join(w.dir, f)).size, 0);
  w.runs = [];
}

async function workerdRun(w) {
  const t0 = performance.now();
  const mf = new Miniflare(workerOptions(w.dir, 'worker.js'));
  try {
    await mf.ready;
    const t1 = performance.now();
    const res = await mf.dispatchFetch('http://segflake.test/');
    const body = await res.text();
    const t2 = performance.now();
    if (res.status !== 200 || !(w.entry ? BigInt(body) > 0n : body === '0')) {
      throw new Error(`${w.name}: ${res.status} ${body}`);
    }
    return { readyMs: t1 - t0, fetchMs: t2 - t1, totalMs: t2 - t0 };
  } finally {
    await mf.dispose();
  }
}

try {
  for (const w of WORKERS) await workerdRun(w); // warm-up round, not recorded
  for (let i = 0; i < rounds; i++) {
    const shift = i % WORKERS.length;
    for (const w of [...WORKERS.slice(shift), ...WORKERS.slice(0, shift)]) w.runs.push(await workerdRun(w));
  }
} finally {
  fs.rmSync(outRoot, { recursive: true, force: true });
}

const versionOf = (name) => JSON.parse(fs.readFileSync(path.join(here, 'node_modules', name, 'package.json'), 'utf8')).version;
const floorMs = median(WORKERS[0].runs.map((r) => r.totalMs));
const workerdLines = [
  '',
  `workerd ${versionOf('workerd')} through miniflare ${versionOf('miniflare')}: median of ${rounds} fresh Miniflare instances (each its own workerd process); load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}. Times in ms.`,
  '',
  '| Worker | modules (bundle + .wasm) | `await mf.ready` | first `dispatchFetch` | ready + first response | minus the empty Worker |',
  '|---|---:|---:|---:|---:|---:|',
];
for (const w of WORKERS) {
  const total = median(w.runs.map((r) => r.totalMs));
  const extra = w === WORKERS[0] ? '-' : (total - floorMs).toFixed(1);
  workerdLines.push(`| ${w.name} | ${w.bytes.toLocaleString('en-US')} B | ${ms(w.runs, 'readyMs')} | ${ms(w.runs, 'fetchMs')} | ${total.toFixed(2)} | ${extra} |`);
}
console.log(workerdLines.join('\n'));
