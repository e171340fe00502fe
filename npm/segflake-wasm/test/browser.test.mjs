// The shared cases (cases.js) in real headless Chromium: a local static server on
// 127.0.0.1 serves the files of the package installed from the packed tarball, and a
// page imports it by name (import map → the package's browser entry, which fetches the
// .wasm). Every case becomes a subtest here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import * as lib from 'segflake-wasm';
import * as snowflakeLib from 'segflake-wasm/snowflake';
import { defineCases } from './cases.js';
import { loadVectors, vectorsDir } from './vectors.mjs';
import { serve } from './server.mjs';
import { launch } from './browser.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgDir = path.dirname(createRequire(import.meta.url).resolve('segflake-wasm/package.json'));

/** Serves the page, runs it in Chromium, returns `{ outcome, problems, requests }`. */
async function runPage(roots, pagePath) {
  const server = await serve(roots);
  const problems = [];
  let outcome;
  let browser;
  try {
    browser = await launch();
    const page = await browser.context.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => m.type() === 'error' && problems.push(`console error: ${m.text()}`));
    await page.goto(`${server.url}${pagePath}`);
    await page.waitForFunction(() => window.__segflakeResults !== undefined, null, { timeout: 240_000, polling: 250 });
    outcome = await page.evaluate(() => window.__segflakeResults);
  } finally {
    await browser?.close();
    await server.close();
  }
  return { outcome, problems, requests: server.requests };
}

async function report(t, { outcome, problems, requests }, wasmPath, prefix, entry = lib) {
  assert.equal(outcome.fatal, undefined, outcome.fatal);
  assert.match(outcome.userAgent, /HeadlessChrome|Chrome/, 'ran in Chromium');
  const wasm = requests.find((r) => r.path === wasmPath);
  assert.ok(wasm && wasm.status === 200 && wasm.type === 'application/wasm', `the page fetched ${wasmPath}`);
  assert.deepEqual(problems, [], 'no page or console errors');
  // The browser ran exactly the cases Node runs.
  const expected = defineCases(entry, loadVectors()).map((c) => c.name);
  assert.deepEqual(outcome.results.map((r) => r.name), expected, 'same cases as in Node');
  for (const r of outcome.results) {
    await t.test(`${prefix}: ${r.name}`, () => {
      if (!r.ok) throw new Error(r.error);
    });
  }
}

test('chromium', { timeout: 300_000 }, async (t) => {
  const run = await runPage({ '/pkg/': pkgDir, '/test/': here, '/vectors/': vectorsDir }, '/test/page.html');
  await report(t, run, '/pkg/pkg/segflake_wasm_bg.wasm', 'chromium');
});

// The snowflake entry: the same page with the import map pointing `segflake-wasm` at
// segflake-wasm/snowflake's browser entry, which fetches its own .wasm.
test('chromium: the snowflake entry', { timeout: 300_000 }, async (t) => {
  const run = await runPage({ '/pkg/': pkgDir, '/test/': here, '/vectors/': vectorsDir }, '/test/page-snowflake.html');
  assert.ok(!run.requests.some((r) => r.path === '/pkg/pkg/segflake_wasm_bg.wasm'), 'the full module is not fetched');
  await report(t, run, '/pkg/pkg/segflake_snowflake_bg.wasm', 'chromium, snowflake entry', snowflakeLib);
});

// The same cases bundled by esbuild (browser platform: the package's browser entry with its
// top-level await, resolved from node_modules through the exports map). esbuild leaves the
// glue's `new URL('segflake_wasm_bg.wasm', import.meta.url)` alone, so the .wasm is copied
// next to the bundle, as an esbuild user does.
test('chromium, esbuild bundle', { timeout: 300_000 }, async (t) => {
  const esbuild = process.env.SEGFLAKE_ESBUILD;
  assert.ok(esbuild && fs.existsSync(esbuild), `SEGFLAKE_ESBUILD must point at esbuild (got ${esbuild})`);
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'segflake-bundle-'));
  try {
    execFileSync(esbuild, [path.join(here, 'browser-entry.js'), '--bundle', '--format=esm', '--platform=browser',
      '--target=es2022', `--outfile=${path.join(out, 'app.js')}`, '--log-level=warning'], { cwd: path.dirname(here) });
    const bundle = fs.readFileSync(path.join(out, 'app.js'), 'utf8');
    assert.ok(bundle.includes('segflake_wasm_bg.wasm'), 'the glue is in the bundle');
    assert.ok(!bundle.includes('node:fs'), 'the Node entry was not bundled');
    fs.copyFileSync(path.join(pkgDir, 'pkg', 'segflake_wasm_bg.wasm'), path.join(out, 'segflake_wasm_bg.wasm'));
    const run = await runPage({ '/bundle/': out, '/test/': here, '/vectors/': vectorsDir }, '/test/page-bundle.html');
    await report(t, run, '/bundle/segflake_wasm_bg.wasm', 'chromium bundle');
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});

// The package inside module workers: the main entry, and core.js started by initSync from
// a module the worker compiled (the way runtimes with their own .wasm loading use it).
test('chromium, module workers', { timeout: 120_000 }, async () => {
  const server = await serve({ '/pkg/': pkgDir, '/test/': here });
  let results;
  let browser;
  const problems = [];
  try {
    browser = await launch();
    const page = await browser.context.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    await page.goto(`${server.url}/test/page-worker.html`);
    await page.waitForFunction(() => window.__workerResults !== undefined, null, { timeout: 60_000, polling: 100 });
    results = await page.evaluate(() => window.__workerResults);
  } finally {
    await browser?.close();
    await server.close();
  }
  assert.deepEqual(problems, []);
  for (const [entry, r] of Object.entries(results)) {
    assert.ok(r.ok, `${entry}: ${r.error}`);
    const { before, ...rest } = r.result;
    assert.equal(before, entry === 'core' ? false : null, `${entry}: core.js waits for initSync`);
    assert.deepEqual(rest, {
      count: 10_000,
      increasing: true,
      afterBatch: true,
      worker: 9,
      error: {
        isClass: true,
        code: 'INVALID_ARGUMENT',
        message: rest.error.message,
      },
      segments: ['1', '250'],
    }, entry);
    assert.match(rest.error.message, /invalid workerId: got -1;/, entry);
  }
  const wasmFetches = server.requests.filter((q) => q.path === '/pkg/pkg/segflake_wasm_bg.wasm');
  assert.equal(wasmFetches.length, 2, 'each worker fetched the module');
});

// A page under a Content-Security-Policy (served as a header, no inline script): with
// 'wasm-unsafe-eval' in script-src both entries start and issue IDs; without it the
// browser refuses to compile the module, and the import fails with a CompileError that
// says what to allow.
test('chromium: a Content-Security-Policy with and without wasm-unsafe-eval', { timeout: 120_000 }, async () => {
  const ALLOWED = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'";
  const REFUSED = "default-src 'self'; script-src 'self'";
  const results = {};
  let browser;
  try {
    browser = await launch();
    for (const [policy, csp] of [['allowed', ALLOWED], ['refused', REFUSED]]) {
      const server = await serve({ '/pkg/': pkgDir, '/test/': here }, { '/test/csp.html': { 'content-security-policy': csp } });
      try {
        for (const entry of ['/pkg/index.js', '/pkg/snowflake.js']) {
          const page = await browser.context.newPage();
          await page.goto(`${server.url}/test/csp.html?entry=${entry}`);
          await page.waitForFunction(() => window.__cspResult !== undefined, null, { timeout: 60_000, polling: 100 });
          results[`${policy} ${entry}`] = await page.evaluate(() => window.__cspResult);
          await page.close();
        }
      } finally {
        await server.close();
      }
    }
  } finally {
    await browser?.close();
  }
  for (const entry of ['/pkg/index.js', '/pkg/snowflake.js']) {
    assert.deepEqual(results[`allowed ${entry}`], { ok: true, workerId: 5 }, `${entry} under ${ALLOWED}`);
    const refused = results[`refused ${entry}`];
    assert.equal(refused.ok, false, `${entry} under ${REFUSED}: ${JSON.stringify(refused)}`);
    assert.equal(refused.name, 'CompileError', JSON.stringify(refused));
    assert.match(refused.message, /^segflake-wasm cannot start: the page's Content-Security-Policy does not allow WebAssembly; add 'wasm-unsafe-eval' to its script-src/, JSON.stringify(refused));
    assert.match(refused.cause, /Content Security Policy/, 'the browser\'s own error is the cause');
  }
});
