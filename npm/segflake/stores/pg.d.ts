import type { Allocation, SegmentStore } from '../index'

/** Anything with node-postgres's `query(text, values)`: a `pg.Pool`, `pg.Client` or `PoolClient`. */
export interface PgQueryable {
  query(text: string, values?: unknown[]): Promise<{ rows: any[]; rowCount: number | null }>
}

export interface LeafTagOptions {
  /** The row's starting max_id (Leaf's default 1: the first range starts at 1). */
  maxId?: bigint | number | string
  /** The row's `step` column (Leaf's own step; segflake requests its own step). */
  step?: number
  description?: string | null
}

/**
 * Leaf's `leaf_alloc` table on PostgreSQL through `pg`. One statement per allocation:
 * `UPDATE leaf_alloc SET max_id = max_id + $1 ... RETURNING max_id`. Needs the server's
 * `synchronous_commit = on` (the default).
 */
export declare class PgStore implements SegmentStore {
  /** A pool/client, or the config of a new `pg.Pool` that the store owns. */
  constructor(poolOrConfig: PgQueryable | Record<string, unknown>, options?: { table?: string })
  readonly table: string
  /** Advances the tag's max_id by `step`; rejects with `StoreError` when the tag has no row. */
  allocate(tag: string, step: number): Promise<Allocation & { maxId: bigint; step: number }>
  /** Creates the tag's row unless it exists; resolves to whether it was created. */
  ensureTag(tag: string, options?: LeafTagOptions): Promise<boolean>
  /** Creates Leaf's table if it does not exist. */
  createTable(): Promise<void>
  /** Ends the pool if the store created it. */
  close(): Promise<void>
}
