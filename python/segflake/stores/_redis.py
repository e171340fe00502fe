"""One counter per tag in Redis, advanced with ``INCRBY`` (redis-py)."""

from __future__ import annotations

import re
import secrets
import threading
from typing import Any, Dict, Optional, Tuple, Union

from .._native import StoreError
from ._common import Residue, check_max_id, check_step, check_tag, give_back_args, segment_statement
from ._redis_client import ReplicaWrites, redis_client, url_replicas

#: The key holding the database's residue class as ``DELTA:REMAINDER`` (Tinyid's
#: multi-database mode), as the CLI reads it.
RESIDUE_KEY = segment_statement("redis", "residue_key")
_RESIDUE = re.compile(r"([0-9]{1,20}):([0-9]{1,20})")

# The core's script: INCRBY on a missing key would start it at 0 and hand out ID 0 and IDs
# a Leaf row never would, so a tag that was not created with ensure_tag is refused (NOTAG).
_ALLOCATE = segment_statement("redis", "allocate")


def give_back_marker(key: str) -> str:
    """The core's marker key for one give back on ``key`` (a fresh random token): a script a
    client resends after a lost reply finds it and changes nothing."""
    return segment_statement("redis", "give_back_marker").replace("<key>", key).replace("<token>", secrets.token_hex(12))


def give_back_script() -> str:
    """The core's give-back script (``KEYS[1]`` the tag's key, ``KEYS[2]`` this give back's
    marker, ``ARGV[1]`` the expected max_id, ``ARGV[2]`` the new one; answers 1 if it set it), shared with
    :class:`segflake.stores.AsyncRedisStore`."""
    return segment_statement("redis", "give_back")


class RedisStore:
    """Segments from Redis: the key ``prefix + tag`` holds the tag's ``max_id``, and an
    allocation is ``INCRBY key step`` (inside a script that first checks the key exists).

    ``url``: ``redis://HOST[:PORT][/DB]``, ``redis+sentinel://H:P[,H:P…]/SERVICE[/DB]``
    (the primary the sentinels name, followed across failovers) or
    ``redis+cluster://H:P[,H:P…]`` (the slot map read from the nodes, ``MOVED`` followed);
    ``rediss…`` for TLS (the server's certificate must chain to ``ca_file``, or the URL's
    ``ca=PATH``, else to the system's certificate authorities, and name the host; a CA
    file with ``redis://`` is refused). Or pass ``client``: a ``redis.Redis``, a
    ``Sentinel(...).master_for(...)`` client or a ``redis.cluster.RedisCluster``.

    **Replica wait.** Every allocation and give back is followed by ``WAIT`` on its own
    connection (on a Cluster, the connection to the slot's primary), and one that fewer
    replicas acknowledged than required raises :class:`segflake.StoreError` with the
    core's message: nothing is issued from it, since a failover to a replica without it
    would hand the same range out again. How many: the URL's ``replicas=N`` (0 turns the
    wait off), else every replica the primary has connected at first use (``ROLE``), or
    the server's ``min-replicas-to-write`` if more; within half of
    ``socket_timeout``. ``ensure_tag``
    creates the key (``SET NX``, Leaf's ``max_id = 1`` by default). redis-py's client is
    thread-safe and reconnects on its own. Requires ``appendonly yes`` with
    ``appendfsync always`` (``everysec`` survives a server process crash, not a power loss):
    without the append-only file a restarted server forgets the counters and hands the
    same IDs out again. Redis keeps no step per tag: every allocation uses the step the
    generator asks for. A tag without a key is answered ``None``
    (:class:`segflake.UnknownTagError`), or created with ``create_missing_tags=True``.
    ``give_back`` (called by a generator that closes with IDs it fetched and did not
    issue) is the core's single-key script: the key is set to the lower value only if it
    still holds the expected one.

    Tinyid's multi-database mode: a Redis of a :class:`segflake.stores.MultiStore` states
    its residue class in the key ``segflake:leaf_alloc_residue`` (whatever the ``prefix``)
    as ``DELTA:REMAINDER``, e.g. ``SET segflake:leaf_alloc_residue 2:0``. The store reads
    it (``GET``) on its first allocation, and again on the allocation after one that failed
    for any reason other than a missing tag (a lost connection: redis-py's reconnect may
    have reached another server); while it is set, every answer reports it as a dict
    ``{"max_id", "step", "delta", "remainder"}``, and the generator issues from this
    database's ranges only the IDs ``≡ remainder (mod delta)``, whatever the store's place
    in the list. A value that is not two non-negative integers ``DELTA:REMAINDER`` fails
    the allocation with :class:`segflake.StoreError` naming the key. Without the key,
    answers are ``(max_id, step)`` and a ``MultiStore`` gives the store the class of its
    place in the list. The allocation script stays single-key (safe on Redis Cluster); the
    class key is read with its own ``GET``.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        client: Any = None,
        prefix: str = "segflake:leaf_alloc:",
        socket_timeout: float = 5.0,
        create_missing_tags: bool = False,
        ca_file: Optional[str] = None,
    ) -> None:
        self.client = redis_client("RedisStore", url, client, socket_timeout, ca_file)
        self._writes = ReplicaWrites(self.client, url_replicas(url), socket_timeout)
        self.prefix = prefix
        self.create_missing_tags = bool(create_missing_tags)
        self._script = self.client.register_script(_ALLOCATE)
        self._give_back_script: Any = None
        self._residue_lock = threading.Lock()
        self._residue_known = False
        self._residue: Optional[Residue] = None

    def key(self, tag: str) -> str:
        """The Redis key holding ``tag``'s max_id."""
        return self.prefix + check_tag(tag)

    def residue(self) -> Optional[Residue]:
        """The database's residue class ``(delta, remainder)`` from
        ``segflake:leaf_alloc_residue``, or ``None`` when the key is not set: read on first
        use and after a failed allocation, remembered otherwise."""
        with self._residue_lock:
            if not self._residue_known:
                self._residue = _parse_residue(self.client.get(RESIDUE_KEY))
                self._residue_known = True
            return self._residue

    def _forget_residue(self) -> None:
        with self._residue_lock:
            self._residue_known = False

    def allocate(self, tag: str, step: int) -> Optional[Union[Tuple[int, int], Dict[str, int]]]:
        """Advances the tag's ``max_id`` by ``step``; returns ``(max_id, step)``, or
        ``{"max_id", "step", "delta", "remainder"}`` while ``segflake:leaf_alloc_residue``
        is set, or ``None`` when the tag has no key."""
        key = self.key(tag)
        check_step(step)
        residue = self.residue()
        for attempt in range(2):
            try:
                max_id = int(
                    self._writes.run(
                        f"the allocation for tag {tag!r}",
                        _ALLOCATE,
                        [key],
                        [step],
                        lambda: self._script(keys=[key], args=[step]),
                    )
                )
            except Exception as exc:
                if "NOTAG" not in str(exc):
                    self._forget_residue()
                    raise
            else:
                if residue is None:
                    return max_id, step
                return {"max_id": max_id, "step": step, "delta": residue[0], "remainder": residue[1]}
            if not self.create_missing_tags or attempt:
                return None
            self.ensure_tag(tag)
        return None

    def give_back(self, tag: str, expected_max_id: int, max_id: int) -> bool:
        """Sets the tag's key from ``expected_max_id`` down to ``max_id`` if it still holds
        ``expected_max_id`` (nobody allocated since), in one script: the IDs ``[max_id,
        expected_max_id)`` were fetched by a generator that closed without issuing them.
        Returns whether it did."""
        if not give_back_args(tag, expected_max_id, max_id):
            return False
        if self._give_back_script is None:
            self._give_back_script = self.client.register_script(give_back_script())
        script = self._give_back_script
        key = self.key(tag)
        keys, args = [key, give_back_marker(key)], [str(expected_max_id), str(max_id)]
        done = self._writes.run(
            f"the give back for tag {tag!r}", give_back_script(), keys, args, lambda: script(keys=keys, args=args)
        )
        return int(done) == 1

    def ensure_tag(self, tag: str, *, max_id: int = 1) -> bool:
        """Creates the tag's key with ``max_id`` unless it exists; returns whether it was created."""
        check_max_id(max_id)
        return bool(self.client.set(self.key(tag), max_id, nx=True))

    def close(self) -> None:
        """Closes the client's connections."""
        self.client.close()

    def __enter__(self) -> "RedisStore":
        return self

    def __exit__(self, *args: object) -> None:
        self.close()


def _parse_residue(value: Any) -> Optional[Residue]:
    """``DELTA:REMAINDER`` as ``GET`` returns it (bytes, or str with ``decode_responses``)."""
    if value is None:
        return None
    text = value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)
    m = _RESIDUE.fullmatch(text)
    if m is None:
        raise StoreError(
            f"{RESIDUE_KEY} is {text[:100]!r}, not DELTA:REMAINDER "
            "(two non-negative integers, e.g. 2:0: delta is the number of databases, "
            "remainder this database's residue 0..delta-1)"
        )
    return int(m.group(1)), int(m.group(2))
