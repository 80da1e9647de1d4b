"""What a pyramid is, whatever its layout: :class:`Level` per level and :class:`Multiscale` for the whole
(axes, levels, name, method), always in NumPy (C) order. Each layout's metadata is parsed into these (its
levels not yet opened) and written from them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import MetadataError
from .plan import Axis

__all__ = ["Level", "Multiscale", "describe", "factors_from_scales", "numbers"]


@dataclass(frozen=True)
class Level:
    """One level of a pyramid: ``path`` (inside the pyramid's group), ``factors`` (relative to level 0),
    physical ``scale`` (voxel size) and ``translation`` (offset of voxel 0's centre) per axis, and, once
    opened, ``dataset`` (the :class:`~altarr.Dataset`, read-only) with its ``shape``, ``dtype``,
    ``chunks`` and ``shards``."""

    path: str
    factors: tuple[int, ...]
    scale: tuple[float, ...]
    translation: tuple[float, ...]
    dataset: Any = None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.dataset.shape)

    @property
    def dtype(self) -> np.dtype:
        dtype: np.dtype = self.dataset.dtype
        return dtype

    @property
    def chunks(self) -> tuple[int, ...]:
        return tuple(self.dataset.chunks)

    @property
    def shards(self) -> tuple[int, ...] | None:
        return tuple(self.dataset.shards) if self.dataset.shards else None

    def coords(self, axis: int) -> np.ndarray:
        """The physical coordinate of each voxel centre along ``axis``: ``translation + scale * i``."""
        return self.translation[axis] + self.scale[axis] * np.arange(self.shape[axis], dtype=np.float64)


@dataclass(frozen=True, repr=False, eq=False)
class Multiscale:
    """A pyramid: ``axes``, ``levels`` (finest first), ``name``, downsampling ``method`` (``None`` when the
    metadata does not say), ``views`` in its container (BigDataViewer: setups x timepoints; this is one of
    them), and, once opened, its ``layout`` and the ``group`` it lives in. ``ms[i]`` is a lazy array over
    level ``i``; ``len(ms)`` the number of levels."""

    axes: tuple[Axis, ...]
    levels: tuple[Level, ...]
    name: str | None = None
    method: str | None = None
    views: int = 1
    layout: str = ""
    group: Any = None

    def __repr__(self) -> str:
        shapes = ", ".join("x".join(map(str, lv.shape)) for lv in self.levels)
        return f"<altarr.Multiscale {self.layout} {len(self.levels)} levels ({shapes})>"

    def __len__(self) -> int:
        return len(self.levels)

    def __iter__(self) -> Iterator[Level]:
        return iter(self.levels)

    def __getitem__(self, level: int) -> Any:
        return self.array(level)

    def array(self, level: int) -> Any:
        """A lazy array (as :func:`altarr.open` gives) over level ``level``, its dims the pyramid's axes."""
        from ..lazy import altarr
        from ..lazy.sources import DatasetFetch

        ds = self.levels[level].dataset
        dims = tuple(a.name for a in self.axes)
        return altarr(ds.shape, ds.chunks, DatasetFetch(ds), dtype=ds.dtype, dims=dims)

    def summary(self) -> dict[str, Any]:
        """What ``altarr info`` shows of the pyramid, as a JSON-able dict.

        >>> import numpy as np, altarr as aa
        >>> ms = aa.build_pyramid(np.zeros((8, 8), "u1"), "memory://doc-summary/p", chunks=(4, 4))
        >>> s = ms.summary()
        >>> s.get("layout"), [lv.get("shape") for lv in s.get("levels")]
        ('ome-zarr', [[8, 8], [4, 4]])
        """
        return {
            "layout": self.layout,
            "name": self.name,
            "method": self.method,
            "axes": [a.as_json() for a in self.axes],
            "levels": [
                {
                    "path": lv.path,
                    "shape": list(lv.shape),
                    "chunks": list(lv.chunks),
                    "shards": list(lv.shards) if lv.shards else None,
                    "factors": list(lv.factors),
                    "scale": list(lv.scale),
                    "translation": list(lv.translation),
                }
                for lv in self.levels
            ],
        }

    def selection_at(self, key: Sequence[Any], level: int) -> tuple[Any, ...]:
        """A selection of level 0 (integers and slices of step 1, one per axis) as the selection of the same
        region of level ``level``: integers and slice bounds divided by the level's factors (a slice's end
        rounded up), each kept inside the level.

        >>> import numpy as np, altarr as aa
        >>> ms = aa.build_pyramid(np.zeros((64, 64), "u1"), "memory://doc-sel/p", chunks=(8, 8))
        >>> ms.selection_at((33, slice(10, 41)), 2)
        (8, slice(2, 11, None))
        """
        lv = self.levels[level]
        out: list[Any] = []
        for k, f, n in zip(key, lv.factors, lv.shape, strict=True):
            if isinstance(k, slice):
                start, stop, _ = k.indices(n * f)
                out.append(slice(min(start // f, n), min(-(-stop // f), n)))
            else:
                out.append(min(int(k) // f, n - 1) if int(k) >= 0 else max(n + int(k) // f, 0))
        return tuple(out)

    def level_for(self, shape: Sequence[int]) -> int:
        """The finest level no larger than ``shape`` along every axis where ``shape`` is given (``-1``
        or ``None`` leave an axis free); the coarsest level when none is that small.

        >>> import numpy as np, altarr as aa
        >>> ms = aa.build_pyramid(np.zeros((64, 64), "u1"), "memory://doc-fit/p", chunks=(8, 8))
        >>> ms.level_for((20, 20)), ms.level_for((1000, 1000)), ms.level_for((1, 1))
        (2, 0, 3)
        """
        for i, lv in enumerate(self.levels):
            if all(s is None or s < 0 or n <= s for n, s in zip(lv.shape, shape, strict=True)):
                return i
        return len(self.levels) - 1


def describe(
    axes: Sequence[Axis],
    factors: Sequence[Sequence[int]],
    scale: Sequence[float],
    translation: Sequence[float] | None,
    method: str,
    paths: Sequence[str],
    name: str | None = None,
) -> Multiscale:
    """The pyramid built with ``method``: level ``i`` at ``paths[i]`` with ``factors[i]`` (relative to
    level 0), level 0's voxel size ``scale`` and offset ``translation``; a level's voxels are ``factors``
    times level 0's, and a ``mean`` or ``mode`` voxel, the centre of its window, is shifted by
    ``(factors - 1) / 2`` of them (docs/pyramids.md, "Scale and translation")."""
    base = tuple(float(t) for t in translation) if translation is not None else (0.0,) * len(axes)
    levels = []
    for path, fs in zip(paths, factors, strict=True):
        f = tuple(int(x) for x in fs)
        voxel = tuple(float(v) * x for v, x in zip(scale, f, strict=True))
        shift = tuple(b + 0.5 * (x - 1) * float(v) for b, x, v in zip(base, f, scale, strict=True))
        levels.append(Level(path, f, voxel, base if method == "stride" else shift))
    return Multiscale(tuple(axes), tuple(levels), name, method)


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


def numbers(values: Any, ndim: int, what: str) -> list[float]:
    """``values`` (metadata) as ``ndim`` floats, else a :class:`~altarr.errors.MetadataError` naming ``what``."""
    if not isinstance(values, list) or len(values) != ndim:
        raise MetadataError(f"{what} of {ndim} numbers is required, got {values!r}")
    try:
        return [float(v) for v in values]
    except (TypeError, ValueError):
        raise MetadataError(f"{what} {values!r} is not a list of numbers") from None
