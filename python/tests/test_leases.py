"""Leased worker IDs (Snowflake.from_registry) through in-process registries written in
Python: the binding's translation of calls, answers, exceptions and errors. The real
Redis, PostgreSQL and MariaDB registries run in tests/scenarios (lease_*)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import pytest

import segflake

SMALL = {"preset": "twitter", "worker_bits": 3}  # 8 worker IDs


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
    gens = [segflake.Snowflake.from_registry(registry, layout=SMALL, lease_ttl_ms=2000) for _ in range(3)]
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
    g = segflake.Snowflake.from_registry(registry, layout=SMALL, lease_ttl_ms=300)
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
    g = segflake.Snowflake.from_registry(registry, layout=SMALL, lease_ttl_ms=600)
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
    a = segflake.Snowflake.from_registry(KvRegistry(kv), layout=SMALL, preferred_worker_id=2)
    b = segflake.Snowflake.from_registry(KvRegistry(kv), layout=SMALL, preferred_worker_id=2)
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
        g = await segflake.from_registry_async(registry, layout=SMALL, preferred_worker_id=6)
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
