import type { Allocation, SegmentStore } from '../index'

/** Anything with node-postgres's `query(config)`: a `pg.Pool`, `pg.Client` or `PoolClient`. */
export interface PgQueryable {
  query(
    textOrConfig: string | { text: string; values?: unknown[]; query_timeout?: number },
    values?: unknown[],
  ): Promise<{ rows: any[]; rowCount: number | null }>
}

export interface LeafTagOptions {
  /** The row's starting max_id (Leaf's default 1: the first range starts at 1). */
  maxId?: bigint | number | string
  /** The row's `step` column: the tag's first range and the floor of its dynamic step. */
  step?: number
  description?: string | null
}

/** How a Leaf table's store treats the row's step and tags without a row. */
export interface LeafRowsOptions {
  /** Leaf's table name (default `leaf_alloc`). */
  table?: string
  /**
   * The first allocation of each tag uses its row's `step` column, and answers report it
   * (`tagStep`): the generator starts from it and never goes below it, as Leaf does
   * (default true). False: every allocation uses the generator's step.
   */
  useRowStep?: boolean
  /** Create a tag without a row on first use (`maxId` 1, this step); by default it resolves to `null` (`UnknownTagError`). */
  createMissingTags?: number
  /**
   * The transport deadline in milliseconds (default 3000): every query's timeout, so a query
   * on a dead or blackholed connection fails and the connection is dropped instead of waiting
   * for TCP to give up; a pool the store creates also connects within it (PostgreSQL: and
   * gets it as `statement_timeout`), with TCP keepalive on. Keep it below the generator's
   * `storeTimeoutMs`.
   */
  timeoutMs?: number
}

/**
 * An answer of a Leaf table's store. `delta` and `remainder`: the row's residue class
 * (Tinyid's multi-database mode), when the table has both columns and the row sets them;
 * a `MultiStore` then issues from this database's ranges only the IDs
 * `≡ remainder (mod delta)`, whatever its place in the list.
 */
export type LeafAllocation = { maxId: bigint; step: number; tagStep?: number; delta?: number; remainder?: number }

/**
 * Leaf's `leaf_alloc` table on PostgreSQL through `pg`. One statement per allocation:
 * `UPDATE leaf_alloc SET max_id = max_id + COALESCE($1, step) ... RETURNING max_id, ...,
 * step`. Needs the server's `synchronous_commit = on` (the default). When the table has
 * Tinyid's `delta` and `remainder` columns (asked once through `information_schema`, and
 * again after a failed query), each answer also reports the row's residue class.
 */
export declare class PgStore implements SegmentStore {
  /**
   * A pool/client, or a `postgres://` URL or the config of a new `pg.Pool` that the store
   * owns. TLS as libpq names it, in the URL (or the config's `connectionString`), as in
   * Python: `sslmode=require` (encrypted; the certificate is checked, as `verify-ca`, only
   * when `sslrootcert` is given), `verify-ca` (it must chain to `sslrootcert=PATH`, else
   * Node's certificate authorities), `verify-full` (that, and it must name the host),
   * `disable`; mapped to pg's `ssl` option. `allow` and `prefer` are refused (pg cannot
   * fall back to plaintext). A config's own `ssl` is used as it is. Several servers, libpq's
   * spelling (`postgres://u@h1:5432,h2:5432/app`; `target_session_attrs` may be left out or
   * be `read-write`, another value is refused): pg takes one host, so the store tries them
   * in order and keeps the first whose answer to the core's `writable` statement is yes;
   * after a failed query it chooses again (a promoted standby is found by itself). A read-only
   * server's refusal is a `ReadOnlyServerError`. A pool you pass is used as it is.
   */
  constructor(poolOrConfig: PgQueryable | string | Record<string, unknown>, options?: LeafRowsOptions)
  readonly table: string
  readonly useRowStep: boolean
  readonly createMissingTags: number | null
  /** Advances the tag's max_id; resolves to `null` when the tag has no row. */
  allocate(tag: string, step: number): Promise<(Allocation & LeafAllocation) | null>
  /**
   * Gives back IDs a closing generator fetched and did not issue (`SegmentGenerator.close()`
   * calls it), lowering the row from `expectedMaxId` to `maxId` only if nobody allocated
   * since. Safe to run twice: the give back is recorded under a fresh random token in the
   * marker table `leaf_alloc_give_back` (created on the first give back; a user without
   * `CREATE` on the schema needs it made beforehand, `stores/sql/leaf_alloc.postgres.sql`,
   * with `SELECT, INSERT, UPDATE` on it), then applied by that token at most once (the
   * core's `give_back_intent` and `give_back`), so a statement resent after a lost reply
   * never lowers `max_id` again. Resolves to whether the row was lowered (`false` without a
   * query when `maxId` is not below `expectedMaxId`); rejects with a `StoreError` naming the
   * table when it can neither create nor write it (the IDs are then not given back: a gap).
   */
  giveBack(tag: string, expectedMaxId: bigint | number | string, maxId: bigint | number | string): Promise<boolean>
  /** Creates the tag's row unless it exists; resolves to whether it was created. */
  ensureTag(tag: string, options?: LeafTagOptions): Promise<boolean>
  /** Creates Leaf's table if it does not exist. */
  createTable(): Promise<void>
  /** Ends the pool if the store created it. */
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
