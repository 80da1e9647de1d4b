"""Lazy arrays: NumPy-compatible arrays fetched chunk by chunk through a user ``fetch(chunks)``
(docs/lazy-arrays.md; the modules: docs/architecture.md, "The lazy layer's modules").

Example:
    >>> import numpy as np
    >>> from altarr.lazy import altarr, stats
    >>> x = altarr((4, 4), 2, lambda c: [np.ones((2, 2))] * len(c))
    >>> float(x[1:3, 1:3].sum()), stats(x)["fetch_calls"]
    (4.0, 1)
"""

from .array import LazyArray
from .functions import altarr, extract, is_altarr, plan, reset, stats
from .options import get_options, set_options
from .sources import example_zarr, zarr_v2
from .sources import open as open  # public (altarr.open), kept out of __all__: not to shadow the builtin

__all__ = [
    "altarr",
    "LazyArray",
    "extract",
    "plan",
    "stats",
    "reset",
    "is_altarr",
    "set_options",
    "get_options",
    "zarr_v2",
    "example_zarr",
]
