// The Node store adapters on real servers (same checks as adapters.py): a tag without a row
// resolves to null, which a generator throws as UnknownTagError, or is created on first use
// with createMissingTags; ensureTag creates a row once and then leaves it alone; Leaf's
// per-tag step (the SQL stores' first allocation uses the row's step, reported as tagStep,
// the floor of the generator's dynamic step; useRowStep: false turns it off); bad arguments
// are refused with InvalidArgumentError; a SegmentGenerator over the store works end to end.
// Run from a directory where segflake, pg, mysql2 and ioredis are installed.
import { createRequire } from 'node:module'
import path from 'node:path'
import crypto from 'node:crypto'
import fs from 'node:fs'
import { pathToFileURL } from 'node:url'
import assert from 'node:assert/strict'

const require = createRequire(path.join(process.cwd(), 'noop.js'))
const { SegmentGenerator, UnknownTagError, InvalidArgumentError } = require('segflake')
// The package's subpath exports, as users import them: require() ...
const { PgStore } = require('segflake/stores/pg')
const { MySQLStore } = require('segflake/stores/mysql')
const { RedisStore } = require('segflake/stores/redis')
// ... and import (resolved from the project directory, where segflake is installed).
const esmCheck = path.join(process.cwd(), 'stores-esm-check.mjs')
fs.writeFileSync(
  esmCheck,
  "export { PgStore } from 'segflake/stores/pg'\nexport { MySQLStore } from 'segflake/stores/mysql'\n" +
    "export { RedisStore } from 'segflake/stores/redis'\n",
)
const esm = await import(pathToFileURL(esmCheck).href)
assert.equal(esm.PgStore, PgStore)
assert.equal(esm.MySQLStore, MySQLStore)
assert.equal(esm.RedisStore, RedisStore)

const e = process.env
const kinds = [
  (options) => new PgStore({ connectionString: e.SEGFLAKE_PG_DSN }, options),
  (options) =>
    new MySQLStore(
      {
        host: e.SEGFLAKE_MYSQL_HOST,
        port: Number(e.SEGFLAKE_MYSQL_PORT),
        user: e.SEGFLAKE_MYSQL_USER,
        password: e.SEGFLAKE_MYSQL_PASSWORD,
        database: e.SEGFLAKE_MYSQL_DB,
      },
      options,
    ),
  (options) => new RedisStore(e.SEGFLAKE_REDIS_URL, options),
]
const done = []
for (const make of kinds) {
  const store = make()
  const name = store.constructor.name
  const sql = !(store instanceof RedisStore)
  const tag = 'adapters_' + crypto.randomBytes(6).toString('hex')
  assert.equal(await store.allocate(tag, 100), null, `${name}: a tag without a row`)
  const missing = new SegmentGenerator({ store, waitTimeoutMs: 300 })
  await assert.rejects(missing.nextId(tag), (err) => err instanceof UnknownTagError && err.message.includes(tag), name)
  await missing.close()
  assert.equal(await store.ensureTag(tag), true, `${name}: ensureTag did not create the row`)
  // Leaf: a tag's first allocation uses its row's step (ensureTag's 1000), reported as the
  // tag's; later ones the step asked for. Redis keeps no step per tag.
  const first = await store.allocate(tag, 100)
  assert.deepEqual(first, sql ? { maxId: 1001n, step: 1000, tagStep: 1000 } : { maxId: 101n, step: 100 }, name)
  let top = Number(first.maxId)
  assert.equal(await store.ensureTag(tag, { maxId: 5 }), false, `${name}: ensureTag on an existing row`)
  const again = await store.allocate(tag, 7)
  top += 7
  const want = { maxId: BigInt(top), step: 7, ...(sql ? { tagStep: 1000 } : {}) }
  assert.deepEqual(again, want, `${name}: ensureTag changed the row`)
  for (const bad of [0, -1, 2 ** 31, 1.5, '3']) {
    await assert.rejects(store.allocate(tag, bad), InvalidArgumentError, `${name}: step ${bad}`)
  }
  for (const badTag of ['', 'x'.repeat(129), 7]) {
    await assert.rejects(store.allocate(badTag, 1), InvalidArgumentError, `${name}: tag ${badTag}`)
  }
  const gen = new SegmentGenerator({ store, step: 50 })
  const got = Array.from(await gen.nextIds(tag, 120))
  assert.deepEqual(got, Array.from({ length: 120 }, (_, i) => BigInt(top + i)), `${name}: generator`)
  // The row's step is the floor of the dynamic step, in place of the generator's 50 (Redis
  // keeps no step per tag: its segments start at 50 and double, as Leaf's do).
  const step = gen.stats(tag).step
  assert.ok(sql ? step === 1000 : step >= 50 && step < 1000, `${name}: the generator's step is ${step}`)
  await gen.close()
  if (sql) {
    const plain = make({ useRowStep: false })
    assert.equal((await plain.allocate(tag, 10)).step, 10, `${name}: useRowStep: false`)
    assert.equal((await plain.allocate(tag, 10)).tagStep, undefined, `${name}: useRowStep: false reports no tagStep`)
    await plain.close()
  }
  const created = 'adapters_new_' + crypto.randomBytes(4).toString('hex')
  const maker = make({ createMissingTags: sql ? 500 : true })
  const creator = new SegmentGenerator({ store: maker, step: 20 })
  assert.deepEqual(Array.from(await creator.nextIds(created, 3)), [1n, 2n, 3n], `${name}: a created tag starts at 1`)
  assert.equal(Number(creator.stats(created).currentEnd), sql ? 501 : 21, `${name}: created with its step`)
  await creator.close()
  await maker.close()
  await store.close()
  done.push(name)
}
console.log(`node adapters behave: ${done.join(', ')}`)
