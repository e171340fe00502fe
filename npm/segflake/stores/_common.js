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

function tagNotFound(message) {
  const { StoreError } = segflake()
  const err = new StoreError(message)
  err.tagNotFound = true
  return err
}

module.exports = { checkTable, checkTag, checkStep, checkMaxId, toBigInt, tagNotFound, invalid }
