"""Consolidated metadata kept true: after each of altarr's metadata writes into a consolidated hierarchy,
:func:`refresh_consolidated` updates the snapshot of each consolidated group above it, under its lock or
write condition (docs/writing.md, "Consolidated metadata").
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from ..formats import consolidated as cm
from ..formats._common import join_key
from ..stores.ranges import WHOLE
from .locks import run_exclusive

if TYPE_CHECKING:
    from ..formats.base import Format
    from ..stores.base import Store
    from .group import Group

__all__ = ["refresh_consolidated", "is_consolidated"]


def is_consolidated(group: Group) -> bool:
    """Whether ``group`` holds consolidated metadata (one request; ``False`` for N5).

    >>> import altarr as aa
    >>> is_consolidated(aa.create_group("memory://doc-isc"))
    False
    """
    holder = cm.holder_name(group.format)
    if holder is None:
        return False
    key = join_key(group.path, holder)
    return cm.snapshot(group.format, group.store.get(key), key) is not None


def _holders(fmt: str, prefix: str) -> list[str]:
    """The groups whose consolidated metadata may describe the node at ``prefix``: every group above it,
    and for Zarr v2 the node itself (its ``.zmetadata`` lists its own ``.zgroup`` and ``.zattrs``)."""
    parts = prefix.split("/") if prefix else []
    last = len(parts) + (1 if fmt == "zarr2" else 0)
    return ["/".join(parts[:i]) for i in range(last)]


def refresh_consolidated(store: Store, prefix: str, fmt: Format, change: str) -> None:
    """Update the consolidated metadata of every consolidated group above the node at ``prefix`` after a
    metadata write: ``change`` is ``"changed"`` (the node's own documents: attributes, shape),
    ``"created"`` (the node is new and so is everything below it; intermediate groups the snapshot
    lacks are added) or ``"deleted"``. Formats without consolidated metadata cost nothing."""
    holder = cm.holder_name(fmt.name)
    if holder is None:
        return
    groups = _holders(fmt.name, prefix)
    keys = [join_key(g, holder) for g in groups]
    for group, key, raw in zip(groups, keys, store.get_ranges([(k, WHOLE) for k in keys]), strict=True):
        if cm.snapshot(fmt.name, raw, key) is not None:
            rel = prefix[len(group) + 1 :] if group else prefix
            run_exclusive(store, [key], functools.partial(_rewrite, store, group, key, rel, fmt.name, change))


def _rewrite(store: Store, group: str, key: str, rel: str, fmt: str, change: str) -> None:
    """Re-read the holder ``key`` of ``group`` and write it with the entries of node ``rel`` renewed."""
    raw = store.get(key)
    metadata = cm.snapshot(fmt, raw, key)
    if metadata is None:  # removed meanwhile
        return
    if change == "changed":
        own = cm.own_keys(fmt, rel)
        metadata = {k: v for k, v in metadata.items() if k not in own}
    else:
        metadata = {k: v for k, v in metadata.items() if not cm.belongs(fmt, k, rel)}
    if change != "deleted":
        rels = [rel]
        if change == "created":  # intermediate groups written with the node and not yet listed
            parts = rel.split("/")
            rels += ["/".join(parts[:i]) for i in range(1, len(parts))]
        for r, docs in cm.read_nodes(store, group, fmt, rels).items():
            if r == rel or not cm.own_keys(fmt, r) & metadata.keys():
                metadata.update(cm.entries(fmt, r, docs))
    store.set(key, cm.holder_bytes(fmt, raw, metadata, key))
