"""One counter per tag in Redis, advanced with ``INCRBY`` (redis-py)."""

from __future__ import annotations

from typing import Any, Optional, Tuple

from ._common import check_max_id, check_step, check_tag, redis_client

# INCRBY on a missing key would start it at 0 and hand out ID 0 and IDs a Leaf row never
# would: refuse a tag that was not created with ensure_tag.
_ALLOCATE = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  return redis.error_reply('NOTAG')
end
return redis.call('INCRBY', KEYS[1], ARGV[1])
"""


class RedisStore:
    """Segments from Redis: the key ``prefix + tag`` holds the tag's ``max_id``, and an
    allocation is ``INCRBY key step`` (inside a script that first checks the key exists).

    ``url``: a ``redis://`` URL (or pass ``client``, a ``redis.Redis``). ``ensure_tag``
    creates the key (``SET NX``, Leaf's ``max_id = 1`` by default). redis-py's client is
    thread-safe and reconnects on its own. Requires ``appendonly yes`` with
    ``appendfsync always`` (``everysec`` survives a server process crash, not a power loss):
    without the append-only file a restarted server forgets the counters and hands the
    same IDs out again. Redis keeps no step per tag: every allocation uses the step the
    generator asks for. A tag without a key is answered ``None``
    (:class:`segflake.UnknownTagError`), or created with ``create_missing_tags=True``.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        client: Any = None,
        prefix: str = "segflake:leaf_alloc:",
        socket_timeout: float = 5.0,
        create_missing_tags: bool = False,
    ) -> None:
        self.client = redis_client("RedisStore", url, client, socket_timeout)
        self.prefix = prefix
        self.create_missing_tags = bool(create_missing_tags)
        self._script = self.client.register_script(_ALLOCATE)

    def key(self, tag: str) -> str:
        """The Redis key holding ``tag``'s max_id."""
        return self.prefix + check_tag(tag)

    def allocate(self, tag: str, step: int) -> Optional[Tuple[int, int]]:
        """Advances the tag's ``max_id`` by ``step``; returns ``(max_id, step)``, or
        ``None`` when the tag has no key."""
        key = self.key(tag)
        check_step(step)
        for attempt in range(2):
            try:
                return int(self._script(keys=[key], args=[step])), step
            except Exception as exc:
                if "NOTAG" not in str(exc):
                    raise
            if not self.create_missing_tags or attempt:
                return None
            self.ensure_tag(tag)
        return None

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
