"""HTTP load for the frameworks scenarios: THREADS keep-alive connections to one server, each
alternating `GET /ids/TAG?n=N` and `GET /snowflake?n=N` as fast as answers come, for
SECONDS. IDs of 200 answers go to OUT.seg and OUT.sf (one decimal per line); every request
to OUT.log as `wall_time kind status code` (code: the error's code for a non-200).

  http_load.py --port P --tag T --seconds S --threads K --n N --out PREFIX
"""

from __future__ import annotations

import argparse
import http.client
import json
import threading
import time
from typing import List, Tuple


def run(args: argparse.Namespace, ids: Tuple[List[str], List[str]], log: List[str], stop: float) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=10)
    paths = (("seg", f"/ids/{args.tag}?n={args.n}"), ("sf", f"/snowflake?n={args.n}"))
    i = 0
    while time.time() < stop:
        kind, path = paths[i % 2]
        i += 1
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            body = json.loads(resp.read())
            status = resp.status
        except (OSError, http.client.HTTPException, ValueError) as e:
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=10)
            log.append(f"{time.time():.3f} {kind} 0 {type(e).__name__}")
            time.sleep(0.05)
            continue
        if status == 200:
            ids[0 if kind == "seg" else 1].extend(body["ids"])
            log.append(f"{time.time():.3f} {kind} 200 -")
        else:
            log.append(f"{time.time():.3f} {kind} {status} {body.get('code', '-')}")
    conn.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--tag", default="order")
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    stop = time.time() + args.seconds
    seg: List[str] = []
    sf: List[str] = []
    log: List[str] = []
    threads = [threading.Thread(target=run, args=(args, (seg, sf), log, stop)) for _ in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for suffix, lines in (("seg", seg), ("sf", sf), ("log", log)):
        with open(f"{args.out}.{suffix}", "w") as f:
            f.write("".join(f"{x}\n" for x in lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
