"""The store interface: key -> bytes, with ranged, batched and counted reads.

A store maps ``/``-separated string keys (``"array/c/0/1"``) to bytes. Everything above the store layer
talks to it through the methods of :class:`Store`; the dataset layer never opens files itself.

Read requests are typed (:mod:`altarr.stores.ranges`): ``(key, WHOLE)``, ``(key, Range(start, stop))``,
``(key, Offset(start))`` and ``(key, Suffix(length))`` (the last ``length`` bytes, or the whole object if
it is shorter); their keys and types are checked once, by
:func:`~altarr.stores.ranges.normalize_requests`, before anything else sees them.

A request for a key that does not exist yields ``None`` in its slot; it never raises. Results of a batch
come back in request order. A range past the end of an object is clipped like a Python slice; callers
that need an exact length check it themselves and raise ``CorruptShardError``.

One read path for every store: :meth:`Store.get_ranges` checks the batch, merges it
(:func:`~altarr.stores.coalesce.plan_reads`), hands the merged requests to the store's one primitive
:meth:`Store._fetch`, counts, and cuts each original result back out. A store implements only
``_fetch``.

Counting: every store keeps a :class:`StoreStats`. One *read* is one request that went to the backend
after coalescing (so two nearby ranges of one key merged into one request count as one read);
``bytes_read`` counts the bytes that request transferred. A request for a missing key counts as one
read with zero bytes. ``writes``/``bytes_written``, ``deletes``, ``lists`` and ``size_queries`` count
likewise.

Capabilities are declared, never probed: class attributes of :class:`Store` (``cheap_stat``,
``versioned_reads``, ``reports_versions``, ``reports_sizes``, ``concurrent_writes``,
:attr:`Store.identity`) and the mixin :class:`OpensReaders`
(stores that hand out open files for many ranged reads, checked with ``isinstance``).

Example:
    >>> from altarr.stores import MemoryStore, Range, Suffix, WHOLE
    >>> s = MemoryStore()
    >>> s.set("a/b", b"0123456789")
    >>> s.get_ranges([("a/b", Range(2, 4)), ("a/b", Suffix(3)), ("missing", WHOLE)])
    [b'23', b'789', None]
    >>> s.stats.reads  # a range and a suffix of one key cannot merge (the size is unknown): 3 requests
    3
"""

from __future__ import annotations

import builtins
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

from ..errors import ReadOnlyError
from .coalesce import DEFAULT_COALESCE_GAP, DEFAULT_MAX_COALESCED_SIZE, CoalescePlan, plan_reads
from .keys import normalize_key
from .ranges import WHOLE, ByteRequest, ReadRequest, normalize_requests

__all__ = [
    "Store",
    "StoreStats",
    "ReadRequest",
    "Fetched",
    "OpensReaders",
    "VersionedReads",
    "normalize_key",
    "DEFAULT_COALESCE_GAP",
]


class Fetched(NamedTuple):
    """What a store's :meth:`Store._fetch` primitive returns for a batch of merged requests."""

    #: Per merged request, its bytes (any bytes-like object) or ``None`` for a missing key.
    data: list[Any]
    #: Per merged request, the version token of the object the bytes came from (as :meth:`Store.stat`
    #: gives it), when ``versioned`` was asked and the store knows versions; else ``None``.
    versions: list[Any] | None = None
    #: Backend requests made, when not one per merged request (``None``: ``len(data)``).
    reads: int | None = None
    #: Per merged request, the total size in bytes of the object the bytes came from, when ``versioned``
    #: was asked and the backend told it with the bytes (a file's ``fstat``, an object store's ``GET``
    #: answer, a dict value's length); else ``None`` (all of them, or that request's).
    sizes: list[int | None] | None = None


@dataclass
class StoreStats:
    """Request counters of one store. Thread-safe increments via :meth:`add`; :meth:`reset` zeroes."""

    reads: int = 0
    bytes_read: int = 0
    writes: int = 0
    bytes_written: int = 0
    deletes: int = 0
    lists: int = 0
    size_queries: int = 0
    #: Batched backend calls whose requests were in flight together (one network round trip each on
    #: object stores); counted by the remote stores (fsspec, obstore).
    rounds: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, n in counts.items():
                setattr(self, name, getattr(self, name) + n)

    def reset(self) -> None:
        with self._lock:
            for f in fields(self):
                if not f.name.startswith("_"):
                    setattr(self, f.name, 0)

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}

    def __getstate__(self) -> dict[str, int]:  # pickles the counts (a store pickles with its stats)
        return self.as_dict()

    def __setstate__(self, state: dict[str, int]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def _one_batch(datas: list, versions: list, sizes: list) -> Iterator[list[tuple[int, Any, Any, int | None]]]:
    """:meth:`Store.get_ranges_as_ready`'s answer when everything came at once: one batch of
    ``(position, bytes, version, object size)``."""
    return iter([list(zip(range(len(datas)), datas, versions, sizes, strict=True))])


class Store(ABC):
    """Abstract key -> bytes store. See the module docstring for range and counting semantics.

    A store implements :meth:`_fetch` (serve merged read requests), :meth:`size`, :meth:`set`,
    :meth:`delete` and :meth:`list` (and :meth:`list_dir` where it lists a folder faster), and declares what it can do with the capability
    attributes below; callers read those attributes, they never probe for methods.
    """

    # --- capabilities (declared; overridden by the stores that have them) ------------------------------
    #: True when writes are refused.
    read_only: bool = False
    #: True when :meth:`stat` is cheap (a system call or a dict lookup, not a network round trip), so
    #: callers may validate cached data (shard indexes) against it on every use.
    cheap_stat: bool = False
    #: True when every ranged read reports the version of the object it read, at no extra cost (an
    #: object store's ``GET`` answers with the ETag): :meth:`get_ranges_versioned` then validates cached
    #: data without a :meth:`stat`.
    versioned_reads: bool = False
    #: True when :meth:`get_ranges_versioned` reports versions at all (else all ``None``).
    reports_versions: bool = False
    #: True when :meth:`get_ranges_sized` reports the total size of every object it read, taken with its
    #: bytes at no extra request; else sizes are ``None`` where the store cannot tell them for free.
    reports_sizes: bool = False
    #: Ranges of one key whose gap is at most this many bytes are merged into one backend request.
    coalesce_gap: int = DEFAULT_COALESCE_GAP
    #: A merged span of ranges is not grown past this many bytes.
    max_coalesced_size: int = DEFAULT_MAX_COALESCED_SIZE
    #: True when :meth:`get_ranges_as_ready` hands each answer over as it arrives (the store sends a
    #: batch's requests concurrently), else it answers a batch at once. The write path works either way
    #: (per batch it gets); the declaration is for callers and the store conformance suite.
    answers_as_ready: bool = False
    #: The merged results of :meth:`get_ranges_versioned` are handed out as zero-copy views even where a
    #: request equals its merged request (stores whose backend buffers are not ``bytes``).
    _whole_views: bool = False

    @property
    def identity(self) -> object:
        """What makes two store objects the same storage (two LocalStores on one folder share it); the
        dataset layer keys its in-process shard locks on it. Default: the object itself."""
        return id(self)

    def __init__(self) -> None:
        self.stats = StoreStats()

    # --- reads ----------------------------------------------------------------------------------------
    def get_ranges(self, requests: Sequence[ReadRequest]) -> list[bytes | None]:
        """Read many byte ranges (of one or many keys) in one call, concurrently where the backend
        allows, coalescing nearby ranges of one key. Results (``bytes``) in request order; ``None`` for a
        missing key.

        >>> from altarr.stores import MemoryStore, Offset, Range
        >>> s = MemoryStore(); s.set("k", b"abcdef")
        >>> s.get_ranges([("k", Offset(4)), ("k", Range(1, 3))])
        [b'ef', b'bc']
        """
        return self._read_batch(requests, False)[0]

    def get_ranges_versioned(
        self, requests: Sequence[ReadRequest]
    ) -> tuple[list[bytes | None], list[float | int | str | None]]:
        """:meth:`get_ranges` plus, per request, the version token (as :meth:`stat` gives it) of the object
        the bytes came from, read atomically with them; ``None`` where unknown (stores that do not
        :attr:`report versions <reports_versions>`) or the key is missing. The results are bytes-like: a
        range merged with others may come back as a zero-copy ``memoryview`` slice of the merged read."""
        datas, versions, _ = self._read_batch(requests, True)
        return datas, versions

    def get_ranges_sized(
        self, requests: Sequence[ReadRequest]
    ) -> tuple[list[bytes | None], list[float | int | str | None], list[int | None]]:
        """:meth:`get_ranges_versioned` plus, per request, the total size in bytes of the object its bytes
        came from, told by the backend with them (no size query, no extra request); ``None`` where the
        store cannot tell it for free (see :attr:`reports_sizes`) or the key is missing. Callers check
        positions read out of an object (a shard index at its end) against it.

        >>> from altarr.stores import MemoryStore, Suffix
        >>> s = MemoryStore(); s.set("k", b"abcdef")
        >>> s.get_ranges_sized([("k", Suffix(2)), ("gone", Suffix(2))])[2], s.stats.reads
        ([6, None], 2)
        """
        return self._read_batch(requests, True)

    def get_ranges_as_ready(
        self, requests: Sequence[ReadRequest]
    ) -> Iterator[list[tuple[int, Any, Any, int | None]]]:
        """:meth:`get_ranges_sized` handed over as the answers arrive, so that a caller works on the first
        while the others are still on the way (the write path rebuilds each shard as it comes). Yields,
        per backend answer, the requests it answers as ``(position in requests, bytes-like or None,
        version, object size)``. The requests are sent when this is called, not when the iterator is
        first advanced; merged, counted and (inside
        :meth:`exclusive`) recorded as by :meth:`get_ranges_sized`. A store that does not declare
        :attr:`answers_as_ready` answers everything at once, in request order, in one batch.

        >>> from altarr.stores import MemoryStore, Range
        >>> s = MemoryStore(); s.set("a", b"123")
        >>> batches = list(s.get_ranges_as_ready([("a", WHOLE), ("gone", WHOLE), ("a", Range(1, 2))]))
        >>> len(batches), [(i, d and bytes(d)) for i, d, _, _ in batches[0]]
        (1, [(0, b'123'), (1, None), (2, b'2')])
        """
        if not requests:
            return iter([])
        return _one_batch(*self.get_ranges_sized(requests))

    def get(self, key: str) -> bytes | None:
        """The whole object, or ``None`` if the key does not exist."""
        return self.get_ranges([(key, WHOLE)])[0]

    def get_range(self, key: str, request: ByteRequest) -> bytes | None:
        """One byte request of one key (``get_range(key, Range(2, 5))``), or ``None`` if the key does not
        exist."""
        return self.get_ranges([(key, request)])[0]

    def _read_batch(self, requests: Sequence[ReadRequest], versioned: bool) -> tuple[list, list, list]:
        """The one read path: check, merge, :meth:`_fetch`, count, split. Returns the data and, with
        ``versioned``, the version and object size per request (else two empty lists)."""
        if not requests:
            return [], [], []
        plan = plan_reads(normalize_requests(requests), self.coalesce_gap, self.max_coalesced_size)
        return self._read_planned(plan, versioned)

    def _read_planned(self, plan: CoalescePlan, versioned: bool) -> tuple[list, list, list]:
        """:meth:`_read_batch` once the requests are merged: fetch, count, split."""
        fetched = self._fetch(plan.merged, versioned)
        data = fetched.data
        self.stats.add(
            reads=len(data) if fetched.reads is None else fetched.reads,
            bytes_read=sum(len(r) for r in data if r is not None),
        )
        return self._split(plan, fetched, versioned)

    def _split(self, plan: CoalescePlan, fetched: Fetched, versioned: bool) -> tuple[list, list, list]:
        if not versioned:
            return plan.split(fetched.data), [], []
        if self._whole_views:
            views = [None if r is None else memoryview(r) for r in fetched.data]
            out: list[Any] = [
                None if (v := views[m]) is None else (v if ident else v[lo:hi])
                for m, lo, hi, ident in plan.parts
            ]
        else:
            out = plan.split(fetched.data, views=True)  # the engine's reads take zero-copy slices
        unknown = [None] * len(out)
        versions = unknown if fetched.versions is None else plan.versions(out, fetched.versions)
        sizes = unknown if fetched.sizes is None else plan.versions(out, fetched.sizes)
        return out, versions, sizes

    @abstractmethod
    def _fetch(self, merged: list[ReadRequest], versioned: bool) -> Fetched:
        """The store's read primitive: serve every merged request (see
        :func:`~altarr.stores.coalesce.plan_reads` for their shapes: ``WHOLE``, ``Range(s, e)`` with
        ``s <= e``, ``Offset(s)``, ``Suffix(n)``), concurrently where the backend allows. Per request its
        bytes (clipped at the end of the object like a slice) or ``None`` for a missing key, and with
        ``versioned`` the version each came from and, where the backend tells it with the bytes, the
        object's total size (:attr:`Fetched.sizes`, declared by :attr:`reports_sizes`). Counting and
        splitting are the base class's."""

    @abstractmethod
    def size(self, key: str) -> int | None:
        """The object's size in bytes, or ``None`` if it does not exist (counts a size query)."""

    def exists(self, key: str) -> bool:
        return self.size(key) is not None

    def stat(self, key: str) -> tuple[int, float | int | str] | None:
        """``(size, version_token)`` of an object, or ``None`` if it does not exist (counts a size query).

        The version token changes whenever the object is replaced (a file's modification time and inode,
        an object store's ETag, a per-key write counter in memory); compare tokens for equality only.
        Callers use it to validate cached data such as shard indexes. This default, for stores that
        cannot tell versions, returns the size as the token (a weak check).
        """
        size = self.size(key)
        return None if size is None else (size, size)

    # --- writes ---------------------------------------------------------------------------------------
    @abstractmethod
    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        """Write a whole object atomically (readers see the old or the new object, never a mix).

        ``value`` is bytes-like, or a list/tuple of bytes-like parts written back to back (a shard's
        chunks and index): a local file gets them with ``writev``, without a joined copy."""

    def set_many(self, items: Sequence[tuple[str, bytes | bytearray | memoryview]]) -> None:
        """Write many objects; concurrent where the backend allows. Each write is atomic on its own."""
        for key, value in items:
            self.set(key, value)

    @abstractmethod
    def delete(self, key: str) -> bool:
        """Delete one object; returns whether it existed."""

    def delete_many(self, keys: Sequence[str]) -> list[bool]:
        return [self.delete(k) for k in keys]

    def delete_prefix(self, prefix: str) -> int:
        """Delete every key under ``prefix`` (a folder); returns how many were deleted."""
        keys = list(self.list(prefix))
        return sum(self.delete_many(keys))

    # --- listing --------------------------------------------------------------------------------------
    @abstractmethod
    def list(self, prefix: str = "") -> Iterator[str]:
        """Every key under ``prefix`` (recursively), as full keys. ``prefix`` is a folder path."""

    def list_dir(self, prefix: str = "") -> tuple[builtins.list[str], builtins.list[str]]:
        """The immediate children of folder ``prefix``: ``(keys, subfolders)``, names relative to it,
        sorted. This default takes them from one :meth:`list` of ``prefix``."""
        prefix = normalize_key(prefix)
        n = len(prefix) + 1 if prefix else 0
        keys: builtins.list[str] = []
        folders: set[str] = set()
        for key in self.list(prefix):
            head, sep, _ = key[n:].partition("/")
            if sep:
                folders.add(head)
            else:
                keys.append(head)
        return sorted(keys), sorted(folders)

    # --- concurrent writers ----------------------------------------------------------------------------
    #: How this store keeps two writers (processes, machines) doing a read-modify-write of one object
    #: from losing an update: ``"locked"`` (an OS lock held from the read to the write),
    #: ``"conditional"`` (writes conditioned on the version that was read, :class:`WriteConflictError`
    #: on a change, retried by the caller) or ``"single-writer"`` (neither: give each object one writer
    #: at a time). Threads of one process are always serialized by the dataset layer.
    concurrent_writes: str = "single-writer"

    @contextmanager
    def exclusive(self, keys: Iterable[str]) -> Iterator[None]:
        """Make the read-modify-write of ``keys`` done inside safe against other writers, as
        :attr:`concurrent_writes` says: hold locks, or condition the writes of these keys on the
        versions read inside (raising :class:`~altarr.errors.WriteConflictError` to be retried). This
        default (``"single-writer"`` stores) does nothing."""
        yield

    def list_temporary(self, prefix: str = "") -> builtins.list[str]:
        """Leftover temporary files of writers that were killed (``.altarr-tmp`` files of unfinished
        writes, ``.altarr-lock`` files of killed lock holders) under ``prefix``; other listings skip
        them. Stores that write objects whole, without temporary objects, have none (this default)."""
        return []

    def remove_temporary(self, keys: Iterable[str]) -> builtins.list[str]:
        """Remove leftover temporary files listed by :meth:`list_temporary`; returns those removed."""
        return []

    def _require_writable(self, key: str | None, operation: str) -> None:
        """Raise :class:`~altarr.errors.ReadOnlyError` if this store refuses writes."""
        if self.read_only:
            raise ReadOnlyError(f"cannot {operation}: the store is read-only ({self!r})", key=key)

    # --- misc -----------------------------------------------------------------------------------------
    def with_read_only(self) -> Store:  # pragma: no cover - overridden where meaningful
        return self

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release resources (thread pools, file handles)."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class VersionedReads:
    """Mixin declaring that :meth:`Store.get_ranges_versioned` reports each object's version, read
    atomically with its bytes (``_fetch`` fills :attr:`Fetched.versions` when asked)."""

    reports_versions: bool = True


class ObjectReader(ABC):
    """An open object for many ranged reads, all from one version of it (what
    :meth:`OpensReaders.open_reader` returns). Safe to read from several threads at once; each read
    counts as one read in its store's stats. A context manager that closes it."""

    #: The store key it reads.
    key: str
    #: The version token of the object it holds (as :meth:`Store.stat` gives it).
    version: Any
    #: An OS file descriptor that native code may read positionally (then it reports what it read with
    #: :meth:`count_reads`), or ``None`` when the reader has none.
    fd: int | None = None

    @property
    def size(self) -> int | None:
        """The size of the object version it holds, ``None`` if it cannot tell without a request."""
        return None

    @abstractmethod
    def read(self, request: ByteRequest) -> bytes:
        """The bytes of one byte request (see :mod:`altarr.stores.ranges`)."""

    @abstractmethod
    def read_into(self, start: int, buffer: Any) -> int:
        """Read ``len(buffer)`` bytes at ``start`` into ``buffer``; how many were read."""

    @abstractmethod
    def count_reads(self, reads: int, nbytes: int) -> None:
        """Count reads made on :attr:`fd` directly (by native code) in the store's stats."""

    @abstractmethod
    def close(self) -> None:
        """Release the object (idempotent)."""

    def __enter__(self) -> ObjectReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class OpensReaders(ABC):
    """Mixin (a declared capability) of stores that hand out an open object for many ranged reads of one
    key, all from one version of it: ``open_reader(key)`` returns ``None`` for a missing key, else an
    object with ``version``, ``read(ByteRequest)``, ``read_into(start, buffer)``, ``count_reads`` and
    ``close()`` (see :class:`~altarr.stores.local_files.FileReader`). Callers test ``isinstance(store,
    OpensReaders)``."""

    @abstractmethod
    def open_reader(self, key: str) -> ObjectReader | None:
        """An open reader of ``key``, or ``None`` if it does not exist."""
