"""A toy store: the whole of what a new store needs (docs/architecture.md, "How to add a store").

Objects live in a dict shared by every ``toy://<name>`` URL of one process. The store serves merged
read requests (``_fetch``), sizes and versions, writes, deletes and listings; the base class does the
rest (request normalization, coalescing, counting, splitting). The last line registers it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from altarr.stores import Store, normalize_key, register_scheme
from altarr.stores.base import Fetched, ReadRequest

_SPACES: dict[str, dict[str, tuple[bytes, int]]] = {}
_VERSIONS = itertools.count(1)


class ToyStore(Store):
    """``{key: (bytes, version)}`` in memory, named so that ``toy://name`` finds it again."""

    def __init__(self, name: str, read_only: bool = False) -> None:
        super().__init__()
        self.name, self.read_only = name, read_only
        self.objects = _SPACES.setdefault(name, {})

    def __reduce__(self):
        return (ToyStore, (self.name, self.read_only))

    def _fetch(self, merged: list[ReadRequest], versioned: bool) -> Fetched:
        out = []
        for key, request in merged:
            obj = self.objects.get(key)
            out.append(None if obj is None else obj[0][slice(*request.bounds(len(obj[0])))])
        return Fetched(out)

    def stat(self, key: str) -> tuple[int, int] | None:
        self.stats.add(size_queries=1)
        obj = self.objects.get(normalize_key(key))
        return None if obj is None else (len(obj[0]), obj[1])

    def size(self, key: str) -> int | None:
        st = self.stat(key)
        return None if st is None else st[0]

    def set(self, key: str, value) -> None:
        key = normalize_key(key)
        self._require_writable(key, "write")
        data = b"".join(value) if isinstance(value, list | tuple) else memoryview(value).tobytes()
        self.objects[key] = (data, next(_VERSIONS))
        self.stats.add(writes=1, bytes_written=len(data))

    def delete(self, key: str) -> bool:
        key = normalize_key(key)
        self._require_writable(key, "delete")
        self.stats.add(deletes=1)
        return self.objects.pop(key, None) is not None

    def list(self, prefix: str = "") -> Iterator[str]:
        self.stats.add(lists=1)
        prefix = normalize_key(prefix)
        under = prefix + "/" if prefix else ""
        return iter(sorted(k for k in list(self.objects) if k.startswith(under)))


register_scheme("toy", lambda url, mode, **options: ToyStore(url[len("toy://") :], mode == "r"))
