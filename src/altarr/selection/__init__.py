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
from .normalize import (
    FORMS,
    check_index_types,
    hyperslab_key,
    is_basic_selection,
    normalize,
)
from .plan import SelectionPlan
from .planners import (
    MODES,
    chunk_users,
    plan,
    plan_flat,
    plan_numpy,
    plan_outer,
    plan_selections,
    plan_vector,
)
from .regions import RegionPlan, flip_reversed, normalize_selection, plan_region
from .tables import DimTable, Points, forward_pieces, nchunks_of, plan_dim

__all__ = [
    "FORMS",
    "MODES",
    "DimSelection",
    "DimTable",
    "Item",
    "Points",
    "RegionPlan",
    "Selection",
    "SelectionPlan",
    "check_index_types",
    "chunk_users",
    "flip_reversed",
    "forward_pieces",
    "hyperslab_key",
    "is_basic_selection",
    "nchunks_of",
    "normalize",
    "normalize_selection",
    "plan",
    "plan_dim",
    "plan_flat",
    "plan_numpy",
    "plan_outer",
    "plan_region",
    "plan_selections",
    "plan_vector",
]
