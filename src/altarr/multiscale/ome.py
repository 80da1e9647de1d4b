"""OME-Zarr ``multiscales`` metadata, versions 0.5 (Zarr v3) and 0.4 (Zarr v2), written and read
(docs/pyramids.md, "Layouts").
"""

from __future__ import annotations

from typing import Any

from ..errors import MetadataError
from .levels import Level, Multiscale, factors_from_scales, numbers
from .plan import normalize_axes

__all__ = ["ome_attributes", "parse_ome", "ome_version"]


def _transforms(level: Level, shifted: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"type": "scale", "scale": list(level.scale)}]
    if shifted:
        out.append({"type": "translation", "translation": list(level.translation)})
    return out


def ome_attributes(desc: Multiscale, version: str) -> dict[str, Any]:
    """The group attributes of an OME-Zarr ``version`` (``"0.5"`` or ``"0.4"``) image holding the pyramid
    ``desc``."""
    shifted = any(any(t != 0 for t in level.translation) for level in desc.levels)
    entry: dict[str, Any] = {}
    if version == "0.4":
        entry["version"] = "0.4"
    entry["name"] = desc.name or "image"
    entry["axes"] = [a.as_json() for a in desc.axes]
    entry["datasets"] = [
        {"path": level.path, "coordinateTransformations": _transforms(level, shifted)}
        for level in desc.levels
    ]
    if desc.method is not None:
        entry["type"] = desc.method
        entry["metadata"] = {
            "description": f"each level is the {desc.method} of windows of the level above",
            "method": "altarr.multiscale",
            "kwargs": {"method": desc.method},
        }
    if version == "0.4":
        return {"multiscales": [entry]}
    return {"ome": {"version": "0.5", "multiscales": [entry]}}


def ome_version(attrs: dict[str, Any]) -> str | None:
    """The OME-Zarr version of a group's attributes when they describe a multiscale image, else ``None``."""
    ome = attrs.get("ome")
    if isinstance(ome, dict) and "multiscales" in ome:
        return str(ome.get("version", "0.5"))
    ms = attrs.get("multiscales")
    if isinstance(ms, list) and ms and isinstance(ms[0], dict):
        return str(ms[0].get("version", "0.4"))
    return None


def _apply(transforms: Any, scale: list[float], shift: list[float], where: str) -> None:
    """Compose ``transforms`` (scale / translation / identity) after (scale, shift), in place."""
    if transforms is None:
        return
    if not isinstance(transforms, list):
        raise MetadataError(f"{where}: coordinateTransformations must be a list")
    ndim = len(scale)
    for t in transforms:
        kind = t.get("type") if isinstance(t, dict) else None
        if kind == "scale":
            factor = numbers(t.get("scale"), ndim, f"{where}: a scale")
            scale[:] = [s * f for s, f in zip(scale, factor, strict=True)]
            shift[:] = [x * f for x, f in zip(shift, factor, strict=True)]
        elif kind == "translation":
            move = numbers(t.get("translation"), ndim, f"{where}: a translation")
            shift[:] = [x + v for x, v in zip(shift, move, strict=True)]
        elif kind != "identity":
            raise MetadataError(f"{where}: transformation {t!r} is not a scale or a translation")


def parse_ome(attrs: dict[str, Any], index: int = 0) -> Multiscale:
    """The pyramid (levels not opened) described by multiscale entry ``index`` of a group's OME-Zarr
    attributes."""
    version = ome_version(attrs)
    if version is None:
        raise MetadataError("no OME-Zarr 'multiscales' in the group's attributes")
    entries = attrs["ome"]["multiscales"] if "ome" in attrs else attrs["multiscales"]
    if not isinstance(entries, list) or not -len(entries) <= index < len(entries):
        raise MetadataError(f"multiscales entry {index} is not there ({len(entries)} entries)")
    entry = entries[index]
    where = f"OME-Zarr {version} multiscales[{index}]"
    if not isinstance(entry, dict):
        raise MetadataError(f"{where} must be an object, got {entry!r}")
    if not isinstance(entry.get("axes"), list):  # 0.3 and before: names only, the usual ones
        raise MetadataError(f"{where}: no 'axes' list (OME-Zarr before 0.4 is not read)")
    try:
        axes = normalize_axes(entry["axes"], len(entry["axes"]))
    except MetadataError as e:
        raise MetadataError(f"{where}: {e}") from None
    datasets = entry.get("datasets")
    if not isinstance(datasets, list) or not datasets:
        raise MetadataError(f"{where}: 'datasets' must be a non-empty list")
    paths, scales, shifts = [], [], []
    for i, ds in enumerate(datasets):
        if not isinstance(ds, dict) or not isinstance(ds.get("path"), str):
            raise MetadataError(f"{where}: datasets[{i}] has no path")
        scale, shift = [1.0] * len(axes), [0.0] * len(axes)
        _apply(ds.get("coordinateTransformations"), scale, shift, f"{where} datasets[{i}]")
        _apply(entry.get("coordinateTransformations"), scale, shift, where)
        paths.append(ds["path"])
        scales.append(tuple(scale))
        shifts.append(tuple(shift))
    levels = zip(paths, factors_from_scales(scales), scales, shifts, strict=True)
    layout = "ome-zarr" if version.startswith("0.5") else f"ome-zarr-{version}"
    return Multiscale(
        axes, tuple(Level(*lv) for lv in levels), entry.get("name"), entry.get("type"), layout=layout
    )
