// A Node segment-ID process for the scenarios (same flags and output as worker.py):
//   node worker.mjs --db pg|mysql|redis|http|multi-pg --tag T --out FILE --summary FILE
//                   [--count N | --rate R --duration S [--stop-file F]] [--step N] [--hammer S]
// IDs go to FILE as u64 little-endian; a JSON summary to --summary. --db multi-pg: a
// MultiStore over two PostgreSQL servers (SEGFLAKE_PG_DSN, SEGFLAKE_PG2_DSN); the summary
// lists the ranges each one handed out (`ranges`).
import { createRequire } from 'node:module'
import fs from 'node:fs'
import path from 'node:path'

const require = createRequire(path.join(process.cwd(), 'noop.js'))
const segflake = require('segflake')
const { SegmentGenerator, SegflakeError } = segflake

const args = { step: 1000, count: 0, rate: 0, duration: 0, hammer: 0, 'wait-timeout-ms': 1000 }
const argv = process.argv.slice(2)
for (let i = 0; i < argv.length; i += 2) {
  const k = argv[i].replace(/^--/, '')
  args[k] = ['db', 'tag', 'out', 'summary', 'stop-file'].includes(k) ? argv[i + 1] : Number(argv[i + 1])
}

function makeStore(db) {
  const env = process.env
  // The worker is told its step (--step): the rows' own steps do not override it.
  if (db === 'pg') {
    const { PgStore } = require('segflake/stores/pg')
    return new PgStore({ connectionString: env.SEGFLAKE_PG_DSN, max: 2 }, { useRowStep: false })
  }
  if (db === 'mysql' && env.SEGFLAKE_MYSQL_URL) {
    // Several hosts (sql_ha.sh).
    const { MySQLStore } = require('segflake/stores/mysql')
    return new MySQLStore(env.SEGFLAKE_MYSQL_URL, { useRowStep: false })
  }
  if (db === 'mysql') {
    const { MySQLStore } = require('segflake/stores/mysql')
    return new MySQLStore(
      {
        host: env.SEGFLAKE_MYSQL_HOST,
        port: Number(env.SEGFLAKE_MYSQL_PORT),
        user: env.SEGFLAKE_MYSQL_USER,
        password: env.SEGFLAKE_MYSQL_PASSWORD,
        database: env.SEGFLAKE_MYSQL_DB,
        connectionLimit: 2,
      },
      { useRowStep: false },
    )
  }
  if (db === 'redis') {
    const { RedisStore } = require('segflake/stores/redis')
    return new RedisStore(env.SEGFLAKE_REDIS_URL)
  }
  if (db === 'http') {
    // A segflake serve at SEGFLAKE_HTTP_URL, with SEGFLAKE_HTTP_TOKEN if set.
    const token = env.SEGFLAKE_HTTP_TOKEN || undefined
    return new segflake.HttpStore(env.SEGFLAKE_HTTP_URL, { token })
  }
  throw new Error(`unknown --db ${db}`)
}

const timing = { calls: 0, failures: 0, totalMs: 0, maxMs: 0 }
const timed = (inner, ranges) => ({
  async allocate(tag, step) {
    const t = performance.now()
    try {
      const r = await inner.allocate(tag, step)
      timing.calls++
      if (r) ranges.push([String(r.maxId - BigInt(r.step)), String(r.maxId)])
      return r
    } catch (err) {
      timing.failures++
      throw err
    } finally {
      const dt = performance.now() - t
      timing.totalMs += dt
      timing.maxMs = Math.max(timing.maxMs, dt)
    }
  },
})
const multi = args.db === 'multi-pg'
const inners = multi
  ? ['SEGFLAKE_PG_DSN', 'SEGFLAKE_PG2_DSN'].map((v) => {
      const { PgStore } = require('segflake/stores/pg')
      return new PgStore({ connectionString: process.env[v], max: 2 })
    })
  : [makeStore(args.db)]
const inner = inners[0]
const ranges = inners.map(() => [])
const parts = inners.map((s, i) => timed(s, ranges[i]))
const store = multi ? new segflake.MultiStore(parts) : parts[0]

const gen = new SegmentGenerator({
  store,
  step: args.step,
  maxStep: args.step,
  dynamicStep: false,
  waitTimeoutMs: args['wait-timeout-ms'],
})
const tag = gen.tag(args.tag)
const errors = {}
const messages = []
const fd = fs.openSync(args.out, 'w')
const t0 = performance.now()
let issued = 0
let longestStall = 0
let stallEndMs = 0 // when the longest stall ended (Unix ms)

async function nextId() {
  try {
    return tag.nextIdSync()
  } catch (err) {
    if (err instanceof SegflakeError && err.code === 'SEGMENTS_EXHAUSTED') return await tag.nextId()
    throw err
  }
}

if (args.count) {
  const ids = new BigUint64Array(args.count)
  for (let i = 0; i < args.count; i++) ids[i] = await nextId()
  issued = ids.length
  fs.writeSync(fd, Buffer.from(ids.buffer))
} else {
  let buf = []
  let lastOk = t0
  let lastFlush = t0
  const end = t0 + args.duration * 1000
  const flush = () => {
    if (buf.length) fs.writeSync(fd, Buffer.from(BigUint64Array.from(buf).buffer))
    buf = []
  }
  for (;;) {
    const now = performance.now()
    if (now >= end) break
    const due = Math.floor(((now - t0) / 1000) * args.rate) - issued
    if (due <= 0) {
      await new Promise((r) => setTimeout(r, 1))
      continue
    }
    for (let i = 0; i < Math.min(due, 1000); i++) {
      try {
        buf.push(await nextId())
      } catch (err) {
        const name = err && err.constructor ? err.constructor.name : 'Error'
        errors[name] = (errors[name] || 0) + 1
        const text = `${err.message}${err.cause ? ` (cause: ${err.cause.message || err.cause})` : ''}`
        if (messages.length < 5 && !messages.includes(text)) messages.push(text)
        await new Promise((r) => setTimeout(r, 20))
        break
      }
      issued++
      const t = performance.now()
      if (t - lastOk > longestStall) {
        longestStall = t - lastOk
        stallEndMs = Date.now()
      }
      lastOk = t
    }
    if (now - lastFlush > 20) {
      flush()
      lastFlush = now
      if (args['stop-file'] && fs.existsSync(args['stop-file'])) break
    }
  }
  flush()
}
fs.closeSync(fd)
const elapsed = (performance.now() - t0) / 1000
const stats = tag.stats()
await gen.close()
const summary = {
  lang: 'node',
  pid: process.pid,
  db: args.db,
  issued,
  elapsed_s: Number(elapsed.toFixed(3)),
  ids_per_s: Math.round(issued / elapsed),
  allocations: timing.calls,
  store_failures: timing.failures,
  alloc_ms_mean: Number((timing.totalMs / Math.max(1, timing.calls + timing.failures)).toFixed(3)),
  alloc_ms_max: Number(timing.maxMs.toFixed(3)),
  errors,
  error_messages: messages,
  longest_stall_ms: Number(longestStall.toFixed(1)),
  longest_stall_end_ms: stallEndMs,
  engine_failures: Number(stats.failures),
}
if (multi) summary.ranges = ranges
if (args.hammer) {
  const allocs = []
  const t1 = performance.now()
  while (performance.now() - t1 < args.hammer * 1000) allocs.push((await inner.allocate(args.tag, 1)).maxId - 1n) // owns max_id - 1
  fs.writeFileSync(args.out + '.allocs', Buffer.from(BigUint64Array.from(allocs).buffer))
  summary.hammer_allocs = allocs.length
  summary.hammer_s = Number(((performance.now() - t1) / 1000).toFixed(3))
}
fs.writeFileSync(args.summary, JSON.stringify(summary))
for (const s of inners) await s.close()
