// Date serials from the shared Redis counter (segflake/counters' RedisSerialCounter) for a
// while, as fast as Redis answers; under libfaketime its clock may be off or stepped.
//   node serial_worker.mjs --url redis://... --prefix P --seconds S --out FILE --summary FILE
//                          [--sequence-digits 6] [--max-behind-ms MS] [--max-ahead-ms MS]
// Serials go to FILE (u64 LE); the summary matches serial_worker.py's.
import { createRequire } from 'node:module'
import fs from 'node:fs'
import path from 'node:path'

const require = createRequire(path.join(process.cwd(), 'noop.js'))
const { SerialGenerator, SegflakeError } = require('segflake')
const { RedisSerialCounter } = require('segflake/counters')

const args = { 'sequence-digits': 6 }
const argv = process.argv.slice(2)
for (let i = 0; i < argv.length; i += 2) {
  const k = argv[i].replace(/^--/, '')
  args[k] = ['url', 'prefix', 'out', 'summary'].includes(k) ? argv[i + 1] : Number(argv[i + 1])
}

const counter = new RedisSerialCounter(args.url, { prefix: args.prefix })
const gen = new SerialGenerator({
  counter,
  sequenceDigits: args['sequence-digits'],
  counterMaxBehindMs: args['max-behind-ms'],
  counterMaxAheadMs: args['max-ahead-ms'],
})
const serials = []
const errors = {}
const messages = []
let outOfOrder = 0
let previous = 0n
const deadline = performance.now() + args.seconds * 1000
while (performance.now() < deadline) {
  let s
  try {
    s = await gen.nextFromCounter()
  } catch (e) {
    if (!(e instanceof SegflakeError)) throw e
    const name = e.constructor.name
    errors[name] = (errors[name] ?? 0) + 1
    if (messages.length < 3) messages.push(`${name}: ${e.message}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
    continue
  }
  if (s <= previous) outOfOrder++
  previous = s
  serials.push(s)
}
await counter.close()
fs.writeFileSync(args.out, new BigUint64Array(serials))
fs.writeFileSync(
  args.summary,
  JSON.stringify({ issued: serials.length, errors, messages, out_of_order: outOfOrder, last: gen.last.toString() }),
)
