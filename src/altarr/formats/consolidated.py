"""Consolidated metadata documents as zarr-python writes them (Zarr v2 ``.zmetadata``, Zarr v3 inline
``consolidated_metadata``; N5 has none): built, read and edited here; :mod:`altarr.dataset.consolidated`
decides when (docs/writing.md, "Consolidated metadata")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..stores.ranges import WHOLE
from ._common import dump_json, join_key, parse_json

if TYPE_CHECKING:
    from ..stores.base import Store

__all__ = [
    "holder_name",
    "snapshot",
    "entries",
    "own_keys",
    "belongs",
    "holder_bytes",
    "is_group",
    "read_nodes",
    "gather",
]

_V2_DOCS = (".zarray", ".zgroup", ".zattrs")
_V3_DOC = "zarr.json"


def _empty_inline() -> dict[str, Any]:
    return {"kind": "inline", "must_understand": False, "metadata": {}}


def holder_name(fmt: str) -> str | None:
    """The document of a group that holds its consolidated metadata, ``None`` for a format without."""
    return {"zarr2": ".zmetadata", "zarr3": _V3_DOC}.get(fmt)


def snapshot(fmt: str, raw: Any, key: str) -> dict[str, Any] | None:
    """The consolidated ``metadata`` mapping of the holder document ``key`` (its bytes ``raw``, ``None``
    when absent), ``None`` when it has none."""
    if raw is None:
        return None
    holder = parse_json(raw, key)
    if fmt == "zarr2":
        meta = holder.get("metadata") if holder.get("zarr_consolidated_format") == 1 else None
    else:
        cm = holder.get("consolidated_metadata")
        meta = cm.get("metadata") if isinstance(cm, dict) and cm.get("kind") == "inline" else None
    return dict(meta) if isinstance(meta, dict) else None


def is_group(fmt: str, docs: dict[str, Any]) -> bool:
    """Whether the parsed documents ``docs`` (name -> document or ``None``) of one node make a group."""
    if fmt == "zarr2":
        return docs.get(".zgroup") is not None and docs.get(".zarray") is None
    doc = docs.get(_V3_DOC)
    return isinstance(doc, dict) and doc.get("node_type") == "group"


def entries(fmt: str, rel: str, docs: dict[str, Any]) -> dict[str, Any]:
    """The consolidated entries of the node at ``rel`` (relative to the holding group, ``""`` the group
    itself) from its parsed documents ``docs`` (name -> document or ``None`` where absent)."""
    if fmt == "zarr2":
        return {join_key(rel, n): d for n, d in docs.items() if d is not None and n in _V2_DOCS}
    doc = docs.get(_V3_DOC)
    if not rel or not isinstance(doc, dict):
        return {}  # a Zarr v3 group's own document is the holder, not an entry
    if doc.get("node_type") == "group":
        doc = {**doc, "consolidated_metadata": _empty_inline()}
    return {rel: doc}


def own_keys(fmt: str, rel: str) -> set[str]:
    """The keys of the entries describing the node ``rel`` itself (not the nodes below it)."""
    if fmt == "zarr2":
        return {join_key(rel, n) for n in _V2_DOCS}
    return {rel} if rel else set()


def belongs(fmt: str, key: str, rel: str) -> bool:
    """Whether the entry ``key`` describes the node ``rel`` or a node below it."""
    if not rel:
        return True
    return key.startswith(rel + "/") or (fmt == "zarr3" and key == rel)


def holder_bytes(fmt: str, raw: Any, metadata: dict[str, Any], key: str) -> bytes:
    """The holder document ``key`` carrying ``metadata`` as its consolidated metadata: ``.zmetadata``
    indented by 4 as zarr-python 2 wrote it, or the group's ``zarr.json`` (its bytes ``raw``) with the
    rest kept as it is."""
    if fmt == "zarr2":
        ordered = dict(sorted(metadata.items()))
        return dump_json({"zarr_consolidated_format": 1, "metadata": ordered}, key=key, indent=4)
    ordered = dict(sorted(metadata.items(), key=lambda kv: (kv[0].count("/"), kv[0].casefold())))  # by depth
    holder = {} if raw is None else parse_json(raw, key)
    return dump_json({**holder, "consolidated_metadata": {**_empty_inline(), "metadata": ordered}}, key=key)


def read_nodes(store: Store, prefix: str, fmt: str, rels: list[str]) -> dict[str, dict[str, Any]]:
    """``rel -> {document name: parsed document or None}`` of the nodes ``rels`` below ``prefix``, read in
    one batched request."""
    names = _V2_DOCS if fmt == "zarr2" else (_V3_DOC,)
    keys = [join_key(join_key(prefix, rel), n) for rel in rels for n in names]
    values = store.get_ranges([(k, WHOLE) for k in keys]) if keys else []
    found: dict[str, dict[str, Any]] = {rel: {} for rel in rels}
    for i, (key, value) in enumerate(zip(keys, values, strict=True)):
        found[rels[i // len(names)]][names[i % len(names)]] = (
            None if value is None else parse_json(value, key)
        )
    return found


def gather(store: Store, prefix: str, fmt: str) -> dict[str, Any]:
    """Every consolidated entry of the group at ``prefix``: the hierarchy is walked folder by folder, one
    batched read of the documents per level; an array's folder (its chunks) is not listed, and a folder
    holding no node's documents is skipped."""
    metadata = entries(fmt, "", read_nodes(store, prefix, fmt, [""])[""]) if fmt == "zarr2" else {}
    metadata.pop(".zarray", None)
    level = [""]
    while level:
        children: list[str] = []
        for rel in level:
            folders: list[str] = store.list_dir(join_key(prefix, rel))[1]
            children += [join_key(rel, name) for name in sorted(folders)]
        found = read_nodes(store, prefix, fmt, children)
        level = []
        for rel, docs in found.items():
            metadata.update(entries(fmt, rel, docs))
            if is_group(fmt, docs):
                level.append(rel)
    return metadata
