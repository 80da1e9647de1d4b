"""Selections: every NumPy index expression normalized once (:mod:`~altarr.selection.normalize`) and
planned over a chunk grid (:mod:`~altarr.selection.planners`, :mod:`~altarr.selection.regions`), below
both the engine and the lazy arrays (docs/architecture.md, "Where selections are normalized").

Example:
    >>> import numpy as np
    >>> from altarr.selection import normalize, plan
    >>> s = normalize((slice(2, 9), [0, 6]), (10, 7))
    >>> p = plan(s, (4, 3))
    >>> p.coords.tolist(), p.result_shape
    ([[0, 0], [0, 2], [1, 0], [1, 2], [2, 0], [2, 2]], (7, 2))
"""

from .items import DimSelection, Item, Selection
from .normalize import hyperslab_key, normalize
from .plan import SelectionPlan
from .planners import MODES, chunk_users, plan, plan_selections
from .regions import RegionPlan
from .tables import nchunks_of, plan_dim

__all__ = [
    "MODES",
    "DimSelection",
    "Item",
    "RegionPlan",
    "Selection",
    "SelectionPlan",
    "chunk_users",
    "hyperslab_key",
    "nchunks_of",
    "normalize",
    "plan",
    "plan_dim",
    "plan_selections",
]
