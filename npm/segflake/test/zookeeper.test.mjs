// tests/vectors/zookeeper.json against ZooKeeperRegistry itself: every case runs its calls
// on one registry over a client that replays the script as node-zookeeper-client answers
// (results, stats with 8-byte times and owners, errors with the client's codes). Each
// request the registry makes must be the case's next `exchange[].op`; `Date.now` reads the
// call's `now_ms`. Runs on the backend loaded (native or wasm).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { loadVectors } from './helpers.mjs'

const require = createRequire(import.meta.url)
const { ZooKeeperRegistry } = require('segflake/registries')

/** node-zookeeper-client's error codes of the errors the protocol tells apart. */
const CODES = { no_node: -101, node_exists: -110, bad_version: -103 }
/** node-zookeeper-client's CreateMode values. */
const MODES = { 0: 'persistent', 1: 'ephemeral', 2: 'persistent_sequential' }

/** An error as node-zookeeper-client makes it; any other text is a SYSTEM_ERROR saying it. */
function zkError(name) {
  const code = CODES[name] ?? -1
  const e = new Error(code === -1 ? name : `Exception: ${name.toUpperCase()}[${code}]`)
  e.code = code
  e.getCode = () => code
  return e
}

const i64 = (n) => {
  const b = Buffer.alloc(8)
  b.writeBigInt64BE(BigInt(n ?? 0))
  return b
}

/** A stat as node-zookeeper-client gives it. */
const zkStat = (s) => ({
  czxid: i64(0),
  mzxid: i64(0),
  ctime: i64(s.ctime),
  mtime: i64(s.mtime),
  version: s.version ?? 0,
  cversion: 0,
  aversion: 0,
  ephemeralOwner: i64(s.ephemeral_owner),
  dataLength: 0,
  numChildren: 0,
  pzxid: i64(0),
})

/** A node-zookeeper-client `Client` that answers `script` (one call's exchange) in order. */
class ReplayClient {
  constructor() {
    this.script = []
    this.session = 0
    this.label = ''
  }

  getState() {
    return { name: 'SYNC_CONNECTED', code: 3 }
  }

  getSessionId() {
    return i64(this.session)
  }

  /** The script's next reply, once `request` is checked against its next request. */
  next(request) {
    assert.ok(this.script.length > 0, `${this.label}: unexpected request ${JSON.stringify(request)}`)
    const { op, reply, i } = this.script.shift()
    assert.deepEqual(request, op, `${this.label}: request ${i}`)
    return reply
  }

  /** Answers `request` through `callback`: `answer(reply)` gives the callback's results for
   * a reply that is not an error. */
  reply(request, callback, answer) {
    const reply = this.next(request)
    setImmediate(() => {
      if (reply !== null && reply.error !== undefined) callback(zkError(reply.error))
      else callback(null, ...answer(reply))
    })
  }

  mkdirp(path, callback) {
    this.reply({ op: 'mkdir', path }, callback, () => [path])
  }

  create(path, data, mode, callback) {
    const request = { op: 'create', path, data: data.toString(), mode: MODES[mode] }
    this.reply(request, callback, (r) => [r.created])
  }

  exists(path, callback) {
    this.reply({ op: 'exists', path }, callback, (r) => [r.stat === null ? null : zkStat(r.stat)])
  }

  getData(path, callback) {
    this.reply({ op: 'get', path }, callback, (r) => [Buffer.from(r.data), zkStat(r.stat)])
  }

  getChildren(path, callback) {
    this.reply({ op: 'children', path }, callback, (r) => [r.children, zkStat({})])
  }

  setData(path, data, version, callback) {
    const request = { op: 'set', path, data: data.toString(), version }
    this.reply(request, callback, (r) => [zkStat(r.stat)])
  }

  remove(path, version, callback) {
    this.reply({ op: 'delete', path, version }, callback, () => [])
  }

  /** A transaction as node-zookeeper-client builds one: its `ops`, with version 0 read as
   * -1 (any), as that client does; the commit's failure carries every op's result code. */
  transaction() {
    const client = this
    return {
      ops: [],
      setData(path, data, version) {
        this.ops.push({ op: 'set', path, data: data.toString(), version: version || -1 })
        return this
      },
      remove(path, version) {
        this.ops.push({ op: 'delete', path, version: version || -1 })
        return this
      },
      commit(callback) {
        const ops = this.ops.map((o) => ({ ...o }))
        const reply = client.next({ op: 'multi', ops })
        setImmediate(() => {
          if (reply === null || reply.error === undefined) {
            callback(
              null,
              ops.map(() => ({ type: 5, stat: zkStat({}) })),
            )
            return
          }
          const failed = reply.index ?? 0
          const code = CODES[reply.error] ?? -1
          const results = ops.map((_, k) => ({ type: -1, err: k < failed ? 0 : k === failed ? code : -2 }))
          callback(zkError(reply.error), results)
        })
      },
    }
  }
}

/** A call's vector arguments as the registry method's argument. */
function callArgs(name, args) {
  if (name === 'claim') return { workerId: args[0], owner: args[1], ttlMs: args[2] }
  if (name === 'renew') {
    return { workerId: args[0], owner: args[1], ttlMs: args[2], markMs: args[3], reportedMs: args[4] }
  }
  if (name === 'release') return { workerId: args[0], owner: args[1], markMs: args[2] }
  return undefined
}

/** A vector answer in the registry's JS spelling (claims in camel case). */
function jsAnswer(name, answer) {
  if (name !== 'claim' || answer === null) return answer
  const out = { workerId: answer.worker_id, markMs: answer.mark_ms }
  if (answer.identity !== undefined)
    Object.assign(out, { identity: answer.identity, version: answer.version, ageMs: answer.age_ms })
  return out
}

const vectors = loadVectors('zookeeper.json')

test('zookeeper.json: every scripted conversation through ZooKeeperRegistry and a replaying client', async () => {
  assert.ok(vectors.cases.length >= 10, `only ${vectors.cases.length} cases`)
  const realNow = Date.now
  try {
    for (const c of vectors.cases) {
      const client = new ReplayClient()
      const registry = new ZooKeeperRegistry({
        client,
        root: vectors.root,
        identity: vectors.identity,
        timeoutMs: 5000,
      })
      assert.equal(registry.identity, vectors.identity)
      for (const [n, call] of c.calls.entries()) {
        const label = `${c.name}, call ${n} (${call.call})`
        client.label = label
        client.session = call.session
        client.script = call.exchange.map((x, i) => ({ ...x, i }))
        Date.now = () => call.now_ms
        const run = call.call === 'peers' ? registry.peers() : registry[call.call](callArgs(call.call, call.args))
        if (call.error_contains !== undefined) {
          await assert.rejects(run, (e) => e instanceof Error && e.message.includes(call.error_contains), label)
        } else {
          assert.deepEqual(await run, jsAnswer(call.call, call.answer), label)
        }
        Date.now = realNow
        assert.equal(client.script.length, 0, `${label}: requests left unasked`)
      }
    }
  } finally {
    Date.now = realNow
  }
})

test('a request that fails with a client error rejects with the core message, the client error as its cause', async () => {
  const client = new ReplayClient()
  client.session = 5
  client.script = [{ op: { op: 'mkdir', path: '/r/forever' }, reply: { error: 'connection loss' } }]
  const registry = new ZooKeeperRegistry({ client, root: '/r', identity: '10.0.0.1:80' })
  const e = await registry.claim({ workerId: 0, owner: 'o', ttlMs: 1000 }).catch((e) => e)
  assert.equal(e.message, '/r/forever: connection loss')
  assert.equal(e.cause?.getCode?.(), -1)
})

test('the root and identity are checked by the core when the registry is made', () => {
  const client = new ReplayClient()
  const refused = (options, pattern) =>
    assert.throws(
      () => new ZooKeeperRegistry({ client, ...options }),
      (e) => e.code === 'INVALID_ARGUMENT' && pattern.test(e.message),
    )
  refused({ root: 'snowflake/x' }, /absolute znode path/)
  refused({ root: '/x/' }, /absolute znode path/)
  refused({ identity: '10.0.0.1' }, /not IP:PORT/)
  refused({ identity: '10.0.0.1:99999' }, /not IP:PORT/)
  assert.equal(new ZooKeeperRegistry({ client, identity: '10.0.0.1:80' }).identity, '10.0.0.1:80')
})

test('calls of one registry run one at a time', async () => {
  const client = new ReplayClient()
  client.label = 'peers twice'
  client.session = 5
  const peers = [
    { op: { op: 'children', path: '/r/leaf_temporary' }, reply: { children: [] } },
    { op: { op: 'children', path: '/r/forever' }, reply: { children: [] } },
  ]
  client.script = [...peers, ...peers]
  const registry = new ZooKeeperRegistry({ client, root: '/r', identity: '10.0.0.1:80' })
  assert.deepEqual(await Promise.all([registry.peers(), registry.peers()]), [[], []])
  assert.equal(client.script.length, 0)
})

test('a closed registry makes no client again: a call queued behind close() fails, so nothing keeps the process alive', async () => {
  const made = []
  const registry = new ZooKeeperRegistry({ hosts: '127.0.0.1:2181', root: '/r', identity: '10.0.0.1:80' })
  // node-zookeeper-client's createClient, counted (a client made would connect and keep the
  // event loop alive).
  registry.zk = {
    createClient: (hosts) => {
      made.push(hosts)
      return { connect() {}, close() {}, getState: () => ({ code: 3 }), once() {}, removeListener() {} }
    },
  }
  const queued = registry.serial(() => new Promise((resolve) => setTimeout(resolve, 10)))
  const late = registry.peers()
  await registry.close()
  await queued
  const e = await late.catch((e) => e)
  assert.match(String(e?.message), /ZooKeeperRegistry on 127\.0\.0\.1:2181 is closed/)
  assert.deepEqual(made, [])
})

test('TLS to ZooKeeper is refused, never plaintext: node-zookeeper-client has no TLS', () => {
  const { registryFromUrl, ZooKeeperRegistry } = require('segflake/registries')
  const unsupported = (e) => e.code === 'INVALID_ARGUMENT' && /not supported by node-zookeeper-client/.test(e.message)
  for (const url of [
    'zk+tls://h:2281/snowflake/x',
    'zk://h:2181/snowflake/x?tls=true',
    'zk://h:2181/snowflake/x?tls=false&ca=/ca.pem',
  ]) {
    assert.throws(() => registryFromUrl(url), unsupported, url)
  }
  assert.throws(() => new ZooKeeperRegistry({ hosts: 'h:2281', tls: true }), unsupported)
  assert.throws(() => new ZooKeeperRegistry({ hosts: 'h:2281', caFile: '/ca.pem' }), unsupported)
})

test('a client whose session expired is replaced (node-zookeeper-client reads DISCONNECTED after expiry)', async () => {
  const { EventEmitter } = await import('node:events')
  const made = []
  const registry = new ZooKeeperRegistry({
    hosts: '127.0.0.1:2181',
    root: '/r',
    identity: '10.0.0.1:80',
    timeoutMs: 300,
  })
  registry.zk = {
    createClient: () => {
      const c = new EventEmitter()
      Object.assign(c, { closed: false, connect() {}, close: () => (c.closed = true), getState: () => ({ code: 0 }) })
      made.push(c)
      return c
    },
  }
  const first = await registry.peers().catch((e) => e)
  assert.match(String(first?.message), /not connected to ZooKeeper|took longer than/)
  assert.equal(made.length, 1)
  // The client reports its session expired, then reads DISCONNECTED, as the library does.
  made[0].emit('expired')
  await registry.peers().catch(() => {})
  assert.equal(made.length, 2, 'a new client after the expiry')
  assert.equal(made[0].closed, true, 'the expired client was closed')
  await registry.close()
  assert.equal(made[1].closed, true)
})
