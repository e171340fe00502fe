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

/** A registry-vector call's arguments (call order) as the registry method's argument; an
 * integer beyond 2^53 (a power of two in the vectors, so JSON.parse kept it exact) as a
 * bigint. */
export function registryArgs(name, vectorArgs) {
  const args = vectorArgs.map((a) => (Number.isInteger(a) && !Number.isSafeInteger(a) ? BigInt(a) : a))
  if (name === 'claim') return { workerId: args[0], owner: args[1], ttlMs: args[2] }
  if (name === 'renew') {
    return { workerId: args[0], owner: args[1], ttlMs: args[2], markMs: args[3], reportedMs: args[4] }
  }
  if (name === 'release') return { workerId: args[0], owner: args[1], markMs: args[2] }
  return undefined
}

/**
 * A fake client's script of one registry-vector call: `next(request)` checks `request`
 * against the next scripted `op` (with `same(request, op)`, default deep equality) and
 * returns its reply.
 */
export class Script {
  constructor() {
    this.steps = []
    this.label = ''
  }

  /** Loads `call`'s exchange. */
  load(call, label) {
    this.steps = call.exchange.map((x, i) => ({ ...x, i }))
    this.label = label
  }

  next(request, same = (a, b) => assert.deepEqual(a, b)) {
    assert.ok(this.steps.length > 0, `${this.label}: unexpected request ${JSON.stringify(request)}`)
    const { op, reply, i } = this.steps.shift()
    try {
      same(request, op)
    } catch (e) {
      e.message = `${this.label}: request ${i}: ${e.message}`
      throw e
    }
    return reply
  }
}

/**
 * Runs every case of a registry vector file (`cases` of tests/vectors/{etcd,redis,sql}.json)
 * on the adapter `make(case)` returns, over a fake client that answers from `script`: each
 * call's answer (or error) is the vector's, and no scripted request is left unasked.
 */
export async function replayRegistryVectors(cases, script, make) {
  for (const c of cases) {
    const registry = make(c)
    for (const [n, call] of c.calls.entries()) {
      const label = `${c.name}, call ${n} (${call.call})`
      script.load(call, label)
      const run = registry[call.call](registryArgs(call.call, call.args))
      if (call.error_contains !== undefined) {
        await assert.rejects(run, (e) => e instanceof Error && e.message.includes(call.error_contains), label)
      } else {
        assert.deepEqual(await run, call.answer, label)
      }
      assert.equal(script.steps.length, 0, `${label}: requests left unasked`)
    }
  }
}
