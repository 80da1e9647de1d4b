"""On-disk formats: Zarr v3 (``zarr.json``), Zarr v2 (``.zarray``/``.zgroup``) and N5 (``attributes.json``).

Each format maps its metadata to one :class:`~altarr.formats.base.DatasetSpec` in NumPy order.
:func:`get_format` returns the format singleton by name; :func:`detect_format` finds which format a node is
stored in, with one batched store request for all candidate metadata keys; :func:`open_node` does the
same and also parses the array metadata from that one request.

Example:
    >>> from altarr.formats import get_format
    >>> get_format("n5").metadata_key
    'attributes.json'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import AltarrError, MetadataError
from ..stores.ranges import WHOLE
from ._common import parse_json
from .base import DatasetSpec, Format, join_key
from .n5 import ATTRIBUTES_KEY, N5Format
from .zarr2 import ZARRAY, ZATTRS, ZGROUP, Zarr2Format
from .zarr3 import METADATA_KEY as ZARR_JSON
from .zarr3 import Zarr3Format

if TYPE_CHECKING:
    from ..stores.base import Store

__all__ = [
    "DatasetSpec",
    "Format",
    "Node",
    "get_format",
    "detect_format",
    "open_node",
    "join_key",
    "FORMATS",
]

#: The format singletons by name.
FORMATS: dict[str, Format] = {"zarr3": Zarr3Format(), "zarr2": Zarr2Format(), "n5": N5Format()}


def get_format(name: str) -> Format:
    """The format singleton called ``name`` (``"zarr3"``, ``"zarr2"`` or ``"n5"``).

    >>> get_format("zarr2").name
    'zarr2'
    """
    try:
        return FORMATS[name]
    except (KeyError, TypeError):
        raise MetadataError(f"unknown format {name!r}; expected one of {sorted(FORMATS)}") from None


@dataclass
class Node:
    """What :func:`open_node` found: the format, ``"array"`` or ``"group"``, and for arrays the spec."""

    format: Format
    kind: str
    spec: DatasetSpec | None = None
    #: the metadata documents fetched (relative name -> bytes or None), for callers that want more of them
    raw: dict[str, Any] | None = None


#: The metadata documents each format may have at a node (a ``format=`` hint fetches only these).
_CANDIDATES = {"zarr3": [ZARR_JSON], "zarr2": [ZARRAY, ZGROUP, ZATTRS], "n5": [ATTRIBUTES_KEY]}


def _fetch(
    store: Store, prefix: str, format: str | None = None, extra: tuple[str, ...] = ()
) -> dict[str, Any]:
    """All candidate metadata documents of a node in one batched request: relative name -> bytes | None.
    ``"/attributes.json"`` is the N5 container root's (for the version check and bare N5 directories).
    With ``format`` only that format's documents are asked for (the others read as absent)."""
    if format is not None and format not in _CANDIDATES:
        raise MetadataError(f"unknown format {format!r}; expected one of {sorted(_CANDIDATES)}")
    every = [ZARR_JSON, ZARRAY, ZGROUP, ZATTRS, ATTRIBUTES_KEY]
    names = (every if format is None else _CANDIDATES[format]) + list(extra)
    keys = [join_key(prefix, n) for n in names]
    if prefix and format in (None, "n5"):
        names = [*names, "/" + ATTRIBUTES_KEY]
        keys.append(ATTRIBUTES_KEY)
    values = store.get_ranges([(k, WHOLE) for k in keys])
    raw = dict.fromkeys([*every, "/" + ATTRIBUTES_KEY, *extra])
    raw.update(zip(names, values, strict=True))
    return raw


def open_node(
    store: Store, prefix: str, *, parse: bool = True, format: str | None = None, extra: tuple[str, ...] = ()
) -> Node:
    """See :func:`_open_node`; a failure that is not an ``altarr.errors`` one (a recursion, an overflow, a
    type or memory error raised by hostile metadata that no check caught) becomes a ``MetadataError``
    naming the node."""
    try:
        return _open_node(store, prefix, parse=parse, format=format, extra=extra)
    except AltarrError:
        raise
    except (RecursionError, OverflowError, TypeError, ValueError, MemoryError) as e:
        raise MetadataError(f"invalid metadata: {type(e).__name__}: {e}", key=prefix or "/") from e


def _open_node(
    store: Store, prefix: str, *, parse: bool = True, format: str | None = None, extra: tuple[str, ...] = ()
) -> Node:
    """Detect the format of the node at ``prefix`` and, for an array, parse its spec, from one batched
    store request (plus a directory listing only for an N5 group without ``attributes.json``).
    ``format`` (``"zarr3"``, ``"zarr2"``, ``"n5"``) asks for that format's documents only: one request
    instead of five on an object store, where each request is paid for. ``extra`` names more documents
    of the node to fetch in the same request (``Node.raw`` holds them all).

    With ``parse=False`` only the kind is determined (array metadata is not validated).
    Precedence when several formats' metadata coexist: Zarr v3, Zarr v2, N5. Raises
    :class:`~altarr.errors.MetadataError` naming the prefix when no metadata is found.
    """
    raw = _fetch(store, prefix, format, extra)
    node = _node_from(store, prefix, raw, parse)
    node.raw = raw
    return node


def _node_from(store: Store, prefix: str, raw: dict[str, Any], parse: bool) -> Node:
    def doc(name: str) -> dict[str, Any] | None:
        data = raw.get(name)
        key = ATTRIBUTES_KEY if name.startswith("/") else join_key(prefix, name)
        return None if data is None else parse_json(data, key)

    zarr3 = FORMATS["zarr3"]
    if raw[ZARR_JSON] is not None:
        d = doc(ZARR_JSON)
        assert d is not None
        kind = zarr3.kind_of(d, join_key(prefix, ZARR_JSON))  # type: ignore[attr-defined]
        spec = zarr3.spec_from_documents({ZARR_JSON: d}, prefix) if kind == "array" and parse else None  # type: ignore[attr-defined]
        return Node(zarr3, kind, spec)
    zarr2 = FORMATS["zarr2"]
    if raw[ZARRAY] is not None:
        if not parse:
            return Node(zarr2, "array")
        spec = zarr2.spec_from_documents({ZARRAY: doc(ZARRAY), ZATTRS: doc(ZATTRS)}, prefix)  # type: ignore[attr-defined]
        return Node(zarr2, "array", spec)
    if raw[ZGROUP] is not None:
        d = doc(ZGROUP)
        if not isinstance(d, dict) or d.get("zarr_format") != 2:
            raise MetadataError("field 'zarr_format' must be 2", key=join_key(prefix, ZGROUP))
        return Node(zarr2, "group")
    n5 = FORMATS["n5"]
    node = doc(ATTRIBUTES_KEY)
    root = doc("/" + ATTRIBUTES_KEY) if prefix else node
    if node is not None:
        kind = n5.kind_of(node, root, prefix)  # type: ignore[attr-defined]
        if kind == "array":
            if not parse:
                return Node(n5, kind)
            return Node(n5, kind, n5.spec_from_documents(node, root, prefix))  # type: ignore[attr-defined]
        if kind == "group":
            return Node(n5, kind)
    elif prefix and root is not None and "n5" in root:
        n5.kind_of(None, root, prefix)  # type: ignore[attr-defined]  # version check
        keys, folders = store.list_dir(prefix)
        if keys or folders:
            return Node(n5, "group")  # N5: every directory is a group, attributes.json is optional
    raise MetadataError(
        "no Zarr v3, Zarr v2 or N5 metadata found (looked for zarr.json, .zarray, .zgroup, attributes.json)",
        key=prefix or "/",
    )


def detect_format(store: Store, prefix: str) -> tuple[Format, str]:
    """``(format, "array" | "group")`` of the node at ``prefix``, from the metadata key that exists (one
    batched store request). ``MetadataError`` naming the prefix when nothing is found.

    >>> # fmt, kind = detect_format(store, "path/to/node")
    """
    node = open_node(store, prefix, parse=False)
    return node.format, node.kind
