"""Leaf's ``leaf_alloc`` table on MySQL or MariaDB through PyMySQL."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

from ._common import (
    Connections,
    LeafRows,
    Row,
    check_table,
    check_mysql_tls,
    import_client,
    mysql_connect_writable,
    mysql_targets,
    mysql_writable,
    read_only_translator,
    residue_of,
    row_statements,
    segment_statement,
)


def allocate_sql(table: str) -> Tuple[str, str, str, str, str]:
    """The core's statements: the update, the read after it (without and with the residue
    columns), the row's step, and whether the table has the residue columns (shared with
    :class:`segflake.stores.AsyncMySQLStore`)."""
    return (
        segment_statement("mysql", "allocate", table),
        segment_statement("mysql", "allocated", table),
        segment_statement("mysql", "allocated_residue", table),
        segment_statement("mysql", "row_step", table),
        segment_statement("mysql", "residue_columns", table),
    )


class MySQLStore(LeafRows):
    """Segments from Leaf's ``leaf_alloc`` table on MySQL or MariaDB (PyMySQL).

    One atomic statement per allocation, then Leaf's read of the value it set on the same
    connection (preceded by ``SELECT step`` for Leaf's first allocation of a tag, which
    uses the row's step)::

        UPDATE leaf_alloc SET max_id = LAST_INSERT_ID(max_id + %s) WHERE biz_tag = %s;
        SELECT LAST_INSERT_ID(), step FROM leaf_alloc WHERE biz_tag = %s;

    ``use_row_step`` and ``create_missing_tags``: see :class:`segflake.stores.LeafRows`.

    ``give_back`` (called by a generator that closes with IDs it fetched and did not
    issue) records the give back under a fresh random token in the marker table
    ``leaf_alloc_give_back`` (created on the first give back), then applies it by that
    token at most once, the core's statements::

        INSERT IGNORE INTO leaf_alloc_give_back (token, biz_tag, max_id, expected_max_id)
            VALUES (%s, %s, %s, %s);
        UPDATE leaf_alloc t JOIN leaf_alloc_give_back g ON g.token = %s AND g.applied = 0
           AND g.biz_tag = t.biz_tag AND t.max_id = g.expected_max_id
           SET t.max_id = g.max_id, g.applied = 1

    so a statement resent after a lost reply never lowers ``max_id`` a second time (a bare
    compare-and-set would, once others allocated the range again: IDs twice). A user
    without ``CREATE`` on the database needs the table made beforehand
    (``stores/sql/leaf_alloc.mysql.sql``) with ``SELECT, INSERT, UPDATE`` on it.

    Tinyid's multi-database mode: a database of a :class:`segflake.stores.MultiStore`
    states its residue class in two columns of the table, the same in every row::

        ALTER TABLE leaf_alloc ADD COLUMN delta INTEGER DEFAULT 2, ADD COLUMN remainder INTEGER DEFAULT 0;
        UPDATE leaf_alloc SET delta = 2, remainder = 0;  -- every row states the same class

    Once per connection (on connect, and again after each reconnect) the store asks
    whether the table has both columns::

        SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE()
           AND table_name = %s AND column_name IN ('delta', 'remainder')

    and if so Leaf's second statement also reads them (``SELECT LAST_INSERT_ID(), step,
    delta, remainder``); when both are set the answer reports them (a dict, see
    :class:`segflake.stores.LeafRows`): the generator then issues from this database's
    ranges only the IDs ``≡ remainder (mod delta)``, whatever the store's place in the
    list, so clients that list the databases in different orders never issue an ID twice.
    Without the columns the store works as before and a ``MultiStore`` gives it the class
    of its place in the list. Columns added while a connection is open are seen after the
    next reconnect.

    ``url``: ``mysql://USER:PASSWORD@HOST:PORT/DATABASE``, with TLS as MySQL's own clients
    name it: ``?ssl-mode=REQUIRED`` (encrypted, the certificate not checked),
    ``VERIFY_CA`` (it must chain to ``ssl-ca=PATH``, else to the system's certificate
    authorities) or ``VERIFY_IDENTITY`` (that, and it must name the host connected to);
    ``ssl-ca`` alone means ``VERIFY_CA``; ``DISABLED`` is plaintext. A connection that
    asked for TLS never falls back to plaintext. Or connection arguments (``host``,
    ``port``, ``user``, ``password``, ``database``, ``ssl``...) go
    to ``pymysql.connect``; or pass ``connect``, a function returning a new PyMySQL
    connection (it is switched to autocommit). One connection, opened on first use and
    reopened after any failure; safe from several threads; reconnects in a forked child.
    Transport deadlines, unless given: ``connect_timeout`` 5 s, and ``read_timeout`` and
    ``write_timeout`` 5 s (a silent connection fails the allocation instead of stalling
    it, within the generator's ``store_timeout_ms``). Requires InnoDB with ``innodb_flush_log_at_trx_commit = 1`` (or 2: process crashes only).

    High availability: the URL may list several servers,
    ``mysql://USER:PASSWORD@H1:P1,H2:P2/DATABASE`` (segflake's spelling in every language:
    PyMySQL takes one host); they are tried in order and the first whose
    ``@@global.read_only`` is off is kept (the core's ``writable`` statement, asked
    explicitly on every new connection: a user with ``SUPER`` or ``READ ONLY ADMIN`` may
    write to a read-only replica). A store whose hosts are all read-only, or a write refused
    with error 1290 or 1836, raises :class:`segflake.stores.ReadOnlyServerError`: nothing is
    issued from it, the connection is dropped and the next call connects again (a
    connection from ``connect`` is used as it is: only a refusal is recognised). No duplicate
    across a failover needs semi-synchronous replication (docs/reliability.md).
    """

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        connect: Optional[Callable[[], Any]] = None,
        table: str = "leaf_alloc",
        use_row_step: bool = True,
        create_missing_tags: Optional[int] = None,
        **connect_kwargs: Any,
    ) -> None:
        if sum((url is not None, connect is not None, bool(connect_kwargs))) > 1:
            raise TypeError("MySQLStore takes one of url, connect or connection arguments")
        self._init_rows(use_row_step, create_missing_tags)
        pymysql = import_client("pymysql", "mysql")
        targets = mysql_targets(url) if url is not None else [connect_kwargs]
        self.table = check_table(table)
        if connect is None:
            for kwargs in targets:
                kwargs.setdefault("connect_timeout", 5)
                kwargs.setdefault("read_timeout", 5)
                kwargs.setdefault("write_timeout", 5)

        def connect_one(kwargs: Dict[str, Any]) -> Any:
            return check_mysql_tls(pymysql.connect(autocommit=True, **kwargs), kwargs)

        def open_connection() -> Any:
            if connect is not None:
                conn = connect()
                conn.autocommit(True)
                return conn  # the caller's: used as it is
            return mysql_connect_writable(targets, connect_one, mysql_writable)

        self._conns: Connections[Any] = Connections(
            open_connection, lambda c: c.close(), translate=read_only_translator("mysql")
        )
        (
            self._update_sql,
            self._select_sql,
            self._select_residue_sql,
            self._step_sql,
            self._residue_sql,
        ) = allocate_sql(self.table)
        self._rows_sql = row_statements("mysql", self.table)

    def _ask_residue_columns(self, conn: Any) -> bool:
        with conn.cursor() as cur:
            cur.execute(self._residue_sql, (self.table,))
            row = cur.fetchone()
        return row is not None and int(row[0]) == 2

    def _allocate_row(self, tag: str, step: Optional[int]) -> Optional[Row]:
        def op(conn: Any) -> Optional[Row]:
            residue = self._has_residue_columns(conn)
            with conn.cursor() as cur:
                used = step
                if used is None:
                    # The row's step is read first, so the step used is known exactly even
                    # if an operator changes the row between the statements.
                    if cur.execute(self._step_sql, (tag,)) == 0:
                        return None
                    used = int(cur.fetchone()[0])
                if cur.execute(self._update_sql, (used, tag)) == 0:
                    return None
                # Leaf's second statement: the new max_id and the row's step (and residue
                # class) as it is now.
                if residue:
                    cur.execute(self._select_residue_sql, (tag,))
                    max_id, row_step, delta, remainder = cur.fetchone()
                    return int(max_id), used, int(row_step), residue_of(delta, remainder)
                cur.execute(self._select_sql, (tag,))
                max_id, row_step = cur.fetchone()
                return int(max_id), used, int(row_step), None

        result: Optional[Row] = self._conns.run(op)
        return result

    def _changed_rows(self, conn: Any, sql: str, params: Optional[Tuple[Any, ...]]) -> int:
        with conn.cursor() as cur:
            return int(cur.execute(sql, params))
