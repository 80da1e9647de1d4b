"""altarr's threads: one size policy, the worker pool, the I/O threads, and one rule for ``fork()``.

**Size.** Every pool's size is, in order of precedence:

1. the last ``altarr.set_options(threads=N)`` (a ``with`` block restores the previous size on exit);
2. the environment variable ``ALTARR_THREADS``, read once, when this module is first imported;
3. the number of CPU cores this process may run on (``os.sched_getaffinity``; ``os.cpu_count`` where
   that does not exist).

It is read at each use (not when a pool was made), so a change applies to the next call; ``1`` runs
everything on the calling thread.

**The worker pool** (:func:`pmap`, :func:`spawn`) decodes and encodes the chunks of a call: numcodecs'
compressors run in C and release the GIL, so a pool sized to the cores scales without an event loop.
The engine, the lazy layer and the copy machinery all use it. A call made from inside one of its
workers runs inline (no nested waits, so no deadlock).

**The I/O threads** (:func:`io_threads`) block in a store's system calls or network requests: a
``LocalStore`` batch (at the pool size, or its ``max_workers``) and an ``ObstoreStore`` batch (at its
``concurrency``, 64 requests in flight). They are apart from the worker pool because a worker waits for
its reads (a decode task waiting on a pool it occupies would deadlock) and because the number of
requests worth having in flight is not the number of cores.

**Fork.** A forked child has none of its parent's threads. One handler (``os.register_at_fork``) runs
in the child: it forgets every pool of this module (each starts anew at its first use in the child)
and then runs the hooks registered with :func:`after_fork_in_child` (the obstore clients). Nothing
else in altarr checks ``os.getpid()``.

This module imports nothing from altarr, so every layer may use it. (The one helper thread that
:func:`altarr.lazy.fetching.run_awaitable` starts to host an event loop, when called inside a running
loop, is not a pool: it runs one coroutine.)

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
    "available_cores",
    "default_threads",
    "get_max_workers",
    "get_threads",
    "io_threads",
    "parse_threads",
    "pmap",
    "set_max_workers",
    "set_threads",
    "spawn",
]

T = TypeVar("T")
R = TypeVar("R")

#: The environment variable that sets the default pool size (read once, at import).
ENV_VAR = "ALTARR_THREADS"


def available_cores() -> int:
    """The number of CPU cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


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
    raw = os.environ.get(ENV_VAR, "").strip()
    return parse_threads(raw, ENV_VAR) if raw else available_cores()


_DEFAULT = _from_environment()
_lock = threading.Lock()
_threads = _DEFAULT


def default_threads() -> int:
    """The pool size when nothing was set: ``ALTARR_THREADS`` (as read at import), else the cores."""
    return _DEFAULT


#: How many times :func:`get_threads` was called. A call whose result cannot depend on the pool size
#: does not read it (a one-item ``pmap`` runs inline first), so the test suite's pool matrix runs again,
#: at 1 and 8 workers, exactly the tests during which this grew (``tests/conftest.py``).
reads = 0


def get_threads() -> int:
    """The pool size in force now."""
    global reads
    reads += 1
    return _threads


def set_threads(n: int | None) -> int:
    """Set the pool size for every pool (``None``: back to :func:`default_threads`); returns the previous
    size. Pools already running are resized on their next use."""
    global _threads
    value = _DEFAULT if n is None else parse_threads(n, "threads")
    with _lock:
        previous, _threads = _threads, value
    return previous


def set_max_workers(n: int | None) -> None:
    """Set altarr's pool size (the same as ``altarr.set_options(threads=n)`` outside a ``with`` block;
    ``None``: back to the default). ``1`` disables threading."""
    set_threads(None if not n else max(1, int(n)))


def get_max_workers() -> int:
    """altarr's pool size in force now (the same as :func:`get_threads`)."""
    return get_threads()


# --- the pools -----------------------------------------------------------------------------------------
_pool_lock = threading.Lock()  # guards _worker and _io
_worker: tuple[int, ThreadPoolExecutor] | None = None  # (size, the worker pool)
_io: dict[int, ThreadPoolExecutor] = {}  # the I/O threads, by their limit
_local = threading.local()


def _pool(size: int) -> ThreadPoolExecutor:
    """The worker pool, with ``size`` threads (made, or remade when the size changed, here)."""
    global _worker
    with _pool_lock:
        if _worker is None or _worker[0] != size:
            if _worker is not None:
                _worker[1].shutdown(wait=False)  # its running tasks finish; new ones go to the new pool
            _worker = (size, ThreadPoolExecutor(size, thread_name_prefix="altarr"))
        return _worker[1]


def io_threads(limit: int) -> ThreadPoolExecutor:
    """The I/O threads that run at most ``limit`` blocking store calls at once (one executor per limit,
    kept for the process; a forked child makes its own). Submit only calls that block on the system or
    the network, never work that waits for the worker pool.

    >>> io_threads(4).submit(sum, [1, 2]).result()
    3
    """
    with _pool_lock:
        pool = _io.get(limit)
        if pool is None:
            pool = _io[limit] = ThreadPoolExecutor(limit, thread_name_prefix="altarr-io")
        return pool


_fork_hooks: list[Callable[[], None]] = []


def after_fork_in_child(hook: Callable[[], None]) -> Callable[[], None]:
    """Run ``hook()`` in every process forked from this one, after this module forgot its pools: for
    shared state that does not survive ``fork()`` (a client whose threads stayed in the parent). Returns
    ``hook`` (usable as a decorator)."""
    _fork_hooks.append(hook)
    return hook


def _after_fork_in_child() -> None:
    """The fork rule: a forked child has none of the parent's threads, so it forgets every pool (work
    handed to an inherited pool would wait forever; each pool starts anew at its first use) and every
    lock a parent's thread may have held, then runs the registered hooks."""
    global _worker, _pool_lock, _lock
    _worker = None
    _io.clear()
    _pool_lock = threading.Lock()
    _lock = threading.Lock()
    for hook in _fork_hooks:
        hook()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _inline(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``pmap`` on the calling thread, with the same contract: every item runs, then the first failing
    item's exception propagates (``KeyboardInterrupt`` and ``SystemExit`` stop at once)."""
    results: list[R] = []
    first: Exception | None = None
    for x in items:
        try:
            results.append(fn(x))
        except Exception as e:  # every item runs; the first error is raised below
            first = first or e
            results.append(None)  # type: ignore[arg-type]  # never returned: the first error is raised below
    if first is not None:
        raise first
    return results


def _runner(fn: Callable[[], object]) -> Callable[[], None]:
    """``fn`` marked as a runner's work: the pool calls made inside it run inline (no nested waits)."""

    def runner() -> None:
        _local.in_pool = True
        try:
            fn()
        finally:
            _local.in_pool = False

    return runner


def pmap(fn: Callable[[T], R], items: Sequence[T], *, min_items: int = 2) -> list[R]:
    """``[fn(x) for x in items]``, on the shared pool when there are at least ``min_items`` items.

    ``k = min(workers, len(items))`` runners pull items from one shared counter until none are left
    (dynamic balancing, one task hand-off per runner rather than per item); the calling thread is one of
    them. Runs inline when called from inside a runner (no nested waits, so no deadlock). Every item is
    processed; then the exception of the first failing item (in item order) propagates unchanged."""
    n = len(items)
    if n < min_items or getattr(_local, "in_pool", False):
        return _inline(fn, items)  # whatever the pool size (not read: see _threads.reads)
    workers = get_threads()
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
        raise min(errors, key=lambda item: item[0])[1]
    return results


def spawn(fn: Callable[[], object], n: int) -> Callable[..., None]:
    """Start ``fn()`` on ``min(workers, n)`` pool threads at once and return at once; the returned
    ``wait()`` blocks until every one has finished and re-raises the first exception. For work that
    the calling thread overlaps with something else (a region read decodes one shard's chunks while
    the next shard is still on the way). Runs inline, before returning, where ``pmap`` would (from
    inside a runner, or with one worker); its exception is then raised by ``wait()`` too.

    ``wait(skip_unstarted=True)``: the runners no pool thread has started yet are dropped instead of
    waited for - for a caller that has run ``fn()`` itself first, where ``fn`` takes its work from a
    shared counter, so a runner starting now would find none left. A read whose last answer holds one
    chunk otherwise waited for a pool thread to wake up only to find nothing to do (open + one chunk over
    HTTP, interleaved medians: 3.18 -> 2.91 ms at 0 ms, 20.82 -> 20.48 at 5 ms, 67.07 -> 66.88 at 20 ms).

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
            failed = e

            def reraise(skip_unstarted: bool = False) -> None:
                raise failed

            return reraise
        return _nothing

    pool = _pool(workers)
    futures = [pool.submit(_runner(fn)) for _ in range(min(workers, n))]

    def wait(skip_unstarted: bool = False) -> None:
        first: BaseException | None = None
        for f in futures:
            if skip_unstarted and f.cancel():  # not started: it will never run
                continue
            try:
                f.result()
            except BaseException as e:  # noqa: B036 - every runner is waited for, then the first raised
                first = first or e
        if first is not None:
            raise first

    return wait


def _nothing(skip_unstarted: bool = False) -> None:
    """The ``wait()`` of a :func:`spawn` that had nothing left to wait for."""
