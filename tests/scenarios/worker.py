"""A Python segment-ID process for the scenarios: draws IDs from a real database through
segflake.stores and writes them (u64, little-endian) to a file for the duplicate check.

  worker.py --db pg|mysql|redis|http|multi-pg --tag T --out FILE --summary FILE
            [--count N | --rate R --duration S [--stop-file F]] [--step N] [--hammer S]

--count N      draw N IDs at full speed (one next_id call per ID)
--rate R       draw R IDs per second for --duration S seconds, recording failures and the
               longest stall (the longest wait between two IDs); IDs are flushed to FILE as
               they are issued, so a process killed with -9 leaves what it issued
--stop-file F  with --rate: stop as soon as F exists (--duration is then the longest run)
--hammer S     then call the store's allocate(tag, 1) directly for S seconds (refill rate;
               every max_id is written to FILE.allocs for the overlap check)
--db multi-pg  a MultiStore over two PostgreSQL servers (SEGFLAKE_PG_DSN, SEGFLAKE_PG2_DSN);
               the summary lists the ranges each one handed out (``ranges``)
Connection settings come from SEGFLAKE_PG_DSN, SEGFLAKE_MYSQL_*, SEGFLAKE_REDIS_URL.
"""

from __future__ import annotations

import argparse
import array
import json
import os
import sys
import time
from typing import Any, Dict, List, Tuple

import segflake
from segflake.stores import HttpStore, MultiStore, MySQLStore, PostgresStore, RedisStore


def make_store(db: str) -> Any:
    # The worker is told its step (--step): the rows' own steps do not override it.
    if db == "pg":
        return PostgresStore(os.environ["SEGFLAKE_PG_DSN"], use_row_step=False)
    if db == "mysql" and os.environ.get("SEGFLAKE_MYSQL_URL"):  # several hosts: sql_ha.sh
        return MySQLStore(os.environ["SEGFLAKE_MYSQL_URL"], use_row_step=False)
    if db == "mysql":
        return MySQLStore(
            host=os.environ["SEGFLAKE_MYSQL_HOST"],
            port=int(os.environ["SEGFLAKE_MYSQL_PORT"]),
            user=os.environ["SEGFLAKE_MYSQL_USER"],
            password=os.environ["SEGFLAKE_MYSQL_PASSWORD"],
            database=os.environ["SEGFLAKE_MYSQL_DB"],
            use_row_step=False,
        )
    if db == "redis":
        return RedisStore(os.environ["SEGFLAKE_REDIS_URL"])
    if db == "http":  # a segflake serve at SEGFLAKE_HTTP_URL, with SEGFLAKE_HTTP_TOKEN if set
        return HttpStore(os.environ["SEGFLAKE_HTTP_URL"], token=os.environ.get("SEGFLAKE_HTTP_TOKEN") or None)
    raise SystemExit(f"unknown --db {db}")


class TimedStore:
    """Counts the generator's store calls and their latency."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0
        self.failures = 0
        self.total_s = 0.0
        self.max_s = 0.0
        self.ranges: List[Tuple[int, int]] = []

    def allocate(self, tag: str, step: int) -> Any:
        """The inner store's answer as it is: ``(max_id, step)``, or with the row's step
        ``(max_id, step, tag_step)``."""
        t = time.perf_counter()
        try:
            answer = self.inner.allocate(tag, step)
            max_id, got = answer[0], answer[1]
        except BaseException:
            self.failures += 1
            raise
        finally:
            dt = time.perf_counter() - t
            self.total_s += dt
            self.max_s = max(self.max_s, dt)
        self.calls += 1
        self.ranges.append((max_id - got, max_id))
        return answer


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--tag", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--rate", type=int, default=0)
    ap.add_argument("--duration", type=float, default=0.0)
    ap.add_argument("--stop-file")
    ap.add_argument("--step", type=int, default=1000)
    ap.add_argument("--wait-timeout-ms", type=int, default=1000)
    ap.add_argument("--hammer", type=float, default=0.0)
    args = ap.parse_args()

    if args.db == "multi-pg":
        parts = [TimedStore(PostgresStore(os.environ[v])) for v in ("SEGFLAKE_PG_DSN", "SEGFLAKE_PG2_DSN")]
        source: Any = MultiStore(parts)
    else:
        parts = [TimedStore(make_store(args.db))]
        source = parts[0]
    store = parts[0]
    gen = segflake.SegmentGenerator(
        source, step=args.step, max_step=args.step, dynamic_step=False, wait_timeout_ms=args.wait_timeout_ms
    )
    tag = gen.tag(args.tag)
    summary: Dict[str, Any] = {"lang": "python", "pid": os.getpid(), "db": args.db}
    errors: Dict[str, int] = {}
    messages: List[str] = []
    t0 = time.perf_counter()
    issued = 0
    longest_stall = 0.0
    stall_end_ms = 0  # when the longest stall ended (Unix ms)
    with open(args.out, "wb", buffering=0) as out:
        if args.count:
            ids = array.array("Q")
            next_id = tag.next_id
            append = ids.append
            for _ in range(args.count):
                append(next_id())
            issued = len(ids)
            out.write(ids.tobytes())
        else:
            buf = array.array("Q")
            last_ok = t0
            last_flush = t0
            end = t0 + args.duration
            while True:
                now = time.perf_counter()
                if now >= end:
                    break
                due = int((now - t0) * args.rate) - issued
                if due <= 0:
                    time.sleep(0.0005)
                    continue
                for _ in range(min(due, 1000)):
                    try:
                        buf.append(tag.next_id())
                    except segflake.SegflakeError as exc:
                        name = type(exc).__name__
                        errors[name] = errors.get(name, 0) + 1
                        if len(messages) < 5 and str(exc) not in messages:
                            messages.append(str(exc))
                        time.sleep(0.02)
                        break
                    issued += 1
                    t = time.perf_counter()
                    if t - last_ok > longest_stall:
                        longest_stall, stall_end_ms = t - last_ok, int(time.time() * 1000)
                    last_ok = t
                if now - last_flush > 0.02:
                    out.write(buf.tobytes())
                    buf = array.array("Q")
                    last_flush = now
                    if args.stop_file and os.path.exists(args.stop_file):
                        break
            out.write(buf.tobytes())
    elapsed = time.perf_counter() - t0
    stats = tag.stats()
    gen.close()
    summary.update(
        issued=issued,
        elapsed_s=round(elapsed, 3),
        ids_per_s=round(issued / elapsed) if elapsed else 0,
        allocations=sum(p.calls for p in parts),
        store_failures=sum(p.failures for p in parts),
        alloc_ms_mean=round(
            sum(p.total_s for p in parts) / max(1, sum(p.calls + p.failures for p in parts)) * 1000, 3
        ),
        alloc_ms_max=round(max(p.max_s for p in parts) * 1000, 3),
        errors=errors,
        error_messages=messages,
        longest_stall_ms=round(longest_stall * 1000, 1),
        longest_stall_end_ms=stall_end_ms,
        engine_failures=stats.failures,
    )
    if len(parts) > 1:
        summary.update(ranges=[p.ranges for p in parts], store_calls=[p.calls for p in parts])
    if args.hammer:
        inner = store.inner
        allocs = array.array("Q")
        t1 = time.perf_counter()
        while time.perf_counter() - t1 < args.hammer:
            # a step-1 allocation owns the single ID max_id - 1
            allocs.append(inner.allocate(args.tag, 1)[0] - 1)
        h = time.perf_counter() - t1
        with open(args.out + ".allocs", "wb") as f:
            f.write(allocs.tobytes())
        summary.update(hammer_allocs=len(allocs), hammer_s=round(h, 3))
    with open(args.summary, "w") as f:
        json.dump(summary, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
