"""Codecs (Zarr v3 model: array->array, array->bytes, bytes->bytes), chains and the sharding byte layer;
pure functions of bytes and arrays, built from metadata by :func:`codec_from_json` /
:meth:`CodecChain.from_json`.

Example:
    >>> import numpy as np
    >>> from altarr.codecs import CodecChain, BytesCodec, GzipCodec
    >>> chain = CodecChain([BytesCodec("little"), GzipCodec(level=1)])
    >>> chain.decode(chain.encode(np.arange(4, dtype="<i2")), (4,), np.dtype("int16"))
    array([0, 1, 2, 3], dtype=int16)
"""

from __future__ import annotations

from . import n5_compressions  # noqa: F401  (registers the N5 compressions, namespace "n5")
from .base import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, BytesLike, Codec

# Import order matters only for registration; each module registers its codecs on import.
from .bytes import BytesCodec, native_dtype
from .chain import CodecChain
from .compress import BloscCodec, GzipCodec, ZstdCodec
from .crc32c import Crc32cCodec, crc32c_value
from .registry import codec_from_json, get_codec_class, register_codec, registered_codecs
from .sharding import EMPTY, ShardingCodec
from .transpose import TransposeCodec

__all__ = [
    "ArrayArrayCodec",
    "ArrayBytesCodec",
    "BloscCodec",
    "BytesBytesCodec",
    "BytesCodec",
    "BytesLike",
    "Codec",
    "CodecChain",
    "Crc32cCodec",
    "EMPTY",
    "GzipCodec",
    "ShardingCodec",
    "TransposeCodec",
    "ZstdCodec",
    "codec_from_json",
    "crc32c_value",
    "get_codec_class",
    "native_dtype",
    "register_codec",
    "registered_codecs",
]
