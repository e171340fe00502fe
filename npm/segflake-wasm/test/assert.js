// A small assertion library that runs unchanged in Node and in a browser page.

export class AssertionError extends Error {}
AssertionError.prototype.name = 'AssertionError';

function show(v) {
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'string') return JSON.stringify(v);
  try {
    return JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? `${x}n` : x));
  } catch {
    return String(v);
  }
}

export function ok(value, message = 'expected a truthy value') {
  if (!value) throw new AssertionError(message);
}

export function equal(actual, expected, message = '') {
  if (!Object.is(actual, expected)) {
    throw new AssertionError(`${message ? `${message}: ` : ''}got ${show(actual)}, expected ${show(expected)}`);
  }
}

export function notEqual(actual, unexpected, message = '') {
  if (Object.is(actual, unexpected)) {
    throw new AssertionError(`${message ? `${message}: ` : ''}got ${show(actual)}, expected something else`);
  }
}

function deepEq(a, b) {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (ArrayBuffer.isView(a) || ArrayBuffer.isView(b)) {
    if (!ArrayBuffer.isView(a) || !ArrayBuffer.isView(b) || a.constructor !== b.constructor) return false;
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
    return true;
  }
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  if (ka.length !== kb.length || ka.some((k, i) => k !== kb[i])) return false;
  return ka.every((k) => deepEq(a[k], b[k]));
}

export function deepEqual(actual, expected, message = '') {
  if (!deepEq(actual, expected)) {
    throw new AssertionError(`${message ? `${message}: ` : ''}got ${show(actual)}, expected ${show(expected)}`);
  }
}

/** Calls `fn` and returns what it threw; fails if it returned. */
export function caught(fn, message = '') {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new AssertionError(`${message ? `${message}: ` : ''}expected an exception, nothing was thrown`);
}

/** Like `caught` for an async function. */
export async function caughtAsync(fn, message = '') {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  throw new AssertionError(`${message ? `${message}: ` : ''}expected a rejection, the promise resolved`);
}

/**
 * Asserts that `e` is the segflake error of `code` from `lib`: an instance of `Error`, of
 * `lib.SegflakeError` and of the class named by the core for `code`, with that `code`
 * and `name`, whose message contains every string of `contains`.
 */
export function isSegflakeError(lib, e, code, contains = [], label = '') {
  const at = label ? `${label}: ` : '';
  const kind = lib.errorKinds().find((k) => k.code === code);
  ok(kind, `${at}unknown error code ${code}`);
  ok(e instanceof Error, `${at}${show(String(e))} is not an Error`);
  ok(e instanceof lib.SegflakeError, `${at}${e.name}: ${e.message} is not a SegflakeError`);
  ok(e instanceof lib[kind.className], `${at}${e.name}: ${e.message} is not a ${kind.className}`);
  equal(e.code, code, `${at}code of "${e.message}"`);
  equal(e.name, kind.className, `${at}name`);
  for (const part of [].concat(contains)) {
    if (part === undefined || part === null) continue;
    ok(e.message.includes(part), `${at}message ${show(e.message)} lacks ${show(part)}`);
  }
  return e;
}

/** `fn` throws the segflake error of `code` (see `isSegflakeError`). */
export function throwsCode(lib, fn, code, contains = [], label = '') {
  return isSegflakeError(lib, caught(fn, label || code), code, contains, label);
}
