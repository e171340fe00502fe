"""Helpers of the cluster and dead-connection scenarios (clusters.sh).

  clusters.py watch LOG FILE...
      every 50 ms, appends `WALL_MS SIZE...` (the byte size of each FILE) to LOG, until
      SIGTERM: when each process wrote IDs, by the wall clock (an ID's own time can run
      ahead of it after a re-claim, so recovery is timed from the files).
  clusters.py poll URL OUT SUMMARY
      a client of `segflake serve`: GET URL (a /api/snowflake/get/... path asking for a
      batch) in a loop, each ID as a decimal line in OUT, until SIGTERM; SUMMARY counts
      the answers by status and error code and keeps the first messages.
  clusters.py report LOG --names A,B,... --event LABEL=MS... --end MS [--gap-ms N]
      for each step (LABEL at wall time MS, in order): which processes stopped issuing
      (no new ID for over --gap-ms) between it and the next step, each stop as
      `+A..+B s` from the step, and how long after the step every process was issuing
      again (its first stop's end). Fails when a process issued nothing in the second
      before --end.
  clusters.py idtimes FILE WORKER_BITS [LINES]
      `MAX_MS` of the first LINES IDs (all, by default) of a decimal ID file: the
      largest time an ID carries (twitter layout with WORKER_BITS worker bits).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import urllib.error
import urllib.request
from typing import Any, Dict, List, Optional, Tuple

TWITTER_EPOCH_MS = 1288834974657
SEQUENCE_BITS = 12

stop = False


def _on_term(signum: int, frame: Any) -> None:
    global stop
    stop = True


def now_ms() -> int:
    return int(time.time() * 1000)


def watch(log: str, files: List[str]) -> int:
    signal.signal(signal.SIGTERM, _on_term)
    with open(log, "a") as f:
        while not stop:
            sizes = [os.path.getsize(p) if os.path.exists(p) else 0 for p in files]
            f.write(f"{now_ms()} {' '.join(map(str, sizes))}\n")
            f.flush()
            time.sleep(0.05)
    return 0


def poll(url: str, out_path: str, summary_path: str) -> int:
    signal.signal(signal.SIGTERM, _on_term)
    s: Dict[str, Any] = {"requests": 0, "ids": 0, "statuses": {}, "codes": {}, "messages": [], "transport_errors": 0}
    with open(out_path, "a") as out:
        while not stop:
            status, body = 0, b""
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    status, body = r.status, r.read()
            except urllib.error.HTTPError as e:
                status, body = e.code, e.read()
            except OSError:
                s["transport_errors"] += 1
                time.sleep(0.05)
                continue
            s["requests"] += 1
            s["statuses"][str(status)] = s["statuses"].get(str(status), 0) + 1
            if status == 200:
                ids = json.loads(body)["ids"]
                out.write("".join(f"{int(i)}\n" for i in ids))
                out.flush()
                s["ids"] += len(ids)
                time.sleep(0.001)
                continue
            try:
                err = json.loads(body)
                code, msg = err.get("code", "?"), err.get("message", "")
            except ValueError:
                code, msg = "?", body[:200].decode(errors="replace")
            s["codes"][code] = s["codes"].get(code, 0) + 1
            if len(s["messages"]) < 5 and msg not in s["messages"]:
                s["messages"].append(msg)
            time.sleep(0.05)
    with open(summary_path, "w") as f:
        json.dump(s, f)
    return 0


def growths(log: str, n: int) -> List[List[int]]:
    """For each watched file, the wall times at which it grew."""
    out: List[List[int]] = [[] for _ in range(n)]
    prev: Optional[List[int]] = None
    with open(log) as f:
        for line in f:
            parts = line.split()
            if len(parts) != n + 1:
                continue  # a line cut by the watcher's stop
            t, sizes = int(parts[0]), [int(x) for x in parts[1:]]
            if prev is not None:
                for i in range(n):
                    if sizes[i] > prev[i]:
                        out[i].append(t)
            prev = sizes
    return out


def stalls(times: List[int], start: int, end: int, gap_ms: int) -> List[Tuple[int, int]]:
    """The stretches without growth longer than gap_ms that overlap [start, end): (last
    growth before, first growth after). One that never ended shows in report's check of
    the last second."""
    return [(a, b) for a, b in zip(times, times[1:]) if a < end and b > start and b - a > gap_ms]


def report(args: argparse.Namespace) -> int:
    names = args.names.split(",")
    times = growths(args.log, len(names))
    events: List[Tuple[str, int]] = []
    for e in args.event:
        label, _, ms = e.rpartition("=")
        events.append((label, int(ms)))
    bad: List[str] = []
    parts: List[str] = []
    for k, (label, at) in enumerate(events):
        end = events[k + 1][1] if k + 1 < len(events) else args.end
        stopped: List[str] = []
        worst = 0
        for i, name in enumerate(names):
            found = stalls(times[i], at, end, args.gap_ms)
            if not found:
                continue
            spans = [f"{(last - at) / 1000:+.1f}..{(resumed - at) / 1000:+.1f} s" for last, resumed in found]
            worst = max(worst, found[0][1] - at)
            stopped.append(f"{name} {', '.join(spans)}")
        if stopped:
            parts.append(
                f"{label}: {len(stopped)} of {len(names)} stopped, each issuing again within "
                f"{worst / 1000:.1f} s ({'; '.join(stopped)})"
            )
        else:
            parts.append(f"{label}: no process stopped for over {args.gap_ms} ms")
    for i, name in enumerate(names):
        if not any(args.end - 1000 <= t <= args.end for t in times[i]):
            bad.append(f"{name} was not issuing in the last second")
    print("; ".join(parts))
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 1
    return 0


def idtimes(path: str, worker_bits: int, lines: Optional[int]) -> int:
    shift = SEQUENCE_BITS + worker_bits
    with open(path, "rb") as f:
        data = f.read().split(b"\n")[:-1]
    if lines is not None:
        data = data[:lines]
    if not data:
        print(0)
        return 0
    print(max((int(x) >> shift) for x in data) + TWITTER_EPOCH_MS)
    return 0


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, rest = sys.argv[1], sys.argv[2:]
    if cmd == "watch":
        return watch(rest[0], rest[1:])
    if cmd == "poll":
        return poll(*rest)
    if cmd == "idtimes":
        return idtimes(rest[0], int(rest[1]), int(rest[2]) if len(rest) > 2 else None)
    if cmd == "report":
        ap = argparse.ArgumentParser(prog="clusters.py report")
        ap.add_argument("log")
        ap.add_argument("--names", required=True)
        ap.add_argument("--event", action="append", default=[])
        ap.add_argument("--end", type=int, required=True)
        ap.add_argument("--gap-ms", type=int, default=600)
        return report(ap.parse_args(rest))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
