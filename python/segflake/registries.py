"""Worker-ID registries for :meth:`segflake.Snowflake.from_registry` on the servers a fleet
already runs.

* :class:`RedisRegistry` - keys ``{segflake}:worker:<id>`` (``SET NX PX``), ``{segflake}:mark:<id>``
  and ``{segflake}:reports``, one Lua script per call (redis-py; ``pip install segflake[redis]``);
* :class:`PostgresRegistry` - the ``segflake_worker_lease`` table, expiry on the database's clock,
  uid-generator's ``worker_node`` rows as the audit trail (psycopg 3; ``segflake[postgres]``);
* :class:`MySQLRegistry` - the same on MySQL or MariaDB (PyMySQL; ``segflake[mysql]``);
* :class:`ZooKeeperRegistry` - Leaf's ``/snowflake/{leaf.name}/forever`` nodes (worker ID per node
  identity, Leaf's reported timestamps as marks) and ephemeral nodes (kazoo; ``segflake[zookeeper]``);
* :class:`EtcdRegistry` - keys on an etcd lease, ``txn`` compare-and-set (etcd3gw; ``segflake[etcd]``).

Every language sends the same scripts and statements (they come from the core), so
Python, Node, C and CLI processes can share one registry. Any object with the four methods
below is a registry too (nacos, Consul...); ``docs/leases.md`` in the source tree has
the contract and a worked example:

``claim(worker_id, owner, ttl_ms)``
    the ID's mark (0 if never used or forgotten) when it is now leased to ``owner``;
    ``None`` when another owner holds it. A registry that assigns worker IDs itself
    answers ``{"worker_id": ..., "mark_ms": ...}``, and may add its record's
    ``identity``, ``version`` and ``age_ms`` (all three or none; see
    :class:`ZooKeeperRegistry`). ``owner`` is a token (``label#nonce``) unique to one
    generator.
``renew(worker_id, owner, ttl_ms, mark_ms, reported_ms)``
    if ``owner`` holds the ID: extend the lease, raise the mark to at least ``mark_ms``,
    record the report, return the stored mark; ``None`` when another owner holds it (or
    this owner's lease expired); ``False`` or a negative number (the scripts answer -1)
    when nobody holds it: the registry has no record of the lease (it lost data), so IDs
    stop at once with :class:`segflake.RegistryLostDataError` and a new claim starts above
    anything an unseen holder could have issued.
``release(worker_id, owner, mark_ms)``
    if ``owner`` holds the ID: set the mark to ``mark_ms``, end the lease, return ``True``.
``peers()``
    ``[(worker_id, reported_ms, age_ms), ...]`` of the live holders.

Marks must be durable: Redis with ``appendonly yes``, PostgreSQL with
``synchronous_commit = on``, InnoDB with ``innodb_flush_log_at_trx_commit = 1``.

TLS: every adapter made from a URL or endpoint connects over TLS when asked to, and a
URL that asks for TLS never falls back to plaintext (the connection fails instead):
``rediss://`` (Redis), ``sslmode``/``sslrootcert`` (PostgreSQL, libpq's own),
``ssl-mode``/``ssl-ca`` (MySQL, the names of its own clients), ``https://`` endpoints
(etcd) and ``tls`` (ZooKeeper, through kazoo). The certificate authorities are a PEM
file: ``ca_file`` (an argument, or ``ca=PATH`` in ``rediss://``, ``zk+tls://`` and
``etcd+tls://`` URLs), ``sslrootcert`` or ``ssl-ca``; without one, the system's.

Every adapter here bounds each call on the wire (default 3 s, the lease's
``registry_timeout_ms``): a dead or silent connection fails the call, and the generator
retries on a new one, instead of blocking its lease thread until the kernel gives up.
Pass a matching timeout when you set ``registry_timeout_ms`` yourself.
"""

from __future__ import annotations

import base64
import importlib
import inspect
import json
import logging
import os
import socket
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Protocol, Tuple, Type

from ._native import _RegistryProtocol, _redis_durability_settings, _redis_durability_warning, _tables
from .stores._common import (
    CA_FILE_PARAM,
    Connections,
    check_ca_file,
    check_mysql_tls,
    import_client,
    mysql_connect_writable,
    mysql_targets,
    mysql_writable,
    parse_flag,
    pg_connect_writable,
    pg_conninfo,
    read_only_translator,
    shutdown_socket,
    take_params,
)
from .stores._redis_client import is_cluster, node_client, redis_client, refresh_slots, url_replicas

__all__ = [
    "EtcdRegistry",
    "LEAF_REPORT_MS",
    "MySQLRegistry",
    "PostgresRegistry",
    "RedisRegistry",
    "Registry",
    "ZooKeeperRegistry",
    "from_url",
    "statements",
]


class Registry(Protocol):
    """A worker-ID registry: any object with these four methods (coroutine functions too,
    through :func:`segflake.from_registry_async`). Answers as in the module docs."""

    def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Any: ...

    def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Any: ...

    def release(self, worker_id: int, owner: str, mark_ms: int) -> Any: ...

    def peers(self) -> Any: ...

_STATEMENTS: Optional[Dict[str, Dict[str, str]]] = None


def statements(registry: str) -> Dict[str, str]:
    """The core's scripts or statements for ``registry`` (``redis``, ``postgres``, ``mysql``),
    by call name; SQL uses ``?`` placeholders."""
    global _STATEMENTS
    if _STATEMENTS is None:
        _STATEMENTS = json.loads(_tables())["registries"]
    return dict(_STATEMENTS[registry])


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _placeholders(sql: str) -> str:
    """``?`` placeholders as DB-API ``%s`` (no statement has ``%`` or ``?`` elsewhere)."""
    return sql.replace("?", "%s")


def _host_name() -> str:
    return socket.gethostname()[:64] or "unknown"


Peers = List[Tuple[int, int, int]]


def _peers(answer: Any) -> Peers:
    return [(int(w), int(r), int(a)) for w, r, a in answer]


def _describe(e: BaseException) -> str:
    """A client's exception as text (etcd3gw's keep theirs in ``detail_text``)."""
    return str(e) or str(getattr(e, "detail_text", None) or "") or type(e).__name__


def _failure(error: str, cause: Optional[BaseException]) -> BaseException:
    """The exception of a registry call the core failed with ``error``: the client's own when
    the request that failed raised it and ``error`` is its text; else one of its type (or
    ``RuntimeError``) with the core's message, chained to it."""
    if cause is None:
        return RuntimeError(error)
    if str(cause) == error:
        return cause
    try:
        e: BaseException = type(cause)(error)
    except Exception:
        e = RuntimeError(error)
    if str(e) != error:
        e = RuntimeError(error)
    e.__cause__ = cause
    return e


def _exchange(
    protocol: _RegistryProtocol, perform: Callable[[Dict[str, Any]], Any], name: str, args: Tuple[Any, ...]
) -> Tuple[Dict[str, Any], Optional[BaseException]]:
    """Registry call ``name`` as a conversation: ``perform`` carries out each request of the
    core's (an exception it raises is the request's failed reply). Answers the final step
    and the exception of the last request if it failed. Callers hold the adapter's lock: one
    conversation at a time."""
    step = protocol.start(name, list(args))
    cause: Optional[BaseException] = None
    while "op" in step:
        try:
            reply, cause = perform(step), None
        except Exception as e:
            reply, cause = {"error": _describe(e)}, e
        step = protocol.resume(reply)
    return step, cause


def _outcome(step: Dict[str, Any], cause: Optional[BaseException]) -> Any:
    """The answer of a conversation's final step, or its failure raised."""
    if "error" in step:
        raise _failure(step["error"], cause)
    return step["answer"]


def _converse(
    protocol: _RegistryProtocol, perform: Callable[[Dict[str, Any]], Any], name: str, args: Tuple[Any, ...]
) -> Any:
    return _outcome(*_exchange(protocol, perform, name, args))


def _plain(value: Any) -> Any:
    """A client's reply value as the protocol reads it: text for bytes, lists for tuples."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _column(value: Any) -> Any:
    """A SQL column as the protocol reads it: an int (``Decimal`` and the like too), text or
    ``None``."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    try:
        whole = int(value)
        if whole == value:
            return whole
    except (TypeError, ValueError, OverflowError):
        pass
    return str(value)


class RedisRegistry:
    """Worker-ID leases in Redis: ``url`` (``redis://HOST[:PORT][/DB]``,
    ``redis+sentinel://H:P[,H:P…]/SERVICE[/DB]``, ``redis+cluster://H:P[,H:P…]``, or
    ``rediss…`` for TLS: the server's certificate must chain to ``ca_file``, or the URL's
    ``ca=PATH``, else to the system's certificate authorities, and name the host) or
    ``client`` (a ``redis.Redis``, Sentinel or Cluster client); ``prefix`` names the keys
    (wrapped in braces: one cluster slot, whose primary runs every call).
    redis-py's client is thread-safe and reconnects by itself. ``socket_timeout``
    (seconds, default 3: the lease's ``registry_timeout_ms``) bounds connecting and each
    command of a client made from ``url``, which retries a command only after a
    connection error, never after a timeout; a ``client`` you pass keeps its own
    settings. ``renew`` answers -1 when the worker's key is gone (the server lost it). On a
    server with replicas (``ROLE``), a renewal counts only once every connected replica
    acknowledged it (``WAIT`` on the renewal's connection, half the socket timeout), so a
    failover never loses a mark the holder issued under; the URL's ``replicas=N`` waits
    for exactly N instead (0: no wait).

    At start-up it reads the server's ``appendonly`` and ``maxmemory-policy`` (``CONFIG
    GET``; a server that refuses it, as managed services may, is not checked) and logs one
    warning on the ``segflake`` logger when a restart or eviction would lose marks
    (``check_durability=False`` skips this). Lost marks cause no duplicate IDs, but holders
    stop with ``RegistryLostDataError`` and claims without a mark wait.

    The protocol (which script each call runs, with which keys and arguments, when to wait
    for the replicas, and what the replies mean) is the core's, shared with the other
    languages; this class runs its commands with redis-py, one call at a time. A failed
    call raises redis-py's error (with the core's message) when a command failed, else
    ``RuntimeError`` (a renewal that too few replicas acknowledged, say)."""

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        client: Any = None,
        prefix: str = "segflake",
        socket_timeout: float = 3.0,
        check_durability: bool = True,
        ca_file: Optional[str] = None,
    ) -> None:
        self.client = redis_client("RedisRegistry", url, client, socket_timeout, ca_file)
        self.prefix = "{" + prefix + "}"
        self._protocol = _RegistryProtocol("redis", redis_protocol_config(prefix, socket_timeout, url))
        self._lock = threading.Lock()
        #: The start-up check's warning (``None``: the marks are kept, or not checked).
        self.durability_warning: Optional[str] = self._check_durability() if check_durability else None
        scripts = statements("redis")
        self._scripts = {
            name: self.client.register_script(scripts[name]) for name in ("claim", "renew", "release", "peers")
        }

    def _check_durability(self) -> Optional[str]:
        settings: List[Tuple[str, str]] = []
        try:
            for name in _redis_durability_settings():
                got = self.client.config_get(name)
                if inspect.isawaitable(got):  # an asyncio client: not checked here
                    getattr(got, "close", lambda: None)()
                    return None
                for key, value in dict(got).items():
                    settings.append((_text(key), _text(value)))
        except Exception:
            return None  # CONFIG refused (a managed service) or the server is not up yet
        warning = _redis_durability_warning(settings)
        if warning is not None:
            logging.getLogger("segflake").warning("RedisRegistry: %s", warning)
        return warning

    def _node(self) -> Any:
        """The client of the server holding the registry's keys: on a Cluster, the primary
        of their slot (ROLE and WAIT must reach that server, not any node)."""
        return node_client(self.client, self.prefix) if is_cluster(self.client) else self.client

    def _perform(self, op: Dict[str, Any]) -> Any:
        """One request of the protocol, as redis-py answered it (an error reply raises)."""
        if op["op"] == "role":
            role = self._node().execute_command("ROLE")
            # A primary lists its connected replicas third; a replica has none.
            return {"replicas": len(role[2]) if len(role) > 2 and isinstance(role[2], list) else 0}
        if op["op"] != "eval":
            return {"error": f"the Redis adapter has no request {op['op']!r}"}
        script, keys, args, wait = self._scripts[op["script"]], op["keys"], op["args"], op.get("wait")
        if wait is None:
            return {"value": _plain(script(keys=keys, args=args))}
        # The script and WAIT on one connection: WAIT counts the replicas that have it.
        try:
            pipe = self._node().pipeline(transaction=False)
        except Exception:
            refresh_slots(self.client)
            raise
        script(keys=keys, args=args, client=pipe)
        pipe.execute_command("WAIT", wait["replicas"], wait["timeout_ms"])
        try:
            value, acked = pipe.execute()
        except Exception:
            refresh_slots(self.client)
            raise
        return {"value": _plain(value), "acked": int(acked)}

    def _call(self, name: str, *args: Any) -> Any:
        with self._lock:
            return _converse(self._protocol, self._perform, name, args)

    def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[int]:
        return self._call("claim", worker_id, owner, ttl_ms)  # type: ignore[no-any-return]

    def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Optional[int]:
        return self._call("renew", worker_id, owner, ttl_ms, mark_ms, reported_ms)  # type: ignore[no-any-return]

    def release(self, worker_id: int, owner: str, mark_ms: int) -> bool:
        return bool(self._call("release", worker_id, owner, mark_ms))

    def peers(self) -> Peers:
        return _peers(self._call("peers"))

    def close(self) -> None:
        self.client.close()


#: The Redis URL schemes (the core's ``segflake::redis``).
REDIS_SCHEMES = ("redis", "rediss", "redis+sentinel", "rediss+sentinel", "redis+cluster", "rediss+cluster")


def redis_protocol_config(prefix: str, socket_timeout: float, url: Optional[str]) -> Dict[str, Any]:
    """The core's Redis protocol settings: the key prefix, ``WAIT``'s timeout (half the
    socket timeout) and the URL's ``replicas=N`` when it gives one."""
    config: Dict[str, Any] = {"prefix": prefix, "wait_ms": max(1, int(socket_timeout * 500))}
    replicas = url_replicas(url)
    if replicas is not None:
        config["replicas"] = replicas
    return config


class _Sql:
    """One connection, opened on first use and reopened after a failure (a call that raised
    drops it); the core's schema is run on it unless ``create_schema=False``. Each call runs
    the core's statements on it, in autocommit mode, under the connection's lock.

    A failed call raises the driver's error when a statement failed (as the driver raised
    it), ``TimeoutError`` when the statement was not answered in time and its connection was
    shut down, else ``RuntimeError`` with the core's message."""

    dialect = ""

    def __init__(
        self,
        open_connection: Callable[[], Any],
        create_schema: bool,
        *,
        abort: Optional[Callable[[Any], None]] = None,
        deadline_s: Optional[float] = None,
    ) -> None:
        self._protocol = _RegistryProtocol(self.dialect, {"host_name": _host_name()})
        schema: str = self._protocol.describe()["schema"]

        def connect() -> Any:
            conn = open_connection()
            if create_schema:
                self._create_schema(conn, schema)
            return conn

        self._conns: Connections[Any] = Connections(
            connect,
            lambda c: c.close(),
            abort=abort,
            deadline_s=deadline_s,
            translate=read_only_translator(self.dialect),
        )

    def _create_schema(self, conn: Any, schema: str) -> None:
        raise NotImplementedError

    def _execute(self, conn: Any, statement: str, params: List[Any]) -> Any:
        """Runs one statement (``%s`` placeholders); the cursor that ran it."""
        raise NotImplementedError

    def _call(self, name: str, *args: Any) -> Any:
        def perform(conn: Any, op: Dict[str, Any]) -> Dict[str, Any]:
            if op["op"] != "query":
                return {"error": f"the SQL adapter has no request {op['op']!r}"}
            cur = self._execute(conn, _placeholders(op["statement"]), op["params"])
            try:
                rows = cur.fetchall() if cur.description is not None else []
                return {"rows": [[_column(c) for c in row] for row in rows], "affected": max(0, cur.rowcount)}
            finally:
                cur.close()

        def converse(conn: Any) -> Tuple[Dict[str, Any], Optional[BaseException]]:
            step, cause = _exchange(self._protocol, lambda op: perform(conn, op), name, args)
            if "error" in step and cause is not None:
                raise _failure(step["error"], cause)  # a statement failed: the connection goes
            return step, cause

        return _outcome(*self._conns.run(converse))

    def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[int]:
        return self._call("claim", worker_id, owner, ttl_ms)  # type: ignore[no-any-return]

    def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Optional[int]:
        return self._call("renew", worker_id, owner, ttl_ms, mark_ms, reported_ms)  # type: ignore[no-any-return]

    def release(self, worker_id: int, owner: str, mark_ms: int) -> bool:
        return bool(self._call("release", worker_id, owner, mark_ms))

    def peers(self) -> Peers:
        return _peers(self._call("peers"))

    def close(self) -> None:
        self._conns.close()


class PostgresRegistry(_Sql):
    """Worker-ID leases in PostgreSQL (psycopg 3): ``conninfo`` (a libpq string or URL) or
    ``connect`` (a function returning a new connection; it is switched to autocommit).
    TLS is libpq's own: ``sslmode=require`` (encrypted; the certificate is checked only
    when ``sslrootcert`` is given), ``verify-ca`` (it must chain to ``sslrootcert``),
    ``verify-full`` (that, and it must name the host), ``sslrootcert=PATH``; ``allow`` and
    ``prefer`` (which fall back to plaintext) are refused.

    Transport deadlines: ``connect_timeout`` (seconds), and ``timeout`` (seconds, default
    3: the lease's ``registry_timeout_ms``) for one statement: libpq's TCP keepalives and
    ``tcp_user_timeout`` and the server's ``statement_timeout`` (each unless
    ``conninfo`` sets it), and a watchdog that shuts the connection's socket down when a
    statement is not answered in time (a silent connection, a proxy that stopped
    forwarding); the next call opens a new connection. Several servers in ``conninfo``
    (``postgresql://u@h1,h2/app``): the first that takes writes, as in
    :class:`segflake.stores.PostgresStore`; a read-only server's refusal is
    :class:`segflake.stores.ReadOnlyServerError`."""

    dialect = "postgres"

    def __init__(
        self,
        conninfo: Optional[str] = None,
        *,
        connect: Optional[Callable[[], Any]] = None,
        connect_timeout: int = 3,
        timeout: float = 3.0,
        create_schema: bool = True,
    ) -> None:
        if (conninfo is None) == (connect is None):
            raise TypeError("PostgresRegistry needs exactly one of conninfo or connect")
        psycopg = import_client("psycopg", "postgres")
        params = "" if conninfo is None else pg_conninfo(psycopg, conninfo, connect_timeout, timeout)

        def open_connection() -> Any:
            if connect is not None:
                conn = connect()
                conn.autocommit = True
                return conn  # the caller's: used as it is
            return pg_connect_writable(lambda: psycopg.connect(params, autocommit=True))

        super().__init__(open_connection, create_schema, abort=lambda c: shutdown_socket(c.fileno()), deadline_s=timeout)

    def _create_schema(self, conn: Any, schema: str) -> None:
        conn.execute(schema)

    def _execute(self, conn: Any, statement: str, params: List[Any]) -> Any:
        return conn.execute(statement, params or None)


class MySQLRegistry(_Sql):
    """Worker-ID leases in MySQL or MariaDB (PyMySQL): ``url``
    (``mysql://USER:PASSWORD@HOST:PORT/DATABASE``, TLS by ``?ssl-mode=REQUIRED``,
    ``VERIFY_CA`` or ``VERIFY_IDENTITY`` and ``ssl-ca=PATH`` as in MySQL's own clients:
    see :class:`segflake.stores.MySQLStore`), connection arguments (``host``,
    ``port``, ``user``, ``password``, ``database``, ``ssl``...) or ``connect`` (a function returning
    a new connection opened with ``client_flag=pymysql.constants.CLIENT.FOUND_ROWS``).
    Transport deadlines, unless given: ``connect_timeout``, ``read_timeout`` and
    ``write_timeout`` of 3 s (the lease's ``registry_timeout_ms``), so a silent
    connection fails the call; a ``connect`` function sets its own. Several servers in the
    URL (``mysql://U:P@H1:P1,H2:P2/DB``): the first whose ``@@global.read_only`` is off, as
    in :class:`segflake.stores.MySQLStore`; a read-only server's refusal is
    :class:`segflake.stores.ReadOnlyServerError`."""

    dialect = "mysql"

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        connect: Optional[Callable[[], Any]] = None,
        create_schema: bool = True,
        **connect_kwargs: Any,
    ) -> None:
        if sum((url is not None, connect is not None, bool(connect_kwargs))) > 1:
            raise TypeError("MySQLRegistry takes one of url, connect or connection arguments")
        pymysql = import_client("pymysql", "mysql")
        targets = mysql_targets(url) if url is not None else [connect_kwargs]
        for kwargs in targets:
            for deadline in ("connect_timeout", "read_timeout", "write_timeout"):
                kwargs.setdefault(deadline, 3)
            # An UPDATE's row count is the rows it matched (the statements' contract).
            kwargs["client_flag"] = kwargs.get("client_flag", 0) | pymysql.constants.CLIENT.FOUND_ROWS

        def connect_one(kwargs: Dict[str, Any]) -> Any:
            return check_mysql_tls(pymysql.connect(autocommit=True, **kwargs), kwargs)

        def open_connection() -> Any:
            if connect is not None:
                conn = connect()
                conn.autocommit(True)
                return conn  # the caller's: used as it is
            return mysql_connect_writable(targets, connect_one, mysql_writable)

        super().__init__(open_connection, create_schema)

    def _create_schema(self, conn: Any, schema: str) -> None:
        with conn.cursor() as cur:
            for statement in schema.split(";"):
                body = "\n".join(l for l in statement.splitlines() if not l.strip().startswith("--"))
                if body.strip():
                    cur.execute(body)

    def _execute(self, conn: Any, statement: str, params: List[Any]) -> Any:
        cur = conn.cursor()
        try:
            cur.execute(statement, params or None)
        except BaseException:
            cur.close()
            raise
        return cur


#: A Leaf node reports its clock every 3 s, so it may have issued IDs up to its reported
#: ``timestamp`` plus this; a forever node's mark is ``timestamp + LEAF_REPORT_MS``.
LEAF_REPORT_MS = 3000


def _default_ip() -> str:
    """This host's outbound IPv4 address (no packet is sent), else 127.0.0.1."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"


class _ConnectionLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """kazoo's logger, remembering the last connection failure it logged."""

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__(logger, {})
        self.last: Optional[str] = None

    def log(self, level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
        if level >= logging.WARNING and str(msg).startswith("Connection dropped"):
            try:
                self.last = str(msg) % args
            except (TypeError, ValueError):
                self.last = str(msg)
        super().log(level, msg, *args, **kwargs)


def _stat(stat: Any) -> Optional[Dict[str, int]]:
    """A kazoo ``ZnodeStat`` as the protocol's stat."""
    if stat is None:
        return None
    return {
        "version": int(stat.version),
        "ctime": int(stat.ctime),
        "mtime": int(stat.mtime),
        "ephemeral_owner": int(stat.ephemeralOwner),
    }


class ZooKeeperRegistry:
    """Worker-ID leases in ZooKeeper, in Leaf's layout (kazoo; ``pip install segflake[zookeeper]``).

    ``hosts`` (``HOST:PORT[,HOST:PORT]``) or ``client`` (a started ``kazoo.client.KazooClient``);
    ``root`` is Leaf's ``/snowflake/{leaf.name}``; ``identity`` is Leaf's node address
    ``IP:PORT`` (default: this host's address and port 0). The identity's persistent
    sequential node ``{root}/forever/{identity}-{seq}`` gives the worker ID (``seq``) and,
    through its Leaf ``timestamp``, the mark; an ephemeral ``{root}/leaf_temporary/{id}``
    holds the lease. A Leaf node is taken over by a process with its identity, starting
    above everything it could have issued. Keep ``session_timeout_ms`` at or below the
    lease's ``lease_ttl_ms``. ``docs/leases.md`` in the source tree has the layout.

    A claim answers ``{worker_id, mark_ms, identity, version, age_ms}``: the forever
    node's version and how long ago it was last written, by ZooKeeper's clock (the
    ephemeral node's write time minus the forever node's). A forever node written within
    one Leaf report period may belong to a Leaf node that still runs: the generator
    claims again one period later and refuses to start (``LeafNodeAliveError``) if the
    version moved meanwhile. A claim never writes the forever node. Only the claim that
    created the identity's forever node answers mark 0 (and no record). ``renew`` answers
    -1 when this session's ephemeral node or the forever node is gone (ZooKeeper lost
    them, or the session expired): IDs stop at once and the generator claims again.

    The protocol (which nodes to read and write, with which data and versions, and what
    the answers mean) is the core's, shared with the other languages; this class performs
    its requests with kazoo. A failed call raises the ZooKeeper client's connection or
    timeout error when a request could not reach ZooKeeper, else ``RuntimeError``.

    ``request_timeout`` (seconds, default 3: the lease's ``registry_timeout_ms``) bounds
    every ZooKeeper request; ``connect_timeout`` bounds the first connection of a client
    made from ``hosts``, and ``session_timeout_ms`` its session.

    ``tls`` (a client made from ``hosts``): kazoo connects over TLS (ZooKeeper's
    ``secureClientPort``); the server's certificate must chain to ``ca_file`` (else the
    system's certificate authorities) and name the host connected to. ``ca_file`` alone
    is refused (it is for TLS). In a URL: ``zk+tls://`` (or ``?tls=true``) and
    ``ca=PATH``. (Node's node-zookeeper-client has no TLS: there the same URL is refused.)

    ``cache_file`` (opt-in; off by default) is Leaf's ``workerID.properties`` fallback:
    every accepted claim, renewal and release records ``workerID=N`` and ``markMs=M`` there,
    and while ZooKeeper cannot be reached a claim takes the recorded worker ID and
    renewals raise the recorded mark (written and synced before it is accepted), so the
    process starts and keeps issuing through a ZooKeeper outage. **The risk:** nothing then
    keeps another process from holding the same worker ID (one started with this identity
    elsewhere, or the forever node deleted and its number reused), and two holders of one
    worker ID can issue the same IDs. Use it only where the identity is certainly unique
    (one process per ``ip:port``) and the forever nodes are never deleted. Without it, a
    start-up that cannot reach ZooKeeper fails with ``RegistryError``."""

    def __init__(
        self,
        hosts: Optional[str] = None,
        *,
        client: Any = None,
        root: str = "/snowflake/segflake",
        identity: Optional[str] = None,
        session_timeout_ms: int = 10_000,
        connect_timeout: float = 3.0,
        request_timeout: float = 3.0,
        cache_file: Optional[str] = None,
        tls: bool = False,
        ca_file: Optional[str] = None,
    ) -> None:
        if (hosts is None) == (client is None):
            raise TypeError("ZooKeeperRegistry needs exactly one of hosts or client")
        if client is not None and (tls or ca_file is not None):
            raise TypeError("ZooKeeperRegistry: tls and ca_file are for a client made from hosts")
        if ca_file is not None and not tls:
            raise ValueError("ZooKeeperRegistry: ca_file is for TLS, but tls is off")
        config = {"root": root, "identity": f"{_default_ip()}:0" if identity is None else identity}
        self._protocol = _RegistryProtocol("zookeeper", config)
        self.identity: str = self._protocol.describe()["identity"]
        self._kazoo = import_client("kazoo.client", "zookeeper")
        self._errors = import_client("kazoo.exceptions", "zookeeper")
        self._own_client = client is None
        if client is None:
            # Reconnect at least once a second (kazoo's default backs off to a minute): a
            # holder whose lease lapsed during an outage claims again soon after it ends.
            retry = {"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0}
            ssl_args: Dict[str, Any] = {}
            if tls:
                ssl_args = {"use_ssl": True, "verify_certs": True, "check_hostname": True}
                if ca_file is not None:
                    ssl_args["ca"] = check_ca_file(ca_file, "ZooKeeper TLS")
            log = _ConnectionLog(logging.getLogger("kazoo.client"))
            client = self._kazoo.KazooClient(
                hosts=hosts, timeout=session_timeout_ms / 1000, connection_retry=retry, logger=log, **ssl_args
            )
            if cache_file is None:
                try:
                    client.start(timeout=connect_timeout)
                except Exception as e:
                    # kazoo retries until the timeout and only logs why it could not connect
                    # (a certificate the CA file does not vouch for, say): the error says it.
                    if log.last is None:
                        raise
                    raise _failure(f"{_describe(e)}; the last connection attempt: {log.last}", e) from e
            else:
                # ZooKeeper may be down: the cache file can serve the claim meanwhile.
                client.start_async().wait(connect_timeout)
        self.client = client
        self.request_timeout = request_timeout
        self.cache_file = cache_file
        self._offline = False
        self.root = root
        self._lock = threading.Lock()

    def _call(self, pending: Any) -> Any:
        """A kazoo ``*_async`` request's result, waited for at most ``request_timeout``."""
        try:
            return pending.get(timeout=self.request_timeout)
        except self.client.handler.timeout_exception as e:
            raise TimeoutError(f"ZooKeeper did not answer within {self.request_timeout:g} s") from e

    def _converse(self, name: str, *args: Any) -> Any:
        """The answer to registry call ``name``: the core's, after kazoo performed each of
        its requests. Callers hold the lock (one conversation at a time)."""
        cid = self.client.client_id
        session = 0 if cid is None else int(cid[0])
        step = self._protocol.start(name, list(args), {"session": session, "now_ms": int(time.time() * 1000)})
        cause: Optional[BaseException] = None
        while "op" in step:
            try:
                reply, cause = self._perform(step), None
            except (self._errors.KazooException, TimeoutError) as e:
                reply, cause = {"error": self._error(e)}, e
            step = self._protocol.resume(reply)
        if "error" not in step:
            return step["answer"]
        if isinstance(cause, self._unreachable()):
            raise type(cause)(step["error"]) from cause
        raise RuntimeError(step["error"]) from cause

    def _perform(self, op: Dict[str, Any]) -> Any:
        """One request of the protocol, as kazoo answered it (a failure raises)."""
        c, kind, path = self.client, op["op"], op.get("path", "")
        if kind == "mkdir":
            self._call(c.ensure_path_async(path))
            return None
        if kind == "create":
            mode, data = op["mode"], op["data"].encode()
            sequence, ephemeral = mode == "persistent_sequential", mode == "ephemeral"
            return {"created": self._call(c.create_async(path, data, ephemeral=ephemeral, sequence=sequence))}
        if kind == "exists":
            return {"stat": _stat(self._call(c.exists_async(path)))}
        if kind == "get":
            raw, stat = self._call(c.get_async(path))
            return {"data": (raw or b"").decode("utf-8", errors="replace"), "stat": _stat(stat)}
        if kind == "children":
            return {"children": list(self._call(c.get_children_async(path)))}
        if kind == "set":
            return {"stat": _stat(self._call(c.set_async(path, op["data"].encode(), op["version"])))}
        if kind == "delete":
            self._call(c.delete_async(path, op["version"]))
            return None
        if kind != "multi":
            return {"error": f"the ZooKeeper adapter has no request {kind!r}"}
        t = c.transaction()
        for o in op["ops"]:
            if o["op"] == "set":
                t.set_data(o["path"], o["data"].encode(), o["version"])
            else:
                t.delete(o["path"], o["version"])
        for i, result in enumerate(self._call(t.commit_async())):
            if isinstance(result, Exception) and not isinstance(result, self._errors.RolledBackError):
                return {"error": self._error(result), "index": i}
        return None

    def _error(self, e: BaseException) -> str:
        """A kazoo error as the protocol names it."""
        errors = self._errors
        for kind, name in ((errors.NoNodeError, "no_node"), (errors.NodeExistsError, "node_exists"),
                           (errors.BadVersionError, "bad_version")):
            if isinstance(e, kind):
                return name
        return str(e) or type(e).__name__

    def _read_cache(self) -> Optional[Tuple[int, int]]:
        """The recorded ``(worker ID, mark)``, if a cache file is configured and readable."""
        if self.cache_file is None:
            return None
        try:
            fields = dict(
                line.split("=", 1) for line in open(self.cache_file).read().splitlines() if "=" in line
            )
            return int(fields["workerID"]), int(fields.get("markMs", 0))
        except (OSError, ValueError, KeyError):
            return None

    def _write_cache(self, worker_id: int, mark_ms: int) -> None:
        if self.cache_file is None:
            return
        tmp = f"{self.cache_file}.tmp"
        os.makedirs(os.path.dirname(os.path.abspath(self.cache_file)), exist_ok=True)
        with open(tmp, "w") as f:
            f.write(f"workerID={worker_id}\nmarkMs={mark_ms}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.cache_file)

    def _unreachable(self) -> Tuple[Type[BaseException], ...]:
        e = self._errors
        return (e.ConnectionLoss, e.SessionExpiredError, e.ConnectionClosedError, TimeoutError)

    def _claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[Dict[str, Any]]:
        if not self.client.connected:
            raise self._errors.ConnectionLoss("not connected to ZooKeeper")
        answer: Optional[Dict[str, Any]] = self._converse("claim", worker_id, owner, ttl_ms)
        return answer

    def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[Dict[str, Any]]:
        with self._lock:
            try:
                answer = self._claim(worker_id, owner, ttl_ms)
            except self._unreachable():
                cached = self._read_cache()
                known = self._protocol.describe()["worker_id"]
                if cached is None or (known is not None and known != cached[0]):
                    raise
                self._offline = True
                return {"worker_id": cached[0], "mark_ms": cached[1]}
            self._offline = False
            if answer is not None:
                self._write_cache(answer["worker_id"], answer["mark_ms"])
            return answer

    def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Optional[int]:
        with self._lock:
            if self._offline:
                cached = self._read_cache()
                if cached is None or cached[0] != worker_id:
                    return None
                if self.client.connected:
                    # Back online: hold the worker ID in ZooKeeper again, or give it up.
                    self._offline = False
                    try:
                        answer = self._claim(worker_id, owner, ttl_ms)
                    except self._unreachable():
                        self._offline = True
                    else:
                        if answer is None:
                            return None
                        if answer["worker_id"] != worker_id:
                            # ZooKeeper gives this identity another worker ID: not held.
                            self._converse("release", answer["worker_id"], owner, 0)
                            return None
                if self._offline:
                    offline_mark = max(cached[1], mark_ms)
                    self._write_cache(worker_id, offline_mark)
                    return offline_mark
            if not self.client.connected or self.client.client_id is None:
                # Reconnecting: the session (and the lease) may well live; a failed call, not
                # "another owner".
                raise self._errors.ConnectionLoss("not connected to ZooKeeper (reconnecting)")
            mark: Optional[int] = self._converse("renew", worker_id, owner, ttl_ms, mark_ms, reported_ms)
            if mark is not None and mark >= 0:
                self._write_cache(worker_id, mark)
            return mark

    def release(self, worker_id: int, owner: str, mark_ms: int) -> bool:
        with self._lock:
            if self._offline:
                self._offline = False
                self._write_cache(worker_id, mark_ms)
                return True
            released = bool(self._converse("release", worker_id, owner, mark_ms))
            if released:
                self._write_cache(worker_id, mark_ms)
            return released

    def peers(self) -> Peers:
        with self._lock:
            return [(int(w), int(r), int(a)) for w, r, a in self._converse("peers")]

    def close(self) -> None:
        if self._own_client:
            self.client.stop()
            self.client.close()


class EtcdRegistry:
    """Worker-ID leases in etcd v3 (etcd3gw, over etcd's JSON gateway; ``pip install
    segflake[etcd]``): ``endpoint`` (``HOST:PORT``, or several separated by commas: a
    request that cannot reach one member fails, and the next request goes to the next
    member) or ``client`` (an ``etcd3gw.Etcd3Client``). ``https://HOST:PORT`` endpoints
    (all of them) connect over TLS: the members' certificates must chain to ``ca_file``
    (else the system's certificate authorities) and name the host connected to; ``ca_file``
    with plaintext endpoints is refused. In a URL: ``etcd+tls://`` (or ``?tls=true``) and
    ``ca=PATH``.
    Keys under ``prefix``: ``worker/<id>`` (the owner, on an etcd lease), ``mark/<id>``
    (zero-padded, so etcd's byte order is numeric) and ``report/<id>``; claims are a ``txn``
    on ``create_revision == 0``, renewals and releases compare the owner. ``timeout``
    (seconds, default 3: the lease's ``registry_timeout_ms``) bounds each HTTP request of
    a client made from ``endpoint``. ``renew`` answers -1 when the worker key or its mark
    is gone while the etcd lease lives (etcd lost them).

    The protocol (which requests each call sends, and what the replies mean) is the
    core's, shared with the other languages; this class performs its requests with
    etcd3gw, one call at a time. A failed call raises ``RuntimeError`` with the core's
    message, chained to etcd3gw's error. ``close()`` revokes the etcd leases held."""

    def __init__(
        self,
        endpoint: Optional[str] = None,
        *,
        client: Any = None,
        prefix: str = "/segflake",
        timeout: float = 3.0,
        ca_file: Optional[str] = None,
    ) -> None:
        if (endpoint is None) == (client is None):
            raise TypeError("EtcdRegistry needs exactly one of endpoint or client")
        if client is not None and ca_file is not None:
            raise TypeError("EtcdRegistry: ca_file is for a client made from endpoint")
        etcd3gw = import_client("etcd3gw", "etcd")
        if client is None:
            members, protocol = etcd_members(endpoint)  # type: ignore[arg-type]
            tls: Dict[str, Any] = {}
            if protocol == "https":
                tls["protocol"] = "https"
                if ca_file is not None:
                    tls["ca_cert"] = check_ca_file(ca_file, "etcd TLS")
            elif ca_file is not None:
                raise ValueError("EtcdRegistry: ca_file is for TLS, but the endpoints are not https://")
            unreachable = tuple(
                getattr(importlib.import_module("etcd3gw.exceptions"), name)
                for name in ("ConnectionFailedError", "ConnectionTimeoutError")
            )
            base = etcd3gw.Etcd3Client
            ca_cert: Optional[str] = tls.get("ca_cert")

            class MemberClient(base):  # type: ignore[misc, valid-type]
                """Moves to the next member after a request that could not reach one."""

                def post(self, url: str, *args: Any, **kwargs: Any) -> Any:
                    if ca_cert is not None:
                        # Per request: requests prefers REQUESTS_CA_BUNDLE to the session's.
                        kwargs.setdefault("verify", ca_cert)
                    try:
                        return base.post(self, url, *args, **kwargs)
                    except unreachable:
                        here = (getattr(self, "host"), getattr(self, "port"))
                        at = members.index(here) if here in members else -1
                        host, port = members[(at + 1) % len(members)]
                        setattr(self, "host", host)
                        setattr(self, "port", port)
                        raise

            client = MemberClient(host=members[0][0], port=members[0][1], timeout=timeout, api_path="/v3/", **tls)
        self.client = client
        self._lease_type = import_client("etcd3gw.lease", "etcd").Lease
        self._protocol = _RegistryProtocol("etcd", {"prefix": prefix})
        self.prefix: str = self._protocol.describe()["prefix"]
        self._lock = threading.Lock()

    def _lease(self, lease_id: str) -> Any:
        return self._lease_type(int(lease_id), self.client)

    def _perform(self, op: Dict[str, Any]) -> Any:
        """One request of the protocol, as etcd3gw answered it (a failure raises)."""
        kind = op["op"]
        if kind == "grant":
            return {"lease": str(self.client.lease(op["ttl_s"]).id)}
        if kind == "keepalive":
            return {"ttl": int(self._lease(op["lease"]).refresh())}
        if kind == "revoke":
            try:
                self._lease(op["lease"]).revoke()
            except Exception:
                pass  # a lease that already expired is gone (etcd answers Not Found)
            return None
        if kind == "prefix":
            return {"kvs": [[_text(meta["key"]), _text(value)] for value, meta in self.client.get_prefix(op["prefix"])]}
        if kind != "txn":
            return {"error": f"the etcd adapter has no request {kind!r}"}
        txn = {"compare": [_compare(c) for c in op["compare"]]}
        for branch in ("success", "failure"):
            txn[branch] = [_request(r) for r in op[branch]]
        r = self.client.transaction(txn)
        values: List[Optional[str]] = []
        for resp in r.get("responses") or []:
            if "response_range" in resp:
                kvs = resp["response_range"].get("kvs") or []
                values.append(_unb64(kvs[0].get("value", "")) if kvs else None)
        return {"succeeded": bool(r.get("succeeded")), "values": values}

    def _call(self, name: str, *args: Any) -> Any:
        with self._lock:
            return _converse(self._protocol, self._perform, name, args)

    def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[int]:
        return self._call("claim", worker_id, owner, ttl_ms)  # type: ignore[no-any-return]

    def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Optional[int]:
        return self._call("renew", worker_id, owner, ttl_ms, mark_ms, reported_ms)  # type: ignore[no-any-return]

    def release(self, worker_id: int, owner: str, mark_ms: int) -> bool:
        return bool(self._call("release", worker_id, owner, mark_ms))

    def peers(self) -> Peers:
        return _peers(self._call("peers"))

    def close(self) -> None:
        """Revokes the etcd leases of the worker IDs held (their keys go at once)."""
        with self._lock:
            leases: List[str] = self._protocol.describe()["leases"]
            self._protocol = _RegistryProtocol("etcd", {"prefix": self.prefix})
        for lease in leases:
            try:
                self._lease(lease).revoke()
            except Exception:
                pass


def etcd_members(endpoint: str) -> Tuple[List[Tuple[str, int]], str]:
    """``HOST:PORT[,HOST:PORT]`` (each optionally ``http://`` or ``https://``, all alike)
    as ``([(host, port), ...], "http" | "https")``."""
    members: List[Tuple[str, int]] = []
    protocols = set()
    for one in endpoint.split(","):
        text = one.strip()
        scheme, sep, rest = text.partition("://")
        if sep:
            if scheme.lower() not in ("http", "https"):
                raise ValueError(f"invalid etcd endpoint {one!r} in {endpoint!r}: only http:// or https://")
            protocols.add(scheme.lower())
            text = rest.rstrip("/")
        else:
            protocols.add("http")
        host, _, port = text.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"invalid etcd endpoint {one!r} in {endpoint!r}: expected HOST:PORT[,HOST:PORT]")
        members.append((host.strip("[]"), int(port)))
    if len(protocols) > 1:
        raise ValueError(f"etcd endpoints {endpoint!r} mix http:// and https://: use one for all")
    return members, protocols.pop()


def url_tls(url: str) -> Tuple[str, bool, Optional[str]]:
    """A ``zk``/``etcd`` URL's TLS request: the URL without ``tls`` and ``ca``,
    whether TLS is asked for (``+tls`` on the scheme, or ``tls=true``), and the CA file."""
    rest, found = take_params(url, ("tls", CA_FILE_PARAM))
    scheme = url.split("://", 1)[0].lower()
    tls = scheme.endswith("+tls")
    scheme = scheme.split("+", 1)[0]
    if "tls" in found:
        asked = parse_flag(found["tls"], "tls")
        if tls and not asked:
            raise ValueError(f"{scheme}+tls:// contradicts tls={found['tls']}")
        tls = tls or asked
    ca_file = found.get(CA_FILE_PARAM)
    if ca_file is not None and not tls:
        raise ValueError(f"{CA_FILE_PARAM}=PATH is for TLS, but the URL {url!r} does not ask for it: use {scheme}+tls://")
    return rest, tls, ca_file


def _compare(c: Dict[str, Any]) -> Dict[str, Any]:
    """A comparison of the protocol as etcd's JSON gateway spells it (keys and values base64)."""
    key = _b64(c["key"])
    if c.get("missing"):
        return {"key": key, "result": "EQUAL", "target": "CREATE", "create_revision": 0}
    if "equal" in c:
        return {"key": key, "result": "EQUAL", "target": "VALUE", "value": _b64(c["equal"])}
    if "less" in c:
        return {"key": key, "result": "LESS", "target": "VALUE", "value": _b64(c["less"])}
    raise ValueError(f"the etcd adapter has no comparison {c!r}")


def _request(r: Dict[str, Any]) -> Dict[str, Any]:
    """A transaction's request of the protocol as etcd's JSON gateway spells it."""
    if "put" in r:
        put: Dict[str, Any] = {"key": _b64(r["put"]), "value": _b64(r["value"])}
        if r.get("lease") is not None:
            put["lease"] = int(r["lease"])
        return {"request_put": put}
    if "range" in r:
        return {"request_range": {"key": _b64(r["range"])}}
    if "delete" in r:
        return {"request_delete_range": {"key": _b64(r["delete"])}}
    raise ValueError(f"the etcd adapter has no transaction request {r!r}")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _unb64(text: str) -> str:
    return base64.b64decode(text).decode()


def from_url(url: str) -> Any:
    """A registry for a URL:

    * ``redis://`` ``[[USER]:PASSWORD@]HOST[:PORT][/DB]``, ``redis+sentinel://…H:P[,H:P…]/SERVICE[/DB]``,
      ``redis+cluster://…H:P[,H:P…]``, each ``rediss…`` for TLS, with ``?replicas=N`` and
      (TLS) ``ca=PATH``;
    * ``postgres://`` (``postgresql://``), libpq's parameters included (TLS:
      ``sslmode=require|verify-ca|verify-full``, ``sslrootcert=PATH``);
    * ``mysql://USER:PASSWORD@HOST:PORT/DB[?ssl-mode=REQUIRED|VERIFY_CA|VERIFY_IDENTITY&ssl-ca=PATH]``;
    * ``zk://`` or ``zk+tls://`` (TLS) ``HOST:PORT[,HOST:PORT]/ROOT[?identity=IP:PORT&session_timeout_ms=N&cache_file=PATH&ca=PATH]``;
    * ``etcd://`` or ``etcd+tls://`` (TLS: https) ``HOST:PORT[,HOST:PORT][/PREFIX][?ca=PATH]``.

    ``tls=true`` on a ``zk://`` or ``etcd://`` URL is the same as ``+tls``. A URL asking
    for TLS never falls back to plaintext."""
    from urllib.parse import parse_qs, urlparse

    scheme = url.split("://", 1)[0].lower()
    if scheme in REDIS_SCHEMES:
        return RedisRegistry(url)
    if scheme in ("postgres", "postgresql"):
        return PostgresRegistry(url)
    if scheme == "mysql":
        return MySQLRegistry(url)
    if scheme in ("zk", "zk+tls", "etcd", "etcd+tls"):
        rest, tls, ca_file = url_tls(url)
        u = urlparse("x" + rest[len(scheme):])
        query = {k: v[-1] for k, v in parse_qs(u.query).items()}
        if not u.netloc:
            raise ValueError(f"invalid registry URL {url!r}: no HOST:PORT")
        if scheme.startswith("zk"):
            return ZooKeeperRegistry(
                u.netloc,
                root=u.path or "/snowflake/segflake",
                identity=query.get("identity"),
                session_timeout_ms=int(query.get("session_timeout_ms", 10_000)),
                cache_file=query.get("cache_file"),
                tls=tls,
                ca_file=ca_file,
            )
        endpoint = ",".join(f"https://{h}" for h in u.netloc.split(",")) if tls else u.netloc
        return EtcdRegistry(endpoint, prefix=u.path or "/segflake", ca_file=ca_file)
    raise ValueError(
        f"unsupported registry URL {url!r}; allowed: redis://, rediss:// (+sentinel, +cluster), postgres://, mysql://, "
        "zk://, zk+tls://, etcd://, etcd+tls://"
    )
