"""The URL-scheme registry of stores that :func:`store_from_url` looks a URL up in. A factory is
``factory(url, mode=mode, **storage_options)`` -> a store or ``(store, prefix)``:

    >>> from altarr.stores import MemoryStore, register_scheme, store_from_url
    >>> register_scheme("doc-mem", lambda url, mode, **o: MemoryStore(mode == "r"), replace=True)
    >>> store, prefix = store_from_url("doc-mem://anything", mode="w")
    >>> type(store).__name__, store.read_only, prefix
    ('MemoryStore', False, '')
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from .base import Store
from .fsspec_store import FsspecStore
from .keys import normalize_key
from .local import LocalStore
from .obstore_store import ObstoreStore
from .zip_store import ZipStore

__all__ = [
    "OBSTORE_SCHEMES",
    "StoreFactory",
    "register_scheme",
    "registered_schemes",
    "store_from_url",
]

_MODES = ("r", "r+", "a", "w", "w-")

#: URL schemes served by :class:`ObstoreStore` (why obstore: ``docs/remote.md``)
OBSTORE_SCHEMES = ("s3", "s3a", "gs", "gcs", "az", "azure", "abfs", "abfss", "http", "https")

#: ``factory(url, mode=..., **storage_options) -> Store | (Store, prefix)``.
StoreFactory = Callable[..., "Store | tuple[Store, str]"]

_REGISTRY: dict[str, StoreFactory] = {}


def register_scheme(scheme: str, factory: StoreFactory, *, replace: bool = False) -> None:
    """Serve URLs of ``scheme`` (``""``: plain paths) with ``factory`` (``ValueError`` for a registered
    scheme unless ``replace=True``).

    >>> "s3" in registered_schemes() and "file" in registered_schemes()
    True
    """
    scheme = scheme.lower()
    if scheme in _REGISTRY and not replace:
        raise ValueError(f"the URL scheme {scheme!r} already has a store; pass replace=True to replace it")
    _REGISTRY[scheme] = factory


def registered_schemes() -> list[str]:
    """The registered URL schemes (``""`` is plain paths), sorted."""
    return sorted(_REGISTRY)


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


def _local(url: str, mode: str, **storage_options: Any) -> tuple[Store, str]:
    """A folder (:class:`LocalStore`) or a zip archive (:class:`ZipStore`), with the prefix inside it."""
    local = url.removeprefix("file://")
    zipped = _split_zip(local)
    if zipped is not None:
        durable = bool(storage_options.pop("durable", False))
        if storage_options:
            raise TypeError(f"storage options do not apply to a zip archive: {sorted(storage_options)}")
        archive, prefix = zipped
        zmode = {"r": "r", "w": "w", "w-": "x"}.get(mode, "a")
        return ZipStore(archive, zmode, durable=durable), prefix
    return LocalStore(local, read_only=mode == "r", **storage_options), ""


def _client(cls: type[ObstoreStore | FsspecStore]) -> StoreFactory:
    return lambda url, mode, **storage_options: cls(url, read_only=mode == "r", **storage_options)


_fsspec = _client(FsspecStore)
register_scheme("", _local)
register_scheme("file", _local)
for _s in OBSTORE_SCHEMES:
    register_scheme(_s, _client(ObstoreStore))


def _flat_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with a nested ``storage_options`` dict merged in (see :func:`store_from_url`)."""
    nested = options.pop("storage_options", None)
    if nested is None:
        return options
    if not isinstance(nested, Mapping):
        raise TypeError(
            f"storage_options must be a dict of the client's options, got {type(nested).__name__}"
        )
    twice = sorted(set(nested) & set(options))
    if twice:
        raise TypeError(f"options given both as keywords and in storage_options: {twice}")
    return {**nested, **options}


def store_from_url(
    path_or_url: str | os.PathLike[str] | Store,
    mode: str = "r",
    **storage_options: Any,
) -> tuple[Store, str]:
    """The store for a path or URL (``docs/stores.md``), and the node prefix inside it (a ``.zip`` path
    may go on to one). ``mode`` ``"r"`` makes it read-only; the client's options are keywords or one
    ``storage_options={...}`` dict.

    >>> import tempfile
    >>> store, prefix = store_from_url(tempfile.mkdtemp())
    >>> type(store).__name__, store.read_only, prefix
    ('LocalStore', True, '')
    """
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
    storage_options = _flat_options(storage_options)
    if isinstance(path_or_url, Store):
        if storage_options:
            raise TypeError("storage options cannot be applied to an existing store")
        return path_or_url, ""
    url = os.fspath(path_or_url)
    if not isinstance(url, str):
        raise TypeError(f"expected a path, URL or Store, got {type(path_or_url).__name__}")
    chained = "::" in url and not url.startswith("file://")
    factory = _fsspec if chained else _REGISTRY.get(_scheme(url), _fsspec)
    got = factory(url, mode=mode, **storage_options)
    return got if isinstance(got, tuple) else (got, "")
