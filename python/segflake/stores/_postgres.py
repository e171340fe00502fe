"""Leaf's ``leaf_alloc`` table on PostgreSQL through psycopg 3."""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

from ._common import (
    Connections,
    LeafRows,
    Row,
    check_table,
    import_client,
    pg_connect_writable,
    pg_conninfo,
    read_only_translator,
    residue_of,
    row_statements,
    segment_statement,
    shutdown_socket,
)


def allocate_sql(table: str) -> Tuple[str, str, str]:
    """The core's allocation statement without and with the residue columns (parameters:
    the step or ``None``, the tag, the step again), and its question whether the table
    has them (the table's name), shared with :class:`segflake.stores.AsyncPostgresStore`."""
    return (
        segment_statement("postgres", "allocate", table),
        segment_statement("postgres", "allocate_residue", table),
        segment_statement("postgres", "residue_columns", table),
    )


class PostgresStore(LeafRows):
    """Segments from Leaf's ``leaf_alloc`` table on PostgreSQL (psycopg 3).

    One statement per allocation, atomic on its own (the row's step when ``step`` is
    ``NULL``, Leaf's first allocation of a tag)::

        UPDATE leaf_alloc SET max_id = max_id + COALESCE(%s::bigint, step), update_time = now()
         WHERE biz_tag = %s RETURNING max_id, COALESCE(%s::bigint, step::bigint), step::bigint

    ``give_back`` (called by a generator that closes with IDs it fetched and did not
    issue) records the give back under a fresh random token in the marker table
    ``leaf_alloc_give_back`` (created on the first give back), then applies it by that
    token at most once, the core's statements::

        INSERT INTO leaf_alloc_give_back (token, biz_tag, max_id, expected_max_id)
            VALUES (%s, %s, %s, %s) ON CONFLICT (token) DO NOTHING;
        WITH g AS (UPDATE leaf_alloc_give_back SET applied = 1 WHERE token = %s AND applied = 0
                   RETURNING biz_tag, max_id, expected_max_id)
        UPDATE leaf_alloc t SET max_id = g.max_id, update_time = now() FROM g
         WHERE t.biz_tag = g.biz_tag AND t.max_id = g.expected_max_id

    so a statement resent after a lost reply never lowers ``max_id`` a second time (a bare
    compare-and-set would, once others allocated the range again: IDs twice). A user
    without ``CREATE`` on the schema needs the table made beforehand
    (``stores/sql/leaf_alloc.postgres.sql``) with ``SELECT, INSERT, UPDATE`` on it.

    Tinyid's multi-database mode: a database of a :class:`segflake.stores.MultiStore`
    states its residue class in two columns of the table, the same in every row::

        ALTER TABLE leaf_alloc ADD COLUMN delta INTEGER DEFAULT 2, ADD COLUMN remainder INTEGER DEFAULT 0;
        UPDATE leaf_alloc SET delta = 2, remainder = 0;  -- every row states the same class

    Once per connection (on connect, and again after each reconnect) the store asks
    whether the table has both columns::

        SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = current_schema()
           AND table_name = %s AND column_name IN ('delta', 'remainder')

    (the table's name in lower case, as PostgreSQL folds the unquoted name); if so, the
    allocation also returns ``delta::bigint, remainder::bigint``, and when both are set
    the answer reports them (a dict, see :class:`segflake.stores.LeafRows`): the generator
    then issues from this database's ranges only the IDs ``≡ remainder (mod delta)``,
    whatever the store's place in the list, so clients that list the databases in
    different orders never issue an ID twice. Without the columns the store works as
    before and a ``MultiStore`` gives it the class of its place in the list. Columns added
    while a connection is open are seen after the next reconnect.

    ``conninfo``: a libpq connection string or URL; TLS is libpq's own: ``sslmode``
    (``require``: encrypted, the certificate not checked unless ``sslrootcert`` is given;
    ``verify-ca``: it must chain to ``sslrootcert``; ``verify-full``: that, and it must
    name the host) and ``sslrootcert=PATH`` (also ``sslcert``/``sslkey``), e.g.
    ``postgresql://u@db:5432/app?sslmode=verify-full&sslrootcert=/etc/ssl/ca.pem``;
    ``allow`` and ``prefer`` (which fall back to plaintext) are refused, as in Node and the
    CLI. Or pass ``connect``, a function that
    returns a new psycopg connection (it is switched to autocommit). The store keeps one
    connection, opened on first use and reopened after any failure, so a restarted server
    is picked up by the next allocation; it is safe to call from several threads and
    reconnects in a forked child. Transport deadlines: ``connect_timeout`` (seconds), and
    ``timeout`` (seconds, default 5) for one statement: libpq's TCP keepalives and
    ``tcp_user_timeout`` and the server's ``statement_timeout`` (each unless
    ``conninfo`` sets it), and a watchdog that shuts the connection's socket down when a
    statement has not been answered by then (a silent connection, a proxy that stopped
    forwarding), so the allocation fails within the generator's ``store_timeout_ms``
    instead of stalling. ``ensure_tag`` creates a row; an existing Leaf table is
    used as it is. ``use_row_step`` and ``create_missing_tags``: see
    :class:`segflake.stores.LeafRows`. Requires ``synchronous_commit = on`` (the default)
    on the server.

    High availability: ``conninfo`` may list several servers, libpq's spelling
    (``postgresql://u@h1:5432,h2:5432/app``, or ``host=h1,h2 port=5432,5432``); psycopg
    tries them in order and ``target_session_attrs=read-write`` (always set; any other value
    is refused) keeps the first that takes writes. Every new connection is also asked the
    core's ``writable`` statement (``pg_is_in_recovery()``, ``transaction_read_only``). A
    store whose hosts are all standbys, or a write refused with SQLSTATE 25006, raises
    :class:`segflake.stores.ReadOnlyServerError`: nothing is issued from it, the connection
    is dropped and the next call connects again (after a failover, to the promoted server).
    A connection from ``connect`` is used as it is (only a refusal is recognised).
    No duplicate across a failover needs a synchronous standby
    (``synchronous_commit = remote_apply`` or ``on`` with ``synchronous_standby_names``):
    an asynchronous one may lack the last allocations (docs/reliability.md).
    """

    def __init__(
        self,
        conninfo: Optional[str] = None,
        *,
        connect: Optional[Callable[[], Any]] = None,
        table: str = "leaf_alloc",
        connect_timeout: int = 5,
        timeout: float = 5.0,
        use_row_step: bool = True,
        create_missing_tags: Optional[int] = None,
    ) -> None:
        if (conninfo is None) == (connect is None):
            raise TypeError("PostgresStore needs exactly one of conninfo or connect")
        self._init_rows(use_row_step, create_missing_tags)
        self._psycopg = import_client("psycopg", "postgres")
        self.table = check_table(table)
        psycopg = self._psycopg

        params = "" if conninfo is None else pg_conninfo(psycopg, conninfo, connect_timeout, timeout)

        def open_connection() -> Any:
            if connect is not None:
                conn = connect()
                conn.autocommit = True
                return conn  # the caller's: used as it is
            return pg_connect_writable(lambda: psycopg.connect(params, autocommit=True))

        self._conns: Connections[Any] = Connections(
            open_connection,
            lambda c: c.close(),
            abort=lambda c: shutdown_socket(c.fileno()),
            deadline_s=timeout,
            translate=read_only_translator("postgres"),
        )
        self._allocate_sql, self._allocate_residue_sql, self._residue_sql = allocate_sql(self.table)
        self._rows_sql = row_statements("postgres", self.table)

    def _ask_residue_columns(self, conn: Any) -> bool:
        # An unquoted name is folded to lower case, as information_schema lists it.
        row = conn.execute(self._residue_sql, (self.table.lower(),)).fetchone()
        return row is not None and int(row[0]) == 2

    def _allocate_row(self, tag: str, step: Optional[int]) -> Optional[Row]:
        def op(conn: Any) -> Optional[Row]:
            residue = self._has_residue_columns(conn)
            sql = self._allocate_residue_sql if residue else self._allocate_sql
            row = conn.execute(sql, (step, tag, step)).fetchone()
            if row is None:
                return None
            return int(row[0]), int(row[1]), int(row[2]), (residue_of(row[3], row[4]) if residue else None)

        result: Optional[Row] = self._conns.run(op)
        return result

    def _changed_rows(self, conn: Any, sql: str, params: Optional[Tuple[Any, ...]]) -> int:
        return int(conn.execute(sql, params).rowcount)
