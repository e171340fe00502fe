// segflake-wasm for browsers, bundlers, Deno and other ES module hosts: the WebAssembly
// module is fetched from next to the glue code (bundlers see the `new URL(..., import.meta.url)`
// in it and emit the .wasm as an asset) before the exports can be used.
import { init } from './core.js'

await init()

export * from './core.js'
