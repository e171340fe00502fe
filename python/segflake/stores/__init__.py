"""Segment stores on the databases Leaf users already run.

Each store implements Leaf's contract for :class:`segflake.SegmentGenerator`:
``allocate(tag, step)`` atomically performs ``max_id = max_id + step`` for the tag and
returns ``(max_id, step)``; the generator then owns ``[max_id - step, max_id)``. The SQL
stores keep Leaf's per-tag step (the ``step`` column: a tag's first allocation uses it,
and answers report it as ``(max_id, step, tag_step)`` so the generator never goes below
it), and answer ``None`` for a tag without a row (:class:`segflake.UnknownTagError`) unless
created on first use (``create_missing_tags``).

* :class:`PostgresStore` - Leaf's ``leaf_alloc`` table on PostgreSQL, via psycopg 3
  (``pip install segflake[postgres]``);
* :class:`MySQLStore` - Leaf's ``leaf_alloc`` table on MySQL or MariaDB, via PyMySQL
  (``pip install segflake[mysql]``);
* :class:`RedisStore` - one counter per tag, advanced with ``INCRBY``, via redis-py
  (``pip install segflake[redis]``);
* :class:`HttpStore` - segments leased from a ``segflake serve`` over HTTP (the standard
  library only): no database credentials in the application;
* :class:`MultiStore` - several of the above, one per database (Tinyid's multi-database
  mode): the generator takes from each store's ranges only one residue class and moves to
  the next store when one fails, so any one database can be down. A database states its
  class ``≡ remainder (mod delta)`` (``delta`` = the number of databases): the SQL stores
  read Tinyid's ``delta`` and ``remainder`` columns when the table has them (``ALTER
  TABLE leaf_alloc ADD COLUMN delta INTEGER DEFAULT 2, ADD COLUMN remainder INTEGER
  DEFAULT 0``), :class:`RedisStore` the key ``segflake:leaf_alloc_residue``
  (``SET segflake:leaf_alloc_residue 2:0``), and the class then follows the database
  whatever its place in each client's list; stores that state none take the class of
  their place (``≡ i (mod n)`` for store ``i``), so list them in the same order
  everywhere.

asyncio (:class:`segflake.AsyncSegmentGenerator`): :class:`AsyncPostgresStore` (psycopg's
``AsyncConnection``), :class:`AsyncMySQLStore` (aiomysql, in ``segflake[mysql]``),
:class:`AsyncRedisStore` (``redis.asyncio``) and :class:`AsyncHttpStore` (``http.client`` on a
worker thread) run the same statements and scripts, take the same URLs and TLS settings,
and bound every call by their ``timeout``; close them with ``await store.aclose()``. A
synchronous store handed to an ``AsyncSegmentGenerator`` works too: it is called on a worker
thread, never on the event loop.

Every store also has ``give_back(tag, expected_max_id, max_id)`` (a coroutine in the async
ones): the tag's ``max_id`` goes back from ``expected_max_id`` to ``max_id`` if (and only if)
it is still ``expected_max_id``, with the core's statements or script, and it answers
whether it did. A generator that closes calls it with the IDs it fetched and did not issue,
so the next one continues without a gap; ``HttpStore`` asks the server (``POST
/api/segment/giveback/TAG``, with a random token per give back under which the server records
and applies it, so a request resent by a proxy changes nothing), and a server without that
endpoint gives nothing back. A give
back is safe to run twice: the SQL stores record it under a random token in the marker
table ``{table}_give_back`` (created on the first give back; a database user without the
``CREATE`` privilege needs it made beforehand from ``stores/sql/leaf_alloc.*.sql``, with
``SELECT, INSERT, UPDATE`` on it) and apply it by that token at most once, the Redis stores
set a marker key per give back, so a statement or script resent after a lost reply never
lowers ``max_id`` again after others allocated the range.

The SQL stores use an existing Leaf table as it is (``stores/sql/leaf_alloc.*.sql`` in the
source tree is Leaf's schema); ``ensure_tag`` creates a row without touching an existing
one. The client library is imported when a store is created, so ``import segflake`` never
needs it.

TLS (the same settings as the registries' and Node's stores): ``RedisStore`` takes
``rediss://`` URLs (the certificate checked against ``ca_file``, or the URL's
``ca=PATH``, and the host name); ``PostgresStore`` libpq's own ``sslmode``
(``require``, ``verify-ca``, ``verify-full``) and ``sslrootcert``; ``MySQLStore`` a
``mysql://`` URL with MySQL's ``ssl-mode`` (``REQUIRED``, ``VERIFY_CA``,
``VERIFY_IDENTITY``) and ``ssl-ca``; ``HttpStore`` ``https://`` with ``ca_file``. A URL
that asks for TLS never falls back to plaintext: the connection fails instead.

Durability is part of the no-duplicate guarantee: a server that acknowledges an
allocation and then loses it after a crash hands the same range out again. PostgreSQL
needs ``synchronous_commit = on`` (the default); MySQL/MariaDB needs InnoDB with
``innodb_flush_log_at_trx_commit = 1`` (``2`` survives a server process crash but not a
power loss); Redis needs ``appendonly yes`` with ``appendfsync always`` (``everysec``
survives a server process crash but not a power loss); with replicas, the Redis stores
wait for them after every allocation and give back (``WAIT``; the URL's ``replicas=N``,
see :class:`RedisStore`), so a failover to a replica never hands out a range again.
``redis+sentinel://`` and ``redis+cluster://`` URLs reach a Sentinel-monitored primary
and a Cluster.
"""

from __future__ import annotations

from .._native import MultiStore
from ._http import HttpStore
from ._mysql import MySQLStore
from ._postgres import PostgresStore
from ._redis import RedisStore
from ._common import LeafRows, ReadOnlyServerError, TagNotFoundError
from ._async import AsyncHttpStore, AsyncMySQLStore, AsyncPostgresStore, AsyncRedisStore

__all__ = [
    "AsyncHttpStore",
    "AsyncMySQLStore",
    "AsyncPostgresStore",
    "AsyncRedisStore",
    "HttpStore",
    "LeafRows",
    "MultiStore",
    "MySQLStore",
    "PostgresStore",
    "ReadOnlyServerError",
    "RedisStore",
    "TagNotFoundError",
]
