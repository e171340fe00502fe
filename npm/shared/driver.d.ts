// Declarations of the promise-based drivers (driver.js), shared by the native package
// (segflake) and the WebAssembly package (segflake-wasm): each package's build copies this
// file next to its driver.js as `driver.d.ts`. The option and record types come from the
// package's own entry point.
import type {
  LeaseOptions,
  LeaseStats,
  SegmentGeneratorOptions,
  SegmentStats,
  SerialOptions,
  SerialParts,
  Snowflake,
  SnowflakeOptions,
} from './index.js'

/** Options of `new HttpStore(baseUrl, options)`. */
export interface HttpStoreOptions {
  /** The key's bearer token, sent as `Authorization: Bearer TOKEN`. */
  token?: string
  /** How long one allocation may take (1..=3600000 ms, default 10000). */
  timeoutMs?: number
  /**
   * The fetch to use (default: the runtime's `globalThis.fetch`). It is called with the
   * URL and `{ method: 'POST', headers, signal }`, `signal` an `AbortSignal` that fires
   * after `timeoutMs` (typed loosely, so no DOM types are needed).
   */
  fetch?: (
    url: string,
    init: { method: string; headers: Record<string, string>; signal?: any },
  ) => Promise<{ ok: boolean; status: number; text(): Promise<string> }>
  /**
   * `https://` only: the certificate authorities to trust instead of the runtime's, PEM
   * text or bytes (a `Buffer` is a `Uint8Array`), as `tls.connect` takes them: the file's
   * contents, not its path. With `ca`, `cert` or `key` the store's requests go through
   * node:https on a keep-alive Agent of its own (Node, Bun, Deno; not with `fetch`); where
   * the runtime has no node:https (browsers, workerd) they are an `INVALID_ARGUMENT`
   * error: there the runtime's own trust store applies.
   */
  ca?: string | Uint8Array | Array<string | Uint8Array>
  /** The client certificate (PEM, its chain after it) for a server that asks for one (mutual TLS); needs `key`. */
  cert?: string | Uint8Array
  /** The client certificate's private key (PEM, unencrypted); needs `cert`. */
  key?: string | Uint8Array
}

/**
 * A segment store served by `segflake serve` (Tinyid's client mode): each allocation is one
 * `POST {baseUrl}/api/segment/alloc/{tag}?step=N`; the application needs only the service's
 * URL and, if the key has one, its token. Failures reject with a `StoreError` naming the URL
 * and the server's error code; an unknown key resolves to `null` (`UnknownTagError`). A
 * closing generator gives its unissued IDs back through `giveBack`.
 */
export declare class HttpStore {
  constructor(baseUrl: string, options?: HttpStoreOptions)
  /** The service's base URL, without a trailing slash. */
  readonly baseUrl: string
  /**
   * Leases `step` IDs of `tag` (the first time, the row's own step): the caller owns
   * `[maxId - step, maxId)`; `tagStep` is the row's step where the server's store keeps
   * one. `null` for a key the server does not have (404 `UNKNOWN_TAG`).
   */
  allocate(tag: string, step: number): Promise<{ maxId: bigint; step: number; tagStep?: number } | null>
  /**
   * `POST {baseUrl}/api/segment/giveback/{tag}?expected_max_id=E&max_id=M&token=T` (sent
   * once): the server lowers the tag's `max_id` from `expectedMaxId` to `maxId` if it is
   * still `expectedMaxId`. `T` is a fresh random 128-bit token (32 hex digits) per give
   * back, under which the server records and applies it, so the same request resent by a
   * proxy or load balancer after a lost reply changes nothing. Resolves to its answer's
   * `givenBack`; `false` for a 404 (a server without give back) and, without a request,
   * when `maxId` is not below `expectedMaxId`. Called by `SegmentGenerator.close()`.
   */
  giveBack(tag: string, expectedMaxId: bigint | number, maxId: bigint | number): Promise<boolean>
  /**
   * Closes the connections of a store given `ca`, `cert` or `key` (its own Agent); else
   * resolves at once: the runtime's fetch owns its connections (as the database stores' `close`).
   */
  close(): Promise<void>
}

/**
 * Tinyid's multi-database mode: one store per database, each with its own row for a tag.
 * A `SegmentGenerator` given `{ store: new MultiStore([a, b]) }` takes from store `i` of
 * `n` only the IDs ≡ i (mod n) (list the databases in the order of their Tinyid
 * `remainder`), asks the store that answered last, and moves to the next at once when one
 * fails; IDs of a tag still increase. 1..=64 stores.
 */
export declare class MultiStore {
  constructor(stores: Array<SegmentGeneratorOptions['store']>)
  /** The stores, in residue order. */
  readonly stores: ReadonlyArray<SegmentGeneratorOptions['store']>
  /** Rejects: only a generator, which picks the store and keeps its residue class, asks a MultiStore. */
  allocate(tag: string, step: number): Promise<never>
}

/** A handle on one tag: the generator's calls without the tag lookup. */
export declare class SegmentTag {
  private constructor()
  /** The business tag. */
  readonly name: string
  /** The next ID; waits (bounded by `waitTimeoutMs`) for the store when no segment is ready. */
  nextId(): Promise<bigint>
  /** The next ID from a ready segment without a Promise; throws `SegmentsExhaustedError` when none is ready. */
  nextIdSync(): bigint
  /** `n` strictly increasing IDs (1..=16777216). */
  nextIds(n: number): Promise<BigUint64Array>
  /** A snapshot of this tag's segments. */
  stats(): SegmentStats
}

/**
 * Leaf-compatible segment IDs from a user-supplied async store, double-buffered: the next
 * segment is fetched in the background while the current one lasts. A store that throws,
 * rejects, times out, returns garbage or overlapping ranges surfaces as a `SegflakeError`
 * (`SegmentsExhaustedError` whose `cause` is the store's failure) once the buffered IDs
 * are used up; the next call retries the store.
 *
 * A store may also have `giveBack(tag, expectedMaxId, maxId): Promise<boolean>` (the
 * packaged stores and `HttpStore` do): a compare-and-set that lowers the tag's `max_id`
 * from `expectedMaxId` to `maxId` only if it still is `expectedMaxId`. `close()` calls it
 * with the IDs the generator fetched and did not issue (option `giveBack`, default true).
 * It must be safe to run twice: a request resent after a lost reply must not lower
 * `max_id` again after others re-allocated the range; use a token made for each give back,
 * as the SQL and Redis stores do.
 */
export declare class SegmentGenerator {
  constructor(options: SegmentGeneratorOptions)
  /** A handle on `name` that skips the tag lookup (and starts its first fetch). */
  tag(name: string): SegmentTag
  /** The next ID of `tag`. */
  nextId(tag: string): Promise<bigint>
  /** The next ID of `tag` from a ready segment without a Promise; throws `SegmentsExhaustedError` when none is ready. */
  nextIdSync(tag: string): bigint
  /** `n` strictly increasing IDs of `tag`. */
  nextIds(tag: string, n: number): Promise<BigUint64Array>
  /** A snapshot of `tag`'s segments (`InvalidArgumentError` for a tag not in use). */
  stats(tag: string): SegmentStats
  /** The tags in use. */
  readonly tags: string[]
  /** Whether `close()` was called. */
  readonly closed: boolean
  /**
   * Stops issuing IDs (later calls throw `ClosedError`); resolves once store calls in
   * flight settled (each bounded by `storeTimeoutMs`) and, when the store has `giveBack`
   * and the `giveBack` option is on (the default), once each tag's fetched but unissued IDs
   * were offered back to it (each offer bounded by `storeTimeoutMs`; a failed one only
   * leaves a gap), so that the next generator continues where this one stopped. A
   * `MultiStore` gets no offers. Never rejects; later calls return the same Promise. Not
   * awaiting it still stops the generator at once; the give back then finishes on its own.
   */
  close(): Promise<void>
}

/**
 * Date-prefixed decimal serial numbers (order numbers): `yyMMddHHmmss`, optional worker
 * digits, then a fixed number of sequence digits. Never smaller than the last one issued.
 */
export declare class SerialGenerator {
  constructor(options?: SerialOptions)
  /** The next serial from the local counter; `SerialExhaustedError` when this second is used up. */
  next(): bigint
  /** The next serial as a decimal string. */
  nextString(): string
  /**
   * The next serial with its sequence from the shared counter; `StoreError` when it fails,
   * `ClockSkewError` when a script counter (`segflake/counters`) refuses this host's second.
   */
  nextFromCounter(): Promise<bigint>
  /** The last serial issued (or restored); `0n` if none. Persist it; pass it back as `last`. */
  readonly last: bigint
  /** Splits a serial into its fields. */
  decode(serial: bigint | number | string): SerialParts
  /** The serial for `sequence` in the Unix second `unixSeconds` (pure). */
  format(unixSeconds: number | bigint, sequence: number | bigint): bigint
  /** `yyMMddHHmmss` of a Unix second, as a 12-digit string. */
  datePrefix(unixSeconds: number | bigint): string
}

/**
 * A worker-ID registry (`Snowflake.fromRegistry`): each method returns its answer or a
 * Promise of it. The `owner` every call carries is `label#<16 hex digits>`: the label (the
 * host name) and the engine's own nonce, so two processes given one label never share it.
 * `claim`: the ID's mark (0 if never used or forgotten) when it is now leased to `owner`,
 * `null` when another owner holds it (a registry that assigns worker IDs itself, like
 * ZooKeeper in Leaf's layout, answers `{ workerId, markMs }`, optionally with the identity's
 * record `identity`, `version` and `ageMs`: all three or none). `renew`: if `owner` holds the
 * ID, extends the lease, raises the mark to at least `markMs` and returns the stored mark;
 * `null` when another owner holds it; `false` or a negative number when the registry has no
 * record of the lease at all (it lost data: IDs stop at once with `RegistryLostDataError`
 * and the generator claims again). `release`: if `owner` holds the ID, sets the mark to
 * `markMs`, ends the lease and returns `true`. `peers`: the live holders' reports as
 * `[workerId, reportedMs, ageMs]` or objects.
 */
export interface Registry {
  claim(args: { workerId: number; owner: string; ttlMs: number }): unknown
  renew(args: { workerId: number; owner: string; ttlMs: number; markMs: number; reportedMs: number }): unknown
  release(args: { workerId: number; owner: string; markMs: number }): unknown
  peers(): unknown
}

/** The options of `Snowflake.fromRegistry`: the snowflake options without `workerId`, and the lease options. */
export type LeasedSnowflakeOptions = Omit<SnowflakeOptions, 'workerId'> & LeaseOptions

/** A generator whose worker ID is leased: a `Snowflake` that can report and release its lease. */
export type LeasedSnowflake = Snowflake & {
  readonly leased: true
  /** The lease's state. */
  leaseStats(): LeaseStats
  /** Stops issuing IDs and releases the worker ID (at the time of the last ID). */
  close(): Promise<void>
}
