"""The store interface: ``/``-separated keys -> bytes, with typed, batched, coalesced and counted reads
(``docs/architecture.md``, "Stores"). A missing key reads as ``None``; a range past the end is clipped
like a slice; a store implements :meth:`Store._fetch` and declares its capabilities.
"""

from __future__ import annotations

import builtins
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

from ..errors import InvalidKeyError, ReadOnlyError
from .coalesce import DEFAULT_COALESCE_GAP, DEFAULT_MAX_COALESCED_SIZE, CoalescePlan, plan_reads
from .keys import normalize_key
from .ranges import WHOLE, ByteRequest, ReadRequest, normalize_requests

__all__ = [
    "Store",
    "StoreStats",
    "ReadRequest",
    "Fetched",
    "OpensReaders",
    "normalize_key",
    "DEFAULT_COALESCE_GAP",
]


class Fetched(NamedTuple):
    """What :meth:`Store._fetch` returns: per merged request its bytes (``None``: missing), and when
    asked and known its object's version and total size."""

    data: list[Any]
    versions: list[Any] | None = None
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
    #: Batched backend calls whose requests were in flight together (remote stores)
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
    """:meth:`Store.get_ranges_as_ready`'s answer when everything came at once."""
    return iter([list(zip(range(len(datas)), datas, versions, sizes, strict=True))])


class Store(ABC):
    """Abstract key -> bytes store: implements :meth:`_fetch`, :meth:`size`, :meth:`set`, :meth:`delete`
    and :meth:`list`, and declares its capabilities (``docs/stores.md``, "Capabilities")."""

    read_only: bool = False
    cheap_stat: bool = False
    versioned_reads: bool = False
    reports_versions: bool = False
    reports_sizes: bool = False
    coalesce_gap: int = DEFAULT_COALESCE_GAP
    max_coalesced_size: int = DEFAULT_MAX_COALESCED_SIZE
    answers_as_ready: bool = False
    #: Merged results are handed out as zero-copy views (backend buffers that are not ``bytes``)
    _whole_views: bool = False

    @property
    def identity(self) -> object:
        """What makes two store objects the same storage (the key of the in-process shard locks)."""
        return id(self)

    def __init__(self) -> None:
        self.stats = StoreStats()

    # --- reads ----------------------------------------------------------------------------------------
    def get_ranges(self, requests: Sequence[ReadRequest]) -> list[bytes | None]:
        """Read many byte ranges in one call, coalesced; in request order, ``None`` for a missing key.

        >>> from altarr.stores import MemoryStore, Offset, Range
        >>> s = MemoryStore(); s.set("k", b"abcdef")
        >>> s.get_ranges([("k", Offset(4)), ("k", Range(1, 3))])
        [b'ef', b'bc']
        """
        return self._read_batch(requests, False)[0]

    def get_ranges_versioned(
        self, requests: Sequence[ReadRequest]
    ) -> tuple[list[bytes | None], list[float | int | str | None]]:
        """:meth:`get_ranges` (bytes-like) plus each object's version token, read with the bytes."""
        datas, versions, _ = self._read_batch(requests, True)
        return datas, versions

    def get_ranges_sized(
        self, requests: Sequence[ReadRequest]
    ) -> tuple[list[bytes | None], list[float | int | str | None], list[int | None]]:
        """:meth:`get_ranges_versioned` plus each object's total size where the backend tells it with the
        bytes (``None`` elsewhere).

        >>> from altarr.stores import MemoryStore, Suffix
        >>> s = MemoryStore(); s.set("k", b"abcdef")
        >>> s.get_ranges_sized([("k", Suffix(2)), ("gone", Suffix(2))])[2], s.stats.reads
        ([6, None], 2)
        """
        return self._read_batch(requests, True)

    def get_ranges_as_ready(
        self, requests: Sequence[ReadRequest]
    ) -> Iterator[list[tuple[int, Any, Any, int | None]]]:
        """:meth:`get_ranges_sized` handed over as the answers arrive (sent at once): per answer, a list of
        ``(position, bytes-like or None, version, object size)``; one batch where not
        :attr:`answers_as_ready`.

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
        """One byte request of one key, or ``None`` if the key does not exist."""
        return self.get_ranges([(key, request)])[0]

    def _read_batch(self, requests: Sequence[ReadRequest], versioned: bool) -> tuple[list, list, list]:
        """The one read path: check, merge, :meth:`_fetch`, count, split."""
        if not requests:
            return [], [], []
        plan = plan_reads(normalize_requests(requests), self.coalesce_gap, self.max_coalesced_size)
        return self._read_planned(plan, versioned)

    def _read_planned(self, plan: CoalescePlan, versioned: bool) -> tuple[list, list, list]:
        fetched = self._fetch(plan.merged, versioned)
        data = fetched.data
        self.stats.add(reads=len(data), bytes_read=sum(len(r) for r in data if r is not None))
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
        """The store's read primitive: serve every merged request (clipped like a slice; ``None`` for a
        missing key), with ``versioned`` their versions and, where told, object sizes."""

    def size(self, key: str) -> int | None:
        """The object's size in bytes, or ``None`` if it does not exist (counts a size query). A store
        implements :meth:`size` or :meth:`stat`."""
        st = self.stat(key)
        return None if st is None else st[0]

    def exists(self, key: str) -> bool:
        return self.size(key) is not None

    def stat(self, key: str) -> tuple[int, float | int | str] | None:
        """``(size, version_token)`` of an object, or ``None``; the token changes whenever the object is
        replaced (this default: the size, a weak check)."""
        if type(self).size is Store.size:
            raise NotImplementedError(f"{type(self).__name__} implements neither size nor stat")
        size = self.size(key)
        return None if size is None else (size, size)

    # --- writes ---------------------------------------------------------------------------------------
    @abstractmethod
    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        """Write a whole object atomically; ``value`` is bytes-like or a list of parts written back to back."""

    def set_many(self, items: Sequence[tuple[str, bytes | bytearray | memoryview]]) -> None:
        """Write many objects, each atomically."""
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
        """Every key under folder ``prefix`` (recursively), as full keys."""

    def list_sized(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        """:meth:`list` with each object's size: one listing where the backend's tells sizes (obstore,
        fsspec), else a size query per key (cheap where ``cheap_stat``)."""
        for key in self.list(prefix):
            size = self.size(key)
            if size is not None:
                yield key, size

    def list_dir(self, prefix: str = "") -> tuple[builtins.list[str], builtins.list[str]]:
        """The immediate children of folder ``prefix``: ``(keys, subfolders)``, relative, sorted."""
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
    #: ``"locked"``, ``"conditional"`` or ``"single-writer"`` (``docs/stores.md``, "Several writers")
    concurrent_writes: str = "single-writer"

    @contextmanager
    def exclusive(self, keys: Iterable[str]) -> Iterator[None]:
        """Make the read-modify-write of ``keys`` inside safe against other writers, as
        :attr:`concurrent_writes` says (this default does nothing)."""
        yield

    def list_temporary(self, prefix: str = "") -> builtins.list[str]:
        """Leftover ``.altarr-tmp``/``.altarr-lock`` files of killed writers under ``prefix``."""
        return []

    def remove_temporary(self, keys: Iterable[str]) -> builtins.list[str]:
        """Remove files listed by :meth:`list_temporary`; returns those removed."""
        return []

    def _check_key_for_write(self, key: str, operation: str) -> str:
        """The normalized key of an object to write or delete (not the root)."""
        key = normalize_key(key)
        self._require_writable(key, operation)
        if not key:
            raise InvalidKeyError("the empty key names the store root, not an object", key=key)
        return key

    def _require_writable(self, key: str | None, operation: str) -> None:
        if self.read_only:
            raise ReadOnlyError(f"cannot {operation}: the store is read-only ({self!r})", key=key)

    # --- misc -----------------------------------------------------------------------------------------
    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release resources (thread pools, file handles)."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ObjectReader(ABC):
    """An open object for many ranged reads (thread-safe, counted), all from one ``version`` of it; ``fd``
    may be read positionally by native code, which reports what it read with :meth:`count_reads`."""

    key: str
    version: Any
    fd: int | None = None

    @property
    def size(self) -> int | None:
        return None

    @abstractmethod
    def read(self, request: ByteRequest) -> bytes: ...

    @abstractmethod
    def read_into(self, start: int, buffer: Any) -> int:
        """Read ``len(buffer)`` bytes at ``start`` into ``buffer``; how many were read."""

    @abstractmethod
    def count_reads(self, reads: int, nbytes: int) -> None: ...

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> ObjectReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class OpensReaders(ABC):
    """Mixin (a declared capability) of stores that hand out an :class:`ObjectReader` per key."""

    @abstractmethod
    def open_reader(self, key: str) -> ObjectReader | None: ...
