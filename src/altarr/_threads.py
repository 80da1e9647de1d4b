"""How many threads altarr's pools use: one runtime policy for every pool.

The size is, in order of precedence:

1. the last ``altarr.set_options(threads=N)`` (a ``with`` block restores the previous size on exit);
2. the environment variable ``ALTARR_THREADS``, read once, when this module is first imported;
3. the number of CPU cores this process may run on (``os.sched_getaffinity``; ``os.cpu_count`` where
   that does not exist).

Every pool reads :func:`get_threads` when it is used (not when it was made): the shared decode/encode
pool of :func:`altarr.dataset.parallel.pmap` and the batch pool of each ``LocalStore`` made without an
explicit ``max_workers``. ``1`` runs everything on the calling thread. (The one helper thread that
:func:`altarr.lazy.fetching.run_awaitable` starts to host an event loop, when called inside a running
loop, is not a worker pool: it runs one coroutine and is always one thread.)

This module imports nothing from altarr, so every layer may use it.

Example:
    >>> from altarr._threads import get_threads, set_threads
    >>> previous = set_threads(3)
    >>> get_threads()
    3
    >>> _ = set_threads(previous)
"""

from __future__ import annotations

import os
import threading

__all__ = ["ENV_VAR", "available_cores", "default_threads", "get_threads", "set_threads", "parse_threads"]

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
