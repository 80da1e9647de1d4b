"""The format registry: each format module registers its format once (:func:`register_format`), and
:func:`open_node` fetches every format's probe documents in one batched round and asks the formats, in
priority order, which one the node is."""

from __future__ import annotations

import dataclasses
import marshal
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from ..errors import AltarrError, MetadataError, NodeNotFoundError
from ..stores.ranges import WHOLE
from ._common import join_key
from .base import Format, Node, Probe

if TYPE_CHECKING:
    from ..stores.base import Store

__all__ = [
    "FORMATS",
    "register_format",
    "unregister_format",
    "registered_formats",
    "get_format",
    "open_node",
    "detect_format",
]

#: The registered format singletons by name (registration order; see :func:`registered_formats`).
FORMATS: dict[str, Format] = {}


def register_format(fmt: Format, *, replace: bool = False) -> Format:
    """Register the format singleton ``fmt`` under ``fmt.name`` (once: a second registration of the same
    name raises ``ValueError`` unless ``replace``). Returns ``fmt``.

    >>> from altarr.formats import get_format, register_format
    >>> register_format(get_format("n5"))
    Traceback (most recent call last):
    ValueError: format 'n5' is already registered
    """
    if not replace and fmt.name in FORMATS:
        raise ValueError(f"format {fmt.name!r} is already registered")
    FORMATS[fmt.name] = fmt
    _forget_parsed()
    return fmt


def unregister_format(name: str) -> None:
    """Remove the format called ``name`` (for tests that register a format of their own).

    >>> unregister_format("no-such-format")
    """
    FORMATS.pop(name, None)
    _forget_parsed()


def registered_formats() -> list[Format]:
    """The registered formats in detection order (:attr:`~altarr.formats.base.Format.priority`, then
    registration order).

    >>> [f.name for f in registered_formats()][:1]
    ['zarr3']
    """
    return sorted(FORMATS.values(), key=lambda f: f.priority)


def get_format(name: str) -> Format:
    """The format singleton called ``name`` (``"zarr3"``, ``"zarr2"``, ``"n5"`` or a registered one).

    >>> get_format("zarr2").name
    'zarr2'
    """
    try:
        return FORMATS[name]
    except (KeyError, TypeError):
        raise MetadataError(f"unknown format {name!r}; expected one of {sorted(FORMATS)}") from None


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _fetch(
    store: Store, prefix: str, format: str | None = None, extra: tuple[str, ...] = ()
) -> dict[str, Any]:
    """All candidate metadata documents of a node in one batched request: relative name -> bytes | None.
    Root documents (:attr:`Format.root_probe_keys`) are named with a leading ``/`` and asked for only
    below the root. With ``format`` only that format's documents are asked for (the others read as
    absent)."""
    every = registered_formats()
    chosen = every if format is None else [get_format(format)]
    names = _unique([n for f in chosen for n in f.probe_keys]) + list(extra)
    keys = [join_key(prefix, n) for n in names]
    if prefix:
        roots = _unique([n for f in chosen for n in f.root_probe_keys])
        names += ["/" + n for n in roots]
        keys += roots
    values = store.get_ranges([(k, WHOLE) for k in keys])
    raw: dict[str, Any] = dict.fromkeys(
        [n for f in every for n in f.probe_keys]
        + ["/" + n for f in every for n in f.root_probe_keys]
        + list(extra)
    )
    raw.update(zip(names, values, strict=True))
    return raw


def open_node(
    store: Store, prefix: str, *, parse: bool = True, format: str | None = None, extra: tuple[str, ...] = ()
) -> Node:
    """Detect the format of the node at ``prefix`` and, for an array, parse its spec (``parse=False``:
    the kind only), from one batched store request (plus a listing for an N5 group without
    ``attributes.json``). ``format`` asks for that format's documents only; ``extra`` names more
    documents to fetch in the same request (``Node.raw`` holds them all). Formats are asked in their
    ``priority`` order. Raises :class:`~altarr.errors.NodeNotFoundError` naming the prefix when no
    metadata is found, and a ``MetadataError`` naming the node for any other failure of hostile metadata.

    >>> from altarr.stores import MemoryStore
    >>> store = MemoryStore()
    >>> get_format("zarr2").create_group(store, "g")
    >>> node = open_node(store, "g")
    >>> node.format.name, node.kind
    ('zarr2', 'group')
    """
    try:
        raw = _fetch(store, prefix, format, extra)
        node = _node_from(Probe(store, prefix, raw), parse)
    except AltarrError:
        raise
    except (RecursionError, OverflowError, TypeError, ValueError, MemoryError) as e:
        raise MetadataError(f"invalid metadata: {type(e).__name__}: {e}", key=prefix or "/") from e
    node.raw = raw
    return node


#: Parsed array nodes by the documents they were parsed from (see :func:`_node_from`): at most
#: :data:`PARSED_ENTRIES` entries, least recently used dropped first, none for documents above
#: :data:`PARSED_MAX_BYTES` in all (a hostile or consolidated document is parsed each time instead).
PARSED_ENTRIES = 64
PARSED_MAX_BYTES = 64 * 1024
_parsed: OrderedDict[tuple[Any, ...], tuple[Node, bytes, bytes]] = OrderedDict()
_parsed_lock = threading.Lock()


def _forget_parsed() -> None:
    """Drop every memoized parse (a format registered or removed may read the same documents otherwise)."""
    with _parsed_lock:
        _parsed.clear()


def _parse_key(probe: Probe, parse: bool) -> tuple[Any, ...] | None:
    """The memo key of a probe: the node's prefix, ``parse`` and every probed document's bytes; ``None``
    when the documents are too large to keep."""
    docs = tuple((name, None if v is None else bytes(v)) for name, v in probe.raw.items())
    if sum(len(v) for _, v in docs if v is not None) > PARSED_MAX_BYTES:
        return None
    return (probe.prefix, parse, docs)


def _node_from(probe: Probe, parse: bool) -> Node:
    """The node the probed documents describe; an array's parse is memoized by the documents' exact bytes
    (docs/remote.md, "Caching and staleness"). The spec is shared between opens, but each open gets its
    own attributes and metadata documents (kept as :mod:`marshal` bytes). Errors are never memoized."""
    key = _parse_key(probe, parse)
    if key is not None:
        with _parsed_lock:
            hit = _parsed.get(key)
            if hit is not None:
                _parsed.move_to_end(key)
        if hit is not None:
            return _fresh(*hit)
    node = _detect(probe, parse)
    if key is not None and node.spec is not None:
        try:
            docs = marshal.dumps(node.spec.attributes), marshal.dumps(node.spec.metadata)
        except ValueError:  # not plain JSON values (a format's own objects): not kept
            return node
        with _parsed_lock:
            _parsed[key] = (node, *docs)
            while len(_parsed) > PARSED_ENTRIES:
                _parsed.popitem(last=False)
        return _fresh(node, *docs)
    return node


def _fresh(node: Node, attributes: bytes, metadata: bytes) -> Node:
    """A memoized array node with its own copies of the documents its spec carries."""
    assert node.spec is not None
    own = dataclasses.replace(
        node.spec, attributes=marshal.loads(attributes), metadata=marshal.loads(metadata)
    )
    return Node(node.format, node.kind, own)


def _detect(probe: Probe, parse: bool) -> Node:
    every = registered_formats()
    for fmt in every:
        node = fmt.detect(probe, parse)
        if node is not None:
            return node
    titles = [f.title for f in every]
    named = ", ".join(titles[:-1]) + " or " + titles[-1] if len(titles) > 1 else "".join(titles)
    looked = ", ".join(_unique([n for f in every for n in f.node_keys]))
    raise NodeNotFoundError(f"no {named} metadata found (looked for {looked})", key=probe.prefix or "/")


def detect_format(store: Store, prefix: str) -> tuple[Format, str]:
    """``(format, "array" | "group")`` of the node at ``prefix``, from the metadata key that exists (one
    batched store request). ``MetadataError`` naming the prefix when nothing is found.

    >>> # fmt, kind = detect_format(store, "path/to/node")
    """
    node = open_node(store, prefix, parse=False)
    return node.format, node.kind
