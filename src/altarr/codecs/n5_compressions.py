"""The N5 compressions, bytes->bytes codecs with two JSON forms: the ``compression`` object
(:func:`compression_from_n5_json`) and the N5 4.x ``codecs`` entry (:func:`n5_codec_from_json`), in the
registry's ``"n5"`` namespace (N5's ``gzip`` is not Zarr's). ``lz4`` is lz4-java's block stream
(docs/n5.md)."""

from __future__ import annotations

import bz2
import lzma
import struct
import zlib
from typing import Any, ClassVar

import lz4.block
import numpy as np
import xxhash

from ..errors import ChecksumError, CorruptChunkError, MetadataError, UnknownCodecError
from . import bounded
from ._config import check_bool, check_choice, check_int
from .base import BytesBytesCodec, BytesLike
from .compress import BloscCodec, ZstdCodec
from .crc32c import Crc32cCodec
from .registry import register_codec, registered_codecs

__all__ = [
    "N5_NAMESPACE",
    "N5Compression",
    "RawCompression",
    "GzipCompression",
    "Bzip2Compression",
    "XzCompression",
    "Lz4Compression",
    "ZstdCompression",
    "BloscCompression",
    "IdentityCodec",
    "register_n5_compression",
    "compression_from_n5_json",
    "n5_codec_from_json",
]

#: The namespace of the shared codec registry (:mod:`altarr.codecs.registry`) holding N5 compressions.
N5_NAMESPACE = "n5"


def register_n5_compression(cls: type[N5Compression]) -> type[N5Compression]:
    """Class decorator: make an :class:`N5Compression` known to :func:`compression_from_n5_json` (it is
    registered in the shared codec registry, namespace ``"n5"``)."""
    return register_codec(cls, namespace=N5_NAMESPACE)


#: The cap of an uncapped decode (the stream decoders of :mod:`altarr.capped` take one).
_NO_CAP = 2**62


class N5Compression(BytesBytesCodec):
    """An N5 compression: a bytes->bytes codec with an N5 JSON form ``{"type": name, **params}``."""

    #: The N5 ``type`` (also the N5 4.x codec ``name``).
    name: ClassVar[str]
    #: The N5 parameters in the order Java writes them: JSON name -> attribute (and keyword) name.
    N5_PARAMS: ClassVar[dict[str, str]] = {}

    def params(self) -> dict[str, Any]:
        """The N5 parameters (everything of the JSON object but ``type``)."""
        return {n5: getattr(self, attr) for n5, attr in self.N5_PARAMS.items()}

    def configuration(self) -> dict[str, Any] | None:
        return self.params() or None

    def to_n5_json(self) -> dict[str, Any]:
        """The N5 ``compression`` object."""
        return {"type": self.name, **self.params()}

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> N5Compression:
        """Build from the N5 parameters (unknown parameters are ignored, as the Java library does)."""
        params = configuration or {}
        return cls(**{attr: params[n5] for n5, attr in cls.N5_PARAMS.items() if n5 in params})

    def encode_typed(self, data: BytesLike, typesize: int) -> BytesLike:
        """Encode a payload of elements of ``typesize`` bytes (blosc shuffles by element size)."""
        return self.encode(data)

    def decode(self, data: BytesLike) -> BytesLike:
        return self.decode_capped(data, _NO_CAP)

    def _fail(self, what: str, err: BaseException | None = None) -> CorruptChunkError:
        detail = f": {err}" if err is not None else ""
        return CorruptChunkError(f"N5 {self.name} decompression failed ({what}){detail}", codec=self.name)


class IdentityCodec(BytesBytesCodec):
    """N5 4.x ``id`` data codec: passes bytes through unchanged."""

    name = "id"

    def encode(self, data: BytesLike) -> BytesLike:
        return data

    def decode(self, data: BytesLike) -> BytesLike:
        return data

    def encoded_size(self, decoded_size: int) -> int | None:
        return decoded_size


@register_n5_compression
class RawCompression(IdentityCodec, N5Compression):
    """N5 ``raw``: no compression."""

    name = "raw"


_GZIP_OS_BYTE = 9  # offset of the OS field in a gzip member header (RFC 1952)


@register_n5_compression
class GzipCompression(N5Compression):
    """N5 ``gzip``: a gzip member (or, with ``useZlib``, a zlib stream); ``level`` 6 by default (Java N5
    4.x's default; the -1 of older files means zlib's default, which is also 6).

    The decoder accepts concatenated gzip members, as Java's commons-compress does. In the N5 4.x
    ``codecs`` form Java describes gzip by its ``level`` alone (``useZlib`` is no ``@NameConfig.Parameter``
    there), so :meth:`configuration` writes ``useZlib`` only when it is set.
    """

    name = "gzip"
    N5_PARAMS = {"useZlib": "use_zlib", "level": "level"}

    def __init__(self, level: int = 6, use_zlib: bool = False) -> None:
        self.level = check_int(self.name, "level", level, lo=-1, hi=9)
        self.use_zlib = check_bool(self.name, "useZlib", use_zlib)

    def configuration(self) -> dict[str, Any] | None:
        config: dict[str, Any] = {"level": self.level}
        if self.use_zlib:  # not in Java's codecs form: the faithful extension (see docs/n5.md)
            config["useZlib"] = True
        return config

    def encode(self, data: BytesLike) -> BytesLike:
        level = 6 if self.level == -1 else self.level
        wbits = 15 if self.use_zlib else 31  # 31 = gzip container (mtime 0, no file name)
        c = zlib.compressobj(level, zlib.DEFLATED, wbits)
        out = c.compress(data) + c.flush()
        if not self.use_zlib:
            # the header's OS byte: 0xff ("unknown") as Java's commons-compress writes it, so the member is
            # byte for byte Java's (zlib would write its build's OS, e.g. 3 for Unix)
            out = out[:_GZIP_OS_BYTE] + b"\xff" + out[_GZIP_OS_BYTE + 1 :]
        return out

    def decode_capped(self, data: BytesLike, max_size: int, out: Any = None) -> BytesLike:
        return bounded.inflate(data, max_size, wbits=15 if self.use_zlib else 31, codec=self.name)


@register_n5_compression
class Bzip2Compression(N5Compression):
    """N5 ``bzip2`` (``blockSize`` 1-9, default 9)."""

    name = "bzip2"
    N5_PARAMS = {"blockSize": "block_size"}

    def __init__(self, block_size: int = 9) -> None:
        self.block_size = check_int(self.name, "blockSize", block_size, lo=1, hi=9)

    def encode(self, data: BytesLike) -> BytesLike:
        return bz2.compress(data, self.block_size)

    def decode_capped(self, data: BytesLike, max_size: int, out: Any = None) -> BytesLike:
        return bounded.bunzip2(data, max_size, codec=self.name)


@register_n5_compression
class XzCompression(N5Compression):
    """N5 ``xz`` (``preset`` 0-9, default 6): an .xz container with a CRC64 check."""

    name = "xz"
    N5_PARAMS = {"preset": "preset"}

    def __init__(self, preset: int = 6) -> None:
        self.preset = check_int(self.name, "preset", preset, lo=0, hi=9)

    def encode(self, data: BytesLike) -> BytesLike:
        return lzma.compress(data, format=lzma.FORMAT_XZ, preset=self.preset)

    def decode_capped(self, data: BytesLike, max_size: int, out: Any = None) -> BytesLike:
        return bounded.unxz(data, max_size, codec=self.name)


# lz4-java LZ4BlockOutputStream constants
_LZ4_MAGIC = b"LZ4Block"
_LZ4_HEADER = struct.Struct("<8sBiii")  # magic, token, compressed length, decompressed length, checksum
_LZ4_LEVEL_BASE = 10
_LZ4_METHOD_RAW = 0x10
_LZ4_METHOD_LZ4 = 0x20
_LZ4_SEED = 0x9747B28C
_LZ4_CHECKSUM_MASK = 0x0FFFFFFF
_LZ4_MIN_BLOCK = 64
_LZ4_MAX_BLOCK = 1 << (_LZ4_LEVEL_BASE + 0x0F)


def _lz4_checksum(block: BytesLike) -> int:
    return xxhash.xxh32_intdigest(block, seed=_LZ4_SEED) & _LZ4_CHECKSUM_MASK


@register_n5_compression
class Lz4Compression(N5Compression):
    """N5 ``lz4`` (``blockSize`` default 65536) in the lz4-java ``LZ4BlockOutputStream`` format."""

    name = "lz4"
    N5_PARAMS = {"blockSize": "block_size"}

    def __init__(self, block_size: int = 65536) -> None:
        self.block_size = check_int(self.name, "blockSize", block_size, lo=_LZ4_MIN_BLOCK, hi=_LZ4_MAX_BLOCK)
        self.level = max(0, (self.block_size - 1).bit_length() - _LZ4_LEVEL_BASE)

    def encode(self, data: BytesLike) -> BytesLike:
        view = memoryview(data).cast("B")
        out = bytearray()
        for start in range(0, len(view), self.block_size):
            block = view[start : start + self.block_size]
            check = _lz4_checksum(block)
            compressed = lz4.block.compress(block, store_size=False)
            if len(compressed) >= len(block):
                method, payload = _LZ4_METHOD_RAW, bytes(block)
            else:
                method, payload = _LZ4_METHOD_LZ4, compressed
            out += _LZ4_HEADER.pack(_LZ4_MAGIC, method | self.level, len(payload), len(block), check)
            out += payload
        out += _LZ4_HEADER.pack(_LZ4_MAGIC, _LZ4_METHOD_RAW | self.level, 0, 0, 0)  # end mark
        return bytes(out)

    def decode_capped(self, data: BytesLike, max_size: int, out: Any = None) -> BytesLike:
        """Decode the stream; a block that would take the output past ``max_size`` is refused before it
        is decompressed (``CorruptChunkError``)."""
        view = memoryview(data).cast("B")
        buf = bytearray()
        pos = 0
        ended = False
        while pos < len(view) or not ended:
            if pos + _LZ4_HEADER.size > len(view):
                raise self._fail(f"stream truncated at byte {pos}: missing block header or end mark")
            magic, token, clen, dlen, check = _LZ4_HEADER.unpack_from(view, pos)
            if magic != _LZ4_MAGIC:
                raise self._fail(f"bad magic {bytes(magic)!r} at byte {pos}")
            method = token & 0xF0
            max_len = 1 << (_LZ4_LEVEL_BASE + (token & 0x0F))
            if method not in (_LZ4_METHOD_RAW, _LZ4_METHOD_LZ4) or not 0 <= dlen <= max_len or clen < 0:
                raise self._fail(
                    f"bad block header at byte {pos} (token {token:#04x}, lengths {clen}/{dlen})"
                )
            if method == _LZ4_METHOD_RAW and clen != dlen:
                raise self._fail(f"raw block at byte {pos} has compressed length {clen} != {dlen}")
            pos += _LZ4_HEADER.size
            if clen == 0 and dlen == 0:
                if check != 0:
                    raise self._fail(f"end mark at byte {pos - _LZ4_HEADER.size} has a non-zero checksum")
                ended = True  # a following stream (concatenation) may start here
                continue
            ended = False
            if pos + clen > len(view):
                raise self._fail(f"block at byte {pos} needs {clen} bytes, only {len(view) - pos} left")
            if len(buf) + dlen > max_size:
                raise bounded.too_large(self.name, max_size)
            payload = view[pos : pos + clen]
            pos += clen
            if method == _LZ4_METHOD_RAW:
                block = bytes(payload)
            else:
                try:
                    block = lz4.block.decompress(payload, uncompressed_size=dlen)
                except Exception as e:  # lz4.block.LZ4BlockError
                    raise self._fail(f"LZ4 block ending at byte {pos}", e) from e
                if len(block) != dlen:
                    raise self._fail(
                        f"LZ4 block ending at byte {pos} decoded to {len(block)} != {dlen} bytes"
                    )
            if _lz4_checksum(block) != (check & 0xFFFFFFFF):
                raise ChecksumError(
                    f"N5 lz4 block checksum mismatch (xxhash32) in block ending at byte {pos}",
                    codec=self.name,
                )
            buf += block
        return bytes(buf)


@register_n5_compression
class ZstdCompression(N5Compression):
    """N5 ``zstd`` (n5-zstandard; ``level`` default 3): the frames of the shared
    :class:`~altarr.codecs.compress.ZstdCodec` (no checksum, the content size written), so N5 blocks take
    its paths: decoding straight into the caller's buffer and the bounded decoder.
    """

    name = "zstd"
    N5_PARAMS = {"level": "level"}

    def __init__(self, level: int = 3) -> None:
        self._shared = ZstdCodec(level=level)
        self.level = self._shared.level

    def encode(self, data: BytesLike) -> BytesLike:
        return self._shared.encode(data)

    def decode(self, data: BytesLike, out: np.ndarray | None = None) -> BytesLike:
        return self._shared.decode(data, out)

    def decode_capped(self, data: BytesLike, max_size: int, out: Any = None) -> BytesLike:
        return self._shared.decode_capped(data, max_size, out)


_N5_SHUFFLES = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}
_BLOSC_CNAMES = ("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd")


@register_n5_compression
class BloscCompression(N5Compression):
    """N5 ``blosc`` (n5-blosc): ``cname`` "blosclz", ``clevel`` 6, ``shuffle`` 0/1/2/-1 (int), ``blocksize``
    0, ``nthreads`` 1. A c-blosc frame; the element size of the block is used as blosc's typesize."""

    name = "blosc"
    N5_PARAMS = {n: n for n in ("cname", "clevel", "shuffle", "blocksize", "nthreads")}

    def __init__(
        self, cname: str = "blosclz", clevel: int = 6, shuffle: int = 0, blocksize: int = 0, nthreads: int = 1
    ) -> None:
        self.cname = check_choice(self.name, "cname", cname, _BLOSC_CNAMES)
        self.clevel = check_int(self.name, "clevel", clevel, lo=0, hi=9)
        self.shuffle = check_int(self.name, "shuffle", shuffle, lo=-1, hi=2)
        self.blocksize = check_int(self.name, "blocksize", blocksize, lo=0, hi=2**31 - 1)
        self.nthreads = check_int(self.name, "nthreads", nthreads, lo=1, hi=1024)
        self._by_typesize: dict[int, BloscCodec] = {}

    def params(self) -> dict[str, Any]:
        # ``nthreads`` is a run-time setting, not part of the data format; it is written only when it is not
        # n5-blosc's default (1), because tensorstore's n5 driver refuses metadata that carries it.
        return {k: v for k, v in super().params().items() if k != "nthreads" or v != 1}

    def _shared(self, typesize: int) -> BloscCodec:
        """The shared :class:`~altarr.codecs.compress.BloscCodec` for elements of ``typesize`` bytes
        (n5-blosc's ``shuffle`` -1, blosc's auto-shuffle, is bit-shuffle for 1-byte elements, else byte
        shuffle). One per element size, made once."""
        codec = self._by_typesize.get(typesize)
        if codec is None:
            shuffle = self.shuffle if self.shuffle >= 0 else (2 if typesize == 1 else 1)
            codec = self._by_typesize[typesize] = BloscCodec(
                cname=self.cname,
                clevel=self.clevel,
                shuffle=_N5_SHUFFLES[shuffle],
                typesize=typesize,
                blocksize=self.blocksize,
            )
        return codec

    def encode(self, data: BytesLike) -> BytesLike:
        return self.encode_typed(data, 1)

    def encode_typed(self, data: BytesLike, typesize: int) -> BytesLike:
        """A blosc frame of ``data`` shuffled by elements of ``typesize`` bytes (1 when the payload is not
        a whole number of them), through the shared compressor (the frames numcodecs writes)."""
        n = len(memoryview(data).cast("B"))
        return self._shared(typesize if typesize > 1 and n % typesize == 0 else 1).encode(data)

    def decode(self, data: BytesLike, out: np.ndarray | None = None) -> BytesLike:
        # decoding does not depend on the element size (the frame header records it)
        return self._shared(1).decode(data, out)

    def decode_capped(self, data: BytesLike, max_size: int, out: Any = None) -> BytesLike:
        return self._shared(1).decode_capped(data, max_size, out)


def compression_from_n5_json(obj: Any, *, key: str | None = None) -> N5Compression:
    """An N5 compression from its ``compression`` JSON object, or from a legacy ``compressionType`` string.

    Unknown ``type`` -> :class:`~altarr.errors.UnknownCodecError` naming ``key``; bad parameters ->
    :class:`~altarr.errors.MetadataError`."""
    if isinstance(obj, str):
        obj = {"type": obj}
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise MetadataError(f"N5 'compression' must be an object with a string 'type', got {obj!r}", key=key)
    known = registered_codecs(N5_NAMESPACE)
    cls = known.get(obj["type"])
    if cls is None or not issubclass(cls, N5Compression):
        raise UnknownCodecError(
            f"unknown N5 compression type {obj['type']!r}; known: {sorted(known)}",
            key=key,
            codec=obj["type"],
        )
    params = {k: v for k, v in obj.items() if k != "type"}
    try:
        return cls.from_config(params)
    except MetadataError as e:
        raise e.with_context(key=key, codec=cls.name) from e


#: Non-compression data codecs of N5 4.x ``codecs`` lists (Zarr v3's crc32c: N5 4.x uses its wire format).
_DATA_CODECS: dict[str, type[BytesBytesCodec]] = {"crc32c": Crc32cCodec, "id": IdentityCodec}


def n5_codec_from_json(obj: Any, *, key: str | None = None) -> BytesBytesCodec:
    """An N5 4.x data (bytes->bytes) codec from its ``{"name": ..., "configuration": {...}}`` form:
    the compressions (``raw``, ``gzip``, ``bzip2``, ``lz4``, ``xz``, ``zstd``, ``blosc``) with their N5
    parameters as configuration, plus ``crc32c`` and ``id``."""
    if isinstance(obj, str):
        obj = {"name": obj}
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        raise MetadataError(f"an N5 codec must be an object with a string 'name', got {obj!r}", key=key)
    name, config = obj["name"], obj.get("configuration") or {}
    if not isinstance(config, dict):
        raise MetadataError(f"N5 codec {name!r}: 'configuration' must be an object", key=key, codec=name)
    if name in _DATA_CODECS:
        return _DATA_CODECS[name]()
    known = registered_codecs(N5_NAMESPACE)
    if name in known:
        return compression_from_n5_json({**config, "type": name}, key=key)
    raise UnknownCodecError(
        f"unknown N5 data codec {name!r}; known: {sorted([*known, *_DATA_CODECS])}", key=key, codec=name
    )
