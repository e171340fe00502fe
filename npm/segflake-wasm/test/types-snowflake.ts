// segflake-wasm/snowflake as a TypeScript user writes it: type-checked (tsc --noEmit) by
// package.test.mjs with types-usage.ts.
import {
  Snowflake,
  Layout,
  Obfuscator,
  encodeBase62,
  parseBase32,
  SegflakeError,
  WorkerIdOutOfRangeError,
  MAX_BATCH,
  type DecodedId,
  type SnowflakeOptions,
} from 'segflake-wasm/snowflake';
import { init, isInitialized } from 'segflake-wasm/snowflake/core';

const options: SnowflakeOptions = { workerId: 1, layout: 'sonyflake' };
const gen = new Snowflake(options);
const id: bigint = gen.nextId();
const ids: BigUint64Array = gen.nextIds(MAX_BATCH > 10 ? 10 : 1);
const fields: DecodedId = gen.decode(id);
const text: string = encodeBase62(id);
const back: bigint = parseBase32(text.length > 0 ? '0000000000000' : '');
const hidden: bigint = new Obfuscator('00'.repeat(16)).obfuscate(id);
const layout: Layout = gen.layout;
const ready: boolean = isInitialized();
const started: Promise<void> = init();
let refusal = '';
try {
  new Snowflake({ workerId: 1 << 20 });
} catch (e) {
  if (e instanceof WorkerIdOutOfRangeError) refusal = e.code;
  else if (e instanceof SegflakeError) refusal = e.message;
}
export const used = [ids.length, fields.workerId, back, hidden, layout.timeBits, ready, started, refusal];
