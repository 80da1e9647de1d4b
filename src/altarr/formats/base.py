"""What every on-disk format hands the engine: one :class:`DatasetSpec` per array, and the metadata I/O.

The engine (``altarr.dataset``) is format-blind. A format module (``zarr3``, ``zarr2``, ``n5``) maps its
metadata documents to a :class:`DatasetSpec` in NumPy (C) order and back, names its metadata key (as the
Java N5 library's ``getAttributesKey`` does for n5-zarr), and maps a stored object's grid position to
its key. Formats read and write metadata through the store they are given; they never touch chunk data.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import MetadataError, UnsupportedError
from . import consolidated
from ._common import join_key, parse_json

if TYPE_CHECKING:  # formats may not import the store layer at run time (layering)
    from ..codecs.chain import CodecChain
    from ..stores.base import Store

__all__ = ["DatasetSpec", "Format", "NewArray", "Node", "Probe", "join_key"]


@dataclass(frozen=True)
class NewArray:
    """What :meth:`Format.create_array` was asked for (shapes in NumPy order), handed to the format."""

    shape: tuple[int, ...]
    dtype: Any
    chunks: tuple[int, ...]
    shards: Any = None
    compressor: Any = "zstd"
    fill_value: Any = 0
    attributes: dict[str, Any] | None = None
    dimension_names: Sequence[str | None] | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class DatasetSpec:
    """Everything the engine needs to read and write one array, in NumPy order.

    ``outer_chunks`` is the region one stored object covers (the shard shape when sharded, else the chunk
    shape). ``codecs`` encodes one stored object; when its array->bytes codec is a
    :class:`~altarr.codecs.sharding.ShardingCodec`, the dataset is sharded (nested when that codec's inner
    chain holds another). ``chunk_key`` maps an outer grid position to a key relative to the array's
    prefix. ``dtype`` is what users get (native byte order); the codecs handle the stored byte order.
    """

    format: str
    shape: tuple[int, ...]
    dtype: np.dtype
    outer_chunks: tuple[int, ...]
    codecs: CodecChain
    fill_value: Any
    chunk_key: Callable[[tuple[int, ...]], str]
    attributes: dict[str, Any] = field(default_factory=dict)
    dimension_names: tuple[str | None, ...] | None = None
    #: The metadata document(s) as read or written, keyed by their relative key.
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Node:
    """What :func:`altarr.formats.open_node` found: the format, ``"array"`` or ``"group"``, and for arrays
    the spec (``None`` when not parsed)."""

    format: Format
    kind: str
    spec: DatasetSpec | None = None
    #: the metadata documents fetched (relative name -> bytes or None), for callers that want more of them
    raw: dict[str, Any] | None = None


@dataclass
class Probe:
    """The documents of one node fetched in the detection round, handed to :meth:`Format.detect`.

    ``raw`` maps each probed name to its bytes (``None`` when absent); a name starting with ``/`` is a
    document at the store root (:attr:`Format.root_probe_keys`), fetched only when the node is not the root.

    >>> p = Probe(None, "a", {"x.json": b'{"k": 1}', "/x.json": None})
    >>> p.doc("x.json"), p.root_doc("x.json"), p.has("x.json")
    ({'k': 1}, None, True)
    """

    store: Store
    prefix: str
    raw: dict[str, Any]

    def has(self, name: str) -> bool:
        """Whether the document ``name`` exists."""
        return self.raw.get(name) is not None

    def key(self, name: str) -> str:
        """The store key of the probed document ``name``."""
        return name[1:] if name.startswith("/") else join_key(self.prefix, name)

    def doc(self, name: str) -> Any:
        """The parsed JSON document ``name`` (``None`` when absent); ``MetadataError`` names its key."""
        data = self.raw.get(name)
        return None if data is None else parse_json(data, self.key(name))

    def root_doc(self, name: str) -> Any:
        """The store root's document ``name`` (the node's own when the node is the root)."""
        return self.doc("/" + name) if self.prefix else self.doc(name)


#: A new shape for :meth:`Format.resize_array`: the shape, or a function of the stored one giving it.
NewShape = tuple[int, ...] | Callable[[tuple[int, ...]], tuple[int, ...]]


def new_shape(shape: NewShape, stored: tuple[int, ...]) -> list[int]:
    """The shape :meth:`Format.resize_array` writes, given the ``stored`` one."""
    return list(shape(stored) if callable(shape) else shape)


class Format(ABC):
    """One on-disk format. Instances are stateless singletons, registered once with
    :func:`altarr.formats.register_format` and found by name with :func:`altarr.formats.get_format` or by
    their metadata with :func:`altarr.formats.open_node` (see "How to add a format" in
    ``docs/architecture.md``)."""

    #: ``"zarr3"``, ``"zarr2"`` or ``"n5"``: the ``format=`` name.
    name: str
    #: The metadata key of an array or group node (``zarr.json``, ``.zarray``, ``attributes.json``).
    metadata_key: str
    #: The format's name in messages (``"Zarr v3"``).
    title: str
    #: Format-specific keyword options :meth:`create_array` accepts.
    array_options: tuple[str, ...] = ()
    #: The documents of a node that the detection round fetches for this format (relative names).
    probe_keys: tuple[str, ...] = ()
    #: Documents at the store root the detection needs too (fetched in the same round when the node is
    #: not the root; :class:`Probe` names them with a leading ``/``).
    root_probe_keys: tuple[str, ...] = ()
    #: Detection order when several formats' metadata coexist at one node: lower is asked first.
    priority: int = 100
    #: Whether arrays of this format can be sharded (``shards=``).
    can_shard: bool = False
    #: Whether arrays of this format can name their dimensions (``dimension_names=``).
    has_dimension_names: bool = True
    #: The compressor of a new array when none is named (``compressor="auto"``, in the codec vocabulary
    #: of :mod:`altarr.codecs.vocabulary`).
    default_compressor: str = "zstd"
    #: The document holding a node's user attributes (relative name), the key attribute writers lock.
    attributes_document: str = ""

    @property
    def node_keys(self) -> tuple[str, ...]:
        """The documents whose presence makes a node of this format (named when nothing is found)."""
        return (self.metadata_key,)

    @abstractmethod
    def detect(self, probe: Probe, parse: bool) -> Node | None:
        """The node at ``probe.prefix`` if its fetched documents are this format's, else ``None``.

        With ``parse`` an array's spec is built from the documents too; without, only its kind is
        determined. Metadata of this format that is present but invalid raises ``MetadataError``.
        """

    def codecs_json(self, spec: DatasetSpec) -> list[dict[str, Any]]:
        """The codec pipeline of ``spec`` as this format describes it (``altarr info`` prints it).

        >>> from altarr.formats import get_format
        >>> from altarr.stores import MemoryStore
        >>> spec = get_format("n5").create_array(MemoryStore(), "a", shape=(4,), dtype="u1", chunks=(2,))
        >>> [c["name"] for c in get_format("n5").codecs_json(spec)]
        ['n5bytes', 'zstd']
        """
        return spec.codecs.to_json()

    def consolidated_children(self, raw: dict[str, Any], prefix: str) -> dict[str, Any] | None:
        """The consolidated metadata of a group node from its fetched documents (``Node.raw``): the
        snapshot in its holder document (:mod:`altarr.formats.consolidated`), or ``None``."""
        holder = consolidated.holder_name(self.name)
        if holder is None:
            return None
        return consolidated.snapshot(self.name, raw.get(holder), join_key(prefix, holder))

    def consolidated_probe_keys(self) -> tuple[str, ...]:
        """Documents beside the node's own that hold consolidated metadata (fetched with
        :func:`altarr.formats.open_node`'s ``extra`` when a group is opened)."""
        return ()

    def child_from_consolidated(self, children: dict[str, Any], rel: str, path: str) -> Node | None:
        """The node ``rel`` (relative to the consolidated group) built from ``children`` without a
        request, or ``None`` when the snapshot does not describe it."""
        return None

    def create_array(
        self,
        store: Store,
        prefix: str,
        *,
        shape: Sequence[int],
        dtype: Any,
        chunks: Sequence[int],
        shards: Sequence[int] | Sequence[Sequence[int]] | None = None,
        compressor: Any = "zstd",
        fill_value: Any = 0,
        attributes: dict[str, Any] | None = None,
        dimension_names: Sequence[str | None] | None = None,
        **options: Any,
    ) -> DatasetSpec:
        """Build the metadata for a new array, write it, and return its spec.

        ``chunks`` is the innermost chunk shape; ``shards`` the outermost shard shape, or a list of shapes
        from the innermost shard level outwards for nested sharding. ``compressor`` is a name
        (``"zstd"``, ``"gzip"``, ``"blosc"``, ``None``/``"none"``, and format-specific names) or the
        format's own JSON description of it. ``options`` are the format's own (:attr:`array_options`);
        others raise ``MetadataError``. The format writes the documents in :meth:`_write_array`.

        >>> from altarr.formats import get_format
        >>> from altarr.stores import MemoryStore
        >>> get_format("zarr2").create_array(MemoryStore(), "a", shape=(4,), dtype="u1", chunks=(2,), nope=1)
        Traceback (most recent call last):
        altarr.errors.MetadataError: unknown Zarr v2 option(s) ['nope'] [key='a/.zarray']
        """
        key = join_key(prefix, self.metadata_key)
        unknown = sorted(set(options) - set(self.array_options))
        if unknown:
            raise MetadataError(f"unknown {self.title} option(s) {unknown}", key=key)
        new = NewArray(
            shape=tuple(shape),
            dtype=dtype,
            chunks=tuple(chunks),
            shards=shards,
            compressor=compressor,
            fill_value=fill_value,
            attributes=attributes,
            dimension_names=dimension_names,
            options=dict(options),
        )
        return self._write_array(store, prefix, key, new)

    @abstractmethod
    def _write_array(self, store: Store, prefix: str, key: str, new: NewArray) -> DatasetSpec:
        """Write the metadata of ``new`` (its options already checked) at ``key``; return the spec."""

    def resize_array(self, store: Store, prefix: str, shape: NewShape) -> tuple[DatasetSpec, DatasetSpec]:
        """Rewrite the array metadata at ``prefix`` with ``shape`` (NumPy order; or a function of the
        stored shape giving it), everything else as stored, and return the specs before and after. The
        document is read again here, so a caller holding its lock or write condition
        (:func:`altarr.dataset.locks.run_exclusive`) changes the shape of what is stored now, keeping what
        other writers changed meanwhile (attributes)."""
        raise UnsupportedError(
            f"{self.title} arrays cannot be resized", key=join_key(prefix, self.metadata_key)
        )

    @abstractmethod
    def read_attributes(self, store: Store, prefix: str) -> dict[str, Any]:
        """User attributes of the node at ``prefix`` (without format keys)."""

    @abstractmethod
    def write_attributes(self, store: Store, prefix: str, attributes: dict[str, Any]) -> None:
        """Replace the user attributes of the node at ``prefix``, keeping the format's own keys."""

    @abstractmethod
    def create_group(self, store: Store, prefix: str, attributes: dict[str, Any] | None = None) -> None:
        """Write group metadata at ``prefix`` (for N5 the root also records the ``"n5"`` version)."""
