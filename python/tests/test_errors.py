"""Every error path: the class hierarchy, bad types and values, clock failures."""

import array
import datetime as dt
import pickle
from typing import Any, Callable

import pytest

import segflake
from segflake import InvalidArgumentError

U64_MAX = 2**64 - 1


def raises(cls: type, fn: Callable[[], Any], *contains: str) -> BaseException:
    with pytest.raises(cls) as info:
        fn()
    for text in contains:
        assert text in str(info.value), (text, str(info.value))
    return info.value


# --- the hierarchy -------------------------------------------------------------------

EXPECTED_CLASSES = {
    "INVALID_LAYOUT": "InvalidLayoutError",
    "LAYOUT_EXHAUSTED": "LayoutExhaustedError",
    "WORKER_ID_OUT_OF_RANGE": "WorkerIdOutOfRangeError",
    "CLOCK_MOVED_BACKWARDS": "ClockMovedBackwardsError",
    "CLOCK_BEFORE_EPOCH": "ClockBeforeEpochError",
    "TIME_EXHAUSTED": "TimeExhaustedError",
    "INVALID_ARGUMENT": "InvalidArgumentError",
    "PARSE_ERROR": "ParseError",
    "STORE_CONTRACT_VIOLATION": "StoreContractViolationError",
    "SEGMENTS_EXHAUSTED": "SegmentsExhaustedError",
    "STORE_ERROR": "StoreError",
    "SERIAL_EXHAUSTED": "SerialExhaustedError",
    "CLOSED": "ClosedError",
    "NO_FREE_WORKER_ID": "NoFreeWorkerIdError",
    "LEASE_EXPIRED": "LeaseExpiredError",
    "CLOCK_BEHIND_MARK": "ClockBehindMarkError",
    "CLOCK_SKEW": "ClockSkewError",
    "REGISTRY_ERROR": "RegistryError",
    "UNKNOWN_TAG": "UnknownTagError",
    "REGISTRY_LOST_DATA": "RegistryLostDataError",
    "LEAF_NODE_ALIVE": "LeafNodeAliveError",
    "CLOCK_STALLED": "ClockStalledError",
}


def test_one_class_per_error_kind() -> None:
    assert set(segflake.ERROR_CODES) == set(EXPECTED_CLASSES)
    for status, code in enumerate(segflake.ERROR_CODES, start=1):
        cls = getattr(segflake, EXPECTED_CLASSES[code])
        assert issubclass(cls, segflake.SegflakeError)
        assert issubclass(cls, Exception)
        assert cls.code == code
        assert cls.status == status
        assert cls.__module__ == "segflake"
        assert cls.__name__ == EXPECTED_CLASSES[code]
    assert issubclass(segflake.InvalidArgumentError, ValueError)
    assert issubclass(segflake.ParseError, ValueError)
    assert not issubclass(segflake.ClosedError, ValueError)


def test_errors_pickle_round_trip() -> None:
    # multiprocessing sends exceptions from workers to the parent by pickling them.
    err = raises(segflake.WorkerIdOutOfRangeError, lambda: segflake.Snowflake(1024))
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is segflake.WorkerIdOutOfRangeError
    assert str(back) == str(err)
    assert back.worker_id == 1024 and back.worker_bits == 10


# --- integers --------------------------------------------------------------------------

@pytest.mark.parametrize("value, words", [
    (-1, ["invalid worker_id: got -1;", "0..=18446744073709551615"]),
    (2**64, ["worker_id", "got 18446744073709551616;"]),
    (2**100, ["worker_id", "got 1267650600228229401496703205376;"]),
    (2**200, ["worker_id", "got 160693804425899027554196209234116260252220299378279283530"]),
    (1.0, ["worker_id", "the number 1"]),
    ("1", ["worker_id", 'the string "1"']),
    (None, ["worker_id", "is required"]),
    (True, ["worker_id", "the boolean true"]),
    ([1], ["worker_id", "a list of 1 item"]),
])
def test_worker_id_types(value: Any, words: Any) -> None:
    err = raises(InvalidArgumentError, lambda: segflake.Snowflake(value), *words)
    assert err.code == "INVALID_ARGUMENT"


def test_worker_id_range_names_the_range() -> None:
    err = raises(segflake.WorkerIdOutOfRangeError, lambda: segflake.Snowflake(1024), "0..=1023")
    assert err.code == "WORKER_ID_OUT_OF_RANGE"
    raises(segflake.WorkerIdOutOfRangeError, lambda: segflake.Snowflake(8, layout="js-safe"), "0..=7")
    raises(segflake.WorkerIdOutOfRangeError, lambda: segflake.Snowflake(65536, layout="sonyflake"), "0..=65535")


def test_numpy_style_index_objects_are_accepted() -> None:
    class Index:
        def __init__(self, v: int) -> None:
            self.v = v

        def __index__(self) -> int:
            return self.v

    assert segflake.Snowflake(Index(5)).worker_id == 5  # type: ignore[arg-type]
    raises(InvalidArgumentError, lambda: segflake.Snowflake(Index(-5)), "worker_id: got -5;")  # type: ignore[arg-type]


@pytest.mark.parametrize("call", [
    lambda: segflake.encode(-1),
    lambda: segflake.encode(2**64),
    lambda: segflake.encode_base62(-1),
    lambda: segflake.encode_base32(2**64),
    lambda: segflake.encode_decimal(1.5),
    lambda: segflake.decode(-1),
    lambda: segflake.decode("123"),
    lambda: segflake.Layout().decode(2**64),
    lambda: segflake.Obfuscator(bytes(16)).obfuscate(-1),
    lambda: segflake.Obfuscator(bytes(16)).deobfuscate(2**64),
    lambda: segflake.compose(-1, 0, 0),
    lambda: segflake.compose(0, -1, 0),
    lambda: segflake.compose(0, 0, -1),
    lambda: segflake.format_time_ms(-1),
])
def test_u64_arguments_never_wrap(call: Callable[[], Any]) -> None:
    raises(InvalidArgumentError, call)


def test_obfuscate_refuses_ids_at_or_above_2_63() -> None:
    o = segflake.Obfuscator(bytes(range(16)))
    raises(InvalidArgumentError, lambda: o.obfuscate(2**63), "not below 2^63")
    raises(InvalidArgumentError, lambda: o.deobfuscate(U64_MAX), "not below 2^63")
    assert o.deobfuscate(o.obfuscate(2**63 - 1)) == 2**63 - 1


# --- layouts ---------------------------------------------------------------------------

def test_layout_argument_errors() -> None:
    raises(InvalidArgumentError, lambda: segflake.Layout("snowflake"), "not a preset", "twitter, sonyflake")
    raises(InvalidArgumentError, lambda: segflake.Snowflake(0, layout=42), "invalid layout: got 42;")  # type: ignore[arg-type]
    raises(InvalidArgumentError, lambda: segflake.Layout({"time_bit": 41}), 'unknown option "time_bit"', "time_bits")
    raises(InvalidArgumentError, lambda: segflake.Layout({1: 2}), 'unknown option "1"')
    # Layout fields are refused as InvalidLayoutError naming the field (the core's rule).
    raises(segflake.InvalidLayoutError, lambda: segflake.Layout(order="time-first"), "time-worker-sequence")  # type: ignore[arg-type]
    raises(segflake.InvalidLayoutError, lambda: segflake.Layout(order=1), "order: got 1;")  # type: ignore[arg-type]
    raises(segflake.InvalidLayoutError, lambda: segflake.Layout(tick_ms=-1), "tick_ms: got -1;")
    raises(segflake.InvalidLayoutError, lambda: segflake.Layout(min_lifetime_years=2**40), "min_lifetime_years")
    raises(segflake.InvalidLayoutError, lambda: segflake.Layout(min_lifetime_years=20000), "0..=10000")
    raises(segflake.InvalidLayoutError, lambda: segflake.Layout(time_bits=300), "time_bits: got 300;")
    raises(segflake.InvalidLayoutError, lambda: segflake.Layout(time_bits=64), "8..=63")
    raises(segflake.InvalidLayoutError, lambda: segflake.Layout(tick_ms=86_400_001), "1..=86400000")


def test_layout_exhausted_says_when() -> None:
    err = raises(segflake.LayoutExhaustedError, lambda: segflake.Layout(time_bits=38, epoch_ms="2025-01-01"),
                 "runs out of time on 2033-09-17", "at least 10 years")
    assert err.exhausts_at_ms > err.checked_at_ms
    assert err.min_lifetime_years == 10
    raises(segflake.LayoutExhaustedError, lambda: segflake.Layout("uid-generator"), "2024-11-20")


def test_epoch_inputs() -> None:
    ms = 1735689600000
    for epoch in (ms, "2025-01-01", "2025-01-01T00:00:00Z", "2025-01-01T00:00:00.000Z",
                  dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc),
                  dt.datetime(2025, 1, 1, 2, tzinfo=dt.timezone(dt.timedelta(hours=2))),
                  dt.date(2025, 1, 1)):
        assert segflake.Layout(epoch_ms=epoch).epoch_ms == ms, epoch
    raises(segflake.InvalidLayoutError, lambda: segflake.Layout(epoch_ms=dt.datetime(2025, 1, 1)), "naive")
    raises(segflake.InvalidLayoutError, lambda: segflake.Layout(epoch_ms="2025-13-01"), "calendar date")
    raises(segflake.InvalidLayoutError, lambda: segflake.Layout(epoch_ms="yesterday"), "ISO-8601")
    raises(segflake.InvalidLayoutError, lambda: segflake.Layout(epoch_ms=1.5e12), "the number 1500000000000")  # type: ignore[arg-type]
    raises(InvalidArgumentError, lambda: segflake.Snowflake(0, epoch_ms=dt.datetime(2025, 1, 1)), "naive")
    raises(segflake.InvalidLayoutError, lambda: segflake.Layout(
        epoch_ms=dt.datetime(1969, 12, 31, tzinfo=dt.timezone.utc)), "before 1970")
    raises(segflake.InvalidLayoutError, lambda: segflake.Layout(epoch_ms="2999-01-01"), "in the future")


def test_compose_argument_errors() -> None:
    layout = segflake.Layout()
    raises(InvalidArgumentError, lambda: layout.compose(), "neither tick nor timestamp_ms")
    raises(InvalidArgumentError, lambda: layout.compose(1, timestamp_ms=5), "both tick and timestamp_ms")
    raises(InvalidArgumentError, lambda: layout.compose(2**41, 0, 0), "tick", "41 time bits")
    raises(InvalidArgumentError, lambda: layout.compose(0, 0, 4096), "sequence", "0..=4095")
    raises(segflake.WorkerIdOutOfRangeError, lambda: layout.compose(0, 1024, 0), "0..=1023")
    raises(InvalidArgumentError, lambda: layout.compose(timestamp_ms="2001-01-01"), "before the layout epoch")


# --- generator options -----------------------------------------------------------------

def test_generator_option_errors() -> None:
    raises(InvalidArgumentError, lambda: segflake.Snowflake(0, sequence_start="one"), "zero, random")  # type: ignore[arg-type]
    raises(InvalidArgumentError, lambda: segflake.Snowflake(0, max_drift_ms=3_600_001), "0..=3600000")
    raises(InvalidArgumentError, lambda: segflake.Snowflake(0, max_drift_ms=-1), "max_drift_ms: got -1;")
    raises(InvalidArgumentError, lambda: segflake.Snowflake(0, clock=lambda: 0), "ManualClock")  # type: ignore[arg-type]
    raises(InvalidArgumentError, lambda: segflake.Snowflake(0, not_before_ms=[]), "not_before_ms")  # type: ignore[arg-type]
    raises(TypeError, lambda: segflake.Snowflake())  # type: ignore[call-arg]
    raises(TypeError, lambda: segflake.Snowflake(0, 1))  # type: ignore[misc]


def test_batch_size_limits() -> None:
    g = segflake.Snowflake(0)
    for n in (0, segflake.MAX_BATCH + 1):
        raises(InvalidArgumentError, lambda: g.next_ids(n), "batch size", f"1..={segflake.MAX_BATCH}")
        raises(InvalidArgumentError, lambda: g.next_ids_bytes(n), "batch size")
    raises(InvalidArgumentError, lambda: g.next_ids(-1), "batch size: got -1;")
    raises(InvalidArgumentError, lambda: g.next_ids("10"), 'the string "10"')  # type: ignore[arg-type]
    raises(InvalidArgumentError, lambda: g.next_ids_into(array.array("Q")), "batch size")


def test_buffer_errors() -> None:
    g = segflake.Snowflake(0)
    raises(InvalidArgumentError, lambda: g.next_ids_into(bytes(64)), "read-only")
    raises(InvalidArgumentError, lambda: g.next_ids_into(array.array("I", [0] * 4)), "format 'I'")
    raises(InvalidArgumentError, lambda: g.next_ids_into(array.array("d", [0.0] * 4)), "format 'd'")
    raises(InvalidArgumentError, lambda: g.next_ids_into(bytearray(64)), "format 'B'")
    raises(InvalidArgumentError, lambda: g.next_ids_into([0, 0]), "buffer protocol")  # type: ignore[arg-type]
    strided = memoryview(array.array("Q", [0] * 8))[::2]
    raises(InvalidArgumentError, lambda: g.next_ids_into(strided), "C-contiguous")


def test_obfuscator_key_errors() -> None:
    raises(InvalidArgumentError, lambda: segflake.Obfuscator(bytes(15)), "15 bytes", "exactly 16")
    raises(InvalidArgumentError, lambda: segflake.Obfuscator(bytes(17)), "17 bytes")
    raises(InvalidArgumentError, lambda: segflake.Obfuscator("00" * 15), "32 hex digits", "30")
    raises(InvalidArgumentError, lambda: segflake.Obfuscator("zz" + "00" * 15), "'z' at position 0")
    raises(InvalidArgumentError, lambda: segflake.Obfuscator(12345), "int")  # type: ignore[arg-type]


def test_codec_argument_errors() -> None:
    raises(InvalidArgumentError, lambda: segflake.encode(1, "base64"), "decimal, base62, base32")  # type: ignore[arg-type]
    raises(InvalidArgumentError, lambda: segflake.parse(b"123"), "bytes")  # type: ignore[arg-type]
    raises(InvalidArgumentError, lambda: segflake.parse_base62(None), "NoneType")  # type: ignore[arg-type]
    raises(segflake.ParseError, lambda: segflake.parse("1 2"), "position 1")


def test_worker_helpers_errors() -> None:
    assert segflake.worker_id_from_hostname("web-7.web.default.svc") == 7
    assert segflake.worker_id_from_ipv4("10.0.3.7") == 775
    assert segflake.worker_id_from_ipv4("10.0.3.7", 8) == 7
    raises(InvalidArgumentError, lambda: segflake.worker_id_from_hostname("web"), "-<ordinal>")
    raises(InvalidArgumentError, lambda: segflake.worker_id_from_ipv4("10.0.3"), "dotted-quad")
    raises(InvalidArgumentError, lambda: segflake.worker_id_from_ipv4("10.0.3.7", 33), "0..=32")
    raises(InvalidArgumentError, lambda: segflake.worker_id_from_ipv4("10.0.3.7", 300), "0..=32")


# --- the clock -------------------------------------------------------------------------

def test_clock_moved_backwards_beyond_drift() -> None:
    clock = segflake.ManualClock("2026-01-01T00:00:00Z")
    g = segflake.Snowflake(1, clock=clock, max_drift_ms=100)
    first = g.next_id()
    clock.rewind_ms(50)  # within the drift bound: keeps issuing from the logical tick
    second = g.next_id()
    assert second > first
    clock.rewind_ms(100)
    err = raises(segflake.ClockMovedBackwardsError, g.next_id, "150 ms", "max_drift_ms = 100")
    assert err.code == "CLOCK_MOVED_BACKWARDS"
    assert err.by_ms == 150 and err.max_drift_ms == 100
    raises(segflake.ClockMovedBackwardsError, lambda: g.next_ids(10))
    clock.advance_ms(150)
    assert g.next_id() > second


def test_clock_before_epoch() -> None:
    clock = segflake.ManualClock("2026-01-01")
    g = segflake.Snowflake(1, clock=clock, layout="js-safe")
    clock.set_ms("2024-06-01")
    err = raises(segflake.ClockBeforeEpochError, g.next_id, "before the layout epoch")
    assert err.epoch_ms == 1735689600000


def test_time_exhausted() -> None:
    start = 1735689600000
    clock = segflake.ManualClock(start)
    layout = segflake.Layout(time_bits=10, worker_bits=0, sequence_bits=0, epoch_ms=start,
                             min_lifetime_years=0, now_ms=start)
    g = segflake.Snowflake(0, layout=layout, clock=clock)
    # Tick 0 counts as used at start-up, so the first ID is tick 1; the last is tick 1023.
    assert g.next_id() == 1
    clock.set_ms(start + 1023)
    assert g.next_id() == 1023
    clock.set_ms(start + 1024)
    err = raises(segflake.TimeExhaustedError, g.next_id, "ran out")
    assert err.exhausts_at_ms == start + 1024


def test_not_before_is_respected() -> None:
    clock = segflake.ManualClock("2026-01-01")
    hwm = clock.now_ms + 1000
    g = segflake.Snowflake(3, clock=clock, not_before_ms=hwm)
    d = g.decode(g.next_id())
    assert d.timestamp_ms > hwm
    assert g.not_before_ms == hwm
    # More than max_drift_ms below the persisted mark: refused, not reissued.
    g2 = segflake.Snowflake(3, clock=clock, not_before_ms=hwm + 5000)
    raises(segflake.ClockMovedBackwardsError, g2.next_id)


def test_closed_error_message_for_forked_generators_is_documented() -> None:
    assert "fork" in (segflake.ClosedError.__doc__ or "")
