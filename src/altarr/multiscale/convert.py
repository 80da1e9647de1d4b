"""Converting a pyramid into another layout, every level copied shard by shard and its metadata rewritten
(docs/pyramids.md, "Converting").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..errors import MetadataError
from .layouts import LAYOUTS, get_layout, level_layout, write_pyramid
from .levels import Level, Multiscale

__all__ = ["convert_pyramid", "layout_for_format"]


def layout_for_format(fmt: str | None, source_layout: str) -> str:
    """The layout a pyramid in ``source_layout`` is converted to when a copy asks for storage format
    ``fmt``: Zarr v3 -> OME-Zarr 0.5, Zarr v2 -> 0.4, N5 -> the source's N5 layout (n5-viewer when the
    source is OME-Zarr); ``None`` keeps the source's.

    >>> layout_for_format("n5", "ome-zarr"), layout_for_format("n5", "bdv"), layout_for_format(None, "bdv")
    ('n5-viewer', 'bdv', 'bdv')
    """
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
    compressor: Any = "zstd",
    overwrite: bool = False,
    resume: bool = False,
    workers: int = 1,
    path: str = "",
    progress: Callable[[int, int], None] | None = None,
    run_units: Callable[[Any, Any, list], Iterator[tuple[int, int]]] | None = None,
) -> Any:
    """Copy the pyramid ``source`` (a :class:`Multiscale` or anything :func:`open_multiscale` opens) to
    ``destination`` in ``layout`` (default the source's); returns the new one opened.

    ``chunks`` (default each level's own) and ``shards`` (``"same"``: each level's own where the format
    can hold them; ``None``; or a shape) apply to every level, clipped to smaller ones. The other
    arguments are :func:`build_pyramid`'s.

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
    return write_pyramid(
        destination,
        fmt,
        desc,
        creates,
        lambda i, _: ms.levels[i].dataset,
        compressor=compressor,
        overwrite=overwrite,
        resume=resume,
        workers=workers,
        progress=progress,
        run_units=run_units,
        path=path,
    )
