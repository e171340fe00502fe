"""segflake: distributed 64-bit IDs from one Rust core.

* :class:`Snowflake` - time-ordered IDs packed by a validated :class:`Layout`
  (``"twitter"``, ``"sonyflake"``, ``"uid-generator"``, ``"js-safe"`` or your own),
  lock-free and strictly increasing from any number of threads.
* :func:`encode` / :func:`parse` - decimal, base62 and Crockford base32 text forms that
  sort like the numbers; :class:`Obfuscator` - a keyed permutation for public IDs.
* :class:`SegmentGenerator` - dense Leaf-compatible IDs per business tag from ranges a
  store hands out (``allocate(tag, step) -> (max_id, step)``), double-buffered by
  background threads; :class:`AsyncSegmentGenerator` for ``async def`` stores.
* :class:`SerialGenerator` / :class:`AsyncSerialGenerator` - date-prefixed order numbers.
* Every error is a :class:`SegflakeError` subclass with a stable ``code``.

Generators refuse to work in a process forked from the one that created them (a copy
would issue the parent's IDs); create them after the fork, for example with
:func:`per_process`.
"""

from __future__ import annotations

import importlib
import os
import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, Generic, List, Optional, TypeVar

from ._native import (
    CORE_VERSION,
    ERROR_CODES,
    FORMATS,
    MAX_BATCH,
    PRESETS,
    DecodedId,
    FileStore,
    Layout,
    LeaseStats,
    ManualClock,
    MemoryStore,
    MultiStore,
    Obfuscator,
    SegflakeError,
    SegmentEngine,
    SegmentGenerator,
    SegmentStats,
    SegmentTag,
    SerialGenerator,
    SerialParts,
    Snowflake,
    __version__,
    compose,
    decode,
    encode,
    encode_base32,
    encode_base62,
    encode_decimal,
    format_time_ms,
    parse,
    parse_base32,
    parse_base62,
    parse_decimal,
    parse_time_ms,
    worker_id_from_env,
    worker_id_from_hostname,
    worker_id_from_ipv4,
    worker_id_from_text,
)

# <generated: error classes>
from ._native import (
    ClockBeforeEpochError,
    ClockBehindMarkError,
    ClockMovedBackwardsError,
    ClockSkewError,
    ClockStalledError,
    ClosedError,
    InvalidArgumentError,
    InvalidLayoutError,
    LayoutExhaustedError,
    LeafNodeAliveError,
    LeaseExpiredError,
    NoFreeWorkerIdError,
    ParseError,
    RegistryError,
    RegistryLostDataError,
    SegmentsExhaustedError,
    SerialExhaustedError,
    StoreContractViolationError,
    StoreError,
    TimeExhaustedError,
    UnknownTagError,
    WorkerIdOutOfRangeError,
)
# </generated>

if TYPE_CHECKING:
    from ._aio import AsyncSegmentGenerator, AsyncSegmentTag, AsyncSerialGenerator, close_async, from_registry_async
    from .registries import Registry

# Imported on first use (PEP 562): the asyncio API pulls in asyncio and ssl, the registries
# http.client and the email parser, ~45 ms that a program issuing snowflake IDs never needs.
_LAZY = {
    "AsyncSegmentGenerator": "._aio",
    "AsyncSegmentTag": "._aio",
    "AsyncSerialGenerator": "._aio",
    "close_async": "._aio",
    "from_registry_async": "._aio",
    "Registry": ".registries",
}


if not TYPE_CHECKING:
    # Hidden from type checkers, which would otherwise take any misspelt attribute of the
    # module for one of these.

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value

    def __dir__() -> List[str]:
        return sorted(set(globals()) | set(_LAZY))


T = TypeVar("T")

_process_locals: "weakref.WeakSet[ProcessLocal[Any]]" = weakref.WeakSet()


class ProcessLocal(Generic[T]):
    """A value created lazily once per process, and again in every forked child.

    ``ids = segflake.per_process(lambda: segflake.Snowflake(worker_id=my_worker_id()))``
    then ``ids().next_id()`` anywhere: the first call in each process (a gunicorn or
    Celery worker, a multiprocessing child) builds that process's own generator; a child
    forked after the parent built one gets a fresh one instead of the parent's copy.
    Thread-safe.
    """

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._value: Optional[T] = None
        self._lock = threading.Lock()
        _process_locals.add(self)

    def get(self) -> T:
        """This process's value, built by the factory on first use."""
        value = self._value
        if value is None:
            with self._lock:
                value = self._value
                if value is None:
                    value = self._factory()
                    self._value = value
        return value

    __call__ = get

    def reset(self) -> None:
        """Forgets this process's value; the next :meth:`get` builds a new one."""
        with self._lock:
            self._value = None

    def _after_fork_in_child(self) -> None:
        # The parent's value must not be used here, and its lock may have been held by a
        # thread that does not exist in the child.
        self._lock = threading.Lock()
        self._value = None


def per_process(factory: Callable[[], T]) -> ProcessLocal[T]:
    """A :class:`ProcessLocal` built by ``factory`` (see its docs)."""
    return ProcessLocal(factory)


def _reset_process_locals() -> None:
    for local in list(_process_locals):
        local._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_process_locals)


__all__ = [
    "AsyncSegmentGenerator",
    "AsyncSegmentTag",
    "AsyncSerialGenerator",
    "FileStore",
    "MemoryStore",
    "MultiStore",
    "SegmentEngine",
    "SegmentGenerator",
    "SegmentStats",
    "SegmentTag",
    "SerialGenerator",
    "SerialParts",
    "CORE_VERSION",
    "ERROR_CODES",
    "FORMATS",
    "MAX_BATCH",
    "PRESETS",
    "DecodedId",
    "Layout",
    "LeaseStats",
    "ManualClock",
    "Obfuscator",
    "ProcessLocal",
    "Registry",
    "SegflakeError",
    "Snowflake",
    "__version__",
    "close_async",
    "compose",
    "decode",
    "encode",
    "encode_base32",
    "encode_base62",
    "encode_decimal",
    "format_time_ms",
    "from_registry_async",
    "parse",
    "parse_base32",
    "parse_base62",
    "parse_decimal",
    "parse_time_ms",
    "per_process",
    "worker_id_from_env",
    "worker_id_from_hostname",
    "worker_id_from_ipv4",
    "worker_id_from_text",
    # <generated: error names>
    "ClockBeforeEpochError",
    "ClockBehindMarkError",
    "ClockMovedBackwardsError",
    "ClockSkewError",
    "ClockStalledError",
    "ClosedError",
    "InvalidArgumentError",
    "InvalidLayoutError",
    "LayoutExhaustedError",
    "LeafNodeAliveError",
    "LeaseExpiredError",
    "NoFreeWorkerIdError",
    "ParseError",
    "RegistryError",
    "RegistryLostDataError",
    "SegmentsExhaustedError",
    "SerialExhaustedError",
    "StoreContractViolationError",
    "StoreError",
    "TimeExhaustedError",
    "UnknownTagError",
    "WorkerIdOutOfRangeError",
    # </generated>
]
