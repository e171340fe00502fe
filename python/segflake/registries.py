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

from ._native import (
    _audit_port,
    _redis_durability_settings,
    _redis_durability_warning,
    _tables,
    _ZooKeeperProtocol,
)
from .stores._common import Connections, import_client, pg_conninfo, redis_client, shutdown_socket

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


class RedisRegistry:
    """Worker-ID leases in Redis: ``url`` (``redis://HOST:PORT/DB``) or ``client`` (a
    ``redis.Redis``); ``prefix`` names the keys (wrapped in braces: one cluster slot).
    redis-py's client is thread-safe and reconnects by itself. ``socket_timeout``
    (seconds, default 3: the lease's ``registry_timeout_ms``) bounds connecting and each
    command of a client made from ``url``, which retries a command only after a
    connection error, never after a timeout; a ``client`` you pass keeps its own
    settings. ``renew`` answers -1 when the worker's key is gone (the server lost it). On a
    server with replicas (``ROLE``), a renewal counts only once every connected replica
    acknowledged it (``WAIT``, half the socket timeout), so a failover never loses a mark
    the holder issued under.

    At start-up it reads the server's ``appendonly`` and ``maxmemory-policy`` (``CONFIG
    GET``; a server that refuses it, as managed services may, is not checked) and logs one
    warning on the ``segflake`` logger when a restart or eviction would lose marks
    (``check_durability=False`` skips this). Lost marks cause no duplicate IDs, but holders
    stop with ``RegistryLostDataError`` and claims without a mark wait."""

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        client: Any = None,
        prefix: str = "segflake",
        socket_timeout: float = 3.0,
        check_durability: bool = True,
    ) -> None:
        self.client = redis_client("RedisRegistry", url, client, socket_timeout)
        self.prefix = "{" + prefix + "}"
        self._wait_ms = max(1, int(socket_timeout * 500))
        #: The start-up check's warning (``None``: the marks are kept, or not checked).
        self.durability_warning: Optional[str] = self._check_durability() if check_durability else None
        scripts = statements("redis")
        self._claim = self.client.register_script(scripts["claim"])
        self._renew = self.client.register_script(scripts["renew"])
        self._release = self.client.register_script(scripts["release"])
        self._peers = self.client.register_script(scripts["peers"])

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

    def _key(self, what: str, worker_id: int) -> str:
        return f"{self.prefix}:{what}:{worker_id}"

    def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[int]:
        mark = self._claim(keys=[self._key("worker", worker_id), self._key("mark", worker_id)], args=[owner, ttl_ms])
        return None if mark is None else int(mark)

    def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Optional[int]:
        keys = [self._key("worker", worker_id), self._key("mark", worker_id), f"{self.prefix}:reports"]
        args = [owner, ttl_ms, mark_ms, reported_ms, worker_id]
        replicas = self._replicas()
        if replicas == 0:
            mark = self._renew(keys=keys, args=args)
        else:
            # The core's rule (statements: REPLICATED): WAIT on the renewal's connection.
            pipe = self.client.pipeline(transaction=False)
            self._renew(keys=keys, args=args, client=pipe)
            pipe.execute_command("WAIT", replicas, self._wait_ms)
            mark, acked = pipe.execute()
            if mark is not None and int(mark) >= 0 and int(acked) < replicas:
                raise ConnectionError(
                    f"the renewal reached {int(acked)} of the {replicas} replicas within {self._wait_ms} ms "
                    "(WAIT); it does not count until every replica has it"
                )
        return None if mark is None else int(mark)

    def _replicas(self) -> int:
        """How many replicas are connected to the server now (``ROLE``; 0 if refused)."""
        try:
            role = self.client.execute_command("ROLE")
        except Exception:
            return 0
        return len(role[2]) if len(role) > 2 and isinstance(role[2], list) else 0

    def release(self, worker_id: int, owner: str, mark_ms: int) -> bool:
        keys = [self._key("worker", worker_id), self._key("mark", worker_id), f"{self.prefix}:reports"]
        return int(self._release(keys=keys, args=[owner, mark_ms, worker_id])) == 1

    def peers(self) -> Peers:
        rows = self._peers(keys=[f"{self.prefix}:reports"], args=[f"{self.prefix}:worker:"])
        return [(int(w), int(r), int(a)) for w, r, a in rows]

    def close(self) -> None:
        self.client.close()


class _Sql:
    """One connection, opened on first use and reopened after a failure; the schema is
    created with it unless ``create_schema=False``."""

    dialect = ""

    def __init__(
        self,
        open_connection: Callable[[], Any],
        create_schema: bool,
        *,
        abort: Optional[Callable[[Any], None]] = None,
        deadline_s: Optional[float] = None,
    ) -> None:
        self._sql = {k: _placeholders(v) for k, v in statements(self.dialect).items()}

        def connect() -> Any:
            conn = open_connection()
            if create_schema:
                self._create_schema(conn)
            return conn

        self._conns: Connections[Any] = Connections(connect, lambda c: c.close(), abort=abort, deadline_s=deadline_s)

    def _create_schema(self, conn: Any) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._conns.close()


class PostgresRegistry(_Sql):
    """Worker-ID leases in PostgreSQL (psycopg 3): ``conninfo`` (a libpq string or URL) or
    ``connect`` (a function returning a new connection; it is switched to autocommit).

    Transport deadlines: ``connect_timeout`` (seconds), and ``timeout`` (seconds, default
    3: the lease's ``registry_timeout_ms``) for one statement: libpq's TCP keepalives and
    ``tcp_user_timeout`` and the server's ``statement_timeout`` (each unless
    ``conninfo`` sets it), and a watchdog that shuts the connection's socket down when a
    statement is not answered in time (a silent connection, a proxy that stopped
    forwarding); the next call opens a new connection."""

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
                return conn
            return psycopg.connect(params, autocommit=True)

        super().__init__(open_connection, create_schema, abort=lambda c: shutdown_socket(c.fileno()), deadline_s=timeout)

    def _create_schema(self, conn: Any) -> None:
        conn.execute(self._sql["schema"])

    def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[int]:
        def op(conn: Any) -> Optional[int]:
            row = conn.execute(self._sql["claim"], (worker_id, owner, ttl_ms)).fetchone()
            if row is None:
                return None
            conn.execute(self._sql["audit"], (_host_name(), _audit_port(worker_id, owner)))
            return int(row[0])

        return self._conns.run(op)  # type: ignore[no-any-return]

    def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Optional[int]:
        params = (ttl_ms, mark_ms, reported_ms, worker_id, owner, worker_id)
        row = self._conns.run(lambda c: c.execute(self._sql["renew"], params).fetchone())
        return None if row is None or row[0] is None else int(row[0])

    def release(self, worker_id: int, owner: str, mark_ms: int) -> bool:
        params = (mark_ms, worker_id, owner)
        return self._conns.run(lambda c: c.execute(self._sql["release"], params).fetchone()) is not None

    def peers(self) -> Peers:
        rows = self._conns.run(lambda c: c.execute(self._sql["peers"]).fetchall())
        return [(int(w), int(r), max(0, int(a))) for w, r, a in rows]


class MySQLRegistry(_Sql):
    """Worker-ID leases in MySQL or MariaDB (PyMySQL): connection arguments (``host``,
    ``port``, ``user``, ``password``, ``database``...) or ``connect`` (a function returning
    a new connection opened with ``client_flag=pymysql.constants.CLIENT.FOUND_ROWS``).
    Transport deadlines, unless given: ``connect_timeout``, ``read_timeout`` and
    ``write_timeout`` of 3 s (the lease's ``registry_timeout_ms``), so a silent
    connection fails the call; a ``connect`` function sets its own."""

    dialect = "mysql"

    def __init__(
        self,
        *,
        connect: Optional[Callable[[], Any]] = None,
        create_schema: bool = True,
        **connect_kwargs: Any,
    ) -> None:
        if connect is not None and connect_kwargs:
            raise TypeError("MySQLRegistry takes either connect or connection arguments, not both")
        pymysql = import_client("pymysql", "mysql")
        for deadline in ("connect_timeout", "read_timeout", "write_timeout"):
            connect_kwargs.setdefault(deadline, 3)
        # An UPDATE's row count is the rows it matched (the statements' contract).
        connect_kwargs["client_flag"] = connect_kwargs.get("client_flag", 0) | pymysql.constants.CLIENT.FOUND_ROWS

        def open_connection() -> Any:
            if connect is not None:
                conn = connect()
                conn.autocommit(True)
                return conn
            return pymysql.connect(autocommit=True, **connect_kwargs)

        super().__init__(open_connection, create_schema)

    def _create_schema(self, conn: Any) -> None:
        with conn.cursor() as cur:
            for statement in self._sql["schema"].split(";"):
                body = "\n".join(l for l in statement.splitlines() if not l.strip().startswith("--"))
                if body.strip():
                    cur.execute(body)

    def _claimed(self, cur: Any, worker_id: int, owner: str) -> Optional[int]:
        cur.execute(self._sql["claimed"], (worker_id, owner))
        row = cur.fetchone()
        return None if row is None else int(row[0])

    def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[int]:
        def op(conn: Any) -> Optional[int]:
            with conn.cursor() as cur:
                cur.execute(self._sql["ensure"], (worker_id,))
                cur.execute(self._sql["claim"], (owner, ttl_ms, worker_id, owner))
                mark = self._claimed(cur, worker_id, owner)
                if mark is not None:
                    cur.execute(self._sql["audit"], (_host_name(), _audit_port(worker_id, owner)))
                return mark

        return self._conns.run(op)  # type: ignore[no-any-return]

    def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Optional[int]:
        def op(conn: Any) -> Optional[int]:
            with conn.cursor() as cur:
                cur.execute(self._sql["renew"], (ttl_ms, mark_ms, reported_ms, worker_id, owner))
                cur.execute(self._sql["renewed"], (owner, worker_id))
                row = cur.fetchone()
                return None if row is None or row[0] is None else int(row[0])

        return self._conns.run(op)  # type: ignore[no-any-return]

    def release(self, worker_id: int, owner: str, mark_ms: int) -> bool:
        def op(conn: Any) -> bool:
            with conn.cursor() as cur:
                return bool(cur.execute(self._sql["release"], (mark_ms, worker_id, owner)) == 1)

        return self._conns.run(op)  # type: ignore[no-any-return]

    def peers(self) -> Peers:
        def op(conn: Any) -> Peers:
            with conn.cursor() as cur:
                cur.execute(self._sql["peers"])
                return [(int(w), int(r), max(0, int(a))) for w, r, a in cur.fetchall()]

        return self._conns.run(op)  # type: ignore[no-any-return]


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
    ) -> None:
        if (hosts is None) == (client is None):
            raise TypeError("ZooKeeperRegistry needs exactly one of hosts or client")
        self._protocol = _ZooKeeperProtocol(root, f"{_default_ip()}:0" if identity is None else identity)
        self.identity = self._protocol.identity
        self._kazoo = import_client("kazoo.client", "zookeeper")
        self._errors = import_client("kazoo.exceptions", "zookeeper")
        self._own_client = client is None
        if client is None:
            # Reconnect at least once a second (kazoo's default backs off to a minute): a
            # holder whose lease lapsed during an outage claims again soon after it ends.
            retry = {"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0}
            client = self._kazoo.KazooClient(
                hosts=hosts, timeout=session_timeout_ms / 1000, connection_retry=retry
            )
            if cache_file is None:
                client.start(timeout=connect_timeout)
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
        step = self._protocol.start(name, list(args), session, int(time.time() * 1000))
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
                known = self._protocol.worker_id
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
    member) or ``client`` (an ``etcd3gw.Etcd3Client``).
    Keys under ``prefix``: ``worker/<id>`` (the owner, on an etcd lease), ``mark/<id>``
    (zero-padded, so etcd's byte order is numeric) and ``report/<id>``; claims are a ``txn``
    on ``create_revision == 0``, renewals and releases compare the owner. ``timeout``
    (seconds, default 3: the lease's ``registry_timeout_ms``) bounds each HTTP request of
    a client made from ``endpoint``. ``renew`` answers -1 when the worker key or its mark
    is gone while the etcd lease lives (etcd lost them)."""

    def __init__(
        self, endpoint: Optional[str] = None, *, client: Any = None, prefix: str = "/segflake", timeout: float = 3.0
    ) -> None:
        if (endpoint is None) == (client is None):
            raise TypeError("EtcdRegistry needs exactly one of endpoint or client")
        etcd3gw = import_client("etcd3gw", "etcd")
        if client is None:
            members: List[Tuple[str, int]] = []
            for one in endpoint.split(","):  # type: ignore[union-attr]
                host, _, port = one.strip().rpartition(":")
                if not host or not port.isdigit():
                    raise ValueError(f"invalid etcd endpoint {one!r} in {endpoint!r}: expected HOST:PORT[,HOST:PORT]")
                members.append((host, int(port)))
            unreachable = tuple(
                getattr(importlib.import_module("etcd3gw.exceptions"), name)
                for name in ("ConnectionFailedError", "ConnectionTimeoutError")
            )
            base = etcd3gw.Etcd3Client

            class MemberClient(base):  # type: ignore[misc, valid-type]
                """Moves to the next member after a request that could not reach one."""

                def post(self, url: str, *args: Any, **kwargs: Any) -> Any:
                    try:
                        return base.post(self, url, *args, **kwargs)
                    except unreachable:
                        here = (getattr(self, "host"), getattr(self, "port"))
                        at = members.index(here) if here in members else -1
                        host, port = members[(at + 1) % len(members)]
                        setattr(self, "host", host)
                        setattr(self, "port", port)
                        raise

            client = MemberClient(host=members[0][0], port=members[0][1], timeout=timeout, api_path="/v3/")
        self.client = client
        self.prefix = prefix.rstrip("/")
        self._leases: Dict[int, Any] = {}
        self._lock = threading.Lock()

    def _key(self, what: str, worker_id: int) -> str:
        return _b64(f"{self.prefix}/{what}/{worker_id}")

    def _txn(self, compare: List[Any], success: List[Any], failure: List[Any]) -> Tuple[bool, List[Optional[str]]]:
        """Runs a txn; answers whether it succeeded and the values its range requests read."""
        r = self.client.transaction({"compare": compare, "success": success, "failure": failure})
        values: List[Optional[str]] = []
        for resp in r.get("responses", []):
            if "response_range" in resp:
                kvs = resp["response_range"].get("kvs") or []
                values.append(_unb64(kvs[0].get("value", "")) if kvs else None)
        return bool(r.get("succeeded")), values

    def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[int]:
        worker, mark = self._key("worker", worker_id), self._key("mark", worker_id)
        lease = self.client.lease(max(1, -(-ttl_ms // 1000)))
        ok, values = self._txn(
            [{"key": worker, "result": "EQUAL", "target": "CREATE", "create_revision": 0}],
            [{"request_put": {"key": worker, "value": _b64(owner), "lease": lease.id}}, {"request_range": {"key": mark}}],
            [{"request_range": {"key": worker}}, {"request_range": {"key": mark}}],
        )
        with self._lock:
            if not ok:
                lease.revoke()
                if values[0] != owner or worker_id not in self._leases:
                    return None
                stored = values[1]
            else:
                self._leases[worker_id] = lease
                stored = values[0]
        if stored is None:
            self._txn(
                [{"key": mark, "result": "EQUAL", "target": "CREATE", "create_revision": 0}],
                [{"request_put": {"key": mark, "value": _b64(_pad(0))}}],
                [],
            )
        return int(stored or 0)

    def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Optional[int]:
        with self._lock:
            lease = self._leases.get(worker_id)
        if lease is None or lease.refresh() <= 0:
            return None
        worker, mark, report = (self._key(w, worker_id) for w in ("worker", "mark", "report"))
        owned = {"key": worker, "result": "EQUAL", "target": "VALUE", "value": _b64(owner)}
        put_report = {"request_put": {"key": report, "value": _b64(str(reported_ms)), "lease": lease.id}}
        ok, values = self._txn(
            [owned, {"key": mark, "result": "LESS", "target": "VALUE", "value": _b64(_pad(mark_ms))}],
            [{"request_put": {"key": mark, "value": _b64(_pad(mark_ms))}}, put_report],
            [{"request_range": {"key": worker}}, {"request_range": {"key": mark}}],
        )
        if ok:
            return mark_ms
        if values[0] is None or values[1] is None:
            # Our etcd lease is alive, but the worker key or the mark is gone: etcd lost
            # them (a restore from an older snapshot, a deletion).
            return -1
        if values[0] != owner:
            return None
        self._txn([owned], [put_report], [])
        return int(values[1])

    def release(self, worker_id: int, owner: str, mark_ms: int) -> bool:
        with self._lock:
            lease = self._leases.pop(worker_id, None)
        worker, mark, report = (self._key(w, worker_id) for w in ("worker", "mark", "report"))
        ok, _ = self._txn(
            [{"key": worker, "result": "EQUAL", "target": "VALUE", "value": _b64(owner)}],
            [
                {"request_put": {"key": mark, "value": _b64(_pad(mark_ms))}},
                {"request_delete_range": {"key": worker}},
                {"request_delete_range": {"key": report}},
            ],
            [],
        )
        if lease is not None:
            _revoke(lease)
        return ok

    def peers(self) -> Peers:
        out = []
        for value, meta in self.client.get_prefix(f"{self.prefix}/report/"):
            key = meta["key"].decode() if isinstance(meta["key"], bytes) else str(meta["key"])
            out.append((int(key.rpartition("/")[2]), int(value), 0))
        return out

    def close(self) -> None:
        with self._lock:
            leases, self._leases = list(self._leases.values()), {}
        for lease in leases:
            _revoke(lease)


def _revoke(lease: Any) -> None:
    """Ends an etcd lease; one that already expired is gone (etcd answers Not Found)."""
    try:
        lease.revoke()
    except Exception:
        pass


def _pad(mark_ms: int) -> str:
    return f"{mark_ms:020d}"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _unb64(text: str) -> str:
    return base64.b64decode(text).decode()


def from_url(url: str) -> Any:
    """A registry for ``redis://``, ``postgres://`` (``postgresql://``), ``mysql://``,
    ``zk://HOST:PORT[,HOST:PORT]/ROOT[?identity=IP:PORT&session_timeout_ms=N&cache_file=PATH]`` or
    ``etcd://HOST:PORT[/PREFIX]`` URLs."""
    from urllib.parse import parse_qs, unquote, urlparse

    scheme = url.split("://", 1)[0]
    if scheme == "redis":
        return RedisRegistry(url)
    if scheme in ("postgres", "postgresql"):
        return PostgresRegistry(url)
    u = urlparse(url)
    if scheme == "mysql":
        return MySQLRegistry(
            host=u.hostname or "localhost",
            port=u.port or 3306,
            user=unquote(u.username or ""),
            password=unquote(u.password or ""),
            database=u.path.lstrip("/") or None,
        )
    query = {k: v[-1] for k, v in parse_qs(u.query).items()}
    if scheme == "zk":
        return ZooKeeperRegistry(
            u.netloc,
            root=u.path or "/snowflake/segflake",
            identity=query.get("identity"),
            session_timeout_ms=int(query.get("session_timeout_ms", 10_000)),
            cache_file=query.get("cache_file"),
        )
    if scheme == "etcd":
        return EtcdRegistry(u.netloc, prefix=u.path or "/segflake")
    raise ValueError(
        f"unsupported registry URL {url!r}; allowed: redis://, postgres://, mysql://, zk://, etcd://"
    )
