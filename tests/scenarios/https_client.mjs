// The HttpStore of the native package (segflake) and of segflake-wasm against `segflake
// serve` over HTTPS with client certificates (--tls-cert, --tls-client-ca, a key whose
// `clients` list names order-svc):
//   node https_client.mjs BASE_URL CERT_DIR KEY
// CERT_DIR holds tests/tls/make-certs.sh's files. For each package: the right CA and the
// order-svc certificate lease segments of KEY (and a SegmentGenerator issues IDs over them);
// a CA that did not sign the server's certificate is a StoreError naming the certificate; no
// client certificate, and one from another CA, are StoreErrors; billing-svc (trusted, not in
// the key's list) is the server's 403 FORBIDDEN; cert and key with an http:// URL are refused
// at construction; a server that never answers the handshake fails within timeoutMs.
// Prints one summary line.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'

const [base, certs, key] = process.argv.slice(2)
const require = createRequire(path.join(process.cwd(), 'noop.js'))
const pem = (name) => fs.readFileSync(path.join(certs, name))
const tls = (ca, client) => ({
  ca: pem(`${ca}.pem`),
  ...(client ? { cert: pem(`${client}.pem`), key: pem(`${client}.key`) } : {}),
  timeoutMs: 5000,
})

// A listener that accepts connections and never answers (no TLS handshake).
const held = []
const silent = net.createServer((socket) => held.push(socket))
await new Promise((resolve) => silent.listen(0, '127.0.0.1', resolve))
const silentUrl = `https://localhost:${silent.address().port}`

/** The StoreError `store.allocate` rejects with, its message holding every word of `words`. */
async function refused(store, words = []) {
  try {
    await store.allocate(key, 10)
  } catch (e) {
    assert.equal(e.code, 'STORE_ERROR', `${e.code}: ${e.message}`)
    for (const w of words) assert.ok(e.message.includes(w), `${JSON.stringify(e.message)} does not say ${w}`)
    return e.message
  } finally {
    await store.close()
  }
  assert.fail(`the allocation was not refused (expected ${words.join(', ')})`)
}

const said = []
for (const [name, lib] of [
  ['native', require('segflake')],
  // segflake-wasm as `import 'segflake-wasm'` loads it in Node (its node.js entry).
  [
    'wasm',
    await import(pathToFileURL(path.join(path.dirname(require.resolve('segflake-wasm/package.json')), 'node.js'))),
  ],
]) {
  const store = new lib.HttpStore(base, tls('ca', 'order'))
  const first = await store.allocate(key, 100)
  const second = await store.allocate(key, 100) // on the Agent's kept connection
  assert.ok(second.maxId > first.maxId, `${first.maxId} then ${second.maxId}`)
  await store.close()
  const gen = new lib.SegmentGenerator({ store: new lib.HttpStore(base, tls('ca', 'order')), step: 100 })
  const ids = await gen.nextIds(key, 250)
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1])
  assert.ok(ids[0] >= second.maxId, `${ids[0]} after a lease up to ${second.maxId}`)
  await gen.close()

  said.push(`${name}: ${await refused(new lib.HttpStore(base, tls('other-ca', 'order')), ['certificate'])}`)
  // The server's alerts: a certificate it requires, one from a CA it does not know.
  await refused(new lib.HttpStore(base, tls('ca')), ['certificate required'])
  await refused(new lib.HttpStore(base, tls('ca', 'stranger')), ['unknown ca'])
  said.push(`${name}: ${await refused(new lib.HttpStore(base, tls('ca', 'billing')), ['403 (FORBIDDEN)'])}`)
  assert.throws(
    () => new lib.HttpStore(base.replace('https://', 'http://'), tls('ca', 'order')),
    (e) => e.code === 'INVALID_ARGUMENT' && /use https:\/\//.test(e.message),
  )
  const began = performance.now()
  await refused(new lib.HttpStore(silentUrl, { ...tls('ca', 'order'), timeoutMs: 500 }), ['TimeoutError'])
  assert.ok(performance.now() - began < 3000, `${performance.now() - began} ms`)
}
for (const socket of held) socket.destroy()
silent.close()
console.log(
  `node HttpStore (native and wasm) over mutual TLS: segments leased and 250 IDs issued with order-svc's certificate; ` +
    `refused: another CA, no client certificate, an untrusted one, billing-svc, http:// with certificates, a silent server within timeoutMs; ` +
    said
      .slice(0, 2)
      .map((s) => JSON.stringify(s.slice(s.indexOf(' failed: ') + 1 || s.indexOf(' answered ') + 1)))
      .join('; '),
)
