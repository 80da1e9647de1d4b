"""Lazy elementwise computation: ufuncs, operators and ``np.where``-like functions over lazy arrays of one
shape and chunk grid give lazy arrays whose source is an :class:`ElementwiseSource` (docs/lazy-arrays.md).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .geometry import VALUE_KINDS, is_lazy
from .streaming import chunk_regions

if TYPE_CHECKING:
    from .array import LazyArray

__all__ = ["ElementwiseSource", "make_elementwise", "cast"]


def _name(func: Any) -> str:
    return getattr(func, "__name__", None) or type(func).__name__


class ElementwiseSource:
    """The source of a lazy elementwise expression: ``func(*args, **kwargs)`` applied chunk by chunk."""

    def __init__(
        self,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        out_index: int | None,
        shape: tuple[int, ...],
        chunks: tuple[int, ...],
        dtype: Any,
    ) -> None:
        self.func = func
        self.args = tuple(args)
        self.kwargs = dict(kwargs)
        self.out_index = out_index
        self.shape = tuple(shape)
        self.chunks = tuple(chunks)
        self.dtype = np.dtype(dtype)

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            ElementwiseSource,
            (self.func, self.args, self.kwargs, self.out_index, self.shape, self.chunks, self.dtype.str),
        )

    def operands(self) -> list[Any]:
        """The distinct sources this expression reads chunks from (nested expressions looked through)."""
        sources = [a._source for a in self.args if is_lazy(a)]
        nested = [s.operands() if isinstance(s, ElementwiseSource) else [s] for s in sources]
        return list({id(op): op for ops in nested for op in ops}.values())

    def leaves(self) -> list[Any]:
        """The distinct fetch sources under this expression."""
        return list({id(leaf): leaf for op in self.operands() for leaf in op.leaves()}.values())

    def describe(self) -> str:
        parts = []
        for a in self.args:
            if is_lazy(a):
                parts.append("<lazy>")
            elif isinstance(a, np.ndarray) and a.ndim:
                parts.append(f"<ndarray {a.shape}>")
            else:
                parts.append(repr(a))
        idx = f"[{self.out_index}]" if self.out_index is not None else ""
        return f"expr={_name(self.func)}({', '.join(parts)}){idx}"

    def dask_token(self) -> Any:
        toks = []
        for a in self.args:
            if is_lazy(a):
                toks.append(a.__dask_tokenize__())
            elif isinstance(a, np.ndarray):
                toks.append(("ndarray", a.shape, a.dtype.str, a.tobytes() if a.size <= 4096 else id(a)))
            else:
                toks.append(repr(a))
        return (
            "altarr-expr",
            _name(self.func),
            tuple(toks),
            repr(sorted(self.kwargs.items())),
            self.out_index,
        )

    def row_missing_nbytes(self, coords: np.ndarray) -> np.ndarray:
        total = np.zeros(len(coords), dtype=np.int64)
        for op in self.operands():
            total += op.row_missing_nbytes(coords)
        return total

    def get_chunks(self, coords: np.ndarray, *, store: bool) -> list[np.ndarray]:
        """Chunks of the expression: each operand's chunks fetched once (batched), then evaluated."""
        values = {id(op): op.get_chunks(coords, store=store) for op in self.operands()}
        return [self._eval(i, region, values) for i, region in enumerate(chunk_regions(self, coords))]

    def visit_chunks(self, coords: np.ndarray, fn: Callable[[int, np.ndarray], Any]) -> None:
        """``fn(i, chunk)`` for every row, caching nothing (the leaves' chunks fetched as one batch)."""
        for i, chunk in enumerate(self.get_chunks(coords, store=False)):
            fn(i, chunk)

    def _eval(self, i: int, region: tuple[slice, ...], values: dict[int, list[np.ndarray]]) -> np.ndarray:
        vals = []
        for a in self.args:
            if is_lazy(a):
                src = a._source
                vals.append(
                    src._eval(i, region, values) if isinstance(src, ElementwiseSource) else values[id(src)][i]
                )
            elif isinstance(a, np.ndarray) and a.ndim:
                vals.append(np.broadcast_to(a, self.shape)[region])
            else:
                vals.append(a)
        res = self.func(*vals, **self.kwargs)
        if self.out_index is not None:
            res = res[self.out_index]
        res = np.asarray(res)
        if res.dtype != self.dtype:
            res = res.astype(self.dtype)
        ext = tuple(s.stop - s.start for s in region)
        if res.shape != ext:
            res = np.broadcast_to(res, ext)
        return res


def _operand(a: Any, shape: tuple[int, ...]) -> tuple[Any, Any] | None:
    """``(operand kept in the recipe, sample for dtype resolution)``, or ``None`` when ``a`` cannot be an
    operand (not a value, or an array that does not broadcast to ``shape``)."""
    if is_lazy(a):
        return a, np.empty((0,), a.dtype)
    if a is None or (isinstance(a, bool | numbers.Number) and not isinstance(a, np.ndarray)):
        return a, a
    arr = np.asarray(a)
    if arr.dtype.kind not in VALUE_KINDS:
        return None
    if arr.ndim == 0:
        return arr, arr
    try:
        fits = tuple(np.broadcast_shapes(arr.shape, shape)) == tuple(shape)
    except ValueError:
        return None
    return (arr, np.empty((0,), arr.dtype)) if fits else None


def make_elementwise(
    func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], nout: int = 1
) -> Any:
    """A lazy array (or a tuple of ``nout`` of them) for ``func(*args, **kwargs)``, or ``None`` when the
    operands are not lazy arrays of one shape and chunk grid (plus scalars / broadcastable arrays)."""
    lazies = [a for a in args if is_lazy(a)]
    if not lazies:
        return None
    ref = lazies[0]
    if any(a.shape != ref.shape or a.chunks != ref.chunks for a in lazies):
        return None
    operands = [_operand(a, ref.shape) for a in args]
    if any(o is None for o in operands):
        return None
    kept, samples = zip(*operands, strict=True)
    try:
        with np.errstate(all="ignore"):
            probe = func(*samples, **kwargs)
    except (TypeError, ValueError):  # NumPy's refusal (no loop, a cast): its eager call raises it
        return None
    results = [probe] if nout == 1 else list(probe)
    out = []
    for k, r in enumerate(results):
        dt = np.asarray(r).dtype
        if dt.kind not in VALUE_KINDS:
            return None
        src = ElementwiseSource(
            func, tuple(kept), kwargs, None if nout == 1 else k, ref.shape, ref.chunks, dt
        )
        out.append(type(ref)(ref.shape, ref.chunks, dt, src, ref.dims, ref.coords))
    return out[0] if nout == 1 else tuple(out)


def _astype(chunk: np.ndarray, dtype: str) -> np.ndarray:
    return chunk.astype(dtype)


def cast(x: LazyArray, dtype: np.dtype) -> LazyArray:
    """A lazy ``x.astype(dtype)``."""
    if dtype == x.dtype:
        return type(x)(x.shape, x.chunks, x.dtype, x._source, x.dims, x.coords)
    src = ElementwiseSource(_astype, (x,), {"dtype": dtype.str}, None, x.shape, x.chunks, dtype)
    return type(x)(x.shape, x.chunks, dtype, src, x.dims, x.coords)
