// Bad stores in Node: every contract violation is refused and none of its IDs issued.
// Each case hands out one good range [1, 1001), then keeps answering with a bad one; the
// generator must issue exactly 1..=1000, then reject with SegmentsExhaustedError whose
// cause is the violation; once the store behaves again it resumes above everything.
// Run from a directory where `segflake` is installed.
import { createRequire } from 'node:module'
import path from 'node:path'
import assert from 'node:assert/strict'

const require = createRequire(path.join(process.cwd(), 'noop.js'))
const { SegmentGenerator, SegmentsExhaustedError } = require('segflake')

const CASES = {
  overlap: [{ maxId: 1001, step: 1000 }, { maxId: 1501, step: 1000 }, 'overlaps or precedes'],
  smaller_max_id: [{ maxId: 1001, step: 1000 }, { maxId: 600, step: 100 }, 'overlaps or precedes'],
  same_range_twice: [{ maxId: 1001, step: 1000 }, { maxId: 1001, step: 1000 }, 'overlaps or precedes'],
  zero_step: [{ maxId: 1001, step: 1000 }, { maxId: 3001, step: 0 }, 'step 0'],
  max_id_below_step: [null, { maxId: 500, step: 1000 }, 'below step'],
  max_id_too_large: [null, { maxId: 2n ** 64n, step: 1000 }, 'maxId'],
  not_an_allocation: [{ maxId: 1001, step: 1000 }, { max_id: 3001 }, 'maxId'],
}

const done = []
for (const [name, [first, bad, words]] of Object.entries(CASES)) {
  const answers = first ? [first] : []
  let current = bad
  const store = { allocate: async () => (answers.length ? answers.shift() : current) }
  const gen = new SegmentGenerator({ store, step: 1000, dynamicStep: false, retryBackoffMs: 5, waitTimeoutMs: 300 })
  const ids = []
  let err = null
  while (ids.length <= 5000) {
    try {
      ids.push(await gen.nextId('t'))
    } catch (e) {
      err = e
      break
    }
  }
  const expected = first ? Array.from({ length: 1000 }, (_, i) => BigInt(i + 1)) : []
  assert.deepEqual(ids, expected, `${name}: issued ${ids.length} IDs`)
  assert.ok(err instanceof SegmentsExhaustedError, `${name}: ${err}`)
  const cause = String(err.cause && err.cause.message)
  assert.ok(cause.includes('store contract violation'), `${name}: cause does not name the violation: ${cause}`)
  assert.ok(cause.includes(words), `${name}: ${JSON.stringify(words)} not in ${cause}`)
  assert.ok(gen.stats('t').failures >= 1, `${name}: no failure recorded`)
  current = { maxId: 20001, step: 1000 }
  assert.equal(await gen.nextId('t'), 19001n, `${name}: did not resume above the accepted ranges`)
  await gen.close()
  done.push(`${name} (${err.constructor.name}, cause ${err.cause.constructor.name})`)
}
console.log(`${done.length} bad answers refused, no ID from them issued: ${done.join(', ')}`)
