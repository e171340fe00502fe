"""TLS cases for the Python adapters (tests/scenarios/tls.sh): reads a JSON list of cases
``{"name", "kind": "store"|"registry"|"http", "url", "expect"}`` and runs each: a store
allocates a segment of tag ``tls`` (RedisStore, PostgresStore, MySQLStore from the URL), a
registry (``segflake.registries.from_url``) claims worker ID 0 and releases it, ``http`` is
an HttpStore (``URL#CA_FILE``) allocating from a small HTTPS server of this program's
(``segflake serve``'s answer; the server's certificate and key: TLS_SERVER_CERT/KEY). ``expect`` is
``ok`` or a regular expression the error's text must match (case-insensitive). Prints one
line per case and exits 1 if any case went otherwise.
"""

import json
import re
import sys
import time


def store(url: str) -> str:
    from segflake.stores import MySQLStore, PostgresStore, RedisStore

    if url.startswith(("redis://", "rediss://")):
        s = RedisStore(url)
    elif url.startswith(("postgres://", "postgresql://")):
        s = PostgresStore(url)
        s.create_table()
    else:
        s = MySQLStore(url)
        s.create_table()
    try:
        s.ensure_tag("tls")
        got = s.allocate("tls", 10)
        return f"allocated {got}"
    finally:
        s.close()


def registry(url: str) -> str:
    from segflake.registries import from_url

    r = from_url(url)
    try:
        mark = r.claim(0, "tls#0000000000000001", 5000)
        if mark is None:
            raise AssertionError("worker ID 0 is held by another owner")
        r.release(0, "tls#0000000000000001", 0)
        return f"claimed worker 0 (mark {mark})"
    finally:
        r.close()


def http(url: str) -> str:
    """An HttpStore with ``ca_file`` (after ``#``) against this program's HTTPS server."""
    import http.server
    import os
    import ssl
    import threading

    from segflake.stores import HttpStore

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = b'{"maxId":"1010","step":10}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    from urllib.parse import urlsplit

    base, _, ca = url.partition("#")
    server = http.server.ThreadingHTTPServer((urlsplit(base).hostname or "127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.environ["TLS_SERVER_CERT"], os.environ["TLS_SERVER_KEY"])
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        store = HttpStore(base.replace("PORT", str(server.server_address[1])), ca_file=ca, timeout=5)
        try:
            return f"allocated {store.allocate('tls', 10)}"
        finally:
            store.close()
    finally:
        server.shutdown()


def main() -> int:
    cases = json.load(open(sys.argv[1]))
    bad = 0
    for case in cases:
        t0 = time.monotonic()
        try:
            detail = {"store": store, "registry": registry, "http": http}[case["kind"]](case["url"])
            error = None
        except Exception as e:  # the case's outcome
            error = f"{type(e).__name__}: {e}"
            cause = e.__cause__ or e.__context__
            if cause is not None:
                error += f" (caused by {type(cause).__name__}: {cause})"
        if case["expect"] == "ok":
            good = error is None
            line = detail if error is None else f"unexpected error: {error}"
        else:
            good = error is not None and re.search(case["expect"], error, re.I) is not None
            line = f"refused: {error}" if error is not None else f"NOT refused: {detail}"
        bad += not good
        took = f"({time.monotonic() - t0:.2f} s)"
        print(f"{'ok  ' if good else 'BAD '} python {case['name']} {took}: {line}"[:400], flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
