import type { Allocation, SegmentStore } from '../index'

/**
 * One counter per tag in Redis (`INCRBY` on `prefix + tag`) through `ioredis`. Needs
 * `appendonly yes` with `appendfsync always` (or `everysec`: process crashes only).
 */
export declare class RedisStore implements SegmentStore {
  /** An ioredis client, or a `redis://` URL for a new one that the store owns. */
  constructor(clientOrUrl: object | string, options?: { prefix?: string })
  readonly prefix: string
  /** The Redis key holding `tag`'s max_id. */
  key(tag: string): string
  allocate(tag: string, step: number): Promise<Allocation & { maxId: bigint; step: number }>
  /** Creates the tag's key (`SET NX`, default maxId 1); resolves to whether it was created. */
  ensureTag(tag: string, options?: { maxId?: bigint | number | string }): Promise<boolean>
  close(): Promise<void>
}
