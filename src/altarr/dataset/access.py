"""Batched chunk access: grid position -> store key, grouping by shard, and the shard read-modify-write.

This is the Java N5 ``DatasetAccess``/``PositionValueAccess`` role. One batched call is one round of
store I/O per nesting level:

* **read**: the requested chunks are grouped by the outermost shard that holds them; every shard's index
  is read in one batched ``get_ranges`` call (a suffix or prefix range, never a size query), then every
  nested level's index, then the chunks' byte ranges (the store coalesces nearby ranges). A shard whose
  requested chunks make up most of it is read whole instead (one request). A missing shard costs one
  request and yields ``None`` for its chunks.
* **write**: per touched shard, at most one whole-object read (none when every in-bounds chunk of the
  shard is being replaced) and one write. Untouched chunks are carried over as bytes: they are never
  decoded. Everything is encoded before anything is written, so a failing encode leaves the store as
  it was; each object write is atomic in the store.
* **delete**: per touched shard one read and one write (or a delete of the key once its last chunk goes).

Example:
    >>> import numpy as np, altarr as aa
    >>> ds = aa.create_dataset("memory://doc-access", shape=(8, 8), dtype="uint8", chunks=(2, 2),
    ...                        shards=(4, 4))
    >>> ds.write_chunks([(0, 0), (0, 1)], [np.ones((2, 2), "u1"), np.full((2, 2), 2, "u1")])
    >>> [None if a is None else int(a[0, 0]) for a in ds.read_chunks([(0, 1), (3, 3)])]
    [2, None]
"""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..codecs.chain import CodecChain
from ..codecs.sharding import ShardingCodec
from ..errors import AltarrError, CorruptShardError, GridError, UnsupportedError, WriteConflictError
from ..formats._common import check_spec_limits
from ..formats.base import DatasetSpec, join_key
from . import kernel, pipeline  # [remote pipeline]: pipeline
from .grid import NestedGrid
from .locks import MAX_ATTEMPTS, _gave_up, conflict_backoff, store_exclusive
from .parallel import pmap

if TYPE_CHECKING:
    from ..stores.base import Store

__all__ = ["ChunkRange", "DatasetAccess", "IndexCache", "Merge"]

Chunk = tuple[int, ...]
_EMPTY = np.uint64(2**64 - 1)

#: The version reported (``read_chunks(..., versions=)``) for a shard that does not exist.
MISSING = "missing"

#: Read a shard whole when the requested chunks are at least this fraction of its in-bounds chunks.
WHOLE_SHARD_FRACTION = 0.5

#: A write is applied in groups of whole shards holding at most this many bytes of decoded values, which
#: bounds the encoded bytes held in memory at once.
WRITE_GROUP_BYTES = 64 << 20


_thread_buffers = threading.local()

#: A thread's scratch buffer larger than this is given back once a request needs under a quarter of it,
#: so one read of huge chunks does not pin that memory in every pool thread for the life of the process.
SCRATCH_KEEP_BYTES = 64 << 20


def _thread_buffer(name: str, nbytes: int) -> np.ndarray:
    """This thread's reusable uint8 buffer ``name``, at least ``nbytes`` long (grown as needed, shrunk
    when it is far larger than needed and above :data:`SCRATCH_KEEP_BYTES`)."""
    raw = getattr(_thread_buffers, name, None)
    if raw is None or raw.nbytes < nbytes or (raw.nbytes > SCRATCH_KEEP_BYTES and 4 * nbytes < raw.nbytes):
        raw = np.empty(max(nbytes, 1), dtype=np.uint8)
        setattr(_thread_buffers, name, raw)
    return raw


def _scratch(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """This thread's reusable buffer of ``shape`` and ``dtype`` for decoded values."""
    nbytes = math.prod(shape) * dtype.itemsize
    return _thread_buffer("decoded", nbytes)[:nbytes].view(dtype).reshape(shape)


def _scratch_input(nbytes: int) -> memoryview:
    """This thread's reusable buffer for encoded chunk bytes read from a file: no allocation and no page
    faults per chunk, and the bytes stay in the CPU cache for the decode."""
    return _thread_buffer("encoded", nbytes)[:nbytes].data


#: How often a batched read is redone when another writer replaces a shard between reading its index
#: and reading its chunks (detected through the stores' version tokens) before it gives up.
READ_ATTEMPTS = 5


def _reader_size(reader: Any) -> int | None:
    """The size of the file an open reader holds (the version its reads come from), if it tells."""
    size = getattr(reader, "size", None)
    if isinstance(size, int):
        return size
    fd = getattr(reader, "fd", None)
    if isinstance(fd, int) and fd >= 0:
        try:
            return os.fstat(fd).st_size
        except OSError:
            return None
    return None


class _ShardChanged(Exception):
    """Internal: objects whose version changed between two reads of one call."""

    def __init__(self, keys: set[str]) -> None:
        super().__init__(sorted(keys))
        self.keys = keys


def _check_versions(tokens: dict[str, Any], keys: list[str], versions: list[Any]) -> None:
    """Raise :class:`_ShardChanged` when a read came from another version of its object than the one
    seen earlier in the same call (the reads of one call must all come from one version of a shard)."""
    changed = {k for k, v in zip(keys, versions, strict=True) if v is not None and tokens.get(k, v) != v}
    if changed:
        raise _ShardChanged(changed)


@dataclass
class Merge:
    """A partial update of one chunk: ``fn(old)`` gets the chunk's current values (a writable array of the
    clipped chunk shape, fill-value filled if the chunk is not stored) and returns the new values."""

    fn: Callable[[np.ndarray], np.ndarray]


def _byte_range(got: tuple[Any, ...]) -> tuple[int, int] | None:
    """The ``(start, stop)`` of a :meth:`DatasetAccess.read_raw` slot's bytes in its object, if known."""
    return got[2] if len(got) > 2 else None


@dataclass(frozen=True)
class ChunkRange:
    """Where a chunk's bytes are in its shard, for a read deferred to the decode task, and the open file
    (a :class:`~altarr.stores.local.FileReader`) to read them from."""

    chunk: Chunk
    start: int
    length: int
    reader: Any


@dataclass(eq=False)
class _Node:
    """A block at some level whose bytes are either in memory or at ``[start, start+length)`` of ``key``."""

    key: str
    level: int
    pos: Chunk
    chunks: list[Chunk]
    start: int = 0
    length: int | None = None  # None: the whole object, length unknown
    mem: memoryview | None = None


class IndexCache:
    """Decoded shard indexes kept across calls, each tied to the version of the object it came from.

    How an entry is validated before use (the *staleness rule*; see ``docs/remote.md``):

    * stores whose ``stat`` is cheap and whose ranged reads report versions (local files, memory): the
      object's current version (``store.stat``: a file's mtime and inode, a memory store's write counter)
      is checked to equal the one the index was read with, once per object per call;
    * stores whose every ranged read answers with the object's version (``store.versioned_reads``:
      obstore, whose responses carry the ETag): the entry is used at once, and the chunk reads it leads
      to are checked against its version; a shard replaced since (another ETag, or gone) makes the call
      drop the entry and read the index again, so no request is spent on validation and a stale index
      never yields data;
    * other stores (fsspec over S3 or HTTP, whose ranged reads do not report the ETag): no cache, the
      index is read on every call, unless ``recheck=False`` (the caller promises the array does not
      change while it is open, as tensorstore's ``recheck_cached_data=False``).

    ``recheck=True`` turns the cache off (every call reads the indexes again). The dataset's own writes
    read whole shards, never a cached index, and drop the entries of the shards they touch. Bounded to
    ``max_bytes`` of index arrays (LRU).
    """

    def __init__(self, store: Store, max_bytes: int = 32 << 20, recheck: bool | None = None) -> None:
        self.store = store
        versioned = hasattr(store, "get_ranges_versioned")
        self.cheap = bool(getattr(store, "cheap_stat", False)) and versioned
        #: entries are used without a stat and checked by the versions the chunk reads report
        self.optimistic = not self.cheap and (
            bool(getattr(store, "versioned_reads", False)) or recheck is False
        )
        self.trusted = recheck is False and not bool(getattr(store, "versioned_reads", False))
        self.enabled = recheck is not True and (self.cheap or self.optimistic)
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, int, int], tuple[Any, np.ndarray]] = OrderedDict()
        self._by_key: dict[str, set[tuple[str, int, int]]] = {}
        self._nbytes = 0
        self._lock = threading.Lock()
        self.hits = 0

    def read(self, requests: list) -> tuple[list, list]:
        """Ranged reads, with the version of each object when the cache is on (and then as zero-copy
        slices of coalesced reads)."""
        if not requests:
            return [], []
        if self.enabled:
            return self.store.get_ranges_versioned(requests)  # type: ignore[attr-defined]
        return self.store.get_ranges(requests), [None] * len(requests)

    def get(self, key: str, level: int, start: int, tokens: dict[str, Any]) -> np.ndarray | None:
        if not self.enabled:
            return None
        with self._lock:
            entry = self._entries.get((key, level, start))
        if entry is None:
            return None
        if key not in tokens:  # one version check per object per call
            if self.optimistic:  # checked against the versions of the chunk reads instead
                tokens[key] = entry[0]
            else:
                st = self.store.stat(key)
                tokens[key] = None if st is None else st[1]
        if tokens[key] is None or tokens[key] != entry[0]:
            self.forget([key])
            return None
        with self._lock:
            if (key, level, start) in self._entries:
                self._entries.move_to_end((key, level, start))
            self.hits += 1
        return entry[1]

    def put(self, key: str, level: int, start: int, version: Any, index: np.ndarray) -> None:
        if version is None and self.trusted:
            version = "trusted"
        if not self.enabled or version is None:
            return
        ck = (key, level, start)
        with self._lock:
            old = self._entries.pop(ck, None)
            if old is not None:
                self._nbytes -= old[1].nbytes
            self._entries[ck] = (version, index)
            self._by_key.setdefault(key, set()).add(ck)
            self._nbytes += index.nbytes
            while self._nbytes > self.max_bytes and self._entries:
                (k, lv, st), (_, idx) = self._entries.popitem(last=False)
                self._nbytes -= idx.nbytes
                self._by_key.get(k, set()).discard((k, lv, st))

    def forget(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                for ck in self._by_key.pop(key, ()):
                    entry = self._entries.pop(ck, None)
                    if entry is not None:
                        self._nbytes -= entry[1].nbytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._by_key.clear()
            self._nbytes = 0


def _levels_of(spec: DatasetSpec) -> tuple[list[tuple[int, ...]], list[ShardingCodec], CodecChain]:
    """Block shapes (outermost first), the sharding codec of each shard level, and the chunk chain."""
    chain = spec.codecs
    shapes = [tuple(spec.outer_chunks)]
    shardings: list[ShardingCodec] = []
    while isinstance(chain.array_bytes, ShardingCodec):
        if chain.array_array or chain.bytes_bytes:
            names = [c.name for c in (*chain.array_array, *chain.bytes_bytes)]
            raise UnsupportedError(
                f"codecs {names} around sharding_indexed would need whole-shard decoding; altarr supports "
                "array->array codecs inside the shard's own codec chain only",
                codec="sharding_indexed",
            )
        sc = chain.array_bytes
        shardings.append(sc)
        shapes.append(tuple(sc.chunk_shape))
        chain = sc.codecs
    return shapes, shardings, chain


class DatasetAccess:
    """Batched, shard-grouped chunk I/O for one array (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        prefix: str,
        spec: DatasetSpec,
        *,
        write_empty_chunks: bool = False,
        recheck: bool | None = None,
    ):
        self.store = store
        self.prefix = prefix
        self.spec = spec
        self.dtype = np.dtype(spec.dtype)
        shapes, shardings, chunk_chain = _levels_of(spec)
        meta_key = join_key(prefix, next(iter(spec.metadata), "")) if spec.metadata else (prefix or None)
        check_spec_limits(spec.shape, shapes[::-1], self.dtype, key=meta_key)
        self.grid = NestedGrid(spec.shape, shapes[::-1])
        # self.sharding[l] splits a level-l block into level-(l-1) blocks (index 0 unused)
        self.sharding: list[ShardingCodec | None] = [None, *shardings[::-1]]
        for level in range(1, self.grid.nlevels):
            sc = self.sharding[level]
            assert sc is not None
            if sc.chunks_per_shard(self.grid.levels[level]) != self.grid.per_block(level):
                raise GridError(f"sharding codec at level {level} does not match the grid {self.grid}")
        self.chunk_chain = chunk_chain
        #: The most bytes a stored level-l block can have (l = 0: a chunk): index entries claiming more are
        #: refused before anything is read or allocated for them.
        self.max_block_bytes: list[int] = [chunk_chain.max_encoded_size(self.grid.chunks, self.dtype)]
        for level in range(1, self.grid.nlevels):
            cps = self.grid.per_block(level)
            sc = self.sharding[level]
            assert sc is not None
            self.max_block_bytes.append(sc.index_nbytes(cps) + math.prod(cps) * self.max_block_bytes[-1])
        self.truncates = bool(getattr(chunk_chain.array_bytes, "truncates_edges", False))
        # chains of [bytes, one compressor] decode straight into the destination (see decode_chunk)
        self._direct = None if self.truncates else chunk_chain.direct_compressor(self.dtype)
        #: Bytes per chunk of the output arena writes compress into (None: the chain allocates its own).
        self.encode_slot = None if self.truncates else chunk_chain.encode_bound(self.grid.chunks, self.dtype)
        self.write_empty_chunks = write_empty_chunks
        self.fill_value = spec.fill_value
        self.index_cache = IndexCache(store, recheck=recheck)
        #: The native kernel's view of the chunks (``None``: pure-Python path only; see ``kernel``).
        self.native = kernel.plan_for(self)
        if self.native is not None and self.encode_slot is None:
            self.encode_slot = self.native.encode_slot

    # --- keys and grouping -----------------------------------------------------------------------------
    @property
    def sharded(self) -> bool:
        return self.grid.nlevels > 1

    def key(self, outer_pos: Sequence[int]) -> str:
        return join_key(self.prefix, self.spec.chunk_key(tuple(int(p) for p in outer_pos)))

    def shard_of(self, chunk: Sequence[int]) -> Chunk:
        return self.grid.position(chunk, self.grid.nlevels - 1)

    def group_by_shard(self, chunks: Sequence[Chunk]) -> dict[Chunk, list[Chunk]]:
        top = self.grid.nlevels - 1
        groups: dict[Chunk, list[Chunk]] = {}
        for c in chunks:
            groups.setdefault(self.grid.position(c, top), []).append(c)
        return groups

    def _rows(self, coords: Sequence[Sequence[int]] | np.ndarray) -> dict[Chunk, list[int]]:
        """Validated coordinates: each distinct chunk (in first-seen order) with the request rows asking
        for it."""
        wanted, unique = self._unique(coords)
        rows: dict[Chunk, list[int]] = {c: [] for c in unique}
        for i, c in enumerate(wanted):
            rows[c].append(i)
        return rows

    def _unique(self, coords: Sequence[Sequence[int]] | np.ndarray) -> tuple[list[Chunk], list[Chunk]]:
        """Validated coordinates in request order, and the unique ones in first-seen order."""
        arr = self.grid.check_chunks(coords)
        wanted = [tuple(int(v) for v in row) for row in arr.tolist()]
        return wanted, list(dict.fromkeys(wanted))

    # --- chunk codec ------------------------------------------------------------------------------------
    def _clipped(self, chunk: Chunk) -> tuple[int, ...]:
        return self.grid.block_clipped_shape(chunk, 0)

    def decode_chunk(
        self, data: Any, chunk: Chunk, key: str, *, scratch: bool = False, byte_range: Any = None
    ) -> np.ndarray:
        """Decode one chunk's bytes into an array of its clipped shape.

        By default the result is a fresh array the caller owns. With ``scratch=True`` it is decoded into
        this thread's reusable buffer (no allocation, no page faults): valid only until the same thread
        decodes again, for callers that copy it out at once (region reads)."""
        full = self.grid.chunks
        try:
            if self.truncates:
                a = self.chunk_chain.decode(data, full, self.dtype)
            else:  # decode straight into the destination buffer
                buf = _scratch(full, self.dtype) if scratch else np.empty(full, self.dtype)
                if self._direct is not None:  # [bytes, compressor]: no per-codec steps in between
                    a = self._direct.decode(data, out=buf)
                    if a is not buf:  # the stream did not announce its size: copy (and size-check) it
                        a = self.chunk_chain.array_bytes.decode(a, full, self.dtype, out=buf)
                else:
                    a = self.chunk_chain.decode(data, full, self.dtype, out=buf)
        except AltarrError as e:  # name where the bad bytes are (the README's promise)
            raise e.with_context(key=key, chunk=chunk, byte_range=byte_range) from e
        clipped = self._clipped(chunk)
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
        """Whether every value equals the fill value (NaN matches a NaN fill). Looks at the corners
        first, so a chunk holding data is usually told apart without a full scan."""
        fv = self.fill_value
        nan_fill = self.dtype.kind in "fc" and bool(np.isnan(fv))
        if a.size == 0:
            return True
        for corner in ((0,) * a.ndim, tuple(s - 1 for s in a.shape)):
            v = a[corner]
            if not (np.isnan(v) if nan_fill else v == fv):
                return False
        if nan_fill:
            return bool(np.isnan(a).all())
        return bool((a == fv).all())

    def encode_chunk(self, a: np.ndarray, chunk: Chunk, out: np.ndarray | None = None) -> Any:
        """Encode one chunk of its clipped shape (``None`` when it equals the fill value and empty chunks
        are not written). ``out``: a slot of :data:`encode_slot` bytes to compress into (the result is
        then a view of it), for chains that support it."""
        if not self.write_empty_chunks and self.is_fill(a):
            return None
        full = self.grid.chunks
        if not self.truncates and a.shape != full:
            padded = np.full(full, self.fill_value, dtype=self.dtype)
            padded[tuple(slice(0, s) for s in a.shape)] = a
            a = padded
        elif not a.flags.c_contiguous and self.chunk_chain.bytes_bytes:
            # a view into a larger array: gather it into this thread's reusable buffer instead of a fresh
            # copy (compressors write new output, so the buffer is free again when encode returns)
            buf = _scratch(a.shape, self.dtype)
            np.copyto(buf, a)
            try:
                encoded = self.chunk_chain.encode(buf, out=out)
            except AltarrError as e:
                raise e.with_context(key=self.key(self.shard_of(chunk)), chunk=chunk) from e
            if np.shares_memory(np.frombuffer(encoded, dtype=np.uint8), buf):  # a codec passed it through
                encoded = bytes(encoded)
            return encoded
        try:
            return self.chunk_chain.encode(np.ascontiguousarray(a), out=out)
        except AltarrError as e:
            raise e.with_context(key=self.key(self.shard_of(chunk)), chunk=chunk) from e

    def _coerce(self, chunk: Chunk, value: Any) -> np.ndarray:
        """A value written to a chunk as an array of the chunk's clipped shape and the dataset's dtype."""
        a = np.asarray(value)
        clipped = self._clipped(chunk)
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

    # --- reads -----------------------------------------------------------------------------------------
    def read_chunks(
        self, coords: Sequence[Sequence[int]] | np.ndarray, *, versions: dict[str, Any] | None = None
    ) -> list[np.ndarray | None]:
        """Arrays (clipped at the array edge) or ``None`` for chunks that are not stored, in request order.

        ``versions``: a dict that receives, for a sharded array, the version token of every shard the call
        read (``None`` where the store reports none); all chunks of one shard come from that version."""
        rows = self._rows(coords)
        if not rows:
            return []
        raw = self.read_raw(list(rows), versions=versions)
        # a chunk asked for k times is returned k times, each slot its own array: the k - 1 copies are
        # made in the chunk's decode task, so they run on the pool too (their page faults cost as much as
        # the decode of a fast codec)

        def decode(item: tuple[Chunk, tuple[str, Any] | None]) -> list[np.ndarray] | None:
            chunk, got = item
            if got is None:
                return None
            a = self.decode_chunk(got[1], chunk, got[0], byte_range=_byte_range(got))
            return [a] + [a.copy() for _ in range(len(rows[chunk]) - 1)]

        out: list[np.ndarray | None] = [None] * sum(len(r) for r in rows.values())
        for (chunk, _), arrays in zip(raw.items(), pmap(decode, list(raw.items())), strict=True):
            if arrays is not None:
                for i, a in zip(rows[chunk], arrays, strict=True):
                    out[i] = a
        return out

    def visit_chunks(
        self,
        coords: Sequence[Sequence[int]] | np.ndarray,
        fn: Callable[[int, np.ndarray], Any],
        *,
        versions: dict[str, Any] | None = None,
    ) -> None:
        """``fn(i, chunk)`` per requested row on the pool, chunks decoded into scratch (see
        :meth:`Dataset.visit_chunks <altarr.Dataset.visit_chunks>`); ``versions`` as for
        :meth:`read_chunks`."""
        rows = self._rows(coords)

        def each_row(chunk: Chunk, a: np.ndarray) -> None:
            for i in rows[chunk]:
                fn(i, a)

        self.visit(list(rows), each_row, versions=versions)

    def visit(
        self,
        chunks: list[Chunk],
        fn: Callable[[Chunk, np.ndarray], Any],
        *,
        versions: dict[str, Any] | None = None,
        into: tuple[np.ndarray, dict[Chunk, Any]] | None = None,
    ) -> None:
        """``fn(chunk, values)`` for each of the distinct, valid ``chunks`` on the pool: the values
        decoded into this thread's scratch buffer (read-only, valid during the call; a read-only fill-value
        array for a chunk that is not stored). On local files each shard is opened once and every chunk's
        range read inside its own task. Region reads and :meth:`visit_chunks` are built on it.

        ``into=(out, pieces)`` (region reads: ``fn`` copies ``pieces[chunk]`` of each chunk into ``out``):
        the native kernel decodes the chunks it can straight into ``out`` first, ``fn`` does the rest."""
        if not chunks:
            return
        fill = np.asarray(self.fill_value, dtype=self.dtype)

        def one(chunk: Chunk) -> None:
            got = raw[chunk]
            if got is None:
                a = np.broadcast_to(fill, self._clipped(chunk))
            else:
                # decoded into this thread's scratch buffer, then copied out by ``fn``: decoding straight
                # into a region read's (fresh, page-faulting) result was measured slower even where a
                # whole chunk lands in one contiguous run of it (128 MB slab read in (8, 512, 512) blosc
                # chunks: 23-25 ms straight, 20.5 ms through the cache-hot scratch buffer)
                a = self.decode_chunk(
                    self.materialize(got[0], got[1]), chunk, got[0], scratch=True, byte_range=_byte_range(got)
                )
                a = a.view()
                a.flags.writeable = False
            fn(chunk, a)

        if pipeline.streams(self, chunks):  # [remote pipeline] decode each shard as it lands
            return pipeline.visit(self, chunks, fn, versions=versions, into=into)  # [remote pipeline]
        with self.open_readers() as readers:  # local files: each shard opened once for the call
            raw = self.read_raw(chunks, readers=readers, versions=versions)
            if into is not None:
                chunks = kernel.read_into(self, raw, chunks, *into)
            pmap(one, chunks)

    def read_raw(
        self,
        chunks: Sequence[Chunk],
        *,
        readers: dict[str, Any] | None = None,
        versions: dict[str, Any] | None = None,
    ) -> dict[Chunk, tuple[Any, ...] | None]:
        """The encoded bytes of each chunk (with its store key), or ``None`` where it is not stored.

        ``readers`` (a dict from :meth:`open_readers`, on stores that have ``open_reader``): each shard is
        opened once for the call and its version taken from the open file, which validates the cached
        index without a ``stat``; index reads come from that file, shards are never read whole, and the
        chunks' own ranges are not read here: their slots hold a :class:`ChunkRange` that :meth:`materialize` reads inside the
        decode task, so reading and decoding overlap on the pool and each chunk's bytes are still in the
        CPU cache when decoded. Every range of a shard then comes from the same version of the file."""
        if not self.sharded:
            keys = [self.key(c) for c in chunks]
            datas = self.store.get_ranges([(k, None, None) for k in keys])
            return {
                c: (None if d is None else (k, d, (0, len(d))))
                for c, k, d in zip(chunks, keys, datas, strict=True)
            }
        for _ in range(READ_ATTEMPTS):
            try:
                return self._read_sharded(chunks, readers, seen=versions)
            except _ShardChanged as e:  # replaced between its index read and its chunks' reads: again
                self.index_cache.forget(e.keys)
        raise CorruptShardError(
            f"the shard was replaced by another writer during each of {READ_ATTEMPTS} attempts to read it",
            key=self.key(self.shard_of(chunks[0])),
        )

    def _read_sharded(
        self, chunks: Sequence[Chunk], readers: dict[str, Any] | None, *, seen: dict[str, Any] | None = None
    ) -> dict[Chunk, tuple[Any, ...] | None]:
        top = self.grid.nlevels - 1
        result: dict[Chunk, tuple[str, Any] | None] = dict.fromkeys(chunks)
        nodes = [_Node(self.key(pos), top, pos, group) for pos, group in self.group_by_shard(chunks).items()]
        tokens: dict[str, Any] = {}  # object versions seen in this call (for the index cache)
        sizes: dict[str, int] = {}  # object sizes where the open file tells them (index entry checks)
        if readers is not None:
            for n in nodes:
                if n.key not in readers:
                    readers[n.key] = self.store.open_reader(n.key)  # type: ignore[attr-defined]
                reader = readers[n.key]
                if reader is None:
                    tokens[n.key] = MISSING
                else:
                    tokens[n.key] = reader.version
                    size = _reader_size(reader)
                    if size is not None:
                        sizes[n.key] = size
            nodes = [n for n in nodes if readers[n.key] is not None]  # a missing shard: chunks stay None
        for level in range(top, 0, -1):
            nodes = self._descend(nodes, level, tokens, readers, sizes)
        if seen is not None:  # the version of every shard this call reads (None: the store tells none)
            for pos in self.group_by_shard(chunks):
                key = self.key(pos)
                seen[key] = tokens.get(key)
        # level-0 nodes: the chunks themselves
        pending = [n for n in nodes if n.mem is None]
        if pending and readers is not None:
            for n in nodes:
                result[n.pos] = (
                    n.key,
                    n.mem if n.mem is not None else ChunkRange(n.pos, n.start, n.length, readers[n.key]),
                    (n.start, n.start + n.length),
                )
            return result
        if pending:
            datas, versions = self.index_cache.read([(n.key, n.start, n.start + n.length) for n in pending])
            _check_versions(tokens, [n.key for n in pending], versions)
            if self.index_cache.optimistic:
                gone = {n.key for n, d in zip(pending, datas, strict=True) if d is None}
                if gone:  # a shard deleted since its index was cached: read the index again
                    raise _ShardChanged(gone)
            for n, d in zip(pending, datas, strict=True):
                n.mem = self._checked_range(n.key, n.pos, n.start, n.length, d)
        for n in nodes:
            result[n.pos] = (n.key, n.mem, (n.start, n.start + n.length))
        return result

    @contextmanager
    def open_readers(self) -> Iterator[dict[str, Any] | None]:
        """A dict for :meth:`read_raw`'s ``readers`` that closes the files it collects on exit; ``None``
        (read in batched calls instead) for unsharded arrays and stores without ``open_reader``."""
        if not self.sharded or not hasattr(self.store, "open_reader"):
            yield None
            return
        readers: dict[str, Any] = {}
        try:
            yield readers
        finally:
            for r in readers.values():
                if r is not None:
                    r.close()

    def materialize(self, key: str, data: Any) -> Any:
        """The bytes of a :meth:`read_raw` slot: a deferred :class:`ChunkRange` is read now (one ranged
        read from its open file, inline on the calling thread) into this thread's reusable input buffer,
        so the result is valid only until the thread reads again (decode it at once)."""
        if not isinstance(data, ChunkRange):
            return data
        buf = _scratch_input(data.length)
        got = data.reader.read_into(data.start, buf)
        return self._checked_range(key, data.chunk, data.start, data.length, buf[:got])

    @staticmethod
    def _checked_range(key: str, chunk: Chunk, start: int, length: int, d: Any) -> memoryview:
        if d is None or len(d) != length:
            got = 0 if d is None else len(d)
            raise CorruptShardError(
                f"index entry points past the end of the object (read {got} of {length} bytes)",
                key=key,
                chunk=chunk,
                byte_range=(start, start + length),
            )
        return memoryview(d)

    def _read_versioned(self, requests: list, readers: dict[str, Any] | None) -> tuple[list, list]:
        """Ranged reads with object versions: from each key's open reader when the call has readers
        (they never ask for whole objects), else in one batched store call."""
        if not readers:
            return self.index_cache.read(requests)
        got = [(readers[k].read(s, e), readers[k].version) for k, s, e in requests]
        return [d for d, _ in got], [v for _, v in got]

    def _descend(
        self,
        nodes: list[_Node],
        level: int,
        tokens: dict[str, Any],
        readers: dict[str, Any] | None = None,
        sizes: dict[str, int] | None = None,
    ) -> list[_Node]:
        """Read the index of every level-``level`` node (or the whole node) and return its children.

        Every index entry is checked (:meth:`ShardingCodec.decode_index`) before it leads to a read: no
        longer than a child block can be, inside the object where its size is known (a nested node's
        length, an open file's size, a whole read), else below ``2**63``."""
        max_child = self.max_block_bytes[level - 1]
        sc = self.sharding[level]
        assert sc is not None
        cps = self.grid.per_block(level)
        n_idx = sc.index_nbytes(cps)
        cache = self.index_cache
        # every node ends up with its decoded index: from the cache, from an index read, or parsed
        # out of its bytes (read whole here, or sliced from a parent that was read whole)
        indexed: list[tuple[_Node, np.ndarray]] = []
        in_memory = [n for n in nodes if n.mem is not None]
        requests, targets = [], []
        for n in nodes:
            if n.mem is not None:
                continue
            # with open files (local disk) a chunk's range is a pread inside its decode task, and reading
            # ranges beats reading a shard whole even when most of it is wanted (no 18 MB buffer to
            # fault in and copy out of: whole 512^3 blosc reads 102 -> 91 ms, zstd 235 -> 209 ms)
            # a cached index comes first, also for a shard mostly wanted: its chunks' ranges then go
            # out in the data round, and a warm read costs that one round
            cached = cache.get(n.key, level, n.start, tokens)
            if cached is not None:
                indexed.append((n, cached))
                continue
            whole = readers is None and len(n.chunks) >= WHOLE_SHARD_FRACTION * self.grid.n_chunks_in(
                n.pos, level
            )
            if whole:
                rng = (None, None) if n.length is None else (n.start, n.start + n.length)
            elif n.length is None:
                rng = sc.index_range(cps)
            elif sc.index_location == "start":
                rng = (n.start, n.start + n_idx)
            else:
                rng = (n.start + n.length - n_idx, n.start + n.length)
            requests.append((n.key, *rng))
            targets.append((n, whole))
        datas, versions = self._read_versioned(requests, readers)
        _check_versions(tokens, [n.key for n, _ in targets], versions)
        for (n, whole), req, d, version in zip(targets, requests, datas, versions, strict=True):
            tokens.setdefault(n.key, version)
            if d is None:
                if n.length is None:  # a missing shard: all its chunks are absent
                    tokens[n.key] = MISSING
                    continue
                if cache.optimistic:  # deleted since its outer index was cached: read that again
                    raise _ShardChanged({n.key})
                raise CorruptShardError("object vanished while it was being read", key=n.key)
            if whole:
                if n.length is not None and len(d) != n.length:
                    raise CorruptShardError(
                        f"read {len(d)} of {n.length} bytes of a nested shard",
                        key=n.key,
                        byte_range=(n.start, n.start + n.length),
                    )
                n.mem = memoryview(d)
                n.length = len(d)
                in_memory.append(n)
                continue
            if len(d) != n_idx:
                raise CorruptShardError(
                    f"shard is truncated: its index needs {n_idx} bytes, the object gave {len(d)}",
                    key=n.key,
                    byte_range=req[1:],
                )
            size = n.length if n.length is not None else (sizes or {}).get(n.key)
            try:
                index = sc.decode_index(d, cps, object_size=size, max_nbytes=max_child)
            except AltarrError as e:
                raise e.with_context(key=n.key, chunk=n.chunks[0]) from e
            cache.put(n.key, level, n.start, version, index)
            indexed.append((n, index))
        for n in in_memory:
            try:
                index = sc.read_index(n.mem, cps, max_nbytes=max_child)
            except AltarrError as e:
                raise e.with_context(key=n.key, chunk=n.chunks[0]) from e
            cache.put(n.key, level, n.start, tokens.get(n.key), index)
            indexed.append((n, index))
        children: list[_Node] = []
        for n, index in indexed:
            groups: dict[Chunk, list[Chunk]] = {}
            for c in n.chunks:
                groups.setdefault(self.grid.relative(c, level - 1, level), []).append(c)
            for rel, group in groups.items():
                off, nb = index[rel]
                if off == _EMPTY or nb == _EMPTY:
                    continue  # absent: its chunks stay None
                off, nb = int(off), int(nb)
                child_pos = self.grid.position(group[0], level - 1)
                child = _Node(n.key, level - 1, child_pos, group, start=n.start + off, length=nb)
                if n.mem is not None:
                    child.mem = n.mem[off : off + nb]
                children.append(child)
        return children

    # --- writes ----------------------------------------------------------------------------------------
    def write_chunks(self, coords: Sequence[Sequence[int]] | np.ndarray, values: Sequence[Any]) -> None:
        """Write whole chunks (arrays of the clipped chunk shape). A later duplicate wins."""
        wanted, _ = self._unique(coords)
        if len(values) != len(wanted):
            raise GridError(f"write_chunks got {len(wanted)} coordinates but {len(values)} arrays")
        updates = {c: self._coerce(c, v) for c, v in zip(wanted, values, strict=True)}
        self.apply(updates)

    def delete_chunks(self, coords: Sequence[Sequence[int]] | np.ndarray) -> list[bool]:
        """Delete chunks; returns, per request, whether the chunk was stored."""
        wanted, unique = self._unique(coords)
        existed = self.apply(dict.fromkeys(unique))
        seen: set[Chunk] = set()
        out = []
        for c in wanted:
            out.append(existed.get(c, False) and c not in seen)
            seen.add(c)
        return out

    def apply(self, updates: dict[Chunk, np.ndarray | Merge | None]) -> dict[Chunk, bool]:
        """Apply chunk updates: an array replaces a chunk, ``None`` deletes it, a :class:`Merge` edits it.

        Large calls are applied in groups of whole shards (or chunks, unsharded) of at most
        :data:`WRITE_GROUP_BYTES` of decoded values, so a write of any size holds only one group's
        encoded bytes in memory. Within a group everything is encoded before anything is written; every
        stored object is replaced atomically, so a failure leaves each object either old or new.

        Returns for each chunk whether it was stored before (known only where the old object was read)."""
        if not updates:
            return {}
        existed: dict[Chunk, bool] = {}
        groups = self._write_groups(updates)
        arena = self._arena(max(len(g) for g in groups))
        for group in groups:
            self._apply_group(group, arena, existed)
        return existed

    #: At most this many objects are locked at once on stores with cross-process locks (each lock holds
    #: two descriptors until the group is written): larger groups are split.
    LOCKED_OBJECTS_PER_GROUP = 256

    def _apply_group(self, group: dict[Chunk, Any], arena: np.ndarray | None, existed: dict) -> None:
        """One group under its objects' locks (in-process, then the store's cross-process guard, see
        :mod:`.locks`); the objects whose conditional write met another writer's change are read,
        merged and written again (bounded, then ``WriteConflictError``)."""
        pending = group
        for attempt in range(MAX_ATTEMPTS):
            if self.sharded:
                keys = [self.key(pos) for pos in self.group_by_shard(list(pending))]
            else:  # only chunks that are read and merged need a guard; whole chunks are replaced
                keys = [self.key(c) for c, u in pending.items() if isinstance(u, Merge)]
            try:
                with store_exclusive(self.store, keys):
                    if self.sharded:
                        existed.update(self._apply_sharded(pending, arena))
                    else:
                        existed.update(self._apply_unsharded(pending, arena))
                return
            except WriteConflictError as e:
                if attempt + 1 == MAX_ATTEMPTS:
                    raise _gave_up(e) from e
                again = set(e.keys)
                pending = {c: u for c, u in pending.items() if self._object_key(c) in again}
                if not pending:
                    raise
            conflict_backoff(attempt)

    def _object_key(self, chunk: Chunk) -> str:
        """The key of the stored object holding ``chunk``."""
        return self.key(self.shard_of(chunk)) if self.sharded else self.key(chunk)

    def _arena(self, n: int) -> np.ndarray | None:
        """One output slot per chunk of a write group, for chains that compress into a given buffer.

        The group's chunks are compressed into rows of one large array instead of a fresh buffer each:
        its pages (transparent huge pages, where the kernel gives them) are faulted in once and reused by
        every later group of the call, where fresh per-chunk buffers took a page fault per 4 KiB of
        output (64^3 uint16 blosc chunks: 345-427 us per chunk into fresh buffers, 300 us into an
        arena). The stores copy or write what they are given before ``set`` returns, so a row is free
        again when its group is done."""
        if self.encode_slot is None or n < 2:
            return None
        return np.empty((n, self.encode_slot), dtype=np.uint8)

    def _write_groups(self, updates: dict[Chunk, Any]) -> list[dict[Chunk, Any]]:
        """Split updates into groups of whole stored objects, each of at most WRITE_GROUP_BYTES."""
        chunk_bytes = self.dtype.itemsize
        for n in self.grid.chunks:
            chunk_bytes *= n
        max_objects = (
            self.LOCKED_OBJECTS_PER_GROUP if getattr(self.store, "concurrent_writes", "") == "locked" else 0
        )
        if len(updates) * chunk_bytes <= WRITE_GROUP_BYTES and (
            not max_objects or len(updates) <= max_objects
        ):
            return [updates]
        objects = self.group_by_shard(list(updates)) if self.sharded else {c: [c] for c in updates}
        groups: list[dict[Chunk, Any]] = []
        current: dict[Chunk, Any] = {}
        n_objects = 0
        for chunks in objects.values():
            if current and (
                (len(current) + len(chunks)) * chunk_bytes > WRITE_GROUP_BYTES
                or (max_objects and n_objects >= max_objects)
            ):
                groups.append(current)
                current = {}
                n_objects = 0
            n_objects += 1
            for c in chunks:
                current[c] = updates[c]
        if current:
            groups.append(current)
        return groups

    def _new_bytes(
        self, chunk: Chunk, update: Any, old: tuple[str, Any] | None, out: np.ndarray | None = None
    ) -> Any:
        if update is None:
            return None
        if isinstance(update, Merge):
            if old is None:
                base = np.full(self._clipped(chunk), self.fill_value, dtype=self.dtype)
            else:
                base = self.decode_chunk(old[1], chunk, old[0], byte_range=_byte_range(old))
                if not base.flags.writeable or base.base is not None:
                    base = base.copy()
            update = self._coerce(chunk, update.fn(base))
        return self.encode_chunk(update, chunk, out=out)

    def _encode_items(
        self, items: list[tuple[Chunk, Any]], olds: list[tuple[str, Any] | None], arena: np.ndarray | None
    ) -> list[Any]:
        """The new bytes of each ``(chunk, update)`` (see :meth:`_new_bytes`) on the pool: whole arrays
        through the native kernel where it applies, everything else (and whatever it declines) here."""
        new, rows = kernel.encode(self, items, arena)
        todo = [i for i, b in enumerate(new) if b is kernel.TODO]
        done = pmap(
            lambda i: self._new_bytes(*items[i], olds[i], None if arena is None else arena[rows[i]]), todo
        )
        for i, b in zip(todo, done, strict=True):
            new[i] = b
        return new

    def _apply_unsharded(
        self, updates: dict[Chunk, Any], arena: np.ndarray | None = None
    ) -> dict[Chunk, bool]:
        merges = [c for c, u in updates.items() if isinstance(u, Merge)]
        deletes = [c for c, u in updates.items() if u is None]
        old = self.read_raw(merges) if merges else {}
        items = list(updates.items())
        new = self._encode_items(items, [old.get(c) for c, _ in items], arena)
        to_set = [(self.key(c), b) for (c, _), b in zip(items, new, strict=True) if b is not None]
        to_delete = [self.key(c) for (c, u), b in zip(items, new, strict=True) if b is None]
        if to_set:
            self.store.set_many(to_set)
        existed: dict[Chunk, bool] = {}
        if to_delete:
            flags = self.store.delete_many(to_delete)
            gone = dict(zip(to_delete, flags, strict=True))
            existed = {c: gone.get(self.key(c), False) for c in deletes}
        return existed

    def _apply_sharded(self, updates: dict[Chunk, Any], arena: np.ndarray | None = None) -> dict[Chunk, bool]:
        top = self.grid.nlevels - 1
        groups = self.group_by_shard(list(updates))
        # a shard needs its old bytes unless every in-bounds chunk of it is replaced outright
        need_old = [
            pos
            for pos, group in groups.items()
            if len(group) < self.grid.n_chunks_in(pos, top)
            or any(updates[c] is None or isinstance(updates[c], Merge) for c in group)
        ]
        keys = {pos: self.key(pos) for pos in groups}
        datas = self.store.get_ranges([(keys[p], None, None) for p in need_old]) if need_old else []
        old_objects = {
            p: (None if d is None else memoryview(d)) for p, d in zip(need_old, datas, strict=True)
        }
        # old raw bytes of every updated chunk (zero-copy slices of the old shards)
        old_raw: dict[Chunk, tuple[str, Any] | None] = {}
        for pos, group in groups.items():
            mem = old_objects.get(pos)
            found = self._split_down(mem, top, pos, set(group), keys[pos]) if mem is not None else {}
            for c in group:
                old_raw[c] = (keys[pos], found[c]) if c in found else None
        items = list(updates.items())
        encoded = self._encode_items(items, [old_raw[c] for c, _ in items], arena)
        new = dict(zip(updates, encoded, strict=True))
        to_set, to_delete = [], []
        for pos, group in groups.items():
            # the outermost level as parts, which the store writes back to back (no joined copy)
            shard = self._build(
                top, pos, old_objects.get(pos), {c: new[c] for c in group}, keys[pos], parts=True
            )
            if shard is not None:
                to_set.append((keys[pos], shard))
            elif pos not in old_objects or old_objects[pos] is not None:
                to_delete.append(keys[pos])
        try:
            if to_set:
                try:
                    self.store.set_many(to_set)
                except WriteConflictError as e:  # the deletes were not tried: they go again too
                    raise WriteConflictError(e.message, keys=[*e.keys, *to_delete]) from e
            if to_delete:
                self.store.delete_many(to_delete)
        finally:
            self.index_cache.forget(keys.values())
        return {c: old_raw[c] is not None for c in updates}

    def _split_down(
        self, mem: memoryview, level: int, pos: Chunk, chunks: set[Chunk], key: str
    ) -> dict[Chunk, memoryview]:
        """Raw bytes of the stored ``chunks`` (level-0 coords) inside the level-``level`` block ``mem``."""
        sc = self.sharding[level]
        assert sc is not None
        cps = self.grid.per_block(level)
        try:
            entries = sc.split(mem, cps)
        except AltarrError as e:
            raise e.with_context(key=key) from e
        by_child: dict[Chunk, set[Chunk]] = {}
        for c in chunks:
            by_child.setdefault(self.grid.relative(c, level - 1, level), set()).add(c)
        found: dict[Chunk, memoryview] = {}
        for rel, group in by_child.items():
            entry = entries[self.grid.flat_index(rel, level)]
            if entry is None:
                continue
            if level == 1:
                found[next(iter(group))] = entry
            else:
                child = self.grid.position(next(iter(group)), level - 1)
                found.update(self._split_down(entry, level - 1, child, group, key))
        return found

    def _build(
        self,
        level: int,
        pos: Chunk,
        old: memoryview | None,
        new: dict[Chunk, Any],
        key: str,
        parts: bool = False,
    ) -> Any:
        """Assemble the level-``level`` block at ``pos``: old entries carried over as bytes, ``new``
        (level-0 chunk -> encoded bytes or None) applied. ``None`` when the block ends up empty; with
        ``parts`` the block is returned as the list of its parts (see ``ShardingCodec.assemble_parts``)."""
        sc = self.sharding[level]
        assert sc is not None
        cps = self.grid.per_block(level)
        n = 1
        for k in cps:
            n *= k
        if old is not None:
            try:
                entries: list[Any] = list(sc.split(old, cps))
            except AltarrError as e:
                raise e.with_context(key=key) from e
        else:
            entries = [None] * n
        by_child: dict[Chunk, dict[Chunk, Any]] = {}
        for c, b in new.items():
            by_child.setdefault(self.grid.relative(c, level - 1, level), {})[c] = b
        for rel, group in by_child.items():
            i = self.grid.flat_index(rel, level)
            if level == 1:
                entries[i] = next(iter(group.values()))
            else:
                child = self.grid.position(next(iter(group)), level - 1)
                entries[i] = self._build(level - 1, child, entries[i], group, key)
        return sc.assemble_parts(entries, cps) if parts else sc.assemble(entries, cps)
