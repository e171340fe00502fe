"""SerialGenerator: local and shared counters, clock steps, restarts, errors."""

from typing import Any, Dict, List, Tuple

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


class ScriptCounter:
    """The script-counter protocol without a server: answers as the core's Redis script
    would, with the window check on the clock it is given (``server_ms``)."""

    def __init__(self, server_ms: int) -> None:
        self.server_ms = server_ms
        self.calls: List[Tuple[str, List[int]]] = []
        self.counts: Dict[str, int] = {}

    def run_serial_script(self, key: str, args: List[int]) -> List[int]:
        self.calls.append((key, list(args)))
        second, behind, ahead, _grace = args
        start = second * 1000
        if self.server_ms > start + 1000 + behind or start > self.server_ms + ahead:
            return [0, 0, self.server_ms]
        self.counts[key] = self.counts.get(key, 0) + 1
        return [1, self.counts[key], self.server_ms]


def test_a_script_counter_gets_the_cores_key_and_arguments() -> None:
    counter = ScriptCounter(T0)
    gen = segflake.SerialGenerator(counter=counter, worker_id=3, worker_digits=1,
                                   counter_max_behind_ms=5000, clock=segflake.ManualClock(T0))
    assert [gen.next() for _ in range(2)] == [25041312000030001, 25041312000030002]
    assert counter.calls[0] == ("serial:2504131200003", [T0 // 1000, 5000, 60000, 1000])
    assert gen.counter_key(T0 // 1000) == "serial:2504131200003"
    assert gen.counter_args(T0 // 1000) == [T0 // 1000, 5000, 60000, 1000]
    assert gen.counter_sequence(T0 // 1000, [1, 42, T0]) == 42


def test_a_refused_second_is_a_clock_skew_error_and_issues_nothing() -> None:
    behind = segflake.ManualClock(T0 - 7000)
    gen = segflake.SerialGenerator(counter=ScriptCounter(T0), counter_max_behind_ms=5000, clock=behind)
    with pytest.raises(segflake.ClockSkewError) as info:
        gen.next()
    text = str(info.value)
    assert "ended 6000 ms before the counter's clock" in text, text
    assert "counter_max_behind_ms = 5000" in text, text
    assert info.value.code == "CLOCK_SKEW"
    assert gen.last == 0
    ahead = segflake.SerialGenerator(counter=ScriptCounter(T0), counter_max_ahead_ms=0,
                                     clock=segflake.ManualClock(T0 + 1000))
    with pytest.raises(segflake.ClockSkewError, match="counter_max_ahead_ms = 0"):
        ahead.next()
    with pytest.raises(segflake.StoreError, match=r"\[2, 1, 5\]"):
        gen.counter_sequence(T0 // 1000, [2, 1, 5])


def test_redis_serial_counter_sends_the_cores_script_under_its_prefix() -> None:
    from segflake.counters import RedisSerialCounter, script

    sent: List[Tuple[str, List[str], List[int]]] = []

    class Client:
        def register_script(self, text: str) -> Any:
            def run(keys: List[str], args: List[int]) -> List[int]:
                sent.append((text, keys, args))
                return [1, 7, T0]
            return run

        def execute_command(self, *args: Any) -> Any:
            # A primary without replicas (ROLE) and min-replicas-to-write unset: no WAIT.
            return [b"master", 0, []] if args == ("ROLE",) else {"min-replicas-to-write": "0"}

    counter = RedisSerialCounter(client=Client(), prefix="orders")
    gen = segflake.SerialGenerator(counter=counter, clock=segflake.ManualClock(T0))
    assert gen.next() == 2504131200000007
    text, keys, args = sent[0]
    assert text == script() and "PEXPIREAT" in text and "TIME" in text
    assert keys == ["orders:serial:250413120000"]
    assert args == [T0 // 1000, 60000, 60000, 1000]
    with pytest.raises(TypeError, match="exactly one of url or client"):
        RedisSerialCounter()


def test_a_restart_given_the_persisted_last_never_issues_at_or_below_it() -> None:
    clock = segflake.ManualClock(T0)
    counter = ScriptCounter(T0)
    gen = segflake.SerialGenerator(counter=counter, clock=clock)
    issued = [gen.next() for _ in range(5)]
    persisted = gen.last
    assert persisted == issued[-1]
    # The counter lost its keys and the clock stepped back: the restart stays above.
    counter.counts.clear()
    clock.rewind_ms(3000)
    again = segflake.SerialGenerator(counter=counter, clock=clock, last=persisted)
    after = [again.next() for _ in range(5)]
    assert min(after) > persisted
    local = segflake.SerialGenerator(clock=clock, last=persisted)
    assert local.next() > persisted


def test_counter_window_options() -> None:
    gen = segflake.SerialGenerator(counter_max_behind_ms=0, counter_max_ahead_ms=86_400_000)
    assert (gen.counter_max_behind_ms, gen.counter_max_ahead_ms) == (0, 86_400_000)
    with pytest.raises(segflake.InvalidArgumentError, match="counter_max_behind_ms: got 86400001"):
        segflake.SerialGenerator(counter_max_behind_ms=86_400_001)
