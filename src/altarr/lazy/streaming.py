"""The walk every streamed reduction takes (:func:`chunk_batches`: the chunk grid in C order,
``batch_chunks`` chunks per fetch, nothing cached) and :func:`stream`, which merges per-chunk partials
into accumulators of the output shape; helpers shared by the reductions and comparisons.
"""

from __future__ import annotations

import operator
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from . import options
from .geometry import is_lazy

__all__ = [
    "Combine",
    "axes",
    "chunk_batches",
    "chunk_regions",
    "count_of",
    "finish",
    "numpy_empty_call",
    "part_reader",
    "stream",
    "ufunc_axes",
    "warn_caller",
    "where_and_axes",
    "where_mask",
]

#: altarr's own source folder: a warning is attributed to the first frame outside it
_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])


def warn_caller(message: str) -> None:
    """NumPy's ``RuntimeWarning`` ``message``, attributed to the first frame outside altarr (as NumPy names
    the caller of ``x.mean()`` and of ``np.mean(x)`` alike)."""
    level = 2
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    warnings.warn(message, RuntimeWarning, stacklevel=level)


Combine = Callable[[tuple[Any, ...], tuple[Any, ...]], tuple[Any, ...]]


def axes(x: Any, axis: Any) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(x.ndim))
    return tuple(sorted(normalize_axis_tuple(axis, x.ndim)))


def chunk_batches(x: Any) -> Iterator[tuple[np.ndarray, list[np.ndarray]]]:
    """``(coords, chunks)`` of ``x``'s chunk grid in C order, ``batch_chunks`` chunks per fetch call,
    nothing cached."""
    grid = x.nchunks
    total = int(np.prod(grid, dtype=np.int64))
    batch = options._get("batch_chunks")
    for start in range(0, total, batch):
        if grid:
            flat = np.arange(start, min(start + batch, total), dtype=np.int64)
            coords = np.stack(np.unravel_index(flat, grid), axis=1).astype(np.int64)
        else:
            coords = np.zeros((1, 0), dtype=np.int64)
        yield coords, x._source.get_chunks(coords, store=False)


def ufunc_axes(x: Any, axis: Any) -> tuple[int, ...]:
    """The reduced axes of a ufunc reduction (``np.add.reduce``, ``x.sum``, ``any``, ...): NumPy lets an
    integer axis of 0 or -1 through for a 0-d array, reducing nothing (a tuple is held to the bounds)."""
    if x.ndim == 0 and axis is not None and not isinstance(axis, tuple):
        try:
            if operator.index(axis) in (0, -1):
                return ()
        except TypeError:
            pass
    return axes(x, axis)


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
    """How to read the part of ``other`` (broadcast to ``x.shape``) matching each chunk of a batch of
    ``x``'s: views of NumPy data, a lazy array's chunks of the same grid in one fetch call (``None``: the
    same source), else one planned read of the batch's bounding box."""
    if not is_lazy(other):
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
    return _where_broadcast(x, _where_values(where))


def where_and_axes(x: Any, where: Any, axis: Any) -> tuple[Any, tuple[int, ...]]:
    """``(where mask, reduced axes)`` of a ufunc reduction (:func:`where_mask`, :func:`ufunc_axes`), with
    NumPy's errors in its order: a ``where`` array that is not boolean (``TypeError``), then the axes
    (``AxisError``), then a ``where`` that does not broadcast to ``x`` (``ValueError``)."""
    values = _where_values(where)
    red = ufunc_axes(x, axis)
    return _where_broadcast(x, values), red


def _where_values(where: Any) -> Any:
    """``where`` converted as NumPy converts it: ``True``, anything but an array by value (a list of 0/1,
    a 0.5, a NumPy scalar, ``None``), an array (NumPy or lazy) held to the ``'safe'`` cast to bool."""
    if where is True:
        return True
    if not (is_lazy(where) or isinstance(where, np.ndarray)):
        return np.asarray(where, dtype=np.bool_)
    if where.dtype != np.bool_:
        raise TypeError(
            f"Cannot cast array data from {where.dtype!r} to dtype('bool') according to the rule 'safe'"
        )
    return where


def _where_broadcast(x: Any, where: Any) -> Any:
    """A converted ``where`` (:func:`_where_values`) broadcast to ``x.shape``."""
    if where is True:
        return True
    if is_lazy(where):
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

    ``partial(chunk, red, mask, coords)`` gives a tuple of arrays shaped like the chunk's kept extents
    (``mask``: ``None`` when ``where`` is ``True``; ``coords``: the chunk's); ``combine(acc, part)`` merges
    two; ``early(acc)`` may stop the walk once every output element has been visited.
    """
    x._count("reduce")
    kept = tuple(d for d in range(x.ndim) if d not in red)
    kept_shape = tuple(x.shape[d] for d in kept)
    n_regions = int(np.prod([x.nchunks[d] for d in kept], dtype=np.int64))
    chunks_ = x.chunks
    masks = None if where is True else part_reader(x, where)
    acc: list[np.ndarray] = []
    seen: set[tuple[int, ...]] = set()

    def absorb(coords: np.ndarray, arrays: list[np.ndarray], mask_parts: list[Any] | None) -> None:
        for n, (c, chunk) in enumerate(zip(coords.tolist(), arrays, strict=True)):
            mask = None
            if mask_parts is not None:  # None: ``where`` is x itself
                mask = np.asarray(chunk if mask_parts[n] is None else mask_parts[n], dtype=bool)
            got = partial(chunk, red, mask, c)
            parts = tuple(np.asarray(p) for p in got)
            if not acc:
                acc.extend(np.empty(kept_shape, dtype=p.dtype) for p in parts)
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

    for coords, arrays in chunk_batches(x):
        mask_parts = None if masks is None else masks(coords, chunk_regions(x, coords))
        absorb(coords, arrays, mask_parts)
        if early is not None and len(seen) == n_regions and early(acc):
            break
    return acc


def finish(result: Any, x: Any, red: tuple[int, ...], out: Any, keepdims: bool) -> Any:
    result = np.asarray(result)
    if keepdims:
        result = result.reshape(tuple(1 if d in red else x.shape[d] for d in range(x.ndim)))
    if out is not None:
        if isinstance(out, tuple):  # np.sum(x, out=(o,)) and the methods: NumPy refuses the tuple form
            raise TypeError("return arrays must be of ArrayType")
        out[...] = result
        return out
    return result[()] if result.ndim == 0 else result


def count_of(x: Any, red: tuple[int, ...]) -> int:
    return int(np.prod([x.shape[d] for d in red], dtype=np.int64))


def numpy_empty_call(numpy_fn: Any, x: Any, out: Any, where: Any, **kw: Any) -> Any:
    if where is not True:
        kw["where"] = np.asarray(where)  # a lazy one materialized: NumPy's call is on an empty array
    return finish(numpy_fn(np.empty(x.shape, x.dtype), **kw), x, (), out, False)
