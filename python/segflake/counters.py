"""Shared per-second counters for :class:`segflake.SerialGenerator` (and
:class:`segflake.AsyncSerialGenerator`).

A *script counter* is any object with ``run_serial_script(key, args)``: the generator
hands it the core's key (``serial:<yyMMddHHmmss><worker digits>``, to follow the
counter's prefix and a colon) and the core's arguments, and reads the reply itself. The
key naming, the expiry rule and the refusal of seconds outside the window
(``counter_max_behind_ms`` / ``counter_max_ahead_ms``: :class:`segflake.ClockSkewError`)
live in the core, so every language counts alike; see ``docs/serials.md``.
"""

from __future__ import annotations

import inspect
from typing import Any, List, Optional

from .registries import statements
from .stores._async import _check_timeout, async_redis_client, deadline
from .stores._redis_client import AsyncReplicaWrites, ReplicaWrites, is_async, redis_client, url_replicas

__all__ = ["AsyncRedisSerialCounter", "RedisSerialCounter", "script"]


def script() -> str:
    """The core's Redis script (``KEYS``: the second's key; ``ARGV``: second,
    counter_max_behind_ms, counter_max_ahead_ms, grace_ms)."""
    return statements("redis")["serial"]


class RedisSerialCounter:
    """Per-second counters in Redis: ``url`` (``redis://HOST[:PORT][/DB]``,
    ``redis+sentinel://H:P[,H:P…]/SERVICE[/DB]``, ``redis+cluster://H:P[,H:P…]``,
    ``rediss…`` for TLS with ``ca=PATH``) or ``client`` (a ``redis.Redis``, Sentinel or
    Cluster client, or a ``redis.asyncio`` one for :class:`segflake.AsyncSerialGenerator`);
    keys are ``prefix + ":" + key``. Every generator sharing a prefix must use the same
    shape (digits), ``utc_offset_minutes`` and ``counter_max_behind_ms``.

    Every count is followed by ``WAIT`` on its own connection when the deployment has
    replicas (the URL's ``replicas=N``, else as the server's replication settings say at
    first use: see :class:`segflake.stores.RedisStore`); a count fewer replicas acknowledged
    raises :class:`segflake.StoreError` with the core's message and no serial is issued
    from it.

    ``SerialGenerator(counter=RedisSerialCounter("redis://127.0.0.1:6379/0"))``. Handed to
    an :class:`segflake.AsyncSerialGenerator` with a ``redis.Redis``, it runs on a worker
    thread (never on the event loop); :class:`AsyncRedisSerialCounter` needs no thread.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        client: Any = None,
        prefix: str = "segflake",
        socket_timeout: float = 5.0,
    ) -> None:
        self.client = redis_client("RedisSerialCounter", url, client, socket_timeout)
        self.prefix = prefix
        self._script = self.client.register_script(script())
        writes = AsyncReplicaWrites if is_async(self.client) else ReplicaWrites
        self._writes: Any = writes(self.client, url_replicas(url), socket_timeout)

    def run_serial_script(self, key: str, args: List[int]) -> Any:
        """Runs the core's script on ``prefix:key``; answers its reply (an awaitable with
        an asyncio client)."""
        keys = [f"{self.prefix}:{key}"]
        return self._writes.run(
            f"the count of {keys[0]!r}", script(), keys, args, lambda: self._script(keys=keys, args=args)
        )

    def close(self) -> Any:
        """Closes the client's connections (an awaitable with an asyncio client)."""
        closer = getattr(self.client, "aclose", None) or self.client.close
        if isinstance(self._writes, AsyncReplicaWrites):

            async def close_all() -> None:
                await self._writes.aclose()
                await closer()

            return close_all()
        return closer()

    def __enter__(self) -> "RedisSerialCounter":
        return self

    def __exit__(self, *args: object) -> None:
        self.close()

    async def __aenter__(self) -> "RedisSerialCounter":
        return self

    async def __aexit__(self, *args: object) -> None:
        closed = self.close()
        if inspect.isawaitable(closed):
            await closed


class AsyncRedisSerialCounter:
    """:class:`RedisSerialCounter` on ``redis.asyncio`` for :class:`segflake.AsyncSerialGenerator`:
    the same script, keys, replica wait and URLs (``redis://``, ``redis+sentinel://``,
    ``redis+cluster://``, ``rediss…`` with ``ca_file`` or the URL's ``ca=PATH``), or
    ``client``, a ``redis.asyncio`` client. ``socket_timeout``
    (seconds, default 5) bounds connecting, each command and each call as a whole
    (``TimeoutError``; keep the generator's ``counter_timeout_ms`` at or above it).

    ``AsyncSerialGenerator(AsyncRedisSerialCounter("redis://127.0.0.1:6379/0"))``.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        client: Any = None,
        prefix: str = "segflake",
        socket_timeout: float = 5.0,
        ca_file: Optional[str] = None,
    ) -> None:
        self.timeout = _check_timeout(socket_timeout, "socket_timeout")
        self.client = async_redis_client("AsyncRedisSerialCounter", url, client, self.timeout, ca_file)
        self.prefix = prefix
        self._script = self.client.register_script(script())
        self._writes = AsyncReplicaWrites(self.client, url_replicas(url), self.timeout)

    async def run_serial_script(self, key: str, args: List[int]) -> Any:
        """Runs the core's script on ``prefix:key``; its reply."""
        keys = [f"{self.prefix}:{key}"]
        call = self._writes.run(
            f"the count of {keys[0]!r}", script(), keys, args, lambda: self._script(keys=keys, args=args)
        )
        return await deadline(call, self.timeout, "AsyncRedisSerialCounter")

    async def aclose(self) -> None:
        """Closes the client's connections."""
        await self._writes.aclose()
        closer = getattr(self.client, "aclose", None) or self.client.close
        await closer()

    async def __aenter__(self) -> "AsyncRedisSerialCounter":
        return self

    async def __aexit__(self, *args: object) -> None:
        await self.aclose()
