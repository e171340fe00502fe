'use strict'
// Leaf's `leaf_alloc` table on MySQL or MariaDB through `mysql2`, a peer dependency.
//
//   const mysql = require('mysql2/promise')
//   const { MySQLStore } = require('segflake/stores/mysql')
//   const store = new MySQLStore(mysql.createPool({ host, user, password, database }))
//
// One atomic statement per allocation, then Leaf's read of the value it set, on the same
// connection (preceded by `SELECT step` for a tag's first allocation, which uses the row's
// step):
//   UPDATE leaf_alloc SET max_id = LAST_INSERT_ID(max_id + ?) WHERE biz_tag = ?;
//   SELECT CAST(LAST_INSERT_ID() AS CHAR), step FROM leaf_alloc WHERE biz_tag = ?;
// Durability: InnoDB with innodb_flush_log_at_trx_commit = 1 (2 survives a server process
// crash, not a power loss).
//
// A generator that closes gives back the IDs it fetched and did not issue (`giveBack`): the
// give back is recorded under a fresh random token in the marker table
// leaf_alloc_give_back (created on the first give back), then applied by that token at most
// once, the core's statements, on one pooled connection:
//   INSERT IGNORE INTO leaf_alloc_give_back (token, biz_tag, max_id, expected_max_id)
//   VALUES (?, ?, ?, ?)
//   UPDATE leaf_alloc t JOIN leaf_alloc_give_back g ON g.token = ? AND g.applied = 0
//   AND g.biz_tag = t.biz_tag AND t.max_id = g.expected_max_id
//   SET t.max_id = g.max_id, g.applied = 1
// so a statement resent after a lost reply never lowers max_id a second time (a bare
// compare-and-set would, once others allocated the range again). A user without CREATE on
// the database needs the table made beforehand (stores/sql/leaf_alloc.mysql.sql), with
// SELECT, INSERT and UPDATE on it.
//
// Tinyid's multi-database mode: a database of a `MultiStore` states its residue class in
// two columns of the table, the same in every row:
//   ALTER TABLE leaf_alloc ADD COLUMN delta INTEGER DEFAULT 2, ADD COLUMN remainder INTEGER DEFAULT 0
// The store asks once (and again after a failed query, whose connection is destroyed so
// the pool connects anew) whether the table has both columns:
//   SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE()
//   AND table_name = ? AND column_name IN ('delta', 'remainder')
// and if so the second statement also reads the row's `delta` and `remainder`
// (`SELECT ..., step, delta, remainder`), reported with the answer when both are set: the
// generator then issues from this database's ranges only the IDs ≡ remainder (mod delta),
// whatever its place in the list, so clients that list the databases in different orders
// never overlap. A table without them works as before (the class is the store's place in
// the list).
//
// High availability: a URL may list several servers, `mysql://USER:PASSWORD@H1:P1,H2:P2/DB`
// (segflake's spelling in every language: mysql2 takes one host); they are tried in order
// and the first whose `@@global.read_only` is off is kept (the core's `writable` statement,
// asked explicitly: a user with SUPER or READ ONLY ADMIN may write to a read-only replica).
// A store whose hosts are all read-only, or a write refused with error 1290 or 1836, fails
// with `ReadOnlyServerError` (`READ_ONLY_SERVER`): nothing is issued from it, the pool is
// dropped and the next call chooses again. A pool you pass is used as it is. No duplicate
// across a failover needs semi-synchronous replication (docs/reliability.md).

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
  mysqlWritablePool,
  segmentStatement,
  giveBackArgs,
  giveBackStatements,
  giveBackToken,
  recordGiveBack,
  ReadOnlyServerError,
} = require('./_common.js')

class MySQLStore extends LeafRows {
  /**
   * @param {object|string} poolOrConfig a `mysql2/promise` pool (anything with
   *   `getConnection`), or a `mysql://` URL or the config of a new one (which the store then
   *   owns and `close()` ends; unless the config says otherwise, `timeoutMs` is its
   *   `connectTimeout`, with TCP keepalive on). TLS as MySQL's own clients name it, in the
   *   URL (or the config's `uri`): `ssl-mode=REQUIRED` (encrypted, the certificate not
   *   checked), `VERIFY_CA` (it must chain to `ssl-ca=PATH`, else Node's certificate
   *   authorities), `VERIFY_IDENTITY` (that, and it must name the host); `ssl-ca` alone is
   *   `VERIFY_CA`; mapped to mysql2's `ssl` option. A config's own `ssl` is left alone.
   * @param {{ table?: string, useRowStep?: boolean, createMissingTags?: number, timeoutMs?: number }} [options]
   *   `timeoutMs` (default 3000): every query's timeout, so a query on a dead or blackholed
   *   connection fails (and the connection is destroyed) instead of waiting for TCP to give up
   */
  constructor(poolOrConfig, options = {}) {
    super(options)
    this.timeoutMs = checkTimeout(options.timeoutMs)
    if (poolOrConfig && typeof poolOrConfig.getConnection === 'function') {
      this.pool = poolOrConfig
      this.ownsPool = false
    } else {
      const config = typeof poolOrConfig === 'string' ? { uri: poolOrConfig } : { ...(poolOrConfig || {}) }
      // Of several hosts in the URL, the first writable one (see mysqlWritablePool).
      this.pool = mysqlWritablePool(
        { connectTimeout: this.timeoutMs, enableKeepAlive: true, keepAliveInitialDelay: KEEPALIVE_MS, ...config },
        this.timeoutMs,
      )
      this.ownsPool = true
    }
    this.table = checkTable(options.table ?? 'leaf_alloc')
    this.giveBackSql = giveBackStatements('mysql', this.table)
    this.giveBackTableReady = false
    this.statements = Object.fromEntries(
      ['row_step', 'allocate', 'allocated', 'allocated_residue', 'residue_columns', 'ensure_tag', 'create_table'].map(
        (call) => [call, segmentStatement('mysql', call, this.table)],
      ),
    )
    this.giveBack = this.giveBack.bind(this)
  }

  /** `sql` as a query with the store's timeout. */
  sql(sql) {
    return { sql, timeout: this.timeoutMs, rowsAsArray: true }
  }

  async withConnection(fn) {
    const conn = await this.pool.getConnection()
    let result
    try {
      result = await fn(conn)
    } catch (err) {
      // A connection that failed may be broken: it must not go back to the pool.
      try {
        conn.destroy()
      } catch {}
      throw err
    }
    conn.release()
    return result
  }

  /** Whether the table has Tinyid's `delta` and `remainder` columns (both). */
  async hasResidueColumns() {
    return this.withConnection(async (conn) => {
      const [rows] = await conn.query(this.sql(this.statements.residue_columns), [this.table])
      return rows.length === 1 && Number(rows[0][0]) === 2
    })
  }

  async allocateRow(tag, step, residue = false) {
    return this.withConnection(async (conn) => {
      let used = step
      if (used === null) {
        // The row's step is read first, so the step used is known exactly even if an
        // operator changes the row between the statements.
        const [rows] = await conn.query(this.sql(this.statements.row_step), [tag])
        if (rows.length === 0) return null
        used = Number(rows[0][0])
      }
      const [res] = await conn.query(this.sql(this.statements.allocate), [used, tag])
      if (res.affectedRows === 0) return null
      const read = residue ? this.statements.allocated_residue : this.statements.allocated
      const [rows] = await conn.query(this.sql(read), [tag])
      const [maxId, rowStep, delta, remainder] = rows[0]
      return {
        maxId: toBigInt(maxId, 'leaf_alloc.max_id'),
        step: used,
        rowStep: Number(rowStep),
        residue: residue ? residueOf(delta, remainder, this.table) : null,
      }
    })
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
    return this.withConnection(async (conn) => {
      const run = async (sql, values) => (await conn.query(this.sql(sql), values))[0]
      await recordGiveBack(this, run, [token, tag, args.lowered.toString(), args.expected.toString()])
      // Both tables' rows (the tag's and the record's) when it lowered max_id.
      return (await run(this.giveBackSql.apply, [token])).affectedRows > 0
    })
  }

  /** Creates the tag's row unless it exists (an existing row is left as it is); resolves to whether it was created. */
  async ensureTag(tag, { maxId = 1, step = 1000, description = null } = {}) {
    checkTag(tag)
    const max = checkMaxId(maxId)
    checkStep(step)
    const [res] = await this.pool.query(this.sql(this.statements.ensure_tag), [tag, max.toString(), step, description])
    return res.affectedRows === 1
  }

  /** Creates Leaf's table if it does not exist. */
  async createTable() {
    await this.pool.query(this.sql(this.statements.create_table))
  }

  /** Ends the pool if the store created it. */
  async close() {
    if (this.ownsPool) await this.pool.end()
  }
}

module.exports = {
  MySQLStore,
  /** A read-only server's refusal (a `StoreError`, code `READ_ONLY_SERVER`); see `_common.js`. */
  get ReadOnlyServerError() {
    return ReadOnlyServerError()
  },
}
