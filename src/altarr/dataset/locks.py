"""In-process locks that make a shard's read-modify-write atomic with respect to other threads.

Two threads writing different chunks of one shard at the same time would otherwise both read the old
shard and the second write would drop the first one's chunk — the silent loss zarr-python users hit
with dask's threaded scheduler (zarr-python#3682). altarr serializes the read-modify-write of each
stored object per store, so such writes are safe inside one process. Across processes, partition the
work so that each shard has one writer (``Dataset.group_by_shard``), as N5 and tensorstore recommend.

Locks are taken in sorted key order, so two batched writes touching overlapping shard sets cannot
deadlock.

Example:
    >>> with shard_locks("store-id", ["c/1/0", "c/0/0"]):
    ...     pass
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable, Iterable, Iterator
from contextlib import contextmanager

__all__ = ["shard_locks"]

_registry_lock = threading.Lock()
_locks: weakref.WeakValueDictionary[tuple[Hashable, str], threading.Lock] = weakref.WeakValueDictionary()


def _lock_for(namespace: Hashable, key: str) -> threading.Lock:
    with _registry_lock:
        lock = _locks.get((namespace, key))
        if lock is None:
            lock = threading.Lock()
            _locks[(namespace, key)] = lock
        return lock


@contextmanager
def shard_locks(namespace: Hashable, keys: Iterable[str]) -> Iterator[None]:
    """Hold the locks of ``keys`` (in sorted order) within ``namespace`` (one store's identity)."""
    held = [_lock_for(namespace, k) for k in sorted(set(keys))]
    acquired: list[threading.Lock] = []
    try:
        for lock in held:
            lock.acquire()
            acquired.append(lock)
        yield
    finally:
        for lock in reversed(acquired):
            lock.release()
