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
  SegmentGenerator,
  HttpStore,
  MultiStore,
  SerialGenerator,
  SegmentsExhaustedError,
  RegistryLostDataError,
  LeafNodeAliveError,
  type LeasedSnowflakeOptions,
  type LeaseStats,
  type Registry,
  type SegmentStore,
  type SegmentStats,
} from 'segflake'
import { PgStore } from 'segflake/stores/pg'
import { RedisStore } from 'segflake/stores/redis'
import { MySQLStore } from 'segflake/stores/mysql'
import { PgRegistry } from 'segflake/registries/pg'
import { RedisRegistry } from 'segflake/registries/redis'
import { MysqlRegistry } from 'segflake/registries/mysql'

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

class SqlStore implements SegmentStore {
  private maxId = 1n
  async allocate(tag: string, step: number) {
    this.maxId += BigInt(step)
    return { maxId: this.maxId, step }
  }
}
async function segments(): Promise<bigint> {
  const seg = new SegmentGenerator({ store: new SqlStore(), step: 1000, waitTimeoutMs: 500 })
  // A store served by segflake serve, here with a fetch of its own.
  const http = new HttpStore('http://ids.internal:8080', {
    token: 's3cret',
    fetch: async (_url, init) => ({ ok: init.method === 'POST', status: 200, text: async () => '{"maxId":"2","step":1}' }),
  })
  const fromService = new SegmentGenerator({ store: http })
  // Over mutual TLS: PEM text or bytes, as tls.connect takes them.
  const pem = '-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n'
  const mtls = new HttpStore('https://ids.internal:8443', {
    ca: [pem, new Uint8Array(0)],
    cert: pem,
    key: new Uint8Array(0),
    timeoutMs: 2000,
  })
  void mtls.close
  // Tinyid's multi-database mode: one store per database, in the order of their remainder.
  const multi = new MultiStore([new SqlStore(), new SqlStore()])
  const fromTwo = new SegmentGenerator({ store: multi, step: 1000 })
  const listed: number = multi.stores.length
  void [fromService, fromTwo, listed]
  const order = seg.tag('order')
  const first: bigint = await order.nextId()
  const many: BigUint64Array = await seg.nextIds('order', 100)
  let fast: bigint
  try {
    fast = order.nextIdSync()
  } catch (e) {
    if (!(e instanceof SegmentsExhaustedError)) throw e
    fast = await order.nextId()
  }
  const stats: SegmentStats = seg.stats('order')
  const runway: number | null | undefined = stats.runwaySeconds
  void [many, runway]
  await seg.close()
  const serials = new SerialGenerator({ sequenceDigits: 4, counter: async (key: string) => key.length })
  const s1: bigint = serials.next()
  const s2: bigint = await serials.nextFromCounter()
  return first + fast + s1 + s2
}
void segments
void [PgStore, RedisStore, MySQLStore]

// A database's residue class, reported by the stores when it states one (not run).
async function residues(pg: PgStore, redis: RedisStore): Promise<number | undefined> {
  const row = await pg.allocate('order', 1000)
  const counter = await redis.allocate('order', 1000)
  const delta: number | undefined = row?.delta
  const remainder: number | undefined = counter?.remainder
  return delta === undefined || remainder === undefined ? undefined : delta + remainder
}
void residues

// Leased generators over the subpath registries (not run: no servers here).
async function leased(pool: object): Promise<bigint> {
  const registry = new PgRegistry(pool, { createSchema: false })
  await registry.ensureSchema()
  const gen = await Snowflake.fromRegistry(registry, { layout: 'twitter', leaseTtlMs: 30000 })
  const id: bigint = gen.nextId()
  const workerId: number = gen.workerId
  void workerId
  await gen.close()
  await registry.close()
  return id
}
void [leased, RedisRegistry, MysqlRegistry]

// A registry of one's own whose renew can say the record is gone (-1 or false), the lease
// options of a fleet on one clock, and the lease errors by class and code.
const memory: Registry = {
  claim: ({ workerId }) => ({ workerId, markMs: 0, identity: '10.0.0.7:8080', version: 3, ageMs: 9000 }),
  renew: ({ markMs }) => (markMs > 0 ? markMs : -1),
  release: () => true,
  peers: () => [],
}
async function fleet(): Promise<string> {
  const leaseOptions: LeasedSnowflakeOptions = { layout: 'twitter', markAheadMs: 500, clockSkewAllowanceMs: 0 }
  const gen = await Snowflake.fromRegistry(memory, leaseOptions)
  const stats: LeaseStats = gen.leaseStats()
  try {
    gen.nextId()
  } catch (e) {
    if (e instanceof RegistryLostDataError) {
      const code: 'REGISTRY_LOST_DATA' = e.code
      void code
    } else if (e instanceof LeafNodeAliveError) {
      const code: 'LEAF_NODE_ALIVE' = e.code
      void code
    }
  }
  const codes: ErrorCode[] = ['REGISTRY_LOST_DATA', 'LEAF_NODE_ALIVE']
  void codes
  return stats.owner
}
void fleet

// @ts-expect-error workerId is required
new Snowflake({ layout: 'twitter' })
// @ts-expect-error unknown preset
new Layout('snowflake')
// @ts-expect-error ids are bigint, not string
const wrong: string = gen.nextId()

void [text, batch, filled, ms, again, n, until, order, max, custom, back, hidden, wrong]
