"""asyncio segment stores: the statements and scripts of the synchronous stores, run with
async clients (psycopg's ``AsyncConnection``, aiomysql, ``redis.asyncio``), so an
:class:`segflake.AsyncSegmentGenerator` never waits on I/O on its event loop."""

from __future__ import annotations

import asyncio
import os
from typing import Any, Awaitable, Callable, Dict, Generic, List, Optional, Tuple, TypeVar, Union

from .._native import InvalidArgumentError, StoreError
from ._common import (
    Answer,
    LeafRows,
    Residue,
    Row,
    RowStatements,
    check_ensure_tag_args,
    check_max_id,
    check_step,
    check_table,
    check_tag,
    give_back_args,
    give_back_table_error,
    give_back_token,
    ReadOnlyServerError,
    import_client,
    mysql_read_only,
    mysql_targets,
    mysql_where,
    pg_conninfo,
    pg_read_only_connect_error,
    read_only_translator,
    residue_of,
    row_statements,
    segment_statement,
)
from ._http import HttpStore
from ._mysql import allocate_sql as mysql_allocate_sql
from ._postgres import allocate_sql as pg_allocate_sql
from ._redis import _ALLOCATE, RESIDUE_KEY, _parse_residue, give_back_marker, give_back_script
from ._redis_client import AsyncReplicaWrites, redis_client, url_replicas

C = TypeVar("C")
T = TypeVar("T")
_AsyncRows = TypeVar("_AsyncRows", bound="_AsyncLeafRows")


def _check_timeout(timeout: float, what: str) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 3600:
        raise InvalidArgumentError(f"invalid {what} {timeout!r}: expected seconds in (0, 3600]")
    return float(timeout)


async def deadline(awaitable: Awaitable[T], timeout: float, what: str) -> T:
    """``awaitable``'s result, or ``TimeoutError`` (naming ``what``) after ``timeout`` seconds
    (the awaitable is cancelled)."""
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except asyncio.TimeoutError:
        raise TimeoutError(f"{what}: no answer within {timeout:g} s") from None


class AsyncConnections(Generic[C]):
    """One lazily opened async connection, used by one call at a time (an ``asyncio.Lock``),
    reopened after any failure, on another event loop and in a forked child. Every call,
    waiting for the lock and connecting included, has ``deadline_s``: past it the call is
    cancelled, its connection dropped (closed in the background) and ``TimeoutError``
    raised. ``translate``: as :class:`segflake.stores._common.Connections`'s (a read-only
    server's refusal as :class:`segflake.stores.ReadOnlyServerError`)."""

    def __init__(
        self,
        connect: Callable[[], Awaitable[C]],
        close: Callable[[C], Any],
        *,
        deadline_s: float,
        what: str,
        translate: Optional[Callable[[BaseException], Optional[BaseException]]] = None,
    ) -> None:
        self._connect = connect
        self._close = close
        self._deadline_s = deadline_s
        self._what = what
        self._translate = translate
        self._conn: Optional[C] = None
        self._lock: Optional[asyncio.Lock] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._pid = os.getpid()

    def _drop(self, conn: C) -> None:
        """Forgets ``conn`` and closes it without waiting (a close that blocks or awaits
        runs as a task of its own, bounded by a second)."""
        if self._conn is conn:
            self._conn = None
        try:
            closing = self._close(conn)
        except Exception:
            return
        if asyncio.iscoroutine(closing) or isinstance(closing, asyncio.Future):

            async def finish() -> None:
                try:
                    await asyncio.wait_for(closing, 1.0)
                except BaseException:
                    pass

            asyncio.ensure_future(finish())

    async def run(self, op: Callable[[C], Awaitable[T]]) -> T:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._pid != os.getpid() or self._lock is None:
            # A connection belongs to one loop (and one process): never reuse it elsewhere.
            self._conn = None
            self._loop, self._pid, self._lock = loop, os.getpid(), asyncio.Lock()
        lock = self._lock

        async def body() -> T:
            async with lock:
                if self._conn is None:
                    self._conn = await self._connect()
                conn = self._conn
                try:
                    return await op(conn)
                except BaseException as e:
                    # Broken, mid-transaction or cancelled mid-statement: the next call
                    # opens a new connection (a restarted server is picked up this way; of
                    # several hosts, the first writable one).
                    self._drop(conn)
                    translated = None if self._translate is None else self._translate(e)
                    if translated is not None:
                        raise translated from e
                    raise

        return await deadline(body(), self._deadline_s, self._what)

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and self._pid == os.getpid():
            try:
                closing = self._close(conn)
                if asyncio.iscoroutine(closing) or isinstance(closing, asyncio.Future):
                    await asyncio.wait_for(closing, self._deadline_s)
            except Exception:
                pass


class _AsyncLeafRows:
    """Leaf's rules for a tag's row (:class:`segflake.stores.LeafRows`), with async
    statements: a subclass implements ``_allocate_row``, ``_ask_residue_columns`` and
    ``_changed_rows`` as coroutines, and sets ``table`` and the statements as the
    synchronous one."""

    table: str
    _conns: AsyncConnections[Any]
    _rows_sql: RowStatements

    def _init_rows(self, use_row_step: bool, create_missing_tags: Optional[int]) -> None:
        self._rules = LeafRows()
        self._rules._init_rows(use_row_step, create_missing_tags)
        # The give backs' marker table is known to exist (created, or written to).
        self._give_back_table = False

    @property
    def use_row_step(self) -> bool:
        return self._rules.use_row_step

    @property
    def create_missing_tags(self) -> Optional[int]:
        return self._rules.create_missing_tags

    async def _allocate_row(self, tag: str, step: Optional[int]) -> Optional[Row]:
        raise NotImplementedError

    async def _ask_residue_columns(self, conn: Any) -> bool:
        raise NotImplementedError

    async def _has_residue_columns(self, conn: Any) -> bool:
        rules = self._rules
        if rules._residue_asked is not conn:
            rules._residue_columns = bool(await self._ask_residue_columns(conn))
            rules._residue_asked = conn
        return rules._residue_columns

    async def _changed_rows(self, conn: Any, sql: str, params: Optional[Tuple[Any, ...]]) -> int:
        raise NotImplementedError

    async def _run(self, sql: str, params: Optional[Tuple[Any, ...]] = None) -> int:
        async def op(conn: Any) -> int:
            return await self._changed_rows(conn, sql, params)

        changed: int = await self._conns.run(op)
        return changed

    async def give_back(self, tag: str, expected_max_id: int, max_id: int) -> bool:
        """As :meth:`segflake.stores.LeafRows.give_back`: the same statements, safe to run
        twice (recorded under a fresh random token in the marker table
        ``{table}_give_back``, then applied by that token at most once)."""
        return await self._give_back(tag, expected_max_id, max_id, give_back_token())

    async def _give_back(self, tag: str, expected_max_id: int, max_id: int, token: str) -> bool:
        """:meth:`give_back` under ``token``: run again with the same token (a resend), it
        changes nothing."""
        if not give_back_args(tag, expected_max_id, max_id):
            return False
        sql = self._rows_sql

        async def op(conn: Any) -> bool:
            created: Optional[Exception] = None
            if not self._give_back_table:
                # Refused without the CREATE privilege even when the table exists: a table
                # made beforehand and granted still takes the record below.
                try:
                    await self._changed_rows(conn, sql.give_back_table, None)
                except Exception as e:
                    created = e
            try:
                await self._changed_rows(conn, sql.give_back_intent, (token, tag, max_id, expected_max_id))
            except Exception as e:
                if created is None:
                    raise
                raise StoreError(give_back_table_error(self.table, created, e)) from e
            self._give_back_table = True
            return await self._changed_rows(conn, sql.give_back, (token,)) > 0

        given: bool = await self._conns.run(op)
        return given

    async def ensure_tag(
        self, tag: str, *, max_id: int = 1, step: int = 1000, description: Optional[str] = None
    ) -> bool:
        """Creates the tag's row unless it exists; returns whether it was created."""
        check_ensure_tag_args(tag, max_id, step)
        return await self._run(self._rows_sql.ensure_tag, (tag, max_id, step, description)) == 1

    async def create_table(self) -> None:
        """Creates Leaf's table if it does not exist."""
        await self._run(self._rows_sql.create_table)

    async def aclose(self) -> None:
        """Closes the connection (a later call opens a new one)."""
        await self._conns.aclose()

    async def __aenter__(self: _AsyncRows) -> _AsyncRows:
        return self

    async def __aexit__(self, *args: object) -> None:
        await self.aclose()

    async def allocate(self, tag: str, step: int) -> Optional[Answer]:
        """As the synchronous store's: ``(max_id, step, tag_step)`` (``(max_id, step)``
        with ``use_row_step=False``), a dict with ``delta`` and ``remainder`` too when the
        row reports its residue class, or ``None`` when the tag has no row."""
        rules = self._rules
        wanted = rules._wanted_step(tag, step)
        row = await self._allocate_row(tag, wanted)
        if row is None and rules.create_missing_tags is not None:
            await self.ensure_tag(tag, step=rules.create_missing_tags, description="created by segflake")
            row = await self._allocate_row(tag, wanted)
        return rules._answer(tag, row)


class AsyncPostgresStore(_AsyncLeafRows):
    """:class:`segflake.stores.PostgresStore` for asyncio, on psycopg 3's
    ``AsyncConnection`` (``pip install segflake[postgres]``): the same statements, the same
    ``conninfo`` (TLS: ``sslmode=require|verify-ca|verify-full``, ``sslrootcert=PATH``;
    ``allow`` and ``prefer`` refused) and the same libpq deadlines (``connect_timeout``,
    keepalives, ``tcp_user_timeout``, the server's ``statement_timeout``). Or ``connect``:
    an ``async`` function returning a new ``psycopg.AsyncConnection`` (it is switched to
    autocommit).

    One connection, opened on first use, one statement at a time, reopened after any
    failure. ``timeout`` (seconds, default 5) bounds each call as a whole (waiting for the
    connection, connecting, the statements): past it the call is cancelled, its connection
    dropped, and ``TimeoutError`` raised; keep the generator's ``store_timeout_ms`` at or
    above it. ``await store.aclose()`` (or ``async with``) closes the connection.
    ``use_row_step``, ``create_missing_tags``, the residue columns and several hosts in
    ``conninfo`` (the first writable one, :class:`segflake.stores.ReadOnlyServerError`): as
    :class:`segflake.stores.PostgresStore`.
    """

    def __init__(
        self,
        conninfo: Optional[str] = None,
        *,
        connect: Optional[Callable[[], Awaitable[Any]]] = None,
        table: str = "leaf_alloc",
        connect_timeout: int = 5,
        timeout: float = 5.0,
        use_row_step: bool = True,
        create_missing_tags: Optional[int] = None,
    ) -> None:
        if (conninfo is None) == (connect is None):
            raise TypeError("AsyncPostgresStore needs exactly one of conninfo or connect")
        self._init_rows(use_row_step, create_missing_tags)
        psycopg = import_client("psycopg", "postgres")
        self.table = check_table(table)
        self.timeout = _check_timeout(timeout, "timeout")
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

        self._conns: AsyncConnections[Any] = AsyncConnections(
            open_connection,
            lambda c: c.close(),
            deadline_s=self.timeout,
            what="AsyncPostgresStore",
            translate=read_only_translator("postgres"),
        )
        self._allocate_sql, self._allocate_residue_sql, self._residue_sql = pg_allocate_sql(self.table)
        self._rows_sql = row_statements("postgres", self.table)

    async def _ask_residue_columns(self, conn: Any) -> bool:
        cur = await conn.execute(self._residue_sql, (self.table.lower(),))
        row = await cur.fetchone()
        return row is not None and int(row[0]) == 2

    async def _allocate_row(self, tag: str, step: Optional[int]) -> Optional[Row]:
        async def op(conn: Any) -> Optional[Row]:
            residue = await self._has_residue_columns(conn)
            sql = self._allocate_residue_sql if residue else self._allocate_sql
            cur = await conn.execute(sql, (step, tag, step))
            row = await cur.fetchone()
            if row is None:
                return None
            return int(row[0]), int(row[1]), int(row[2]), (residue_of(row[3], row[4]) if residue else None)

        return await self._conns.run(op)

    async def _changed_rows(self, conn: Any, sql: str, params: Optional[Tuple[Any, ...]]) -> int:
        cur = await conn.execute(sql, params)
        return int(cur.rowcount)


def aiomysql_kwargs(connect_kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """PyMySQL-style connection arguments (as :func:`mysql_url` gives them) as aiomysql's:
    ``database`` is ``db``, ``ssl_disabled`` is no ``ssl``, ``read_timeout`` and
    ``write_timeout`` are the call's deadline instead."""
    kwargs = dict(connect_kwargs)
    if "database" in kwargs:
        kwargs["db"] = kwargs.pop("database")
    kwargs.pop("ssl_disabled", None)
    kwargs.pop("read_timeout", None)
    kwargs.pop("write_timeout", None)
    return kwargs


_QUIET_CURSORS: Dict[int, Any] = {}


def _quiet_cursor(aiomysql: Any) -> Any:
    """aiomysql's cursor without its ``SHOW WARNINGS`` round trip and Python warning after
    each statement that left a note (``INSERT IGNORE`` of an existing row, ``CREATE TABLE IF
    NOT EXISTS``): the statements expect those notes, and PyMySQL does not report them."""
    cls = _QUIET_CURSORS.get(id(aiomysql))
    if cls is None:

        class QuietCursor(aiomysql.Cursor):  # type: ignore[misc]
            async def _show_warnings(self, conn: Any) -> None:
                return None

        cls = _QUIET_CURSORS[id(aiomysql)] = QuietCursor
    return cls


async def aiomysql_connect(aiomysql: Any, kwargs: Dict[str, Any]) -> Any:
    """A new aiomysql connection in autocommit mode; one that asked for TLS (``ssl``) and
    did not get it is closed and refused (``ConnectionError``)."""
    kwargs = dict(kwargs)
    kwargs.setdefault("cursorclass", _quiet_cursor(aiomysql))
    conn = await aiomysql.connect(autocommit=True, **kwargs)
    if kwargs.get("ssl") and not getattr(conn, "_secure", False):
        conn.close()
        raise ConnectionError("the MySQL server did not take TLS, which the connection requires")
    return conn


async def pg_check_writable_async(conn: Any) -> Any:
    """``conn`` (psycopg's ``AsyncConnection``) if its server takes writes (the core's
    ``writable`` statement); else it is closed and :class:`ReadOnlyServerError` raised."""
    cur = await conn.execute(segment_statement("postgres", "writable"))
    row = await cur.fetchone()
    if row is not None and int(row[0]) == 1:
        return conn
    try:
        where = f"{conn.info.host}:{conn.info.port}"
    except Exception:
        where = "PostgreSQL"
    try:
        await conn.close()
    except Exception:
        pass
    raise ReadOnlyServerError(
        f"the server is read-only ({where}: in recovery, a standby, or transaction_read_only is on): "
        "nothing was written; the next call connects again"
    )


async def aiomysql_writable(conn: Any) -> bool:
    """Whether an aiomysql connection's server takes writes (the core's ``writable``)."""
    async with conn.cursor() as cur:
        await cur.execute(segment_statement("mysql", "writable"))
        row = await cur.fetchone()
    return row is not None and int(row[0]) == 1


async def aiomysql_connect_writable(
    targets: List[Dict[str, Any]], connect: Callable[[Dict[str, Any]], Awaitable[Any]]
) -> Any:
    """:func:`segflake.stores._common.mysql_connect_writable` for aiomysql: a connection to
    the first of ``targets`` whose server takes writes."""
    passed: List[str] = []
    only_read_only = True
    last: Optional[BaseException] = None
    for kwargs in targets:
        try:
            conn = await connect(kwargs)
        except Exception as e:
            if len(targets) == 1:
                raise
            only_read_only, last = False, e
            passed.append(f"{mysql_where(kwargs)}: {e}")
            continue
        try:
            ok = await aiomysql_writable(conn)
        except BaseException:
            conn.close()
            raise
        if ok:
            return conn
        conn.close()
        refused = mysql_read_only(kwargs)
        if len(targets) == 1:
            raise refused
        passed.append(str(refused))
    if only_read_only:
        raise ReadOnlyServerError(f"every server of the URL is read-only: {'; '.join(passed)}")
    raise ConnectionError(f"no writable MySQL server among {len(targets)} hosts: {'; '.join(passed)}") from last


class AsyncMySQLStore(_AsyncLeafRows):
    """:class:`segflake.stores.MySQLStore` for asyncio, on aiomysql (``pip install
    segflake[mysql]``; aiomysql speaks PyMySQL's protocol code, which the synchronous store
    uses): the same statements and the same ``url``
    (``mysql://USER:PASSWORD@HOST:PORT/DATABASE``, TLS by ``ssl-mode=REQUIRED|VERIFY_CA|
    VERIFY_IDENTITY`` and ``ssl-ca=PATH``; a connection that asked for TLS never falls back
    to plaintext), or aiomysql's connection arguments (``host``, ``port``, ``user``,
    ``password``, ``db``/``database``, ``ssl``...), or ``connect``: an ``async`` function
    returning a new aiomysql connection in autocommit mode.

    One connection, one call at a time, reopened after any failure. ``timeout`` (seconds,
    default 5) bounds each call as a whole, connecting included (also aiomysql's
    ``connect_timeout`` unless given): past it the call is cancelled, its connection
    dropped, and ``TimeoutError`` raised. ``await store.aclose()`` (or ``async with``)
    closes it. Several hosts in the URL (``mysql://U:P@H1:P1,H2:P2/DB``: the first writable
    one, :class:`segflake.stores.ReadOnlyServerError`): as :class:`segflake.stores.MySQLStore`.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        connect: Optional[Callable[[], Awaitable[Any]]] = None,
        table: str = "leaf_alloc",
        timeout: float = 5.0,
        use_row_step: bool = True,
        create_missing_tags: Optional[int] = None,
        **connect_kwargs: Any,
    ) -> None:
        if sum((url is not None, connect is not None, bool(connect_kwargs))) > 1:
            raise TypeError("AsyncMySQLStore takes one of url, connect or connection arguments")
        self._init_rows(use_row_step, create_missing_tags)
        aiomysql = import_client("aiomysql", "mysql")
        self.table = check_table(table)
        self.timeout = _check_timeout(timeout, "timeout")
        targets = [aiomysql_kwargs(k) for k in (mysql_targets(url) if url is not None else [connect_kwargs])]
        for kwargs in targets:
            kwargs.setdefault("connect_timeout", self.timeout)

        async def open_connection() -> Any:
            if connect is not None:
                return await connect()  # the caller's: used as it is
            return await aiomysql_connect_writable(targets, lambda k: aiomysql_connect(aiomysql, k))

        self._conns: AsyncConnections[Any] = AsyncConnections(
            open_connection,
            lambda c: c.close(),
            deadline_s=self.timeout,
            what="AsyncMySQLStore",
            translate=read_only_translator("mysql"),
        )
        (
            self._update_sql,
            self._select_sql,
            self._select_residue_sql,
            self._step_sql,
            self._residue_sql,
        ) = mysql_allocate_sql(self.table)
        self._rows_sql = row_statements("mysql", self.table)

    async def _ask_residue_columns(self, conn: Any) -> bool:
        async with conn.cursor() as cur:
            await cur.execute(self._residue_sql, (self.table,))
            row = await cur.fetchone()
        return row is not None and int(row[0]) == 2

    async def _allocate_row(self, tag: str, step: Optional[int]) -> Optional[Row]:
        async def op(conn: Any) -> Optional[Row]:
            residue = await self._has_residue_columns(conn)
            async with conn.cursor() as cur:
                used = step
                if used is None:
                    if await cur.execute(self._step_sql, (tag,)) == 0:
                        return None
                    used = int((await cur.fetchone())[0])
                if await cur.execute(self._update_sql, (used, tag)) == 0:
                    return None
                if residue:
                    await cur.execute(self._select_residue_sql, (tag,))
                    max_id, row_step, delta, remainder = await cur.fetchone()
                    return int(max_id), used, int(row_step), residue_of(delta, remainder)
                await cur.execute(self._select_sql, (tag,))
                max_id, row_step = await cur.fetchone()
                return int(max_id), used, int(row_step), None

        return await self._conns.run(op)

    async def _changed_rows(self, conn: Any, sql: str, params: Optional[Tuple[Any, ...]]) -> int:
        async with conn.cursor() as cur:
            return int(await cur.execute(sql, params))


def async_redis_client(
    what: str, url: Optional[str], client: Any, socket_timeout: float, ca_file: Optional[str] = None
) -> Any:
    """:func:`segflake.stores._redis_client.redis_client` for ``redis.asyncio``: ``client``,
    or a ``redis.asyncio`` client (``Redis``, Sentinel's ``master_for``, ``RedisCluster``)
    for ``url`` with the sync client's settings."""
    return redis_client(what, url, client, socket_timeout, ca_file, asyncio=True)


class AsyncRedisStore:
    """:class:`segflake.stores.RedisStore` for asyncio, on ``redis.asyncio`` (``pip install
    segflake[redis]``): the same script (``INCRBY`` after checking the key exists), keys,
    residue key (``segflake:leaf_alloc_residue``), URLs (``redis://``, ``redis+sentinel://``,
    ``redis+cluster://``, ``rediss…`` with ``ca_file`` or ``ca=PATH``) and replica wait
    (``replicas=N``), or ``client``, a ``redis.asyncio`` client. ``socket_timeout`` (seconds,
    default 5) bounds connecting and each command, and each call as a whole
    (``TimeoutError``). ``await store.aclose()`` (or ``async with``) closes the client.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        client: Any = None,
        prefix: str = "segflake:leaf_alloc:",
        socket_timeout: float = 5.0,
        create_missing_tags: bool = False,
        ca_file: Optional[str] = None,
    ) -> None:
        self.timeout = _check_timeout(socket_timeout, "socket_timeout")
        self.client = async_redis_client("AsyncRedisStore", url, client, self.timeout, ca_file)
        self._writes = AsyncReplicaWrites(self.client, url_replicas(url), self.timeout)
        self.prefix = prefix
        self.create_missing_tags = bool(create_missing_tags)
        self._script = self.client.register_script(_ALLOCATE)
        self._give_back_script: Any = None
        self._residue_known = False
        self._residue: Optional[Residue] = None

    def key(self, tag: str) -> str:
        """The Redis key holding ``tag``'s max_id."""
        return self.prefix + check_tag(tag)

    async def residue(self) -> Optional[Residue]:
        """The database's residue class, as :meth:`segflake.stores.RedisStore.residue`."""
        if not self._residue_known:
            value = await deadline(self.client.get(RESIDUE_KEY), self.timeout, "AsyncRedisStore")
            self._residue = _parse_residue(value)
            self._residue_known = True
        return self._residue

    async def allocate(self, tag: str, step: int) -> Optional[Union[Tuple[int, int], Dict[str, int]]]:
        """As :meth:`segflake.stores.RedisStore.allocate`."""
        key = self.key(tag)
        check_step(step)
        residue = await self.residue()
        for attempt in range(2):
            try:
                call = self._writes.run(
                    f"the allocation for tag {tag!r}", _ALLOCATE, [key], [step], lambda: self._script(keys=[key], args=[step])
                )
                max_id = int(await deadline(call, self.timeout, "AsyncRedisStore"))
            except Exception as exc:
                if "NOTAG" not in str(exc):
                    self._residue_known = False
                    raise
            else:
                if residue is None:
                    return max_id, step
                return {"max_id": max_id, "step": step, "delta": residue[0], "remainder": residue[1]}
            if not self.create_missing_tags or attempt:
                return None
            await self.ensure_tag(tag)
        return None

    async def give_back(self, tag: str, expected_max_id: int, max_id: int) -> bool:
        """As :meth:`segflake.stores.RedisStore.give_back`: the same script."""
        if not give_back_args(tag, expected_max_id, max_id):
            return False
        if self._give_back_script is None:
            self._give_back_script = self.client.register_script(give_back_script())
        script = self._give_back_script
        key = self.key(tag)
        keys, args = [key, give_back_marker(key)], [str(expected_max_id), str(max_id)]
        call = self._writes.run(
            f"the give back for tag {tag!r}", give_back_script(), keys, args, lambda: script(keys=keys, args=args)
        )
        return int(await deadline(call, self.timeout, "AsyncRedisStore")) == 1

    async def ensure_tag(self, tag: str, *, max_id: int = 1) -> bool:
        """Creates the tag's key with ``max_id`` unless it exists; returns whether it was created."""
        check_max_id(max_id)
        return bool(await deadline(self.client.set(self.key(tag), max_id, nx=True), self.timeout, "AsyncRedisStore"))

    async def aclose(self) -> None:
        """Closes the client's connections."""
        await self._writes.aclose()
        closer = getattr(self.client, "aclose", None) or self.client.close
        await closer()

    async def __aenter__(self) -> "AsyncRedisStore":
        return self

    async def __aexit__(self, *args: object) -> None:
        await self.aclose()


class AsyncHttpStore:
    """:class:`segflake.stores.HttpStore` for asyncio: the same requests, URLs (``https://``
    with ``ca_file``, and ``cert_file`` and ``key_file`` for mutual TLS, checked at
    construction as there) and ``token``, performed by the standard library's
    ``http.client`` on a worker thread (no async HTTP client is needed), so the loop never
    waits on the network. ``timeout`` (seconds, default 10) bounds each call: past it the
    call fails with ``TimeoutError`` and the thread's late answer is discarded."""

    def __init__(
        self,
        base_url: str,
        *,
        token: Optional[str] = None,
        timeout: float = 10.0,
        ca_file: Optional[str] = None,
        cert_file: Optional[str] = None,
        key_file: Optional[str] = None,
    ) -> None:
        self._store = HttpStore(
            base_url, token=token, timeout=timeout, ca_file=ca_file, cert_file=cert_file, key_file=key_file
        )
        self.base_url = self._store.base_url
        self.timeout = float(timeout)

    async def allocate(self, tag: str, step: int) -> Optional[Answer]:
        """As :meth:`segflake.stores.HttpStore.allocate`."""
        loop = asyncio.get_running_loop()
        call = loop.run_in_executor(None, self._store.allocate, tag, step)
        return await deadline(call, self.timeout, f"AsyncHttpStore {self.base_url}")

    async def give_back(self, tag: str, expected_max_id: int, max_id: int) -> bool:
        """As :meth:`segflake.stores.HttpStore.give_back`."""
        loop = asyncio.get_running_loop()
        call = loop.run_in_executor(None, self._store.give_back, tag, expected_max_id, max_id)
        given: bool = await deadline(call, self.timeout, f"AsyncHttpStore {self.base_url}")
        return given

    async def aclose(self) -> None:
        """Closes the connection."""
        await asyncio.get_running_loop().run_in_executor(None, self._store.close)

    async def __aenter__(self) -> "AsyncHttpStore":
        return self

    async def __aexit__(self, *args: object) -> None:
        await self.aclose()
