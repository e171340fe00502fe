// The promise-based drivers of segment IDs and counter-backed serials, shared by the
// native package (segflake) and the WebAssembly package (segflake-wasm): store calls,
// store timeouts and bounded waits as Promises and timers around the core's sans-I/O
// segment engine and serial generator. Each package's build copies this file into its
// tarball as `driver.js` (CommonJS or ES module) and calls `createDrivers` with its own
// native classes; every ID decision, check and message stays in the core.

/**
 * @param host.SegmentEngine the native engine class: `new (tag, options)`, `poke`, `take`,
 *   `takeBatch`, `complete`, `fail`, `timeOut`, `stats`, `exhaustedError`, `failureCount`,
 *   `fetchInFlight`, `closed`, `close`, `takeGiveBack`
 * @param host.bindTake `(engine) => take(onFetch)`: the engine's take, bound
 * @param host.segmentConfig `(options) => ({ waitTimeoutMs, storeTimeoutMs })`, validating
 * @param host.Serial the native serial generator class
 * @param host.counterAttempts `() => n`: how often a counter is asked again before giving up
 * @param host.makeError `(code, message, options?) => SegflakeError`
 * @param host.SegflakeError the base error class
 * @param host.now a monotonic clock in milliseconds
 * @param host.LeaseEngine the native lease engine class: `new (options, owner)`, `poll`,
 *   `answer`, `generator`, `close`, `stats`
 * @param host.ownerLabel `() => string`: the owner label (the host name; the engine adds a nonce)
 * @param host.randomFill optional `(Uint8Array) => void`: fills it with random bytes (a runtime
 *   without Web Crypto's `globalThis.crypto.getRandomValues`, such as Node 18, passes node:crypto's)
 * @param host.nodeTls optional `() => ({ https, tls }) | null`: node:https and node:tls where the
 *   runtime has them (Node, Bun, Deno), for an HttpStore given `ca`, `cert` or `key`; absent or
 *   null in browsers and workerd, whose fetch has its own trust store
 */
function createDrivers(host) {
  const { SegmentEngine, bindTake, segmentConfig, Serial, counterAttempts, makeError, SegflakeError, now } = host
  const { LeaseEngine, ownerLabel, randomFill, nodeTls } = host

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
   * Tinyid's multi-database mode: one store per database. A generator takes from store `i`
   * of `n` only the IDs ≡ i (mod n) and moves to the next store when one fails (the
   * core's engine picks the store; this only holds the list).
   */
  class MultiStore {
    #stores
    constructor(stores) {
      if (!Array.isArray(stores)) {
        throw makeError(
          'INVALID_ARGUMENT',
          `invalid stores: got ${describeValue(stores)}; expected an array of stores (one per database, in the order of their remainders)`,
        )
      }
      stores.forEach((store, i) => {
        storeCall(store, `stores[${i}]`)
        if (store instanceof MultiStore) {
          throw makeError('INVALID_ARGUMENT', `invalid stores[${i}]: a MultiStore cannot hold another MultiStore`)
        }
      })
      this.#stores = Object.freeze([...stores])
    }
    /** The stores, in residue order. */
    get stores() {
      return this.#stores
    }
    /** Refused: only a generator, which picks the store and keeps its residue class, asks a MultiStore. */
    allocate() {
      return Promise.reject(
        makeError(
          'STORE_ERROR',
          `a MultiStore of ${this.#stores.length} stores is asked through a SegmentGenerator, which picks the store and keeps its residue class; allocate(tag, step) alone has no class`,
        ),
      )
    }
  }

  /** `(tag, step) => answer` for one store, or a typed refusal naming `what`. */
  function storeCall(store, what) {
    if (typeof store === 'function') return (tag, step) => store(tag, step)
    if (store !== null && typeof store === 'object' && typeof store.allocate === 'function') {
      // Called as a method, so class-based stores keep their `this`.
      return (tag, step) => store.allocate(tag, step)
    }
    throw makeError(
      'INVALID_ARGUMENT',
      `invalid ${what}: got ${describeValue(store)}; expected an object with an async allocate(tag, step) method resolving to { maxId, step } (or such a function)`,
    )
  }

  /** `store.giveBack` as `(tag, expectedMaxId, maxId) => Promise`, called as a method, or `null` when it has none. */
  function giveBackCall(store) {
    if (store === null || (typeof store !== 'object' && typeof store !== 'function')) return null
    if (store instanceof MultiStore || typeof store.giveBack !== 'function') return null
    return (tag, expectedMaxId, maxId) => store.giveBack(tag, expectedMaxId, maxId)
  }

  /**
   * Resolves once `promise` settles or `ms` have passed, whichever comes first; never
   * rejects. The timer keeps the process alive meanwhile (a `close()` being awaited).
   */
  function settledWithin(promise, ms) {
    let timer
    const timeout = new Promise((resolve) => {
      timer = setTimeout(resolve, ms)
    })
    return Promise.race([Promise.resolve(promise).then(ignore, ignore), timeout]).finally(() => clearTimeout(timer))
  }

  function ignore() {}

  /** The state of one business tag: its engine, the fetch in flight, its waiters. */
  class TagState {
    constructor(tag, options, call, config, stores) {
      this.tag = tag
      this.engine = new SegmentEngine(tag, options, stores)
      this.take = bindTake(this.engine)
      this.call = call
      this.config = config
      this.waiters = new Set()
      this.inflight = null // { promise, timer } of the store call in flight
      this.lastCause = undefined // the last failure as a JS value (the store's own error)
      // Called synchronously by a take when the engine wants a segment; the store call
      // itself runs in a microtask so a store never runs inside a take.
      this.onFetch = (step) => this.startFetch(step)
      this.engine.poke(this.onFetch) // warm up: the first segment is fetched at once
    }

    startFetch(step) {
      const { tag, engine } = this
      const store = engine.fetchStore ?? 0
      let settled = false
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
      const timer = setTimeout(() => {
        finish(() => {
          // The late answer, if any, is ignored (settled): none of its IDs is issued.
          const failure = engine.timeOut()
          if (failure !== null && failure !== undefined) this.lastCause = makeError('STORE_ERROR', failure)
        })
      }, this.config.storeTimeoutMs)
      if (typeof timer?.unref === 'function') timer.unref()
      this.inflight = { promise, timer }
      queueMicrotask(() => {
        let result
        try {
          result = this.call(tag, step, store)
        } catch (e) {
          result = Promise.reject(e)
        }
        Promise.resolve(result).then(
          (value) => finish(() => this.complete(value)),
          (err) => {
            finish(() => {
              this.lastCause = err
              engine.fail(errorText(err))
            })
          },
        )
      })
    }

    complete(value) {
      try {
        this.engine.complete(value)
        this.lastCause = undefined
      } catch (e) {
        // A refused answer (not { maxId, step }, overlapping, preceding, zero step, too
        // large): the engine recorded the failure and issues none of its IDs.
        this.lastCause = e
        if (!(e instanceof SegflakeError)) this.engine.fail(`its answer could not be read: ${errorText(e)}`)
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

    /**
     * After the engine was closed: waits for the fetch in flight (bounded by its
     * `storeTimeoutMs`), then hands the IDs the engine fetched and did not issue back to
     * the store with `giveBack(tag, expectedMaxId, maxId)`, waiting at most
     * `storeTimeoutMs` for it. Never rejects: a give back that fails only leaves a gap.
     */
    async giveBack(giveBack) {
      if (this.inflight) await this.inflight.promise // settles by storeTimeoutMs at the latest
      const offer = this.engine.takeGiveBack()
      if (offer === null || offer === undefined) return
      let call
      try {
        call = giveBack(this.tag, offer.expectedMaxId, offer.maxId)
      } catch {
        return
      }
      await settledWithin(call, this.config.storeTimeoutMs)
    }

    exhausted() {
      const e = this.engine.exhaustedError()
      if (this.lastCause !== undefined && e.code === 'SEGMENTS_EXHAUSTED') {
        Object.defineProperty(e, 'cause', {
          value: this.lastCause,
          enumerable: false,
          configurable: true,
          writable: true,
        })
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
      const deadline = now() + this.config.waitTimeoutMs
      for (;;) {
        const failures = this.engine.failureCount
        const got = take()
        if (got !== null) return got
        if (this.engine.closed || !this.engine.fetchInFlight) throw this.exhausted()
        const left = deadline - now()
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

  /** A handle on one tag of a SegmentGenerator: the same calls without the tag lookup. */
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
    #giveBack
    #stores = 1
    #options
    #config
    #tags = new Map()
    #handles = new Map()
    #closing = null

    constructor(options) {
      const config = segmentConfig(options) // validates every option, typed errors
      const store = options.store
      if (store instanceof MultiStore) {
        const calls = store.stores.map((s, i) => storeCall(s, `stores[${i}]`))
        this.#call = (tag, step, i) => calls[i](tag, step)
        this.#stores = calls.length
        new SegmentEngine('_', options, calls.length).close() // the core checks the count now
      } else {
        this.#call = storeCall(store, 'store')
      }
      // Multi-store generators have nothing to give back: their stores' rows interleave.
      this.#giveBack = giveBackCall(store)
      this.#options = options
      this.#config = config
    }

    #state(tag) {
      let s = this.#tags.get(tag)
      if (s === undefined) {
        if (this.#closing !== null) throw makeError('CLOSED', 'the generator is closed')
        s = new TagState(tag, this.#options, this.#call, this.#config, this.#stores)
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
        throw makeError(
          'INVALID_ARGUMENT',
          `invalid tag: no IDs were requested for ${describeValue(tag)} yet; stats exist for tags in use`,
        )
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
     * and resolves once the store calls in flight have settled (or timed out). Then, when
     * the store has `giveBack(tag, expectedMaxId, maxId)` and the `giveBack` option is on
     * (the default), hands each tag's fetched but unissued IDs back to it (the tag's
     * `max_id` goes from `expectedMaxId` down to `maxId` if nobody allocated since), so the
     * next generator continues without a gap; each give back is bounded by
     * `storeTimeoutMs`, and one that fails only leaves the gap. Never rejects; idempotent
     * (later calls return the same Promise).
     */
    close() {
      if (this.#closing !== null) return this.#closing
      const giveBack = this.#giveBack
      const pending = []
      for (const s of this.#tags.values()) {
        s.engine.close()
        s.notify()
        if (s.inflight) {
          if (typeof s.inflight.timer?.ref === 'function') s.inflight.timer.ref()
          pending.push(s.inflight.promise)
        }
        if (giveBack !== null) pending.push(s.giveBack(giveBack))
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
    #inner
    #counter

    constructor(options) {
      const counter = options !== null && typeof options === 'object' ? options.counter : undefined
      const script = counter !== null && typeof counter === 'object' && typeof counter.runSerialScript === 'function'
      // validates every option, counterTimeoutMs too (a script counter is checked here)
      this.#inner = new Serial(script ? { ...options, counter: undefined } : options)
      this.#counter = counter
    }

    /** The next serial from the local per-second counter (throws SerialExhaustedError when this second is used up). */
    next() {
      return this.#inner.next()
    }

    /** The next serial as a decimal string. */
    nextString() {
      return this.#inner.nextString()
    }

    /** The last serial issued (or restored); 0n if none. Persist it for restarts. */
    get last() {
      return this.#inner.last
    }

    /** Splits a serial into `{ date, unixSeconds, workerId, sequence }`. */
    decode(serial) {
      return this.#inner.decode(serial)
    }

    /** The serial for `sequence` in the Unix second `unixSeconds` (pure). */
    format(unixSeconds, sequence) {
      return this.#inner.format(unixSeconds, sequence)
    }

    /** `yyMMddHHmmss` of a Unix second, as a 12-digit string. */
    datePrefix(unixSeconds) {
      return this.#inner.datePrefix(unixSeconds)
    }

    /**
     * The next serial with its sequence from the shared `counter(key, unixSeconds)` given at
     * construction (e.g. Redis INCR on `order:${key}`), or from a script counter
     * (`segflake/counters`: `runSerialScript(key, args)`), asking again while its numbers
     * are not above the last serial. Throws StoreError when the counter fails or times out,
     * ClockSkewError when a script counter refuses this host's second.
     */
    async nextFromCounter() {
      const counter = this.#counter
      const script = typeof counter?.runSerialScript === 'function'
      if (typeof counter !== 'function' && !script) {
        throw makeError(
          'INVALID_ARGUMENT',
          'invalid counter: this generator has none; pass { counter: async (key, unixSeconds) => sequence } to the constructor',
        )
      }
      for (let i = 0, attempts = counterAttempts(); i < attempts; i++) {
        const second = this.#inner.__counterSecond()
        const key = script ? this.#inner.__counterKey(second) : this.#inner.datePrefix(second)
        let sequence
        let timer
        try {
          const call = script
            ? () => counter.runSerialScript(key, this.#inner.__counterArgs(second))
            : () => counter(key, second)
          sequence = await Promise.race([
            Promise.resolve().then(call),
            new Promise((_, reject) => {
              timer = setTimeout(() => reject(this.#inner.__counterTimedOut(key)), this.#inner.__counterTimeoutMs)
            }),
          ])
        } catch (e) {
          if (e instanceof SegflakeError) throw e
          throw makeError('STORE_ERROR', `store error: the counter failed for ${key}: ${errorText(e)}`, { cause: e })
        } finally {
          clearTimeout(timer)
        }
        const serial = this.#inner.__acceptReply(second, sequence)
        if (serial !== null && serial !== undefined) return serial
      }
      throw this.#inner.__counterGaveUp()
    }
  }

  const REGISTRY_METHODS = ['claim', 'renew', 'release', 'peers']

  /**
   * Runs one worker-ID lease: polls the core's lease engine on timers and makes the
   * registry calls it asks for as Promises (each bounded by the engine's
   * `registryTimeoutMs`; a late answer is discarded by the engine). Resolves `started`
   * with the generator once the engine is ready.
   */
  class LeaseDriver {
    constructor(engine, registry) {
      this.engine = engine
      this.registry = registry
      this.timer = null
      this.done = false
      this.closing = false
      // Answers handled since the driver last ran from a timer (see `answered`).
      this.burst = 0
      this.started = new Promise((resolve, reject) => {
        this.resolveStarted = resolve
        this.rejectStarted = reject
      })
      this.closed = new Promise((resolve) => {
        this.resolveClosed = resolve
      })
      this.pump()
    }

    pump() {
      clearTimeout(this.timer)
      this.timer = null
      if (this.done) return
      for (;;) {
        const step = this.engine.poll(Date.now())
        if (step.step === 'call') {
          this.call(step)
        } else if (step.step === 'ready') {
          const generator = this.engine.generator()
          this.resolveStarted(generator)
        } else if (step.step === 'sleep') {
          this.wakeAfter(step.ms)
          return
        } else {
          this.done = true
          if (step.step === 'failed') this.rejectStarted(makeError(step.code, step.message))
          else this.rejectStarted(makeError('CLOSED', 'the leased generator was closed before it started'))
          this.resolveClosed()
          return
        }
      }
    }

    /** Polls the engine again after `ms` (or sooner, when an answer arrives). */
    wakeAfter(ms) {
      clearTimeout(this.timer)
      this.timer = setTimeout(() => {
        this.burst = 0
        this.pump()
      }, ms)
      // A held lease does not keep the process alive; a claim in progress, or closing, does.
      if (this.generator && !this.closing && typeof this.timer.unref === 'function') this.timer.unref()
    }

    /**
     * After an answer: polls the engine at once, except for every 64th answer in a row without
     * a timer in between, which waits for a timer. A registry that answers without I/O (an
     * in-memory one) and keeps answering "lost" (claim, renew, claim, ...) would otherwise run
     * its calls back to back in microtasks and starve the event loop.
     */
    answered() {
      if (++this.burst < 64) this.pump()
      else if (!this.done) this.wakeAfter(0)
    }

    call({ id, name, args }) {
      const engine = this.engine
      let result
      try {
        result = name === 'peers' ? this.registry.peers() : this.registry[name](args)
      } catch (e) {
        engine.answer(id, Date.now(), undefined, errorText(e))
        return
      }
      Promise.resolve(result).then(
        (value) => {
          try {
            engine.answer(id, Date.now(), value === undefined ? null : value)
          } catch (e) {
            engine.answer(id, Date.now(), undefined, `${name} answered a value that cannot be read: ${errorText(e)}`)
          }
          this.answered()
        },
        (e) => {
          engine.answer(id, Date.now(), undefined, errorText(e))
          this.answered()
        },
      )
    }
  }

  /**
   * A snowflake generator whose worker ID is leased from `registry` (any object with
   * `claim`, `renew`, `release` and `peers`, each returning a value or a Promise).
   * Resolves once a worker ID is held and the clock checks passed.
   */
  async function fromRegistry(registry, options) {
    const missing = REGISTRY_METHODS.filter((m) => typeof registry?.[m] !== 'function')
    if (missing.length > 0) {
      throw makeError(
        'INVALID_ARGUMENT',
        `invalid registry: got ${describeValue(registry)} without ${missing.join(', ')}; expected an object with ` +
          'claim, renew, release and peers methods (see segflake/registries/* or docs/leases.md)',
      )
    }
    const engine = new LeaseEngine(options, ownerLabel())
    const driver = new LeaseDriver(engine, registry)
    const generator = await driver.started
    driver.generator = generator
    Object.defineProperties(generator, {
      leased: { value: true, enumerable: false },
      leaseStats: { value: () => engine.stats(Date.now()), enumerable: false, writable: true },
      close: {
        value: async () => {
          engine.close()
          driver.closing = true
          driver.pump()
          await driver.closed
        },
        enumerable: false,
        writable: true,
      },
    })
    return generator
  }

  /** An ID argument (a bigint or a non-negative safe integer) as its decimal text. */
  function idParam(v, name) {
    if ((typeof v === 'bigint' && v >= 0n && v < 1n << 64n) || (Number.isSafeInteger(v) && v >= 0)) return String(v)
    throw makeError('INVALID_ARGUMENT', `invalid ${name}: got ${describeValue(v)}; expected a non-negative integer ID`)
  }

  /**
   * A fresh random token (128 bits, 32 hex digits) naming one give back, or null where the
   * runtime has no source of random bytes (the give back is then sent without one).
   */
  function giveBackToken() {
    const bytes = new Uint8Array(16)
    if (typeof randomFill === 'function') randomFill(bytes)
    else if (typeof globalThis.crypto?.getRandomValues === 'function') globalThis.crypto.getRandomValues(bytes)
    else return null
    return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
  }

  /**
   * A segment store served by `segflake serve` (Tinyid's client mode): every allocation is
   * one `POST {baseUrl}/api/segment/alloc/{tag}?step=N`, answered `{"maxId","step"}`; the
   * application needs no database credentials, only the service's URL (and a token if the
   * key has one). Uses the runtime's `fetch` (Node 18+, browsers, Deno, edge runtimes).
   * `https://` with `ca` (the certificate authorities to trust instead of the runtime's),
   * `cert` and `key` (a client certificate and its key, for a server that asks for one: mutual
   * TLS), PEM text or bytes as `tls.connect` takes them: requests go through node:https on a
   * keep-alive Agent with them (Node, Bun, Deno); where the runtime has no node:https
   * (browsers, workerd) they are refused, as is any of them with `http://`, `cert` without
   * `key` or the other way round, and PEM that does not load.
   * Failures reject with a `StoreError` naming the URL and the server's code; the
   * generator treats them like any store failure (buffered IDs keep flowing). A key the
   * server does not have (404 `UNKNOWN_TAG`) resolves to `null`: `UnknownTagError`. As the
   * database stores do, a tag's first allocation asks for the row's own step (no `?step`),
   * and answers carry the row's step (`tagStep`) where the server's store keeps one.
   * `giveBack` returns a closing generator's unissued IDs
   * (`POST {baseUrl}/api/segment/giveback/{tag}?expected_max_id=E&max_id=M&token=T`, `T` a
   * random token per give back, so a resent request changes nothing).
   */
  class HttpStore {
    #base
    #headers
    #timeoutMs
    #fetch
    #https = null
    #agent = null
    #started = new Set()

    constructor(baseUrl, options = {}) {
      if (typeof baseUrl !== 'string' || !/^https?:\/\/[^/\s]+/.test(baseUrl)) {
        throw makeError(
          'INVALID_ARGUMENT',
          `invalid baseUrl: got ${describeValue(baseUrl)}; expected an http:// or https:// URL of a segflake serve (http://ids.internal:8080)`,
        )
      }
      if (options === null || typeof options !== 'object') {
        throw makeError('INVALID_ARGUMENT', `invalid options: got ${describeValue(options)}; expected an object`)
      }
      const { token, timeoutMs = 10000, fetch = globalThis.fetch, ca, cert, key } = options
      if (token !== undefined && (typeof token !== 'string' || token === '' || /\s/.test(token))) {
        throw makeError(
          'INVALID_ARGUMENT',
          `invalid token: got ${describeValue(token)}; expected a non-empty string without whitespace`,
        )
      }
      if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 3600000) {
        throw makeError('INVALID_ARGUMENT', `invalid timeoutMs: got ${describeValue(timeoutMs)}; allowed 1..=3600000`)
      }
      const tls = { ca, cert, key }
      const given = Object.keys(tls).filter((name) => tls[name] !== undefined)
      if (given.length > 0) {
        const node = httpsAgent(baseUrl, given, tls, options.fetch)
        this.#https = node.https
        this.#agent = node.agent
      } else if (typeof fetch !== 'function') {
        throw makeError('INVALID_ARGUMENT', 'this runtime has no fetch: pass options.fetch')
      }
      this.#base = baseUrl.replace(/\/+$/, '')
      this.#headers = token === undefined ? {} : { authorization: `Bearer ${token}` }
      this.#timeoutMs = timeoutMs
      this.#fetch = fetch
      this.allocate = this.allocate.bind(this)
      this.giveBack = this.giveBack.bind(this)
    }

    /** The service's base URL. */
    get baseUrl() {
      return this.#base
    }

    /** Leases `step` IDs of `tag` from the service; resolves to `{ maxId, step, tagStep? }`, or `null` for an unknown key. */
    async allocate(tag, step) {
      const query = this.#started.has(tag) ? `?step=${step}` : ''
      const url = `${this.#base}/api/segment/alloc/${encodeURIComponent(tag)}${query}`
      const answered = await this.#post(url)
      const { response, text, body } = answered
      const code = body && typeof body.code === 'string' ? body.code : 'no code'
      if (response.status === 404 && code === 'UNKNOWN_TAG') return null
      if (!response.ok) throw this.#refused(url, answered)
      if (
        !body ||
        typeof body.maxId !== 'string' ||
        !/^[0-9]{1,20}$/.test(body.maxId) ||
        !Number.isSafeInteger(body.step) ||
        !(body.tagStep === undefined || Number.isSafeInteger(body.tagStep))
      ) {
        throw makeError(
          'STORE_ERROR',
          `POST ${url} answered ${JSON.stringify(text.slice(0, 200))}, not {"maxId","step"}`,
        )
      }
      this.#started.add(tag)
      const answer = { maxId: BigInt(body.maxId), step: body.step }
      if (body.tagStep !== undefined) answer.tagStep = body.tagStep
      return answer
    }

    /**
     * Gives back the IDs `[maxId, expectedMaxId)` of `tag` that a closing generator did not
     * issue: the server lowers the tag's `max_id` from `expectedMaxId` to `maxId` if it is
     * still `expectedMaxId`. Resolves to whether it did (the answer's `givenBack`); false
     * for a 404 (a server without give back, or a key it does not have), and without a
     * request when `maxId` is not below `expectedMaxId`. The request carries `token=T`, a
     * fresh random 128-bit token (hex) under which the server records and applies the give
     * back, so the same request resent (by a proxy or load balancer after a lost reply)
     * changes nothing. Sent once, never repeated here: a server older than the token
     * ignores it, and a repeat there could lower the row again after another client's
     * allocation.
     */
    async giveBack(tag, expectedMaxId, maxId) {
      const expected = idParam(expectedMaxId, 'expectedMaxId')
      const lowered = idParam(maxId, 'maxId')
      if (BigInt(lowered) >= BigInt(expected)) return false // nothing to give back
      const token = giveBackToken()
      const url =
        `${this.#base}/api/segment/giveback/${encodeURIComponent(tag)}` +
        `?expected_max_id=${expected}&max_id=${lowered}${token === null ? '' : `&token=${token}`}`
      const answered = await this.#post(url)
      const { response, text, body } = answered
      if (response.status === 404) return false
      if (!response.ok) throw this.#refused(url, answered)
      if (!body || typeof body.givenBack !== 'boolean') {
        throw makeError('STORE_ERROR', `POST ${url} answered ${JSON.stringify(text.slice(0, 200))}, not {"givenBack"}`)
      }
      return body.givenBack
    }

    /** `POST url`: `{ response, text, body }` (`body` the parsed JSON, or null); a transport failure is a StoreError. */
    async #post(url) {
      let response, text
      try {
        if (this.#agent !== null) {
          ;({ response, text } = await this.#nodePost(url))
        } else {
          response = await this.#fetch(url, {
            method: 'POST',
            headers: this.#headers,
            signal: AbortSignal.timeout(this.#timeoutMs),
          })
          text = await response.text()
        }
      } catch (e) {
        // fetch's own error only says "fetch failed"; its cause says why (a refused connection, a certificate).
        const cause = e instanceof Error && e.cause !== undefined ? ` (${transportErrorText(e.cause)})` : ''
        throw makeError('STORE_ERROR', `POST ${url} failed: ${transportErrorText(e)}${cause}`)
      }
      let body = null
      try {
        body = JSON.parse(text)
      } catch {
        // reported by the caller with the text
      }
      return { response, text, body }
    }

    /**
     * `POST url` through node:https on the store's Agent (its CA and client certificate):
     * `{ response: { status, ok }, text }`; rejects with the transport's error, or a
     * TimeoutError when the whole exchange takes more than `timeoutMs`.
     */
    #nodePost(url) {
      return new Promise((resolve, reject) => {
        let timer = null
        const settle = (fn, value) => {
          clearTimeout(timer)
          fn(value)
        }
        const headers = { ...this.#headers, 'content-length': '0' }
        const req = this.#https.request(url, { method: 'POST', headers, agent: this.#agent }, (res) => {
          let text = ''
          res.setEncoding('utf8')
          res.on('data', (chunk) => (text += chunk))
          res.on('error', (e) => settle(reject, e))
          res.on('end', () => {
            const status = res.statusCode
            settle(resolve, { response: { status, ok: status >= 200 && status < 300 }, text })
          })
          res.on('close', () => {
            if (!res.complete) settle(reject, new Error('the connection closed before the answer ended'))
          })
        })
        timer = setTimeout(() => {
          const e = new Error(`no answer within ${this.#timeoutMs} ms`)
          e.name = 'TimeoutError'
          req.destroy(e)
        }, this.#timeoutMs)
        req.on('error', (e) => settle(reject, e))
        req.end()
      })
    }

    /** A StoreError for a failed answer (not 2xx), with the server's code and message. */
    #refused(url, { response, text, body }) {
      const code = body && typeof body.code === 'string' ? body.code : 'no code'
      const message = body && typeof body.message === 'string' ? body.message : text.slice(0, 200)
      return makeError('STORE_ERROR', `POST ${url} answered ${response.status} (${code}): ${message}`)
    }

    /**
     * Closes the kept connections of a store with `ca`, `cert` or `key` (its own Agent);
     * otherwise nothing to release (the runtime's fetch owns its connections).
     */
    async close() {
      this.#agent?.destroy()
    }
  }

  /** A network or TLS error as text: its name, Node's code (`SELF_SIGNED_CERT_IN_CHAIN`) if any, its message on one line. */
  function transportErrorText(e) {
    if (!(e instanceof Error)) return errorText(e)
    const code = typeof e.code === 'string' && !e.message.includes(e.code) ? ` [${e.code}]` : ''
    return `${e.name}${code}: ${e.message.trim().replace(/\s*\n\s*/g, ' ')}`
  }

  /** `a`, `a and b`, `a, b and c`. */
  function listed(names) {
    return names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`
  }

  /** One `ca`, `cert` or `key` option: PEM text or bytes (`ca` also a list of them), else an INVALID_ARGUMENT error. */
  function checkPem(name, value) {
    const one = (v) => {
      if (v instanceof Uint8Array) return
      if (typeof v !== 'string') {
        throw makeError(
          'INVALID_ARGUMENT',
          `invalid ${name}: got ${describeValue(v)}; expected PEM text or bytes (a string or Buffer)`,
        )
      }
      if (!v.includes('-----BEGIN ')) {
        throw makeError(
          'INVALID_ARGUMENT',
          `invalid ${name}: got ${describeValue(v)}, which is not PEM; pass the file's contents (fs.readFileSync(path)), not its path`,
        )
      }
    }
    if (name === 'ca' && Array.isArray(value)) value.forEach(one)
    else one(value)
  }

  /**
   * The node:https module and a keep-alive Agent with the store's `ca`, `cert` and `key`
   * (those in `given`), each checked: an INVALID_ARGUMENT error for an `http://` URL, a
   * certificate without its key (or a key without it), a `fetch` option beside them, a
   * runtime without node:https, and PEM that node:tls does not load.
   */
  function httpsAgent(baseUrl, given, tls, fetch) {
    const names = listed(given)
    if (!baseUrl.startsWith('https://')) {
      throw makeError(
        'INVALID_ARGUMENT',
        `${names} ${given.length === 1 ? 'is' : 'are'} for TLS, but baseUrl ${JSON.stringify(baseUrl)} is http://: use https://`,
      )
    }
    if ((tls.cert === undefined) !== (tls.key === undefined)) {
      const [have, missing] = tls.key === undefined ? ['cert', 'key'] : ['key', 'cert']
      throw makeError(
        'INVALID_ARGUMENT',
        `${have} without ${missing}: a client certificate needs both its certificate (cert) and its private key (key)`,
      )
    }
    for (const name of given) checkPem(name, tls[name])
    if (fetch !== undefined) {
      throw makeError(
        'INVALID_ARGUMENT',
        `options.fetch cannot be combined with ${names}: a fetch passed in makes its own TLS connections (give it the certificates instead)`,
      )
    }
    const node = typeof nodeTls === 'function' ? nodeTls() : null
    if (!node) {
      throw makeError(
        'INVALID_ARGUMENT',
        `${names} ${given.length === 1 ? 'needs' : 'need'} node:https (Node, Bun, Deno), which this runtime does not have: here the runtime's own trust store applies to https:// and it offers no client certificate (leave them out, and have the server's certificate trusted by the runtime)`,
      )
    }
    const options = {}
    for (const name of given) options[name] = tls[name]
    try {
      node.tls.createSecureContext(options)
    } catch (e) {
      throw makeError('INVALID_ARGUMENT', `${names} ${given.length === 1 ? 'does' : 'do'} not load: ${errorText(e)}`)
    }
    return { https: node.https, agent: new node.https.Agent({ keepAlive: true, ...options }) }
  }

  return { SegmentGenerator, SegmentTag, SerialGenerator, fromRegistry, HttpStore, MultiStore }
}
