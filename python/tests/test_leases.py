"""Leased worker IDs (Snowflake.from_registry) through in-process registries written in
Python: the binding's translation of calls, answers, exceptions and errors. The real
Redis, PostgreSQL and MariaDB registries run in tests/scenarios (lease_*)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import pytest

import segflake

SMALL = {"preset": "twitter", "worker_bits": 3}  # 8 worker IDs
# A claim that finds no mark starts above claim time + max_drift_ms + mark_ahead_ms +
# clock_skew_allowance_ms (an unseen predecessor's reach), so start-up waits for the
# lead; tests about other things keep it short.
FAST: Dict[str, Any] = {"mark_ahead_ms": 200, "clock_skew_allowance_ms": 0}


class MemoryRegistry:
    """The registry contract over a dict, with expiry on this process's monotonic clock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows: Dict[int, Dict[str, Any]] = {}
        self.calls: List[str] = []

    @staticmethod
    def now() -> float:
        return time.monotonic() * 1000

    def row(self, worker_id: int) -> Dict[str, Any]:
        return self.rows.setdefault(worker_id, {"owner": None, "expires": 0.0, "mark_ms": 0})

    def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[int]:
        with self.lock:
            self.calls.append("claim")
            r = self.row(worker_id)
            if r["owner"] not in (None, owner) and r["expires"] > self.now():
                return None
            r.update(owner=owner, expires=self.now() + ttl_ms)
            return int(r["mark_ms"])

    def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Optional[int]:
        with self.lock:
            self.calls.append("renew")
            r = self.row(worker_id)
            if r["owner"] != owner or r["expires"] <= self.now():
                return None
            r.update(expires=self.now() + ttl_ms, mark_ms=max(r["mark_ms"], mark_ms), reported=reported_ms)
            return int(r["mark_ms"])

    def release(self, worker_id: int, owner: str, mark_ms: int) -> bool:
        with self.lock:
            self.calls.append("release")
            r = self.row(worker_id)
            if r["owner"] != owner:
                return False
            r.update(owner=None, expires=0.0, mark_ms=mark_ms)
            return True

    def peers(self) -> List[Tuple[int, int, int]]:
        with self.lock:
            return [(w, r["reported"], 0) for w, r in self.rows.items()
                    if r["owner"] is not None and r["expires"] > self.now() and "reported" in r]

    def holder(self, worker_id: int) -> Optional[str]:
        with self.lock:
            r = self.rows.get(worker_id)
            return r["owner"] if r and r["expires"] > self.now() else None


def test_leased_generators_take_distinct_worker_ids_and_issue_distinct_ids() -> None:
    registry = MemoryRegistry()
    gens = [segflake.Snowflake.from_registry(registry, layout=SMALL, lease_ttl_ms=2000, **FAST) for _ in range(3)]
    assert all(g.leased for g in gens)
    workers = {g.worker_id for g in gens}
    assert len(workers) == 3
    ids: List[int] = []

    def draw(g: segflake.Snowflake) -> None:
        got = g.next_ids(50_000)
        with registry.lock:
            ids.extend(got)

    threads = [threading.Thread(target=draw, args=(g,)) for g in gens for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == len(ids) == 300_000
    stats = gens[0].lease_stats()
    assert stats is not None and stats.state == "held" and stats.worker_id == gens[0].worker_id
    assert stats.mark_ms > time.time() * 1000
    assert set(stats.to_dict()) >= {"owner", "lease_remaining_ms", "renewals", "last_error"}

    reused = gens[0].worker_id
    last = max(gens[0].next_ids(10))
    for g in gens:
        g.close()
        with pytest.raises(segflake.ClosedError):
            g.next_id()
    assert all(registry.holder(w) is None for w in workers)
    # Released at its last ID's time: a successor takes the ID at once and starts above it.
    started = time.monotonic()
    with segflake.Snowflake.from_registry(registry, layout=SMALL, preferred_worker_id=reused) as again:
        assert time.monotonic() - started < 1
        assert again.worker_id == reused
        assert again.next_id() > last
    assert registry.holder(reused) is None


def test_every_worker_id_held_is_no_free_worker_id_after_the_claim_wait() -> None:
    class Refusing(MemoryRegistry):
        def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[int]:
            return None

    started = time.monotonic()
    with pytest.raises(segflake.NoFreeWorkerIdError) as info:
        segflake.Snowflake.from_registry(Refusing(), layout=SMALL, claim_wait_ms=300)
    assert time.monotonic() - started < 5
    assert info.value.code == "NO_FREE_WORKER_ID"
    assert (info.value.capacity, info.value.held) == (8, 8)
    assert "8 of 8" in str(info.value)


def test_options_are_checked_and_worker_id_is_refused() -> None:
    with pytest.raises(segflake.InvalidArgumentError) as info:
        segflake.Snowflake.from_registry(MemoryRegistry(), worker_id=3)
    assert "preferred_worker_id" in str(info.value)
    with pytest.raises(segflake.InvalidArgumentError) as info:
        segflake.Snowflake.from_registry(MemoryRegistry(), lease_ttl_ms=5)
    assert str(info.value) == "invalid lease_ttl_ms: got 5; allowed integers 100..=86400000"
    with pytest.raises(segflake.WorkerIdOutOfRangeError):
        segflake.Snowflake.from_registry(MemoryRegistry(), layout=SMALL, preferred_worker_id=8)
    with pytest.raises(segflake.InvalidArgumentError):
        segflake.Snowflake.from_registry(MemoryRegistry(), owner=7)  # type: ignore[arg-type]


def test_a_registry_that_fails_ends_the_lease_with_its_error() -> None:
    class Failing(MemoryRegistry):
        down = False

        def renew(self, *args: Any, **kwargs: Any) -> Optional[int]:
            if self.down:
                raise ConnectionError("registry down")
            return super().renew(*args, **kwargs)

    registry = Failing()
    g = segflake.Snowflake.from_registry(registry, layout=SMALL, lease_ttl_ms=300, **FAST)
    g.next_id()
    registry.down = True
    deadline = time.monotonic() + 3
    with pytest.raises(segflake.LeaseExpiredError) as info:
        while time.monotonic() < deadline:
            g.next_id()
            time.sleep(0.01)
    assert "ConnectionError: registry down" in str(info.value)
    assert info.value.code == "LEASE_EXPIRED"
    stats = g.lease_stats()
    assert stats is not None and stats.failures > 0 and stats.lost >= 1
    # The registry comes back: the generator claims again and IDs resume by themselves.
    registry.down = False
    while time.monotonic() < deadline + 5:
        try:
            g.next_id()
            break
        except segflake.LeaseExpiredError:
            time.sleep(0.05)
    else:
        raise AssertionError("IDs did not resume")
    g.close()


def test_answers_outside_the_contract_are_counted_failures_never_a_raised_cap() -> None:
    class Garbage(MemoryRegistry):
        broken = False

        def renew(self, *args: Any, **kwargs: Any) -> Any:
            if self.broken:
                return "OK"
            return super().renew(*args, **kwargs)

    registry = Garbage()
    # Renewed every 200 ms; the lease (600 ms) outlives the garbage answers below.
    g = segflake.Snowflake.from_registry(registry, layout=SMALL, lease_ttl_ms=600, **FAST)
    stats = g.lease_stats()
    assert stats is not None
    mark = stats.mark_ms
    registry.broken = True
    time.sleep(0.35)
    stats = g.lease_stats()
    assert stats is not None and stats.failures >= 1 and stats.mark_ms == mark
    assert stats.last_error is not None and "outside the registry contract" in stats.last_error
    g.close()


def test_a_registry_missing_a_method_is_a_registry_error() -> None:
    class NoPeers:
        def claim(self, worker_id: int, owner: str, ttl_ms: int) -> int:
            return 0

    with pytest.raises(segflake.RegistryError) as info:
        segflake.Snowflake.from_registry(NoPeers(), claim_wait_ms=100)  # type: ignore[arg-type]
    assert "no method renew()" in str(info.value) or "renew" in str(info.value)


class KvRegistry:
    """The worked example of docs/leases.md: a registry over any key-value store with a
    compare-and-set (here an in-memory one)."""

    def __init__(self, kv: "MemoryKv", prefix: str = "segflake/worker/") -> None:
        self.kv, self.prefix = kv, prefix

    def _update(self, worker_id: int, change: Any) -> Any:
        key = f"{self.prefix}{worker_id}"
        while True:
            raw, version = self.kv.get(key)
            rec = json.loads(raw) if raw else {"owner": None, "expires": 0, "mark_ms": 0}
            result, new = change(rec, time.time() * 1000)
            if new is None or self.kv.cas(key, json.dumps(new), version):
                return result

    def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Any:
        def change(rec: Dict[str, Any], now: float) -> Any:
            if rec["owner"] not in (None, owner) and rec["expires"] > now:
                return None, None
            rec.update(owner=owner, expires=now + ttl_ms)
            return rec["mark_ms"], rec
        return self._update(worker_id, change)

    def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Any:
        def change(rec: Dict[str, Any], now: float) -> Any:
            if rec["owner"] != owner or rec["expires"] <= now:
                return None, None
            rec.update(expires=now + ttl_ms, mark_ms=max(rec["mark_ms"], mark_ms),
                       reported_ms=reported_ms, reported_at=now)
            return rec["mark_ms"], rec
        return self._update(worker_id, change)

    def release(self, worker_id: int, owner: str, mark_ms: int) -> Any:
        def change(rec: Dict[str, Any], now: float) -> Any:
            if rec["owner"] != owner:
                return False, None
            rec.update(owner=None, expires=0, mark_ms=mark_ms)
            return True, rec
        return self._update(worker_id, change)

    def peers(self) -> List[Any]:
        return []


class MemoryKv:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.data: Dict[str, Tuple[str, int]] = {}

    def get(self, key: str) -> Tuple[Optional[str], int]:
        with self.lock:
            value, version = self.data.get(key, (None, 0))
            return value, version

    def cas(self, key: str, value: str, version: int) -> bool:
        with self.lock:
            if self.data.get(key, (None, 0))[1] != version:
                return False
            self.data[key] = (value, version + 1)
            return True


def test_the_documented_callback_registry_works() -> None:
    kv = MemoryKv()
    a = segflake.Snowflake.from_registry(KvRegistry(kv), layout=SMALL, preferred_worker_id=2, **FAST)
    b = segflake.Snowflake.from_registry(KvRegistry(kv), layout=SMALL, preferred_worker_id=2, **FAST)
    assert a.worker_id == 2 and b.worker_id == 3
    ids = a.next_ids(1000) + b.next_ids(1000)
    assert len(set(ids)) == 2000
    a.close()
    assert json.loads(kv.get("segflake/worker/2")[0] or "{}")["owner"] is None
    b.close()


def test_asyncio_registries_run_on_the_loop() -> None:
    class AsyncRegistry:
        def __init__(self) -> None:
            self.inner = MemoryRegistry()
            self.loop_thread: Optional[int] = None

        async def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[int]:
            self.loop_thread = threading.get_ident()
            await asyncio.sleep(0)
            return self.inner.claim(worker_id, owner, ttl_ms)

        async def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Optional[int]:
            return self.inner.renew(worker_id, owner, ttl_ms, mark_ms, reported_ms)

        async def release(self, worker_id: int, owner: str, mark_ms: int) -> bool:
            return self.inner.release(worker_id, owner, mark_ms)

        async def peers(self) -> List[Tuple[int, int, int]]:
            return self.inner.peers()

    async def main() -> None:
        registry = AsyncRegistry()
        g = await segflake.from_registry_async(registry, layout=SMALL, preferred_worker_id=6, **FAST)
        assert registry.loop_thread == threading.get_ident()
        assert g.worker_id == 6 and registry.inner.holder(6) is not None
        assert len(set(g.next_ids(1000))) == 1000
        await segflake.close_async(g)
        assert registry.inner.holder(6) is None

    asyncio.run(main())


def test_a_sync_api_refuses_an_async_registry_with_a_hint() -> None:
    class AsyncOnly(MemoryRegistry):
        async def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[int]:  # type: ignore[override]
            return 0

    with pytest.raises(segflake.RegistryError) as info:
        segflake.Snowflake.from_registry(AsyncOnly(), claim_wait_ms=100)
    assert "from_registry_async" in str(info.value)


# --- owner labels, registries that forget, unmarked claims ---------------------------


def test_one_owner_label_never_shares_a_worker_id() -> None:
    # gunicorn workers pass their host name: the label is shared, the tokens are not.
    registry = MemoryRegistry()
    a = segflake.Snowflake.from_registry(registry, layout=SMALL, owner="web-1", **FAST)
    b = segflake.Snowflake.from_registry(registry, layout=SMALL, owner="web-1", **FAST)
    try:
        assert a.worker_id != b.worker_id
        # Both start from the label's worker ID; the second takes the next one.
        assert b.worker_id == (a.worker_id + 1) % 8
        tokens = []
        for g in (a, b):
            stats = g.lease_stats()
            assert stats is not None
            label, _, nonce = stats.owner.partition("#")
            assert label == "web-1" and len(nonce) == 16 and int(nonce, 16) >= 0
            assert registry.holder(g.worker_id) == stats.owner
            tokens.append(stats.owner)
        assert tokens[0] != tokens[1]
        ids: List[int] = []
        for _ in range(20):
            ids += a.next_ids(2000) + b.next_ids(2000)
        assert len(set(ids)) == len(ids) == 80_000
        assert {a.decode(i).worker_id for i in ids} == {a.worker_id, b.worker_id}
    finally:
        a.close()
        b.close()
    # The default label is the host name.
    with segflake.Snowflake.from_registry(registry, layout=SMALL, **FAST) as c:
        stats = c.lease_stats()
        assert stats is not None and stats.owner.startswith(socket.gethostname() + "#")


def test_owner_labels_are_checked() -> None:
    for bad in ("", "x" * 129, "a\0b"):
        with pytest.raises(segflake.InvalidArgumentError) as info:
            segflake.Snowflake.from_registry(MemoryRegistry(), owner=bad)
        assert "owner" in str(info.value)


class ForgetfulRegistry(MemoryRegistry):
    """A registry that can lose its data (FLUSHALL, a restart without persistence); its
    renewal then finds no record and answers ``lost`` (False or -1), as the core's scripts
    and statements do."""

    def __init__(self, lost: Any) -> None:
        super().__init__()
        self.lost = lost
        self.claims_at: List[float] = []  # wall time of each claim, in ms

    def forget(self) -> None:
        with self.lock:
            self.rows.clear()

    def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[int]:
        self.claims_at.append(time.time() * 1000)
        return super().claim(worker_id, owner, ttl_ms)

    def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Any:
        with self.lock:
            r = self.rows.get(worker_id)
            if r is None or r["owner"] is None:
                self.calls.append("renew")
                return self.lost
        return super().renew(worker_id, owner, ttl_ms, mark_ms, reported_ms)


@pytest.mark.parametrize("lost", [False, -1])
def test_a_registry_that_lost_the_lease_stops_ids_at_once_and_claims_again(lost: Any) -> None:
    registry = ForgetfulRegistry(lost)
    # Renewed every ~230 ms ((mark_ahead_ms + max_drift_ms) / 3); the lease is 30 s.
    g = segflake.Snowflake.from_registry(registry, layout=SMALL, max_drift_ms=500, **FAST)
    try:
        before = g.next_ids(1000)
        registry.forget()
        deadline = time.monotonic() + 3
        with pytest.raises(segflake.RegistryLostDataError) as info:
            while time.monotonic() < deadline:
                before += g.next_ids(10)
                time.sleep(0.005)
        err = info.value
        assert err.code == "REGISTRY_LOST_DATA" and isinstance(err, segflake.SegflakeError)
        assert err.worker_id == g.worker_id
        assert "lost the record of worker ID" in str(err)
        stats = g.lease_stats()
        assert stats is not None and stats.lost >= 1
        assert stats.last_error is not None and "no record of the lease" in stats.last_error
        # The generator claims again by itself: the claim finds no mark (forgotten), so its
        # IDs start above anything the unseen holder could have issued.
        while True:
            try:
                after = g.next_ids(1000)
                break
            except segflake.RegistryLostDataError:
                assert time.monotonic() < deadline + 5, "IDs did not resume"
                time.sleep(0.02)
        assert min(after) > max(before)
        reclaim_ms = registry.claims_at[-1]
        floor = reclaim_ms + 500 + FAST["mark_ahead_ms"] + FAST["clock_skew_allowance_ms"]
        assert g.decode(after[0]).timestamp_ms >= floor
        assert registry.holder(g.worker_id) is not None
    finally:
        g.close()


def test_an_unmarked_claim_starts_above_an_unseen_predecessors_reach() -> None:
    # Defaults: max_drift_ms 2000, mark_ahead_ms 3000, clock_skew_allowance_ms 1000.
    registry = ForgetfulRegistry(-1)
    started = time.monotonic()
    with segflake.Snowflake.from_registry(registry, layout=SMALL) as g:
        waited = time.monotonic() - started
        first = g.next_id()
        claim_ms = registry.claims_at[0]
        assert g.decode(first).timestamp_ms >= claim_ms + 2000 + 3000 + 1000
        # The wait is the lead beyond max_drift_ms: mark_ahead_ms + clock_skew_allowance_ms.
        assert 3.8 <= waited < 8, waited
    # A marked worker ID (released at its last ID's time) starts at once.
    started = time.monotonic()
    with segflake.Snowflake.from_registry(registry, layout=SMALL, preferred_worker_id=g.worker_id) as again:
        assert time.monotonic() - started < 1.5
        assert again.next_id() > first


def test_the_skew_allowance_is_an_option_of_stubs_and_signature() -> None:
    import ast
    import inspect
    from pathlib import Path

    from segflake import _native

    shown = inspect.signature(_native.Snowflake.from_registry).parameters
    assert shown["clock_skew_allowance_ms"].default == 1000
    stub = ast.parse((Path(_native.__file__).parent / "_native.pyi").read_text())
    names = {n.name for n in ast.walk(stub) if isinstance(n, ast.ClassDef)}
    assert {"RegistryLostDataError", "LeafNodeAliveError"} <= names
    keywords = {
        a.arg
        for n in ast.walk(stub)
        if isinstance(n, ast.FunctionDef) and n.name == "from_registry"
        for a in n.args.kwonlyargs
    }
    assert "clock_skew_allowance_ms" in keywords
    with pytest.raises(segflake.InvalidArgumentError) as info:
        segflake.Snowflake.from_registry(MemoryRegistry(), clock_skew_allowance_ms=3_600_001)
    assert "clock_skew_allowance_ms" in str(info.value)
    # No skew allowance: the claim waits for mark_ahead_ms only.
    started = time.monotonic()
    with segflake.Snowflake.from_registry(MemoryRegistry(), mark_ahead_ms=300, clock_skew_allowance_ms=0) as g:
        assert 0.25 <= time.monotonic() - started < 1.5
        g.next_id()


# --- asyncio: bounded registry calls, async with -----------------------------------------


def test_an_async_registry_call_that_never_answers_is_cancelled_at_the_registry_timeout() -> None:
    class Hanging:
        def __init__(self) -> None:
            self.inner = MemoryRegistry()
            self.hang = False
            self.cancelled = 0

        async def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[int]:
            return self.inner.claim(worker_id, owner, ttl_ms)

        async def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Optional[int]:
            if self.hang:
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    self.cancelled += 1
                    raise
            return self.inner.renew(worker_id, owner, ttl_ms, mark_ms, reported_ms)

        async def release(self, worker_id: int, owner: str, mark_ms: int) -> bool:
            return self.inner.release(worker_id, owner, mark_ms)

        async def peers(self) -> List[Tuple[int, int, int]]:
            return []

    async def main() -> None:
        registry = Hanging()
        async with await segflake.from_registry_async(
            registry, layout=SMALL, lease_ttl_ms=1200, registry_timeout_ms=200, **FAST
        ) as g:
            g.next_id()
            registry.hang = True
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 5
            while registry.cancelled < 2:
                assert loop.time() < deadline, "the hanging renewals were never cancelled"
                await asyncio.sleep(0.05)
            stats = g.lease_stats()
            assert stats is not None and stats.failures >= 2
            assert stats.last_error is not None and "registry_timeout_ms" in stats.last_error
            # Nothing is stuck behind the cancelled calls: renewals go through again.
            registry.hang = False
            renewals = stats.renewals
            while True:
                stats = g.lease_stats()
                assert stats is not None
                if stats.renewals > renewals and stats.consecutive_failures == 0:
                    try:
                        g.next_id()
                        break
                    except segflake.LeaseExpiredError:
                        pass
                assert loop.time() < deadline + 5, "renewals did not resume"
                await asyncio.sleep(0.05)
        assert g.lease_stats() is not None
        with pytest.raises(segflake.ClosedError):
            g.next_id()
        assert registry.inner.holder(g.worker_id) is None

    asyncio.run(main())


def test_async_with_closes_plain_and_leased_generators() -> None:
    async def main() -> None:
        async with segflake.Snowflake(5) as plain:
            assert plain.next_id() > 0
        with pytest.raises(segflake.ClosedError):
            plain.next_id()
        registry = MemoryRegistry()
        async with await segflake.from_registry_async(registry, layout=SMALL, preferred_worker_id=4, **FAST) as g:
            assert registry.holder(4) is not None and g.next_id() > 0
        assert registry.holder(4) is None

    asyncio.run(main())


def test_a_cancelled_async_start_releases_the_worker_id_it_got() -> None:
    registry = MemoryRegistry()

    async def main() -> None:
        # The unmarked claim's lead (1 s) outlasts the caller's patience (0.2 s).
        start = segflake.from_registry_async(
            registry, layout=SMALL, preferred_worker_id=3, mark_ahead_ms=1000, clock_skew_allowance_ms=0
        )
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(start, 0.2)
        deadline = time.monotonic() + 5
        while registry.calls.count("release") == 0:
            assert time.monotonic() < deadline, "the abandoned generator kept its worker ID"
            await asyncio.sleep(0.05)

    asyncio.run(main())
    assert registry.holder(3) is None


# --- the Redis registry's start-up check ---------------------------------------------


class FakeRedis:
    """What RedisRegistry asks of a redis-py client at start-up."""

    def __init__(self, config: Optional[Dict[str, str]]) -> None:
        self.config = config

    def register_script(self, script: str) -> Any:
        return lambda keys, args: None

    def config_get(self, name: str) -> Dict[bytes, bytes]:
        if self.config is None:
            raise ConnectionError("ERR unknown command 'CONFIG'")
        return {name.encode(): self.config[name].encode()} if name in self.config else {}


def test_the_redis_registry_warns_when_a_restart_or_eviction_would_lose_marks(caplog: pytest.LogCaptureFixture) -> None:
    from segflake.registries import RedisRegistry

    with caplog.at_level("WARNING", logger="segflake"):
        risky = RedisRegistry(client=FakeRedis({"appendonly": "no", "maxmemory-policy": "allkeys-lru"}))
    assert risky.durability_warning is not None
    assert "appendonly is off" in risky.durability_warning and "maxmemory-policy" in risky.durability_warning
    assert [r.name for r in caplog.records] == ["segflake"] and "RedisRegistry" in caplog.records[0].getMessage()
    caplog.clear()
    with caplog.at_level("WARNING", logger="segflake"):
        durable = RedisRegistry(client=FakeRedis({"appendonly": "yes", "maxmemory-policy": "noeviction"}))
        managed = RedisRegistry(client=FakeRedis(None))  # CONFIG refused: not checked
        skipped = RedisRegistry(client=FakeRedis({"appendonly": "no"}), check_durability=False)
    assert durable.durability_warning is managed.durability_warning is skipped.durability_warning is None
    assert caplog.records == []


EXIT_WITHOUT_CLOSE = '''
import sys, threading, time
import segflake

class Registry:
    def __init__(self):
        self.lock, self.owner, self.mark = threading.Lock(), None, 0
    def claim(self, worker_id, owner, ttl_ms):
        with self.lock:
            if self.owner not in (None, owner):
                return None
            self.owner = owner
            return self.mark
    def renew(self, worker_id, owner, ttl_ms, mark_ms, reported_ms):
        with self.lock:
            self.mark = max(self.mark, mark_ms)
            return self.mark
    def release(self, worker_id, owner, mark_ms):
        with self.lock:
            self.owner = None
        print("released", worker_id, flush=True)
        return True
    def peers(self):
        return []

gen = segflake.Snowflake.from_registry(Registry(), layout={"preset": "twitter", "worker_bits": 0},
                                       lease_ttl_ms=300, mark_ahead_ms=100, clock_skew_allowance_ms=0)
print("id", gen.next_id(), flush=True)
time.sleep(float(sys.argv[1]))
'''


def test_a_process_that_exits_without_closing_releases_its_worker_id_and_exits_cleanly(tmp_path: Any) -> None:
    # The interpreter's exit closes the leased generator while Python can still serve its
    # lease thread's release; left to finalization, the thread called into a finalized
    # interpreter (a crash, and no release). Exits at different points of the renewal cycle.
    import subprocess
    import sys

    script = tmp_path / "exit_without_close.py"
    script.write_text(EXIT_WITHOUT_CLOSE)
    for pause in ("0", "0.05", "0.1", "0.15", "0.2", "0.3", "0.4", "0.5"):
        run = subprocess.run([sys.executable, str(script), pause], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, f"exit after {pause} s: returncode {run.returncode}: {run.stderr[-2000:]}"
        assert "released 0" in run.stdout, f"exit after {pause} s: no release: {run.stdout!r} {run.stderr[-2000:]!r}"
