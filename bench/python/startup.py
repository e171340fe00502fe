"""Start-up cost: `import segflake` and the first ID in a fresh interpreter, beside the peers.

For each library, N fresh interpreters (this Python, the bench venv's) each time inside
themselves, with time.perf_counter_ns(), the import and then the creation of a generator
plus its first ID (each library's documented simplest call), and print both as JSON; the
parent times the whole process, spawn to exit. A floor row runs a bare `python -c pass`.
Every round runs every library once, in an order rotated each round, so the load from
other processes falls on all of them alike; one unrecorded round first warms the page
cache. The table shows medians.

Usage (from the bench venv): python startup.py [--runs 21]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from typing import Dict, List, Optional

# Runs in each child: the two timings go first, nothing else is imported before them
# (`time` is built in), and the JSON line is written by hand so `json` is not imported.
CHILD = """\
import time
t0 = time.perf_counter_ns()
{imp}
t1 = time.perf_counter_ns()
{first}
t2 = time.perf_counter_ns()
assert first is not None
print('{{"import_ns": %d, "first_id_ns": %d}}' % (t1 - t0, t2 - t1))
"""


@dataclass
class Lib:
    name: str
    dist: Optional[str]  # None: the floor (a bare interpreter)
    imp: str = ""
    first: str = ""  # statements that leave the first ID in `first`
    call: str = ""  # the first-ID call as shown in the table (default: `first`'s expression)
    imports: List[int] = field(default_factory=list)
    firsts: List[int] = field(default_factory=list)
    walls: List[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.call and self.first.startswith("first = ") and "\n" not in self.first:
            self.call = f"`{self.first[len('first = '):]}`"

    def argv(self) -> List[str]:
        if self.dist is None:
            return [sys.executable, "-c", "pass"]
        return [sys.executable, "-c", CHILD.format(imp=self.imp, first=self.first)]


def libs() -> List[Lib]:
    return [
        Lib("python -c pass (floor)", None, call="-"),
        Lib("segflake", "segflake", "import segflake",
            "first = segflake.Snowflake(worker_id=1).next_id()"),
        Lib("snowflake-id", "snowflake-id", "from snowflake import SnowflakeGenerator",
            "first = next(SnowflakeGenerator(1))"),
        Lib("sonyflake", "sonyflake", "from sonyflake import Sonyflake",
            "import datetime\n"
            "first = Sonyflake(start_time=datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc),\n"
            "                  machine_id=1).next_id()",
            "`Sonyflake(start_time=..., machine_id=1).next_id()`"),
        Lib("uuid-utils", "uuid-utils", "import uuid_utils",
            "first = uuid_utils.uuid7()"),
        Lib("uuid6", "uuid6", "import uuid6",
            "first = uuid6.uuid7()"),
        Lib("python-ulid", "python-ulid", "from ulid import ULID",
            "first = ULID()"),
    ]


def run_once(lib: Lib, cwd: str) -> Dict[str, int]:
    """Spawns one interpreter; returns its own timings (none for the floor) and the wall."""
    start = time.perf_counter_ns()
    proc = subprocess.run(lib.argv(), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    wall = time.perf_counter_ns() - start
    if proc.returncode != 0:
        sys.exit(f"{lib.name}: exit status {proc.returncode}\n{proc.stderr}")
    out: Dict[str, int] = json.loads(proc.stdout) if lib.dist is not None else {}
    out["wall_ns"] = wall
    return out


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def version_of(dist: Optional[str]) -> str:
    if dist is None:
        return f"CPython {platform.python_version()}"
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def ms(ns: float, digits: int = 2) -> str:
    return f"{ns / 1e6:,.{digits}f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21, help="fresh interpreters per library")
    args = ap.parse_args()

    table = libs()
    for lib in table:
        if lib.dist is not None and version_of(lib.dist) == "not installed":
            sys.exit(f"{lib.dist} is not installed in {sys.prefix}")
    cwd = os.path.dirname(os.path.abspath(__file__))
    load_before = loadavg()
    for lib in table:  # warm-up round, not recorded
        run_once(lib, cwd)
    for k in range(args.runs):
        print(f"  round {k + 1}/{args.runs} ...", file=sys.stderr, flush=True)
        shift = k % len(table)
        for lib in table[shift:] + table[:shift]:
            r = run_once(lib, cwd)
            lib.walls.append(r["wall_ns"])
            if lib.dist is not None:
                lib.imports.append(r["import_ns"])
                lib.firsts.append(r["first_id_ns"])
    load_after = loadavg()

    floor = statistics.median(table[0].walls)
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print()
    print(f"Start-up, {args.runs} fresh interpreters per library (medians); CPython "
          f"{platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores, "
          f"{platform.system()}, {now}, load average {load_before} before, {load_after} after")
    print()
    print("| library | version | first-ID call | import ms | generator + first ID ms | "
          "process wall ms | wall minus floor ms |")
    print("|---|---|---|---:|---:|---:|---:|")
    for lib in table:
        wall = statistics.median(lib.walls)
        if lib.dist is None:
            imp = first = extra = "-"
        else:
            imp = ms(statistics.median(lib.imports))
            first = ms(statistics.median(lib.firsts), 3)
            extra = ms(wall - floor)
        print(f"| {lib.name} | {version_of(lib.dist)} | {lib.call} | {imp} | {first} | "
              f"{ms(wall)} | {extra} |")
    print()
    print("import and first ID: timed inside each interpreter with time.perf_counter_ns(). "
          "Process wall: spawn to exit, timed by the parent. Wall minus floor: the median wall "
          "minus the median wall of `python -c pass`.")


if __name__ == "__main__":
    main()
