// Node's concurrency: each worker thread loads the addon into its own environment and
// runs its own generator with its own worker ID; together they never duplicate an ID.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Worker } from 'node:worker_threads'
import { Snowflake } from 'segflake'

const THREADS = 4
const PER_THREAD = 250_000

const workerSource = `
const { parentPort, workerData } = require('node:worker_threads')
const { Snowflake, SegflakeError } = require('segflake')
const gen = new Snowflake({ workerId: workerData.workerId })
const out = new BigUint64Array(workerData.count)
let i = 0
// Mix single calls and batches, as a service would.
while (i < out.length) {
  if (i % 3 === 0) out[i++] = gen.nextId()
  else {
    const n = Math.min(997, out.length - i)
    out.set(gen.nextIds(n), i)
    i += n
  }
}
let typed = false
try { new Snowflake({ workerId: 5000 }) } catch (e) { typed = e instanceof SegflakeError && e.code === 'WORKER_ID_OUT_OF_RANGE' }
parentPort.postMessage({ ids: out, typed }, [out.buffer])
`

function run(workerId) {
  return new Promise((resolve, reject) => {
    const w = new Worker(workerSource, { eval: true, workerData: { workerId, count: PER_THREAD } })
    w.once('message', resolve)
    w.once('error', reject)
    w.once('exit', (code) => code !== 0 && reject(new Error(`worker ${workerId} exited with ${code}`)))
  })
}

test(`${THREADS} worker_threads x ${PER_THREAD} IDs: all unique, increasing per thread`, async () => {
  const results = await Promise.all(Array.from({ length: THREADS }, (_, i) => run(i + 1)))
  const all = new Set()
  const probe = new Snowflake({ workerId: 0 })
  results.forEach(({ ids, typed }, t) => {
    assert.equal(typed, true, `thread ${t}: errors are SegflakeError subclasses inside workers too`)
    assert.equal(ids.length, PER_THREAD)
    for (let i = 1; i < ids.length; i++) {
      if (!(ids[i] > ids[i - 1])) assert.fail(`thread ${t}: ids[${i}] not increasing`)
    }
    assert.equal(probe.decode(ids[0]).workerId, t + 1)
    for (const id of ids) all.add(id)
  })
  assert.equal(all.size, THREADS * PER_THREAD, 'no duplicate across threads')
})
