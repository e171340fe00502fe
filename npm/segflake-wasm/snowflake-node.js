// segflake-wasm/snowflake for Node.js: the WebAssembly module is read from the package directory.
import { readFileSync } from 'node:fs'
import { initSync } from './snowflake-core.js'

initSync(readFileSync(new URL('./pkg/segflake_snowflake_bg.wasm', import.meta.url)))

export * from './snowflake-core.js'
