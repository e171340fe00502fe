"""asyncio drivers: segment IDs and serials from stores and counters with ``async def``.

The ID logic stays in the Rust core: :class:`AsyncSegmentGenerator` drives one
:class:`segflake.SegmentEngine` per tag (the sans-I/O engine: it never blocks and never
calls the store) from the event loop, exactly as the engine's manual prescribes: take,
start the fetch the engine asks for, hand the store's answer back, wake the waiters.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import threading
from typing import Any, Awaitable, Callable, Dict, List, Optional, Set, Tuple, Union

from ._native import (
    ClosedError,
    InvalidArgumentError,
    MultiStore,
    RegistryError,
    SegflakeError,
    SegmentEngine,
    SegmentStats,
    SerialGenerator,
    Snowflake,
    StoreError,
)

_TIMED_OUT = object()


async def _within(awaitable: Awaitable[Any], timeout: float) -> Any:
    """The awaitable's result, or ``_TIMED_OUT`` (after cancelling it) past ``timeout``
    seconds. Unlike ``asyncio.wait_for``, a ``TimeoutError`` the awaitable raises itself
    stays that exception."""
    fut = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({fut}, timeout=timeout)
    except asyncio.CancelledError:
        fut.cancel()
        raise
    if not done:
        fut.cancel()
        return _TIMED_OUT
    return fut.result()


def _runs_on_loop(fn: Any) -> bool:
    """Whether ``fn`` is a coroutine function (called on the event loop); anything else is
    a plain function, called on a worker thread so that it never blocks the loop."""
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)
    return call is not None and inspect.iscoroutinefunction(call)


class _Worker:
    """The worker threads of one asyncio driver: plain (synchronous) store and counter
    functions run here, never on the event loop. Created on first use; at most
    ``max_workers`` calls at once (a stalled call whose deadline passed keeps its thread
    until it returns, and its late answer is discarded)."""

    def __init__(self, name: str, max_workers: int = 4) -> None:
        self._name = name
        self._max_workers = max_workers
        self._executor: Optional[concurrent.futures.ThreadPoolExecutor] = None

    async def call(self, fn: Callable[..., Any], args: Tuple[Any, ...], timeout: float) -> Any:
        """``fn(*args)`` with a deadline of ``timeout`` seconds, or ``_TIMED_OUT``: a
        coroutine function is called on the loop, a plain one on a worker thread; an
        awaitable it returns is awaited on the loop within what is left of the deadline.
        Past the deadline the call is abandoned (a coroutine cancelled, a thread's answer
        discarded when it comes)."""
        loop = asyncio.get_running_loop()
        if _runs_on_loop(fn):
            result = fn(*args)
        else:
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self._max_workers, thread_name_prefix=self._name
                )
            started = loop.time()
            result = await _within(loop.run_in_executor(self._executor, functools.partial(fn, *args)), timeout)
            if result is _TIMED_OUT:
                return _TIMED_OUT
            timeout = max(0.0, timeout - (loop.time() - started))
        if inspect.isawaitable(result):
            result = await _within(result, timeout)
        return result

    def close(self) -> None:
        """Stops the threads once their calls return (queued calls are dropped)."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)


AllocateResult = Any
"""``(max_id, step)``, ``{"max_id": ..., "step": ...}`` or an object with those attributes."""


def _allocator(store: Any) -> Callable[[str, int], Union[AllocateResult, Awaitable[AllocateResult]]]:
    allocate = getattr(store, "allocate", None)
    if callable(allocate):
        return allocate  # type: ignore[no-any-return]
    if callable(store) and not isinstance(store, str):
        return store  # type: ignore[no-any-return]
    raise InvalidArgumentError(
        f"invalid store: got {store!r} of type {type(store).__name__}; expected an object with "
        "allocate(tag, step) (async or not) returning (max_id, step), or such a callable"
    )


def _giver(store: Any) -> Optional[Callable[[str, int, int], Any]]:
    """The store's ``give_back(tag, expected_max_id, max_id)`` (async or not), if it has one."""
    give_back = getattr(store, "give_back", None)
    return give_back if callable(give_back) else None


class AsyncSegmentTag:
    """One tag of an :class:`AsyncSegmentGenerator`: the hot path without the tag lookup."""

    __slots__ = ("_engine", "_owner", "_waiters", "_last_error")

    def __init__(self, owner: "AsyncSegmentGenerator", engine: SegmentEngine) -> None:
        self._owner = owner
        self._engine = engine
        self._waiters: List["asyncio.Future[None]"] = []
        # The store's last exception: the __cause__ of the SegmentsExhaustedError it leads to.
        self._last_error: Optional[BaseException] = None

    @property
    def name(self) -> str:
        """The tag's name."""
        return self._engine.tag

    async def next_id(self) -> int:
        """The next ID of this tag; waits for a segment at most ``wait_timeout_ms``."""
        engine = self._engine
        id_ = engine.try_next()
        if engine.wants_fetch:
            self._kick()
        if id_ is not None:
            return id_
        return await self._wait_one()

    async def next_ids(self, n: int) -> List[int]:
        """``n`` strictly increasing IDs of this tag."""
        engine = self._engine
        out = engine.try_next_batch(n)
        if engine.wants_fetch:
            self._kick()
        while len(out) < n:
            out.extend(await self._wait_batch(n - len(out)))
        return out

    def try_next_id(self) -> Optional[int]:
        """An ID if one is ready now, else None (starts a fetch if needed; never waits)."""
        engine = self._engine
        id_ = engine.try_next()
        if engine.wants_fetch:
            self._kick()
        if id_ is None and self._owner._closed:
            raise ClosedError("the generator is closed")
        return id_

    def stats(self) -> SegmentStats:
        """A snapshot of the tag's segments."""
        return self._engine.stats()

    def __repr__(self) -> str:
        return f"AsyncSegmentTag({self.name!r})"

    # -- driving the engine --------------------------------------------------------------

    def _kick(self) -> None:
        if self._owner._closed:
            return
        step = self._engine.begin_fetch()
        if step is None:
            return
        task = asyncio.get_running_loop().create_task(self._fetch(step, self._engine.fetch_store or 0))
        self._owner._tasks.add(task)
        task.add_done_callback(self._owner._tasks.discard)

    async def _fetch(self, step: int, store: int) -> None:
        engine = self._engine
        try:
            # A store that does not answer within store_timeout_ms fails the fetch: a
            # coroutine is cancelled, a plain function's thread is left to finish and its
            # late answer discarded, so a late answer is never issued.
            owner = self._owner
            result = await owner._worker.call(owner._allocates[store], (engine.tag, step), owner._store_timeout)
        except asyncio.CancelledError:
            engine.fail_fetch("the fetch was cancelled")
            self._wake()
            raise
        except Exception as e:  # the store failed: recorded, waiters see the cause
            self._last_error = e
            engine.fail_fetch(e)
        else:
            self._last_error = None
            if result is _TIMED_OUT:
                engine.timeout_fetch(step)
            else:
                try:
                    engine.complete_fetch(result)
                except SegflakeError:
                    pass  # refused (garbage, overlap): the engine recorded it as a failure
        self._wake()

    def _exhausted(self) -> BaseException:
        err = self._engine.exhausted_error()
        if self._last_error is not None:
            err.__cause__ = self._last_error
        return err

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    async def _wait_one(self) -> int:
        engine = self._engine
        got: Optional[int] = await self._wait(engine.try_next)
        assert got is not None
        return got

    async def _wait_batch(self, n: int) -> List[int]:
        engine = self._engine

        def attempt() -> Optional[List[int]]:
            ids = engine.try_next_batch(n)
            return ids or None

        got: Optional[List[int]] = await self._wait(attempt)
        assert got is not None
        return got

    async def _wait(self, attempt: Callable[[], Any]) -> Any:
        owner = self._owner
        engine = self._engine
        loop = asyncio.get_running_loop()
        deadline = loop.time() + owner._wait_timeout
        failures = engine.failure_count
        while True:
            if owner._closed:
                raise ClosedError("the generator is closed")
            self._kick()
            got = attempt()
            if got is not None:
                if engine.wants_fetch:
                    self._kick()
                return got
            if engine.failure_count != failures:
                raise self._exhausted()
            if not engine.fetch_in_flight:
                # Nothing will arrive (a tag the store does not have waits for its retry
                # backoff): fail now, unless a fetch completed since the attempt.
                got = attempt()
                if got is not None:
                    return got
                raise self._exhausted()
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise self._exhausted()
            fut: "asyncio.Future[None]" = loop.create_future()
            self._waiters.append(fut)
            await asyncio.wait({fut}, timeout=remaining)


class AsyncSegmentGenerator:
    """Dense Leaf-compatible IDs per tag for asyncio, from a store whose
    ``allocate(tag, step)`` is ``async def`` (the async stores of :mod:`segflake.stores`:
    ``AsyncPostgresStore``, ``AsyncMySQLStore``, ``AsyncRedisStore``, ``AsyncHttpStore``)
    or a plain function (``PostgresStore``, ``MySQLStore``...).

    Nothing blocks the event loop: a coroutine function is called on the loop; a plain
    function is called on one of the generator's worker threads (at most 4 calls at once,
    possibly for different tags at the same time, so it must be thread-safe, as the
    packaged stores are), and an awaitable a plain function returns is then awaited on the
    loop. Either way the call has ``store_timeout_ms``: past it a coroutine is cancelled, a
    thread's late answer is discarded (never issued), and the fetch counts as failed.

    ``await gen.next_id("order")``; ``gen.tag("order")`` returns a handle without the
    lookup. Segments are prefetched in the background (a task on the running loop) once
    ``prefetch_percent`` of the current one is used; when both buffers are empty a caller
    waits at most ``wait_timeout_ms`` and then gets ``SegmentsExhaustedError`` (at once if
    the fetch it waited for failed). An async store call that takes longer than
    ``store_timeout_ms`` is cancelled and counts as a failed fetch. Use one generator per
    event loop and per process.

    ``await gen.aclose()`` (or leaving ``async with``) gives the IDs fetched but not issued
    back to the store, when it has a ``give_back(tag, expected_max_id, max_id)`` (async or
    not; the packaged stores have one) and nobody allocated after them, so the next
    generator continues without a gap (``give_back=False`` turns this off; never with a
    ``MultiStore``). :meth:`close` cannot wait for the store and gives nothing back.
    """

    def __init__(
        self,
        store: Any,
        *,
        step: Optional[int] = None,
        max_step: Optional[int] = None,
        dynamic_step: Optional[bool] = None,
        prefetch_percent: Optional[int] = None,
        retry_backoff_ms: Optional[int] = None,
        wait_timeout_ms: Optional[int] = None,
        store_timeout_ms: Optional[int] = None,
        give_back: Optional[bool] = None,
    ) -> None:
        # A MultiStore: the engine names the store of each fetch (fetch_store).
        stores = list(store.stores) if isinstance(store, MultiStore) else [store]
        self._allocates = [_allocator(s) for s in stores]
        # A multi-store engine never offers a give-back (the stores' rows interleave).
        self._give_back = None if isinstance(store, MultiStore) else _giver(store)
        self._engine_options: Dict[str, Any] = dict(
            stores=len(stores),
            step=step,
            max_step=max_step,
            dynamic_step=dynamic_step,
            prefetch_percent=prefetch_percent,
            retry_backoff_ms=retry_backoff_ms,
            wait_timeout_ms=wait_timeout_ms,
            store_timeout_ms=store_timeout_ms,
            give_back=give_back,
        )
        # Validates the options now (the engine checks every field).
        probe = SegmentEngine("options-check", **self._engine_options)
        self._options: Dict[str, Any] = dict(probe.options)
        self._wait_timeout = self._options["wait_timeout_ms"] / 1000.0
        self._store_timeout = self._options["store_timeout_ms"] / 1000.0
        self._tags: Dict[str, AsyncSegmentTag] = {}
        self._tasks: Set["asyncio.Task[None]"] = set()
        self._worker = _Worker("segflake-store")
        self._closed = False

    @property
    def options(self) -> Dict[str, Any]:
        """The options in effect."""
        return dict(self._options)

    @property
    def closed(self) -> bool:
        return self._closed

    def tag(self, name: str) -> AsyncSegmentTag:
        """A handle on ``name`` (its first fetch starts on first use in a running loop)."""
        handle = self._tags.get(name)
        if handle is None:
            if self._closed:
                raise ClosedError("the generator is closed")
            if not isinstance(name, str):
                raise InvalidArgumentError(
                    f"invalid tag: got {name!r} of type {type(name).__name__}; expected a str "
                    "such as 'order'"
                )
            handle = AsyncSegmentTag(self, SegmentEngine(name, **self._engine_options))
            self._tags[name] = handle
        return handle

    async def next_id(self, tag: str) -> int:
        """The next ID of ``tag``."""
        handle = self._tags.get(tag)
        if handle is None:
            handle = self.tag(tag)
        engine = handle._engine
        id_ = engine.try_next()
        if engine.wants_fetch:
            handle._kick()
        if id_ is not None:
            return id_
        return await handle._wait_one()

    async def next_ids(self, tag: str, n: int) -> List[int]:
        """``n`` strictly increasing IDs of ``tag``."""
        return await self.tag(tag).next_ids(n)

    def try_next_id(self, tag: str) -> Optional[int]:
        """An ID of ``tag`` if one is ready now, else None (never waits)."""
        return self.tag(tag).try_next_id()

    def stats(self, tag: str) -> SegmentStats:
        """A snapshot of ``tag``'s segments (``InvalidArgumentError`` for an unused tag)."""
        handle = self._tags.get(tag)
        if handle is None:
            raise InvalidArgumentError(
                f"invalid tag: {tag!r} has not been used by this generator; known tags: "
                f"{sorted(self._tags)}"
            )
        return handle.stats()

    def tags(self) -> List[str]:
        """The tags used so far, sorted."""
        return sorted(self._tags)

    def close(self) -> None:
        """Closes the generator: waiting and later calls get ``ClosedError``; fetches in
        flight are cancelled. Idempotent. It gives nothing back to the store (that needs
        a store call, which only :meth:`aclose` can wait for)."""
        if self._closed:
            return
        self._closed = True
        for handle in self._tags.values():
            handle._engine.close()
            handle._wake()
        for task in list(self._tasks):
            task.cancel()
        self._worker.close()

    async def aclose(self) -> None:
        """:meth:`close`, then waits for the cancelled fetches to finish, then gives each
        tag's fetched but unissued IDs back to the store (its ``give_back(tag,
        expected_max_id, max_id)``, awaited on the loop if it is a coroutine function,
        else called on a worker thread), within ``store_timeout_ms`` in all. A give-back
        that fails or times out is ignored: it only leaves a gap."""
        self.close()
        tasks = list(self._tasks)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        engines = [handle._engine for handle in self._tags.values()]
        for engine in engines:
            if engine.fetch_in_flight:
                # A fetch begun whose task was cancelled before it ran: the store was never
                # called, no range is on its way.
                try:
                    engine.fail_fetch("the generator closed before the store was called")
                except SegflakeError:
                    pass  # a forked child's engine: it refuses, and offers nothing
        offers = [(engine.tag, engine.take_give_back()) for engine in engines]
        give_back = self._give_back
        if give_back is None or not any(offer for _, offer in offers):
            return

        async def one(tag: str, expected_max_id: int, max_id: int) -> None:
            try:
                await self._worker.call(give_back, (tag, expected_max_id, max_id), self._store_timeout)
            except Exception:
                pass  # not given back: a gap, nothing worse

        try:
            await asyncio.gather(*(one(tag, *offer) for tag, offer in offers if offer is not None))
        finally:
            self._worker.close()

    async def __aenter__(self) -> "AsyncSegmentGenerator":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncSegmentGenerator(tags={self.tags()}, closed={self._closed})"


class AsyncSerialGenerator:
    """Date-prefixed serials whose per-second sequence comes from an async counter,
    e.g. Redis ``INCR`` on a key named after ``date_prefix(second)``:

    ``gen = AsyncSerialGenerator(lambda second: redis.incr(f"serial:{second}"))``;
    ``await gen.next()``; or a script counter (:mod:`segflake.counters`, e.g. a
    ``AsyncRedisSerialCounter``). Other keyword arguments are those of
    :class:`SerialGenerator`. A coroutine function runs on the loop; a plain (synchronous)
    counter, such as ``RedisSerialCounter`` on a ``redis.Redis``, runs on a worker thread of
    the generator, so it never blocks the loop. A counter call longer than
    ``counter_timeout_ms`` fails with ``StoreError`` (a coroutine is cancelled, a thread's
    late answer discarded).
    The serials never decrease, even when the clock steps back.
    """

    def __init__(
        self,
        counter: Any,
        *,
        worker_id: Optional[int] = None,
        worker_digits: Optional[int] = None,
        sequence_digits: Optional[int] = None,
        utc_offset_minutes: Optional[int] = None,
        last: Optional[int] = None,
        counter_timeout_ms: Optional[int] = None,
        counter_max_behind_ms: Optional[int] = None,
        counter_max_ahead_ms: Optional[int] = None,
        clock: Any = None,
    ) -> None:
        self._script = getattr(counter, "run_serial_script", None)
        if not callable(counter) and self._script is None:
            raise InvalidArgumentError(
                f"invalid counter: got {counter!r} of type {type(counter).__name__}; expected a "
                "callable counter(unix_second) returning an int (or an awaitable of one)"
            )
        self._counter = counter
        self._gen = SerialGenerator(
            worker_id=worker_id,
            worker_digits=worker_digits,
            sequence_digits=sequence_digits,
            utc_offset_minutes=utc_offset_minutes,
            last=last,
            counter_timeout_ms=counter_timeout_ms,
            counter_max_behind_ms=counter_max_behind_ms,
            counter_max_ahead_ms=counter_max_ahead_ms,
            clock=clock,
        )
        self._counter_timeout: float = self._gen.counter_timeout_ms / 1000.0
        self._worker = _Worker("segflake-counter", max_workers=2)

    @property
    def generator(self) -> SerialGenerator:
        """The underlying :class:`SerialGenerator` (formatting, decoding, ``last``)."""
        return self._gen

    @property
    def last(self) -> int:
        return self._gen.last

    async def next(self) -> int:
        """The next serial; ``StoreError`` if the counter fails or keeps returning numbers
        at or below the last serial; ``SerialExhaustedError`` past the sequence digits."""
        gen = self._gen
        for _ in range(SerialGenerator.COUNTER_ATTEMPTS):
            second = gen.counter_second()
            try:
                if self._script is not None:
                    call: Callable[..., Any] = self._script
                    args: Tuple[Any, ...] = (gen.counter_key(second), gen.counter_args(second))
                else:
                    call, args = self._counter, (second,)
                value = await self._worker.call(call, args, self._counter_timeout)
            except Exception as e:
                raise StoreError(f"store error: the counter raised {type(e).__name__}: {e}") from e
            if value is _TIMED_OUT:
                raise StoreError(
                    f"store error: the counter did not answer within {self._gen.counter_timeout_ms} ms "
                    "(counter_timeout_ms)"
                )
            serial = gen.accept(second, gen.counter_sequence(second, value))
            if serial is not None:
                return serial
        raise gen._counter_stuck_error()

    async def next_id(self) -> int:
        """Alias of :meth:`next`."""
        return await self.next()

    def close(self) -> None:
        """Stops the worker threads of a synchronous counter (the counter itself stays
        open: close it yourself). The generator works on after it (new threads start)."""
        self._worker.close()


#: What :func:`from_registry_async` allows beyond the lease's own waits.
_START_MARGIN_MS = 5000


def _start_timeout_ms(options: Dict[str, Any]) -> int:
    """The longest a claim may take by the lease options: waiting for a free ID and for the
    clock, a few registry calls, and one Leaf report period (a Leaf node that may still
    run), plus a margin."""

    def ms(name: str, default: int) -> int:
        value = options.get(name)
        return default if value is None or isinstance(value, bool) or not isinstance(value, int) else value

    calls = 4 * ms("registry_timeout_ms", 3000)
    return ms("claim_wait_ms", 10000) + ms("clock_wait_ms", 10000) + calls + 3000 + _START_MARGIN_MS


async def from_registry_async(registry: Any, *, start_timeout_ms: Optional[int] = None, **options: Any) -> Snowflake:
    """:meth:`Snowflake.from_registry` without blocking the event loop: the claim runs on
    the default executor, and the registry's methods may be coroutine functions (the async
    registries of :mod:`segflake.aio_registries`: redis.asyncio, psycopg's AsyncConnection,
    aiomysql), which run on this loop; each such call is cancelled and counts as failed
    past ``registry_timeout_ms``. A synchronous registry (``RedisRegistry``,
    ``ZooKeeperRegistry``...) is called from the lease's own threads, never on the loop.
    Close the generator with :func:`close_async`, or use it as ``async with await
    from_registry_async(...) as gen``.

    The whole start-up is bounded by ``start_timeout_ms`` (default: ``claim_wait_ms +
    clock_wait_ms + 4 × registry_timeout_ms`` + 8 s): past it :class:`segflake.RegistryError`
    is raised. Cancelled or timed out while the claim runs, the generator it gives is
    closed (its worker ID released) in the background."""
    loop = asyncio.get_running_loop()
    if start_timeout_ms is None:
        start_timeout_ms = _start_timeout_ms(options)
    elif isinstance(start_timeout_ms, bool) or not isinstance(start_timeout_ms, int) or start_timeout_ms <= 0:
        raise InvalidArgumentError(
            f"invalid start_timeout_ms {start_timeout_ms!r}: expected a positive number of milliseconds"
        )
    # The native driver's threads submit the registry's coroutines to this loop.
    kwargs: Dict[str, Any] = dict(options, _event_loop=loop)
    start = loop.run_in_executor(None, functools.partial(Snowflake.from_registry, registry, **kwargs))
    try:
        done, _ = await asyncio.wait({start}, timeout=start_timeout_ms / 1000.0)
    except asyncio.CancelledError:
        start.add_done_callback(_close_unwanted)
        raise
    if not done:
        start.add_done_callback(_close_unwanted)
        raise RegistryError(
            f"registry error: no worker ID within start_timeout_ms = {start_timeout_ms} ms "
            "(the claim goes on in the background and is released if it succeeds)"
        )
    return start.result()


def _close_unwanted(start: "asyncio.Future[Snowflake]") -> None:
    """Closes a generator nobody awaits any more (its start-up was cancelled), on a thread
    of its own: the release may need the loop, which must not wait for it."""
    if start.cancelled() or start.exception() is not None:
        return
    threading.Thread(target=start.result().close, name="segflake-close", daemon=True).start()


async def close_async(generator: Snowflake, *, timeout_ms: int = 10000) -> None:
    """:meth:`Snowflake.close` off the event loop (the release may await the registry;
    it is bounded by ``registry_timeout_ms``). Waits at most ``timeout_ms``; past it
    ``TimeoutError`` is raised and the close finishes in the background."""
    closing = asyncio.get_running_loop().run_in_executor(None, generator.close)
    done, _ = await asyncio.wait({closing}, timeout=timeout_ms / 1000.0)
    if not done:
        raise TimeoutError(f"the generator did not close within {timeout_ms} ms (it goes on closing)")
    closing.result()


async def _itself(value: Any) -> Any:
    """``Snowflake.__aenter__``'s awaitable."""
    return value
