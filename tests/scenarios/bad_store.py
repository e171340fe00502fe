"""Bad stores in Python: every contract violation is refused and none of its IDs issued.

Each case hands out one good range [1, 1001), then keeps answering with a bad one; the
generator must issue exactly 1..=1000, then fail with SegmentsExhaustedError whose
message names the violation; once the store behaves again it resumes above everything.
"""

from __future__ import annotations

import sys
from typing import List, Optional, Tuple

import segflake

CASES = {
    # name: (first answer or None, the bad answer repeated, words the error must contain)
    "overlap": ((1001, 1000), (1501, 1000), "overlaps or precedes"),
    "smaller_max_id": ((1001, 1000), (600, 100), "overlaps or precedes"),
    "same_range_twice": ((1001, 1000), (1001, 1000), "overlaps or precedes"),
    "zero_step": ((1001, 1000), (3001, 0), "step 0"),
    "max_id_below_step": (None, (500, 1000), "below step"),
    # does not fit a signed 64-bit max_id (Leaf's BIGINT): a store error, not an ID
    "max_id_too_large": (None, (1 << 64, 1000), "max_id"),
}


class ScriptedStore:
    def __init__(self, first: Optional[Tuple[int, int]], bad: Tuple[int, int]) -> None:
        self.answers: List[Tuple[int, int]] = [first] if first else []
        self.bad = bad

    def allocate(self, tag: str, step: int) -> Tuple[int, int]:
        return self.answers.pop(0) if self.answers else self.bad


def run(name: str, first: Optional[Tuple[int, int]], bad: Tuple[int, int], words: str) -> str:
    store = ScriptedStore(first, bad)
    gen = segflake.SegmentGenerator(store, step=1000, dynamic_step=False, retry_backoff_ms=5, wait_timeout_ms=300)
    ids: List[int] = []
    err: Optional[segflake.SegflakeError] = None
    while len(ids) <= 5000:
        try:
            ids.append(gen.next_id("t"))
        except segflake.SegflakeError as exc:
            err = exc
            break
    expected = list(range(1, 1001)) if first else []
    assert ids == expected, f"{name}: issued {len(ids)} IDs {ids[:3]}..{ids[-3:]}, expected {len(expected)}"
    assert err is not None, f"{name}: no error"
    text = str(err)
    # The caller sees SegmentsExhausted (or the violation itself) naming the violation.
    assert isinstance(err, (segflake.SegmentsExhaustedError, segflake.StoreContractViolationError, segflake.StoreError)), (
        f"{name}: {type(err).__name__}: {text}"
    )
    if name != "max_id_too_large":
        assert "store contract violation" in text, f"{name}: the error does not name the violation: {text}"
    assert words in text, f"{name}: {words!r} not in {text!r}"
    assert gen.stats("t").failures >= 1, f"{name}: no failure recorded"
    # The store behaves again: the generator resumes strictly above every range it accepted.
    store.bad = (20001, 1000)
    nxt = gen.next_id("t")
    assert nxt == 19001, f"{name}: resumed at {nxt}, expected 19001"
    gen.close()
    return f"{name} ({type(err).__name__})"


def main() -> int:
    done = [run(name, *case) for name, case in CASES.items()]
    print(f"{len(done)} bad answers refused, no ID from them issued: " + ", ".join(done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
