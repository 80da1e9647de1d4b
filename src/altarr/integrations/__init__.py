"""Adapters from altarr to other array libraries (optional dependencies, imported on use).

* :mod:`altarr.integrations.dask` - :func:`to_dask` over a dataset or a lazy array, :func:`store` of a
  dask array into a dataset one shard per task, and copies on a dask.distributed cluster;
* :mod:`altarr.integrations.xarray` - :func:`to_xarray` for lazy arrays and the ``altarr`` xarray backend
  (``xarray.open_dataset(path, engine="altarr")`` and ``xarray.open_datatree``).

The lazy layer does not import these modules; ``LazyArray.to_dask()`` and ``.to_xarray()`` call them.

Example:
    >>> import numpy as np, altarr as aa
    >>> x = aa.altarr((4, 4), 2, lambda c: [np.ones((2, 2))] * len(c), dims=("y", "x"))
    >>> float(x.to_dask().sum().compute()), x.to_xarray().dims
    (16.0, ('y', 'x'))
"""

from .dask import store, to_dask
from .xarray import to_xarray

__all__ = ["to_dask", "store", "to_xarray"]
