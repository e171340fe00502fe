"""AsyncSegmentGenerator and AsyncSerialGenerator with asyncio stores and counters."""

import asyncio
import time
from typing import Any, Dict, List, Tuple

import pytest

import segflake


class AsyncLeaf:
    def __init__(self, delay: float = 0.0) -> None:
        self.rows: Dict[str, int] = {}
        self.delay = delay
        self.calls = 0
        self.failing = False

    async def allocate(self, tag: str, step: int) -> Tuple[int, int]:
        self.calls += 1
        await asyncio.sleep(self.delay)
        if self.failing:
            raise TimeoutError("redis timed out")
        self.rows[tag] = self.rows.get(tag, 1) + step
        return (self.rows[tag], step)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_async_store_dense_ids_and_prefetch() -> None:
    async def main() -> None:
        store = AsyncLeaf(delay=0.001)
        async with segflake.AsyncSegmentGenerator(store, step=100, dynamic_step=False) as gen:
            ids = [await gen.next_id("order") for _ in range(550)]
            assert ids == list(range(1, 551))
            tag = gen.tag("order")
            assert tag is gen.tag("order") and tag.name == "order"
            assert await tag.next_ids(50) == list(range(551, 601))
            assert await gen.next_ids("user", 3) == [1, 2, 3]
            s = gen.stats("order")
            assert s.fetches >= 6 and s.failures == 0 and s.step == 100
            assert gen.tags() == ["order", "user"]
            assert gen.options["step"] == 100 and "fetch_threads" not in gen.options
    run(main())


def test_many_tasks_share_one_generator() -> None:
    async def main() -> None:
        store = AsyncLeaf(delay=0.002)
        async with segflake.AsyncSegmentGenerator(store, step=50) as gen:
            async def worker() -> List[int]:
                out = []
                for _ in range(200):
                    out.append(await gen.next_id("t"))
                return out

            results = await asyncio.gather(*(worker() for _ in range(20)))
            everything = [i for r in results for i in r]
            assert len(everything) == 4000 and len(set(everything)) == 4000
            for r in results:
                assert all(a < b for a, b in zip(r, r[1:]))
            # At most one fetch per tag was in flight: the store saw no overlapping calls.
            assert max(everything) < store.rows["t"]
    run(main())


def test_async_store_failure_then_recovery() -> None:
    async def main() -> None:
        store = AsyncLeaf()
        async with segflake.AsyncSegmentGenerator(store, step=10, prefetch_percent=100) as gen:
            assert await gen.next_ids("t", 10) == list(range(1, 11))
            store.failing = True
            with pytest.raises(segflake.SegmentsExhaustedError) as info:
                await gen.next_id("t")
            assert "TimeoutError: redis timed out" in str(info.value)
            assert isinstance(info.value.__cause__, TimeoutError)
            assert info.value.tag == "t"
            store.failing = False
            assert await gen.next_id("t") == 11
    run(main())


def test_async_slow_store_bounded_wait() -> None:
    async def main() -> None:
        store = AsyncLeaf(delay=0.5)
        async with segflake.AsyncSegmentGenerator(store, step=10, wait_timeout_ms=100) as gen:
            began = time.monotonic()
            with pytest.raises(segflake.SegmentsExhaustedError, match="has not answered"):
                await gen.next_id("t")
            assert 0.08 <= time.monotonic() - began < 1.0
            # The loop stayed free meanwhile: the fetch completes and IDs flow.
            await asyncio.sleep(1.0)
            assert await gen.next_id("t") == 1
    run(main())


def test_async_store_that_never_answers_times_out() -> None:
    async def main() -> None:
        hang = asyncio.Event()  # never set: the first call never completes
        calls: List[int] = []
        cancelled: List[bool] = []

        async def store(tag: str, step: int) -> Tuple[int, int]:
            calls.append(step)
            if len(calls) == 1:
                try:
                    await hang.wait()
                except asyncio.CancelledError:
                    cancelled.append(True)
                    raise
            return (1 + step * len(calls), step)

        async with segflake.AsyncSegmentGenerator(
            store, step=10, wait_timeout_ms=400, store_timeout_ms=150
        ) as gen:
            assert gen.options["store_timeout_ms"] == 150
            began = time.monotonic()
            with pytest.raises(segflake.SegmentsExhaustedError) as info:
                await gen.next_id("t")
            waited = time.monotonic() - began
            assert 0.1 <= waited < 0.4 + 0.3, waited
            assert 'did not answer allocate("t", 10) within 150 ms (store_timeout_ms)' in str(info.value)
            assert cancelled == [True], "the stuck store call is cancelled"
            # The store answers again: the next call succeeds, above the abandoned range.
            assert await gen.next_id("t") == 11
            s = gen.stats("t")
            assert s.failures == 1 and s.last_error is not None and "store_timeout_ms" in s.last_error
    run(main())


def test_async_late_answer_is_discarded() -> None:
    async def main() -> None:
        calls: List[int] = []

        async def store(tag: str, step: int) -> Tuple[int, int]:
            calls.append(step)
            if len(calls) == 1:
                # Answers after the timeout, ignoring the cancellation: never issued.
                try:
                    await asyncio.sleep(0.3)
                except asyncio.CancelledError:
                    pass
                return (11, 10)
            return (1 + 10 * len(calls), 10)

        async with segflake.AsyncSegmentGenerator(store, step=10, store_timeout_ms=100) as gen:
            with pytest.raises(segflake.SegmentsExhaustedError, match="store_timeout_ms"):
                await gen.next_id("t")
            ids = await gen.next_ids("t", 10)
            assert ids == list(range(11, 21))
            await asyncio.sleep(0.4)
            assert all(i >= 11 for i in await gen.next_ids("t", 5))
    run(main())


def test_async_counter_timeout() -> None:
    async def main() -> None:
        async def counter(second: int) -> int:
            await asyncio.sleep(5)
            return 1

        gen = segflake.AsyncSerialGenerator(counter, counter_timeout_ms=100)
        began = time.monotonic()
        with pytest.raises(segflake.StoreError, match="counter_timeout_ms"):
            await gen.next()
        assert time.monotonic() - began < 1.0
    run(main())


@pytest.mark.parametrize("answer, words", [
    ("nope", "str"),
    ((5, 10), "below step"),
    ((2**63, 10), "i64::MAX"),
    ((11, 0), "step 0"),
    ([1, 2, 3, 4], "the store returned a sequence of 4 items; expected { max_id, step }"),
])
def test_async_store_contract_violations(answer: Any, words: str) -> None:
    async def main() -> None:
        async def store(tag: str, step: int) -> Any:
            return answer

        async with segflake.AsyncSegmentGenerator(store, step=10) as gen:
            with pytest.raises(segflake.SegmentsExhaustedError) as info:
                await gen.next_id("t")
            assert words in str(info.value)
    run(main())


def test_async_overlap_refused() -> None:
    async def main() -> None:
        answers = [(11, 10), (15, 10), (31, 10)]

        async def store(tag: str, step: int) -> Tuple[int, int]:
            return answers.pop(0) if len(answers) > 1 else answers[0]

        async with segflake.AsyncSegmentGenerator(store, step=10, prefetch_percent=100) as gen:
            assert await gen.next_ids("t", 10) == list(range(1, 11))
            with pytest.raises(segflake.SegmentsExhaustedError, match="overlaps or precedes"):
                await gen.next_id("t")
            assert await gen.next_id("t") == 21
    run(main())


def test_sync_store_and_builtin_store_in_async_generator() -> None:
    async def main() -> None:
        async with segflake.AsyncSegmentGenerator(segflake.MemoryStore(), step=5) as gen:
            assert [await gen.next_id("t") for _ in range(12)] == list(range(1, 13))
        assert gen.closed
    run(main())


def test_close_wakes_waiters_and_refuses_later_calls() -> None:
    async def main() -> None:
        store = AsyncLeaf(delay=5)
        gen = segflake.AsyncSegmentGenerator(store, step=10, wait_timeout_ms=5000)
        waiter = asyncio.ensure_future(gen.next_id("t"))
        await asyncio.sleep(0.05)
        began = time.monotonic()
        await gen.aclose()
        with pytest.raises(segflake.ClosedError):
            await waiter
        assert time.monotonic() - began < 1
        with pytest.raises(segflake.ClosedError):
            await gen.next_id("t")
        with pytest.raises(segflake.ClosedError):
            gen.tag("new")
        gen.close()  # idempotent
    run(main())


def test_async_argument_errors() -> None:
    with pytest.raises(segflake.InvalidArgumentError, match="allocate"):
        segflake.AsyncSegmentGenerator(42)
    with pytest.raises(segflake.InvalidArgumentError, match="0..=100"):
        segflake.AsyncSegmentGenerator(AsyncLeaf(), prefetch_percent=101)
    gen = segflake.AsyncSegmentGenerator(AsyncLeaf())
    with pytest.raises(segflake.InvalidArgumentError, match="whitespace"):
        gen.tag("a b")
    with pytest.raises(segflake.InvalidArgumentError, match="str"):
        gen.tag(5)  # type: ignore[arg-type]
    with pytest.raises(segflake.InvalidArgumentError, match="has not been used"):
        gen.stats("never")

    async def zero() -> None:
        with pytest.raises(segflake.InvalidArgumentError, match="batch size"):
            await gen.next_ids("t", 0)
    run(zero())


def test_async_serial_generator_with_an_async_counter() -> None:
    async def main() -> None:
        counters: Dict[int, int] = {}

        async def incr(second: int) -> int:
            await asyncio.sleep(0)
            counters[second] = counters.get(second, 0) + 1
            return counters[second]

        gen = segflake.AsyncSerialGenerator(incr, sequence_digits=4)
        serials = [await gen.next() for _ in range(20)]
        assert all(a < b for a, b in zip(serials, serials[1:]))
        parts = gen.generator.decode(serials[-1])
        assert parts.sequence == counters[parts.unix_seconds]
        assert gen.last == serials[-1]

        async def broken(second: int) -> int:
            raise ConnectionError("redis down")

        err = None
        try:
            await segflake.AsyncSerialGenerator(broken).next()
        except segflake.StoreError as e:
            err = e
        assert err is not None and "ConnectionError: redis down" in str(err)
        assert isinstance(err.__cause__, ConnectionError)

        async def stale(second: int) -> int:
            return 1

        # A last serial in 2099: every answer is at or below it, whichever second it is
        # now (a fresh second would make the counter's 1 new again).
        g = segflake.AsyncSerialGenerator(stale, last=9912312359590005)
        with pytest.raises(segflake.StoreError, match="8 sequence numbers in a row"):
            await g.next()

        async def garbage(second: int) -> Any:
            return "7"

        with pytest.raises(segflake.StoreError, match="str"):
            await segflake.AsyncSerialGenerator(garbage).next()
        with pytest.raises(segflake.InvalidArgumentError, match="callable"):
            segflake.AsyncSerialGenerator(5)  # type: ignore[arg-type]
    run(main())


def test_async_serial_generator_with_a_script_counter() -> None:
    async def main() -> None:
        counts: Dict[str, int] = {}
        seen: List[str] = []

        class Counter:
            async def run_serial_script(self, key: str, args: List[int]) -> List[int]:
                seen.append(key)
                counts[key] = counts.get(key, 0) + 1
                return [1, counts[key], args[0] * 1000]

        gen = segflake.AsyncSerialGenerator(Counter(), counter_max_behind_ms=1000)
        serials = [await gen.next() for _ in range(5)]
        assert all(a < b for a, b in zip(serials, serials[1:]))
        assert seen[0] == gen.generator.counter_key(gen.generator.decode(serials[0]).unix_seconds)

        class Refusing:
            async def run_serial_script(self, key: str, args: List[int]) -> List[int]:
                return [0, 0, args[0] * 1000 + 90_000]

        with pytest.raises(segflake.ClockSkewError, match="counter_max_behind_ms = 1000"):
            await segflake.AsyncSerialGenerator(Refusing(), counter_max_behind_ms=1000).next()
    run(main())
