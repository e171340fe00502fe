// segflake-wasm/snowflake for browsers, bundlers, Deno and other ES module hosts: the
// snowflake build's WebAssembly module is fetched from next to its glue code (bundlers see
// the `new URL(..., import.meta.url)` in it and emit the .wasm as an asset) before the
// exports can be used.
import { init } from './snowflake-core.js'

await init()

export * from './snowflake-core.js'
