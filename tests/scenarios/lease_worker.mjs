// A scenario process that leases its worker ID from a real registry and issues IDs (the
// Node twin of lease_worker.py; same arguments, output and exit codes).
//
//   node lease_worker.mjs --registry URL --out FILE --summary FILE [--count N]
//     [--worker-bits B] [--lease-ttl-ms MS] [--preferred-worker-id N]
//     [--max-peer-skew-ms MS] [--mark-ahead-ms MS] [--clock-skew-allowance-ms MS]
//     [--registry-timeout-ms MS] [--batch K] [--pause-ms MS]
// The owner label is the host name (run it in its own UTS namespace for another one).
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { setTimeout as sleep } from 'node:timers/promises'

// The packages installed in the working directory (the scenario's Node project).
const require = createRequire(path.join(process.cwd(), 'noop.js'))
const { Snowflake, SegflakeError } = require('segflake')
const { registryFromUrl } = require('segflake/registries')

const args = { count: 0, workerBits: 3, leaseTtlMs: 3000, maxPeerSkewMs: 0, batch: 100, pauseMs: 1 }
const argv = process.argv.slice(2)
for (let i = 0; i < argv.length; i += 2) {
  const key = argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase())
  const value = argv[i + 1]
  args[key] = ['registry', 'out', 'summary'].includes(key) ? value : Number(value)
}

let stop = false
process.on('SIGTERM', () => (stop = true))
process.on('SIGINT', () => (stop = true))

const options = {
  layout: { preset: 'twitter', workerBits: args.workerBits },
  leaseTtlMs: args.leaseTtlMs,
  maxPeerSkewMs: args.maxPeerSkewMs,
}
if (args.preferredWorkerId !== undefined) options.preferredWorkerId = args.preferredWorkerId
for (const key of ['markAheadMs', 'clockSkewAllowanceMs', 'registryTimeoutMs']) {
  if (args[key] !== undefined) options[key] = args[key]
}
// The adapter's transport deadline stays within the generator's registry timeout.
const registry = registryFromUrl(args.registry, {
  timeoutMs: Math.min(3000, args.registryTimeoutMs ?? 3000),
})
const out = fs.openSync(args.out, 'a')
let gen
try {
  gen = await Snowflake.fromRegistry(registry, options)
} catch (e) {
  process.stderr.write(`start-up failed: ${e.name} (${e.code}): ${e.message}\n`)
  await registry.close()
  process.exit(3)
}
let issued = 0
let buffer = []
let lastFlush = Date.now()
const errors = {}
const workers = []
const flush = () => {
  if (buffer.length > 0) fs.writeSync(out, buffer.join(''))
  buffer = []
  lastFlush = Date.now()
}
while (!stop && (args.count === 0 || issued < args.count)) {
  const n = args.count === 0 ? args.batch : Math.min(args.batch, args.count - issued)
  let ids
  try {
    ids = gen.nextIds(n)
  } catch (e) {
    if (!(e instanceof SegflakeError)) throw e
    const kind = e.name.replace(/Error$/, '')
    errors[kind] = (errors[kind] ?? 0) + 1
    flush() // IDs already issued reach the file while no lease is held
    await sleep(50)
    continue
  }
  if (!workers.includes(gen.workerId)) workers.push(gen.workerId)
  for (const id of ids) buffer.push(`${id}\n`)
  issued += ids.length
  if (buffer.length >= 1000 || Date.now() - lastFlush >= 50) flush()
  // Yield to the event loop (renewals run on it) between batches.
  await sleep(args.pauseMs)
}
flush()
fs.closeSync(out)
const stats = gen.leaseStats()
await gen.close()
await registry.close()
fs.writeFileSync(
  args.summary,
  JSON.stringify({ lang: 'node', ids: issued, worker_ids: workers, errors, stats }, (k, v) =>
    typeof v === 'bigint' ? Number(v) : v,
  ),
)
