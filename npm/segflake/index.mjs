// ES module entry point: the same module instance as the CommonJS entry (no dual-package
// hazard: one set of error classes, one addon load per thread).
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const segflake = require('./index.js')

export default segflake
export const {
  backend,
  Layout,
  Snowflake,
  Obfuscator,
  SegmentGenerator,
  SegmentTag,
  SerialGenerator,
  HttpStore,
  MultiStore,
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
  workerIdFromEnv,
  parseTimeMs,
  formatTimeMs,
  errorKinds,
  coreVersion,
  MAX_BATCH,
  BASE62_LENGTH,
  BASE32_LENGTH,
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
} = segflake
