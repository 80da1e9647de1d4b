"""The Zarr v3 ``bytes`` codec: an array as its raw elements in C order, little- or big-endian; decoding
is zero-copy where it can be (a read-only view of the input), or into ``out=``."""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

import numpy as np

from ..errors import CodecError, CorruptChunkError, MetadataError
from ._config import as_byte_view, check_choice, check_keys, nbytes_of
from .base import ArrayBytesCodec
from .registry import register_codec

__all__ = ["BytesCodec", "native_dtype"]

_ENDIANS = ("little", "big")
_ORDER_CHAR: dict[str, Literal["<", ">"]] = {"little": "<", "big": ">"}


def native_dtype(dtype: Any) -> np.dtype:
    """``dtype`` in the machine's byte order (what users are handed).

    >>> native_dtype(">u4") == np.dtype("uint32")
    True
    """
    dt: np.dtype = np.dtype(dtype)
    return dt if dt.isnative else dt.newbyteorder("=")


def _needs_endian(dtype: np.dtype) -> bool:
    """Whether the byte order of ``dtype`` matters (multi-byte numbers; not bool, raw bytes or strings)."""
    if dtype.fields is not None:
        return any(_needs_endian(f[0]) for f in dtype.fields.values())
    if dtype.subdtype is not None:
        return _needs_endian(dtype.subdtype[0])
    return dtype.itemsize > 1 and dtype.kind not in "bSV"


@register_codec
class BytesCodec(ArrayBytesCodec):
    """Zarr v3 ``bytes``: elements in C order; ``endian`` is ``"little"``, ``"big"``, or ``None`` (only
    for data types where byte order does not matter, such as ``uint8`` and ``bool``).

    >>> BytesCodec().encoded_size((4, 4), np.dtype("float32"))
    64
    """

    name: ClassVar[str] = "bytes"

    def __init__(self, endian: str | None = "little") -> None:
        if endian is not None:
            check_choice(self.name, "endian", endian, _ENDIANS)
        self.endian = endian
        self._order: Literal["<", ">", "="] = _ORDER_CHAR.get(endian or "", "=")

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> BytesCodec:
        cfg = check_keys(cls.name, configuration, ["endian"])
        return cls(endian=cfg.get("endian"))

    def configuration(self) -> dict[str, Any] | None:
        return None if self.endian is None else {"endian": self.endian}

    # --- dtype handling -------------------------------------------------------------------------------
    def _stored(self, dtype: np.dtype) -> np.dtype:
        """The dtype as laid out in the encoded bytes (raises for unsupported or under-specified dtypes)."""
        if dtype.hasobject:
            raise CodecError(f"the bytes codec cannot encode object dtype {dtype}", codec=self.name)
        if not _needs_endian(dtype):
            return dtype
        if self.endian is None:
            raise MetadataError(
                f"codec 'bytes': field 'endian' is required for the multi-byte data type {dtype}",
                codec=self.name,
            )
        return dtype.newbyteorder(self._order)

    def validate(self, shape: tuple[int, ...], dtype: Any = None) -> None:
        """Check at chain-build time that this codec can encode ``dtype`` (``MetadataError`` if not)."""
        if dtype is not None:
            self._stored(np.dtype(dtype))

    def is_native(self, dtype: Any) -> bool:
        """True when chunks of ``dtype`` are stored in the machine's byte order (decoding needs no swap)."""
        native = native_dtype(dtype)
        return bool(self._stored(native) == native)

    # --- codec ----------------------------------------------------------------------------------------
    def encode(self, array: np.ndarray) -> memoryview:
        """The array's elements in C order as a byte view. When no byte swap or reordering is needed the
        result shares memory with ``array`` (no copy)."""
        array = np.asarray(array)
        stored = self._stored(array.dtype)
        if array.dtype == stored:
            if not array.flags.c_contiguous:
                array = np.ascontiguousarray(array)
        else:
            array = array.astype(stored, order="C")
        return array.reshape(-1).view(np.uint8).data

    def decode(
        self,
        data: Any,
        shape: tuple[int, ...],
        dtype: Any,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Bytes -> array of ``shape`` and native ``dtype``.

        Without ``out`` the result is a (read-only) view of ``data`` unless a byte swap was needed. With
        ``out`` (an array of ``shape`` and native ``dtype``, any strides) the values are written into it
        and ``out`` is returned; when ``data`` already is ``out``'s memory nothing is copied.
        """
        dtype = native_dtype(dtype)
        stored = self._stored(dtype)
        shape = tuple(shape)
        expected = math.prod(shape) * dtype.itemsize
        got = nbytes_of(data)
        if got != expected:
            raise CorruptChunkError(
                f"bytes codec: a chunk of shape {shape} and dtype {dtype} needs {expected} bytes, got {got}",
                codec=self.name,
            )
        flat = np.frombuffer(as_byte_view(data), dtype=stored)
        if out is None:
            arr = flat.reshape(shape)
            return arr if stored == dtype else arr.astype(dtype)
        if out.shape != shape or out.dtype != dtype:
            raise CodecError(
                f"bytes codec: out has shape {out.shape} and dtype {out.dtype}, expected {shape} and {dtype}",
                codec=self.name,
            )
        if (
            stored == dtype
            and out.flags.c_contiguous
            and flat.__array_interface__["data"][0] == out.__array_interface__["data"][0]
        ):
            return out  # decompressed straight into out already
        np.copyto(out, flat.reshape(shape), casting="equiv" if stored != dtype else "no")
        return out

    def encoded_size(self, shape: tuple[int, ...], dtype: Any) -> int:
        return math.prod(shape) * int(np.dtype(dtype).itemsize)
