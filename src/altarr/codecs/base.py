"""Codec interfaces of the Zarr v3 model (array->array, array->bytes, bytes->bytes), each codec pure and
serialized to its Zarr v3 JSON form (:meth:`Codec.to_json`, :meth:`Codec.from_config`)."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from ._config import nbytes_of
from .bounded import bound, too_large

__all__ = ["Codec", "ArrayArrayCodec", "ArrayBytesCodec", "BytesBytesCodec", "BytesLike"]

BytesLike = bytes | bytearray | memoryview


class Codec(ABC):
    """Base of all codecs."""

    #: Zarr v3 codec name (``"bytes"``, ``"gzip"``, ``"sharding_indexed"``, ...).
    name: ClassVar[str]

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> Codec:
        """Build from a JSON ``configuration`` (validated; bad values raise ``MetadataError``)."""
        return cls(**(configuration or {}))

    def configuration(self) -> dict[str, Any] | None:
        """The JSON configuration, or ``None`` for a codec without one."""
        return None

    def to_json(self) -> dict[str, Any]:
        cfg = self.configuration()
        return {"name": self.name} if cfg is None else {"name": self.name, "configuration": cfg}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.configuration() or ''})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.to_json() == self.to_json()

    def __hash__(self) -> int:
        return hash(repr(self.to_json()))


class ArrayArrayCodec(Codec):
    """Transforms an array into another array (for example ``transpose``)."""

    @abstractmethod
    def resolve(self, shape: tuple[int, ...], dtype: np.dtype) -> tuple[tuple[int, ...], np.dtype]:
        """Shape and dtype of the encoded array for a decoded array of ``shape``/``dtype``."""

    @abstractmethod
    def encode(self, array: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def decode(self, array: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """Invert :meth:`encode`; ``shape``/``dtype`` describe the decoded result."""


class ArrayBytesCodec(Codec):
    """Serializes an array to bytes (``bytes``, N5's block format, ``sharding_indexed``)."""

    #: True when edge chunks are stored truncated to the array edge (N5) rather than padded (Zarr).
    truncates_edges: ClassVar[bool] = False

    @abstractmethod
    def encode(self, array: np.ndarray) -> BytesLike: ...

    @abstractmethod
    def decode(self, data: BytesLike, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """Decode one chunk of (at most) ``shape`` and ``dtype``. A codec that truncates edges returns
        the shape recorded in the data, which may be smaller than ``shape``."""

    def encoded_size(self, shape: tuple[int, ...], dtype: np.dtype) -> int | None:
        """Encoded size in bytes when it is fixed by shape and dtype alone, else ``None``."""
        return None

    def max_encoded_size(self, shape: tuple[int, ...], dtype: np.dtype) -> int:
        """An upper bound of the encoded size of a chunk of ``shape``/``dtype`` (the exact size when it is
        fixed): the cap of the bytes->bytes decoders that run before this codec's ``decode``."""
        n = self.encoded_size(shape, dtype)
        if n is not None:
            return n
        return bound(math.prod(shape) * np.dtype(dtype).itemsize)


class BytesBytesCodec(Codec):
    """Transforms bytes into bytes (compressors, checksums)."""

    @abstractmethod
    def encode(self, data: BytesLike) -> BytesLike: ...

    @abstractmethod
    def decode(self, data: BytesLike) -> BytesLike: ...

    def encoded_size(self, decoded_size: int) -> int | None:
        """Encoded size for a given input size when deterministic (checksums), else ``None``."""
        return None

    def max_encoded_size(self, decoded_size: int) -> int:
        """An upper bound of the encoded size for ``decoded_size`` input bytes (exact when fixed)."""
        n = self.encoded_size(decoded_size)
        if n is not None:
            return n
        return bound(decoded_size)

    def decode_capped(self, data: BytesLike, max_size: int, out: np.ndarray | None = None) -> BytesLike:
        """:meth:`decode`, refusing (``CorruptChunkError``) a result of more than ``max_size`` bytes, and
        for a decompressor before it allocates more than that (a decompression bomb). ``out`` as for the
        compressors' ``decode``. This default decodes, then checks: right for codecs whose output is never
        larger than their input (checksums); every decompressor overrides it to stop at the cap."""
        got = self.decode(data) if out is None else self.decode(data, out=out)  # type: ignore[call-arg]  # out is given only to the compressors, whose decode takes it
        if nbytes_of(got) > max_size:
            raise too_large(self.name, max_size)
        return got

    def encode_bound(self, decoded_size: int) -> int | None:
        """For codecs whose ``encode`` takes ``out=`` (a writable uint8 buffer it compresses into,
        returning a view of the bytes written): the largest output for ``decoded_size`` input bytes.
        ``None`` (the default): ``encode`` always returns a new object."""
        return None
