"""Streamed reductions: whole-array and along any axis, in batches of ``batch_chunks`` chunks per fetch.

Every reduction walks the chunk grid in C order, ``batch_chunks`` chunks at a time: it takes the chunks
already cached, fetches the missing ones of the batch in one call *without* inserting them into the
cache, reduces each chunk to a partial result over the reduced axes and merges it into an accumulator
of the output shape. So memory stays within one batch plus the output, the cache is neither filled nor
churned, and ``any``/``all`` stop at the first batch that decides them.

``mean`` merges sums; ``var``/``std`` merge ``(count, mean, M2)`` per output element with the pairwise
update of Chan, Golub and LeVeque (numerically stable, honours ``ddof``); the ``nan*`` variants count
only non-NaN values.

Example:
    >>> import numpy as np, altarr as aa
    >>> x = aa.altarr((4, 6), (2, 3), lambda c: [np.arange(6.0).reshape(2, 3)] * len(c))
    >>> x.sum(axis=0).tolist()
    [6.0, 10.0, 14.0, 6.0, 10.0, 14.0]
    >>> float(np.std(x)), float(np.arange(6.0).reshape(2, 3).std())
    (1.707825127659933, 1.707825127659933)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ..errors import UnsupportedError
from . import options

__all__ = ["ufunc_reduce", "any_all", "mean", "var", "count_nonzero", "nonzero", "nan_reduce", "REORDERABLE"]

#: Ufuncs whose reduction can be split into chunk partials merged in any order.
REORDERABLE = frozenset(
    {
        np.add,
        np.multiply,
        np.minimum,
        np.maximum,
        np.fmin,
        np.fmax,
        np.logical_and,
        np.logical_or,
        np.logical_xor,
        np.bitwise_and,
        np.bitwise_or,
        np.bitwise_xor,
        np.gcd,
        np.lcm,
    }
)

Partial = Callable[[np.ndarray, tuple[int, ...]], tuple[Any, ...]]
Combine = Callable[[tuple[Any, ...], tuple[Any, ...]], tuple[Any, ...]]


def _axes(x: Any, axis: Any) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(x.ndim))
    return tuple(sorted(normalize_axis_tuple(axis, x.ndim)))


def _grid_batch(grid: tuple[int, ...], start: int, stop: int) -> np.ndarray:
    if not grid:
        return np.zeros((stop - start, 0), dtype=np.int64)
    flat = np.arange(start, stop, dtype=np.int64)
    return np.stack(np.unravel_index(flat, grid), axis=1).astype(np.int64)


def stream(
    x: Any,
    red: tuple[int, ...],
    partial: Partial,
    combine: Combine,
    early: Callable[[list[np.ndarray]], bool] | None = None,
) -> list[np.ndarray]:
    """Reduce ``x`` over the axes ``red``; returns accumulators of the kept shape.

    ``partial(chunk, red)`` gives a tuple of arrays shaped like the chunk's kept extents;
    ``combine(acc, part)`` merges two such tuples. ``early(acc)`` may stop the walk once every output
    element has been visited.
    """
    x._count("reduce")
    kept = tuple(d for d in range(x.ndim) if d not in red)
    kept_shape = tuple(x.shape[d] for d in kept)
    grid = x.nchunks
    total = int(np.prod(grid, dtype=np.int64))
    n_regions = int(np.prod([grid[d] for d in kept], dtype=np.int64))
    batch = options._get("batch_chunks")
    chunks_ = x.chunks
    src = x._source
    state: dict[str, Any] = {"acc": None, "seen": set()}

    def absorb(coords: np.ndarray, arrays: list[np.ndarray]) -> None:
        seen = state["seen"]
        for c, chunk in zip(coords.tolist(), arrays, strict=True):
            parts = tuple(np.asarray(p) for p in partial(chunk, red))
            if state["acc"] is None:
                state["acc"] = [np.empty(kept_shape, dtype=p.dtype) for p in parts]
            acc = state["acc"]
            region = tuple(slice(c[d] * chunks_[d], c[d] * chunks_[d] + chunk.shape[d]) for d in kept)
            key = tuple(c[d] for d in kept)
            if key in seen:
                merged = combine(tuple(a[region] for a in acc), parts)
                for a, v in zip(acc, merged, strict=True):
                    a[region] = v
            else:
                for a, v in zip(acc, parts, strict=True):
                    a[region] = v
                seen.add(key)

    for start in range(0, total, batch):
        coords = _grid_batch(grid, start, min(start + batch, total))
        absorb(coords, src.get_chunks(coords, store=False))
        if early is not None and len(state["seen"]) == n_regions and early(state["acc"]):
            break
    return state["acc"]


def _finish(result: Any, x: Any, red: tuple[int, ...], out: Any, keepdims: bool) -> Any:
    result = np.asarray(result)
    if keepdims:
        result = result.reshape(tuple(1 if d in red else x.shape[d] for d in range(x.ndim)))
    if out is not None:
        if isinstance(out, tuple):
            out = out[0]
        out[...] = result
        return out
    return result[()] if result.ndim == 0 else result


def _check_where(where: Any) -> None:
    if where is not True:
        raise UnsupportedError("lazy reductions do not support where=; select with x[...] first")


def _empty_case(x: Any) -> np.ndarray:
    return np.empty(x.shape, dtype=x.dtype)


def ufunc_reduce(
    x: Any,
    ufunc: np.ufunc,
    axis: Any = 0,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = np._NoValue,
    where: Any = True,
    *,
    default_axis: Any = 0,
) -> Any:
    """Streamed ``ufunc.reduce`` for a reorderable ufunc (``np.add``, ``np.minimum``, ...).

    ``x.sum()``, ``x.prod()``, ``x.min()``, ``x.max()`` and ``np.add.reduce(x, axis=...)`` all land here.
    """
    _check_where(where)
    if x.size == 0 or any(x.shape[d] == 0 for d in _axes(x, axis)):
        kw: dict[str, Any] = {"axis": axis, "keepdims": keepdims}
        if dtype is not None:
            kw["dtype"] = dtype
        if initial is not np._NoValue:
            kw["initial"] = initial
        res = ufunc.reduce(_empty_case(x), **kw)
        return _finish(res, x, (), out, False)
    red = _axes(x, axis)

    def partial(chunk: np.ndarray, red: tuple[int, ...]) -> tuple[Any, ...]:
        return (ufunc.reduce(chunk, axis=red, dtype=dtype),)

    def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        return (ufunc(a[0], b[0], dtype=dtype) if dtype is not None else ufunc(a[0], b[0]),)

    (acc,) = stream(x, red, partial, combine)
    if initial is not np._NoValue:
        acc = ufunc(acc, initial)
        if dtype is not None:
            acc = acc.astype(dtype)
    return _finish(acc, x, red, out, keepdims)


def any_all(x: Any, which: str, axis: Any, out: Any, keepdims: bool, where: Any) -> Any:
    """Streamed ``any``/``all`` with early exit."""
    _check_where(where)
    red = _axes(x, axis)
    if x.size == 0:
        res = getattr(np, which)(_empty_case(x), axis=axis)
        return _finish(res, x, red, out, keepdims)
    if which == "any":

        def partial(chunk: np.ndarray, red: tuple[int, ...]) -> tuple[Any, ...]:
            return (np.any(chunk, axis=red),)

        def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
            return (np.logical_or(a[0], b[0]),)

        def early(acc: list[np.ndarray]) -> bool:
            return bool(acc[0].all())

    else:

        def partial(chunk: np.ndarray, red: tuple[int, ...]) -> tuple[Any, ...]:
            return (np.all(chunk, axis=red),)

        def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
            return (np.logical_and(a[0], b[0]),)

        def early(acc: list[np.ndarray]) -> bool:
            return not bool(acc[0].any())

    (acc,) = stream(x, red, partial, combine, early)
    return _finish(acc, x, red, out, keepdims)


def _float_calc_dtype(dt: np.dtype, dtype: Any) -> np.dtype:
    """The dtype NumPy's mean/var compute in."""
    if dtype is not None:
        return np.dtype(dtype)
    if dt.kind in "biu":
        return np.dtype(np.float64)
    if dt == np.float16:
        return np.dtype(np.float32)
    return dt


def _count_of(x: Any, red: tuple[int, ...]) -> int:
    return int(np.prod([x.shape[d] for d in red], dtype=np.int64))


def mean(x: Any, axis: Any, dtype: Any, out: Any, keepdims: bool, where: Any, *, nan: bool) -> Any:
    """Streamed ``mean`` / ``nanmean``."""
    _check_where(where)
    red = _axes(x, axis)
    numpy_fn = np.nanmean if nan else np.mean
    res_dtype = numpy_fn(np.ones((1,), x.dtype), dtype=dtype).dtype
    if x.size == 0 or _count_of(x, red) == 0:  # nothing to read: NumPy's own answer (and warning)
        return _finish(numpy_fn(_empty_case(x), axis=axis, dtype=dtype, keepdims=keepdims), x, (), out, False)
    calc = _float_calc_dtype(x.dtype, dtype)
    nan_capable = nan and x.dtype.kind in "fc"

    def partial(chunk: np.ndarray, red: tuple[int, ...]) -> tuple[Any, ...]:
        if nan_capable:
            valid = ~np.isnan(chunk)
            return (np.sum(np.where(valid, chunk, 0), axis=red, dtype=calc), np.sum(valid, axis=red))
        return (np.sum(chunk, axis=red, dtype=calc),)

    def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(np.add(p, q) for p, q in zip(a, b, strict=True))

    acc = stream(x, red, partial, combine)
    count = acc[1] if nan_capable else _count_of(x, red)
    with np.errstate(invalid="ignore", divide="ignore"):
        res = np.true_divide(acc[0], count)
    if nan_capable and np.any(np.asarray(count) == 0):
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=3)
    return _finish(np.asarray(res).astype(res_dtype, copy=False), x, red, out, keepdims)


def _resolve_ddof(ddof: Any, correction: Any) -> Any:
    if correction is not np._NoValue:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        return correction
    return ddof


def var(
    x: Any,
    axis: Any,
    dtype: Any,
    out: Any,
    ddof: Any,
    keepdims: bool,
    where: Any,
    mean_: Any,
    correction: Any,
    *,
    nan: bool,
    sqrt: bool,
) -> Any:
    """Streamed ``var``/``std`` (and ``nanvar``/``nanstd``): Chan et al. merge of (count, mean, M2)."""
    _check_where(where)
    if mean_ is not np._NoValue:
        raise UnsupportedError("lazy var/std do not support mean=; it is computed while streaming")
    ddof = _resolve_ddof(ddof, correction)
    red = _axes(x, axis)
    numpy_fn = {
        (False, False): np.var,
        (False, True): np.std,
        (True, False): np.nanvar,
        (True, True): np.nanstd,
    }[(nan, sqrt)]
    res_dtype = numpy_fn(np.ones((2,), x.dtype), dtype=dtype).dtype
    if x.size == 0 or _count_of(x, red) == 0:  # nothing to read: NumPy's own answer (and warning)
        res = numpy_fn(_empty_case(x), axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
        return _finish(res, x, (), out, False)
    calc = _float_calc_dtype(x.dtype, dtype)
    complex_ = calc.kind == "c" or x.dtype.kind == "c"
    nan_capable = nan and x.dtype.kind in "fc"

    def sq(d: np.ndarray) -> np.ndarray:
        return (d * np.conj(d)).real if complex_ else d * d

    def partial(chunk: np.ndarray, red: tuple[int, ...]) -> tuple[Any, ...]:
        c = chunk.astype(calc, copy=False)
        if nan_capable:
            valid = ~np.isnan(c)
            n = np.sum(valid, axis=red, keepdims=True).astype(np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                m = np.sum(np.where(valid, c, 0), axis=red, keepdims=True) / n
            m = np.where(n > 0, m, 0)
            m2 = np.sum(np.where(valid, sq(c - m), 0), axis=red)
        else:
            n = np.full((1,) * c.ndim, float(np.prod([c.shape[d] for d in red])))
            m = np.sum(c, axis=red, keepdims=True) / n
            m2 = np.sum(sq(c - m), axis=red)
        kept_shape = m2.shape
        return (np.broadcast_to(n.reshape(n.shape), m.shape).reshape(kept_shape), m.reshape(kept_shape), m2)

    def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        na, ma, qa = a
        nb, mb, qb = b
        n = na + nb
        with np.errstate(invalid="ignore", divide="ignore"):
            w = np.where(n > 0, nb / n, 0.0)
        delta = mb - ma
        m = ma + delta * w
        q = qa + qb + sq(delta) * na * w
        return (n, m, q)

    n, _, m2 = stream(x, red, partial, combine)
    denom = np.maximum(n - ddof, 0)
    if np.any(denom <= 0):
        warnings.warn("Degrees of freedom <= 0 for slice.", RuntimeWarning, stacklevel=3)
    with np.errstate(invalid="ignore", divide="ignore"):
        res = m2 / denom
    if sqrt:
        res = np.sqrt(res)
    return _finish(np.asarray(res).astype(res_dtype, copy=False), x, red, out, keepdims)


def nan_reduce(
    x: Any, which: str, axis: Any, dtype: Any, out: Any, keepdims: bool, initial: Any, where: Any
) -> Any:
    """Streamed ``nansum``, ``nanprod``, ``nanmin``, ``nanmax``."""
    _check_where(where)
    if x.dtype.kind not in "fc":  # no NaN possible: the plain reduction
        ufunc = {"nansum": np.add, "nanprod": np.multiply, "nanmin": np.minimum, "nanmax": np.maximum}[which]
        return ufunc_reduce(x, ufunc, axis, dtype, out, keepdims, initial, where, default_axis=None)
    red = _axes(x, axis)
    if x.size == 0 or _count_of(x, red) == 0:
        kw: dict[str, Any] = {"axis": axis, "keepdims": keepdims}
        if dtype is not None:
            kw["dtype"] = dtype
        if initial is not np._NoValue:
            kw["initial"] = initial
        return _finish(getattr(np, which)(_empty_case(x), **kw), x, (), out, False)
    if which in ("nansum", "nanprod"):
        fill = 0 if which == "nansum" else 1
        ufunc = np.add if which == "nansum" else np.multiply

        def partial(chunk: np.ndarray, red: tuple[int, ...]) -> tuple[Any, ...]:
            return (
                ufunc.reduce(np.where(np.isnan(chunk), fill, chunk), axis=red, dtype=dtype or chunk.dtype),
            )

        def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
            return (ufunc(a[0], b[0]),)

        (acc,) = stream(x, red, partial, combine)
        if initial is not np._NoValue:
            acc = ufunc(acc, initial)
        return _finish(acc, x, red, out, keepdims)
    ufunc = np.fmin if which == "nanmin" else np.fmax

    def partial2(chunk: np.ndarray, red: tuple[int, ...]) -> tuple[Any, ...]:
        return (ufunc.reduce(chunk, axis=red),)

    def combine2(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        return (ufunc(a[0], b[0]),)

    (acc,) = stream(x, red, partial2, combine2)
    if initial is not np._NoValue:
        acc = ufunc(acc, initial)
    if np.any(np.isnan(acc)):
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=3)
    return _finish(acc, x, red, out, keepdims)


def count_nonzero(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Streamed ``np.count_nonzero``."""
    red = _axes(x, axis)
    if x.size == 0:
        return np.count_nonzero(_empty_case(x), axis=axis, keepdims=keepdims)

    def partial(chunk: np.ndarray, red: tuple[int, ...]) -> tuple[Any, ...]:
        return (np.asarray(np.count_nonzero(chunk, axis=red), dtype=np.intp),)

    def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        return (a[0] + b[0],)

    (acc,) = stream(x, red, partial, combine)
    return _finish(acc, x, red, None, keepdims)


def nonzero(x: Any) -> tuple[np.ndarray, ...]:
    """Streamed ``np.nonzero``: indices of non-zero values in C order."""
    if x.ndim == 0:
        raise ValueError(
            "Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead."
        )
    x._count("reduce")
    grid = x.nchunks
    total = int(np.prod(grid, dtype=np.int64))
    batch = options._get("batch_chunks")
    chunk_arr = np.asarray(x.chunks, dtype=np.int64)
    parts: list[np.ndarray] = []

    def absorb(coords: np.ndarray, arrays: list[np.ndarray]) -> None:
        for c, chunk in zip(coords, arrays, strict=True):
            nz = np.nonzero(chunk)
            if len(nz[0]):
                local = np.stack(nz, axis=1).astype(np.int64) + c * chunk_arr
                parts.append(np.ravel_multi_index(local.T, x.shape).astype(np.int64))

    for start in range(0, total, batch):
        coords = _grid_batch(grid, start, min(start + batch, total))
        absorb(coords, x._source.get_chunks(coords, store=False))
    flat = np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    return tuple(a.astype(np.intp) for a in np.unravel_index(flat, x.shape))
