'use strict'
// The WebAssembly backend of `segflake`: the segflake-wasm package (a dependency, loaded
// through its CommonJS build) under this package's export names, for platforms where no
// native addon loads. The same core compiled to wasm32 gives the same IDs, options and
// error codes; it is slower per call, and its worker-ID lease owner tokens carry no host
// name.

/** segflake-wasm exports that are not part of segflake's API (it starts itself here). */
const WASM_ONLY = new Set(['init', 'initSync', 'isInitialized', '__native'])

/**
 * The package's exports over segflake-wasm. `addonError` is why the native addon did not
 * load (undefined when SEGFLAKE_BACKEND=wasm chose this backend): it is reported once per
 * JS environment as a warning with the code SEGFLAKE_WASM_FALLBACK.
 */
function wasmApi(addonError) {
  const wasm = require('segflake-wasm')
  if (addonError !== undefined) {
    const platform = `${process.platform}-${process.arch}`
    process.emitWarning(
      `segflake: no native addon loads on ${platform}; using the WebAssembly build (segflake-wasm), ` +
        'with the same API and slower calls. Install with optional dependencies to get the ' +
        'native addon, or set SEGFLAKE_BACKEND=wasm to choose this backend without this warning.',
      { code: 'SEGFLAKE_WASM_FALLBACK', detail: String(addonError && addonError.message) },
    )
  }
  const api = {} // segflake-wasm's own `backend` is 'wasm'
  for (const name of Object.keys(wasm)) if (!WASM_ONLY.has(name)) api[name] = wasm[name]
  // The engine layer under the drivers (registries and stores read the core's statements through it).
  Object.defineProperty(api, '__native', { value: wasm.__native, enumerable: false })
  return api
}

module.exports = { wasmApi }
