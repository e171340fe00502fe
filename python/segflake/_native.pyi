"""Type stubs of the native module ``segflake._native`` (re-exported by ``segflake``)."""

import datetime as _dt
import os
from typing import (
    Any,
    Callable,
    ClassVar,
    Dict,
    Final,
    Iterable,
    List,
    Literal,
    Mapping,
    Optional,
    Protocol,
    Tuple,
    TypedDict,
    Union,
)

from typing_extensions import Buffer, NotRequired

from .registries import Registry

__version__: Final[str]
CORE_VERSION: Final[str]
MAX_BATCH: Final[int]
"""The largest batch a ``next_ids``-style call accepts (16,777,216)."""
PRESETS: Final[Tuple[str, ...]]
"""``("twitter", "sonyflake", "uid-generator", "js-safe")``."""
FORMATS: Final[Tuple[str, ...]]
"""``("decimal", "base62", "base32")``."""
ERROR_CODES: Final[Tuple[str, ...]]
"""Every ``SegflakeError.code``, in C status order."""

PresetName = Literal["twitter", "sonyflake", "uid-generator", "js-safe", "twitter-dc"]
FieldOrderName = Literal["time-worker-sequence", "time-sequence-worker"]
FormatName = Literal["decimal", "base62", "base32"]
SequenceStartName = Literal["zero", "random"]
TimeInput = Union[int, str, _dt.datetime, _dt.date]
"""Unix milliseconds, an ISO-8601 UTC string (``"2025-01-01T00:00:00Z"``), a
timezone-aware ``datetime`` or a ``date`` (midnight UTC)."""

class LayoutDict(TypedDict, total=False):
    """A custom layout; missing fields come from ``preset`` (default ``"twitter"``)."""

    # <generated: LayoutDict>
    preset: PresetName
    time_bits: int
    worker_bits: int
    datacenter_bits: int
    sequence_bits: int
    tick_ms: int
    epoch_ms: TimeInput
    order: FieldOrderName
    min_lifetime_years: int
    # </generated>

LayoutInput = Union[PresetName, str, LayoutDict, Mapping[str, Any], "Layout"]

class DecodedIdDict(TypedDict):
    timestamp_ms: int
    tick: int
    worker_id: int
    sequence: int
    datacenter_id: Optional[int]

# ---------------------------------------------------------------------------------------
# Errors

class SegflakeError(Exception):
    """Base class of every error segflake raises.

    ``code`` is stable across releases and languages (``"CLOCK_MOVED_BACKWARDS"``);
    ``status`` is the C library's return code for the same error.
    """

    code: ClassVar[str]
    status: ClassVar[int]

# <generated: error classes>
class InvalidLayoutError(SegflakeError):
    """A layout parameter is out of range (bit widths, tick, epoch in the future)."""

class LayoutExhaustedError(SegflakeError):
    """The layout's time field runs out before now + min_lifetime_years."""

    exhausts_at_ms: int
    min_lifetime_years: int
    checked_at_ms: int

class WorkerIdOutOfRangeError(SegflakeError):
    """A worker ID does not fit the layout's worker field."""

    worker_id: int
    worker_bits: int

class ClockMovedBackwardsError(SegflakeError):
    """The clock is behind the last issued tick by more than max_drift_ms."""

    by_ms: int
    max_drift_ms: int

class ClockBeforeEpochError(SegflakeError):
    """The clock reads a time before the layout's epoch."""

    now_ms: int
    epoch_ms: int

class TimeExhaustedError(SegflakeError):
    """The layout's time field has run out: no further IDs can be issued."""

    exhausts_at_ms: int

class InvalidArgumentError(SegflakeError, ValueError):
    """An argument has the wrong type, is out of its allowed range or is malformed."""

class ParseError(SegflakeError, ValueError):
    """A textual ID (decimal, base62, base32) could not be parsed."""

class StoreContractViolationError(SegflakeError):
    """A store returned a range that is invalid or overlaps one already received."""

    tag: str

class SegmentsExhaustedError(SegflakeError):
    """Both segment buffers are empty and the store did not deliver in time."""

    tag: str

class StoreError(SegflakeError):
    """A store (or counter) operation failed."""

class SerialExhaustedError(SegflakeError):
    """A date-prefixed serial ran out of sequence numbers within one second."""

class ClosedError(SegflakeError):
    """The generator was closed, or was inherited by a forked child process."""

class NoFreeWorkerIdError(SegflakeError):
    """Every worker ID of the layout stayed leased by live holders for claim_wait_ms."""

    capacity: int
    held: int
    waited_ms: int

class LeaseExpiredError(SegflakeError):
    """The worker-ID lease may have expired or was lost, or IDs reached the time mark the
    registry accepted; IDs resume once a lease is held again."""

    worker_id: int

class ClockBehindMarkError(SegflakeError):
    """This host's clock is behind the worker ID's time mark by more than max_drift_ms."""

    worker_id: int
    mark_ms: int
    now_ms: int
    max_drift_ms: int
    waited_ms: int

class ClockSkewError(SegflakeError):
    """This host's clock differs from the live holders' median by more than max_peer_skew_ms, or
    from a serial counter's clock by more than counter_max_behind_ms / counter_max_ahead_ms."""

    now_ms: int
    median_ms: int
    peers: int
    max_peer_skew_ms: int
    second: int
    server_ms: int
    counter_max_behind_ms: int
    counter_max_ahead_ms: int

class RegistryError(SegflakeError):
    """The worker-ID registry failed or answered outside its contract."""

class UnknownTagError(SegflakeError):
    """The store has no such segment tag: create it (Leaf: a leaf_alloc row), or let the store
    create missing tags."""

class RegistryLostDataError(SegflakeError):
    """The registry lost the record of a worker ID this process held (a restart without
    persistence, FLUSHALL, eviction, a failover, a restore); IDs stopped at once and resume
    after a new claim."""

    worker_id: int

class LeafNodeAliveError(SegflakeError):
    """A Leaf snowflake node still reports for the node identity (ip:port) this process would
    take over; stop that Leaf node first."""

    worker_id: int
    identity: str

class ClockStalledError(SegflakeError):
    """The clock did not advance while the generator waited for the next tick: a clock frozen
    during synchronous work (Cloudflare Workers' Date.now() within a request) allows sequence
    capacity x (max_drift_ms + 1) IDs per reading."""

    reading_ms: int
    waiting_for_ms: int
# </generated>

# ---------------------------------------------------------------------------------------
# Layouts

class DecodedId:
    """The fields of a decoded ID."""

    # <generated: DecodedId properties>
    @property
    def timestamp_ms(self) -> int:
        """Unix milliseconds of the ID's tick."""
    @property
    def tick(self) -> int:
        """The time field: ticks since the layout's epoch."""
    @property
    def worker_id(self) -> int:
        """The worker field (on a layout with a datacenter field, the worker within
        datacenter_id)."""
    @property
    def sequence(self) -> int:
        """The sequence field."""
    @property
    def datacenter_id(self) -> Optional[int]:
        """The datacenter, on a layout with a datacenter field (then worker_id is the worker
        within it)."""
    # </generated>
    @property
    def datetime(self) -> _dt.datetime:
        """The start of the ID's tick as a timezone-aware UTC datetime."""
    def to_dict(self) -> DecodedIdDict: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

class Layout:
    """A validated snowflake layout: how ``time | worker | sequence`` fill 63 bits.

    ``Layout()`` is the twitter preset; ``Layout("sonyflake")``;
    ``Layout("uid-generator", epoch_ms="2025-01-01", min_lifetime_years=5)``;
    ``Layout(time_bits=40, worker_bits=8, sequence_bits=15, tick_ms=2)`` (missing fields
    come from the twitter preset). Raises ``InvalidLayoutError`` or
    ``LayoutExhaustedError`` (which says when it would run out). ``now_ms`` validates as
    if it were that time.
    """

    def __init__(
        self,
        preset: Optional[LayoutInput] = None,
        *,
        # <generated: Layout options>
        time_bits: Optional[int] = None,
        worker_bits: Optional[int] = None,
        datacenter_bits: Optional[int] = None,
        sequence_bits: Optional[int] = None,
        tick_ms: Optional[int] = None,
        epoch_ms: Optional[TimeInput] = None,
        order: Optional[FieldOrderName] = None,
        min_lifetime_years: Optional[int] = None,
        # </generated>
        now_ms: Optional[TimeInput] = None,
    ) -> None: ...
    @staticmethod
    def preset(name: PresetName, epoch_ms: Optional[TimeInput] = None) -> "Layout":
        """A preset, optionally with its epoch replaced."""
    # <generated: Layout properties>
    @property
    def time_bits(self) -> int:
        """Width of the time field."""
    @property
    def worker_bits(self) -> int:
        """Width of the worker field."""
    @property
    def sequence_bits(self) -> int:
        """Width of the sequence field."""
    @property
    def tick_ms(self) -> int:
        """Length of one time unit in milliseconds."""
    @property
    def epoch_ms(self) -> int:
        """Unix milliseconds of tick 0."""
    @property
    def order(self) -> FieldOrderName:
        """time-worker-sequence or time-sequence-worker."""
    @property
    def min_lifetime_years(self) -> int:
        """The lifetime the layout was checked for."""
    @property
    def total_bits(self) -> int:
        """Bits in use (at most 63)."""
    @property
    def lifetime_ms(self) -> int:
        """How long the time field lasts from the epoch."""
    @property
    def exhausts_at_ms(self) -> int:
        """When the time field runs out."""
    @property
    def max_ids_per_second(self) -> int:
        """The most IDs one worker can issue per second."""
    @property
    def js_safe_until_ms(self) -> Optional[int]:
        """When IDs pass 2^53 (absent if they never do)."""
    @property
    def max_worker_id(self) -> int:
        """The largest worker ID."""
    @property
    def max_sequence(self) -> int:
        """The largest sequence number."""
    @property
    def max_tick(self) -> int:
        """The largest tick."""
    @property
    def max_id(self) -> int:
        """The largest ID."""
    @property
    def datacenter_bits(self) -> int:
        """How many of the worker field's high bits name a datacenter (0: none)."""
    # </generated>
    def decode(self, id: int) -> DecodedId:
        """Splits an ID into its fields (``InvalidArgumentError`` if it has bits above the layout)."""
    def compose(
        self,
        tick: Optional[int] = None,
        worker_id: Optional[int] = None,
        sequence: Optional[int] = None,
        *,
        timestamp_ms: Optional[TimeInput] = None,
        datacenter_id: Optional[int] = None,
    ) -> int:
        """Packs fields into an ID: exactly one of ``tick`` and ``timestamp_ms``;
        ``worker_id`` and ``sequence`` default to 0. With ``datacenter_id`` (on a layout
        with a datacenter field), ``worker_id`` is the worker within that datacenter."""
    def to_dict(self) -> LayoutDict:
        """The parameters, as accepted by ``layout=`` and ``Layout(...)``."""
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

def decode(id: int, layout: Optional[LayoutInput] = None) -> DecodedId:
    """Splits an ID of ``layout`` (default twitter) into its fields."""

def compose(
    tick: Optional[int] = None,
    worker_id: Optional[int] = None,
    sequence: Optional[int] = None,
    *,
    timestamp_ms: Optional[TimeInput] = None,
    datacenter_id: Optional[int] = None,
    layout: Optional[LayoutInput] = None,
) -> int:
    """Packs fields into an ID of ``layout`` (default twitter)."""

# ---------------------------------------------------------------------------------------
# Snowflake

class ManualClock:
    """A clock that only moves when told to, for tests and simulations.

    A generator that would wait for the next tick moves it forward instead.
    """

    def __init__(self, now_ms: TimeInput) -> None: ...
    @property
    def now_ms(self) -> int: ...
    @property
    def waits(self) -> int:
        """How many times a generator waited on this clock."""
    def set_ms(self, unix_ms: TimeInput) -> None: ...
    def advance_ms(self, ms: int) -> None: ...
    def rewind_ms(self, ms: int) -> None: ...

class Snowflake:
    """A lock-free snowflake generator: strictly increasing IDs from any number of threads.

    ``worker_id`` is required (``0..=layout.max_worker_id``; ``WorkerIdOutOfRangeError``
    names the range). ``layout``: a preset name, a dict, or a :class:`Layout`;
    ``epoch_ms`` replaces its epoch. The logical tick may run up to ``max_drift_ms``
    (default 2000; 0 = strict Twitter behaviour) ahead of the clock when a tick's
    sequence is used up or the clock steps back; beyond that the generator waits (with
    the GIL released) or raises ``ClockMovedBackwardsError``. ``not_before_ms`` is a
    persisted :attr:`high_water_mark_ms`: no ID will carry a time at or below it.

    A generator refuses to issue IDs in a process forked from the one that made it
    (``ClosedError``): create one per process, after the fork.
    """

    def __init__(
        self,
        worker_id: int,
        *,
        # <generated: Snowflake options>
        datacenter_id: Optional[int] = None,
        layout: Optional[LayoutInput] = "twitter",
        epoch_ms: Optional[TimeInput] = None,
        max_drift_ms: Optional[int] = 2000,
        sequence_start: Optional[SequenceStartName] = "zero",
        not_before_ms: Optional[TimeInput] = None,
        # </generated>
        clock: Optional[ManualClock] = None,
    ) -> None: ...
    def next_id(self) -> int:
        """The next ID: strictly greater than every ID this generator issued before."""
    def next_ids(self, n: int) -> List[int]:
        """``n`` (1..=MAX_BATCH) strictly increasing IDs."""
    def next_ids_bytes(self, n: int) -> bytes:
        """``n`` IDs as native-endian unsigned 64-bit integers
        (``numpy.frombuffer(b, dtype=numpy.uint64)``, ``array.array("Q", b)``)."""
    def next_ids_into(self, out: Buffer) -> int:
        """Fills a writable, C-contiguous buffer of 64-bit integers (a numpy
        ``uint64``/``int64`` array, ``array.array("Q")``) with IDs; returns the count."""
    @property
    def high_water_mark_ms(self) -> int:
        """Unix milliseconds of the highest tick issued so far: persist it and pass it
        as ``not_before_ms`` after a restart."""
    @property
    def high_water_mark(self) -> int:
        """Alias of :attr:`high_water_mark_ms`."""
    @property
    def layout(self) -> Layout: ...
    @property
    def worker_id(self) -> int: ...
    @property
    def max_drift_ms(self) -> int: ...
    @property
    def sequence_start(self) -> SequenceStartName: ...
    @property
    def not_before_ms(self) -> Optional[int]: ...
    @property
    def pid(self) -> int:
        """The process that created this generator; it refuses to work in any other."""
    def decode(self, id: int) -> DecodedId: ...
    def compose(
        self,
        tick: Optional[int] = None,
        worker_id: Optional[int] = None,
        sequence: Optional[int] = None,
        *,
        timestamp_ms: Optional[TimeInput] = None,
        datacenter_id: Optional[int] = None,
    ) -> int:
        """Packs fields into an ID of this layout; ``worker_id`` defaults to this generator's."""
    @staticmethod
    def from_registry(
        registry: Registry,
        *,
        owner: Optional[str] = None,
        # <generated: from_registry options>
        layout: Optional[LayoutInput] = "twitter",
        epoch_ms: Optional[TimeInput] = None,
        max_drift_ms: Optional[int] = 2000,
        sequence_start: Optional[SequenceStartName] = "zero",
        not_before_ms: Optional[TimeInput] = None,
        lease_ttl_ms: Optional[int] = 30000,
        mark_ahead_ms: Optional[int] = 3000,
        preferred_worker_id: Optional[int] = None,
        claim_wait_ms: Optional[int] = 10000,
        clock_wait_ms: Optional[int] = 10000,
        max_peer_skew_ms: Optional[int] = 0,
        registry_timeout_ms: Optional[int] = 3000,
        clock_skew_allowance_ms: Optional[int] = 1000,
        # </generated>
        clock: Optional[ManualClock] = None,
    ) -> "Snowflake":
        """A generator whose worker ID is leased from ``registry`` (see
        :mod:`segflake.registries`): claimed now (blocking until held and the clock checks
        pass), renewed by a background thread every third of ``lease_ttl_ms``, released by
        :meth:`close`. No ID carries a time above the mark the registry accepted, so a
        holder paused past its lease and its successor issue disjoint IDs.

        ``owner`` is a label for audit rows (default: the host name); every generator adds
        its own random nonce (``label#<16 hex digits>``, :attr:`LeaseStats.owner`), so
        processes given one label never share a worker ID. A worker ID claimed without a
        mark (never used, or forgotten by the registry) starts above claim time +
        ``max_drift_ms`` + ``mark_ahead_ms`` + ``clock_skew_allowance_ms``: a first start
        on a fresh registry waits about ``mark_ahead_ms + clock_skew_allowance_ms``.

        Raises ``NoFreeWorkerIdError``, ``ClockBehindMarkError``, ``ClockSkewError``,
        ``LeafNodeAliveError`` or ``RegistryError``; later, IDs raise
        ``LeaseExpiredError`` while no lease is held, and ``RegistryLostDataError`` when a
        renewal found the registry had lost the lease (the generator claims again by
        itself)."""
    @property
    def leased(self) -> bool:
        """Whether the worker ID is leased from a registry."""
    def lease_stats(self) -> Optional[LeaseStats]:
        """The lease's state (``None`` for a generator given its worker ID)."""
    def close(self) -> None:
        """Stops issuing IDs for good; a leased generator releases its worker ID (at the
        time of its last ID, so a successor starts at once)."""
    def __enter__(self) -> "Snowflake": ...
    def __exit__(self, *exc: object) -> None: ...
    async def __aenter__(self) -> "Snowflake":
        """``async with``: the generator itself."""
    async def __aexit__(self, *exc: object) -> None:
        """``async with``: :func:`segflake.close_async` (the release runs off the loop)."""

class LeaseStats:
    """A leased generator's lease, for monitoring."""

    # <generated: LeaseStats properties>
    @property
    def owner(self) -> str:
        """This process incarnation's owner token."""
    @property
    def state(self) -> str:
        """claiming, starting, held, releasing, failed or closed."""
    @property
    def worker_id(self) -> Optional[int]:
        """The worker ID held (absent while none is)."""
    @property
    def lease_remaining_ms(self) -> Optional[int]:
        """How long the lease is certainly still held without another renewal."""
    @property
    def mark_ms(self) -> int:
        """The highest time mark the registry accepted: no ID carries a later time."""
    @property
    def mark_ahead_ms(self) -> float:
        """How far the mark is ahead of the clock (negative: IDs wait for a renewal)."""
    @property
    def renewals(self) -> int:
        """Successful renewals."""
    @property
    def last_renew_latency_ms(self) -> Optional[int]:
        """How long the last successful renewal took."""
    @property
    def failures(self) -> int:
        """Registry calls that failed or answered outside the contract."""
    @property
    def consecutive_failures(self) -> int:
        """Failures since the last success."""
    @property
    def lost(self) -> int:
        """Leases lost (expired or taken) while held."""
    @property
    def last_error(self) -> Optional[str]:
        """The registry's last error."""
    # </generated>
    def to_dict(self) -> Dict[str, Any]: ...


# ---------------------------------------------------------------------------------------
# Codecs

def _redis_durability_settings() -> List[str]:
    """The Redis settings a registry reads at start-up (``CONFIG GET`` each)."""

def _redis_durability_warning(settings: List[Tuple[str, str]]) -> Optional[str]:
    """What a Redis with ``settings`` would lose on a restart or under memory pressure, as
    one warning; ``None`` when the marks are kept."""

def _redis_target(url: str) -> str:
    """The Redis URL ``url`` as the core reads it, as JSON (``{"mode", "service", "tls",
    "nodes", "db", "user", "password", "replicas", "ca"}``); ``InvalidArgumentError`` saying
    what was wrong and listing the allowed spellings."""

def _replica_wait(
    configured: Optional[int], min_replicas_to_write: int, connected_replicas: int, timeout_ms: int
) -> Tuple[int, int]:
    """The core's replica-wait rule: ``(replicas, timeout_ms)`` of the ``WAIT`` after each
    write (``replicas`` 0: no wait)."""

def _replica_wait_check(replicas: int, timeout_ms: int, what: str, acked: int) -> Optional[str]:
    """``None`` when ``acked`` replicas are enough, else the core's message for the write ``what``."""

def _min_replicas_to_write(reply: List[str]) -> int:
    """The number in ``CONFIG GET min-replicas-to-write``'s reply ``[name, value]``, or 0."""

class _RegistryProtocol:
    """The core's registry protocol of ``kind`` (``zookeeper``, ``etcd``, ``redis``,
    ``postgres``, ``mysql``), driven by the adapters of ``segflake.registries``. ``start``
    and ``resume`` return the next step: a request (``{"op": ...}``), the call's
    ``{"answer": ...}`` or its ``{"error": text}``."""

    def __init__(self, kind: str, config: Dict[str, Any]) -> None:
        """``config``: zookeeper ``{root, identity}``, etcd ``{prefix}``, redis ``{prefix,
        wait_ms}``, postgres and mysql ``{host_name}``; ``ValueError`` with the core's
        message when ``kind`` or ``config`` is invalid."""
    def start(self, name: str, args: List[Any], context: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """The first step of registry call ``name`` (``args`` in call order); ``context`` is
        ZooKeeper's ``{session, now_ms}``. Drops a call left unfinished."""
    def resume(self, reply: Any) -> Dict[str, Any]:
        """The next step after ``reply``, the answer to the last request."""
    def describe(self) -> Dict[str, Any]:
        """ZooKeeper ``{identity, root, worker_id}``, etcd ``{prefix, leases}``, Redis ``{}``,
        SQL ``{schema}``."""

def encode(id: int, format: Optional[FormatName] = None) -> str:
    """``id`` as text: ``"decimal"`` (default), ``"base62"`` (11 characters) or
    ``"base32"`` (13 characters, Crockford); the fixed-width forms sort like the numbers."""

def parse(text: str, format: Optional[FormatName] = None) -> int:
    """Parses text produced by :func:`encode` (``ParseError`` says where it went wrong)."""

def encode_decimal(id: int) -> str: ...
def parse_decimal(text: str) -> int: ...
def encode_base62(id: int) -> str: ...
def parse_base62(text: str) -> int: ...
def encode_base32(id: int) -> str: ...
def parse_base32(text: str) -> int:
    """Case-insensitive; ``I`` and ``L`` read as 1, ``O`` as 0."""

class Obfuscator:
    """A keyed, reversible permutation of ``0..2**63`` (Speck64/128 with cycle-walking)
    for IDs shown to the public. The same key gives the same mapping in every language.

    ``key``: exactly 16 bytes, or a string of 32 hex digits.
    """

    def __init__(self, key: Union[bytes, bytearray, memoryview, str]) -> None: ...
    def obfuscate(self, id: int) -> int: ...
    def deobfuscate(self, id: int) -> int: ...

# ---------------------------------------------------------------------------------------
# Segments

AllocationResult = Union[
    Tuple[int, int], Tuple[int, int, int], List[int], Mapping[str, int], None, Any
]
"""``(max_id, step)``; ``(max_id, step, tag_step)`` where the store keeps a step per tag
(Leaf's ``leaf_alloc.step``: the generator then starts from it and never goes below it);
``None`` for a tag the store does not have (:class:`UnknownTagError`). ``max_id`` is the
tag's new ``max_id`` and ``step`` the step used; the caller owns ``[max_id - step,
max_id)``. A dict with those keys or an object with those attributes works too."""

class SegmentStore(Protocol):
    """Leaf's contract: atomically ``max_id += step`` for the tag, return ``(max_id, step)``
    (or ``(max_id, step, tag_step)``), or ``None`` for a tag the store does not have.

    A store may also have ``give_back(tag, expected_max_id, max_id) -> bool``: atomically
    lower the tag's ``max_id`` from ``expected_max_id`` to ``max_id`` if (and only if) it
    is still ``expected_max_id``, and say whether it did. A closing generator calls it with
    the IDs it fetched and did not issue, so the next one continues without a gap. It must
    be safe to run twice: a request resent after a lost reply must not lower ``max_id``
    again after others re-allocated the range (those IDs would be handed out twice); use a
    token made for each give back, as the SQL and Redis stores do."""

    def allocate(self, tag: str, step: int) -> AllocationResult: ...

StoreInput = Union[
    SegmentStore, Callable[[str, int], AllocationResult], "MemoryStore", "FileStore", "MultiStore", str
]

class SegmentOptionsDict(TypedDict):
    # <generated: SegmentOptionsDict>
    step: int
    max_step: int
    dynamic_step: bool
    prefetch_percent: int
    retry_backoff_ms: int
    wait_timeout_ms: int
    store_timeout_ms: int
    give_back: bool
    fetch_threads: NotRequired[int]
    """Threaded generators only."""
    # </generated>

class SegmentStats:
    """A snapshot of one tag's segments. Ranges are half-open ``[start, end)``."""

    # <generated: SegmentStats properties>
    @property
    def tag(self) -> str:
        """The business tag."""
    @property
    def current_start(self) -> int:
        """The current segment's first ID (equal to current_end when there is none yet)."""
    @property
    def current_end(self) -> int:
        """The current segment's end (exclusive)."""
    @property
    def position(self) -> int:
        """The next ID the current segment would issue."""
    @property
    def remaining(self) -> int:
        """IDs left in the current segment."""
    @property
    def next_ready(self) -> bool:
        """Whether the next segment is ready."""
    @property
    def next_start(self) -> int:
        """The next segment's first ID (0 when not ready)."""
    @property
    def next_end(self) -> int:
        """The next segment's end (0 when not ready)."""
    @property
    def step(self) -> int:
        """The step of the fetch in flight, or of the last request."""
    @property
    def fetch_in_flight(self) -> bool:
        """Whether a store call is running."""
    @property
    def fetches(self) -> int:
        """Completed fetches, successful or not."""
    @property
    def failures(self) -> int:
        """Failed fetches."""
    @property
    def consecutive_failures(self) -> int:
        """Failed fetches in a row."""
    @property
    def last_error(self) -> Optional[str]:
        """The last failure (store error or refused range)."""
    @property
    def last_fetch_latency_ms(self) -> Optional[int]:
        """How long the last completed fetch took, in milliseconds."""
    @property
    def issued(self) -> int:
        """IDs taken from this tag's segments so far."""
    @property
    def ids_per_second(self) -> float:
        """Recent consumption rate."""
    @property
    def runway_seconds(self) -> Optional[float]:
        """Seconds the buffered IDs would last at ids_per_second if the store went down now;
        absent when nothing is being consumed."""
    # </generated>
    def to_dict(self) -> Dict[str, Any]: ...

class SegmentTag:
    """One tag of a :class:`SegmentGenerator`: the hot path without the tag lookup."""

    @property
    def name(self) -> str: ...
    @property
    def generator(self) -> "SegmentGenerator":
        """The generator (a handle keeps it alive)."""
    def next_id(self) -> int: ...
    def try_next_id(self) -> Optional[int]: ...
    def next_ids(self, n: int) -> List[int]: ...
    def next_ids_bytes(self, n: int) -> bytes: ...
    def next_ids_into(self, out: Buffer) -> int: ...
    def stats(self) -> SegmentStats: ...

class SegmentGenerator:
    """Dense Leaf-compatible IDs per business tag from ranges a store hands out.

    ``store``: any object with ``allocate(tag, step) -> (max_id, step)`` (or such a
    callable), a :class:`MemoryStore`, a :class:`FileStore`, ``"file:PATH"``, or a
    :class:`MultiStore` of those (one per database: store ``i`` of ``n`` gives only IDs
    ``≡ i (mod n)``, and a failing one is skipped for the next). The store is
    called from ``fetch_threads`` background threads that hold the GIL only for the call;
    callers never wait on it while a buffered segment remains (the next one is fetched
    once ``prefetch_percent`` of the current one is used). A caller that finds both
    buffers empty waits, with the GIL released, at most ``wait_timeout_ms``, then gets
    ``SegmentsExhaustedError`` (at once if the fetch it waited for failed). A store call
    longer than ``store_timeout_ms`` counts as a failed fetch (its late answer is
    discarded). Ranges that
    overlap or precede earlier ones are refused (``StoreContractViolationError`` as the
    cause) and never issued. Leaf's dynamic step doubles ``step`` up to ``max_step`` while
    segments last under 15 minutes.

    A context manager; :meth:`close` stops the fetch threads. A generator refuses to
    work in a process forked from the one that made it (``ClosedError``).

    Closing gives the IDs fetched but not issued back to the store (a :class:`MemoryStore`,
    a :class:`FileStore`, or a store object with ``give_back(tag, expected_max_id,
    max_id)``, as the packaged stores have) when nobody allocated after them, so the next
    generator continues without a gap; ``give_back=False`` turns this off, and a
    :class:`MultiStore` never gives back. A crash still skips the rest of the range.
    """

    def __init__(
        self,
        store: StoreInput,
        *,
        # <generated: SegmentGenerator options>
        step: Optional[int] = 1000,
        max_step: Optional[int] = 1000000,
        dynamic_step: Optional[bool] = True,
        prefetch_percent: Optional[int] = 10,
        retry_backoff_ms: Optional[int] = 1000,
        wait_timeout_ms: Optional[int] = 1000,
        store_timeout_ms: Optional[int] = 10000,
        give_back: Optional[bool] = True,
        fetch_threads: Optional[int] = 1,
        # </generated>
    ) -> None: ...
    def next_id(self, tag: str) -> int: ...
    def try_next_id(self, tag: str) -> Optional[int]: ...
    def next_ids(self, tag: str, n: int) -> List[int]: ...
    def next_ids_bytes(self, tag: str, n: int) -> bytes: ...
    def next_ids_into(self, tag: str, out: Buffer) -> int: ...
    def tag(self, name: str) -> SegmentTag:
        """A handle on ``name`` that skips the tag lookup (starts its first fetch)."""
    def stats(self, tag: str) -> SegmentStats: ...
    def tags(self) -> List[str]: ...
    @property
    def options(self) -> SegmentOptionsDict: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None:
        """Stops the fetch threads (waiting and later calls get ``ClosedError``), then gives
        each tag's fetched but unissued IDs back to the store (unless ``give_back=False``),
        waiting for it at most ``store_timeout_ms``. Idempotent."""
    def __enter__(self) -> "SegmentGenerator": ...
    def __exit__(self, *args: object) -> bool: ...

class SegmentEngine:
    """The per-tag segment engine without I/O, for custom drivers: take IDs with
    :meth:`try_next`; when :attr:`wants_fetch`, call :meth:`begin_fetch` and, if it returns
    a step, call the store and hand its answer to :meth:`complete_fetch` (or the failure to
    :meth:`fail_fetch`) exactly once."""

    def __init__(
        self,
        tag: str,
        stores: Optional[int] = None,
        *,
        # <generated: SegmentEngine options>
        step: Optional[int] = 1000,
        max_step: Optional[int] = 1000000,
        dynamic_step: Optional[bool] = True,
        prefetch_percent: Optional[int] = 10,
        retry_backoff_ms: Optional[int] = 1000,
        wait_timeout_ms: Optional[int] = 1000,
        store_timeout_ms: Optional[int] = 10000,
        give_back: Optional[bool] = True,
        # </generated>
    ) -> None:
        """``stores``: how many stores the engine spans (a :class:`MultiStore`'s length,
        default 1); :attr:`fetch_store` then names the store each fetch asks."""
    @property
    def tag(self) -> str: ...
    @property
    def fetch_store(self) -> Optional[int]:
        """The store the fetch in flight asks (an index into a :class:`MultiStore`)."""
    @property
    def options(self) -> SegmentOptionsDict: ...
    def try_next(self) -> Optional[int]: ...
    def try_next_batch(self, n: int) -> List[int]: ...
    @property
    def wants_fetch(self) -> bool: ...
    def begin_fetch(self, now_ms: Optional[int] = None) -> Optional[int]:
        """The step to request, or None when no fetch is due. ``now_ms``: any monotonic
        milliseconds (default: a clock started with the engine); keep one time base."""
    def complete_fetch(self, result: AllocationResult, now_ms: Optional[int] = None) -> None:
        """Hands the store's answer to the engine; raises ``StoreContractViolationError``
        (or ``StoreError`` for garbage) when refused, which the engine records as a failure."""
    def fail_fetch(self, message: Union[str, BaseException], now_ms: Optional[int] = None) -> None: ...
    def timeout_fetch(self, step: int, now_ms: Optional[int] = None) -> None:
        """Records that the store did not answer the fetch of ``step`` within
        ``store_timeout_ms`` (a failed fetch; its late answer must be discarded)."""
    @property
    def failure_count(self) -> int: ...
    @property
    def completion_count(self) -> int: ...
    @property
    def fetch_in_flight(self) -> bool: ...
    def exhausted_error(self, now_ms: Optional[int] = None) -> SegflakeError:
        """The error for a caller that found no ID (to raise)."""
    def stats(self, now_ms: Optional[int] = None) -> SegmentStats: ...
    def close(self) -> None: ...
    def take_give_back(self) -> Optional[Tuple[int, int]]:
        """After :meth:`close` (and once the fetch in flight, if any, was completed or
        failed), what the engine can give back to its store, once: ``(expected_max_id,
        max_id)`` for the store's ``give_back(tag, expected_max_id, max_id)`` (the tag's
        ``max_id`` goes from ``expected_max_id`` down to ``max_id`` if it is still
        ``expected_max_id``). None while open, while a fetch is in flight (which forfeits
        the offer), for a multi-store engine, with ``give_back=False``, when nothing is
        left, on every later call, and in a forked child."""
    @property
    def closed(self) -> bool: ...

class MultiStore:
    """Tinyid's multi-database mode: one store per database, each with its own row for a
    tag. A :class:`SegmentGenerator` (or ``AsyncSegmentGenerator``) takes from store ``i``
    of ``n`` only the IDs ``≡ i (mod n)`` (list the databases in the order of their Tinyid
    ``remainder``), asks the store that answered last, and moves to the next at once when
    one fails. IDs of a tag still increase."""

    def __init__(
        self,
        stores: Iterable[Union[SegmentStore, Callable[[str, int], AllocationResult], "MemoryStore", "FileStore", str]],
    ) -> None: ...
    @property
    def stores(self) -> Tuple[Any, ...]:
        """The stores, in residue order."""
    def __len__(self) -> int: ...

class MemoryStore:
    """Leaf's table in memory (new tags start at ``max_id = initial_max_id``, default 1)."""

    def __init__(self, initial_max_id: Optional[int] = None) -> None: ...
    def allocate(self, tag: str, step: int) -> Tuple[int, int]: ...
    def give_back(self, tag: str, expected_max_id: int, max_id: int) -> bool:
        """Lowers the tag's ``max_id`` from ``expected_max_id`` to ``max_id`` if it is
        still ``expected_max_id``; returns whether it did."""
    def set_max_id(self, tag: str, max_id: int) -> None: ...
    def max_id(self, tag: str) -> Optional[int]: ...

class FileStore:
    """A durable, multi-process store in one text file (locked with ``flock``)."""

    def __init__(self, path: Union[str, "os.PathLike[str]"], *, initial_max_id: Optional[int] = None) -> None: ...
    def allocate(self, tag: str, step: int) -> Tuple[int, int]: ...
    def give_back(self, tag: str, expected_max_id: int, max_id: int) -> bool:
        """Lowers the tag's ``max_id`` from ``expected_max_id`` to ``max_id`` if it is
        still ``expected_max_id``; returns whether it did."""
    def raise_max_id(self, tag: str, max_id: int) -> int: ...
    @property
    def path(self) -> str: ...

# ---------------------------------------------------------------------------------------
# Serials

class SerialParts:
    # <generated: SerialParts properties>
    @property
    def date(self) -> int:
        """yyMMddHHmmss as a number (e.g. 250413120000)."""
    @property
    def unix_seconds(self) -> int:
        """The Unix second of date."""
    @property
    def worker_id(self) -> int:
        """The worker digits."""
    @property
    def sequence(self) -> int:
        """The sequence digits."""
    # </generated>
    def to_dict(self) -> Dict[str, int]: ...

class ScriptCounter(Protocol):
    """A shared counter that runs the core's serial script (``segflake.counters``)."""

    def run_serial_script(self, key: str, args: List[int]) -> Any: ...

class SerialGenerator:
    """Date-prefixed decimal serials (order numbers): ``yyMMddHHmmss``, then
    ``worker_digits`` digits of ``worker_id``, then ``sequence_digits`` of a per-second
    sequence (from the local counter, from ``counter(unix_second) -> int`` such as Redis
    ``INCR``, or from a script counter such as :class:`segflake.counters.RedisSerialCounter`).
    A serial is never at or below the last one, even when the clock steps back; persist
    :attr:`last` (periodically and at exit) and pass it as ``last`` after a restart."""

    COUNTER_ATTEMPTS: ClassVar[int]
    def __init__(
        self,
        *,
        # <generated: SerialGenerator options>
        worker_id: Optional[int] = 0,
        worker_digits: Optional[int] = 0,
        sequence_digits: Optional[int] = 4,
        utc_offset_minutes: Optional[int] = 0,
        last: Optional[int] = None,
        counter_timeout_ms: Optional[int] = 5000,
        counter_max_behind_ms: Optional[int] = 60000,
        counter_max_ahead_ms: Optional[int] = 60000,
        # </generated>
        counter: Union[Callable[[int], int], ScriptCounter, None] = None,
        clock: Optional[ManualClock] = None,
    ) -> None: ...
    def next(self) -> int: ...
    def next_id(self) -> int: ...
    @property
    def last(self) -> int: ...
    @property
    def worker_id(self) -> int: ...
    @property
    def worker_digits(self) -> int: ...
    @property
    def sequence_digits(self) -> int: ...
    @property
    def utc_offset_minutes(self) -> int: ...
    @property
    def counter_timeout_ms(self) -> int:
        """How long one call of an async counter may take (``AsyncSerialGenerator``)."""
    @property
    def counter_max_behind_ms(self) -> int: ...
    @property
    def counter_max_ahead_ms(self) -> int: ...
    def counter_key(self, unix_seconds: int) -> str:
        """``serial:<yyMMddHHmmss><worker digits>``: a script counter's key, after its prefix."""
    def counter_args(self, unix_seconds: int) -> List[int]:
        """The serial script's ARGV: second, counter_max_behind_ms, counter_max_ahead_ms, grace."""
    def counter_sequence(self, unix_seconds: int, reply: Any) -> int:
        """The sequence in a counter's answer (an int or the script's reply);
        ``ClockSkewError`` when the script refused the second."""
    def date_prefix(self, unix_seconds: int) -> int: ...
    def format(self, unix_seconds: int, sequence: int) -> int: ...
    def decode(self, serial: int) -> SerialParts: ...
    def counter_second(self, now_ms: Optional[TimeInput] = None) -> int: ...
    def accept(self, unix_seconds: int, sequence: int) -> Optional[int]: ...
    def _counter_stuck_error(self) -> StoreError: ...

# ---------------------------------------------------------------------------------------
# Helpers

def worker_id_from_hostname(hostname: str) -> int:
    """The ordinal of a Kubernetes StatefulSet pod: ``"web-7"`` gives 7."""

def worker_id_from_ipv4(address: str, worker_bits: Optional[int] = None) -> int:
    """The low ``worker_bits`` (default 10) bits of a dotted-quad IPv4 address."""

def worker_id_from_text(name: str, text: Optional[str], worker_bits: Optional[int] = None) -> int:
    """A decimal worker ID from ``text``, the value of environment variable ``name``
    (``None``: not set), checked against ``worker_bits`` (default 10). An unset, empty or
    non-decimal value raises ``InvalidArgumentError`` naming ``name``; a number beyond the
    layout raises ``WorkerIdOutOfRangeError``."""

def worker_id_from_env(name: str, worker_bits: Optional[int] = None) -> int:
    """The decimal worker ID in ``os.environ[name]``, such as ``POD_INDEX`` set from
    Kubernetes' ``apps.kubernetes.io/pod-index`` label through the downward API; errors as
    ``worker_id_from_text``."""

def parse_time_ms(text: str) -> int:
    """Unix milliseconds of ``"2025-01-01"``, ``"2025-01-01T00:00:00.000Z"`` or digits."""

def format_time_ms(ms: int) -> str:
    """``"2025-01-01T00:00:00.000Z"`` for Unix milliseconds."""

def _bench_noop() -> int: ...
def _options(set: str, input: Mapping[str, Any], now_ms: int) -> Dict[str, Any]:
    """The settings the core accepts for an options set (for the shared vectors)."""
def _tables() -> str:
    """The core's option and record tables as JSON."""
def _before_fork() -> None: ...
def _after_fork_in_parent() -> None: ...
def _after_fork_in_child() -> None: ...
def _close_all_at_exit() -> None: ...
def _fork_generation() -> int: ...
