"""Streamed ufunc reductions: ``sum``, ``prod``, ``min``, ``max``, ``any``, ``all``, ``count_nonzero``, the
``nan*`` sums, products and extremes, and ``np.<ufunc>.reduce`` of a reorderable ufunc, whole-array or
along any axes, with NumPy's ``dtype``, ``keepdims``, ``out``, ``initial`` and ``where`` (docs/lazy-arrays.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import products
from .elementwise import make_elementwise
from .moments import mean, var
from .positions import arg_reduce, nonzero
from .streaming import (
    finish,
    numpy_empty_call,
    stream,
    ufunc_axes,
    warn_caller,
    where_and_axes,
)

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
    """Streamed ``ufunc.reduce`` for a reorderable ufunc, with NumPy's ``where=`` and ``initial=``."""
    where, red = where_and_axes(x, where, axis)
    if x.size == 0 or any(x.shape[d] == 0 for d in red):
        kw = {"axis": axis, "dtype": dtype, "keepdims": keepdims, "initial": initial}
        return numpy_empty_call(ufunc.reduce, x, out, where, **kw)
    if where is not True and ufunc.identity is None and initial is np._NoValue:
        raise ValueError(
            f"reduction operation '{ufunc.__name__}' does not have an identity, so to use a where mask one "
            "has to specify 'initial'"
        )
    init = None
    if initial is not np._NoValue:  # NumPy's conversion, to the reduction's dtype (it may raise)
        init = ufunc.reduce(np.zeros((0,), dtype=x.dtype), dtype=dtype, initial=initial)
    # a masked partial starts from the identity (or, for min/max, the idempotent initial)
    start = ufunc.identity if ufunc.identity is not None else initial
    red_dtype = np.dtype(dtype) if dtype is not None else ufunc.reduce(np.zeros((1,), dtype=x.dtype)).dtype
    ordered = ufunc is np.multiply and red_dtype.kind in "fc"  # products whose order may matter

    def partial(chunk: np.ndarray, red: tuple[int, ...], mask: Any, _: Any) -> tuple[Any, ...]:
        kw = {} if mask is None else {"where": mask, "initial": start}
        part = (_object_kept(ufunc.reduce(chunk, axis=red, dtype=dtype, **kw)),)
        if not ordered:
            return part
        with np.errstate(all="ignore"):
            factors = chunk.astype(red_dtype, copy=False)
        return part + products.evidence(factors, red, mask)

    def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        head = ufunc(a[0], b[0], dtype=dtype) if dtype is not None else ufunc(a[0], b[0])
        return (head, *(p + q for p, q in zip(a[1:], b[1:], strict=True)))

    acc, *ev = stream(x, red, partial, combine, where=where)
    if init is not None:
        acc = _object_kept(ufunc(acc, init, dtype=acc.dtype))
    if ordered:
        first = np.asarray(1 if init is None else init, dtype=acc.dtype)
        if init is not None:
            ev = [p + q for p, q in zip(ev, products.evidence(first, ()), strict=True)]
        sensitive = products.order_sensitive(tuple(ev), acc.dtype)
        if np.any(sensitive):
            acc = products.in_numpy_order(x, red, np.asarray(acc), sensitive, first[()], where)
    return finish(acc, x, red, out, keepdims)


def any_all(x: Any, which: str, axis: Any, out: Any, keepdims: bool, where: Any) -> Any:
    """Streamed ``any``/``all`` with early exit (and NumPy's ``where=``)."""
    where, red = where_and_axes(x, where, axis)
    fn = np.any if which == "any" else np.all
    if x.size == 0:
        kw: dict[str, Any] = {} if where is True else {"where": np.asarray(where)}
        res = fn(np.empty(x.shape, x.dtype), axis=axis, **kw)
        return finish(res, x, red, out, keepdims)

    def partial(chunk: np.ndarray, red: tuple[int, ...], mask: Any, _: Any) -> tuple[Any, ...]:
        return (fn(chunk, axis=red) if mask is None else fn(chunk, axis=red, where=mask),)

    merge = np.logical_or if which == "any" else np.logical_and

    def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        return (merge(a[0], b[0]),)

    def early(acc: list[np.ndarray]) -> bool:  # any: every element True; all: none True
        return bool(acc[0].all()) if which == "any" else not bool(acc[0].any())

    (acc,) = stream(x, red, partial, combine, early, where=where)
    return finish(acc, x, red, out, keepdims)


def _replace_nan(values: np.ndarray, value: Any) -> np.ndarray:
    """NumPy's ``_replace_nan`` of ``nansum``/``nanprod``: the NaNs of ``values`` replaced by ``value``."""
    return np.where(np.isnan(values), value, values)


def nan_reduce(
    x: Any,
    which: str,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = np._NoValue,
    where: Any = True,
) -> Any:
    """Streamed ``nansum``, ``nanprod``, ``nanmin``, ``nanmax``, as NumPy defines them: ``np.sum`` /
    ``np.prod`` of the array with its NaNs replaced by 0 / 1 (a lazy elementwise array), and
    ``np.fmin.reduce`` / ``np.fmax.reduce`` with NumPy's warning for a slice of NaNs only."""
    if which in ("nansum", "nanprod"):
        ufunc, fill = (np.add, 0) if which == "nansum" else (np.multiply, 1)
        src = make_elementwise(_replace_nan, (x, fill), {}) if x.dtype.kind in "fc" else x
        return ufunc_reduce(src, ufunc, axis, dtype, out, keepdims, initial, where)
    res = ufunc_reduce(
        x, np.fmin if which == "nanmin" else np.fmax, axis, None, out, keepdims, initial, where
    )
    if np.isnan(res).any():
        warn_caller("All-NaN slice encountered")
    return res


def count_nonzero(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Streamed ``np.count_nonzero``."""
    red = ufunc_axes(x, axis)
    if x.size == 0:
        return np.count_nonzero(np.empty(x.shape, x.dtype), axis=axis, keepdims=keepdims)

    def partial(chunk: np.ndarray, red: tuple[int, ...], *_: Any) -> tuple[Any, ...]:
        return (np.asarray(np.count_nonzero(chunk, axis=red), dtype=np.intp),)

    def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        return (a[0] + b[0],)

    (acc,) = stream(x, red, partial, combine)
    return finish(acc, x, red, None, keepdims)
