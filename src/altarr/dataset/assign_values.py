"""The values of an assignment (``ds[sel] = v``, ``ds.oindex[sel] = v``, the write buffer's) cast,
broadcast and ordered like the work array of its plan, the same way for all three.

Example:
    >>> import numpy as np
    >>> from altarr.selection import normalize, plan_region
    >>> sel = normalize(np.s_[::-1, 1], (3, 4))
    >>> region_values(sel, plan_region(sel, (2, 2)), [1, 2, 3], np.dtype("u1")).tolist()  # forward, one axis per dimension
    [[3], [2], [1]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..selection import RegionPlan, Selection, SelectionPlan
from .casting import cast_for_selection

__all__ = ["Paste", "PasteWhere", "Scatter", "plan_values", "region_values"]


def region_values(sel: Selection, r: RegionPlan, values: Any, dtype: np.dtype) -> np.ndarray:
    """``values`` for the basic selection ``sel`` (its region plan ``r``): cast and broadcast as
    ``a[key] = values`` does (:func:`~altarr.dataset.casting.cast_for_selection`) and laid out as the
    selection's forward work array (a view where no cast was needed)."""
    return r.unfinish(cast_for_selection(values, dtype, sel))


def plan_values(p: SelectionPlan, vals: np.ndarray) -> np.ndarray:
    """Values of the result's shape (:func:`~altarr.dataset.casting.cast_for_selection`) laid out as the plan's work array."""
    return p.unfinish(vals)


# --- merge functions: how a partial write edits a chunk's current values (see shard_write.Merge) ------------
class Scatter:
    """Merge function writing row ``row`` of a planned selection's values into the chunk."""

    __slots__ = ("plan", "row", "work")

    def __init__(self, plan: SelectionPlan, row: int, work: np.ndarray):
        self.plan, self.row, self.work = plan, row, work

    def __call__(self, old: np.ndarray) -> np.ndarray:
        self.plan.scatter(self.work, self.row, old)
        return old


class Paste:
    """Merge function writing ``values`` into ``old[src]`` (a class, so it pickles and reads well)."""

    __slots__ = ("src", "values")

    def __init__(self, src: tuple[slice, ...], values: np.ndarray):
        self.src, self.values = src, values

    def __call__(self, old: np.ndarray) -> np.ndarray:
        old[self.src] = self.values
        return old


class PasteWhere:
    """Merge function writing ``values`` into ``old`` where ``mask`` is true (a write buffer's chunk that
    was written in parts whose union is no box)."""

    __slots__ = ("mask", "values")

    def __init__(self, mask: np.ndarray, values: np.ndarray):
        self.mask, self.values = mask, values

    def __call__(self, old: np.ndarray) -> np.ndarray:
        np.copyto(old, self.values, where=self.mask)
        return old
