"""Selection planning lives in :mod:`altarr.dataset.indexing` (the layer below, so that ``Dataset`` can
plan NumPy's fancy indexing too); this module re-exports it for the lazy layer and existing imports."""

from ..dataset.indexing import (  # noqa: F401 - re-exports
    DimTable,
    Plan,
    Points,
    check_index_types,
    nchunks_of,
    plan_flat,
    plan_numpy,
    plan_outer,
    plan_vector,
)
from ..dataset.indexing import __all__ as __all__
