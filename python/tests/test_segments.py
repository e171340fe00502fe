"""SegmentGenerator with Python stores: contract checks, failures, slow stores, threads."""

import array
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import pytest

import segflake


class LeafTable:
    """A thread-safe in-process Leaf table that records who called it."""

    def __init__(self, initial: int = 1) -> None:
        self.rows: Dict[str, int] = {}
        self.initial = initial
        self.lock = threading.Lock()
        self.calls: List[Tuple[str, int]] = []
        self.threads: List[int] = []

    def allocate(self, tag: str, step: int) -> Tuple[int, int]:
        with self.lock:
            self.calls.append((tag, step))
            self.threads.append(threading.get_ident())
            self.rows[tag] = self.rows.get(tag, self.initial) + step
            return (self.rows[tag], step)


class Flaky(LeafTable):
    """Fails while `failing` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.failing = False

    def allocate(self, tag: str, step: int) -> Tuple[int, int]:
        if self.failing:
            raise ConnectionError("database is down")
        return super().allocate(tag, step)


def test_dense_ids_across_segments_and_tags() -> None:
    store = LeafTable()
    with segflake.SegmentGenerator(store, step=100) as gen:
        ids = [gen.next_id("order") for _ in range(1000)]
        assert ids == list(range(1, 1001))
        assert gen.next_id("user") == 1  # tags are independent
        assert gen.tags() == ["order", "user"]
        handle = gen.tag("order")
        assert handle.name == "order" and handle.generator is gen
        assert handle.next_ids(5) == [1001, 1002, 1003, 1004, 1005]
        # the store was called from the background fetch thread only
        assert threading.get_ident() not in store.threads
        s = gen.stats("order")
        assert s.tag == "order" and s.failures == 0
        assert s.fetches == sum(1 for t, _ in store.calls if t == "order") >= 5
        assert s.position == 1006 and s.current_start <= 1005 < s.current_end
        assert s.to_dict()["position"] == 1006
        assert gen.options["step"] == 100 and gen.options["fetch_threads"] == 1


def test_prefetch_keeps_callers_off_the_store() -> None:
    store = LeafTable()
    with segflake.SegmentGenerator(store, step=1000, dynamic_step=False) as gen:
        gen.next_id("t")
        deadline = time.monotonic() + 5
        # Use 15% of the segment: the next one is fetched in the background.
        gen.next_ids("t", 150)
        while not gen.stats("t").next_ready and time.monotonic() < deadline:
            time.sleep(0.005)
        s = gen.stats("t")
        assert s.next_ready and (s.next_start, s.next_end) == (1001, 2001)
        assert s.runway_seconds is None or s.runway_seconds >= 0


def test_store_callable_dict_and_attribute_results() -> None:
    state = {"max_id": 1}

    def as_dict(tag: str, step: int) -> Dict[str, int]:
        state["max_id"] += step
        return {"max_id": state["max_id"], "step": step}

    class Result:
        def __init__(self, max_id: int, step: int) -> None:
            self.max_id, self.step = max_id, step

    class AttrStore:
        n = 1

        def allocate(self, tag: str, step: int) -> Result:
            self.n += step
            return Result(self.n, step)

    with segflake.SegmentGenerator(as_dict, step=10) as a, segflake.SegmentGenerator(AttrStore(), step=10) as b:
        assert a.next_ids("x", 25) == list(range(1, 26))
        assert b.next_ids("x", 25) == list(range(1, 26))


def test_builtin_memory_and_file_stores(tmp_path: Any) -> None:
    mem = segflake.MemoryStore(initial_max_id=500)
    assert mem.allocate("pre", 10) == (510, 10)
    with segflake.SegmentGenerator(mem, step=10) as gen:
        assert gen.next_id("order") == 500
    assert mem.max_id("order") is not None and mem.max_id("nope") is None
    path = tmp_path / "ids.txt"
    store = segflake.FileStore(path)
    with segflake.SegmentGenerator(store, step=50) as gen:
        first = gen.next_ids("order", 120)
    assert first == list(range(1, 121))
    # A restart continues right after the last ID issued: the closed generator gave the
    # rest of its range back to the file.
    with segflake.SegmentGenerator(f"file:{path}", step=50) as gen:
        assert gen.next_id("order") == 121
    assert segflake.FileStore(str(path)).raise_max_id("order", 10) == 122
    with pytest.raises(segflake.StoreError, match="does not exist"):
        segflake.FileStore(tmp_path / "missing" / "ids.txt")


def test_store_that_raises_then_recovers() -> None:
    store = Flaky()
    with segflake.SegmentGenerator(store, step=10, wait_timeout_ms=2000) as gen:
        assert gen.next_ids("t", 10) == list(range(1, 11))
        store.failing = True
        began = time.monotonic()
        with pytest.raises(segflake.SegmentsExhaustedError) as info:
            # Drain whatever was prefetched, then the store's failure surfaces.
            for _ in range(1000):
                gen.next_id("t")
        assert time.monotonic() - began < 2.5
        err = info.value
        assert err.code == "SEGMENTS_EXHAUSTED" and err.tag == "t"
        assert "ConnectionError: database is down" in str(err)
        assert isinstance(err.__cause__, ConnectionError)  # the store's own exception
        assert "the next call retries the store" in str(err)
        assert gen.stats("t").failures >= 1
        store.failing = False
        nxt = gen.next_id("t")  # the next call retries
        assert nxt > 10


@pytest.mark.parametrize("garbage, words", [
    ("1,2", "str"),
    ((1, 2, 3, 4), "the store returned a sequence of 4 items"),
    ((-5, 10), "max_id = -5"),
    ((100.0, 10), "max_id = the number 100"),
    ((True, 10), "max_id = the boolean true"),
    ({"max_id": 11}, "the store returned an answer without step"),
    (42, "the store returned 42;"),
])
def test_store_returning_garbage_is_refused(garbage: Any, words: str) -> None:
    calls = []

    def store(tag: str, step: int) -> Any:
        calls.append(step)
        return garbage

    with segflake.SegmentGenerator(store, step=10) as gen:
        with pytest.raises(segflake.SegmentsExhaustedError) as info:
            gen.next_id("t")
        assert words in str(info.value), str(info.value)
        assert gen.try_next_id("t") is None
        assert calls


def test_a_store_answering_none_has_no_such_tag() -> None:
    # None is the store's "no such tag" (Leaf's "key not exists"): UnknownTagError at once,
    # not a contract violation, and the store is not asked again before the retry backoff.
    calls = []

    def store(tag: str, step: int) -> Any:
        calls.append(tag)
        return None

    with segflake.SegmentGenerator(store, step=10, wait_timeout_ms=5000) as gen:
        began = time.monotonic()
        with pytest.raises(segflake.UnknownTagError, match='unknown tag "t"'):
            gen.next_id("t")
        with pytest.raises(segflake.UnknownTagError):
            gen.next_id("t")
        assert time.monotonic() - began < 1.0
        assert calls == ["t"]


def test_async_store_given_to_the_threaded_generator() -> None:
    class AsyncStore:
        async def allocate(self, tag: str, step: int) -> Tuple[int, int]:
            return (step + 1, step)

    with segflake.SegmentGenerator(AsyncStore(), step=10) as gen:
        with pytest.raises(segflake.SegmentsExhaustedError, match="AsyncSegmentGenerator"):
            gen.next_id("t")


def test_overlapping_ranges_are_never_issued() -> None:
    state = {"calls": 0, "overlap": True}

    def store(tag: str, step: int) -> Tuple[int, int]:
        state["calls"] += 1
        if state["calls"] == 1:
            return (101, 100)
        return (150, 100) if state["overlap"] else (301, 100)

    with segflake.SegmentGenerator(store, step=100, prefetch_percent=100) as gen:
        got = gen.next_ids("t", 100)
        assert got == list(range(1, 101))
        for _ in range(2):  # refused every time it is offered
            with pytest.raises(segflake.SegmentsExhaustedError) as info:
                gen.next_id("t")
            assert "overlaps or precedes" in str(info.value)
            assert "[50, 150)" in str(info.value)
        s = gen.stats("t")
        assert s.failures >= 2 and s.last_error is not None and "contract violation" in s.last_error
        state["overlap"] = False
        # The store comes back with a good range: IDs continue above, none reissued.
        assert gen.next_id("t") == 201


def test_slow_store_gives_a_bounded_wait_with_the_gil_released() -> None:
    release = threading.Event()

    def slow(tag: str, step: int) -> Tuple[int, int]:
        release.wait(5)  # blocks the fetch thread (time.sleep-like: releases the GIL)
        return (step + 1, step)

    beats: List[float] = []
    done = threading.Event()

    def heartbeat() -> None:
        while not done.is_set():
            beats.append(time.monotonic())
            time.sleep(0.002)

    hb = threading.Thread(target=heartbeat)
    hb.start()
    try:
        with segflake.SegmentGenerator(slow, step=10, wait_timeout_ms=300) as gen:
            began = time.monotonic()
            with pytest.raises(segflake.SegmentsExhaustedError) as info:
                gen.next_id("t")
            waited = time.monotonic() - began
            assert 0.25 <= waited < 2.0, waited
            assert "has not answered" in str(info.value)
            during = [b for b in beats if began <= b <= began + waited]
            assert len(during) > 20, "the caller held the GIL while waiting"
            release.set()
            assert gen.next_id("t") == 1
    finally:
        release.set()
        done.set()
        hb.join()


def test_store_that_does_not_answer_within_store_timeout_ms() -> None:
    release = threading.Event()
    calls: List[int] = []

    def stuck_once(tag: str, step: int) -> Tuple[int, int]:
        calls.append(step)
        if len(calls) == 1:
            release.wait(5)  # answers late: the range [1, 11) must never be issued
            return (11, 10)
        return (1 + 10 * len(calls), 10)

    try:
        with segflake.SegmentGenerator(stuck_once, step=10, store_timeout_ms=200, wait_timeout_ms=600) as gen:
            assert gen.options["store_timeout_ms"] == 200
            began = time.monotonic()
            with pytest.raises(segflake.SegmentsExhaustedError) as info:
                gen.next_id("t")
            assert time.monotonic() - began < 1.5
            assert 'did not answer allocate("t", 10) within 200 ms (store_timeout_ms)' in str(info.value)
            # A fresh fetch took over; the stuck call's late answer is never issued.
            assert gen.next_id("t") == 11
            release.set()
            time.sleep(0.1)
            assert all(i >= 11 for i in gen.next_ids("t", 30))
            assert gen.stats("t").failures == 1
    finally:
        release.set()


def test_store_holding_the_gil_for_long() -> None:
    # A store that computes in Python (holding the GIL) still completes; callers wait.
    def busy(tag: str, step: int) -> Tuple[int, int]:
        end = time.monotonic() + 0.05
        while time.monotonic() < end:
            pass
        return (step + 1, step)

    with segflake.SegmentGenerator(busy, step=10) as gen:
        assert gen.next_id("t") == 1


def test_threads_sharing_a_segment_generator() -> None:
    store = LeafTable()
    results: List[List[int]] = [[] for _ in range(4)]
    with segflake.SegmentGenerator(store, step=500, fetch_threads=2) as gen:
        handle = gen.tag("shared")
        barrier = threading.Barrier(4)

        def work(out: List[int], k: int) -> None:
            barrier.wait()
            for i in range(20_000):
                if k % 2:
                    out.append(handle.next_id())
                else:
                    out.append(gen.next_id("shared"))
                if i % 2000 == 0:
                    out.extend(gen.next_ids("shared", 300))

        threads = [threading.Thread(target=work, args=(results[k], k)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    everything = [i for r in results for i in r]
    assert len(everything) == 4 * (20_000 + 10 * 300)
    assert len(set(everything)) == len(everything)
    for r in results:
        assert all(a < b for a, b in zip(r, r[1:]))
    # Ranges handed out by the store never overlapped.
    assert max(everything) <= store.rows["shared"]


def test_a_handle_keeps_its_generator_alive() -> None:
    import gc

    handle = segflake.SegmentGenerator(segflake.MemoryStore(), step=10).tag("t")
    gc.collect()
    assert [handle.next_id() for _ in range(25)] == list(range(1, 26))
    assert not handle.generator.closed
    handle.generator.close()
    with pytest.raises(segflake.ClosedError):
        handle.next_id()


def test_buffers_and_bytes() -> None:
    with segflake.SegmentGenerator(segflake.MemoryStore(), step=1000) as gen:
        b = gen.next_ids_bytes("t", 100)
        assert list(array.array("Q", b)) == list(range(1, 101))
        out = array.array("Q", bytes(8 * 50))
        assert gen.next_ids_into("t", out) == 50
        assert list(out) == list(range(101, 151))
        handle = gen.tag("t")
        assert list(array.array("Q", handle.next_ids_bytes(3))) == [151, 152, 153]
        assert handle.next_ids_into(out) == 50 and out[0] == 154
        big = gen.next_ids("t", 100_000)
        assert big == list(range(204, 100_204))


def test_close_and_context_manager() -> None:
    gen = segflake.SegmentGenerator(segflake.MemoryStore(), step=10)
    handle = gen.tag("t")
    assert handle.next_id() == 1
    assert not gen.closed
    gen.close()
    gen.close()  # idempotent
    assert gen.closed
    for call in (lambda: gen.next_id("t"), handle.next_id, lambda: gen.next_ids("t", 2),
                 lambda: gen.tag("other"), lambda: gen.try_next_id("t")):
        with pytest.raises(segflake.ClosedError):
            call()
    with segflake.SegmentGenerator(segflake.MemoryStore()) as g2:
        g2.next_id("x")
    assert g2.closed


def test_closing_wakes_a_waiting_caller() -> None:
    release = threading.Event()

    def slow(tag: str, step: int) -> Tuple[int, int]:
        release.wait(5)
        return (step + 1, step)

    gen = segflake.SegmentGenerator(slow, step=10, wait_timeout_ms=5000)
    errors: List[BaseException] = []
    finished: List[float] = []

    def waiter() -> None:
        try:
            gen.next_id("t")
        except BaseException as e:
            errors.append(e)
        finished.append(time.monotonic())

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.1)
    timer = threading.Timer(0.8, release.set)  # lets close() reclaim the fetch thread
    timer.start()
    began = time.monotonic()
    gen.close()
    t.join(5)
    timer.join()
    assert not t.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], segflake.ClosedError), errors
    assert finished[0] - began < 0.6, "the waiter was not woken by close()"


def test_segment_argument_errors() -> None:
    mem = segflake.MemoryStore()
    bad: List[Tuple[Any, str]] = [
        (lambda: segflake.SegmentGenerator(42), "allocate(tag, step)"),
        (lambda: segflake.SegmentGenerator(object()), "allocate(tag, step)"),
        (lambda: segflake.SegmentGenerator("postgres://x"), "file:PATH"),
        (lambda: segflake.SegmentGenerator(mem, step=0), "1..="),
        (lambda: segflake.SegmentGenerator(mem, step=-1), "step: got -1;"),
        (lambda: segflake.SegmentGenerator(mem, prefetch_percent=101), "0..=100"),
        (lambda: segflake.SegmentGenerator(mem, prefetch_percent=1000), "0..=100"),
        (lambda: segflake.SegmentGenerator(mem, fetch_threads=0), "1..=64"),
        (lambda: segflake.SegmentGenerator(mem, wait_timeout_ms=0), "wait_timeout_ms"),
        (lambda: segflake.SegmentGenerator(mem, dynamic_step="yes"), "true or false"),
        (lambda: segflake.SegmentGenerator(mem, max_step=2**64), "got 18446744073709551616;"),
        (lambda: segflake.SegmentGenerator(mem, stepp=5), 'unknown option "stepp"'),
        (lambda: segflake.SegmentGenerator(mem).next_id(""), "1..=128"),
        (lambda: segflake.SegmentGenerator(mem).next_id("a b"), "whitespace"),
        (lambda: segflake.SegmentGenerator(mem).next_id(7), "str"),
        (lambda: segflake.SegmentGenerator(mem).next_id(["a"]), "list"),
        (lambda: segflake.SegmentGenerator(mem).next_ids("t", 0), "batch size"),
        (lambda: segflake.SegmentGenerator(mem).stats("never"), "has not been used"),
        (lambda: mem.allocate("t", -1), "step: got -1;"),
        (lambda: segflake.MemoryStore(initial_max_id="1"), "str"),
        (lambda: segflake.FileStore(3.5), "os.PathLike"),
    ]
    for call, words in bad:
        with pytest.raises(segflake.InvalidArgumentError) as info:
            call()
        assert words in str(info.value), (words, str(info.value))


def test_memory_store_exhaustion_is_a_store_error() -> None:
    mem = segflake.MemoryStore(initial_max_id=2**63 - 5)
    with pytest.raises(segflake.StoreError, match="exceeds i64::MAX"):
        mem.allocate("t", 10)


def test_try_next_id_never_waits() -> None:
    release = threading.Event()

    def slow(tag: str, step: int) -> Tuple[int, int]:
        release.wait(5)
        return (step + 1, step)

    with segflake.SegmentGenerator(slow, step=10) as gen:
        began = time.monotonic()
        first: Optional[int] = gen.try_next_id("t")
        assert first is None and time.monotonic() - began < 0.1
        release.set()
        deadline = time.monotonic() + 5
        while first is None and time.monotonic() < deadline:
            first = gen.try_next_id("t")
        assert first == 1


def test_interpreter_exits_cleanly_with_a_fetch_in_flight() -> None:
    import subprocess
    import sys

    script = (
        "import time, segflake\n"
        "def slow(tag, step):\n"
        "    time.sleep(0.3)\n"
        "    return (step + 1, step)\n"
        "gen = segflake.SegmentGenerator(slow, step=10)\n"
        "assert gen.try_next_id('t') is None\n"   # a fetch is now running in the background
        "keep = gen.tag('u')\n"
        "print('exiting')\n"
    )
    began = time.monotonic()
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "exiting"
    assert "fatal" not in result.stderr.lower() and "panic" not in result.stderr.lower(), result.stderr
    assert time.monotonic() - began < 10


def test_http_store_refuses_bad_arguments_and_reports_an_unreachable_service_as_the_cause() -> None:
    from segflake.stores import HttpStore

    bad: List[Tuple[Any, Dict[str, Any]]] = [
        ("ftp://ids:8080", {}),
        ("ids.internal:8080", {}),
        (42, {}),
        ("http://ids:8080", {"token": ""}),
        ("http://ids:8080", {"token": "two words"}),
        ("http://ids:8080", {"timeout": 0}),
        ("http://ids:8080", {"timeout": True}),
    ]
    for url, options in bad:
        with pytest.raises(segflake.InvalidArgumentError):
            HttpStore(url, **options)
    # Port 9 on loopback: nothing listens, the connection is refused at once.
    store = HttpStore("http://127.0.0.1:9/", timeout=2.0)
    assert store.base_url == "http://127.0.0.1:9"
    # A tag's first allocation asks for the row's own step (no ?step), as the database stores do.
    with pytest.raises(segflake.StoreError, match=r"POST http://127\.0\.0\.1:9/api/segment/alloc/order failed"):
        store.allocate("order", 10)
    with pytest.raises(segflake.InvalidArgumentError):
        store.allocate("order", 0)
    gen = segflake.SegmentGenerator(store, wait_timeout_ms=3000)
    with pytest.raises(segflake.SegmentsExhaustedError) as info:
        gen.next_id("order")
    assert "alloc/order" in str(info.value)
    gen.close()


class _Database:
    """A store that can be stopped, recording the ranges it handed out."""

    def __init__(self) -> None:
        self.rows = segflake.MemoryStore()
        self.down = False
        self.ranges: List[Tuple[int, int]] = []

    def allocate(self, tag: str, step: int) -> Tuple[int, int]:
        if self.down:
            raise ConnectionError("connection refused")
        max_id, used = self.rows.allocate(tag, step)
        self.ranges.append((max_id - used, max_id))
        return max_id, used

    def handed_out(self, id_: int) -> bool:
        return any(s <= id_ < e for s, e in self.ranges)


def test_multi_store_residues_and_failover() -> None:
    from segflake.stores import MultiStore

    a, b = _Database(), _Database()
    multi = MultiStore([a, b])
    assert len(multi) == 2 and multi.stores == (a, b)
    ids: List[int] = []
    with segflake.SegmentGenerator(multi, step=100, dynamic_step=False) as gen:
        ids += gen.next_ids("order", 300)
        a.down = True  # store 0 stops: the generator moves to store 1 without an error
        ids += gen.next_ids("order", 300)
        a.down, b.down = False, True
        ids += gen.next_ids("order", 300)
        b.down = False
        stats = gen.stats("order")
    assert ids == sorted(set(ids)), "unique and increasing"
    for id_ in ids:
        assert (a if id_ % 2 == 0 else b).handed_out(id_), id_
    assert any(i % 2 == 1 for i in ids) and ids[-1] % 2 == 0
    assert stats.failures >= 2 and "store error" in (stats.last_error or "")


def test_multi_store_refusals() -> None:
    with pytest.raises(segflake.InvalidArgumentError, match="1..=64"):
        segflake.MultiStore([])
    with pytest.raises(segflake.InvalidArgumentError, match="expected a list of stores"):
        segflake.MultiStore(3)  # type: ignore[arg-type]
    with pytest.raises(segflake.InvalidArgumentError, match="invalid store"):
        segflake.MultiStore([segflake.MemoryStore(), 42])  # type: ignore[list-item]
    # Stores that report their rows' class (Tinyid's delta/remainder) issue it whatever
    # their position in the list; two stores reporting one remainder: the second is refused,
    # naming both.
    def wrong(tag: str, step: int) -> Dict[str, int]:
        return {"max_id": 101, "step": 100, "delta": 2, "remainder": 1}

    def down(tag: str, step: int) -> Dict[str, int]:
        raise ConnectionError("down")

    with segflake.SegmentGenerator(segflake.MultiStore([wrong, segflake.MemoryStore()])) as gen:
        assert [gen.next_id("t") for _ in range(3)] == [1, 3, 5]
    with segflake.SegmentGenerator(segflake.MultiStore([down, wrong, wrong]), wait_timeout_ms=200) as gen:
        with pytest.raises(segflake.SegmentsExhaustedError):
            gen.next_id("t")
        assert "every store must report delta = 3" in (gen.stats("t").last_error or "")
    with segflake.SegmentGenerator(segflake.MultiStore([wrong]), wait_timeout_ms=200) as gen:
        with pytest.raises(segflake.SegmentsExhaustedError, match=r"residue class 1 \(mod 2\)"):
            gen.next_id("t")


def test_multi_store_in_asyncio() -> None:
    import asyncio

    class AsyncDatabase(_Database):
        async def allocate(self, tag: str, step: int) -> Tuple[int, int]:  # type: ignore[override]
            await asyncio.sleep(0)
            return _Database.allocate(self, tag, step)

    a, b = AsyncDatabase(), AsyncDatabase()

    async def run() -> List[int]:
        ids: List[int] = []
        async with segflake.AsyncSegmentGenerator(segflake.MultiStore([a, b]), step=100, dynamic_step=False) as gen:
            ids += await gen.next_ids("order", 150)
            a.down = True
            ids += await gen.next_ids("order", 150)
        return ids

    ids = asyncio.run(run())
    assert ids == sorted(set(ids))
    assert ids[0] % 2 == 0 and ids[-1] % 2 == 1
    for id_ in ids:
        assert (a if id_ % 2 == 0 else b).handed_out(id_), id_
