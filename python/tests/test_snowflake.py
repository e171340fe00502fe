"""The snowflake generator through the Python API."""

import array
import sys
import time

import pytest

import segflake


def test_ids_increase_and_decode_to_now() -> None:
    g = segflake.Snowflake(7)
    before = int(time.time() * 1000)
    ids = [g.next_id() for _ in range(10_000)]
    after = int(time.time() * 1000)
    assert all(a < b for a, b in zip(ids, ids[1:]))
    for i in (ids[0], ids[-1]):
        d = g.decode(i)
        assert d.worker_id == 7
        # May run up to max_drift_ms ahead of the clock.
        assert before - 1 <= d.timestamp_ms <= after + g.max_drift_ms
    assert g.high_water_mark_ms == g.high_water_mark >= g.decode(ids[-1]).timestamp_ms


def test_batches_continue_the_sequence() -> None:
    g = segflake.Snowflake(2, layout="sonyflake")
    a = g.next_ids(1000)
    b = g.next_ids_bytes(1000)
    c = array.array("Q", bytes(8 * 1000))
    assert g.next_ids_into(c) == 1000
    d = g.next_id()
    from_bytes = list(array.array("Q", b))
    everything = a + from_bytes + list(c) + [d]
    assert len(everything) == 3001
    assert all(x < y for x, y in zip(everything, everything[1:]))
    assert {g.decode(x).worker_id for x in everything} == {2}


def test_large_batch_fills_with_gil_released() -> None:
    g = segflake.Snowflake(1)
    ids = g.next_ids(200_000)
    assert len(ids) == 200_000 and len(set(ids)) == 200_000
    assert ids == sorted(ids)


def test_numpy_buffers() -> None:
    np = pytest.importorskip("numpy")
    g = segflake.Snowflake(3)
    for dtype in (np.uint64, np.int64):
        out = np.zeros(5000, dtype=dtype)
        assert g.next_ids_into(out) == 5000
        assert (np.diff(out.astype(np.uint64)) > 0).all()
    raw = np.frombuffer(g.next_ids_bytes(100), dtype=np.uint64)
    assert int(raw[0]) > int(out[-1])
    with pytest.raises(segflake.InvalidArgumentError, match="format 'i'|format 'l'|size 4"):
        g.next_ids_into(np.zeros(10, dtype=np.int32))
    with pytest.raises(segflake.InvalidArgumentError, match="C-contiguous"):
        g.next_ids_into(np.zeros((10, 2), dtype=np.uint64)[:, 0])
    with pytest.raises(segflake.InvalidArgumentError, match=">"):
        g.next_ids_into(np.zeros(10, dtype=">u8"))


def test_manual_clock_borrows_then_waits() -> None:
    clock = segflake.ManualClock("2026-01-01")
    g = segflake.Snowflake(1, layout="sonyflake", clock=clock, max_drift_ms=20)
    # 256 IDs per 10 ms tick; 20 ms of drift lets two more ticks be borrowed.
    ids = g.next_ids(256 * 3)
    assert clock.waits == 0
    ticks = sorted({g.decode(i).tick for i in ids})
    assert len(ticks) == 3 and ticks[2] - ticks[0] == 2
    g.next_id()  # the next tick is 30 ms ahead: the generator must wait
    assert clock.waits == 1


def test_strict_mode_waits_for_the_clock() -> None:
    clock = segflake.ManualClock("2026-01-01")
    start = clock.now_ms
    g = segflake.Snowflake(1, clock=clock, max_drift_ms=0)
    ids = g.next_ids(4096 * 2)
    assert clock.waits >= 1
    assert clock.now_ms >= start + 1
    assert all(g.decode(i).timestamp_ms <= clock.now_ms for i in ids)


def test_random_sequence_start() -> None:
    clock = segflake.ManualClock("2026-01-01")
    g = segflake.Snowflake(1, clock=clock, sequence_start="random")
    assert g.sequence_start == "random"
    starts = set()
    for _ in range(50):
        starts.add(g.decode(g.next_id()).sequence)
        clock.advance_ms(1)
    assert all(s < 100 for s in starts)
    assert len(starts) > 5


def test_compose_on_generator_defaults_to_its_worker() -> None:
    g = segflake.Snowflake(9)
    i = g.compose(100, sequence=3)
    assert g.decode(i).to_dict() == {"timestamp_ms": g.layout.epoch_ms + 100, "tick": 100, "worker_id": 9, "sequence": 3,
                                     "datacenter_id": None}
    assert g.compose(100, 4, 3) == g.layout.compose(100, 4, 3)


def test_layout_queries_and_repr() -> None:
    t = segflake.Layout()
    assert t == segflake.Layout("twitter") == segflake.Layout.preset("twitter")
    assert hash(t) == hash(segflake.Layout({"preset": "twitter"}))
    assert t != segflake.Layout("sonyflake")
    assert t.to_dict()["epoch_ms"] == 1288834974657
    assert segflake.Layout(t.to_dict()) == t
    assert segflake.Layout("js-safe").js_safe_until_ms is None
    assert segflake.Layout.preset("twitter", "2024-01-01").epoch_ms == 1704067200000
    assert "time_bits=41" in repr(t)
    assert repr(segflake.Snowflake(1)).startswith("Snowflake(worker_id=1, layout=Layout(")
    assert segflake.PRESETS == ("twitter", "sonyflake", "uid-generator", "js-safe", "twitter-dc")
    # A Layout given to a generator is used as it is; a dict is validated again.
    g = segflake.Snowflake(1, layout=segflake.Layout("uid-generator", epoch_ms="2026-11-01", min_lifetime_years=5))
    assert g.layout.time_bits == 28
    assert segflake.Snowflake(1, layout="sonyflake", epoch_ms="2025-06-01").layout.epoch_ms == 1748736000000


def test_decoded_id() -> None:
    d = segflake.decode(1050118621198921728)
    assert d.datetime.isoformat() == "2018-10-10T20:19:24.211000+00:00"
    assert d == segflake.decode(1050118621198921728)
    assert "worker_id=347" in repr(d)


def test_generators_cannot_be_pickled() -> None:
    import pickle
    with pytest.raises(TypeError):
        pickle.dumps(segflake.Snowflake(1))


def test_noop_floor_is_a_large_int() -> None:
    assert segflake._native._bench_noop() > sys.maxsize // 2


def test_datacenter_and_worker_as_hutool_splits_them() -> None:
    # hutool's Snowflake(workerId=5, dataCenterId=1): the twitter bits with the worker
    # field 1 << 5 | 5, so a twitter-layout generator with worker 37 makes the same IDs.
    gen = segflake.Snowflake(5, datacenter_id=1, layout="twitter-dc")
    d = gen.decode(gen.next_id())
    assert (d.datacenter_id, d.worker_id) == (1, 5)
    assert gen.worker_id == 37
    plain = segflake.decode(gen.next_id(), "twitter")
    assert (plain.datacenter_id, plain.worker_id) == (None, 37)
    assert gen.compose(timestamp_ms=d.timestamp_ms, datacenter_id=1, worker_id=5) == gen.compose(
        timestamp_ms=d.timestamp_ms
    )
    with pytest.raises(segflake.InvalidArgumentError, match="datacenter_id.*0..=31"):
        segflake.Snowflake(0, datacenter_id=32, layout="twitter-dc")
    with pytest.raises(segflake.InvalidArgumentError, match="no datacenter field"):
        segflake.Snowflake(5, datacenter_id=1)
    assert segflake.Layout("twitter-dc").datacenter_bits == 5
    assert segflake.Layout("twitter-dc").to_dict()["datacenter_bits"] == 5
