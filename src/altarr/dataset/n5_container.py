"""A group inside an N5 container named by its own path or URL (a directory below the container root,
which N5 does not mark): :func:`n5_container_above` finds the root among the path's parents.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ..errors import MetadataError
from ..formats._common import parse_json
from ..formats.n5 import ATTRIBUTES_KEY, VERSION_KEY
from ..stores import store_from_url
from ..stores.base import Store

__all__ = ["n5_container_above", "MAX_LEVELS"]

#: How many parent directories are asked for a container root (one request each), at most.
MAX_LEVELS = 16

_URL_ROOT = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://[^/]*")


def n5_container_above(
    path_or_url: str | os.PathLike[str] | Store, path: str, mode: str, storage_options: dict[str, Any]
) -> tuple[Store, str] | None:
    """``(store, prefix)`` of the N5 container root nearest above ``path_or_url`` (with ``path`` inside
    it, as :func:`altarr.open_group` takes them) and the node's prefix in that store, or ``None`` when no parent (up to :data:`MAX_LEVELS`) holds an ``attributes.json`` naming the
    ``"n5"`` version. Only plain paths and single URLs are walked."""
    if isinstance(path_or_url, Store):
        return None
    url = "/".join(p for p in (os.fspath(path_or_url).rstrip("/"), path.strip("/")) if p)
    if "::" in url or ".zip" in url.lower():
        return None
    head_match = _URL_ROOT.match(url)
    head = head_match.group(0) if head_match else ""
    parts = [p for p in url[len(head) :].split("/") if p]
    lead = "/" if not head and url.startswith("/") else ""
    for level in range(1, min(len(parts), MAX_LEVELS + 1)):
        root_parts, inner = parts[:-level], parts[-level:]
        if not root_parts and not head:
            break
        root = head + ("/" if head else lead) + "/".join(root_parts)
        store, prefix = store_from_url(root, mode=mode, **storage_options)
        key = f"{prefix}/{ATTRIBUTES_KEY}" if prefix else ATTRIBUTES_KEY
        raw = store.get(key)
        try:
            found = raw is not None and VERSION_KEY in parse_json(raw, key)
        except MetadataError:  # some other file of that name: no container root
            found = False
        if found:
            return store, "/".join([p for p in (prefix, *inner) if p])
    return None
