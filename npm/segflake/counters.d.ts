import type { ScriptCounter } from './index'

/** The core's Redis script (KEYS: the second's key; ARGV: second, counterMaxBehindMs, counterMaxAheadMs, graceMs). */
export declare function script(): string

/**
 * Per-second serial counters in Redis (ioredis), for `new SerialGenerator({ counter })`:
 * keys are `${prefix}:serial:<yyMMddHHmmss><worker digits>`. Every generator sharing a
 * prefix must use the same digits, `utcOffsetMinutes` and `counterMaxBehindMs`.
 */
export declare class RedisSerialCounter implements ScriptCounter {
  /** An ioredis client, or a `redis://` URL for a client the counter owns. */
  constructor(clientOrUrl: object | string, options?: { prefix?: string; timeoutMs?: number })
  readonly prefix: string
  runSerialScript(key: string, args: number[]): Promise<unknown>
  /** Quits the client if the counter created it. */
  close(): Promise<void>
}
