"""An HTTP client of `segflake serve` for the scenarios: threads on keep-alive connections
call /api/segment/get/KEY (or /api/snowflake/get/KEY) and write every ID they get (u64,
little-endian, flushed as they come) for the duplicate check.

  serve_client.py --url http://127.0.0.1:PORT[,http://...] --key K --out FILE --summary FILE
                  [--kind segment|snowflake] [--threads N] [--duration S] [--rate R]
                  [--count N] [--token T]

--url        one or more servers (comma-separated); thread i uses server i mod n
--rate R     requests per second over all threads (default: as fast as they go)
--count N    ?count=N batches instead of single IDs
The summary holds: requests, IDs, statuses (by code), error codes and the first messages,
the longest run without an ID (a stall), and when the first and last 503 came.
"""

from __future__ import annotations

import argparse
import array
import http.client
import json
import sys
import threading
import time
from typing import Any, Dict, List
from urllib.parse import urlsplit


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--kind", choices=["segment", "snowflake"], default="segment")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--rate", type=float, default=0.0)
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--token", default=None)
    ap.add_argument("--out", required=True)
    ap.add_argument("--summary", required=True)
    args = ap.parse_args()

    servers = [urlsplit(u) for u in args.url.split(",")]
    path = f"/api/{args.kind}/get/{args.key}" + (f"?count={args.count}" if args.count else "")
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    lock = threading.Lock()
    out = open(args.out, "wb")
    t0 = time.monotonic()
    stop_at = t0 + args.duration
    s: Dict[str, Any] = {
        "requests": 0,
        "ids": 0,
        "statuses": {},
        "codes": {},
        "messages": [],
        "longest_stall_ms": 0.0,
        "first_503_s": None,
        "last_503_s": None,
        "transport_errors": 0,
    }
    last_id_at = [t0]
    interval = args.threads / args.rate if args.rate > 0 else 0.0

    def record(status: int, body: bytes, now: float) -> None:
        ids: List[int] = []
        if status == 200:
            if args.count:
                ids = [int(x) for x in json.loads(body)["ids"]]
            else:
                ids = [int(body)]
        with lock:
            s["requests"] += 1
            s["statuses"][str(status)] = s["statuses"].get(str(status), 0) + 1
            if ids:
                s["ids"] += len(ids)
                s["longest_stall_ms"] = max(s["longest_stall_ms"], (now - last_id_at[0]) * 1000)
                last_id_at[0] = now
                out.write(array.array("Q", ids).tobytes())
                out.flush()
            else:
                err = json.loads(body)
                s["codes"][err["code"]] = s["codes"].get(err["code"], 0) + 1
                if len(s["messages"]) < 5 and err["message"] not in s["messages"]:
                    s["messages"].append(err["message"])
                if status == 503:
                    at = round(now - t0, 3)
                    s["first_503_s"] = s["first_503_s"] if s["first_503_s"] is not None else at
                    s["last_503_s"] = at

    def run(i: int) -> None:
        u = servers[i % len(servers)]
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        next_at = time.monotonic()
        while True:
            now = time.monotonic()
            if now >= stop_at:
                break
            if interval:
                if now < next_at:
                    time.sleep(next_at - now)
                next_at += interval
            try:
                conn.request("GET", path, headers=headers)
                r = conn.getresponse()
                body = r.read()
            except (OSError, http.client.HTTPException):
                with lock:
                    s["transport_errors"] += 1
                conn.close()
                time.sleep(0.05)
                continue
            record(r.status, body, time.monotonic())
        conn.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.close()
    s["seconds"] = round(time.monotonic() - t0, 3)
    s["ids_per_second"] = round(s["ids"] / s["seconds"])
    with open(args.summary, "w") as f:
        json.dump(s, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
