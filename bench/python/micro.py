"""Per-call cost of segflake's hot paths beside the no-op floor, with timeit.

Every case runs 100,000 calls per repetition, the cases interleaved, and the minimum
over the repetitions is kept (the least disturbed by other processes on the machine).

Usage (from the bench venv): python micro.py [repetitions, default 40]
"""

import sys
import timeit

import segflake
from segflake import _native


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    snow = segflake.Snowflake(1, max_drift_ms=3_600_000)  # never waits: the generator's own cost
    gen = segflake.SegmentGenerator(segflake.MemoryStore(), step=1_000_000, max_step=10_000_000)
    tag = gen.tag("b")
    tag.next_id()
    engine = segflake.SegmentEngine("x", step=10_000_000, max_step=10_000_000)
    engine.begin_fetch()
    engine.complete_fetch((10_000_001, 10_000_000))
    obf = segflake.Obfuscator(bytes(16))
    cases = [
        ("no-op pyo3 call (floor)", "f()", {"f": _native._bench_noop}),
        ("builtin len(())", "f(x)", {"f": len, "x": ()}),
        ("SegmentEngine.try_next()", "f()", {"f": engine.try_next}),
        ("SegmentTag.next_id()", "f()", {"f": tag.next_id}),
        ("SegmentGenerator.next_id('b')", "f('b')", {"f": gen.next_id}),
        ("Snowflake.next_id() (1 h drift)", "f()", {"f": snow.next_id}),
        ("Obfuscator.obfuscate(5)", "f(5)", {"f": obf.obfuscate}),
        ("encode_base62(5)", "f(5)", {"f": segflake.encode_base62}),
    ]
    best = {name: float("inf") for name, _, _ in cases}
    for _ in range(reps):
        for name, stmt, glb in cases:
            best[name] = min(best[name], timeit.timeit(stmt, globals=glb, number=100_000) * 1e4)
    floor = best[cases[0][0]]
    print("| call | ns/call | vs floor |")
    print("|---|---:|---:|")
    for name, _, _ in cases:
        print(f"| {name} | {best[name]:.1f} | {best[name] / floor:.2f}x |")


if __name__ == "__main__":
    main()
