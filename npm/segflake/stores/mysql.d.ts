import type { Allocation, SegmentStore } from '../index'
import type { LeafAllocation, LeafRowsOptions, LeafTagOptions } from './pg'

export type { LeafAllocation, LeafRowsOptions, LeafTagOptions } from './pg'

/** A `mysql2/promise` pool. */
export interface MySQLPoolLike {
  getConnection(): Promise<any>
  query(sql: string | { sql: string; timeout?: number }, values?: unknown[]): Promise<any>
}

/**
 * Leaf's `leaf_alloc` table on MySQL or MariaDB through `mysql2`: `UPDATE leaf_alloc SET
 * max_id = LAST_INSERT_ID(max_id + ?)`, then `SELECT LAST_INSERT_ID(), step` on the same
 * connection. Needs InnoDB with `innodb_flush_log_at_trx_commit = 1` (or 2). When the table
 * has Tinyid's `delta` and `remainder` columns (asked once through `information_schema`,
 * and again after a failed query), each answer also reports the row's residue class.
 */
export declare class MySQLStore implements SegmentStore {
  /**
   * A `mysql2/promise` pool, or a `mysql://USER:PASSWORD@HOST:PORT/DB` URL or the config of
   * a new one that the store owns. TLS as MySQL's own clients name it, in the URL (or the
   * config's `uri`), as in Python: `ssl-mode=REQUIRED` (encrypted, the certificate not
   * checked), `VERIFY_CA` (it must chain to `ssl-ca=PATH`, else Node's certificate
   * authorities), `VERIFY_IDENTITY` (that, and it must name the host connected to, IP
   * addresses included), `DISABLED`; `ssl-ca` alone means `VERIFY_CA`; `PREFERRED` and
   * other `ssl…` parameters are refused. A config's own `ssl` is used as it is. Several
   * servers, `mysql://USER:PASSWORD@H1:P1,H2:P2/DB` (segflake's spelling: mysql2 takes one
   * host): tried in order, the first whose `@@global.read_only` is off (the core's `writable`
   * statement, asked explicitly: a user with SUPER may write to a read-only replica) is kept;
   * after a failed query the store chooses again. A read-only server's refusal is a
   * `ReadOnlyServerError`. A pool you pass is used as it is.
   */
  constructor(poolOrConfig: MySQLPoolLike | string | Record<string, unknown>, options?: LeafRowsOptions)
  readonly table: string
  readonly useRowStep: boolean
  readonly createMissingTags: number | null
  /** Advances the tag's max_id; resolves to `null` when the tag has no row. */
  allocate(tag: string, step: number): Promise<(Allocation & LeafAllocation) | null>
  /**
   * Gives back IDs a closing generator fetched and did not issue (`SegmentGenerator.close()`
   * calls it) on one pooled connection, lowering the row from `expectedMaxId` to `maxId`
   * only if nobody allocated since. Safe to run twice: the give back is recorded under a
   * fresh random token in the marker table `leaf_alloc_give_back` (created on the first give
   * back; a user without `CREATE` on the database needs it made beforehand,
   * `stores/sql/leaf_alloc.mysql.sql`, with `SELECT, INSERT, UPDATE` on it), then applied by
   * that token at most once (the core's `give_back_intent` and `give_back`), so a statement
   * resent after a lost reply never lowers `max_id` again. Resolves to whether the row was
   * lowered (`false` without a query when `maxId` is not below `expectedMaxId`); rejects with
   * a `StoreError` naming the table when it can neither create nor write it (the IDs are
   * then not given back: a gap).
   */
  giveBack(tag: string, expectedMaxId: bigint | number | string, maxId: bigint | number | string): Promise<boolean>
  ensureTag(tag: string, options?: LeafTagOptions): Promise<boolean>
  createTable(): Promise<void>
  close(): Promise<void>
}

/**
 * A call reached a server that takes no writes (a PostgreSQL standby, a MySQL/MariaDB
 * replica with `read_only`): the core's `writable` check refused every host of the URL, or
 * the server refused a write (SQLSTATE 25006; MySQL/MariaDB 1290, 1836). A `StoreError`
 * with the code `READ_ONLY_SERVER` (the registries' refusals too). Nothing was written and
 * nothing is issued from the call; the pool is dropped, so the next call connects to the
 * first writable host of the URL (after a failover, the promoted one).
 */
export declare class ReadOnlyServerError extends Error {
  readonly code: 'READ_ONLY_SERVER'
}
