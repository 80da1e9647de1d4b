"""Adapters from altarr to other array libraries (optional dependencies, imported on use).

The adapters live beside the lazy arrays they convert (``altarr.lazy.dask_export`` and
``altarr.lazy.xarray_export``, so the lazy layer never imports a layer above it); this package gathers
them for code that integrates altarr elsewhere:

* :func:`to_dask` - a dask array over a lazy array (``x.to_dask()``), dask chunks aligned to altarr's;
* :func:`to_xarray` - an ``xarray.DataArray`` with dims and coords, still lazy (``x.to_xarray()``).

Example:
    >>> import numpy as np, altarr as aa
    >>> x = aa.altarr((4, 4), 2, lambda c: [np.ones((2, 2))] * len(c), dims=("y", "x"))
    >>> float(x.to_dask().sum().compute()), x.to_xarray().dims
    (16.0, ('y', 'x'))
"""

from ..lazy.dask_export import to_dask
from ..lazy.xarray_export import to_xarray

__all__ = ["to_dask", "to_xarray"]
