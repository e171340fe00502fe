"""Redis clients for every URL spelling the core takes (a server, a Sentinel-monitored
primary, a Cluster) and the replica wait that follows every write segflake issues from.

The URL grammar and the wait rule are the core's (``segflake::redis``): this module only
builds redis-py clients from the parsed URL and carries ``WAIT`` on the connection of the
write it must count."""

from __future__ import annotations

import inspect
import json
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type

from .._native import StoreError, _min_replicas_to_write, _redis_target, _replica_wait, _replica_wait_check
from ._common import check_ca_file, import_client


def redis_target(url: str) -> Dict[str, Any]:
    """The core's reading of a Redis URL: ``{"mode": "single"|"sentinel"|"cluster",
    "service", "tls", "nodes": [[host, port], …], "db", "user", "password", "replicas",
    "ca"}``; :class:`segflake.InvalidArgumentError` (a ``ValueError``) saying what was wrong
    and listing the allowed spellings::

        redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]
        redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]…]/SERVICE[/DB]
        redis+cluster://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]…]

    ``rediss…`` for TLS; parameters ``replicas=N`` and (TLS) ``ca=PATH``."""
    target: Dict[str, Any] = json.loads(_redis_target(url))
    return target


def redis_client(
    what: str,
    url: Optional[str],
    client: Any,
    socket_timeout: float,
    ca_file: Optional[str] = None,
    *,
    asyncio: bool = False,
) -> Any:
    """``client``, or a client for ``url`` with ``socket_timeout`` on connects and commands;
    exactly one of the two must be given (a ``TypeError`` naming ``what``).

    * ``redis://`` — a ``redis.Redis`` (``redis.asyncio.Redis`` with ``asyncio``);
    * ``redis+sentinel://H:P[,H:P…]/SERVICE[/DB]`` — ``Sentinel(...).master_for(SERVICE)``:
      every new connection asks the sentinels for the current primary, so the client
      follows a failover (a connection to a demoted primary is dropped);
    * ``redis+cluster://H:P[,H:P…]`` — a ``RedisCluster`` seeded with the nodes: it reads
      the slot map and follows ``MOVED``.

    ``rediss…`` connects over TLS, the certificate checked (chain and host name) against
    ``ca_file`` or the URL's ``ca=PATH`` (else the system's certificate authorities).

    A command is tried once more only after a connection error (a connection the server
    closed, say), never after a timeout: redis-py's default of up to 10 retries would
    stretch a dead server's ``socket_timeout`` tenfold past the caller's deadline."""
    if (url is None) == (client is None):
        raise TypeError(f"{what} needs exactly one of url or client")
    if client is not None:
        if ca_file is not None:
            raise TypeError(f"{what}: ca_file is for a client made from url, not for a client passed in")
        return client
    assert url is not None
    target = redis_target(url)
    redis = import_client("redis", "redis")
    family = import_client("redis.asyncio", "redis") if asyncio else redis
    retry_mod = import_client("redis.asyncio.retry" if asyncio else "redis.retry", "redis")
    backoff = import_client("redis.backoff", "redis")

    def retry() -> Any:
        return retry_mod.Retry(backoff.NoBackoff(), 1, supported_errors=(redis.exceptions.ConnectionError,))

    timeouts: Dict[str, Any] = {"socket_timeout": socket_timeout, "socket_connect_timeout": socket_timeout}
    tls: Dict[str, Any] = {}
    if target["tls"]:
        tls = {"ssl": True, "ssl_cert_reqs": "required", "ssl_check_hostname": True}
        ca = ca_file if ca_file is not None else target["ca"]
        if ca is not None:
            tls["ssl_ca_certs"] = check_ca_file(ca, "Redis TLS")
    elif ca_file is not None:
        raise ValueError("a CA file (ca=PATH) is for TLS, but the Redis URL is redis://: use rediss://")
    auth = {k: target[k] for k in ("user", "password") if target[k] is not None}
    if "user" in auth:
        auth["username"] = auth.pop("user")
    nodes: List[Tuple[str, int]] = [(h, int(p)) for h, p in target["nodes"]]
    if target["mode"] == "sentinel":
        sentinel_mod = import_client("redis.asyncio.sentinel" if asyncio else "redis.sentinel", "redis")
        # The sentinels are asked without the data servers' credentials (the core's rule).
        sentinels = sentinel_mod.Sentinel(nodes, sentinel_kwargs={**timeouts, **tls}, **timeouts, **tls)
        return sentinels.master_for(target["service"], db=target["db"], retry=retry(), **auth)
    if target["mode"] == "cluster":
        cluster_mod = import_client("redis.asyncio.cluster" if asyncio else "redis.cluster", "redis")
        startup = [cluster_mod.ClusterNode(h, p) for h, p in nodes]
        return cluster_mod.RedisCluster(startup_nodes=startup, retry=retry(), **timeouts, **tls, **auth)
    host, port = nodes[0]
    return family.Redis(host=host, port=port, db=target["db"], retry=retry(), **timeouts, **tls, **auth)


def url_replicas(url: Optional[str]) -> Optional[int]:
    """The URL's ``replicas=N`` (``None``: not given, or no URL)."""
    if url is None:
        return None
    n = redis_target(url)["replicas"]
    return None if n is None else int(n)


def is_cluster(client: Any) -> bool:
    """Whether ``client`` is a redis-py ``RedisCluster`` (sync or asyncio)."""
    return hasattr(client, "get_node_from_key") and hasattr(client, "nodes_manager")


def is_async(client: Any) -> bool:
    """Whether ``client`` is an asyncio client (its commands are coroutines)."""
    return inspect.iscoroutinefunction(getattr(client, "execute_command", None))


def node_client(cluster: Any, key: Any) -> Any:
    """The ``redis.Redis`` of the primary holding ``key``'s slot in a sync ``RedisCluster``."""
    return cluster.get_redis_connection(cluster.get_node_from_key(key))


def refresh_slots(client: Any) -> None:
    """After a failed call on a Cluster (a failover, a moved slot): read the slot map again,
    so the next call reaches the slot's primary. Not a Cluster, or unreachable: nothing."""
    if is_cluster(client):
        try:
            client.nodes_manager.initialize()
        except Exception:
            pass  # the next call tries again


class AsyncNodeClients:
    """``redis.asyncio`` clients of an asyncio ``RedisCluster``'s primaries, one per node,
    made from that node's connection settings: a pipeline of a write and its ``WAIT`` needs
    one connection to the slot's primary, which the cluster client does not lend out."""

    def __init__(self) -> None:
        self._clients: Dict[str, Any] = {}

    async def for_key(self, cluster: Any, key: Any) -> Any:
        await cluster.initialize()
        node = cluster.get_node_from_key(key)
        client = self._clients.get(node.name)
        if client is None:
            aio = import_client("redis.asyncio", "redis")
            pool = aio.ConnectionPool(connection_class=node.connection_class, **node.connection_kwargs)
            client = self._clients[node.name] = aio.Redis(connection_pool=pool)
        return client

    async def refresh(self, cluster: Any) -> None:
        """Drops the node clients and reads the slot map again (after a failed call)."""
        await self.aclose()
        try:
            await cluster.nodes_manager.initialize()
        except Exception:
            pass  # the next call tries again

    async def aclose(self) -> None:
        clients, self._clients = self._clients, {}
        for client in clients.values():
            try:
                await client.aclose()
            except Exception:
                pass


def _refused(exc: BaseException) -> bool:
    """Whether the server answered ``exc`` as an error reply (``ROLE`` or ``CONFIG``
    refused by a proxy or a managed service), not a failed transport."""
    return any(c.__name__ == "ResponseError" for c in type(exc).__mro__)


_REDIRECTS = ("MOVED", "ASK", "CLUSTERDOWN", "TRYAGAIN")


def _redirected(exc: BaseException) -> bool:
    """A Cluster's answer that the slot lives elsewhere (or the cluster is reconfiguring):
    redis-py's ``MovedError``/``AskError`` (whose text no longer starts with the reply's
    first word), ``ClusterDownError``, ``TryAgainError``, or such an error reply's text."""
    names = {c.__name__ for c in type(exc).__mro__}
    if names & {"AskError", "ClusterDownError", "TryAgainError"}:
        return True
    return _refused(exc) and str(exc).startswith(_REDIRECTS)


def _no_script(exc: BaseException) -> bool:
    """``EVALSHA`` of a script the server does not have (``NOSCRIPT``)."""
    return type(exc).__name__ == "NoScriptError" or str(exc).startswith("NOSCRIPT")


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)


def _connected_replicas(role: Any) -> int:
    """``ROLE``'s count of connected replicas: a primary lists them third; a replica has none."""
    return len(role[2]) if isinstance(role, (list, tuple)) and len(role) > 2 and isinstance(role[2], list) else 0


def _min_replicas(reply: Any) -> int:
    """``CONFIG GET min-replicas-to-write`` as redis-py answers it (a dict, or a flat list)."""
    if isinstance(reply, dict):
        flat = [_text(x) for pair in reply.items() for x in pair]
    else:
        flat = [_text(x) for x in (reply or [])]
    return _min_replicas_to_write(flat)


class _Wait:
    """The resolved ``WAIT`` of one client: ``(replicas, timeout_ms)``; ``replicas == 0``
    means no wait. Shared by the sync and asyncio writers."""

    def __init__(self, configured: Optional[int], timeout_s: float, error: Type[Exception]) -> None:
        self.configured = configured
        self.timeout_ms = max(1, int(timeout_s * 1000))
        self.error = error
        self.resolved: Optional[Tuple[int, int]] = None
        if configured is not None:
            # The URL's replicas=N: nothing to ask the server.
            self.resolved = _replica_wait(configured, 0, 0, self.timeout_ms)

    def resolve(self, role: Any, min_replicas: Any) -> Tuple[int, int]:
        """From the answers to ``ROLE`` and ``CONFIG GET`` (an exception: refused, 0)."""
        connected = 0 if isinstance(role, BaseException) else _connected_replicas(role)
        minimum = 0 if isinstance(min_replicas, BaseException) else _min_replicas(min_replicas)
        self.resolved = _replica_wait(self.configured, minimum, connected, self.timeout_ms)
        return self.resolved

    def check(self, what: str, acked: Any) -> None:
        assert self.resolved is not None
        replicas, timeout_ms = self.resolved
        message = _replica_wait_check(replicas, timeout_ms, what, int(acked))
        if message is not None:
            raise self.error(message)


def _commands(sha: str, text: str, keys: Sequence[Any], args: Sequence[Any], evalsha: bool) -> List[Any]:
    if evalsha:
        return ["EVALSHA", sha, len(keys), *keys, *args]
    return ["EVAL", text, len(keys), *keys, *args]


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class ReplicaWrites:
    """Runs the writes of one store or counter on a redis-py client (sync), each followed
    by ``WAIT`` on its own connection when the deployment has replicas to wait for.

    At first use it resolves the wait by the core's rule (``ReplicaWait::resolve``): the
    URL's ``replicas=N`` (``configured``), else every replica ``ROLE`` lists as connected,
    or the server's ``min-replicas-to-write`` (``CONFIG GET``; refused: 0) if that is more;
    the timeout is half of ``timeout_s``. A server that refuses ``ROLE`` has no replicas to
    wait for; a failed transport fails the call and the next one asks again.

    With a wait, the script (``EVALSHA``, ``EVAL`` after ``NOSCRIPT``) and ``WAIT`` go out
    as one non-transactional pipeline on one connection — ``WAIT`` counts the replicas that
    acknowledged *that connection's* last write. On a Cluster the pipeline runs on the
    connection of the primary that owns the key's slot; ``MOVED``/``ASK`` refreshes the
    slot map and the call is tried once more. Too few acknowledgements raise ``error``
    with the core's message: nothing may be issued from that write."""

    def __init__(self, client: Any, configured: Optional[int], timeout_s: float, error: Type[Exception] = StoreError):
        self.client = client
        self._wait = _Wait(configured, timeout_s, error)
        self._cluster = is_cluster(client)
        self._lock = threading.Lock()

    @property
    def wait(self) -> Optional[Tuple[int, int]]:
        """``(replicas, timeout_ms)`` once resolved (``None`` before the first write)."""
        return self._wait.resolved

    def _conn(self, key: Any) -> Any:
        """The client whose connection holds ``key``: the node's on a Cluster."""
        return node_client(self.client, key) if self._cluster else self.client

    def _resolve(self, conn: Any) -> Tuple[int, int]:
        with self._lock:
            if self._wait.resolved is not None:
                return self._wait.resolved
            answers: List[Any] = []
            for command in (("ROLE",), ("CONFIG", "GET", "min-replicas-to-write")):
                try:
                    answers.append(conn.execute_command(*command))
                except Exception as e:
                    if not _refused(e):
                        raise
                    answers.append(e)
            return self._wait.resolve(*answers)

    def run(self, what: str, script: str, keys: Sequence[Any], args: Sequence[Any], plain: Callable[[], Any]) -> Any:
        """The write ``script`` on ``keys`` with ``args`` (``what`` names it in the error);
        ``plain()`` runs it the ordinary way when there is nothing to wait for."""
        for attempt in range(2):
            try:
                conn = self._conn(keys[0])
                replicas, timeout_ms = self._resolve(conn)
                if not replicas:
                    return plain()
                value, acked = self._pipelined(conn, script, keys, args, replicas, timeout_ms)
            except Exception as e:
                if self._cluster and (_redirected(e) or not _refused(e)):
                    refresh_slots(self.client)
                    if attempt == 0 and _redirected(e):
                        continue
                raise
            self._wait.check(what, acked)
            return value
        raise AssertionError("unreachable")

    @staticmethod
    def _pipelined(
        conn: Any, script: str, keys: Sequence[Any], args: Sequence[Any], replicas: int, timeout_ms: int
    ) -> Tuple[Any, Any]:
        sha = _sha(script)
        for evalsha in (True, False):
            pipe = conn.pipeline(transaction=False)
            pipe.execute_command(*_commands(sha, script, keys, args, evalsha))
            pipe.execute_command("WAIT", replicas, timeout_ms)
            value, acked = pipe.execute(raise_on_error=False)
            if isinstance(value, Exception):
                if evalsha and _no_script(value):
                    continue
                raise value
            if isinstance(acked, Exception):
                raise acked
            return value, acked
        raise AssertionError("unreachable")


class AsyncReplicaWrites:
    """:class:`ReplicaWrites` for a ``redis.asyncio`` client. On a Cluster, the pipeline
    runs on a client of the slot's primary made from that node's connection settings (one
    per node, closed by :meth:`aclose`)."""

    def __init__(self, client: Any, configured: Optional[int], timeout_s: float, error: Type[Exception] = StoreError):
        self.client = client
        self._wait = _Wait(configured, timeout_s, error)
        self._cluster = is_cluster(client)
        self._nodes = AsyncNodeClients()
        self._lock: Any = None

    @property
    def wait(self) -> Optional[Tuple[int, int]]:
        """``(replicas, timeout_ms)`` once resolved (``None`` before the first write)."""
        return self._wait.resolved

    async def _conn(self, key: Any) -> Any:
        return await self._nodes.for_key(self.client, key) if self._cluster else self.client

    async def _resolve(self, conn: Any) -> Tuple[int, int]:
        import asyncio

        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._wait.resolved is not None:
                return self._wait.resolved
            answers: List[Any] = []
            for command in (("ROLE",), ("CONFIG", "GET", "min-replicas-to-write")):
                try:
                    answers.append(await conn.execute_command(*command))
                except Exception as e:
                    if not _refused(e):
                        raise
                    answers.append(e)
            return self._wait.resolve(*answers)

    async def run(
        self, what: str, script: str, keys: Sequence[Any], args: Sequence[Any], plain: Callable[[], Any]
    ) -> Any:
        """As :meth:`ReplicaWrites.run`; ``plain()`` returns an awaitable."""
        for attempt in range(2):
            try:
                conn = await self._conn(keys[0])
                replicas, timeout_ms = await self._resolve(conn)
                if not replicas:
                    return await plain()
                value, acked = await self._pipelined(conn, script, keys, args, replicas, timeout_ms)
            except Exception as e:
                if self._cluster and (_redirected(e) or not _refused(e)):
                    await self._nodes.refresh(self.client)
                    if attempt == 0 and _redirected(e):
                        continue
                raise
            self._wait.check(what, acked)
            return value
        raise AssertionError("unreachable")

    @staticmethod
    async def _pipelined(
        conn: Any, script: str, keys: Sequence[Any], args: Sequence[Any], replicas: int, timeout_ms: int
    ) -> Tuple[Any, Any]:
        sha = _sha(script)
        for evalsha in (True, False):
            pipe = conn.pipeline(transaction=False)
            pipe.execute_command(*_commands(sha, script, keys, args, evalsha))
            pipe.execute_command("WAIT", replicas, timeout_ms)
            value, acked = await pipe.execute(raise_on_error=False)
            if isinstance(value, Exception):
                if evalsha and _no_script(value):
                    continue
                raise value
            if isinstance(acked, Exception):
                raise acked
            return value, acked
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        """Closes the per-node clients (a Cluster's)."""
        await self._nodes.aclose()
