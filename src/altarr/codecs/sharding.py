"""The Zarr v3 ``sharding_indexed`` codec, bytes only (no store access): shard indexes parsed and built,
a shard split into raw chunk bytes (:meth:`ShardingCodec.split`) and assembled from them
(:meth:`ShardingCodec.assemble`), so a shard is rewritten without re-encoding its untouched chunks."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import AltarrError, CodecError, CorruptShardError, GridError, MetadataError
from ._config import as_byte_view, check_choice, check_keys, check_shape, nbytes_of
from .base import ArrayBytesCodec, BytesLike, Codec
from .bytes import BytesCodec, native_dtype
from .chain import CodecChain
from .crc32c import Crc32cCodec
from .registry import register_codec

__all__ = ["ShardingCodec", "EMPTY"]

#: The most sharding levels one chain may nest (hostile metadata could nest hundreds).
MAX_DEPTH = 16

#: The index word marking an empty inner chunk (both offset and nbytes).
EMPTY = 2**64 - 1
_EMPTY_U64 = np.uint64(EMPTY)
_U64 = np.dtype(np.uint64)

#: Indexes of at most this many entries in the usual encoding are checked on Python integers, larger
#: ones with NumPy (see :meth:`ShardingCodec.decode_index`): 256 entries cost about the same either way
#: when warm.
SCALAR_INDEX_ENTRIES = 256


def _position(flat: int, cps: tuple[int, ...]) -> tuple[int, ...]:
    """The inner-grid position of the ``flat``-th index entry (for an error message)."""
    return tuple(int(i) for i in np.unravel_index(flat, cps))


def _as_chain(
    value: Any, field: str, default: list[Codec], shape: tuple[int, ...], dtype: Any = None
) -> CodecChain:
    """The chain of ``field`` (``default`` when not given), checked against blocks of ``shape``."""
    try:
        chain = CodecChain.from_json(default if value is None else value)
        chain.validate(shape, dtype)
    except AltarrError as e:
        raise MetadataError(f"codec 'sharding_indexed': field {field!r}: {e.message}", codec=e.codec) from e
    return chain


@register_codec
class ShardingCodec(ArrayBytesCodec):
    """``sharding_indexed``: see the module docstring.

    ``chunk_shape``: inner chunk shape; ``codecs``: inner chain (default ``[bytes little]``);
    ``index_codecs``: index chain, must have a fixed encoded size (default ``[bytes little, crc32c]``);
    ``index_location``: ``"start"`` or ``"end"``. Chains are given as :class:`CodecChain`, lists of codecs
    or their JSON.

    >>> ShardingCodec((32, 32)).index_nbytes((2, 2))
    68
    """

    name: ClassVar[str] = "sharding_indexed"

    def __init__(
        self,
        chunk_shape: Sequence[int],
        codecs: CodecChain | Sequence[Any] | None = None,
        index_codecs: CodecChain | Sequence[Any] | None = None,
        index_location: str = "end",
    ) -> None:
        self.chunk_shape: tuple[int, ...] = check_shape(self.name, "chunk_shape", chunk_shape)
        self.codecs: CodecChain = _as_chain(codecs, "codecs", [BytesCodec("little")], self.chunk_shape)
        self.index_location: str = check_choice(self.name, "index_location", index_location, ("start", "end"))
        # the index chain sees arrays of shape (*chunks_per_shard, 2) and dtype uint64
        probe = (1,) * len(self.chunk_shape) + (2,)
        self.index_codecs: CodecChain = _as_chain(
            index_codecs, "index_codecs", [BytesCodec("little"), Crc32cCodec()], probe, _U64
        )
        inner = self.codecs.array_bytes
        #: Sharding levels from this one down (1: the inner chain holds no further shards).
        self.depth: int = 1 + (inner.depth if isinstance(inner, ShardingCodec) else 0)
        if self.depth > MAX_DEPTH:
            raise MetadataError(
                f"codec 'sharding_indexed': nested {self.depth} levels deep, more than the {MAX_DEPTH} supported",
                codec=self.name,
            )
        self._start = self.index_location == "start"
        #: The index is ``[bytes little, crc32c ...]`` on a little-endian machine: its words can be read
        #: without NumPy (see :meth:`decode_index`).
        self._plain_index = (
            sys.byteorder == "little"
            and not self.index_codecs.array_array
            and isinstance(self.index_codecs.array_bytes, BytesCodec)
            and self.index_codecs.array_bytes.endian == "little"
            and all(isinstance(c, Crc32cCodec) for c in self.index_codecs.bytes_bytes)
        )
        bad = self.index_codecs.variable_size_codec(probe, _U64)
        if bad is not None:
            raise MetadataError(
                f"codec 'sharding_indexed': field 'index_codecs': codec {bad.name!r} has no fixed encoded size; "
                "the shard index must have a fixed size (use e.g. bytes + crc32c, no compression)",
                codec=bad.name,
            )
        self._index_nbytes_cache: dict[tuple[int, ...], int] = {}

    # --- JSON ------------------------------------------------------------------------------------------
    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> ShardingCodec:
        required = ["chunk_shape", "codecs", "index_codecs"]
        return cls(**check_keys(cls.name, configuration, [*required, "index_location"], required))

    def configuration(self) -> dict[str, Any]:
        return {
            "chunk_shape": list(self.chunk_shape),
            "codecs": self.codecs.to_json(),
            "index_codecs": self.index_codecs.to_json(),
            "index_location": self.index_location,
        }

    # --- grid ------------------------------------------------------------------------------------------
    def chunks_per_shard(self, shard_shape: Sequence[int]) -> tuple[int, ...]:
        """Inner chunks per shard along each dimension; ``GridError`` unless ``chunk_shape`` divides
        ``shard_shape`` exactly.

        >>> ShardingCodec((2, 3)).chunks_per_shard((4, 6))
        (2, 2)
        """
        key = tuple(int(s) for s in shard_shape)
        if len(key) != len(self.chunk_shape) or any(
            s <= 0 or s % c for s, c in zip(key, self.chunk_shape, strict=False)
        ):
            raise GridError(
                f"sharding_indexed: the inner chunk shape {self.chunk_shape} must divide the shard shape "
                f"{key} exactly (same number of dimensions, each a whole multiple)",
                codec=self.name,
            )
        return tuple(s // c for s, c in zip(key, self.chunk_shape, strict=True))

    def validate(self, shape: tuple[int, ...], dtype: Any = None) -> None:
        """Check a shard shape (and dtype when given) against this codec and its inner chains."""
        self.chunks_per_shard(shape)
        self.codecs.validate(self.chunk_shape, dtype)

    # --- index -----------------------------------------------------------------------------------------
    def index_nbytes(self, cps: Sequence[int]) -> int:
        """Encoded size of the index for ``cps`` chunks per shard (``16 * prod(cps)`` folded through
        ``index_codecs``)."""
        key = tuple(int(c) for c in cps)
        n = self._index_nbytes_cache.get(key)
        if n is None:
            n = self.index_codecs.encoded_size((*key, 2), _U64)
            assert n is not None  # checked at construction
            self._index_nbytes_cache[key] = n
        return n

    def decode_index(
        self,
        data: BytesLike,
        cps: Sequence[int],
        object_size: int | None = None,
        max_nbytes: int | None = None,
    ) -> np.ndarray:
        """Decode (and verify, e.g. crc32c) an index: a writable native ``uint64`` array of shape
        ``(*cps, 2)`` holding ``(offset, nbytes)``; empty entries have both words ``2**64-1``. The
        checks are :meth:`index_words`'.
        """
        words = self.index_words(data, cps, object_size, max_nbytes)
        if isinstance(words, np.ndarray):
            return words
        return np.frombuffer(words, dtype=_U64).reshape(*(int(c) for c in cps), 2)

    def index_words(
        self,
        data: BytesLike,
        cps: Sequence[int],
        object_size: int | None = None,
        max_nbytes: int | None = None,
    ) -> np.ndarray | memoryview:
        """:meth:`decode_index` as a writable C-contiguous buffer of native ``uint64`` words (the
        ``(offset, nbytes)`` pairs in C order; a flat ``memoryview`` for a small index, so the read path
        makes no NumPy call between an index's answer and the chunks' requests).

        Every entry is checked before anything is read or allocated from it, else ``CorruptShardError``
        naming the inner chunk and the byte range: exactly one word ``2**64-1`` is neither empty nor a
        range (reported first); a range lies in the data region (inside ``object_size`` and before an end
        index when given, else below ``2**63``) and is at most ``max_nbytes`` long. Indexes of at most
        :data:`SCALAR_INDEX_ENTRIES` entries in the usual encoding are checked on Python integers, others
        with NumPy: same results, same first error.
        """
        cps = tuple(int(c) for c in cps)
        n = self.index_nbytes(cps)
        got = nbytes_of(data)
        if got != n:
            raise CorruptShardError(
                f"shard index: expected {n} bytes for {cps} chunks per shard, got {got}", codec=self.name
            )
        lo = n if self._start else 0
        if object_size is None:
            hi = 2**63 - 1  # no object is larger; keeps offsets + sizes inside a signed 64-bit pread
        else:
            hi = max(object_size if self._start else object_size - n, 0)
        bounds = (lo, hi, object_size, max_nbytes)  # for the error message
        scalar = self._plain_index and math.prod(cps) <= SCALAR_INDEX_ENTRIES
        try:
            if scalar:
                payload: BytesLike = as_byte_view(data)
                for codec in self.index_codecs.bytes_bytes:  # crc32c: the checksum checked, bytes dropped
                    payload = codec.decode(payload)
                words = bytearray(payload)  # the index's own copy (the caller may keep or change it)
            else:
                decoded = self.index_codecs.decode(data, (*cps, 2), _U64)
        except CodecError as e:
            raise type(e)(f"shard index: {e.message}", **e._context()) from e
        if scalar:
            view = memoryview(words).cast("Q")
            self._check_entries(view.tolist(), cps, bounds)
            return view
        index = np.array(decoded, dtype=np.uint64, copy=True)
        offsets, nbytes = index[..., 0], index[..., 1]
        off_empty, nb_empty = offsets == _EMPTY_U64, nbytes == _EMPTY_U64
        half = off_empty ^ nb_empty
        if half.any():
            where = tuple(int(i) for i in np.argwhere(half)[0])
            self._entry_error(where, int(offsets[where]), int(nbytes[where]), None)
        hi_u = np.uint64(hi)
        bad = (offsets < np.uint64(lo)) | (offsets > hi_u) | (nbytes > hi_u - np.minimum(offsets, hi_u))
        if max_nbytes is not None:
            bad |= nbytes > np.uint64(max_nbytes)
        bad &= ~off_empty
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            self._entry_error(where, int(offsets[where]), int(nbytes[where]), bounds)
        return index

    def _check_entries(self, words: list[int], cps: tuple[int, ...], bounds: tuple) -> None:
        """:meth:`index_words`' checks on the index's words as Python integers (offset, nbytes, ...);
        ``bounds`` is ``(lo, hi, object_size, max_nbytes)``."""
        lo, hi, _, max_nbytes = bounds
        longest = EMPTY if max_nbytes is None else max_nbytes
        first_bad = None
        for i in range(0, len(words), 2):
            off, nb = words[i], words[i + 1]
            if off == EMPTY or nb == EMPTY:
                if off != nb:  # a half-empty entry is reported before any bad range
                    self._entry_error(_position(i // 2, cps), off, nb, None)
            elif first_bad is None and (off < lo or off > hi or nb > hi - off or nb > longest):
                first_bad = i
        if first_bad is not None:
            self._entry_error(_position(first_bad // 2, cps), words[first_bad], words[first_bad + 1], bounds)

    def _entry_error(self, where: tuple[int, ...], off: int, nb: int, bounds: tuple | None) -> None:
        """Raise :meth:`index_words`' error for the entry ``where``: half empty when ``bounds`` is
        ``None``, else a range outside the data region ``bounds = (lo, hi, object_size, max_nbytes)``."""
        if bounds is None:
            raise CorruptShardError(
                f"shard index entry of inner chunk {where} is ({off}, {nb}): "
                "one word is the empty marker 2**64-1 and the other is not",
                chunk=where,
                codec=self.name,
            )
        lo, hi, object_size, max_nbytes = bounds
        region = f"[{lo}, {hi})" + ("" if object_size is None else f" of a {object_size}-byte shard")
        limit = (
            ""
            if max_nbytes is None
            else f", or is longer than the {max_nbytes} bytes an inner chunk can have"
        )
        raise CorruptShardError(
            f"shard index entry of inner chunk {where} points at bytes [{off}, {off + nb}), outside "
            f"the data region {region}{limit}",
            chunk=where,
            byte_range=(off, off + nb),
            codec=self.name,
        )

    def max_encoded_size(self, shape: tuple[int, ...], dtype: Any) -> int:
        """The largest a shard of ``shape`` can be: its index plus every inner chunk at its bound."""
        cps = self.chunks_per_shard(shape)
        inner = self.codecs.max_encoded_size(self.chunk_shape, dtype)
        return self.index_nbytes(cps) + math.prod(cps) * inner

    def encode_index(self, index: np.ndarray) -> bytes:
        """Encode a ``uint64`` index array of shape ``(*cps, 2)`` with ``index_codecs``."""
        index = np.asarray(index)
        if index.ndim != len(self.chunk_shape) + 1 or index.shape[-1] != 2:
            raise CodecError(
                f"shard index: expected an array of shape (*chunks_per_shard, 2), got {index.shape}",
                codec=self.name,
            )
        return bytes(self.index_codecs.encode(index.astype(np.uint64, copy=False)))

    # --- raw shard bytes -------------------------------------------------------------------------------
    def assemble(self, chunks: Sequence[BytesLike | None], cps: Sequence[int]) -> bytes | None:
        """Build a compact shard from raw encoded chunks (C order over the inner grid; ``None`` = empty):
        payloads concatenated in order without gaps, then the index at the start or end. Returns ``None``
        when every chunk is empty (no object should be written).

        >>> sc = ShardingCodec((1,))
        >>> len(sc.assemble([b"ab", b"c"], (2,)))   # 3 payload bytes + 2*16 index bytes + 4 crc bytes
        39
        """
        parts = self.assemble_parts(chunks, cps)
        return None if parts is None else b"".join(parts)

    def empty_shard(self, cps: Sequence[int]) -> bytes:
        """A shard holding no chunk: its index alone, every entry empty (readers find only fill in it).
        Written where a shard is emptied on a store that conditions writes but not deletes.

        >>> len(ShardingCodec((1,)).empty_shard((2,)))  # 2*16 index bytes + 4 crc bytes
        36
        """
        cps = tuple(int(c) for c in cps)
        return self.encode_index(np.full((*cps, 2), _EMPTY_U64, dtype=np.uint64))

    def assemble_parts(self, chunks: Sequence[BytesLike | None], cps: Sequence[int]) -> list[Any] | None:
        """:meth:`assemble` as the list of its parts in object order (the index and the chunk payloads,
        not joined), for stores that write parts without copying them together (``writev``)."""
        cps = tuple(int(c) for c in cps)
        count = math.prod(cps)
        if len(chunks) != count:
            raise GridError(
                f"sharding_indexed: assemble needs {count} chunk entries for {cps} chunks per shard, "
                f"got {len(chunks)}",
                codec=self.name,
            )
        index = np.full((count, 2), _EMPTY_U64, dtype=np.uint64)
        parts: list[Any] = []
        where: list[int] = []
        lengths: list[int] = []
        for i, c in enumerate(chunks):
            if c is None:
                continue
            v = as_byte_view(c)
            parts.append(v)
            where.append(i)
            lengths.append(len(v))
        if not parts:
            return None
        index_n = self.index_nbytes(cps)
        lens = np.asarray(lengths, dtype=np.uint64)
        ends = np.cumsum(lens, dtype=np.uint64)
        base = np.uint64(index_n if self._start else 0)
        index[where, 0] = ends - lens + base
        index[where, 1] = lens
        encoded_index = self.encode_index(index.reshape(*cps, 2))
        if self._start:
            parts.insert(0, encoded_index)
        else:
            parts.append(encoded_index)
        return parts

    def split(self, shard_bytes: BytesLike, cps: Sequence[int]) -> list[memoryview | None]:
        """Every inner chunk's raw bytes (zero-copy slices of ``shard_bytes``, C order; ``None`` for empty
        entries), following the index. A truncated object or an index entry outside it raises
        ``CorruptShardError``; a bad index checksum raises ``ChecksumError``."""
        mv = as_byte_view(shard_bytes)
        index = self.read_index(mv, cps)
        return [None if o == EMPTY else mv[o : o + nb] for o, nb in index.reshape(-1, 2).tolist()]

    def read_index(
        self, shard_bytes: BytesLike, cps: Sequence[int], max_nbytes: int | None = None
    ) -> np.ndarray:
        """The decoded, verified index of a whole shard object held in memory (see
        :meth:`decode_index`; entries are checked against the object's length). A shard shorter than its
        index raises ``CorruptShardError``."""
        cps = tuple(int(c) for c in cps)
        mv = as_byte_view(shard_bytes)
        size = len(mv)
        n = self.index_nbytes(cps)
        if size < n:
            raise CorruptShardError(
                f"shard of {size} bytes is shorter than its {n}-byte index (truncated object?)",
                byte_range=(0, size),
                codec=self.name,
            )
        raw_index = mv[:n] if self._start else mv[size - n :]
        return self.decode_index(raw_index, cps, object_size=size, max_nbytes=max_nbytes)

    # --- whole-shard array codec -----------------------------------------------------------------------
    def _slices(self, pos: tuple[int, ...]) -> tuple[slice, ...]:
        return tuple(slice(p * c, (p + 1) * c) for p, c in zip(pos, self.chunk_shape, strict=True))

    def encode(self, array: np.ndarray) -> bytes:
        """Encode a whole shard (every inner chunk, fill-valued ones included) into a compact shard."""
        array = np.asarray(array)
        cps = self.chunks_per_shard(array.shape)
        chunks = [self.codecs.encode(array[self._slices(pos)]) for pos in np.ndindex(*cps)]
        shard = self.assemble(chunks, cps)
        assert shard is not None
        return shard

    def decode(
        self,
        data: BytesLike,
        shape: tuple[int, ...],
        dtype: Any,
        fill_value: Any = 0,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Decode a whole shard of ``shape``; empty inner chunks are ``fill_value``. With ``out`` (shape
        ``shape``, native ``dtype``) every chunk is decoded straight into its part of ``out``."""
        dtype = native_dtype(dtype)
        shape = tuple(shape)
        cps = self.chunks_per_shard(shape)
        if out is None:
            out = np.empty(shape, dtype=dtype)
        elif out.shape != shape or out.dtype != dtype:
            raise CodecError(
                f"sharding_indexed: out has shape {out.shape} and dtype {out.dtype}, expected {shape} and {dtype}",
                codec=self.name,
            )
        pieces = self.split(data, cps)
        for pos, piece in zip(np.ndindex(*cps), pieces, strict=True):
            view = out[self._slices(pos)]
            if piece is None:
                view[...] = fill_value
                continue
            try:
                got = self.codecs.decode(piece, self.chunk_shape, dtype, out=view, fill_value=fill_value)
            except AltarrError as e:
                raise e.with_context(chunk=pos) from e
            if got is not view:
                if got.shape != view.shape:
                    raise CodecError(
                        f"sharding_indexed: inner chunk {pos} decoded to shape {got.shape}, expected {view.shape}",
                        chunk=pos,
                        codec=self.name,
                    )
                view[...] = got
        return out

    def encoded_size(self, shape: tuple[int, ...], dtype: Any) -> None:
        return None
