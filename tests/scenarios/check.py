"""Duplicate check over the ID files the scenario processes wrote (u64, little-endian, or
with --text one decimal ID per line; a last line without its newline, cut by a SIGKILL, is
left out).

  check.py [--text] [--min X] [--expect N] FILE...

Prints `ids=N unique=N duplicates=N min=A max=B` and exits 1 when any ID appears twice,
when an ID is below --min, or when the total differs from --expect.
"""

from __future__ import annotations

import argparse
import array
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--min", type=int, default=None)
    ap.add_argument("--expect", type=int, default=None)
    ap.add_argument("--text", action="store_true")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    ids = array.array("Q")
    for path in args.files:
        with open(path, "rb") as f:
            data = f.read()
        if args.text:
            lines = data.split(b"\n")[:-1]
            try:
                ids.extend(int(line) for line in lines)
            except ValueError as e:
                print(f"{path}: not one decimal ID per line: {e}", file=sys.stderr)
                return 1
            continue
        if len(data) % 8:
            print(f"{path}: {len(data)} bytes is not a whole number of u64 IDs", file=sys.stderr)
            return 1
        ids.frombytes(data)
    s = sorted(ids)
    dups = sum(1 for a, b in zip(s, s[1:]) if a == b)
    lo = s[0] if s else 0
    hi = s[-1] if s else 0
    print(f"ids={len(s)} unique={len(s) - dups} duplicates={dups} min={lo} max={hi}")
    ok = dups == 0
    if dups:
        shown = sorted({a for a, b in zip(s, s[1:]) if a == b})[:5]
        print(f"DUPLICATES, e.g. {shown}", file=sys.stderr)
    if args.min is not None and s and lo < args.min:
        print(f"an ID ({lo}) is below the floor {args.min}", file=sys.stderr)
        ok = False
    if args.expect is not None and len(s) != args.expect:
        print(f"expected {args.expect} IDs, found {len(s)}", file=sys.stderr)
        ok = False
    if not s:
        print("no IDs at all", file=sys.stderr)
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
