"""Building a pyramid (level 0 a copy of the source, level ``i`` level ``i - 1`` downsampled) and converting
one into another layout (every level copied, its metadata rewritten), every level written destination
shard by destination shard (docs/pyramids.md, "How a pyramid is written", "Converting").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import MetadataError
from .downsample import check_method, downsample, downsampled_shape
from .layouts import LAYOUTS, get_layout, level_layout, write_pyramid
from .levels import Level, Multiscale, describe
from .plan import absolute_factors, normalize_axes, plan_factors, spatial

__all__ = ["build_pyramid", "convert_pyramid", "layout_for_format", "Downsampled", "default_chunks"]

#: Most bytes of the source a unit reads at once (one slab along the first axis).
SLAB_BYTES = 64 << 20


class Downsampled:
    """``source`` (anything indexable by a tuple of slices) downsampled by ``factors`` with ``method``,
    computed on read: ``view[region]`` reads the source region under ``region`` in slabs of at most
    :data:`SLAB_BYTES` along the first axis and returns the downsampled values.

    >>> v = Downsampled(np.arange(10).reshape(2, 5), (2, 2), "mean")
    >>> v.shape, v[:, :]
    ((1, 2), array([[3, 5]]))
    """

    def __init__(self, source: Any, factors: Sequence[int], method: str) -> None:
        self.source, self.factors, self.method = source, tuple(int(f) for f in factors), check_method(method)
        self.shape = downsampled_shape(source.shape, self.factors)
        self.dtype = np.dtype(source.dtype)
        self.ndim = len(self.shape)

    def __getitem__(self, region: tuple[slice, ...]) -> np.ndarray:
        spans = [range(*s.indices(n)) for s, n in zip(region, self.shape, strict=True)]
        if any(r.step != 1 for r in spans):
            raise MetadataError(f"a downsampled view reads contiguous regions, got {region}")
        out = np.empty(tuple(len(r) for r in spans), self.dtype)
        f0 = self.factors[0]
        row_bytes = (
            self.dtype.itemsize
            * f0
            * math.prod(len(r) * f for r, f in zip(spans[1:], self.factors[1:], strict=True))
        )
        rows = max(1, SLAB_BYTES // max(row_bytes, 1))
        rest = tuple(slice(r.start * f, r.stop * f) for r, f in zip(spans[1:], self.factors[1:], strict=True))
        first = spans[0]
        for a in range(first.start, first.stop, rows):
            b = min(a + rows, first.stop)
            block = np.asarray(self.source[(slice(a * f0, b * f0), *rest)])
            out[a - first.start : b - first.start] = downsample(block, self.factors, self.method)
        return out


def default_chunks(shape: Sequence[int], axes: Sequence[Any]) -> tuple[int, ...]:
    """Chunks of a level when none are given: 64 along each spatial axis of a 3-D image, 256 of a 2-D
    one (1-D: 1024), 1 along time and channel axes; never more than the axis.

    >>> default_chunks((2, 100, 1000, 1000), normalize_axes(None, 4))
    (1, 64, 64, 64)
    """
    space = spatial(axes)
    edge = {1: 1024, 2: 256}.get(len(space), 64)
    return tuple(max(1, min(edge if d in space else 1, n)) for d, n in enumerate(shape))


def _source(source: Any) -> Any:
    if isinstance(source, str):
        import altarr as aa

        return aa.open_dataset(source)
    if not hasattr(source, "shape") or not hasattr(source, "dtype"):
        source = np.asarray(source)
    return source


def _steps(
    factors: Any,
    shape: Sequence[int],
    axes: Sequence[Any],
    scale: Sequence[float],
    chunks: Sequence[int],
    levels: Any,
) -> list[tuple[int, ...]]:
    if factors is None:
        return plan_factors(shape, axes, scale, chunks, levels=levels)
    steps = [tuple(int(f) for f in step) for step in factors]
    if any(len(s) != len(shape) or min(s) < 1 for s in steps):
        raise MetadataError(f"factors {factors} must give one positive integer per axis for each level")
    return steps


def build_pyramid(
    source: Any,
    destination: Any,
    *,
    layout: str = "ome-zarr",
    axes: Any = None,
    scale: Sequence[float] | None = None,
    translation: Sequence[float] | None = None,
    unit: str | None = None,
    method: str = "mean",
    factors: Sequence[Sequence[int]] | None = None,
    levels: int | None = None,
    chunks: Sequence[int] | None = None,
    shards: Sequence[int] | None = None,
    name: str | None = None,
    **options: Any,
) -> Any:
    """Build a pyramid of ``source`` (a NumPy or dask array, a :class:`~altarr.Dataset` or its path) at
    ``destination`` (a path, URL or store; ``path``: the group inside it) and return it opened.

    ``layout``: ``"ome-zarr"`` (OME-Zarr 0.5, Zarr v3), ``"ome-zarr-0.4"`` (Zarr v2), ``"n5-viewer"`` or
    ``"bdv"`` (N5). ``axes``: names (``"zyx"``, ``["c", "y", "x"]``), :class:`Axis` objects or OME-Zarr
    axis dicts (default ``y x`` / ``z y x`` / ``c z y x`` / ``t c z y x``); ``scale`` and ``translation``:
    level 0's voxel size and offset per axis; ``unit``: that of the spatial axes without one. ``method``:
    ``"mean"`` (intensities), ``"mode"`` or ``"stride"`` (labels). ``factors``: each level's relative to the
    level above (default :func:`~altarr.multiscale.plan.plan_factors`); ``levels``: how many, level 0
    included (default: until the coarsest fits one chunk). ``chunks`` (default :func:`default_chunks`)
    and ``shards`` (default none): every level's, clipped to smaller levels. ``options`` are
    :func:`~altarr.multiscale.layouts.write_pyramid`'s: ``compressor`` (default ``"zstd"``), ``overwrite``,
    ``resume`` (continue an interrupted build), ``workers`` (destination shards written at once),
    ``progress(value_bytes, units)`` (called after each unit), ``run_units`` (runs units elsewhere, as
    :func:`altarr.transfer.copy_array`) and ``path``.

    >>> import numpy as np, altarr as aa
    >>> image = np.arange(64 * 64, dtype="uint16").reshape(64, 64)
    >>> ms = aa.build_pyramid(image, "memory://doc-build/img.ome.zarr", chunks=(16, 16), shards=(32, 32))
    >>> [lv.shape for lv in ms.levels], ms.levels[1].scale
    ([(64, 64), (32, 32), (16, 16)], (2.0, 2.0))
    """
    fmt, method = get_layout(layout), check_method(method)
    src = _source(source)
    shape, dtype = tuple(int(n) for n in src.shape), np.dtype(src.dtype)
    ax = normalize_axes(axes, len(shape), unit)
    base_scale = tuple(float(s) for s in scale) if scale is not None else (1.0,) * len(shape)
    if len(base_scale) != len(shape) or (translation is not None and len(translation) != len(shape)):
        raise MetadataError(f"scale and translation must give one number per axis of {shape}")
    chunk_shape = tuple(chunks) if chunks is not None else default_chunks(shape, ax)
    steps = _steps(factors, shape, ax, base_scale, chunk_shape, levels)
    shapes = [shape]
    for i, step in enumerate(steps, 1):
        shapes.append(downsampled_shape(shapes[-1], step))
        if 0 in shapes[-1]:
            raise MetadataError(f"level {i} would be empty: {shapes[-2]} downsampled by {tuple(step)}")
    paths = [fmt.level_path(i) for i in range(len(shapes))]
    desc = describe(ax, absolute_factors(steps, len(shape)), base_scale, translation, method, paths, name)

    def values(i: int, previous: Any) -> Any:
        above = src if i == 1 and isinstance(src, np.ndarray) else previous  # NumPy: from memory
        return src if i == 0 else Downsampled(above, steps[i - 1], method)

    creates = [level_layout(s, dtype, chunk_shape, shards) for s in shapes]
    return write_pyramid(destination, fmt, desc, creates, values, **options)


def layout_for_format(fmt: str | None, source_layout: str) -> str:
    """The layout a pyramid in ``source_layout`` is converted to when a copy asks for storage format
    ``fmt``: Zarr v3 -> OME-Zarr 0.5, Zarr v2 -> 0.4, N5 -> the source's N5 layout (n5-viewer when the
    source is OME-Zarr); ``None`` keeps the source's."""
    if fmt is None:
        return source_layout if source_layout in LAYOUTS else "ome-zarr"
    if fmt == "n5":
        return source_layout if source_layout in ("n5-viewer", "bdv") else "n5-viewer"
    if fmt in ("zarr3", "zarr2"):
        return {"zarr3": "ome-zarr", "zarr2": "ome-zarr-0.4"}[fmt]
    raise MetadataError(f"a pyramid cannot be stored as {fmt!r}; use zarr3, zarr2 or n5")


def _shards(shards: Any, level: Any, chunks: tuple[int, ...], can_shard: bool) -> Any:
    """The shards asked for a converted level: ``"same"`` keeps the source level's where the format can
    hold them and they fit the level's ``chunks``."""
    if shards == "same":
        fits = level.shards is not None and not any(b % c for b, c in zip(level.shards, chunks, strict=True))
        return level.shards if can_shard and fits else None
    if shards is not None and not can_shard:
        raise MetadataError("Zarr v2 (OME-Zarr 0.4) cannot hold shards; pass shards=None")
    return shards


def convert_pyramid(
    source: Any,
    destination: Any,
    *,
    layout: str | None = None,
    chunks: Sequence[int] | None = None,
    shards: Any = "same",
    **options: Any,
) -> Any:
    """Copy the pyramid ``source`` (a :class:`Multiscale` or anything :func:`open_multiscale` opens) to
    ``destination`` in ``layout`` (default the source's); returns the new one opened.

    ``chunks`` (default each level's own) and ``shards`` (``"same"``: each level's own where the format
    can hold them; ``None``; or a shape) apply to every level, clipped to smaller ones. ``options`` are
    :func:`build_pyramid`'s.

    >>> import numpy as np, altarr as aa
    >>> ms = aa.build_pyramid(np.arange(4096, dtype="u2").reshape(64, 64), "memory://doc-convert/a",
    ...                       chunks=(16, 16), scale=(0.5, 0.5), unit="micrometer")
    >>> n5 = convert_pyramid(ms, "memory://doc-convert/b.n5", layout="n5-viewer", shards=(32, 32))
    >>> n5.layout, [lv.path for lv in n5.levels], n5.levels[2].scale, n5.levels[0].shards
    ('n5-viewer', ['s0', 's1', 's2'], (2.0, 2.0), (32, 32))
    """
    from .read import open_multiscale

    ms = source if isinstance(source, Multiscale) else open_multiscale(source)
    fmt = get_layout(layout or layout_for_format(None, ms.layout))
    can_shard = fmt.format != "zarr2"
    desc = Multiscale(
        ms.axes,
        tuple(
            Level(fmt.level_path(i), lv.factors, lv.scale, lv.translation) for i, lv in enumerate(ms.levels)
        ),
        ms.name,
        ms.method,
    )
    creates = []
    for lv in ms.levels:
        level_chunks = tuple(min(c, n) for c, n in zip(chunks or lv.chunks, lv.shape, strict=True))
        block = _shards(shards, lv, level_chunks, can_shard)
        creates.append(level_layout(lv.shape, lv.dtype, level_chunks, block))
    return write_pyramid(destination, fmt, desc, creates, lambda i, _: ms.levels[i].dataset, **options)
