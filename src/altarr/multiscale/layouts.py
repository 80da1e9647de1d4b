"""The four pyramid layouts altarr writes (where the levels go, in which format, the metadata each gets;
the table: docs/pyramids.md, "Layouts"), and writing a pyramid in one of them: each level by
:func:`altarr.transfer.write_units` (one unit per destination shard, resumable from its journal), then the
metadata, for :func:`~altarr.multiscale.build_pyramid` and :func:`~altarr.multiscale.convert_pyramid`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import AltarrError, ExistsError, MetadataError
from .levels import Multiscale
from .n5 import bdv_attributes, n5_viewer_attributes
from .ome import ome_attributes

__all__ = ["Layout", "get_layout", "LAYOUTS", "write_pyramid", "level_layout"]


@dataclass(frozen=True)
class Layout:
    """One layout: its ``name``, storage ``format``, the ``prefix`` of its level paths (level ``i`` is
    ``prefix + str(i)``) and the ``groups`` between the pyramid's group and its levels."""

    name: str
    format: str
    prefix: str = ""
    groups: tuple[str, ...] = ()

    def level_path(self, level: int) -> str:
        """The path of level ``level`` inside the pyramid's group."""
        return f"{self.prefix}{level}"

    def attributes(self, ms: Multiscale, dtype: Any) -> dict[str, dict[str, Any]]:
        """Attributes by node path (``""`` the pyramid's group), written once every level is complete."""
        if self.format != "n5":
            return {"": ome_attributes(ms, "0.5" if self.format == "zarr3" else "0.4")}
        return n5_viewer_attributes(ms) if self.name == "n5-viewer" else bdv_attributes(ms, dtype)


#: Layout name -> layout (``"ome-zarr"`` is OME-Zarr 0.5).
LAYOUTS = {
    "ome-zarr": Layout("ome-zarr", "zarr3"),
    "ome-zarr-0.4": Layout("ome-zarr-0.4", "zarr2"),
    "n5-viewer": Layout("n5-viewer", "n5", "s"),
    "bdv": Layout("bdv", "n5", "setup0/timepoint0/s", ("setup0", "setup0/timepoint0")),
}
_ALIASES = {
    "ome-zarr-0.5": "ome-zarr",
    "ome": "ome-zarr",
    "zarr3": "ome-zarr",
    "zarr2": "ome-zarr-0.4",
    "n5": "n5-viewer",
}


def get_layout(name: str) -> Layout:
    """The layout called ``name`` (``ome-zarr``/``ome-zarr-0.5``, ``ome-zarr-0.4``, ``n5-viewer``, ``bdv``).

    >>> get_layout("n5").name
    'n5-viewer'
    """
    layout = LAYOUTS.get(_ALIASES.get(name, name))
    if layout is None:
        raise MetadataError(f"unknown pyramid layout {name!r}; use one of {', '.join(LAYOUTS)}")
    return layout


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


def _level(root: Any, layout: Layout, ms: Multiscale, i: int, create: dict[str, Any], resume: bool) -> Any:
    """The dataset of level ``i`` and its units done: the existing one when resuming (same layout), else
    a new one."""
    from ..transfer import read_journal

    path = ms.levels[i].path
    ds = root.get(path) if resume else None  # one probe of the level
    if ds is not None:
        have = (ds.shape, ds.dtype, tuple(ds.chunks), ds.shards and tuple(ds.shards))
        if have != (create["shape"], np.dtype(create["dtype"]), tuple(create["chunks"]), create["shards"]):
            raise ExistsError(f"cannot resume: level {path} exists with another layout", key=ds.path)
        return ds, read_journal(ds)
    names: dict[str, dict[str, Any]] = {
        "zarr3": {"dimension_names": [a.name for a in ms.axes]},
        "zarr2": {"dimension_separator": "/"},
    }
    return root.create_dataset(path, format=layout.format, **create, **names.get(layout.format, {})), set()


def write_pyramid(
    destination: Any,
    layout: Layout,
    ms: Multiscale,
    creates: Sequence[dict[str, Any]],
    values: Callable[[int, Any], Any],
    *,
    compressor: Any = "zstd",
    overwrite: bool = False,
    resume: bool = False,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    run_units: Callable[[Any, Any, list], Iterator[tuple[int, int]]] | None = None,
    path: str = "",
) -> Any:
    """Write the pyramid ``ms`` in ``layout`` at ``destination``: level ``i`` is created with
    ``creates[i]`` (shape, dtype, chunks, shards) and filled from ``values(i, level i - 1 as written)``
    (anything ``write_units`` reads regions of); then the metadata. Returns it opened. ``compressor`` as
    :func:`altarr.create_dataset` takes it, or text such as ``"zstd:5"``."""
    import altarr as aa

    from ..transfer import parse_codec, write_units
    from .read import open_multiscale

    if isinstance(compressor, str) or compressor is None:
        compressor = parse_codec(compressor or "none", layout.format, creates[0]["dtype"])
    root = None
    if resume:
        with suppress(AltarrError):  # nothing to resume: created below
            root = aa.open_group(destination, mode="r+", path=path)
    if root is None:
        root = aa.create_group(destination, format=layout.format, overwrite=overwrite, path=path)
    for group in layout.groups:
        if group not in root:
            root.create_group(group)
    previous = None
    for i, create in enumerate(creates):
        ds, done = _level(root, layout, ms, i, {**create, "compressor": compressor}, resume)
        if done is not None:  # None: the level is complete (its journal is gone)
            write_units(
                values(i, previous), ds, done, workers=workers, progress=progress, run_units=run_units
            )
        previous = ds
    for node, attrs in layout.attributes(ms, creates[0]["dtype"]).items():
        (root[node] if node else root).attrs.update(attrs)
    return open_multiscale(root)
