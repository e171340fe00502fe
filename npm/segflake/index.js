'use strict'
// CommonJS entry point. The native addon (native.js loads the prebuilt binary from the
// platform package) does all ID logic; this file adds the error classes and the
// JS-side drivers that call user-supplied async callbacks.

const native = require('./native.js')

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
function errorFactory(code, message) {
  const err = makeError(code, message)
  if (Error.captureStackTrace) Error.captureStackTrace(err, errorFactory)
  return err
}
native.__setErrorFactory(errorFactory)

module.exports = {
  Layout: native.Layout,
  Snowflake: native.Snowflake,
  Obfuscator: native.Obfuscator,
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
  parseTimeMs: native.parseTimeMs,
  formatTimeMs: native.formatTimeMs,
  errorKinds: native.errorKinds,
  coreVersion: native.coreVersion,
  MAX_BATCH: native.MAX_BATCH,
  BASE62_LENGTH: native.BASE62_LENGTH,
  BASE32_LENGTH: native.BASE32_LENGTH,
  ...errors,
}
// For benchmarks: the cost of a bare native call returning a bigint.
Object.defineProperty(module.exports, '__noop', { value: native.__noop, enumerable: false })
