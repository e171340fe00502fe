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
  IdInput,
  TimeInput,
  SnowflakeOptions,
  LayoutOptions,
  ComposeFields,
  DecodedId,
  ErrorKindInfo,
  SegmentStats,
  SerialParts,
  LeaseOptions,
  LeaseStats,
  LayoutProperties,
  SegmentSettings,
  SerialSettings,
} from './native'
import type { SegmentSettings, SerialSettings } from './native'
// The segment and serial drivers: declared once for both npm packages (npm/shared/driver.d.ts,
// copied into the package as driver.d.ts when it is built).
export { SegmentGenerator, SegmentTag, SerialGenerator, HttpStore, MultiStore } from './driver'
export type { HttpStoreOptions } from './driver'
export type { Registry, LeasedSnowflake, LeasedSnowflakeOptions } from './driver'
import type { Registry, LeasedSnowflake, LeasedSnowflakeOptions } from './driver'

declare module './native' {
  namespace Snowflake {
    /**
     * A generator whose worker ID is leased from `registry` (see `segflake/registries`, or any
     * object with `claim`, `renew`, `release` and `peers`). Resolves once a worker ID is held
     * and the clock checks passed; rejects with `NoFreeWorkerIdError`, `ClockBehindMarkError`,
     * `ClockSkewError`, `LeafNodeAliveError` or `RegistryError`. A worker ID claimed without a
     * time mark (never used, or forgotten by the registry) starts above claim time +
     * `maxDriftMs` + `markAheadMs` + `clockSkewAllowanceMs`, so the first start on a fresh
     * registry waits about `markAheadMs + clockSkewAllowanceMs` (4 s by default). No ID carries a time above the mark the registry
     * accepted, so a holder paused past its lease and its successor issue disjoint IDs.
     */
    function fromRegistry(registry: Registry, options?: LeasedSnowflakeOptions): Promise<LeasedSnowflake>
  }
}

/**
 * Which build runs: `'native'`, the prebuilt addon of this platform, or `'wasm'`, the
 * WebAssembly build (segflake-wasm) the package falls back to where no addon loads (it
 * warns once, code `SEGFLAKE_WASM_FALLBACK`). `SEGFLAKE_BACKEND=native|wasm` chooses one.
 * Both have this API and these error codes.
 */
export declare const backend: 'native' | 'wasm'



/** What a segment store's `allocate` resolves to: the tag's new `maxId` and the step it used. */
export interface Allocation {
  maxId: bigint | number
  step: bigint | number
  /**
   * The step the store keeps for the tag (Leaf's `leaf_alloc.step`), if it keeps one: the
   * generator then starts from it and never goes below it, in place of its own `step`.
   */
  tagStep?: bigint | number
  /**
   * The residue class the store's database issues (Tinyid's `delta` and `remainder`), if it
   * states one: with several stores (`MultiStore`), the generator issues from this answer
   * only the IDs `≡ remainder (mod delta)`, whatever the store's place in the list. Give both
   * or neither; `delta` must be the number of stores and the remainders a permutation of
   * `0..delta`, else the answer is refused naming the store.
   */
  delta?: bigint | number
  remainder?: bigint | number
}

/**
 * A Leaf-style store: atomically performs `max_id = max_id + step` for `tag` and resolves
 * to the new `maxId` and the `step` used; the generator then owns `[maxId - step, maxId)`.
 * `null` says the store has no such tag: callers get `UnknownTagError`.
 */
export interface SegmentStore {
  allocate(tag: string, step: number): Promise<Allocation | null> | Allocation | null
}

/** Options of `new SegmentGenerator(...)`. */
export interface SegmentGeneratorOptions extends SegmentSettings {
  /** The store: an object with `allocate(tag, step)` (called as a method) or such a function. */
  store: SegmentStore | ((tag: string, step: number) => Promise<Allocation | null> | Allocation | null)
}

/** Options of `new SerialGenerator(...)`. */
export interface SerialOptions extends SerialSettings {
  /**
   * A shared per-second counter for `nextFromCounter`: a function (e.g. Redis INCR on a key
   * named after `key`), or a script counter running the core's Redis script
   * (`RedisSerialCounter` from `segflake/counters`).
   */
  counter?: ((key: string, unixSeconds: number) => Promise<number | bigint> | number | bigint) | ScriptCounter
}

/** A shared counter that runs the core's serial script: `key` follows its prefix and a colon; the reply is the script's `[status, sequence, nowMs]`. */
export interface ScriptCounter {
  runSerialScript(key: string, args: number[]): Promise<unknown>
}

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
  | 'NO_FREE_WORKER_ID'
  | 'LEASE_EXPIRED'
  | 'CLOCK_BEHIND_MARK'
  | 'CLOCK_SKEW'
  | 'REGISTRY_ERROR'
  | 'UNKNOWN_TAG'
  | 'REGISTRY_LOST_DATA'
  | 'LEAF_NODE_ALIVE'

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
/** Every worker ID of the layout stayed leased by live holders for `claimWaitMs`. */
export declare class NoFreeWorkerIdError extends SegflakeError { readonly code: 'NO_FREE_WORKER_ID' }
/** The worker-ID lease may have expired or was lost, or IDs reached the time mark the registry accepted; IDs resume once a lease is held again. */
export declare class LeaseExpiredError extends SegflakeError { readonly code: 'LEASE_EXPIRED' }
/** This host's clock is behind the worker ID's time mark by more than `maxDriftMs`. */
export declare class ClockBehindMarkError extends SegflakeError { readonly code: 'CLOCK_BEHIND_MARK' }
/** This host's clock differs from the live holders' median by more than `maxPeerSkewMs`, or from a serial counter's clock by more than `counterMaxBehindMs`/`counterMaxAheadMs`. */
export declare class ClockSkewError extends SegflakeError { readonly code: 'CLOCK_SKEW' }
/** The worker-ID registry failed or answered outside its contract. */
export declare class RegistryError extends SegflakeError { readonly code: 'REGISTRY_ERROR' }
/** The store has no such segment tag: create it (Leaf: a leaf_alloc row), or let the store create missing tags. */
export declare class UnknownTagError extends SegflakeError { readonly code: 'UNKNOWN_TAG' }
/** The registry lost the record of a worker ID this process held (a restart without persistence, FLUSHALL, eviction, a failover, a restore): IDs stopped at once and resume after a new claim. */
export declare class RegistryLostDataError extends SegflakeError { readonly code: 'REGISTRY_LOST_DATA' }
/** A Leaf snowflake node still reports for the node identity (`ip:port`) this process would take over: stop that Leaf node first. */
export declare class LeafNodeAliveError extends SegflakeError { readonly code: 'LEAF_NODE_ALIVE' }
