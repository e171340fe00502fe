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
  /** A `mysql2/promise` pool, or the config of a new one that the store owns. */
  constructor(poolOrConfig: MySQLPoolLike | Record<string, unknown>, options?: LeafRowsOptions)
  readonly table: string
  readonly useRowStep: boolean
  readonly createMissingTags: number | null
  /** Advances the tag's max_id; resolves to `null` when the tag has no row. */
  allocate(tag: string, step: number): Promise<(Allocation & LeafAllocation) | null>
  ensureTag(tag: string, options?: LeafTagOptions): Promise<boolean>
  createTable(): Promise<void>
  close(): Promise<void>
}
