"""Threads sharing one generator; the GIL is released while the core waits."""

import threading
import time
from typing import List

import segflake


def test_threads_sharing_one_generator_never_duplicate() -> None:
    g = segflake.Snowflake(5)
    per_thread: List[List[int]] = [[] for _ in range(4)]
    start = threading.Barrier(4)

    def work(out: List[int]) -> None:
        start.wait()
        for i in range(25_000):
            out.append(g.next_id())
            if i % 1000 == 0:
                out.extend(g.next_ids(100))

    threads = [threading.Thread(target=work, args=(out,)) for out in per_thread]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = [i for out in per_thread for i in out]
    assert len(everything) == 4 * (25_000 + 25 * 100)
    assert len(set(everything)) == len(everything)
    for out in per_thread:
        assert all(a < b for a, b in zip(out, out[1:]))


def test_gil_is_released_while_waiting_for_the_next_tick() -> None:
    # sonyflake with no drift: 256 IDs per 10 ms tick, so 12,800 IDs need ~500 ms of waiting.
    g = segflake.Snowflake(1, layout="sonyflake", max_drift_ms=0)
    beats: List[float] = []
    done = threading.Event()

    def heartbeat() -> None:
        while not done.is_set():
            beats.append(time.monotonic())
            time.sleep(0.001)

    t = threading.Thread(target=heartbeat)
    t.start()
    time.sleep(0.02)
    began = time.monotonic()
    ids = g.next_ids(12_800)
    ended = time.monotonic()
    done.set()
    t.join()
    assert ended - began >= 0.4, "the batch should have waited for the clock"
    during = [b for b in beats if began <= b <= ended]
    gaps = [b - a for a, b in zip(during, during[1:])]
    assert len(during) > 20, f"the heartbeat thread ran only {len(during)} times"
    assert max(gaps) < 0.25, f"the GIL was held for {max(gaps):.3f} s"
    assert len(set(ids)) == 12_800


def test_a_long_batch_stays_interruptible() -> None:
    import os
    import signal

    class Stop(Exception):
        pass

    def handler(signum: int, frame: object) -> None:
        raise Stop()

    old = signal.signal(signal.SIGUSR1, handler)
    try:
        # sonyflake, no drift: 25,600 IDs/s, so 1,000,000 IDs would wait for 39 s.
        g = segflake.Snowflake(1, layout="sonyflake", max_drift_ms=0)
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGUSR1))
        timer.start()
        began = time.monotonic()
        try:
            g.next_ids(1_000_000)
            raise AssertionError("the batch was not interrupted")
        except Stop:
            pass
        assert time.monotonic() - began < 3
        timer.join()
        a, b = g.next_id(), g.next_id()
        assert a < b
    finally:
        signal.signal(signal.SIGUSR1, old)
