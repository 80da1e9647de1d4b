"""The Python side of the native kernel (``altarr._native``): per-dataset plans, the task tables of region
reads and the encoding of write groups, for chunks whose chain is ``[bytes, zstd or blosc]``. What it
does and what it leaves to the pure-Python path: docs/engine.md, "The native kernel".
"""

from __future__ import annotations

import itertools
import math
import mmap
import threading
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .. import native
from .._threads import get_threads, pmap, spawn
from ..codecs.compress import BloscCodec, ZstdCodec
from ..errors import AltarrError
from ..selection.regions import Geometry

if TYPE_CHECKING:
    from .shard_read import ChunkRange, ChunkSlot

__all__ = ["TODO", "KernelPlan", "plan_for", "read_into", "ReadInto", "empty_result", "encode"]

_ST_OK = 0
_ST_READ_DONE = (0, -3, -4)  # the range was read (then decoded, or refused by the codec)
_FILL_NONE, _FILL_BYTES, _FILL_F4, _FILL_F8 = 0, 1, 2, 3


class _Todo:
    """Marks an item the kernel left to the pure-Python path."""

    def __repr__(self) -> str:
        return "TODO"


#: Placeholder in :func:`encode`'s result for an item the pure-Python path must encode.
TODO: Any = _Todo()


# --- per dataset ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KernelPlan:
    """What the kernel needs to know about one dataset's chunks (see :func:`plan_for`)."""

    codec: int
    #: the chain's compressor: chunks are compressed by it after the kernel gathered and tested them
    compressor: Any
    chunk_shape: tuple[int, ...]
    dtype: np.dtype
    #: whether writes use the kernel (``False``: a dtype whose fill test it does not do)
    writes: bool
    fill: bytes
    fill_mode: int
    #: bytes per chunk of the output arena writes compress into (the codec's largest frame)
    encode_slot: int
    #: bytes of one decoded chunk
    chunk_nbytes: int


def _fill_test(dtype: np.dtype, fill: bytes | None, write_empty_chunks: bool) -> int:
    """The kernel's fill test for chunks of ``dtype`` (``-1``: it has none; float16, complex, dates and
    strings are tested in NumPy)."""
    if fill is None or len(fill) != dtype.itemsize:
        return -1
    if write_empty_chunks:
        return _FILL_NONE
    if dtype.kind in "biu":
        return _FILL_BYTES
    if dtype.kind == "f" and dtype.itemsize in (4, 8):
        if not np.isnan(np.frombuffer(fill, dtype=dtype)[0]):
            return _FILL_BYTES  # a zero fill is no fill for the zero of the other sign (ChunkCodec.is_fill)
        return _FILL_F4 if dtype.itemsize == 4 else _FILL_F8
    return -1


def plan_for(
    dtype: np.dtype,
    chunk_shape: tuple[int, ...],
    compressor: Any,
    fill: bytes | None,
    write_empty_chunks: bool,
) -> KernelPlan | None:
    """The kernel's view of a dataset's chunks of ``dtype`` and ``chunk_shape`` whose chain is ``[bytes
    (native order), compressor]`` (``compressor`` ``None``: another chain), or ``None`` when they need the
    pure-Python path: another compressor, too many dimensions, or no extension. ``fill`` is the fill
    value's bytes (``None``: ``dtype`` cannot hold it; writes then stay on the Python path, which says so).

    >>> from altarr.codecs.compress import GzipCodec
    >>> plan_for(np.dtype("u2"), (4, 4), GzipCodec(), bytes(2), False) is None   # not a kernel codec
    True
    """
    ext = native.loaded()
    if ext is None or compressor is None or len(chunk_shape) > ext.MAXDIM:
        return None
    if dtype.hasobject or dtype.itemsize == 0:
        return None
    nbytes = math.prod(chunk_shape) * dtype.itemsize  # np.prod was 7 % of an open
    if type(compressor) is ZstdCodec:
        kind, slot = native.CODEC_ZSTD, _zstd_bound(nbytes)
    elif type(compressor) is BloscCodec:
        kind, slot = native.CODEC_BLOSC, nbytes + ext.BLOSC_MAX_OVERHEAD
    else:
        return None
    mode = _fill_test(dtype, fill, write_empty_chunks)
    return KernelPlan(
        codec=kind,
        compressor=compressor,
        chunk_shape=tuple(int(c) for c in chunk_shape),
        dtype=dtype,
        writes=mode >= 0,
        fill=fill or b"",
        fill_mode=max(mode, 0),
        encode_slot=slot,
        chunk_nbytes=nbytes,
    )


def _nbytes_in_memory(data: Any) -> int | None:
    """The size of a slot's bytes held in memory in one contiguous run, else ``None`` (a ChunkRange)."""
    if type(data) is memoryview:  # the usual slot: a view of the store's answer (not subclassable)
        return data.nbytes if data.c_contiguous else None
    return len(data) if isinstance(data, bytes | bytearray) else None


def read_into(
    plan: KernelPlan | None,
    raw: Mapping[Any, ChunkSlot | None],
    chunks: Sequence[Any],
    out: np.ndarray,
    geometry: Geometry,
) -> list[Any]:
    """Decode the chunks of a region read into ``out`` with the kernel; returns the chunks (in the order
    of ``chunks``) left to the pure-Python path.

    ``raw`` is :meth:`ShardReader.read_raw <altarr.dataset.shard_read.ShardReader.read_raw>`'s result (with open readers: :class:`ChunkRange` slots that
    the kernel reads itself), ``geometry`` the region plan's (:meth:`RegionPlan.geometry
    <altarr.selection.regions.RegionPlan.geometry>`): per dimension, per chunk index, ``(start in the
    chunk, step, count, start in out)``."""
    job = _job(plan, raw, chunks, out, geometry)
    if job is None:
        return list(chunks)
    pmap(lambda _: job.call(), range(min(get_threads(), job.n)))  # each pulls tasks from one counter
    return job.finish(chunks)


#: A part of a read holding one chunk of at most this many decoded bytes is decoded on the thread that
#: took its answer in (:meth:`ReadInto.add`).
INLINE_DECODE_BYTES = 256 * 1024

#: Results from this size on have their pages touched on the pool while the read's answers are on the way
#: (:func:`touch_pages`).
TOUCH_BYTES = 4 << 20


def touch_pages(out: np.ndarray) -> Callable[..., None] | None:
    """Start writing one byte of every memory page of a fresh result ``out`` on the pool threads, and
    return the ``wait()`` of that work (``None`` where nothing was started: a result under
    :data:`TOUCH_BYTES`, not contiguous, or no pool). Nothing else may write ``out`` before ``wait()``
    returned: the byte written is a zero.

    Why: docs/architecture.md, "Stores: typed requests, declared capabilities, one read path".
    """
    if out.nbytes < TOUCH_BYTES or not out.flags.c_contiguous or get_threads() == 1:
        return None
    flat = out.reshape(-1).view(np.uint8)
    page = mmap.PAGESIZE
    parts = get_threads()
    step = -(-flat.size // (parts * page)) * page  # whole pages a part
    counter = itertools.count()

    def touch() -> None:
        while (i := next(counter)) < parts:
            flat[i * step : (i + 1) * step : page] = 0

    return spawn(touch, parts)


def empty_result(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """``np.empty`` starting on a 64-byte cache line from 1 MiB on (NumPy's start 16 bytes into one: threads
    decoding neighbouring chunks shared lines, benchmarks/README.md, "Results start on a cache line").

    >>> empty_result((1024, 1024), np.dtype("u2")).ctypes.data % 64
    0
    """
    n = math.prod(shape) * dtype.itemsize
    if n < 1 << 20 or dtype.hasobject:
        return np.empty(shape, dtype)
    raw = np.empty(n + 63, np.uint8)
    return raw[(start := -raw.ctypes.data % 64) : start + n].view(dtype).reshape(shape)


class ReadInto:
    """:func:`read_into` for the parts of a read that arrive one after the other: each part's chunks are
    decoded on the pool while the calling thread takes the next part in, and :meth:`finish` has the
    calling thread join the decoding of what is left. A part's pool tasks exist only while it has
    chunks to decode (no pool thread waits idle for the next answer).
    """

    def __init__(self, plan: KernelPlan | None, out: np.ndarray, geometry: Geometry) -> None:
        self.plan, self.out, self.geometry = plan, out, geometry
        self.jobs: list[tuple[_Job | None, list[Any], Callable[..., None] | None]] = []
        self._touching: Callable[..., None] | None = None
        self._touch_started = False

    def touch(self) -> None:
        """Start :func:`touch_pages` on ``out`` once, when the caller has sent the read's requests."""
        if not self._touch_started:
            self._touch_started = True
            self._touching = touch_pages(self.out)

    def _touched(self) -> None:
        """Wait until :func:`touch_pages` is done with ``out`` (touching no pool thread started yet is
        dropped: the copies then take the faults)."""
        self._touch_started = True
        if self._touching is not None:
            wait, self._touching = self._touching, None
            wait(skip_unstarted=True)

    def add(self, raw: Mapping[Any, ChunkSlot | None]) -> None:
        """Start decoding the chunks of one part (as :meth:`ShardReader.read_raw` gives) on the pool; a
        part of one chunk of at most :data:`INLINE_DECODE_BYTES` is decoded here and now (handing it to
        a pool thread costs more than its decode: benchmarks/README.md, "One small chunk decoded where
        it arrives")."""
        chunks = list(raw)
        self._touched()
        job = _job(self.plan, raw, chunks, self.out, self.geometry)
        wait = None
        if job is not None:
            if job.n == 1 and job.plan.chunk_nbytes <= INLINE_DECODE_BYTES:
                job.call()
            else:
                wait = spawn(job.call, job.n)
        self.jobs.append((job, chunks, wait))

    def finish(self) -> list[Any]:
        """Decode what is left (the calling thread helping), wait for the pool, and return the chunks left
        to the pure-Python path; the decoder is then empty."""
        self._touched()
        jobs, self.jobs = self.jobs, []
        done = False
        try:
            for job, _, wait in jobs:
                if wait is not None and job is not None:  # a job waited for is a job
                    job.call()  # takes the tasks no pool thread has taken yet
            done = True
        finally:
            for _, _, wait in jobs:
                if wait is not None:
                    wait(skip_unstarted=done)  # a runner not started yet would find nothing left
        return [c for job, chunks, _ in jobs for c in (chunks if job is None else job.finish(chunks))]


class _Job:
    """One kernel call's tables (:mod:`array` buffers: NumPy calls right after a store's answer are
    slow): the sources (bytes or open files), one task row per chunk, and per row a status."""

    def __init__(
        self,
        ext: Any,
        plan: KernelPlan,
        sources: list,
        rows: list[int],
        n: int,
        done: list,
        readers: list,
        out: np.ndarray,
    ):
        self.tasks = array("q", rows)  # n rows of int64, flat
        self.status = array("i", [1]) * n  # int32 (checked at import)
        self.counter = array("q", [0])
        self.n = n
        self.done, self.readers = done, readers
        self.ext, self.plan, self.sources, self.out = ext, plan, sources, out

    def call(self) -> None:
        """Decode tasks until none is left (threads share the counter). A method, not a closure kept on
        the job: a cycle would keep the sources and output until the cyclic garbage collector ran."""
        p = self.plan
        self.ext.read_chunks(
            self.sources, self.tasks, self.counter, self.status, self.out, p.chunk_shape, p.codec
        )

    def finish(self, chunks: Sequence[Any]) -> list[Any]:
        """Count the file reads, and return the chunks of ``chunks`` the kernel did not decode."""
        counts: dict[int, list[Any]] = {}
        status = self.status.tolist()
        lengths = self.tasks[2 :: len(self.tasks) // self.n].tolist()
        for reader, st, length in zip(self.readers, status, lengths, strict=True):
            if reader is not None and st in _ST_READ_DONE:
                entry = counts.setdefault(id(reader), [reader, 0, 0])
                entry[1] += 1
                entry[2] += length
        for reader, n, nbytes in counts.values():
            reader.count_reads(n, nbytes)
        finished = {c for c, st in zip(self.done, status, strict=True) if st == _ST_OK}
        return [c for c in chunks if c not in finished]


def _job(
    plan: KernelPlan | None,
    raw: Mapping[Any, ChunkSlot | None],
    chunks: Sequence[Any],
    out: np.ndarray,
    geometry: Geometry,
) -> _Job | None:
    """The kernel call for the chunks of ``raw`` it can decode into ``out``, or ``None`` for none; a
    chunk's row is its source, its byte range and its geometry per dimension."""
    ext = native.ext
    if plan is None or ext is None or not out.flags.writeable:
        return None
    sources: list[Any] = []
    source_of: dict[int, int] = {}
    rows: list[int] = []  # the task rows, flat
    done: list[Any] = []
    readers: list[Any] = []
    for c in chunks:
        got = raw[c]
        if got is None:
            continue
        data = got.data
        length = _nbytes_in_memory(data)
        if length is not None:
            rec = [len(sources), 0, length]
            sources.append(data)
            reader = None
        else:  # a ChunkRange: read from its shard's open file
            data = cast("ChunkRange", data)
            reader = data.reader
            fd = reader.fd
            if fd is None or fd < 0:
                continue
            si = source_of.get(id(reader))
            if si is None:
                si = source_of[id(reader)] = len(sources)
                sources.append(fd)
            rec = [si, data.start, data.length]
        rows += rec
        for k, per_index in zip(c, geometry, strict=True):
            rows += per_index[k]
        done.append(c)
        readers.append(reader)
    if not done:
        return None
    return _Job(ext, plan, sources, rows, len(done), done, readers, out)


def encode(
    plan: KernelPlan | None, items: Sequence[tuple[Any, Any]], arena: np.ndarray | None
) -> tuple[list[Any], list[int]]:
    """Encode the whole-array updates of a write group with the kernel.

    ``items`` are ``(chunk, update)`` pairs as in ``ShardWriter.apply``. Returns, per item, its encoded
    bytes (a view of its arena row), ``None`` for a chunk equal to the fill value that is not
    stored, or :data:`TODO` where the pure-Python path must do it; and per item the arena row it owns
    (the rows of the kernel's items come first, so they are one contiguous block)."""
    n = len(items)
    identity = list(range(n))
    ext = native.ext
    if plan is None or not plan.writes or ext is None:
        return [TODO] * n, identity
    mine = [
        i
        for i, (_, u) in enumerate(items)
        if isinstance(u, np.ndarray) and u.dtype == plan.dtype and u.ndim == len(plan.chunk_shape)
    ]
    result: list[Any] = [TODO] * n
    if not mine:
        return result, identity
    rows = [0] * n
    chosen = set(mine)
    for r, i in enumerate(mine + [i for i in range(n) if i not in chosen]):
        rows[i] = r
    k = len(mine)
    slot = plan.encode_slot
    usable = arena is not None and arena.shape[0] >= n and arena.shape[1] >= slot
    block = np.ascontiguousarray(
        arena[:k] if arena is not None and usable else np.empty((k, slot), dtype=np.uint8)
    )
    arrays = [items[i][1] for i in mine]
    frames = pmap(lambda r: _gather_and_compress(ext, plan, arrays[r], block[r]), range(k))
    for i, frame in zip(mine, frames, strict=True):
        result[i] = frame
    return result, rows


_gathered = threading.local()


def _zstd_bound(nbytes: int) -> int:
    """The largest zstd frame ``nbytes`` compress to (zstd.h's ``ZSTD_COMPRESSBOUND``, the same in every
    libzstd release).

    >>> _zstd_bound(64 ** 3 * 2)
    526336
    """
    small = (128 << 10) - nbytes >> 11 if nbytes < 128 << 10 else 0
    return nbytes + (nbytes >> 8) + small


def _gather_and_compress(ext: Any, plan: KernelPlan, values: np.ndarray, row: np.ndarray) -> Any:
    """One chunk: gathered and tested against the fill value by the kernel into this thread's buffer,
    then compressed by the codec (GIL released) into ``row`` (its row of the write group's arena; the
    result is a view of it): ``None`` for a fill chunk, :data:`TODO` for one the kernel or the codec
    refuses (the pure-Python path then says why). Why the arena and python-zstandard: docs/engine.md,
    "The native kernel".
    """
    buf = getattr(_gathered, "buf", None)
    if buf is None or buf.nbytes != plan.chunk_nbytes:
        buf = _gathered.buf = np.empty(plan.chunk_nbytes, dtype=np.uint8)
    try:
        if ext.gather_chunk(values, buf, plan.chunk_shape, plan.fill, plan.fill_mode):
            return None
        n = plan.compressor.encode_into(buf, row)
        return plan.compressor.encode(buf) if n is None else row[:n]
    except (ValueError, AltarrError):
        return TODO
