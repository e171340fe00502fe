import type { Allocation, SegmentStore } from '../index'

/**
 * One counter per tag in Redis (`INCRBY` on `prefix + tag`) through `ioredis`. Needs
 * `appendonly yes` with `appendfsync always` (or `everysec`: process crashes only).
 * Tinyid's multi-database mode: the key `segflake:leaf_alloc_residue` (`DELTA:REMAINDER`,
 * read at first use and after each reconnection) states the server's residue class, which
 * every answer then reports; a `MultiStore` issues from its ranges only the IDs
 * `≡ REMAINDER (mod DELTA)`, whatever its place in the list. A malformed value fails the
 * allocation with a `StoreError` naming the key.
 *
 * Replicated servers: an allocation and a give back count only once the replicas the core's
 * rule asks for acknowledged them (`WAIT` on the write's own connection, at most half of
 * `timeoutMs`): the URL's `replicas=N` (0: no wait), else the server's
 * every replica the primary had connected at first use (`ROLE`; a client passed in is
 * asked the same), or the server's `min-replicas-to-write` if more. Too few acknowledgements reject with a
 * `StoreError` carrying the core's message, and nothing is issued from that range.
 */
export declare class RedisStore implements SegmentStore {
  /**
   * An ioredis client (`Redis` or `Redis.Cluster`), or a Redis URL for a new one that the
   * store owns, with `timeoutMs` (default 3000) as its connect, command and socket timeouts
   * (a command on a dead or blackholed connection fails, and the connection is dropped and
   * made again):
   * - `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`: one server;
   * - `redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/SERVICE[/DB]`: the
   *   primary the sentinels name for SERVICE, followed through failovers (sentinel port
   *   default 26379; the credentials are the data servers');
   * - `redis+cluster://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]`: a Cluster's seed
   *   nodes (MOVED and ASK followed);
   * with `?replicas=N` (see above). `rediss...` is TLS: the server's certificate must chain
   * to `caFile` (or the URL's `ca=PATH`; else Node's certificate authorities) and name the
   * host connected to. A CA file with a plaintext URL is refused; TLS never falls back to
   * plaintext. Any other URL parameter is refused (`InvalidArgumentError`).
   */
  constructor(
    clientOrUrl: object | string,
    options?: {
      prefix?: string
      createMissingTags?: boolean
      timeoutMs?: number
      /** A PEM file of the certificate authorities for a `rediss://` URL (Python: `ca_file`). */
      caFile?: string
    },
  )
  readonly prefix: string
  /** Create a tag's key (maxId 1) on first use; by default a missing key resolves to `null` (`UnknownTagError`). */
  readonly createMissingTags: boolean
  /** The Redis key holding `tag`'s max_id. */
  key(tag: string): string
  /**
   * Advances the tag's max_id by `step` (Redis keeps no step per tag), with the server's
   * residue class when `segflake:leaf_alloc_residue` is set; `null` when the tag has no key.
   */
  allocate(
    tag: string,
    step: number,
  ): Promise<(Allocation & { maxId: bigint; step: number; delta?: number; remainder?: number }) | null>
  /**
   * Gives back IDs a closing generator fetched and did not issue (`SegmentGenerator.close()`
   * calls it): the core's single-key script sets the tag's key from `expectedMaxId` down to
   * `maxId` only if it still holds `expectedMaxId`. Resolves to whether it did (`false`
   * without a command when `maxId` is not below `expectedMaxId`).
   */
  giveBack(tag: string, expectedMaxId: bigint | number | string, maxId: bigint | number | string): Promise<boolean>
  /** Creates the tag's key (`SET NX`, default maxId 1); resolves to whether it was created. */
  ensureTag(tag: string, options?: { maxId?: bigint | number | string }): Promise<boolean>
  /** Quits the client if the store created it. */
  close(): Promise<void>
}
