"""One chunk's bytes <-> values (:class:`ChunkCodec`: decoding into a fresh array or this thread's
scratch buffer, clipping and padding at the edge, fill detection, the kernel's plan), and the threads'
scratch buffers. No store access.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from .. import native
from ..codecs.bytes import BytesCodec
from ..errors import AltarrError, CorruptShardError, GridError, MaterializeError
from . import kernel
from .layout import Chunk, ShardLayout

__all__ = [
    "SCRATCH_KEEP_BYTES",
    "ChunkCodec",
    "scratch_array",
    "scratch_bytes",
    "check_room",
    "check_chunk_room",
]

_thread_buffers = threading.local()

#: A thread's scratch buffer larger than this is given back once a request needs under a quarter of it,
#: so one read of huge chunks does not pin that memory in every pool thread for the life of the process.
SCRATCH_KEEP_BYTES = 64 << 20


#: Buffers of at least this many bytes are checked against the address space the process has left before
#: they are allocated (:func:`check_room`); smaller ones are not worth the two system calls.
ROOM_CHECKED_BYTES = 64 << 20


def address_space_left() -> int | None:
    """Bytes of address space this process may still map under its ``RLIMIT_AS`` (``ulimit -v``), or
    ``None`` without a limit (or where it cannot be told)."""
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/statm") as f:
            return limit - int(f.read().split()[0]) * resource.getpagesize()
    except (ImportError, OSError, ValueError):
        return None


def check_room(nbytes: int, what: str, **ctx: Any) -> None:
    """Refuse a buffer of ``nbytes`` that cannot be mapped, before allocating it: a
    :class:`~altarr.errors.MaterializeError` naming ``what`` instead of NumPy's bare ``MemoryError``
    (a 2**31-element chunk under a 4 GiB address-space limit)."""
    if nbytes < ROOM_CHECKED_BYTES:
        return
    room = address_space_left()
    if room is not None and nbytes > room:
        raise MaterializeError(
            f"{what} needs {nbytes:,} bytes, more than the {max(room, 0):,} bytes of address space this "
            "process has left (its RLIMIT_AS): choose smaller chunks or raise the limit",
            **ctx,
        )


def check_chunk_room(
    shape: tuple[int, ...],
    dtype: np.dtype,
    what: str = "a chunk",
    key: Callable[[], str] | None = None,
    **ctx: Any,
) -> None:
    """:func:`check_room` for a buffer of a chunk's values, ``"{what} of shape ... and dtype ..."``. The
    message and the store ``key`` (a function giving it) are made only for buffers large enough to be
    checked: this runs for every chunk decoded or encoded (formatting the message took ~7 us a chunk).

    >>> check_chunk_room((2, 2), np.dtype("u1"))  # small buffers are not checked
    """
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < ROOM_CHECKED_BYTES:
        return
    if key is not None:
        ctx["key"] = key()
    check_room(nbytes, f"{what} of shape {shape} and dtype {dtype}", **ctx)


def _out_of_memory(e: AltarrError | MemoryError, what: str) -> AltarrError:
    """``e`` itself, or a :class:`~altarr.errors.MaterializeError` when ``e`` is (or a codec's error
    wraps) a ``MemoryError``: a buffer a codec allocates was refused, which says nothing of the bytes."""
    cause: BaseException | None = e
    for _ in range(8):
        if cause is None or isinstance(cause, MaterializeError):
            break
        if isinstance(cause, MemoryError):
            return MaterializeError(f"{what}: out of memory ({str(cause) or 'MemoryError'})")
        cause = cause.__cause__ or cause.__context__
    assert isinstance(e, AltarrError)  # a MemoryError that is not an altarr error returned above
    return e


def _thread_buffer(name: str, nbytes: int) -> np.ndarray:
    """This thread's reusable uint8 buffer ``name``, at least ``nbytes`` long (grown as needed, shrunk
    when it is far larger than needed and above :data:`SCRATCH_KEEP_BYTES`)."""
    raw = getattr(_thread_buffers, name, None)
    if raw is None or raw.nbytes < nbytes or (raw.nbytes > SCRATCH_KEEP_BYTES and 4 * nbytes < raw.nbytes):
        setattr(_thread_buffers, name, None)  # the old one goes first
        check_room(nbytes, f"a scratch buffer for {name} chunk bytes")
        raw = np.empty(max(nbytes, 1), dtype=np.uint8)
        setattr(_thread_buffers, name, raw)
    return raw


def scratch_array(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """This thread's reusable buffer of ``shape`` and ``dtype`` for decoded values."""
    nbytes = math.prod(shape) * dtype.itemsize
    return _thread_buffer("decoded", nbytes)[:nbytes].view(dtype).reshape(shape)


def scratch_bytes(nbytes: int) -> memoryview:
    """This thread's reusable buffer for encoded chunk bytes read from a file: no allocation and no page
    faults per chunk, and the bytes stay in the CPU cache for the decode."""
    return _thread_buffer("encoded", nbytes)[:nbytes].data


class ChunkCodec:
    """Decode and encode single chunks of one array (see the module docstring)."""

    def __init__(self, layout: ShardLayout, fill_value: Any, *, write_empty_chunks: bool = False) -> None:
        self.layout = layout
        self.grid = layout.grid
        self.dtype = layout.dtype
        self.chain = layout.chunk_chain
        self.fill_value = fill_value
        self.write_empty_chunks = write_empty_chunks
        self.truncates = bool(getattr(self.chain.array_bytes, "truncates_edges", False))
        # made once per chain, chunk shape, dtype, fill value (-0.0 and 0.0 are two keys, as their bytes
        # are two) and write_empty_chunks, memoized by the chain (docs/architecture.md, formats). ``direct``:
        # a [bytes, one compressor] chain's compressor, decoding into the destination; ``encode_slot``:
        # bytes per chunk of the arena writes compress into; ``native``: the kernel's plan (or None)
        fill_key = (type(fill_value), repr(fill_value))
        key = ("chunk-codec", self.grid.chunks, self.dtype, write_empty_chunks, fill_key, native.loaded())
        self.direct, self.encode_slot, self.native = self.chain.derive(key, self._derive)

    @functools.cached_property
    def fill_array(self) -> np.ndarray:
        """The fill value as a read-only 0-d array of the chunks' dtype, made once (a region read
        broadcasts it over each missing chunk; the kernel's plan takes its bytes). Raises NumPy's
        ``TypeError``/``ValueError``/``OverflowError`` for a fill value the dtype cannot hold, each time
        it is asked.

        >>> import altarr as aa
        >>> ds = aa.create_dataset("memory://doc-fill-array", shape=(4,), dtype="int16", chunks=(2,), fill_value=7)
        >>> ds._access.codec.fill_array, ds._access.codec.fill_array.flags.writeable
        (array(7, dtype=int16), False)
        """
        fill = np.array(self.fill_value, dtype=self.dtype)
        fill.flags.writeable = False
        return fill

    def _derive(self) -> tuple[Any, int | None, kernel.KernelPlan | None]:
        """``direct``, ``encode_slot`` and ``native`` (see ``__init__``)."""
        if self.truncates:
            return None, None, None
        direct = self.chain.direct_compressor(self.dtype)
        slot = self.chain.encode_bound(self.grid.chunks, self.dtype)
        try:
            fill: bytes | None = self.fill_array.tobytes()
        except (TypeError, ValueError, OverflowError):  # a fill value the dtype cannot hold
            fill = None
        plan = kernel.plan_for(self.dtype, self.grid.chunks, direct, fill, self.write_empty_chunks)
        return direct, slot if slot is not None or plan is None else plan.encode_slot, plan

    def decode_chunk(
        self, data: Any, chunk: Chunk, key: str, *, scratch: bool = False, byte_range: Any = None
    ) -> np.ndarray:
        """Decode one chunk's bytes into an array of its clipped shape.

        By default the result is a fresh array the caller owns. With ``scratch=True`` it is decoded into
        this thread's reusable buffer (no allocation, no page faults): valid only until the same thread
        decodes again, for callers that copy it out at once (region reads)."""
        full = self.grid.chunks
        try:
            check_chunk_room(full, self.dtype)
            if self.truncates:
                a = self.chain.decode(data, full, self.dtype)
            else:  # decode straight into the destination buffer
                buf = scratch_array(full, self.dtype) if scratch else np.empty(full, self.dtype)
                if self.direct is not None:  # [bytes, compressor]: no per-codec steps in between
                    a = self.direct.decode(data, out=buf)
                    if a is not buf:  # the stream did not announce its size: copy (and size-check) it
                        # direct is set only for [bytes, compressor] chains: the bytes codec takes out=
                        ab = cast(BytesCodec, self.chain.array_bytes)
                        a = ab.decode(a, full, self.dtype, out=buf)
                else:
                    a = self.chain.decode(data, full, self.dtype, out=buf)
        except (AltarrError, MemoryError) as e:  # name where the bad bytes are (the README's promise)
            raise _out_of_memory(e, f"decoding a chunk of shape {full} and dtype {self.dtype}").with_context(
                key=key, chunk=chunk, byte_range=byte_range
            ) from e
        clipped = self.layout.clipped(chunk)
        if a.shape == clipped:
            return a
        if a.ndim != len(clipped):
            raise CorruptShardError(
                f"chunk decoded to {a.ndim} dimensions, expected {len(clipped)}", key=key, chunk=chunk
            )
        if all(s >= c for s, c in zip(a.shape, clipped, strict=True)):
            return a[tuple(slice(0, c) for c in clipped)]
        # a truncating format stored a smaller block than the array edge allows: pad with the fill value
        out = np.full(clipped, self.fill_value, dtype=self.dtype)
        out[tuple(slice(0, min(s, c)) for s, c in zip(a.shape, clipped, strict=True))] = a[
            tuple(slice(0, min(s, c)) for s, c in zip(a.shape, clipped, strict=True))
        ]
        return out

    def is_fill(self, a: np.ndarray) -> bool:
        """Whether every value is the fill value: compared as values, a NaN matching a NaN fill and a zero
        only the zero of its sign; a complex value matches when both of its parts do (``1+nanj`` is not a
        ``nan+0j`` fill). Looks at the corners first, so a chunk holding data is usually told apart
        without a full scan."""
        if a.size == 0:
            return True
        if self.dtype.kind == "c":  # each part compared on its own, with its own NaN rule
            fv = self.fill_array
            return _all_equal(a.real, fv.real) and _all_equal(a.imag, fv.imag)
        return _all_equal(a, self.fill_value)

    def encode_chunk(self, a: np.ndarray, chunk: Chunk, out: np.ndarray | None = None) -> Any:
        """Encode one chunk of its clipped shape (``None`` when it equals the fill value and empty chunks
        are not written). ``out``: a slot of :attr:`encode_slot` bytes to compress into (the result is
        then a view of it), for chains that support it."""
        if not self.write_empty_chunks and self.is_fill(a):
            return None
        full = self.grid.chunks
        if out is None:  # the encoded bytes: about the chunk's size
            what = "the encoded bytes of a chunk"
            check_chunk_room(full, self.dtype, what, key=lambda: self.layout.object_key(chunk), chunk=chunk)
        scratch = None
        if not self.truncates and a.shape != full:
            padded = np.full(full, self.fill_value, dtype=self.dtype)
            padded[tuple(slice(0, s) for s in a.shape)] = a
            a = padded
        elif not a.flags.c_contiguous and self.chain.bytes_bytes:
            # a view into a larger array: gather it into this thread's reusable buffer instead of a fresh
            # copy (compressors write new output, so the buffer is free again when encode returns)
            scratch = scratch_array(a.shape, self.dtype)
            np.copyto(scratch, a)
            a = scratch
        try:
            encoded = self.chain.encode(np.ascontiguousarray(a), out=out)
        except (AltarrError, MemoryError) as e:
            what = f"encoding a chunk of shape {full} and dtype {self.dtype}"
            raise _out_of_memory(e, what).with_context(key=self.layout.object_key(chunk), chunk=chunk) from e
        if scratch is not None and np.shares_memory(np.frombuffer(encoded, dtype=np.uint8), scratch):
            encoded = bytes(encoded)  # a codec passed the scratch buffer through
        return encoded

    def coerce(self, chunk: Chunk, value: Any) -> np.ndarray:
        """A value written to a chunk as an array of the chunk's clipped shape and the dataset's dtype."""
        a = np.asarray(value)
        clipped = self.layout.clipped(chunk)
        if a.shape != clipped:
            if a.shape == self.grid.chunks:  # a full (padded) edge chunk: keep the in-bounds part
                a = a[tuple(slice(0, c) for c in clipped)]
            else:
                raise GridError(
                    f"chunk {chunk} has shape {clipped} (clipped at the array edge), got an array of "
                    f"shape {a.shape}",
                    chunk=chunk,
                )
        if a.dtype != self.dtype:
            a = a.astype(self.dtype)
        return a


def _all_equal(a: np.ndarray, fv: Any) -> bool:
    """Whether every value of the real or integer array ``a`` is ``fv``: a NaN matches a NaN ``fv``, and a
    float zero only the zero of its sign (a chunk of ``-0.0`` is no ``0.0`` fill: read back as the fill,
    it would lose its sign). The corners are compared first."""
    nan_fill = a.dtype.kind == "f" and bool(np.isnan(fv))
    signed = a.dtype.kind == "f" and not nan_fill
    for corner in ((0,) * a.ndim, tuple(s - 1 for s in a.shape)):
        v = a[corner]
        if not (np.isnan(v) if nan_fill else v == fv and (not signed or np.signbit(v) == np.signbit(fv))):
            return False
    if nan_fill:
        return bool(np.isnan(a).all())
    if signed:
        return bool(((a == fv) & (np.signbit(a) == np.signbit(fv))).all())
    return bool((a == fv).all())
