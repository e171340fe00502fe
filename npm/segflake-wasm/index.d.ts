// segflake-wasm: the WebAssembly module is loaded when this entry is imported.
export * from './core.js'
