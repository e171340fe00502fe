// segflake-wasm without automatic start-up: call `init()` (or `initSync()`) once before
// anything else. For runtimes that load WebAssembly their own way (Cloudflare-style
// workers importing the .wasm as a WebAssembly.Module, custom CDNs). The package's main
// entry (`segflake-wasm`) does this for you.
import initModule, {
  initSync as initModuleSync,
  __constants,
  __setErrorFactory,
  errorKinds as moduleErrorKinds,
} from './pkg/segflake_wasm.js'
import { snowflakeClass, startup, workerIdFromEnvOf } from './startup.js'
import {
  __SegmentEngine,
  __SerialGenerator,
  __RegistryProtocol,
  __redisDurabilitySettings,
  __redisDurabilityWarning,
  __redisTarget,
  __replicaWait,
  __replicaWaitCheck,
  __statements,
  __takeError,
  Snowflake as WasmSnowflake,
  workerIdFromText as wasmWorkerIdFromText,
} from './pkg/segflake_wasm.js'

/** A snowflake generator (see core.d.ts). */
export const Snowflake = snowflakeClass(WasmSnowflake, __takeError)

export {
  Layout,
  Obfuscator,
  presets,
  encode,
  parse,
  encodeDecimal,
  parseDecimal,
  encodeBase62,
  parseBase62,
  encodeBase32,
  parseBase32,
  workerIdFromHostname,
  workerIdFromIpv4,
  workerIdFromText,
  parseTimeMs,
  formatTimeMs,
  errorKinds,
  coreVersion,
} from './pkg/segflake_wasm.js'
/** The worker ID in environment variable `name` where the host has `process.env` (see core.d.ts). */
export const workerIdFromEnv = workerIdFromEnvOf(wasmWorkerIdFromText)
export { SegmentGenerator, SegmentTag, SerialGenerator, HttpStore, MultiStore } from './segment.js'
import { fromRegistry } from './segment.js'
/** A generator whose worker ID is leased from `registry` (see core.d.ts). */
Snowflake.fromRegistry = fromRegistry
/**
 * The engine layer under the drivers (sans-I/O segment engine, serials on a manual clock,
 * what the registries of `segflake/registries` and the stores of `segflake/stores` take
 * from the core), as the native package's `__native`; not part of the public API. The
 * core's option and record tables (`__options`, `__tables`) are in the tests' build only.
 */
export const __native = Object.freeze({
  __SegmentEngine,
  __SerialGenerator,
  __RegistryProtocol,
  __redisDurabilitySettings,
  __redisDurabilityWarning,
  __redisTarget,
  __replicaWait,
  __replicaWaitCheck,
  __statements,
})
export {
  SegflakeError,
  // <generated: error classes>
  InvalidLayoutError,
  LayoutExhaustedError,
  WorkerIdOutOfRangeError,
  ClockMovedBackwardsError,
  ClockBeforeEpochError,
  TimeExhaustedError,
  InvalidArgumentError,
  ParseError,
  StoreContractViolationError,
  SegmentsExhaustedError,
  StoreError,
  SerialExhaustedError,
  ClosedError,
  NoFreeWorkerIdError,
  LeaseExpiredError,
  ClockBehindMarkError,
  ClockSkewError,
  RegistryError,
  UnknownTagError,
  RegistryLostDataError,
  LeafNodeAliveError,
  ClockStalledError,
  // </generated>
} from './errors.js'

/** Which build runs: always 'wasm' here (the native `segflake` package says 'native'). */
export const backend = 'wasm'

/** The largest batch `nextIds` accepts (16,777,216). Set by `init()`. */
export let MAX_BATCH = 0
/** Length of a base62 ID (11). Set by `init()`. */
export let BASE62_LENGTH = 0
/** Length of a base32 ID (13). Set by `init()`. */
export let BASE32_LENGTH = 0

/**
 * `init(input?)` loads the WebAssembly module: `input` may be a URL, a path string, a
 * `Response` (or a promise of one), bytes, or a compiled `WebAssembly.Module`; by default the
 * `segflake_wasm_bg.wasm` next to this package's glue code is fetched. `initSync(input)` loads
 * it synchronously from bytes or a compiled `WebAssembly.Module`. `isInitialized()` tells
 * whether either has completed.
 */
export const { init, initSync, isInitialized } = startup(
  {
    init: initModule,
    initSync: initModuleSync,
    setErrorFactory: __setErrorFactory,
    errorKinds: moduleErrorKinds,
    constants: __constants,
  },
  (constants) => {
    ;[MAX_BATCH, BASE62_LENGTH, BASE32_LENGTH] = constants
  },
)
