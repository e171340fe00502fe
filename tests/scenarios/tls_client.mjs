// TLS cases for the Node adapters (tests/scenarios/tls.sh), run from SCEN_NODE_DIR: reads a
// JSON list of cases `{ name, kind: 'store' | 'registry', url, expect }` and runs each: a
// store allocates a segment of tag `tls` (RedisStore, PgStore, MySQLStore from the URL), a
// registry (`registryFromUrl`) claims worker ID 0 and releases it. `expect` is `ok` or a
// regular expression the error's text must match (case-insensitive). Prints one line per
// case and exits 1 if any case went otherwise.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'

const require = createRequire(pathToFileURL(`${process.cwd()}/`))
const { registryFromUrl } = require('segflake/registries')

async function store(url) {
  let s
  if (/^rediss?:/.test(url)) s = new (require('segflake/stores/redis').RedisStore)(url)
  else if (/^postgres(ql)?:/.test(url)) s = new (require('segflake/stores/pg').PgStore)(url)
  else s = new (require('segflake/stores/mysql').MySQLStore)(url)
  try {
    if (s.createTable) await s.createTable()
    await s.ensureTag('tls')
    const got = await s.allocate('tls', 10)
    return `allocated maxId ${got.maxId} step ${got.step}`
  } finally {
    await s.close().catch(() => {})
  }
}

async function registry(url) {
  const r = registryFromUrl(url)
  try {
    const owner = 'tls#0000000000000001'
    const mark = await r.claim({ workerId: 0, owner, ttlMs: 5000 })
    if (mark === null) throw new Error('worker ID 0 is held by another owner')
    await r.release({ workerId: 0, owner, markMs: 0 })
    return `claimed worker 0 (mark ${JSON.stringify(mark)})`
  } finally {
    await r.close().catch(() => {})
  }
}

/** An error's text with its causes (pg, ioredis and etcd3 wrap the TLS error). */
function describe(e) {
  const parts = []
  for (let x = e, i = 0; x && i < 4; x = x.cause, i++) parts.push(`${x.constructor?.name}: ${x.message ?? x}`)
  if (e?.lastNodeError) parts.push(String(e.lastNodeError.message))
  return parts.join(' (caused by ') + ')'.repeat(parts.length - 1)
}

let bad = 0
for (const c of JSON.parse(readFileSync(process.argv[2], 'utf8'))) {
  const t0 = performance.now()
  let detail = null
  let error = null
  try {
    detail = await (c.kind === 'store' ? store(c.url) : registry(c.url))
  } catch (e) {
    error = describe(e)
  }
  let good, line
  if (c.expect === 'ok') {
    good = error === null
    line = good ? detail : `unexpected error: ${error}`
  } else {
    good = error !== null && new RegExp(c.expect, 'i').test(error)
    line = error !== null ? `refused: ${error}` : `NOT refused: ${detail}`
  }
  if (!good) bad++
  const took = `(${((performance.now() - t0) / 1000).toFixed(2)} s)`
  console.log(`${good ? 'ok  ' : 'BAD '} node ${c.name} ${took}: ${line}`.slice(0, 400))
}
process.exit(bad ? 1 : 0)
