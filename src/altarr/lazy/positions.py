"""Streamed positions: ``argmin``/``argmax`` (whole array or along an axis) and ``nonzero``."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from .streaming import chunk_batches, finish, stream

__all__ = ["arg_reduce", "nonzero"]


def arg_reduce(x: Any, which: str, axis: Any, out: Any, keepdims: bool) -> Any:
    """Streamed ``argmin``/``argmax``: per chunk the local winner and its index, merged keeping NumPy's
    rules (the first occurrence wins a tie; a NaN beats every number, and the first NaN wins)."""
    fn = np.argmin if which == "argmin" else np.argmax
    if x.ndim == 0:  # one element: an explicit read of it, not a materialization (NumPy's axis rules)
        return fn(np.asarray(x[...]), axis=axis, out=out, keepdims=keepdims)
    if axis is not None:
        axis = normalize_axis_index(operator.index(axis), x.ndim)
    if x.size == 0 or (axis is not None and x.shape[axis] == 0):
        return fn(np.empty(x.shape, x.dtype), axis=axis, out=out, keepdims=keepdims)
    red = tuple(range(x.ndim)) if axis is None else (axis,)

    def partial(chunk: np.ndarray, red: tuple[int, ...], mask: Any, c: list[int]) -> tuple[Any, ...]:
        origin = [i * n for i, n in zip(c, x.chunks, strict=True)]
        if axis is None:
            k = int(fn(chunk))
            local = np.unravel_index(k, chunk.shape)
            glob = int(np.ravel_multi_index(tuple(int(v) for v in np.add(local, origin)), x.shape))
            return (np.asarray(chunk.reshape(-1)[k]), np.asarray(glob, dtype=np.intp))
        k = fn(chunk, axis=axis, keepdims=True)
        vals = np.take_along_axis(chunk, k, axis=axis)
        return (np.squeeze(vals, axis=axis), np.squeeze(k, axis=axis).astype(np.intp) + origin[axis])

    def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        va, ia = (np.asarray(v) for v in a)
        vb, ib = (np.asarray(v) for v in b)
        pick_b = fn(np.stack([va, vb]), axis=0).astype(bool)  # NumPy's own order, NaN rules included
        tie = (va == vb) | (np.isnan(va) & np.isnan(vb)) if va.dtype.kind in "fc" else va == vb
        pick_b = np.where(tie, ib < ia, pick_b)
        return (np.where(pick_b, vb, va), np.where(pick_b, ib, ia))

    _, index = stream(x, red, partial, combine)
    return finish(index, x, red, out, keepdims)


def nonzero(x: Any) -> tuple[np.ndarray, ...]:
    """Streamed ``np.nonzero``: indices of non-zero values in C order."""
    if x.ndim == 0:
        raise ValueError(
            "Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead."
        )
    x._count("reduce")
    chunk_arr = np.asarray(x.chunks, dtype=np.int64)
    parts: list[np.ndarray] = []
    for coords, arrays in chunk_batches(x):
        for c, chunk in zip(coords, arrays, strict=True):
            nz = np.nonzero(chunk)
            if len(nz[0]):
                local = np.stack(nz, axis=1).astype(np.int64) + c * chunk_arr
                parts.append(np.ravel_multi_index(local.T, x.shape).astype(np.int64))
    flat = np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    return tuple(a.astype(np.intp) for a in np.unravel_index(flat, x.shape))
