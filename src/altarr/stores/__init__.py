"""Stores: key -> bytes, with ranged, batched, coalesced and counted reads.

* :class:`MemoryStore` - a dict in memory;
* :class:`LocalStore` - files under a directory (positional reads, atomic replace, thread pool);
* :class:`FsspecStore` - any fsspec URL (``s3://``, ``gs://``, ``http(s)://``, ``memory://``, ...);
* :class:`ObstoreStore` - object stores and HTTP through obstore (Rust ``object_store``), the default
  client for ``s3://``, ``gs://``, ``az://`` and ``http(s)://`` (see ``docs/remote.md``);
* :class:`ZipStore` - members of a zip archive;
* :func:`store_from_url` - the right store for a path or URL.

Example:
    >>> from altarr.stores import store_from_url
    >>> store, prefix = store_from_url("memory://altarr-doc-stores", mode="w")
    >>> store.set("a", b"xyz"); store.get("a"), prefix
    (b'xyz', '')
"""

from __future__ import annotations

import os
from typing import Any

from .base import DEFAULT_COALESCE_GAP, RangeRequest, Store, StoreStats, normalize_key
from .coalesce import DEFAULT_MAX_COALESCED_SIZE, CoalescePlan, coalesce_ranges
from .fsspec_store import FsspecStore
from .local import LocalStore
from .memory import MemoryStore
from .obstore_store import ObstoreStore
from .zip_store import ZipStore

__all__ = [
    "Store",
    "StoreStats",
    "RangeRequest",
    "MemoryStore",
    "LocalStore",
    "FsspecStore",
    "ObstoreStore",
    "ZipStore",
    "normalize_key",
    "coalesce_ranges",
    "CoalescePlan",
    "store_from_url",
    "DEFAULT_COALESCE_GAP",
    "DEFAULT_MAX_COALESCED_SIZE",
]

_MODES = ("r", "r+", "a", "w", "w-")

#: URL schemes served by :class:`ObstoreStore` unless ``client="fsspec"`` is asked for: obstore was the
#: faster client for batched ranged reads and whole-object writes (``benchmarks/README.md``).
OBSTORE_SCHEMES = ("s3", "s3a", "gs", "gcs", "az", "azure", "abfs", "abfss", "http", "https")
#: ``client=`` values of :func:`store_from_url`.
CLIENTS = ("obstore", "fsspec")


def _scheme(url: str) -> str:
    return url.split("://", 1)[0].lower() if "://" in url else ""


def _split_zip(path: str) -> tuple[str, str] | None:
    """``("x/data.zip", "inner/prefix")`` for ``"x/data.zip/inner/prefix"`` (or ``"x/data.zip"``)."""
    norm = path.replace(os.sep, "/") if os.sep != "/" else path
    lower = norm.lower()
    if lower.endswith(".zip"):
        return path, ""
    i = lower.find(".zip/")
    while i != -1:
        archive = norm[: i + 4]
        if os.path.isfile(archive):
            return archive, normalize_key(norm[i + 5 :])
        i = lower.find(".zip/", i + 1)
    return None


def store_from_url(
    path_or_url: str | os.PathLike[str] | Store,
    mode: str = "r",
    *,
    client: str | None = None,
    **storage_options: Any,
) -> tuple[Store, str]:
    """The store for a path or URL, and the node prefix inside it.

    * a :class:`Store` passes through (prefix ``""``);
    * a plain path or ``file://`` URL -> :class:`LocalStore` rooted there;
    * a path to a ``.zip`` file (optionally followed by ``/inner/prefix``) -> :class:`ZipStore`
      (``"r"`` reads, ``"w"``/``"w-"`` create a new archive, ``"r+"``/``"a"`` append);
    * ``s3://``, ``gs://``, ``az://``, ``http(s)://`` -> :class:`ObstoreStore` (or :class:`FsspecStore` with
      ``client="fsspec"``), with ``storage_options`` passed to the client;
    * any other URL (``memory://``, chained ``a::b`` URLs, ...) -> :class:`FsspecStore` rooted at the URL.

    ``mode`` is ``"r"``, ``"r+"``, ``"a"``, ``"w"`` or ``"w-"``; at this level only ``"r"`` matters (a
    read-only store). Creating, truncating and existence checks belong to the dataset layer.

    >>> import tempfile
    >>> store, prefix = store_from_url(tempfile.mkdtemp())
    >>> type(store).__name__, store.read_only, prefix
    ('LocalStore', True, '')
    """
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
    if client is not None and client not in CLIENTS:
        raise ValueError(f"client must be one of {CLIENTS}, got {client!r}")
    if isinstance(path_or_url, Store):
        if storage_options or client is not None:
            raise TypeError("storage options cannot be applied to an existing store")
        return path_or_url, ""
    url = os.fspath(path_or_url)
    if not isinstance(url, str):
        raise TypeError(f"expected a path, URL or Store, got {type(path_or_url).__name__}")
    read_only = mode == "r"
    local: str | None = None
    if url.startswith("file://"):
        local = url[len("file://") :]
    elif "://" not in url and "::" not in url:
        local = url
    if local is not None:
        zipped = _split_zip(local)
        if zipped is not None:
            durable = bool(storage_options.pop("durable", False))
            if storage_options:
                raise TypeError(f"storage options do not apply to a zip archive: {sorted(storage_options)}")
            archive, prefix = zipped
            zmode = {"r": "r", "w": "w", "w-": "x"}.get(mode, "a")
            return ZipStore(archive, zmode, durable=durable), prefix
        return LocalStore(local, read_only=read_only, **storage_options), ""
    if client == "obstore" or (client is None and "::" not in url and _scheme(url) in OBSTORE_SCHEMES):
        return ObstoreStore(url, read_only=read_only, **storage_options), ""
    return FsspecStore(url, read_only=read_only, **storage_options), ""
