"""On-disk formats: Zarr v3 (``zarr.json``), Zarr v2 (``.zarray``/``.zgroup``) and N5 (``attributes.json``).

Each format maps its metadata to one :class:`~altarr.formats.base.DatasetSpec` in NumPy order and
registers itself once (:func:`register_format`) from its own module, declaring how it is detected (its
probe keys and :meth:`~altarr.formats.base.Format.detect`), its options and capabilities.
:func:`get_format` returns the format singleton by name; :func:`detect_format` finds which format a node is
stored in, with one batched store request for all registered formats' candidate metadata keys;
:func:`open_node` does the same and also parses the array metadata from that one request.

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
