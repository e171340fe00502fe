"""ZooKeeperRegistry's answers over an in-memory ZooKeeper (the subset of kazoo's client
it uses, with ZooKeeper's versions, multi-op results and server-side write times): the
claim's record for the Leaf-node check, the fresh flag, renewals that find the nodes
gone; and the core's scripted conversations (tests/vectors/zookeeper.json) replayed
against the adapter. The real server runs in tests/scenarios (registries.py)."""

from __future__ import annotations

import importlib
import json
import sys
import threading
import time
import types
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

import segflake
from conftest import load_vectors

ROOT = "/snowflake/test"
FOREVER = f"{ROOT}/forever"


def _exceptions_module() -> Any:
    """kazoo's exceptions when kazoo is installed, else stand-ins with the same names."""
    try:
        return importlib.import_module("kazoo.exceptions")
    except ImportError:
        pass
    mod = types.ModuleType("kazoo.exceptions")
    base = type("KazooException", (Exception,), {})
    zk_error = type("ZookeeperError", (base,), {})
    mod.KazooException = base  # type: ignore[attr-defined]
    mod.ZookeeperError = zk_error  # type: ignore[attr-defined]
    for name in ("NodeExistsError", "NoNodeError", "BadVersionError", "RolledBackError", "RuntimeInconsistency",
                 "ConnectionLoss", "SessionExpiredError", "ConnectionClosedError"):
        setattr(mod, name, type(name, (zk_error,), {}))
    return mod


@pytest.fixture
def kazoo_errors(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    errors = _exceptions_module()
    if "kazoo.client" not in sys.modules:
        try:
            importlib.import_module("kazoo.client")
        except ImportError:
            monkeypatch.setitem(sys.modules, "kazoo", types.ModuleType("kazoo"))
            monkeypatch.setitem(sys.modules, "kazoo.client", types.ModuleType("kazoo.client"))
            monkeypatch.setitem(sys.modules, "kazoo.exceptions", errors)
    yield errors


@dataclass(frozen=True)
class Stat:
    version: int
    ctime: int
    mtime: int
    ephemeralOwner: int


class Done:
    """A finished kazoo async result."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        try:
            self.value, self.error = fn(), None
        except Exception as e:  # raised by get(), as kazoo does
            self.value, self.error = None, e

    def get(self, timeout: Optional[float] = None) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


class Server:
    """ZooKeeper's data tree; ``clock_ms`` is the server's clock (write times)."""

    def __init__(self, errors: Any) -> None:
        self.errors = errors
        self.lock = threading.RLock()
        self.nodes: Dict[str, Tuple[bytes, Stat]] = {"/": (b"", Stat(0, 0, 0, 0))}
        self.seq: Dict[str, int] = {}
        self.offset_ms = 0

    def clock_ms(self) -> int:
        return int(time.time() * 1000) + self.offset_ms

    def parent(self, path: str) -> str:
        return path.rsplit("/", 1)[0] or "/"

    def create(self, path: str, data: bytes, owner: int, sequence: bool = False, makepath: bool = False) -> str:
        with self.lock:
            parent = self.parent(path)
            if parent not in self.nodes:
                if not makepath:
                    raise self.errors.NoNodeError(parent)
                self.create(parent, b"", 0, makepath=True)
            if sequence:
                n = self.seq.get(parent, 0)
                self.seq[parent] = n + 1
                path = f"{path}{n:010d}"
            if path in self.nodes:
                raise self.errors.NodeExistsError(path)
            now = self.clock_ms()
            self.nodes[path] = (data, Stat(0, now, now, owner))
            return path

    def get(self, path: str) -> Tuple[bytes, Stat]:
        with self.lock:
            if path not in self.nodes:
                raise self.errors.NoNodeError(path)
            return self.nodes[path]

    def check_version(self, path: str, version: int) -> Stat:
        stat = self.get(path)[1]
        if version != -1 and version != stat.version:
            raise self.errors.BadVersionError(path)
        return stat

    def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        with self.lock:
            stat = self.check_version(path, version)
            new = replace(stat, version=stat.version + 1, mtime=self.clock_ms())
            self.nodes[path] = (data, new)
            return new

    def delete(self, path: str, version: int = -1) -> None:
        with self.lock:
            self.check_version(path, version)
            if any(p.startswith(path + "/") for p in self.nodes):
                raise self.errors.ZookeeperError(f"{path} has children")
            del self.nodes[path]

    def children(self, path: str) -> List[str]:
        with self.lock:
            self.get(path)
            return [p[len(path) + 1:] for p in self.nodes if self.parent(p) == path and p != path]

    def expire(self, session: int) -> None:
        with self.lock:
            for path in [p for p, (_, s) in self.nodes.items() if s.ephemeralOwner == session]:
                del self.nodes[path]


class Transaction:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.ops: List[Tuple[str, str, Any, int]] = []

    def set_data(self, path: str, data: bytes, version: int = -1) -> None:
        self.ops.append(("set", path, data, version))

    def delete(self, path: str, version: int = -1) -> None:
        self.ops.append(("delete", path, None, version))

    def commit_async(self) -> Done:
        def commit() -> List[Any]:
            s, errors = self.server, self.server.errors
            with s.lock:
                for i, (_, path, _, version) in enumerate(self.ops):
                    try:
                        s.check_version(path, version)
                    except Exception as e:
                        return [errors.RolledBackError()] * i + [e] + [errors.RuntimeInconsistency()] * (
                            len(self.ops) - i - 1
                        )
                out: List[Any] = []
                for op, path, data, version in self.ops:
                    if op == "set":
                        out.append(s.set(path, data, version))
                    else:
                        s.delete(path, version)
                        out.append(True)
                return out

        return Done(commit)


class Client:
    """A connected kazoo client of one session."""

    handler = types.SimpleNamespace(timeout_exception=type("KazooTimeoutError", (Exception,), {}))

    def __init__(self, server: Server, session: int) -> None:
        self.server = server
        self.client_id: Optional[Tuple[int, bytes]] = (session, b"")
        self.connected = True

    @property
    def session(self) -> int:
        assert self.client_id is not None
        return self.client_id[0]

    def ensure_path_async(self, path: str) -> Done:
        def ensure() -> bool:
            if path not in self.server.nodes:
                self.server.create(path, b"", 0, makepath=True)
            return True

        return Done(ensure)

    def get_children_async(self, path: str) -> Done:
        return Done(lambda: self.server.children(path))

    def get_async(self, path: str) -> Done:
        return Done(lambda: self.server.get(path))

    def exists_async(self, path: str) -> Done:
        return Done(lambda: self.server.nodes.get(path, (None, None))[1])

    def create_async(self, path: str, value: bytes = b"", ephemeral: bool = False, sequence: bool = False,
                     makepath: bool = False) -> Done:
        owner = self.session if ephemeral else 0
        return Done(lambda: self.server.create(path, value, owner, sequence=sequence, makepath=makepath))

    def set_async(self, path: str, value: bytes, version: int = -1) -> Done:
        return Done(lambda: self.server.set(path, value, version))

    def delete_async(self, path: str, version: int = -1) -> Done:
        return Done(lambda: self.server.delete(path, version))

    def transaction(self) -> Transaction:
        return Transaction(self.server)


def leaf_node(server: Server, ip: str, port: str, timestamp: int) -> str:
    """A Leaf node's forever znode, as Leaf's SnowflakeZookeeperHolder creates it."""
    data = json.dumps({"ip": ip, "port": port, "timestamp": timestamp}, separators=(",", ":")).encode()
    return server.create(f"{FOREVER}/{ip}:{port}-", data, 0, sequence=True, makepath=True)


def registry(server: Server, session: int, identity: str) -> Any:
    from segflake.registries import ZooKeeperRegistry

    return ZooKeeperRegistry(client=Client(server, session), root=ROOT, identity=identity)


def test_a_takeover_claim_answers_the_forever_nodes_record_and_never_writes_it(kazoo_errors: Any) -> None:
    server = Server(kazoo_errors)
    now = server.clock_ms()
    path = leaf_node(server, "10.0.0.9", "8080", now - 60_000)
    # Leaf's last report, 20 s ago by the server's clock.
    server.offset_ms = -20_000
    server.set(path, server.get(path)[0])
    server.offset_ms = 0
    version = server.get(path)[1].version
    r = registry(server, 1, "10.0.0.9:8080")
    got = r.claim(5, "web-1#0000000000000001", 3000)
    assert set(got) == {"worker_id", "mark_ms", "identity", "version", "age_ms"}
    assert got["worker_id"] == 0 and got["mark_ms"] == now - 60_000 + 3000
    assert got["identity"] == "10.0.0.9:8080" and got["version"] == version == 1
    assert 19_000 <= got["age_ms"] <= 21_000
    # The same claim again (the core's re-check one report period later): a fresh server
    # time from a write to this session's own ephemeral node, the forever node untouched.
    time.sleep(0.05)
    again = r.claim(0, "web-1#0000000000000001", 3000)
    assert again["version"] == version and again["age_ms"] >= got["age_ms"] + 40
    assert server.get(path)[1].version == version
    # Another owner of the identity is refused.
    assert registry(server, 2, "10.0.0.9:8080").claim(0, "web-1#0000000000000002", 3000) is None


def test_a_recently_written_forever_node_has_a_small_age(kazoo_errors: Any) -> None:
    server = Server(kazoo_errors)
    leaf_node(server, "10.0.0.9", "8080", server.clock_ms())
    got = registry(server, 1, "10.0.0.9:8080").claim(0, "a#1", 3000)
    assert got["version"] == 0 and 0 <= got["age_ms"] < 1000


def test_only_the_claim_that_created_the_forever_node_answers_mark_zero(kazoo_errors: Any) -> None:
    server = Server(kazoo_errors)
    a = registry(server, 1, "10.0.0.11:8080")
    b = registry(server, 2, "10.0.0.11:8080")
    # A creates the identity's forever node, then its session ends and B takes the
    # ephemeral node before A's new session claims again.
    assert a.claim(0, "a#1", 3000) == {"worker_id": 0, "mark_ms": 0}
    assert f"{FOREVER}/10.0.0.11:8080-0000000000" in server.nodes
    server.expire(1)
    a.client.client_id = (11, b"")
    assert b.claim(0, "b#2", 3000)["mark_ms"] > 0  # B did not create it: Leaf's timestamp
    assert a.claim(0, "a#1", 3000) is None
    mark = server.clock_ms() + 60_000
    assert b.renew(0, "b#2", 3000, mark, 0) == mark
    assert b.release(0, "b#2", mark + 10)
    # A's later claim reads the mark B left, not 0 from its stale "created it" flag.
    got = a.claim(0, "a#1", 3000)
    assert got["mark_ms"] == mark + 10 and got["identity"] == "10.0.0.11:8080"
    # A new identity's first claim: mark 0 and no record (nobody else ever wrote it).
    fresh = registry(server, 3, "10.0.0.12:8080")
    assert fresh.claim(7, "c#3", 3000) == {"worker_id": 1, "mark_ms": 0}


def test_renew_answers_lost_when_zookeeper_lost_the_nodes(kazoo_errors: Any) -> None:
    server = Server(kazoo_errors)
    path = leaf_node(server, "10.0.0.9", "8080", server.clock_ms() - 60_000)
    r = registry(server, 1, "10.0.0.9:8080")
    assert r.claim(0, "a#1", 3000)["worker_id"] == 0
    mark = server.clock_ms() + 5000
    assert r.renew(0, "a#1", 3000, mark, 1) == mark
    # This session's ephemeral node vanished while the session lives: lost (-1).
    server.delete(f"{ROOT}/leaf_temporary/0")
    assert r.renew(0, "a#1", 3000, mark + 1, 1) == -1
    # Claimed again: the forever node kept the mark.
    assert r.claim(0, "a#1", 3000)["mark_ms"] == mark
    # The forever node vanished: lost, and the next claim resolves a new worker ID that
    # nobody is known to have used (mark 0).
    server.delete(path)
    assert r.renew(0, "a#1", 3000, mark + 2, 1) == -1
    assert r.claim(0, "a#1", 3000) == {"worker_id": 1, "mark_ms": 0}
    # While the client reconnects (no session id yet) a renewal fails: the session, and the
    # lease, may well live, so it is not "another owner".
    client = r.client
    client.connected, saved = False, client.client_id
    client.client_id = None
    with pytest.raises(kazoo_errors.ConnectionLoss):
        r.renew(1, "a#1", 3000, mark, 1)
    client.connected, client.client_id = True, saved
    # A renewal after the session changed: the ephemeral node went with the expired
    # session, so ZooKeeper has no record of the lease (-1).
    server.expire(client.session)
    client.client_id = (99, b"")
    assert r.renew(1, "a#1", 3000, mark, 1) == -1
    # Another session's ephemeral node on the worker ID: held by someone else.
    server.create(f"{ROOT}/leaf_temporary/1", b'{"owner":"z#9","reported_ms":0}', 98)
    assert r.renew(1, "a#1", 3000, mark, 1) is None


def test_a_live_leaf_node_stops_the_start_with_leaf_node_alive(kazoo_errors: Any) -> None:
    server = Server(kazoo_errors)
    path = leaf_node(server, "10.0.0.9", "8080", server.clock_ms())
    stop = threading.Event()

    def leaf_reports() -> None:  # Leaf's ScheduledExecutorService, faster
        while not stop.wait(0.5):
            data = json.dumps({"ip": "10.0.0.9", "port": "8080", "timestamp": server.clock_ms()}).encode()
            server.set(path, data)

    t = threading.Thread(target=leaf_reports, daemon=True)
    t.start()
    started = time.monotonic()
    try:
        with pytest.raises(segflake.LeafNodeAliveError) as info:
            segflake.Snowflake.from_registry(registry(server, 1, "10.0.0.9:8080"), layout={"preset": "twitter"})
    finally:
        stop.set()
        t.join()
    err = info.value
    assert err.code == "LEAF_NODE_ALIVE" and err.identity == "10.0.0.9:8080" and err.worker_id == 0
    # The second look (the repeated claim that keeps the lease, a third of the mark's lead
    # after the first) saw the record changed.
    assert time.monotonic() - started >= 1.5
    # The claim was given back.
    assert f"{ROOT}/leaf_temporary/0" not in server.nodes


def _stat_of(reply: Optional[Dict[str, Any]]) -> Optional[Stat]:
    if reply is None:
        return None
    fields = ("version", "ctime", "mtime", "ephemeral_owner")
    return Stat(*(int(reply.get(f) or 0) for f in fields))


class Replay:
    """A kazoo client that plays one call's scripted exchange: each request must be the
    exchange's next ``op``, and is answered with its ``reply`` as kazoo answers (a return
    value, a ``ZnodeStat``, a raised exception, a transaction's list of results)."""

    handler = Client.handler
    connected = True

    def __init__(self, errors: Any) -> None:
        self.errors = errors
        self.client_id: Optional[Tuple[int, bytes]] = None
        self.script: List[Dict[str, Any]] = []

    def error(self, name: str) -> Exception:
        named = {"no_node": "NoNodeError", "node_exists": "NodeExistsError", "bad_version": "BadVersionError"}
        if name in named:
            return getattr(self.errors, named[name])()
        kind = self.errors.ConnectionLoss if name == "connection loss" else self.errors.ZookeeperError
        return kind(name)

    def request(self, op: Dict[str, Any], answer: Callable[[Any], Any]) -> Done:
        assert self.script, f"an unscripted request {op}"
        step = self.script.pop(0)
        assert op == step["op"], f"sent {op}, expected {step['op']}"
        reply = step["reply"]

        def result() -> Any:
            if isinstance(reply, dict) and "error" in reply and op["op"] != "multi":
                raise self.error(reply["error"])
            return answer(reply)

        return Done(result)

    def ensure_path_async(self, path: str) -> Done:
        return self.request({"op": "mkdir", "path": path}, lambda r: True)

    def create_async(self, path: str, value: bytes = b"", ephemeral: bool = False, sequence: bool = False,
                     makepath: bool = False) -> Done:
        assert not makepath
        mode = "ephemeral" if ephemeral else "persistent_sequential" if sequence else "persistent"
        op = {"op": "create", "path": path, "data": value.decode(), "mode": mode}
        return self.request(op, lambda r: r["created"])

    def exists_async(self, path: str) -> Done:
        return self.request({"op": "exists", "path": path}, lambda r: _stat_of(r["stat"]))

    def get_async(self, path: str) -> Done:
        return self.request({"op": "get", "path": path}, lambda r: (r["data"].encode(), _stat_of(r["stat"])))

    def get_children_async(self, path: str) -> Done:
        return self.request({"op": "children", "path": path}, lambda r: list(r["children"]))

    def set_async(self, path: str, value: bytes, version: int = -1) -> Done:
        op = {"op": "set", "path": path, "data": value.decode(), "version": version}
        return self.request(op, lambda r: _stat_of(r["stat"]))

    def delete_async(self, path: str, version: int = -1) -> Done:
        return self.request({"op": "delete", "path": path, "version": version}, lambda r: True)

    def transaction(self) -> "ReplayTransaction":
        return ReplayTransaction(self)


class ReplayTransaction:
    def __init__(self, client: Replay) -> None:
        self.client = client
        self.ops: List[Dict[str, Any]] = []

    def set_data(self, path: str, value: bytes, version: int = -1) -> None:
        self.ops.append({"op": "set", "path": path, "data": value.decode(), "version": version})

    def delete(self, path: str, version: int = -1) -> None:
        self.ops.append({"op": "delete", "path": path, "version": version})

    def commit_async(self) -> Done:
        errors, n = self.client.errors, len(self.ops)

        def results(reply: Optional[Dict[str, Any]]) -> List[Any]:
            if reply is None:
                return [Stat(1, 0, 0, 0) if op["op"] == "set" else True for op in self.ops]
            i = reply.get("index", 0)
            failed = self.client.error(reply["error"])
            return [errors.RolledBackError()] * i + [failed] + [errors.RuntimeInconsistency()] * (n - i - 1)

        return self.client.request({"op": "multi", "ops": self.ops}, results)


def test_every_scripted_conversation_of_the_core_is_what_the_adapter_sends(
    kazoo_errors: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tests/vectors/zookeeper.json against ZooKeeperRegistry itself: it sends exactly the
    requests the core decides, hands back kazoo's answers, and answers what the core does."""
    from segflake import registries

    doc = load_vectors("zookeeper.json")
    assert len(doc["cases"]) >= 10
    for case in doc["cases"]:
        client = Replay(kazoo_errors)
        r = registries.ZooKeeperRegistry(client=client, root=doc["root"], identity=doc["identity"])
        assert r.identity == doc["identity"]
        for n, call in enumerate(case["calls"]):
            where = f"{case['name']}, call {n} ({call['call']})"
            client.client_id = (call["session"], b"")
            client.script = list(call["exchange"])
            now = (call["now_ms"] + 0.5) / 1000
            monkeypatch.setattr(registries, "time", types.SimpleNamespace(time=lambda: now))
            method = getattr(r, call["call"])
            if "error_contains" in call:
                with pytest.raises(Exception) as info:
                    method(*call["args"])
                assert call["error_contains"] in str(info.value), (where, info.value)
                unreachable = any(x["reply"] == {"error": "connection loss", "index": 0} for x in call["exchange"])
                assert isinstance(info.value, kazoo_errors.ConnectionLoss if unreachable else RuntimeError), where
            else:
                got = method(*call["args"])
                assert json.loads(json.dumps(got)) == call["answer"], (where, got)
            assert not client.script, (where, "requests left unsent", client.script)
