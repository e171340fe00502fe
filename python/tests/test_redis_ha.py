"""Replicated Redis: the URL spellings (a server, Sentinel, Cluster) and the replica wait
after every write segflake issues from (segment allocate and give back, serial counts).

Small fakes check what goes on which connection; real servers (a primary with a replica,
and a Sentinel set) check that a write the replicas did not acknowledge fails and that a
store follows a failover."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

import segflake
from segflake import _native
from segflake.counters import AsyncRedisSerialCounter, RedisSerialCounter
from segflake.registries import RedisRegistry
from segflake.stores import AsyncRedisStore, RedisStore
from segflake.stores._redis_client import ReplicaWrites, redis_target


def core_message(what: str, replicas: int, timeout_ms: int, acked: int) -> str:
    message = _native._replica_wait_check(replicas, timeout_ms, what, acked)
    assert message is not None
    return message


# --- fakes ------------------------------------------------------------------------------


class ResponseError(Exception):
    """An error reply, as redis-py names it."""


class NoScriptError(ResponseError):
    pass


class AskError(ResponseError):
    pass


class MovedError(AskError):
    """As redis-py raises it: the reply without its first word."""


class Server:
    """One Redis server's data and its answers to what segflake sends: the scripts run as
    plain Python (INCRBY of a key that must exist; the give back's compare-and-set; the
    serial counter's count), ``WAIT`` answers ``acks``."""

    def __init__(self, name: str = "s", replicas: int = 1, min_replicas: Optional[str] = "0") -> None:
        self.name = name
        self.data: Dict[str, int] = {}
        self.scripts: Dict[str, str] = {}
        self.replicas = replicas
        self.min_replicas = min_replicas
        self.acks = replicas
        self.moved = False
        #: Every pipeline sent: the list of its commands (one connection each).
        self.pipelines: List[List[Tuple[Any, ...]]] = []
        self.commands: List[Tuple[Any, ...]] = []

    def command(self, args: Tuple[Any, ...]) -> Any:
        self.commands.append(args)
        name = str(args[0]).upper()
        if name == "ROLE":
            return [b"master", 7, [[b"127.0.0.1", b"7001", b"7"]] * self.replicas]
        if name == "CONFIG":
            if self.min_replicas is None:
                raise ResponseError("ERR unknown command 'CONFIG'")
            return {"min-replicas-to-write": self.min_replicas}
        if name == "WAIT":
            return self.acks
        if self.moved:
            return MovedError("1234 127.0.0.1:7002")
        if name == "EVALSHA":
            text = self.scripts.get(args[1])
            if text is None:
                return NoScriptError("No matching script. Please use EVAL.")
        else:
            assert name == "EVAL", args
            text = args[1]
            import hashlib

            self.scripts[hashlib.sha1(text.encode()).hexdigest()] = text
        nkeys = int(args[2])
        keys, argv = list(args[3 : 3 + nkeys]), list(args[3 + nkeys :])
        return self.run(text, keys, argv)

    def run(self, text: str, keys: List[str], argv: List[Any]) -> Any:
        if "INCRBY" in text and "given_back" not in keys[-1]:
            if keys[0] not in self.data:
                return ResponseError("NOTAG")
            self.data[keys[0]] += int(argv[0])
            return self.data[keys[0]]
        if len(keys) == 2:  # the give back
            if self.data.get(keys[0]) != int(argv[0]):
                return 0
            self.data[keys[0]] = int(argv[1])
            return 1
        self.data[keys[0]] = self.data.get(keys[0], 0) + 1  # the serial count
        return [1, self.data[keys[0]], int(argv[0]) * 1000]


class Pipe:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.queued: List[Tuple[Any, ...]] = []

    def execute_command(self, *args: Any) -> "Pipe":
        self.queued.append(args)
        return self

    def execute(self, raise_on_error: bool = True) -> List[Any]:
        assert not raise_on_error, "errors are read from the replies"
        self.server.pipelines.append(self.queued)
        return [self.server.command(c) for c in self.queued]


class FakeRedis:
    """The part of a ``redis.Redis`` the stores and counters use, on one server."""

    def __init__(self, server: Server) -> None:
        self.server = server

    def execute_command(self, *args: Any) -> Any:
        reply = self.server.command(args)
        if isinstance(reply, Exception):
            raise reply
        return reply

    def pipeline(self, transaction: bool = True) -> Pipe:
        assert transaction is False, "a non-transactional pipeline: WAIT cannot run in MULTI"
        return Pipe(self.server)

    def register_script(self, text: str) -> Callable[..., Any]:
        def plain(keys: List[str], args: List[Any]) -> Any:
            self.server.commands.append(("script", *keys))
            reply = self.server.run(text, list(keys), list(args))
            if isinstance(reply, Exception):
                raise reply
            return reply

        return plain

    def set(self, key: str, value: Any, nx: bool = False) -> bool:
        if nx and key in self.server.data:
            return False
        self.server.data[key] = int(value)
        return True

    def get(self, key: str) -> Any:
        return None

    def close(self) -> None:
        pass


class AsyncFakeRedis(FakeRedis):
    """:class:`FakeRedis` as ``redis.asyncio`` answers: coroutines."""

    async def execute_command(self, *args: Any) -> Any:  # type: ignore[override]
        return FakeRedis.execute_command(self, *args)

    def pipeline(self, transaction: bool = True) -> Any:
        pipe = FakeRedis.pipeline(self, transaction)

        class AsyncPipe:
            def execute_command(self, *args: Any) -> Any:
                return pipe.execute_command(*args)

            async def execute(self, raise_on_error: bool = True) -> List[Any]:
                return pipe.execute(raise_on_error)

        return AsyncPipe()

    def register_script(self, text: str) -> Callable[..., Any]:
        sync = FakeRedis.register_script(self, text)

        async def plain(keys: List[str], args: List[Any]) -> Any:
            return sync(keys, args)

        return plain

    async def set(self, key: str, value: Any, nx: bool = False) -> bool:  # type: ignore[override]
        return FakeRedis.set(self, key, value, nx)

    async def get(self, key: str) -> Any:
        return None

    async def aclose(self) -> None:
        pass


class Node:
    def __init__(self, name: str) -> None:
        self.name = name


class FakeCluster:
    """The part of a ``redis.cluster.RedisCluster`` used to route: the slot map (which node
    holds a key) and a client per node; ``initialize`` reads the map again."""

    def __init__(self, servers: Dict[str, Server], owner: str) -> None:
        self.servers = servers
        self.clients = {name: FakeRedis(s) for name, s in servers.items()}
        self.owner = owner  # the node holding every key's slot in this map
        self.next_owner = owner
        self.refreshes = 0
        self.nodes_manager = self

    def initialize(self) -> None:
        self.refreshes += 1
        self.owner = self.next_owner

    def get_node_from_key(self, key: str) -> Node:
        return Node(self.owner)

    def get_redis_connection(self, node: Node) -> FakeRedis:
        return self.clients[node.name]

    def register_script(self, text: str) -> Callable[..., Any]:
        return lambda keys, args: self.clients[self.owner].register_script(text)(keys, args)

    def set(self, key: str, value: Any, nx: bool = False) -> bool:
        return self.clients[self.owner].set(key, value, nx)

    def get(self, key: str) -> Any:
        return None


# --- the wait, with fakes -----------------------------------------------------------------


def test_each_write_and_its_wait_share_one_connection_and_short_acks_issue_nothing() -> None:
    server = Server(replicas=2)
    store = RedisStore(client=FakeRedis(server), socket_timeout=2.0)
    store.ensure_tag("order")
    assert store.allocate("order", 100) == (101, 100)
    # Resolved at first use from the server: ROLE lists 2 replicas, min-replicas-to-write
    # is unset, so both (the core's rule), within half the socket timeout.
    assert store._writes.wait == (2, 1000)
    assert [c[0] for c in server.commands[:2]] == ["ROLE", "CONFIG"]
    # The script was unknown (NOSCRIPT), so EVAL followed; each with WAIT in one pipeline.
    assert [[c[0] for c in p] for p in server.pipelines] == [["EVALSHA", "WAIT"], ["EVAL", "WAIT"]]
    assert server.pipelines[-1][1] == ("WAIT", 2, 1000)
    assert store.allocate("order", 100) == (201, 100)
    assert [c[0] for c in server.pipelines[-1]] == ["EVALSHA", "WAIT"]

    server.acks = 1
    with pytest.raises(segflake.StoreError) as info:
        store.allocate("order", 100)
    assert str(info.value) == core_message("the allocation for tag 'order'", 2, 1000, 1)
    # Behind a generator: the allocation no replica has is never issued from.
    with segflake.SegmentGenerator(store, step=100, wait_timeout_ms=300) as gen:
        with pytest.raises(segflake.SegmentsExhaustedError) as exhausted:
            gen.next_id("order")
        assert "reached 1 of the 2 replica(s)" in str(exhausted.value)
    server.acks = 2
    with segflake.SegmentGenerator(store, step=100) as gen:
        first = gen.next_id("order")
    assert first > 301, "ranges the replicas never acknowledged are skipped, not reissued"

    # The give back waits too.
    top = server.data["segflake:leaf_alloc:order"]
    server.acks = 0
    with pytest.raises(segflake.StoreError, match="the give back for tag 'order' reached 0 of the 2"):
        store.give_back("order", top, top - 50)
    server.acks = 2
    assert store.give_back("order", server.data["segflake:leaf_alloc:order"], 5000) is False
    assert [c[0] for c in server.pipelines[-1]] == ["EVALSHA", "WAIT"]


def test_the_wait_follows_the_url_then_the_servers_settings() -> None:
    # min-replicas-to-write, the operator's own bound, wins when it asks for more than ROLE lists.
    server = Server(replicas=1, min_replicas="2")
    server.acks = 2
    store = RedisStore(client=FakeRedis(server))
    store.ensure_tag("t")
    store.allocate("t", 10)
    assert store._writes.wait == (2, 2500) and server.pipelines[-1][1] == ("WAIT", 2, 2500)
    # Otherwise every replica ROLE lists.
    server = Server(replicas=3, min_replicas="2")
    store = RedisStore(client=FakeRedis(server))
    store.ensure_tag("t")
    store.allocate("t", 10)
    assert store._writes.wait == (3, 2500) and server.pipelines[-1][1] == ("WAIT", 3, 2500)
    # A primary without replicas (and CONFIG refused, as managed services do): no WAIT.
    bare = Server(replicas=0, min_replicas=None)
    store = RedisStore(client=FakeRedis(bare))
    store.ensure_tag("t")
    assert store.allocate("t", 10) == (11, 10)
    assert store._writes.wait == (0, 2500) and bare.pipelines == []
    # A given count (the URL's replicas=N) is not asked of the server; 0 turns the wait off.
    for configured, pipelined in ((2, True), (0, False)):
        server = Server(replicas=1)
        server.acks = 2
        writes = ReplicaWrites(FakeRedis(server), configured, 1.0)
        server.data["k"] = 1
        assert writes.run("the write", "return redis.call('INCRBY', KEYS[1], ARGV[1])", ["k"], [1], lambda: 0) in (0, 2)
        assert not any(c[0] == "ROLE" for c in server.commands)
        assert bool(server.pipelines) == pipelined
    assert redis_target("redis+sentinel://a:1,b/orders/2?replicas=2")["replicas"] == 2
    # A ROLE lost to the network is no answer: the next write asks again.
    server = Server(replicas=1)
    client = FakeRedis(server)
    calls = {"n": 0}
    real = client.execute_command

    def flaky(*args: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionError("Connection reset by peer")
        return real(*args)

    client.execute_command = flaky  # type: ignore[method-assign]
    store = RedisStore(client=client)
    store.ensure_tag("t")
    with pytest.raises(ConnectionError):
        store.allocate("t", 10)
    assert store._writes.wait is None
    store.allocate("t", 10)
    assert store._writes.wait == (1, 2500)


def test_serial_counts_wait_for_the_replicas() -> None:
    server = Server(replicas=1)
    counter = RedisSerialCounter(client=FakeRedis(server), prefix="p", socket_timeout=1.0)
    gen = segflake.SerialGenerator(counter=counter, sequence_digits=4)
    assert gen.next() > 0
    assert [c[0] for c in server.pipelines[-1]] == ["EVAL", "WAIT"]
    assert str(server.pipelines[-1][0][3]).startswith("p:serial:")
    server.acks = 0
    with pytest.raises(segflake.StoreError) as info:
        gen.next()
    assert "the count of 'p:serial:" in str(info.value) and "reached 0 of the 1 replica(s)" in str(info.value)


def test_asyncio_stores_and_counters_wait_on_the_same_connection() -> None:
    async def main() -> None:
        server = Server(replicas=1)
        store = AsyncRedisStore(client=AsyncFakeRedis(server), socket_timeout=2.0)
        await store.ensure_tag("t")
        assert await store.allocate("t", 10) == (11, 10)
        assert [[c[0] for c in p] for p in server.pipelines] == [["EVALSHA", "WAIT"], ["EVAL", "WAIT"]]
        server.acks = 0
        with pytest.raises(segflake.StoreError) as info:
            await store.allocate("t", 10)
        assert str(info.value) == core_message("the allocation for tag 't'", 1, 1000, 0)
        counter = AsyncRedisSerialCounter(client=AsyncFakeRedis(server), socket_timeout=2.0)
        with pytest.raises(segflake.StoreError, match="reached 0 of the 1 replica"):
            await counter.run_serial_script("serial:1", [1, 2, 3, 4])
        server.acks = 1
        assert (await counter.run_serial_script("serial:1", [1, 2, 3, 4]))[0] == 1
        await store.aclose()

    asyncio.run(main())


def test_on_a_cluster_the_write_and_its_wait_go_to_the_keys_primary() -> None:
    servers = {name: Server(name) for name in ("a", "b", "c")}
    cluster = FakeCluster(servers, owner="b")
    store = RedisStore(client=cluster)
    store.ensure_tag("order")
    assert store.allocate("order", 100) == (101, 100)
    assert servers["a"].commands == [] and servers["c"].commands == []
    assert [c[0] for c in servers["b"].commands[:2]] == ["ROLE", "CONFIG"], "resolved on the key's node"
    assert all([c[0] for c in p][-1] == "WAIT" and len(p) == 2 for p in servers["b"].pipelines)
    # The slot moved (a failover): MOVED reads the slot map again and the write goes to
    # the new owner, with its WAIT.
    servers["c"].data = dict(servers["b"].data)
    servers["b"].moved = True
    cluster.next_owner = "c"
    assert store.allocate("order", 100) == (201, 100)
    assert cluster.refreshes == 1
    assert [c[0] for c in servers["c"].pipelines[-1]] == ["EVAL", "WAIT"]
    assert "order" in str(servers["c"].pipelines[-1][0])


def test_the_registry_hands_the_urls_replica_count_to_the_lease_protocol() -> None:
    from segflake.registries import redis_protocol_config

    assert redis_protocol_config("p", 3.0, "redis+sentinel://h/m?replicas=2") == {
        "prefix": "p", "wait_ms": 1500, "replicas": 2,
    }
    assert "replicas" not in redis_protocol_config("p", 3.0, "redis://h")
    assert "replicas" not in redis_protocol_config("p", 3.0, None)
    for url, first in (("redis://h?replicas=2", "eval"), ("redis://h", "role")):
        protocol = _native._RegistryProtocol("redis", redis_protocol_config("p", 3.0, url))
        step = protocol.start("renew", [3, "o#1", 1000, 5, 5])
        assert step["op"] == first, step
        if first == "eval":
            assert step["wait"] == {"replicas": 2, "timeout_ms": 1500}


# --- the URL spellings ---------------------------------------------------------------------


def test_every_redis_class_takes_the_cores_urls_and_refuses_bad_ones() -> None:
    for make in (RedisStore, RedisSerialCounter, RedisRegistry, AsyncRedisStore, AsyncRedisSerialCounter):
        with pytest.raises(segflake.InvalidArgumentError) as info:
            make("redis://a:1,b:2")  # type: ignore[operator]
        assert "names one server" in str(info.value) and "redis+sentinel://" in str(info.value)
    with pytest.raises(ValueError, match="names the monitored primary"):
        RedisStore("redis+sentinel://127.0.0.1:26379")
    with pytest.raises(ValueError, match=r"\"timeout\" is not taken"):
        RedisStore("redis://127.0.0.1?timeout=5")
    redis = pytest.importorskip("redis")
    sentinel = RedisStore("redis+sentinel://127.0.0.1:1,127.0.0.1:2/orders/3?replicas=2", socket_timeout=0.5)
    pool = sentinel.client.connection_pool
    assert type(pool).__name__ == "SentinelConnectionPool" and pool.service_name == "orders"
    assert [s.connection_pool.connection_kwargs["port"] for s in pool.sentinel_manager.sentinels] == [1, 2]
    assert pool.connection_kwargs["db"] == 3 and sentinel._writes.wait == (2, 250)
    plain = RedisStore("redis://:pw@127.0.0.1:7/2?replicas=0")
    kwargs = plain.client.connection_pool.connection_kwargs
    assert (kwargs["port"], kwargs["db"], kwargs["password"]) == (7, 2, "pw")
    assert isinstance(plain.client, redis.Redis)


# --- real servers ----------------------------------------------------------------------------

REDIS_SERVER = shutil.which("redis-server")
needs_servers = pytest.mark.skipif(
    REDIS_SERVER is None or __import__("importlib").util.find_spec("redis") is None,
    reason="needs redis-server and redis-py (scripts/test-python.sh installs both)",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_cluster_port() -> int:
    """A free port whose Cluster bus port (+10000) is free too."""
    import random

    while True:
        port = random.randrange(20000, 50000)
        try:
            for p in (port, port + 10000):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
            return port
        except OSError:
            continue


def until(what: str, check: Callable[[], Any], timeout: float = 10.0) -> Any:
    """``check()``'s first true answer (exceptions count as false), polled until ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            got = check()
            if got:
                return got
        except Exception as e:
            last = e
        time.sleep(0.02)
    raise AssertionError(f"{what}: not within {timeout} s (last error: {last!r})")


class Servers:
    """redis-server processes on 127.0.0.1 free ports, killed at the end."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: Dict[int, subprocess.Popen[bytes]] = {}

    def server(self, *extra: str) -> int:
        port = free_port()
        args = [str(REDIS_SERVER), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--repl-diskless-sync-delay", "0", "--dir", str(self.tmp), "--dbfilename", f"{port}.rdb", *extra]
        self.procs[port] = subprocess.Popen(args, stdout=subprocess.DEVNULL)
        return port

    def cluster_node(self, port: Optional[int] = None) -> int:
        """A Cluster node (its bus on port + 10000); ``port``: start that node again."""
        if port is None:
            port = free_cluster_port()
        args = [str(REDIS_SERVER), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--repl-diskless-sync-delay", "0", "--dir", str(self.tmp), "--dbfilename", f"{port}.rdb",
                "--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf",
                "--cluster-node-timeout", "1000"]
        self.procs[port] = subprocess.Popen(args, stdout=subprocess.DEVNULL)
        return port

    def sentinel(self, primary: int) -> int:
        port = free_port()
        conf = self.tmp / f"sentinel-{port}.conf"
        conf.write_text(
            f"port {port}\nbind 127.0.0.1\ndir {self.tmp}\n"
            f"sentinel monitor m 127.0.0.1 {primary} 1\n"
            "sentinel down-after-milliseconds m 1000\nsentinel failover-timeout m 5000\n"
        )
        self.procs[port] = subprocess.Popen([str(REDIS_SERVER), str(conf), "--sentinel"], stdout=subprocess.DEVNULL)
        return port

    def signal(self, port: int, sig: int) -> None:
        self.procs[port].send_signal(sig)

    def kill(self, port: int) -> None:
        proc = self.procs.pop(port)
        proc.kill()
        proc.wait()

    def close(self) -> None:
        for proc in self.procs.values():
            proc.send_signal(signal.SIGCONT)
            proc.kill()
        for proc in self.procs.values():
            proc.wait()


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    s = Servers(tmp_path)
    try:
        yield s
    finally:
        s.close()


def replicas_online(port: int, n: int) -> bool:
    import redis

    info = redis.Redis(port=port, socket_timeout=1).info("replication")
    return [info.get(f"slave{i}", {}).get("state") for i in range(n)] == ["online"] * n


@needs_servers
def test_a_write_the_frozen_replica_never_acknowledged_fails_with_the_cores_message(servers: Servers) -> None:
    primary = servers.server()
    replica = servers.server("--replicaof", "127.0.0.1", str(primary))
    until("the replica in sync", lambda: replicas_online(primary, 1))
    url = f"redis://127.0.0.1:{primary}/0"
    store = RedisStore(url, socket_timeout=2.0)
    store.ensure_tag("order")
    assert store.allocate("order", 100) == (101, 100)
    assert store._writes.wait == (1, 1000), "one replica, resolved from ROLE"
    gen = segflake.SerialGenerator(counter=RedisSerialCounter(url, socket_timeout=2.0), sequence_digits=4)
    assert gen.next() > 0
    unwaited = RedisStore(url + "?replicas=0", socket_timeout=2.0)

    servers.signal(replica, signal.SIGSTOP)
    started = time.monotonic()
    with pytest.raises(segflake.StoreError) as info:
        store.allocate("order", 100)
    took = time.monotonic() - started
    assert str(info.value) == core_message("the allocation for tag 'order'", 1, 1000, 0)
    assert 0.9 <= took < 2.0, f"failed after {took:.2f} s, not within the timeout"
    with pytest.raises(segflake.StoreError, match="reached 0 of the 1 replica"):
        gen.next()

    async def async_allocation() -> None:
        async with AsyncRedisStore(url, socket_timeout=2.0) as store:
            with pytest.raises(segflake.StoreError) as info:
                await store.allocate("order", 100)
            assert "the allocation for tag 'order' reached 0 of the 1 replica(s)" in str(info.value)

    asyncio.run(async_allocation())
    # replicas=0 turns the wait off: the same server takes the write with the replica frozen.
    assert unwaited.allocate("order", 100) == (401, 100), "201 and 301 were taken by the writes that failed"

    servers.signal(replica, signal.SIGCONT)
    max_id, step = until("writes again", lambda: store.allocate("order", 100))
    assert step == 100 and max_id >= 501 and max_id % 100 == 1
    assert gen.next() > 0


@needs_servers
def test_a_sentinel_store_keeps_allocating_after_the_primary_is_killed(servers: Servers) -> None:
    # Two replicas, and the URL asks for one (replicas=1: available through a failover,
    # which the default, every replica, is not until the killed server rejoins).
    primary = servers.server()
    for _ in range(2):
        servers.server("--replicaof", "127.0.0.1", str(primary))
    until("both replicas in sync", lambda: replicas_online(primary, 2))
    sentinel = servers.sentinel(primary)
    import redis

    until("the sentinel sees both replicas", lambda: len(redis.Redis(port=sentinel).sentinel_slaves("m")) == 2)
    default = RedisStore(f"redis+sentinel://127.0.0.1:{sentinel}/m", socket_timeout=2.0)
    default.ensure_tag("order")
    assert default.allocate("order", 100) == (101, 100) and default._writes.wait == (2, 1000)
    store = RedisStore(f"redis+sentinel://127.0.0.1:{sentinel}/m?replicas=1", socket_timeout=2.0)
    before = [store.allocate("order", 100) for _ in range(2)]
    assert before == [(201, 100), (301, 100)] and store._writes.wait == (1, 1000)

    servers.kill(primary)
    killed = time.monotonic()
    failures: List[str] = []

    def allocate() -> Any:
        try:
            return store.allocate("order", 100)
        except Exception as e:
            failures.append(type(e).__name__)
            return None

    after = until("an allocation after the failover", allocate, timeout=12.0)
    recovery = time.monotonic() - killed
    print(f"sentinel failover: allocating again {recovery:.2f} s after kill -9 ({len(failures)} failed calls: "
          f"{sorted(set(failures))})")
    # Above every range handed out before (a write the new primary's replica had not
    # acknowledged yet may have taken 401: skipped, never issued).
    assert after[1] == 100 and after[0] >= 401, after
    new_primary = redis.Redis(port=sentinel).sentinel_get_master_addr_by_name("m")
    assert int(new_primary[1]) != primary
    assert [store.allocate("order", 100) for _ in range(2)] == [(after[0] + 100, 100), (after[0] + 200, 100)]

    async def async_allocation() -> Any:
        async with AsyncRedisStore(f"redis+sentinel://127.0.0.1:{sentinel}/m?replicas=1", socket_timeout=2.0) as store:
            return await store.allocate("order", 100)

    assert asyncio.run(async_allocation()) == (after[0] + 300, 100), "asyncio: the new primary too"


@needs_servers
@pytest.mark.timeout(300)  # its set-up waits, each bounded, may together pass the default 120 s
def test_a_cluster_store_writes_to_each_keys_primary_and_waits_for_its_replica(servers: Servers) -> None:
    import redis

    ports = [servers.cluster_node() for _ in range(6)]
    # Set-up waits are generous: a full resync of six nodes on a loaded 2-core machine (CI
    # runs the platform builds beside this suite) can take far longer than when idle.
    until("the nodes up", lambda: all(redis.Redis(port=p, socket_timeout=1).ping() for p in ports), timeout=60.0)
    subprocess.run(
        ["redis-cli", "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports], "--cluster-replicas", "1",
         "--cluster-yes"], check=True, stdout=subprocess.DEVNULL, timeout=20,
    )

    def primaries_with_replicas() -> int:
        infos = [redis.Redis(port=p, socket_timeout=1).info("replication") for p in ports if p in servers.procs]
        return sum(i["role"] == "master" and i.get("slave0", {}).get("state") == "online" for i in infos)

    until("three primaries, each with its replica in sync", lambda: primaries_with_replicas() == 3, timeout=60.0)

    def cluster_ok() -> bool:
        return all(b"cluster_state:ok" in redis.Redis(port=p, socket_timeout=1).execute_command("CLUSTER", "INFO")
                   for p in ports)

    until("every node sees the cluster up", cluster_ok, timeout=60.0)
    url = f"redis+cluster://127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}"
    store = RedisStore(url, socket_timeout=2.0)
    tags = ["a", "b", "c", "d", "e", "f"]
    for tag in tags:
        store.ensure_tag(tag)
        assert store.allocate(tag, 10) == (11, 10)
    assert store._writes.wait == (1, 1000)
    owners = {store.client.get_node_from_key(store.key(t)).port for t in tags}
    assert len(owners) >= 2, "the tags live on several primaries"
    gen = segflake.SerialGenerator(counter=RedisSerialCounter(url, socket_timeout=2.0), sequence_digits=4)
    assert gen.next() < gen.next()
    registry = RedisRegistry(url, check_durability=False)
    assert registry.claim(3, "o#1", 10_000) is not None
    now = int(time.time() * 1000)
    assert registry.renew(3, "o#1", 10_000, now + 5000, now) is not None
    assert registry.release(3, "o#1", now + 5000)

    # The primary of tag a dies: its replica is promoted and has no replica of its own, so
    # the wait fails every allocation of a (nothing issued) until the old node is back.
    victim = store.client.get_node_from_key(store.key("a")).port
    servers.kill(victim)

    def refused() -> bool:
        try:
            store.allocate("a", 10)
        except segflake.StoreError as e:
            return "reached 0 of the 1 replica(s)" in str(e)
        except Exception:
            return False
        raise AssertionError("an allocation no replica acknowledged was answered")

    until("the replica promoted", refused, timeout=30.0)
    servers.cluster_node(victim)
    max_id, step = until("allocating again once the old primary rejoined as a replica",
                         lambda: store.allocate("a", 10), timeout=30.0)
    assert step == 10 and max_id > 11 and max_id % 10 == 1
    assert store.client.get_node_from_key(store.key("a")).port != victim
