"""Adapters from altarr to other array libraries (optional dependencies, imported on use).

* :func:`altarr.integrations.dask_array.to_dask` - a dask array over a lazy array (``x.to_dask()``);
* :func:`altarr.integrations.xarray_data.to_xarray` - an ``xarray.DataArray`` (``x.to_xarray()``).

Example:
    >>> import numpy as np, altarr as aa
    >>> x = aa.altarr((4, 4), 2, lambda c: [np.ones((2, 2))] * len(c), dims=("y", "x"))
    >>> float(x.to_dask().sum().compute()), x.to_xarray().dims
    (16.0, ('y', 'x'))
"""

__all__: list[str] = []
