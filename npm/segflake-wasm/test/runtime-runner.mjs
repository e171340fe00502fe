// Runs the shared cases (cases.js) and vectors in whichever runtime runs this file (Bun,
// Deno), against the package installed next to it (`import 'segflake-wasm'`, or the entry
// named by $SEGFLAKE_ENTRY, e.g. 'segflake-wasm/snowflake', resolved by the runtime's own
// rules), with the hooks of the tests' build (testing.mjs). Prints one JSON line: { runtime,
// version, entry, results }. runtimes.test.mjs starts it and reports every case.
const entry = (globalThis.Deno ? Deno.env.get('SEGFLAKE_ENTRY') : process.env.SEGFLAKE_ENTRY) || 'segflake-wasm';
const lib = await import(entry);
import { defineCases } from './cases.js';
import { loadVectors } from './vectors.mjs';
import { testing } from './testing.mjs';

const runtime = globalThis.Bun ? 'bun' : globalThis.Deno ? 'deno' : 'node';
const version = globalThis.Bun ? Bun.version : globalThis.Deno ? Deno.version.deno : process.versions.node;

const results = [];
for (const c of defineCases(lib, loadVectors(), testing)) {
  try {
    await c.fn();
    results.push({ name: c.name, ok: true });
  } catch (e) {
    results.push({ name: c.name, ok: false, error: `${e && e.name}: ${e && e.message}\n${e && e.stack}` });
  }
}
console.log(JSON.stringify({ runtime, version, entry: import.meta.resolve(entry), backend: lib.backend, results }));
