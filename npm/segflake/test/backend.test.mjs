// Which build runs: the native addon where its platform package loads, else the
// WebAssembly build with the same API and error codes, after one warning.
// scripts/test-node.sh runs every suite twice and says which backend to expect through
// SEGFLAKE_EXPECT_BACKEND: from a plain install (native) and from an
// `npm install --omit=optional` one (wasm).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import * as sf from 'segflake'

const expected = process.env.SEGFLAKE_EXPECT_BACKEND
const other = expected === 'native' ? 'wasm' : 'native'

/** Runs `script` in a child Node process of this project with SEGFLAKE_BACKEND=`backend`. */
function child(script, backend) {
  const env = { ...process.env }
  delete env.SEGFLAKE_BACKEND
  if (backend !== undefined) env.SEGFLAKE_BACKEND = backend
  return spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env, timeout: 60_000 })
}

/** The export names, class members and error kinds of the package, as JSON. */
const SURFACE = `
  const sf = require('segflake')
  const members = (cls) => {
    const out = new Set()
    for (let p = cls.prototype; p && p !== Object.prototype; p = Object.getPrototypeOf(p))
      for (const k of Object.getOwnPropertyNames(p)) if (!k.startsWith('__') && k !== 'constructor') out.add(k)
    return [...out].sort()
  }
  const classes = {}
  for (const k of Object.keys(sf).sort()) if (typeof sf[k] === 'function' && /^[A-Z]/.test(k)) classes[k] = members(sf[k])
  console.log(JSON.stringify({ backend: sf.backend, names: Object.keys(sf).sort(), classes, errorKinds: sf.errorKinds(),
    constants: [sf.MAX_BATCH, sf.BASE62_LENGTH, sf.BASE32_LENGTH], coreVersion: sf.coreVersion() }))
`

test('the backend is the one this install should run', () => {
  assert.ok(expected === 'native' || expected === 'wasm', 'SEGFLAKE_EXPECT_BACKEND is native or wasm')
  assert.equal(sf.backend, expected)
  assert.equal(sf.default.backend, expected, 'the ES module and CommonJS entries are one instance')
})

test('a fallback warns once per process, with its code; the native addon does not warn', () => {
  const r = child(`
    require('segflake'); require('segflake')
    import('segflake').then((m) => console.log(m.backend))
  `)
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout.trim(), expected)
  const warnings = r.stderr.split('[SEGFLAKE_WASM_FALLBACK]').length - 1
  assert.equal(warnings, expected === 'wasm' ? 1 : 0, r.stderr)
  if (expected === 'wasm') assert.match(r.stderr, /using the WebAssembly build \(segflake-wasm\)/)
})

test('SEGFLAKE_BACKEND=wasm chooses the WebAssembly build without a warning', () => {
  const r = child(`console.log(require('segflake').backend)`, 'wasm')
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout.trim(), 'wasm')
  assert.doesNotMatch(r.stderr, /SEGFLAKE_WASM_FALLBACK/)
})

test('SEGFLAKE_BACKEND=native fails where no addon loads, and a wrong value is refused', () => {
  const r = child(`console.log(require('segflake').backend)`, 'native')
  if (expected === 'native') {
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout.trim(), 'native')
  } else {
    assert.notEqual(r.status, 0)
    assert.match(r.stderr, /Cannot find native binding/)
  }
  const bad = child(`require('segflake')`, 'wsam')
  assert.notEqual(bad.status, 0)
  assert.match(bad.stderr, /SEGFLAKE_BACKEND must be "native" or "wasm" \(or unset\), got "wsam"/)
})

test('both backends have the same exports, class members, error kinds and constants', () => {
  const here = child(SURFACE)
  assert.equal(here.status, 0, here.stderr)
  const mine = JSON.parse(here.stdout)
  assert.equal(mine.backend, expected)
  if (expected === 'wasm') {
    // No addon here: compare with the surface the native package declares.
    const declared = new Set(Object.keys(sf).filter((k) => k !== 'default'))
    assert.deepEqual(mine.names, [...declared].sort())
    return
  }
  const theirs = child(SURFACE, other)
  assert.equal(theirs.status, 0, theirs.stderr)
  const wasm = JSON.parse(theirs.stdout)
  assert.equal(wasm.backend, 'wasm')
  assert.deepEqual(wasm.names, mine.names)
  assert.deepEqual(Object.keys(wasm.classes), Object.keys(mine.classes))
  for (const [cls, members] of Object.entries(mine.classes)) {
    // The WebAssembly classes may add members (free()); none of the native ones is missing.
    assert.deepEqual(
      members.filter((m) => !wasm.classes[cls].includes(m)),
      [],
      `${cls} members missing in wasm`,
    )
  }
  assert.deepEqual(wasm.errorKinds, mine.errorKinds)
  assert.deepEqual(wasm.constants, mine.constants)
  assert.equal(wasm.coreVersion, mine.coreVersion)
})
