"""The plan of a pyramid: its axes (name, type, unit), the factors of each level and each level's
physical scale and translation (the rules: docs/pyramids.md, "Downsampling").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import MetadataError

__all__ = ["Axis", "normalize_axes", "plan_factors", "spatial", "absolute_factors"]

_NAME_TYPES = {"t": "time", "c": "channel", "x": "space", "y": "space", "z": "space"}
#: Most levels a pyramid is planned with (a safety bound; 2**32 voxels per axis would need 32).
MAX_LEVELS = 40


@dataclass(frozen=True)
class Axis:
    """One axis of a pyramid: ``name``, ``type`` (``"space"``, ``"time"``, ``"channel"``, other or
    ``None``) and ``unit`` (a UDUNITS name such as ``"micrometer"``, or ``None``).

    >>> Axis("z", "space", "micrometer").as_json()
    {'name': 'z', 'type': 'space', 'unit': 'micrometer'}
    """

    name: str
    type: str | None = None
    unit: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The OME-Zarr ``axes`` entry (absent fields left out)."""
        doc: dict[str, Any] = {"name": self.name}
        if self.type is not None:
            doc["type"] = self.type
        if self.unit is not None:
            doc["unit"] = self.unit
        return doc


def _one_axis(item: Any, unit: str | None) -> Axis:
    if isinstance(item, Axis):
        return item if item.unit or unit is None or item.type != "space" else Axis(item.name, item.type, unit)
    if isinstance(item, str):
        kind = _NAME_TYPES.get(item.lower())
        return Axis(item, kind, unit if kind == "space" else None)
    if isinstance(item, dict) and isinstance(item.get("name"), str):
        kind, own = item.get("type"), item.get("unit")
        return Axis(item["name"], kind, own if own is not None or kind != "space" else unit)
    raise MetadataError(f"axis {item!r} has no name (an axis is a name, an Axis or a dict with a 'name')")


def normalize_axes(axes: Any, ndim: int, unit: str | None = None) -> tuple[Axis, ...]:
    """The axes of an ``ndim``-dimensional pyramid from ``axes`` (``None``, names, ``Axis`` objects or
    OME-Zarr ``axes`` dicts); ``unit`` is given to the spatial axes that have none.

    >>> normalize_axes(["c", "y", "x"], 3, "micrometer")[2]
    Axis(name='x', type='space', unit='micrometer')
    """
    if axes is None:
        axes = list("tczyx"[-ndim:]) if ndim <= 5 else [f"dim_{d}" for d in range(ndim - 3)] + list("zyx")
    if isinstance(axes, str):  # "zyx" or "z,y,x"
        axes = axes.split(",") if "," in axes else list(axes)
    out = tuple(_one_axis(a, unit) for a in axes)
    if len(out) != ndim:
        raise MetadataError(f"{len(out)} axes {[a.name for a in out]} given for a {ndim}-d array")
    if len({a.name for a in out}) != ndim:
        raise MetadataError(f"axis names must be unique, got {[a.name for a in out]}")
    return out


def spatial(axes: Sequence[Axis]) -> list[int]:
    """The indices of the spatial axes (every axis when none is typed ``space``)."""
    found = [d for d, a in enumerate(axes) if a.type == "space"]
    return found or list(range(len(axes)))


def plan_factors(
    shape: Sequence[int],
    axes: Sequence[Axis],
    scale: Sequence[float],
    chunks: Sequence[int],
    *,
    levels: int | None = None,
) -> list[tuple[int, ...]]:
    """The factors of each level below level 0, relative to the level above: a spatial axis is halved
    when its spacing is at most ``sqrt(2)`` times the finest spatial spacing and it has at least 2 voxels;
    until the level fits in one chunk along every spatial axis (or ``levels`` levels, level 0 included).

    >>> plan_factors((300, 300), normalize_axes(None, 2), (1.0, 1.0), (64, 64))
    [(2, 2), (2, 2), (2, 2)]
    """
    if levels is not None and not 1 <= levels <= MAX_LEVELS:
        raise MetadataError(f"levels must be between 1 and {MAX_LEVELS}, got {levels}")
    space = spatial(axes)
    size, spacing = list(shape), [abs(float(s)) or 1.0 for s in scale]
    out: list[tuple[int, ...]] = []
    while len(out) + 1 < (levels or MAX_LEVELS):
        if levels is None and all(size[d] <= chunks[d] for d in space):
            break
        can = [d for d in space if size[d] >= 2]
        if not can:
            break
        finest = min(spacing[d] for d in can)
        step = [1] * len(shape)
        for d in can:
            if spacing[d] <= math.sqrt(2) * finest * (1 + 1e-9):
                step[d] = 2
                size[d] //= 2
                spacing[d] *= 2
        out.append(tuple(step))
    return out


def absolute_factors(steps: Sequence[Sequence[int]], ndim: int) -> list[tuple[int, ...]]:
    """The factors of every level relative to level 0 (level 0 included) from the per-level steps."""
    out = [(1,) * ndim]
    for step in steps:
        out.append(tuple(a * int(s) for a, s in zip(out[-1], step, strict=True)))
    return out
