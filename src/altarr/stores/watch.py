"""The per-thread scope of a conditional read-modify-write, for stores that condition writes on the
version that was read (:class:`~altarr.stores.ObstoreStore`): inside :meth:`Store.exclusive`, the keys being updated are *watched*; each read of one records the
version it saw, and the store's writes of it are conditioned on that version.

Example:
    >>> class Demo(VersionWatch):
    ...     def __init__(self):
    ...         self._scope = WatchScope()
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

__all__ = ["VersionWatch", "WatchScope"]


class WatchScope(threading.local):
    """One thread's scope: the keys watched and the versions recorded, ``None`` outside a scope. Class
    defaults, so that asking outside a scope raises nothing inside (a ``getattr`` default on a bare
    ``threading.local`` raised and caught an ``AttributeError`` on each of a read's requests)."""

    keys: set[str] | None = None
    versions: dict[str, Any] | None = None


class VersionWatch:
    """Mixin: ``_watching(keys)`` opens this thread's scope; ``_watched()`` the keys watched (``None``
    outside a scope); ``_recorded()`` the versions recorded in it (a new empty dict outside). The store
    creates ``self._scope = WatchScope()`` in its ``__init__``."""

    _scope: WatchScope

    @contextmanager
    def _watching(self, keys: Iterable[str]) -> Iterator[None]:
        self._scope.keys = {normalize_key(k) for k in keys}
        self._scope.versions = {}
        try:
            yield
        finally:
            self._scope.keys = self._scope.versions = None

    def _watched(self) -> set[str] | None:
        return self._scope.keys

    def _recorded(self) -> dict[str, Any]:
        versions = self._scope.versions
        return {} if versions is None else versions
