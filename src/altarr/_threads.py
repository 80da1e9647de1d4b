"""altarr's threads: one size policy, the worker pool (:func:`pmap`, :func:`spawn`), the I/O threads
(:func:`io_threads`) and one rule for ``fork()`` (``docs/architecture.md``, "Threads and fork"). The size
is ``altarr.set_options(threads=N)``, else ``ALTARR_THREADS`` (read at import), else the cores this
process may use, read at each use. This module imports nothing from altarr.

Example:
    >>> from altarr._threads import get_threads, pmap, set_threads
    >>> previous = set_threads(3)
    >>> get_threads(), pmap(lambda x: x * 2, [1, 2, 3])
    (3, [2, 4, 6])
    >>> _ = set_threads(previous)
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = [
    "ENV_VAR",
    "after_fork_in_child",
    "default_threads",
    "get_threads",
    "io_threads",
    "parse_threads",
    "pmap",
    "set_threads",
    "spawn",
]

T = TypeVar("T")
R = TypeVar("R")

ENV_VAR = "ALTARR_THREADS"


def parse_threads(value: object, source: str) -> int:
    """``value`` as a pool size (a whole number >= 1); ``ValueError`` naming ``source`` otherwise.

    >>> parse_threads("4", "ALTARR_THREADS")
    4
    >>> parse_threads("0", "ALTARR_THREADS")
    Traceback (most recent call last):
    ...
    ValueError: ALTARR_THREADS must be a whole number >= 1, got '0'
    """
    if isinstance(value, bool):
        raise TypeError(f"{source} must be a whole number >= 1, got {value!r}")
    try:
        n = int(str(value).strip()) if isinstance(value, str) else int(value)  # type: ignore[call-overload]  # any object: TypeError caught below
    except (TypeError, ValueError):
        n = None
    if n is None or (not isinstance(value, str) and n != value) or n < 1:
        raise ValueError(f"{source} must be a whole number >= 1, got {value!r}")
    return n


def _from_environment() -> int:
    """``ALTARR_THREADS``, else the CPU cores this process may run on (its affinity mask)."""
    raw = os.environ.get(ENV_VAR, "").strip()
    if raw:
        return parse_threads(raw, ENV_VAR)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


_DEFAULT = _from_environment()
_lock = threading.Lock()
_threads = _DEFAULT


def default_threads() -> int:
    return _DEFAULT


#: How many times :func:`get_threads` was called: the test suite's pool matrix reruns the tests during
#: which this grew (``tests/conftest.py``)
reads = 0


def get_threads() -> int:
    """The pool size in force now."""
    global reads
    reads += 1
    return _threads


def set_threads(n: int | None) -> int:
    """Set the pool size (``None``: the default); returns the previous one."""
    global _threads
    value = _DEFAULT if n is None else parse_threads(n, "threads")
    with _lock:
        previous, _threads = _threads, value
    return previous


# --- the pools -----------------------------------------------------------------------------------------
_pool_lock = threading.Lock()  # guards _workers and _io
#: The worker pools and the I/O threads, by size: a pool is never shut down (a thread may be about to
#: submit to it), so each size in use keeps its own (a copy's ``workers`` beside the pool size in force).
_workers: dict[int, ThreadPoolExecutor] = {}
_io: dict[int, ThreadPoolExecutor] = {}
_local = threading.local()


def _pool(
    size: int, pools: dict[int, ThreadPoolExecutor] = _workers, name: str = "altarr"
) -> ThreadPoolExecutor:
    with _pool_lock:
        pool = pools.get(size)
        if pool is None:
            pool = pools[size] = ThreadPoolExecutor(size, thread_name_prefix=name)
        return pool


def io_threads(limit: int) -> ThreadPoolExecutor:
    """The I/O threads running at most ``limit`` blocking store calls at once (never work that waits for
    the worker pool).

    >>> io_threads(4).submit(sum, [1, 2]).result()
    3
    """
    return _pool(limit, _io, "altarr-io")


_fork_hooks: list[Callable[[], None]] = []


def after_fork_in_child(hook: Callable[[], None]) -> Callable[[], None]:
    """Run ``hook()`` in every forked child, after this module forgot its pools (a decorator)."""
    _fork_hooks.append(hook)
    return hook


def _after_fork_in_child() -> None:
    """The fork rule: forget every pool and lock, then run the hooks."""
    global _pool_lock, _lock
    _workers.clear()
    _io.clear()
    _pool_lock = threading.Lock()
    _lock = threading.Lock()
    for hook in _fork_hooks:
        hook()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _raise(errors: list[tuple[int, BaseException]]) -> None:
    """Raise the exception of the first failed item of ``errors`` (``(item, exception)`` pairs), kept in
    no frame's locals: a frame holding the exception it raised is a cycle (frame, exception, traceback)
    that keeps the failed call's buffers until the garbage collector runs."""
    try:
        raise min(errors, key=lambda item: item[0])[1]
    finally:
        errors.clear()


def _inline(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``pmap`` on the calling thread: every item runs, then the first failure propagates."""
    results: list[R] = []
    errors: list[tuple[int, BaseException]] = []
    for x in items:
        try:
            results.append(fn(x))
        except Exception as e:  # every item runs; the first error is raised below
            errors.append((len(results), e))
            results.append(None)  # type: ignore[arg-type]  # never returned: the first error is raised below
    if errors:
        _raise(errors)
    return results


def _runner(fn: Callable[[], object]) -> Callable[[], None]:
    """``fn`` as a runner's work: pool calls inside it run inline."""

    def runner() -> None:
        _local.in_pool = True
        try:
            fn()
        finally:
            _local.in_pool = False

    return runner


def pmap(fn: Callable[[T], R], items: Sequence[T], workers: int | None = None) -> list[R]:
    """``[fn(x) for x in items]``, on the pool when there are two items or more: runners (the
    calling thread one of them; ``workers`` of them, else the pool size in force) pull items from one
    counter; inline inside a runner. Every item runs, then the first failing item's exception propagates."""
    n = len(items)
    if n < 2 or getattr(_local, "in_pool", False):
        return _inline(fn, items)  # whatever the pool size (not read: see _threads.reads)
    workers = workers or get_threads()
    if workers == 1:
        return _inline(fn, items)
    results: list[R] = [None] * n  # type: ignore[list-item]  # every slot is filled before it is returned
    errors: list[tuple[int, BaseException]] = []
    counter = itertools.count()  # next() on it is atomic under the GIL

    def work() -> None:
        while (i := next(counter)) < n:
            try:
                results[i] = fn(items[i])
            except BaseException as e:  # noqa: B036 - re-raised by pmap after every item ran
                errors.append((i, e))

    runner = _runner(work)
    pool = _pool(workers)
    futures = [pool.submit(runner) for _ in range(min(workers, n) - 1)]
    runner()  # the calling thread takes its share instead of waiting idle
    for f in futures:
        f.result()
    if errors:
        _raise(errors)
    return results


def spawn(fn: Callable[[], object], n: int) -> Callable[..., None]:
    """Start ``fn()`` on ``min(workers, n)`` pool threads and return a ``wait()`` that blocks until all
    finished and re-raises the first exception (inline where ``pmap`` would be).
    ``wait(skip_unstarted=True)`` drops the runners not started yet (for a caller that ran ``fn()``
    itself on a shared counter).

    >>> done = []
    >>> wait = spawn(lambda: done.append(1), 1)
    >>> wait(); done
    [1]
    """
    if n < 1:
        return _nothing
    inline = getattr(_local, "in_pool", False)  # the pool size is not read then, as in pmap
    workers = 1 if inline else get_threads()
    if workers == 1:
        try:
            fn()
        except Exception as e:  # raised by the returned wait, as a pool runner's error is
            failed: list[tuple[int, BaseException]] = [(0, e)]
            return lambda skip_unstarted=False: _raise(failed)
        return _nothing

    pool = _pool(workers)
    futures = [pool.submit(_runner(fn)) for _ in range(min(workers, n))]

    def wait(skip_unstarted: bool = False) -> None:
        errors: list[tuple[int, BaseException]] = []
        for f in futures:
            if skip_unstarted and f.cancel():  # not started: it will never run
                continue
            try:
                f.result()
            except BaseException as e:  # noqa: B036 - every runner is waited for, then the first raised
                errors.append((0, e))
        del f  # a future holds its exception, whose traceback holds this frame (futures is never empty)
        futures.clear()
        if errors:
            _raise(errors)

    return wait


def _nothing(skip_unstarted: bool = False) -> None:
    """The ``wait()`` of a :func:`spawn` with nothing to wait for."""
