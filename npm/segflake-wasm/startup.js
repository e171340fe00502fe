// What both builds' entries share (core.js, the full module; snowflake-core.js, the
// snowflake module): the Snowflake class over a module's generator, the start-up of a
// module, and workerIdFromEnv. Each entry passes its own wasm-bindgen glue.
import { checkErrorClasses, makeError } from './errors.js'

/**
 * Gives the instances of a module's class `Class` the per-ID methods `methods` (name →
 * `(take, instance, original) => function`, `original` being the class's own method of
 * that name, if any) over their `__take` handle, the module's object that issues IDs with
 * the per-ID code compiled for speed. An instance gets its own functions, bound to it
 * (`const next = gen.nextId` works unbound, as in the native package), from the returned
 * `bind(instance)`, or on its first call for an instance the module made itself (a leased
 * generator); `free()` frees the handle too. Returns `bind`.
 */
export function overTake(Class, methods) {
  const proto = Class.prototype
  const freeInstance = proto.free
  const original = Object.fromEntries(Object.keys(methods).map((name) => [name, proto[name]]))
  const own = (value) => ({ value, enumerable: false, writable: true, configurable: true })
  const mine = (value) => ({ value, enumerable: true, writable: true, configurable: true })
  const bind = (instance) => {
    const take = instance.__take
    const bound = {}
    const props = { __freeTake: own(() => take.free()) }
    for (const [name, make] of Object.entries(methods)) {
      bound[name] = make(take, instance, original[name])
      props[name] = own(bound[name])
    }
    Object.defineProperties(instance, props)
    return bound
  }
  for (const name of Object.keys(methods)) {
    const onFirstCall = {
      [name](...args) {
        return bind(this)[name](...args)
      },
    }
    Object.defineProperty(proto, name, mine(onFirstCall[name]))
  }
  Object.defineProperty(
    proto,
    'free',
    mine(function free() {
      this.__freeTake?.()
      freeInstance.call(this)
    }),
  )
  if (Symbol.dispose) proto[Symbol.dispose] = proto.free
  return bind
}

/**
 * The public Snowflake class over a module's `Snowflake` export: `nextId`, `nextIdString`
 * and `fillIds` over its `__take` handle (`overTake`), whose calls return a plain value
 * (0, undefined or false = failed, never an ID), so `nextId` allocates nothing per call;
 * the error is fetched (`takeError`) only on failure.
 */
export function snowflakeClass(WasmSnowflake, takeError) {
  const bind = overTake(WasmSnowflake, {
    nextId: (take) =>
      function nextId() {
        const id = take.__nextIdOrZero()
        if (id === 0n) throw takeError()
        return id
      },
    nextIdString: (take) =>
      function nextIdString() {
        const id = take.__nextIdString()
        if (id === undefined) throw takeError()
        return id
      },
    // Anything but a BigUint64Array goes to the class's own fillIds, which refuses it.
    fillIds: (take, generator, checked) =>
      function fillIds(target) {
        if (!(target instanceof BigUint64Array)) return checked.call(generator, target)
        if (!take.__fillIds(target)) throw takeError()
        return target
      },
  })
  return class Snowflake extends WasmSnowflake {
    constructor(options) {
      super(options)
      bind(this)
    }
  }
}

/**
 * A page whose Content-Security-Policy does not allow WebAssembly gets a CompileError from
 * the browser that names the policy (and, in Chromium, suggests 'unsafe-eval', which allows
 * eval() too); this one says what to allow, with the browser's error as its cause.
 */
function startError(e) {
  const text = String(e?.message ?? e)
  if (e?.name !== 'CompileError' || !/content.security.policy|\bCSP\b|unsafe-eval/i.test(text)) return e
  return new WebAssembly.CompileError(
    "segflake-wasm cannot start: the page's Content-Security-Policy does not allow WebAssembly; " +
      "add 'wasm-unsafe-eval' to its script-src (not 'unsafe-eval', which allows eval() as well). " +
      `The browser said: ${text}`,
    { cause: e },
  )
}

/**
 * `init`, `initSync` and `isInitialized` for a module's glue (`module`: its default export
 * as `init`, and its `initSync`, `__setErrorFactory` as `setErrorFactory`, `errorKinds` and
 * `__constants` as `constants`); `onReady` receives
 * `[MAX_BATCH, BASE62_LENGTH, BASE32_LENGTH]` once the module runs.
 */
export function startup(module, onReady) {
  let ready = false
  const finish = () => {
    if (ready) return
    module.setErrorFactory(makeError)
    checkErrorClasses(module.errorKinds())
    onReady(module.constants())
    ready = true
  }
  return {
    async init(input) {
      if (ready) return
      try {
        await module.init(input === undefined ? undefined : { module_or_path: input })
      } catch (e) {
        throw startError(e)
      }
      finish()
    },
    initSync(input) {
      if (ready) return
      try {
        module.initSync({ module: input })
      } catch (e) {
        throw startError(e)
      }
      finish()
    },
    isInitialized: () => ready,
  }
}

/** workerIdFromEnv over a module's workerIdFromText (see core.d.ts). */
export function workerIdFromEnvOf(workerIdFromText) {
  return function workerIdFromEnv(name, workerBits) {
    const env = globalThis.process?.env
    return workerIdFromText(name, typeof name === 'string' && env ? env[name] : undefined, workerBits)
  }
}
