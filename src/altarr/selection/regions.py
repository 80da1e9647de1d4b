"""Region plans: a basic selection read or written by the block engine chunk by chunk as strided copies
(negative steps read forwards and flipped), the form the native kernel consumes.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product
from typing import Any

import numpy as np

from .items import DimSelection, Selection
from .tables import Piece, plan_dim

__all__ = ["Geometry", "RegionPlan", "flip_reversed"]

#: :meth:`RegionPlan.geometry`: per dimension, per chunk index, ``(start in the chunk, step, count, start
#: in the work array)`` (the native kernel's task geometry).
Geometry = list[dict[int, tuple[int, int, int, int]]]


def flip_reversed(array: np.ndarray, dims: Sequence[DimSelection]) -> np.ndarray:
    """A view of ``array`` flipped along every dimension selected with a negative step (its own inverse:
    it maps the forward-read working array to the selection's order and back)."""
    if not any(d.reverse for d in dims):
        return array
    return array[tuple(slice(None, None, -1) if d.reverse else slice(None) for d in dims)]


class RegionPlan:
    """A basic selection over a chunk grid: the work array (one axis per array dimension, read forwards),
    the pieces each touched chunk contributes, and the way to the result (``SelectionError`` for an
    advanced selection).

    ``dims``: one :class:`DimSelection` per dimension; ``shape``: the result's shape (``None`` axes in,
    integer axes out); ``work_shape``: the forward work array's; ``per_dim``: :func:`plan_dim` per
    dimension; ``scalar``: whether the result is a NumPy scalar.
    """

    __slots__ = ("dims", "shape", "work_shape", "per_dim", "scalar")

    def __init__(self, selection: Selection, chunks: Sequence[int]) -> None:
        sel = selection.require_basic()
        self.dims = sel.dims
        self.shape = sel.result_shape
        self.work_shape = tuple(d.n for d in self.dims)
        self.per_dim = [plan_dim(d, int(c)) for d, c in zip(self.dims, chunks, strict=True)]
        self.scalar = not sel.ellipsis and not self.shape  # Selection.scalar, without a second result_shape

    def pieces(self) -> dict[tuple[int, ...], tuple[Piece, ...]]:
        """Every touched chunk (C order) with its piece along each dimension.

        >>> from altarr.selection import normalize
        >>> RegionPlan(normalize(np.s_[1:3, 2], (4, 4)), (2, 2)).pieces()
        {(0, 1): ((0, slice(1, 2, 1), slice(0, 1, None)), (1, slice(0, 1, 1), slice(0, 1, None))), (1, 1): ((1, slice(0, 1, 1), slice(1, 2, None)), (1, slice(0, 1, 1), slice(0, 1, None)))}
        """
        # two C-level products zipped: a comprehension building each key from its pieces cost 76 us of a
        # 256-chunk read's planning, this 32 (it runs before the read's first request goes out)
        keys = product(*[[p[0] for p in dim] for dim in self.per_dim])
        return dict(zip(keys, product(*self.per_dim), strict=True))

    def geometry(self) -> Geometry:
        """Per dimension, per touched chunk index: ``(start in the chunk, step, count, start in the work
        array)``, the native kernel's task geometry (a chunk's is the concatenation along its dims).

        >>> from altarr.selection import normalize
        >>> RegionPlan(normalize(np.s_[1:3, 2], (4, 4)), (2, 2)).geometry()
        [{0: (1, 1, 1, 0), 1: (0, 1, 1, 1)}, {1: (0, 1, 1, 0)}]
        """
        return [{k: (s.start, s.step, d.stop - d.start, d.start) for k, s, d in dim} for dim in self.per_dim]

    def finish(self, work: np.ndarray) -> Any:
        """The result from the forward work array: flipped, reshaped, a scalar where NumPy gives one."""
        out = flip_reversed(work, self.dims)
        if out.shape != self.shape:  # no NumPy call otherwise: it runs right after the last answer
            out = out.reshape(self.shape)
        return out[()] if self.scalar else out

    def unfinish(self, values: np.ndarray) -> np.ndarray:
        """The inverse of :meth:`finish` for values already broadcast to :attr:`shape`."""
        return flip_reversed(values.reshape(self.work_shape), self.dims)
