"""Streamed ``mean``, ``var`` and ``std`` (and their ``nan*`` variants): sums and counts, and Chan et al.'s
pairwise merge of ``(count, mean, M2)`` (docs/lazy-arrays.md, "Reductions stream").
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np

from ..errors import UnsupportedError
from .streaming import (
    axes,
    count_of,
    finish,
    numpy_empty_call,
    stream,
    ufunc_axes,
    warn_caller,
    where_and_axes,
    where_mask,
)

__all__ = ["mean", "var"]


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


def _moment_axes(x: Any, axis: Any, nan: bool, where: Any) -> tuple[int, ...]:
    """The reduced axes. NumPy counts the elements of ``mean``/``var`` with a ufunc reduction when ``where``
    is given (anything but ``True`` itself) and its ``nan*`` moments of inexact values sum with them: those
    let an axis of 0 or -1 through for a 0-d array, the plain count does not."""
    if where is not True or (nan and x.dtype.kind in "fc"):
        return ufunc_axes(x, axis)
    return axes(x, axis)


def _prepare(
    x: Any, axis: Any, dtype: Any, where: Any, nan: bool, numpy_fn: Any, probe: int
) -> tuple[Any, tuple[int, ...], np.dtype]:
    """``(where mask, reduced axes, result dtype)``, with NumPy's errors in NumPy's order: its ``nan*``
    moments of inexact values refuse a ``dtype``, then go on as ufunc reductions
    (:func:`~altarr.lazy.streaming.where_and_axes`); ``mean`` and ``var`` count the elements first
    (``where`` broadcast, then the axes checked) and hold ``where`` to the boolean cast after. The result
    dtype is NumPy's own on ``probe`` ones."""
    if nan and x.dtype.kind in "fc":
        res_dtype = numpy_fn(np.ones((probe,), x.dtype), dtype=dtype).dtype
        mask, red = where_and_axes(x, where, axis)
        return mask, red, res_dtype
    if where is not True:  # the count's broadcast of the mask: NumPy's ValueError before the axes
        np.broadcast_to(np.empty(np.shape(where), dtype=[]), x.shape)
    red = _moment_axes(x, axis, nan, where)
    mask = where_mask(x, where)
    return mask, red, numpy_fn(np.ones((probe,), x.dtype), dtype=dtype).dtype


def mean(
    x: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    where: Any = True,
    *,
    nan: bool,
) -> Any:
    """Streamed ``mean`` / ``nanmean`` (with NumPy's ``where=``)."""
    numpy_fn = np.nanmean if nan else np.mean
    where, red, res_dtype = _prepare(x, axis, dtype, where, nan, numpy_fn, 1)
    if x.size == 0 or count_of(x, red) == 0:  # nothing to read: NumPy's own answer (and warning)
        return numpy_empty_call(numpy_fn, x, out, where, axis=axis, dtype=dtype, keepdims=keepdims)
    calc = _float_calc_dtype(x.dtype, dtype)
    sum_dtype = None if calc.kind == "m" else calc  # timedelta64 sums in its own unit, as NumPy's mean
    nan_capable = nan and x.dtype.kind in "fc"
    counted = nan_capable or where is not True

    def partial(chunk: np.ndarray, red: tuple[int, ...], mask: Any, _: Any) -> tuple[Any, ...]:
        valid = mask
        if nan_capable:
            valid = ~np.isnan(chunk) if valid is None else valid & ~np.isnan(chunk)
        if valid is not None:
            return (np.sum(chunk, axis=red, dtype=sum_dtype, where=valid), np.sum(valid, axis=red))
        return (np.sum(chunk, axis=red, dtype=sum_dtype),)

    def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(np.add(p, q) for p, q in zip(a, b, strict=True))

    acc = stream(x, red, partial, combine, where=where)
    count = acc[1] if counted else count_of(x, red)
    if counted and np.any(np.asarray(count) == 0):
        warn_caller("Mean of empty slice")
    # np.nanmean divides quietly; np.mean (and nanmean of a type without NaN) warns "invalid value" for
    # the 0/0 of a slice that where= leaves empty, under the caller's errstate (0-d accumulators divide
    # as NumPy scalars, as NumPy's whole-array mean does: "invalid value encountered in scalar divide")
    with np.errstate(invalid="ignore", divide="ignore") if nan_capable else contextlib.nullcontext():
        res = np.asarray(acc[0])[()] / np.asarray(count)[()]
    return finish(np.asarray(res).astype(res_dtype, copy=False), x, red, out, keepdims)


def _resolve_ddof(ddof: Any, correction: Any) -> Any:
    if correction is not np._NoValue:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        return correction
    return ddof


def var(
    x: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: Any = 0,
    keepdims: bool = False,
    where: Any = True,
    mean: Any = np._NoValue,
    correction: Any = np._NoValue,
    *,
    nan: bool,
    sqrt: bool,
) -> Any:
    """Streamed ``var``/``std`` (and ``nanvar``/``nanstd``): Chan et al. merge of (count, mean, M2).

    Degrees of freedom as NumPy: ``var``/``std`` divide by ``max(n - ddof, 0)`` (so ``inf`` or ``nan``
    where ``ddof >= n``), ``nanvar``/``nanstd`` give ``nan`` there; both warn.
    """
    if mean is not np._NoValue:
        raise UnsupportedError("lazy var/std do not support mean=; it is computed while streaming")
    ddof = _resolve_ddof(ddof, correction)
    numpy_fn = (np.nanstd if sqrt else np.nanvar) if nan else (np.std if sqrt else np.var)
    where, red, res_dtype = _prepare(x, axis, dtype, where, nan, numpy_fn, 2)
    if x.size == 0 or count_of(x, red) == 0:  # nothing to read: NumPy's own answer (and warning)
        return numpy_empty_call(numpy_fn, x, out, where, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
    calc = _float_calc_dtype(x.dtype, dtype)
    if calc.kind in "biu":  # an integer or boolean dtype=: computed in float64, the result cast to it
        calc = np.dtype(np.float64)
    # complex deviations only from complex data in a complex dtype: NumPy squares real data's deviations
    # (d * d) even in a complex dtype (an inf gives nan+nanj). Complex data in a real dtype: altarr drops
    # the imaginary parts; NumPy's var(real) + mean(imag**2) there is not followed (docs/lazy-arrays.md)
    complex_ = calc.kind == "c" and x.dtype.kind == "c"
    nan_capable = nan and x.dtype.kind in "fc"
    partial, combine = _moment_merge(calc, complex_, nan_capable)
    n, m, m2 = stream(x, red, partial, combine, where=where)
    m2 = _overflow_as_numpy(calc, n, m, m2)
    if res_dtype.kind == "c":  # NumPy sums the squared magnitudes in a complex dtype= and divides there:
        m2 = np.asarray(m2).astype(calc, copy=False)  # no dof gives inf+nanj / nan+nanj, as its sqrt
    res = _divide_by_dof(n, m2, ddof, nan_capable)
    if sqrt:
        res = np.sqrt(res)
    return finish(np.asarray(res).astype(res_dtype, copy=False), x, red, out, keepdims)


def _moment_merge(calc: np.dtype, complex_: bool, nan_capable: bool) -> tuple[Any, Any]:
    """``(partial, combine)`` of :func:`~altarr.lazy.streaming.stream` for ``(count, mean, M2)`` computed in
    ``calc``: a chunk's moments, and Chan et al.'s pairwise merge of two (``complex_``: squared magnitudes
    of complex deviations; ``nan_capable``: NaNs not counted)."""

    def sq(d: np.ndarray) -> np.ndarray:
        squared: np.ndarray = (d * np.conj(d)).real if complex_ else d * d
        return squared

    wide = np.result_type(calc, np.float64) if calc.kind in "fc" else None  # float32 sums cannot overflow

    def mean_of(c: np.ndarray, red: tuple[int, ...], n: np.ndarray, valid: Any) -> Any:
        kw: dict[str, Any] = {"axis": red, "keepdims": True, "dtype": wide}
        if valid is not None:
            kw["where"] = valid
        with np.errstate(invalid="ignore", divide="ignore"):
            m = np.sum(c, **kw) / n
            if not np.isfinite(m).all():  # float64 values whose sum overflows (their mean does not):
                s = 0.5 ** math.ceil(math.log2(c.size))  # summed scaled by a power of two, exact
                m = np.where(np.isfinite(m), m, np.sum(c * s, **kw) / (n * s))
        return m

    def partial(chunk: np.ndarray, red: tuple[int, ...], mask: Any, _: Any) -> tuple[Any, ...]:
        c = chunk.astype(calc, copy=False)
        valid = mask
        if nan_capable:
            valid = ~np.isnan(c) if valid is None else valid & ~np.isnan(c)
        if valid is not None:
            n = np.sum(valid, axis=red, keepdims=True).astype(np.float64)
            m = np.where(n > 0, mean_of(c, red, n, valid), 0)
            m2 = np.sum(sq(c - m), axis=red, where=valid)
        else:
            n = np.full((1,) * c.ndim, float(np.prod([c.shape[d] for d in red])))
            m = mean_of(c, red, n, None)
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
        with np.errstate(invalid="ignore"):  # where delta overflows, the mean does not: weigh the two
            m = np.where(np.isinf(delta) & np.isfinite(ma), ma * (1 - w) + mb * w, ma + delta * w)
        with np.errstate(over="ignore", invalid="ignore"):  # delta squared alone may overflow
            d2 = sq(delta) * na * w
            d2 = np.where(np.isinf(d2) & np.isfinite(delta), sq(delta * np.sqrt(na * w)), d2)
        q = qa + qb + d2
        return (n, m, q)

    return partial, combine


def _overflow_as_numpy(calc: np.dtype, n: Any, m: Any, m2: Any) -> Any:
    """``m2`` where NumPy's var overflows: it sums the values (for the mean) and the squared deviations in
    ``calc``, so where the sum of the squares passes that dtype's range its variance is ``inf``, and so it
    is where the sum of the values does (a complex one, divided by the count, is NaN). altarr merges
    float32 moments in float64: without this its answer there would be finite, or depend on the chunks.
    A NaN (from an infinity among the values) stays NaN."""
    if calc.kind not in "fc":
        return m2
    with np.errstate(over="ignore", invalid="ignore"):
        over_sum = np.isinf(np.asarray(n * m).astype(calc))
        over = over_sum | np.isinf(np.asarray(m2).astype(calc))
    if not over.any():
        return m2
    res = np.where(over & ~np.isnan(m2), np.inf, m2)
    res = np.where(over_sum, np.nan, res) if calc.kind == "c" else res
    return res if isinstance(m2, np.ndarray) else res[()]


def _divide_by_dof(n: Any, m2: Any, ddof: Any, nan_capable: bool) -> Any:
    """The variance ``m2 / (n - ddof)`` with NumPy's degrees of freedom and warnings: ``nanvar`` gives
    ``nan`` where they are not positive, ``var`` divides by ``max(n - ddof, 0)``."""
    if nan_capable:  # NumPy's nanvar: nan where the degrees of freedom are not positive
        if np.any(ddof >= n):
            warn_caller("Degrees of freedom <= 0 for slice.")
        dof = n - ddof
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(dof > 0, m2 / np.where(dof > 0, dof, 1), np.nan)
    # NumPy's var words it without the period, and its division by 0 then warns under the caller's
    # errstate ("divide by zero" or, for 0/0, "invalid value"; "in scalar divide" for the whole array)
    if np.any(ddof >= n):
        warn_caller("Degrees of freedom <= 0 for slice")
    if np.any(n == 0):  # where= left a slice empty: NumPy's mean step (kept dims) divides 0 by 0 first
        np.true_divide(np.zeros(1), np.zeros(1))
    return np.asarray(m2)[()] / np.maximum(np.asarray(n)[()] - ddof, 0)
