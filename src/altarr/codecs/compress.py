"""Compressors (bytes -> bytes) backed by numcodecs: Zarr v3 ``gzip``, ``zstd`` and ``blosc``, safe to
share across threads.

Example:
    >>> z = ZstdCodec(level=3)
    >>> bytes(z.decode(z.encode(b"hello hello hello")))
    b'hello hello hello'
    >>> BloscCodec(cname="zstd", clevel=5, shuffle="shuffle", typesize=4).to_json()["configuration"]["typesize"]
    4
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar, cast

import numpy as np
from numcodecs import GZip as _NGZip
from numcodecs import Zstd as _NZstd
from numcodecs.blosc import Blosc as _NBlosc

from .. import native
from ..errors import AltarrError, ChecksumError, CodecError, CorruptChunkError, MetadataError
from ._config import as_byte_view, check_bool, check_choice, check_int, check_keys
from .base import BytesBytesCodec, BytesLike
from .bounded import check_announced, inflate, unzstd, zstd_content_size
from .registry import register_codec

__all__ = ["GzipCodec", "ZstdCodec", "BloscCodec"]


def _as_bytes_like(array: np.ndarray) -> BytesLike:
    """``array`` (uint8, C-contiguous) as the bytes-like object it is: NumPy's type stubs give arrays the
    buffer protocol only from Python 3.12 on (a cast: nothing is converted)."""
    return cast(BytesLike, array)


def _into(data: bytes, out: np.ndarray | None) -> BytesLike:
    """``data`` copied into ``out`` when the sizes match (callers then get ``out`` back), else ``data``."""
    if out is not None and out.flags.c_contiguous and len(data) == out.nbytes:
        out.reshape(-1).view(np.uint8)[:] = np.frombuffer(data, dtype=np.uint8)
        return _as_bytes_like(out)
    return data


_zstd_local = threading.local()


class _NumcodecsCodec(BytesBytesCodec):
    """Shared encode/decode plumbing: error wrapping and decoding into ``out``."""

    _impl: Any

    def _content_size(self, data: memoryview) -> int | None:
        """Decoded size announced by the stream header, or ``None`` when unknown."""
        return None

    def encode(self, data: BytesLike) -> BytesLike:
        try:
            encoded: BytesLike = self._impl.encode(as_byte_view(data))
            return encoded
        except AltarrError:
            raise
        except Exception as e:
            raise CodecError(f"{self.name} compression failed: {e}", codec=self.name) from e

    def decode(self, data: BytesLike, out: np.ndarray | None = None) -> BytesLike:
        """Decompress ``data``. With ``out`` (C-contiguous bytes) the output is capped at ``out.nbytes``
        and decoded straight into it when the header announces exactly that size (zstd with a content
        size, blosc); a shorter stream comes back as a new buffer: use the return value."""
        if out is not None:
            return self.decode_capped(data, out.nbytes, out)
        return self._decode(as_byte_view(data), None)

    def decode_capped(self, data: BytesLike, max_size: int, out: np.ndarray | None = None) -> BytesLike:
        """Decompress at most ``max_size`` bytes (else ``CorruptChunkError``): a header announcing more is
        refused before anything is allocated, a stream without a size is inflated up to the cap."""
        mv = as_byte_view(data)
        announced = self._content_size(mv)
        check_announced(self.name, announced, max_size)
        if announced is None:
            streamed = self._stream(mv, max_size)
            if streamed is not None:
                return _into(streamed, out)
        return self._decode(mv, out)

    def _stream(self, data: memoryview, max_size: int) -> bytes | None:
        """Capped incremental decoding of a stream whose header gives no size (``None``: not needed)."""
        return None

    def _decode(self, mv: memoryview, out: np.ndarray | None) -> BytesLike:
        if out is not None and out.flags.c_contiguous and self._content_size(mv) == out.nbytes:
            try:
                self._impl.decode(mv, out=out.reshape(-1).view(np.uint8))
                return _as_bytes_like(out)
            except (RuntimeError, ValueError):  # numcodecs' refusal: the plain decode reports it precisely
                pass
        try:
            decoded: BytesLike = self._impl.decode(mv)
            return decoded
        except Exception as e:
            # zstd's frame checksum ("Restored data doesn't match checksum") is a checksum failure
            cls = ChecksumError if "checksum" in str(e) else CorruptChunkError
            raise cls(f"{self.name} decompression failed: {e}", codec=self.name) from e


@register_codec
class GzipCodec(_NumcodecsCodec):
    """Zarr v3 ``gzip`` (RFC 1952 gzip member; concatenated members are accepted on decode).

    >>> GzipCodec(level=1).to_json()
    {'name': 'gzip', 'configuration': {'level': 1}}
    """

    name: ClassVar[str] = "gzip"

    def __init__(self, level: int = 5) -> None:
        self.level = check_int(self.name, "level", level, lo=0, hi=9)
        self._impl = _NGZip(level=self.level)

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> GzipCodec:
        cfg = check_keys(cls.name, configuration, ["level"])
        return cls(**cfg)

    def configuration(self) -> dict[str, Any]:
        return {"level": self.level}

    def _stream(self, data: memoryview, max_size: int) -> bytes:
        return inflate(data, max_size, wbits=31, codec=self.name)


@register_codec
class ZstdCodec(_NumcodecsCodec):
    """Zarr v3 ``zstd`` (zarr-extensions): ``level`` in -131072..22 (0 = zstd's default), optional
    frame ``checksum``.

    >>> ZstdCodec().to_json()
    {'name': 'zstd', 'configuration': {'level': 0, 'checksum': False}}
    """

    name: ClassVar[str] = "zstd"

    def __init__(self, level: int = 0, checksum: bool = False) -> None:
        self.level = check_int(self.name, "level", level, lo=-131072, hi=22)
        self.checksum = check_bool(self.name, "checksum", checksum)
        self._impl = _NZstd(level=self.level, checksum=self.checksum)

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> ZstdCodec:
        cfg = check_keys(cls.name, configuration, ["level", "checksum"])
        return cls(**cfg)

    def configuration(self) -> dict[str, Any]:
        return {"level": self.level, "checksum": self.checksum}

    def _content_size(self, data: memoryview) -> int | None:
        return zstd_content_size(data)

    def _stream(self, data: memoryview, max_size: int) -> bytes:
        return unzstd(data, max_size, codec=self.name)

    def _decode(self, mv: memoryview, out: np.ndarray | None) -> BytesLike:
        # into ``out`` with the kernel's libzstd and context (numcodecs makes one a call: benchmarks/README.md)
        ext = native.ext
        if ext is not None and out is not None and out.flags.c_contiguous:
            if zstd_content_size(mv) == out.nbytes and ext.decompress(native.CODEC_ZSTD, mv, out):
                return _as_bytes_like(out)
        return super()._decode(mv, out)

    def encode(self, data: BytesLike) -> BytesLike:
        """Compress with python-zstandard (a newer libzstd; one compressor per thread, as its objects are
        not thread-safe), with numcodecs at a level it refuses. Both write standard frames with the
        content size, and the checksum when asked."""
        comp = self._compressor()
        if comp is None:
            return super().encode(data)
        try:
            compressed: bytes = comp.compress(as_byte_view(data))
            return compressed
        except Exception as e:
            raise CodecError(f"{self.name} compression failed: {e}", codec=self.name) from e

    def encode_into(self, data: BytesLike, out: np.ndarray) -> int | None:
        """Compress ``data`` into ``out`` (uint8, at least zstd's bound for it) with python-zstandard's
        public ``stream_reader(...).readinto``: the frame's length, or ``None`` where it cannot (a level it
        refuses, no room). The frame is a standard one with the content size (and
        the checksum when asked), ending in an empty last block: 3 bytes more than :meth:`encode`'s.

        >>> out = np.empty(100, np.uint8)
        >>> n = ZstdCodec(level=3).encode_into(b"abc" * 5, out)
        >>> bytes(ZstdCodec().decode(out[:n].tobytes()))
        b'abcabcabcabcabc'
        """
        comp = self._compressor()
        if comp is None:
            return None
        src = as_byte_view(data)
        try:
            n: int = comp.stream_reader(src, size=src.nbytes).readinto(out)
        except Exception as e:
            raise CodecError(f"{self.name} compression failed: {e}", codec=self.name) from e
        return n if n < out.nbytes else None  # zstd stops short of the end of its output only when done

    def _compressor(self) -> Any:
        """This thread's python-zstandard compressor of this codec's frames (content size, checksum when
        asked), or ``None`` (a level it refuses: numcodecs then encodes)."""
        comps = _zstd_local.__dict__.setdefault("compressors", {})  # this thread's
        comp = comps.get((self.level, self.checksum))
        if comp is None:
            try:
                comp = comps[(self.level, self.checksum)] = native.zstandard.ZstdCompressor(
                    level=self.level, write_checksum=self.checksum, write_content_size=True
                )
            except (ValueError, OverflowError):  # a level this build refuses: numcodecs reports it
                return None
        return comp


_CNAMES = ("lz4", "lz4hc", "blosclz", "zstd", "snappy", "zlib")
_SHUFFLES = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}


@register_codec
class BloscCodec(_NumcodecsCodec):
    """Zarr v3 ``blosc``: ``cname`` (lz4, lz4hc, blosclz, zstd, snappy, zlib), ``clevel`` 0..9,
    ``shuffle`` (noshuffle, shuffle, bitshuffle), ``typesize`` (element size in bytes; required unless
    ``noshuffle``), ``blocksize`` (0 = automatic).

    >>> BloscCodec(shuffle="noshuffle").to_json()["configuration"]
    {'cname': 'lz4', 'clevel': 5, 'shuffle': 'noshuffle', 'blocksize': 0}
    """

    name: ClassVar[str] = "blosc"

    def __init__(
        self,
        cname: str = "lz4",
        clevel: int = 5,
        shuffle: str = "shuffle",
        typesize: int | None = None,
        blocksize: int = 0,
    ) -> None:
        self.cname = check_choice(self.name, "cname", cname, _CNAMES)
        self.clevel = check_int(self.name, "clevel", clevel, lo=0, hi=9)
        self.shuffle = check_choice(self.name, "shuffle", shuffle, tuple(_SHUFFLES))
        if typesize is None:
            if self.shuffle != "noshuffle":
                raise MetadataError(
                    f"codec 'blosc': field 'typesize' is required with shuffle={self.shuffle!r}",
                    codec=self.name,
                )
        else:
            typesize = check_int(self.name, "typesize", typesize, lo=1, hi=255)
        self.typesize = typesize
        self.blocksize = check_int(self.name, "blocksize", blocksize, lo=0)
        self._impl = _NBlosc(
            cname=self.cname,
            clevel=self.clevel,
            shuffle=self.shuffle_code,
            blocksize=self.blocksize,
            typesize=self.typesize if self.typesize is not None else 1,
        )

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> BloscCodec:
        cfg = check_keys(cls.name, configuration, ["cname", "clevel", "shuffle", "typesize", "blocksize"])
        return cls(**cfg)

    @property
    def shuffle_code(self) -> int:
        """c-blosc's number for :attr:`shuffle` (0 none, 1 byte, 2 bit).

        >>> BloscCodec(shuffle="bitshuffle", typesize=2).shuffle_code
        2
        """
        return _SHUFFLES[self.shuffle]

    def configuration(self) -> dict[str, Any]:
        cfg: dict[str, Any] = {"cname": self.cname, "clevel": self.clevel, "shuffle": self.shuffle}
        if self.typesize is not None:
            cfg["typesize"] = self.typesize
        cfg["blocksize"] = self.blocksize
        return cfg

    def _content_size(self, data: memoryview) -> int | None:
        # Blosc 1 header: version, versionlz, flags, typesize, nbytes (uint32 LE), blocksize, cbytes.
        return int.from_bytes(data[4:8], "little") if len(data) >= 16 else None

    # With the native kernel active, blosc runs through c-blosc's reentrant calls in the extension;
    # anything they refuse goes to numcodecs, which reports the problem (docs/engine.md, "Speed").
    def encode_bound(self, decoded_size: int) -> int | None:
        ext = native.ext
        return None if ext is None else decoded_size + ext.BLOSC_MAX_OVERHEAD

    def encode(self, data: BytesLike, out: np.ndarray | None = None) -> BytesLike:
        """Compress ``data``; with ``out`` (see :meth:`encode_bound`) into it, returning a view."""
        src = as_byte_view(data)
        cap = self.encode_bound(src.nbytes)
        if cap is None:
            return super().encode(data)
        usable = out is not None and out.dtype == np.uint8 and out.ndim == 1 and out.flags.c_contiguous
        dest = out[:cap] if out is not None and usable and out.size >= cap else np.empty(cap, dtype=np.uint8)
        n = self.encode_into(src, dest)
        if n is None:  # blosc refused: numcodecs says why
            return super().encode(data)
        if dest.base is None:  # a fresh buffer, not a view of ``out``
            dest.resize(n, refcheck=False)  # realloc: shrinks in place, no copy
            return _as_bytes_like(dest)
        return _as_bytes_like(dest[:n])

    def encode_into(self, data: BytesLike, out: np.ndarray) -> int | None:
        """Compress ``data`` into ``out`` (uint8, at least :meth:`encode_bound` of it) with c-blosc's
        reentrant call (GIL released): the frame's length, or ``None`` where it cannot (no native
        extension, or blosc refuses)."""
        ext = native.ext
        if ext is None:
            return None
        src, shuffle, typesize = as_byte_view(data), self.shuffle_code, self.typesize or 1
        try:
            n: int = ext.blosc_compress(src, out, self.clevel, shuffle, typesize, self.cname, self.blocksize)
        except ValueError:
            return None
        return n

    def _decode(self, mv: memoryview, out: np.ndarray | None) -> BytesLike:
        # called with the announced size already checked against the cap (decode_capped)
        ext = native.ext
        if ext is not None:
            if out is None or not out.flags.c_contiguous:
                size = ext.blosc_nbytes(mv)
                out = None if size is None else np.empty(size, dtype=np.uint8)
            if out is not None and ext.decompress(native.CODEC_BLOSC, mv, out):
                return _as_bytes_like(out)
        return super()._decode(mv, out)
