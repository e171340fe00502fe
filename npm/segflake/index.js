'use strict'
// CommonJS entry point. The native addon (native.js loads the prebuilt binary from the
// platform package) does all ID logic when one loads on this platform; this file adds the
// error classes and the JS-side drivers that call user-supplied async callbacks. Where no
// addon loads (another platform, optional dependencies not installed), the WebAssembly
// build runs instead (wasm.js), with the same API and error codes; `backend` says which.
// SEGFLAKE_BACKEND=native|wasm chooses one (native: fail rather than fall back).

const chosen = process.env.SEGFLAKE_BACKEND
if (chosen !== undefined && chosen !== '' && chosen !== 'native' && chosen !== 'wasm') {
  throw new TypeError(`SEGFLAKE_BACKEND must be "native" or "wasm" (or unset), got "${chosen}"`)
}
let addon = null
let addonError
if (chosen !== 'wasm') {
  try {
    addon = require('./native.js')
  } catch (e) {
    if (chosen === 'native') throw e
    addonError = e
  }
}
module.exports = addon !== null ? nativeApi(addon) : require('./wasm.js').wasmApi(addonError)

/** The package's exports over the native addon. */
function nativeApi(native) {
  /** Base class of every error segflake throws; `code` is a stable string. */
  class SegflakeError extends Error {
    constructor(message, options) {
      super(message, options)
      Object.defineProperty(this, 'name', {
        value: new.target.name,
        enumerable: false,
        configurable: true,
        writable: true,
      })
      this.code = new.target.code
    }
  }
  SegflakeError.code = undefined

  const errors = { SegflakeError }
  const errorClassByCode = Object.create(null)
  for (const { code, className } of native.errorKinds()) {
    // One class per core error kind, named after it (e.g. ClockMovedBackwardsError).
    const cls = { [className]: class extends SegflakeError {} }[className]
    cls.code = code
    errors[className] = cls
    errorClassByCode[code] = cls
  }

  function makeError(code, message, options) {
    const cls = errorClassByCode[code] || SegflakeError
    return new cls(message, options)
  }

  // Native methods build their errors through this factory, so `instanceof` and `code`
  // work without wrapping every call; the stack starts at the caller's frame.
  function errorFactory(code, message, ...cause) {
    const err = makeError(code, message, cause.length > 0 ? { cause: cause[0] } : undefined)
    if (Error.captureStackTrace) Error.captureStackTrace(err, errorFactory)
    return err
  }
  native.__setErrorFactory(errorFactory)

  // The per-ID hot paths are hand-written Node-API callbacks (same behaviour and errors as
  // the generated methods, without the generated glue's per-call overhead).
  for (const [cls, method, fast] of [
    [native.Snowflake, 'nextId', native.__fast.snowflakeNextId],
    [native.__SegmentEngine, 'take', native.__fast.engineTake],
  ]) {
    Object.defineProperty(cls.prototype, method, { value: fast, writable: true, enumerable: true, configurable: true })
  }

  /**
   * A snowflake generator (see native.d.ts for the full documentation). Each instance gets
   * its own `nextId`, `nextIdString` and `nextIdNumber`: native functions bound to the
   * generator (no receiver lookup per call; `const next = gen.nextId` works detached).
   */
  class Snowflake extends native.Snowflake {
    constructor(options) {
      super(options)
      for (const [name, bind] of [
        ['nextId', native.__bindNextId],
        ['nextIdString', native.__bindNextIdString],
        ['nextIdNumber', native.__bindNextIdNumber],
      ]) {
        Object.defineProperty(this, name, { value: bind(this), enumerable: false, writable: true, configurable: true })
      }
    }
  }

  const { createDrivers } = require('./driver.js')

  /** The owner label of a worker-ID lease: this host's name (the engine adds its own nonce). */
  function ownerLabel() {
    return require('node:os').hostname().slice(0, 128) || 'node'
  }

  // The segment, serial and lease drivers (store and registry calls, timeouts, bounded
  // waits): one source shared with segflake-wasm, over this package's native engines.
  const { SegmentGenerator, SegmentTag, SerialGenerator, fromRegistry, HttpStore, MultiStore } = createDrivers({
    SegmentEngine: native.__SegmentEngine,
    bindTake: native.__bindTake, // engine.take without the receiver lookup
    segmentConfig: native.__segmentConfig,
    Serial: native.__SerialGenerator,
    counterAttempts: () => native.COUNTER_ATTEMPTS,
    makeError,
    SegflakeError,
    // The global `performance` (Node 16+): node:perf_hooks loads on the first reading, not at require.
    now: () => performance.now(),
    LeaseEngine: native.__LeaseEngine,
    ownerLabel,
    // Node 18 has no global Web Crypto: the give back tokens' random bytes from node:crypto.
    randomFill: (bytes) => require('node:crypto').randomFillSync(bytes),
    // HttpStore's `ca`, `cert` and `key`: requests through node:https (loaded when first asked for).
    nodeTls: () => ({ https: require('node:https'), tls: require('node:tls') }),
  })

  /**
   * A generator whose worker ID is leased from `registry` (see native.d.ts): resolves once a
   * worker ID is held; `close()` releases it.
   */
  Snowflake.fromRegistry = fromRegistry

  const api = {
    backend: 'native',
    Layout: native.Layout,
    Snowflake,
    Obfuscator: native.Obfuscator,
    SegmentGenerator,
    SegmentTag,
    SerialGenerator,
    HttpStore,
    MultiStore,
    presets: native.presets,
    encode: native.encode,
    parse: native.parse,
    encodeDecimal: native.encodeDecimal,
    parseDecimal: native.parseDecimal,
    encodeBase62: native.encodeBase62,
    parseBase62: native.parseBase62,
    encodeBase32: native.encodeBase32,
    parseBase32: native.parseBase32,
    workerIdFromHostname: native.workerIdFromHostname,
    workerIdFromIpv4: native.workerIdFromIpv4,
    workerIdFromText: native.workerIdFromText,
    // process.env[name] as seen by this thread (the core checks name before the value).
    workerIdFromEnv: function workerIdFromEnv(name, workerBits) {
      return native.workerIdFromText(name, typeof name === 'string' ? process.env[name] : undefined, workerBits)
    },
    parseTimeMs: native.parseTimeMs,
    formatTimeMs: native.formatTimeMs,
    errorKinds: native.errorKinds,
    coreVersion: native.coreVersion,
    MAX_BATCH: native.MAX_BATCH,
    BASE62_LENGTH: native.BASE62_LENGTH,
    BASE32_LENGTH: native.BASE32_LENGTH,
    ...errors,
  }
  // For benchmarks: the cost of a bare native call returning a bigint. For the shared
  // vectors: the native layer (engines with explicit time, serials on a manual clock).
  Object.defineProperty(api, '__noop', { value: native.__noop, enumerable: false })
  Object.defineProperty(api, '__native', { value: native, enumerable: false })
  return api
}
