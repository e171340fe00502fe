// segflake-wasm: the WebAssembly module is loaded when this entry is imported.
export * from './core.js'
// The segment and serial drivers: declared once for both npm packages (npm/shared/driver.d.ts,
// copied into the package as driver.d.ts when it is built).
export { SegmentGenerator, SegmentTag, SerialGenerator } from './driver.js'
