// Start-up cost: loading segflake (and segflake-wasm) in a fresh Node process and taking the
// first ID, beside the npm peers bench.mjs uses.
//
// For each library, N fresh `node` processes each time inside themselves, with
// process.hrtime.bigint(), the require/import of the package and then the creation of a
// generator plus its first ID (the library's simplest documented call), and print both as
// JSON; the parent times the whole process, spawn to exit. Floor rows run `node -e 0` and its
// ES-module twin. Every round runs every row once, in an order rotated each round, so the
// load from other processes falls on all of them alike; one unrecorded round first warms the
// page cache. The table shows medians. The packages are the ones installed in
// bench/node/node_modules (run.sh installs segflake and segflake-wasm from dist/).
//
//   node startup.mjs [--runs 21]
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))

// `load` is the statement as shown and run (`m` is the module or its namespace), `first` an
// expression over `m` that creates a generator and returns its first ID, `call` the same call
// as the library's README writes it. `esm`: the child is an ES module and loads with
// `await import()`, else CommonJS with `require()`. The peers load the way their READMEs show
// (require for the CommonJS packages, import for the ES-only ones).
const ROWS = [
  { name: 'node -e 0 (floor)', argv: ['-e', '0'] },
  { name: "node --input-type=module -e '' (ES module floor)", argv: ['--input-type=module', '-e', ''] },
  {
    name: 'segflake (native addon)',
    pkg: 'segflake',
    load: "require('segflake')",
    first: 'new m.Snowflake({ workerId: 1 }).nextId()',
    call: 'new Snowflake({ workerId: 1 }).nextId()',
    check: "m.backend === 'native'",
  },
  {
    name: 'segflake (native addon)',
    pkg: 'segflake',
    esm: true,
    load: "await import('segflake')",
    first: 'new m.Snowflake({ workerId: 1 }).nextId()',
    call: 'new Snowflake({ workerId: 1 }).nextId()',
    check: "m.backend === 'native'",
  },
  {
    name: 'segflake-wasm (full)',
    pkg: 'segflake-wasm',
    esm: true,
    load: "await import('segflake-wasm')",
    first: 'new m.Snowflake({ workerId: 1 }).nextId()',
    call: 'new Snowflake({ workerId: 1 }).nextId()',
  },
  {
    name: 'segflake-wasm/snowflake',
    pkg: 'segflake-wasm',
    esm: true,
    load: "await import('segflake-wasm/snowflake')",
    first: 'new m.Snowflake({ workerId: 1 }).nextId()',
    call: 'new Snowflake({ workerId: 1 }).nextId()',
  },
  {
    name: '@sapphire/snowflake',
    pkg: '@sapphire/snowflake',
    load: "require('@sapphire/snowflake')",
    first: "new m.Snowflake(new Date('2000-01-01T00:00:00.000Z')).generate()",
    call: 'new Snowflake(epoch).generate()',
  },
  {
    name: 'flake-idgen',
    pkg: 'flake-idgen',
    load: "require('flake-idgen')",
    first: 'new m().next()',
    call: 'new FlakeId().next()',
  },
  {
    name: 'nodejs-snowflake',
    pkg: 'nodejs-snowflake',
    load: "require('nodejs-snowflake')",
    first: 'new m.Snowflake().getUniqueID()',
    call: 'new Snowflake().getUniqueID()',
  },
  {
    name: 'simple-flakeid',
    pkg: 'simple-flakeid',
    load: "require('simple-flakeid')",
    // Its README's `genid` is not exported by 0.0.5: the class is SnowflakeIdv1 (as in bench.mjs).
    first: 'new m.SnowflakeIdv1({ workerId: 1 }).NextId()',
    call: 'new SnowflakeIdv1({ workerId: 1 }).NextId()',
  },
  { name: 'uuid', pkg: 'uuid', esm: true, load: "await import('uuid')", first: 'm.v7()', call: 'v7()' },
  { name: 'ulid', pkg: 'ulid', esm: true, load: "await import('ulid')", first: 'm.ulid()', call: 'ulid()' },
  { name: 'ulidx', pkg: 'ulidx', esm: true, load: "await import('ulidx')", first: 'm.ulid()', call: 'ulid()' },
  { name: 'hyperid', pkg: 'hyperid', load: "require('hyperid')", first: 'm()()', call: 'hyperid()()' },
]

/**
 * The child's source: the two timings first, then one JSON line, written with fs.writeSync:
 * console.log would first set up process.stdout (a stream over the pipe), about 3-4 ms of
 * process wall here that the floor, which prints nothing, does not pay.
 */
function childSource(row) {
  return [
    'const t0 = process.hrtime.bigint()',
    `const m = ${row.load}`,
    'const t1 = process.hrtime.bigint()',
    `const first = ${row.first}`,
    'const t2 = process.hrtime.bigint()',
    "if (first === undefined || first === null) throw new Error('no ID')",
    row.check ? `if (!(${row.check})) throw new Error(${JSON.stringify(`not ${row.check}`)})` : '',
    row.esm ? "const { writeSync } = await import('node:fs')" : "const { writeSync } = require('node:fs')",
    'writeSync(1, JSON.stringify({ loadNs: Number(t1 - t0), firstNs: Number(t2 - t1) }))',
  ].join('\n')
}

function argv(row) {
  if (!row.pkg) return row.argv
  return [...(row.esm ? ['--input-type=module'] : []), '-e', childSource(row)]
}

/** Spawns one process; returns its own timings (none for a floor) and the wall, in ns. */
function runOnce(row) {
  const start = process.hrtime.bigint()
  const proc = spawnSync(process.execPath, argv(row), { cwd: here, encoding: 'utf8' })
  const wallNs = Number(process.hrtime.bigint() - start)
  if (proc.status !== 0)
    throw new Error(`${row.name} (${row.load ?? 'floor'}): exit status ${proc.status}\n${proc.stderr}`)
  return { ...(row.pkg ? JSON.parse(proc.stdout) : {}), wallNs }
}

function version(row) {
  if (!row.pkg) return `Node ${process.version}`
  const file = path.join(here, 'node_modules', row.pkg, 'package.json')
  if (!fs.existsSync(file)) throw new Error(`${row.pkg} is not installed in ${path.join(here, 'node_modules')}`)
  return JSON.parse(fs.readFileSync(file, 'utf8')).version
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const ms = (ns, digits = 2) => (ns / 1e6).toFixed(digits)
const loadavg = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')

function main() {
  const args = process.argv.slice(2)
  const runs = args.includes('--runs') ? Number(args[args.indexOf('--runs') + 1]) : 21
  const rows = ROWS.map((row) => ({ ...row, version: version(row), loads: [], firsts: [], walls: [] }))
  const loadBefore = loadavg()
  for (const row of rows) runOnce(row) // warm-up round, not recorded
  for (let k = 0; k < runs; k++) {
    process.stderr.write(`  round ${k + 1}/${runs} ...\n`)
    const shift = k % rows.length
    for (const row of [...rows.slice(shift), ...rows.slice(0, shift)]) {
      const r = runOnce(row)
      row.walls.push(r.wallNs)
      if (row.pkg) {
        row.loads.push(r.loadNs)
        row.firsts.push(r.firstNs)
      }
    }
  }
  const loadAfter = loadavg()

  const floor = median(rows[0].walls)
  const now = new Date().toISOString().replace('T', ' ').slice(0, 16)
  console.log('')
  console.log(
    `Start-up, ${runs} fresh processes per row (medians); Node ${process.version}, ${process.arch}, ${os.cpus().length} cores, ${os.type()}, ${now} UTC, load average ${loadBefore} before, ${loadAfter} after`,
  )
  console.log('')
  console.log(
    '| library | version | loaded with | first-ID call | require/import ms | generator + first ID ms | process wall ms | wall minus floor ms |',
  )
  console.log('|---|---|---|---|---:|---:|---:|---:|')
  for (const row of rows) {
    const wall = median(row.walls)
    const cells = row.pkg
      ? [
          `\`${row.load}\``,
          `\`${row.call}\``,
          ms(median(row.loads)),
          ms(median(row.firsts), 3),
          ms(wall),
          ms(wall - floor),
        ]
      : ['-', '-', '-', '-', ms(wall), row === rows[0] ? '-' : ms(wall - floor)]
    console.log(`| ${row.name} | ${row.version} | ${cells.join(' | ')} |`)
  }
  console.log('')
  console.log(
    'require/import and first ID: timed inside each process with process.hrtime.bigint(). Process wall: spawn to exit, timed by the parent. Wall minus floor: the median wall minus the median wall of `node -e 0`.',
  )
}

main()
