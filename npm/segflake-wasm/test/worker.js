// A module worker using the package: `?entry=index` imports the main browser entry (which
// fetches its .wasm), `?entry=core` loads `core.js` and starts it from a WebAssembly.Module
// compiled by the worker itself, as runtimes that load .wasm their own way do.
const entry = new URL(self.location.href).searchParams.get('entry');

async function load() {
  if (entry === 'core') {
    const core = await import('/pkg/core.js');
    const module = await WebAssembly.compileStreaming(fetch('/pkg/pkg/segflake_wasm_bg.wasm'));
    const before = core.isInitialized();
    core.initSync(module);
    return { lib: core, before };
  }
  return { lib: await import('/pkg/index.js'), before: null };
}

async function run() {
  const { lib, before } = await load();
  const g = new lib.Snowflake({ workerId: 9 });
  const ids = g.nextIds(10_000);
  let increasing = true;
  for (let i = 1; i < ids.length; i++) if (!(ids[i] > ids[i - 1])) increasing = false;
  const single = g.nextId();
  let error = null;
  try {
    new lib.Snowflake({ workerId: -1 });
  } catch (e) {
    error = { isClass: e instanceof lib.InvalidArgumentError && e instanceof lib.SegflakeError, code: e.code, message: e.message };
  }
  let maxId = 1n;
  const segments = new lib.SegmentGenerator({
    store: async (tag, step) => {
      await new Promise((r) => setTimeout(r, 1));
      maxId += BigInt(step);
      return { maxId, step };
    },
    step: 100,
    dynamicStep: false,
  });
  const seg = await segments.nextIds('order', 250);
  await segments.close();
  return {
    before,
    count: ids.length,
    increasing,
    afterBatch: single > ids[ids.length - 1],
    worker: g.decode(single).workerId,
    error,
    segments: [String(seg[0]), String(seg[seg.length - 1])],
  };
}

run().then(
  (r) => self.postMessage({ ok: true, result: r }),
  (e) => self.postMessage({ ok: false, error: `${e && e.name}: ${e && e.message}\n${e && e.stack}` }),
);
