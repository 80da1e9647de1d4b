"""An in-memory, dict-backed store (thread-safe, counted like the others).

Example:
    >>> from altarr.stores import Range
    >>> s = MemoryStore()
    >>> s.set("a/b", b"0123456789")
    >>> s.get_ranges([("a/b", Range(0, 2)), ("a/b", Range(5, 7))])
    [b'01', b'56']
    >>> s.stats.reads  # the two ranges are 3 bytes apart: one merged request
    1
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator

from ._util import as_bytes
from .base import DEFAULT_COALESCE_GAP, Fetched, ReadRequest, Store, normalize_key
from .coalesce import DEFAULT_MAX_COALESCED_SIZE

__all__ = ["MemoryStore"]


class _Shared:
    """The state shared by a store and its read-only views."""

    __slots__ = ("data", "versions", "lock", "counter")

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.versions: dict[str, int] = {}
        self.lock = threading.Lock()
        self.counter = itertools.count(1)


class MemoryStore(Store):
    """Objects kept as immutable ``bytes`` in a dict; the :meth:`stat` version is a write counter.

    >>> s = MemoryStore()
    >>> s.set("x", b"abc"); s.stat("x")
    (3, 1)
    """

    def __init__(
        self,
        read_only: bool = False,
        *,
        coalesce_gap: int = DEFAULT_COALESCE_GAP,
        max_coalesced_size: int = DEFAULT_MAX_COALESCED_SIZE,
        _shared: _Shared | None = None,
    ) -> None:
        super().__init__()
        self.read_only = bool(read_only)
        self.coalesce_gap = coalesce_gap
        self.max_coalesced_size = max_coalesced_size
        self._shared = _shared if _shared is not None else _Shared()

    @property
    def identity(self) -> object:
        return ("memory", id(self._shared))

    def __repr__(self) -> str:
        ro = ", read_only=True" if self.read_only else ""
        return f"MemoryStore(<{len(self._shared.data)} objects>{ro})"

    def __reduce__(self) -> tuple[Callable[..., MemoryStore], tuple[object, ...]]:
        """Pickles a snapshot of the objects (a copy, not a shared view)."""
        sh = self._shared
        with sh.lock:
            state = (dict(sh.data), dict(sh.versions), next(sh.counter))
        return (_rebuild, (state, self.read_only, self.coalesce_gap, self.max_coalesced_size))

    cheap_stat = True
    reports_versions = True
    reports_sizes = True

    # --- reads ----------------------------------------------------------------------------------------
    def _fetch(self, merged: list[ReadRequest], versioned: bool) -> Fetched:
        """Zero-copy slices of the stored objects (with ``versioned``: write counter and size)."""
        sh = self._shared
        objects: dict[str, tuple[bytes | None, int | None]] = {}
        results: list[memoryview | None] = []
        versions: list[int | None] = []
        sizes: list[int | None] = []
        for key, req in merged:
            snap = objects.get(key)
            if snap is None:
                if versioned:
                    with sh.lock:  # the object and its version together
                        snap = objects[key] = (sh.data.get(key), sh.versions.get(key))
                else:
                    snap = objects[key] = (sh.data.get(key), None)
            obj, version = snap
            versions.append(version)
            if obj is None:
                results.append(None)
                sizes.append(None)
                continue
            sizes.append(len(obj))
            off, end = req.bounds(len(obj))
            results.append(memoryview(obj)[off:end])
        if not versioned:
            return Fetched(results)
        return Fetched(results, versions, sizes=sizes)

    def get(self, key: str) -> bytes | None:
        key = normalize_key(key)
        obj = self._shared.data.get(key)
        self.stats.add(reads=1, bytes_read=0 if obj is None else len(obj))
        return obj

    def stat(self, key: str) -> tuple[int, float | int | str] | None:
        key = normalize_key(key)
        self.stats.add(size_queries=1)
        sh = self._shared
        with sh.lock:
            obj = sh.data.get(key)
            return None if obj is None else (len(obj), sh.versions[key])

    # --- writes ---------------------------------------------------------------------------------------
    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        key = self._check_key_for_write(key, "write")
        if type(value) is not bytes:
            value = as_bytes(value)
        sh = self._shared
        with sh.lock:
            sh.data[key] = value
            sh.versions[key] = next(sh.counter)
        self.stats.add(writes=1, bytes_written=len(value))

    def delete(self, key: str) -> bool:
        key = normalize_key(key)
        self._require_writable(key, "delete")
        sh = self._shared
        with sh.lock:
            existed = sh.data.pop(key, None) is not None
            sh.versions.pop(key, None)
        self.stats.add(deletes=1)
        return existed

    # --- listing --------------------------------------------------------------------------------------
    def list(self, prefix: str = "") -> Iterator[str]:
        prefix = normalize_key(prefix)
        self.stats.add(lists=1)
        with self._shared.lock:
            keys = list(self._shared.data)
        under = f"{prefix}/" if prefix else ""
        return iter(sorted(k for k in keys if k.startswith(under)))

    def with_read_only(self) -> MemoryStore:
        """A read-only view of the same objects."""
        return MemoryStore(
            True,
            coalesce_gap=self.coalesce_gap,
            max_coalesced_size=self.max_coalesced_size,
            _shared=self._shared,
        )


def _rebuild(state: tuple, read_only: bool, gap: int, max_size: int) -> MemoryStore:
    shared = _Shared()
    shared.data, shared.versions, start = state
    shared.counter = itertools.count(start)
    return MemoryStore(read_only, coalesce_gap=gap, max_coalesced_size=max_size, _shared=shared)
