"""Selection normalization and planning moved to :mod:`altarr.selection` (one selection module below the
dataset and lazy layers); this module re-exports it for existing imports."""

from ..selection.normalize import check_index_types
from ..selection.plan import (
    DimTable,
    Plan,
    Points,
    nchunks_of,
    plan_flat,
    plan_numpy,
    plan_outer,
    plan_vector,
)

__all__ = [
    "Plan",
    "DimTable",
    "Points",
    "check_index_types",
    "plan_numpy",
    "plan_outer",
    "plan_vector",
    "plan_flat",
    "nchunks_of",
]
