// The Node store adapters on real servers (same checks as adapters.py): a tag without a row
// resolves to null, which a generator throws as UnknownTagError, or is created on first use
// with createMissingTags; ensureTag creates a row once and then leaves it alone; Leaf's
// per-tag step (the SQL stores' first allocation uses the row's step, reported as tagStep,
// the floor of the generator's dynamic step; useRowStep: false turns it off); bad arguments
// are refused with InvalidArgumentError; a SegmentGenerator over the store works end to end.
// The SQL stores' give back lowers max_id once, and run again with its token (a statement
// resent after a lost reply) after another process allocated exactly the range given back
// changes nothing; a PostgreSQL user without CREATE gives back through a marker table made
// beforehand, and fails naming it otherwise.
// Run from a directory where segflake, pg, mysql2 and ioredis are installed.
import { createRequire } from 'node:module'
import path from 'node:path'
import crypto from 'node:crypto'
import fs from 'node:fs'
import { pathToFileURL } from 'node:url'
import assert from 'node:assert/strict'

const require = createRequire(path.join(process.cwd(), 'noop.js'))
const { SegmentGenerator, UnknownTagError, InvalidArgumentError, StoreError } = require('segflake')
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
  if (sql) await giveBackOnce(store, make, name)
  await store.close()
  done.push(name)
}
done.push(await pgUserWithoutCreate())
console.log(`node adapters behave: ${done.join(', ')}`)

/** The first column of the first row of `sql` (`?` placeholders, numbered for pg) through the store's pool. */
async function value(store, sql, params) {
  if (store instanceof PgStore) {
    let n = 0
    const res = await store.pool.query({ text: sql.replace(/\?/g, () => `$${++n}`), values: params, rowMode: 'array' })
    return res.rows[0]?.[0]
  }
  const [rows] = await store.pool.query({ sql, rowsAsArray: true }, params)
  return rows[0]?.[0]
}

async function rowMaxId(store, tag) {
  return BigInt(await value(store, 'SELECT max_id FROM leaf_alloc WHERE biz_tag = ?', [tag]))
}

/**
 * A give back lowers max_id once; its statements run again with its token after another
 * process allocated exactly the range given back change nothing.
 */
async function giveBackOnce(store, make, name) {
  const tag = 'adapters_gb_' + crypto.randomBytes(6).toString('hex')
  assert.equal(await store.ensureTag(tag), true)
  const other = make({ useRowStep: false })
  const top = (await other.allocate(tag, 1000)).maxId
  // The generator's path: a fresh token, max_id lowered once.
  assert.equal(await store.giveBack(tag, top, top - 960n), true, `${name}: give back`)
  assert.equal(await rowMaxId(store, tag), top - 960n, `${name}: not lowered`)
  assert.equal(await store.giveBack(tag, top, top - 960n), false, `${name}: lowered a row that moved`)
  // The same give back twice (one token), another process's allocation in between.
  const token = crypto.randomBytes(16).toString('hex')
  assert.equal((await other.allocate(tag, 960)).maxId, top)
  assert.equal(await store._giveBack(tag, top, top - 500n, token), true, `${name}: give back by token`)
  assert.equal(await rowMaxId(store, tag), top - 500n)
  assert.equal((await other.allocate(tag, 500)).maxId, top, 'another process allocates exactly the range given back')
  assert.equal(await store._giveBack(tag, top, top - 500n, token), false, `${name}: a resend lowered max_id again`)
  assert.equal(await rowMaxId(store, tag), top, `${name}: a resend lowered max_id again: IDs handed out twice`)
  const applied = await value(store, 'SELECT applied FROM leaf_alloc_give_back WHERE token = ?', [token])
  assert.equal(Number(applied), 1, `${name}: the record of the give back`)
  assert.equal((await other.allocate(tag, 10)).maxId, top + 10n)
  await other.close()
}

/**
 * A PostgreSQL user that may update leaf_alloc but not create tables: its give back fails
 * naming the marker table and the privileges (nothing lowered); once the table (made by
 * another user) is granted to it, it gives back.
 */
async function pgUserWithoutCreate() {
  const admin = kinds[0]({ useRowStep: false })
  const role = 'gb_' + crypto.randomBytes(4).toString('hex')
  const tag = 'adapters_gbu_' + crypto.randomBytes(6).toString('hex')
  const sql = (text) => admin.pool.query(text)
  // The marker table, made by a user who may (as an operator would beforehand).
  const { segment_stores: statements } = JSON.parse(require('segflake').__native.__statements())
  await sql(statements.postgres.give_back_table.replaceAll('{table}', 'leaf_alloc'))
  await sql('REVOKE CREATE ON SCHEMA public FROM PUBLIC')
  await sql(`CREATE ROLE ${role} LOGIN`)
  await sql(`GRANT SELECT, UPDATE ON leaf_alloc TO ${role}`)
  assert.equal(await admin.ensureTag(tag), true)
  const top = (await admin.allocate(tag, 1000)).maxId
  const limited = new PgStore(
    { connectionString: e.SEGFLAKE_PG_DSN.replace('://postgres@', `://${role}@`) },
    { useRowStep: false },
  )
  await assert.rejects(
    limited.giveBack(tag, top, top - 960n),
    (err) =>
      err instanceof StoreError &&
      ['leaf_alloc_give_back', 'CREATE privilege', 'SELECT, INSERT, UPDATE'].every((p) => err.message.includes(p)),
  )
  assert.equal(await rowMaxId(admin, tag), top, 'lowered without a record')
  await sql(`GRANT SELECT, INSERT, UPDATE ON leaf_alloc_give_back TO ${role}`)
  assert.equal(await limited.giveBack(tag, top, top - 960n), true)
  assert.equal(await rowMaxId(admin, tag), top - 960n)
  await limited.close()
  await admin.close()
  return 'PgStore without CREATE'
}
