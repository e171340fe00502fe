// Node's concurrency: each worker thread loads the addon into its own environment and
// runs its own generator with its own worker ID; together they never duplicate an ID.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Worker } from 'node:worker_threads'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
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

const segmentWorkerSource = `
const { parentPort, workerData } = require('node:worker_threads')
const { SegmentGenerator } = require('segflake')
const row = new BigInt64Array(workerData.row) // the shared "max_id" column
const gen = new SegmentGenerator({
  store: {
    async allocate(tag, step) {
      await new Promise((r) => setTimeout(r, 1)) // a round trip
      const maxId = Atomics.add(row, 0, BigInt(step)) + BigInt(step)
      return { maxId, step }
    },
  },
  step: 100,
  maxStep: 1000,
})
;(async () => {
  const tag = gen.tag('order')
  const out = new BigUint64Array(workerData.count)
  let i = 0
  while (i < out.length) {
    if (i % 2) {
      const b = await tag.nextIds(Math.min(50, out.length - i))
      out.set(b, i)
      i += b.length
    } else {
      try { out[i++] = tag.nextIdSync() } catch { out[i - 1] = await tag.nextId() }
    }
  }
  await gen.close()
  parentPort.postMessage(out, [out.buffer])
})()
`

test('4 worker_threads with their own SegmentGenerator over one shared store: all unique', async () => {
  const row = new SharedArrayBuffer(8)
  new BigInt64Array(row)[0] = 1n
  const per = 20_000
  const results = await Promise.all(
    Array.from(
      { length: THREADS },
      () =>
        new Promise((resolve, reject) => {
          const w = new Worker(segmentWorkerSource, { eval: true, workerData: { row, count: per } })
          w.once('message', resolve)
          w.once('error', reject)
        }),
    ),
  )
  const all = new Set()
  for (const ids of results) {
    for (let i = 1; i < ids.length; i++) if (!(ids[i] > ids[i - 1])) assert.fail('not increasing within a thread')
    for (const id of ids) all.add(id)
  }
  assert.equal(all.size, THREADS * per)
  for (const id of all) assert.ok(id >= 1n && id < new BigInt64Array(row)[0])
})

test('cluster workers with distinct slots get distinct worker IDs and never collide', () => {
  const script = `
    const cluster = require('node:cluster')
    const { Snowflake } = require('segflake')
    if (cluster.isPrimary) {
      const all = new Set()
      let done = 0
      for (let slot = 0; slot < 2; slot++) {
        const w = cluster.fork({ WORKER_SLOT: String(slot) })
        w.on('message', (ids) => {
          for (const id of ids) all.add(id)
          w.kill()
          if (++done === 2) console.log(all.size)
        })
      }
    } else {
      const gen = new Snowflake({ workerId: 100 + Number(process.env.WORKER_SLOT) })
      const ids = Array.from(gen.nextIds(50000), String)
      process.send(ids)
    }
  `
  const file = path.join(process.cwd(), `cluster-check-${process.pid}.cjs`)
  fs.writeFileSync(file, script)
  try {
    const r = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 60_000 })
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout.trim(), '100000')
  } finally {
    fs.rmSync(file, { force: true })
  }
})
