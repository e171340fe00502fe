// The option vectors shared by every binding (tests/vectors/options.json), run through this
// package's own host values and entry point, and the type declarations checked against the
// core's option and record tables.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import sfDefault from 'segflake'
import { loadVectors, checkError } from './helpers.mjs'

const native = sfDefault.__native
// The test hooks `__options` and `__tables` are the addon's: segflake-wasm publishes neither
// (its suite runs options.json and its declarations against the tests' build of its module,
// and its parity test holds its records to the addon's), so under the wasm backend the
// tests that need them are not defined.
const hooked = typeof native.__options === 'function'
const hookedTest = hooked ? test : () => {}

test('the test hooks are in the addon only', () => {
  assert.equal(hooked, sfDefault.backend === 'native', `backend ${sfDefault.backend}`)
  assert.equal(typeof native.__tables === 'function', hooked)
})
const camel = (s) => s.replace(/_([a-z])/g, (_, c) => c.toUpperCase())

/** A vector input as JS: camelCase keys (nested too), `{ int: "digits" }` as a bigint. */
function jsInput(v) {
  if (v === null || typeof v !== 'object') return v
  const keys = Object.keys(v)
  if (keys.length === 1 && keys[0] === 'int') return BigInt(v.int)
  return Object.fromEntries(keys.map((k) => [camel(k), jsInput(v[k])]))
}

/** Settings as the vectors write them: integers beyond 2^53 as decimal strings. */
function plain(v) {
  if (typeof v === 'bigint') return String(v)
  if (v === null || typeof v !== 'object') return v
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]))
}

hookedTest('options.json: every case, camel spelling, through __options', () => {
  const v = loadVectors('options.json')
  assert.ok(v.cases.length > 0)
  let ran = 0
  for (const c of v.cases) {
    const want = c.camel
    let got
    let thrown
    try {
      got = native.__options(c.set, jsInput(c.input), v.now_ms)
    } catch (e) {
      thrown = e
    }
    if (want.error) {
      assert.ok(thrown !== undefined, `${c.name}: expected ${want.error.code}, got ${JSON.stringify(plain(got))}`)
      checkError(thrown, want.error.code, undefined, c.name)
      assert.equal(thrown.message, want.error.message, c.name)
    } else {
      assert.equal(thrown, undefined, `${c.name}: ${thrown}`)
      assert.deepEqual(plain(got), want.settings, c.name)
    }
    ran++
  }
  assert.equal(ran, v.cases.length)
})

/** `{ name: [property names] }` of the interfaces declared in a .d.ts file. */
function interfaces(file) {
  const text = fs.readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '')
  const out = {}
  for (const m of text.matchAll(/^export (?:declare )?interface (\w+)(?:<[^>]*>)? \{\n([\s\S]*?)^\}/gm)) {
    const names = [...m[2].matchAll(/^ {2}(?:readonly )?([A-Za-z_$][\w$]*)\??:/gm)].map((p) => p[1])
    out[m[1]] = [...(out[m[1]] ?? []), ...names]
  }
  return out
}

hookedTest('the declared option and record interfaces list exactly the core tables', () => {
  const dir = path.dirname(createRequire(import.meta.url).resolve('segflake/package.json'))
  // tables.d.ts: generated from the core's tables (scripts/gen_declarations.py).
  const declared = interfaces(path.join(dir, 'tables.d.ts'))
  const tables = JSON.parse(native.__tables())
  // Option sets: the interface (SegmentGeneratorOptions and SerialOptions add the keys the
  // JS drivers read themselves, `store` and `counter`, to SegmentSettings and SerialSettings).
  const options = {
    layout: ['LayoutOptions', []],
    snowflake: ['SnowflakeOptions', []],
    segment: ['SegmentSettings', []],
    serial: ['SerialSettings', []],
    lease: ['LeaseOptions', []],
  }
  assert.deepEqual(Object.keys(tables.options).sort(), Object.keys(options).sort())
  for (const [set, rows] of Object.entries(tables.options)) {
    const [name, extra] = options[set]
    assert.ok(declared[name], `interface ${name} is not declared`)
    const core = rows.filter((r) => !r.threads_only).map((r) => r.camel)
    assert.deepEqual([...declared[name]].sort(), [...core, ...extra].sort(), `${name} vs the core's ${set} options`)
  }
  assert.deepEqual(Object.keys(tables.records).sort(), [
    'DecodedId',
    'Layout',
    'LeaseStats',
    'SegmentStats',
    'SerialParts',
  ])
  for (const [record, rows] of Object.entries(tables.records)) {
    const name = record === 'Layout' ? 'LayoutProperties' : record
    assert.ok(declared[name], `interface ${name} is not declared`)
    assert.deepEqual([...declared[name]].sort(), rows.map((r) => r.camel).sort(), `${name} vs the core's record`)
    // Optional fields are optional (records) or nullable (Layout getters) in the declarations.
  }
})

hookedTest('records read as declared: ids as bigints, counts as numbers, absent optionals undefined', () => {
  const tables = JSON.parse(native.__tables())
  // twitter-dc has a datacenter field, so its decoded IDs carry every field.
  const decoded = new sfDefault.Layout('twitter-dc').decode(1n << 22n)
  assert.deepEqual(
    Object.keys(decoded),
    tables.records.DecodedId.map((r) => r.camel),
  )
  for (const r of tables.records.DecodedId) assert.equal(typeof decoded[r.camel], 'number', r.camel)
  const layout = new sfDefault.Layout()
  for (const r of tables.records.Layout) {
    const want = { id: 'bigint', count: 'number', float: 'number', bool: 'boolean', text: 'string' }[r.kind]
    const value = layout[r.camel]
    if (r.optional && value === null) continue
    assert.equal(typeof value, want, `layout.${r.camel}`)
  }
  assert.equal(new sfDefault.Layout('js-safe').jsSafeUntilMs, null)
})
