"""What every on-disk format hands the engine: one :class:`DatasetSpec` per array, and the metadata I/O.

The engine (``altarr.dataset``) is format-blind. A format module (``zarr3``, ``zarr2``, ``n5``) maps its
metadata documents to a :class:`DatasetSpec` in NumPy (C) order and back, names its metadata key (as the
Java N5 library's ``getAttributesKey`` does for n5-zarr), and maps a stored object's grid position to
its key. Formats read and write metadata through the store they are given; they never touch chunk data.

Example:
    >>> from altarr.formats import get_format
    >>> get_format("zarr3").metadata_key
    'zarr.json'
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import MetadataError

if TYPE_CHECKING:  # formats may not import the store layer at run time (layering)
    from ..codecs.chain import CodecChain
    from ..stores.base import Store

__all__ = ["DatasetSpec", "Format", "NewArray", "join_key"]


def join_key(prefix: str, key: str) -> str:
    """Join a node prefix and a relative key with ``/`` (an empty prefix is the store root)."""
    return f"{prefix}/{key}" if prefix else key


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


class Format(ABC):
    """One on-disk format. Instances are stateless singletons (see :func:`altarr.formats.get_format`)."""

    #: ``"zarr3"``, ``"zarr2"`` or ``"n5"``.
    name: str
    #: The metadata key of an array or group node (``zarr.json``, ``.zarray``, ``attributes.json``).
    metadata_key: str
    #: The format's name in messages (``"Zarr v3"``).
    title: str
    #: Format-specific keyword options :meth:`create_array` accepts.
    array_options: tuple[str, ...] = ()

    @abstractmethod
    def node_kind(self, store: Store, prefix: str) -> str | None:
        """``"array"``, ``"group"`` or ``None`` when the node at ``prefix`` is not of this format."""

    @abstractmethod
    def open_array(self, store: Store, prefix: str) -> DatasetSpec:
        """Read and validate the array metadata at ``prefix``; ``MetadataError`` names the key on failure."""

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

    @abstractmethod
    def read_attributes(self, store: Store, prefix: str) -> dict[str, Any]:
        """User attributes of the node at ``prefix`` (without format keys)."""

    @abstractmethod
    def write_attributes(self, store: Store, prefix: str, attributes: dict[str, Any]) -> None:
        """Replace the user attributes of the node at ``prefix``, keeping the format's own keys."""

    @abstractmethod
    def create_group(self, store: Store, prefix: str, attributes: dict[str, Any] | None = None) -> None:
        """Write group metadata at ``prefix`` (for N5 the root also records the ``"n5"`` version)."""
