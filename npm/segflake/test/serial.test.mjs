// Date-prefixed serials: local counter, async shared counter, restarts, errors.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { SerialGenerator } from 'segflake'
import { assertThrowsCode, assertRejectsCode } from './helpers.mjs'

function yyMMddHHmmss(ms, offsetMinutes = 0) {
  const d = new Date(ms + offsetMinutes * 60_000)
  const p = (n) => String(n).padStart(2, '0')
  return `${p(d.getUTCFullYear() % 100)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}`
}

test('local serials read as the date and count up', () => {
  const gen = new SerialGenerator({ sequenceDigits: 4, workerDigits: 1, workerId: 7 })
  const before = Date.now()
  const a = gen.next()
  const b = BigInt(gen.nextString())
  assert.ok(b > a)
  const text = String(a)
  assert.equal(text.length, 12 + 1 + 4)
  const prefixes = new Set([yyMMddHHmmss(before), yyMMddHHmmss(Date.now())])
  assert.ok(prefixes.has(text.slice(0, 12)), `${text} starts with the current UTC second`)
  assert.equal(text.slice(12, 13), '7')
  const d = gen.decode(a)
  assert.equal(d.workerId, 7)
  assert.ok(d.sequence >= 1)
  assert.equal(gen.last, b)
  assert.equal(gen.format(d.unixSeconds, 42), BigInt(`${text.slice(0, 12)}70042`))
  assert.equal(gen.datePrefix(d.unixSeconds), text.slice(0, 12))
  // A fixed UTC offset prints local time.
  const local = new SerialGenerator({ utcOffsetMinutes: 540 })
  assert.equal(local.datePrefix(1_735_689_600), '250101090000')
})

test('a second runs out of sequence numbers: SerialExhaustedError', () => {
  const gen = new SerialGenerator({ sequenceDigits: 1 })
  const issued = []
  let err
  for (let i = 0; i < 30 && !err; i++) {
    try {
      issued.push(gen.next())
    } catch (e) {
      err = e
    }
  }
  // 9 per second; unless the second turned over, the 10th call fails.
  if (err)
    assertThrowsCode(
      () => {
        throw err
      },
      'SERIAL_EXHAUSTED',
      'at most 10 numbers per second',
    )
  for (let i = 1; i < issued.length; i++) assert.ok(issued[i] > issued[i - 1])
})

test('a restart continues above the persisted last serial', () => {
  const first = new SerialGenerator({ sequenceDigits: 4 })
  first.next()
  const persisted = first.last
  // Pretend the previous run issued far into the future (clock stepped back since).
  const future = first.format(Math.floor(Date.now() / 1000) + 3600, 5)
  const restarted = new SerialGenerator({ sequenceDigits: 4, last: String(future) })
  const n = restarted.next()
  assert.equal(n, future + 1n)
  assert.ok(n > persisted)
  assertThrowsCode(() => new SerialGenerator({ last: 12345n }), 'INVALID_ARGUMENT', 'not a serial of this shape')
})

test('serials from an async shared counter', async () => {
  const counts = new Map()
  const keys = []
  const counter = async (key, unixSeconds) => {
    keys.push(key)
    assert.equal(typeof unixSeconds, 'number')
    await new Promise((r) => setTimeout(r, 1))
    const n = (counts.get(key) ?? 0) + 1
    counts.set(key, n)
    return n
  }
  const a = new SerialGenerator({ workerDigits: 1, workerId: 1, counter })
  const b = new SerialGenerator({ workerDigits: 1, workerId: 2, counter })
  const all = []
  for (let i = 0; i < 50; i++) all.push(await a.nextFromCounter(), await b.nextFromCounter())
  assert.equal(new Set(all).size, 100)
  assert.ok(keys.every((k) => /^\d{12}$/.test(k)))
})

test('counter failures are StoreError with the cause; a counter that never advances is refused', async () => {
  const boom = new Error('redis down')
  const failing = new SerialGenerator({
    counter: async () => {
      throw boom
    },
  })
  const e = await assertRejectsCode(() => failing.nextFromCounter(), 'STORE_ERROR', 'redis down')
  assert.equal(e.cause, boom)
  const garbage = new SerialGenerator({ counter: async () => 'seven' })
  await assertRejectsCode(() => garbage.nextFromCounter(), 'STORE_ERROR', 'the string "seven"')
  const stuck = new SerialGenerator({ counter: async () => 1 })
  await stuck.nextFromCounter()
  await assertRejectsCode(() => stuck.nextFromCounter(), 'STORE_ERROR', 'not above the last serial')
  const hanging = new SerialGenerator({ counter: () => new Promise(() => {}), counterTimeoutMs: 100 })
  await assertRejectsCode(() => hanging.nextFromCounter(), 'STORE_ERROR', 'counterTimeoutMs')
  const tooBig = new SerialGenerator({ sequenceDigits: 2, counter: async () => 100 })
  await assertRejectsCode(() => tooBig.nextFromCounter(), 'SERIAL_EXHAUSTED', '2 sequence digits')
  await assertRejectsCode(() => new SerialGenerator().nextFromCounter(), 'INVALID_ARGUMENT', 'has none')
})

test('serial options are validated', () => {
  const bad = [
    [{ sequenceDigits: 0 }, 'invalid sequenceDigits: got 0; allowed integers 1..=7'],
    [{ sequenceDigits: 8 }, 'invalid sequenceDigits: got 8; allowed integers 1..=7'],
    [{ workerDigits: 4, sequenceDigits: 4 }, 'allowed at most 7'],
    [{ workerDigits: 1, workerId: 10 }, 'allowed 0..=9'],
    [{ utcOffsetMinutes: 2000 }, '-1080..=1080'],
    [{ utcOffsetMinutes: '60' }, 'invalid utcOffsetMinutes: got the string "60"; allowed integers -1080..=1080'],
    [{ counter: 5 }, 'expected an async function'],
    [{ counterTimeoutMs: 0 }, 'counterTimeoutMs'],
    [{ workerID: 1 }, 'unknown option "workerID"'],
    [{ last: -1 }, 'invalid last: got -1'],
    [5, 'invalid options: got 5; expected an options object'],
  ]
  for (const [options, contains] of bad) {
    assertThrowsCode(() => new SerialGenerator(options), 'INVALID_ARGUMENT', contains, JSON.stringify(options))
  }
  const gen = new SerialGenerator()
  assertThrowsCode(() => gen.decode('12'), 'PARSE_ERROR', 'yyMMddHHmmss')
  assertThrowsCode(() => gen.format(946684799, 1), 'INVALID_ARGUMENT', '2000 to 2099')
  assertThrowsCode(() => gen.format(Math.floor(Date.now() / 1000), 10_000), 'SERIAL_EXHAUSTED')
})

// The script-counter protocol without a server: answers as the core's Redis script would,
// with the window check on the server clock it is given.
function scriptCounter(serverMs) {
  const counts = new Map()
  const calls = []
  return {
    calls,
    counts,
    async runSerialScript(key, args) {
      calls.push([key, args])
      const [second, behind, ahead] = args
      const start = second * 1000
      if (serverMs() > start + 1000 + behind || start > serverMs() + ahead) return [0, 0, serverMs()]
      counts.set(key, (counts.get(key) ?? 0) + 1)
      return [1, counts.get(key), serverMs()]
    },
  }
}

test('a script counter gets the core key and arguments, and its refusal is ClockSkewError', async () => {
  const counter = scriptCounter(() => Date.now())
  const gen = new SerialGenerator({ counter, workerDigits: 1, workerId: 3, counterMaxBehindMs: 5000 })
  const a = await gen.nextFromCounter()
  const b = await gen.nextFromCounter()
  assert.ok(b > a)
  const [key, args] = counter.calls[0]
  const second = gen.decode(a).unixSeconds
  assert.equal(key, `serial:${yyMMddHHmmss(second * 1000)}3`)
  assert.deepEqual(args, [second, 5000, 60000, 1000])
  // The counter's clock is 7 s ahead of this host's: this host is 6 s behind its window.
  const behind = new SerialGenerator({ counter: scriptCounter(() => Date.now() + 7000), counterMaxBehindMs: 5000 })
  const e = await assertRejectsCode(() => behind.nextFromCounter(), 'CLOCK_SKEW', 'counter_max_behind_ms = 5000')
  assert.equal(e.constructor.name, 'ClockSkewError')
  assert.equal(behind.last, 0n)
  const garbage = new SerialGenerator({ counter: { runSerialScript: async () => [2, 1, 5] } })
  await assertRejectsCode(() => garbage.nextFromCounter(), 'STORE_ERROR', '[2, 1, 5]')
})

test('RedisSerialCounter sends the core script under its prefix', async () => {
  const { RedisSerialCounter, script } = await import('segflake/counters')
  const sent = []
  const client = {
    defineCommand(name, { numberOfKeys, lua }) {
      this[name] = async (...a) => {
        sent.push({ name, numberOfKeys, lua, a })
        return [1, 7, Date.now()]
      }
    },
    // A primary without replicas: the count is not followed by WAIT.
    async call(command) {
      return command === 'ROLE' ? ['master', 0, []] : ['min-replicas-to-write', '0']
    },
  }
  const gen = new SerialGenerator({ counter: new RedisSerialCounter(client, { prefix: 'orders' }) })
  const serial = await gen.nextFromCounter()
  assert.equal(serial % 10000n, 7n)
  const [{ numberOfKeys, lua, a }] = sent
  assert.equal(numberOfKeys, 1)
  assert.equal(lua, script())
  assert.match(lua, /PEXPIREAT/)
  assert.equal(a[0], `orders:serial:${String(serial / 10000n)}`)
  assert.equal(a.length, 5)
})

test('a restart given the persisted last never issues at or below it', async () => {
  const counter = scriptCounter(() => Date.now())
  const gen = new SerialGenerator({ counter })
  for (let i = 0; i < 5; i++) await gen.nextFromCounter()
  const persisted = gen.last
  counter.counts.clear() // the counter lost its keys
  const again = new SerialGenerator({ counter, last: persisted })
  for (let i = 0; i < 5; i++) assert.ok((await again.nextFromCounter()) > persisted)
  assert.ok(new SerialGenerator({ last: persisted.toString() }).next() > persisted)
})
