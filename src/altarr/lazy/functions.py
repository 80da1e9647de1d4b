"""The public functions of lazy arrays: :func:`altarr`, :func:`extract`, :func:`plan`, :func:`stats`,
:func:`reset`, :func:`is_altarr`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import selection
from . import options
from .array import LazyArray
from .cache import CACHE
from .fetching import COUNTER_NAMES, FetchSource
from .geometry import check_dtype, normalize_coords, normalize_dims, normalize_geometry
from .many import read_plans

__all__ = ["altarr", "extract", "plan", "stats", "reset", "is_altarr"]


def altarr(
    shape: int | Sequence[int],
    chunks: int | Sequence[int],
    fetch: Callable[[np.ndarray], Any],
    dtype: Any = "float64",
    dims: Sequence[str] | None = None,
    coords: Mapping[str, Any] | Sequence[Any] | None = None,
) -> LazyArray:
    """A lazy array whose chunks come from ``fetch``.

    Args:
        shape: the array shape.
        chunks: the chunk shape; an int is used for every dimension.
        fetch: ``fetch(chunks)`` gets an ``int64`` array ``(n, ndim)`` of 0-based chunk coordinates and
            returns ``n`` array-likes in row order (may be ``async def``; the fetch contract:
            docs/lazy-arrays.md).
        dtype: any NumPy bool or numeric dtype.
        dims: optional dimension names.
        coords: optional coordinates, ``{dim: 1-D values}``.

    Example:
        >>> import numpy as np, altarr as aa
        >>> def fetch(chunks):
        ...     return [np.full(3, float(i)) for (i,) in chunks]
        >>> x = aa.altarr(9, 3, fetch, dims=["t"])
        >>> x[[0, 4, 8]]
        array([0., 1., 2.])
    """
    if not callable(fetch):
        raise TypeError(f"fetch must be callable, got {type(fetch).__name__}")
    shp, chk = normalize_geometry(shape, chunks)
    dt = check_dtype(dtype)
    dm = normalize_dims(dims, len(shp))
    cd = normalize_coords(coords, dm, shp)
    return LazyArray(shp, chk, dt, FetchSource(fetch, shp, chk, dt), dm, cd)


def _require(x: Any) -> LazyArray:
    if not isinstance(x, LazyArray):
        raise TypeError(f"expected a lazy array (altarr.LazyArray), got {type(x).__name__}")
    return x


def extract(x: LazyArray, *subscripts: Any, drop: bool = True) -> np.ndarray:
    """A hyperslab: the cartesian product of per-dimension subscripts (int, slice, integer array, boolean
    mask; missing or ``None``: the whole dimension), read with one planned fetch. ``drop=True``: an
    integer subscript drops its dimension.

    Example:
        >>> import numpy as np, altarr as aa
        >>> x = aa.altarr((4, 4), 2, lambda c: [np.ones((2, 2))] * len(c))
        >>> aa.extract(x, [0, 3], 1).shape, aa.extract(x, [0, 3], 1, drop=False).shape
        ((2,), (2, 1))
    """
    x = _require(x)
    key = x._convert_key(selection.hyperslab_key(subscripts, x.ndim))
    p = selection.plan(selection.normalize(key, x.shape, "outer"), x.chunks, keep_dims=not drop)
    x._count("hyperslab")
    return np.asarray(read_plans(x, [p])[0])


def plan(x: LazyArray, *subscripts: Any) -> Any:
    """The chunks a hyperslab would touch, as a pandas DataFrame, computed without reading anything
    (pandas is the optional dependency ``altarr[pandas]``).

    One row per touched chunk (C order): ``chunk_<d>``, ``start_<d>``, ``extent_<d>`` per dimension (its
    name or number), ``elements`` (selected), ``nbytes`` (decoded) and ``cached``. Subscripts as in
    :func:`extract`.

    Example:
        >>> import numpy as np, altarr as aa
        >>> x = aa.altarr((10, 7), (4, 3), lambda c: [np.zeros(12)] * len(c))
        >>> aa.plan(x, slice(3, 5), 1)[["chunk_0", "chunk_1", "start_0", "extent_0"]].values.tolist()
        [[0, 0, 0, 4], [1, 0, 4, 4]]
    """
    try:
        import pandas as pd
    except ImportError as e:
        raise ImportError(
            "altarr.plan returns a pandas DataFrame and needs the optional dependency pandas: "
            "pip install pandas (or pip install 'altarr[pandas]')"
        ) from e

    x = _require(x)
    key = x._convert_key(selection.hyperslab_key(subscripts, x.ndim))
    p = selection.plan(selection.normalize(key, x.shape, "outer"), x.chunks)
    names = list(x.dims) if x.dims else [str(d) for d in range(x.ndim)]
    coords = p.coords
    chunk_arr = np.asarray(x.chunks, dtype=np.int64)
    start = coords * chunk_arr
    extent = np.minimum(chunk_arr, np.asarray(x.shape, dtype=np.int64) - start)
    cols: dict[str, Any] = {}
    for column, values in (("chunk", coords), ("start", start), ("extent", extent)):
        for d, name in enumerate(names):
            cols[f"{column}_{name}"] = values[:, d]
    cols["elements"] = p.row_elements()
    cols["nbytes"] = extent.prod(axis=1) * x.dtype.itemsize
    leaves = x._leaves()
    cached = np.ones(len(coords), dtype=bool)
    for leaf in leaves:
        cached &= np.asarray(CACHE.contains(leaf.keys(coords)), dtype=bool) if len(coords) else cached
    cols["cached"] = cached
    return pd.DataFrame(cols)


def stats(x: LazyArray) -> dict[str, int]:
    """Counters of a lazy array (shared with its copies; summed over the sources of an expression), keys as
    listed in docs/lazy-arrays.md, "Options and counters".

    Example:
        >>> import numpy as np, altarr as aa
        >>> x = aa.altarr(8, 4, lambda c: [np.zeros(4)] * len(c))
        >>> _ = x[0]; _ = x[1]
        >>> s = aa.stats(x); s["extract_subset"], s["fetch_calls"], s["chunks_cached"]
        (2, 1, 1)
    """
    x = _require(x)
    out = dict.fromkeys(COUNTER_NAMES, 0)
    out.update(chunks_cached=0, cache_bytes=0, evictions=0)
    for leaf in x._leaves():
        for name, value in leaf.counters.snapshot().items():
            out[name] += value
        for name, value in CACHE.owner_stats(leaf.token).items():
            out[name] += value
    out["cache_budget"] = options._get("cache_bytes")
    return out


def reset(x: LazyArray, cache: bool = True) -> None:
    """Zero the counters of ``x`` (and its copies); with ``cache`` also drop its cached chunks.

    Example:
        >>> import numpy as np, altarr as aa
        >>> x = aa.altarr(8, 4, lambda c: [np.zeros(4)] * len(c))
        >>> _ = x[0]; aa.reset(x)
        >>> aa.stats(x)["fetch_calls"], aa.stats(x)["chunks_cached"]
        (0, 0)
    """
    x = _require(x)
    for leaf in x._leaves():
        leaf.counters.reset()
        CACHE.reset_evictions(leaf.token)
        if cache:
            CACHE.drop_owner(leaf.token)


def is_altarr(x: Any) -> bool:
    """Whether ``x`` is a lazy array (a subset result, being NumPy data, is not).

    Example:
        >>> import altarr as aa
        >>> aa.is_altarr([1, 2])
        False
    """
    return isinstance(x, LazyArray)
