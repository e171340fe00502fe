"""Date serials from the shared Redis counter (segflake.counters.RedisSerialCounter) for a
while, as fast as Redis answers; under libfaketime its clock may be off or stepped.

  serial_worker.py --url redis://... --prefix P --seconds S --out FILE --summary FILE
                   [--sequence-digits 6] [--max-behind-ms MS] [--max-ahead-ms MS]

Serials go to FILE (u64 LE). The summary: issued, errors by class, the first messages,
how many serials were not above the one before (must be 0), and `last` (what a host
persists).
"""

from __future__ import annotations

import argparse
import array
import json
import select
import time
from typing import Any, Dict, List

import segflake
from segflake.counters import RedisSerialCounter


def pause(seconds: float) -> None:
    # time.sleep fails with EINVAL under libfaketime here (its clock_nanosleep); select does not.
    select.select([], [], [], seconds)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--sequence-digits", type=int, default=6)
    ap.add_argument("--max-behind-ms", type=int, default=None)
    ap.add_argument("--max-ahead-ms", type=int, default=None)
    args = ap.parse_args()
    counter = RedisSerialCounter(args.url, prefix=args.prefix)
    gen = segflake.SerialGenerator(
        counter=counter,
        sequence_digits=args.sequence_digits,
        counter_max_behind_ms=args.max_behind_ms,
        counter_max_ahead_ms=args.max_ahead_ms,
    )
    serials = array.array("Q")
    errors: Dict[str, int] = {}
    messages: List[str] = []
    out_of_order = 0
    previous = 0
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        try:
            s = gen.next()
        except segflake.SegflakeError as e:
            name = type(e).__name__
            errors[name] = errors.get(name, 0) + 1
            if len(messages) < 3:
                messages.append(f"{name}: {e}")
            pause(0.05)
            continue
        if s <= previous:
            out_of_order += 1
        previous = s
        serials.append(s)
    counter.close()
    with open(args.out, "wb") as f:
        serials.tofile(f)
    summary: Dict[str, Any] = {
        "issued": len(serials),
        "errors": errors,
        "messages": messages,
        "out_of_order": out_of_order,
        "last": gen.last,
    }
    with open(args.summary, "w") as f:
        json.dump(summary, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
