// Type-checked (tsc --noEmit, lib es2022 only: no DOM, no @types/node) against the
// declarations in the packed tarball. Compiling is the test; nothing here runs.
import {
  Layout,
  Snowflake,
  Obfuscator,
  SegflakeError,
  ClockMovedBackwardsError,
  InvalidArgumentError,
  RegistryLostDataError,
  LeafNodeAliveError,
  encode,
  parse,
  encodeBase62,
  parseBase32,
  presets,
  errorKinds,
  MAX_BATCH,
  formatTimeMs,
  parseTimeMs,
  workerIdFromHostname,
  SegmentGenerator,
  SerialGenerator,
  HttpStore,
  MultiStore,
  type HttpStoreOptions,
  type ErrorCode,
  type SegmentStats,
  type DecodedId,
  type LayoutOptions,
  type PresetName,
  type SnowflakeOptions,
  type LeaseOptions,
  type LeaseStats,
  type Registry,
} from 'segflake-wasm';
import { init, initSync, isInitialized } from 'segflake-wasm/core';

const options: SnowflakeOptions = { workerId: 7, layout: 'sonyflake', epochMs: '2025-06-01', sequenceStart: 'random' };
const gen = new Snowflake(options);
const id: bigint = gen.nextId();
const text: string = gen.nextIdString();
const batch: BigUint64Array = gen.nextIds(100);
const filled: BigUint64Array = gen.fillIds(new BigUint64Array(10));
const hwm: number = gen.highWaterMark;
const fields: DecodedId = gen.decode(id);
const again: bigint = gen.compose({ timestampMs: fields.timestampMs, sequence: fields.sequence });

const custom: LayoutOptions = { preset: 'twitter', timeBits: 40, order: 'time-sequence-worker', epochMs: new Date() };
const layout = new Layout(custom);
const safeUntil: number | null = layout.jsSafeUntilMs;
const maxId: bigint = layout.maxId;
const fromPreset: Layout = Layout.preset('js-safe', 1735689600000);
const names: PresetName[] = presets();
const n: number = new Snowflake({ workerId: 1n, layout: fromPreset }).nextIdNumber();

const b62: string = encode(id, 'base62');
const back: bigint = parse(b62, 'base62');
const short: string = encodeBase62(back);
const b32: bigint = parseBase32('0000000000000');
const obf: bigint = new Obfuscator('000102030405060708090a0b0c0d0e0f').obfuscate(id);
const kinds: { code: string; className: string; status: number }[] = errorKinds();
const limit: number = MAX_BATCH;
const iso: string = formatTimeMs(parseTimeMs('2025-01-01'));
const worker: number = workerIdFromHostname('web-7');

try {
  gen.nextId();
} catch (e) {
  if (e instanceof ClockMovedBackwardsError) {
    const code: 'CLOCK_MOVED_BACKWARDS' = e.code;
    const any: ErrorCode = code;
    void any;
    const base: SegflakeError = e;
    void code, base;
  } else if (e instanceof InvalidArgumentError) {
    const message: string = e.message;
    void message;
  }
}

async function segments(): Promise<bigint> {
  let maxId = 1n;
  const gen = new SegmentGenerator({
    store: { allocate: async (_tag: string, step: number) => ({ maxId: (maxId += BigInt(step)), step }) },
    step: 2000,
    storeTimeoutMs: 5000,
  });
  const options: HttpStoreOptions = { token: 's3cret', timeoutMs: 2000 };
  // Mutual TLS (Node, Bun, Deno): PEM text or bytes.
  const mtls: HttpStoreOptions = { ca: '-----BEGIN CERTIFICATE-----\n', cert: new Uint8Array(0), key: 'PEM' };
  void mtls;
  const http = new HttpStore('http://ids.internal:8080', options);
  const fromService = new SegmentGenerator({ store: http, step: 1000 });
  const leased: { maxId: bigint; step: number; tagStep?: number } | null = await http.allocate('order', 1000);
  void [leased, http.baseUrl, fromService];
  const fromTwo = new SegmentGenerator({ store: new MultiStore([http, http]), step: 1000 });
  void fromTwo;
  const tag = gen.tag('order');
  const ids: BigUint64Array = await tag.nextIds(10);
  const stats: SegmentStats = gen.stats('order');
  const runway: number | undefined = stats.runwaySeconds;
  void [ids, runway, tag.nextIdSync()];
  await gen.close();
  const serials = new SerialGenerator({ sequenceDigits: 4, counter: async (key: string) => key.length });
  const next: bigint = serials.next();
  void next;
  return serials.nextFromCounter();
}

// A registry whose renew says the record is gone (-1), on lease options for one clock.
const lost: Registry = {
  claim: () => 0,
  renew: () => -1,
  release: () => false,
  peers: () => [],
};
async function fleet(): Promise<ErrorCode | string> {
  const lease: LeaseOptions = { markAheadMs: 200, clockSkewAllowanceMs: 0, registryTimeoutMs: 1000 };
  const gen = await Snowflake.fromRegistry(lost, { layout: 'twitter', ...lease });
  const stats: LeaseStats = gen.leaseStats();
  try {
    gen.nextId();
  } catch (e) {
    if (e instanceof RegistryLostDataError) {
      const code: 'REGISTRY_LOST_DATA' = e.code;
      return code;
    }
    if (e instanceof LeafNodeAliveError) {
      const code: 'LEAF_NODE_ALIVE' = e.code;
      return code;
    }
  }
  return stats.owner;
}

async function start(bytes: Uint8Array): Promise<void> {
  if (!isInitialized()) await init(bytes);
  initSync(bytes);
}

void [text, batch, filled, hwm, again, safeUntil, maxId, names, n, short, b32, obf, kinds, limit, iso, worker, start, segments, fleet];
