"""N5 pyramid metadata in the two layouts the Java viewers read (n5-viewer, BigDataViewer), written and
read; vectors are reversed to N5 order at this boundary (docs/pyramids.md, "Layouts").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..errors import MetadataError
from .levels import Multiscale, describe, numbers
from .plan import normalize_axes, spatial

__all__ = [
    "n5_viewer_attributes",
    "bdv_attributes",
    "read_n5",
    "n5_unit",
    "ome_unit",
]

_TO_N5 = {"micrometer": "um", "nanometer": "nm", "millimeter": "mm", "centimeter": "cm", "meter": "m"}
_FROM_N5 = {v: k for k, v in _TO_N5.items()} | {
    "µm": "micrometer",
    "μm": "micrometer",
    "micron": "micrometer",
}


def n5_unit(unit: str | None) -> str:
    """The N5 viewers' spelling of an OME-Zarr (UDUNITS) unit: ``micrometer`` -> ``um``; none -> ``pixel``."""
    return "pixel" if unit is None else _TO_N5.get(unit, unit)


def ome_unit(unit: Any) -> str | None:
    """The OME-Zarr unit of an N5 viewers' unit (``um``, ``µm`` -> ``micrometer``; ``pixel`` -> none)."""
    if not isinstance(unit, str) or unit in ("", "pixel", "pixels"):
        return None
    return _FROM_N5.get(unit, unit)


def _n5(values: Sequence[Any]) -> list[Any]:
    """NumPy order -> N5 order (and back: the reversal is its own inverse)."""
    return list(reversed(list(values)))


def _check_spatial(desc: Multiscale, layout: str) -> None:
    if len(spatial(desc.axes)) != len(desc.axes) or not 2 <= len(desc.axes) <= 3:
        names = [f"{a.name} ({a.type})" for a in desc.axes]
        raise MetadataError(
            f"the {layout} layout holds 2-D or 3-D spatial pyramids; axes {names} need OME-Zarr "
            "(or one pyramid per channel and time point)"
        )


def _resolution(desc: Multiscale) -> dict[str, Any]:
    """The ``pixelResolution`` of every level: level 0's voxel size, in the spatial axes' one unit."""
    units = {desc.axes[d].unit for d in spatial(desc.axes)}
    unit = units.pop() if len(units) == 1 else None
    return {"unit": n5_unit(unit), "dimensions": _n5(desc.levels[0].scale)}


def n5_viewer_attributes(desc: Multiscale) -> dict[str, dict[str, Any]]:
    """The attributes of an n5-viewer pyramid by path: the group's and each level's."""
    _check_spatial(desc, "n5-viewer")
    resolution = _resolution(desc)
    group = {"scales": [_n5(level.factors) for level in desc.levels], "pixelResolution": resolution}
    if desc.name:
        group["name"] = desc.name  # n5-viewer's README example has one
    return {"": group} | _level_attributes(desc, resolution)


def _level_attributes(desc: Multiscale, resolution: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        lv.path: {"downsamplingFactors": _n5(lv.factors), "pixelResolution": resolution} for lv in desc.levels
    }


def bdv_attributes(desc: Multiscale, dtype: Any) -> dict[str, dict[str, Any]]:
    """The attributes of a BigDataViewer pyramid by path: the setup group, the timepoint group and
    each level."""
    _check_spatial(desc, "bdv")
    groups: dict[str, dict[str, Any]] = {
        "setup0": {
            "downsamplingFactors": [_n5(level.factors) for level in desc.levels],
            "dataType": str(dtype),
        },
        "setup0/timepoint0": {"multiScale": True, "resolution": _n5(desc.levels[0].scale)},
    }
    return groups | _level_attributes(desc, _resolution(desc))


def _from_n5(
    prefix: str, datasets: Sequence[Any], factors: Sequence[Any], resolution: Any, unit: Any, name: Any
) -> Multiscale:
    ndim = len(datasets[0].shape)
    absolute = []
    for i, (f, ds) in enumerate(zip(factors, datasets, strict=True)):
        if f is None:  # no factors: the ratio of the shapes (n5-ij infers 2**i from the name instead)
            vec = [max(1, round(a / max(b, 1))) for a, b in zip(datasets[0].shape, ds.shape, strict=True)]
        else:
            vec = _n5(numbers(f, ndim, f"level {i}: a downsamplingFactors"))
        absolute.append(tuple(max(1, round(v)) for v in vec))
    if isinstance(resolution, dict):  # {"unit": ..., "dimensions": [...]}
        resolution = resolution.get("dimensions")
    scale = [1.0] * ndim if resolution is None else _n5(numbers(resolution, ndim, "a pixelResolution"))
    axes = normalize_axes(None, ndim, ome_unit(unit))
    paths = [f"{prefix}s{i}" for i in range(len(datasets))]
    name = name if isinstance(name, str) else None
    ms = describe(axes, absolute, scale, None, "mean", paths, name)  # the levels opened already: kept
    levels = tuple(replace(lv, dataset=ds) for lv, ds in zip(ms.levels, datasets, strict=True))
    return replace(ms, method=None, levels=levels)


def _unit_of(*docs: Any) -> Any:
    for doc in docs:
        pr = doc.get("pixelResolution") if isinstance(doc, dict) else None
        if isinstance(pr, dict):
            return pr.get("unit")
    return None


def _child_attrs(group: Any, path: str) -> dict[str, Any]:
    return dict(getattr(group.get(path), "attrs", {}))


def _levels_named_s(group: Any, prefix: str) -> list[Any]:
    out: list[Any] = []
    while hasattr(node := group.get(f"{prefix}s{len(out)}"), "shape"):  # one probe a level
        out.append(node)
    return out


def _bdv_views(group: Any, setup_path: str) -> int:
    """How many (setup, timepoint) views a BigDataViewer container opened at ``group`` holds: its setups
    times the timepoints of the opened one (1 for a setup group with one timepoint)."""
    setups = sum(1 for name in group.keys() if re.fullmatch(r"setup\d+", name)) if setup_path else 1
    holder = group[setup_path.rstrip("/")] if setup_path else group
    timepoints = sum(1 for name in holder.keys() if re.fullmatch(r"timepoint\d+", name))
    return max(setups, 1) * max(timepoints, 1)


def _read_bdv(group: Any, prefix: str, factors: list[Any], tp: dict[str, Any], views: int) -> Multiscale:
    """The BigDataViewer pyramid of the timepoint group at ``prefix`` (attributes ``tp``): ``factors`` the
    setup's (the levels' where it names fewer), the voxel size the timepoint's ``resolution``."""
    datasets = _levels_named_s(group, prefix)
    if not datasets:
        raise MetadataError(f"BigDataViewer setup without levels at {prefix}s0", key=group.path or "/")
    level_attrs = [dict(ds.attrs) for ds in datasets]
    if len(factors) < len(datasets):
        factors = [a.get("downsamplingFactors") for a in level_attrs]
    resolution = tp.get("resolution", level_attrs[0].get("pixelResolution"))
    ms = _from_n5(prefix, datasets, factors[: len(datasets)], resolution, _unit_of(*level_attrs), None)
    return replace(ms, layout="bdv", views=views)


def read_n5(group: Any, setup: int, timepoint: int) -> Multiscale:
    """The pyramid of an N5 group, its levels not opened: a BigDataViewer container, setup or timepoint
    group (a setup's list of ``downsamplingFactors`` wins over the levels', as ``N5ImageLoader`` reads
    them), else n5-viewer's ``s0``, ``s1``, ..."""
    attrs = dict(group.attrs)
    if re.search(r"(^|/)setup\d+/timepoint\d+$", group.path):  # one view of a container: its levels
        return _read_bdv(group, "", [], attrs, 1)
    setup_path = f"setup{setup}/" if f"setup{setup}" in group else ""
    factors = (_child_attrs(group, setup_path.rstrip("/")) if setup_path else attrs).get(
        "downsamplingFactors"
    )
    if isinstance(factors, list) and factors and isinstance(factors[0], list):
        prefix = f"{setup_path}timepoint{timepoint}/"
        tp = _child_attrs(group, prefix.rstrip("/"))
        return _read_bdv(group, prefix, factors, tp, _bdv_views(group, setup_path))
    datasets = _levels_named_s(group, "")
    if not datasets:
        raise MetadataError(
            "no pyramid here: neither OME-Zarr multiscales, BigDataViewer setups nor datasets s0, s1, ...",
            key=group.path or "/",
        )
    level_attrs = [dict(ds.attrs) for ds in datasets]
    scales = attrs.get("scales")
    factors = [
        a.get("downsamplingFactors", scales[i] if isinstance(scales, list) and i < len(scales) else None)
        for i, a in enumerate(level_attrs)
    ]
    resolution = attrs.get("pixelResolution", level_attrs[0].get("pixelResolution"))
    ms = _from_n5("", datasets, factors, resolution, _unit_of(attrs, *level_attrs), attrs.get("name"))
    return replace(ms, layout="n5-viewer")
