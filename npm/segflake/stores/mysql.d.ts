import type { Allocation, SegmentStore } from '../index'
import type { LeafTagOptions } from './pg'

export type { LeafTagOptions } from './pg'

/** A `mysql2/promise` pool. */
export interface MySQLPoolLike {
  getConnection(): Promise<any>
  query(sql: string, values?: unknown[]): Promise<any>
}

/**
 * Leaf's `leaf_alloc` table on MySQL or MariaDB through `mysql2`: `UPDATE leaf_alloc SET
 * max_id = LAST_INSERT_ID(max_id + ?)`, then `SELECT LAST_INSERT_ID()` on the same
 * connection. Needs InnoDB with `innodb_flush_log_at_trx_commit = 1` (or 2).
 */
export declare class MySQLStore implements SegmentStore {
  /** A `mysql2/promise` pool, or the config of a new one that the store owns. */
  constructor(poolOrConfig: MySQLPoolLike | Record<string, unknown>, options?: { table?: string })
  readonly table: string
  allocate(tag: string, step: number): Promise<Allocation & { maxId: bigint; step: number }>
  ensureTag(tag: string, options?: LeafTagOptions): Promise<boolean>
  createTable(): Promise<void>
  close(): Promise<void>
}
