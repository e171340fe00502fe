// A Node client of `segflake serve` over mutual TLS while its certificates, tokens and keys
// are rotated under it (tests/scenarios/serve_tls.sh):
//
//   node mtls_load.mjs ADDR CERTS_DIR TOKEN_FILE STOP_FILE OUT_PREFIX
//
// Four requests in flight on keep-alive connections (node:https, the client certificate
// order-svc): GET /api/segment/get/pay with the token read from TOKEN_FILE before each
// request, and /api/segment/get/order by certificate alone, until STOP_FILE exists. IDs go
// to OUT_PREFIX.{pay,order}.ids (u64, little-endian); OUT_PREFIX.json counts requests and
// failures. Every request presents valid credentials, so a failure is the server's fault.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import https from 'node:https'

const [addr, certs, tokenFile, stopFile, out] = process.argv.slice(2)
const [host, port] = addr.split(':')
const agent = new https.Agent({
  keepAlive: true,
  maxSockets: 4,
  ca: readFileSync(`${certs}/ca.pem`),
  cert: readFileSync(`${certs}/order.pem`),
  key: readFileSync(`${certs}/order.key`),
  servername: 'localhost',
})
const ids = { pay: [], order: [] }
const counts = { requests: 0, failures: 0, first_failures: [] }
const failed = (what) => {
  counts.failures += 1
  if (counts.first_failures.length < 5) counts.first_failures.push(what.slice(0, 300))
}

function get(key, token) {
  return new Promise((resolve) => {
    const headers = key === 'pay' ? { authorization: `Bearer ${token}` } : {}
    const req = https.request({ host, port, path: `/api/segment/get/${key}`, agent, headers, timeout: 10000 }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode, body }))
    })
    req.on('timeout', () => req.destroy(new Error('timed out')))
    req.on('error', (e) => resolve({ status: 0, body: `${e.code ?? ''} ${e.message}` }))
    req.end()
  })
}

async function loop(key) {
  while (!existsSync(stopFile)) {
    const token = readFileSync(tokenFile, 'utf8').trim()
    const { status, body } = await get(key, token)
    counts.requests += 1
    if (status === 200) ids[key].push(BigInt(body))
    else failed(`${key}: ${status} ${body} (token ${token})`)
  }
}

await Promise.all(['pay', 'pay', 'order', 'order'].map(loop))
agent.destroy()
for (const [key, list] of Object.entries(ids)) {
  writeFileSync(`${out}.${key}.ids`, Buffer.from(new BigUint64Array(list).buffer))
}
counts.ids = { pay: ids.pay.length, order: ids.order.length }
writeFileSync(`${out}.json`, JSON.stringify(counts))
