"""The members a zarr-python 3 user reaches for on an array (``info``, ``nchunks``, ``compressors``...;
the table is in docs/zarr-python.md): :class:`ArrayMembers`, a base of
:class:`~altarr.dataset.dataset.Dataset`, and :class:`Info`, the printable summary.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..formats.base import DatasetSpec, Format
    from ..stores.base import Store

__all__ = ["ArrayMembers", "NodeNames", "Info", "inner_chain"]


def inner_chain(spec: DatasetSpec) -> Any:
    """The codec chain that encodes one chunk: the chain of the innermost shard level for a sharded
    array (``sharding_indexed`` holds it), else the array's own."""
    chain = spec.codecs
    while hasattr(chain.array_bytes, "codecs") and hasattr(chain.array_bytes.codecs, "array_bytes"):
        chain = chain.array_bytes.codecs
    return chain


class Info:
    """A printable summary: one ``name : value`` line per field, as zarr-python prints ``info``; the
    fields are also a dict (``info.fields``).

    >>> Info({"Type": "Array", "Shape": (2, 3)})
    Type  : Array
    Shape : (2, 3)
    """

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields

    def __repr__(self) -> str:
        width = max(len(k) for k in self.fields)
        return "\n".join(f"{k.ljust(width)} : {v}" for k, v in self.fields.items())

    __str__ = __repr__

    def _repr_markdown_(self) -> str:  # notebooks
        return "\n".join(f"- **{k}**: `{v}`" for k, v in self.fields.items())


def _size(n: int) -> str:
    """``40000 (39.1K)``, as zarr-python prints a byte count."""
    value, unit = float(n), ""
    for bigger in ("K", "M", "G", "T"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{n} ({value:.1f}{unit})" if unit else str(n)


class NodeNames:
    """zarr-python's ``name`` and ``basename`` of an array or group at ``path``."""

    path: str

    @property
    def name(self) -> str:
        """The path from the store's root, with a leading ``/`` (zarr-python's ``name``)."""
        return "/" + self.path

    @property
    def basename(self) -> str:
        """The last part of :attr:`name`."""
        return self.path.rsplit("/", 1)[-1]


class ArrayMembers(NodeNames):
    """zarr-python's array members, computed from the dataset's spec and format."""

    store: Store
    path: str
    spec: DatasetSpec
    _format: Format
    read_only: bool
    fill_value: Any

    if TYPE_CHECKING:  # the read-only properties Dataset defines

        @property
        def shape(self) -> tuple[int, ...]: ...
        @property
        def chunks(self) -> tuple[int, ...]: ...
        @property
        def shards(self) -> tuple[int, ...] | None: ...
        @property
        def grid_shape(self) -> tuple[int, ...]: ...
        @property
        def nbytes(self) -> int: ...
        @property
        def format(self) -> str: ...

    def stored_chunks(self) -> Iterator[tuple[int, ...]]:  # pragma: no cover - Dataset defines it
        raise NotImplementedError

    @property
    def cdata_shape(self) -> tuple[int, ...]:
        """Chunks along each dimension (zarr-python's name for ``grid_shape``)."""
        return self.grid_shape

    @property
    def nchunks(self) -> int:
        """How many chunks the array has (the innermost, encoded unit; shards hold several)."""
        return math.prod(self.grid_shape)

    @property
    def nchunks_initialized(self) -> int:
        """How many chunks are stored: with shards, every chunk of each shard that exists (as zarr-python
        3.1 counts them). Lists the store once."""
        return sum(1 for _ in self.stored_chunks())

    @property
    def compressors(self) -> tuple[Any, ...]:
        """The bytes-to-bytes codecs of one chunk, in order: altarr codecs for Zarr v3 (inside the
        shards), the numcodecs compressor for Zarr v2 (as zarr-python gives it), the N5 compression."""
        chain = inner_chain(self.spec)
        ab = chain.array_bytes
        if self.format == "zarr2":
            return () if ab.compressor is None else (ab.compressor,)
        if self.format == "n5":
            return tuple(getattr(ab, "data_codecs", ())) + tuple(chain.bytes_bytes)
        return tuple(chain.bytes_bytes)

    @property
    def filters(self) -> tuple[Any, ...]:
        """The array-to-array codecs (Zarr v3, ``transpose``) or the numcodecs filters (Zarr v2)."""
        chain = inner_chain(self.spec)
        if self.format == "zarr2":
            return tuple(chain.array_bytes.filters)
        return tuple(chain.array_array)

    @property
    def serializer(self) -> Any:
        """The array-to-bytes codec of one chunk (Zarr v3 ``bytes``, N5's block header); ``None`` for Zarr
        v2, as in zarr-python."""
        return None if self.format == "zarr2" else inner_chain(self.spec).array_bytes

    @property
    def codecs(self) -> list[dict[str, Any]]:
        """The whole codec pipeline as the format describes it (JSON, shards included), as ``altarr info``
        prints it."""
        return self._format.codecs_json(self.spec)

    def _info_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "Type": "Array",
            "Format": {"zarr3": "Zarr v3", "zarr2": "Zarr v2", "n5": "N5"}.get(self.format, self.format),
            "Data type": str(self.spec.dtype),
            "Fill value": self.fill_value,
            "Shape": self.shape,
        }
        if self.shards:
            fields["Shard shape"] = self.shards
        fields.update(
            {
                "Chunk shape": self.chunks,
                "Read-only": self.read_only,
                "Store type": type(self.store).__name__,
                "Filters": self.filters,
                "Serializer": self.serializer,
                "Compressors": self.compressors,
                "No. bytes": _size(self.nbytes),
            }
        )
        return fields

    @property
    def info(self) -> Info:
        """A printable summary (no request): type, format, dtype, fill value, shapes, codecs, size."""
        return Info(self._info_fields())

    def info_complete(self) -> Info:
        """:attr:`info` and the chunks stored (lists the store)."""
        return Info(
            {**self._info_fields(), "Chunks initialized": f"{self.nchunks_initialized}/{self.nchunks}"}
        )
