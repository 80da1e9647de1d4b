"""Adapters to dask (:mod:`.dask`) and xarray (:mod:`.xarray`), imported on use (``docs/integrations.md``)."""

from .dask import store, to_dask
from .xarray import to_xarray

__all__ = ["to_dask", "store", "to_xarray"]
