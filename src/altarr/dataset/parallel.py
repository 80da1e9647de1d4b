"""One shared thread pool for decoding and encoding the chunks of a call.

numcodecs' compressors (zstd, blosc, zlib) run in C and release the GIL, so decoding the chunks of one
batched call on a thread pool sized to the cores scales without an event loop. Small batches run inline:
a thread hop costs more than decoding one small chunk.

Example:
    >>> from altarr.dataset.parallel import pmap
    >>> pmap(lambda x: x * 2, [1, 2, 3])
    [2, 4, 6]
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["pmap", "set_max_workers", "get_max_workers"]

T = TypeVar("T")
R = TypeVar("R")

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_max_workers: int = max(1, os.cpu_count() or 1)
_local = threading.local()


def set_max_workers(n: int | None) -> None:
    """Size of the shared decode/encode pool (default: the number of cores). ``1`` disables threading."""
    global _executor, _max_workers
    with _lock:
        _max_workers = max(1, int(n)) if n else max(1, os.cpu_count() or 1)
        if _executor is not None:
            _executor.shutdown(wait=False)
            _executor = None


def get_max_workers() -> int:
    return _max_workers


def _forget_pool_after_fork() -> None:
    """A forked child has none of the parent's pool threads: it starts its own pool when it needs one
    (work handed to the inherited pool would wait forever)."""
    global _executor, _lock
    _executor = None
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(_max_workers, thread_name_prefix="altarr")
        return _executor


def pmap(fn: Callable[[T], R], items: Sequence[T], *, min_items: int = 2) -> list[R]:
    """``[fn(x) for x in items]``, on the shared pool when there are at least ``min_items`` items.

    ``k = min(workers, len(items))`` runners pull items from one shared counter until none are left
    (dynamic balancing, one task hand-off per runner rather than per item); the calling thread is one of
    them. Runs inline when called from inside a runner (no nested waits, so no deadlock). Every item is
    processed; then the exception of the first failing item (in item order) propagates unchanged."""
    n = len(items)
    if n < min_items or _max_workers == 1 or getattr(_local, "in_pool", False):
        return [fn(x) for x in items]
    results: list[R] = [None] * n  # type: ignore[list-item]
    errors: list[tuple[int, BaseException]] = []
    counter = itertools.count()  # next() on it is atomic under the GIL

    def runner() -> None:
        _local.in_pool = True
        try:
            while (i := next(counter)) < n:
                try:
                    results[i] = fn(items[i])
                except BaseException as e:  # noqa: B036 - re-raised by pmap after every item ran
                    errors.append((i, e))
        finally:
            _local.in_pool = False

    futures = [_pool().submit(runner) for _ in range(min(_max_workers, n) - 1)]
    runner()  # the calling thread takes its share instead of waiting idle
    for f in futures:
        f.result()
    if errors:
        raise min(errors, key=lambda item: item[0])[1]
    return results
