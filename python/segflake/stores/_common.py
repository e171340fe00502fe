"""Shared pieces of the database stores."""

from __future__ import annotations

import importlib
import json
import os
import re
import secrets
import socket
import threading
import time
from typing import Any, Callable, Dict, Generic, List, NamedTuple, Optional, Set, Tuple, TypeVar, Union
from urllib.parse import unquote

from .._native import InvalidArgumentError, RegistryError, StoreError, UnknownTagError, _tables

C = TypeVar("C")
_Rows = TypeVar("_Rows", bound="LeafRows")

#: A database's residue class ``(delta, remainder)`` (Tinyid's multi-database mode): a
#: :class:`segflake.stores.MultiStore` issues from its ranges only the IDs ``≡ remainder
#: (mod delta)``.
Residue = Tuple[int, int]

#: An allocated row: the new max_id, the step used, the row's step, and the row's residue
#: class (``None`` unless the table has the ``delta`` and ``remainder`` columns and the row
#: sets both).
Row = Tuple[int, int, int, Optional[Residue]]

#: ``(max_id, step)``, or ``(max_id, step, tag_step)`` where the store keeps a step per tag;
#: a dict with the keys ``max_id``, ``step`` (``tag_step``), ``delta`` and ``remainder``
#: where the database reports its residue class.
Answer = Union[Tuple[int, int], Tuple[int, int, int], Dict[str, int]]

# Whether the store's table has Tinyid's ``delta`` and ``remainder`` columns: ``2`` when it
# has both (the CLI's statements, with the table name as the parameter).

_SEGMENT_STATEMENTS: Optional[Dict[str, Dict[str, str]]] = None


def segment_statement(store: str, call: str, table: Optional[str] = None) -> str:
    """The core's statement or script ``call`` for the segment store ``store``
    (``postgres``, ``mysql``, ``redis``; the core's ``segment::statements``). With
    ``table`` (the store's checked table name), SQL: ``{table}`` replaced by it and the
    ``?`` placeholders as DB-API ``%s`` (no statement has ``%`` or ``?`` elsewhere)."""
    global _SEGMENT_STATEMENTS
    if _SEGMENT_STATEMENTS is None:
        _SEGMENT_STATEMENTS = json.loads(_tables())["segment_stores"]
    text = _SEGMENT_STATEMENTS[store][call]
    if table is not None:
        text = text.replace("{table}", check_table(table)).replace("?", "%s")
    return text


class ReadOnlyServerError(StoreError, RegistryError):
    """A store or registry call reached a server that takes no writes: a PostgreSQL standby
    (in recovery, or ``transaction_read_only`` on) or a MySQL/MariaDB replica
    (``@@global.read_only``). Raised when the core's ``writable`` check refuses every host of
    the URL on connecting, and when the server refuses a write with one of the core's
    ``read_only_errors`` (SQLSTATE 25006; MySQL/MariaDB 1290, 1836). Nothing was written and
    nothing is issued from the call; its connection is dropped, so the next call connects
    to the first writable host of the URL (after a failover, the promoted one)."""


def read_only_codes(store: str) -> Set[str]:
    """The core's error codes (``read_only_errors``) with which ``store``'s server refuses a
    write because it is read-only."""
    return set(segment_statement(store, "read_only_errors").split())


def read_only_cause(store: str, error: BaseException) -> Optional[BaseException]:
    """The error in ``error``'s chain (itself, its cause or context) that is a read-only
    server's refusal (a psycopg error's ``sqlstate``; PyMySQL's and aiomysql's error number,
    the first argument), or ``None``."""
    codes = read_only_codes(store)
    seen: Set[int] = set()
    e: Optional[BaseException] = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, ReadOnlyServerError):
            return e
        code = getattr(e, "sqlstate", None)
        if code is None and e.args and isinstance(e.args[0], int):
            code = e.args[0]
        if code is not None and str(code) in codes:
            return e
        e = e.__cause__ or e.__context__
    return None


def read_only_translator(store: str) -> Callable[[BaseException], Optional[BaseException]]:
    """For :class:`Connections`: a read-only server's refusal as :class:`ReadOnlyServerError`
    (chained to the driver's error); other errors stay as they are."""

    def translate(error: BaseException) -> Optional[BaseException]:
        if isinstance(error, ReadOnlyServerError):
            return None
        cause = read_only_cause(store, error)
        if cause is None:
            return None
        return ReadOnlyServerError(
            f"the server is read-only ({cause}): nothing was written; the connection is dropped "
            "and the next call connects to a writable server"
        )

    return translate


def split_hosts(url: str) -> List[str]:
    """The URL of each host of ``SCHEME://[USERINFO@]HOST[:PORT][,HOST[:PORT]...][/REST]``
    (a host may be ``[IPv6]``), in the order given: ``[url]`` for one host. An empty entry
    in the list is refused (``ValueError``)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return [url]
    end = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    authority, tail = rest[:end], rest[end:]
    userinfo, at, hosts = authority.rpartition("@")
    if "," not in hosts:
        return [url]
    out = []
    for host in hosts.split(","):
        if not host.strip():
            raise ValueError(f"empty host in the host list {hosts!r}: expected HOST[:PORT][,HOST[:PORT]...]")
        out.append(f"{scheme}://{userinfo}{at}{host.strip()}{tail}")
    return out


def mysql_targets(url: str) -> List[Dict[str, Any]]:
    """``pymysql.connect`` arguments for each host of ``mysql://USER:PASSWORD@H1:P1,H2:P2/DB``
    in order (the same credentials, database and TLS for each; see :func:`mysql_url`)."""
    return [mysql_url(u) for u in split_hosts(url)]


#: libpq's refusals of a server under ``target_session_attrs=read-write`` (of the last host
#: it tried): a standby, or a session that is read-only.
_LIBPQ_READ_ONLY = ("server is in hot standby mode", "session is read-only")


def pg_read_only_connect_error(error: BaseException) -> Optional[ReadOnlyServerError]:
    """:class:`ReadOnlyServerError` for a connection libpq refused because every host it
    reached is read-only, else ``None``."""
    text = str(error)
    if not any(m in text for m in _LIBPQ_READ_ONLY):
        return None
    return ReadOnlyServerError(
        f"the server is read-only ({' '.join(text.split())}): no host of the URL takes writes; "
        "nothing was written; the next call connects again"
    )


def pg_connect_writable(connect: Callable[[], Any]) -> Any:
    """``connect()`` (psycopg, sync: libpq tries the URL's hosts in order and keeps the first
    that takes writes), the connection checked with the core's ``writable`` statement; a
    refusal because every host is read-only is :class:`ReadOnlyServerError`."""
    try:
        conn = connect()
    except Exception as e:
        refused = pg_read_only_connect_error(e)
        if refused is not None:
            raise refused from e
        raise
    return pg_check_writable(conn)


def pg_check_writable(conn: Any) -> Any:
    """``conn`` (psycopg, sync) if its server takes writes (the core's ``writable``
    statement); else it is closed and :class:`ReadOnlyServerError` raised."""
    row = conn.execute(segment_statement("postgres", "writable")).fetchone()
    if row is not None and int(row[0]) == 1:
        return conn
    where = _pg_where(conn)
    _close_quietly(conn)
    raise ReadOnlyServerError(
        f"the server is read-only ({where}: in recovery, a standby, or transaction_read_only is on): "
        "nothing was written; the next call connects again"
    )


def _pg_where(conn: Any) -> str:
    try:
        return f"{conn.info.host}:{conn.info.port}"
    except Exception:
        return "PostgreSQL"


def _close_quietly(conn: Any) -> None:
    try:
        conn.close()
    except Exception:
        pass


def mysql_where(kwargs: Dict[str, Any]) -> str:
    return f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 3306)}"


def mysql_read_only(kwargs: Dict[str, Any]) -> ReadOnlyServerError:
    return ReadOnlyServerError(
        f"the server is read-only ({mysql_where(kwargs)}: @@global.read_only is set, a replica): "
        "nothing was written; the next call connects again"
    )


def mysql_connect_writable(
    targets: List[Dict[str, Any]], connect: Callable[[Dict[str, Any]], Any], writable: Callable[[Any], bool]
) -> Any:
    """A connection (``connect(kwargs)``) to the first of ``targets`` whose server takes
    writes (``writable(conn)``, the core's statement). One target: its own failure, or
    :class:`ReadOnlyServerError`. Several: :class:`ReadOnlyServerError` when every one is
    read-only, else ``ConnectionError`` naming why each was passed over."""
    passed: List[str] = []
    only_read_only = True
    last: Optional[BaseException] = None
    for kwargs in targets:
        try:
            conn = connect(kwargs)
        except Exception as e:
            if len(targets) == 1:
                raise
            only_read_only, last = False, e
            passed.append(f"{mysql_where(kwargs)}: {e}")
            continue
        try:
            ok = writable(conn)
        except Exception:
            _close_quietly(conn)
            raise
        if ok:
            return conn
        _close_quietly(conn)
        refused = mysql_read_only(kwargs)
        if len(targets) == 1:
            raise refused
        passed.append(str(refused))
    if only_read_only:
        raise ReadOnlyServerError(f"every server of the URL is read-only: {'; '.join(passed)}")
    raise ConnectionError(f"no writable MySQL server among {len(targets)} hosts: {'; '.join(passed)}") from last


def mysql_writable(conn: Any) -> bool:
    """Whether a PyMySQL connection's server takes writes (the core's ``writable``)."""
    with conn.cursor() as cur:
        cur.execute(segment_statement("mysql", "writable"))
        row = cur.fetchone()
    return row is not None and int(row[0]) == 1


class RowStatements(NamedTuple):
    """The core's statements of the SQL stores beyond the allocation, for one table."""

    #: The give backs' marker table ``{table}_give_back``, unless it exists.
    give_back_table: str
    #: Records a give back (the token, the tag, the new max_id, the expected max_id),
    #: unless the token is recorded already.
    give_back_intent: str
    #: Applies the give back recorded under a token (the parameter), at most once: rows
    #: changed > 0 when it lowered max_id.
    give_back: str
    #: Creates a tag's row unless it has one (the tag, its max_id, step and description).
    ensure_tag: str
    #: Leaf's table, unless it exists.
    create_table: str


def row_statements(store: str, table: str) -> RowStatements:
    """The core's give-back, ``ensure_tag`` and ``create_table`` statements of the SQL
    ``store`` for ``table`` (the sync and async stores)."""
    return RowStatements(
        *(
            segment_statement(store, call, table)
            for call in ("give_back_table", "give_back_intent", "give_back", "ensure_tag", "create_table")
        )
    )


def give_back_token() -> str:
    """A fresh random token (128 bits, hex) naming one give back: its record in the SQL
    stores' marker table."""
    return secrets.token_hex(16)


def give_back_table_error(table: str, create_error: BaseException, write_error: BaseException) -> str:
    """The message of a give back that could neither create the marker table of ``table``
    nor write to it."""
    return (
        f"cannot give back: the marker table {table}_give_back cannot be created ({create_error}) "
        f"nor written ({write_error}); creating it needs the CREATE privilege (on the schema in "
        "PostgreSQL, on the database in MySQL), or create it beforehand (stores/sql/leaf_alloc.*.sql) "
        "and grant SELECT, INSERT, UPDATE on it (until then the IDs are not given back: a gap, never "
        "a duplicate)"
    )


def give_back_args(tag: str, expected_max_id: int, max_id: int) -> bool:
    """Checks a give-back's arguments (the tag, two max_ids); whether there is anything to
    give back (``max_id < expected_max_id``: a store answers ``False`` otherwise, as the
    core's stores do)."""
    check_tag(tag)
    check_max_id(expected_max_id)
    check_max_id(max_id)
    return max_id < expected_max_id


def check_ensure_tag_args(tag: str, max_id: int, step: int) -> None:
    """Checks an ``ensure_tag``'s tag, first max_id and step."""
    check_tag(tag)
    check_max_id(max_id)
    check_step(step)


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
    * Tinyid's multi-database mode: when the table has both a ``delta`` and a
      ``remainder`` column (asked through ``information_schema`` once per connection, so
      again after every reconnect), each allocation also reads the row's two columns and,
      when both are set (non-``NULL``), reports them: the answer is then a dict
      ``{"max_id", "step", "tag_step", "delta", "remainder"}`` (no ``tag_step`` with
      ``use_row_step=False``), and a :class:`segflake.stores.MultiStore` issues from this
      database's ranges only the IDs ``≡ remainder (mod delta)``, whatever the store's
      place in the list. A table without the columns answers tuples, as Leaf's does.

    A subclass implements ``_allocate_row(tag, step)`` (returning ``(max_id, step used,
    row's step, (delta, remainder) or None)``), ``_ask_residue_columns(conn)`` and
    ``_changed_rows(conn, sql, params)``, and sets ``_conns``, ``table`` and ``_rows_sql``
    (:func:`row_statements`); its allocation calls :meth:`_has_residue_columns` on the
    connection it runs on.
    """

    use_row_step: bool
    create_missing_tags: Optional[int]
    table: str
    _conns: Connections[Any]
    _rows_sql: RowStatements

    def _init_rows(self, use_row_step: bool, create_missing_tags: Optional[int]) -> None:
        if create_missing_tags is not None:
            check_step(create_missing_tags)
        self.use_row_step = bool(use_row_step)
        self.create_missing_tags = create_missing_tags
        self._started: Set[str] = set()
        # The connection whose table was last asked about, and its answer.
        self._residue_asked: Any = None
        self._residue_columns = False
        # The give backs' marker table is known to exist (created, or written to).
        self._give_back_table = False

    def _allocate_row(self, tag: str, step: Optional[int]) -> Optional[Row]:
        """Raises the row's max_id by ``step`` (the row's step when ``None``): the new
        max_id, the step used, the row's step and its residue class (``None`` unless the
        table has the columns and the row sets both); ``None`` when the tag has no row."""
        raise NotImplementedError

    def _ask_residue_columns(self, conn: Any) -> bool:
        """Whether the table has both the ``delta`` and the ``remainder`` column."""
        raise NotImplementedError

    def _has_residue_columns(self, conn: Any) -> bool:
        """:meth:`_ask_residue_columns`, asked once per connection: ``conn`` is the one an
        operation runs on (under the store's connection lock), a reconnect asks again."""
        if self._residue_asked is not conn:
            self._residue_columns = bool(self._ask_residue_columns(conn))
            self._residue_asked = conn
        return self._residue_columns

    def _changed_rows(self, conn: Any, sql: str, params: Optional[Tuple[Any, ...]]) -> int:
        """Runs ``sql`` with ``params`` on ``conn``: the number of rows it changed."""
        raise NotImplementedError

    def _run(self, sql: str, params: Optional[Tuple[Any, ...]] = None) -> int:
        changed: int = self._conns.run(lambda conn: self._changed_rows(conn, sql, params))
        return changed

    def give_back(self, tag: str, expected_max_id: int, max_id: int) -> bool:
        """Lowers the tag's ``max_id`` from ``expected_max_id`` to ``max_id`` if it is still
        ``expected_max_id`` (nobody allocated since): the IDs ``[max_id, expected_max_id)``
        were fetched by a generator that closed without issuing them. Returns whether the
        row was lowered (``False`` without a statement when ``max_id`` is not below
        ``expected_max_id``).

        Safe to run twice: the give back is recorded under a fresh random token in the
        marker table ``{table}_give_back`` (created on the first give back, see
        ``stores/sql``), then applied by that token at most once, so a statement a driver
        resends after a lost reply never lowers ``max_id`` again after others allocated
        the range. A database user that can neither create nor write the marker table
        gets a :class:`segflake.StoreError` naming it and the privileges needed (the IDs
        are then not given back: a gap, never a duplicate)."""
        return self._give_back(tag, expected_max_id, max_id, give_back_token())

    def _give_back(self, tag: str, expected_max_id: int, max_id: int, token: str) -> bool:
        """:meth:`give_back` under ``token``: run again with the same token (a resend), it
        changes nothing."""
        if not give_back_args(tag, expected_max_id, max_id):
            return False
        sql = self._rows_sql

        def op(conn: Any) -> bool:
            self._record_give_back(conn, (token, tag, max_id, expected_max_id))
            return self._changed_rows(conn, sql.give_back, (token,)) > 0

        given: bool = self._conns.run(op)
        return given

    def _record_give_back(self, conn: Any, params: Tuple[Any, ...]) -> None:
        """``give_back_intent``, after creating the marker table unless this store saw it.
        PostgreSQL and MySQL refuse ``CREATE TABLE IF NOT EXISTS`` without the privilege
        even when the table exists, so a failed creation is reported only if the record
        cannot be written either (a table made beforehand and granted works)."""
        created: Optional[Exception] = None
        if not self._give_back_table:
            try:
                self._changed_rows(conn, self._rows_sql.give_back_table, None)
            except Exception as e:
                created = e
        try:
            self._changed_rows(conn, self._rows_sql.give_back_intent, params)
        except Exception as e:
            if created is None:
                raise
            raise StoreError(give_back_table_error(self.table, created, e)) from e
        self._give_back_table = True

    def ensure_tag(
        self, tag: str, *, max_id: int = 1, step: int = 1000, description: Optional[str] = None
    ) -> bool:
        """Creates the tag's row (Leaf's defaults: ``max_id = 1``) unless it exists; an
        existing row is left as it is. Returns whether it was created."""
        check_ensure_tag_args(tag, max_id, step)
        return self._run(self._rows_sql.ensure_tag, (tag, max_id, step, description)) == 1

    def create_table(self) -> None:
        """Creates Leaf's table if it does not exist (the schema Leaf ships)."""
        self._run(self._rows_sql.create_table)

    def close(self) -> None:
        """Closes the connection (a later call opens a new one)."""
        self._conns.close()

    def __enter__(self: _Rows) -> _Rows:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()

    def allocate(self, tag: str, step: int) -> Optional[Answer]:
        """Advances the tag's ``max_id``; returns ``(max_id, step, tag_step)`` (``(max_id,
        step)`` with ``use_row_step=False``), a dict with ``delta`` and ``remainder`` too
        when the row reports its residue class, or ``None`` when the tag has no row."""
        wanted = self._wanted_step(tag, step)
        row = self._allocate_row(tag, wanted)
        if row is None and self.create_missing_tags is not None:
            self.ensure_tag(tag, step=self.create_missing_tags, description="created by segflake")
            row = self._allocate_row(tag, wanted)
        return self._answer(tag, row)

    def _wanted_step(self, tag: str, step: int) -> Optional[int]:
        """The step to allocate with (``None``: the row's own, Leaf's first allocation)."""
        check_tag(tag)
        check_step(step)
        return None if self.use_row_step and tag not in self._started else step

    def _answer(self, tag: str, row: Optional[Row]) -> Optional[Answer]:
        """An allocated row as the generator reads it."""
        if row is None:
            return None
        self._started.add(tag)
        max_id, used, row_step, residue = row
        if residue is None:
            return (max_id, used, row_step) if self.use_row_step else (max_id, used)
        answer = {"max_id": max_id, "step": used}
        if self.use_row_step:
            answer["tag_step"] = row_step
        answer["delta"], answer["remainder"] = residue
        return answer


def residue_of(delta: Any, remainder: Any) -> Optional[Residue]:
    """A row's residue class from its ``delta`` and ``remainder`` columns: ``None`` unless
    both are set. The values are passed on as they are: the generator refuses a class
    that is not ``delta = n`` stores with a remainder of its own."""
    if delta is None or remainder is None:
        return None
    return int(delta), int(remainder)


def import_client(module: str, extra: str) -> Any:
    """Imports a database client library, or says which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"this segflake store needs the {module.split('.')[0]!r} package: "
            f"pip install 'segflake[{extra}]'"
        ) from exc


#: The query parameter of ``rediss://``, ``zk+tls://`` and ``etcd+tls://`` URLs naming a
#: PEM file of the certificate authorities to trust (the same name in every language).
CA_FILE_PARAM = "ca"


def take_params(url: str, names: Tuple[str, ...]) -> Tuple[str, Dict[str, str]]:
    """``url`` without the query parameters named in ``names`` (case-insensitive), and
    their values (the last of each, percent-decoded), by the name in ``names``."""
    base, sep, query = url.partition("?")
    if not sep:
        return url, {}
    found: Dict[str, str] = {}
    kept: List[str] = []
    lowered = {n.lower(): n for n in names}
    for pair in query.split("&"):
        if not pair:
            continue
        key, _, value = pair.partition("=")
        name = lowered.get(unquote(key).lower())
        if name is None:
            kept.append(pair)
        else:
            found[name] = unquote(value)
    return (f"{base}?{'&'.join(kept)}" if kept else base), found


def check_ca_file(path: str, what: str) -> str:
    """``path`` if it names a readable file, else a ``ValueError`` saying so (a missing CA
    file must not surface later as a vague handshake failure)."""
    return check_tls_file(path, what, "CA file")


def check_tls_file(path: str, what: str, kind: str) -> str:
    """``path`` (a ``str``, or an ``os.PathLike`` as a ``str``) if it names a readable file,
    else a ``ValueError`` naming it as ``kind`` ("CA file", "client certificate file",
    "client key file")."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise ValueError(f"{what}: the {kind} parameter is {type(path).__name__}, not a path (str)")
    if not path:
        raise ValueError(f"{what}: the {kind} parameter is empty")
    if not os.path.isfile(path) or not os.access(path, os.R_OK):
        raise ValueError(f"{what}: the {kind} {path!r} does not exist or cannot be read")
    return path


def ssl_context(ca_file: Optional[str]) -> Any:
    """A verifying client ``ssl.SSLContext`` trusting the PEM file ``ca_file`` (else the
    system's certificate authorities); a file without certificates is a ``ValueError``."""
    import ssl

    try:
        return ssl.create_default_context(cafile=ca_file)
    except ssl.SSLError as e:
        raise ValueError(f"the CA file {ca_file!r} holds no usable PEM certificate: {e}") from e


def parse_flag(value: str, what: str) -> bool:
    """A URL's boolean parameter: ``true``/``1`` or ``false``/``0``."""
    v = value.strip().lower()
    if v in ("true", "1", "yes", "on"):
        return True
    if v in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"invalid {what} value {value!r}: expected true or false")


#: MySQL's ``ssl-mode`` values (its own clients' ``--ssl-mode``) this package accepts.
MYSQL_SSL_MODES = ("DISABLED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY")


def mysql_tls(mode: Optional[str], ca: Optional[str]) -> Dict[str, Any]:
    """PyMySQL's TLS arguments for MySQL's ``ssl-mode`` and ``ssl-ca`` (the names of
    MySQL's own clients): ``DISABLED`` plaintext; ``REQUIRED`` encrypted, the certificate
    not checked; ``VERIFY_CA`` the certificate must chain to the CA file (else the
    system's certificate authorities); ``VERIFY_IDENTITY`` that, and it must name the host
    connected to. ``ssl-ca`` without ``ssl-mode`` is ``VERIFY_CA`` (as in MySQL's
    clients); neither: PyMySQL's defaults. ``PREFERRED`` (TLS if the server offers it, else
    plaintext) is refused: a URL that asks for TLS never falls back to plaintext. The
    arguments are ``{"ssl": SSLContext}`` (PyMySQL then refuses a server without TLS) or
    ``{"ssl_disabled": True}``."""
    if mode is None:
        if ca is None:
            return {}
        mode = "VERIFY_CA"
    wanted = mode.strip().upper().replace("-", "_")
    if wanted not in MYSQL_SSL_MODES:
        raise ValueError(
            f"unsupported ssl-mode {mode!r}: expected one of {', '.join(MYSQL_SSL_MODES)} "
            "(PREFERRED, which falls back to plaintext, is not offered)"
        )
    if wanted == "DISABLED":
        if ca is not None:
            raise ValueError("ssl-mode=DISABLED contradicts ssl-ca (a CA file is for TLS)")
        return {"ssl_disabled": True}
    import ssl

    if wanted == "REQUIRED":
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return {"ssl": ctx}
    ctx = ssl_context(None if ca is None else check_ca_file(ca, "MySQL TLS (ssl-ca)"))
    ctx.check_hostname = wanted == "VERIFY_IDENTITY"
    ctx.verify_mode = ssl.CERT_REQUIRED
    return {"ssl": ctx}


def mysql_url(url: str) -> Dict[str, Any]:
    """``pymysql.connect`` arguments for ``mysql://USER:PASSWORD@HOST:PORT/DATABASE``, with
    TLS from the query parameters ``ssl-mode`` and ``ssl-ca`` (``ssl_mode`` and ``ssl_ca``
    too; see :func:`mysql_tls`). Any other ``ssl…`` or ``tls…`` parameter is refused
    (``ValueError``), so a misspelt TLS parameter is never ignored; other parameters are
    ignored."""
    from urllib.parse import urlparse

    u = urlparse(url)
    if u.scheme.lower() != "mysql":
        raise ValueError(f"not a mysql:// URL: {url!r}")
    params: Dict[str, str] = {}
    for pair in filter(None, u.query.split("&")):
        key, _, value = pair.partition("=")
        name = unquote(key).lower().replace("_", "-")
        if name in ("ssl-mode", "ssl-ca"):
            params[name] = unquote(value)
        elif name.startswith(("ssl", "tls")):
            raise ValueError(
                f"unsupported TLS parameter {unquote(key)!r} in the MySQL URL; allowed: ssl-mode, ssl-ca"
            )
    kwargs: Dict[str, Any] = {
        "host": u.hostname or "localhost",
        "port": u.port or 3306,
        "user": unquote(u.username or ""),
        "password": unquote(u.password or ""),
        "database": unquote(u.path.lstrip("/")) or None,
    }
    kwargs.update(mysql_tls(params.get("ssl-mode"), params.get("ssl-ca")))
    return kwargs


def check_mysql_tls(conn: Any, connect_kwargs: Dict[str, Any]) -> Any:
    """``conn`` if it is encrypted whenever ``connect_kwargs`` asked for TLS; else it is
    closed and a ``ConnectionError`` raised (a PyMySQL that falls back to plaintext)."""
    import ssl

    if connect_kwargs.get("ssl") and not isinstance(getattr(conn, "_sock", None), ssl.SSLSocket):
        try:
            conn.close()
        except Exception:
            pass
        raise ConnectionError("the MySQL server did not take TLS, which the connection requires")
    return conn


def pg_conninfo(psycopg: Any, conninfo: str, connect_timeout: float, timeout: float) -> str:
    """``conninfo`` with transport deadlines where it sets none (and its TLS checked: an
    ``sslmode`` of ``allow`` or ``prefer``, which fall back to plaintext, and a CA file
    without ``sslmode`` or that cannot be read are refused with ``ValueError``): libpq's
    ``connect_timeout``, TCP keepalives and ``tcp_user_timeout`` (unacknowledged data
    fails the connection after ``timeout``), and ``statement_timeout`` (the server ends
    a statement running longer) in ``options``; ``target_session_attrs=read-write`` (any
    other value is refused with ``ValueError``), so of several hosts the first writable one
    is used."""
    params: Dict[str, Any] = dict(psycopg.conninfo.conninfo_to_dict(conninfo))
    mode = str(params.get("sslmode") or "").lower()
    if mode in ("allow", "prefer"):
        # As in Node and the CLI: a URL that names TLS never falls back to plaintext.
        raise ValueError(
            f"unsupported sslmode {params['sslmode']!r}: expected disable, require, verify-ca or verify-full "
            "(allow and prefer fall back to plaintext)"
        )
    if "sslmode" not in params:
        stray = [k for k in ("sslrootcert", "sslcert", "sslkey") if k in params]
        if stray:
            # As in Node: a CA file is a request for TLS, which libpq would treat as optional.
            raise ValueError(f"{', '.join(stray)} without sslmode: add sslmode=require, verify-ca or verify-full")
    attrs = params.get("target_session_attrs")
    if attrs is not None and str(attrs) != "read-write":
        raise ValueError(
            f"target_session_attrs={attrs}: a store or registry writes, so it connects only to a server "
            "that takes writes (read-write, the default here)"
        )
    # Of several hosts (libpq's host=h1,h2 port=p1,p2, or postgres://h1:p1,h2:p2/db) the
    # first that takes writes; one host is checked the same way.
    params["target_session_attrs"] = "read-write"
    root = params.get("sslrootcert")
    if root is not None and root != "system":
        # libpq skips the check of sslmode=require when the file is missing: refused here, as in Node.
        check_ca_file(str(root), "PostgreSQL TLS (sslrootcert)")
    ms = max(1, int(timeout * 1000))
    params.setdefault("connect_timeout", max(1, int(-(-connect_timeout // 1))))
    params.setdefault("keepalives", 1)
    params.setdefault("keepalives_idle", max(1, int(timeout)))
    params.setdefault("keepalives_interval", 1)
    params.setdefault("keepalives_count", 3)
    if psycopg.pq.version() >= 120000:  # libpq 12 added tcp_user_timeout
        params.setdefault("tcp_user_timeout", ms)
    options = str(params.get("options") or "")
    if "statement_timeout" not in options:
        params["options"] = f"{options} -c statement_timeout={ms}".strip()
    return str(psycopg.conninfo.make_conninfo("", **params))


def shutdown_socket(fileno: int) -> None:
    """Shuts a connection's socket down (both ways) without closing its descriptor: a
    call blocked reading it returns at once with an error."""
    s = socket.socket(fileno=os.dup(fileno))
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        s.close()


class _Watchdog:
    """One daemon thread that calls a function when its deadline passes, unless disarmed
    first. Functions run under the watchdog's lock, so once :meth:`disarm` returns, its
    function is not running and never will."""

    def __init__(self) -> None:
        self._reset()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._cond = threading.Condition()
        self._armed: Dict[int, Tuple[float, Callable[[], None]]] = {}
        self._next = 0
        self._thread: Optional[threading.Thread] = None

    def arm(self, after_s: float, fn: Callable[[], None]) -> int:
        with self._cond:
            self._next += 1
            self._armed[self._next] = (time.monotonic() + after_s, fn)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="segflake-watchdog", daemon=True)
                self._thread.start()
            self._cond.notify()
            return self._next

    def disarm(self, token: int) -> bool:
        """Whether the function had not run yet."""
        with self._cond:
            return self._armed.pop(token, None) is not None

    def _run(self) -> None:
        cond = self._cond
        with cond:
            while True:
                now = time.monotonic()
                due = [t for t, (at, _) in self._armed.items() if at <= now]
                for token in due:
                    _, fn = self._armed.pop(token)
                    try:
                        fn()
                    except Exception:
                        pass
                wait = min((at for at, _ in self._armed.values()), default=now + 60.0) - now
                cond.wait(max(0.001, wait))


_WATCHDOG = _Watchdog()


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
    forked child (a socket shared with the parent would mix both processes' replies).

    With ``abort`` and ``deadline_s``, an operation still running after ``deadline_s``
    seconds has ``abort(conn)`` called from a watchdog thread (shutting its socket down),
    so a connection that went silent fails the call instead of blocking it (and every
    call queued behind this lock) until the kernel gives up; the call then raises
    ``TimeoutError``. With ``translate``, an operation's error for which it returns an
    exception raises that one instead (chained to it): a read-only server's refusal as
    :class:`ReadOnlyServerError`."""

    def __init__(
        self,
        connect: Callable[[], C],
        close: Callable[[C], None],
        *,
        abort: Optional[Callable[[C], None]] = None,
        deadline_s: Optional[float] = None,
        translate: Optional[Callable[[BaseException], Optional[BaseException]]] = None,
    ) -> None:
        self._connect = connect
        self._close = close
        self._abort = abort
        self._deadline_s = deadline_s
        self._translate = translate
        self._lock = threading.Lock()
        self._conn: Optional[C] = None
        self._pid = os.getpid()

    def _guarded(self, op: Callable[[C], Any], conn: C) -> Any:
        abort, deadline = self._abort, self._deadline_s
        if abort is None or deadline is None:
            return op(conn)
        token = _WATCHDOG.arm(deadline, lambda: abort(conn))
        try:
            result = op(conn)
        except BaseException as e:
            if not _WATCHDOG.disarm(token) and isinstance(e, Exception):
                raise TimeoutError(
                    f"no answer within {deadline:g} s: the connection was shut down"
                ) from e
            raise
        if not _WATCHDOG.disarm(token):
            # Answered just as the deadline passed: the answer stands, the connection
            # (shut down meanwhile) does not.
            self._drop(conn)
        return result

    def _drop(self, conn: C) -> None:
        if self._conn is conn:
            self._conn = None
        try:
            self._close(conn)
        except Exception:
            pass

    def run(self, op: Callable[[C], Any]) -> Any:
        with self._lock:
            if self._pid != os.getpid():
                self._conn = None  # the parent's; never touch its socket
                self._pid = os.getpid()
            if self._conn is None:
                self._conn = self._connect()
            conn = self._conn
            try:
                return self._guarded(op, conn)
            except BaseException as e:
                # The connection may be broken or mid-transaction: drop it, the next call
                # opens a new one (a restarted server is picked up this way; of several
                # hosts, the first writable one, after a read-only refusal too).
                self._drop(conn)
                translated = None if self._translate is None else self._translate(e)
                if translated is not None:
                    raise translated from e
                raise

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None and self._pid == os.getpid():
                self._close(conn)
