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
  workerIdFromText,
  parseTimeMs,
  formatTimeMs,
  errorKinds,
  coreVersion,
  MAX_BATCH,
  BASE62_LENGTH,
  BASE32_LENGTH,
} from './native'
export type { IdFormat, ComposeFields, ErrorKindInfo } from './native'
// The option, record and error declarations generated from the core's tables
// (npm/shared/tables.d.ts, shipped as tables.d.ts).
export * from './tables'
import type { SegmentSettings, SerialSettings } from './tables'
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
  /**
   * Optional: lowers the tag's `maxId` from `expectedMaxId` to `maxId` if it is still
   * `expectedMaxId` (nobody allocated since), atomically; resolves to whether it did. A
   * generator that closes (with `giveBack`, the default) calls it with the IDs it fetched
   * and did not issue, so a restart continues without a gap. It must be safe to run twice:
   * a request resent after a lost reply must not lower `max_id` again after others
   * re-allocated the range (those IDs would be handed out twice); use a token made for each
   * give back, as the SQL and Redis stores do.
   */
  giveBack?(tag: string, expectedMaxId: bigint, maxId: bigint): Promise<boolean> | boolean
}

/**
 * The decimal worker ID in `process.env[name]` (`workerIdFromText(name, process.env[name],
 * workerBits)`), such as `POD_INDEX` set from Kubernetes' `apps.kubernetes.io/pod-index`
 * label through the downward API, checked against `workerBits` worker bits (10 for
 * twitter): an unset, empty or non-decimal value throws `InvalidArgumentError` naming the
 * variable; a number beyond the layout throws `WorkerIdOutOfRangeError`.
 */
export declare function workerIdFromEnv(name: string, workerBits: number): number

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

