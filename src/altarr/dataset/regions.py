"""Region (basic selection) planning: which chunks a selection touches, and where each piece goes.

A basic selection (integers, slices with any step, ``...``, ``None`` when reading) is normalized to one
:class:`DimSelection` per array dimension, each a positive-step progression; negative steps are read
forwards and flipped afterwards (a view, no copy). :func:`plan_region` gives, per dimension, the chunks
touched with the slice to take from the chunk and the slice to put into the output.

Example:
    >>> dims, shape = normalize_selection((slice(None, None, -2), 3), (10, 7))
    >>> shape
    (5,)
    >>> [(k, src, dst) for k, src, dst in plan_dim(dims[0], 4, 10)]
    [(0, slice(1, 4, 2), slice(0, 2, None)), (1, slice(1, 4, 2), slice(2, 4, None)), (2, slice(1, 2, 2), slice(4, 5, None))]
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import SelectionError

__all__ = ["DimSelection", "flip_reversed", "is_basic_selection", "normalize_selection", "plan_dim"]


@dataclass(frozen=True)
class DimSelection:
    """``n`` indices ``start, start+step, ...`` (``step > 0``) along one array dimension."""

    start: int
    step: int
    n: int
    drop: bool = False  # an integer index: the dimension disappears from the result
    reverse: bool = False  # a negative step: the result is flipped along this dimension


def _is_int(x: Any) -> bool:
    try:
        operator.index(x)
    except TypeError:
        return False
    return not isinstance(x, bool)


def is_basic_selection(selection: Any) -> bool:
    """Whether a selection is NumPy *basic* indexing: integers (not booleans), slices, ``...`` and
    ``None`` only. Anything else (lists, ranges, integer or boolean arrays) is advanced indexing.

    >>> is_basic_selection((1, slice(None), ..., None)), is_basic_selection(([0, 1],)), is_basic_selection(True)
    (True, False, False)
    """
    for s in selection if isinstance(selection, tuple) else (selection,):
        if s is None or s is Ellipsis or isinstance(s, slice):
            continue
        if isinstance(s, bool | np.bool_) or (isinstance(s, np.ndarray) and (s.ndim or s.dtype == np.bool_)):
            return False
        if not _is_int(s):
            return False
    return True


def normalize_selection(
    selection: Any, shape: tuple[int, ...], *, allow_newaxis: bool = True
) -> tuple[list[DimSelection], tuple[int, ...]]:
    """Normalize a basic selection; returns per-dimension selections and the result shape (with
    ``None`` axes inserted and integer-indexed axes dropped)."""
    sel = selection if isinstance(selection, tuple) else (selection,)
    n_ell = sum(1 for s in sel if s is Ellipsis)
    if n_ell > 1:
        raise SelectionError("an index can only have a single ellipsis ('...')")
    n_real = sum(1 for s in sel if s is not None and s is not Ellipsis)
    if n_real > len(shape):
        raise SelectionError(
            f"too many indices: array is {len(shape)}-dimensional, but {n_real} were indexed"
        )
    expanded: list[Any] = []
    for s in sel:
        if s is Ellipsis:
            expanded.extend([slice(None)] * (len(shape) - n_real))
        else:
            expanded.append(s)
    if n_ell == 0:
        expanded.extend([slice(None)] * (len(shape) - n_real))
    dims: list[DimSelection] = []
    out_shape: list[int] = []
    axis = 0
    for s in expanded:
        if s is None:
            if not allow_newaxis:
                raise SelectionError("None (np.newaxis) cannot be used in an assignment selection")
            out_shape.append(1)
            continue
        size = shape[axis]
        if isinstance(s, slice):
            start, stop, step = s.indices(size)
            rng = range(start, stop, step)
            n = len(rng)
            if step > 0:
                dims.append(DimSelection(start if n else 0, step, n))
            else:
                dims.append(DimSelection(rng[-1] if n else 0, -step, n, reverse=True))
            out_shape.append(n)
        elif _is_int(s):
            i = operator.index(s)
            if i < -size or i >= size:
                raise SelectionError(f"index {i} is out of bounds for axis {axis} with size {size}")
            dims.append(DimSelection(i % size, 1, 1, drop=True))
        else:
            raise SelectionError(
                f"datasets take basic selections (integers, slices, '...'); got {type(s).__name__}. "
                "For integer-array, boolean or point selections use the lazy array: "
                "altarr.open(path).oindex[...] / .vindex[...] / x[...]"
            )
        axis += 1
    return dims, tuple(out_shape)


def plan_dim(d: DimSelection, chunk: int, size: int) -> list[tuple[int, slice, slice]]:
    """Chunks along one dimension touched by ``d``: ``(chunk index, slice in chunk, slice in result)``."""
    if d.n == 0:
        return []
    out = []
    last = d.start + d.step * (d.n - 1)
    for k in range(d.start // chunk, last // chunk + 1):
        lo, hi = k * chunk, min((k + 1) * chunk, size)
        j_lo = max(0, -(-(lo - d.start) // d.step))
        j_hi = min(d.n, -(-(hi - d.start) // d.step))
        if j_lo >= j_hi:
            continue
        first = d.start + d.step * j_lo - lo
        stop = d.start + d.step * (j_hi - 1) - lo + 1
        out.append((k, slice(first, stop, d.step), slice(j_lo, j_hi)))
    return out


def flip_reversed(array: Any, dims: list[DimSelection]) -> Any:
    """A view of ``array`` flipped along every dimension selected with a negative step (its own inverse:
    it maps the forward-read working array to the selection's order and back)."""
    if not any(d.reverse for d in dims):
        return array
    return array[tuple(slice(None, None, -1) if d.reverse else slice(None) for d in dims)]
