"""The ``altarr`` xarray backend (registered as the ``xarray.backends`` entry point ``altarr``).

``xarray.open_dataset(path, engine="altarr")`` and ``xarray.open_datatree(path, engine="altarr")`` open
N5, Zarr v2 and Zarr v3 (sharded) arrays and groups lazily; see :mod:`altarr.integrations.xarray`.

Example:
    >>> import tempfile, xarray as xr, altarr as aa
    >>> path = aa.example_zarr(tempfile.mkdtemp(), shape=(4, 6), chunks=(2, 3))
    >>> ds = xr.open_dataset(path, engine=AltarrBackendEntrypoint)
    >>> ds["example"].dims, float(ds["example"][3, 5])
    (('dim_0', 'dim_1'), 23.0)
"""

from __future__ import annotations

import os
from typing import Any

from xarray.backends import BackendEntrypoint

from .xarray import open_altarr_dataset, open_groups_as_dict

__all__ = ["AltarrBackendEntrypoint"]


class AltarrBackendEntrypoint(BackendEntrypoint):
    """Opens N5, Zarr v2 and Zarr v3 (sharded) nodes through altarr, reading nothing but metadata."""

    description = "N5, Zarr v2 and Zarr v3 (sharded) arrays and groups through altarr, read lazily"
    url = "https://altarr.readthedocs.io/en/latest/integrations/"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "group")

    def open_dataset(  # type: ignore[override]
        self, filename_or_obj: Any, *, drop_variables: Any = None, group: str | None = None
    ) -> Any:
        return open_altarr_dataset(os.fspath(filename_or_obj), group=group, drop_variables=drop_variables)

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        try:
            path = os.fspath(filename_or_obj)
        except TypeError:
            return False
        return isinstance(path, str) and path.rstrip("/").endswith(".n5")

    def open_groups_as_dict(self, filename_or_obj: Any, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        return open_groups_as_dict(os.fspath(filename_or_obj), **kwargs)

    def open_datatree(self, filename_or_obj: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        import xarray as xr

        return xr.DataTree.from_dict(self.open_groups_as_dict(filename_or_obj, **kwargs))
