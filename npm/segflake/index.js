'use strict'
// CommonJS entry point. The native addon (native.js loads the prebuilt binary from the
// platform package) does all ID logic; this file adds the error classes and the
// JS-side drivers that call user-supplied async callbacks.

const { performance } = require('node:perf_hooks')
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

function describeValue(v) {
  if (v === null) return 'null'
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 60 ? v.slice(0, 57) + '...' : v)}`
  if (typeof v === 'bigint') return `the bigint ${v}n`
  if (typeof v === 'number' || typeof v === 'boolean') return `the ${typeof v} ${v}`
  if (typeof v === 'function') return 'a function'
  if (Array.isArray(v)) return 'an array'
  return typeof v === 'object' ? 'an object' : String(typeof v)
}

function errorText(e) {
  if (e instanceof Error) return `${e.name}: ${e.message}`
  try {
    return `a thrown ${describeValue(e)}`
  } catch {
    return 'a thrown value'
  }
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

/** The state of one business tag: its native engine, the fetch in flight, its waiters. */
class TagState {
  constructor(tag, options, call, config) {
    this.tag = tag
    this.engine = new native.__SegmentEngine(tag, options)
    this.take = native.__bindTake(this.engine) // engine.take without the receiver lookup
    this.call = call
    this.config = config
    this.waiters = new Set()
    this.inflight = null // { promise, timer } of the store call in flight
    this.lastCause = undefined // the last failure as a JS value (the store's own error)
    // Called synchronously by the native take when the engine wants a segment; the store
    // call itself runs in a microtask so a store never runs inside a take.
    this.onFetch = (step) => this.startFetch(step)
    this.engine.poke(this.onFetch) // warm up: the first segment is fetched at once
  }

  startFetch(step) {
    const { tag, engine } = this
    const timeoutMs = this.config.storeTimeoutMs
    let settled = false
    let timer
    let resolveDone
    const promise = new Promise((resolve) => {
      resolveDone = resolve
    })
    const finish = (apply) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      try {
        apply()
      } finally {
        this.inflight = null
        resolveDone()
        this.notify()
      }
    }
    timer = setTimeout(() => {
      finish(() => {
        const message = `the store did not answer allocate(${JSON.stringify(tag)}, ${step}) within ${timeoutMs} ms (storeTimeoutMs)`
        this.lastCause = makeError('STORE_ERROR', `store error: ${message}`)
        engine.fail(message)
      })
    }, timeoutMs)
    if (typeof timer.unref === 'function') timer.unref()
    this.inflight = { promise, timer }
    queueMicrotask(() => {
      let result
      try {
        result = this.call(tag, step)
      } catch (e) {
        result = Promise.reject(e)
      }
      Promise.resolve(result).then(
        (value) => finish(() => this.complete(value)),
        (err) => {
          finish(() => {
            this.lastCause = err
            engine.fail(`the store failed: ${errorText(err)}`)
          })
        },
      )
    })
  }

  complete(value) {
    if (value === null || typeof value !== 'object') {
      const message = `store contract violation for tag ${JSON.stringify(this.tag)}: the store resolved to ${describeValue(value)}; expected { maxId, step } with non-negative integers (number or bigint)`
      this.lastCause = makeError('STORE_CONTRACT_VIOLATION', message)
      this.engine.fail(message)
      return
    }
    try {
      this.engine.complete(value.maxId, value.step)
      this.lastCause = undefined
    } catch (e) {
      // A refused range (overlapping, preceding, zero step, too large) or garbage fields:
      // the engine recorded the failure and issues none of its IDs.
      this.lastCause = e
      if (!(e instanceof SegflakeError)) this.engine.fail(`the store's answer could not be read: ${errorText(e)}`)
    }
  }

  notify() {
    for (const wake of [...this.waiters]) wake(true)
  }

  /** Resolves true when a fetch completes, false after `ms`. */
  waitCompletion(ms) {
    return new Promise((resolve) => {
      let timer
      const wake = (completed) => {
        clearTimeout(timer)
        this.waiters.delete(wake)
        resolve(completed)
      }
      this.waiters.add(wake)
      timer = setTimeout(() => wake(false), Math.max(1, Math.ceil(ms)))
    })
  }

  exhausted() {
    const e = this.engine.exhaustedError()
    if (this.lastCause !== undefined && e.code === 'SEGMENTS_EXHAUSTED') {
      Object.defineProperty(e, 'cause', { value: this.lastCause, enumerable: false, configurable: true, writable: true })
    }
    return e
  }

  nextIdSync() {
    const id = this.take(this.onFetch)
    if (id !== null) return id
    throw this.syncExhausted()
  }

  syncExhausted() {
    const e = this.exhausted()
    if (e.code === 'SEGMENTS_EXHAUSTED') {
      e.message = `nextIdSync found no ready segment (it never waits; await nextId() waits up to waitTimeoutMs): ${e.message}`
    }
    return e
  }

  /** Waits (bounded) until `take()` yields something; throws the exhausted error otherwise. */
  async waitFor(take) {
    const deadline = performance.now() + this.config.waitTimeoutMs
    for (;;) {
      const failures = this.engine.failureCount
      const got = take()
      if (got !== null) return got
      if (this.engine.closed || !this.engine.fetchInFlight) throw this.exhausted()
      const left = deadline - performance.now()
      if (left <= 0) throw this.exhausted()
      const completed = await this.waitCompletion(left)
      if (!completed) throw this.exhausted()
      // The fetch failed: fail now; the next call retries the store.
      if (this.engine.failureCount > failures) throw this.exhausted()
    }
  }

  async nextId() {
    const id = this.take(this.onFetch)
    if (id !== null) return id
    return this.waitFor(() => this.take(this.onFetch))
  }

  async nextIds(n) {
    const first = this.engine.takeBatch(n, this.onFetch) // also validates n
    if (first.length === n) return first
    const out = new BigUint64Array(n)
    out.set(first, 0)
    let filled = first.length
    while (filled < n) {
      const more = await this.waitFor(() => {
        const got = this.engine.takeBatch(n - filled, this.onFetch)
        return got.length > 0 ? got : null
      })
      out.set(more, filled)
      filled += more.length
    }
    return out
  }
}

/**
 * A handle on one tag of a SegmentGenerator: the same calls without the tag lookup.
 */
class SegmentTag {
  #state
  #take
  #onFetch
  constructor(state) {
    this.#state = state
    this.#take = state.take
    this.#onFetch = state.onFetch
  }
  /** The business tag. */
  get name() {
    return this.#state.tag
  }
  /** The next ID; waits (bounded by waitTimeoutMs) for the store when no segment is ready. */
  nextId() {
    return this.#state.nextId()
  }
  /** The next ID from a ready segment, without a Promise; throws SegmentsExhaustedError when none is ready. */
  nextIdSync() {
    const id = this.#take(this.#onFetch)
    if (id !== null) return id
    throw this.#state.syncExhausted()
  }
  /** `n` strictly increasing IDs. */
  nextIds(n) {
    return this.#state.nextIds(n)
  }
  /** A snapshot of this tag's segments. */
  stats() {
    return this.#state.engine.stats()
  }
}

/**
 * Leaf-compatible segment IDs: dense per-tag IDs from ranges a user-supplied async store
 * hands out (`store.allocate(tag, step)` resolving to `{ maxId, step }`; the generator
 * then owns `[maxId - step, maxId)`). Double-buffered: the next segment is fetched in the
 * background while the current one lasts, so callers never wait on the store while a
 * ready segment exists. The event loop is never blocked on the store.
 */
class SegmentGenerator {
  #call
  #options
  #config
  #tags = new Map()
  #handles = new Map()
  #closing = null

  constructor(options) {
    const config = native.__segmentConfig(options) // validates every option, typed errors
    const store = options.store
    if (typeof store === 'function') {
      this.#call = (tag, step) => store(tag, step)
    } else if (store !== null && typeof store === 'object' && typeof store.allocate === 'function') {
      // Called as a method, so class-based stores keep their `this`.
      this.#call = (tag, step) => store.allocate(tag, step)
    } else {
      throw makeError(
        'INVALID_ARGUMENT',
        `invalid store: got ${describeValue(store)}; expected an object with an async allocate(tag, step) method resolving to { maxId, step } (or such a function)`,
      )
    }
    this.#options = options
    this.#config = config
  }

  #state(tag) {
    let s = this.#tags.get(tag)
    if (s === undefined) {
      if (this.#closing !== null) throw makeError('CLOSED', 'the generator is closed')
      s = new TagState(tag, this.#options, this.#call, this.#config)
      this.#tags.set(tag, s)
    }
    return s
  }

  /** A handle on `tag` that skips the tag lookup on hot paths (and starts its first fetch). */
  tag(name) {
    let h = this.#handles.get(name)
    if (h === undefined) {
      h = new SegmentTag(this.#state(name))
      this.#handles.set(name, h)
    }
    return h
  }

  /** The next ID of `tag`; waits (bounded by waitTimeoutMs) for the store when no segment is ready. */
  nextId(tag) {
    try {
      return this.#state(tag).nextId()
    } catch (e) {
      return Promise.reject(e)
    }
  }

  /** The next ID of `tag` from a ready segment, without a Promise; throws SegmentsExhaustedError when none is ready (and starts the fetch). */
  nextIdSync(tag) {
    return this.#state(tag).nextIdSync()
  }

  /** `n` strictly increasing IDs of `tag`. */
  nextIds(tag, n) {
    try {
      return this.#state(tag).nextIds(n)
    } catch (e) {
      return Promise.reject(e)
    }
  }

  /** A snapshot of `tag`'s segments: ranges, position, step, fetch latency, failures, runway. */
  stats(tag) {
    const s = this.#tags.get(tag)
    if (s === undefined) {
      throw makeError('INVALID_ARGUMENT', `invalid tag: no IDs were requested for ${describeValue(tag)} yet; stats exist for tags in use`)
    }
    return s.engine.stats()
  }

  /** The tags in use. */
  get tags() {
    return [...this.#tags.keys()]
  }

  /** Whether close() was called. */
  get closed() {
    return this.#closing !== null
  }

  /**
   * Stops issuing IDs (later calls throw ClosedError, waiting callers are woken with it)
   * and resolves once the store calls in flight have settled (or timed out).
   */
  close() {
    if (this.#closing !== null) return this.#closing
    const pending = []
    for (const s of this.#tags.values()) {
      s.engine.close()
      s.notify()
      if (s.inflight) {
        if (typeof s.inflight.timer.ref === 'function') s.inflight.timer.ref()
        pending.push(s.inflight.promise)
      }
    }
    this.#closing = Promise.all(pending).then(() => undefined)
    return this.#closing
  }
}

/**
 * Date-prefixed decimal serial numbers (order numbers): `yyMMddHHmmss`, optional worker
 * digits, then a fixed number of sequence digits. Never smaller than the last one issued.
 */
class SerialGenerator {
  #native
  #counter
  #counterTimeoutMs

  constructor(options) {
    const isObject = options !== null && typeof options === 'object'
    const { counterTimeoutMs, ...rest } = isObject ? options : {}
    this.#native = new native.__SerialGenerator(isObject ? rest : options)
    this.#counter = rest.counter
    if (counterTimeoutMs !== undefined && !(Number.isSafeInteger(counterTimeoutMs) && counterTimeoutMs >= 1 && counterTimeoutMs <= 3_600_000)) {
      throw makeError('INVALID_ARGUMENT', `invalid counterTimeoutMs: got ${describeValue(counterTimeoutMs)}; allowed integers 1..=3600000`)
    }
    this.#counterTimeoutMs = counterTimeoutMs ?? 5000
  }

  /** The next serial from the local per-second counter (throws SerialExhaustedError when this second is used up). */
  next() {
    return this.#native.next()
  }

  /** The next serial as a decimal string. */
  nextString() {
    return this.#native.nextString()
  }

  /** The last serial issued (or restored); 0n if none. Persist it for restarts. */
  get last() {
    return this.#native.last
  }

  /** Splits a serial into `{ date, unixSeconds, workerId, sequence }`. */
  decode(serial) {
    return this.#native.decode(serial)
  }

  /** The serial for `sequence` in the Unix second `unixSeconds` (pure). */
  format(unixSeconds, sequence) {
    return this.#native.format(unixSeconds, sequence)
  }

  /** `yyMMddHHmmss` of a Unix second, as a 12-digit string. */
  datePrefix(unixSeconds) {
    return this.#native.datePrefix(unixSeconds)
  }

  /**
   * The next serial with its sequence from the shared `counter(key, unixSeconds)` given at
   * construction (e.g. Redis INCR on `order:${key}`), asking again while its numbers are
   * not above the last serial. Throws StoreError when the counter fails or times out.
   */
  async nextFromCounter() {
    const counter = this.#counter
    if (typeof counter !== 'function') {
      throw makeError('INVALID_ARGUMENT', 'invalid counter: this generator has none; pass { counter: async (key, unixSeconds) => sequence } to the constructor')
    }
    for (let i = 0; i < native.COUNTER_ATTEMPTS; i++) {
      const second = this.#native.__counterSecond()
      const key = this.#native.datePrefix(second)
      let sequence
      let timer
      try {
        sequence = await Promise.race([
          Promise.resolve().then(() => counter(key, second)),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(makeError('STORE_ERROR', `store error: the counter did not answer for ${key} within ${this.#counterTimeoutMs} ms (counterTimeoutMs)`)), this.#counterTimeoutMs)
          }),
        ])
      } catch (e) {
        if (e instanceof SegflakeError) throw e
        throw makeError('STORE_ERROR', `store error: the counter failed for ${key}: ${errorText(e)}`, { cause: e })
      } finally {
        clearTimeout(timer)
      }
      const serial = this.#native.__accept(second, sequence)
      if (serial !== null) return serial
    }
    throw makeError(
      'STORE_ERROR',
      `store error: the counter returned ${native.COUNTER_ATTEMPTS} sequence numbers in a row that were not above the last serial ${this.last}; was the per-second counter reset, or is it shared with a generator using the same worker digits?`,
    )
  }
}

module.exports = {
  Layout: native.Layout,
  Snowflake,
  Obfuscator: native.Obfuscator,
  SegmentGenerator,
  SegmentTag,
  SerialGenerator,
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
// For benchmarks: the cost of a bare native call returning a bigint. For the shared
// vectors: the native layer (engines with explicit time, serials on a manual clock).
Object.defineProperty(module.exports, '__noop', { value: native.__noop, enumerable: false })
Object.defineProperty(module.exports, '__native', { value: native, enumerable: false })
