"""Processes and probes for the replicated-Redis scenarios (redis_ha.sh).

Workers (each runs until SIGTERM, or --seconds as a safety cap, then writes its summary):

  redis_ha.py segments --url URL --tag T --rate R [--step N] --out F --summary F --events F
      IDs from segflake.SegmentGenerator over segflake.stores.RedisStore(URL)
  redis_ha.py serials --url URL --prefix P --rate R --out F --summary F --events F
      date serials from segflake.SerialGenerator over segflake.counters.RedisSerialCounter(URL)
  redis_ha.py http --url http://H:P --key K --rate R [--count N] --out F --summary F --events F
      IDs from a `segflake serve` (/api/segment/get/K?count=N)

IDs go to --out as u64 little-endian, flushed every 20 ms (a process killed leaves what it
issued). Every failed store call or failed request is a line `<unix ms> <kind> <message>`
in --events as it happens (kind `replica_wait` for the core's replica-wait refusal, else
`error`), so the scenario can wait for one instead of sleeping; every range a segment
worker's store handed out is a line `<unix ms> range <max_id> <step>`.

Probes:

  redis_ha.py sentinel-primary --sentinels P,P,P --service S [--not PORT] [--all] --timeout S
      waits until a sentinel (--all: every sentinel) names a primary (other than --not)
      that answers ROLE as master; prints its port
  redis_ha.py sentinel-healthy --sentinels P,P,P --service S --replicas N --timeout S
      waits until every sentinel names the same primary, which has N replicas online, and
      every sentinel knows the N replicas up and the other sentinels; prints its port
  redis_ha.py cluster-healthy --ports P,... --timeout S
      waits until every node says cluster_state:ok, every primary has an online replica,
      and all nodes agree on the primaries
  redis_ha.py recovered --since-ms T --timeout S SPEC...
      waits until every process issued again after the failover at T; SPEC is
      seg:FILE:FLOOR (an ID >= FLOOR: a range allocated after the failover),
      ser:FILE (a serial counted in a second after T) or lease:PORT:N:TTL (N worker-ID
      leases on the server at PORT expire after T + TTL: renewed there after the
      failover); prints each one's delay (ms)
  redis_ha.py wait-events --since-ms T [--kind K] --timeout S FILE...
      waits until every events file has a line of kind K (replica_wait) from T on
  redis_ha.py wait-counter --port P --key K --at-least N --timeout S
      waits until the integer at K on the server at P is at least N
  redis_ha.py cluster-owner --ports P,... --slot N [--not PORT] --timeout S
      waits until every node says cluster_state:ok and they name one primary (other than
      --not) for slot N; prints its port
  redis_ha.py summary --dir D NAME...
      one line over the workers' summaries (D/NAME.json); fails when one issued nothing
"""

from __future__ import annotations

import argparse
import array
import json
import os
import signal
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

WAIT_TEXT = "replica(s) it must reach"


def now_ms() -> int:
    return int(time.time() * 1000)


class Recorder:
    """IDs to a file, failures to an events file and a summary, stop on SIGTERM."""

    def __init__(self, a: argparse.Namespace, lang: str) -> None:
        self.out = open(a.out, "wb", buffering=0)
        self.events = open(a.events, "a", buffering=1)
        self.summary_path = a.summary
        self.buf = array.array("Q")
        self.last_flush = time.monotonic()
        self.stop = False
        self.deadline = time.monotonic() + a.seconds
        self.s: Dict[str, Any] = {"lang": lang, "pid": os.getpid(), "issued": 0, "errors": {}, "failures": {},
                                  "messages": [], "longest_stall_ms": 0.0}
        self.last_ok = time.monotonic()
        self.lock = threading.Lock()
        signal.signal(signal.SIGTERM, self._on_term)

    def _on_term(self, *_: Any) -> None:
        self.stop = True

    def running(self) -> bool:
        return not self.stop and time.monotonic() < self.deadline

    def issued(self, ids: List[int]) -> None:
        now = time.monotonic()
        self.buf.extend(ids)
        self.s["issued"] += len(ids)
        self.s["longest_stall_ms"] = max(self.s["longest_stall_ms"], (now - self.last_ok) * 1000)
        self.last_ok = now
        if now - self.last_flush > 0.02:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            self.out.write(self.buf.tobytes())
            self.buf = array.array("Q")
        self.last_flush = time.monotonic()

    def failure(self, exc: BaseException) -> None:
        """A store call (or request) that failed: counted by kind, logged at once."""
        text = f"{type(exc).__name__}: {exc}"
        kind = "replica_wait" if WAIT_TEXT in text else "error"
        with self.lock:
            self.s["failures"][kind] = self.s["failures"].get(kind, 0) + 1
            if len(self.s["messages"]) < 6 and not any(m[:60] == text[:60] for m in self.s["messages"]):
                self.s["messages"].append(text[:600])
            self.events.write(f"{now_ms()} {kind} {' '.join(text.split())[:300]}\n")

    def allocated(self, answer: Any) -> None:
        """A range the store handed out: `<unix ms> range <max_id> <step>` in the events."""
        if answer is not None:
            top, step = (answer["max_id"], answer["step"]) if isinstance(answer, dict) else answer[:2]
            self.events.write(f"{now_ms()} range {top} {step}\n")

    def error(self, exc: BaseException) -> None:
        """An error the caller saw (the generator's)."""
        name = type(exc).__name__
        self.s["errors"][name] = self.s["errors"].get(name, 0) + 1

    def close(self, **extra: Any) -> None:
        self.flush()
        self.out.close()
        self.s.update(extra)
        with open(self.summary_path, "w") as f:
            json.dump(self.s, f)


def paced(rec: Recorder, rate: float, step: Callable[[], Optional[List[int]]]) -> None:
    """Calls step() about rate times a second until SIGTERM (after a stall, at the rate
    again rather than in a burst); a step that raises is recorded and retried after 20 ms."""
    import segflake

    t0 = time.monotonic()
    done = 0
    while rec.running():
        due = int((time.monotonic() - t0) * rate) - done
        if due > rate * 0.05:
            # After a stall, go on at the rate instead of catching up in a burst.
            t0 += (due - rate * 0.05) / rate
            due = int(rate * 0.05)
        if due <= 0:
            time.sleep(0.002)
            continue
        for _ in range(min(due, 500)):
            try:
                ids = step()
            except segflake.SegflakeError as exc:
                rec.error(exc)
                time.sleep(0.02)
                break
            done += 1
            if ids:
                rec.issued(ids)
        if time.monotonic() - rec.last_flush > 0.02:
            rec.flush()


def cmd_segments(a: argparse.Namespace) -> int:
    import segflake
    from segflake.stores import RedisStore

    rec = Recorder(a, "python")
    inner = RedisStore(a.url)

    class Counting:
        calls = 0

        def allocate(self, tag: str, step: int) -> Any:
            try:
                answer = inner.allocate(tag, step)
            except Exception as exc:
                rec.failure(exc)
                raise
            Counting.calls += 1
            rec.allocated(answer)
            return answer

    gen = segflake.SegmentGenerator(Counting(), step=a.step, max_step=a.step, dynamic_step=False, wait_timeout_ms=1000)
    tag = gen.tag(a.tag)
    paced(rec, a.rate, lambda: [tag.next_id()])
    stats = tag.stats()
    gen.close()
    rec.close(allocations=Counting.calls, engine_failures=stats.failures)
    return 0


def cmd_serials(a: argparse.Namespace) -> int:
    import segflake
    from segflake.counters import RedisSerialCounter

    rec = Recorder(a, "python")
    counter = RedisSerialCounter(a.url, prefix=a.prefix)
    gen = segflake.SerialGenerator(counter=counter, sequence_digits=6)
    state = {"previous": 0, "out_of_order": 0}

    def one() -> List[int]:
        try:
            s = gen.next()
        except segflake.SegflakeError as exc:
            rec.failure(exc)
            raise
        if s <= state["previous"]:
            state["out_of_order"] += 1
        state["previous"] = s
        return [s]

    paced(rec, a.rate, one)
    counter.close()
    rec.close(out_of_order=state["out_of_order"])
    return 0


def cmd_http(a: argparse.Namespace) -> int:
    import http.client
    from urllib.parse import urlsplit

    import segflake

    rec = Recorder(a, "serve")
    u = urlsplit(a.url)
    conn: Optional[http.client.HTTPConnection] = None
    path = f"/api/segment/get/{a.key}?count={a.count}"

    class Refused(segflake.SegflakeError):
        pass

    def one() -> List[int]:
        nonlocal conn
        try:
            if conn is None:
                conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
            conn.request("GET", path)
            r = conn.getresponse()
            body = r.read()
        except (OSError, http.client.HTTPException) as exc:
            conn = None
            err = Refused(f"transport: {exc}")
            rec.failure(err)
            raise err from None
        if r.status != 200:
            err = Refused(f"HTTP {r.status}: {body[:400].decode(errors='replace')}")
            rec.failure(err)
            raise err
        return [int(x) for x in json.loads(body)["ids"]]

    paced(rec, a.rate, one)
    rec.close()
    return 0


# ---------------------------------------------------------------------------------------
# probes


def _client(port: int) -> Any:
    import redis

    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=1, socket_connect_timeout=1, decode_responses=True)


def _until(timeout: float, probe: Callable[[], Any], what: Callable[[], str]) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            got = probe()
        except Exception:
            got = None
        if got is not None:
            return got
        if time.monotonic() > deadline:
            raise SystemExit(f"not within {timeout} s: {what()}")
        time.sleep(0.05)


def _master_addr(sport: int, service: str) -> Optional[int]:
    addr = _client(sport).execute_command("SENTINEL", "get-master-addr-by-name", service)
    return int(addr[1]) if addr else None


def _is_master(port: int) -> bool:
    return _client(port).execute_command("ROLE")[0] == "master"


def cmd_sentinel_primary(a: argparse.Namespace) -> int:
    sentinels = [int(p) for p in a.sentinels.split(",")]
    seen: Dict[int, Any] = {}

    def probe() -> Optional[int]:
        names = []
        for s in sentinels:
            try:
                names.append(_master_addr(s, a.service))
            except Exception as exc:
                names.append(None)
                seen[s] = str(exc)
                continue
            seen[s] = names[-1]
        fresh = [p for p in names if p is not None and p != a.not_port]
        if a.all and (len(fresh) != len(sentinels) or len(set(fresh)) != 1):
            return None
        for p in fresh:
            try:
                if _is_master(p):
                    return p
            except Exception:
                pass
        return None

    print(_until(a.timeout, probe, lambda: f"the sentinels name {seen}"))
    return 0


def cmd_sentinel_healthy(a: argparse.Namespace) -> int:
    sentinels = [int(p) for p in a.sentinels.split(",")]
    state: Dict[str, Any] = {}

    def probe() -> Optional[int]:
        primaries = {_master_addr(s, a.service) for s in sentinels}
        state["primaries"] = primaries
        if len(primaries) != 1 or None in primaries:
            return None
        p = primaries.pop()
        info = _client(p).info("replication")
        state["info"] = {k: v for k, v in info.items() if k.startswith(("role", "connected", "slave"))}
        if info.get("role") != "master":
            return None
        online = [v for k, v in info.items() if k.startswith("slave") and isinstance(v, dict) and v.get("state") == "online"]
        if len(online) != a.replicas:
            return None
        for s in sentinels:
            c = _client(s)
            reps = c.execute_command("SENTINEL", "replicas", a.service)
            flags = [dict(zip(r[::2], r[1::2])).get("flags", "") for r in reps] if reps and isinstance(reps[0], list) else \
                [r.get("flags", "") for r in reps]
            up = [f for f in flags if f == "slave"]
            state[f"sentinel {s}"] = flags
            if len(up) != a.replicas:
                return None
            others = c.execute_command("SENTINEL", "sentinels", a.service)
            if len(others) != len(sentinels) - 1:
                return None
        # the replicas themselves: linked to this primary
        for r in online:
            ri = _client(int(r["port"])).info("replication")
            if ri.get("master_port") != p or ri.get("master_link_status") != "up":
                return None
        return p

    print(_until(a.timeout, probe, lambda: f"{state}"))
    return 0


def cmd_cluster_healthy(a: argparse.Namespace) -> int:
    ports = [int(p) for p in a.ports.split(",")]
    state: Dict[str, Any] = {}

    def probe() -> Optional[str]:
        views = []
        for p in ports:
            c = _client(p)
            if c.execute_command("CLUSTER", "INFO").find("cluster_state:ok") < 0:
                state["not ok"] = p
                return None
            nodes = c.execute_command("CLUSTER", "NODES")
            if isinstance(nodes, dict):  # redis-py parses it
                lines = [f"{v['node_id']} {k} {v['flags']}" for k, v in nodes.items()]
            else:
                lines = nodes.splitlines()
            masters = sorted(ln.split()[1].split("@")[0] for ln in lines if "master" in ln.split()[2] and "fail" not in ln.split()[2])
            views.append(tuple(masters))
            if any("fail" in ln.split()[2] for ln in lines):
                state["fail flag"] = p
                return None
        if len(set(views)) != 1:
            state["views"] = views
            return None
        for m in views[0]:
            info = _client(int(m.rsplit(":", 1)[1])).info("replication")
            online = [v for k, v in info.items() if k.startswith("slave") and isinstance(v, dict) and v.get("state") == "online"]
            if info.get("role") != "master" or not online:
                state["no replica"] = m
                return None
        return ",".join(views[0])

    print(_until(a.timeout, probe, lambda: f"{state}"))
    return 0


def _last_u64(path: str) -> Optional[int]:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell() - f.tell() % 8
            if size == 0:
                return None
            f.seek(size - 8)
            return int.from_bytes(f.read(8), "little")
    except FileNotFoundError:
        return None


def _renewed(port: int, after_ms: int) -> int:
    """How many worker-ID leases on the server at port expire after after_ms (renewed on
    it after after_ms - ttl)."""
    c = _client(port)
    n = 0
    for k in c.scan_iter(match="{segflake}:worker:*", count=1000):
        pttl = c.pttl(k)
        if pttl > 0 and now_ms() + pttl > after_ms + 20:
            n += 1
    return n


def serial_ms(serial: int, digits: int = 6) -> int:
    """The start of the UTC second a serial (yyMMddHHmmss + digits) was counted in."""
    import calendar

    s = str(serial // 10**digits)
    t = time.strptime("20" + s, "%Y%m%d%H%M%S")
    return calendar.timegm(t) * 1000


def cmd_recovered(a: argparse.Namespace) -> int:
    t = a.since_ms
    tests: Dict[str, Callable[[], bool]] = {}
    for spec in a.specs:
        kind, path, *rest = spec.split(":")
        name = os.path.basename(path).rsplit(".", 1)[0]
        if kind == "seg":
            floor = int(rest[0])
            tests[name] = lambda p=path, f=floor: (_last_u64(p) or 0) >= f
        elif kind == "ser":
            tests[name] = lambda p=path: serial_ms(_last_u64(p) or 10**17) > t
        elif kind == "lease":
            port, count, ttl = int(path), int(rest[0]), int(rest[1])
            name = f"leases@{port}"
            tests[name] = lambda p=port, c=count, x=t + ttl: _renewed(p, x) >= c
        else:
            raise SystemExit(f"unknown spec {spec}")
    got: Dict[str, int] = {}
    deadline = time.monotonic() + a.timeout
    while len(got) < len(tests):
        for name, test in tests.items():
            if name not in got and test():
                got[name] = now_ms() - t
        if time.monotonic() > deadline:
            print(json.dumps({"recovered": got, "missing": sorted(set(tests) - set(got))}))
            return 1
        time.sleep(0.02)
    print(json.dumps(got))
    return 0


def cmd_wait_events(a: argparse.Namespace) -> int:
    """Waits until every events file has a line of --kind stamped at or after --since-ms."""
    def seen(path: str) -> bool:
        try:
            with open(path) as f:
                for line in f:
                    t, kind, *_ = line.split(" ", 2) + ["", ""]
                    if kind == a.kind and int(t) >= a.since_ms:
                        return True
        except FileNotFoundError:
            pass
        return False

    deadline = time.monotonic() + a.timeout
    while not all(seen(p) for p in a.files):
        if time.monotonic() > deadline:
            missing = [os.path.basename(p) for p in a.files if not seen(p)]
            raise SystemExit(f"no {a.kind} failure within {a.timeout} s from {', '.join(missing)}")
        time.sleep(0.02)
    print(now_ms() - a.since_ms)
    return 0


def cmd_wait_counter(a: argparse.Namespace) -> int:
    """Waits until the integer at --key on the server at --port is at least --at-least."""
    c = _client(a.port)
    got = _until(a.timeout, lambda: (lambda v: v if v is not None and int(v) >= a.at_least else None)(c.get(a.key)),
                 lambda: f"{a.key} = {c.get(a.key)} on port {a.port}, not {a.at_least}")
    print(got)
    return 0


def cmd_cluster_owner(a: argparse.Namespace) -> int:
    """The port of the primary that serves --slot, once every node in --ports says
    cluster_state:ok and names it (other than --not)."""
    ports = [int(p) for p in a.ports.split(",")]

    def probe() -> Optional[int]:
        owners = set()
        for p in ports:
            c = _client(p)
            if "cluster_state:ok" not in c.execute_command("CLUSTER", "INFO"):
                return None
            for start, end, *nodes in c.execute_command("CLUSTER", "SLOTS"):
                if start <= a.slot <= end:
                    owners.add(int(nodes[0][1]))
        if len(owners) != 1:
            return None
        owner = owners.pop()
        return owner if owner != a.not_port and _is_master(owner) else None

    print(_until(a.timeout, probe, lambda: f"slot {a.slot} has no new primary"))
    return 0


def cmd_summary(a: argparse.Namespace) -> int:
    """One line over the workers' summaries (NAME.json in --dir): IDs issued, failed store
    calls by kind, errors seen by the callers. Fails when a worker issued nothing or a
    serial worker's serials did not increase."""
    parts, bad, waits = [], [], 0
    for name in a.names:
        s = json.load(open(os.path.join(a.dir, name + ".json")))
        issued = s.get("issued", s.get("ids", 0))
        fails = s.get("failures", {})
        waits += fails.get("replica_wait", 0)
        errs = s.get("errors", {})
        if not issued:
            bad.append(f"{name} issued nothing: {s}")
        if s.get("out_of_order"):
            bad.append(f"{name}: {s['out_of_order']} serials not above the one before")
        detail = ", ".join(f"{k} {v}" for k, v in sorted({**fails, **errs}.items()))
        parts.append(f"{name} {issued}" + (f" ({detail})" if detail else ""))
    print(f"{'; '.join(parts)} | {waits}")
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 1
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("segments", "serials", "http"):
        p = sub.add_parser(name)
        p.add_argument("--url", required=True)
        p.add_argument("--rate", type=float, required=True)
        p.add_argument("--out", required=True)
        p.add_argument("--summary", required=True)
        p.add_argument("--events", required=True)
        p.add_argument("--seconds", type=float, default=170)
        if name == "segments":
            p.add_argument("--tag", required=True)
            p.add_argument("--step", type=int, default=1000)
        if name == "serials":
            p.add_argument("--prefix", required=True)
        if name == "http":
            p.add_argument("--key", required=True)
            p.add_argument("--count", type=int, default=100)
    p = sub.add_parser("sentinel-primary")
    p.add_argument("--sentinels", required=True)
    p.add_argument("--service", required=True)
    p.add_argument("--not", dest="not_port", type=int, default=None)
    p.add_argument("--all", action="store_true")
    p.add_argument("--timeout", type=float, default=30)
    p = sub.add_parser("sentinel-healthy")
    p.add_argument("--sentinels", required=True)
    p.add_argument("--service", required=True)
    p.add_argument("--replicas", type=int, default=2)
    p.add_argument("--timeout", type=float, default=30)
    p = sub.add_parser("cluster-healthy")
    p.add_argument("--ports", required=True)
    p.add_argument("--timeout", type=float, default=30)
    p = sub.add_parser("recovered")
    p.add_argument("--since-ms", type=int, required=True)
    p.add_argument("--timeout", type=float, default=30)
    p.add_argument("specs", nargs="+")
    p = sub.add_parser("summary")
    p.add_argument("--dir", required=True)
    p.add_argument("names", nargs="+")
    p = sub.add_parser("wait-events")
    p.add_argument("--since-ms", type=int, required=True)
    p.add_argument("--kind", default="replica_wait")
    p.add_argument("--timeout", type=float, default=20)
    p.add_argument("files", nargs="+")
    p = sub.add_parser("wait-counter")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--at-least", type=int, required=True)
    p.add_argument("--timeout", type=float, default=20)
    p = sub.add_parser("cluster-owner")
    p.add_argument("--ports", required=True)
    p.add_argument("--slot", type=int, required=True)
    p.add_argument("--not", dest="not_port", type=int, default=None)
    p.add_argument("--timeout", type=float, default=30)
    a = ap.parse_args()
    return {
        "summary": cmd_summary,
        "wait-events": cmd_wait_events,
        "wait-counter": cmd_wait_counter,
        "cluster-owner": cmd_cluster_owner,
        "segments": cmd_segments,
        "serials": cmd_serials,
        "http": cmd_http,
        "sentinel-primary": cmd_sentinel_primary,
        "sentinel-healthy": cmd_sentinel_healthy,
        "cluster-healthy": cmd_cluster_healthy,
        "recovered": cmd_recovered,
    }[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
