"""A snowflake process under libfaketime whose wall clock is stepped while it runs.

  clock_worker.py --out FILE --summary FILE --rate R --schedule "0:+0,1.5:-1,3:-10"
                  [--not-before-ms MS]

Runs with LD_PRELOAD=libfaketime and FAKETIME_TIMESTAMP_FILE=F, FAKETIME_NO_CACHE=1: at
each scheduled second (of its own run) it writes the offset into F, so its clock steps.
Per phase it records the IDs issued and the errors (class and message); IDs go to FILE
(u64 LE). The summary holds the high-water mark a service would persist.
"""

from __future__ import annotations

import argparse
import array
import json
import os
import select
import sys
import time
from typing import Any, Dict, List, Optional

import segflake


def pause(seconds: float) -> None:
    # time.sleep fails with EINVAL under libfaketime here (its clock_nanosleep); select does not.
    select.select([], [], [], seconds)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--rate", type=int, default=2000)
    ap.add_argument("--schedule", required=True)
    ap.add_argument("--duration", type=float, required=True)
    ap.add_argument("--not-before-ms", type=int, default=None)
    args = ap.parse_args()
    stamp_file = os.environ["FAKETIME_TIMESTAMP_FILE"]
    schedule = [(float(t), off) for t, off in (item.split(":") for item in args.schedule.split(","))]

    def set_offset(off: str) -> None:
        with open(stamp_file + ".tmp", "w") as f:
            f.write(off + "\n")
        os.replace(stamp_file + ".tmp", stamp_file)

    set_offset(schedule[0][1])
    summary: Dict[str, Any] = {"phases": []}
    try:
        gen = segflake.Snowflake(1, not_before_ms=args.not_before_ms)
    except segflake.SegflakeError as exc:
        summary["start_error"] = {"class": type(exc).__name__, "code": exc.code, "message": str(exc)}
        with open(args.summary, "w") as f:
            json.dump(summary, f)
        open(args.out, "wb").close()
        return 0
    ids = array.array("Q")
    t0 = time.monotonic()
    phase_idx = 0
    phase: Dict[str, Any] = {"offset": schedule[0][1], "issued": 0, "errors": {}, "messages": []}
    last: Optional[int] = None
    out_of_order = 0
    first_error: Optional[Dict[str, Any]] = None
    while True:
        now = time.monotonic() - t0
        if now >= args.duration:
            break
        if phase_idx + 1 < len(schedule) and now >= schedule[phase_idx + 1][0]:
            summary["phases"].append(phase)
            phase_idx += 1
            set_offset(schedule[phase_idx][1])
            phase = {"offset": schedule[phase_idx][1], "issued": 0, "errors": {}, "messages": []}
        if phase["issued"] + sum(phase["errors"].values()) > (now - schedule[phase_idx][0]) * args.rate:
            pause(0.0005)
            continue
        try:
            i = gen.next_id()
        except segflake.SegflakeError as exc:
            name = type(exc).__name__
            phase["errors"][name] = phase["errors"].get(name, 0) + 1
            msgs: List[str] = phase["messages"]
            if len(msgs) < 2:
                msgs.append(f"{exc.code}: {exc}")
            pause(0.01)
            continue
        if last is not None and i <= last:
            out_of_order += 1
        last = i
        ids.append(i)
        phase["issued"] += 1
    summary["phases"].append(phase)
    summary.update(issued=len(ids), out_of_order=out_of_order, high_water_mark_ms=gen.high_water_mark_ms)
    with open(args.out, "wb") as f:
        f.write(ids.tobytes())
    with open(args.summary, "w") as f:
        json.dump(summary, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
