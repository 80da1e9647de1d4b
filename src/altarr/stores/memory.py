"""An in-memory, dict-backed store (thread-safe, counted like the others)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from ._util import as_bytes
from .base import DEFAULT_COALESCE_GAP, Fetched, ReadRequest, Store, normalize_key
from .coalesce import DEFAULT_MAX_COALESCED_SIZE

__all__ = ["MemoryStore"]


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
    ) -> None:
        super().__init__()
        self.read_only = bool(read_only)
        self.coalesce_gap = coalesce_gap
        self.max_coalesced_size = max_coalesced_size
        self._data: dict[str, bytes] = {}
        self._versions: dict[str, int] = {}
        self._lock = threading.Lock()
        self._writes = 0  # the version of the latest write

    def __repr__(self) -> str:
        ro = ", read_only=True" if self.read_only else ""
        return f"MemoryStore(<{len(self._data)} objects>{ro})"

    def __getstate__(self) -> dict[str, Any]:
        """Pickles a snapshot of the objects (a copy, not a shared view)."""
        with self._lock:
            data, versions = dict(self._data), dict(self._versions)
        return {**self.__dict__, "_data": data, "_versions": versions, "_lock": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _lock=threading.Lock())

    cheap_stat = True
    reports_versions = True
    reports_sizes = True

    # --- reads ----------------------------------------------------------------------------------------
    def _fetch(self, merged: list[ReadRequest], versioned: bool) -> Fetched:
        """Zero-copy slices of the stored objects (with ``versioned``: write counter and size)."""
        objects: dict[str, tuple[bytes | None, int | None]] = {}
        results: list[memoryview | None] = []
        versions: list[int | None] = []
        sizes: list[int | None] = []
        for key, req in merged:
            snap = objects.get(key)
            if snap is None:
                with self._lock:  # the object and its version together
                    snap = objects[key] = (self._data.get(key), self._versions.get(key))
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

    def stat(self, key: str) -> tuple[int, float | int | str] | None:
        key = normalize_key(key)
        self.stats.add(size_queries=1)
        with self._lock:
            obj = self._data.get(key)
            return None if obj is None else (len(obj), self._versions[key])

    # --- writes ---------------------------------------------------------------------------------------
    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        key = self._check_key_for_write(key, "write")
        if type(value) is not bytes:
            value = as_bytes(value)
        with self._lock:
            self._data[key] = value
            self._writes += 1
            self._versions[key] = self._writes
        self.stats.add(writes=1, bytes_written=len(value))

    def delete(self, key: str) -> bool:
        key = normalize_key(key)
        self._require_writable(key, "delete")
        with self._lock:
            existed = self._data.pop(key, None) is not None
            self._versions.pop(key, None)
        self.stats.add(deletes=1)
        return existed

    # --- listing --------------------------------------------------------------------------------------
    def list(self, prefix: str = "") -> Iterator[str]:
        prefix = normalize_key(prefix)
        self.stats.add(lists=1)
        with self._lock:
            keys = list(self._data)
        under = f"{prefix}/" if prefix else ""
        return iter(sorted(k for k in keys if k.startswith(under)))
