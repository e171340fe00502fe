// segflake-wasm/snowflake without automatic start-up: call `init()` (or `initSync()`) once
// before anything else. The snowflake build: its own, smaller WebAssembly module
// (segflake_snowflake_bg.wasm) with snowflake generation, layouts, decoding, the codecs and
// obfuscation, the same API, errors and bits as the full package's; segments, serials and
// worker-ID leases are in the full package (`segflake-wasm`).
import initModule, { initSync as initModuleSync, __constants, __setErrorFactory, errorKinds as moduleErrorKinds } from './pkg/segflake_snowflake.js'
import { snowflakeClass, startup, workerIdFromEnvOf } from './startup.js'
import { __takeError, Snowflake as WasmSnowflake, workerIdFromText as wasmWorkerIdFromText } from './pkg/segflake_snowflake.js'

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
} from './pkg/segflake_snowflake.js'

/** The worker ID in environment variable `name` where the host has `process.env` (see core.d.ts). */
export const workerIdFromEnv = workerIdFromEnvOf(wasmWorkerIdFromText)

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
 * `init(input?)` loads the WebAssembly module (by default the `segflake_snowflake_bg.wasm`
 * next to this package's glue code is fetched), `initSync(input)` from bytes or a compiled
 * `WebAssembly.Module`; `isInitialized()` tells whether either has completed.
 */
export const { init, initSync, isInitialized } = startup(
  { init: initModule, initSync: initModuleSync, setErrorFactory: __setErrorFactory, errorKinds: moduleErrorKinds, constants: __constants },
  (constants) => {
    ;[MAX_BATCH, BASE62_LENGTH, BASE32_LENGTH] = constants
  },
)
