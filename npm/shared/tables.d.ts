// The option, record and error declarations of both npm packages (segflake and segflake-wasm),
// written by scripts/gen_declarations.py from the core's tables: do not edit; change the
// table in crates/segflake and run the script. Each package ships this file as tables.d.ts.
import type { Layout } from './index.js'

/** The layout presets. */
export type PresetName = 'twitter' | 'sonyflake' | 'uid-generator' | 'js-safe' | 'twitter-dc'

/** A point in time: Unix milliseconds, a `Date`, or an ISO-8601 UTC string (`'2025-01-01'`). */
export type TimeInput = number | bigint | string | Date

/** An ID: a bigint, a non-negative safe integer, or a decimal string. */
export type IdInput = bigint | number | string

/** The parameters of a layout (`new Layout(...)`): a `preset` whose fields the others override. */
export interface LayoutOptions {
  /**
   * The preset the other fields start from. One of twitter, sonyflake, uid-generator, js-safe,
   * twitter-dc; default twitter.
   */
  preset?: PresetName
  /** Width of the time field. Integers 8..=63; default 41. */
  timeBits?: number
  /** Width of the worker field. Integers 0..=31; default 10. */
  workerBits?: number
  /**
   * How many of the worker field's high bits name a datacenter (at most workerBits; twitter-dc: 5).
   * With them, a worker is datacenterId and workerId within it. Integers 0..=31; default 0.
   */
  datacenterBits?: number
  /** Width of the sequence field. Integers 0..=31; default 12. */
  sequenceBits?: number
  /** Length of one time unit in milliseconds. Integers 1..=86400000; default 1. */
  tickMs?: number
  /**
   * Time of tick 0; must not be in the future. Unix milliseconds or an ISO-8601 UTC date or time
   * (2025-01-01T00:00:00Z); default the preset's epoch.
   */
  epochMs?: TimeInput
  /**
   * Order of the worker and sequence fields below the time field. One of time-worker-sequence,
   * time-sequence-worker; default time-worker-sequence.
   */
  order?: 'time-worker-sequence' | 'time-sequence-worker'
  /**
   * Refuse the layout if its time runs out within this many years (0: no check). Integers
   * 0..=10000; default 10.
   */
  minLifetimeYears?: number
}

/** Options of `new Snowflake(...)`. */
export interface SnowflakeOptions {
  /**
   * This generator's worker ID: 0..2^workerBits of the layout (with datacenterId, the worker within
   * that datacenter). No default: two generators with one worker ID issue the same IDs. Integers
   * 0..=18446744073709551615.
   */
  workerId: number | bigint
  /**
   * The datacenter, on a layout with a datacenter field (twitter-dc): workerId is then the worker
   * within it (hutool's Snowflake(workerId, dataCenterId)). Integers 0..=18446744073709551615.
   */
  datacenterId?: number | bigint
  /**
   * The layout: a preset name or layout options. A preset name (twitter, sonyflake, uid-generator,
   * js-safe, twitter-dc) or an object of layout options; default twitter.
   */
  layout?: PresetName | LayoutOptions | Layout
  /**
   * Overrides the layout's epoch. Unix milliseconds or an ISO-8601 UTC date or time
   * (2025-01-01T00:00:00Z); default the layout's epoch.
   */
  epochMs?: TimeInput
  /**
   * How far the logical clock may run ahead of the wall clock (0: strict Twitter behaviour: wait
   * for the next tick, fail on any step back). Integers 0..=3600000; default 2000.
   */
  maxDriftMs?: number | bigint
  /**
   * Where each tick's sequence starts: zero, or random below 100 (Leaf's rule, keeps id % N even at
   * low rates). One of zero, random; default zero.
   */
  sequenceStart?: 'zero' | 'random'
  /**
   * A persisted high-water mark: no ID carries a time at or below it. Unix milliseconds or an
   * ISO-8601 UTC date or time (2025-01-01T00:00:00Z).
   */
  notBeforeMs?: TimeInput
}

/** The segment options of `new SegmentGenerator(...)` (besides its `store`). */
export interface SegmentSettings {
  /**
   * The step of the first requests, and the floor of the dynamic step (a store that keeps a step
   * per tag, as Leaf's leaf_alloc.step, overrides it for that tag). Integers
   * 1..=9223372036854775807; default 1000.
   */
  step?: number | bigint
  /**
   * The ceiling of the dynamic step (raised to step when only step is given). Integers
   * 1..=9223372036854775807; default 1000000.
   */
  maxStep?: number | bigint
  /**
   * Leaf's dynamic step: double when a segment lasted under 15 minutes, halve over 30. True or
   * false; default true.
   */
  dynamicStep?: boolean
  /**
   * Fetch the next segment once this percentage of the current one is used. Integers 0..=100;
   * default 10.
   */
  prefetchPercent?: number | bigint
  /**
   * After a failed fetch, retry a prefetch no sooner than this while IDs remain. Integers
   * 0..=3600000; default 1000.
   */
  retryBackoffMs?: number | bigint
  /**
   * How long a caller waits for a segment before SegmentsExhausted. Integers 1..=3600000; default
   * 1000.
   */
  waitTimeoutMs?: number | bigint
  /**
   * How long one store call may run before it counts as failed (its late answer is discarded, never
   * issued). Integers 1..=3600000; default 10000.
   */
  storeTimeoutMs?: number | bigint
  /**
   * On a graceful close, give the fetched but unissued IDs back to the store when nobody allocated
   * after them, so a restart continues without a gap. True or false; default true.
   */
  giveBack?: boolean
}

/** The serial options of `new SerialGenerator(...)` (besides its `counter`). */
export interface SerialSettings {
  /** This generator's worker number: 0..10^workerDigits. Integers 0..=999999; default 0. */
  workerId?: number | bigint
  /** Worker digits after the date. Integers 0..=6; default 0. */
  workerDigits?: number | bigint
  /**
   * Sequence digits at the end; workerDigits + sequenceDigits is at most 7. Integers 1..=7; default
   * 4.
   */
  sequenceDigits?: number | bigint
  /** Print the date at this fixed offset from UTC. Integers -1080..=1080; default 0. */
  utcOffsetMinutes?: number | bigint
  /**
   * A persisted last serial: nothing at or below it is issued. Integers 0..=18446744073709551615 or
   * their decimal strings.
   */
  last?: IdInput
  /**
   * How long one call of a shared counter may run before it counts as failed. Integers 1..=3600000;
   * default 5000.
   */
  counterTimeoutMs?: number | bigint
  /**
   * The Redis counter refuses a second that ended more than this long before its clock, and keeps
   * each second's key that long; the same on every host. Integers 0..=86400000; default 60000.
   */
  counterMaxBehindMs?: number | bigint
  /**
   * The Redis counter refuses a second that starts more than this long after its clock. Integers
   * 0..=86400000; default 60000.
   */
  counterMaxAheadMs?: number | bigint
}

/** Options of a leased generator besides the snowflake options (`Snowflake.fromRegistry`). */
export interface LeaseOptions {
  /**
   * How long a claim or renewal holds the worker ID; renewed every third of it (or of markAheadMs +
   * maxDriftMs when shorter). Integers 100..=86400000; default 30000.
   */
  leaseTtlMs?: number | bigint
  /**
   * How far ahead of the clock (beyond maxDriftMs) each renewal raises the worker ID's time mark;
   * IDs stop at the last accepted mark. Integers 0..=3600000; default 3000.
   */
  markAheadMs?: number | bigint
  /**
   * The worker ID tried first (default: one derived from the owner token), then the next ones.
   * Integers 0..=18446744073709551615.
   */
  preferredWorkerId?: number | bigint
  /**
   * How long start-up keeps trying while every worker ID is held (NoFreeWorkerId). Integers
   * 0..=3600000; default 10000.
   */
  claimWaitMs?: number | bigint
  /**
   * How long start-up waits for this host's clock to reach the worker ID's mark (ClockBehindMark).
   * Integers 0..=3600000; default 10000.
   */
  clockWaitMs?: number | bigint
  /**
   * Refuse to start when this host's clock differs from the median of live holders' reports by more
   * (ClockSkew); 0 disables the check. Integers 0..=3600000; default 0.
   */
  maxPeerSkewMs?: number | bigint
  /**
   * How long one registry call may run before it counts as failed (a late answer is discarded).
   * Integers 1..=3600000; default 3000.
   */
  registryTimeoutMs?: number | bigint
  /**
   * How far apart the fleet's clocks may be: a worker ID claimed without a time mark (never used,
   * or forgotten by the registry) starts above claim time + maxDriftMs + markAheadMs + this.
   * Integers 0..=3600000; default 1000.
   */
  clockSkewAllowanceMs?: number | bigint
}

/** The fields of an ID. */
export interface DecodedId {
  /** Unix milliseconds of the ID's tick. */
  timestampMs: number
  /** The time field: ticks since the layout's epoch. */
  tick: number
  /** The worker field (on a layout with a datacenter field, the worker within datacenterId). */
  workerId: number
  /** The sequence field. */
  sequence: number
  /**
   * The datacenter, on a layout with a datacenter field (then workerId is the worker within it).
   */
  datacenterId?: number
}

/** A snapshot of one tag's segments. Ranges are half-open `[start, end)`. */
export interface SegmentStats {
  /** The business tag. */
  tag: string
  /** The current segment's first ID (equal to currentEnd when there is none yet). */
  currentStart: bigint
  /** The current segment's end (exclusive). */
  currentEnd: bigint
  /** The next ID the current segment would issue. */
  position: bigint
  /** IDs left in the current segment. */
  remaining: number
  /** Whether the next segment is ready. */
  nextReady: boolean
  /** The next segment's first ID (0 when not ready). */
  nextStart: bigint
  /** The next segment's end (0 when not ready). */
  nextEnd: bigint
  /** The step of the fetch in flight, or of the last request. */
  step: number
  /** Whether a store call is running. */
  fetchInFlight: boolean
  /** Completed fetches, successful or not. */
  fetches: number
  /** Failed fetches. */
  failures: number
  /** Failed fetches in a row. */
  consecutiveFailures: number
  /** The last failure (store error or refused range). */
  lastError?: string
  /** How long the last completed fetch took, in milliseconds. */
  lastFetchLatencyMs?: number
  /** IDs taken from this tag's segments so far. */
  issued: number
  /** Recent consumption rate. */
  idsPerSecond: number
  /**
   * Seconds the buffered IDs would last at idsPerSecond if the store went down now; absent when
   * nothing is being consumed.
   */
  runwaySeconds?: number
}

/** The fields of a serial. */
export interface SerialParts {
  /** yyMMddHHmmss as a number (e.g. 250413120000). */
  date: number
  /** The Unix second of date. */
  unixSeconds: number
  /** The worker digits. */
  workerId: number
  /** The sequence digits. */
  sequence: number
}

/** A leased generator's lease, for monitoring (`leaseStats()`). */
export interface LeaseStats {
  /** This process incarnation's owner token. */
  owner: string
  /** claiming, starting, held, releasing, failed or closed. */
  state: string
  /** The worker ID held (absent while none is). */
  workerId?: number
  /** How long the lease is certainly still held without another renewal. */
  leaseRemainingMs?: number
  /** The highest time mark the registry accepted: no ID carries a later time. */
  markMs: bigint
  /** How far the mark is ahead of the clock (negative: IDs wait for a renewal). */
  markAheadMs: number
  /** Successful renewals. */
  renewals: number
  /** How long the last successful renewal took. */
  lastRenewLatencyMs?: number
  /** Registry calls that failed or answered outside the contract. */
  failures: number
  /** Failures since the last success. */
  consecutiveFailures: number
  /** Leases lost (expired or taken) while held. */
  lost: number
  /** The registry's last error. */
  lastError?: string
}

/** The read-only properties of a `Layout`. */
export interface LayoutProperties {
  /** Width of the time field. */
  readonly timeBits: number
  /** Width of the worker field. */
  readonly workerBits: number
  /** Width of the sequence field. */
  readonly sequenceBits: number
  /** Length of one time unit in milliseconds. */
  readonly tickMs: number
  /** Unix milliseconds of tick 0. */
  readonly epochMs: number
  /** time-worker-sequence or time-sequence-worker. */
  readonly order: 'time-worker-sequence' | 'time-sequence-worker'
  /** The lifetime the layout was checked for. */
  readonly minLifetimeYears: number
  /** Bits in use (at most 63). */
  readonly totalBits: number
  /** How long the time field lasts from the epoch. */
  readonly lifetimeMs: number
  /** When the time field runs out. */
  readonly exhaustsAtMs: number
  /** The most IDs one worker can issue per second. */
  readonly maxIdsPerSecond: number
  /** When IDs pass 2^53 (absent if they never do). */
  readonly jsSafeUntilMs: number | null
  /** The largest worker ID. */
  readonly maxWorkerId: number
  /** The largest sequence number. */
  readonly maxSequence: number
  /** The largest tick. */
  readonly maxTick: number
  /** The largest ID. */
  readonly maxId: bigint
  /** How many of the worker field's high bits name a datacenter (0: none). */
  readonly datacenterBits: number
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
  | 'CLOCK_STALLED'

/** Base class of every error segflake throws. */
export declare class SegflakeError extends Error {
  /** The stable machine-readable code of the error's class. */
  readonly code: ErrorCode
  static readonly code: ErrorCode | undefined
}

/** A layout parameter is out of range (bit widths, tick, epoch in the future). */
export declare class InvalidLayoutError extends SegflakeError {
  readonly code: 'INVALID_LAYOUT'
}
/** The layout's time field runs out before now + minLifetimeYears. */
export declare class LayoutExhaustedError extends SegflakeError {
  readonly code: 'LAYOUT_EXHAUSTED'
}
/** A worker ID does not fit the layout's worker field. */
export declare class WorkerIdOutOfRangeError extends SegflakeError {
  readonly code: 'WORKER_ID_OUT_OF_RANGE'
}
/** The clock is behind the last issued tick by more than maxDriftMs. */
export declare class ClockMovedBackwardsError extends SegflakeError {
  readonly code: 'CLOCK_MOVED_BACKWARDS'
}
/** The clock reads a time before the layout's epoch. */
export declare class ClockBeforeEpochError extends SegflakeError {
  readonly code: 'CLOCK_BEFORE_EPOCH'
}
/** The layout's time field has run out: no further IDs can be issued. */
export declare class TimeExhaustedError extends SegflakeError {
  readonly code: 'TIME_EXHAUSTED'
}
/** An argument has the wrong type, is out of its allowed range or is malformed. */
export declare class InvalidArgumentError extends SegflakeError {
  readonly code: 'INVALID_ARGUMENT'
}
/** A textual ID (decimal, base62, base32) could not be parsed. */
export declare class ParseError extends SegflakeError {
  readonly code: 'PARSE_ERROR'
}
/** A store returned a range that is invalid or overlaps one already received. */
export declare class StoreContractViolationError extends SegflakeError {
  readonly code: 'STORE_CONTRACT_VIOLATION'
}
/** Both segment buffers are empty and the store did not deliver in time. */
export declare class SegmentsExhaustedError extends SegflakeError {
  readonly code: 'SEGMENTS_EXHAUSTED'
}
/** A store (or counter) operation failed. */
export declare class StoreError extends SegflakeError {
  readonly code: 'STORE_ERROR'
}
/** A date-prefixed serial ran out of sequence numbers within one second. */
export declare class SerialExhaustedError extends SegflakeError {
  readonly code: 'SERIAL_EXHAUSTED'
}
/** The generator was closed, or was inherited by a forked child process. */
export declare class ClosedError extends SegflakeError {
  readonly code: 'CLOSED'
}
/** Every worker ID of the layout stayed leased by live holders for claimWaitMs. */
export declare class NoFreeWorkerIdError extends SegflakeError {
  readonly code: 'NO_FREE_WORKER_ID'
}
/**
 * The worker-ID lease may have expired or was lost, or IDs reached the time mark the registry
 * accepted; IDs resume once a lease is held again.
 */
export declare class LeaseExpiredError extends SegflakeError {
  readonly code: 'LEASE_EXPIRED'
}
/** This host's clock is behind the worker ID's time mark by more than maxDriftMs. */
export declare class ClockBehindMarkError extends SegflakeError {
  readonly code: 'CLOCK_BEHIND_MARK'
}
/**
 * This host's clock differs from the live holders' median by more than maxPeerSkewMs, or from a
 * serial counter's clock by more than counterMaxBehindMs / counterMaxAheadMs.
 */
export declare class ClockSkewError extends SegflakeError {
  readonly code: 'CLOCK_SKEW'
}
/** The worker-ID registry failed or answered outside its contract. */
export declare class RegistryError extends SegflakeError {
  readonly code: 'REGISTRY_ERROR'
}
/**
 * The store has no such segment tag: create it (Leaf: a leaf_alloc row), or let the store create
 * missing tags.
 */
export declare class UnknownTagError extends SegflakeError {
  readonly code: 'UNKNOWN_TAG'
}
/**
 * The registry lost the record of a worker ID this process held (a restart without persistence,
 * FLUSHALL, eviction, a failover, a restore); IDs stopped at once and resume after a new claim.
 */
export declare class RegistryLostDataError extends SegflakeError {
  readonly code: 'REGISTRY_LOST_DATA'
}
/**
 * A Leaf snowflake node still reports for the node identity (ip:port) this process would take over;
 * stop that Leaf node first.
 */
export declare class LeafNodeAliveError extends SegflakeError {
  readonly code: 'LEAF_NODE_ALIVE'
}
/**
 * The clock did not advance while the generator waited for the next tick: a clock frozen during
 * synchronous work (Cloudflare Workers' Date.now() within a request) allows sequence capacity x
 * (maxDriftMs + 1) IDs per reading.
 */
export declare class ClockStalledError extends SegflakeError {
  readonly code: 'CLOCK_STALLED'
}
