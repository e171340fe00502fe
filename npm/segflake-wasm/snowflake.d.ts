// segflake-wasm/snowflake: the WebAssembly module is loaded when this entry is imported.
export * from './snowflake-core.js'
