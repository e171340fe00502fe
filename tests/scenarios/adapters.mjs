// The Node store adapters on real servers (same checks as adapters.py): ensureTag creates a
// row once and then leaves it alone; a fresh tag's first segment is Leaf's 1..=step; a
// tag without a row rejects with a StoreError naming ensureTag; bad arguments are refused
// with InvalidArgumentError; a SegmentGenerator over the store works end to end.
// Run from a directory where segflake, pg, mysql2 and ioredis are installed.
import { createRequire } from 'node:module'
import path from 'node:path'
import crypto from 'node:crypto'
import fs from 'node:fs'
import { pathToFileURL } from 'node:url'
import assert from 'node:assert/strict'

const require = createRequire(path.join(process.cwd(), 'noop.js'))
const { SegmentGenerator, StoreError, InvalidArgumentError } = require('segflake')
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
const stores = [
  new PgStore({ connectionString: e.SEGFLAKE_PG_DSN }),
  new MySQLStore({
    host: e.SEGFLAKE_MYSQL_HOST,
    port: Number(e.SEGFLAKE_MYSQL_PORT),
    user: e.SEGFLAKE_MYSQL_USER,
    password: e.SEGFLAKE_MYSQL_PASSWORD,
    database: e.SEGFLAKE_MYSQL_DB,
  }),
  new RedisStore(e.SEGFLAKE_REDIS_URL),
]
const done = []
for (const store of stores) {
  const name = store.constructor.name
  const tag = 'adapters_' + crypto.randomBytes(6).toString('hex')
  await assert.rejects(store.allocate(tag, 100), (err) => err instanceof StoreError && /ensureTag/.test(err.message), name)
  assert.equal(await store.ensureTag(tag), true, `${name}: ensureTag did not create the row`)
  assert.deepEqual(await store.allocate(tag, 100), { maxId: 101n, step: 100 }, `${name}: first segment`)
  assert.equal(await store.ensureTag(tag, { maxId: 5 }), false, `${name}: ensureTag on an existing row`)
  assert.deepEqual(await store.allocate(tag, 7), { maxId: 108n, step: 7 }, `${name}: ensureTag changed the row`)
  for (const bad of [0, -1, 2 ** 31, 1.5, '3']) {
    await assert.rejects(store.allocate(tag, bad), InvalidArgumentError, `${name}: step ${bad}`)
  }
  for (const badTag of ['', 'x'.repeat(129), 7]) {
    await assert.rejects(store.allocate(badTag, 1), InvalidArgumentError, `${name}: tag ${badTag}`)
  }
  const gen = new SegmentGenerator({ store, step: 50 })
  const got = Array.from(await gen.nextIds(tag, 120))
  assert.deepEqual(got, Array.from({ length: 120 }, (_, i) => BigInt(108 + i)), `${name}: generator`)
  await gen.close()
  await store.close()
  done.push(name)
}
console.log(`node adapters behave: ${done.join(', ')}`)
