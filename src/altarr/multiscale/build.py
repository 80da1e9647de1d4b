"""Building a pyramid: every level written destination shard by destination shard.

Level 0 is a copy of the source; level ``i`` is level ``i - 1`` downsampled (:mod:`.downsample`),
read back from the level just written (or from the source itself while that is a NumPy array in
memory). Each level is written by :func:`altarr.transfer.write_units`, the loop under ``altarr copy``:
one unit per destination shard (a block of whole chunks when unsharded), so each stored object is
written once, in one call, memory stays at a few units, units run on threads (``workers``) or on a
dask.distributed cluster (``run_units``), and an interrupted build resumes (``resume=True``) from the
per-level journal. A unit reads the source region under its shard in slabs along the first axis, so a
unit of level ``i`` holds its output and one slab of level ``i - 1``. The multiscale metadata is
written last, once every level is complete, so a reader never sees a level that is not there.

Example:
    >>> import numpy as np, altarr as aa
    >>> image = np.arange(64 * 64, dtype="uint16").reshape(64, 64)
    >>> ms = aa.build_pyramid(image, "memory://doc-build/img.ome.zarr", chunks=(16, 16), shards=(32, 32))
    >>> [lv.shape for lv in ms.levels], ms.levels[1].scale
    ([(64, 64), (32, 32), (16, 16)], (2.0, 2.0))
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..errors import MetadataError
from .downsample import check_method, downsample, downsampled_shape
from .layouts import get_layout
from .levels import describe
from .plan import absolute_factors, normalize_axes, plan_factors, spatial
from .write import level_layout, write_pyramid

__all__ = ["build_pyramid", "Downsampled", "default_chunks"]

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

    def __getstate__(self) -> dict[str, Any]:
        # a dataset travels as its location (a dask.distributed worker opens it again); arrays as values
        state = dict(self.__dict__)
        src = state["source"]
        if hasattr(src, "store") and hasattr(src, "read_chunks"):
            state["source"] = ("altarr-dataset", src.store, src.path)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        src = state["source"]
        if isinstance(src, tuple) and src[:1] == ("altarr-dataset",):
            import altarr as aa

            state["source"] = aa.open_dataset(src[1], path=src[2])
        self.__dict__.update(state)

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


def _level_shapes(shape: Sequence[int], steps: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    shapes = [tuple(int(n) for n in shape)]
    for i, step in enumerate(steps, 1):
        shapes.append(downsampled_shape(shapes[-1], step))
        if 0 in shapes[-1]:
            raise MetadataError(f"level {i} would be empty: {shapes[-2]} downsampled by {tuple(step)}")
    return shapes


def _plan(
    source: Any,
    layout: str,
    axes: Any,
    scale: Sequence[float] | None,
    translation: Sequence[float] | None,
    unit: str | None,
    method: str,
    factors: Any,
    levels: int | None,
    chunks: Sequence[int] | None,
    shards: Sequence[int] | None,
    name: str | None,
) -> tuple[Any, Any, Any, list[tuple[int, ...]], list[dict[str, Any]]]:
    """What :func:`build_pyramid` writes: the layout, the source, the description, each level's factors
    relative to the one above, each level's dataset."""
    fmt = get_layout(layout)
    check_method(method)
    src = _source(source)
    shape, dtype = tuple(int(n) for n in src.shape), np.dtype(src.dtype)
    ax = normalize_axes(axes, len(shape), unit)
    base_scale = tuple(float(s) for s in scale) if scale is not None else (1.0,) * len(shape)
    if len(base_scale) != len(shape) or (translation is not None and len(translation) != len(shape)):
        raise MetadataError(f"scale and translation must give one number per axis of {shape}")
    chunk_shape = tuple(chunks) if chunks is not None else default_chunks(shape, ax)
    steps = _steps(factors, shape, ax, base_scale, chunk_shape, levels)
    shapes = _level_shapes(shape, steps)
    paths = [fmt.level_path(i) for i in range(len(shapes))]
    desc = describe(ax, absolute_factors(steps, len(shape)), base_scale, translation, method, paths, name)
    return fmt, src, desc, steps, [level_layout(s, dtype, chunk_shape, shards) for s in shapes]


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
    compressor: Any = "zstd",
    name: str | None = None,
    overwrite: bool = False,
    resume: bool = False,
    workers: int = 1,
    path: str = "",
    progress: Callable[[int, int], None] | None = None,
    run_units: Callable[[Any, Any, list], Iterator[tuple[int, int]]] | None = None,
) -> Any:
    """Build a pyramid of ``source`` at ``destination`` and return it opened (:class:`Multiscale`).

    Args:
        source: a NumPy or dask array, a :class:`~altarr.Dataset`, or the path of one.
        destination: a path, URL or store for the pyramid's group.
        layout: ``"ome-zarr"`` (OME-Zarr 0.5, Zarr v3), ``"ome-zarr-0.4"`` (Zarr v2), ``"n5-viewer"`` or
            ``"bdv"`` (N5; see :mod:`altarr.multiscale.layouts`).
        axes: axis names (``"zyx"``, ``["c", "y", "x"]``), :class:`Axis` objects or OME-Zarr axis dicts;
            default ``y x`` / ``z y x`` / ``c z y x`` / ``t c z y x``.
        scale: level 0's voxel size per axis (default 1).
        translation: level 0's offset per axis (default 0).
        unit: the unit of the spatial axes that have none (``"micrometer"``).
        method: ``"mean"`` (intensities), ``"mode"`` or ``"stride"`` (labels); see :mod:`.downsample`.
        factors: the factors of each level relative to the level above (default: planned by
            :func:`~altarr.multiscale.plan.plan_factors`, which keeps anisotropic axes until the others
            catch up).
        levels: the number of levels, level 0 included (default: until the coarsest fits one chunk).
        chunks: the chunk shape of every level (clipped to smaller levels); default
            :func:`default_chunks`.
        shards: the shard shape of every level (clipped likewise); default none.
        compressor: as :func:`altarr.create_dataset` takes it, or ``"zstd:5"``-style text.
        name: the image's name in the metadata.
        overwrite: replace an existing pyramid.
        resume: continue an interrupted build (complete levels are kept, the level in progress
            continues from its journal).
        workers: destination shards written at once.
        progress: called as ``progress(value_bytes, units)`` after each unit.
        run_units: runs units elsewhere (as :func:`altarr.transfer.copy_array` takes it).
        path: the group's path inside ``destination``.
    """
    fmt, src, desc, steps, creates = _plan(
        source,
        layout,
        axes,
        scale,
        translation,
        unit,
        method,
        factors,
        levels,
        chunks,
        shards,
        name,
    )

    def values(i: int, previous: Any) -> Any:
        if i == 0:
            return src
        # level i reads level i - 1: from memory while the source is a NumPy array, else as written
        above = src if i == 1 and isinstance(src, np.ndarray) else previous
        return Downsampled(above, steps[i - 1], method)

    return write_pyramid(
        destination,
        fmt,
        desc,
        creates,
        values,
        compressor=compressor,
        overwrite=overwrite,
        resume=resume,
        workers=workers,
        progress=progress,
        run_units=run_units,
        path=path,
    )
