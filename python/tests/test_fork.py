"""Fork safety: a generator inherited through fork() never issues IDs its parent issues."""

import multiprocessing
import os
import sys
from typing import List, Optional, Tuple

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
