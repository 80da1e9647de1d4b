"""``to_xarray``: an ``xarray.DataArray`` over a lazy array, still lazy.

By default the data is wrapped as an xarray backend array (``LazilyIndexedArray``), so xarray's
selections (``isel``/``sel``, basic, outer and vectorized) become planned altarr reads of just the
touched chunks; with ``dask=True`` it is a dask array instead (see :func:`to_dask`).

Example:
    >>> import numpy as np, altarr as aa
    >>> x = aa.altarr((4, 4), 2, lambda c: [np.zeros((2, 2))] * len(c), dims=("t", "x"),
    ...               coords={"t": [10, 20, 30, 40]})
    >>> da = to_xarray(x, name="v")
    >>> da.sel(t=30).values.tolist(), aa.stats(x)["fetch_calls"]
    ([0.0, 0.0, 0.0, 0.0], 1)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["to_xarray"]


def _import_xarray() -> Any:
    try:
        import xarray as xr
    except ImportError as e:
        raise ImportError(
            "LazyArray.to_xarray() needs the optional dependency xarray: pip install xarray "
            "(or pip install 'altarr[xarray]')"
        ) from e
    return xr


def _backend_array_class() -> type:
    from xarray.backends.common import BackendArray
    from xarray.core import indexing

    class AltarrBackendArray(BackendArray):
        """xarray backend array over a lazy array: basic, outer and vectorized keys are planned reads."""

        def __init__(self, array: Any) -> None:
            self.array = array
            self.shape = array.shape
            self.dtype = array.dtype

        def __getitem__(self, key: Any) -> Any:
            array = self.array
            if isinstance(key, indexing.VectorizedIndexer):
                method = array.vindex.__getitem__
            elif isinstance(key, indexing.OuterIndexer):
                method = array.oindex.__getitem__
            else:
                method = array.__getitem__
            return indexing.explicit_indexing_adapter(
                key, self.shape, indexing.IndexingSupport.VECTORIZED, method
            )

        def __reduce__(self) -> tuple[Any, ...]:
            return (_rebuild_backend_array, (self.array,))

    return AltarrBackendArray


_BACKEND_CLASS: type | None = None


def _rebuild_backend_array(array: Any) -> Any:
    global _BACKEND_CLASS
    if _BACKEND_CLASS is None:
        _BACKEND_CLASS = _backend_array_class()
    return _BACKEND_CLASS(array)


def to_xarray(
    x: Any, name: str | None = None, attrs: Mapping[str, Any] | None = None, dask: bool = False
) -> Any:
    """An ``xarray.DataArray`` with the dims and coords of ``x`` (``dim_0``, ... when it has none).

    Args:
        x: a lazy array.
        name: the DataArray's name.
        attrs: its attributes.
        dask: wrap a dask array (``x.to_dask()``) instead of xarray's lazy indexing.
    """
    xr = _import_xarray()
    from xarray.core import indexing

    dims = tuple(x.dims) if x.dims else tuple(f"dim_{d}" for d in range(x.ndim))
    coords = {}
    for key, values in (x.coords or {}).items():
        coords[key] = (key, values) if key in dims else values
    if dask:
        data: Any = x.to_dask()
    else:
        data = indexing.LazilyIndexedArray(_rebuild_backend_array(x))
    variable = xr.Variable(dims, data, attrs=dict(attrs or {}))
    return xr.DataArray(variable, coords=coords, name=name)
