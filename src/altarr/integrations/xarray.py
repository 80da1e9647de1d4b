"""xarray: :func:`to_xarray` for lazy arrays, and the ``altarr`` backend of ``xarray.open_dataset`` and
``xarray.open_datatree`` (``docs/integrations.md``); xarray's selections become planned altarr reads.

Example:
    >>> import numpy as np, altarr as aa
    >>> x = aa.altarr((4, 4), 2, lambda c: [np.zeros((2, 2))] * len(c), dims=("t", "x"),
    ...               coords={"t": [10, 20, 30, 40]})
    >>> da = to_xarray(x, name="v")
    >>> da.sel(t=30).values.tolist(), aa.stats(x)["fetch_calls"]
    ([0.0, 0.0, 0.0, 0.0], 1)
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

__all__ = ["to_xarray", "open_altarr_dataset", "open_groups_as_dict", "pyramid_level_dataset"]


def _import_xarray() -> Any:
    try:
        import xarray as xr
    except ImportError as e:
        raise ImportError(
            "LazyArray.to_xarray() needs the optional dependency xarray: pip install xarray "
            "(or pip install 'altarr[xarray]')"
        ) from e
    return xr


@functools.cache
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
            return (_backend_array, (self.array,))

    return AltarrBackendArray


def _backend_array(array: Any) -> Any:
    return _backend_array_class()(array)


def to_xarray(
    x: Any, name: str | None = None, attrs: Mapping[str, Any] | None = None, dask: bool = False
) -> Any:
    """An ``xarray.DataArray`` of the lazy array ``x`` with its dims and coords, ``name`` and ``attrs``
    (``dask=True``: over ``x.to_dask()`` instead of xarray's lazy indexing)."""
    xr = _import_xarray()
    from xarray.core import indexing

    dims = tuple(x.dims) if x.dims else tuple(f"dim_{d}" for d in range(x.ndim))
    coords = {key: (key, values) if key in dims else values for key, values in (x.coords or {}).items()}
    data = x.to_dask() if dask else indexing.LazilyIndexedArray(_backend_array(x))
    variable = xr.Variable(dims, data, attrs=dict(attrs or {}))
    return xr.DataArray(variable, coords=coords, name=name)


# --- the xarray backend --------------------------------------------------------------------------------
def _variable(ds: Any, phony: str = "dim", dims: tuple[str, ...] | None = None) -> Any:
    """An ``xarray.Variable`` over the dataset ``ds``, read through ``altarr.open``; its dims ``dims``, else
    the lazy array's, else ``{phony}_0, ...``."""
    import altarr as aa

    xr = _import_xarray()
    from xarray.core import indexing

    x = aa.open(ds)
    attrs = {k: v for k, v in ds.attrs.asdict().items() if k != "_ARRAY_DIMENSIONS"}
    if ds.format == "zarr2" and ds.fill_value is not None:
        attrs["_FillValue"] = ds.fill_value  # as xarray's zarr engine reads Zarr v2 (masking is CF's)
    elif isinstance(attrs.get("_FillValue"), str):  # xarray writes a Zarr v3 float _FillValue in base64
        from xarray.backends.zarr import FillValueCoder

        attrs["_FillValue"] = FillValueCoder.decode(attrs["_FillValue"], ds.dtype)
    dims = dims or x.dims or tuple(f"{phony}_{d}" for d in range(ds.ndim))
    data = indexing.LazilyIndexedArray(_backend_array(x))
    variable = xr.Variable(dims, data, attrs=attrs)
    block = ds.shards or ds.chunks
    variable.encoding = {
        "chunks": tuple(ds.chunks),
        "preferred_chunks": dict(zip(dims, block, strict=True)),
        "dtype": ds.dtype,
    }
    return variable


def _join(location: str, path: str) -> str:
    return f"{location.rstrip('/')}/{path}" if path else location


def open_altarr_dataset(
    location: str,
    *,
    group: str | None = None,
    drop_variables: Any = None,
    recursive: bool = False,
    level: int | None = None,
    storage_options: dict[str, Any] | None = None,
    consolidated: bool | None = None,
) -> Any:
    """The ``xarray.Dataset`` of the node at ``location`` (``/group`` inside it): one variable per array
    (``recursive``: those of sub-groups too), or one ``level`` of an image pyramid."""
    import altarr as aa
    from altarr.copying import arrays_below, open_node
    from altarr.multiscale.read import multiscale_or_none

    xr = _import_xarray()
    location = _join(str(location), (group or "").strip("/"))
    drop = {drop_variables} if isinstance(drop_variables, str) else set(drop_variables or ())
    node = open_node(location, consolidated=consolidated, **(storage_options or {}))
    pyramid = multiscale_or_none(node) if isinstance(node, aa.Group) else None
    if pyramid is not None:
        return pyramid_level_dataset(pyramid, level or 0, drop)
    if level is not None:
        raise ValueError(f"level={level} applies to image pyramids; {location} is not one")
    if isinstance(node, aa.Dataset):
        name = location.rstrip("/").rsplit("/", 1)[-1] or "data"
        for suffix in (".zarr", ".n5"):
            name = name.removesuffix(suffix)
        variables = {} if name in drop else {name: _variable(node)}
        return xr.Dataset(variables)
    variables = {}
    for name, child in arrays_below(node, recursive):
        if name not in drop:
            # phony dims per array: arrays of different shapes must not share one
            variables[name] = _variable(child, phony=f"{name}_dim")
    return xr.Dataset(variables, attrs=dict(node.attrs))


def pyramid_level_dataset(ms: Any, level: int, drop: set[str] | frozenset[str] = frozenset()) -> Any:
    """Level ``level`` of the pyramid ``ms`` as an ``xarray.Dataset``, with each spatial and time axis's
    physical coordinates."""
    xr = _import_xarray()
    if not -len(ms.levels) <= level < len(ms.levels):
        raise IndexError(f"level {level} of a pyramid of {len(ms.levels)} levels")
    lv = ms.levels[level]
    name = ms.name or "image"
    dims = tuple(a.name for a in ms.axes)
    coords = {}
    for d, axis in enumerate(ms.axes):
        if axis.type in ("space", "time"):
            attrs = {"units": axis.unit} if axis.unit else {}
            coords[axis.name] = xr.Variable(axis.name, lv.coords(d), attrs)
    variables = {}
    if name not in drop:
        variables[name] = _variable(lv.dataset, dims=dims)
    attrs = {"multiscale_layout": ms.layout, "level": level % len(ms.levels), "levels": len(ms.levels)}
    return xr.Dataset(variables, coords=coords, attrs=attrs)


def open_groups_as_dict(
    location: str,
    *,
    storage_options: dict[str, Any] | None = None,
    consolidated: bool | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """``{"/": Dataset, "/sub": Dataset, ...}`` for every group under ``location`` (for
    ``xarray.open_datatree``)."""
    import altarr as aa
    from altarr.copying import open_node

    location = str(location)
    options: dict[str, Any] = {"storage_options": storage_options, "consolidated": consolidated}
    root = open_node(location, consolidated=consolidated, **(storage_options or {}))
    if isinstance(root, aa.Dataset):
        return {"/": open_altarr_dataset(location, **options, **kwargs)}
    groups = [""] + [name for name, node in root.members(max_depth=None) if isinstance(node, aa.Group)]
    return {f"/{path}": open_altarr_dataset(_join(location, path), **options, **kwargs) for path in groups}
