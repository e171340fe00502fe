"""Keep-alive HTTP load on instances of examples/rust/axum-service, for tests/scenarios/rust.sh.

  axum_load.py --target NAME=PORT... --shared TAG --threads K --stop-file F --out DIR

Per target and per kind of request (`GET /segment/SHARED`, `GET /segment/axum_NAME`: a tag
only that instance uses, `GET /snowflake`), K threads each hold one keep-alive connection
and send that request as fast as answers come, until F exists (so a segment request
waiting out an outage holds up no snowflake request). Writes, per target: DIR/NAME.shared,
NAME.own, NAME.sf (the IDs of 200 answers, one decimal per line), NAME.log (every request
as `unix_time kind status latency_ms`, status 0 for a connection error) and NAME.503 (the
first few 503 bodies). Prints "ready" once every connection was answered once.
"""

from __future__ import annotations

import argparse
import http.client
import os
import sys
import threading
import time
from typing import Dict, List


class Target:
    def __init__(self, name: str, port: int, shared: str) -> None:
        self.name, self.port = name, port
        self.paths = (("shared", f"/segment/{shared}"), ("own", f"/segment/axum_{name}"), ("sf", "/snowflake"))
        self.ids: Dict[str, List[str]] = {k: [] for k, _ in self.paths}
        self.log: List[str] = []
        self.bodies: List[str] = []
        self.lock = threading.Lock()


def run(t: Target, kind: str, stop_file: str, started: threading.Barrier) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", t.port, timeout=10)
    ids: Dict[str, List[str]] = {k: [] for k in t.ids}
    log: List[str] = []
    bodies: List[str] = []
    path = dict(t.paths)[kind]
    i, first = 0, True
    while True:
        i += 1
        # The stop file is looked at every 16 requests only: a stat per request would cost
        # as much as the request.
        if not first and i % 16 == 0 and os.path.exists(stop_file):
            break
        t0 = time.time()
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            body = resp.read().decode()
            status = resp.status
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", t.port, timeout=10)
            log.append(f"{time.time():.3f} {kind} 0 {(time.time() - t0) * 1000:.1f} {type(e).__name__}")
            time.sleep(0.05)
            continue
        now = time.time()
        log.append(f"{now:.3f} {kind} {status} {(now - t0) * 1000:.1f}")
        if status == 200:
            ids[kind].append(body)
        else:
            if len(bodies) < 3:
                bodies.append(f"{status} {kind}: {body}")
        if first:
            first = False
            started.wait()
    conn.close()
    with t.lock:
        for k, v in ids.items():
            t.ids[k].extend(v)
        t.log.extend(log)
        t.bodies.extend(bodies)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", action="append", required=True, help="NAME=PORT")
    ap.add_argument("--shared", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--stop-file", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    targets = [Target(n, int(p), args.shared) for n, p in (x.split("=") for x in args.target)]
    started = threading.Barrier(len(targets) * 3 * args.threads + 1)
    threads = [
        threading.Thread(target=run, args=(t, kind, args.stop_file, started))
        for t in targets
        for kind, _ in t.paths
        for _ in range(args.threads)
    ]
    for th in threads:
        th.start()
    started.wait()
    print("ready", flush=True)
    for th in threads:
        th.join()
    for t in targets:
        for kind, lines in t.ids.items():
            with open(os.path.join(args.out, f"{t.name}.{kind}"), "w") as f:
                f.write("".join(f"{x}\n" for x in lines))
        with open(os.path.join(args.out, f"{t.name}.log"), "w") as f:
            f.write("".join(f"{x}\n" for x in sorted(t.log)))
        with open(os.path.join(args.out, f"{t.name}.503"), "w") as f:
            f.write("\n".join(t.bodies))
    print("done", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
