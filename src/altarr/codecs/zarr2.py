"""The Zarr v2 chunk pipeline (stored dtype and ``order``, numcodecs ``filters``, ``compressor``) as one
array->bytes codec, :class:`Zarr2ChunkCodec` (not a Zarr v3 codec: its ``to_json`` is for inspection)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numcodecs
import numpy as np
from numcodecs.abc import Codec as NumCodec
from numcodecs.compat import ensure_bytes, ensure_ndarray_like

from ..errors import CodecError, CorruptChunkError, MetadataError, UnknownCodecError, UnsupportedError
from . import bounded
from .base import ArrayBytesCodec, BytesLike

__all__ = ["Zarr2ChunkCodec", "numcodec_from_config", "check_zarr2_dtype", "stage_caps"]

#: NumPy kinds a Zarr v2 array may have in altarr (numbers, bools, datetimes). Objects, strings, bytes
#: and structured types are refused.
_SUPPORTED_KINDS = "biufcmM"


def check_zarr2_dtype(dtype: Any, *, key: str | None = None) -> np.dtype:
    """Parse a Zarr v2 ``dtype`` (typestr with byte order) and refuse what altarr does not support."""
    if isinstance(dtype, list):
        raise UnsupportedError(f"Zarr v2 structured dtype {dtype!r} is not supported", key=key)
    try:
        dt: np.dtype = np.dtype(dtype)
    except (TypeError, ValueError) as e:
        raise MetadataError(f"invalid Zarr v2 dtype {dtype!r}", key=key) from e
    if dt.kind not in _SUPPORTED_KINDS or dt.fields is not None or dt.subdtype is not None:
        raise UnsupportedError(
            f"Zarr v2 dtype {dt.str!r} (kind {dt.kind!r}: objects, strings, bytes or records) is not supported; "
            "altarr handles booleans, integers, floats, complex numbers and datetimes",
            key=key,
        )
    return dt


def numcodec_from_config(config: Any, *, key: str | None = None, role: str = "compressor") -> Any:
    """A numcodecs codec from its ``{"id": ..., ...}`` config (or an existing codec instance).

    An unknown ``id`` raises :class:`~altarr.errors.UnknownCodecError` naming ``key`` and the id."""
    if isinstance(config, NumCodec):
        return config
    if not isinstance(config, dict) or not isinstance(config.get("id"), str):
        raise MetadataError(
            f"Zarr v2 {role} must be null or an object with a string 'id', got {config!r}", key=key
        )
    codec_id = config["id"]
    try:
        return numcodecs.get_codec(dict(config))
    except ValueError as e:
        if codec_id not in numcodecs.registry.codec_registry:
            raise UnknownCodecError(
                f"unknown Zarr v2 {role} codec id {codec_id!r} (not in the numcodecs registry)",
                key=key,
                codec=codec_id,
            ) from e
        raise MetadataError(
            f"invalid Zarr v2 {role} configuration {config!r}: {e}", key=key, codec=codec_id
        ) from e
    except TypeError as e:
        raise MetadataError(
            f"invalid Zarr v2 {role} configuration {config!r}: {e}", key=key, codec=codec_id
        ) from e


#: numcodecs ids whose decode inflates a stream: as a filter or a compressor each is decoded with a cap
_COMPRESSORS = frozenset({"zlib", "gzip", "bz2", "lzma", "zstd", "blosc", "lz4"})

#: Elements of the zero array a filter encodes to learn its size ratio (see :func:`stage_caps`).
_PROBE = 64


def stage_caps(filters: Sequence[Any], dtype: np.dtype, n: int) -> list[int]:
    """The most bytes each stage of a Zarr v2 chunk can hold, in encode order: ``caps[0]`` is the
    array (``n`` elements of ``dtype``), ``caps[i + 1]`` what filter ``i`` makes of ``caps[i]`` bytes.
    Decoding filter ``i`` then produces at most ``caps[i]`` bytes and the compressor at most
    ``caps[-1]``, so no stage inflates past what the chunk can hold.

    A compressor used as a filter can make each input a little larger (:func:`bounded.bound`); an
    element-wise filter (delta, astype, fixedscaleoffset, packbits, quantize, bitround, shuffle, the
    checksums) is measured on zeros: its output for ``min(n, 64)`` elements, scaled, plus that output
    again for headers. A filter that cannot encode zeros of the stage's type is given 16 times its
    input (the widest type change NumPy has, 1-byte to 16-byte elements).

    >>> import numcodecs
    >>> stage_caps([numcodecs.PackBits(), numcodecs.Zlib()], np.dtype("?"), 1000)
    [1000, 150, 4396]
    """
    caps = [n * dtype.itemsize]
    sample: Any = np.zeros(max(1, min(n, _PROBE)), dtype)
    for f in filters:
        size = caps[-1]
        if getattr(f, "codec_id", None) in _COMPRESSORS:
            caps.append(bounded.bound(size))
            sample = np.zeros(max(1, min(caps[-1], _PROBE)), np.uint8)
            continue
        try:
            out = ensure_ndarray_like(f.encode(sample))
            ratio_out, ratio_in = out.nbytes, max(1, sample.nbytes)
            caps.append(-(-size * ratio_out // ratio_in) + ratio_out)
            sample = out
        except (TypeError, ValueError):  # a filter refusing zeros of this type: a generous bound
            caps.append(bounded.bound(16 * size))
            sample = np.zeros(max(1, min(caps[-1], _PROBE)), np.uint8)
    return caps


def _decompress_capped(codec: Any, data: Any, cap: int) -> Any:
    """A numcodecs compressor's ``decode``, stopped at ``cap`` output bytes: headers that announce the size
    (blosc, zstd with a content size, numcodecs' lz4) are checked before decoding; zlib, gzip, bz2, lzma
    and zstd without a content size are inflated incrementally; any other codec is decoded, then checked."""
    cid = getattr(codec, "codec_id", None)
    if cid == "zlib":
        return bounded.inflate(data, cap, wbits=15)
    if cid == "gzip":
        return bounded.inflate(data, cap, wbits=31)
    if cid == "bz2":
        return bounded.bunzip2(data, cap, codec="bz2")
    if cid == "lzma":
        return bounded.unxz(data, cap, format=codec.format, filters=codec.filters, codec="lzma")
    if cid == "zstd":
        if bounded.zstd_content_size(data) is None:
            return bounded.unzstd(data, cap)
        bounded.check_announced(cid, bounded.zstd_content_size(data), cap)
    elif cid == "blosc":
        bounded.check_announced(cid, bounded.blosc_nbytes(data), cap)
    elif cid == "lz4" and len(memoryview(data).cast("B")) >= 4:  # numcodecs' LZ4: uint32 LE size first
        bounded.check_announced(cid, int.from_bytes(memoryview(data).cast("B")[:4], "little"), cap)
    out = codec.decode(data)
    n = memoryview(out).nbytes if not isinstance(out, np.ndarray) else out.nbytes
    if n > cap:
        raise bounded.too_large(str(cid), cap)
    return out


class Zarr2ChunkCodec(ArrayBytesCodec):
    """One Zarr v2 chunk: stored dtype and ``order``, then ``filters`` (in order), then ``compressor``.

    ``dtype`` is the stored dtype (with its byte order); decoded arrays come back in native byte order.
    ``filters`` / ``compressor`` are numcodecs codecs or their JSON configs (``None`` for none).
    """

    name = "zarr2_chunk"
    truncates_edges = False

    def __init__(
        self,
        dtype: Any,
        order: str = "C",
        filters: Sequence[Any] | None = None,
        compressor: Any = None,
    ) -> None:
        self.dtype = check_zarr2_dtype(dtype)
        if order not in ("C", "F"):
            raise MetadataError(f"Zarr v2 'order' must be 'C' or 'F', got {order!r}")
        self.order: Literal["C", "F"] = "F" if order == "F" else "C"
        self.filters = tuple(numcodec_from_config(f, role="filter") for f in (filters or ()))
        self.compressor = None if compressor is None else numcodec_from_config(compressor)
        self._stage_caps: dict[int, list[int]] = {}

    def _caps(self, n: int) -> list[int]:
        """:func:`stage_caps` for chunks of ``n`` elements (Zarr v2 chunks all have one shape: made once)."""
        got = self._stage_caps.get(n)
        if got is None:
            got = self._stage_caps[n] = stage_caps(self.filters, self.dtype, n)
        return got

    def configuration(self) -> dict[str, Any]:
        return {
            "dtype": self.dtype.str,
            "order": self.order,
            "filters": [f.get_config() for f in self.filters] or None,
            "compressor": None if self.compressor is None else self.compressor.get_config(),
        }

    def _codec_name(self, codec: Any) -> str:
        return f"{self.name}:{getattr(codec, 'codec_id', type(codec).__name__)}"

    def encode(self, array: np.ndarray) -> BytesLike:
        chunk: Any = np.asarray(array).astype(self.dtype, order=self.order, copy=False)
        for f in self.filters:
            try:
                chunk = f.encode(chunk)
            except Exception as e:
                raise CodecError(f"Zarr v2 filter failed to encode: {e}", codec=self._codec_name(f)) from e
        if np.asarray(ensure_ndarray_like(chunk)).dtype == object:
            raise UnsupportedError("Zarr v2 filters produced an object array", codec=self.name)
        if self.compressor is not None:
            try:
                chunk = self.compressor.encode(chunk)
            except Exception as e:
                raise CodecError(
                    f"Zarr v2 compressor failed to encode: {e}", codec=self._codec_name(self.compressor)
                ) from e
        if isinstance(chunk, np.ndarray):
            # an uncompressed chunk is its buffer in the array's order
            chunk = chunk.reshape(-1, order="A")
        encoded: bytes = ensure_bytes(chunk)
        return encoded

    def decode(self, data: BytesLike, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        chunk: Any = data
        caps = self._caps(math.prod(shape))  # stage i (filter i, then the compressor) decodes to caps[i]
        stages = [*self.filters, *([] if self.compressor is None else [self.compressor])]
        for i in reversed(range(len(stages))):
            failed = "filter failed to decode" if i < len(self.filters) else "chunk failed to decompress"
            try:
                chunk = _decompress_capped(stages[i], chunk, caps[i])
            except CorruptChunkError as e:
                raise e.with_context(codec=self._codec_name(stages[i])) from e
            except Exception as e:
                raise CorruptChunkError(f"Zarr v2 {failed}: {e}", codec=self._codec_name(stages[i])) from e
        arr = ensure_ndarray_like(chunk)
        try:
            flat = arr.reshape(-1, order="A").view(self.dtype)
        except (TypeError, ValueError) as e:
            raise CorruptChunkError(
                f"Zarr v2 chunk of {arr.nbytes} bytes cannot be viewed as {self.dtype.str}", codec=self.name
            ) from e
        expected = int(np.prod(shape, dtype=np.int64))
        if flat.size != expected:
            raise CorruptChunkError(
                f"Zarr v2 chunk decoded to {flat.size} elements, expected {expected} for chunk shape {tuple(shape)}",
                codec=self.name,
            )
        out_dtype = np.dtype(dtype) if dtype is not None else self.dtype.newbyteorder("=")
        return np.asarray(flat.reshape(shape, order=self.order)).astype(out_dtype, order="C")

    def encoded_size(self, shape: tuple[int, ...], dtype: np.dtype) -> int | None:
        if self.filters or self.compressor is not None:
            return None
        return int(np.prod(shape, dtype=np.int64)) * self.dtype.itemsize
