// The Node half of the benchmark: prints its rows as JSON on stdout.
import { createRequire } from 'node:module';
import * as wasm from 'segflake-wasm';
import * as wasmSnowflake from 'segflake-wasm/snowflake';
import * as sapphire from '@sapphire/snowflake';
import { generators, runAll } from './bench.js';

const require = createRequire(import.meta.url);
const nodejsSnowflake = require('nodejs-snowflake');
let native;
try {
  native = require('segflake');
} catch {
  native = undefined; // the native package is not installed: its reference row is left out
}
const n = Number(process.env.BENCH_N || 1_000_000);
const rounds = Number(process.env.BENCH_ROUNDS || 5);
const rows = runAll(generators({ wasm, wasmSnowflake, nodejsSnowflake, sapphire, native }), {
  n,
  rounds,
  onProgress: (m) => process.stderr.write(`node: ${m}\n`),
});
process.stdout.write(JSON.stringify({ runtime: `Node ${process.version}`, n, rounds, rows }));
