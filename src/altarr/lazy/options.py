"""Process-wide options: ``cache_bytes``, ``batch_chunks``, ``max_materialize`` (bytes) and ``threads``
(see "Options and counters" in docs/lazy-arrays.md).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from .. import _threads
from .cache import CACHE

__all__ = ["set_options", "get_options", "materialize_limit", "available_memory", "DEFAULTS"]

#: Default values of every option (``max_materialize=None``: chosen from the memory available, see
#: :func:`materialize_limit`).
DEFAULTS: dict[str, int | None] = {
    "cache_bytes": 256 * 2**20,
    "batch_chunks": 64,
    "max_materialize": None,
    "threads": _threads.default_threads(),
}

#: The share of the available memory an automatic ``max_materialize`` allows one result to take.
MATERIALIZE_SHARE = 0.5

_lock = threading.Lock()
_options: dict[str, int | None] = dict(DEFAULTS)


def _meminfo_available() -> int | None:
    """Linux's ``MemAvailable`` in bytes, or ``None``."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_room() -> int | None:
    """Bytes this process's cgroup (v2) may still allocate, or ``None`` without a limit."""
    base = Path("/sys/fs/cgroup")
    try:
        limit = (base / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(int(limit) - int((base / "memory.current").read_text()), 0)
    except (OSError, ValueError):
        return None


def available_memory() -> int:
    """Bytes this process can allocate now without swapping: Linux's ``MemAvailable`` (or the free
    physical pages elsewhere), capped by a container's cgroup memory limit.

    >>> available_memory() > 0
    True
    """
    found = [n for n in (_meminfo_available(), _cgroup_room()) if n is not None]
    if not found:
        try:
            found.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):  # no such sysconf name here (macOS, Windows)
            return 2**30  # nothing to measure with: 1 GiB, as a 4 GiB machine would allow
    return min(found)


def materialize_limit() -> int:
    """The largest result, in bytes, that an implicit conversion of a lazy array to NumPy may produce now:
    ``max_materialize`` when set, else :data:`MATERIALIZE_SHARE` (half) of :func:`available_memory`,
    measured at each conversion (why half: docs/lazy-arrays.md, "Materialization is guarded").

    >>> import altarr as aa
    >>> with aa.set_options(max_materialize=2**20):
    ...     materialize_limit()
    1048576
    """
    limit = _options["max_materialize"]
    if limit is not None:
        return limit
    return int(available_memory() * MATERIALIZE_SHARE)


def _validate(name: str, value: Any) -> int | None:
    if name not in DEFAULTS:
        raise ValueError(f"unknown altarr option {name!r}; valid options are {sorted(DEFAULTS)}")
    if value is None and name == "max_materialize":
        return None
    if isinstance(value, bool):
        raise TypeError(f"option {name!r} must be a number, got {value!r}")
    try:
        as_int = int(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"option {name!r} must be a number, got {value!r}") from e
    if as_int != value:
        raise ValueError(f"option {name!r} must be a whole number, got {value!r}")
    minimum = 1 if name in ("batch_chunks", "threads") else 0
    if as_int < minimum:
        raise ValueError(f"option {name!r} must be >= {minimum}, got {value!r}")
    return as_int


def get_options() -> dict[str, int | None]:
    """A copy of the current options.

    Example:
        >>> sorted(get_options())
        ['batch_chunks', 'cache_bytes', 'max_materialize', 'threads']
    """
    with _lock:
        return {**_options, "threads": _threads.get_threads()}


def _get(name: str) -> int:
    value = _options[name]
    assert value is not None, name  # only max_materialize may be None: read it with materialize_limit()
    return value


class set_options:
    """Set options globally (every thread); as a context manager, restore the previous values on exit.

    Keyword arguments: ``cache_bytes`` (budget of the shared decoded-chunk cache; lowering it evicts at
    once), ``batch_chunks`` (chunks per fetch call of a streamed read, >= 1), ``max_materialize`` (bytes
    an implicit NumPy conversion may produce; ``None``: :func:`materialize_limit`), ``threads`` (size of
    every altarr thread pool, >= 1).

    Example:
        >>> import altarr as aa
        >>> _ = aa.set_options(max_materialize=2**30)       # global: stays set (bytes)
        >>> aa.get_options()["max_materialize"]
        1073741824
        >>> with aa.set_options(cache_bytes=2**20):         # scoped: restored on exit
        ...     aa.get_options()["cache_bytes"]
        1048576
        >>> aa.get_options()["cache_bytes"] == 256 * 2**20
        True
        >>> _ = aa.set_options(max_materialize=None)        # back to the default (from free memory)
    """

    def __init__(self, **options: Any) -> None:
        new = {name: _validate(name, value) for name, value in options.items()}
        with _lock:
            self._previous = {name: _options[name] for name in new}
            if "threads" in new:
                self._previous["threads"] = _threads.get_threads()
            _options.update(new)
        _after_change(new)

    def __enter__(self) -> set_options:
        return self

    def __exit__(self, *exc: object) -> None:
        with _lock:
            _options.update(self._previous)
        _after_change(self._previous)


def _after_change(changed: dict[str, int | None]) -> None:
    threads = changed.get("threads")
    if threads is not None:
        _threads.set_threads(threads)
    CACHE.shrink(_get("cache_bytes"))
