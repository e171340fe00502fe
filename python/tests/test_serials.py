"""SerialGenerator: local and shared counters, clock steps, restarts, errors."""

from typing import Any, Dict

import pytest

import segflake

T0 = 1744545600000  # 2025-04-13T12:00:00Z


def test_local_counter_and_decode() -> None:
    clock = segflake.ManualClock(T0)
    gen = segflake.SerialGenerator(worker_id=7, worker_digits=1, sequence_digits=4, clock=clock)
    a, b = gen.next(), gen.next_id()
    assert (a, b) == (25041312000070001, 25041312000070002)
    parts = gen.decode(b)
    assert parts.to_dict() == {"date": 250413120000, "unix_seconds": T0 // 1000, "worker_id": 7, "sequence": 2}
    assert gen.last == b
    clock.rewind_ms(60_000)  # the clock steps back a minute: serials keep increasing
    assert gen.next() == 25041312000070003
    # A restart with the persisted last value continues above it.
    again = segflake.SerialGenerator(worker_id=7, worker_digits=1, sequence_digits=4, clock=clock, last=gen.last)
    assert again.next() == 25041312000070004
    assert "worker_id=7" in repr(gen)


def test_utc_offset() -> None:
    gen = segflake.SerialGenerator(utc_offset_minutes=480)  # UTC+8
    assert gen.date_prefix(T0 // 1000) == 250413200000
    assert gen.decode(gen.format(T0 // 1000, 1)).unix_seconds == T0 // 1000


def test_sequence_exhausted_within_a_second() -> None:
    clock = segflake.ManualClock(T0)
    gen = segflake.SerialGenerator(sequence_digits=1, clock=clock)
    for _ in range(9):
        gen.next()
    with pytest.raises(segflake.SerialExhaustedError, match="at most 10 numbers per second"):
        gen.next()
    clock.advance_ms(1000)
    assert gen.next() == 2504131200011


def test_shared_counter() -> None:
    counters: Dict[int, int] = {}
    seconds = []

    def incr(second: int) -> int:
        seconds.append(second)
        counters[second] = counters.get(second, 0) + 1
        return counters[second]

    clock = segflake.ManualClock(T0)
    gen = segflake.SerialGenerator(counter=incr, clock=clock)
    assert [gen.next() for _ in range(3)] == [2504131200000001, 2504131200000002, 2504131200000003]
    assert seconds == [T0 // 1000] * 3
    counters[T0 // 1000] = 0  # the counter was reset: asks again until above the last
    assert gen.next() == 2504131200000004


def test_counter_errors() -> None:
    def broken(second: int) -> int:
        raise ConnectionError("redis down")

    with pytest.raises(segflake.StoreError) as info:
        segflake.SerialGenerator(counter=broken).next()
    assert "ConnectionError: redis down" in str(info.value)
    assert isinstance(info.value.__cause__, ConnectionError)

    for garbage, words in (("1", 'the string "1"'), (-1, "returned -1;"), (True, "the boolean true"),
                           (None, "returned nothing")):
        with pytest.raises(segflake.StoreError, match=words):
            segflake.SerialGenerator(counter=lambda s, g=garbage: g).next()

    stuck = segflake.SerialGenerator(counter=lambda s: 1)
    stuck.next()
    with pytest.raises(segflake.StoreError, match="8 sequence numbers in a row"):
        stuck.next()

    with pytest.raises(segflake.SerialExhaustedError):
        segflake.SerialGenerator(counter=lambda s: 10_000).next()


@pytest.mark.parametrize("kwargs, words", [
    ({"sequence_digits": 0}, "1..=7"),
    ({"sequence_digits": 300}, "1..=7"),
    ({"worker_digits": 4, "sequence_digits": 4}, "at most 7"),
    ({"worker_id": 10, "worker_digits": 1}, "0..=9"),
    ({"worker_id": -1}, "worker_id: got -1;"),
    ({"utc_offset_minutes": 1081}, "-1080..=1080"),
    ({"utc_offset_minutes": 2**40}, "-1080..=1080"),
    ({"utc_offset_minutes": "8h"}, "str"),
    ({"last": 123}, "last"),
    ({"counter": 5}, "callable"),
    ({"clock": 5}, "ManualClock"),
])
def test_option_errors(kwargs: Dict[str, Any], words: str) -> None:
    with pytest.raises(segflake.InvalidArgumentError) as info:
        segflake.SerialGenerator(**kwargs)
    assert words in str(info.value), str(info.value)


def test_format_errors() -> None:
    gen = segflake.SerialGenerator()
    with pytest.raises(segflake.InvalidArgumentError, match="2000 to 2099"):
        gen.format(4102444800, 1)
    with pytest.raises(segflake.SerialExhaustedError):
        gen.format(T0 // 1000, 10_000)
    with pytest.raises(segflake.ParseError, match="yyMMddHHmmss"):
        gen.decode(2513131200000001)
