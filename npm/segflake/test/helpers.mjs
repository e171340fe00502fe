// Shared helpers of the test suites. The suites import 'segflake' by name, so when they
// run from the temporary project made by scripts/test-node.sh they test the package
// installed from the packed tarballs.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import * as sf from 'segflake'

const here = path.dirname(fileURLToPath(import.meta.url))

/** The shared vectors directory: $SEGFLAKE_VECTORS_DIR, or tests/vectors of the repository. */
export const vectorsDir = process.env.SEGFLAKE_VECTORS_DIR || path.resolve(here, '..', '..', '..', 'tests', 'vectors')

export function loadVectors(name) {
  return JSON.parse(fs.readFileSync(path.join(vectorsDir, name), 'utf8'))
}

const camel = (s) => s.replace(/_([a-z])/g, (_, c) => c.toUpperCase())

/** A vector layout ({preset?, time_bits?, ...}) as the JS layout option. */
export function jsLayout(layout) {
  const out = {}
  for (const [k, v] of Object.entries(layout)) out[camel(k)] = v
  return out
}

const classByCode = Object.fromEntries(sf.errorKinds().map((k) => [k.code, k.className]))

/**
 * Asserts that `fn` throws the segflake error class of `code` (a subclass of
 * SegflakeError with that `code`), whose message contains `contains` when given.
 */
export function assertThrowsCode(fn, code, contains, label = '') {
  assert.ok(classByCode[code], `unknown error code ${code}`)
  let thrown
  try {
    fn()
  } catch (e) {
    thrown = e
  }
  assert.ok(thrown !== undefined, `${label}: expected ${code}, nothing was thrown`)
  checkError(thrown, code, contains, label)
  return thrown
}

/** Like assertThrowsCode for a function returning a promise. */
export async function assertRejectsCode(fn, code, contains, label = '') {
  let thrown
  try {
    await fn()
  } catch (e) {
    thrown = e
  }
  assert.ok(thrown !== undefined, `${label}: expected ${code}, the promise resolved`)
  checkError(thrown, code, contains, label)
  return thrown
}

export function checkError(e, code, contains, label = '') {
  const cls = sf[classByCode[code]]
  assert.ok(e instanceof sf.SegflakeError, `${label}: ${e} is not a SegflakeError`)
  assert.ok(e instanceof cls, `${label}: ${e.name} is not a ${classByCode[code]}`)
  assert.equal(e.code, code, `${label}: code`)
  assert.equal(e.name, classByCode[code], `${label}: name`)
  if (contains && sf.backend === 'native') {
    assert.ok(e.message.includes(contains), `${label}: "${e.message}" lacks "${contains}"`)
  } else if (contains) {
    // The WebAssembly binding words some argument errors its own way (segflake-wasm's suite
    // checks its words); on that backend the class, code and name must match.
    assert.ok(e.message.length > 0, `${label}: empty message`)
  }
}
