// Types of segflake-wasm/snowflake (snowflake-core.js): the snowflake build exports the
// names below with the same types as the full package (core.d.ts), except that its
// Snowflake has no `fromRegistry` (worker-ID leases are in the full package).
import type { Snowflake as FullSnowflake } from './core.js';
import type { SnowflakeOptions } from './tables.js';
export type {
  PresetName,
  TimeInput,
  IdInput,
  LayoutOptions,
  LayoutProperties,
  SnowflakeOptions,
  DecodedId,
  ErrorCode,
} from './tables.js';
export type { IdFormat, ComposeFields, ErrorKindInfo } from './core.js';
export {
  SegflakeError,
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
} from './tables.js';

/** A snowflake generator (see the full package's `Snowflake`, core.d.ts). */
export type Snowflake = FullSnowflake;
export declare const Snowflake: {
  new (options: SnowflakeOptions): Snowflake;
  readonly prototype: Snowflake;
};
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
  workerIdFromEnv,
  parseTimeMs,
  formatTimeMs,
  errorKinds,
  coreVersion,
  MAX_BATCH,
  backend,
  BASE62_LENGTH,
  BASE32_LENGTH,
  init,
  initSync,
  isInitialized,
} from './core.js';
