// Runs the shared cases in the page and leaves the results in window.__segflakeResults.
import * as lib from 'segflake-wasm';
import { defineCases } from './cases.js';

async function loadVectors() {
  const files = await (await fetch('/vectors/index.json')).json();
  const entries = await Promise.all(files.map(async (f) => [f, await (await fetch(`/vectors/${f}`)).json()]));
  return Object.fromEntries(entries);
}

async function run() {
  const results = [];
  const log = document.getElementById('log');
  for (const c of defineCases(lib, await loadVectors())) {
    const start = performance.now();
    try {
      await c.fn();
      results.push({ name: c.name, ok: true, ms: performance.now() - start });
    } catch (e) {
      results.push({ name: c.name, ok: false, error: `${e && e.name}: ${e && e.message}\n${e && e.stack}` });
    }
    log.textContent += `${results.at(-1).ok ? 'ok' : 'FAIL'} ${c.name}\n`;
  }
  return results;
}

run().then(
  (results) => { window.__segflakeResults = { userAgent: navigator.userAgent, results }; },
  (e) => { window.__segflakeResults = { fatal: `${e && e.name}: ${e && e.message}\n${e && e.stack}` }; },
);
