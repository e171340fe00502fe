// A Worker as a segflake-wasm user deploys it, shared by workerd.test.mjs and
// bench/wasm/startup.mjs: esbuild bundles it the way wrangler does (the `workerd`, `worker`
// and `browser` conditions, the .wasm kept as a module file), and miniflare runs the bundle
// in workerd with the CompiledWasm rule wrangler applies.
import { execFileSync } from 'node:child_process';
import path from 'node:path';

/** Bundles `entry` with the esbuild binary `esbuild` into `outdir` (from `cwd`, where its imports resolve); extra esbuild arguments in `args`. */
export function bundleWorker(esbuild, entry, outdir, cwd, args = []) {
  execFileSync(esbuild, [entry, '--bundle', '--format=esm', '--platform=neutral', '--conditions=workerd,worker,browser',
    '--loader:.wasm=copy', `--outdir=${outdir}`, '--log-level=warning', ...args], { cwd });
}

/** Miniflare's options for the bundled Worker `script` (a file name) in `outdir`. */
export function workerOptions(outdir, script) {
  return {
    modules: true,
    scriptPath: path.join(outdir, script),
    modulesRoot: outdir,
    modulesRules: [{ type: 'CompiledWasm', include: ['**/*.wasm'] }],
    compatibilityDate: '2026-07-30',
  };
}
