// segflake-wasm for Node.js: the WebAssembly module is read from the package directory.
import { readFileSync } from 'node:fs'
import { initSync } from './core.js'

initSync(readFileSync(new URL('./pkg/segflake_wasm_bg.wasm', import.meta.url)))

export * from './core.js'
