"""Opening a pyramid: :func:`open_multiscale` finds the layout from the group's metadata and lists the
levels with their physical scale and translation; each level opens as a dataset or a lazy array.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..errors import AltarrError, MetadataError
from .levels import Description
from .n5 import parse_bdv, parse_n5_viewer
from .ome import ome_version, parse_ome
from .plan import Axis

__all__ = ["open_multiscale", "Multiscale", "Level", "is_multiscale"]


@dataclass(frozen=True)
class Level:
    """One level of an opened pyramid: ``path`` (inside the pyramid's group), ``shape``, ``dtype``,
    ``chunks``, ``shards``, ``factors`` (relative to level 0), physical ``scale`` and ``translation``,
    and ``dataset`` (the :class:`~altarr.Dataset`, opened read-only)."""

    path: str
    shape: tuple[int, ...]
    dtype: np.dtype
    chunks: tuple[int, ...]
    shards: tuple[int, ...] | None
    factors: tuple[int, ...]
    scale: tuple[float, ...]
    translation: tuple[float, ...]
    dataset: Any

    def coords(self, axis: int) -> np.ndarray:
        """The physical coordinate of each voxel centre along ``axis``: ``translation + scale * i``."""
        return self.translation[axis] + self.scale[axis] * np.arange(self.shape[axis], dtype=np.float64)


class Multiscale:
    """An opened pyramid: ``layout``, ``axes``, ``levels`` (finest first), ``name``, ``method`` and the
    ``group`` it lives in. ``ms[i]`` is a lazy array over level ``i``; ``len(ms)`` the number of levels."""

    def __init__(self, group: Any, layout: str, desc: Description, levels: Sequence[Level]) -> None:
        self.group, self.layout, self.description = group, layout, desc
        self.axes: tuple[Axis, ...] = desc.axes
        self.levels: tuple[Level, ...] = tuple(levels)
        self.name, self.method = desc.name, desc.method
        #: views in the container (BigDataViewer: setups x timepoints); this object is one of them
        self.views: int = int(desc.extra.get("views", 1))

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


def _child_attrs(group: Any, path: str) -> dict[str, Any]:
    return dict(group[path].attrs) if path in group else {}


def _levels_named_s(group: Any, prefix: str = "") -> list[Any]:
    out: list[Any] = []
    while f"{prefix}s{len(out)}" in group:
        node = group[f"{prefix}s{len(out)}"]
        if not hasattr(node, "shape"):
            break
        out.append(node)
    return out


def _bdv_views(group: Any, setup_path: str) -> int:
    """How many (setup, timepoint) views a BigDataViewer container opened at ``group`` holds: its setups
    times the timepoints of the opened one (1 for a setup group with one timepoint)."""
    setups = sum(1 for name in group.keys() if re.fullmatch(r"setup\d+", name)) if setup_path else 1
    holder = group[setup_path.rstrip("/")] if setup_path else group
    timepoints = sum(1 for name in holder.keys() if re.fullmatch(r"timepoint\d+", name))
    return max(setups, 1) * max(timepoints, 1)


def _describe(group: Any, setup: int, timepoint: int, index: int) -> tuple[str, Description]:
    """The layout and description of the pyramid in ``group``, recognised by its metadata: OME-Zarr
    ``multiscales``, BigDataViewer setups (a list of ``downsamplingFactors``), n5-viewer's ``s0``, ``s1``."""
    attrs = dict(group.attrs)
    version = ome_version(attrs)
    if version is not None:
        return ("ome-zarr" if version.startswith("0.5") else f"ome-zarr-{version}"), parse_ome(attrs, index)
    if group.format != "n5":
        raise MetadataError(
            "no multiscale metadata (OME-Zarr multiscales) in this group", key=group.path or "/"
        )
    setup_path = f"setup{setup}/" if f"setup{setup}" in group else ""
    setup_attrs = _child_attrs(group, setup_path.rstrip("/")) if setup_path else attrs
    factors = setup_attrs.get("downsamplingFactors")
    if isinstance(factors, list) and factors and isinstance(factors[0], list):
        prefix = f"{setup_path}timepoint{timepoint}/"
        datasets = _levels_named_s(group, prefix)
        if not datasets:
            raise MetadataError(f"BigDataViewer setup without levels at {prefix}s0", key=group.path or "/")
        tp = _child_attrs(group, prefix.rstrip("/"))
        shapes = [ds.shape for ds in datasets]
        desc = parse_bdv(setup_attrs, tp, [dict(ds.attrs) for ds in datasets], shapes, prefix)
        return "bdv", replace(desc, extra={"views": _bdv_views(group, setup_path)})
    datasets = _levels_named_s(group)
    if not datasets:
        raise MetadataError(
            "no pyramid here: neither OME-Zarr multiscales, BigDataViewer setups nor datasets s0, s1, ...",
            key=group.path or "/",
        )
    desc = parse_n5_viewer(attrs, [dict(ds.attrs) for ds in datasets], [ds.shape for ds in datasets])
    return "n5-viewer", desc


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
    layout, desc = _describe(group, setup, timepoint, index)
    levels = []
    for spec in desc.levels:
        try:
            ds = group[spec.path]
        except AltarrError as e:
            raise MetadataError(f"level {spec.path!r} of the {layout} pyramid cannot be opened: {e}") from e
        if not hasattr(ds, "shape") or len(ds.shape) != len(desc.axes):
            raise MetadataError(f"level {spec.path!r} is not a {len(desc.axes)}-d array", key=spec.path)
        shards = tuple(ds.shards) if ds.shards else None
        levels.append(
            Level(
                spec.path,
                ds.shape,
                ds.dtype,
                tuple(ds.chunks),
                shards,
                spec.factors,
                spec.scale,
                spec.translation,
                ds,
            )
        )
    for a, b in zip(levels, levels[1:], strict=False):
        if any(m > n for m, n in zip(b.shape, a.shape, strict=True)):
            raise MetadataError(f"level {b.path!r} {b.shape} is larger than level {a.path!r} {a.shape}")
    return Multiscale(group, layout, desc, levels)


def is_multiscale(group: Any) -> bool:
    """Whether ``group`` holds a pyramid :func:`open_multiscale` can open (metadata only)."""
    try:
        _describe(group, 0, 0, 0)
    except AltarrError:
        return False
    return True
