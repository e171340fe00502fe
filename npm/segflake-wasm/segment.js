// The segment generator and date serials of segflake-wasm: the JS drivers shared with the
// native package (driver.js, copied from npm/shared/driver.js when the package is built)
// over the core's sans-I/O engine and serial generator in the WebAssembly module.
import { __SegmentEngine, __SerialGenerator, __counterAttempts, __segmentConfig } from './pkg/segflake_wasm.js'
import { SegflakeError, errorOfCode } from './errors.js'
import { createDrivers } from './driver.js'

export const { SegmentGenerator, SegmentTag, SerialGenerator } = createDrivers({
  SegmentEngine: __SegmentEngine,
  bindTake: (engine) => (onFetch) => engine.take(onFetch) ?? null,
  segmentConfig: __segmentConfig,
  Serial: __SerialGenerator,
  counterAttempts: __counterAttempts,
  makeError: errorOfCode,
  SegflakeError,
  now: () => (typeof performance !== 'undefined' ? performance.now() : Date.now()),
})
