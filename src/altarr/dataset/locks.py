"""Locks that make a stored object's read-modify-write atomic with respect to other writers: a lock per
object inside the process (:func:`shard_locks`, taken in sorted key order), and the store's guard
across processes (:func:`run_exclusive`: a file lock, or conditional writes retried a bounded number of
times; docs/stores.md, "Several writers"). ``_cross_process = False`` (tests only) skips the latter.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
import weakref
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from ..errors import WriteConflictError

if TYPE_CHECKING:
    from ..stores.base import Store

__all__ = ["shard_locks", "run_exclusive", "conflict_backoff", "MAX_ATTEMPTS"]

#: How many times a conflicting read-modify-write is tried before WriteConflictError reaches the caller.
MAX_ATTEMPTS = 24

#: Private test switch: ``False`` skips the stores' cross-process guard (locks, conditional writes).
_cross_process = True

T = TypeVar("T")

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
    with contextlib.ExitStack() as held:  # released in reverse order, also when one cannot be taken
        for k in sorted(set(keys)):
            held.enter_context(_lock_for(namespace, k))
        yield


def conflict_backoff(attempt: int) -> None:
    """Sleep before retry ``attempt`` (0-based) of a conflicting write: random, growing to 0.5 s."""
    time.sleep(random.uniform(0, min(0.5, 0.002 * 2**attempt)))


def run_exclusive(
    store: Store,
    keys: Iterable[str],
    fn: Callable[[], T],
    again: Callable[[WriteConflictError], Iterable[str]] | None = None,
) -> T:
    """``fn()`` (a read-modify-write of ``keys``) under the in-process locks of ``keys`` and then the
    store's cross-process guard (unless switched off), run again when the store reports a conflicting
    writer, up to :data:`MAX_ATTEMPTS` times; then the :class:`~altarr.errors.WriteConflictError` goes to
    the caller. ``again(error)``: the keys of the next attempt (where ``fn`` writes only the objects that
    met the conflict), else the same keys."""
    keys = sorted(set(keys))
    for attempt in range(MAX_ATTEMPTS):
        try:
            with shard_locks(store.identity if store.identity is not None else id(store), keys):
                with store.exclusive(keys) if _cross_process else contextlib.nullcontext():
                    return fn()
        except WriteConflictError as e:
            if attempt + 1 == MAX_ATTEMPTS:
                raise WriteConflictError(
                    f"{e.message}; gave up after {MAX_ATTEMPTS} attempts (other writers kept changing it)",
                    keys=e.keys,
                    **e._context(),
                ) from e
            if again is not None:
                keys = sorted(set(again(e)))
        conflict_backoff(attempt)
    raise AssertionError("unreachable")  # pragma: no cover
