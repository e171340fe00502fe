"""Tools of the frameworks scenarios (tests/scenarios/frameworks.sh).

  frameworks.py ready PORT... [--seconds S]     until every server's /readyz answers 200
  frameworks.py outage OUT LAG_DIR WINDOWS PREFIX...
      the figures of one FastAPI outage run: PREFIX.{seg,sf,log} from http_load.py per server,
      lag-*.json from asgi_lag.py, WINDOWS "name:start:end,..." (Unix s). Prints them as JSON
      and exits 1 unless: the loops kept running through the outages (every process's lag
      max under 500 ms; a blocked loop would show the store's 2 s deadline), no snowflake
      request failed, only SEGMENTS_EXHAUSTED/STORE_ERROR 503s, and segment IDs flowed again
      after each outage.
  frameworks.py celery OUT TASKS N              TASKS tasks of each kind (N IDs each) through
      examples/python/celery_app.py; IDs to OUT.seg / OUT.sf, figures as JSON
"""

from __future__ import annotations

import glob
import json
import os
import sys
import time
import urllib.request
from typing import Any, Dict, List, Tuple


def ready(ports: List[int], seconds: float) -> int:
    deadline = time.time() + seconds
    for port in ports:
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                print(f"port {port}: /readyz did not answer 200 within {seconds} s", file=sys.stderr)
                return 1
            time.sleep(0.1)
    return 0


def pct(values: List[float], p: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def outage(out: str, lag_dir: str, windows_arg: str, prefixes: List[str]) -> int:
    windows: List[Tuple[str, float, float]] = []
    for w in windows_arg.split(","):
        label, opened, closed = w.split(":")
        windows.append((label, float(opened), float(closed)))

    def inside(t: float) -> bool:
        return any(start <= t <= end for _, start, end in windows)

    problems: List[str] = []
    figures: Dict[str, Any] = {"servers": {}, "windows": {n: round(e - s, 2) for n, s, e in windows}}
    for prefix in prefixes:
        name = os.path.basename(prefix)
        log = [line.split() for line in open(f"{prefix}.log")]
        rows = [(float(t), kind, int(status), code) for t, kind, status, code in log]
        seg = [r for r in rows if r[1] == "seg"]
        sf = [r for r in rows if r[1] == "sf"]
        f: Dict[str, Any] = {
            "requests": len(rows),
            "seg_ok": sum(1 for r in seg if r[2] == 200),
            "seg_ok_during_outages": sum(1 for r in seg if r[2] == 200 and inside(r[0])),
            "seg_503_during_outages": sum(1 for r in seg if r[2] == 503 and inside(r[0])),
            "seg_failed": sum(1 for r in seg if r[2] != 200),
            "sf_failed": sum(1 for r in sf if r[2] != 200),
            "sf_ok_during_outages": sum(1 for r in sf if r[2] == 200 and inside(r[0])),
        }
        codes = sorted({r[3] for r in seg if r[2] != 200})
        f["seg_error_codes"] = codes
        if any(c not in ("SEGMENTS_EXHAUSTED", "STORE_ERROR") for c in codes):
            problems.append(f"{name}: segment requests failed with {codes}")
        if f["sf_failed"]:
            problems.append(f"{name}: {f['sf_failed']} snowflake requests failed (Redis stayed up)")
        if f["sf_ok_during_outages"] == 0:
            problems.append(f"{name}: no snowflake request was answered during the outages")
        # Recovery: after each window (and before the next), how long until a segment
        # request succeeded with none failing after it.
        recovery = {}
        for i, (wname, _start, end) in enumerate(windows):
            until = windows[i + 1][1] if i + 1 < len(windows) else float("inf")
            after = [r for r in seg if end < r[0] < until]
            failed = [r[0] for r in after if r[2] != 200]
            ok_later = [r for r in after if r[2] == 200 and (not failed or r[0] > failed[-1])]
            if not ok_later:
                problems.append(f"{name}: segment IDs did not flow again after {wname}")
            else:
                recovery[wname] = round((ok_later[0][0] - end) * 1000)
        f["recovery_ms"] = recovery
        figures["servers"][name] = f
    lags_all: List[float] = []
    procs = []
    for path in sorted(glob.glob(os.path.join(lag_dir, "lag-*.json"))):
        data = json.load(open(path))
        lags = [lag for t, lag in data["samples"] if inside(t)]
        if not lags:
            problems.append(f"process {data['pid']}: no loop ticks during the outages")
            continue
        lags_all += lags
        procs.append({"pid": data["pid"], "ticks": len(lags), "p99_ms": pct(lags, 0.99), "max_ms": max(lags)})
        if max(lags) >= 500:
            problems.append(f"process {data['pid']}: the loop was held {max(lags)} ms during an outage")
    if len(procs) < 2:
        problems.append(f"lag samples from {len(procs)} processes")
    figures["loop_lag_during_outages"] = {
        "processes": len(procs),
        "p99_ms": round(pct(lags_all, 0.99), 1),
        "max_ms": round(max(lags_all or [0.0]), 1),
        "per_process": procs,
    }
    with open(out, "w") as fh:
        json.dump(figures, fh, indent=1)
    print(json.dumps(figures))
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    return 1 if problems else 0


def celery(out: str, tasks: int, n: int) -> int:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))
    from celery_app import order_ids, snowflake_ids

    started = time.time()
    pending = [order_ids.delay(n) for _ in range(tasks)] + [snowflake_ids.delay(n) for _ in range(tasks)]
    answers = [p.get(timeout=60) for p in pending]
    seg = [a for a in answers[:tasks]]
    sf = [a for a in answers[tasks:]]
    with open(f"{out}.seg", "w") as fh:
        fh.write("".join(f"{i}\n" for a in seg for i in a["ids"]))
    with open(f"{out}.sf", "w") as fh:
        fh.write("".join(f"{i}\n" for a in sf for i in a["ids"]))
    workers = {a["pid"]: a["worker_id"] for a in sf}
    figures: Dict[str, Any] = {
        "tasks": len(answers),
        "seconds": round(time.time() - started, 2),
        "processes": len({a["pid"] for a in answers}),
        "worker_ids": sorted(set(workers.values())),
    }
    print(json.dumps(figures))
    if len(set(workers.values())) != len(workers):
        print(f"problem: pool processes shared a worker ID: {workers}", file=sys.stderr)
        return 1
    if figures["processes"] < 2:
        print("problem: one pool process served every task", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "ready":
        seconds = 60.0
        if "--seconds" in args:
            i = args.index("--seconds")
            seconds = float(args[i + 1])
            del args[i : i + 2]
        return ready([int(p) for p in args], seconds)
    if cmd == "outage":
        return outage(args[0], args[1], args[2], args[3:])
    if cmd == "celery":
        return celery(args[0], int(args[1]), int(args[2]))
    raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    sys.exit(main())
