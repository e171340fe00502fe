// What both builds' entries share (core.js, the full module; snowflake-core.js, the
// snowflake module): the Snowflake class over a module's generator, the start-up of a
// module, and workerIdFromEnv. Each entry passes its own wasm-bindgen glue.
import { checkErrorClasses, makeError } from './errors.js'

/**
 * The public Snowflake class over a module's `Snowflake` export: the per-ID hot path
 * `__nextIdOrZero` returns a plain u64 (0 = failed, never an ID), so the glue allocates
 * nothing per call; the error is fetched (`takeError`) only on failure. Each instance gets
 * its own `nextId` bound to it, as in the native package, so `const next = gen.nextId`
 * works unbound.
 */
export function snowflakeClass(WasmSnowflake, takeError) {
  const nextIdOrZero = WasmSnowflake.prototype.__nextIdOrZero
  Object.defineProperty(WasmSnowflake.prototype, 'nextId', {
    value: function nextId() {
      const id = nextIdOrZero.call(this)
      if (id === 0n) throw takeError()
      return id
    },
    writable: true,
    enumerable: true,
    configurable: true,
  })
  return class Snowflake extends WasmSnowflake {
    constructor(options) {
      super(options)
      const self = this
      Object.defineProperty(this, 'nextId', {
        value: function nextId() {
          const id = nextIdOrZero.call(self)
          if (id === 0n) throw takeError()
          return id
        },
        enumerable: false,
        writable: true,
        configurable: true,
      })
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
