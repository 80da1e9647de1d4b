"""Process-wide options of the lazy-array layer.

Three options steer every lazy array:

* ``cache_bytes`` (default 256 MiB): byte budget of the decoded-chunk LRU cache shared by all lazy arrays;
* ``batch_chunks`` (default 64): chunks per fetch call in streamed reductions, and the least number of
  chunks per fetch call when a selection's missing chunks exceed ``cache_bytes`` (such a selection is
  fetched in batches of ``max(batch_chunks chunks, as many as fit cache_bytes)``, each placed into the
  result and dropped);
* ``max_materialize`` (default 1e6): largest number of elements an implicit conversion to NumPy
  (``np.asarray(x)``, ``np.sort(x)``, ...) may produce before it is refused with
  :class:`~altarr.errors.MaterializeError`.

One more option steers the whole library, not only lazy arrays:

* ``threads`` (default: the environment variable ``ALTARR_THREADS``, read once at import, else the CPU
  cores this process may run on, ``os.sched_getaffinity``): the size of every altarr thread pool, the
  engine's decode/encode pool and the batch pool of each ``LocalStore`` made without ``max_workers``
  (see :mod:`altarr._threads`). ``1`` runs everything on the calling thread.

The options are process-wide (shared by every thread). :func:`set_options` called as a plain function
sets them globally and they stay set until changed again; used as a ``with`` block it sets them on
entry the same way and restores the previous values on exit (also when the block raises).

Example:
    >>> import altarr as aa
    >>> with aa.set_options(batch_chunks=8):
    ...     aa.get_options()["batch_chunks"]
    8
    >>> aa.get_options()["batch_chunks"]
    64
"""

from __future__ import annotations

import threading
from typing import Any

from .. import _threads
from .cache import CACHE

__all__ = ["set_options", "get_options", "DEFAULTS"]

#: Default values of every option.
DEFAULTS: dict[str, int] = {
    "cache_bytes": 256 * 2**20,
    "batch_chunks": 64,
    "max_materialize": 1_000_000,
    "threads": _threads.default_threads(),
}

_lock = threading.Lock()
_options: dict[str, int] = dict(DEFAULTS)


def _validate(name: str, value: Any) -> int:
    if name not in DEFAULTS:
        raise ValueError(f"unknown altarr option {name!r}; valid options are {sorted(DEFAULTS)}")
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


def get_options() -> dict[str, int]:
    """A copy of the current options.

    Example:
        >>> sorted(get_options())
        ['batch_chunks', 'cache_bytes', 'max_materialize', 'threads']
    """
    with _lock:
        return {**_options, "threads": _threads.get_threads()}


def _get(name: str) -> int:
    return _options[name]


class set_options:  # noqa: N801 - used like a function, as xarray.set_options is
    """Set options globally; as a context manager, restore the previous values on exit.

    A plain call (``aa.set_options(cache_bytes=0)``) changes the process-wide options for good (until
    the next change); ``with aa.set_options(...):`` changes them on entry and puts the previous values
    back on exit. Either way the change is seen by every thread, not only the calling one. Options not
    named keep their values.

    Args:
        cache_bytes: byte budget of the shared decoded-chunk cache.
        batch_chunks: chunks per fetch call in streamed reductions, and the least number of chunks per
            fetch call of a selection too big for the cache (>= 1).
        max_materialize: largest number of elements an implicit NumPy conversion may produce.
        threads: size of every altarr thread pool (>= 1; ``1`` runs on the calling thread).

    Lowering ``cache_bytes`` evicts least-recently-used chunks at once.

    Example:
        >>> import altarr as aa
        >>> _ = aa.set_options(max_materialize=10_000)      # global: stays set
        >>> aa.get_options()["max_materialize"]
        10000
        >>> with aa.set_options(cache_bytes=2**20):         # scoped: restored on exit
        ...     aa.get_options()["cache_bytes"]
        1048576
        >>> aa.get_options()["cache_bytes"] == 256 * 2**20
        True
        >>> _ = aa.set_options(max_materialize=1_000_000)   # back to the default
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


def _after_change(changed: dict[str, int]) -> None:
    if "threads" in changed:
        _threads.set_threads(changed["threads"])
    CACHE.shrink(_get("cache_bytes"))
