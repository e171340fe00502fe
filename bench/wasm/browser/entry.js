// The Chromium half of the benchmark: segflake-wasm loaded from the installed package's
// files (as a page would), the peers from an esbuild bundle (bench/wasm/run.sh).
import * as wasm from 'segflake-wasm';
import * as wasmSnowflake from 'segflake-wasm/snowflake';
import { nodejsSnowflake, sapphire } from '/build/peers.bundle.js';
import { generators, runAll } from '/bench/bench.js';

const params = new URLSearchParams(location.search);
const n = Number(params.get('n') || 1_000_000);
const rounds = Number(params.get('rounds') || 5);
const log = document.getElementById('log');
setTimeout(() => {
  try {
    const rows = runAll(generators({ wasm, wasmSnowflake, nodejsSnowflake, sapphire }), {
      n,
      rounds,
      onProgress: (m) => { log.textContent += `${m}\n`; },
    });
    window.__bench = { runtime: navigator.userAgent.match(/(HeadlessChrome|Chrome)\/[\d.]+/)?.[0] ?? 'Chromium', n, rounds, rows };
  } catch (e) {
    window.__bench = { error: `${e && e.name}: ${e && e.message}\n${e && e.stack}` };
  }
}, 0);
