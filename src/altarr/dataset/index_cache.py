"""Decoded shard indexes kept across calls (:class:`IndexCache`, whose docstring gives the staleness rule
per store), and :func:`check_versions`, which raises :class:`ShardChanged` when the reads of one call
came from two versions of a shard.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..stores.base import Store

__all__ = ["MISSING", "IndexCache", "ShardChanged", "check_versions"]

#: A shard's decoded index as the read path keeps it (see ``ShardingCodec.index_words``).
IndexWords = np.ndarray | memoryview

#: The version reported (``read_chunks(..., versions=)``) for a shard that does not exist.
MISSING = "missing"


class ShardChanged(Exception):
    """Internal: objects whose version changed between two reads of one call."""

    def __init__(self, keys: set[str]) -> None:
        super().__init__(sorted(keys))
        self.keys = keys


def check_versions(tokens: dict[str, Any], keys: list[str], versions: list[Any]) -> None:
    """Raise :class:`ShardChanged` when a read came from another version of its object than the one
    seen earlier in the same call (the reads of one call must all come from one version of a shard)."""
    changed = {k for k, v in zip(keys, versions, strict=True) if v is not None and tokens.get(k, v) != v}
    if changed:
        raise ShardChanged(changed)


class IndexCache:
    """Decoded shard indexes kept across calls (LRU, ``max_bytes`` of index arrays), each tied to the
    version of the object it came from. The staleness rule (docs/remote.md, "Caching and staleness"):
    validated by a cheap ``stat`` (local files, memory), or used at once and checked by the versions
    the chunk reads report (``store.versioned_reads``: obstore), else not cached unless
    ``recheck=False``; ``recheck=True`` turns the cache off."""

    def __init__(self, store: Store, max_bytes: int = 32 << 20, recheck: bool | None = None) -> None:
        self.store = store
        self.cheap = store.cheap_stat
        #: entries are used without a stat and checked by the versions the chunk reads report
        self.optimistic = not self.cheap and (store.versioned_reads or recheck is False)
        self.trusted = recheck is False and not store.versioned_reads
        self.enabled = recheck is not True and (self.cheap or self.optimistic)
        self.max_bytes = max_bytes
        # (version, index): an array or the words ShardingCodec.index_words gives (both have nbytes)
        self._entries: OrderedDict[tuple[str, int, int], tuple[Any, IndexWords]] = OrderedDict()
        self._by_key: dict[str, set[tuple[str, int, int]]] = {}
        self._nbytes = 0
        self._lock = threading.Lock()

    def get(self, key: str, level: int, start: int, tokens: dict[str, Any]) -> IndexWords | None:
        if not self.enabled:
            return None
        with self._lock:
            entry = self._entries.get((key, level, start))
        if entry is None:
            return None
        if key not in tokens:  # one version check per object per call
            if self.optimistic:  # checked against the versions of the chunk reads instead
                tokens[key] = entry[0]
            else:
                st = self.store.stat(key)
                tokens[key] = None if st is None else st[1]
        if tokens[key] is None or tokens[key] != entry[0]:
            self.forget([key])
            return None
        with self._lock:
            if (key, level, start) in self._entries:
                self._entries.move_to_end((key, level, start))
        return entry[1]

    def put(self, key: str, level: int, start: int, version: Any, index: IndexWords) -> None:
        if version is None and self.trusted:
            version = "trusted"
        if not self.enabled or version is None:
            return
        ck = (key, level, start)
        with self._lock:
            old = self._entries.pop(ck, None)
            if old is not None:
                self._nbytes -= old[1].nbytes
            self._entries[ck] = (version, index)
            self._by_key.setdefault(key, set()).add(ck)
            self._nbytes += index.nbytes
            while self._nbytes > self.max_bytes and self._entries:
                (k, lv, st), (_, idx) = self._entries.popitem(last=False)
                self._nbytes -= idx.nbytes
                self._by_key.get(k, set()).discard((k, lv, st))

    def forget(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                for ck in self._by_key.pop(key, ()):
                    entry = self._entries.pop(ck, None)
                    if entry is not None:
                        self._nbytes -= entry[1].nbytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._by_key.clear()
            self._nbytes = 0
