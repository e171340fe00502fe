// The measurement, shared by the Node and Chromium runs: each generator fills a
// BigUint64Array of N IDs from a fresh instance, rounds interleaved across generators (so a
// load change on the shared machine hits all of them alike), median rate reported. Then
// the IDs of the last round are checked: duplicates (after a sort) and order errors (an ID
// not above the one before).

/**
 * `make()` returns the timed fill function; it may return an untimed follow-up that
 * writes the IDs into `out` (for generators of strings).
 * @typedef {{ name: string, note?: string, make: () => (out: BigUint64Array) => (void | (() => void)) }} Generator
 */

const now = () => performance.now();

function check(ids) {
  let orderErrors = 0;
  for (let i = 1; i < ids.length; i++) if (ids[i] <= ids[i - 1]) orderErrors++;
  const sorted = ids.slice().sort();
  let dups = 0;
  for (let i = 1; i < sorted.length; i++) if (sorted[i] === sorted[i - 1]) dups++;
  return { dups, orderErrors };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * @param {Generator[]} generators
 * @param {{ n?: number, rounds?: number, onProgress?: (msg: string) => void }} [options]
 */
export function runAll(generators, { n = 1_000_000, rounds = 5, onProgress = () => {} } = {}) {
  const rates = generators.map(() => []);
  const last = generators.map(() => null);
  // One untimed warm-up pass each (JIT, module instantiation), then the timed rounds.
  for (const g of generators) g.make()(new BigUint64Array(10_000));
  for (let r = 0; r < rounds; r++) {
    generators.forEach((g, i) => {
      const fill = g.make();
      const out = new BigUint64Array(n);
      const t0 = now();
      const after = fill(out);
      const ms = now() - t0;
      if (typeof after === 'function') after(); // untimed: turn strings into IDs for the checks
      rates[i].push(n / (ms / 1000));
      last[i] = out;
    });
    onProgress(`round ${r + 1}/${rounds}`);
  }
  return generators.map((g, i) => ({
    name: g.name,
    note: g.note ?? '',
    idsPerSecond: median(rates[i]),
    ...check(last[i]),
  }));
}

/**
 * The generators, given the imported libraries: `wasm` is `segflake-wasm`, `wasmSnowflake`
 * `segflake-wasm/snowflake` (`native` may be absent: Chromium).
 */
export function generators({ wasm, wasmSnowflake, nodejsSnowflake, sapphire, native }) {
  // Both builds of the package: the full module and the snowflake build behind
  // `segflake-wasm/snowflake`, which is compiled for size (opt-level "z").
  const builds = [
    ['segflake-wasm', wasm, ''],
    ['segflake-wasm/snowflake', wasmSnowflake, '; the snowflake build'],
  ];
  const list = builds.flatMap(([label, lib, build]) => [
    {
      name: `${label} \`nextId()\``,
      note: `twitter layout, default 2000 ms drift${build}`,
      make: () => {
        const g = new lib.Snowflake({ workerId: 1 });
        return (out) => {
          for (let i = 0; i < out.length; i++) out[i] = g.nextId();
        };
      },
    },
    {
      name: `${label} \`fillIds(array)\``,
      note: `one call for the whole batch${build}`,
      make: () => {
        const g = new lib.Snowflake({ workerId: 1 });
        return (out) => {
          g.fillIds(out);
        };
      },
    },
  ]);
  list.push(
    {
      name: 'segflake-wasm `nextId()`, `maxDriftMs: 0`',
      note: 'strict: waits for the next ms after 4096 IDs',
      make: () => {
        const g = new wasm.Snowflake({ workerId: 1, maxDriftMs: 0 });
        return (out) => {
          for (let i = 0; i < out.length; i++) out[i] = g.nextId();
        };
      },
    },
    {
      name: 'segflake-wasm `nextIdString()`',
      note: 'decimal strings',
      make: () => {
        const g = new wasm.Snowflake({ workerId: 1 });
        return (out) => {
          const s = new Array(out.length);
          for (let i = 0; i < out.length; i++) s[i] = g.nextIdString();
          return () => {
            for (let i = 0; i < out.length; i++) out[i] = BigInt(s[i]);
          };
        };
      },
    },
    {
      name: 'nodejs-snowflake 2.0.1 `getUniqueID()`',
      note: 'WASM peer; waits for the next ms after 1024 IDs',
      make: () => {
        const g = new nodejsSnowflake.Snowflake({ custom_epoch: 1288834974657, instance_id: 1 });
        return (out) => {
          for (let i = 0; i < out.length; i++) out[i] = g.getUniqueID();
        };
      },
    },
    {
      name: '@sapphire/snowflake 3.5.5 `generate()`',
      note: 'pure JS; 12-bit increment wraps within a ms',
      make: () => {
        const g = new sapphire.Snowflake(1288834974657n);
        return (out) => {
          for (let i = 0; i < out.length; i++) out[i] = g.generate();
        };
      },
    },
  );
  if (native) {
    list.push({
      name: 'segflake (native addon) `nextId()`',
      note: 'for reference: the napi package',
      make: () => {
        const g = new native.Snowflake({ workerId: 1 });
        return (out) => {
          for (let i = 0; i < out.length; i++) out[i] = g.nextId();
        };
      },
    });
  }
  return list;
}
