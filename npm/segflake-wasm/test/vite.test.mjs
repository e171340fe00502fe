// The package in a Vite app, the way most pages meet it: a project beside the installed
// package whose module imports both entries by name. `vite build` (the production bundle,
// served as static files) and the dev server (its dependency optimizer rewrites the
// package's glue into node_modules/.vite/deps, where the glue's `new URL('…_bg.wasm',
// import.meta.url)` must still find the .wasm), each opened in Chromium: both entries start
// and issue IDs, with no failed request. Vite comes from the test tools (SEGFLAKE_TOOLS_DIR).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { serve } from './server.mjs';
import { launch } from './browser.js';

const pkgDir = path.dirname(createRequire(import.meta.url).resolve('segflake-wasm/package.json'));
const toolsDir = process.env.SEGFLAKE_TOOLS_DIR;

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>segflake-wasm in Vite</title><link rel="icon" href="data:,"></head>
<body><script type="module" src="/main.js"></script></body></html>
`;
const MAIN = `// Both entries by name, as an app imports them; what happened goes to window.__viteResult.
import * as full from 'segflake-wasm';
import * as snowflake from 'segflake-wasm/snowflake';
const result = {};
for (const [name, m] of Object.entries({ full, snowflake })) {
  const gen = new m.Snowflake({ workerId: 7 });
  result[name] = { workerId: gen.decode(gen.nextId()).workerId, initialized: m.isInitialized() };
}
window.__viteResult = result;
`;

/** A Vite project beside the installed package (so 'segflake-wasm' resolves to it). */
function project() {
  const dir = fs.mkdtempSync(path.join(path.dirname(pkgDir), '..', '.vite-'));
  fs.writeFileSync(path.join(dir, 'index.html'), PAGE);
  fs.writeFileSync(path.join(dir, 'main.js'), MAIN);
  return dir;
}

/** Opens `url` in Chromium; returns window.__viteResult and every failed request. */
async function open(url) {
  const browser = await launch();
  const failed = [];
  try {
    const page = await browser.context.newPage();
    page.on('response', (r) => r.status() >= 400 && failed.push(`${r.status()} ${r.url()}`));
    page.on('pageerror', (e) => failed.push(`page error: ${e.message}`));
    await page.goto(url);
    await page.waitForFunction(() => window.__viteResult !== undefined, null, { timeout: 60_000, polling: 100 });
    return { result: await page.evaluate(() => window.__viteResult), failed };
  } finally {
    await browser.close();
  }
}

async function vite() {
  assert.ok(toolsDir, 'SEGFLAKE_TOOLS_DIR names the test tools (scripts/test-wasm.sh sets it)');
  return import(pathToFileURL(path.join(toolsDir, 'node_modules', 'vite', 'dist', 'node', 'index.js')).href);
}

const EXPECTED = { full: { workerId: 7, initialized: true }, snowflake: { workerId: 7, initialized: true } };

test('vite build: both entries start from the bundle and its emitted .wasm assets', { timeout: 180_000 }, async () => {
  const { build } = await vite();
  const root = project();
  try {
    await build({ root, configFile: false, logLevel: 'warn', build: { outDir: 'dist', target: 'es2022' } });
    const assets = fs.readdirSync(path.join(root, 'dist', 'assets'));
    for (const name of ['segflake_wasm_bg', 'segflake_snowflake_bg']) {
      assert.ok(assets.some((f) => f.startsWith(name) && f.endsWith('.wasm')), `${name}.wasm emitted (${assets})`);
    }
    const server = await serve({ '/': path.join(root, 'dist') });
    try {
      const { result, failed } = await open(`${server.url}/index.html`);
      assert.deepEqual(failed, []);
      assert.deepEqual(result, EXPECTED);
    } finally {
      await server.close();
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('vite dev server: both entries start through the dependency optimizer, without configuration', { timeout: 180_000 }, async () => {
  const { createServer } = await vite();
  const root = project();
  const cacheDir = path.join(root, '.vite-cache');
  const server = await createServer({ root, cacheDir, configFile: false, logLevel: 'warn', server: { host: '127.0.0.1', port: 0 } });
  try {
    await server.listen();
    const { result, failed } = await open(server.resolvedUrls.local[0]);
    assert.deepEqual(failed, []);
    assert.deepEqual(result, EXPECTED);
    // The optimizer did rewrite both entries (their glue now runs from .vite-cache/deps).
    const { optimized } = JSON.parse(fs.readFileSync(path.join(cacheDir, 'deps', '_metadata.json'), 'utf8'));
    assert.deepEqual(Object.keys(optimized).sort(), ['segflake-wasm', 'segflake-wasm/snowflake']);
  } finally {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
});
