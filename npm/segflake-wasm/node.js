// segflake-wasm for Node.js: the WebAssembly module is read from the package directory.
import { readFileSync } from 'node:fs'
import https from 'node:https'
import tls from 'node:tls'
import { initSync } from './core.js'
import { __useNodeTls } from './segment.js'

// HttpStore's `ca`, `cert` and `key` go through node:https here (see segment.js).
__useNodeTls({ https, tls })

initSync(readFileSync(new URL('./pkg/segflake_wasm_bg.wasm', import.meta.url)))

export * from './core.js'
