"""asyncio worker-ID registries for :func:`segflake.from_registry_async`.

* :class:`AsyncRedisRegistry` - :class:`segflake.registries.RedisRegistry` on ``redis.asyncio``;
* :class:`AsyncPostgresRegistry` - :class:`segflake.registries.PostgresRegistry` on psycopg 3's
  ``AsyncConnection``;
* :class:`AsyncMySQLRegistry` - :class:`segflake.registries.MySQLRegistry` on aiomysql.

Each performs the same protocol as its synchronous twin (the core's ``_RegistryProtocol``:
the same scripts, statements, keys and answers), so async and sync processes, and other
languages, share one registry. Their methods are coroutine functions: the lease's threads
run them on the event loop given to :func:`segflake.from_registry_async`, each call bounded
there by ``registry_timeout_ms`` and here by the registry's own timeout (default 3 s, the
lease's default ``registry_timeout_ms``): past it the call is cancelled, its connection
dropped and ``TimeoutError`` raised.

ZooKeeper and etcd have no asyncio client here: their synchronous registries
(:class:`segflake.registries.ZooKeeperRegistry`, :class:`segflake.registries.EtcdRegistry`)
work with ``from_registry_async`` as they are, since the lease calls them from its own
threads, never on the event loop; :func:`from_url` returns them for ``zk://`` and
``etcd://`` URLs.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

from ._native import _RegistryProtocol, _redis_durability_settings, _redis_durability_warning
from .registries import (
    Peers,
    _column,
    _describe,
    _failure,
    _host_name,
    _outcome,
    _peers,
    _placeholders,
    _plain,
    _text,
    statements,
)
from .registries import REDIS_SCHEMES, redis_protocol_config
from .registries import from_url as _sync_from_url
from .stores._async import (
    AsyncConnections,
    _check_timeout,
    aiomysql_connect,
    aiomysql_connect_writable,
    aiomysql_kwargs,
    async_redis_client,
    deadline,
    pg_check_writable_async,
)
from .stores._common import (
    import_client,
    mysql_targets,
    pg_conninfo,
    pg_read_only_connect_error,
    read_only_translator,
)
from .stores._redis_client import AsyncNodeClients, is_cluster

__all__ = ["AsyncMySQLRegistry", "AsyncPostgresRegistry", "AsyncRedisRegistry", "from_url"]

Step = Dict[str, Any]


async def _exchange(
    protocol: _RegistryProtocol, perform: Callable[[Step], Awaitable[Any]], name: str, args: Tuple[Any, ...]
) -> Tuple[Step, Optional[BaseException]]:
    """:func:`segflake.registries._exchange` with each request awaited."""
    step = protocol.start(name, list(args))
    cause: Optional[BaseException] = None
    while "op" in step:
        try:
            reply, cause = await perform(step), None
        except Exception as e:
            reply, cause = {"error": _describe(e)}, e
        step = protocol.resume(reply)
    return step, cause


class _Calls:
    """One registry call at a time on the running loop (an ``asyncio.Lock`` made per loop)."""

    def __init__(self) -> None:
        self._lock: Optional[asyncio.Lock] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None

    def lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._loop is not loop:
            self._lock, self._loop = asyncio.Lock(), loop
        return self._lock


class AsyncRedisRegistry:
    """Worker-ID leases in Redis with ``redis.asyncio`` (``pip install segflake[redis]``):
    ``url`` (the URLs of :class:`segflake.registries.RedisRegistry`: ``redis://``,
    ``redis+sentinel://``, ``redis+cluster://``, ``rediss…`` for TLS, the certificate
    checked against ``ca_file`` or the URL's ``ca=PATH``, else the system's, and the host
    name; ``replicas=N``) or ``client`` (a ``redis.asyncio`` client); the keys, scripts
    and replica ``WAIT`` of :class:`segflake.registries.RedisRegistry`. ``socket_timeout``
    (seconds, default 3) bounds connecting, each command, and each call as a whole. :meth:`check_durability`
    is the synchronous registry's start-up check (``CONFIG GET appendonly`` and
    ``maxmemory-policy``), awaited when you choose."""

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        client: Any = None,
        prefix: str = "segflake",
        socket_timeout: float = 3.0,
        ca_file: Optional[str] = None,
    ) -> None:
        self.timeout = _check_timeout(socket_timeout, "socket_timeout")
        self.client = async_redis_client("AsyncRedisRegistry", url, client, self.timeout, ca_file)
        self.prefix = "{" + prefix + "}"
        self._protocol = _RegistryProtocol("redis", redis_protocol_config(prefix, socket_timeout, url))
        self._nodes = AsyncNodeClients()
        scripts = statements("redis")
        self._scripts = {
            name: self.client.register_script(scripts[name]) for name in ("claim", "renew", "release", "peers")
        }
        self._calls = _Calls()
        #: The last :meth:`check_durability` warning (``None``: kept, or not checked).
        self.durability_warning: Optional[str] = None

    async def check_durability(self) -> Optional[str]:
        """The warning :class:`segflake.registries.RedisRegistry` logs at start-up when a
        restart or eviction would lose marks (``None``: kept, or ``CONFIG`` refused)."""
        settings: List[Tuple[str, str]] = []
        try:
            for name in _redis_durability_settings():
                got = await deadline(self.client.config_get(name), self.timeout, "AsyncRedisRegistry")
                for key, value in dict(got).items():
                    settings.append((_text(key), _text(value)))
        except Exception:
            return None
        warning = _redis_durability_warning(settings)
        if warning is not None:
            logging.getLogger("segflake").warning("AsyncRedisRegistry: %s", warning)
        self.durability_warning = warning
        return warning

    async def _node(self) -> Any:
        """The client of the server holding the registry's keys: on a Cluster, one for the
        primary of their slot (ROLE and WAIT must reach that server, not any node)."""
        return await self._nodes.for_key(self.client, self.prefix) if is_cluster(self.client) else self.client

    async def _perform(self, op: Step) -> Any:
        if op["op"] == "role":
            role = await (await self._node()).execute_command("ROLE")
            return {"replicas": len(role[2]) if len(role) > 2 and isinstance(role[2], list) else 0}
        if op["op"] != "eval":
            return {"error": f"the Redis adapter has no request {op['op']!r}"}
        script, keys, args, wait = self._scripts[op["script"]], op["keys"], op["args"], op.get("wait")
        if wait is None:
            return {"value": _plain(await script(keys=keys, args=args))}
        pipe = (await self._node()).pipeline(transaction=False)
        await script(keys=keys, args=args, client=pipe)
        pipe.execute_command("WAIT", wait["replicas"], wait["timeout_ms"])
        try:
            value, acked = await pipe.execute()
        except Exception:
            if is_cluster(self.client):
                await self._nodes.refresh(self.client)
            raise
        return {"value": _plain(value), "acked": int(acked)}

    async def _call(self, name: str, *args: Any) -> Any:
        async def call() -> Any:
            async with self._calls.lock():
                return _outcome(*await _exchange(self._protocol, self._perform, name, args))

        return await deadline(call(), self.timeout, f"AsyncRedisRegistry.{name}")

    async def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[int]:
        return await self._call("claim", worker_id, owner, ttl_ms)  # type: ignore[no-any-return]

    async def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Optional[int]:
        return await self._call("renew", worker_id, owner, ttl_ms, mark_ms, reported_ms)  # type: ignore[no-any-return]

    async def release(self, worker_id: int, owner: str, mark_ms: int) -> bool:
        return bool(await self._call("release", worker_id, owner, mark_ms))

    async def peers(self) -> Peers:
        return _peers(await self._call("peers"))

    async def aclose(self) -> None:
        await self._nodes.aclose()
        closer = getattr(self.client, "aclose", None) or self.client.close
        await closer()


class _AsyncSql:
    """:class:`segflake.registries._Sql` with an async connection: one connection, the core's
    schema run on it when opened (unless ``create_schema=False``), each call's statements
    run on it in autocommit mode, one call at a time, the whole call within ``timeout``."""

    dialect = ""

    def __init__(self, open_connection: Callable[[], Awaitable[Any]], create_schema: bool, timeout: float) -> None:
        self._protocol = _RegistryProtocol(self.dialect, {"host_name": _host_name()})
        schema: str = self._protocol.describe()["schema"]
        self.timeout = timeout

        async def connect() -> Any:
            conn = await open_connection()
            if create_schema:
                await self._create_schema(conn, schema)
            return conn

        self._conns: AsyncConnections[Any] = AsyncConnections(
            connect,
            lambda c: c.close(),
            deadline_s=timeout,
            what=type(self).__name__,
            translate=read_only_translator(self.dialect),
        )

    async def _create_schema(self, conn: Any, schema: str) -> None:
        raise NotImplementedError

    async def _query(self, conn: Any, statement: str, params: List[Any]) -> Step:
        """Runs one statement (``%s`` placeholders): ``{"rows", "affected"}``."""
        raise NotImplementedError

    async def _call(self, name: str, *args: Any) -> Any:
        async def perform(conn: Any, op: Step) -> Step:
            if op["op"] != "query":
                return {"error": f"the SQL adapter has no request {op['op']!r}"}
            return await self._query(conn, _placeholders(op["statement"]), op["params"])

        async def converse(conn: Any) -> Tuple[Step, Optional[BaseException]]:
            step, cause = await _exchange(self._protocol, lambda op: perform(conn, op), name, args)
            if "error" in step and cause is not None:
                raise _failure(step["error"], cause)  # a statement failed: the connection goes
            return step, cause

        return _outcome(*await self._conns.run(converse))

    async def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[int]:
        return await self._call("claim", worker_id, owner, ttl_ms)  # type: ignore[no-any-return]

    async def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Optional[int]:
        return await self._call("renew", worker_id, owner, ttl_ms, mark_ms, reported_ms)  # type: ignore[no-any-return]

    async def release(self, worker_id: int, owner: str, mark_ms: int) -> bool:
        return bool(await self._call("release", worker_id, owner, mark_ms))

    async def peers(self) -> Peers:
        return _peers(await self._call("peers"))

    async def aclose(self) -> None:
        await self._conns.aclose()


class AsyncPostgresRegistry(_AsyncSql):
    """:class:`segflake.registries.PostgresRegistry` on psycopg 3's ``AsyncConnection``
    (``pip install segflake[postgres]``): ``conninfo`` (TLS: ``sslmode=require|verify-ca|
    verify-full`` and ``sslrootcert=PATH``; ``allow``/``prefer`` refused) with libpq's
    deadlines, or ``connect`` (an ``async`` function returning a new connection; switched to
    autocommit). ``timeout`` (seconds, default 3) bounds each call as a whole."""

    dialect = "postgres"

    def __init__(
        self,
        conninfo: Optional[str] = None,
        *,
        connect: Optional[Callable[[], Awaitable[Any]]] = None,
        connect_timeout: int = 3,
        timeout: float = 3.0,
        create_schema: bool = True,
    ) -> None:
        if (conninfo is None) == (connect is None):
            raise TypeError("AsyncPostgresRegistry needs exactly one of conninfo or connect")
        psycopg = import_client("psycopg", "postgres")
        timeout = _check_timeout(timeout, "timeout")
        params = "" if conninfo is None else pg_conninfo(psycopg, conninfo, connect_timeout, timeout)

        async def open_connection() -> Any:
            if connect is not None:
                conn = await connect()
                await conn.set_autocommit(True)
                return conn  # the caller's: used as it is
            try:
                conn = await psycopg.AsyncConnection.connect(params, autocommit=True)
            except Exception as e:
                refused = pg_read_only_connect_error(e)
                if refused is not None:
                    raise refused from e
                raise
            return await pg_check_writable_async(conn)

        super().__init__(open_connection, create_schema, timeout)

    async def _create_schema(self, conn: Any, schema: str) -> None:
        await conn.execute(schema)

    async def _query(self, conn: Any, statement: str, params: List[Any]) -> Step:
        cur = await conn.execute(statement, params or None)
        try:
            rows = await cur.fetchall() if cur.description is not None else []
            return {"rows": [[_column(c) for c in row] for row in rows], "affected": max(0, cur.rowcount)}
        finally:
            await cur.close()


class AsyncMySQLRegistry(_AsyncSql):
    """:class:`segflake.registries.MySQLRegistry` on aiomysql (``pip install
    segflake[mysql]``): ``url`` (``mysql://USER:PASSWORD@HOST:PORT/DATABASE``, TLS by
    ``ssl-mode=REQUIRED|VERIFY_CA|VERIFY_IDENTITY`` and ``ssl-ca=PATH``; never a fallback to
    plaintext), aiomysql's connection arguments, or ``connect`` (an ``async`` function
    returning a new connection in autocommit mode, opened with
    ``client_flag=pymysql.constants.CLIENT.FOUND_ROWS``). ``timeout`` (seconds, default 3)
    bounds each call as a whole."""

    dialect = "mysql"

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        connect: Optional[Callable[[], Awaitable[Any]]] = None,
        create_schema: bool = True,
        timeout: float = 3.0,
        **connect_kwargs: Any,
    ) -> None:
        if sum((url is not None, connect is not None, bool(connect_kwargs))) > 1:
            raise TypeError("AsyncMySQLRegistry takes one of url, connect or connection arguments")
        aiomysql = import_client("aiomysql", "mysql")
        pymysql = import_client("pymysql", "mysql")
        timeout = _check_timeout(timeout, "timeout")
        targets = [aiomysql_kwargs(k) for k in (mysql_targets(url) if url is not None else [connect_kwargs])]
        for kwargs in targets:
            kwargs.setdefault("connect_timeout", timeout)
            # An UPDATE's row count is the rows it matched (the statements' contract).
            kwargs["client_flag"] = kwargs.get("client_flag", 0) | pymysql.constants.CLIENT.FOUND_ROWS

        async def open_connection() -> Any:
            if connect is not None:
                return await connect()  # the caller's: used as it is
            return await aiomysql_connect_writable(targets, lambda k: aiomysql_connect(aiomysql, k))

        super().__init__(open_connection, create_schema, timeout)

    async def _create_schema(self, conn: Any, schema: str) -> None:
        async with conn.cursor() as cur:
            for statement in schema.split(";"):
                body = "\n".join(l for l in statement.splitlines() if not l.strip().startswith("--"))
                if body.strip():
                    await cur.execute(body)

    async def _query(self, conn: Any, statement: str, params: List[Any]) -> Step:
        async with conn.cursor() as cur:
            await cur.execute(statement, params or None)
            rows = await cur.fetchall() if cur.description is not None else []
            return {"rows": [[_column(c) for c in row] for row in rows], "affected": max(0, cur.rowcount)}


def from_url(url: str) -> Any:
    """An async registry for ``redis://``/``rediss://`` (and their ``+sentinel``,
    ``+cluster`` forms), ``postgres://``/``postgresql://`` and ``mysql://`` URLs (the spellings of :func:`segflake.registries.from_url`); for
    ``zk://``, ``zk+tls://``, ``etcd://`` and ``etcd+tls://`` the synchronous registry,
    which ``from_registry_async`` calls from the lease's threads, off the loop."""
    scheme = url.split("://", 1)[0].lower()
    if scheme in REDIS_SCHEMES:
        return AsyncRedisRegistry(url)
    if scheme in ("postgres", "postgresql"):
        return AsyncPostgresRegistry(url)
    if scheme == "mysql":
        return AsyncMySQLRegistry(url)
    return _sync_from_url(url)
