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


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(_max_workers, thread_name_prefix="altarr")
        return _executor


def _run_in_worker(fn: Callable[[T], R], item: T) -> R:
    _local.in_pool = True
    try:
        return fn(item)
    finally:
        _local.in_pool = False


def pmap(fn: Callable[[T], R], items: Sequence[T], *, min_items: int = 2) -> list[R]:
    """``[fn(x) for x in items]``, on the shared pool when there are at least ``min_items`` items.

    Runs inline when called from inside a pool worker (no nested waits, so no deadlock). The first
    exception raised by ``fn`` propagates unchanged after every item has finished."""
    if len(items) < min_items or _max_workers == 1 or getattr(_local, "in_pool", False):
        return [fn(x) for x in items]
    futures = [_pool().submit(_run_in_worker, fn, x) for x in items]
    results: list[R] = []
    error: BaseException | None = None
    for f in futures:
        try:
            results.append(f.result())
        except BaseException as e:  # noqa: B036 - re-raised below, after all tasks finished
            if error is None:
                error = e
            results.append(None)  # type: ignore[arg-type]
    if error is not None:
        raise error
    return results
