// The segment stores of segflake/stores/{pg,mysql,redis} over fake clients that answer as
// node-postgres, mysql2/promise and ioredis do, on in-memory databases: Tinyid's
// multi-database mode, where a database states its residue class (the `delta` and
// `remainder` columns of the table, or Redis's `segflake:leaf_alloc_residue` key) and the
// store reports it with every allocation, so a MultiStore issues each database's class
// whatever its place in the list. Runs on the backend loaded (native or wasm).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { createRequire } from 'node:module'
import { SegmentGenerator, MultiStore } from 'segflake'
import { assertRejectsCode } from './helpers.mjs'

const require = createRequire(import.meta.url)
const { PgStore } = require('segflake/stores/pg')
const { MySQLStore } = require('segflake/stores/mysql')
const { RedisStore } = require('segflake/stores/redis')

const RESIDUE_KEY = 'segflake:leaf_alloc_residue'

/** The core's give-back statements and script (`segment_stores` of its tables). */
const STATEMENTS = JSON.parse(require('segflake').__native.__statements()).segment_stores
/** The core's statement `call` for `dialect` on `table`, as its driver takes it. */
function coreSql(dialect, call, table) {
  const sql = STATEMENTS[dialect][call].replaceAll('{table}', table)
  let n = 0
  return dialect === 'postgres' ? sql.replace(/\?/g, () => `$${++n}`) : sql
}
const giveBackSql = (dialect, table) => coreSql(dialect, 'give_back', table)

/**
 * One database's Leaf table in memory: rows by tag, the columns the table has (`delta`,
 * `remainder` or both, beside Leaf's), the statements it ran and the ranges it handed out.
 */
class Database {
  constructor({ table = 'leaf_alloc', columns = [], residue = null, rows = ['order'], step = 100 } = {}) {
    this.table = table
    this.columns = new Set(columns)
    this.rows = new Map()
    for (const tag of rows) this.insert(tag, 1n, step, residue)
    this.statements = []
    this.ranges = []
    this.down = false
    this.marks = null // the give backs' marker table by token; null: it does not exist
    this.canCreate = true
  }

  insert(tag, maxId, step, residue = null) {
    this.rows.set(tag, { maxId, step, delta: residue?.[0] ?? null, remainder: residue?.[1] ?? null })
  }

  /** `ALTER TABLE ... ADD COLUMN delta ..., ADD COLUMN remainder ...` with every row's class. */
  addResidueColumns(delta, remainder) {
    this.columns = new Set(['delta', 'remainder'])
    for (const row of this.rows.values()) Object.assign(row, { delta, remainder })
  }

  /** Records `text` and fails as the server would on a dead connection or a missing column. */
  run(text) {
    this.statements.push(text)
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432')
    for (const column of ['delta', 'remainder']) {
      if (!this.columns.has(column) && new RegExp(`\\b${column}\\b`).test(text.replace(/'[^']*'/g, ''))) {
        throw new Error(`column "${column}" does not exist`)
      }
    }
  }

  /** The count `information_schema.columns` gives for `delta` and `remainder` of `table`. */
  residueColumns(table) {
    return table === this.table ? this.columns.size : 0
  }

  /** `max_id = max_id + step` on the tag's row; the row afterwards, or null without one. */
  advance(tag, step) {
    const row = this.rows.get(tag)
    if (row === undefined) return null
    const used = step ?? row.step
    row.maxId += BigInt(used)
    this.ranges.push([row.maxId - BigInt(used), row.maxId])
    return { ...row, used }
  }

  /** `give_back_table`: the marker table, unless it exists (refused without the privilege, as the servers do). */
  giveBackTable() {
    if (!this.canCreate) throw new Error('permission denied for schema public')
    this.marks ??= new Map()
  }

  /** `give_back_intent`: the give back recorded under `token` unless it is; the rows changed. */
  giveBackIntent(token, tag, lowered, expected) {
    assert.ok(typeof lowered === 'string' && typeof expected === 'string', 'IDs are sent as decimal text')
    assert.match(token, /^[0-9a-f]{32}$|^test-/)
    if (this.marks === null) throw new Error('relation "leaf_alloc_give_back" does not exist')
    if (this.marks.has(token)) return 0
    this.marks.set(token, { tag, lowered: BigInt(lowered), expected: BigInt(expected), applied: false })
    return 1
  }

  /** `give_back`: the record of `token` applied unless it was (`max_id` lowered where it is the expected one); whether it lowered. */
  giveBackApply(token) {
    if (this.marks === null) throw new Error('relation "leaf_alloc_give_back" does not exist')
    const mark = this.marks.get(token)
    if (mark === undefined || mark.applied) return false
    const row = this.rows.get(mark.tag)
    if (row === undefined || row.maxId !== mark.expected) return false
    mark.applied = true
    row.maxId = mark.lowered
    return true
  }

  /** How many times the table's columns were asked for. */
  get columnQueries() {
    return this.statements.filter((s) => s.includes('information_schema.columns')).length
  }
}

/** A `pg.Pool` over `db`: rows as arrays (`rowMode: 'array'`), BIGINT as strings, NULL as null. */
class FakePgPool {
  constructor(db) {
    this.db = db
  }

  async query({ text, values, query_timeout: timeout, rowMode }) {
    assert.equal(typeof timeout, 'number')
    assert.equal(rowMode, 'array')
    const db = this.db
    db.run(text)
    if (text.includes('information_schema.columns')) {
      assert.equal(text, coreSql('postgres', 'residue_columns', 'unused'))
      return { rows: [[String(db.residueColumns(values[0]))]], rowCount: 1 }
    }
    // An unquoted table name is folded to lower case.
    const is = (call) => text.toLowerCase() === coreSql('postgres', call, db.table).toLowerCase()
    const withResidue = is('allocate_residue')
    if (withResidue || is('allocate')) {
      const [step, tag, again] = values
      assert.equal(again, step)
      const row = db.advance(tag, step)
      if (row === null) return { rows: [], rowCount: 0 }
      const out = [String(row.maxId), String(row.used), String(row.step)]
      if (withResidue) {
        out.push(row.delta === null ? null : String(row.delta), row.remainder === null ? null : String(row.remainder))
      }
      return { rows: [out], rowCount: 1 }
    }
    if (is('give_back_table')) {
      db.giveBackTable()
      return { rows: [], rowCount: 0 }
    }
    if (is('give_back_intent')) {
      const [token, tag, lowered, expected] = values
      return { rows: [], rowCount: db.giveBackIntent(token, tag, lowered, expected) }
    }
    if (is('give_back')) {
      return { rows: [], rowCount: db.giveBackApply(values[0]) ? 1 : 0 }
    }
    throw new Error(`unexpected statement ${text}`)
  }
}

/** A `mysql2/promise` pool over `db`: rows as arrays (`rowsAsArray`), INT and COUNT(*) as numbers, NULL as null. */
class FakeMysqlPool {
  constructor(db) {
    this.db = db
    this.released = 0
    this.destroyed = 0
  }

  async query() {
    throw new Error('the store allocates on one connection')
  }

  async getConnection() {
    const pool = this
    const db = this.db
    let lastInsertId = 0n
    const query = async ({ sql, timeout, rowsAsArray }, params = []) => {
      assert.equal(typeof timeout, 'number')
      assert.equal(rowsAsArray, true)
      db.run(sql)
      const is = (call) => sql === coreSql('mysql', call, db.table)
      if (sql.includes('information_schema.columns')) {
        assert.equal(sql, coreSql('mysql', 'residue_columns', 'unused'))
        return [[[db.residueColumns(params[0])]]]
      }
      if (is('row_step')) {
        const row = db.rows.get(params[0])
        return [row ? [[row.step]] : []]
      }
      if (is('allocate')) {
        const row = db.advance(params[1], params[0])
        if (row !== null) lastInsertId = row.maxId
        return [{ affectedRows: row === null ? 0 : 1 }]
      }
      if (is('allocated') || is('allocated_residue')) {
        const row = db.rows.get(params[0])
        const out = [String(lastInsertId), row.step]
        if (is('allocated_residue')) out.push(row.delta, row.remainder)
        return [[out]]
      }
      if (is('give_back_table')) {
        db.giveBackTable()
        return [{ affectedRows: 0 }]
      }
      if (is('give_back_intent')) {
        const [token, tag, lowered, expected] = params
        return [{ affectedRows: db.giveBackIntent(token, tag, lowered, expected) }]
      }
      if (is('give_back')) {
        // Both tables' rows: the tag's and the record's.
        return [{ affectedRows: db.giveBackApply(params[0]) ? 2 : 0 }]
      }
      throw new Error(`unexpected statement ${sql}`)
    }
    return { query, release: () => pool.released++, destroy: () => pool.destroyed++ }
  }
}

/** An ioredis client over an in-memory server: custom commands, GET, SET NX, `ready` events. */
class FakeRedis extends EventEmitter {
  constructor(data = new Map()) {
    super()
    this.data = data
    this.gets = []
    this.down = false
    this.ranges = []
  }

  defineCommand(name, { numberOfKeys, lua }) {
    if (lua === STATEMENTS.redis.give_back) {
      // The core's script: with KEYS[2] (a marker in KEYS[1]'s cluster slot) set once, SET
      // KEYS[1] ARGV[2] if GET KEYS[1] == ARGV[1]; 1 if it did.
      assert.equal(numberOfKeys, 2)
      this.giveBacks = 0
      this.markers = new Set()
      this[name] = async (key, marker, expected, lowered) => {
        if (this.down) throw new Error('Connection is closed.')
        assert.ok(typeof expected === 'string' && typeof lowered === 'string', 'IDs are sent as decimal text')
        assert.ok(marker.startsWith(`{${key}}:given_back:`), marker)
        this.giveBacks++
        if (this.data.get(key) !== expected || this.markers.has(marker)) return 0
        this.markers.add(marker)
        this.data.set(key, lowered)
        return 1
      }
      return
    }
    // The allocation stays one key (cluster-safe): nothing in it names a second key.
    assert.equal(numberOfKeys, 1)
    assert.doesNotMatch(lua, /KEYS\[2\]/)
    this[name] = async (key, step) => {
      if (this.down) throw new Error('Connection is closed.')
      if (!this.data.has(key)) throw new Error('NOTAG')
      const maxId = BigInt(this.data.get(key)) + BigInt(step)
      this.data.set(key, String(maxId))
      this.ranges.push([maxId - BigInt(step), maxId])
      return String(maxId)
    }
  }

  /** ROLE and CONFIG GET as a primary without replicas answers them: no replica wait. */
  async call(command, ...args) {
    if (this.down) throw new Error('Connection is closed.')
    if (command === 'ROLE') return ['master', 0, []]
    assert.deepEqual([command, ...args], ['CONFIG', 'GET', 'min-replicas-to-write'])
    return ['min-replicas-to-write', '0']
  }

  async get(key) {
    this.gets.push(key)
    if (this.down) throw new Error('Connection is closed.')
    return this.data.get(key) ?? null
  }

  async set(key, value, nx) {
    assert.equal(nx, 'NX')
    if (this.data.has(key)) return null
    this.data.set(key, value)
    return 'OK'
  }

  async quit() {}
}

/** The statement PgStore ran before tables could state a class, unchanged for tables without one. */
/** The statements a table without a residue class is allocated with (the core's). */
const PG_ALLOCATE = coreSql('postgres', 'allocate', 'leaf_alloc')
const MYSQL_SELECT = coreSql('mysql', 'allocated', 'leaf_alloc')

const sqlKinds = [
  ['PgStore', (db, options) => new PgStore(new FakePgPool(db), options)],
  ['MySQLStore', (db, options) => new MySQLStore(new FakeMysqlPool(db), options)],
]

for (const [name, make] of sqlKinds) {
  test(`${name}: a table with delta and remainder reports each row's class, asking for the columns once`, async () => {
    const db = new Database({ columns: ['delta', 'remainder'], residue: [2, 1], rows: ['order', 'user'] })
    db.insert('half', 1n, 100, [2, null])
    const store = make(db)
    assert.deepEqual(await store.allocate('order', 100), {
      maxId: 101n,
      step: 100,
      tagStep: 100,
      delta: 2,
      remainder: 1,
    })
    assert.deepEqual(await store.allocate('order', 200), {
      maxId: 301n,
      step: 200,
      tagStep: 100,
      delta: 2,
      remainder: 1,
    })
    assert.deepEqual(await store.allocate('user', 100), {
      maxId: 101n,
      step: 100,
      tagStep: 100,
      delta: 2,
      remainder: 1,
    })
    // A row that leaves either column NULL states no class.
    assert.deepEqual(await store.allocate('half', 100), { maxId: 101n, step: 100, tagStep: 100 })
    assert.equal(await store.allocate('nope', 100), null)
    assert.equal(db.columnQueries, 1, 'the columns are asked for once')

    // Another table name is the parameter of the question (folded to lower case on PostgreSQL).
    const other = new Database({ table: 'id_alloc', columns: ['delta', 'remainder'], residue: [3, 2] })
    const named = make(other, { table: name === 'PgStore' ? 'ID_Alloc' : 'id_alloc', useRowStep: false })
    assert.deepEqual(await named.allocate('order', 50), { maxId: 51n, step: 50, delta: 3, remainder: 2 })
  })

  test(`${name}: a table without both columns behaves as before and reports no class`, async () => {
    for (const columns of [[], ['delta'], ['remainder']]) {
      const db = new Database({ columns })
      const store = make(db)
      assert.deepEqual(await store.allocate('order', 100), { maxId: 101n, step: 100, tagStep: 100 }, `${columns}`)
      assert.deepEqual(await store.allocate('order', 100), { maxId: 201n, step: 100, tagStep: 100 }, `${columns}`)
      assert.equal(db.columnQueries, 1)
      // The allocation's statements are the ones without the columns.
      const allocations = db.statements.filter((s) => !s.includes('information_schema'))
      assert.ok(allocations.includes(name === 'PgStore' ? PG_ALLOCATE : MYSQL_SELECT), allocations.join('\n'))
      assert.ok(
        allocations.every((s) => !/\b(delta|remainder)\b/.test(s)),
        allocations.join('\n'),
      )
    }
  })

  test(`${name}: after a failure the columns are asked for again (the pool connects anew)`, async () => {
    const db = new Database()
    const store = make(db)
    assert.deepEqual(await store.allocate('order', 100), { maxId: 101n, step: 100, tagStep: 100 })
    db.down = true
    await assert.rejects(store.allocate('order', 100), /ECONNREFUSED/)
    db.down = false
    db.addResidueColumns(2, 0) // the operator stated the class meanwhile
    assert.deepEqual(await store.allocate('order', 100), {
      maxId: 201n,
      step: 100,
      tagStep: 100,
      delta: 2,
      remainder: 0,
    })
    assert.equal(db.columnQueries, 2)
    // A failure while asking is not remembered as an answer.
    const fresh = new Database({ columns: ['delta', 'remainder'], residue: [2, 1] })
    const late = make(fresh)
    fresh.down = true
    await assert.rejects(late.allocate('order', 100), /ECONNREFUSED/)
    fresh.down = false
    assert.deepEqual(await late.allocate('order', 100), {
      maxId: 101n,
      step: 100,
      tagStep: 100,
      delta: 2,
      remainder: 1,
    })
  })
}

for (const [name, make] of sqlKinds) {
  test(`${name}: close gives the unissued IDs back with the core's statement; the next generator continues`, async () => {
    const db = new Database() // order: max_id 1, step 100
    const options = { step: 100, dynamicStep: false }
    const gen = new SegmentGenerator({ store: make(db), ...options })
    const first = []
    for (let i = 0; i < 25; i++) first.push(await gen.nextId('order'))
    await new Promise((resolve) => setTimeout(resolve, 10)) // the prefetched range arrived
    assert.equal(db.rows.get('order').maxId, 201n)
    await gen.close()
    assert.equal(db.rows.get('order').maxId, 26n, 'lowered from 201 to the first ID not issued')
    const dialect = name === 'PgStore' ? 'postgres' : 'mysql'
    assert.equal(db.statements.filter((s) => s === giveBackSql(dialect, 'leaf_alloc')).length, 1)

    const next = new SegmentGenerator({ store: make(db), ...options })
    assert.equal(await next.nextId('order'), 26n)
    assert.equal(first[24], 25n)

    // Called directly: a row that moved is left alone; nothing to give back sends nothing.
    const store = make(db)
    const row = db.rows.get('order').maxId
    assert.equal(await store.giveBack('order', row + 100n, 30n), false)
    assert.equal(db.rows.get('order').maxId, row)
    const sent = db.statements.length
    assert.equal(await store.giveBack('order', 30n, 30n), false)
    assert.equal(db.statements.length, sent, 'no statement for an empty give back')
    await assertRejectsCode(() => store.giveBack('', 30n, 20n), 'INVALID_ARGUMENT', 'invalid tag')
    await assertRejectsCode(() => store.giveBack('order', -1, 0), 'INVALID_ARGUMENT', 'invalid maxId -1')
    assert.equal(await store.giveBack('order', row, row - 10n), true)
    assert.equal(db.rows.get('order').maxId, row - 10n)
    // Another table: the statement names it.
    const other = new Database({ table: 'id_alloc' })
    other.rows.get('order').maxId = 500n
    assert.equal(await make(other, { table: 'id_alloc' }).giveBack('order', 500n, 400n), true)
    assert.ok(other.statements.includes(giveBackSql(dialect, 'id_alloc')), other.statements.join('\n'))
    await next.close()
  })
}

for (const [name, make] of sqlKinds) {
  const dialect = name === 'PgStore' ? 'postgres' : 'mysql'
  const calls = (db) =>
    db.statements
      .map((s) => ['give_back_table', 'give_back_intent', 'give_back'].find((c) => s === coreSql(dialect, c, db.table)))
      .filter(Boolean)

  test(`${name}: a give back is recorded under a random token, then applied by it at most once`, async () => {
    const db = new Database()
    db.rows.get('order').maxId = 2001n
    const store = make(db)
    assert.equal(await store.giveBack('order', 2001n, 251n), true)
    assert.equal(db.rows.get('order').maxId, 251n)
    assert.deepEqual(calls(db), ['give_back_table', 'give_back_intent', 'give_back'])
    const [token] = [...db.marks.keys()]
    assert.match(token, /^[0-9a-f]{32}$/)
    // Another give back: a token of its own, and the table is not created again.
    db.rows.get('order').maxId = 3001n
    assert.equal(await store.giveBack('order', 3001n, 2500n), true)
    assert.deepEqual(calls(db).slice(3), ['give_back_intent', 'give_back'])
    assert.equal(db.marks.size, 2)
    // Run again with its token (a resend) after others allocated the range again: nothing.
    assert.equal(await store._giveBack('order', 3001n, 2500n, 'test-1'), false, 'the row moved')
    db.rows.get('order').maxId = 3001n
    assert.equal(await store._giveBack('order', 3001n, 2500n, 'test-1'), true)
    db.rows.get('order').maxId = 3001n // allocated exactly the range given back
    assert.equal(await store._giveBack('order', 3001n, 2500n, 'test-1'), false, 'a resend lowered max_id again')
    assert.equal(db.rows.get('order').maxId, 3001n)
  })

  test(`${name}: a user who may not create the marker table gives back through one made beforehand, else fails naming it`, async () => {
    const db = new Database()
    db.canCreate = false
    db.rows.get('order').maxId = 2001n
    const store = make(db)
    await assertRejectsCode(
      () => store.giveBack('order', 2001n, 251n),
      'STORE_ERROR',
      'marker table leaf_alloc_give_back cannot be created',
    )
    await assert.rejects(store.giveBack('order', 2001n, 251n), /CREATE privilege.*SELECT, INSERT, UPDATE/s)
    assert.equal(db.rows.get('order').maxId, 2001n, 'nothing lowered')
    db.marks = new Map() // made beforehand by someone who may
    assert.equal(await store.giveBack('order', 2001n, 251n), true)
    db.rows.get('order').maxId = 2001n
    const before = db.statements.length
    assert.equal(await store.giveBack('order', 2001n, 300n), true)
    assert.deepEqual(calls({ ...db, statements: db.statements.slice(before), table: db.table }), [
      'give_back_intent',
      'give_back',
    ])
  })
}

test('RedisStore: close gives the unissued IDs back with the core script; a moved key is left alone', async () => {
  const client = new FakeRedis(new Map([['segflake:leaf_alloc:order', '1']]))
  const options = { store: new RedisStore(client), step: 100, dynamicStep: false }
  const gen = new SegmentGenerator(options)
  for (let i = 0; i < 25; i++) await gen.nextId('order')
  await new Promise((resolve) => setTimeout(resolve, 10))
  assert.equal(client.data.get('segflake:leaf_alloc:order'), '201')
  await gen.close()
  assert.equal(client.data.get('segflake:leaf_alloc:order'), '26')
  assert.equal(client.giveBacks, 1)
  const next = new SegmentGenerator({ ...options, store: new RedisStore(client) })
  assert.equal(await next.nextId('order'), 26n)
  await next.close()

  const store = new RedisStore(client, { prefix: 'ids:' })
  client.data.set('ids:pay', '900')
  assert.equal(await store.giveBack('pay', 1000n, 800n), false, 'the key moved')
  assert.equal(client.data.get('ids:pay'), '900')
  assert.equal(await store.giveBack('pay', 900n, 800n), true)
  assert.equal(client.data.get('ids:pay'), '800')
  const sent = client.giveBacks
  assert.equal(await store.giveBack('pay', 800n, 800n), false)
  assert.equal(client.giveBacks, sent, 'no command for an empty give back')
  client.down = true
  await assert.rejects(store.giveBack('pay', 800n, 700n), /Connection is closed/)
})

test('RedisStore: without segflake:leaf_alloc_residue no class; with it every answer reports it, read once per connection', async () => {
  const client = new FakeRedis(new Map([['segflake:leaf_alloc:order', '1']]))
  const store = new RedisStore(client)
  assert.deepEqual(await store.allocate('order', 100), { maxId: 101n, step: 100 })
  assert.deepEqual(await store.allocate('order', 100), { maxId: 201n, step: 100 })
  assert.deepEqual(client.gets, [RESIDUE_KEY])

  client.data.set(RESIDUE_KEY, '2:1')
  client.emit('ready') // a reconnection: the class is read again
  assert.deepEqual(await store.allocate('order', 100), { maxId: 301n, step: 100, delta: 2, remainder: 1 })
  assert.deepEqual(await store.allocate('order', 50), { maxId: 351n, step: 50, delta: 2, remainder: 1 })
  assert.equal(await store.allocate('missing', 50), null)
  assert.deepEqual(client.gets, [RESIDUE_KEY, RESIDUE_KEY])

  // A failed allocation reads it again too.
  client.down = true
  await assert.rejects(store.allocate('order', 50), /Connection is closed/)
  client.down = false
  client.data.set(RESIDUE_KEY, '2:0')
  assert.deepEqual(await store.allocate('order', 50), { maxId: 401n, step: 50, delta: 2, remainder: 0 })

  // A store made with the key already set reports it from its first answer; close() stops
  // following the client's reconnections.
  const created = new RedisStore(client, { createMissingTags: true })
  assert.deepEqual(await created.allocate('new', 10), { maxId: 11n, step: 10, delta: 2, remainder: 0 })
  await created.close()
  await store.close()
  assert.equal(client.listenerCount('ready'), 0)
})

test('RedisStore: a malformed segflake:leaf_alloc_residue fails the allocation, naming the key and the form', async () => {
  const { StoreError } = await import('segflake')
  for (const bad of ['2', 'two:1', '2:', ':0', '2:-1', '2:0:1', ' 2:0', '', '99999999999999999999:0']) {
    const client = new FakeRedis(new Map([['segflake:leaf_alloc:order', '1']]))
    client.data.set(RESIDUE_KEY, bad)
    const store = new RedisStore(client)
    const e = await store.allocate('order', 100).then(
      () => assert.fail(`${JSON.stringify(bad)} was accepted`),
      (e) => e,
    )
    assert.ok(e instanceof StoreError, `${e}`)
    assert.equal(e.code, 'STORE_ERROR')
    assert.equal(
      e.message,
      `segflake:leaf_alloc_residue is ${JSON.stringify(bad)}, not DELTA:REMAINDER (two non-negative integers, e.g. 2:0)`,
    )
    assert.equal(client.data.get('segflake:leaf_alloc:order'), '1', 'no range was taken')
    // Once the operator fixes it, the next allocation reads it again.
    client.data.set(RESIDUE_KEY, '4:3')
    assert.deepEqual(await store.allocate('order', 100), { maxId: 101n, step: 100, delta: 4, remainder: 3 })
  }
})

/**
 * Two databases X (stating class 1 mod 2) and Y (class 0 mod 2), and a store over each for
 * every client: `stores(db)` makes a new store (a new client) over the database `db`.
 */
const multiKinds = [
  ['PostgreSQL', (db) => new PgStore(new FakePgPool(db))],
  ['MySQL', (db) => new MySQLStore(new FakeMysqlPool(db))],
  [
    'PostgreSQL and MySQL',
    (db) => (db.name === 'X' ? new PgStore(new FakePgPool(db)) : new MySQLStore(new FakeMysqlPool(db))),
  ],
  ['Redis', (server) => new RedisStore(server)],
]

/** Database X or Y of a kind: a table with the class in its columns, or a Redis server with the key. */
function database(kind, name, residue) {
  if (kind === 'Redis') {
    const data = new Map([['segflake:leaf_alloc:order', '1']])
    if (residue) data.set(RESIDUE_KEY, residue.join(':'))
    const server = new FakeRedis(data)
    server.name = name
    return server
  }
  const db = new Database(residue ? { columns: ['delta', 'remainder'], residue } : {})
  db.name = name
  return db
}

/**
 * Two clients list X and Y in opposite orders and take IDs while X, then Y, is down, so
 * each client takes from both; every ID taken, in the order taken per client.
 */
async function twoClients(makeStore, x, y) {
  const first = new SegmentGenerator({
    store: new MultiStore([makeStore(x), makeStore(y)]),
    step: 100,
    dynamicStep: false,
  })
  const second = new SegmentGenerator({
    store: new MultiStore([makeStore(y), makeStore(x)]),
    step: 100,
    dynamicStep: false,
  })
  const ids = [[], []]
  const take = async (n) => {
    for (let i = 0; i < n; i++) {
      ids[0].push(await first.nextId('order'))
      ids[1].push(await second.nextId('order'))
    }
  }
  await take(250)
  x.down = true
  await take(250)
  x.down = false
  y.down = true
  await take(250)
  y.down = false
  await first.close()
  await second.close()
  return ids
}

for (const [kind, makeStore] of multiKinds) {
  test(`MultiStore over ${kind} stores listed in both orders: each database's IDs are the class it states, none twice`, async () => {
    const x = database(kind, 'X', [2, 1])
    const y = database(kind, 'Y', [2, 0])
    const ids = await twoClients(makeStore, x, y)
    for (const list of ids) {
      for (let i = 1; i < list.length; i++)
        assert.ok(list[i] > list[i - 1], `ids[${i}] = ${list[i]} after ${list[i - 1]}`)
    }
    const all = ids.flat()
    assert.equal(new Set(all).size, all.length, 'no ID twice across the two clients')
    const inRanges = (db, id) => db.ranges.some(([start, end]) => start <= id && id < end)
    for (const id of all) {
      const source = id % 2n === 1n ? x : y
      assert.ok(inRanges(source, id), `${id} is in a range of ${source.name}, the database of its class`)
    }
    // Each client took from both databases, whatever their order in its list.
    for (const list of ids) {
      assert.ok(list.some((id) => id % 2n === 1n) && list.some((id) => id % 2n === 0n))
    }

    // Without stated classes the same two lists overlap: the class is the place in each list.
    const ids2 = await twoClients(makeStore, database(kind, 'X', null), database(kind, 'Y', null))
    const all2 = ids2.flat()
    assert.ok(new Set(all2).size < all2.length, 'lists in different orders without classes give an ID twice')
  })
}

test('MultiStore: a class that does not fit the list (delta 3 for two stores) is refused, naming the store', async () => {
  const x = new Database({ columns: ['delta', 'remainder'], residue: [3, 1] })
  const y = new Database({ columns: ['delta', 'remainder'], residue: [3, 0] })
  const gen = new SegmentGenerator({
    store: new MultiStore([new PgStore(new FakePgPool(x)), new MySQLStore(new FakeMysqlPool(y))]),
    waitTimeoutMs: 200,
  })
  await assertRejectsCode(
    () => gen.nextId('order'),
    'SEGMENTS_EXHAUSTED',
    '(mod 3), but the generator spans 2 store(s)',
  )
  assert.ok(x.ranges.length >= 1 && y.ranges.length >= 1, 'each store was asked, and refused')
  await gen.close()
})

// ---------------------------------------------------------------------------------------
// Several hosts in one URL: the first writable one is used (high availability).

const { splitHosts, WritablePool, pgWritablePool, mysqlWritablePool } = require(
  require('node:path').join(
    require('node:path').dirname(require.resolve('segflake/registries')),
    'stores',
    '_common.js',
  ),
)

test('a URL with several hosts is split into one URL per host, in order; an empty entry is refused', () => {
  assert.deepEqual(splitHosts('mysql://u:p%40w@h1:3306,h2:3307,[::1]:3308/ids?ssl-mode=DISABLED'), [
    'mysql://u:p%40w@h1:3306/ids?ssl-mode=DISABLED',
    'mysql://u:p%40w@h2:3307/ids?ssl-mode=DISABLED',
    'mysql://u:p%40w@[::1]:3308/ids?ssl-mode=DISABLED',
  ])
  assert.deepEqual(splitHosts('postgres://u@h/db'), ['postgres://u@h/db'])
  assert.throws(() => splitHosts('mysql://u@h1,,h2/db'), {
    code: 'INVALID_ARGUMENT',
    message: /empty host in the host list/,
  })
  const pg = pgWritablePool({
    connectionString: 'postgres://u@h1:5433,h2:5434/db?target_session_attrs=read-write&sslmode=disable',
  })
  assert.deepEqual(
    pg.targets.map((t) => [t.where, t.config.connectionString, t.config.ssl]),
    [
      ['h1:5433', 'postgres://u@h1:5433/db', false],
      ['h2:5434', 'postgres://u@h2:5434/db', false],
    ],
  )
  for (const attrs of ['any', 'read-only']) {
    assert.throws(() => pgWritablePool({ connectionString: `postgres://u@h1,h2/db?target_session_attrs=${attrs}` }), {
      code: 'INVALID_ARGUMENT',
      message: /connects only to a server that takes writes/,
    })
  }
  const my = mysqlWritablePool({ uri: 'mysql://u:p@h1:3306,h2/ids' }, 1000)
  assert.deepEqual(
    my.targets.map((t) => [t.where, t.config.uri]),
    [
      ['h1:3306', 'mysql://u:p@h1:3306/ids'],
      ['h2:3306', 'mysql://u:p@h2/ids'],
    ],
  )
  for (const store of [new PgStore('postgres://u@h1:5433,h2:5434/db'), new MySQLStore('mysql://u:p@h1,h2/ids')]) {
    assert.equal(store.pool.targets.length, 2)
  }
})

/** A fake driver pool on one server: `state` 'down', 'replica' (read-only) or 'primary'. */
class FakeHostPool {
  constructor(servers, host, store) {
    this.servers = servers
    this.host = host
    this.store = store
    this.ended = false
    servers.opened.push(host)
  }
  get state() {
    return this.servers[this.host]
  }
  async query(q) {
    if (this.ended) throw new Error('pool ended')
    if (this.state === 'down')
      throw Object.assign(new Error(`connect ECONNREFUSED ${this.host}`), { code: 'ECONNREFUSED' })
    if (q === 'writable') return this.state === 'primary'
    if (this.state !== 'primary') {
      throw this.store === 'postgres'
        ? Object.assign(new Error('cannot execute UPDATE in a read-only transaction'), { code: '25006' })
        : Object.assign(new Error('The MariaDB server is running with the --read-only option'), { errno: 1290 })
    }
    this.servers.writes.push(this.host)
    return { rows: [[1]] }
  }
  async getConnection() {
    const run = (q) => this.query(q)
    return { query: run, execute: run, release() {}, destroy() {} }
  }
  async end() {
    this.ended = true
  }
}

for (const store of ['postgres', 'mysql']) {
  test(`WritablePool (${store}): the first writable host is kept; a refusal or a failure makes the next call choose again`, async () => {
    const servers = { h1: 'down', h2: 'replica', h3: 'primary', opened: [], writes: [] }
    const targets = ['h1', 'h2', 'h3'].map((h) => ({ where: `${h}:1`, config: { host: h } }))
    const pool = new WritablePool(
      store,
      targets,
      (t) => new FakeHostPool(servers, t.config.host, store),
      (p) => p.query('writable'),
    )
    await pool.query('UPDATE')
    await pool.query('UPDATE')
    assert.deepEqual(servers.writes, ['h3', 'h3'])
    assert.deepEqual(servers.opened, ['h1', 'h2', 'h3']) // chosen once, kept
    // The primary becomes read-only (demoted): the write is refused with the typed error,
    // nothing is written, and the next call chooses again.
    servers.h3 = 'replica'
    await assert.rejects(pool.query('UPDATE'), (e) => {
      assert.equal(e.code, 'READ_ONLY_SERVER')
      assert.equal(e.name, 'ReadOnlyServerError')
      assert.match(e.message, /^the server is read-only \(.*read-only.*\): nothing was written/)
      assert.ok(e instanceof require('segflake').StoreError)
      return true
    })
    // No host writable now: every host said so, or why it was passed over.
    await assert.rejects(pool.query('UPDATE'), {
      code: 'STORE_ERROR',
      message: /no writable server among 3 hosts: h1:1: .*ECONNREFUSED.*; h2:1: .*; h3:1: /,
    })
    servers.h1 = 'replica'
    await assert.rejects(pool.query('UPDATE'), { code: 'READ_ONLY_SERVER', message: /h1:1: .*; h2:1: .*; h3:1: / })
    // h2 is promoted: found by itself.
    servers.h2 = 'primary'
    await pool.query('UPDATE')
    assert.deepEqual(servers.writes, ['h3', 'h3', 'h2'])
    // A plain failure (the server went away) also drops the pool.
    servers.h2 = 'down'
    servers.h3 = 'primary'
    await assert.rejects(pool.query('UPDATE'), { code: 'ECONNREFUSED' })
    await pool.query('UPDATE')
    assert.deepEqual(servers.writes, ['h3', 'h3', 'h2', 'h3'])
    // The registries run their statements on one of its connections, those with parameters
    // through execute.
    const conn = await pool.getConnection()
    await conn.execute('UPDATE', [1])
    await conn.query('UPDATE')
    conn.release()
    assert.deepEqual(servers.writes, ['h3', 'h3', 'h2', 'h3', 'h3', 'h3'])
    await pool.end()
    await assert.rejects(pool.query('UPDATE'), /ended/)
  })
}
