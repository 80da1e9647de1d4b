"""The store interface: key -> bytes, with ranged, batched and counted reads.

A store maps ``/``-separated string keys (``"array/c/0/1"``) to bytes. Everything above the store layer
talks to it through the methods of :class:`Store`; the dataset layer never opens files itself.

Range requests are ``(key, start, stop)`` tuples with Python slice meaning, plus a suffix form:

* ``(key, None, None)`` - the whole object;
* ``(key, start, None)`` - from ``start`` to the end;
* ``(key, start, stop)`` - bytes ``[start, stop)``;
* ``(key, -n, None)`` - the last ``n`` bytes (an HTTP suffix range). If the object is shorter than
  ``n`` the whole object is returned (the caller checks the length it got).

A request for a key that does not exist yields ``None`` in its slot; it never raises. Results of a batch
come back in request order. A range past the end of an object is clipped like a Python slice; callers
that need an exact length check it themselves and raise ``CorruptShardError``.

Counting: every store keeps a :class:`StoreStats`. One *read* is one request that went to the backend
after coalescing (so two nearby ranges of one key merged into one request count as one read);
``bytes_read`` counts the bytes that request transferred. A request for a missing key counts as one
read with zero bytes. ``writes``/``bytes_written``, ``deletes``, ``lists`` and ``size_queries`` count
likewise.

Example:
    >>> from altarr.stores import MemoryStore
    >>> s = MemoryStore()
    >>> s.set("a/b", b"0123456789")
    >>> s.get_ranges([("a/b", 2, 4), ("a/b", -3, None), ("missing", None, None)])
    [b'23', b'789', None]
    >>> s.stats.reads  # a range and a suffix of one key cannot merge (the size is unknown): 3 requests
    3
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields

from ..errors import InvalidKeyError, ReadOnlyError

__all__ = ["Store", "StoreStats", "RangeRequest", "VersionedReads", "normalize_key", "DEFAULT_COALESCE_GAP"]

RangeRequest = tuple[str, int | None, int | None]

#: Ranges of one key whose gap is at most this many bytes are merged into one request by default.
DEFAULT_COALESCE_GAP = 64 * 1024


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


def normalize_key(key: str) -> str:
    """Check and normalize a store key: ``/``-separated, relative, no ``..``/``.`` segments.

    Raises :class:`~altarr.errors.InvalidKeyError` for a key that would escape the store's root.

    >>> normalize_key("a//b/")
    'a/b'
    """
    if not isinstance(key, str):
        raise InvalidKeyError(f"store keys are strings, got {type(key).__name__}", key=repr(key))
    if "\\" in key or "\x00" in key:
        raise InvalidKeyError("store keys may not contain backslashes or NUL bytes", key=key)
    if key.startswith("/"):
        raise InvalidKeyError("store keys are relative to the store root; absolute keys are refused", key=key)
    parts = [p for p in key.split("/") if p != ""]
    for p in parts:
        if p in (".", ".."):
            raise InvalidKeyError("store keys may not contain '.' or '..' segments", key=key)
    return "/".join(parts)


class Store(ABC):
    """Abstract key -> bytes store. See the module docstring for range and counting semantics."""

    #: True when writes are refused.
    read_only: bool = False
    #: True when :meth:`stat` is cheap (a system call or a dict lookup, not a network round trip), so
    #: callers may validate cached data (shard indexes) against it on every use.
    cheap_stat: bool = False

    @property
    def identity(self) -> object:
        """What makes two store objects the same storage (two LocalStores on one folder share it); the
        dataset layer keys its in-process shard locks on it. Default: the object itself."""
        return id(self)

    def __init__(self) -> None:
        self.stats = StoreStats()

    # --- reads ----------------------------------------------------------------------------------------
    @abstractmethod
    def get_ranges(self, requests: Sequence[RangeRequest]) -> list[bytes | None]:
        """Read many byte ranges (of one or many keys) in one call, concurrently where the backend
        allows, coalescing nearby ranges of one key. Results in request order; ``None`` for a missing key."""

    def get_ranges_versioned(
        self, requests: Sequence[RangeRequest]
    ) -> tuple[list[bytes | None], list[float | int | str | None]]:
        """:meth:`get_ranges` plus, per request, the version token (as :meth:`stat` gives it) of the object
        the bytes came from, read atomically with them; ``None`` where unknown or the key is missing.
        The results are bytes-like: a range merged with others may come back as a zero-copy
        ``memoryview`` slice of the merged read. This default knows no versions (all ``None``)."""
        return self.get_ranges(requests), [None] * len(requests)

    #: True when :meth:`get_ranges_as_completed` hands results over as each request completes (the remote
    #: stores); the dataset layer then decodes the chunks that arrived while the rest are in flight.
    streaming_reads: bool = False

    def get_ranges_as_completed(
        self, requests: Sequence[RangeRequest]
    ) -> Iterator[tuple[int, bytes | None, float | int | str | None]]:
        """The requests of one batch (one round, coalesced as :meth:`get_ranges` does), yielded as
        ``(request index, bytes or None, version token)`` in the order they complete: a caller can start
        on the first answers while the others are still in flight. Every request is yielded once; a
        failed request raises when it completes. This default answers the whole batch at once (through
        :meth:`get_ranges_versioned`); stores that can do better set :attr:`streaming_reads`.

        >>> from altarr.stores import MemoryStore
        >>> s = MemoryStore(); s.set("k", b"0123")
        >>> sorted(i for i, _, _ in s.get_ranges_as_completed([("k", 0, 2), ("x", None, None)]))
        [0, 1]
        """
        results, versions = self.get_ranges_versioned(requests)
        yield from ((i, d, v) for i, (d, v) in enumerate(zip(results, versions, strict=True)))

    def get(self, key: str) -> bytes | None:
        """The whole object, or ``None`` if the key does not exist."""
        return self.get_ranges([(key, None, None)])[0]

    def get_range(self, key: str, start: int | None, stop: int | None) -> bytes | None:
        """One byte range (see module docstring), or ``None`` if the key does not exist."""
        return self.get_ranges([(key, start, stop)])[0]

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

    @abstractmethod
    def list_dir(self, prefix: str = "") -> tuple[list[str], list[str]]:
        """The immediate children of folder ``prefix``: ``(keys, subfolders)``, names relative to it."""

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

    def list_temporary(self, prefix: str = "") -> list[str]:
        """Leftover temporary files of writers that were killed (``.altarr-tmp`` files of unfinished
        writes, ``.altarr-lock`` files of killed lock holders) under ``prefix``; other listings skip
        them. Stores that write objects whole, without temporary objects, have none (this default)."""
        return []

    def remove_temporary(self, keys: Iterable[str]) -> list[str]:
        """Remove leftover temporary files listed by :meth:`list_temporary`; returns those removed."""
        return []

    def list_temp_files(self, prefix: str = "") -> list[str]:
        """The same as :meth:`list_temporary` (the name ``altarr.verify`` asks for)."""
        return self.list_temporary(prefix)

    def delete_temp_file(self, key: str) -> bool:
        """Remove one leftover temporary file (see :meth:`remove_temporary`); whether it was removed."""
        return bool(self.remove_temporary([key]))

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
    """Mixin for stores that read ranges and their objects' versions in one pass: they implement
    ``_get_ranges(requests, versioned) -> (results, versions)`` and get both public calls from it."""

    def _get_ranges(self, requests: Sequence[RangeRequest], versioned: bool) -> tuple[list, list]:
        raise NotImplementedError

    def get_ranges(self, requests: Sequence[RangeRequest]) -> list[bytes | None]:
        return self._get_ranges(requests, False)[0]

    def get_ranges_versioned(
        self, requests: Sequence[RangeRequest]
    ) -> tuple[list[bytes | None], list[float | int | str | None]]:
        """:meth:`Store.get_ranges` plus, per request, the version token of the object it was read from."""
        return self._get_ranges(requests, True)
