"""The per-thread scope of a conditional read-modify-write, shared by the stores that condition writes on
the version that was read (:class:`~altarr.stores.ObstoreStore`, :class:`~altarr.stores.FsspecStore` on
S3): inside :meth:`Store.exclusive`, the keys being updated are *watched*; each read of one records the
version it saw, and the store's writes of it are conditioned on that version.

Example:
    >>> import threading
    >>> class Demo(VersionWatch):
    ...     def __init__(self):
    ...         self._scope = threading.local()
    >>> d = Demo()
    >>> with d._watching(["a/b"]):
    ...     d._recorded()["a/b"] = "etag-1"
    ...     sorted(d._watched()), d._recorded()
    (['a/b'], {'a/b': 'etag-1'})
    >>> d._watched() is None, d._recorded()
    (True, {})
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from .keys import normalize_key

__all__ = ["VersionWatch"]


class VersionWatch:
    """Mixin: ``_watching(keys)`` opens this thread's scope; ``_watched()`` the keys watched (``None``
    outside a scope); ``_recorded()`` the versions recorded in it (a new empty dict outside). The store
    creates ``self._scope = threading.local()`` in its ``__init__``."""

    _scope: threading.local

    @contextmanager
    def _watching(self, keys: Iterable[str]) -> Iterator[None]:
        self._scope.keys = {normalize_key(k) for k in keys}
        self._scope.versions = {}
        try:
            yield
        finally:
            self._scope.keys = self._scope.versions = None

    def _watched(self) -> set[str] | None:
        return getattr(self._scope, "keys", None)

    def _recorded(self) -> dict[str, Any]:
        versions = getattr(self._scope, "versions", None)
        return {} if versions is None else versions
