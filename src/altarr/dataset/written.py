"""What a write buffer holds of one stored object (:class:`Pending`): its decoded values, and the
elements written so far as one box while their union is a box, else as a boolean mask.
"""

from __future__ import annotations

import math
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from .shard_write import paste, paste_where

if TYPE_CHECKING:
    from .dataset import Dataset

__all__ = ["Box", "Pending", "box_of", "simple_box"]

Box = tuple[tuple[int, int], ...]


def box_of(src: tuple[slice, ...]) -> Box | None:
    """The box of a write's slices (positive steps), or ``None`` where a strided slice leaves gaps."""
    box = []
    for s in src:
        n = len(range(s.start, s.stop, s.step))
        if s.step != 1 and n > 1:
            return None
        box.append((s.start, s.start + n))
    return tuple(box)


def _box_union(a: Box, b: Box) -> Box | None:
    """The union of two boxes when it is a box (one holds the other, or they differ along one dimension
    only, where they overlap or touch), else ``None``."""
    if all(b0 >= a0 and b1 <= a1 for (a0, a1), (b0, b1) in zip(a, b, strict=True)):
        return a
    if all(a0 >= b0 and a1 <= b1 for (a0, a1), (b0, b1) in zip(a, b, strict=True)):
        return b
    differ = [d for d, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    if len(differ) != 1:
        return None
    d = differ[0]
    (a0, a1), (b0, b1) = a[d], b[d]
    if b0 > a1 or a0 > b1:
        return None
    return a[:d] + ((min(a0, b0), max(a1, b1)),) + a[d + 1 :]


def simple_box(key: Any, values: Any, ds: Dataset) -> tuple[list[int], list[int], np.ndarray] | None:
    """``(starts, counts, values with one axis per dimension)`` when ``ds[key] = values`` writes a box:
    ``key`` of in-bounds integers and unit-step slices selecting something, ``values`` an array of the
    dataset's dtype and exactly the selection's shape; else ``None`` (the general path, which casts,
    broadcasts and raises NumPy's errors). A plane or tile write spends a third of the time of the general
    planning here (8192 tile writes of a 512^3 volume: 0.5 -> 0.15 s)."""
    if type(values) is not np.ndarray or values.dtype != ds.dtype:
        return None
    shape = ds.shape
    raw = key if type(key) is tuple else (key,)
    if len(raw) > len(shape):
        return None
    starts: list[int] = []
    counts: list[int] = []
    view: list[slice | None] = []
    for k, size in zip(raw, shape, strict=False):
        if type(k) is int:
            i = k + size if k < 0 else k
            if not 0 <= i < size:
                return None
            starts.append(i)
            counts.append(1)
            view.append(None)
        elif type(k) is slice and (k.step is None or k.step == 1):
            a, b, _ = k.indices(size)
            if b <= a:
                return None
            starts.append(a)
            counts.append(b - a)
            view.append(slice(None))
        else:
            return None
    for size in shape[len(raw) :]:
        if size == 0:
            return None
        starts.append(0)
        counts.append(size)
        view.append(slice(None))
    if values.shape != tuple(n for n, v in zip(counts, view, strict=True) if v is not None):
        return None
    return starts, counts, values[tuple(view)]


def _volume(box: Box) -> int:
    return math.prod(b - a for a, b in box)


class Pending:
    """The buffered writes of one stored object: its values (decoded, in the object's clipped shape; only
    the written elements mean anything) and which elements were written (``box``, or ``mask`` once the
    writes' union is no box)."""

    __slots__ = ("values", "box", "mask", "covered", "size", "tick")

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self.box: Box | None = None
        self.mask: np.ndarray | None = None
        self.covered = 0
        self.size = values.size
        self.tick = 0

    @property
    def nbytes(self) -> int:
        return self.values.nbytes + (0 if self.mask is None else self.mask.nbytes)

    @property
    def complete(self) -> bool:
        return self.covered == self.size

    def union(self, box: Box | None) -> Box | None:
        """The written box once ``box`` is written too, or ``None`` where that takes a mask."""
        if self.mask is not None or box is None:
            return None
        return box if self.box is None else _box_union(self.box, box)

    def to_mask(self) -> np.ndarray:
        if self.mask is None:
            self.mask = np.zeros(self.values.shape, dtype=bool)
            if self.box is not None:
                self.mask[tuple(slice(a, b) for a, b in self.box)] = True
            self.box = None
        return self.mask

    def cover(self, src: tuple[slice, ...], union: Box | None) -> None:
        """Record that ``values[src]`` was written (``union``: :meth:`union` of its box, if any)."""
        if union is not None:
            self.box, self.covered = union, _volume(union)
            return
        view = self.to_mask()[src]
        self.covered += view.size - int(np.count_nonzero(view))
        view[...] = True

    def update(self, region: tuple[slice, ...]) -> Any:
        """What was written of the chunk at ``region`` (unit-step slices of the object), as the engine's
        write takes it: ``None`` (nothing), the chunk's values (all of it) or a merge function of its
        stored values (part of it)."""
        values = np.asarray(self.values[region])  # an array, also for a 0-d object's element
        if self.complete:
            return values
        if self.mask is not None:
            m = self.mask[region]
            n = int(np.count_nonzero(m))
            return None if n == 0 else values if n == m.size else partial(paste_where, m, values)
        if self.box is None:
            return None
        local = []
        for (a, b), r in zip(self.box, region, strict=True):
            lo, hi = max(a, r.start), min(b, r.stop)
            if lo >= hi:
                return None
            local.append(slice(lo - r.start, hi - r.start))
        if all(s.start == 0 and s.stop == r.stop - r.start for s, r in zip(local, region, strict=True)):
            return values
        return partial(paste, tuple(local), values[tuple(local)])
