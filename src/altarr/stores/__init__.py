"""Stores: key -> bytes, with ranged, batched, coalesced and counted reads.

* :class:`MemoryStore` - a dict in memory;
* :class:`LocalStore` - files under a directory (positional reads, atomic replace, thread pool);
* :class:`ObstoreStore` - object stores and HTTP through obstore (Rust ``object_store``), the client of
  ``s3://``, ``gs://``, ``az://`` and ``http(s)://`` (see ``docs/remote.md``);
* :class:`FsspecStore` - every other fsspec URL (``memory://``, chained ``a::b`` URLs, ``sftp://``, ...);
* :class:`ZipStore` - members of a zip archive;
* :func:`store_from_url` - the right store for a path or URL, found in a URL-scheme registry
  (:func:`register_scheme`: a new store registers itself in one line).

Read requests are typed: ``(key, WHOLE)``, ``(key, Range(start, stop))``, ``(key, Offset(start))``,
``(key, Suffix(length))`` (:mod:`altarr.stores.ranges`).

Example:
    >>> from altarr.stores import store_from_url
    >>> store, prefix = store_from_url("memory://altarr-doc-stores", mode="w")
    >>> store.set("a", b"xyz"); store.get("a"), prefix
    (b'xyz', '')
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
