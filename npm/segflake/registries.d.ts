import type { Registry } from './index'

/** Worker-ID leases in Redis through `ioredis` (needs `appendonly yes`). */
export declare class RedisRegistry implements Registry {
  /** An ioredis client, or a `redis://` URL for a new one that the registry owns. */
  constructor(clientOrUrl: object | string, options?: { prefix?: string })
  claim(args: { workerId: number; owner: string; ttlMs: number }): Promise<number | null>
  renew(args: { workerId: number; owner: string; ttlMs: number; markMs: number; reportedMs: number }): Promise<number | null>
  release(args: { workerId: number; owner: string; markMs: number }): Promise<boolean>
  peers(): Promise<Array<[number, number, number]>>
  close(): Promise<void>
}

/** Worker-ID leases in PostgreSQL through `pg` (the `segflake_worker_lease` table). */
export declare class PgRegistry implements Registry {
  /** A `pg.Pool`, or a `postgres://` URL for a new pool that the registry owns. */
  constructor(poolOrUrl: object | string, options?: { createSchema?: boolean })
  claim(args: { workerId: number; owner: string; ttlMs: number }): Promise<number | null>
  renew(args: { workerId: number; owner: string; ttlMs: number; markMs: number; reportedMs: number }): Promise<number | null>
  release(args: { workerId: number; owner: string; markMs: number }): Promise<boolean>
  peers(): Promise<Array<[number, number, number]>>
  /** Creates the tables if missing (also done before the first call unless `createSchema: false`). */
  ensureSchema(): Promise<void>
  close(): Promise<void>
}

/** Worker-ID leases in MySQL or MariaDB through `mysql2/promise`. */
export declare class MysqlRegistry implements Registry {
  /** A mysql2 pool created with `flags: ['FOUND_ROWS']`, or a `mysql://` URL for a new one. */
  constructor(poolOrUrl: object | string, options?: { createSchema?: boolean })
  claim(args: { workerId: number; owner: string; ttlMs: number }): Promise<number | null>
  renew(args: { workerId: number; owner: string; ttlMs: number; markMs: number; reportedMs: number }): Promise<number | null>
  release(args: { workerId: number; owner: string; markMs: number }): Promise<boolean>
  peers(): Promise<Array<[number, number, number]>>
  /** Creates the tables if missing (also done before the first call unless `createSchema: false`). */
  ensureSchema(): Promise<void>
  close(): Promise<void>
}

/** A registry for a `redis://`, `postgres://` or `mysql://` URL. */
export declare function registryFromUrl(url: string): RedisRegistry | PgRegistry | MysqlRegistry

/** The core's scripts or statements for `registry`, by call name (SQL with `?` placeholders). */
export declare function statements(registry: 'redis' | 'postgres' | 'mysql'): Record<string, string>
