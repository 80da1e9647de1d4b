"""Selection planning lives in :mod:`altarr.dataset.indexing` (the layer below, so that ``Dataset`` can
plan NumPy's fancy indexing too); this name is kept for the lazy layer and for existing imports."""

import sys

from ..dataset import indexing as _planning

sys.modules[__name__] = _planning
