'use strict'
// Shared checks of the database stores. The error classes come from the segflake package
// itself, so a store's failures are `SegflakeError`s with a stable `code`.

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/
const MAX_STEP = 2 ** 31 - 1 // Leaf's `step` column is an INT
const MAX_ID = (1n << 63n) - 1n

function segflake() {
  return require('../index.js')
}

function invalid(message) {
  const { InvalidArgumentError } = segflake()
  return new InvalidArgumentError(message)
}

function checkTable(table) {
  if (typeof table !== 'string' || !IDENTIFIER.test(table)) {
    throw invalid(
      `invalid table name ${JSON.stringify(table)}: expected an unquoted SQL identifier ` +
        '(letters, digits and underscores, not starting with a digit, at most 63 characters)',
    )
  }
  return table
}

function checkTag(tag) {
  if (typeof tag !== 'string' || tag.length === 0 || tag.length > 128) {
    throw invalid(
      `invalid tag ${JSON.stringify(tag)}: expected a non-empty string of at most 128 characters ` +
        "(Leaf's biz_tag is a VARCHAR(128))",
    )
  }
  return tag
}

function checkStep(step) {
  if (typeof step === 'bigint') step = Number(step)
  if (!Number.isInteger(step) || step < 1 || step > MAX_STEP) {
    throw invalid(`invalid step ${String(step)}: expected an integer in 1..=${MAX_STEP}`)
  }
  return step
}

function checkMaxId(maxId) {
  let v
  try {
    v = BigInt(maxId)
  } catch {
    v = -1n
  }
  if ((typeof maxId === 'number' && !Number.isSafeInteger(maxId)) || v < 0n || v > MAX_ID) {
    throw invalid(`invalid maxId ${String(maxId)}: expected an integer in 0..=2^63-1`)
  }
  return v
}

/** A database value (string, number or bigint) as a bigint, refusing lossy numbers. */
function toBigInt(value, what) {
  if (typeof value === 'bigint') return value
  if (typeof value === 'string' && /^[0-9]+$/.test(value)) return BigInt(value)
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value)
  const { StoreError } = segflake()
  throw new StoreError(`${what}: unexpected value ${String(value)} from the database`)
}

/** A database value as a JS number, refusing negative, fractional and unsafe values. */
function toCount(value, what) {
  const v = toBigInt(value, what)
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
    const { StoreError } = segflake()
    throw new StoreError(`${what}: unexpected value ${String(value)} from the database`)
  }
  return Number(v)
}

/**
 * A row's residue class `{ delta, remainder }` (Tinyid's columns), or `null` unless both
 * are set (non-NULL); `table` names the columns in errors.
 */
function residueOf(delta, remainder, table) {
  if (delta === null || delta === undefined || remainder === null || remainder === undefined) return null
  return { delta: toCount(delta, `${table}.delta`), remainder: toCount(remainder, `${table}.remainder`) }
}

/**
 * Leaf's rules for a tag's row, shared by the SQL stores:
 * - `useRowStep` (default true): the first allocation of each tag uses its row's `step`
 *   column, and every answer reports that step (`tagStep`), so the generator starts from
 *   it and never goes below it (Leaf's dynamic step); false: every allocation uses the
 *   step the generator asks for.
 * - `createMissingTags`: a step to create a tag without a row with (`maxId` 1) on first
 *   use; by default such a tag resolves to `null`, which callers see as `UnknownTagError`.
 * - Tinyid's multi-database mode: when the table has both `delta` and `remainder` columns,
 *   every answer also reports the row's residue class (`delta`, `remainder`, when both are
 *   set), so a `MultiStore` issues from this database's ranges only the IDs `≡ remainder
 *   (mod delta)`, whatever its place in the list. Whether the table has them is asked once,
 *   and again after a failed allocation (the pool then opens a new connection, which may
 *   reach another server).
 * A subclass implements `hasResidueColumns()` (resolving to whether the table has both
 * columns), `allocateRow(tag, step | null, residue)` (null: the row's step; `residue`:
 * read the row's class too), resolving to `{ maxId, step, rowStep, residue }` (`residue`:
 * `residueOf(...)` of the row) or `null` when the tag has no row, and `ensureTag`.
 */
class LeafRows {
  constructor(options = {}) {
    this.useRowStep = options.useRowStep ?? true
    if (typeof this.useRowStep !== 'boolean') {
      throw invalid(`invalid useRowStep ${String(this.useRowStep)}: expected a boolean`)
    }
    this.createMissingTags = options.createMissingTags == null ? null : checkStep(options.createMissingTags)
    this.started = new Set()
    this.residueColumns = null // a promise of whether the table has `delta` and `remainder`, once asked
    this.allocate = this.allocate.bind(this)
  }

  /** Whether the table has Tinyid's `delta` and `remainder` columns: asked once, and again after a failure. */
  askResidueColumns() {
    if (this.residueColumns === null) {
      const asked = this.hasResidueColumns()
      this.residueColumns = asked
      asked.catch(() => {
        if (this.residueColumns === asked) this.residueColumns = null
      })
    }
    return this.residueColumns
  }

  /**
   * Advances the tag's max_id; resolves to `{ maxId, step, tagStep }` (no `tagStep` with
   * `useRowStep: false`), with the row's `delta` and `remainder` when the table has those
   * columns and the row sets both, or `null` when the tag has no row.
   */
  async allocate(tag, step) {
    checkTag(tag)
    checkStep(step)
    const wanted = this.useRowStep && !this.started.has(tag) ? null : step
    let row
    try {
      const residue = await this.askResidueColumns()
      row = await this.allocateRow(tag, wanted, residue)
      if (row === null && this.createMissingTags !== null) {
        await this.ensureTag(tag, { step: this.createMissingTags, description: 'created by segflake' })
        row = await this.allocateRow(tag, wanted, residue)
      }
    } catch (err) {
      // The failed connection is replaced: the new one may reach another server.
      this.residueColumns = null
      throw err
    }
    if (row === null) return null
    this.started.add(tag)
    const answer = { maxId: row.maxId, step: row.step }
    if (this.useRowStep) answer.tagStep = row.rowStep
    if (row.residue) {
      answer.delta = row.residue.delta
      answer.remainder = row.residue.remainder
    }
    return answer
  }
}

/** The default transport deadline of every adapter here: a request (or a connection
 * attempt) on a dead or blackholed connection fails after this many milliseconds. */
const DEFAULT_TIMEOUT_MS = 3000

/** An adapter's `timeoutMs` option: its default, or an integer in 1..=600000. */
function checkTimeout(timeoutMs) {
  if (timeoutMs === undefined || timeoutMs === null) return DEFAULT_TIMEOUT_MS
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 600000) {
    throw invalid(`invalid timeoutMs ${String(timeoutMs)}: expected an integer in 1..=600000 (milliseconds)`)
  }
  return timeoutMs
}

/** TCP keepalive on idle pooled connections starts after this long (probes then follow the
 * system's settings); requests are bounded by the adapters' own deadlines. */
const KEEPALIVE_MS = 10000

/**
 * `clientOrUrl` as an ioredis client: the client itself, or a new one for a `redis://` URL
 * (then `owns` is true: its user quits it). A new client fails a command after one
 * reconnection attempt instead of queueing it for a whole outage (the generators retry on
 * their own), and has transport deadlines of `timeoutMs`: connecting (`connectTimeout`),
 * each command (`commandTimeout`), and a socket that stops answering while commands are
 * pending is dropped and reconnected (`socketTimeout`); TCP keepalive is on.
 */
function ioredisClient(clientOrUrl, timeoutMs = DEFAULT_TIMEOUT_MS) {
  if (clientOrUrl && typeof clientOrUrl === 'object' && typeof clientOrUrl.defineCommand === 'function') {
    return { client: clientOrUrl, owns: false }
  }
  const Redis = require('ioredis')
  const client = new Redis(clientOrUrl, {
    maxRetriesPerRequest: 1,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    keepAlive: KEEPALIVE_MS,
    retryStrategy: (times) => Math.min(times * 50, 500),
  })
  client.on('error', () => {})
  return { client, owns: true }
}

module.exports = {
  checkTable,
  checkTag,
  checkStep,
  checkMaxId,
  toBigInt,
  residueOf,
  invalid,
  LeafRows,
  ioredisClient,
  checkTimeout,
  DEFAULT_TIMEOUT_MS,
  KEEPALIVE_MS,
}
