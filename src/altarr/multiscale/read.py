"""Opening a pyramid: :func:`open_multiscale` finds the layout from the group's metadata and lists the
levels with their physical scale and translation; each level opens as a dataset or a lazy array.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import AltarrError, MetadataError
from .levels import Level, Multiscale
from .n5 import read_n5
from .ome import ome_version, parse_ome

__all__ = ["open_multiscale", "is_multiscale", "multiscale_or_none"]


def _describe(group: Any, setup: int, timepoint: int, index: int) -> Multiscale:
    """The pyramid in ``group`` (its levels not opened), recognised by its metadata: OME-Zarr
    ``multiscales``, else (N5) BigDataViewer setups or n5-viewer's ``s0``, ``s1``, ..."""
    attrs = dict(group.attrs)
    if ome_version(attrs) is not None:
        return parse_ome(attrs, index)
    if group.format != "n5":
        raise MetadataError(
            "no multiscale metadata (OME-Zarr multiscales) in this group", key=group.path or "/"
        )
    return read_n5(group, setup, timepoint)


def open_multiscale(
    location: Any,
    *,
    path: str = "",
    setup: int = 0,
    timepoint: int = 0,
    index: int = 0,
    **storage_options: Any,
) -> Multiscale:
    """Open the pyramid at ``location`` (a path, URL, store or :class:`~altarr.Group`).

    ``setup`` and ``timepoint`` choose the view of a BigDataViewer N5 container; ``index`` the entry of
    an OME-Zarr ``multiscales`` list. Every level's shape must shrink (or stay) along every axis.

    >>> import numpy as np, altarr as aa
    >>> _ = aa.build_pyramid(np.ones((40, 40), "f4"), "memory://doc-read/p", chunks=(8, 8), levels=3)
    >>> ms = aa.open_multiscale("memory://doc-read/p")
    >>> ms.layout, [lv.factors for lv in ms.levels], float(ms.array(2).sum())
    ('ome-zarr', [(1, 1), (2, 2), (4, 4)], 100.0)
    """
    import altarr as aa

    group = (
        location if isinstance(location, aa.Group) else aa.open_group(location, path=path, **storage_options)
    )
    return _opened(group, _describe(group, setup, timepoint, index))


def _opened(group: Any, desc: Multiscale) -> Multiscale:
    """The pyramid ``desc`` of ``group`` with its levels opened and checked."""
    levels: list[Level] = []
    for spec in desc.levels:
        try:
            ds = spec.dataset if spec.dataset is not None else group[spec.path]
        except AltarrError as e:
            raise MetadataError(
                f"level {spec.path!r} of the {desc.layout} pyramid cannot be opened: {e}"
            ) from e
        if not hasattr(ds, "shape") or len(ds.shape) != len(desc.axes):
            raise MetadataError(f"level {spec.path!r} is not a {len(desc.axes)}-d array", key=spec.path)
        levels.append(replace(spec, dataset=ds))
    for a, b in zip(levels, levels[1:], strict=False):
        if any(m > n for m, n in zip(b.shape, a.shape, strict=True)):
            raise MetadataError(f"level {b.path!r} {b.shape} is larger than level {a.path!r} {a.shape}")
    return replace(desc, levels=tuple(levels), group=group)


def _described(group: Any) -> Multiscale | None:
    """The first pyramid of ``group`` as its metadata describes it (levels not opened), or ``None``."""
    try:
        return _describe(group, 0, 0, 0)
    except AltarrError:
        return None


def is_multiscale(group: Any) -> bool:
    """Whether ``group`` holds a pyramid :func:`open_multiscale` can open (metadata only)."""
    return _described(group) is not None


def multiscale_or_none(group: Any) -> Multiscale | None:
    """:func:`open_multiscale` of ``group`` where :func:`is_multiscale`, else ``None``: its metadata read
    once, where the two calls read it twice."""
    desc = _described(group)
    return None if desc is None else _opened(group, desc)
