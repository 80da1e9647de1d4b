"""Lazy arrays: NumPy-compatible arrays fetched chunk by chunk through a user ``fetch(chunks)``.

Public names (re-exported by :mod:`altarr`): :func:`altarr`, :class:`LazyArray`, :func:`extract`,
:func:`plan`, :func:`stats`, :func:`reset`, :func:`is_altarr`, :func:`set_options`,
:func:`get_options`, :func:`open`, :func:`zarr_v2`, :func:`example_zarr`.

Modules: ``array`` (LazyArray), ``functions`` (the public functions), ``geometry`` (a recipe's shape,
chunks, dtype, dims, coords checked), ``cache`` (byte-budget LRU, single flight), ``fetching`` (fetch
contract), ``streaming`` (the chunk walk of every reduction), ``reduce`` (ufunc reductions), ``products``
(NumPy's order of products), ``moments`` (mean, var, std), ``positions`` (argmin, argmax, nonzero),
``reduction_methods`` (the reductions as methods), ``elementwise`` (lazy ufunc expressions), ``views``
(transposes, joins, reshapes), ``numpy_api`` (NEP 13/18 dispatch), ``compare`` (streamed comparisons),
``options``, ``sources`` (datasets, Zarr v2 demo, CF unpacking), ``recipes`` (pickling).

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
from .sources import open as open  # public (altarr.open), kept out of __all__

# ``open`` is public but not in ``__all__``: ``from altarr.lazy import *`` must not shadow the builtin.
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
