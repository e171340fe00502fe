// A static file server on 127.0.0.1 for the browser tests and benchmarks: each URL prefix
// maps to a directory; `/vectors/index.json` lists the vector files.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.map': 'application/json',
};

/**
 * Starts the server. `roots` maps a prefix ('/pkg/') to a directory; `headers` maps a path
 * to the extra response headers it is served with. Resolves to `{ url, close, requests }`
 * (`requests`: every path served, with its status).
 */
export function serve(roots, headers = {}) {
  const requests = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    const pathname = decodeURIComponent(url.pathname);
    const send = (status, body, type = 'text/plain') => {
      requests.push({ path: pathname, status, type });
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', ...headers[pathname] });
      res.end(body);
    };
    for (const [prefix, dir] of Object.entries(roots)) {
      if (!pathname.startsWith(prefix)) continue;
      const rest = pathname.slice(prefix.length);
      if (rest === 'index.json' && !fs.existsSync(path.join(dir, 'index.json'))) {
        const list = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
        return send(200, JSON.stringify(list), TYPES['.json']);
      }
      const file = path.resolve(dir, rest);
      if (!file.startsWith(path.resolve(dir) + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
        return send(404, 'not found');
      }
      return send(200, fs.readFileSync(file), TYPES[path.extname(file)] ?? 'application/octet-stream');
    }
    return send(404, 'not found');
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      // close() drops every connection: server.close alone waits for each to end, and a
      // socket Chromium opened ahead of a request (a preconnect) that never sends one kept
      // a test waiting until Chromium let it go (114 s of a CSP test's 120 s in one run).
      const close = () => new Promise((r) => {
        server.close(r);
        server.closeAllConnections?.();
      });
      resolve({ url: `http://127.0.0.1:${port}`, requests, close });
    });
  });
}
