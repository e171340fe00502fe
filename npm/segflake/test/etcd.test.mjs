// tests/vectors/etcd.json against EtcdRegistry itself: every case runs its calls on one
// registry over a client with etcd3's API (leases, range and put builders, transactions
// built with `if`/`and`/`then`/`else` or sent to its KV client) that answers as etcd3 does:
// lease IDs as text, a lease that is gone as EtcdLeaseInvalidError, ranges as key-value
// Buffers. Each request the registry makes must be the case's next `exchange[].op`. Runs
// on the backend loaded (native or wasm).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { loadVectors, replayRegistryVectors, Script } from './helpers.mjs'

const require = createRequire(import.meta.url)
const { EtcdRegistry } = require('segflake/registries')

/** etcd3's error for a lease that expired or was revoked. */
class EtcdLeaseInvalidError extends Error {}
class GRPCUnavailableError extends Error {}

const failure = (reply) => new GRPCUnavailableError(reply.error)
const text = (b) => (b === undefined ? undefined : Buffer.from(b).toString())

/** A request inside a transaction as etcd3's builders make it: a builder with `op()`. */
const builder = (request) => ({ request, op: async () => request })

/** A gRPC transaction request as the protocol's requests. */
function protocolOps(list) {
  return list.map(({ request_put: put, request_range: range, request_delete_range: del }) => {
    if (range) return { range: text(range.key) }
    if (del) return { delete: text(del.key) }
    const op = { put: text(put.key), value: text(put.value) }
    if (put.lease !== undefined) op.lease = String(put.lease)
    return op
  })
}

/** The gRPC response of a transaction whose branch `ops` ran, its ranges reading `values`. */
function txnResponse(reply, ops) {
  const values = [...(reply.values ?? [])]
  const responses = ops.map((o) => {
    if (o.range === undefined) return { response_put: {} }
    const value = values.shift()
    return { response_range: { kvs: value === null ? [] : [{ key: Buffer.from(o.range), value: Buffer.from(value) }] } }
  })
  return { succeeded: reply.succeeded, responses }
}

/** An `Etcd3` client that answers from `script`. */
class FakeEtcd {
  constructor(script) {
    this.script = script
    this.kv = { txn: async (request) => this.txn(request) }
    this.leaseClient = {
      leaseRevoke: async ({ ID }) => this.answer({ op: 'revoke', lease: String(ID) }),
    }
  }

  /** The scripted reply to `op`; a reply `{error}` rejects. */
  async answer(op) {
    const reply = this.script.next(op)
    if (reply !== null && reply.error !== undefined) throw failure(reply)
    return reply
  }

  lease(ttl, options) {
    assert.equal(options?.autoKeepAlive, false, 'kept alive by renewals only')
    const client = this
    let id = null
    return {
      on() {},
      async grant() {
        id ??= (await client.answer({ op: 'grant', ttl_s: ttl })).lease
        return id
      },
      async keepaliveOnce() {
        const reply = await client.answer({ op: 'keepalive', lease: id })
        if (reply.ttl <= 0) throw new EtcdLeaseInvalidError(id)
        return { ID: id, TTL: String(reply.ttl) }
      },
      async revoke() {
        await client.answer({ op: 'revoke', lease: id })
      },
    }
  }

  get(key) {
    return builder({ request_range: { key: Buffer.from(key), limit: 1 } })
  }

  put(key) {
    const request = { key: Buffer.from(key) }
    const put = builder({ request_put: request })
    put.value = (v) => ((request.value = Buffer.from(v)), put)
    put.lease = (id) => ((request.lease = id), put)
    return put
  }

  delete() {
    return { key: (key) => builder({ request_delete_range: { key: Buffer.from(key) } }) }
  }

  getAll() {
    return {
      prefix: (prefix) => ({
        strings: async () => Object.fromEntries((await this.answer({ op: 'prefix', prefix })).kvs),
      }),
    }
  }

  /** etcd3's transaction builder. */
  if(key, target, cmp, value) {
    const client = this
    const request = { compare: [], success: [], failure: [] }
    const t = {
      and(key, target, cmp, value) {
        const c = {
          Create: { '==': { key, missing: true } },
          Value: { '==': { key, equal: value }, '<': { key, less: value } },
        }
        const compare = c[target]?.[cmp]
        assert.ok(compare !== undefined, `a comparison the protocol does not make: ${target} ${cmp}`)
        if (target === 'Create') assert.equal(value, 0)
        request.compare.push(compare)
        return t
      },
      then: (...ops) => ((request.success = ops), t),
      else: (...ops) => ((request.failure = ops), t),
      async commit() {
        const branch = async (ops) => Promise.all(ops.map((o) => o.op()))
        return client.txn({
          ...request,
          success: await branch(request.success),
          failure: await branch(request.failure),
        })
      },
    }
    return t.and(key, target, cmp, value)
  }

  /** A transaction: the builder's comparisons, or a KV client's request without any. */
  async txn({ compare, success, failure }) {
    const op = { op: 'txn', compare, success: protocolOps(success), failure: protocolOps(failure) }
    const reply = await this.answer(op)
    return txnResponse(reply, reply.succeeded ? op.success : op.failure)
  }

  close() {}
}

const vectors = loadVectors('etcd.json')

test('etcd.json: every scripted conversation through EtcdRegistry and a replaying etcd3 client', async () => {
  assert.ok(vectors.cases.length >= 5, `only ${vectors.cases.length} cases`)
  assert.equal(vectors.kind, 'etcd')
  const script = new Script()
  await replayRegistryVectors(
    vectors.cases,
    script,
    () => new EtcdRegistry({ client: new FakeEtcd(script), prefix: vectors.config.prefix, timeoutMs: 5000 }),
  )
})

/** A claim of worker ID 3 by `owner` under /p on etcd lease `lease` (a fresh key). */
const claimExchange = (lease, owner = 'o') => [
  { op: { op: 'grant', ttl_s: 2 }, reply: { lease } },
  {
    op: {
      op: 'txn',
      compare: [{ key: '/p/worker/3', missing: true }],
      success: [{ put: '/p/worker/3', value: owner, lease }, { range: '/p/mark/3' }],
      failure: [{ range: '/p/worker/3' }, { range: '/p/mark/3' }],
    },
    reply: { succeeded: true, values: ['00000000000000000042'] },
  },
]

test('close() revokes the etcd leases held, and the registry then holds none', async () => {
  const script = new Script()
  const registry = new EtcdRegistry({ client: new FakeEtcd(script), prefix: '/p/' })
  script.load({ exchange: claimExchange('77') }, 'claim')
  assert.equal(await registry.claim({ workerId: 3, owner: 'o', ttlMs: 1500 }), 42)
  script.load({ exchange: [{ op: { op: 'revoke', lease: '77' }, reply: null }] }, 'close')
  await registry.close()
  assert.equal(script.steps.length, 0)
  script.load({ exchange: [] }, 'renew after close')
  assert.equal(await registry.renew({ workerId: 3, owner: 'o', ttlMs: 1500, markMs: 50, reportedMs: 1 }), null)
})

test('an etcd call is bounded by timeoutMs; calls of one registry run one at a time', async () => {
  const script = new Script()
  const client = new FakeEtcd(script)
  const registry = new EtcdRegistry({ client, prefix: '/p', timeoutMs: 50 })
  const answer = client.answer.bind(client)
  let stall = true
  client.answer = (op) => (stall ? new Promise(() => {}) : answer(op))
  script.load({ exchange: [] }, 'stalled')
  await assert.rejects(registry.peers(), /etcd peers took longer than 50 ms/)
  stall = false
  const peers = { op: { op: 'prefix', prefix: '/p/report/' }, reply: { kvs: [['/p/report/3', '1700']] } }
  script.load({ exchange: [peers, peers] }, 'peers twice')
  assert.deepEqual(await Promise.all([registry.peers(), registry.peers()]), [[[3, 1700, 0]], [[3, 1700, 0]]])
  assert.equal(script.steps.length, 0)
})

test('TLS: https endpoints and etcd+tls:// URLs give etcd3 the CA file as its root certificate', () => {
  const { registryFromUrl } = require('segflake/registries')
  const path = require('node:path')
  const { etcdHosts } = require(path.join(path.dirname(require.resolve('segflake/registries')), 'stores', '_common.js'))
  const PEM = Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n')
  const read = () => PEM
  const refused = (fn, pattern) => assert.throws(fn, (e) => e.code === 'INVALID_ARGUMENT' && pattern.test(e.message))
  assert.deepEqual(etcdHosts('a:1,b:2', undefined, read), {
    hosts: ['http://a:1', 'http://b:2'],
    credentials: undefined,
  })
  assert.deepEqual(etcdHosts('https://a:1, https://b:2', '/ca.pem', read), {
    hosts: ['https://a:1', 'https://b:2'],
    credentials: { rootCertificate: PEM },
  })
  // Without a CA file etcd3 makes TLS credentials with Node's certificate authorities.
  assert.deepEqual(etcdHosts('https://a:1', undefined, read), { hosts: ['https://a:1'], credentials: undefined })
  refused(() => etcdHosts('https://a:1,b:2', undefined, read), /mix http:\/\/ and https:\/\//)
  refused(() => etcdHosts('a:1', '/ca.pem', read), /caFile is for TLS, but the endpoints are not https:\/\//)
  refused(() => etcdHosts('grpc://a:1', undefined, read), /only http:\/\/ or https:\/\//)
  refused(() => registryFromUrl('etcd://a:1/p?ca=/ca.pem'), /ca=PATH is for TLS, .* use etcd\+tls:\/\//)
  refused(() => registryFromUrl('etcd+tls://a:1/p?tls=false'), /etcd\+tls:\/\/ contradicts tls=false/)
  refused(() => registryFromUrl('etcd+tls://a:1/p?ca=/no/such/ca.pem'), /cannot be read/)
})
