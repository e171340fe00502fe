// What the tarball ships and how its entry points load, in Node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const pkgDir = path.dirname(require.resolve('segflake-wasm/package.json'));
const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));

function listFiles(dir, base = dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listFiles(path.join(dir, e.name), base) : [path.relative(base, path.join(dir, e.name))],
  );
}

/** Runs an ES module snippet in a fresh Node process from the test project directory. */
function runModule(source) {
  return execFileSync(process.execPath, ['--input-type=module', '-e', source], {
    cwd: path.dirname(here),
    encoding: 'utf8',
  });
}

test('package: the tarball holds the entry points, types, glue and module, and nothing else', () => {
  const files = listFiles(pkgDir).sort();
  assert.deepEqual(files, [
    'LICENSE-APACHE',
    'LICENSE-MIT',
    'README.md',
    'core.d.ts',
    'core.js',
    'driver.d.ts',
    'driver.js',
    'errors.js',
    'index.d.ts',
    'index.js',
    'node.cjs',
    'node.js',
    'package.json',
    'pkg/segflake_snowflake.js',
    'pkg/segflake_snowflake_bg.wasm',
    'pkg/segflake_wasm.js',
    'pkg/segflake_wasm_bg.wasm',
    'segment.js',
    'snowflake-core.d.ts',
    'snowflake-core.js',
    'snowflake-node.js',
    'snowflake-workerd.js',
    'snowflake.d.ts',
    'snowflake.js',
    'startup.js',
    'tables.d.ts',
    'workerd.js',
  ]);
  assert.equal(pkg.name, 'segflake-wasm');
  assert.equal(pkg.type, 'module');
  const wasm = fs.readFileSync(path.join(pkgDir, 'pkg/segflake_wasm_bg.wasm'));
  assert.deepEqual([...wasm.subarray(0, 4)], [0x00, 0x61, 0x73, 0x6d], 'a WebAssembly binary');
  assert.ok(WebAssembly.validate(wasm), 'the module validates');
});

test('package: every path in the exports map exists', () => {
  const targets = [];
  const walk = (v) => (typeof v === 'string' ? targets.push(v) : Object.values(v).forEach(walk));
  walk(pkg.exports);
  for (const t of [...targets, pkg.main, pkg.module, pkg.types]) {
    assert.ok(fs.existsSync(path.join(pkgDir, t)), `${t} is missing`);
  }
});

test('package: the main entry resolves to node.js under Node and works on import', () => {
  assert.equal(import.meta.resolve('segflake-wasm'), new URL('node.js', `file://${pkgDir}/`).href);
  const out = runModule(`
    import { Snowflake, isInitialized, coreVersion } from 'segflake-wasm';
    const g = new Snowflake({ workerId: 1 });
    console.log(JSON.stringify({ ready: isInitialized(), v: coreVersion(), id: String(g.nextId()) }));
  `);
  const r = JSON.parse(out);
  assert.equal(r.ready, true);
  assert.ok(BigInt(r.id) > 0n);
});

test('package: segflake-wasm/core loads nothing until init(), then works with bytes or a compiled module', () => {
  const out = runModule(`
    import fs from 'node:fs';
    import { createRequire } from 'node:module';
    import * as core from 'segflake-wasm/core';
    const before = core.isInitialized();
    const wasmPath = createRequire(import.meta.url).resolve('segflake-wasm/segflake_wasm_bg.wasm');
    let threw = false;
    try { new core.Snowflake({ workerId: 1 }); } catch { threw = true; }
    await core.init(new WebAssembly.Module(fs.readFileSync(wasmPath)));
    core.initSync(fs.readFileSync(wasmPath)); // a second start-up is a no-op
    const g = new core.Snowflake({ workerId: 2 });
    let code;
    try { new core.Snowflake({ workerId: 4096 }); } catch (e) { code = e instanceof core.WorkerIdOutOfRangeError && e.code; }
    console.log(JSON.stringify({ before, threw, after: core.isInitialized(), worker: g.decode(g.nextId()).workerId,
      code, maxBatch: core.MAX_BATCH }));
  `);
  assert.deepEqual(JSON.parse(out), {
    before: false,
    threw: true,
    after: true,
    worker: 2,
    code: 'WORKER_ID_OUT_OF_RANGE',
    maxBatch: 16777216,
  });
});

test('package: the TypeScript declarations type-check against a typed usage file', () => {
  const tsc = process.env.SEGFLAKE_TSC;
  assert.ok(tsc && fs.existsSync(tsc), `SEGFLAKE_TSC must point at tsc (got ${tsc})`);
  const out = execFileSync(process.execPath, [tsc, '-p', path.join(here, 'tsconfig.json')], { encoding: 'utf8' });
  assert.equal(out.trim(), '');
  // And a misuse is caught, so the check is not vacuous.
  const bad = path.join(here, 'types-misuse.ts');
  const badConfig = path.join(here, 'tsconfig.misuse.json');
  fs.writeFileSync(bad, "import { Snowflake } from 'segflake-wasm';\nconst s: string = new Snowflake({ workerId: 1 }).nextId();\nnew Snowflake({});\nvoid s;\n");
  fs.writeFileSync(badConfig, JSON.stringify({ extends: './tsconfig.json', files: ['types-misuse.ts'] }));
  try {
    let failed = false;
    let msg = '';
    try {
      execFileSync(process.execPath, [tsc, '-p', badConfig], { encoding: 'utf8' });
    } catch (e) {
      failed = true;
      msg = String(e.stdout);
    }
    assert.ok(failed, 'tsc accepted a misuse');
    assert.match(msg, /Type 'bigint' is not assignable to type 'string'/);
    assert.match(msg, /workerId/);
  } finally {
    fs.rmSync(badConfig, { force: true });
    fs.rmSync(bad, { force: true });
  }
});
