// Runs the benchmark in Node (a child process) and in headless Chromium (a page served
// from 127.0.0.1), then prints one Markdown table. Run through bench/wasm/run.sh.
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { serve } from '../../npm/segflake-wasm/test/server.mjs';
import { launch } from '../../npm/segflake-wasm/test/browser.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const pkgDir = path.dirname(require.resolve('segflake-wasm/package.json'));
const n = Number(process.env.BENCH_N || 1_000_000);
const rounds = Number(process.env.BENCH_ROUNDS || 5);

const nodeResult = JSON.parse(
  execFileSync(process.execPath, [path.join(here, 'bench-node.mjs')], {
    encoding: 'utf8',
    env: { ...process.env, BENCH_N: String(n), BENCH_ROUNDS: String(rounds) },
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 1 << 24,
  }),
);

const build = process.env.BENCH_BUILD_DIR || path.resolve(here, '..', '..', 'target', 'wasm', 'bench');
const server = await serve({ '/pkg/': pkgDir, '/bench/': here, '/build/': build });
let browserResult;
let browser;
try {
  browser = await launch();
  const page = await browser.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${server.url}/bench/browser/page.html?n=${n}&rounds=${rounds}`);
  await page.waitForFunction(() => window.__bench !== undefined, null, { timeout: 600_000, polling: 500 });
  browserResult = await page.evaluate(() => window.__bench);
  if (errors.length) throw new Error(errors.join('\n'));
} finally {
  await browser?.close();
  await server.close();
}
if (browserResult.error) throw new Error(browserResult.error);

const fmt = (x) => (x >= 1e6 ? `${(x / 1e6).toFixed(2)} M` : `${(x / 1e3).toFixed(0)} k`);
const byName = new Map(browserResult.rows.map((r) => [r.name, r]));
const load = os.loadavg().map((x) => x.toFixed(2)).join(' ');
const lines = [
  `${n.toLocaleString('en-US')} IDs per round, median of ${rounds} interleaved rounds; ${nodeResult.runtime}, ${browserResult.runtime} (headless); ${os.cpus().length} cores, load average ${load}.`,
  '',
  '| generator | Node IDs/s | Node dups / order errors | Chromium IDs/s | Chromium dups / order errors | notes |',
  '|---|---:|---:|---:|---:|---|',
];
for (const r of nodeResult.rows) {
  const b = byName.get(r.name);
  lines.push(
    `| ${r.name} | ${fmt(r.idsPerSecond)} | ${r.dups} / ${r.orderErrors} | ${b ? fmt(b.idsPerSecond) : '—'} | ${b ? `${b.dups} / ${b.orderErrors}` : '—'} | ${r.note} |`,
  );
}
console.log(lines.join('\n'));
