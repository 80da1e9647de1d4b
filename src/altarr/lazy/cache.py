"""The decoded-chunk cache: one process-wide LRU with a byte budget (option ``cache_bytes``), keyed by
``(owner token, chunk coords)``, thread-safe, single-flight (:meth:`ChunkCache.claim`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np

__all__ = ["ChunkCache", "CACHE"]

Key = tuple[Hashable, tuple[int, ...]]
#: A cached chunk and the version of the shard it was read from.
Entry = tuple[np.ndarray, Hashable]


class ChunkCache:
    """A byte-budget LRU of decoded chunks shared by every lazy array of the process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # key -> (array, bytes, version of the shard it was read from: None for a plain fetch)
        self._entries: OrderedDict[Key, tuple[np.ndarray, int, Hashable]] = OrderedDict()
        self._owners: dict[Hashable, list[int]] = {}  # owner -> [count, bytes, evictions]
        self._inflight: dict[Key, Future[Entry]] = {}  # chunks being fetched: others wait on them
        self._total = 0
        # Owners whose array was garbage-collected: a finalizer may run while this thread holds the lock,
        # so it only queues them; the next locked call drops them.
        self._pending: list[Hashable] = []

    def forget_owner_later(self, owner: Hashable) -> None:
        """Queue ``owner`` for removal (safe to call from a finalizer at any moment)."""
        self._pending.append(owner)

    def _drain(self) -> None:
        while self._pending:
            self._drop(self._pending.pop(), forget=True)

    # --- queries ---------------------------------------------------------------------------------------
    def contains(self, keys: Sequence[Key]) -> list[bool]:
        """Whether each key is cached (does not touch the LRU order)."""
        with self._lock:
            self._drain()
            entries = self._entries
            return [k in entries for k in keys]

    def _remove(self, key: Key, *, evicted: bool = False) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._total -= entry[1]
            rec = self._owners[key[0]]
            rec[0] -= 1
            rec[1] -= entry[1]
            rec[2] += evicted

    def owner_stats(self, owner: Hashable) -> dict[str, int]:
        """Entries, bytes and evictions of one owner."""
        with self._lock:
            self._drain()
            count, nbytes, evictions = self._owners.get(owner, (0, 0, 0))
        return {"chunks_cached": count, "cache_bytes": nbytes, "evictions": evictions}

    @property
    def total_bytes(self) -> int:
        """Bytes held by all entries."""
        with self._lock:
            self._drain()
            return self._total

    # --- single-flight fetching ------------------------------------------------------------------------
    def claim(self, keys: Sequence[Key]) -> list[tuple[str, Any, Hashable]]:
        """For each key: ``("hit", array, version)``, ``("wait", future, None)`` (another thread fetches it;
        the future gives ``(array, version)`` or fails if that fetch does) or ``("mine", future, None)``,
        to be finished with :meth:`complete` or :meth:`fail` by the caller."""
        out: list[tuple[str, Any, Hashable]] = []
        with self._lock:
            self._drain()
            entries, inflight = self._entries, self._inflight
            for key in keys:
                entry = entries.get(key)
                if entry is not None:
                    entries.move_to_end(key)
                    out.append(("hit", entry[0], entry[2]))
                    continue
                flight = inflight.get(key)
                if flight is not None:
                    out.append(("wait", flight, None))
                    continue
                flight = inflight[key] = Future()
                out.append(("mine", flight, None))
        return out

    def complete(self, keys: Sequence[Key], got: Sequence[Entry], *, store: bool, budget: int) -> None:
        """Publish fetched ``(array, version)`` pairs to waiters and, if ``store``, insert them (replacing
        an entry of the key, evicting LRU entries)."""
        with self._lock:
            self._drain()
            for key, entry in zip(keys, got, strict=True):
                flight = self._inflight.pop(key, None)
                if flight is not None:
                    flight.set_result(entry)
                if store:
                    self._remove(key)
                    self._insert(key, entry, budget)

    def fail(self, keys: Sequence[Key], error: BaseException) -> None:
        """Release the flights of a failed fetch; waiters then fetch for themselves."""
        with self._lock:
            self._drain()
            for key in keys:
                flight = self._inflight.pop(key, None)
                if flight is not None:
                    flight.set_exception(error)

    # --- maintenance -----------------------------------------------------------------------------------
    def _insert(self, key: Key, entry: Entry, budget: int) -> None:
        nbytes = int(entry[0].nbytes)
        if nbytes > budget:
            return
        while self._total + nbytes > budget and self._entries:
            self._remove(next(iter(self._entries)), evicted=True)
        self._entries[key] = (entry[0], nbytes, entry[1])
        self._total += nbytes
        rec = self._owners.setdefault(key[0], [0, 0, 0])
        rec[0] += 1
        rec[1] += nbytes

    def shrink(self, budget: int) -> None:
        """Evict least-recently-used entries until the cache holds at most ``budget`` bytes."""
        with self._lock:
            self._drain()
            while self._total > budget and self._entries:
                self._remove(next(iter(self._entries)), evicted=True)

    def drop_owner(self, owner: Hashable) -> None:
        """Remove every entry of ``owner`` (not counted as evictions)."""
        with self._lock:
            self._drain()
            self._drop(owner, forget=False)

    def _drop(self, owner: Hashable, *, forget: bool) -> None:
        for key in [k for k in self._entries if k[0] == owner]:
            self._remove(key)
        if forget:
            self._owners.pop(owner, None)

    def reset_evictions(self, owner: Hashable) -> None:
        """Zero the eviction counter of ``owner``."""
        with self._lock:
            self._drain()
            rec = self._owners.get(owner)
            if rec is not None:
                rec[2] = 0


#: The process-wide cache used by every lazy array.
CACHE = ChunkCache()
