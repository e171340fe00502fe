// Public types of segflake. The native classes and functions, with their documentation,
// are generated from the Rust sources into native.d.ts.

export {
  Layout,
  Snowflake,
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
  parseTimeMs,
  formatTimeMs,
  errorKinds,
  coreVersion,
  MAX_BATCH,
  BASE62_LENGTH,
  BASE32_LENGTH,
} from './native'
export type {
  PresetName,
  IdFormat,
  TimeInput,
  SnowflakeOptions,
  LayoutOptions,
  ComposeFields,
  DecodedId,
  ErrorKindInfo,
} from './native'

/** Every stable error code, one per error class. */
export type ErrorCode =
  | 'INVALID_LAYOUT'
  | 'LAYOUT_EXHAUSTED'
  | 'WORKER_ID_OUT_OF_RANGE'
  | 'CLOCK_MOVED_BACKWARDS'
  | 'CLOCK_BEFORE_EPOCH'
  | 'TIME_EXHAUSTED'
  | 'INVALID_ARGUMENT'
  | 'PARSE_ERROR'
  | 'STORE_CONTRACT_VIOLATION'
  | 'SEGMENTS_EXHAUSTED'
  | 'STORE_ERROR'
  | 'SERIAL_EXHAUSTED'
  | 'CLOSED'

/** Base class of every error segflake throws. */
export declare class SegflakeError extends Error {
  /** The stable machine-readable code of the error's class. */
  readonly code: ErrorCode
  static readonly code: ErrorCode | undefined
}
/** A layout parameter is out of range (bit widths, tick, epoch in the future...). */
export declare class InvalidLayoutError extends SegflakeError { readonly code: 'INVALID_LAYOUT' }
/** The layout runs out of time within `minLifetimeYears`; the message says when. */
export declare class LayoutExhaustedError extends SegflakeError { readonly code: 'LAYOUT_EXHAUSTED' }
/** The worker ID does not fit the layout's worker field; the message gives the range. */
export declare class WorkerIdOutOfRangeError extends SegflakeError { readonly code: 'WORKER_ID_OUT_OF_RANGE' }
/** The clock fell behind the last issued tick by more than `maxDriftMs`. */
export declare class ClockMovedBackwardsError extends SegflakeError { readonly code: 'CLOCK_MOVED_BACKWARDS' }
/** The clock reads a time before the layout's epoch. */
export declare class ClockBeforeEpochError extends SegflakeError { readonly code: 'CLOCK_BEFORE_EPOCH' }
/** The layout's time field has run out. */
export declare class TimeExhaustedError extends SegflakeError { readonly code: 'TIME_EXHAUSTED' }
/** An argument has the wrong type or is out of range; the message says what is allowed. */
export declare class InvalidArgumentError extends SegflakeError { readonly code: 'INVALID_ARGUMENT' }
/** Text could not be parsed as an ID of the given format. */
export declare class ParseError extends SegflakeError { readonly code: 'PARSE_ERROR' }
/** A store returned a range that is invalid or overlaps one already received. */
export declare class StoreContractViolationError extends SegflakeError { readonly code: 'STORE_CONTRACT_VIOLATION' }
/** Both segment buffers are empty and the store did not deliver in time. */
export declare class SegmentsExhaustedError extends SegflakeError { readonly code: 'SEGMENTS_EXHAUSTED' }
/** A store (or counter) callback failed. */
export declare class StoreError extends SegflakeError { readonly code: 'STORE_ERROR' }
/** A date-prefixed serial ran out of sequence numbers within one second. */
export declare class SerialExhaustedError extends SegflakeError { readonly code: 'SERIAL_EXHAUSTED' }
/** The generator was closed. */
export declare class ClosedError extends SegflakeError { readonly code: 'CLOSED' }
