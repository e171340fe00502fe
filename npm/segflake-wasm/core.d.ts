// Types of segflake-wasm. The names and shapes match the native `segflake` package.

// The option and record shapes, generated from the core's tables (npm/shared/tables.d.ts,
// shipped as tables.d.ts).
import type {
  PresetName,
  TimeInput,
  IdInput,
  LayoutOptions,
  LayoutProperties,
  SnowflakeOptions,
  LeaseOptions,
  DecodedId,
  SegmentStats,
  SerialParts,
  LeaseStats,
  SegmentSettings,
  SerialSettings,
} from './tables.js';
export * from './tables.js';

/** Text forms of an ID. */
export type IdFormat = 'decimal' | 'base62' | 'base32';

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

/** A `Layout`'s read-only properties, one per field of the core's layout record. */
export interface Layout extends LayoutProperties {}

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
  /**
   * Optional: lowers the tag's `maxId` from `expectedMaxId` to `maxId` if it is still
   * `expectedMaxId` (nobody allocated since), atomically; resolves to whether it did. A
   * generator that closes (with `giveBack`, the default) calls it with the IDs it fetched
   * and did not issue, so a restart continues without a gap. It must be safe to run twice:
   * a request resent after a lost reply must not lower `max_id` again after others
   * re-allocated the range (those IDs would be handed out twice); use a token made for each
   * give back, as the SQL and Redis stores do.
   */
  giveBack?(tag: string, expectedMaxId: bigint, maxId: bigint): Promise<boolean> | boolean;
}

/** Options of `new SegmentGenerator(...)`. */
export interface SegmentGeneratorOptions extends SegmentSettings {
  /** The store: an object with `allocate(tag, step)` (called as a method) or such a function. */
  store: SegmentStore | ((tag: string, step: number) => Promise<Allocation | null> | Allocation | null);
}

// The segment and serial drivers: declared once for both npm packages (npm/shared/driver.d.ts,
// shipped as driver.d.ts).
export { SegmentGenerator, SegmentTag, SerialGenerator, HttpStore, MultiStore } from './driver.js';
export type { HttpStoreOptions } from './driver.js';
export type { Registry, LeasedSnowflake, LeasedSnowflakeOptions } from './driver.js';
import type { Registry, LeasedSnowflake, LeasedSnowflakeOptions } from './driver.js';


/** Options of `new SerialGenerator(...)`. */
export interface SerialOptions extends SerialSettings {
  /**
   * A shared per-second counter for `nextFromCounter`: a function (e.g. Redis INCR on a key
   * named after `key`), or a script counter running the core's Redis script
   * (`RedisSerialCounter` from `segflake/counters`).
   */
  counter?: ((key: string, unixSeconds: number) => Promise<number | bigint> | number | bigint) | ScriptCounter;
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
 * A decimal worker ID from `text`, the value of environment variable `name` (`undefined` or
 * `null`: not set), checked against `workerBits` worker bits: `('POD_INDEX', '3', 10)` → 3.
 * Pass `process.env.POD_INDEX`, `Deno.env.get('POD_INDEX')` or a Worker's binding; Kubernetes
 * fills POD_INDEX from the `apps.kubernetes.io/pod-index` label through the downward API. An
 * unset, empty or non-decimal value throws `InvalidArgumentError` naming `name`; a number
 * beyond the layout throws `WorkerIdOutOfRangeError`.
 */
export declare function workerIdFromText(name: string, text: string | undefined | null, workerBits: number): number;
/**
 * `workerIdFromText(name, process.env[name], workerBits)` where the host has `process.env`
 * (Node, Bun, Deno); in browsers and Workers the variable reads as not set.
 */
export declare function workerIdFromEnv(name: string, workerBits: number): number;

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
