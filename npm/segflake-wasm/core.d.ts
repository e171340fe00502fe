// Types of segflake-wasm. The names and shapes match the native `segflake` package.

/** The layout presets. */
export type PresetName = 'twitter' | 'sonyflake' | 'uid-generator' | 'js-safe' | 'twitter-dc';

/** Text forms of an ID. */
export type IdFormat = 'decimal' | 'base62' | 'base32';

/** A point in time: Unix milliseconds, a `Date`, or an ISO-8601 UTC string (`'2025-01-01'`). */
export type TimeInput = number | bigint | string | Date;

/** An ID argument: a `bigint`, a safe-integer `number`, or a decimal string. */
export type IdInput = bigint | number | string;

/** The parameters of a layout, as accepted by `new Layout(...)`. */
export interface LayoutOptions {
  /** The preset the other fields override (default `"twitter"`). */
  preset?: PresetName;
  /** Width of the time field, 8..=63. */
  timeBits?: number;
  /** Width of the worker field, 0..=31. */
  workerBits?: number;
  /** How many of the worker field's high bits name a datacenter, 0..=workerBits (default 0; `'twitter-dc'`: 5). */
  datacenterBits?: number;
  /** Width of the sequence field, 0..=31. */
  sequenceBits?: number;
  /** Length of one time unit in milliseconds, 1..=86400000. */
  tickMs?: number;
  /** Unix milliseconds of tick 0 (or a `Date`, or an ISO-8601 UTC string); not in the future. */
  epochMs?: TimeInput;
  /** `"time-worker-sequence"` (default) or `"time-sequence-worker"` (Sonyflake). */
  order?: 'time-worker-sequence' | 'time-sequence-worker';
  /** Refuse the layout if it runs out of time within this many years (default 10; 0 = off). */
  minLifetimeYears?: number;
}

/** Options of `new Snowflake(...)`. */
export interface SnowflakeOptions {
  /**
   * This generator's worker ID, `0..=layout.maxWorkerId`. Required: there is no random
   * default. With `datacenterId`, the worker within that datacenter.
   */
  workerId: number | bigint;
  /** The datacenter, on a layout with a datacenter field (`'twitter-dc'`; hutool's `dataCenterId`). */
  datacenterId?: number | bigint;
  /** A preset name (default `'twitter'`), custom layout options, or a `Layout`. */
  layout?: PresetName | LayoutOptions | Layout;
  /** Replaces the layout's epoch. */
  epochMs?: TimeInput;
  /** How far the logical tick may run ahead of the clock (default 2000; 0 = strict, wait for the next tick). */
  maxDriftMs?: number | bigint;
  /** `'zero'` (default) or `'random'` (Leaf's random start below 100, for even `id % N` sharding). */
  sequenceStart?: 'zero' | 'random';
  /** A high-water mark persisted before a restart: no ID will carry a time at or below it. */
  notBeforeMs?: TimeInput;
}

/** Fields to pack into an ID: exactly one of `tick` and `timestampMs`. */
export interface ComposeFields {
  tick?: number | bigint;
  timestampMs?: TimeInput;
  /**
   * Defaults to 0 on a `Layout`, to the generator's worker ID on a `Snowflake`. With
   * `datacenterId`, the worker within that datacenter.
   */
  workerId?: number | bigint;
  /** The datacenter, on a layout with a datacenter field (`'twitter-dc'`). */
  datacenterId?: number | bigint;
  /** Defaults to 0. */
  sequence?: number | bigint;
}

/** The fields of an ID. */
export interface DecodedId {
  /** Unix milliseconds of the start of the ID's tick. */
  timestampMs: number;
  /** Ticks since the layout's epoch. */
  tick: number;
  /** The worker field; on a layout with a datacenter field, the worker within `datacenterId`. */
  workerId: number;
  sequence: number;
  /** The datacenter, on a layout with a datacenter field (absent otherwise). */
  datacenterId?: number;
}

/** Every error kind: `{ code, className, status }`, in status order. */
export interface ErrorKindInfo {
  code: string;
  className: string;
  status: number;
}

/**
 * A validated snowflake layout: how `time | worker | sequence` are packed into 63 bits.
 *
 * ```js
 * new Layout()                       // twitter: 41/10/12 bits, 1 ms, epoch 2010-11-04
 * new Layout('sonyflake')
 * Layout.preset('twitter', '2024-01-01')   // a preset with another epoch
 * new Layout({ timeBits: 40, workerBits: 8, sequenceBits: 15, epochMs: '2025-01-01' })
 * ```
 */
export declare class Layout {
  /**
   * Builds and validates a layout: a preset name (`"twitter"` when omitted,
   * `"sonyflake"`, `"uid-generator"`, `"js-safe"`) or an object of layout options whose
   * missing fields default to its `preset`'s (twitter by default). Throws `InvalidLayoutError` or
   * `LayoutExhaustedError` (says when it would run out).
   */
  constructor(layout?: PresetName | LayoutOptions | Layout);
  /** A preset, optionally with its epoch replaced (Unix ms, `Date` or ISO-8601 string). */
  static preset(name: PresetName, epochMs?: TimeInput): Layout;
  /** Width of the time field. */
  readonly timeBits: number;
  /** Width of the worker field. */
  readonly workerBits: number;
  /** Width of the sequence field. */
  readonly sequenceBits: number;
  /** Bits used in all (at most 63). */
  readonly totalBits: number;
  /** Length of one tick in milliseconds. */
  readonly tickMs: number;
  /** Unix milliseconds of tick 0. */
  readonly epochMs: number;
  /** `"time-worker-sequence"` or `"time-sequence-worker"`. */
  readonly order: 'time-worker-sequence' | 'time-sequence-worker';
  /** The lifetime check this layout passed (years; 0 = none). */
  readonly minLifetimeYears: number;
  /** How long the time field lasts from the epoch, in milliseconds. */
  readonly lifetimeMs: number;
  /** Unix milliseconds at which the time field runs out. */
  readonly exhaustsAtMs: number;
  /** The layout's ceiling: IDs one worker can issue per second. */
  readonly maxIdsPerSecond: number;
  /**
   * Unix milliseconds from which IDs exceed `Number.MAX_SAFE_INTEGER`, or `null` if
   * this layout's IDs always fit a JS number.
   */
  readonly jsSafeUntilMs: number | null;
  /** The largest worker ID. */
  readonly maxWorkerId: number;
  /** The largest sequence number within a tick. */
  readonly maxSequence: number;
  /** The largest tick (ticks since the epoch) the time field holds. */
  readonly maxTick: number;
  /** The largest ID this layout can produce. */
  readonly maxId: bigint;
  /** How many of the worker field's high bits name a datacenter (0: none). */
  readonly datacenterBits: number;
  /** The parameters as a plain object (`new Layout(layout.toJSON())` rebuilds it). */
  toJSON(): Required<Omit<LayoutOptions, 'preset' | 'datacenterBits'>> & {
    epochMs: number;
    datacenterBits?: number;
  };
  /**
   * Splits an ID into `{ timestampMs, tick, workerId, sequence }`. Throws
   * `InvalidArgumentError` for an ID with bits above the layout's.
   */
  decode(id: IdInput): DecodedId;
  /**
   * Packs fields into an ID: give `tick` or `timestampMs` (rounded down to its tick),
   * plus `workerId` and `sequence` (both default to 0). Each is checked against its width.
   */
  compose(fields: ComposeFields): bigint;
  /** Releases the WebAssembly memory now instead of at garbage collection. */
  free(): void;
}

/**
 * A snowflake generator: strictly increasing 63-bit IDs, `time | worker | sequence`,
 * with time from `Date.now()`.
 *
 * ```js
 * const gen = new Snowflake({ workerId: 7 });          // twitter layout
 * gen.nextId();          // 1862551466113253376n
 * gen.nextIdString();    // "1862551466113253377"
 * gen.nextIds(1000);     // BigUint64Array(1000)
 * ```
 *
 * One generator per worker ID: two generators (in any tab, worker or process) sharing a
 * worker ID can issue the same IDs.
 */
export declare class Snowflake {
  /**
   * A generator whose worker ID is leased from `registry` (any object with `claim`, `renew`,
   * `release` and `peers`, each returning a value or a Promise). Resolves once a worker ID is
   * held; `close()` releases it. No ID carries a time above the mark the registry accepted.
   */
  static fromRegistry(registry: Registry, options?: LeasedSnowflakeOptions): Promise<LeasedSnowflake>;
  /**
   * Creates a generator. `workerId` is required (there is no random default); the
   * layout defaults to `"twitter"`. Throws `WorkerIdOutOfRangeError` for a worker ID
   * that does not fit the layout, `InvalidLayoutError`/`LayoutExhaustedError` for a bad
   * layout, and `InvalidArgumentError` for malformed options.
   */
  constructor(options: SnowflakeOptions);
  /**
   * The next ID, strictly greater than every ID this generator issued before.
   * Throws `ClockMovedBackwardsError` if the clock fell behind the last issued tick by
   * more than `maxDriftMs`.
   */
  nextId(): bigint;
  /** The next ID as a decimal string (JSON-safe). */
  nextIdString(): string;
  /**
   * The next ID as a JS number. Only for layouts of at most 53 bits (`"js-safe"`);
   * other layouts throw `InvalidLayoutError`.
   */
  nextIdNumber(): number;
  /** `n` strictly increasing IDs (1..=16777216), reserved in runs of the sequence field. */
  nextIds(n: number): BigUint64Array;
  /** Fills `target` (1..=16777216 elements) with strictly increasing IDs; returns `target`. */
  fillIds(target: BigUint64Array): BigUint64Array;
  /**
   * Unix milliseconds of the highest tick issued so far. Persist it now and then and
   * pass it as `notBeforeMs` after a restart.
   */
  readonly highWaterMark: number;
  /** This generator's worker ID. */
  readonly workerId: number;
  /** The drift bound in milliseconds. */
  readonly maxDriftMs: number;
  /** `"zero"` or `"random"`. */
  readonly sequenceStart: 'zero' | 'random';
  /** The layout IDs are packed with. */
  readonly layout: Layout;
  /** Splits an ID of this generator's layout into its fields. */
  decode(id: IdInput): DecodedId;
  /** Packs fields with this generator's layout; `workerId` defaults to this generator's. */
  compose(fields: ComposeFields): bigint;
  /** Releases the WebAssembly memory now instead of at garbage collection. */
  free(): void;
}

/**
 * A keyed, reversible permutation of the IDs below 2^63 (Speck64/128 with
 * cycle-walking), for IDs shown to the public. The same key gives the same mapping in
 * every segflake binding.
 */
export declare class Obfuscator {
  /** `key`: exactly 16 bytes (a `Uint8Array`) or a string of 32 hex digits. */
  constructor(key: Uint8Array | string);
  /** Maps an ID below 2^63 to another ID below 2^63. */
  obfuscate(id: IdInput): bigint;
  /** The inverse of `obfuscate`. */
  deobfuscate(id: IdInput): bigint;
  /** Releases the WebAssembly memory now instead of at garbage collection. */
  free(): void;
}

/** A snapshot of one tag's segments. Ranges are half-open `[start, end)`. */
export interface SegmentStats {
  tag: string;
  /** The current segment (`currentStart === currentEnd` when there is none yet). */
  currentStart: bigint;
  currentEnd: bigint;
  /** The next ID the current segment would issue. */
  position: bigint;
  /** IDs left in the current segment. */
  remaining: number;
  /** Whether the next segment is ready, and its range (0n, 0n when not). */
  nextReady: boolean;
  nextStart: bigint;
  nextEnd: bigint;
  /** The step of the fetch in flight, or of the last request. */
  step: number;
  fetchInFlight: boolean;
  /** Completed fetches (successful or not), failures among them, failures in a row. */
  fetches: number;
  failures: number;
  consecutiveFailures: number;
  /** The last failure (store error or refused range), if any. */
  lastError?: string;
  /** How long the last completed fetch took, in milliseconds. */
  lastFetchLatencyMs?: number;
  /** IDs taken from this tag's segments so far. */
  issued: number;
  /** Recent consumption rate. */
  idsPerSecond: number;
  /**
   * Seconds the buffered IDs would last at `idsPerSecond` if the store went down now;
   * `null` when nothing is being consumed.
   */
  runwaySeconds?: number;
}


/** The fields of a serial. */
export interface SerialParts {
  /** `yyMMddHHmmss` as a number (e.g. `250413120000`). */
  date: number;
  /** The Unix second of `date`. */
  unixSeconds: number;
  workerId: number;
  sequence: number;
}

/** What a segment store's `allocate` resolves to: the tag's new `maxId` and the step it used. */
export interface Allocation {
  maxId: bigint | number;
  step: bigint | number;
  /**
   * The step the store keeps for the tag (Leaf's `leaf_alloc.step`), if it keeps one: the
   * generator then starts from it and never goes below it, in place of its own `step`.
   */
  tagStep?: bigint | number;
}

/**
 * A Leaf-style store: atomically performs `max_id = max_id + step` for `tag` and resolves
 * to the new `maxId` and the `step` used; the generator then owns `[maxId - step, maxId)`.
 * `null` says the store has no such tag: callers get `UnknownTagError`.
 */
export interface SegmentStore {
  allocate(tag: string, step: number): Promise<Allocation | null> | Allocation | null;
}

/** Options of `new SegmentGenerator(...)`. */
export interface SegmentGeneratorOptions {
  /** The store: an object with `allocate(tag, step)` (called as a method) or such a function. */
  store: SegmentStore | ((tag: string, step: number) => Promise<Allocation | null> | Allocation | null);
  /** Step of the first requests and floor of the dynamic step (default 1000). */
  step?: number | bigint;
  /** Ceiling of the dynamic step (default 1,000,000). */
  maxStep?: number | bigint;
  /** Leaf's dynamic step (default true): double under 15 minutes a segment, halve over 30. */
  dynamicStep?: boolean;
  /** Fetch the next segment once this percentage of the current one is used (default 10). */
  prefetchPercent?: number;
  /** After a failed prefetch, retry no sooner than this while IDs remain (default 1000 ms). */
  retryBackoffMs?: number | bigint;
  /** How long a caller waits for a segment before SegmentsExhaustedError (default 1000 ms). */
  waitTimeoutMs?: number | bigint;
  /** A store call not settled after this long counts as failed (default 10000 ms). */
  storeTimeoutMs?: number | bigint;
}

// The segment and serial drivers: declared once for both npm packages (npm/shared/driver.d.ts,
// shipped as driver.d.ts).
export { SegmentGenerator, SegmentTag, SerialGenerator, HttpStore, MultiStore } from './driver.js';
export type { HttpStoreOptions } from './driver.js';
export type { Registry, LeasedSnowflake, LeasedSnowflakeOptions } from './driver.js';
import type { Registry, LeasedSnowflake, LeasedSnowflakeOptions } from './driver.js';

/** Options of a leased generator besides the snowflake options (`Snowflake.fromRegistry`). */
export interface LeaseOptions {
  /** How long a claim or renewal holds the worker ID; renewed every third of it. Default 30000. */
  leaseTtlMs?: number;
  /** How far ahead of the clock (beyond `maxDriftMs`) each renewal raises the time mark. Default 3000. */
  markAheadMs?: number;
  /** The worker ID tried first (default: one derived from the owner label), then the next ones. */
  preferredWorkerId?: number;
  /** How long start-up keeps trying while every worker ID is held (`NoFreeWorkerIdError`). Default 10000. */
  claimWaitMs?: number;
  /** How long start-up waits for this host's clock to reach the worker ID's mark (`ClockBehindMarkError`). Default 10000. */
  clockWaitMs?: number;
  /** Refuse to start when this host's clock is this far from the live holders' median (`ClockSkewError`); 0: off. */
  maxPeerSkewMs?: number;
  /** How long one registry call may run before it counts as failed. Default 3000. */
  registryTimeoutMs?: number;
  /**
   * How far apart the fleet's clocks may be: a worker ID claimed without a time mark (never
   * used, or forgotten by the registry) starts above claim time + `maxDriftMs` + `markAheadMs`
   * + this, so start-up waits about `markAheadMs` + this. Default 1000; 0..=3600000.
   */
  clockSkewAllowanceMs?: number;
}

/** A leased generator's lease, for monitoring (`leaseStats()`). */
export interface LeaseStats {
  /** The owner token every registry call carries: the label (the host name) and this engine's nonce, `label#<16 hex digits>`. */
  owner: string;
  /** `claiming`, `starting`, `held`, `releasing`, `failed` or `closed`. */
  state: string;
  /** The worker ID held (absent while none is). */
  workerId?: number;
  /** How long the lease is certainly still held without another renewal. */
  leaseRemainingMs?: number;
  /** The highest time mark the registry accepted: no ID carries a later time. */
  markMs: bigint;
  /** How far the mark is ahead of the clock (negative: IDs wait for a renewal). */
  markAheadMs: number;
  /** Successful renewals. */
  renewals: number;
  /** How long the last successful renewal took. */
  lastRenewLatencyMs?: number;
  /** Registry calls that failed or answered outside the contract. */
  failures: number;
  /** Failures since the last success. */
  consecutiveFailures: number;
  /** Leases lost (expired, taken, or forgotten by the registry) while held. */
  lost: number;
  /** The registry's last error. */
  lastError?: string;
}


/** Options of `new SerialGenerator(...)`. */
export interface SerialOptions {
  /** This generator's worker number, `0..10^workerDigits` (default 0). */
  workerId?: number | bigint;
  /** Worker digits after the date, 0..=6 (default 0). */
  workerDigits?: number;
  /** Sequence digits at the end, 1..=7 (default 4); worker + sequence digits at most 7. */
  sequenceDigits?: number;
  /** Print the date at this fixed offset from UTC, -1080..=1080 minutes (default 0). */
  utcOffsetMinutes?: number;
  /** A persisted last serial: nothing at or below it is issued. */
  last?: bigint | number | string;
  /**
   * A shared per-second counter for `nextFromCounter`: a function (e.g. Redis INCR on a key
   * named after `key`), or a script counter running the core's Redis script
   * (`RedisSerialCounter` from `segflake/counters`).
   */
  counter?: ((key: string, unixSeconds: number) => Promise<number | bigint> | number | bigint) | ScriptCounter;
  /** A counter call not settled after this long fails with `StoreError` (default 5000 ms). */
  counterTimeoutMs?: number;
  /** The Redis counter refuses a second that ended more than this long before its clock, and keeps each second's key that long; the same on every host (0..=86400000, default 60000). */
  counterMaxBehindMs?: number;
  /** The Redis counter refuses a second that starts more than this long after its clock (0..=86400000, default 60000). */
  counterMaxAheadMs?: number;
}

/** A shared counter that runs the core's serial script: `key` follows its prefix and a colon; the reply is the script's `[status, sequence, nowMs]`. */
export interface ScriptCounter {
  runSerialScript(key: string, args: number[]): Promise<unknown>;
}

/** The engine layer under the drivers; not part of the public API. */
export declare const __native: unknown;

/** The preset names. */
export declare function presets(): PresetName[];

/**
 * The text form of an ID: `"decimal"` (default), `"base62"` (11 characters) or
 * `"base32"` (13 characters, Crockford). The fixed-width forms sort like the numbers.
 */
export declare function encode(id: IdInput, format?: IdFormat): string;
/**
 * Parses text made by `encode` in the same format. Throws `ParseError` saying which
 * character at which position is wrong.
 */
export declare function parse(text: string, format?: IdFormat): bigint;
/** The decimal string of an ID. */
export declare function encodeDecimal(id: IdInput): string;
/** Parses a decimal ID: digits only, at most 2^64-1. */
export declare function parseDecimal(text: string): bigint;
/** The 11-character base62 form (`0-9A-Za-z`); sorts like the number. */
export declare function encodeBase62(id: IdInput): string;
/** Parses an 11-character base62 ID. */
export declare function parseBase62(text: string): bigint;
/** The 13-character Crockford base32 form; sorts like the number. */
export declare function encodeBase32(id: IdInput): string;
/** Parses a 13-character Crockford base32 ID (case-insensitive; I, L read as 1 and O as 0). */
export declare function parseBase32(text: string): bigint;

/** The ordinal of a Kubernetes StatefulSet pod from its hostname: `web-7` → 7. */
export declare function workerIdFromHostname(hostname: string): number;
/** The low `workerBits` bits of a dotted-quad IPv4 address: `10.0.3.7` with 10 bits → 775. */
export declare function workerIdFromIpv4(address: string, workerBits: number): number;

/**
 * Parses Unix milliseconds or an ISO-8601 UTC time (`2025-01-01`,
 * `2025-01-01T00:00:00.000Z`) into Unix milliseconds.
 */
export declare function parseTimeMs(text: string): number;
/** Formats Unix milliseconds as ISO-8601 UTC (`2025-01-01T00:00:00.000Z`). */
export declare function formatTimeMs(unixMs: number | bigint): string;

/** Every error kind of the core, in status order. */
export declare function errorKinds(): ErrorKindInfo[];
/** The version of the segflake core inside the WebAssembly module. */
export declare function coreVersion(): string;

/** The largest batch `nextIds` accepts (16,777,216). */
export declare const MAX_BATCH: number;
/** Which build runs: always `'wasm'` here (the native `segflake` package says `'native'`, or `'wasm'` where it falls back to this package). */
export declare const backend: 'wasm';
/** Length of a base62 ID (11). */
export declare const BASE62_LENGTH: number;
/** Length of a base32 ID (13). */
export declare const BASE32_LENGTH: number;

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
  | 'LEAF_NODE_ALIVE';

/** Base class of every error segflake throws; `code` is a stable string shared by all bindings. */
export declare class SegflakeError extends Error {
  constructor(message?: string, options?: ErrorOptions);
  /** The stable machine-readable code of the error's class. */
  readonly code: ErrorCode;
  static readonly code: ErrorCode | undefined;
}
/** A layout parameter is out of range (bit widths, tick, epoch in the future...). */
export declare class InvalidLayoutError extends SegflakeError { readonly code: 'INVALID_LAYOUT'; }
/** The layout runs out of time within `minLifetimeYears`; the message says when. */
export declare class LayoutExhaustedError extends SegflakeError { readonly code: 'LAYOUT_EXHAUSTED'; }
/** The worker ID does not fit the layout's worker field; the message gives the range. */
export declare class WorkerIdOutOfRangeError extends SegflakeError { readonly code: 'WORKER_ID_OUT_OF_RANGE'; }
/** The clock fell behind the last issued tick by more than `maxDriftMs`. */
export declare class ClockMovedBackwardsError extends SegflakeError { readonly code: 'CLOCK_MOVED_BACKWARDS'; }
/** The clock reads a time before the layout's epoch. */
export declare class ClockBeforeEpochError extends SegflakeError { readonly code: 'CLOCK_BEFORE_EPOCH'; }
/** The layout's time field has run out. */
export declare class TimeExhaustedError extends SegflakeError { readonly code: 'TIME_EXHAUSTED'; }
/** An argument has the wrong type or is out of range; the message says what is allowed. */
export declare class InvalidArgumentError extends SegflakeError { readonly code: 'INVALID_ARGUMENT'; }
/** Text could not be parsed as an ID of the given format. */
export declare class ParseError extends SegflakeError { readonly code: 'PARSE_ERROR'; }
/** A store returned a range that is invalid or overlaps one already received. */
export declare class StoreContractViolationError extends SegflakeError { readonly code: 'STORE_CONTRACT_VIOLATION'; }
/** Both segment buffers are empty and the store did not deliver in time. */
export declare class SegmentsExhaustedError extends SegflakeError { readonly code: 'SEGMENTS_EXHAUSTED'; }
/** A store (or counter) callback failed. */
export declare class StoreError extends SegflakeError { readonly code: 'STORE_ERROR'; }
/** A date-prefixed serial ran out of sequence numbers within one second. */
export declare class SerialExhaustedError extends SegflakeError { readonly code: 'SERIAL_EXHAUSTED'; }
/** The generator was closed. */
export declare class ClosedError extends SegflakeError { readonly code: 'CLOSED'; }
/** Every worker ID of the layout stayed leased by live holders for `claimWaitMs`. */
export declare class NoFreeWorkerIdError extends SegflakeError { readonly code: 'NO_FREE_WORKER_ID'; }
/** The worker-ID lease may have expired or was lost, or IDs reached the time mark the registry accepted; IDs resume once a lease is held again. */
export declare class LeaseExpiredError extends SegflakeError { readonly code: 'LEASE_EXPIRED'; }
/** This host's clock is behind the worker ID's time mark by more than `maxDriftMs`. */
export declare class ClockBehindMarkError extends SegflakeError { readonly code: 'CLOCK_BEHIND_MARK'; }
/** This host's clock differs from the live holders' median by more than `maxPeerSkewMs`, or from a serial counter's clock by more than `counterMaxBehindMs`/`counterMaxAheadMs`. */
export declare class ClockSkewError extends SegflakeError { readonly code: 'CLOCK_SKEW'; }
/** The worker-ID registry failed or answered outside its contract. */
export declare class RegistryError extends SegflakeError { readonly code: 'REGISTRY_ERROR'; }
/** The store has no such segment tag: create it (Leaf: a leaf_alloc row), or let the store create missing tags. */
export declare class UnknownTagError extends SegflakeError { readonly code: 'UNKNOWN_TAG'; }
/** The registry lost the record of a worker ID this process held (a restart without persistence, FLUSHALL, eviction, a failover, a restore): IDs stopped at once and resume after a new claim. */
export declare class RegistryLostDataError extends SegflakeError { readonly code: 'REGISTRY_LOST_DATA'; }
/** A Leaf snowflake node still reports for the node identity (`ip:port`) this process would take over: stop that Leaf node first. */
export declare class LeafNodeAliveError extends SegflakeError { readonly code: 'LEAF_NODE_ALIVE'; }

/**
 * Loads the WebAssembly module (only needed with `segflake-wasm/core`; the main entry
 * does it on import). `input`: a URL, path string, `Response` (or a promise of one),
 * bytes, or a compiled `WebAssembly.Module`; by default the `.wasm` next to the glue
 * code is fetched.
 */
export declare function init(input?: unknown): Promise<void>;
/** Loads the WebAssembly module synchronously from bytes (`ArrayBuffer`, `Uint8Array`) or a compiled `WebAssembly.Module`. */
export declare function initSync(input: unknown): void;
/** Whether `init()`/`initSync()` has completed. */
export declare function isInitialized(): boolean;
