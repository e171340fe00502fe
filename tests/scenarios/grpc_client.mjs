// A gRPC client of `segflake serve --grpc-listen` in Node (@grpc/grpc-js, the contract
// loaded from proto/segflake/v1/segflake.proto as users load it):
//   node grpc_client.mjs ADDR PROTO_DIR KEY SECRET_KEY TOKEN OUT_IDS
// Unary batches, a stream, a segment lease and decode; tokens and bad input answered with
// their status and segflake code; a client that cancels a stream mid-way leaves the server
// serving; health and reflection. Every ID of KEY it got is written to OUT_IDS (u64, little-endian) for
// the scenario's duplicate check; prints one summary line.
// TLS (a server started with --tls-cert): SEGFLAKE_TLS_CA names the PEM file of the
// certificate authorities to trust (else Node's), SEGFLAKE_TLS_CERT and SEGFLAKE_TLS_KEY the
// client certificate and key for mutual TLS (--tls-client-ca); any of them makes the channel
// a TLS one (ADDR then names a host in the server's certificate, localhost:PORT).
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'

//   node grpc_client.mjs --hold-stream ADDR PROTO_DIR KEY
// opens a stream without end, says "streaming" once it has IDs, and exits 0 when the server
// ends it (a drain): the stream must end cleanly or as UNAVAILABLE, never hang.
const hold = process.argv[2] === '--hold-stream'
const [addr, protoDir, key, secretKey, token, outIds] = process.argv.slice(hold ? 3 : 2)
const require = createRequire(path.join(process.cwd(), 'noop.js'))
const grpc = require('@grpc/grpc-js')
const loader = require('@grpc/proto-loader')
const options = { keepCase: false, longs: String, enums: String, defaults: true, oneofs: true }

// The standard health and reflection services, from their published definitions.
const extra = fs.mkdtempSync(path.join(os.tmpdir(), 'segflake-grpc-'))
fs.writeFileSync(
  path.join(extra, 'health.proto'),
  `syntax = "proto3"; package grpc.health.v1;
   message HealthCheckRequest { string service = 1; }
   message HealthCheckResponse { enum ServingStatus { UNKNOWN = 0; SERVING = 1; NOT_SERVING = 2; SERVICE_UNKNOWN = 3; } ServingStatus status = 1; }
   service Health { rpc Check(HealthCheckRequest) returns (HealthCheckResponse); }`,
)
fs.writeFileSync(
  path.join(extra, 'reflection.proto'),
  `syntax = "proto3"; package grpc.reflection.v1;
   message ServerReflectionRequest { string host = 1; oneof message_request { string list_services = 7; } }
   message ServiceResponse { string name = 1; }
   message ListServiceResponse { repeated ServiceResponse service = 1; }
   message ErrorResponse { int32 error_code = 1; string error_message = 2; }
   message ServerReflectionResponse { string valid_host = 1; oneof message_response { ListServiceResponse list_services_response = 6; ErrorResponse error_response = 7; } }
   service ServerReflection { rpc ServerReflectionInfo(stream ServerReflectionRequest) returns (stream ServerReflectionResponse); }`,
)
const load = (file, dir) => grpc.loadPackageDefinition(loader.loadSync(file, { ...options, includeDirs: [dir] }))
const pb = load('segflake/v1/segflake.proto', protoDir).segflake.v1
const health = load('health.proto', extra).grpc.health.v1
const reflection = load('reflection.proto', extra).grpc.reflection.v1
const tlsFile = (name) => (process.env[name] ? fs.readFileSync(process.env[name]) : null)
const [tlsCa, tlsCert, tlsKey] = ['SEGFLAKE_TLS_CA', 'SEGFLAKE_TLS_CERT', 'SEGFLAKE_TLS_KEY'].map(tlsFile)
if ((tlsCert === null) !== (tlsKey === null)) {
  throw new Error('SEGFLAKE_TLS_CERT and SEGFLAKE_TLS_KEY go together (a client certificate and its key)')
}
const tls = tlsCa !== null || tlsCert !== null
const creds = tls ? grpc.credentials.createSsl(tlsCa, tlsKey, tlsCert) : grpc.credentials.createInsecure()
const client = new pb.Segflake(addr, creds)

const call = (method, request, metadata = new grpc.Metadata()) =>
  new Promise((resolve, reject) =>
    client[method](request, metadata, (err, reply) => (err ? reject(err) : resolve(reply))),
  )
const withToken = (t) => {
  const m = new grpc.Metadata()
  m.set('authorization', `Bearer ${t}`)
  return m
}
/** The status code and segflake code a call is refused with. */
async function refusal(promise) {
  try {
    await promise
  } catch (err) {
    return [grpc.status[err.code], err.metadata?.get('segflake-code')[0], err.details]
  }
  assert.fail('the call was not refused')
}
const ids = []
const take = (reply) => {
  for (const id of reply.ids) ids.push(BigInt(id))
  return reply.ids.map(BigInt)
}

if (hold) {
  let messages = 0
  await new Promise((resolve, reject) => {
    const s = client.streamSegmentIds({ key, count: 10 })
    s.on('data', () => {
      if (++messages === 1) console.log('streaming')
    })
    s.on('error', (err) => (grpc.status[err.code] === 'UNAVAILABLE' ? resolve() : reject(err)))
    s.on('end', resolve)
  })
  console.log(`the stream ended after ${messages} messages`)
  process.exit(0)
}

// Unary batches: a fresh tag starts at 1, as over HTTP.
let got = take(await call('nextSegmentIds', { key, count: 5 }))
assert.deepEqual(got, [1n, 2n, 3n, 4n, 5n])
got = take(await call('nextSegmentIds', { key }))
assert.deepEqual(got, [6n], 'count 0 means 1')
const flakes = (await call('nextSnowflakeIds', { key, count: 3 })).ids.map(BigInt)
assert.equal(flakes.length, 3)
assert.ok(flakes[0] < flakes[1] && flakes[1] < flakes[2])
const decoded = await call('decode', { id: flakes[0].toString() })
assert.equal(decoded.worker, '4')
assert.match(decoded.time, /^\d{4}-\d\d-\d\dT/)

// Snowflake IDs by stream too: 2 messages of 100, strictly increasing.
const flakeStream = await new Promise((resolve, reject) => {
  const out = []
  const s = client.streamSnowflakeIds({ key, count: 100, batches: 2 })
  s.on('data', (m) => out.push(...m.ids.map(BigInt)))
  s.on('error', reject)
  s.on('end', () => resolve(out))
})
assert.equal(flakeStream.length, 200)
for (let i = 1; i < flakeStream.length; i++) assert.ok(flakeStream[i] > flakeStream[i - 1])
assert.ok(flakeStream[0] > flakes[2])

// A stream of 20 batches of 1,000, continuing the tag, strictly increasing.
const streamed = await new Promise((resolve, reject) => {
  const out = []
  const s = client.streamSegmentIds({ key, count: 1000, batches: 20 })
  s.on('data', (m) => out.push(take(m)))
  s.on('error', reject)
  s.on('end', () => resolve(out))
})
assert.equal(streamed.length, 20)
const flat = streamed.flat()
assert.equal(flat.length, 20000)
assert.ok(flat[0] > 6n)
for (let i = 1; i < flat.length; i++) assert.ok(flat[i] > flat[i - 1], 'streamed IDs increase')

// A segment lease: the caller owns [maxId - step, maxId).
const seg = await call('allocSegment', { key, step: 500 })
assert.equal(seg.step, '500')
const maxId = BigInt(seg.maxId)
for (let id = maxId - 500n; id < maxId; id++) ids.push(id)

// Tokens, as over HTTP.
assert.deepEqual((await refusal(call('nextSegmentIds', { key: secretKey }))).slice(0, 2), [
  'UNAUTHENTICATED',
  'UNAUTHORIZED',
])
assert.deepEqual((await refusal(call('nextSegmentIds', { key: secretKey }, withToken('wrong')))).slice(0, 2), [
  'PERMISSION_DENIED',
  'FORBIDDEN',
])
assert.equal((await call('nextSegmentIds', { key: secretKey, count: 2 }, withToken(token))).ids.length, 2)

// Bad input: a clear status, never a crash.
let [code, segCode, details] = await refusal(call('nextSegmentIds', { key, count: 100000000 }))
assert.deepEqual([code, segCode], ['INVALID_ARGUMENT', 'INVALID_ARGUMENT'])
assert.match(details, /count=100000000 is out of range; allowed 1\.\.=/)
;[code, segCode] = await refusal(call('nextSegmentIds', { key: 'no_such_key_here' }))
assert.equal(code, 'NOT_FOUND')
;[code, segCode] = await refusal(call('nextSegmentIds', { key: '' }))
assert.deepEqual([code, segCode], ['INVALID_ARGUMENT', 'INVALID_ARGUMENT'])
;[code, segCode] = await refusal(call('allocSegment', { key, step: '9223372036854775807' }))
assert.equal(code, 'INVALID_ARGUMENT')

// A client that cancels a stream mid-way: the server goes on serving.
let messages = 0
await new Promise((resolve) => {
  const s = client.streamSegmentIds({ key, count: 100 })
  s.on('data', (m) => {
    take(m)
    if (++messages === 3) s.cancel()
  })
  s.on('error', (err) => {
    assert.equal(grpc.status[err.code], 'CANCELLED')
    resolve()
  })
  s.on('end', resolve)
})
assert.ok(messages >= 3)
take(await call('nextSegmentIds', { key, count: 10 }))

// Health (as /readyz) and reflection on the same port.
const h = new health.Health(addr, creds)
const status = await new Promise((resolve, reject) =>
  h.check({ service: 'segflake.v1.Segflake' }, (err, r) => (err ? reject(err) : resolve(r.status))),
)
assert.equal(status, 'SERVING')
const services = await new Promise((resolve, reject) => {
  const r = new reflection.ServerReflection(addr, creds).serverReflectionInfo()
  r.on('data', (m) => {
    resolve(m.listServicesResponse.service.map((s) => s.name))
    r.end()
  })
  r.on('error', reject)
  r.write({ host: '', listServices: '' })
})
assert.ok(services.includes('segflake.v1.Segflake'), services.join(','))
assert.ok(services.includes('grpc.health.v1.Health'), services.join(','))

fs.writeFileSync(outIds, new BigUint64Array(ids))
fs.rmSync(extra, { recursive: true, force: true })
client.close()
console.log(
  `node grpc${tls ? ' over TLS' : ''}: ${ids.length} segment IDs (unary, 20 streamed batches, a 500-ID lease, a cancelled stream of ${messages} messages), 3 snowflake IDs decoded and 200 streamed, tokens and bad input refused with their codes, health SERVING, reflection lists ${services.length} services`,
)
