"""Adapters to dask (:mod:`.dask`) and xarray (:mod:`.xarray`), imported on use (``docs/integrations.md``).

Example:
    >>> import numpy as np, altarr as aa
    >>> x = aa.altarr((4, 4), 2, lambda c: [np.ones((2, 2))] * len(c), dims=("y", "x"))
    >>> float(x.to_dask().sum().compute()), x.to_xarray().dims
    (16.0, ('y', 'x'))
"""

from .dask import store, to_dask
from .xarray import to_xarray

__all__ = ["to_dask", "store", "to_xarray"]
