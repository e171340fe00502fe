'use strict'
// Leaf's `leaf_alloc` table on PostgreSQL through `pg` (node-postgres), a peer dependency.
//
//   const { Pool } = require('pg')
//   const { SegmentGenerator } = require('segflake')
//   const { PgStore } = require('segflake/stores/pg')
//   const store = new PgStore(new Pool({ connectionString: process.env.DATABASE_URL }))
//   await store.ensureTag('order')
//   const gen = new SegmentGenerator({ store })
//
// One statement per allocation, atomic on its own (the row's step when $1 is NULL, Leaf's
// first allocation of a tag):
//   UPDATE leaf_alloc SET max_id = max_id + COALESCE($1, step), update_time = now()
//   WHERE biz_tag = $2 RETURNING max_id::text, COALESCE($1, step), step
// Durability: the server must keep synchronous_commit = on (the default); with it off an
// acknowledged allocation can be lost in a crash and the same range handed out twice.
//
// A generator that closes gives back the IDs it fetched and did not issue (`giveBack`): the
// give back is recorded under a fresh random token in the marker table
// leaf_alloc_give_back (created on the first give back), then applied by that token at most
// once, the core's statements:
//   INSERT INTO leaf_alloc_give_back (token, biz_tag, max_id, expected_max_id)
//   VALUES ($1, $2, $3, $4) ON CONFLICT (token) DO NOTHING
//   WITH g AS (UPDATE leaf_alloc_give_back SET applied = 1 WHERE token = $1 AND applied = 0
//   RETURNING biz_tag, max_id, expected_max_id) UPDATE leaf_alloc t SET max_id = g.max_id,
//   update_time = now() FROM g WHERE t.biz_tag = g.biz_tag AND t.max_id = g.expected_max_id
// so a statement resent after a lost reply never lowers max_id a second time (a bare
// compare-and-set would, once others allocated the range again). A user without CREATE on
// the schema needs the table made beforehand (stores/sql/leaf_alloc.postgres.sql), with
// SELECT, INSERT and UPDATE on it.
//
// Tinyid's multi-database mode: a database of a `MultiStore` states its residue class in
// two columns of the table, the same in every row:
//   ALTER TABLE leaf_alloc ADD COLUMN delta INTEGER DEFAULT 2, ADD COLUMN remainder INTEGER DEFAULT 0
// The store asks once (and again after a failed query, when the pool connects anew)
// whether the table has both columns:
//   SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = current_schema()
//   AND table_name = $1 AND column_name IN ('delta', 'remainder')
// and if so the allocation also returns the row's `delta` and `remainder`, reported with
// the answer when both are set: the generator then issues from this database's ranges only
// the IDs ≡ remainder (mod delta), whatever its place in the list, so clients that list the
// databases in different orders never overlap. A table without them works as before (the
// class is the store's place in the list).
//
// High availability: a URL may list several servers, libpq's spelling
// `postgres://U@H1:P1,H2:P2/DB` (pg takes one host, so the store tries them itself); the
// first whose answer to the core's `writable` statement (`pg_is_in_recovery()`,
// `transaction_read_only`) is yes is kept, as libpq's `target_session_attrs=read-write`
// (the only value taken) would. A store whose hosts are all standbys, or a write refused
// with SQLSTATE 25006, fails with `ReadOnlyServerError` (`READ_ONLY_SERVER`): nothing is
// issued from it, the pool is dropped and the next call chooses again (after a failover,
// the promoted server). A pool you pass is used as it is. No duplicate across a failover
// needs a synchronous standby (docs/reliability.md).

const {
  checkTable,
  checkTag,
  checkStep,
  checkMaxId,
  toBigInt,
  residueOf,
  LeafRows,
  checkTimeout,
  KEEPALIVE_MS,
  pgWritablePool,
  segmentStatement,
  giveBackArgs,
  giveBackStatements,
  giveBackToken,
  recordGiveBack,
  ReadOnlyServerError,
} = require('./_common.js')

class PgStore extends LeafRows {
  /**
   * @param {object|string} poolOrConfig a `pg.Pool` / `pg.Client` (anything with `query`), or
   *   a `postgres://` URL or the config of a new `pg.Pool` (which the store then owns and
   *   `close()` ends; unless the config says otherwise, `timeoutMs` is its
   *   `connectionTimeoutMillis`, `statement_timeout` and `query_timeout`, with TCP keepalive
   *   on). TLS as libpq names it, in the URL (or the config's `connectionString`):
   *   `sslmode=require` (encrypted; the certificate is checked only when `sslrootcert` is
   *   given), `verify-ca` (it must chain to `sslrootcert=PATH`), `verify-full` (that, and
   *   it must name the host), mapped to pg's `ssl` option; `allow` and `prefer` are refused
   *   (pg cannot fall back to plaintext). A config's own `ssl` is left alone.
   * @param {{ table?: string, useRowStep?: boolean, createMissingTags?: number, timeoutMs?: number }} [options]
   *   `timeoutMs` (default 3000): every query's `query_timeout`, so a query on a dead or
   *   blackholed connection fails (and the connection leaves the pool) instead of waiting
   *   for TCP to give up
   */
  constructor(poolOrConfig, options = {}) {
    super(options)
    this.timeoutMs = checkTimeout(options.timeoutMs)
    if (poolOrConfig && typeof poolOrConfig.query === 'function') {
      this.pool = poolOrConfig
      this.ownsPool = false
    } else {
      const config = typeof poolOrConfig === 'string' ? { connectionString: poolOrConfig } : { ...(poolOrConfig || {}) }
      // Of several hosts in the URL, the first writable one (see pgWritablePool).
      this.pool = pgWritablePool({
        connectionTimeoutMillis: this.timeoutMs,
        statement_timeout: this.timeoutMs,
        query_timeout: this.timeoutMs,
        keepAlive: true,
        keepAliveInitialDelayMillis: KEEPALIVE_MS,
        ...config,
      })
      this.ownsPool = true
    }
    this.table = checkTable(options.table ?? 'leaf_alloc')
    this.giveBackSql = giveBackStatements('postgres', this.table)
    this.giveBackTableReady = false
    this.allocateSql = segmentStatement('postgres', 'allocate', this.table)
    this.allocateResidueSql = segmentStatement('postgres', 'allocate_residue', this.table)
    this.residueSql = segmentStatement('postgres', 'residue_columns', this.table)
    this.giveBack = this.giveBack.bind(this)
  }

  /** `pool.query` with the store's `query_timeout`, rows as arrays. */
  query(text, values) {
    return this.pool.query({ text, values, query_timeout: this.timeoutMs, rowMode: 'array' })
  }

  /** Whether the table has Tinyid's `delta` and `remainder` columns (both). */
  async hasResidueColumns() {
    // Unquoted identifiers are folded to lower case, and so the catalog holds them.
    const res = await this.query(this.residueSql, [this.table.toLowerCase()])
    return res.rows.length === 1 && Number(res.rows[0][0]) === 2
  }

  async allocateRow(tag, step, residue = false) {
    const res = await this.query(residue ? this.allocateResidueSql : this.allocateSql, [step, tag, step])
    if (res.rows.length === 0) return null
    const [maxId, used, rowStep, delta, remainder] = res.rows[0]
    return {
      maxId: toBigInt(maxId, 'leaf_alloc.max_id'),
      step: Number(toBigInt(used, 'leaf_alloc.step')),
      rowStep: Number(toBigInt(rowStep, 'leaf_alloc.step')),
      residue: residue ? residueOf(delta, remainder, this.table) : null,
    }
  }

  /**
   * Lowers the tag's max_id from `expectedMaxId` to `maxId` if it is still `expectedMaxId`
   * (nobody allocated since): the IDs `[maxId, expectedMaxId)` were fetched by a generator
   * that closed without issuing them. Resolves to whether the row was lowered (false
   * without a query when `maxId` is not below `expectedMaxId`). Safe to run twice: recorded
   * under a fresh random token, applied by it at most once.
   */
  async giveBack(tag, expectedMaxId, maxId) {
    return this._giveBack(tag, expectedMaxId, maxId, giveBackToken())
  }

  /** `giveBack` under `token` (internal): run again with the same token, it changes nothing. */
  async _giveBack(tag, expectedMaxId, maxId, token) {
    const args = giveBackArgs(tag, expectedMaxId, maxId)
    if (args === null) return false
    const run = (sql, values) => this.query(sql, values)
    await recordGiveBack(this, run, [token, tag, args.lowered.toString(), args.expected.toString()])
    const res = await run(this.giveBackSql.apply, [token])
    return res.rowCount > 0
  }

  /**
   * Creates the tag's row (Leaf's default `maxId` 1) unless it exists; an existing row is
   * left as it is. Resolves to whether it was created.
   */
  async ensureTag(tag, { maxId = 1, step = 1000, description = null } = {}) {
    checkTag(tag)
    const max = checkMaxId(maxId)
    checkStep(step)
    const sql = segmentStatement('postgres', 'ensure_tag', this.table)
    const res = await this.query(sql, [tag, max.toString(), step, description])
    return res.rowCount === 1
  }

  /** Creates Leaf's table if it does not exist. */
  async createTable() {
    await this.query(segmentStatement('postgres', 'create_table', this.table))
  }

  /** Ends the pool if the store created it. */
  async close() {
    if (this.ownsPool) await this.pool.end()
  }
}

module.exports = {
  PgStore,
  /** A read-only server's refusal (a `StoreError`, code `READ_ONLY_SERVER`); see `_common.js`. */
  get ReadOnlyServerError() {
    return ReadOnlyServerError()
  },
}
