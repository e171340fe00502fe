// The shared cases (cases.js) in Node, against the package installed from the packed
// tarball: scripts/test-wasm.sh copies this directory next to a node_modules that holds
// only segflake-wasm from dist/, so `import 'segflake-wasm'` is what a user gets.
import { test } from 'node:test';
import * as lib from 'segflake-wasm';
import { defineCases } from './cases.js';
import { loadVectors } from './vectors.mjs';
import { testing } from './testing.mjs';

for (const c of defineCases(lib, loadVectors(), testing)) test(`node: ${c.name}`, c.fn);
