// segflake-wasm/snowflake for Cloudflare Workers (workerd): the .wasm is imported as a
// compiled module (see workerd.js) and started synchronously on import.
import wasmModule from './pkg/segflake_snowflake_bg.wasm'
import { initSync } from './snowflake-core.js'

initSync(wasmModule)

export * from './snowflake-core.js'
