"""On-disk formats: Zarr v3, Zarr v2 and N5, each mapping its metadata to a
:class:`~altarr.formats.base.DatasetSpec` in NumPy order and registered once; :func:`open_node` detects
and parses a node from one batched store request.

Example:
    >>> from altarr.formats import get_format
    >>> get_format("n5").metadata_key
    'attributes.json'
"""

from __future__ import annotations

from . import n5, zarr2, zarr3  # noqa: F401  (each registers its format)
from ._common import join_key
from .base import DatasetSpec, Format, Node, Probe
from .registry import (
    FORMATS,
    detect_format,
    get_format,
    open_node,
    register_format,
    registered_formats,
    unregister_format,
)

__all__ = [
    "DatasetSpec",
    "Format",
    "Node",
    "Probe",
    "get_format",
    "detect_format",
    "open_node",
    "join_key",
    "FORMATS",
    "register_format",
    "unregister_format",
    "registered_formats",
]
