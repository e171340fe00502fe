// The segment generator, date serials and worker-ID leases of segflake-wasm: the JS
// drivers shared with the native package (driver.js, copied from npm/shared/driver.js when
// the package is built) over the core's sans-I/O engines in the WebAssembly module.
import {
  __LeaseEngine,
  __SegmentEngine,
  __SerialGenerator,
  __counterAttempts,
  __segmentConfig,
  __takeError,
} from './pkg/segflake_wasm.js'
import { SegflakeError, errorOfCode } from './errors.js'
import { createDrivers } from './driver.js'
import { overTake } from './startup.js'

// A serial generator's `next` and `nextString` over its `__take` handle (0 = failed: a
// serial starts with its date, so it is never 0).
const nextSerial = (take) => {
  const serial = take.__nextOrZero()
  if (serial === 0n) throw __takeError()
  return serial
}
overTake(__SerialGenerator, {
  next: (take) =>
    function next() {
      return nextSerial(take)
    },
  nextString: (take) =>
    function nextString() {
      return String(nextSerial(take))
    },
})

/** The owner label of a worker-ID lease (no host name here; the engine adds its own nonce). */
const ownerLabel = () => 'wasm'

/**
 * node:https and node:tls, once the Node entry (node.js, also what Bun and Deno load) has
 * given them: an HttpStore with `ca`, `cert` or `key` needs them; the browser and workerd
 * entries never do (their fetch keeps its own trust store), so those options are refused there.
 */
let nodeTls = null
/** Called by node.js with `{ https, tls }`; not part of the public API. */
export function __useNodeTls(modules) {
  nodeTls = modules
}

export const { SegmentGenerator, SegmentTag, SerialGenerator, fromRegistry, HttpStore, MultiStore } = createDrivers({
  SegmentEngine: __SegmentEngine,
  bindTake: (engine) => {
    const take = engine.__take
    return (onFetch) => take.take(onFetch) ?? null
  },
  segmentConfig: __segmentConfig,
  Serial: __SerialGenerator,
  counterAttempts: __counterAttempts,
  makeError: errorOfCode,
  SegflakeError,
  now: () => (typeof performance !== 'undefined' ? performance.now() : Date.now()),
  LeaseEngine: __LeaseEngine,
  ownerLabel,
  nodeTls: () => nodeTls,
})
