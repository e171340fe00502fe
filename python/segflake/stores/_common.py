"""Shared pieces of the database stores."""

from __future__ import annotations

import importlib
import os
import re
import threading
from typing import Any, Callable, Generic, Optional, Set, Tuple, TypeVar, Union

from .._native import InvalidArgumentError, StoreError, UnknownTagError

C = TypeVar("C")

#: ``(max_id, step)``, or ``(max_id, step, tag_step)`` where the store keeps a step per tag.
Answer = Union[Tuple[int, int], Tuple[int, int, int]]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
MAX_TAG_LEN = 128
MAX_STEP = (1 << 31) - 1  # Leaf's `step` column is an INT


#: The former name of :class:`segflake.UnknownTagError`.
TagNotFoundError = UnknownTagError


class LeafRows:
    """Leaf's rules for a tag's row, shared by the SQL stores.

    * ``use_row_step`` (default true): the first allocation of each tag uses its row's
      ``step`` column, and every answer reports that step as the tag's, so the generator
      starts from it and never goes below it (Leaf's dynamic step); false: every
      allocation uses the step the generator asks for.
    * ``create_missing_tags``: a step to create a tag that has no row with (``max_id``
      1), on first use; by default such a tag is answered ``None``, which callers see as
      :class:`segflake.UnknownTagError`.
    """

    use_row_step: bool
    create_missing_tags: Optional[int]

    def _init_rows(self, use_row_step: bool, create_missing_tags: Optional[int]) -> None:
        if create_missing_tags is not None:
            check_step(create_missing_tags)
        self.use_row_step = bool(use_row_step)
        self.create_missing_tags = create_missing_tags
        self._started: Set[str] = set()

    def _allocate_row(self, tag: str, step: Optional[int]) -> Optional[Tuple[int, int, int]]:
        """Raises the row's max_id by ``step`` (the row's step when ``None``): the new
        max_id, the step used and the row's step; ``None`` when the tag has no row."""
        raise NotImplementedError

    def ensure_tag(
        self, tag: str, *, max_id: int = 1, step: int = 1000, description: Optional[str] = None
    ) -> bool:
        raise NotImplementedError

    def allocate(self, tag: str, step: int) -> Optional[Answer]:
        """Advances the tag's ``max_id``; returns ``(max_id, step, tag_step)`` (``(max_id,
        step)`` with ``use_row_step=False``), or ``None`` when the tag has no row."""
        check_tag(tag)
        check_step(step)
        wanted = None if self.use_row_step and tag not in self._started else step
        row = self._allocate_row(tag, wanted)
        if row is None and self.create_missing_tags is not None:
            self.ensure_tag(tag, step=self.create_missing_tags, description="created by segflake")
            row = self._allocate_row(tag, wanted)
        if row is None:
            return None
        self._started.add(tag)
        max_id, used, row_step = row
        return (max_id, used, row_step) if self.use_row_step else (max_id, used)


def import_client(module: str, extra: str) -> Any:
    """Imports a database client library, or says which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"this segflake store needs the {module.split('.')[0]!r} package: "
            f"pip install 'segflake[{extra}]'"
        ) from exc


def redis_client(what: str, url: Optional[str], client: Any, socket_timeout: float) -> Any:
    """``client``, or a ``redis.Redis`` for ``url`` with ``socket_timeout`` on connects and
    commands; exactly one of the two must be given (a ``TypeError`` naming ``what``)."""
    if (url is None) == (client is None):
        raise TypeError(f"{what} needs exactly one of url or client")
    if client is None:
        redis = import_client("redis", "redis")
        client = redis.Redis.from_url(url, socket_timeout=socket_timeout, socket_connect_timeout=socket_timeout)
    return client


def check_table(table: str) -> str:
    if not isinstance(table, str) or not _IDENTIFIER.match(table):
        raise InvalidArgumentError(
            f"invalid table name {table!r}: expected an unquoted SQL identifier "
            "(letters, digits and underscores, not starting with a digit, at most 63 characters)"
        )
    return table


def check_tag(tag: str) -> str:
    if not isinstance(tag, str) or not tag or len(tag) > MAX_TAG_LEN:
        raise InvalidArgumentError(
            f"invalid tag {tag!r}: expected a non-empty string of at most {MAX_TAG_LEN} characters "
            "(Leaf's biz_tag is a VARCHAR(128))"
        )
    return tag


def check_step(step: int) -> int:
    if isinstance(step, bool) or not isinstance(step, int) or not 1 <= step <= MAX_STEP:
        raise InvalidArgumentError(f"invalid step {step!r}: expected an integer in 1..={MAX_STEP}")
    return step


def check_max_id(max_id: int) -> int:
    if isinstance(max_id, bool) or not isinstance(max_id, int) or not 0 <= max_id <= (1 << 63) - 1:
        raise InvalidArgumentError(f"invalid max_id {max_id!r}: expected an integer in 0..=2^63-1")
    return max_id


class Connections(Generic[C]):
    """One lazily opened connection, guarded by a lock, reopened after a failure and in a
    forked child (a socket shared with the parent would mix both processes' replies)."""

    def __init__(self, connect: Callable[[], C], close: Callable[[C], None]) -> None:
        self._connect = connect
        self._close = close
        self._lock = threading.Lock()
        self._conn: Optional[C] = None
        self._pid = os.getpid()

    def run(self, op: Callable[[C], Any]) -> Any:
        with self._lock:
            if self._pid != os.getpid():
                self._conn = None  # the parent's; never touch its socket
                self._pid = os.getpid()
            if self._conn is None:
                self._conn = self._connect()
            conn = self._conn
            try:
                return op(conn)
            except BaseException:
                # The connection may be broken or mid-transaction: drop it, the next call
                # opens a new one (a restarted server is picked up this way).
                self._conn = None
                try:
                    self._close(conn)
                except Exception:
                    pass
                raise

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None and self._pid == os.getpid():
                self._close(conn)
