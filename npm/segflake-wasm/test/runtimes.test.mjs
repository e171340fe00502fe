// The shared cases and vectors under Bun and Deno (both from the npm registry: the `bun` and
// `deno` packages ship their runtimes), against the package installed from the tarball:
// each runtime runs runtime-runner.mjs, which imports 'segflake-wasm' by its own resolution
// rules, and every case it ran becomes a subtest here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as lib from 'segflake-wasm';
import * as snowflakeLib from 'segflake-wasm/snowflake';
import { defineCases } from './cases.js';
import { loadVectors } from './vectors.mjs';
import { testing } from './testing.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = (name) => path.join(process.env.SEGFLAKE_TOOLS_DIR || here, 'node_modules', '.bin', name);
const RUNTIMES = {
  bun: [bin('bun'), ['test/runtime-runner.mjs']],
  deno: [bin('deno'), ['run', '--allow-read', '--allow-env', '--allow-net', 'test/runtime-runner.mjs']],
};

// Each runtime runs the cases against the main entry and against segflake-wasm/snowflake.
const ENTRIES = [
  ['segflake-wasm', lib, /\/node_modules\/segflake-wasm\/node\.js$/, ''],
  ['segflake-wasm/snowflake', snowflakeLib, /\/node_modules\/segflake-wasm\/snowflake-node\.js$/, ', snowflake entry'],
];
for (const [name, [exe, args]] of Object.entries(RUNTIMES)) for (const [entry, entryLib, entryPath, label] of ENTRIES) {
  test(`${name}${label}: the shared cases and vectors`, { timeout: 300_000 }, async (t) => {
    assert.ok(fs.existsSync(exe), `${exe} is missing (npm ci in npm/segflake-wasm/test)`);
    const stdout = execFileSync(exe, args, {
      cwd: path.dirname(here),
      encoding: 'utf8',
      env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1', SEGFLAKE_ENTRY: entry },
      maxBuffer: 64 << 20,
    });
    const line = stdout.trim().split('\n').at(-1);
    const run = JSON.parse(line);
    t.diagnostic(`${run.runtime} ${run.version}: ${run.entry}`);
    assert.equal(run.runtime, name);
    assert.equal(run.backend, 'wasm');
    // The runtime took the package's Node entry from the installed tarball.
    assert.match(run.entry, entryPath);
    assert.deepEqual(run.results.map((r) => r.name), defineCases(entryLib, loadVectors(), testing).map((c) => c.name), 'same cases as in Node');
    for (const r of run.results) {
      await t.test(`${name}${label}: ${r.name}`, () => {
        if (!r.ok) throw new Error(r.error);
      });
    }
  });
}

// The native package (Node-API addon) in the same runtimes, from the same project (installed
// from dist/ for the parity test): its addon loads, and it agrees with segflake-wasm there.
// (Its whole node:test suite runs under Bun in scripts/test-node.sh.)
const NATIVE = {
  bun: [bin('bun'), ['test/native-runner.mjs']],
  deno: [bin('deno'), ['run', '--allow-read', '--allow-env', '--allow-ffi', 'test/native-runner.mjs']],
};

for (const [name, [exe, args]] of Object.entries(NATIVE)) {
  test(`${name}: the native segflake package (Node-API)`, { timeout: 120_000 }, async (t) => {
    const stdout = execFileSync(exe, args, {
      cwd: path.dirname(here),
      encoding: 'utf8',
      env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' },
    });
    const run = JSON.parse(stdout.trim().split('\n').at(-1));
    t.diagnostic(`${run.runtime} ${run.version}: backend ${run.backend}`);
    assert.equal(run.runtime, name);
    assert.equal(run.backend, 'native');
    assert.equal(run.checks.length, 3);
    for (const c of run.checks) {
      await t.test(`${name}, native: ${c.name}`, () => {
        if (!c.ok) throw new Error(c.error);
      });
    }
  });
}
