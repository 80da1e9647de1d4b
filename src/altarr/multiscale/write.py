"""Writing a pyramid's levels (each by :func:`altarr.transfer.write_units`, one unit per destination shard,
resumable from its journal) and then its metadata, for :func:`~altarr.multiscale.build_pyramid` and
:func:`~altarr.multiscale.convert_pyramid`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..errors import AltarrError, ExistsError
from .layouts import Layout
from .levels import Multiscale

__all__ = ["write_pyramid", "level_layout"]


def level_layout(
    shape: tuple[int, ...], dtype: Any, chunks: Sequence[int], shards: Sequence[int] | None
) -> dict[str, Any]:
    """A level's dataset: its shape, the dtype, ``chunks`` clipped to the shape and ``shards`` (or
    ``None``) no larger than the shape needs, still multiples of the chunks.

    >>> level_layout((10, 3), "u1", (4, 4), (16, 16))
    {'shape': (10, 3), 'dtype': 'u1', 'chunks': (4, 3), 'shards': (12, 3)}
    """
    chunks = tuple(min(c, n) for c, n in zip(chunks, shape, strict=True))
    if shards is not None:
        shards = tuple(min(b, -(-n // c) * c) for b, n, c in zip(shards, shape, chunks, strict=True))
    return {"shape": shape, "dtype": dtype, "chunks": chunks, "shards": shards}


def _root(destination: Any, layout: Layout, overwrite: bool, resume: bool, path: str) -> Any:
    import altarr as aa

    if resume:
        try:
            return aa.open_group(destination, mode="r+", path=path)
        except AltarrError:
            pass
    return aa.create_group(destination, format=layout.format, overwrite=overwrite, path=path)


def _level(
    root: Any, layout: Layout, desc: Multiscale, i: int, create: dict[str, Any], resume: bool
) -> tuple[Any, set[int] | None]:
    """The dataset of level ``i``: the existing one when resuming (same layout), else a new one."""
    from ..transfer import read_journal

    path = desc.levels[i].path
    if resume and path in root:
        ds = root[path]
        if (ds.shape, ds.dtype, tuple(ds.chunks), ds.shards and tuple(ds.shards)) != (
            create["shape"],
            np.dtype(create["dtype"]),
            tuple(create["chunks"]),
            create["shards"],
        ):
            raise ExistsError(f"cannot resume: level {path} exists with another layout", key=ds.path)
        return ds, read_journal(ds)
    options = layout.level_options(desc, i)
    ds = root.create_dataset(path, format=layout.format, **create, **options)
    return ds, set()


def write_pyramid(
    destination: Any,
    layout: Layout,
    desc: Multiscale,
    creates: Sequence[dict[str, Any]],
    values: Callable[[int, Any], Any],
    *,
    compressor: Any,
    overwrite: bool = False,
    resume: bool = False,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    run_units: Callable[[Any, Any, list], Iterator[tuple[int, int]]] | None = None,
    path: str = "",
) -> Any:
    """Write the pyramid ``desc`` in ``layout`` at ``destination``: level ``i`` is created with
    ``creates[i]`` (shape, dtype, chunks, shards) and filled from ``values(i, level i - 1 as written)``
    (anything ``write_units`` reads regions of); then the metadata. Returns it opened. ``compressor`` as
    :func:`altarr.create_dataset` takes it, or text such as ``"zstd:5"``."""
    from ..transfer import parse_codec, write_units
    from .read import open_multiscale

    if isinstance(compressor, str) or compressor is None:
        compressor = parse_codec(compressor or "none", layout.format, creates[0]["dtype"])

    root = _root(destination, layout, overwrite, resume, path)
    for group in layout.groups:
        if group not in root:
            root.create_group(group)
    previous = None
    for i, create in enumerate(creates):
        ds, done = _level(root, layout, desc, i, {**create, "compressor": compressor}, resume)
        if done is not None:
            write_units(
                values(i, previous), ds, done, workers=workers, progress=progress, run_units=run_units
            )
        previous = ds
    level_paths = {lv.path for lv in desc.levels}
    for node, attrs in layout.node_attributes(desc, creates[0]["dtype"]).items():
        if node not in level_paths:
            (root if not node else root[node]).attrs.update(attrs)
    return open_multiscale(root)
