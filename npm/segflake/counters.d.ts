import type { ScriptCounter } from './index'

/** The core's Redis script (KEYS: the second's key; ARGV: second, counterMaxBehindMs, counterMaxAheadMs, graceMs). */
export declare function script(): string

/**
 * Per-second serial counters in Redis (ioredis), for `new SerialGenerator({ counter })`:
 * keys are `${prefix}:serial:<yyMMddHHmmss><worker digits>`. Every generator sharing a
 * prefix must use the same digits, `utcOffsetMinutes` and `counterMaxBehindMs`. On a
 * replicated server a count is used only once the replicas the core's rule asks for
 * acknowledged it (as `RedisStore`'s allocations; `replicas=N` in the URL); too few reject
 * with a `StoreError` carrying the core's message.
 */
export declare class RedisSerialCounter implements ScriptCounter {
  /**
   * An ioredis client (`Redis` or `Redis.Cluster`), or a Redis URL for a client the counter
   * owns: `redis://`, `redis+sentinel://HOSTS/SERVICE[/DB]` or `redis+cluster://HOSTS`
   * (`rediss...` for TLS; `?replicas=N`), as `RedisStore` takes them.
   */
  constructor(clientOrUrl: object | string, options?: { prefix?: string; timeoutMs?: number })
  readonly prefix: string
  runSerialScript(key: string, args: number[]): Promise<unknown>
  /** Quits the client if the counter created it. */
  close(): Promise<void>
}
