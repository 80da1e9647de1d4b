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

import contextlib
import operator
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ..errors import UnsupportedError
from . import options

#: altarr's own source folder: a warning is attributed to the first frame outside it
_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])


def _warn_caller(message: str) -> None:
    """NumPy's ``RuntimeWarning`` ``message``, attributed to the user's line: the first frame outside
    altarr. (A fixed ``stacklevel`` is right for ``x.mean()`` but names a line of altarr for
    ``np.mean(x)``, which arrives through ``__array_function__``; NumPy names the caller in both.)"""
    level = 2
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    warnings.warn(message, RuntimeWarning, stacklevel=level)


__all__ = [
    "arg_reduce",
    "ufunc_reduce",
    "any_all",
    "mean",
    "var",
    "count_nonzero",
    "nonzero",
    "nan_reduce",
    "REORDERABLE",
]

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


def _lazy(v: Any) -> bool:
    return getattr(type(v), "_is_lazy_array", False)


def chunk_regions(x: Any, coords: np.ndarray) -> list[tuple[slice, ...]]:
    """The regions of ``x`` covered by the chunks at ``coords``."""
    chunks = np.asarray(x.chunks, dtype=np.int64)
    start = coords * chunks
    stop = np.minimum(start + chunks, np.asarray(x.shape, dtype=np.int64))
    return [
        tuple(slice(a, b) for a, b in zip(lo, hi, strict=True))
        for lo, hi in zip(start.tolist(), stop.tolist(), strict=True)
    ]


def part_reader(x: Any, other: Any) -> Callable[[np.ndarray, list[tuple[slice, ...]]], list[Any]]:
    """How to read the part of ``other`` matching each chunk of a batch of ``x``'s chunks.

    ``other`` broadcasts to ``x.shape``: a NumPy array or scalar (views of it), or a lazy array of the
    same shape (its chunks of the same grid in one fetch call; on another grid one planned read of the
    batch's bounding box). ``None`` parts mean "the same values as ``x``'s chunk" (same source).
    """
    if not _lazy(other):
        full = np.broadcast_to(other, x.shape)
        return lambda coords, regions: [full[r] for r in regions]
    if other.chunks == x.chunks:
        if other._source is x._source:
            return lambda coords, regions: [None] * len(regions)
        return lambda coords, regions: other._source.get_chunks(coords, store=False)

    def bbox(coords: np.ndarray, regions: list[tuple[slice, ...]]) -> list[Any]:
        lo = [min(r[d].start for r in regions) for d in range(x.ndim)]
        hi = [max(r[d].stop for r in regions) for d in range(x.ndim)]
        block = np.asarray(other[tuple(slice(a, b) for a, b in zip(lo, hi, strict=True))])
        return [
            block[tuple(slice(s.start - a, s.stop - a) for s, a in zip(r, lo, strict=True))] for r in regions
        ]

    return bbox


def where_mask(x: Any, where: Any) -> Any:
    """``where=`` of a reduction, checked as NumPy checks it: ``True``, or a boolean array (NumPy or
    lazy; a lazy one of another shape is materialized under the guard) that broadcasts to ``x.shape``."""
    if where is True:
        return True
    if not (_lazy(where) or isinstance(where, np.ndarray)):
        # NumPy converts anything but an array by value (a list of 0/1, a 0.5, a NumPy scalar, None)
        return np.broadcast_to(np.asarray(where, dtype=np.bool_), x.shape)
    if where.dtype != np.bool_:  # an array, NumPy or lazy, is held to the 'safe' cast: only bool passes
        raise TypeError(
            f"Cannot cast array data from {where.dtype!r} to dtype('bool') according to the rule 'safe'"
        )
    if _lazy(where):
        if where.shape == x.shape:
            return where
        where = where._materialize()
    return np.broadcast_to(where, x.shape)  # ValueError as NumPy's when it does not broadcast


def stream(
    x: Any,
    red: tuple[int, ...],
    partial: Any,
    combine: Combine,
    early: Callable[[list[np.ndarray]], bool] | None = None,
    where: Any = True,
) -> list[np.ndarray]:
    """Reduce ``x`` over the axes ``red``; returns accumulators of the kept shape.

    ``partial(chunk, red)`` (or ``partial(chunk, red, mask)`` when ``where`` is not ``True``: the
    boolean mask of the chunk's region) gives a tuple of arrays shaped like the chunk's kept extents;
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
    masks = None if where is True else part_reader(x, where)
    state: dict[str, Any] = {"acc": None, "seen": set()}

    def absorb(coords: np.ndarray, arrays: list[np.ndarray], mask_parts: list[Any] | None) -> None:
        seen = state["seen"]
        for n, (c, chunk) in enumerate(zip(coords.tolist(), arrays, strict=True)):
            if mask_parts is None:
                got = partial(chunk, red)
            else:
                m = mask_parts[n]
                got = partial(chunk, red, chunk if m is None else np.asarray(m, dtype=bool))
            parts = tuple(np.asarray(p) for p in got)
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
        arrays = src.get_chunks(coords, store=False)
        mask_parts = None if masks is None else masks(coords, chunk_regions(x, coords))
        absorb(coords, arrays, mask_parts)
        if early is not None and len(state["seen"]) == n_regions and early(state["acc"]):
            break
    acc: list[np.ndarray] = state["acc"]
    return acc


def _finish(result: Any, x: Any, red: tuple[int, ...], out: Any, keepdims: bool) -> Any:
    result = np.asarray(result)
    if keepdims:
        result = result.reshape(tuple(1 if d in red else x.shape[d] for d in range(x.ndim)))
    if out is not None:
        if isinstance(out, tuple):  # np.sum(x, out=(o,)) and the methods: NumPy refuses the tuple form
            raise TypeError("return arrays must be of ArrayType")
        out[...] = result
        return out
    return result[()] if result.ndim == 0 else result


def _empty_case(x: Any) -> np.ndarray:
    return np.empty(x.shape, dtype=x.dtype)


def _numpy_where(where: Any) -> Any:
    """``where`` for a call of NumPy's own function (only on empty arrays: cheap)."""
    return where._materialize() if _lazy(where) else where


def _no_identity_error(ufunc: np.ufunc) -> ValueError:
    return ValueError(
        f"reduction operation '{ufunc.__name__}' does not have an identity, so to use a where mask one "
        "has to specify 'initial'"
    )


def _numpy_order_product(
    x: Any, red: tuple[int, ...], acc: np.ndarray, start: Any, where: Any, nan_to_one: bool
) -> np.ndarray:
    """Complex ``prod``/``nanprod`` recomputed in NumPy's order where the streamed product is not finite.

    A complex product with an infinite or NaN factor depends on the order of the multiplications
    (``(1+.5j) * (1+.5j) * (inf+1j)`` is ``inf+infj`` multiplied left to right, ``nan+nanj`` when the
    last two go first). NumPy's reduce starts from ``start`` (the identity ``1+0j`` or ``initial``) and
    multiplies the values one by one in C order of the reduced axes (skipping ``where=False``). The
    streamed partials group them by chunk, so each output element that came out non-finite (every one
    with a non-finite factor, and no other unless a product overflows) is recomputed: a second walk of
    the chunks collects the values of those elements only (memory: their count times the reduced size)
    and multiplies them in NumPy's order.
    """
    acc = np.asarray(acc)
    with np.errstate(invalid="ignore", over="ignore"):
        bad = ~np.isfinite(acc)
    if acc.dtype.kind != "c" or not bad.any():
        return acc
    kept = tuple(d for d in range(x.ndim) if d not in red)
    red_shape = tuple(x.shape[d] for d in red)
    n_red = int(np.prod(red_shape, dtype=np.int64))
    rows = np.flatnonzero(bad.reshape(-1))  # affected output elements, flat in the kept shape
    row_of = np.full(bad.size, -1, dtype=np.int64)
    row_of[rows] = np.arange(rows.size)
    vals = np.ones((rows.size, n_red), dtype=acc.dtype)
    valid = np.zeros((rows.size, n_red), dtype=bool)
    masks = None if where is True else part_reader(x, where)
    grid = x.nchunks
    total = int(np.prod(grid, dtype=np.int64))
    batch = options._get("batch_chunks")
    for first in range(0, total, batch):
        coords = _grid_batch(grid, first, min(first + batch, total))
        regions = chunk_regions(x, coords)
        arrays = x._source.get_chunks(coords, store=False)
        mask_parts = None if masks is None else masks(coords, regions)
        for n, (region, chunk) in enumerate(zip(regions, arrays, strict=True)):
            chunk = np.asarray(chunk)
            if nan_to_one:
                chunk = np.where(np.isnan(chunk), 1, chunk)
            ok = np.ones(chunk.shape, dtype=bool)
            if mask_parts is not None:
                m = mask_parts[n]
                ok = np.asarray(chunk if m is None else m, dtype=bool)
            # global kept and reduced flat positions of every element of the chunk
            grids = np.meshgrid(*[np.arange(r.start, r.stop) for r in region], indexing="ij")
            out_pos = (
                np.ravel_multi_index([grids[d] for d in kept], acc.shape)
                if kept
                else np.zeros(chunk.shape, int)
            )
            red_pos = (
                np.ravel_multi_index([grids[d] for d in red], red_shape)
                if red
                else np.zeros(chunk.shape, int)
            )
            r = row_of[out_pos]
            sel = r >= 0
            vals[r[sel], red_pos[sel]] = chunk[sel].astype(acc.dtype)
            valid[r[sel], red_pos[sel]] = ok[sel]
    res = np.full(rows.size, start, dtype=acc.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(n_red):
            res = np.where(valid[:, k], res * vals[:, k], res)
    fixed = acc.copy()
    fixed.reshape(-1)[rows] = res
    return fixed


def _object_kept(value: Any) -> Any:
    """``value`` of a reduction, a Python object from NumPy's object loop kept as a 0-d object array:
    ``np.asarray`` would turn a Python int into int64, which overflows where Python's ints do not."""
    if isinstance(value, np.ndarray | np.generic):
        return value
    return np.asarray(value, dtype=object)


def ufunc_reduce(
    x: Any,
    ufunc: np.ufunc,
    axis: Any = 0,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = np._NoValue,
    where: Any = True,
) -> Any:
    """Streamed ``ufunc.reduce`` for a reorderable ufunc (``np.add``, ``np.minimum``, ...), with NumPy's
    ``where=`` (a boolean mask, NumPy or lazy) and ``initial=``.

    ``x.sum()``, ``x.prod()``, ``x.min()``, ``x.max()`` and ``np.add.reduce(x, axis=...)`` all land here.
    """
    where = where_mask(x, where)
    if x.size == 0 or any(x.shape[d] == 0 for d in _axes(x, axis)):
        kw: dict[str, Any] = {"axis": axis, "keepdims": keepdims}
        if dtype is not None:
            kw["dtype"] = dtype
        if initial is not np._NoValue:
            kw["initial"] = initial
        if where is not True:
            kw["where"] = _numpy_where(where)
        res = ufunc.reduce(_empty_case(x), **kw)
        return _finish(res, x, (), out, False)
    red = _axes(x, axis)
    masked = where is not True
    if masked and ufunc.identity is None and initial is np._NoValue:
        raise _no_identity_error(ufunc)
    # a masked partial starts from the identity (or, for min/max, the idempotent initial)
    start = ufunc.identity if ufunc.identity is not None else initial

    def partial(chunk: np.ndarray, red: tuple[int, ...], mask: Any = None) -> tuple[Any, ...]:
        if mask is None:
            return (_object_kept(ufunc.reduce(chunk, axis=red, dtype=dtype)),)
        return (_object_kept(ufunc.reduce(chunk, axis=red, dtype=dtype, where=mask, initial=start)),)

    def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        return (ufunc(a[0], b[0], dtype=dtype) if dtype is not None else ufunc(a[0], b[0]),)

    (acc,) = stream(x, red, partial, combine, where=where)
    init = None
    if initial is not np._NoValue:
        # ``initial`` converted as NumPy's reduce converts it (to the reduction's dtype)
        init = ufunc.reduce(np.zeros((0,), dtype=x.dtype), dtype=dtype, initial=initial)
        acc = _object_kept(ufunc(acc, init, dtype=acc.dtype))
    if ufunc is np.multiply and acc.dtype != object:  # Python's products have no order to recompute
        acc = _numpy_order_product(x, red, acc, 1 if init is None else init, where, nan_to_one=False)
    return _finish(acc, x, red, out, keepdims)


def any_all(x: Any, which: str, axis: Any, out: Any, keepdims: bool, where: Any) -> Any:
    """Streamed ``any``/``all`` with early exit (and NumPy's ``where=``)."""
    where = where_mask(x, where)
    red = _axes(x, axis)
    fn = np.any if which == "any" else np.all
    if x.size == 0:
        kw = {} if where is True else {"where": _numpy_where(where)}
        res = fn(_empty_case(x), axis=axis, **kw)
        return _finish(res, x, red, out, keepdims)

    def partial(chunk: np.ndarray, red: tuple[int, ...], mask: Any = None) -> tuple[Any, ...]:
        if mask is None:
            return (fn(chunk, axis=red),)
        return (fn(chunk, axis=red, where=mask),)

    if which == "any":

        def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
            return (np.logical_or(a[0], b[0]),)

        def early(acc: list[np.ndarray]) -> bool:
            return bool(acc[0].all())

    else:

        def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
            return (np.logical_and(a[0], b[0]),)

        def early(acc: list[np.ndarray]) -> bool:
            return not bool(acc[0].any())

    (acc,) = stream(x, red, partial, combine, early, where=where)
    return _finish(acc, x, red, out, keepdims)


def _float_calc_dtype(dt: np.dtype, dtype: Any) -> np.dtype:
    """The dtype NumPy's mean/var compute in."""
    if dtype is not None:
        calc: np.dtype = np.dtype(dtype)
        return calc
    if dt.kind in "biu":
        return np.dtype(np.float64)
    if dt == np.float16:
        return np.dtype(np.float32)
    return dt


def _count_of(x: Any, red: tuple[int, ...]) -> int:
    return int(np.prod([x.shape[d] for d in red], dtype=np.int64))


def _numpy_empty_call(numpy_fn: Any, x: Any, out: Any, where: Any, **kw: Any) -> Any:
    if where is not True:
        kw["where"] = _numpy_where(where)
    return _finish(numpy_fn(_empty_case(x), **kw), x, (), out, False)


def mean(x: Any, axis: Any, dtype: Any, out: Any, keepdims: bool, where: Any, *, nan: bool) -> Any:
    """Streamed ``mean`` / ``nanmean`` (with NumPy's ``where=``)."""
    where = where_mask(x, where)
    red = _axes(x, axis)
    numpy_fn = np.nanmean if nan else np.mean
    res_dtype = numpy_fn(np.ones((1,), x.dtype), dtype=dtype).dtype
    if x.size == 0 or _count_of(x, red) == 0:  # nothing to read: NumPy's own answer (and warning)
        return _numpy_empty_call(numpy_fn, x, out, where, axis=axis, dtype=dtype, keepdims=keepdims)
    calc = _float_calc_dtype(x.dtype, dtype)
    nan_capable = nan and x.dtype.kind in "fc"
    counted = nan_capable or where is not True

    def partial(chunk: np.ndarray, red: tuple[int, ...], mask: Any = None) -> tuple[Any, ...]:
        valid = mask
        if nan_capable:
            valid = ~np.isnan(chunk) if valid is None else valid & ~np.isnan(chunk)
        if valid is not None:
            return (np.sum(chunk, axis=red, dtype=calc, where=valid), np.sum(valid, axis=red))
        return (np.sum(chunk, axis=red, dtype=calc),)

    def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(np.add(p, q) for p, q in zip(a, b, strict=True))

    acc = stream(x, red, partial, combine, where=where)
    count = acc[1] if counted else _count_of(x, red)
    if counted and np.any(np.asarray(count) == 0):
        _warn_caller("Mean of empty slice")
    # np.nanmean divides quietly; np.mean (and nanmean of a type without NaN) warns "invalid value" for
    # the 0/0 of a slice that where= leaves empty, under the caller's errstate (0-d accumulators divide
    # as NumPy scalars, as NumPy's whole-array mean does: "invalid value encountered in scalar divide")
    with np.errstate(invalid="ignore", divide="ignore") if nan_capable else contextlib.nullcontext():
        res = np.asarray(acc[0])[()] / np.asarray(count)[()]
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
    """Streamed ``var``/``std`` (and ``nanvar``/``nanstd``): Chan et al. merge of (count, mean, M2).

    Degrees of freedom as NumPy: ``var``/``std`` divide by ``max(n - ddof, 0)`` (so ``inf`` or ``nan``
    where ``ddof >= n``), ``nanvar``/``nanstd`` give ``nan`` there; both warn.
    """
    where = where_mask(x, where)
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
        return _numpy_empty_call(
            numpy_fn, x, out, where, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims
        )
    calc = _float_calc_dtype(x.dtype, dtype)
    # complex deviations only from complex data in a complex dtype: NumPy squares real data's deviations
    # (d * d) even in a complex dtype (an inf gives nan+nanj). Complex data in a real dtype: altarr drops
    # the imaginary parts; NumPy's var(real) + mean(imag**2) there is not followed (docs/lazy-arrays.md)
    complex_ = calc.kind == "c" and x.dtype.kind == "c"
    nan_capable = nan and x.dtype.kind in "fc"

    def sq(d: np.ndarray) -> np.ndarray:
        squared: np.ndarray = (d * np.conj(d)).real if complex_ else d * d
        return squared

    def partial(chunk: np.ndarray, red: tuple[int, ...], mask: Any = None) -> tuple[Any, ...]:
        c = chunk.astype(calc, copy=False)
        valid = mask
        if nan_capable:
            valid = ~np.isnan(c) if valid is None else valid & ~np.isnan(c)
        if valid is not None:
            n = np.sum(valid, axis=red, keepdims=True).astype(np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                m = np.sum(c, axis=red, keepdims=True, where=valid) / n
            m = np.where(n > 0, m, 0)
            m2 = np.sum(sq(c - m), axis=red, where=valid)
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

    n, _, m2 = stream(x, red, partial, combine, where=where)
    if nan_capable:  # NumPy's nanvar: nan where the degrees of freedom are not positive
        if np.any(ddof >= n):
            _warn_caller("Degrees of freedom <= 0 for slice.")
        dof = n - ddof
        with np.errstate(invalid="ignore", divide="ignore"):
            res = np.where(dof > 0, m2 / np.where(dof > 0, dof, 1), np.nan)
    else:
        # NumPy's var words it without the period, and its division by 0 then warns under the caller's
        # errstate ("divide by zero" or, for 0/0, "invalid value"; "in scalar divide" for the whole array)
        if np.any(ddof >= n):
            _warn_caller("Degrees of freedom <= 0 for slice")
        if np.any(n == 0):  # where= left a slice empty: NumPy's mean step (kept dims) divides 0 by 0 first
            np.true_divide(np.zeros(1), np.zeros(1))
        res = np.asarray(m2)[()] / np.maximum(np.asarray(n)[()] - ddof, 0)
    if sqrt:
        res = np.sqrt(res)
    return _finish(np.asarray(res).astype(res_dtype, copy=False), x, red, out, keepdims)


def nan_reduce(
    x: Any, which: str, axis: Any, dtype: Any, out: Any, keepdims: bool, initial: Any, where: Any
) -> Any:
    """Streamed ``nansum``, ``nanprod``, ``nanmin``, ``nanmax`` (with NumPy's ``where=``)."""
    if x.dtype.kind not in "fc":  # no NaN possible: the plain reduction
        ufunc = {"nansum": np.add, "nanprod": np.multiply, "nanmin": np.minimum, "nanmax": np.maximum}[which]
        return ufunc_reduce(x, ufunc, axis, dtype, out, keepdims, initial, where)
    where = where_mask(x, where)
    red = _axes(x, axis)
    if x.size == 0 or _count_of(x, red) == 0:
        kw: dict[str, Any] = {"axis": axis, "keepdims": keepdims}
        if dtype is not None:
            kw["dtype"] = dtype
        if initial is not np._NoValue:
            kw["initial"] = initial
        return _numpy_empty_call(getattr(np, which), x, out, where, **kw)
    if which in ("nansum", "nanprod"):
        fill = 0 if which == "nansum" else 1
        ufunc = np.add if which == "nansum" else np.multiply

        def partial(chunk: np.ndarray, red: tuple[int, ...], mask: Any = None) -> tuple[Any, ...]:
            kw = {} if mask is None else {"where": mask, "initial": fill}
            return (
                ufunc.reduce(
                    np.where(np.isnan(chunk), fill, chunk), axis=red, dtype=dtype or chunk.dtype, **kw
                ),
            )

        def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
            return (ufunc(a[0], b[0]),)

        (acc,) = stream(x, red, partial, combine, where=where)
        if initial is not np._NoValue:
            acc = ufunc(acc, initial)
        if which == "nanprod":
            start = 1 if initial is np._NoValue else initial
            acc = _numpy_order_product(x, red, acc, start, where, nan_to_one=True)
        return _finish(acc, x, red, out, keepdims)
    ufunc = np.fmin if which == "nanmin" else np.fmax
    if where is not True and initial is np._NoValue:
        raise _no_identity_error(ufunc)

    def partial2(chunk: np.ndarray, red: tuple[int, ...], mask: Any = None) -> tuple[Any, ...]:
        if mask is None:
            return (ufunc.reduce(chunk, axis=red),)
        return (ufunc.reduce(chunk, axis=red, where=mask, initial=initial),)

    def combine2(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        return (ufunc(a[0], b[0]),)

    (acc,) = stream(x, red, partial2, combine2, where=where)
    if initial is not np._NoValue:
        acc = ufunc(acc, initial)
    if np.any(np.isnan(acc)):
        _warn_caller("All-NaN slice encountered")
    return _finish(acc, x, red, out, keepdims)


def arg_reduce(x: Any, which: str, axis: Any, out: Any, keepdims: bool) -> Any:
    """Streamed ``argmin``/``argmax``: per chunk the local winner and its index, merged keeping NumPy's
    rules (the first occurrence wins a tie; a NaN beats every number, and the first NaN wins)."""
    fn = np.argmin if which == "argmin" else np.argmax
    if axis is not None:
        axis = normalize_axis_index(operator.index(axis), x.ndim)
    if x.size == 0 or (axis is not None and x.shape[axis] == 0):
        return fn(_empty_case(x), axis=axis, out=out, keepdims=keepdims)
    if x.ndim == 0:  # one element: an explicit read of it, not a materialization
        return fn(np.asarray(x[...]), axis=axis, out=out, keepdims=keepdims)
    red = tuple(range(x.ndim)) if axis is None else (axis,)
    chunk_arr = np.asarray(x.chunks, dtype=np.int64)

    def partial(chunk: np.ndarray, red: tuple[int, ...], origin: np.ndarray) -> tuple[Any, ...]:
        if axis is None:
            k = int(fn(chunk))
            local = np.unravel_index(k, chunk.shape)
            glob = int(np.ravel_multi_index(tuple(int(v) for v in np.add(local, origin)), x.shape))
            return (np.asarray(chunk.reshape(-1)[k]), np.asarray(glob, dtype=np.intp))
        k = fn(chunk, axis=axis, keepdims=True)
        vals = np.take_along_axis(chunk, k, axis=axis)
        return (np.squeeze(vals, axis=axis), np.squeeze(k, axis=axis).astype(np.intp) + int(origin[axis]))

    def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        va, ia = (np.asarray(v) for v in a)
        vb, ib = (np.asarray(v) for v in b)
        pick_b = fn(np.stack([va, vb]), axis=0).astype(bool)  # NumPy's own order, NaN rules included
        tie = (va == vb) | (np.isnan(va) & np.isnan(vb)) if va.dtype.kind in "fc" else va == vb
        pick_b = np.where(tie, ib < ia, pick_b)
        return (np.where(pick_b, vb, va), np.where(pick_b, ib, ia))

    x._count("reduce")
    grid = x.nchunks
    total = int(np.prod(grid, dtype=np.int64))
    batch = options._get("batch_chunks")
    kept_shape = tuple(x.shape[d] for d in range(x.ndim) if d not in red)
    acc_v: np.ndarray | None = None
    acc_i: np.ndarray | None = None
    seen: set[tuple[int, ...]] = set()
    for start in range(0, total, batch):
        coords = _grid_batch(grid, start, min(start + batch, total))
        for c, chunk in zip(coords, x._source.get_chunks(coords, store=False), strict=True):
            chunk = np.asarray(chunk)
            origin = c * chunk_arr
            v, i = partial(chunk, red, origin)
            if acc_v is None or acc_i is None:
                acc_v = np.empty(kept_shape, dtype=v.dtype)
                acc_i = np.empty(kept_shape, dtype=np.intp)
            region = tuple(
                slice(int(origin[d]), int(origin[d]) + chunk.shape[d]) for d in range(x.ndim) if d not in red
            )
            key = tuple(int(c[d]) for d in range(x.ndim) if d not in red)
            if key in seen:
                v, i = combine((acc_v[region], acc_i[region]), (v, i))
            else:
                seen.add(key)
            acc_v[region] = v
            acc_i[region] = i
    res = np.asarray(acc_i)
    if keepdims:
        res = res.reshape(tuple(1 if d in red else x.shape[d] for d in range(x.ndim)))
    if out is not None:
        out[...] = res
        return out
    return res[()] if res.ndim == 0 else res


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
