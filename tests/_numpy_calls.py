"""The calls of the differential fuzz against NumPy (issues 12 and 33): reductions with their keyword
arguments, the comparison functions, and chains of NumPy calls, each drawn for an array of
:mod:`_numpy_differential` and run alike on NumPy and on the objects that stand for it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st

from _numpy_differential import DTYPES

# --- reductions ------------------------------------------------------------------------------------------
#: Every reduction and the keyword arguments it takes besides ``axis`` and ``keepdims``.
REDUCTIONS: dict[str, set[str]] = {
    "sum": {"dtype", "initial", "where"},
    "prod": {"dtype", "initial", "where"},
    "min": {"initial", "where"},
    "max": {"initial", "where"},
    "mean": {"dtype", "where"},
    "var": {"dtype", "where", "ddof"},
    "std": {"dtype", "where", "ddof"},
    "any": {"where"},
    "all": {"where"},
    "nansum": {"dtype", "initial", "where"},
    "nanprod": {"dtype", "initial", "where"},
    "nanmin": {"initial", "where"},
    "nanmax": {"initial", "where"},
    "nanmean": {"dtype", "where"},
    "nanvar": {"dtype", "where", "ddof"},
    "nanstd": {"dtype", "where", "ddof"},
    "count_nonzero": set(),
    "argmin": set(),
    "argmax": set(),
}

#: Reductions whose result does not depend on the order of the values beyond rounding, or that keep
#: NumPy's order where it matters (products): these also run on the dtype's extremes. Sums run on values
#: whose sums are exact (their order of additions is a documented difference).
ORDER_FREE = {
    "prod",
    "nanprod",
    "min",
    "max",
    "nanmin",
    "nanmax",
    "any",
    "all",
    "count_nonzero",
    "argmin",
    "argmax",
}

_VARIANCES = {"var", "std", "nanvar", "nanstd"}
_METHODS = {"sum", "prod", "min", "max", "mean", "var", "std", "any", "all", "argmin", "argmax"}
#: Documented differences (docs/lazy-arrays.md): NumPy's float16 ``nanmean`` sums, and its ``var``/``std``
#: sum squared deviations, in float16 (``inf`` past 65504); altarr computes them in float32.
_FLOAT16_IN_FLOAT32 = {"nanmean", *_VARIANCES}


def _float16_may_overflow(data: np.ndarray) -> bool:
    """Whether a float16 sum of ``data``'s values or of their squared deviations can pass 65504."""
    if data.dtype != np.float16:
        return False
    finite = np.abs(data[np.isfinite(data)].astype(np.float64))
    return float(finite.sum()) > 2**14 or finite.size * (2 * float(finite.max(initial=0))) ** 2 > 2**14


#: Documented difference (docs/lazy-arrays.md, "sums add in another order"): where a sum of the values
#: can overflow in one order and not another, NumPy's pairwise order decides between a finite sum, ``inf``
#: and NaN (``inf - inf``); so does the mean inside ``var``/``std`` (a complex one divided by the count is
#: NaN). Their other overflows (the sum of the values in every order, the squared deviations) are NumPy's.
_SUMMING = {"sum", "nansum", "mean", "nanmean"}


def _sum_order_may_overflow(data: np.ndarray, name: str) -> bool:
    """Whether NumPy's order of summing ``data``'s finite values may decide ``name``'s answer: for sums and
    means, where its positive or its negative values alone pass the dtype's range; for real ``var``/``std``,
    where both do (NumPy's sum then may meet ``inf - inf``); for complex ones, where either does."""
    if data.dtype.kind not in "fc" or name not in _SUMMING | _VARIANCES:
        return False
    big = float(np.finfo(data.dtype).max)
    parts = [data.real, data.imag] if data.dtype.kind == "c" else [data]
    over = []
    for part in parts:
        finite = part[np.isfinite(part)].astype(np.float64)
        over += [float(finite[finite > 0].sum()) > big, float(-finite[finite < 0].sum()) > big]
    return all(over) if name in _VARIANCES and data.dtype.kind == "f" else any(over)


def _float16_product_may_pass_range(data: np.ndarray) -> bool:
    """Whether a float16 product of ``data``'s finite non-zero values may over- or underflow on the way
    (documented: NumPy's float16 products round between its inner loops, which depend on the layout)."""
    if data.dtype != np.float16:
        return False
    v = np.abs(data[np.isfinite(data) & (data != 0)].astype(np.float64))
    logs = np.log2(v) if v.size else np.zeros(0)
    return float(logs[logs > 0].sum()) >= 15 or float(logs[logs < 0].sum()) <= -13


_UFUNCS = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}


def _axis(draw, ndim: int, name: str) -> Any:
    if ndim == 0:
        return draw(st.sampled_from([0, -1, 1, (0,)]))
    if name in ("argmin", "argmax") or draw(st.integers(0, 3)) == 0:
        return draw(st.integers(-ndim - 1, ndim))  # one in bounds, sometimes not: AxisError
    axes = draw(st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim + 1))
    return tuple(axes)  # duplicates (ValueError) sometimes


def _where(draw, shape: tuple[int, ...], name: str) -> Any:
    wshape = tuple(s if draw(st.booleans()) else 1 for s in shape)[draw(st.integers(0, len(shape))) :]
    size = int(np.prod(wshape))
    mask = np.asarray(draw(st.lists(st.booleans(), min_size=size, max_size=size)), dtype=bool).reshape(wshape)
    how = draw(st.integers(0, 9))
    if how == 0 and name not in ("mean", "nanmean") and name not in _VARIANCES:
        return mask.astype(int).tolist() if mask.ndim else bool(mask)  # converted by value (not for mean/var)
    if how == 1:
        return mask.astype("i1")  # an array that is not boolean: TypeError
    if how == 2:
        return np.ones(shape[:-1] + (shape[-1] + 1,), bool) if shape else mask  # does not broadcast
    return mask


@st.composite
def reduction_calls(draw, data: np.ndarray):
    """``(name, kwargs, how)``: a reduction of ``data`` with NumPy's keywords (out-of-bounds and repeated
    axes, ``where`` masks that broadcast or not, ``initial`` of other types, NaN among them, ``ddof``,
    ``dtype``), called as ``np.<name>`` (``how="function"``), as a method or as ``np.<ufunc>.reduce``."""
    dt, shape = data.dtype, data.shape
    names = sorted(REDUCTIONS)
    if _float16_may_overflow(data):  # (chains reach such values: nan_to_num of an infinity)
        names = [n for n in names if n not in _FLOAT16_IN_FLOAT32]
    names = [n for n in names if not _sum_order_may_overflow(data, n)]
    if _float16_product_may_pass_range(data):
        names = [n for n in names if n not in ("prod", "nanprod")]
    name = draw(st.sampled_from(names))
    kw: dict[str, Any] = {}
    how = draw(st.sampled_from(["function", "method", "ufunc"]))
    if how == "method" and name not in _METHODS or how == "ufunc" and name not in _UFUNCS:
        how = "function"
    if how == "ufunc" or draw(st.booleans()):
        kw["axis"] = _axis(draw, data.ndim, name)
    if draw(st.booleans()):
        kw["keepdims"] = True
    allowed = REDUCTIONS[name]
    if "where" in allowed and draw(st.integers(0, 2)) == 0:
        kw["where"] = _where(draw, shape, name)
    if "initial" in allowed and draw(st.integers(0, 2)) == 0:
        kw["initial"] = draw(
            st.sampled_from(
                [
                    0,
                    1,
                    -1,
                    2,
                    0.5,
                    float("nan"),
                    float("inf"),
                    np.float64(1),
                    np.int8(3),
                    np.uint8(200),
                    np.float16(2),
                    np.complex64(1),
                ]
            )
        )
    if "ddof" in allowed and draw(st.booleans()):
        kw["ddof"] = draw(st.sampled_from([0, 1, 2, 3, 5, 0.5]))
    if "dtype" in allowed and draw(st.integers(0, 3)) == 0:
        to = np.dtype(draw(st.sampled_from(DTYPES)))
        # documented differences (docs/lazy-arrays.md): var/std in an integer or boolean dtype, and of
        # complex values in a real one
        if not (name in _VARIANCES and (to.kind in "biu" or dt.kind == "c" and to.kind != "c")):
            kw["dtype"] = to
    return name, kw, how


def reduce_call(x: Any, name: str, kw: dict[str, Any], how: str) -> Any:
    """The reduction ``name`` of ``x`` called as ``how`` says."""
    if how == "method":
        return getattr(x, name)(**kw)
    if how == "ufunc":
        return _UFUNCS[name].reduce(x, **kw)
    return getattr(np, name)(x, **kw)


# --- comparison functions --------------------------------------------------------------------------------
@st.composite
def comparison_calls(draw, data: np.ndarray):
    """``(function, other, swap)``: ``np.array_equal`` and friends of ``data`` and an array that differs
    from it in one value, in shape, in NaNs, in a rounding, or not at all (a scalar, a row, a list)."""
    other = data.copy()
    change = draw(st.sampled_from(["same", "one", "shape", "scalar", "row", "nan", "tiny", "list"]))
    if change == "one" and data.size:
        flat = other.reshape(-1)
        i = draw(st.integers(0, data.size - 1))
        flat[i] = (not flat[i]) if data.dtype.kind == "b" else flat[i] + 1
    elif change == "shape":
        other = np.zeros(data.shape + (1,), data.dtype)
    elif change == "scalar":
        other = data.reshape(-1)[0] if data.size else np.zeros((), data.dtype)
    elif change == "row" and data.ndim:
        other = data[(0,) * (data.ndim - 1)] if data.shape[0] and all(data.shape) else data
    elif change == "nan" and data.dtype.kind in "fc" and data.size:
        other.reshape(-1)[draw(st.integers(0, data.size - 1))] = np.nan
    elif change == "tiny" and data.dtype.kind in "fc":
        other = other + other.dtype.type(1e-9)
    elif change == "list":
        other = data.tolist()
    func = draw(
        st.sampled_from(
            ["array_equal", "array_equal_nan", "array_equiv", "allclose", "allclose_nan", "isclose"]
        )
    )
    return func, other, draw(st.booleans())


def compare_call(func: str, a: Any, other: Any, swap: bool) -> Any:
    fn = getattr(np, func.removesuffix("_nan"))
    kw = {"equal_nan": True} if func.endswith("_nan") else {}
    return fn(other, a, **kw) if swap else fn(a, other, **kw)


# --- chained NumPy calls ---------------------------------------------------------------------------------
_SCALARS = [
    1,
    2,
    -1,
    0.5,
    2.0,
    True,
    1j,
    np.float32(2),
    np.int8(3),
    np.uint8(7),
    np.float16(0.5),
    np.complex64(1j),
]


def _shapes_like(draw, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape of the same size: axes merged, split into factors, or with axes of length 1 added."""
    size = int(np.prod(shape))
    how = draw(st.integers(0, 3))
    if how == 0:
        return (size,)
    if how == 1:
        return tuple(n for n in shape if n != 1) + (1,)
    if how == 2:
        return (1,) + shape
    if size and size % 2 == 0:
        return (2, size // 2)
    return (-1,)


def chain_step(draw, shape: tuple[int, ...], dt: np.dtype) -> tuple[str, Callable[[Any], Any], bool]:
    """One NumPy call applied to both sides: ``(description, function, stays_lazy)`` (``stays_lazy``: a
    lazy operand gives a lazy result)."""
    ndim = len(shape)
    options = [
        "astype",
        "scalar_op",
        "compare",
        "unary",
        "power",
        "where",
        "stack",
        "self_op",
        "clip",
        "round",
        "reshape",
        "nan_to_num",
    ]
    if ndim >= 1:
        options += ["T", "transpose", "moveaxis", "concatenate", "ravel"]
    if ndim >= 2:
        options += ["swapaxes"]
    op = draw(st.sampled_from(options))
    if op == "T":
        return "x.T", lambda v: v.T, True
    if op == "transpose":
        perm = draw(st.permutations(range(ndim)))
        return f"np.transpose(x, {perm})", lambda v: np.transpose(v, perm), True
    if op == "swapaxes":
        a, b = draw(st.integers(-ndim, ndim - 1)), draw(st.integers(-ndim, ndim - 1))
        return f"x.swapaxes({a}, {b})", lambda v: v.swapaxes(a, b), True
    if op == "moveaxis":
        a, b = draw(st.integers(0, ndim - 1)), draw(st.integers(-ndim, ndim - 1))
        return f"np.moveaxis(x, {a}, {b})", lambda v: np.moveaxis(v, a, b), True
    if op == "astype":
        to = np.dtype(draw(st.sampled_from(DTYPES)))
        if dt.kind in "fc" and to.kind in "biu":
            to = np.dtype("f4")  # NaN or inf into integers: the value is the platform's (NumPy warns)
        if dt.kind == "c" and to.kind == "f":
            to = np.dtype("c8")
        return f"x.astype({to})", lambda v: v.astype(to), True
    if op == "scalar_op":
        k = draw(st.sampled_from(_SCALARS))
        name = draw(st.sampled_from(["add", "subtract", "multiply", "true_divide", "maximum"]))
        swap = draw(st.booleans())
        f = getattr(np, name)
        return (
            f"np.{name}({'k, x' if swap else 'x, k'}) k={k!r}",
            (lambda v: f(k, v)) if swap else (lambda v: f(v, k)),
            True,
        )
    if op == "compare":
        k = draw(st.sampled_from([0, 1, 0.5, np.float16(1), np.int8(-1)]))
        f = draw(st.sampled_from([np.greater, np.equal, np.not_equal, np.less_equal]))
        return f"np.{f.__name__}(x, {k!r})", lambda v: f(v, k), True
    if op == "unary":
        f = draw(
            st.sampled_from(
                [
                    np.abs,
                    np.negative,
                    np.isnan,
                    np.isfinite,
                    np.sqrt,
                    np.square,
                    np.sign,
                    np.logical_not,
                    np.conjugate,
                ]
            )
        )
        return f"np.{f.__name__}(x)", f, True
    if op == "power":
        e = draw(st.sampled_from([2, 0.5, -1, 3, 2.0, np.int64(2), True, 0]))
        if dt.kind in "biu" and not isinstance(e, float) and e == -1:
            e = 3  # integers to a negative power raise in NumPy when called, lazily when read (documented)
        return f"x ** {e!r}", lambda v: v**e, True
    if op == "where":
        return "np.where(x > 0, x, 0)", lambda v: np.where(v > 0, v, 0), True
    if op == "stack":
        axis = draw(st.integers(0, ndim))
        return f"np.stack([x, x], {axis})", lambda v: np.stack([v, v], axis), True
    if op == "concatenate":
        axis = draw(st.integers(0, ndim - 1))
        return f"np.concatenate([x, x], {axis})", lambda v: np.concatenate([v, v], axis), False
    if op == "self_op":
        f = draw(st.sampled_from([np.add, np.multiply, np.equal]))
        return f"np.{f.__name__}(x, x)", lambda v: f(v, v), True
    if op == "clip":
        return "np.clip(x, 0, 1)", lambda v: np.clip(v, 0, 1), True
    if op == "round":
        return "np.round(x, 1)", lambda v: np.round(v, 1), True
    if op == "nan_to_num":
        return "np.nan_to_num(x)", np.nan_to_num, True
    if op == "reshape":
        new = _shapes_like(draw, shape)
        return f"x.reshape({new})", lambda v: v.reshape(new), False
    return "x.ravel()", lambda v: v.ravel(), False


#: The last call of a chain besides reductions, index reads and comparison functions: conversions
#: to NumPy and Python values.
CONVERSIONS: dict[str, Callable[[Any], Any]] = {
    "np.asarray": np.asarray,
    "tolist": lambda v: v.tolist(),
    "float": float,
    "int": int,
    "complex": complex,
    "bool": bool,
    "operator.index": operator.index,
    "len": len,
    "list": list,
    "item": lambda v: v.item(),
    "item(0)": lambda v: v.item(0),
    "contains": lambda v: 0 in v,
}
