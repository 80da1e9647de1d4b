"""Recipes: what a pickled lazy array holds, and how it is rebuilt.

Pickling a lazy array saves its *recipe*, never its values, cache or counters:
``(RECIPE_VERSION, shape, chunks, dtype.str, dims, coords, source)`` where the source is either the
user ``fetch`` (pickled by reference with plain :mod:`pickle`, so it must be a module-level function or
an instance of a module-level class) or a lazy elementwise expression (its function, arguments and
keyword arguments). An unpickled array starts with an empty cache and zeroed counters.

The safe pattern for ``fetch`` is a *fetch factory*: a small callable class that holds a path or URL and
parameters, opens its resource lazily on first call and drops open handles when pickled (see
:class:`altarr.lazy.sources.DatasetFetch` and ``docs/lazy-arrays.md``). Closures and lambdas do not
pickle with plain ``pickle``; with ``cloudpickle`` they carry everything their cells reference, data
included.

Example:
    >>> import pickle, tempfile, altarr as aa
    >>> x = aa.open(aa.example_zarr(tempfile.mkdtemp(), shape=(4,), chunks=(2,)))
    >>> _ = x[...]                       # cached chunks and counters do not travel
    >>> y = pickle.loads(pickle.dumps(x))
    >>> aa.stats(y)["chunks_cached"], float(y[3]), aa.stats(y)["fetch_calls"]
    (0, 3.0, 1)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedError

__all__ = ["rebuild_lazy_array", "register_lazy_type", "RECIPE_VERSION"]

#: The recipe format this altarr writes; it reads every version up to this one.
RECIPE_VERSION = 1

#: The class unpickled recipes rebuild: :class:`altarr.lazy.array.LazyArray` registers itself when its
#: module loads (unpickling imports ``altarr.lazy``, whose ``__init__`` loads it), so this module needs
#: no import of the array module (no import cycle).
_LAZY_TYPE: type | None = None


def register_lazy_type(cls: type) -> type:
    """Make ``cls`` the class unpickled lazy-array recipes rebuild (a class decorator)."""
    global _LAZY_TYPE
    _LAZY_TYPE = cls
    return cls


def rebuild_lazy_array(
    version: int,
    shape: tuple[int, ...],
    chunks: tuple[int, ...],
    dtype: str,
    dims: tuple[str, ...] | None,
    coords: dict[str, Any] | None,
    source: Any,
) -> Any:
    """Rebuild a pickled lazy array (recipe version 1)."""
    if _LAZY_TYPE is None:  # pragma: no cover - altarr.lazy's __init__ always loads the array module
        raise UnsupportedError("no lazy array class is registered: import altarr.lazy first")
    if version > RECIPE_VERSION:
        raise UnsupportedError(
            f"this lazy-array recipe has version {version}; this altarr reads versions <= {RECIPE_VERSION}"
        )
    return _LAZY_TYPE(tuple(shape), tuple(chunks), np.dtype(dtype), source, dims, coords)
