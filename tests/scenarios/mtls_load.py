"""Clients of `segflake serve` over mutual TLS while its certificates, tokens and keys are
rotated under them (tests/scenarios/serve_tls.sh):

    mtls_load.py ADDR CERTS_DIR PROTO_DIR TOKEN_FILE STOP_FILE OUT_PREFIX

Two HTTP threads (keep-alive connections, GET /api/segment/get/pay with the token read
from TOKEN_FILE before each request, and /api/segment/get/order by certificate alone) and
one gRPC thread (NextSegmentIds on `order` over the same port) draw IDs until STOP_FILE
exists. Every ID goes to OUT_PREFIX.{pay,order}.ids (u64, little-endian) for the
duplicate check; OUT_PREFIX.json counts requests and failures (with the first failures'
words). Each request presents valid credentials (the client certificate order-svc,
and the token current when it was sent), so a failure is the server's fault."""

from __future__ import annotations

import array
import http.client
import json
import os
import ssl
import sys
import threading

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grpc_client import stubs  # noqa: E402


def main() -> int:
    addr, certs, proto_dir, token_file, stop_file, out = sys.argv[1:7]
    host, port = addr.rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=f"{certs}/ca.pem")
    ctx.load_cert_chain(f"{certs}/order.pem", f"{certs}/order.key")
    ids = {"pay": array.array("Q"), "order": array.array("Q")}
    counts = {"requests": 0, "failures": 0, "first_failures": []}
    lock = threading.Lock()

    def failed(what: str) -> None:
        with lock:
            counts["failures"] += 1
            if len(counts["first_failures"]) < 5:
                counts["first_failures"].append(what[:300])

    def http_thread(key: str) -> None:
        conn: http.client.HTTPSConnection | None = None
        while not os.path.exists(stop_file):
            with open(token_file) as f:
                token = f.read().strip()
            headers = {"Authorization": f"Bearer {token}"} if key == "pay" else {}
            try:
                if conn is None:
                    conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=10)
                conn.request("GET", f"/api/segment/get/{key}", headers=headers)
                r = conn.getresponse()
                body = r.read().decode()
                if r.status == 200:
                    with lock:
                        ids[key].append(int(body))
                else:
                    failed(f"{key}: {r.status} {body} (token {token})")
            except (OSError, http.client.HTTPException) as e:
                if conn is not None:
                    conn.close()
                conn = None
                failed(f"{key}: {type(e).__name__}: {e}")
            with lock:
                counts["requests"] += 1

    def grpc_thread() -> None:
        pb, rpc = stubs(proto_dir)
        with open(f"{certs}/ca.pem", "rb") as ca, open(f"{certs}/order.pem", "rb") as c, open(
            f"{certs}/order.key", "rb"
        ) as k:
            creds = grpc.ssl_channel_credentials(ca.read(), k.read(), c.read())
        channel = grpc.secure_channel(addr, creds, options=[("grpc.ssl_target_name_override", "localhost")])
        client = rpc.SegflakeStub(channel)
        while not os.path.exists(stop_file):
            try:
                got = list(client.NextSegmentIds(pb.IdsRequest(key="order", count=10), timeout=10).ids)
                with lock:
                    ids["order"].extend(got)
            except grpc.RpcError as e:
                failed(f"gRPC: {e.code().name} {e.details()}")
            with lock:
                counts["requests"] += 1

    threads = [threading.Thread(target=http_thread, args=(k,)) for k in ("pay", "order")]
    threads.append(threading.Thread(target=grpc_thread))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for key, got in ids.items():
        with open(f"{out}.{key}.ids", "wb") as f:
            got.tofile(f)
    counts["ids"] = {k: len(v) for k, v in ids.items()}
    with open(f"{out}.json", "w") as f:
        json.dump(counts, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
