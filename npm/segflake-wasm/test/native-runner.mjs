// The native `segflake` package (Node-API addon, installed beside segflake-wasm from dist/ for
// the parity test) in whichever runtime runs this file (Deno, Bun): it loads its addon, issues
// IDs, refuses bad input with its error classes, and agrees with segflake-wasm on codecs,
// obfuscation and layouts. Prints one JSON line: { runtime, version, backend, checks }.
import native from 'segflake';
import * as wasm from 'segflake-wasm';

const runtime = globalThis.Bun ? 'bun' : globalThis.Deno ? 'deno' : 'node';
const version = globalThis.Bun ? Bun.version : globalThis.Deno ? Deno.version.deno : process.versions.node;
const checks = [];
function check(name, fn) {
  try {
    fn();
    checks.push({ name, ok: true });
  } catch (e) {
    checks.push({ name, ok: false, error: `${e && e.name}: ${e && e.message}` });
  }
}
function assert(cond, message) {
  if (!cond) throw new Error(message);
}

check('IDs are strictly increasing and decode to the worker ID', () => {
  const g = new native.Snowflake({ workerId: 21 });
  const ids = g.nextIds(20_000);
  for (let i = 1; i < ids.length; i++) assert(ids[i] > ids[i - 1], `ID ${i} not increasing`);
  const id = g.nextId();
  assert(id > ids[ids.length - 1], 'nextId after the batch');
  assert(g.decode(id).workerId === 21, 'worker ID');
});

check('bad input is refused with the error class of its code', () => {
  let e;
  try {
    new native.Snowflake({ workerId: 4096 });
  } catch (err) {
    e = err;
  }
  assert(e instanceof native.WorkerIdOutOfRangeError && e instanceof native.SegflakeError, String(e));
  assert(e.code === 'WORKER_ID_OUT_OF_RANGE', e.code);
});

check('codecs, obfuscation and layouts agree with segflake-wasm', () => {
  const key = '000102030405060708090a0b0c0d0e0f';
  const [on, ow] = [new native.Obfuscator(key), new wasm.Obfuscator(key)];
  let x = 0x9e3779b97f4a7c15n;
  for (let i = 0; i < 2000; i++) {
    x = BigInt.asUintN(64, x * 6364136223846793005n + 1442695040888963407n);
    const id = x >> 1n;
    for (const codec of ['decimal', 'base62', 'base32']) {
      const text = native.encode(id, codec);
      assert(text === wasm.encode(id, codec), `${codec} of ${id}`);
      assert(native.parse(text, codec) === id, `parse ${codec} of ${id}`);
    }
    assert(on.obfuscate(id) === ow.obfuscate(id), `obfuscate ${id}`);
    for (const preset of ['twitter', 'sonyflake', 'js-safe']) {
      const [ln, lw] = [new native.Layout(preset), new wasm.Layout(preset)];
      const masked = id & ((1n << BigInt(ln.totalBits)) - 1n);
      assert(JSON.stringify(ln.decode(masked)) === JSON.stringify(lw.decode(masked)), `${preset} decode ${masked}`);
    }
  }
});

console.log(JSON.stringify({ runtime, version, backend: native.backend, checks }));
