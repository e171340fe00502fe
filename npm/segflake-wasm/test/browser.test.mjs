// The shared cases (cases.js) in real headless Chromium: a local static server on
// 127.0.0.1 serves the files of the package installed from the packed tarball, and a
// page imports it by name (import map → the package's browser entry, which fetches the
// .wasm). Every case becomes a subtest here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import * as lib from 'segflake-wasm';
import { defineCases } from './cases.js';
import { loadVectors, vectorsDir } from './vectors.mjs';
import { serve } from './server.mjs';
import { launch } from './browser.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgDir = path.dirname(createRequire(import.meta.url).resolve('segflake-wasm/package.json'));

test('chromium', { timeout: 300_000 }, async (t) => {
  const server = await serve({ '/pkg/': pkgDir, '/test/': here, '/vectors/': vectorsDir });
  const problems = [];
  let outcome;
  let browser;
  try {
    browser = await launch();
    const page = await browser.context.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => m.type() === 'error' && problems.push(`console error: ${m.text()}`));
    await page.goto(`${server.url}/test/page.html`);
    await page.waitForFunction(() => window.__segflakeResults !== undefined, null, { timeout: 240_000, polling: 250 });
    outcome = await page.evaluate(() => window.__segflakeResults);
  } finally {
    await browser?.close();
    await server.close();
  }
  assert.equal(outcome.fatal, undefined, outcome.fatal);
  assert.match(outcome.userAgent, /HeadlessChrome|Chrome/, 'ran in Chromium');
  const wasm = server.requests.find((r) => r.path === '/pkg/pkg/segflake_wasm_bg.wasm');
  assert.ok(wasm && wasm.status === 200 && wasm.type === 'application/wasm', 'the page fetched the .wasm');
  assert.deepEqual(problems, [], 'no page or console errors');
  // The browser ran exactly the cases Node runs.
  const expected = defineCases(lib, loadVectors()).map((c) => c.name);
  assert.deepEqual(outcome.results.map((r) => r.name), expected, 'same cases as in Node');
  for (const r of outcome.results) {
    await t.test(`chromium: ${r.name}`, () => {
      if (!r.ok) throw new Error(r.error);
    });
  }
});
