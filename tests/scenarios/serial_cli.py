"""Date serials from `segflake serial --counter redis://...` run again and again for a while,
each run given the last serial of the one before (`--last`, as a host persists it); under
libfaketime the CLI's clock may be off or stepped.

  serial_cli.py --cli PATH --url redis://... --prefix P --seconds S --out FILE --summary FILE
                [--sequence-digits 6] [--max-behind-ms MS] [--max-ahead-ms MS] [--batch 500]

Serials go to FILE (u64 LE); the summary matches serial_worker.py's, errors counted by the
CLI's error code.
"""

from __future__ import annotations

import argparse
import array
import json
import re
import select
import subprocess
import time
from typing import Any, Dict, List


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--sequence-digits", default="6")
    ap.add_argument("--max-behind-ms", default="60000")
    ap.add_argument("--max-ahead-ms", default="60000")
    ap.add_argument("--batch", default="500")
    args = ap.parse_args()
    base = [args.cli, "serial", "--counter", args.url, "--counter-prefix", args.prefix,
            "--sequence-digits", args.sequence_digits, "--counter-max-behind-ms", args.max_behind_ms,
            "--counter-max-ahead-ms", args.max_ahead_ms, "--count", args.batch]
    serials = array.array("Q")
    errors: Dict[str, int] = {}
    messages: List[str] = []
    out_of_order = runs = 0
    last = 0
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        cmd = base + (["--last", str(last)] if last else [])
        run = subprocess.run(cmd, capture_output=True, text=True)
        runs += 1
        for line in run.stdout.splitlines():
            s = int(line)
            if s <= last:
                out_of_order += 1
            last = max(last, s)
            serials.append(s)
        if run.returncode != 0:
            code = re.search(r"error code: (\w+)", run.stderr)
            name = code.group(1) if code else f"exit {run.returncode}"
            errors[name] = errors.get(name, 0) + 1
            if len(messages) < 3:
                messages.append(f"{name}: {run.stderr.strip().splitlines()[0]}")
            # time.sleep fails with EINVAL under libfaketime here; select does not.
            select.select([], [], [], 0.05)
    with open(args.out, "wb") as f:
        serials.tofile(f)
    summary: Dict[str, Any] = {"issued": len(serials), "errors": errors, "messages": messages,
                               "out_of_order": out_of_order, "last": last, "runs": runs}
    with open(args.summary, "w") as f:
        json.dump(summary, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
