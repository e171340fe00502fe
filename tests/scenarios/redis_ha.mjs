// Node processes for the replicated-Redis scenarios (redis_ha.sh), the counterpart of
// redis_ha.py's workers, run from a project that has segflake installed:
//   node redis_ha.mjs segments --url URL --tag T --rate R [--step N] --out F --summary F --events F
//   node redis_ha.mjs serials --url URL --prefix P --rate R --out F --summary F --events F
// Runs until SIGTERM (or --seconds), IDs to --out as u64 little-endian flushed every 20 ms,
// a line `<unix ms> <kind> <message>` per failed store call in --events (kind
// `replica_wait` for the core's replica-wait refusal), a line `<unix ms> range <max_id>
// <step>` per range a segment worker's store handed out, a JSON summary at the end.
import { createRequire } from 'node:module'
import fs from 'node:fs'
import path from 'node:path'

const require = createRequire(path.join(process.cwd(), 'noop.js'))
const segflake = require('segflake')
const { SegflakeError } = segflake

const mode = process.argv[2]
const args = { step: 1000, seconds: 170 }
const argv = process.argv.slice(3)
for (let i = 0; i < argv.length; i += 2) {
  const k = argv[i].replace(/^--/, '')
  args[k] = ['url', 'tag', 'prefix', 'out', 'summary', 'events'].includes(k) ? argv[i + 1] : Number(argv[i + 1])
}

const WAIT_TEXT = 'replica(s) it must reach'
const out = fs.openSync(args.out, 'w')
const events = fs.openSync(args.events, 'a')
const summary = {
  lang: 'node',
  pid: process.pid,
  issued: 0,
  errors: {},
  failures: {},
  messages: [],
  longest_stall_ms: 0,
}
let stop = false
process.on('SIGTERM', () => {
  stop = true
})
const deadline = performance.now() + args.seconds * 1000
let buf = []
let lastFlush = performance.now()
let lastOk = performance.now()
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

function flush() {
  if (buf.length) fs.writeSync(out, Buffer.from(BigUint64Array.from(buf).buffer))
  buf = []
  lastFlush = performance.now()
}

function describe(err) {
  const cause = err && err.cause ? ` (cause: ${err.cause.message || err.cause})` : ''
  return `${err && err.constructor ? err.constructor.name : 'Error'}: ${err && err.message}${cause}`
}

// A failed store call: counted by kind, logged at once.
function failure(err) {
  const text = describe(err)
  const kind = text.includes(WAIT_TEXT) ? 'replica_wait' : 'error'
  summary.failures[kind] = (summary.failures[kind] || 0) + 1
  if (summary.messages.length < 6 && !summary.messages.some((m) => m.slice(0, 60) === text.slice(0, 60))) {
    summary.messages.push(text.slice(0, 600))
  }
  fs.writeSync(events, `${Date.now()} ${kind} ${text.split(/\s+/).join(' ').slice(0, 300)}\n`)
}

// Calls step() about rate times a second until SIGTERM (after a stall, at the rate again
// rather than in a burst); an error is counted and the call retried after 20 ms.
async function paced(step) {
  let t0 = performance.now()
  let done = 0
  while (!stop && performance.now() < deadline) {
    let due = Math.floor(((performance.now() - t0) / 1000) * args.rate) - done
    if (due > args.rate * 0.05) {
      // After a stall, go on at the rate instead of catching up in a burst.
      t0 += ((due - args.rate * 0.05) / args.rate) * 1000
      due = Math.floor(args.rate * 0.05)
    }
    if (due <= 0) {
      await sleep(2)
      continue
    }
    for (let i = 0; i < Math.min(due, 500); i++) {
      let id
      try {
        id = await step()
      } catch (err) {
        if (!(err instanceof SegflakeError)) throw err
        summary.errors[err.constructor.name] = (summary.errors[err.constructor.name] || 0) + 1
        await sleep(20)
        break
      }
      done++
      buf.push(id)
      summary.issued++
      const now = performance.now()
      summary.longest_stall_ms = Math.max(summary.longest_stall_ms, now - lastOk)
      lastOk = now
    }
    if (performance.now() - lastFlush > 20) flush()
  }
  flush()
}

if (mode === 'segments') {
  const { RedisStore } = require('segflake/stores/redis')
  const inner = new RedisStore(args.url)
  let calls = 0
  const store = {
    async allocate(tag, step) {
      try {
        const r = await inner.allocate(tag, step)
        calls++
        if (r) fs.writeSync(events, `${Date.now()} range ${r.maxId} ${r.step}\n`)
        return r
      } catch (err) {
        failure(err)
        throw err
      }
    },
  }
  const gen = new segflake.SegmentGenerator({
    store,
    step: args.step,
    maxStep: args.step,
    dynamicStep: false,
    waitTimeoutMs: 1000,
  })
  const tag = gen.tag(args.tag)
  await paced(async () => {
    try {
      return tag.nextIdSync()
    } catch (err) {
      if (err instanceof SegflakeError && err.code === 'SEGMENTS_EXHAUSTED') return await tag.nextId()
      throw err
    }
  })
  summary.allocations = calls
  summary.engine_failures = Number(tag.stats().failures)
  await gen.close()
  await inner.close()
} else if (mode === 'serials') {
  const { RedisSerialCounter } = require('segflake/counters')
  const counter = new RedisSerialCounter(args.url, { prefix: args.prefix })
  const gen = new segflake.SerialGenerator({ counter, sequenceDigits: 6 })
  let previous = 0n
  summary.out_of_order = 0
  await paced(async () => {
    let s
    try {
      s = await gen.nextFromCounter()
    } catch (err) {
      failure(err)
      throw err
    }
    if (s <= previous) summary.out_of_order++
    previous = s
    return s
  })
  await counter.close()
} else {
  throw new Error(`unknown mode ${mode}`)
}
fs.closeSync(out)
fs.writeFileSync(args.summary, JSON.stringify(summary))
