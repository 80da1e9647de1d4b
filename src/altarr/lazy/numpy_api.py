"""NumPy protocol dispatch for lazy arrays: ``__array_ufunc__`` (NEP 13) and ``__array_function__``
(NEP 18). How each NumPy function is handled (streamed, lazy, materialized, refused): docs/lazy-arrays.md.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from ..errors import ReadOnlyError
from . import reduce, views
from .compare import allclose, array_equal, array_equiv
from .elementwise import make_elementwise
from .geometry import is_lazy

__all__ = ["array_ufunc", "array_function", "power", "HANDLED_FUNCTIONS"]

HANDLED_FUNCTIONS: dict[Any, Callable[..., Any]] = {}

#: ``"streamed"``, ``"lazy"`` or ``"refused"`` by function name (every other is ``"materialized"``); the
#: table in docs/lazy-arrays.md is checked against this one by a test.
FUNCTION_KINDS: dict[str, str] = {}

_NoValue = np._NoValue


def _foreign(v: Any) -> bool:
    """An object of another array library that handles NumPy protocols itself."""
    if is_lazy(v) or isinstance(v, np.ndarray | np.generic):
        return False
    return hasattr(type(v), "__array_ufunc__") and type(v).__array_ufunc__ is not None


def _to_numpy(v: Any) -> Any:
    if is_lazy(v):
        return v._materialize()
    if isinstance(v, list | tuple):
        return type(v)(_to_numpy(e) for e in v)
    return v


#: NumPy's casting rules (``np.can_cast``'s ``casting``).
_Casting = Literal["no", "equiv", "safe", "same_kind", "same_value", "unsafe"]

_LAZY_UFUNC_KWARGS = {"dtype", "casting", "signature", "order", "subok"}


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``LazyArray.__array_ufunc__``."""
    out = kwargs.get("out") or ()
    if any(_foreign(v) for v in inputs + tuple(out)):
        return NotImplemented
    if any(is_lazy(o) for o in out):
        raise ReadOnlyError("lazy arrays are read-only; they cannot be a ufunc's out=")
    if method == "__call__" and ufunc.signature is None and not out and kwargs.get("where", True) is True:
        kw = {k: v for k, v in kwargs.items() if k != "where"}
        if set(kw) <= _LAZY_UFUNC_KWARGS:
            kw.pop("order", None)
            kw.pop("subok", None)
            res = make_elementwise(ufunc, inputs, kw, nout=ufunc.nout)
            if res is not None:
                return res
    elif (
        method == "reduce"
        and ufunc in reduce.REORDERABLE
        and len(inputs) == 1
        and is_lazy(inputs[0])
        and set(kwargs) <= {"axis", "dtype", "out", "keepdims", "initial", "where"}
    ):
        return reduce.ufunc_reduce(inputs[0], ufunc, **{**kwargs, "out": out[0] if out else None})
    converted = tuple(_to_numpy(v) for v in inputs)
    kw = {k: _to_numpy(v) for k, v in kwargs.items()}
    return getattr(ufunc, method)(*converted, **kw)


def power(base: Any, exponent: Any) -> Any:
    """``base ** exponent`` as ``ndarray.__pow__`` computes it, with NumPy's fast paths for the Python
    numbers ``2``, ``-1`` and ``0.5`` (docs/lazy-arrays.md, "Lazy elementwise computation")."""
    fast: np.ufunc | None = None
    if type(exponent) is int and exponent in (2, -1):
        fast = np.square if exponent == 2 else np.reciprocal
    elif type(exponent) is float and exponent == 0.5:
        fast = np.sqrt
    if fast is None or (fast is not np.square and base.dtype.kind not in "fc"):
        return np.power(base, exponent)
    return fast(base)


def array_function(func: Any, types: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``LazyArray.__array_function__``."""
    for t in types:
        if not (getattr(t, "_is_lazy_array", False) or issubclass(t, np.ndarray)):
            return NotImplemented
    impl = HANDLED_FUNCTIONS.get(func)
    if impl is not None:
        res = impl(*args, **kwargs)
        if res is not NotImplemented:
            return res
    implementation = getattr(func, "_implementation", None)
    if implementation is not None:
        # NumPy's own code: it reaches our methods where it uses them, else __array__ (guarded).
        return implementation(*args, **kwargs)
    return func(*_to_numpy(args), **{k: _to_numpy(v) for k, v in kwargs.items()})


def _or_ni(res: Any) -> Any:
    # never `res or NotImplemented`: bool() of a lazy array would materialize it
    return NotImplemented if res is None else res


def _implements(*funcs: Any, kind: str = "streamed") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(impl: Callable[..., Any]) -> Callable[..., Any]:
        for f in funcs:
            if f is not None:
                HANDLED_FUNCTIONS[f] = impl
                FUNCTION_KINDS[f.__name__] = kind
        return impl

    return deco


# --- reductions ----------------------------------------------------------------------------------------
def _delegate(func: Any, run: Callable[..., Any], kind: str = "streamed") -> None:
    """Handle NumPy's ``func`` by ``run(a, **given)``: the arguments bound by name as NumPy's signature
    binds them (those not given left out); ``NotImplemented`` when ``a`` is not lazy."""
    signature = inspect.signature(func)

    def impl(*args: Any, **kwargs: Any) -> Any:
        given = signature.bind(*args, **kwargs).arguments
        a = given.pop("a")
        return run(a, **given) if is_lazy(a) else NotImplemented

    _implements(func, kind=kind)(impl)


def _method(name: str) -> Callable[..., Any]:
    return lambda a, **given: getattr(a, name)(**given)


_REDUCTIONS = ("sum", "prod", "min", "max", "any", "all", "mean", "var", "std", "argmin", "argmax")
for _name in (*_REDUCTIONS, "count_nonzero", "nonzero", "amin", "amax"):
    _delegate(getattr(np, _name), _method({"amin": "min", "amax": "max"}.get(_name, _name)))
for _name in ("nansum", "nanprod", "nanmin", "nanmax"):
    _delegate(getattr(np, _name), lambda a, _which=_name, **given: reduce.nan_reduce(a, _which, **given))
_delegate(np.nanmean, lambda a, **given: reduce.mean(a, **given, nan=True))
for _name, _sqrt in (("nanvar", False), ("nanstd", True)):
    _delegate(
        getattr(np, _name), lambda a, _sqrt=_sqrt, **given: reduce.var(a, **given, nan=True, sqrt=_sqrt)
    )


def _positions(func: Any, of_nonzero: Callable[[tuple[np.ndarray, ...], tuple[int, ...]], Any]) -> None:
    """Handle ``func`` (``np.flatnonzero``, ``np.argwhere``) from the streamed ``nonzero``."""

    def impl(a: Any) -> Any:
        if not is_lazy(a):
            return NotImplemented
        if a.ndim == 0:  # its one value, read as an element (no materialization)
            return func(np.asarray(a[()]))
        return of_nonzero(reduce.nonzero(a), a.shape)

    _implements(func)(impl)


_positions(np.flatnonzero, lambda idx, shape: np.ravel_multi_index(idx, shape).astype(np.intp))
_positions(np.argwhere, lambda idx, shape: np.stack(idx, axis=1))


# --- elementwise functions -----------------------------------------------------------------------------
@_implements(np.where, kind="lazy")
def _where(condition: Any, *xy: Any) -> Any:
    if not xy:
        return reduce.nonzero(condition) if is_lazy(condition) else NotImplemented
    if len(xy) != 2:
        return NotImplemented
    return _or_ni(make_elementwise(np.where, (condition, *xy), {}))


@_implements(np.clip, kind="lazy")
def _clip(a: Any, a_min: Any = _NoValue, a_max: Any = _NoValue, out: Any = None, **kwargs: Any) -> Any:
    lo = kwargs.pop("min", _NoValue) if a_min is _NoValue else a_min
    hi = kwargs.pop("max", _NoValue) if a_max is _NoValue else a_max
    lo = None if lo is _NoValue else lo
    hi = None if hi is _NoValue else hi
    if out is not None or kwargs:
        return NotImplemented
    return _or_ni(make_elementwise(np.clip, (a, lo, hi), {}))


def _elementwise(func: Any, operands: int = 1) -> None:
    """Handle ``func`` lazily: its first ``operands`` parameters are the arrays, the others (but ``copy``)
    its keywords; with ``out=``, NumPy's own call."""
    signature = inspect.signature(func)
    names = list(signature.parameters)[:operands]

    def impl(*args: Any, **kwargs: Any) -> Any:
        given = signature.bind(*args, **kwargs).arguments
        given.pop("copy", None)
        if given.pop("out", None) is not None:
            return NotImplemented
        return _or_ni(make_elementwise(func, tuple(given.pop(n) for n in names), given))

    _implements(func, kind="lazy")(impl)


for _func in (np.round, np.around, np.nan_to_num, np.real, np.imag):
    _elementwise(_func)
_elementwise(np.isclose, 2)


if hasattr(np, "astype"):

    @_implements(np.astype, kind="lazy")
    def _astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
        return x.astype(dtype) if is_lazy(x) else NotImplemented


# --- comparisons NumPy computes inside try/except (streamed, so nothing is swallowed) -------------------
for _cmp, _impl in ((np.array_equal, array_equal), (np.array_equiv, array_equiv), (np.allclose, allclose)):
    _implements(_cmp)(_impl)


# --- views and joins (lazy) ----------------------------------------------------------------------------
# NumPy's own code of these calls the lazy array's methods (array_function runs it): lazy, no handler
for _view in (np.transpose, np.moveaxis, np.reshape, np.swapaxes):
    FUNCTION_KINDS[_view.__name__] = "lazy"
_delegate(np.ravel, _method("ravel"), kind="lazy")


def _join(which: str) -> None:
    """Handle ``np.concatenate``/``np.stack`` of lazy arrays of one chunk grid lazily (``views``)."""

    def impl(
        arrays: Any, axis: Any = 0, out: Any = None, *, dtype: Any = None, casting: _Casting = "same_kind"
    ) -> Any:
        arrays = list(arrays) if isinstance(arrays, list | tuple) else None
        if arrays is None or out is not None or not arrays or not all(is_lazy(a) for a in arrays):
            return NotImplemented
        if which == "concatenate" and axis is None:
            return NotImplemented
        dt = np.result_type(*[a.dtype for a in arrays]) if dtype is None else np.dtype(dtype)
        if any(not np.can_cast(a.dtype, dt, casting=casting) for a in arrays):
            return NotImplemented  # NumPy's implementation raises its own error
        same = [a if a.dtype == dt else a.astype(dt) for a in arrays]
        res = getattr(views, which)(same, axis)
        return NotImplemented if res is None else res

    _implements(getattr(np, which), kind="lazy")(impl)


_join("concatenate")
_join("stack")


# --- functions that write into their argument: refused on a lazy target --------------------------------
def _refuse_write(name: str) -> Callable[..., Any]:
    def impl(target: Any, *args: Any, **kwargs: Any) -> Any:
        if is_lazy(target):
            raise ReadOnlyError(f"lazy arrays are read-only: np.{name} cannot write into one")
        return NotImplemented

    return impl


for _f in (np.copyto, np.put, np.place, np.putmask, np.fill_diagonal, np.put_along_axis):
    _implements(_f, kind="refused")(_refuse_write(_f.__name__))
