// segflake-wasm for Cloudflare Workers (workerd): Workers cannot fetch or compile WebAssembly
// at run time, so the .wasm is imported as a module (wrangler, and miniflare's CompiledWasm
// rule, turn it into a compiled WebAssembly.Module) and started synchronously on import.
import wasmModule from './pkg/segflake_wasm_bg.wasm'
import { initSync } from './core.js'

initSync(wasmModule)

export * from './core.js'
