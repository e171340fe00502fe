// The tests' build of the full module (`scripts/build-wasm.sh --testing` puts it in test/pkg;
// it is not published): the package's full module plus `__options(set, input, nowMs)` (the
// settings the core accepts, for the shared option vectors) and `__tables()` (the core's
// option and record tables, for the declarations), which the shipped module leaves out.
// Its errors are the installed package's classes (errors.js, by file: the package exports
// no such entry). For runtimes with node:fs (Node, Bun, Deno).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { initSync, __setErrorFactory, __options, __tables } from './pkg/segflake_testing.js';

const pkgDir = path.dirname(createRequire(import.meta.url).resolve('segflake-wasm/package.json'));
const { makeError } = await import(pathToFileURL(path.join(pkgDir, 'errors.js')).href);
initSync({ module: fs.readFileSync(new URL('./pkg/segflake_testing_bg.wasm', import.meta.url)) });
__setErrorFactory(makeError);

/** The hooks only the tests' build exports. */
export const testing = Object.freeze({ __options, __tables });
