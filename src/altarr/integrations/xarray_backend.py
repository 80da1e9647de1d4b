"""The ``altarr`` xarray backend (registered as the ``xarray.backends`` entry point ``altarr``).

``xarray.open_dataset(path, engine="altarr")`` and ``xarray.open_datatree(path, engine="altarr")`` open
N5, Zarr v2 and Zarr v3 (sharded) arrays and groups lazily; see :mod:`altarr.integrations.xarray`.

Example:
    >>> import tempfile, xarray as xr, altarr as aa
    >>> path = aa.example_zarr(tempfile.mkdtemp() + "/example", shape=(4, 6), chunks=(2, 3))
    >>> ds = xr.open_dataset(path, engine=AltarrBackendEntrypoint)
    >>> ds["example"].dims, float(ds["example"].isel(dim_0=3, dim_1=5))
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

    def open_dataset(
        self,
        filename_or_obj: Any,
        *,
        mask_and_scale: bool = True,
        decode_times: Any = True,
        concat_characters: bool = True,
        decode_coords: Any = True,
        drop_variables: Any = None,
        use_cftime: Any = None,
        decode_timedelta: Any = None,
        group: str | None = None,
        level: int | None = None,
        storage_options: dict[str, Any] | None = None,
        consolidated: bool | None = None,
    ) -> Any:
        """The node at ``filename_or_obj`` (``group`` inside it; ``level`` of a pyramid) as an
        ``xarray.Dataset``, CF-decoded by xarray (``docs/integrations.md``)."""
        raw = open_altarr_dataset(
            os.fspath(filename_or_obj),
            group=group,
            drop_variables=drop_variables,
            level=level,
            storage_options=storage_options,
            consolidated=consolidated,
        )
        return _decode(
            raw,
            mask_and_scale=mask_and_scale,
            decode_times=decode_times,
            concat_characters=concat_characters,
            decode_coords=decode_coords,
            use_cftime=use_cftime,
            decode_timedelta=decode_timedelta,
        )

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        try:
            path = os.fspath(filename_or_obj)
        except TypeError:
            return False
        return isinstance(path, str) and path.rstrip("/").endswith(".n5")

    def open_groups_as_dict(self, filename_or_obj: Any, **kwargs: Any) -> dict[str, Any]:
        drop = kwargs.pop("drop_variables", None)
        kwargs.pop("group", None)
        where = {k: kwargs.pop(k, None) for k in ("storage_options", "consolidated")}
        groups = open_groups_as_dict(os.fspath(filename_or_obj), drop_variables=drop, **where)
        return {path: _decode(ds, **kwargs) for path, ds in groups.items()}

    def open_datatree(self, filename_or_obj: Any, **kwargs: Any) -> Any:
        import xarray as xr

        return xr.DataTree.from_dict(self.open_groups_as_dict(filename_or_obj, **kwargs))


def _decode(raw: Any, **decoders: Any) -> Any:
    """CF decoding by xarray itself (what its own engines apply), with xarray's defaults."""
    import xarray as xr

    options = {k: v for k, v in decoders.items() if v is not None}
    return xr.decode_cf(raw, **options)
