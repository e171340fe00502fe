// A typed example: `tsc --noEmit` must accept it against the installed package's types.
import {
  Snowflake,
  Layout,
  Obfuscator,
  encode,
  parse,
  SegflakeError,
  ClockMovedBackwardsError,
  type DecodedId,
  type SnowflakeOptions,
  type ErrorCode,
} from 'segflake'

const options: SnowflakeOptions = { workerId: 7, layout: 'twitter', maxDriftMs: 2000, sequenceStart: 'random' }
const gen = new Snowflake(options)
const id: bigint = gen.nextId()
const text: string = gen.nextIdString()
const batch: BigUint64Array = gen.nextIds(1000)
const filled: BigUint64Array = gen.fillIds(new BigUint64Array(16))
const fields: DecodedId = gen.decode(id)
const ms: number = fields.timestampMs + gen.highWaterMark
const again: bigint = gen.compose({ timestampMs: new Date(), sequence: 1 })

const safe = new Snowflake({ workerId: 1, layout: 'js-safe', notBeforeMs: '2025-06-01' })
const n: number = safe.nextIdNumber()

const layout = new Layout({ preset: 'sonyflake', epochMs: '2025-01-01' })
const until: number | null = layout.jsSafeUntilMs
const order: 'time-worker-sequence' | 'time-sequence-worker' = layout.order
const max: bigint = layout.maxId
const custom = Layout.preset('twitter', Date.UTC(2024, 0, 1))

const short: string = encode(id, 'base62')
const back: bigint = parse(short, 'base62')
const hidden: bigint = new Obfuscator('000102030405060708090a0b0c0d0e0f').obfuscate(id)

try {
  gen.nextId()
} catch (e) {
  if (e instanceof ClockMovedBackwardsError) {
    const code: 'CLOCK_MOVED_BACKWARDS' = e.code
    void code
  } else if (e instanceof SegflakeError) {
    const code: ErrorCode = e.code
    void code
  }
}

// @ts-expect-error workerId is required
new Snowflake({ layout: 'twitter' })
// @ts-expect-error unknown preset
new Layout('snowflake')
// @ts-expect-error ids are bigint, not string
const wrong: string = gen.nextId()

void [text, batch, filled, ms, again, n, until, order, max, custom, back, hidden, wrong]
