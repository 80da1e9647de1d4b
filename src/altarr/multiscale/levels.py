"""What every layout's metadata says about a pyramid, in one form: :class:`LevelSpec` per level and
:class:`Description` for the whole (axes, levels, name, method), always in NumPy (C) order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .plan import Axis, level_transform

__all__ = ["LevelSpec", "Description", "describe", "factors_from_scales"]


@dataclass(frozen=True)
class LevelSpec:
    """One level: its ``path`` inside the pyramid's group, its ``factors`` relative to level 0 and its
    physical ``scale`` (voxel size) and ``translation`` (offset of voxel 0's centre), per axis."""

    path: str
    factors: tuple[int, ...]
    scale: tuple[float, ...]
    translation: tuple[float, ...]


@dataclass(frozen=True)
class Description:
    """A pyramid as its metadata describes it: axes, levels (finest first), name, downsampling method
    (``None`` when the metadata does not say) and the layout's extra facts (``extra``)."""

    axes: tuple[Axis, ...]
    levels: tuple[LevelSpec, ...]
    name: str | None = None
    method: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def describe(
    axes: Sequence[Axis],
    factors: Sequence[Sequence[int]],
    scale: Sequence[float],
    translation: Sequence[float] | None,
    method: str,
    paths: Sequence[str],
    name: str | None = None,
) -> Description:
    """The description of a pyramid built with ``method``: level ``i`` at ``paths[i]`` with
    ``factors[i]`` (relative to level 0), level 0's voxel size ``scale`` and offset ``translation``."""
    base = tuple(float(t) for t in translation) if translation is not None else (0.0,) * len(axes)
    levels = []
    for path, f in zip(paths, factors, strict=True):
        s, t = level_transform(f, scale, base, method)
        levels.append(LevelSpec(path, tuple(int(x) for x in f), s, t))
    return Description(tuple(axes), tuple(levels), name, method)


def factors_from_scales(scales: Sequence[Sequence[float]]) -> list[tuple[int, ...]]:
    """Integer factors of each level relative to the first from their voxel sizes (rounded: a level
    written with factor 2 in float32 is still 2).

    >>> factors_from_scales([(0.5, 1.0), (1.0, 2.0), (2.0, 4.000001)])
    [(1, 1), (2, 2), (4, 4)]
    """
    first = scales[0]
    return [
        tuple(max(1, round(float(s) / float(b))) if b else 1 for s, b in zip(level, first, strict=True))
        for level in scales
    ]
