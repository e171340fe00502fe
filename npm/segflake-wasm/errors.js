// Typed errors of segflake-wasm. Every error the module throws is a SegflakeError
// subclass whose `code` is the stable code shared by every segflake binding
// (the Rust core's ErrorKind::code()), and whose message is the core's message.

export class SegflakeError extends Error {
  /**
   * @param {string} message
   * @param {ErrorOptions} [options]
   */
  constructor(message, options) {
    super(message, options)
    /** @type {string | undefined} */
    this.code = /** @type {any} */ (new.target).code
  }
}

// <generated: error classes>
export class InvalidLayoutError extends SegflakeError {}
export class LayoutExhaustedError extends SegflakeError {}
export class WorkerIdOutOfRangeError extends SegflakeError {}
export class ClockMovedBackwardsError extends SegflakeError {}
export class ClockBeforeEpochError extends SegflakeError {}
export class TimeExhaustedError extends SegflakeError {}
export class InvalidArgumentError extends SegflakeError {}
export class ParseError extends SegflakeError {}
export class StoreContractViolationError extends SegflakeError {}
export class SegmentsExhaustedError extends SegflakeError {}
export class StoreError extends SegflakeError {}
export class SerialExhaustedError extends SegflakeError {}
export class ClosedError extends SegflakeError {}
export class NoFreeWorkerIdError extends SegflakeError {}
export class LeaseExpiredError extends SegflakeError {}
export class ClockBehindMarkError extends SegflakeError {}
export class ClockSkewError extends SegflakeError {}
export class RegistryError extends SegflakeError {}
export class UnknownTagError extends SegflakeError {}
export class RegistryLostDataError extends SegflakeError {}
export class LeafNodeAliveError extends SegflakeError {}
export class ClockStalledError extends SegflakeError {}
// </generated>

/** [class, className, code]; checked against the module's errorKinds() at start-up. */
const KINDS = [
  [SegflakeError, 'SegflakeError', undefined],
  // <generated: error kinds>
  [InvalidLayoutError, 'InvalidLayoutError', 'INVALID_LAYOUT'],
  [LayoutExhaustedError, 'LayoutExhaustedError', 'LAYOUT_EXHAUSTED'],
  [WorkerIdOutOfRangeError, 'WorkerIdOutOfRangeError', 'WORKER_ID_OUT_OF_RANGE'],
  [ClockMovedBackwardsError, 'ClockMovedBackwardsError', 'CLOCK_MOVED_BACKWARDS'],
  [ClockBeforeEpochError, 'ClockBeforeEpochError', 'CLOCK_BEFORE_EPOCH'],
  [TimeExhaustedError, 'TimeExhaustedError', 'TIME_EXHAUSTED'],
  [InvalidArgumentError, 'InvalidArgumentError', 'INVALID_ARGUMENT'],
  [ParseError, 'ParseError', 'PARSE_ERROR'],
  [StoreContractViolationError, 'StoreContractViolationError', 'STORE_CONTRACT_VIOLATION'],
  [SegmentsExhaustedError, 'SegmentsExhaustedError', 'SEGMENTS_EXHAUSTED'],
  [StoreError, 'StoreError', 'STORE_ERROR'],
  [SerialExhaustedError, 'SerialExhaustedError', 'SERIAL_EXHAUSTED'],
  [ClosedError, 'ClosedError', 'CLOSED'],
  [NoFreeWorkerIdError, 'NoFreeWorkerIdError', 'NO_FREE_WORKER_ID'],
  [LeaseExpiredError, 'LeaseExpiredError', 'LEASE_EXPIRED'],
  [ClockBehindMarkError, 'ClockBehindMarkError', 'CLOCK_BEHIND_MARK'],
  [ClockSkewError, 'ClockSkewError', 'CLOCK_SKEW'],
  [RegistryError, 'RegistryError', 'REGISTRY_ERROR'],
  [UnknownTagError, 'UnknownTagError', 'UNKNOWN_TAG'],
  [RegistryLostDataError, 'RegistryLostDataError', 'REGISTRY_LOST_DATA'],
  [LeafNodeAliveError, 'LeafNodeAliveError', 'LEAF_NODE_ALIVE'],
  [ClockStalledError, 'ClockStalledError', 'CLOCK_STALLED'],
  // </generated>
]

const BY_NAME = new Map()
for (const [cls, name, code] of KINDS) {
  // Set explicitly (not taken from the class's own name) so minifiers cannot change them.
  Object.defineProperty(cls.prototype, 'name', { value: name, writable: true, configurable: true })
  Object.defineProperty(cls, 'code', { value: code, enumerable: true })
  BY_NAME.set(name, cls)
}

/**
 * Builds the error for a core error kind (called from WebAssembly).
 * @param {string} className
 * @param {string} code
 * @param {string} message
 */
export function makeError(className, code, message) {
  const cls = BY_NAME.get(className)
  if (cls !== undefined && cls !== SegflakeError && cls.code === code) return new cls(message)
  const err = new SegflakeError(message)
  err.code = code
  return err
}

const BY_CODE = new Map(KINDS.filter(([, , code]) => code !== undefined).map(([cls, , code]) => [code, cls]))

/**
 * Builds the error of a code (for failures detected in JS: a store that throws, times out
 * or resolves to garbage).
 * @param {string} code
 * @param {string} message
 * @param {ErrorOptions} [options]
 */
export function errorOfCode(code, message, options) {
  const cls = BY_CODE.get(code) ?? SegflakeError
  const err = new cls(message, options)
  if (cls === SegflakeError) err.code = code
  return err
}

/**
 * Throws if the module knows an error kind that has no class here (a packaging bug).
 * @param {{ className: string, code: string }[]} kinds
 */
export function checkErrorClasses(kinds) {
  for (const { className, code } of kinds) {
    const cls = BY_NAME.get(className)
    if (cls === undefined || cls.code !== code) {
      throw new Error(`segflake-wasm: no error class ${className} with code ${code}; the package is inconsistent`)
    }
  }
}
