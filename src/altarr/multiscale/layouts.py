"""The four pyramid layouts altarr writes: where the levels go, in which format, and the metadata each
gets (the table: docs/pyramids.md, "Layouts").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import MetadataError
from .levels import Multiscale
from .n5 import bdv_attributes, bdv_level_path, n5_viewer_attributes
from .ome import ome_attributes

__all__ = ["Layout", "get_layout", "LAYOUTS"]


@dataclass(frozen=True)
class Layout:
    """One layout: its ``name``, storage ``format`` and how levels are named and described."""

    name: str
    format: str

    def level_path(self, level: int) -> str:
        """The path of level ``level`` inside the pyramid's group."""
        if self.name == "bdv":
            return bdv_level_path(level)
        if self.name == "n5-viewer":
            return f"s{level}"
        return str(level)

    @property
    def groups(self) -> tuple[str, ...]:
        """Groups between the pyramid's group and its levels (created before the levels)."""
        return ("setup0", "setup0/timepoint0") if self.name == "bdv" else ()

    def level_options(self, desc: Multiscale, level: int) -> dict[str, Any]:
        """Extra arguments of ``create_dataset`` for level ``level``: dimension names (Zarr v3), the
        ``/`` separator (OME-Zarr 0.4), the level's attributes (N5 layouts)."""
        if self.format == "zarr3":
            return {"dimension_names": [a.name for a in desc.axes]}
        if self.format == "zarr2":
            return {"dimension_separator": "/"}
        return {"attributes": self.node_attributes(desc, None)[desc.levels[level].path]}

    def node_attributes(self, desc: Multiscale, dtype: Any) -> dict[str, dict[str, Any]]:
        """Attributes by node path (``""`` the pyramid's group) written once every level is complete."""
        if self.name == "ome-zarr":
            return {"": ome_attributes(desc, "0.5")}
        if self.name == "ome-zarr-0.4":
            return {"": ome_attributes(desc, "0.4")}
        if self.name == "n5-viewer":
            group, levels = n5_viewer_attributes(desc)
            return {"": group} | {lv.path: a for lv, a in zip(desc.levels, levels, strict=True)}
        return bdv_attributes(desc, dtype)


#: Layout name -> layout (``"ome-zarr"`` is OME-Zarr 0.5).
LAYOUTS = {
    "ome-zarr": Layout("ome-zarr", "zarr3"),
    "ome-zarr-0.4": Layout("ome-zarr-0.4", "zarr2"),
    "n5-viewer": Layout("n5-viewer", "n5"),
    "bdv": Layout("bdv", "n5"),
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
