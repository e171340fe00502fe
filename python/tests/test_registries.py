"""The core's scripted registry conversations (tests/vectors/{redis,sql,etcd}.json) replayed
against RedisRegistry, PostgresRegistry, MySQLRegistry and EtcdRegistry themselves: each
fake client checks that every request the adapter sends is the conversation's next ``op``
and answers its ``reply`` the way the real client would (redis-py, psycopg, PyMySQL,
etcd3gw: return values, rows, raised errors). zookeeper.json runs in test_zookeeper.py; the
real servers run in tests/scenarios."""

from __future__ import annotations

import base64
import importlib
import json
import sys
import types
from decimal import Decimal
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

from conftest import load_vectors
from segflake import registries
from segflake.registries import statements


class Script:
    """One call's scripted exchange: ``take(op)`` checks the next request and hands back its
    reply."""

    def __init__(self) -> None:
        self.exchange: List[Dict[str, Any]] = []

    def take(self, op: Dict[str, Any]) -> Any:
        assert self.exchange, f"an unscripted request {op}"
        step = self.exchange.pop(0)
        assert op == step["op"], f"sent {op}, expected {step['op']}"
        return step["reply"]


def _module(name: str, **attrs: Any) -> types.ModuleType:
    mod = types.ModuleType(name)
    for k, v in attrs.items():
        setattr(mod, k, v)
    return mod


def replay(
    file: str,
    make: Callable[[Dict[str, Any], Dict[str, Any], Script], Any],
    failed_type: Callable[[Any], Any],
) -> int:
    """Runs every case of ``file`` on an adapter from ``make(doc, case, script)``; a call
    that fails must raise ``failed_type(last reply)``. Answers the number of calls run."""
    doc = load_vectors(file)
    assert len(doc["cases"]) >= 5
    calls = 0
    for case in doc["cases"]:
        script = Script()
        adapter = make(doc, case, script)
        for n, call in enumerate(case["calls"]):
            where = f"{file}: {case['name']}, call {n} ({call['call']})"
            script.exchange = list(call["exchange"])
            method = getattr(adapter, call["call"])
            if "error_contains" in call:
                with pytest.raises(Exception) as info:
                    method(*call["args"])
                assert call["error_contains"] in str(info.value), (where, info.value)
                last = call["exchange"][-1]["reply"] if call["exchange"] else None
                assert isinstance(info.value, failed_type(last)), (where, repr(info.value))
            else:
                got = method(*call["args"])
                assert json.loads(json.dumps(got)) == call["answer"], (where, got)
            assert not script.exchange, (where, "requests left unsent", script.exchange)
            calls += 1
        adapter.close()
    return calls


# --- Redis (redis-py) ---------------------------------------------------------------------


try:
    from redis.exceptions import ResponseError  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # redis-py is not needed with a client given

    class ResponseError(Exception):  # type: ignore[no-redef]
        """redis-py's error for an error reply."""


def _wire(value: Any) -> Any:
    """A script's reply as redis-py returns it: bulk strings as bytes."""
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, list):
        return [_wire(v) for v in value]
    return value


class FakeRedis:
    """The part of a ``redis.Redis`` that RedisRegistry uses, playing the script."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.names = {text: name for name, text in statements("redis").items()}
        self.registered: List[str] = []
        self.closed = False

    def register_script(self, text: str) -> "FakeScript":
        self.registered.append(self.names[text])
        return FakeScript(self, self.names[text])

    def execute_command(self, *args: Any) -> Any:
        assert args == ("ROLE",), args
        reply = self.script.take({"op": "role"})
        if "error" in reply:
            raise ResponseError(reply["error"])
        replicas = [[b"10.0.0.2", b"6379", b"100"]] * reply["replicas"]
        return [b"master", 100, replicas]

    def pipeline(self, transaction: bool = True) -> "FakePipeline":
        assert transaction is False, "WAIT must follow the script outside MULTI"
        return FakePipeline(self)

    def eval(self, name: str, keys: Any, args: Any, wait: Optional[Dict[str, int]]) -> Any:
        op: Dict[str, Any] = {"op": "eval", "script": name, "keys": list(keys), "args": [str(a) for a in args]}
        if wait is not None:
            op["wait"] = wait
        reply = self.script.take(op)
        if "error" in reply:
            raise ResponseError(reply["error"])
        return reply

    def close(self) -> None:
        self.closed = True


class FakeScript:
    """``register_script``'s callable: EVALSHA now, or queued on a pipeline."""

    def __init__(self, client: FakeRedis, name: str) -> None:
        self.client, self.name = client, name

    def __call__(self, keys: Any = (), args: Any = (), client: Any = None) -> Any:
        if isinstance(client, FakePipeline):
            client.queued.append((self.name, keys, args))
            return client
        assert client is None
        return _wire(self.client.eval(self.name, keys, args, None)["value"])


class FakePipeline:
    def __init__(self, client: FakeRedis) -> None:
        self.client = client
        self.queued: List[Tuple[str, Any, Any]] = []
        self.wait: Optional[Dict[str, int]] = None

    def execute_command(self, *args: Any) -> "FakePipeline":
        assert args[0] == "WAIT" and len(self.queued) == 1, args
        self.wait = {"replicas": args[1], "timeout_ms": args[2]}
        return self

    def execute(self) -> List[Any]:
        assert len(self.queued) == 1 and self.wait is not None, "a pipeline of the script and WAIT"
        name, keys, args = self.queued[0]
        reply = self.client.eval(name, keys, args, self.wait)
        return [_wire(reply["value"]), reply["acked"]]


def test_every_redis_conversation_is_what_redis_registry_sends() -> None:
    clients: List[FakeRedis] = []

    def make(doc: Dict[str, Any], case: Dict[str, Any], script: Script) -> Any:
        client = FakeRedis(script)
        clients.append(client)
        # socket_timeout is twice the protocol's wait_ms (WAIT gets half of it).
        timeout = doc["config"]["wait_ms"] / 500
        r = registries.RedisRegistry(client=client, prefix=doc["config"]["prefix"], socket_timeout=timeout,
                                     check_durability=False)
        assert sorted(client.registered) == ["claim", "peers", "release", "renew"]
        return r

    def failed(reply: Any) -> Any:
        return ResponseError if isinstance(reply, dict) and "error" in reply else RuntimeError

    assert replay("redis.json", make, failed) >= 10
    assert all(c.closed for c in clients)


def test_redis_role_refused_counts_as_no_replicas() -> None:
    script = Script()
    r = registries.RedisRegistry(client=FakeRedis(script), prefix="p", check_durability=False)
    keys = ["{p}:worker:1", "{p}:mark:1", "{p}:reports"]
    script.exchange = [
        {"op": {"op": "role"}, "reply": {"error": "ERR unknown command 'ROLE'"}},
        {"op": {"op": "eval", "script": "renew", "keys": keys, "args": ["o#1", "3000", "50", "40", "1"]},
         "reply": {"value": 50}},
    ]
    assert r.renew(1, "o#1", 3000, 50, 40) == 50
    assert not script.exchange


# --- PostgreSQL (psycopg 3) and MySQL (PyMySQL) -------------------------------------------


class DriverError(Exception):
    """Stands in for a driver's ``Error`` where the driver is not installed."""


@pytest.fixture
def drivers(monkeypatch: pytest.MonkeyPatch) -> Iterator[Dict[str, type]]:
    """Each SQL driver's error class (a stand-in module where it is not installed)."""
    errors: Dict[str, type] = {}
    for module, dialect in (("psycopg", "postgres"), ("pymysql", "mysql")):
        try:
            errors[dialect] = importlib.import_module(module).OperationalError
        except ImportError:
            client = types.SimpleNamespace(FOUND_ROWS=2)
            fake = _module(module, OperationalError=DriverError, constants=types.SimpleNamespace(CLIENT=client))
            monkeypatch.setitem(sys.modules, module, fake)
            errors[dialect] = DriverError
    yield errors


def _returns_rows(statement: str) -> bool:
    s = statement.lstrip().upper()
    return s.startswith(("SELECT", "WITH")) or "RETURNING" in s


class FakeCursor:
    """A DB-API cursor over one scripted statement: rows as tuples (a MySQL driver's
    integers as ``Decimal``, as it may answer computed columns), ``description`` only for a
    statement that returns rows, ``rowcount`` the rows affected."""

    def __init__(self, conn: "FakeSqlConn") -> None:
        self.conn = conn
        self.description: Optional[List[Tuple[str]]] = None
        self.rowcount = -1
        self.rows: List[Tuple[Any, ...]] = []

    def execute(self, statement: str, params: Any = None) -> int:
        conn = self.conn
        if statement in conn.schema:
            conn.schema_run.append(statement)
            return 0
        assert "?" not in statement, statement
        name = conn.names.get(statement)
        assert name is not None, f"not one of the core's {conn.dialect} statements: {statement}"
        reply = conn.script.take({"op": "query", "statement": name, "params": list(params or [])})
        if "error" in reply:
            raise conn.error(reply["error"])
        rows = reply["rows"]
        assert rows == [] or _returns_rows(statement), statement
        integer = Decimal if conn.dialect == "mysql" else int
        self.rows = [tuple(integer(c) if isinstance(c, int) else c for c in row) for row in rows]
        self.description = [("column",)] if _returns_rows(statement) else None
        self.rowcount = reply["affected"]
        return int(self.rowcount)

    def fetchall(self) -> List[Tuple[Any, ...]]:
        assert self.description is not None, "no result to fetch"
        return self.rows

    def close(self) -> None:
        pass

    def __enter__(self) -> "FakeCursor":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


class FakeSqlConn:
    """A DB-API connection playing the script: ``cursor()`` (PyMySQL) and ``execute()``
    (psycopg 3); the core's schema statements are run without a script."""

    def __init__(self, dialect: str, script: Script, error: type) -> None:
        self.dialect, self.script, self.error = dialect, script, error
        core = statements(dialect)
        self.names = {text.replace("?", "%s"): f"{dialect}.{call}" for call, text in core.items() if call != "schema"}
        self.schema = [core["schema"]] if dialect == "postgres" else _mysql_schema(core["schema"])
        self.schema_run: List[str] = []
        self.in_autocommit = False

    def cursor(self) -> FakeCursor:
        return FakeCursor(self)

    def execute(self, statement: str, params: Any = None) -> FakeCursor:
        cur = FakeCursor(self)
        cur.execute(statement, params)
        return cur

    def fileno(self) -> int:
        return -1

    def close(self) -> None:
        pass


class FakePgConn(FakeSqlConn):
    @property
    def autocommit(self) -> bool:
        return self.in_autocommit

    @autocommit.setter
    def autocommit(self, on: bool) -> None:
        self.in_autocommit = on


class FakeMySQLConn(FakeSqlConn):
    def autocommit(self, on: bool) -> None:
        self.in_autocommit = on


def _mysql_schema(schema: str) -> List[str]:
    """The MySQL schema's statements as MySQLRegistry runs them (comment lines left out)."""
    out = []
    for statement in schema.split(";"):
        body = "\n".join(l for l in statement.splitlines() if not l.strip().startswith("--"))
        if body.strip():
            out.append(body)
    return out


def test_every_sql_conversation_is_what_the_sql_registries_send(
    drivers: Dict[str, type], monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = load_vectors("sql.json")
    monkeypatch.setattr(registries, "_host_name", lambda: doc["config"]["host_name"])
    conns: List[FakeSqlConn] = []

    def make(doc: Dict[str, Any], case: Dict[str, Any], script: Script) -> Any:
        kind = case.get("kind", doc["kind"])

        def connect() -> FakeSqlConn:
            conn = (FakePgConn if kind == "postgres" else FakeMySQLConn)(kind, script, drivers[kind])
            conns.append(conn)
            return conn

        if kind == "postgres":
            return registries.PostgresRegistry(connect=connect)
        return registries.MySQLRegistry(connect=connect)

    def failed(reply: Any) -> Any:
        return tuple(drivers.values()) if isinstance(reply, dict) and "error" in reply else RuntimeError

    assert replay("sql.json", make, failed) >= 15
    # Every connection ran the core's schema first, and runs in autocommit mode.
    assert conns and all(c.in_autocommit and c.schema_run == c.schema for c in conns)
    # The statement that failed dropped its connection: the next call opened a new one.
    assert len(conns) == len(doc["cases"]) + 1


# --- etcd (etcd3gw) -----------------------------------------------------------------------


class Etcd3Exception(Exception):
    """etcd3gw's exceptions keep their text in ``detail_text`` (``str()`` is empty)."""

    def __init__(self, detail_text: Optional[str] = None, *args: Any) -> None:
        super().__init__(*args)
        self.detail_text = detail_text


class StandInLease:
    """etcd3gw.lease.Lease where etcd3gw is not installed: the same requests to the gateway."""

    def __init__(self, id: int, client: Any = None) -> None:
        self.id, self.client = id, client

    def revoke(self) -> bool:
        self.client.post(self.client.get_url("/kv/lease/revoke"), json={"ID": self.id})
        return True

    def refresh(self) -> int:
        result = self.client.post(self.client.get_url("/lease/keepalive"), json={"ID": self.id})
        return int(result["result"].get("TTL", -1))


@pytest.fixture
def etcd3gw(monkeypatch: pytest.MonkeyPatch) -> Iterator[type]:
    """etcd3gw's connection error class (stand-in modules where etcd3gw is not installed)."""
    try:
        yield importlib.import_module("etcd3gw.exceptions").ConnectionFailedError
        return
    except ImportError:
        pass
    failed = type("ConnectionFailedError", (Etcd3Exception,), {})
    lease = _module("etcd3gw.lease", Lease=StandInLease)
    monkeypatch.setitem(sys.modules, "etcd3gw", _module("etcd3gw", lease=lease))
    monkeypatch.setitem(sys.modules, "etcd3gw.lease", lease)
    monkeypatch.setitem(sys.modules, "etcd3gw.exceptions", _module("etcd3gw.exceptions", ConnectionFailedError=failed))
    yield failed


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _unb64(text: str) -> str:
    return base64.b64decode(text).decode()


class FakeEtcd:
    """The part of an ``etcd3gw.Etcd3Client`` that EtcdRegistry uses (and ``post`` for its
    leases), translating etcd's JSON gateway messages to the protocol's requests."""

    def __init__(self, script: Script, error: type) -> None:
        self.script, self.error = script, error

    def take(self, op: Dict[str, Any]) -> Any:
        reply = self.script.take(op)
        if isinstance(reply, dict) and "error" in reply:
            raise self.error(reply["error"])
        return reply

    def lease(self, ttl: int) -> Any:
        reply = self.take({"op": "grant", "ttl_s": ttl})
        return types.SimpleNamespace(id=int(reply["lease"]))

    def get_url(self, path: str) -> str:
        return path

    def post(self, url: str, json: Dict[str, Any]) -> Dict[str, Any]:
        if url == "/lease/keepalive":
            reply = self.take({"op": "keepalive", "lease": str(json["ID"])})
            return {"result": {"TTL": str(reply["ttl"])}}
        assert url == "/kv/lease/revoke", url
        self.take({"op": "revoke", "lease": str(json["ID"])})
        return {}

    def get_prefix(self, prefix: str) -> List[Tuple[bytes, Dict[str, bytes]]]:
        reply = self.take({"op": "prefix", "prefix": prefix})
        return [(value.encode(), {"key": key.encode()}) for key, value in reply["kvs"]]

    def transaction(self, txn: Dict[str, Any]) -> Dict[str, Any]:
        def compare(c: Dict[str, Any]) -> Dict[str, Any]:
            key = _unb64(c["key"])
            if c["target"] == "CREATE":
                assert c["result"] == "EQUAL" and c["create_revision"] == 0, c
                return {"key": key, "missing": True}
            assert c["target"] == "VALUE", c
            return {"key": key, {"EQUAL": "equal", "LESS": "less"}[c["result"]]: _unb64(c["value"])}

        def request(r: Dict[str, Any]) -> Dict[str, Any]:
            if "request_put" in r:
                put = r["request_put"]
                out = {"put": _unb64(put["key"]), "value": _unb64(put["value"])}
                if "lease" in put:
                    assert isinstance(put["lease"], int), put
                    out["lease"] = str(put["lease"])
                return out
            if "request_range" in r:
                return {"range": _unb64(r["request_range"]["key"])}
            return {"delete": _unb64(r["request_delete_range"]["key"])}

        op: Dict[str, Any] = {
            "op": "txn",
            "compare": [compare(c) for c in txn["compare"]],
            "success": [request(r) for r in txn["success"]],
            "failure": [request(r) for r in txn["failure"]],
        }
        reply = self.take(op)
        values = list(reply["values"])
        responses: List[Dict[str, Any]] = []
        for r in op["success" if reply["succeeded"] else "failure"]:
            if "range" in r:
                value = values.pop(0)
                kvs = [] if value is None else [{"key": _b64(r["range"]), "value": _b64(value)}]
                responses.append({"response_range": {"kvs": kvs, "count": str(len(kvs))} if kvs else {}})
            elif "put" in r:
                responses.append({"response_put": {"header": {}}})
            else:
                responses.append({"response_delete_range": {"deleted": "1"}})
        assert not values, ("more values scripted than ranges", values)
        # The gateway leaves out false and empty fields.
        out: Dict[str, Any] = {"header": {"revision": "7"}}
        if reply["succeeded"]:
            out["succeeded"] = True
        if responses:
            out["responses"] = responses
        return out


def test_every_etcd_conversation_is_what_etcd_registry_sends(etcd3gw: type) -> None:
    def make(doc: Dict[str, Any], case: Dict[str, Any], script: Script) -> Any:
        r = registries.EtcdRegistry(client=FakeEtcd(script, etcd3gw), prefix=doc["config"]["prefix"])
        assert r.prefix == doc["config"]["prefix"].rstrip("/")
        return r

    def failed(reply: Any) -> Any:
        return RuntimeError

    assert replay("etcd.json", make, failed) >= 20


def test_etcd_close_revokes_the_leases_held(etcd3gw: type) -> None:
    script = Script()
    r = registries.EtcdRegistry(client=FakeEtcd(script, etcd3gw), prefix="/p")
    claim = load_vectors("etcd.json")["cases"][0]["calls"][0]
    assert claim["call"] == "claim" and claim["args"][0] == 3
    exchange = json.loads(json.dumps(claim["exchange"]).replace("/fleet/", "/p/"))
    script.exchange = list(exchange)
    assert r.claim(*claim["args"]) == claim["answer"]
    lease = exchange[0]["reply"]["lease"]
    script.exchange = [{"op": {"op": "revoke", "lease": lease}, "reply": {"error": "lease not found"}}]
    r.close()  # a failed revoke is of no consequence
    assert not script.exchange
    # Nothing is held any more: a renewal answers null without a request.
    assert r.renew(3, claim["args"][1], 9500, 1, 1) is None
    r.close()


def test_a_failed_etcd_request_raises_the_cores_message_chained_to_etcd3gws(etcd3gw: type) -> None:
    script = Script()
    r = registries.EtcdRegistry(client=FakeEtcd(script, etcd3gw), prefix="/p")
    script.exchange = [{"op": {"op": "prefix", "prefix": "/p/report/"}, "reply": {"error": "connection refused"}}]
    with pytest.raises(RuntimeError) as info:
        r.peers()
    assert str(info.value) == "etcd range: connection refused"
    assert isinstance(info.value.__cause__, etcd3gw)


def test_the_protocol_class_refuses_bad_kinds_and_configs_with_the_cores_message() -> None:
    from segflake._native import _RegistryProtocol

    with pytest.raises(ValueError, match="no registry protocol \"consul\""):
        _RegistryProtocol("consul", {})
    with pytest.raises(ValueError, match="needs wait_ms"):
        _RegistryProtocol("redis", {"prefix": "p"})
    with pytest.raises(ValueError, match="needs host_name"):
        _RegistryProtocol("mysql", {})
    assert _RegistryProtocol("redis", {"wait_ms": 5}).describe() == {}
    assert _RegistryProtocol("etcd", {"prefix": "/a/"}).describe() == {"prefix": "/a", "leases": []}
    assert _RegistryProtocol("postgres", {"host_name": "h"}).describe()["schema"] == statements("postgres")["schema"]
    zk = _RegistryProtocol("zookeeper", {"root": "/snowflake/x", "identity": "10.0.0.1:80"})
    assert zk.describe() == {"identity": "10.0.0.1:80", "root": "/snowflake/x", "worker_id": None}
    # A ZooKeeper call needs its context; the others ignore it.
    assert "session, now_ms" in zk.start("peers", [])["error"]
    assert _RegistryProtocol("redis", {"wait_ms": 5}).resume({"value": 1}) == {
        "error": "no registry conversation is in progress: start one first"
    }


# --- TLS: URLs and arguments as the clients' TLS settings (no server) -------------------

#: A CA certificate (PEM) for the settings that load a CA file.
CA_PEM = """-----BEGIN CERTIFICATE-----
MIIBjTCCATOgAwIBAgIUTd63O2bG1ZMa1tuK8JfDHKROWzQwCgYIKoZIzj0EAwIw
GzEZMBcGA1UEAwwQc2VnZmxha2UtdGVzdC1jYTAgFw0yNjExMjYwMzEyMDJaGA8y
MTI2MTEwMjAzMTIwMlowGzEZMBcGA1UEAwwQc2VnZmxha2UtdGVzdC1jYTBZMBMG
ByqGSM49AgEGCCqGSM49AwEHA0IABE/8HM2+SDOIt7yAesjdLouGZd7Nni9VgvGE
9rHkHn0rDxhm/oihn2py/UXTVyzb34adFZ/W8XgjbJkjNUQt5yujUzBRMB0GA1Ud
DgQWBBRt9rbub0K3ZMkeVtMuSKeJzMiHLDAfBgNVHSMEGDAWgBRt9rbub0K3ZMke
VtMuSKeJzMiHLDAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIQC7
hNWJmnLEQXh1RYEVBBUkVYcrVFGhhUxIXLG6na2AtAIgE1ZTZZ98u/LowC4WxCAA
oEXoIm0fauxHn4n9eJbBhaQ=
-----END CERTIFICATE-----
"""


@pytest.fixture
def ca_file(tmp_path: Any) -> str:
    path = tmp_path / "ca.pem"
    path.write_text(CA_PEM)
    return str(path)


def test_rediss_urls_verify_the_certificate_and_host_name_with_the_ca_file(ca_file: str) -> None:
    pytest.importorskip("redis")
    from segflake.stores._redis_client import redis_client

    def settings(url: str, ca: Optional[str] = None) -> Tuple[str, Dict[str, Any]]:
        pool = redis_client("RedisStore", url, None, 1.0, ca).connection_pool
        return pool.connection_class.__name__, pool.connection_kwargs

    cls, plain = settings("redis://h:6379/0")
    assert cls == "Connection" and "ssl_cert_reqs" not in plain
    cls, tls = settings(f"rediss://:pw@h:6380/2?ca={ca_file}")
    assert cls == "SSLConnection" and (tls["host"], tls["port"], tls["db"], tls["password"]) == ("h", 6380, 2, "pw")
    assert (tls["ssl_cert_reqs"], tls["ssl_check_hostname"], tls["ssl_ca_certs"]) == ("required", True, ca_file)
    # The argument wins over the URL's parameter; without either, the system's CAs.
    assert settings("rediss://h?ca=/elsewhere.pem", ca_file)[1]["ssl_ca_certs"] == ca_file
    assert settings("rediss://h")[1].get("ssl_ca_certs") is None
    # A Sentinel URL: TLS to the sentinels and to the primary they name.
    pool = redis_client("RedisStore", f"rediss+sentinel://:pw@s1:26380/m?ca={ca_file}", None, 1.0).connection_pool
    assert pool.connection_kwargs["ssl_ca_certs"] == ca_file and pool.connection_kwargs["ssl_check_hostname"]
    assert pool.connection_kwargs["password"] == "pw", "the credentials are the data servers'"
    sentinel = pool.sentinel_manager.sentinels[0].connection_pool
    assert sentinel.connection_class.__name__ == "SSLConnection"
    assert sentinel.connection_kwargs["ssl_ca_certs"] == ca_file and sentinel.connection_kwargs["password"] is None
    with pytest.raises(ValueError, match="ca=PATH is for TLS connections: use rediss"):
        settings(f"redis://h?ca={ca_file}")
    with pytest.raises(ValueError, match="is for TLS, but the Redis URL is redis://: use rediss://"):
        settings("redis://h", ca_file)
    with pytest.raises(ValueError, match="does not exist or cannot be read"):
        settings("rediss://h?ca=/no/such/ca.pem")
    with pytest.raises(TypeError, match="ca_file is for a client made from url"):
        registries.RedisRegistry(client=object(), ca_file=ca_file)


def test_mysql_urls_map_ssl_mode_and_ssl_ca_as_mysqls_clients_do(ca_file: str) -> None:
    import ssl

    from segflake.stores._common import mysql_url

    plain = mysql_url("mysql://u:p%40ss@db:3307/app")
    assert plain == {"host": "db", "port": 3307, "user": "u", "password": "p@ss", "database": "app"}
    assert mysql_url("mysql://u@db/app?ssl-mode=DISABLED")["ssl_disabled"] is True
    required = mysql_url("mysql://u@db/app?ssl-mode=REQUIRED")["ssl"]
    assert (required.verify_mode, required.check_hostname) == (ssl.CERT_NONE, False)
    for query, hostname in (
        (f"ssl-mode=VERIFY_CA&ssl-ca={ca_file}", False),
        (f"ssl_mode=verify_identity&ssl_ca={ca_file}", True),
        (f"ssl-ca={ca_file}", False),  # ssl-ca alone: VERIFY_CA
    ):
        ctx = mysql_url(f"mysql://u@db/app?{query}")["ssl"]
        assert isinstance(ctx, ssl.SSLContext)
        assert (ctx.verify_mode, ctx.check_hostname) == (ssl.CERT_REQUIRED, hostname), query
    assert mysql_url("mysql://u@db/app?charset=utf8mb4")["host"] == "db"  # other parameters: ignored
    for query, message in (
        ("ssl-mode=PREFERRED", "PREFERRED, which falls back to plaintext, is not offered"),
        ("sslmode=REQUIRED", "unsupported TLS parameter 'sslmode'"),
        ("tls=true", "unsupported TLS parameter 'tls'"),
        (f"ssl-mode=DISABLED&ssl-ca={ca_file}", "contradicts ssl-ca"),
        ("ssl-mode=VERIFY_CA&ssl-ca=/no/such.pem", "does not exist"),
    ):
        with pytest.raises(ValueError, match=message):
            mysql_url(f"mysql://u@db/app?{query}")


def test_zk_and_etcd_urls_ask_for_tls_by_scheme_or_parameter() -> None:
    from segflake.registries import etcd_members, url_tls

    assert url_tls("zk://h:1/r?identity=10.0.0.1:80") == ("zk://h:1/r?identity=10.0.0.1:80", False, None)
    assert url_tls("zk+tls://h:1,g:2/r?ca=%2Fca.pem&identity=10.0.0.1:80") == (
        "zk+tls://h:1,g:2/r?identity=10.0.0.1:80",
        True,
        "/ca.pem",
    )
    assert url_tls("etcd://h:1/p?tls=true&ca=/ca.pem") == ("etcd://h:1/p", True, "/ca.pem")
    with pytest.raises(ValueError, match="ca=PATH is for TLS, but the URL .* use etcd\\+tls://"):
        url_tls("etcd://h:1/p?ca=/ca.pem")
    with pytest.raises(ValueError, match="zk\\+tls:// contradicts tls=false"):
        url_tls("zk+tls://h:1/r?tls=false")
    with pytest.raises(ValueError, match="invalid tls value"):
        url_tls("zk://h:1/r?tls=maybe")
    assert etcd_members("a:1,b:2") == ([("a", 1), ("b", 2)], "http")
    assert etcd_members("https://a:1, https://b:2/") == ([("a", 1), ("b", 2)], "https")
    with pytest.raises(ValueError, match="mix http:// and https://"):
        etcd_members("https://a:1,b:2")
    with pytest.raises(ValueError, match="unsupported registry URL .*etcd\\+tls://"):
        registries.from_url("consul://h:8500")


def test_etcd_over_https_gives_etcd3gw_the_protocol_and_ca_on_every_request(
    monkeypatch: pytest.MonkeyPatch, ca_file: str
) -> None:
    made: List[Dict[str, Any]] = []

    class Client:
        def __init__(self, **kwargs: Any) -> None:
            made.append(kwargs)
            self.host, self.port = kwargs["host"], kwargs["port"]

        def post(self, url: str, *args: Any, **kwargs: Any) -> Any:
            return kwargs

    failed = type("ConnectionFailedError", (Exception,), {})
    timeout = type("ConnectionTimeoutError", (Exception,), {})
    lease = _module("etcd3gw.lease", Lease=object)
    monkeypatch.setitem(sys.modules, "etcd3gw", _module("etcd3gw", Etcd3Client=Client, lease=lease))
    monkeypatch.setitem(sys.modules, "etcd3gw.lease", lease)
    monkeypatch.setitem(
        sys.modules,
        "etcd3gw.exceptions",
        _module("etcd3gw.exceptions", ConnectionFailedError=failed, ConnectionTimeoutError=timeout),
    )
    r = registries.from_url(f"etcd+tls://a:1,b:2/ids?ca={ca_file}")
    assert made[-1] == {
        "host": "a", "port": 1, "timeout": 3.0, "api_path": "/v3/", "protocol": "https", "ca_cert": ca_file
    }
    assert r.prefix == "/ids"
    # Per request: requests would prefer REQUESTS_CA_BUNDLE to the session's CA.
    assert r.client.post("/kv/range", json={}) == {"json": {}, "verify": ca_file}
    registries.from_url("etcd://a:1/ids?tls=1")
    assert made[-1]["protocol"] == "https" and "ca_cert" not in made[-1]
    registries.from_url("etcd://a:1/ids")
    assert "protocol" not in made[-1]
    with pytest.raises(ValueError, match="ca_file is for TLS, but the endpoints are not https://"):
        registries.EtcdRegistry("a:1", ca_file=ca_file)


def test_zookeeper_tls_is_kazoos_verifying_tls(monkeypatch: pytest.MonkeyPatch, ca_file: str) -> None:
    made: List[Dict[str, Any]] = []

    class KazooClient:
        def __init__(self, **kwargs: Any) -> None:
            made.append(kwargs)

        def start(self, timeout: float) -> None:
            pass

    monkeypatch.setitem(sys.modules, "kazoo", types.ModuleType("kazoo"))
    monkeypatch.setitem(sys.modules, "kazoo.client", _module("kazoo.client", KazooClient=KazooClient))
    monkeypatch.setitem(sys.modules, "kazoo.exceptions", types.ModuleType("kazoo.exceptions"))
    registries.from_url(f"zk+tls://h:2281,g:2281/snowflake/x?identity=10.0.0.1:80&ca={ca_file}")
    assert made[-1]["hosts"] == "h:2281,g:2281"
    assert {k: made[-1][k] for k in ("use_ssl", "verify_certs", "check_hostname", "ca")} == {
        "use_ssl": True, "verify_certs": True, "check_hostname": True, "ca": ca_file
    }
    registries.from_url("zk://h:2181/snowflake/x?identity=10.0.0.1:80")
    assert "use_ssl" not in made[-1]
    with pytest.raises(ValueError, match="ca_file is for TLS, but tls is off"):
        registries.ZooKeeperRegistry("h:2181", identity="10.0.0.1:80", ca_file=ca_file)
