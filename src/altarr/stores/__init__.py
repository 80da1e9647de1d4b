"""Stores: key -> bytes, with ranged, batched, coalesced and counted reads: :class:`MemoryStore`,
:class:`LocalStore`, :class:`ObstoreStore` (``s3://``, ``gs://``, ``az://``, ``http(s)://``),
:class:`FsspecStore` (every other fsspec URL), :class:`ZipStore`, and :func:`store_from_url`.
"""

from __future__ import annotations

from .base import OpensReaders, ReadRequest, Store, StoreStats, normalize_key
from .fsspec_store import FsspecStore
from .local import LocalStore
from .memory import MemoryStore
from .obstore_store import ObstoreStore
from .ranges import WHOLE, ByteRequest, Offset, Range, Suffix, Whole
from .registry import register_scheme, registered_schemes, store_from_url
from .zip_store import ZipStore

__all__ = [
    "Store",
    "StoreStats",
    "ReadRequest",
    "ByteRequest",
    "WHOLE",
    "Whole",
    "Range",
    "Offset",
    "Suffix",
    "OpensReaders",
    "register_scheme",
    "registered_schemes",
    "MemoryStore",
    "LocalStore",
    "FsspecStore",
    "ObstoreStore",
    "ZipStore",
    "normalize_key",
    "store_from_url",
]
