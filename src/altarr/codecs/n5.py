"""The N5 block format (``n5bytes``: a big-endian header with the block's size, then the compressed
big-endian payload; docs/n5.md, "Plain N5") and N5's data type names. :class:`N5BlockCodec` works in
NumPy order: the header's size is the reversed shape, and edge blocks are stored truncated."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import CorruptChunkError, MetadataError, UnsupportedError
from ._config import nbytes_of
from .base import ArrayBytesCodec, BytesBytesCodec, BytesLike
from .n5_compressions import BloscCompression, IdentityCodec, N5Compression, ZstdCompression

__all__ = [
    "N5_DATA_TYPES",
    "N5BlockCodec",
    "n5_dtype",
    "n5_data_type_name",
    "parse_block_header",
]

#: N5 ``dataType`` names -> NumPy dtypes (native order; the codec handles the big-endian storage).
N5_DATA_TYPES: dict[str, np.dtype] = {
    name: np.dtype(name)
    for name in (
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "int8",
        "int16",
        "int32",
        "int64",
        "float32",
        "float64",
    )
}

MODE_DEFAULT = 0
MODE_VARLENGTH = 1
MODE_OBJECT = 2

_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")


def n5_dtype(name: Any, *, key: str | None = None) -> np.dtype:
    """The NumPy dtype of an N5 ``dataType`` name; ``object``/``string`` -> ``UnsupportedError``."""
    if name in ("object", "string"):
        raise UnsupportedError(f"N5 dataType {name!r} (non-numeric blocks) is not supported", key=key)
    try:
        return N5_DATA_TYPES[name]
    except (KeyError, TypeError):
        raise MetadataError(
            f"unknown N5 dataType {name!r}; expected one of {sorted(N5_DATA_TYPES)}", key=key
        ) from None


def n5_data_type_name(dtype: Any) -> str:
    """The N5 ``dataType`` name of a NumPy dtype (``UnsupportedError`` if N5 has none, e.g. bool)."""
    dt = np.dtype(dtype)
    for name, candidate in N5_DATA_TYPES.items():
        if dt.kind == candidate.kind and dt.itemsize == candidate.itemsize:
            return name
    raise UnsupportedError(f"N5 has no data type for {dt} (N5 supports {', '.join(N5_DATA_TYPES)})")


def parse_block_header(data: BytesLike) -> tuple[int, tuple[int, ...], int | None, int]:
    """Parse an N5 block header: ``(mode, size in N5 order, numElements or None, header length)``."""
    view = memoryview(data).cast("B")
    try:
        (mode,) = _U16.unpack_from(view, 0)
        if mode == MODE_OBJECT:
            (num,) = _U32.unpack_from(view, 2)
            return mode, (), num, 6
        if mode not in (MODE_DEFAULT, MODE_VARLENGTH):
            raise CorruptChunkError(f"N5 block header has unknown mode {mode}", codec=N5BlockCodec.name)
        (ndim,) = _U16.unpack_from(view, 2)
        size = struct.unpack_from(f">{ndim}I", view, 4)
        pos = 4 + 4 * ndim
        num = None
        if mode == MODE_VARLENGTH:
            (num,) = _U32.unpack_from(view, pos)
            pos += 4
    except struct.error as e:
        raise CorruptChunkError(
            f"N5 block header truncated ({len(view)} bytes)",
            codec=N5BlockCodec.name,
            byte_range=(0, len(view)),
        ) from e
    return mode, tuple(size), num, pos


class N5BlockCodec(ArrayBytesCodec):
    """The N5 block format (N5 4.x name ``n5bytes``): big-endian header + compressed big-endian payload.

    ``compression`` is one N5 compression or a sequence of N5 data codecs applied to the payload in order
    (``raw``/``id`` entries are dropped, as the Java library does). Works in NumPy order (see the module
    docstring). ``decode`` returns the block at the size recorded in its header."""

    name = "n5bytes"
    truncates_edges = True

    def __init__(self, compression: N5Compression | Sequence[BytesBytesCodec] | None = None) -> None:
        if compression is None:
            codecs: list[BytesBytesCodec] = []
        elif isinstance(compression, BytesBytesCodec):
            codecs = [compression]
        else:
            codecs = list(compression)
        # raw (an IdentityCodec) and id entries are dropped
        self.data_codecs: tuple[BytesBytesCodec, ...] = tuple(
            c for c in codecs if not isinstance(c, IdentityCodec)
        )

    def codecs_json(self) -> list[dict[str, Any]]:
        """This codec as an N5 4.x ``codecs`` list: ``n5bytes`` followed by its data codecs."""
        return [self.to_json(), *(c.to_json() for c in self.data_codecs)]

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.codecs_json() == self.codecs_json()

    def __hash__(self) -> int:
        return hash(repr(self.codecs_json()))

    def __repr__(self) -> str:
        return f"N5BlockCodec({list(self.data_codecs)!r})"

    def _compress(self, payload: BytesLike, typesize: int) -> BytesLike:
        for i, c in enumerate(self.data_codecs):
            payload = (
                c.encode_typed(payload, typesize)
                if i == 0 and isinstance(c, N5Compression)
                else c.encode(payload)
            )
        return payload

    def _decompress(self, payload: BytesLike, max_size: int) -> BytesLike:
        """Undo the data codecs, the innermost one producing at most ``max_size`` bytes (each outer one a
        generous bound of its encoded size): a decompression bomb stops at the block's size. An innermost
        zstd or blosc compression decodes straight into a new buffer of ``max_size`` bytes (the shared
        compressors' fast path)."""
        if not self.data_codecs:
            return payload
        limits = [max_size]
        for c in self.data_codecs[:-1]:
            limits.append(c.max_encoded_size(limits[-1]))
        innermost = self.data_codecs[0]
        for c, limit in zip(reversed(self.data_codecs), reversed(limits), strict=True):
            if c is innermost and isinstance(c, ZstdCompression | BloscCompression):
                payload = c.decode_capped(payload, limit, np.empty(limit, dtype=np.uint8))
            else:
                payload = c.decode_capped(payload, limit)
        return payload

    def encode(self, array: np.ndarray) -> BytesLike:
        array = np.asarray(array)
        n5_data_type_name(array.dtype)  # refuses non-N5 types
        size = array.shape[::-1]
        if any(s >= 2**32 for s in size) or array.ndim >= 2**16:
            raise CorruptChunkError(
                f"block of shape {array.shape} does not fit an N5 header", codec=self.name
            )
        header = struct.pack(f">HH{array.ndim}I", MODE_DEFAULT, array.ndim, *size)
        payload = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder(">"))
        compressed = self._compress(payload.reshape(-1).view(np.uint8).data, array.dtype.itemsize)
        return header + bytes(compressed)

    def decode(self, data: BytesLike, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        mode, size, num, hlen = parse_block_header(data)
        view = memoryview(data).cast("B")
        if mode == MODE_OBJECT:
            raise UnsupportedError(
                "N5 object block (mode 2) cannot be read as a numeric array", codec=self.name
            )
        np_shape = tuple(size[::-1])
        if len(np_shape) != len(shape) or any(s > b for s, b in zip(np_shape, shape, strict=True)):
            raise CorruptChunkError(
                f"N5 block header size {list(size)} (N5 order) does not fit the block size "
                f"{list(shape[::-1])} (N5 order) of the dataset",
                codec=self.name,
            )
        count = int(np.prod(np_shape, dtype=np.int64))
        if num is not None and num != count:
            raise UnsupportedError(
                f"N5 varlength block with numElements {num} != prod(size {list(size)}) = {count} "
                "cannot be read as a numeric array",
                codec=self.name,
            )
        expected = count * dtype.itemsize
        payload = self._decompress(view[hlen:], expected)
        if nbytes_of(payload) != expected:
            raise CorruptChunkError(
                f"N5 block payload has {nbytes_of(payload)} bytes after decompression, expected {expected} "
                f"({count} x {dtype.itemsize}-byte elements for size {list(size)})",
                codec=self.name,
            )
        return np.frombuffer(payload, dtype=dtype.newbyteorder(">")).reshape(np_shape).astype(dtype)

    def encoded_size(self, shape: tuple[int, ...], dtype: np.dtype) -> int | None:
        size = 4 + 4 * len(shape) + int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        for c in self.data_codecs:
            s = c.encoded_size(size)
            if s is None:
                return None
            size = s
        return size
