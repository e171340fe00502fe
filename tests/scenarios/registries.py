"""The Python ZooKeeper and etcd registries against real servers (SEGFLAKE_ZK_HOSTS,
SEGFLAKE_ETCD_ENDPOINT): Leaf's znode layout read and written byte for byte, a Leaf node
taken over with its worker ID and reported time, owners excluded, marks that only grow,
release, peers, and leased generators end to end. Prints one line; exits 1 on a failure.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from typing import Any, List

import segflake
from kazoo.client import KazooClient
from segflake.registries import LEAF_REPORT_MS, EtcdRegistry, ZooKeeperRegistry

ZK = os.environ["SEGFLAKE_ZK_HOSTS"]
ETCD = os.environ["SEGFLAKE_ETCD_ENDPOINT"]
TWITTER = {"preset": "twitter"}


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def leaf_node(zk: KazooClient, root: str, ip: str, port: str, timestamp: int) -> str:
    """A Leaf node's forever znode, created as Leaf's SnowflakeZookeeperHolder does."""
    data = json.dumps({"ip": ip, "port": port, "timestamp": timestamp}, separators=(",", ":"))
    return str(zk.create(f"{root}/forever/{ip}:{port}-", data.encode(), sequence=True, makepath=True))


def zookeeper() -> str:
    zk = KazooClient(hosts=ZK)
    zk.start(timeout=5)
    root = f"/snowflake/check-{uuid.uuid4().hex[:8]}"
    now = int(time.time() * 1000)
    # A running Leaf fleet: nodes 0 and 1.
    leaf_ts = now - 1000
    first = leaf_node(zk, root, "10.0.0.9", "8080", leaf_ts)
    second = leaf_node(zk, root, "10.0.0.10", "8080", now)
    expect(first.endswith("-0000000000") and second.endswith("-0000000001"), f"{first} {second}")

    a = ZooKeeperRegistry(ZK, root=root, identity="10.0.0.9:8080", session_timeout_ms=4000)
    b = ZooKeeperRegistry(ZK, root=root, identity="10.0.0.9:8080", session_timeout_ms=4000)
    fresh = ZooKeeperRegistry(ZK, root=root, identity="10.0.0.11:8080", session_timeout_ms=4000)
    try:
        # The Leaf node's identity gets its worker ID and a mark above its report, with the
        # forever node's record (version, age by ZooKeeper's clock) for the Leaf-node check.
        got = a.claim(7, "owner-a", 3000)
        expect(got is not None and got.pop("age_ms") < 4500, f"takeover claim's age: {got}")
        want = {"worker_id": 0, "mark_ms": leaf_ts + LEAF_REPORT_MS, "identity": "10.0.0.9:8080", "version": 0}
        expect(got == want, f"takeover claim: {got}")
        expect(b.claim(0, "owner-b", 3000) is None, "a second owner of one identity claimed it")
        expect(b.claim(5, "owner-b", 3000) is None, "a claim of another ID was not refused")
        # A new identity gets the next sequence number, with nothing to start above.
        got = fresh.claim(3, "owner-c", 3000)
        expect(got == {"worker_id": 2, "mark_ms": 0}, f"new identity: {got}")
        names = sorted(zk.get_children(f"{root}/forever"))
        expect("10.0.0.11:8080-0000000002" in names, f"{names}")

        # Renewals write Leaf's JSON byte for byte, mark - 3 s, and never lower it.
        mark = now + 60_000
        expect(a.renew(0, "owner-a", 3000, mark, now) == mark, "renew did not store the mark")
        raw, _ = zk.get(first)
        want = json.dumps({"ip": "10.0.0.9", "port": "8080", "timestamp": mark - LEAF_REPORT_MS}, separators=(",", ":"))
        expect(raw.decode() == want, f"forever node holds {raw!r}, not {want}")
        expect(a.renew(0, "owner-a", 3000, mark - 5000, now) == mark, "a lower mark lowered the stored one")
        expect(b.renew(0, "owner-b", 3000, mark + 1, now) is None, "another owner renewed")

        # Peers: the segflake holders' reports and the Leaf node that is still reporting.
        peers = {w: (r, age) for w, r, age in a.peers()}
        expect(peers.get(0, (0, 0))[0] == now and 1 in peers, f"peers: {peers}")
        expect(all(0 <= age <= 10_000 for _, age in peers.values()), f"peer ages: {peers}")

        # Release sets the mark, deletes the ephemeral node; the next owner starts above it.
        expect(a.release(0, "owner-a", mark + 10), "release refused")
        expect(not zk.exists(f"{root}/leaf_temporary/0"), "the ephemeral node outlived the release")
        got = b.claim(0, "owner-b", 3000)
        expect(got is not None and (got["worker_id"], got["mark_ms"]) == (0, mark + 10), f"after release: {got}")
        # The claim wrote nothing to the forever node (its version is the release's).
        expect(got["version"] == zk.get(first)[1].version, f"version {got} vs {zk.get(first)[1]}")
        # ZooKeeper lost the holder's ephemeral node while its session lives: renew says
        # so (-1), rather than "taken" (None).
        zk.delete(f"{root}/leaf_temporary/0")
        expect(b.renew(0, "owner-b", 3000, mark + 20, now) == -1, "a lost live node was not reported lost")
        expect(b.claim(0, "owner-b", 3000) is not None, "claim after the loss")
        expect(b.release(0, "owner-b", mark + 10), "second release refused")
    finally:
        for r in (a, b, fresh):
            r.close()

    # End to end: a leased generator takes over Leaf node 1, above its report; the node
    # was written within a Leaf report period, so it looks once more a period later.
    registry = ZooKeeperRegistry(ZK, root=root, identity="10.0.0.10:8080", session_timeout_ms=4000)
    # (The lease outlasts that look: lease_ttl_ms above one Leaf report period.)
    started = time.monotonic()
    gen = segflake.Snowflake.from_registry(registry, layout=TWITTER, lease_ttl_ms=10_000)
    waited = time.monotonic() - started
    expect(4.4 <= waited < 8, f"a recently written forever node was taken over after {waited:.1f} s")
    try:
        ids = gen.next_ids(1000)
        parts = [gen.decode(i) for i in (ids[0], ids[-1])]
        expect(all(p.worker_id == 1 for p in parts), f"worker IDs {parts}")
        expect(parts[0].timestamp_ms > now + LEAF_REPORT_MS, "an ID not above the Leaf node's report")
        expect(zk.exists(f"{root}/leaf_temporary/1") is not None, "no ephemeral node while held")
    finally:
        gen.close()
        registry.close()
    expect(zk.exists(f"{root}/leaf_temporary/1") is None, "close kept the ephemeral node")
    alive = leaf_alive(zk, root, now)
    zk.delete(root, recursive=True)
    zk.stop()
    return (
        "zookeeper: Leaf layout, takeover (worker ID 0 above its report), identities, marks, peers, release, "
        f"generator; {alive}; " + cache_file()
    )


def leaf_alive(zk: KazooClient, root: str, now: int) -> str:
    """A Leaf node that keeps reporting for an identity: a claim for it is refused."""
    path = leaf_node(zk, root, "10.0.0.30", "8080", now)
    stop = threading.Event()

    def report() -> None:  # Leaf's ScheduledExecutorService (every 3 s), faster
        while not stop.wait(1.0):
            ts = int(time.time() * 1000)
            zk.set(path, json.dumps({"ip": "10.0.0.30", "port": "8080", "timestamp": ts}, separators=(",", ":")).encode())

    reporter = threading.Thread(target=report, daemon=True)
    reporter.start()
    registry = ZooKeeperRegistry(ZK, root=root, identity="10.0.0.30:8080", session_timeout_ms=4000)
    try:
        segflake.Snowflake.from_registry(registry, layout=TWITTER, lease_ttl_ms=10_000)
        raise AssertionError("started beside a Leaf node that still reports")
    except segflake.LeafNodeAliveError as e:
        expect(e.identity == "10.0.0.30:8080", f"{e.identity}")
    finally:
        stop.set()
        reporter.join()
        registry.close()
    seq = int(path.rpartition("-")[2])
    expect(zk.exists(f"{root}/leaf_temporary/{seq}") is None, "the refused claim kept its ephemeral node")
    return "a live Leaf node refused (LeafNodeAliveError)"


def cache_file() -> str:
    """Leaf's worker-ID cache: recorded while ZooKeeper serves, used (opt-in) when it is down."""
    root = f"/snowflake/cache-{uuid.uuid4().hex[:8]}"
    path = f"/tmp/segflake-cache-{uuid.uuid4().hex[:8]}/workerID.properties"
    opts = dict(root=root, identity="10.0.0.20:8080", session_timeout_ms=4000)
    registry = ZooKeeperRegistry(ZK, cache_file=path, **opts)
    gen = segflake.Snowflake.from_registry(registry, layout=TWITTER, lease_ttl_ms=3000)
    last = gen.next_ids(1000)[-1]
    worker = gen.worker_id
    gen.close()
    registry.close()
    fields = dict(line.split("=") for line in open(path).read().split())
    expect(int(fields["workerID"]) == worker and int(fields["markMs"]) >= gen.decode(last).timestamp_ms, f"cache: {fields}")

    dead = "127.0.0.1:1"  # nothing listens: ZooKeeper is down
    try:
        segflake.Snowflake.from_registry(
            ZooKeeperRegistry(dead, connect_timeout=0.3, **opts), layout=TWITTER, claim_wait_ms=1000
        )
        raise AssertionError("started without ZooKeeper and without a cache file")
    except Exception as e:  # kazoo's timeout at connect, or the lease's RegistryError
        expect("Registry" in type(e).__name__ or "Timeout" in type(e).__name__, f"{type(e).__name__}: {e}")
    offline = ZooKeeperRegistry(dead, cache_file=path, connect_timeout=0.3, **opts)
    gen = segflake.Snowflake.from_registry(offline, layout=TWITTER, lease_ttl_ms=3000, claim_wait_ms=1000)
    ids = gen.next_ids(1000)
    expect(gen.worker_id == worker and min(ids) > last, "the cached worker ID did not resume above its mark")
    time.sleep(1.5)  # renewals while ZooKeeper stays down raise the recorded mark
    more = gen.next_ids(10)
    gen.close()
    offline.close()
    recorded = int(dict(line.split("=") for line in open(path).read().split())["markMs"])
    expect(recorded >= gen.decode(more[-1]).timestamp_ms, "the offline mark was not recorded")
    return f"cache file: worker ID {worker} resumed with ZooKeeper down, above the recorded mark; refused without it"


def etcd() -> str:
    prefix = f"/segflake-check-{uuid.uuid4().hex[:8]}"
    a = EtcdRegistry(ETCD, prefix=prefix)
    b = EtcdRegistry(ETCD, prefix=prefix)
    now = int(time.time() * 1000)
    expect(a.claim(3, "owner-a", 2000) == 0, "a fresh ID's mark is not 0")
    expect(b.claim(3, "owner-b", 2000) is None, "another owner claimed a held ID")
    expect(a.claim(3, "owner-a", 2000) == 0, "the holder's repeated claim was refused")
    expect(a.renew(3, "owner-a", 2000, now + 5000, now) == now + 5000, "renew")
    expect(a.renew(3, "owner-a", 2000, now + 10, now) == now + 5000, "a lower mark lowered the stored one")
    expect(b.renew(3, "owner-b", 2000, now + 9000, now) is None, "another owner renewed")
    peers = a.peers()
    expect(peers == [(3, now, 0)], f"peers: {peers}")
    expect(a.release(3, "owner-a", now + 6000), "release refused")
    expect(b.claim(3, "owner-b", 2000) == now + 6000, "the next owner did not get the released mark")
    expect(not a.release(3, "owner-a", 0), "a non-holder released")
    b.close()
    # A holder that stops renewing loses the ID with its etcd lease; the mark stays.
    expect(a.claim(4, "owner-a", 1000) == 0, "claim 4")
    expect(a.renew(4, "owner-a", 1000, now + 7000, now) == now + 7000, "renew 4")
    time.sleep(3.5)
    expect(b.claim(4, "owner-b", 1000) == now + 7000, "an expired lease was not free, or its mark was lost")
    expect(a.renew(4, "owner-a", 1000, now + 8000, now) is None, "a holder renewed after its lease expired")
    # etcd lost the worker key while its lease lives: renew says so (-1).
    expect(a.claim(5, "owner-a", 2000) == 0, "claim 5")
    a.client.delete(f"{prefix}/worker/5")
    expect(a.renew(5, "owner-a", 2000, now + 1000, now) == -1, "a lost worker key was not reported lost")
    a.close()
    b.close()

    ids: List[int] = []
    gens: List[Any] = []
    for _ in range(3):
        # Unused worker IDs (no mark): a short lead keeps each start-up quick.
        gens.append(
            segflake.Snowflake.from_registry(
                EtcdRegistry(ETCD, prefix=prefix),
                layout={"preset": "twitter", "worker_bits": 2},
                mark_ahead_ms=500,
                clock_skew_allowance_ms=0,
            )
        )
    workers = sorted(g.worker_id for g in gens)
    expect(len(set(workers)) == 3, f"generators share worker IDs: {workers}")
    for g in gens:
        ids += g.next_ids(1000)
        g.close()
    expect(len(set(ids)) == len(ids), "duplicate IDs")
    return f"etcd: claim/renew/release/peers, lease expiry, 3 generators on worker IDs {workers}"


def main() -> int:
    print(f"python registries: {zookeeper()}; {etcd()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
