"""The codec chain of one stored object (array->array codecs, one array->bytes codec, bytes->bytes
codecs); errors raised inside a codec are wrapped in :class:`~altarr.errors.CodecError` naming it."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np

from ..errors import AltarrError, CodecError, MetadataError
from ._config import nbytes_of
from .base import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, BytesLike, Codec
from .bytes import BytesCodec, native_dtype
from .registry import codec_from_json

__all__ = ["CodecChain"]

#: The most values :meth:`CodecChain.derive` keeps per chain.
DERIVED_ENTRIES = 32
_T = TypeVar("_T")


@functools.lru_cache(maxsize=512)
def _decode_parameters(codec: type[ArrayBytesCodec] | type[BytesBytesCodec]) -> frozenset[str]:
    """The parameter names of the ``decode`` of codecs of class ``codec`` (``out``, ``fill_value``),
    computed once per class rather than on every dataset open."""
    try:
        return frozenset(inspect.signature(codec.decode).parameters)
    except (TypeError, ValueError):  # pragma: no cover - builtins without signatures
        return frozenset()


def _wrap(codec: Codec, action: str, e: Exception) -> CodecError:
    return CodecError(f"{codec.name}: {action} failed: {type(e).__name__}: {e}", codec=codec.name)


class CodecChain:
    """An ordered, validated list of codecs (see the module docstring).

    ``codecs`` holds :class:`~altarr.codecs.base.Codec` objects (their JSON descriptions are accepted
    too). Order errors raise :class:`~altarr.errors.MetadataError`.

    >>> from altarr.codecs import BytesCodec, Crc32cCodec
    >>> CodecChain([BytesCodec("little"), Crc32cCodec()]).encoded_size((2, 2), np.dtype("uint64"))
    36
    """

    def __init__(self, codecs: Sequence[Codec | dict[str, Any] | str]) -> None:
        if isinstance(codecs, CodecChain):
            codecs = codecs.codecs
        if isinstance(codecs, str | bytes | dict) or not isinstance(codecs, Sequence):
            raise MetadataError(f"a codec chain is a list of codecs, got {codecs!r}")
        items = tuple(codec_from_json(c) for c in codecs)
        if not items:
            raise MetadataError("a codec chain needs exactly one array->bytes codec; the list is empty")
        aa: list[ArrayArrayCodec] = []
        ab: list[ArrayBytesCodec] = []
        bb: list[BytesBytesCodec] = []
        for i, c in enumerate(items):
            if isinstance(c, ArrayArrayCodec):
                if ab or bb:
                    raise MetadataError(
                        f"codec {c.name!r} (array->array) at position {i} comes after the array->bytes codec; "
                        "the order is array->array*, array->bytes, bytes->bytes*",
                        codec=c.name,
                    )
                aa.append(c)
            elif isinstance(c, ArrayBytesCodec):
                if ab:
                    raise MetadataError(
                        f"codec {c.name!r} at position {i} is a second array->bytes codec "
                        f"(the first is {ab[0].name!r}); a chain has exactly one",
                        codec=c.name,
                    )
                ab.append(c)
            elif isinstance(c, BytesBytesCodec):
                if not ab:
                    raise MetadataError(
                        f"codec {c.name!r} (bytes->bytes) at position {i} comes before the array->bytes codec",
                        codec=c.name,
                    )
                bb.append(c)
            else:
                raise MetadataError(f"{c!r} is not an array->array, array->bytes or bytes->bytes codec")
        if not ab:
            raise MetadataError(
                f"the codec chain {[c.name for c in items]} has no array->bytes codec (such as 'bytes')"
            )
        self.codecs: tuple[Codec, ...] = items
        self.array_array: tuple[ArrayArrayCodec, ...] = tuple(aa)
        self.array_bytes: ArrayBytesCodec = ab[0]
        self.bytes_bytes: tuple[BytesBytesCodec, ...] = tuple(bb)
        self._fast = not aa and not bb
        self._ab_out = "out" in _decode_parameters(type(self.array_bytes))
        self._ab_fill = "fill_value" in _decode_parameters(type(self.array_bytes))
        self._bb0_out = bool(bb) and "out" in _decode_parameters(type(bb[0]))
        #: What other layers derive from this chain and hashable inputs of their own, memoized by them
        #: under their own keys (see :meth:`derive`): a chain is never changed once made, and one chain
        #: serves every open of a memoized metadata parse (``altarr.formats.registry``).
        self.derived: dict[Any, Any] = {}

    def derive(self, key: Hashable, make: Callable[[], _T]) -> _T:
        """``make()``, memoized in :attr:`derived` under ``key`` (a hashable that names the deriving layer
        and every input besides this chain). At most :data:`DERIVED_ENTRIES` are kept (then all are
        dropped): the keys of one array differ only when it is opened at many prefixes.

        >>> chain = CodecChain(["bytes"])
        >>> chain.derive(("doc", 1), lambda: [1]) is chain.derive(("doc", 1), lambda: [2])
        True
        """
        got: _T | None = self.derived.get(key)
        if got is None:
            got = make()
            if len(self.derived) >= DERIVED_ENTRIES:
                self.derived.clear()
            self.derived[key] = got
        return got

    # --- construction / serialization ------------------------------------------------------------------
    @classmethod
    def from_json(cls, obj: Sequence[Any] | CodecChain) -> CodecChain:
        """Build from a Zarr v3 ``codecs`` list (objects or short-hand names).

        >>> CodecChain.from_json(["bytes"]).to_json()
        [{'name': 'bytes'}]
        """
        return obj if isinstance(obj, CodecChain) else cls(obj)

    def to_json(self) -> list[dict[str, Any]]:
        return [c.to_json() for c in self.codecs]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CodecChain) and self.codecs == other.codecs

    def __hash__(self) -> int:
        return hash(self.codecs)

    def __iter__(self) -> Iterator[Codec]:
        return iter(self.codecs)

    def __len__(self) -> int:
        return len(self.codecs)

    def __repr__(self) -> str:
        return f"CodecChain({list(self.codecs)!r})"

    # --- sizes and validation --------------------------------------------------------------------------
    def resolve(self, shape: tuple[int, ...], dtype: Any) -> tuple[tuple[int, ...], np.dtype]:
        """Shape and dtype handed to the array->bytes codec for a decoded chunk of ``shape``/``dtype``."""
        s, d = tuple(shape), np.dtype(dtype)
        for c in self.array_array:
            s, d = c.resolve(s, d)
        return s, d

    def _fixed_sizes(self, shape: tuple[int, ...], dtype: Any) -> list[int | None]:
        """The size of a chunk of ``shape``/``dtype`` after the array->bytes codec and after each
        bytes->bytes codec, ``None`` from the first codec whose output size is not fixed."""
        s, d = self.resolve(shape, dtype)
        sizes = [self.array_bytes.encoded_size(s, d)]
        for c in self.bytes_bytes:
            sizes.append(None if sizes[-1] is None else c.encoded_size(sizes[-1]))
        return sizes

    def variable_size_codec(self, shape: tuple[int, ...], dtype: Any) -> Codec | None:
        """The first codec whose output size is not fixed for this input, or ``None`` if all are fixed."""
        sizes = self._fixed_sizes(shape, dtype)
        return None if sizes[-1] is not None else [self.array_bytes, *self.bytes_bytes][sizes.index(None)]

    def encoded_size(self, shape: tuple[int, ...], dtype: Any) -> int | None:
        """Encoded byte size of a chunk of ``shape``/``dtype`` when every codec is size-deterministic,
        else ``None``."""
        return self._fixed_sizes(shape, dtype)[-1]

    def decode_limits(self, shape: tuple[int, ...], dtype: Any) -> tuple[int, ...]:
        """The most bytes each bytes->bytes codec's ``decode`` may produce for a chunk of ``shape`` and
        ``dtype`` (in list order): the exact size where the codecs before it have fixed sizes, else a
        generous bound. Known before any decompression, so every decoder stops there (bombs).

        >>> from altarr.codecs import Crc32cCodec, ZstdCodec
        >>> CodecChain(["bytes", ZstdCodec(), Crc32cCodec()]).decode_limits((4, 4), "uint16")
        (32, 4160)
        """
        return self._sizes(shape, dtype)[0]

    def max_encoded_size(self, shape: tuple[int, ...], dtype: Any) -> int:
        """The most bytes a stored chunk of ``shape``/``dtype`` can have (exact when every codec has a
        fixed size, else a generous bound): index entries claiming more are corrupt.

        >>> CodecChain(["bytes"]).max_encoded_size((4, 4), "uint16")
        32
        """
        return self._sizes(shape, dtype)[1]

    def _sizes(self, shape: tuple[int, ...], dtype: Any) -> tuple[tuple[int, ...], int]:
        """:meth:`decode_limits` and :meth:`max_encoded_size`, computed once per shape and dtype (a chain
        is shared by every open of one memoized metadata parse, and each open asks)."""

        def make() -> tuple[tuple[int, ...], int]:
            s, d = self.resolve(shape, np.dtype(dtype))
            n = self.array_bytes.max_encoded_size(s, d)
            limits = []
            for c in self.bytes_bytes:
                limits.append(n)
                n = c.max_encoded_size(n)
            return tuple(limits), n

        return self.derive(("sizes", tuple(shape), dtype), make)

    def validate(self, shape: tuple[int, ...], dtype: Any = None) -> None:
        """Check that the chain can encode chunks of ``shape`` (and ``dtype`` when given): transpose orders
        fit, ``bytes`` has an ``endian`` for multi-byte types, shard shapes divide. Raises
        ``MetadataError``/``GridError``."""
        s = tuple(shape)
        d = None if dtype is None else np.dtype(dtype)
        for c in self.array_array:
            check = getattr(c, "validate", None)
            if check is not None:
                check(s, d)
            s, d_out = c.resolve(s, d if d is not None else np.dtype("u1"))  # shape-only without a dtype
            d = d_out if d is not None else None
        check = getattr(self.array_bytes, "validate", None)
        if check is not None:
            check(s, d)

    def direct_compressor(self, dtype: Any) -> BytesBytesCodec | None:
        """The compressor that alone turns stored bytes into chunk values of ``dtype``, if there is one.

        That is the case for the common chain ``[bytes (no swap needed), one compressor]``: a caller may
        decode straight into a C-contiguous array with ``compressor.decode(data, out=array)`` (its
        result is ``array`` itself when the stream's size matched) and skip the chain's generic steps.
        ``None`` for any other chain.

        >>> from altarr.codecs import ZstdCodec
        >>> CodecChain(["bytes", ZstdCodec()]).direct_compressor("uint8").name
        'zstd'
        >>> CodecChain(["bytes"]).direct_compressor("uint8") is None
        True
        """
        ab = self.array_bytes
        if (
            self.array_array
            or len(self.bytes_bytes) != 1
            or not self._bb0_out
            or not isinstance(ab, BytesCodec)
        ):
            return None
        return self.bytes_bytes[0] if ab.is_native(dtype) else None

    # --- encode / decode -------------------------------------------------------------------------------
    def encode_bound(self, shape: tuple[int, ...], dtype: Any) -> int | None:
        """Size of an ``out`` buffer that :meth:`encode` can compress a chunk of ``shape`` into, or
        ``None`` when this chain always returns new objects (see ``BytesBytesCodec.encode_bound``: the
        last codec must take ``out`` and the sizes before it must be fixed).

        >>> from altarr.codecs import BloscCodec, ZstdCodec
        >>> CodecChain(["bytes", BloscCodec(typesize=2)]).encode_bound((64,), "uint16")
        144
        >>> CodecChain(["bytes", ZstdCodec()]).encode_bound((64,), "uint16") is None
        True
        """
        n = self._fixed_sizes(shape, dtype)[-2] if self.bytes_bytes else None
        return None if n is None else self.bytes_bytes[-1].encode_bound(n)

    def encode(self, array: np.ndarray, out: np.ndarray | None = None) -> BytesLike:
        """Encode one decoded chunk. The result may share memory with ``array`` (``bytes`` codec fast
        path, no byte swap needed); copy it if ``array`` will be modified while the bytes are in use.

        ``out``: a writable uint8 buffer of at least :meth:`encode_bound` bytes that the last codec
        compresses into (the result is then a view of it); ignored when the bound is ``None``."""
        codec: Codec = self.array_bytes
        try:
            if self._fast:
                return self.array_bytes.encode(array)
            for codec in self.array_array:
                array = codec.encode(array)
            codec = self.array_bytes
            data = codec.encode(array)
            last = len(self.bytes_bytes) - 1
            for i, codec in enumerate(self.bytes_bytes):
                if i == last and out is not None and codec.encode_bound(nbytes_of(data)) is not None:
                    data = codec.encode(data, out=out)  # type: ignore[call-arg]  # a codec with an encode_bound takes out=
                else:
                    data = codec.encode(data)
            return data
        except AltarrError:
            raise
        except Exception as e:
            raise _wrap(codec, "encoding", e) from e

    def decode(
        self,
        data: BytesLike,
        shape: tuple[int, ...],
        dtype: Any,
        out: np.ndarray | None = None,
        *,
        fill_value: Any = 0,
    ) -> np.ndarray:
        """Decode one chunk of ``shape`` and ``dtype`` (native byte order in the result).

        ``out``: optional destination of ``shape`` and native ``dtype`` (any strides); the values are
        decoded into it (straight from the decompressor when possible) and ``out`` is returned. A codec that
        truncates edges (N5) may return a smaller array instead. ``fill_value`` is used by a sharding codec
        for its empty inner chunks. Without ``out`` the result may be a read-only view of ``data``.
        """
        shape = tuple(shape)
        dtype = native_dtype(dtype)
        ab = self.array_bytes
        kw: dict[str, Any] = {}
        if self._ab_fill:
            kw["fill_value"] = fill_value
        codec: Codec = ab
        try:
            if self._fast:
                if out is not None and self._ab_out:
                    kw["out"] = out
                arr = ab.decode(data, shape, dtype, **kw)
                return arr if out is None else self._into(arr, out)
            specs = [(shape, dtype)]
            for c in self.array_array:
                specs.append(c.resolve(*specs[-1]))
            direct = (
                out is not None
                and not self.array_array
                and self._bb0_out
                and isinstance(ab, BytesCodec)
                and out.flags.c_contiguous
                and out.shape == shape
                and out.dtype == dtype
                and ab.is_native(dtype)
            )
            limits = self.decode_limits(shape, dtype)
            for i in range(len(self.bytes_bytes) - 1, -1, -1):
                codec = self.bytes_bytes[i]
                data = codec.decode_capped(data, limits[i], out if (i == 0 and direct) else None)
            codec = ab
            if out is not None and self._ab_out and not self.array_array:
                kw["out"] = out
            arr = ab.decode(data, *specs[-1], **kw)
            for i in range(len(self.array_array) - 1, -1, -1):
                codec = self.array_array[i]
                arr = codec.decode(arr, *specs[i])
        except AltarrError:
            raise
        except Exception as e:
            raise _wrap(codec, "decoding", e) from e
        if out is not None:
            return self._into(arr, out)
        return np.ascontiguousarray(arr) if self.array_array else arr

    @staticmethod
    def _into(arr: np.ndarray, out: np.ndarray) -> np.ndarray:
        if arr is out:
            return out
        if arr.shape != out.shape:
            return arr  # an edge-truncating codec returned a smaller chunk
        np.copyto(out, arr)
        return out
