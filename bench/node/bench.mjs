// segflake beside the Node ID generators users pick today. One run, one table:
// IDs/s on 1 and 2 worker threads (each thread its own generator, distinct worker IDs
// where the library takes one) and a duplicate check over 1,000,000 IDs (one thread, and
// 500,000 from each of two threads).
//
//   node bench.mjs [--ms 1000] [--only name,name]
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import path from 'node:path'
import os from 'node:os'

const here = path.dirname(fileURLToPath(import.meta.url))
const require = createRequire(import.meta.url)
// segflake as installed from its tarballs by run.sh (the in-tree npm/segflake lacks the
// shared driver.js its build stages), or SEGFLAKE_PACKAGE.
const SEGFLAKE = process.env.SEGFLAKE_PACKAGE || path.resolve(here, 'node_modules', 'segflake')

// Every generator: `make(worker, shared)` returns `{ next }` (sync, one ID) or
// `{ nextAsync }` / `{ batch }` (IDs per call); `key` turns an ID into a Set key.
const GENERATORS = {
  'noop napi call -> bigint (floor)': {
    kind: 'floor',
    make() {
      const sf = require(SEGFLAKE)
      return { next: sf.__noop }
    },
  },
  'segflake Snowflake.nextId (twitter)': {
    note: 'sustained, after the 2 s drift borrow is spent',
    spendBorrow: true,
    make(worker) {
      const sf = require(SEGFLAKE)
      const gen = new sf.Snowflake({ workerId: worker })
      return { next: () => gen.nextId(), aheadMs: () => gen.highWaterMark - Date.now() }
    },
  },
  'segflake Snowflake.nextIds(4096) (twitter)': {
    note: 'sustained; a batch cannot beat the layout ceiling',
    spendBorrow: true,
    make(worker) {
      const sf = require(SEGFLAKE)
      const gen = new sf.Snowflake({ workerId: worker })
      const buf = new BigUint64Array(4096)
      return { batch: () => gen.fillIds(buf), aheadMs: () => gen.highWaterMark - Date.now() }
    },
  },
  'segflake Snowflake.nextIds(10000) (41/1/21)': {
    note: 'a layout whose ceiling (2.1e9/s per worker) is never reached: the batch cost itself',
    make(worker) {
      const sf = require(SEGFLAKE)
      const gen = new sf.Snowflake({
        workerId: worker - 1,
        layout: { timeBits: 41, workerBits: 1, sequenceBits: 21, epochMs: '2025-01-01' },
      })
      return { batch: () => gen.nextIds(10_000) }
    },
  },
  'segflake SegmentGenerator nextIdSync': {
    note: 'async store (shared atomic max_id), step 1,000,000',
    make(worker, shared) {
      const sf = require(SEGFLAKE)
      const seg = segment(sf, shared)
      const tag = seg.tag('bench')
      return {
        warm: () => tag.nextId(),
        next: () => {
          try {
            return tag.nextIdSync()
          } catch (e) {
            if (e.code !== 'SEGMENTS_EXHAUSTED') throw e
            return null // counted as a miss; the caller awaits the store
          }
        },
        refill: () => tag.nextId(),
      }
    },
  },
  'segflake SegmentGenerator nextIds(10000)': {
    note: 'await per batch',
    make(worker, shared) {
      const sf = require(SEGFLAKE)
      const seg = segment(sf, shared)
      const tag = seg.tag('bench')
      return { warm: () => tag.nextId(), batchAsync: () => tag.nextIds(10_000) }
    },
  },
  '@sapphire/snowflake generate()': {
    make(worker) {
      const { Snowflake } = require('@sapphire/snowflake')
      const gen = new Snowflake(new Date('2025-01-01T00:00:00Z'))
      return { next: () => gen.generate({ workerId: BigInt(worker), processId: 0n }) }
    },
  },
  'flake-idgen next()': {
    note: 'throws on sequence overflow: retried until the next ms',
    make(worker) {
      const FlakeId = require('flake-idgen')
      const gen = new FlakeId({ id: worker })
      return {
        next: () => {
          for (;;) {
            try {
              return gen.next()
            } catch {
              // "Sequence exceeded its maximum value": spin to the next millisecond.
            }
          }
        },
      }
    },
    key: (b) => b.toString('hex'),
  },
  'nodejs-snowflake getUniqueID()': {
    note: 'Rust via WASM',
    make(worker) {
      const { Snowflake } = require('nodejs-snowflake')
      const gen = new Snowflake({ instance_id: worker })
      return { next: () => gen.getUniqueID() }
    },
  },
  'simple-flakeid NextId()': {
    make(worker) {
      const { SnowflakeIdv1 } = require('simple-flakeid')
      const gen = new SnowflakeIdv1({ workerId: worker })
      return { next: () => gen.NextId() }
    },
  },
  'uuid v7()': {
    make() {
      const { v7 } = require('uuid')
      return { next: () => v7() }
    },
  },
  'ulid monotonicFactory()': {
    make() {
      const { monotonicFactory } = require('ulid')
      const next = monotonicFactory()
      return { next: () => next() }
    },
  },
  'ulidx monotonicFactory()': {
    make() {
      const { monotonicFactory } = require('ulidx')
      const next = monotonicFactory()
      return { next: () => next() }
    },
  },
  'hyperid()': {
    make() {
      const hyperid = require('hyperid')
      const next = hyperid()
      return { next: () => next() }
    },
  },
}

/** A segment generator whose store is a shared atomic `max_id` (a database row). */
function segment(sf, shared) {
  const row = new BigInt64Array(shared)
  return new sf.SegmentGenerator({
    store: {
      async allocate(tag, step) {
        const maxId = Atomics.add(row, 0, BigInt(step)) + BigInt(step)
        return { maxId, step }
      },
    },
    step: 1_000_000,
  })
}

// ---------------------------------------------------------------- worker side
async function workerMain() {
  const { name, worker, mode, ms, count, shared } = workerData
  const spec = GENERATORS[name]
  const g = spec.make(worker, shared)
  if (g.warm) await g.warm()
  if (spec.spendBorrow && mode === 'rate') {
    // Run flat out until the logical clock is at its drift bound (2000 ms ahead), so the
    // measurement shows the sustained rate (the layout's ceiling), not the start-up burst.
    const giveUp = performance.now() + 20_000
    while (g.aheadMs() < 1990 && performance.now() < giveUp) {
      for (let i = 0; i < 4096; i++) g.next ? g.next() : g.batch()
    }
  }
  parentPort.postMessage({ ready: true })
  await new Promise((resolve) => parentPort.once('message', resolve)) // start together
  if (mode === 'rate') {
    let n = 0
    let misses = 0
    const start = performance.now()
    const end = start + ms
    if (g.batch) {
      while (performance.now() < end) n += g.batch().length
    } else if (g.batchAsync) {
      while (performance.now() < end) n += (await g.batchAsync()).length
    } else {
      while (performance.now() < end) {
        for (let i = 0; i < 1024; i++) {
          if (g.next() === null) {
            misses++
            await g.refill()
          }
        }
        n += 1024
      }
    }
    parentPort.postMessage({ n, seconds: (performance.now() - start) / 1000, misses })
  } else {
    const key = spec.key || ((id) => id)
    const ids = []
    if (g.batchAsync) {
      while (ids.length < count) for (const id of await g.batchAsync()) ids.length < count && ids.push(id)
    } else if (g.batch) {
      while (ids.length < count) for (const id of g.batch()) ids.length < count && ids.push(id)
    } else {
      while (ids.length < count) {
        let id = g.next()
        if (id === null) id = await g.refill()
        ids.push(key(id))
      }
    }
    parentPort.postMessage({ ids })
  }
  process.exit(0)
}

// ---------------------------------------------------------------- main side
function runWorkers(name, threads, mode, opts) {
  const shared = new SharedArrayBuffer(8)
  new BigInt64Array(shared)[0] = 1n
  const workers = []
  const ready = []
  const done = []
  for (let t = 0; t < threads; t++) {
    const w = new Worker(fileURLToPath(import.meta.url), {
      workerData: { name, worker: t + 1, mode, shared, ...opts },
    })
    workers.push(w)
    let markReady
    ready.push(new Promise((r) => (markReady = r)))
    done.push(
      new Promise((resolve, reject) => {
        w.on('message', (m) => (m.ready ? markReady() : resolve(m)))
        w.on('error', reject)
        w.on('exit', (code) => code !== 0 && reject(new Error(`${name}: worker exited with ${code}`)))
      }),
    )
  }
  return Promise.all(ready).then(() => {
    for (const w of workers) w.postMessage('go')
    return Promise.all(done)
  })
}

async function rate(name, threads, ms) {
  const results = await runWorkers(name, threads, 'rate', { ms })
  return {
    perSecond: results.reduce((s, r) => s + r.n / r.seconds, 0),
    misses: results.reduce((s, r) => s + r.misses, 0),
  }
}

async function duplicates(name, threads, total) {
  const results = await runWorkers(name, threads, 'dups', { count: total / threads })
  const seen = new Set()
  let n = 0
  for (const r of results) {
    for (const id of r.ids) {
      seen.add(typeof id === 'object' ? String(id) : id)
      n++
    }
  }
  return n - seen.size
}

function fmtRate(x) {
  if (x >= 1e6) return `${(x / 1e6).toFixed(2)} M`
  if (x >= 1e3) return `${(x / 1e3).toFixed(0)} k`
  return x.toFixed(0)
}

async function main() {
  const args = process.argv.slice(2)
  const ms = Number(args[args.indexOf('--ms') + 1]) || 1000
  const only = args.includes('--only') ? args[args.indexOf('--only') + 1].split(',') : null
  const names = Object.keys(GENERATORS).filter((n) => !only || only.some((o) => n.includes(o)))
  const sf = require(SEGFLAKE)
  console.log(
    `Node ${process.version}, ${os.cpus().length} cores (${os.cpus()[0]?.model?.trim()}), segflake core ${sf.coreVersion()}; ${ms} ms per rate, one run`,
  )
  console.log('')
  console.log('| generator | IDs/s, 1 thread | IDs/s, 2 threads | dups in 1M, 1 thread | dups in 1M, 2 threads | note |')
  console.log('|---|---:|---:|---:|---:|---|')
  for (const name of names) {
    const spec = GENERATORS[name]
    const one = await rate(name, 1, ms)
    const two = await rate(name, 2, ms)
    const floor = spec.kind === 'floor'
    const d1 = floor ? 'n/a' : String(await duplicates(name, 1, 1_000_000))
    const d2 = floor ? 'n/a' : String(await duplicates(name, 2, 1_000_000))
    const notes = [spec.note, one.misses || two.misses ? `${one.misses + two.misses} sync misses` : null].filter(Boolean)
    console.log(`| ${name} | ${fmtRate(one.perSecond)} | ${fmtRate(two.perSecond)} | ${d1} | ${d2} | ${notes.join('; ')} |`)
  }
}

/**
 * The per-call cost beside the floor, robust to a noisy machine: the calls are timed in
 * alternation (7 rounds of 200 ms each, one thread) and the medians compared.
 */
async function floorComparison() {
  const sf = require(SEGFLAKE)
  const row = new SharedArrayBuffer(8)
  new BigInt64Array(row)[0] = 1n
  const seg = segment(sf, row)
  const tag = seg.tag('floor')
  await tag.nextId()
  const wide = new sf.Snowflake({ workerId: 0, layout: { timeBits: 41, workerBits: 1, sequenceBits: 21, epochMs: '2025-01-01' } })
  const noop = sf.__noop
  const cases = {
    'noop napi call -> bigint (floor)': () => noop(),
    'SegmentTag.nextIdSync()': () => tag.nextIdSync(),
    'Snowflake.nextId() (41/1/21, never throttled)': () => wide.nextId(),
  }
  const samples = Object.fromEntries(Object.keys(cases).map((k) => [k, []]))
  for (let round = 0; round < 7; round++) {
    for (const [name, f] of Object.entries(cases)) {
      let n = 0
      const start = performance.now()
      const end = start + 200
      while (performance.now() < end) {
        for (let i = 0; i < 1000; i++) {
          try {
            f()
          } catch {
            await tag.nextId() // a segment boundary: the background fetch needs the event loop
          }
        }
        n += 1000
      }
      samples[name].push(((performance.now() - start) * 1e6) / n)
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const floor = median(samples['noop napi call -> bigint (floor)'])
  console.log('')
  console.log('Per call, one thread, medians of 7 alternating 200 ms rounds:')
  console.log('')
  console.log('| call | ns/call | x floor |')
  console.log('|---|---:|---:|')
  for (const name of Object.keys(cases)) {
    const m = median(samples[name])
    console.log(`| ${name} | ${m.toFixed(1)} | ${(m / floor).toFixed(2)} |`)
  }
  await seg.close()
}

if (isMainThread) {
  main()
    .then(() => (process.argv.includes('--no-floor') ? undefined : floorComparison()))
    .catch((e) => {
      console.error(e)
      process.exit(1)
    })
} else {
  workerMain().catch((e) => {
    console.error(e)
    process.exit(1)
  })
}
