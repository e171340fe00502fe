"""Fork safety: a generator inherited through fork() never issues IDs its parent issues."""

import multiprocessing
import os
import sys
from typing import Any, List, Optional, Tuple

import pytest

import segflake

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def run_in_child(fn: "callable[[int], int]") -> Tuple[int, bytes]:  # type: ignore[valid-type]
    """Forks; the child runs fn(write_fd) and exits with its return value."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        code = 99
        try:
            code = fn(w)
        except BaseException as e:  # pragma: no cover - reported through the pipe
            os.write(w, repr(e).encode())
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks)


def test_inherited_snowflake_refuses_in_the_child() -> None:
    g = segflake.Snowflake(1)
    parent_ids = g.next_ids(10)

    def child(w: int) -> int:
        try:
            g.next_id()
        except segflake.ClosedError as e:
            os.write(w, str(e).encode())
            for call in (lambda: g.next_ids(5), lambda: g.next_ids_bytes(5)):
                try:
                    call()
                    return 2
                except segflake.ClosedError:
                    pass
            # A generator made in the child works.
            mine = segflake.Snowflake(2)
            return 0 if mine.next_id() > 0 and mine.pid == os.getpid() else 3
        return 1

    code, message = run_in_child(child)
    assert code == 0, message
    text = message.decode()
    assert f"created in process {os.getpid()}" in text
    assert "through fork()" in text and "per process" in text and "worker_id" in text
    # The parent is unaffected.
    assert g.next_id() > parent_ids[-1]
    assert g.pid == os.getpid()


def test_fork_while_other_threads_use_the_generator() -> None:
    import threading

    g = segflake.Snowflake(3)
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            g.next_ids(1000)

    threads = [threading.Thread(target=spin) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for _ in range(5):
            def child(w: int) -> int:
                try:
                    g.next_id()
                    return 1
                except segflake.ClosedError:
                    return 0 if segflake.Snowflake(4).next_id() else 2
            code, message = run_in_child(child)
            assert code == 0, message
    finally:
        stop.set()
        for t in threads:
            t.join()


def test_per_process_builds_one_generator_per_process() -> None:
    ids = segflake.per_process(lambda: segflake.Snowflake(os.getpid() % 1024))
    parent = ids()
    assert ids() is parent
    parent.next_id()

    def child(w: int) -> int:
        mine = ids()
        if mine is parent:
            return 1
        os.write(w, str(mine.next_id()).encode())
        return 0 if mine.worker_id == os.getpid() % 1024 else 2

    code, out = run_in_child(child)
    assert code == 0, out
    assert ids() is parent
    ids.reset()
    assert ids() is not parent


class _OneHolderRegistry:
    """Every worker ID is free; remembers who released what."""

    def __init__(self) -> None:
        self.released: List[int] = []

    def claim(self, worker_id: int, owner: str, ttl_ms: int) -> int:
        return 0

    def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> int:
        return mark_ms

    def release(self, worker_id: int, owner: str, mark_ms: int) -> bool:
        self.released.append(worker_id)
        return True

    def peers(self) -> List[Any]:
        return []


def test_inherited_leased_snowflake_refuses_in_the_child() -> None:
    registry = _OneHolderRegistry()
    # Its claims find no mark: a short lead keeps the start-up wait short.
    g = segflake.Snowflake.from_registry(registry, lease_ttl_ms=2000, mark_ahead_ms=200, clock_skew_allowance_ms=0)
    parent_ids = g.next_ids(10)

    def child(w: int) -> int:
        import signal

        signal.alarm(5)  # a close() that waited for the parent's lease thread would hang
        try:
            g.next_id()
            return 1
        except segflake.ClosedError as e:
            os.write(w, str(e).encode())
        try:
            g.next_ids(5)
            return 2
        except segflake.ClosedError:
            pass
        # The lease belongs to the parent: closing the inherited copy neither hangs nor
        # releases the parent's worker ID.
        g.close()
        return 0 if not registry.released else 4

    code, message = run_in_child(child)
    assert code == 0, message
    assert f"created in process {os.getpid()}" in message.decode()
    # The parent still holds its lease and issues IDs.
    assert g.next_id() > parent_ids[-1]
    stats = g.lease_stats()
    assert stats is not None and stats.state == "held"
    g.close()
    assert registry.released == [g.worker_id]


# --- multiprocessing ------------------------------------------------------------------

_inherited: Optional[segflake.Snowflake] = None
_worker_gen: Optional[segflake.Snowflake] = None


def _init_worker(worker_ids: "multiprocessing.Queue[int]") -> None:
    global _worker_gen
    _worker_gen = segflake.Snowflake(worker_ids.get(timeout=10))


def _ids_from_worker_generator(n: int) -> List[int]:
    assert _worker_gen is not None
    return _worker_gen.next_ids(n)


def _ids_from_inherited_generator(n: int) -> List[int]:
    assert _inherited is not None
    return _inherited.next_ids(n)


def test_multiprocessing_pool_with_per_process_generators() -> None:
    ctx = multiprocessing.get_context("fork")
    queue: "multiprocessing.Queue[int]" = ctx.Queue()
    for worker_id in range(4):
        queue.put(worker_id + 10)
    with ctx.Pool(4, initializer=_init_worker, initargs=(queue,)) as pool:
        batches = pool.map(_ids_from_worker_generator, [5000] * 40)
    everything = [i for b in batches for i in b]
    assert len(everything) == 200_000
    assert len(set(everything)) == len(everything)
    workers = {segflake.decode(i).worker_id for i in everything}
    assert workers <= {10, 11, 12, 13} and len(workers) >= 1


def test_multiprocessing_pool_refuses_the_inherited_generator() -> None:
    global _inherited
    _inherited = segflake.Snowflake(20)
    _inherited.next_id()
    try:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(2) as pool:
            with pytest.raises(segflake.ClosedError, match="inherited by process"):
                pool.map(_ids_from_inherited_generator, [10, 10])
        assert _inherited.next_id() > 0
    finally:
        _inherited = None


# --- segment generators -----------------------------------------------------------------

def _wait_child(pid: int, timeout: float) -> int:
    """waitpid with a deadline: a deadlocked child is killed and reported."""
    import signal
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return -999


def test_inherited_segment_generator_refuses_and_child_does_not_deadlock() -> None:
    import gc
    import threading

    class Store:
        def __init__(self) -> None:
            self.n = 1
            self.lock = threading.Lock()

        def allocate(self, tag: str, step: int) -> Tuple[int, int]:
            with self.lock:
                self.n += step
                return (self.n, step)

    store = Store()
    gen = segflake.SegmentGenerator(store, step=3, prefetch_percent=0)
    handle = gen.tag("t")
    stop = threading.Event()

    def hammer() -> None:
        # Tiny segments: the fetch thread is busy (locks, GIL hand-offs) all the time.
        while not stop.is_set():
            handle.next_ids(50)

    threads = [threading.Thread(target=hammer) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for _ in range(15):
            pid = os.fork()
            if pid == 0:  # child
                code = 10
                try:
                    for call in (lambda: gen.next_id("t"), handle.next_id, lambda: gen.stats("t"),
                                 lambda: gen.tag("u"), lambda: gen.next_ids("t", 3)):
                        try:
                            call()
                            os._exit(11)
                        except segflake.ClosedError:
                            pass
                    assert gen.closed
                    gen.close()  # a no-op in the child: must not wait for the parent's threads
                    # A fresh generator over a fresh store works in the child.
                    with segflake.SegmentGenerator(segflake.MemoryStore(), step=10) as mine:
                        if mine.next_ids("t", 25) != list(range(1, 26)):
                            os._exit(12)
                    code = 0
                finally:
                    os._exit(code)
            code = _wait_child(pid, 20)
            assert code == 0, f"child exited with {code} (-999: it hung)"
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert gen.next_id("t") > 0
    gen.close()


def test_child_frees_an_inherited_generator_without_touching_its_threads(tmp_path: Any) -> None:
    import gc

    holder = [segflake.SegmentGenerator(segflake.FileStore(tmp_path / "ids.txt"), step=10)]
    holder[0].next_id("t")
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            holder.clear()  # the last reference in the child: the generator is freed here
            gc.collect()
            segflake._native._close_all_at_exit()  # what atexit runs
            code = 0
        finally:
            os._exit(code)
    code = _wait_child(pid, 20)
    assert code == 0, f"child exited with {code} (-999: it hung)"
    assert holder[0].next_id("t") == 2
    holder[0].close()


def test_inherited_memory_store_refuses_in_the_child() -> None:
    mem = segflake.MemoryStore()
    mem.allocate("t", 10)

    def child(w: int) -> int:
        for call in (lambda: mem.allocate("t", 10), lambda: segflake.SegmentGenerator(mem)):
            try:
                call()
                return 1
            except segflake.ClosedError as e:
                os.write(w, str(e).encode())
        return 0

    code, message = run_in_child(child)
    assert code == 0, message
    assert b"MemoryStore" in message
    assert mem.allocate("t", 10) == (21, 10)


def test_inherited_async_segment_generator_refuses_in_the_child() -> None:
    import asyncio

    async def store(tag: str, step: int) -> Tuple[int, int]:
        return (step + 1, step)

    gen = segflake.AsyncSegmentGenerator(store, step=10)

    async def first() -> int:
        return await gen.next_id("t")

    assert asyncio.run(first()) == 1

    def child(w: int) -> int:
        try:
            asyncio.run(first())
            return 1
        except segflake.ClosedError as e:
            os.write(w, str(e).encode())
            return 0

    code, message = run_in_child(child)
    assert code == 0, message
    assert b"AsyncSegmentGenerator" in message


def _segment_ids(n: int) -> List[int]:
    assert _process_segments is not None
    return _process_segments().next_ids("order", n)


_process_segments: "Optional[segflake.ProcessLocal[segflake.SegmentGenerator]]" = None


def test_multiprocessing_pool_with_per_process_segment_generators(tmp_path: Any) -> None:
    # Each worker builds its own generator over the shared, multi-process file store.
    global _process_segments
    path = str(tmp_path / "ids.txt")
    _process_segments = segflake.per_process(lambda: segflake.SegmentGenerator(segflake.FileStore(path), step=100))
    try:
        parent_ids = _process_segments().next_ids("order", 50)
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(3) as pool:
            batches = pool.map(_segment_ids, [700] * 12)
        everything = parent_ids + [i for b in batches for i in b]
        assert len(everything) == 50 + 12 * 700
        assert len(set(everything)) == len(everything)
        for b in batches:
            assert all(x < y for x, y in zip(b, b[1:]))
    finally:
        _process_segments = None
