"""N5 pyramid metadata in the two layouts the Java viewers read (n5-viewer, BigDataViewer), written and
read; vectors are reversed to N5 order at this boundary (docs/pyramids.md, "Layouts").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import MetadataError
from .levels import Description, describe
from .plan import normalize_axes, spatial

__all__ = [
    "n5_viewer_attributes",
    "bdv_attributes",
    "parse_n5_viewer",
    "parse_bdv",
    "bdv_level_path",
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
    """The N5 viewers' spelling of an OME-Zarr (UDUNITS) unit: ``micrometer`` -> ``um``; none -> ``pixel``.

    >>> n5_unit("micrometer"), n5_unit(None), n5_unit("angstrom")
    ('um', 'pixel', 'angstrom')
    """
    return "pixel" if unit is None else _TO_N5.get(unit, unit)


def ome_unit(unit: Any) -> str | None:
    """The OME-Zarr unit of an N5 viewers' unit (``um``, ``µm`` -> ``micrometer``; ``pixel`` -> none).

    >>> ome_unit("um"), ome_unit("pixel"), ome_unit("parsec")
    ('micrometer', None, 'parsec')
    """
    if not isinstance(unit, str) or unit in ("", "pixel", "pixels"):
        return None
    return _FROM_N5.get(unit, unit)


def _n5(values: Sequence[Any]) -> list[Any]:
    """NumPy order -> N5 order (and back: the reversal is its own inverse)."""
    return list(reversed(list(values)))


def _unit(desc: Description) -> str | None:
    units = {desc.axes[d].unit for d in spatial(desc.axes)}
    return units.pop() if len(units) == 1 else None


def _check_spatial(desc: Description, layout: str) -> None:
    if len(spatial(desc.axes)) != len(desc.axes) or not 2 <= len(desc.axes) <= 3:
        names = [f"{a.name} ({a.type})" for a in desc.axes]
        raise MetadataError(
            f"the {layout} layout holds 2-D or 3-D spatial pyramids; axes {names} need OME-Zarr "
            "(or one pyramid per channel and time point)"
        )


def _resolution(desc: Description) -> dict[str, Any]:
    return {"unit": n5_unit(_unit(desc)), "dimensions": _n5(desc.levels[0].scale)}


def n5_viewer_attributes(desc: Description) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The group attributes and each level's attributes of an n5-viewer pyramid."""
    _check_spatial(desc, "n5-viewer")
    resolution = _resolution(desc)
    levels = [
        {"downsamplingFactors": _n5(level.factors), "pixelResolution": resolution} for level in desc.levels
    ]
    group = {"scales": [_n5(level.factors) for level in desc.levels], "pixelResolution": resolution}
    if desc.name:
        group["name"] = desc.name  # n5-viewer's README example has one
    return group, levels


def bdv_level_path(level: int, setup: int = 0, timepoint: int = 0) -> str:
    """The path of a level in BigDataViewer's layout (``setup%d/timepoint%d/s%d``)."""
    return f"setup{setup}/timepoint{timepoint}/s{level}"


def bdv_attributes(desc: Description, dtype: Any) -> dict[str, dict[str, Any]]:
    """The attributes of a BigDataViewer pyramid by path: the setup group, the timepoint group and
    each level."""
    _check_spatial(desc, "bdv")
    resolution = _resolution(desc)
    out: dict[str, dict[str, Any]] = {
        "setup0": {
            "downsamplingFactors": [_n5(level.factors) for level in desc.levels],
            "dataType": str(dtype),
        },
        "setup0/timepoint0": {"multiScale": True, "resolution": _n5(desc.levels[0].scale)},
    }
    for level in desc.levels:
        out[level.path] = {"downsamplingFactors": _n5(level.factors), "pixelResolution": resolution}
    return out


def _vector(value: Any, ndim: int, what: str) -> list[float] | None:
    if value is None:
        return None
    if isinstance(value, dict):  # {"unit": ..., "dimensions": [...]}
        value = value.get("dimensions")
    if not isinstance(value, list) or len(value) != ndim:
        raise MetadataError(f"{what} {value!r} must give {ndim} numbers")
    try:
        return _n5([float(v) for v in value])
    except (TypeError, ValueError):
        raise MetadataError(f"{what} {value!r} must give {ndim} numbers") from None


def _from_n5(
    paths: Sequence[str],
    shapes: Sequence[Sequence[int]],
    factors: Sequence[Any],
    resolution: Any,
    unit: Any,
    name: str | None,
) -> Description:
    ndim = len(shapes[0])
    absolute = []
    for i, (f, shape) in enumerate(zip(factors, shapes, strict=True)):
        vec = _vector(f, ndim, f"downsamplingFactors of level {i}")
        if vec is None:  # no factors: the ratio of the shapes (n5-ij infers 2**i from the name instead)
            vec = [max(1, round(a / max(b, 1))) for a, b in zip(shapes[0], shape, strict=True)]
        absolute.append(tuple(max(1, round(v)) for v in vec))
    scale = _vector(resolution, ndim, "pixelResolution") or [1.0] * ndim
    axes = normalize_axes(None, ndim, ome_unit(unit))
    desc = describe(axes, absolute, scale, None, "mean", paths, name)
    return Description(desc.axes, desc.levels, name, None, {})


def _unit_of(*docs: Any) -> Any:
    for doc in docs:
        pr = doc.get("pixelResolution") if isinstance(doc, dict) else None
        if isinstance(pr, dict):
            return pr.get("unit")
    return None


def parse_n5_viewer(
    group_attrs: dict[str, Any],
    level_attrs: Sequence[dict[str, Any]],
    shapes: Sequence[Sequence[int]],
    name: str | None = None,
) -> Description:
    """The pyramid of an n5-viewer group (``s0``, ``s1``, ... with ``level_attrs`` and ``shapes``)."""
    scales = group_attrs.get("scales")
    factors = [
        attrs.get("downsamplingFactors", scales[i] if isinstance(scales, list) and i < len(scales) else None)
        for i, attrs in enumerate(level_attrs)
    ]
    resolution = group_attrs.get("pixelResolution", level_attrs[0].get("pixelResolution"))
    paths = [f"s{i}" for i in range(len(level_attrs))]
    name = name or (group_attrs["name"] if isinstance(group_attrs.get("name"), str) else None)
    return _from_n5(paths, shapes, factors, resolution, _unit_of(group_attrs, *level_attrs), name)


def parse_bdv(
    setup_attrs: dict[str, Any],
    timepoint_attrs: dict[str, Any],
    level_attrs: Sequence[dict[str, Any]],
    shapes: Sequence[Sequence[int]],
    prefix: str,
) -> Description:
    """The pyramid of a BigDataViewer setup: the setup's ``downsamplingFactors`` win over the levels'
    (that is what ``N5ImageLoader`` reads); levels live at ``prefix + "s%d"``."""
    factors = setup_attrs.get("downsamplingFactors")
    if not isinstance(factors, list) or len(factors) < len(level_attrs):
        factors = [attrs.get("downsamplingFactors") for attrs in level_attrs]
    resolution = timepoint_attrs.get("resolution", level_attrs[0].get("pixelResolution"))
    paths = [f"{prefix}s{i}" for i in range(len(level_attrs))]
    return _from_n5(paths, shapes, factors[: len(level_attrs)], resolution, _unit_of(*level_attrs), None)
