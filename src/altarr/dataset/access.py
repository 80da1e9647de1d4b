"""Batched chunk access for one array: :class:`DatasetAccess`, the façade the dataset talks to, composing
layout, chunk codec, index cache, reader and writer (docs/architecture.md, "The dataset engine"). Here
requests are validated, reads decoded on the pool and results returned in request order.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from .._threads import pmap
from ..errors import CodecError, GridError
from ..formats.base import DatasetSpec
from . import kernel
from .chunk_codec import ChunkCodec
from .grid import NestedGrid
from .index_cache import IndexCache
from .layout import Chunk, ShardLayout
from .shard_read import RESTART, ChunkRange, ChunkSlot, ShardReader, Slots
from .shard_write import Merge, ShardWriter

if TYPE_CHECKING:
    from ..selection.regions import Geometry
    from ..stores.base import Store

__all__ = ["ChunkRange", "DatasetAccess", "IndexCache", "Merge", "DECODE_ATTEMPTS", "DECODE_RETRY_SECONDS"]

_F = TypeVar("_F", bound=Callable[..., Any])

#: Where reads are not checked against one version of a shard, chunks that fail to decode while their
#: shard's version moves are read again until both these many reads and seconds have passed: a count alone
#: is outrun by a writer on a loaded machine (each read leaves it a wider window), a time alone by a slow read.
DECODE_ATTEMPTS = 4
DECODE_RETRY_SECONDS = 10.0


def _retried(read: _F) -> _F:
    """``read``, again after a decode failure while the failing shard's version (``store.stat``) moves,
    where a call's reads are not checked against one version of each shard (reads that report none:
    fsspec; or the index cache off): a shard replaced between the reads of its index and of its chunks
    gives bytes the index does not describe. A failure again at the version after the last is damage."""

    @functools.wraps(read)
    def retried(self: DatasetAccess, *args: Any, **kwargs: Any) -> Any:
        if self.store.reports_versions and self.index_cache.enabled:
            return read(self, *args, **kwargs)
        seen: dict[str, Any] = {}  # the version of each failing shard after its failure
        attempt, end = 1, time.monotonic() + DECODE_RETRY_SECONDS
        while True:
            try:
                return read(self, *args, **kwargs)
            except CodecError as e:
                if (key := e.key) is None:
                    raise
                if attempt >= DECODE_ATTEMPTS and time.monotonic() > end:
                    e.add_note(f"altarr: read {attempt} times while its shard kept changing")
                    raise
                st = self.store.stat(key)
                now = None if st is None else st[1]
                if key in seen and seen[key] == now:
                    raise  # failed again at the same version: the shard is damaged
                seen[key] = now
                self.index_cache.forget([key])
                attempt += 1

    return cast(_F, retried)


class DatasetAccess:
    """Batched, shard-grouped chunk I/O for one array (see the module docstring): ``layout`` (keys,
    grouping, ``grid``), ``codec``, ``index_cache``, ``reader`` and ``writer`` are its parts."""

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
        self.layout = ShardLayout.of(spec, prefix)
        self.codec = ChunkCodec(self.layout, spec.fill_value, write_empty_chunks=write_empty_chunks)
        self.index_cache = IndexCache(store, recheck=recheck)
        self.reader = ShardReader(store, self.layout, self.index_cache)
        self.writer = ShardWriter(store, self.layout, self.codec, self.reader, self.index_cache)
        self.grid: NestedGrid = self.layout.grid

    # --- requests --------------------------------------------------------------------------------------
    def _rows(self, coords: Sequence[Sequence[int]] | np.ndarray) -> dict[Chunk, list[int]]:
        """Each distinct valid chunk (first-seen order) with the request rows asking for it."""
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

    # --- reads -----------------------------------------------------------------------------------------
    @_retried
    def read_chunks(
        self, coords: Sequence[Sequence[int]] | np.ndarray, *, versions: dict[str, Any] | None = None
    ) -> list[np.ndarray | None]:
        """See :meth:`Dataset.read_chunks <altarr.Dataset.read_chunks>`."""
        rows = self._rows(coords)
        if not rows:
            return []
        raw = self.reader.read_raw(list(rows), versions=versions)
        # a chunk asked for k times is returned k times, each slot its own array: the k - 1 copies are
        # made in the chunk's decode task, so they run on the pool too (their page faults cost as much as
        # the decode of a fast codec)

        def decode(item: tuple[Chunk, ChunkSlot | None]) -> list[np.ndarray] | None:
            chunk, got = item
            if got is None:
                return None
            a = self.codec.decode_chunk(got.data, chunk, got.key, byte_range=got.span)
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
        """See :meth:`Dataset.visit_chunks <altarr.Dataset.visit_chunks>`; ``versions`` as for
        :meth:`read_chunks`."""
        rows = self._rows(coords)

        def each_row(chunk: Chunk, a: np.ndarray) -> None:
            for i in rows[chunk]:
                fn(i, a)

        self.visit_distinct(list(rows), each_row, versions=versions)

    @_retried
    def visit_distinct(
        self,
        chunks: list[Chunk],
        fn: Callable[[Chunk, np.ndarray], Any],
        *,
        versions: dict[str, Any] | None = None,
        into: tuple[np.ndarray, Geometry] | None = None,
    ) -> None:
        """:meth:`visit_chunks` of distinct, valid ``chunks``: ``fn(chunk, values)``. ``into=(out,
        geometry)`` (region reads, :meth:`RegionPlan.geometry <altarr.selection.regions.RegionPlan.geometry>`;
        ``fn`` copies each chunk's piece into ``out``): the native kernel decodes the chunks it can straight
        into ``out`` first, ``fn`` does the rest."""
        if not chunks:
            return

        def one(chunk: Chunk) -> None:
            got = raw[chunk]
            if got is None:
                a = np.broadcast_to(self.codec.fill_array, self.layout.clipped(chunk))
            else:
                # decoded into this thread's scratch buffer, then copied out by ``fn`` (faster than into a
                # fresh, page-faulting result: benchmarks/README.md, "Numbers moved out of the code")
                a = self.codec.decode_chunk(
                    ShardReader.slot_bytes(got.key, got.data),
                    chunk,
                    got.key,
                    scratch=True,
                    byte_range=got.span,
                )
                a = a.view()
                a.flags.writeable = False
            fn(chunk, a)

        with self.reader.open_readers() as readers:  # local files: each shard opened once for the call
            if into is None and readers is None and self.store.answers_as_ready:
                raw: Slots = {}  # each answer's chunks visited on the pool while the next comes in
                failed: list[Exception] = []
                for part in self.reader.read_raw_as_ready(chunks, versions=versions):
                    if part is RESTART:  # every chunk comes again: the last visit holds
                        failed.clear()
                        continue
                    raw.update(part)
                    try:
                        pmap(one, list(part))
                    except Exception as e:  # re-raised once every part is visited, as pmap does
                        failed.append(e)
                if failed:
                    raise failed[0]
                return
            if into is not None and readers is None and self.store.answers_as_ready:
                raw, chunks = self._decode_as_ready(chunks, versions, into)
            else:
                raw = self.reader.read_raw(chunks, readers=readers, versions=versions)
                if into is not None:
                    chunks = kernel.read_into(self.codec.native, raw, chunks, *into)
            pmap(one, chunks)

    def _decode_as_ready(
        self,
        chunks: list[Chunk],
        versions: dict[str, Any] | None,
        into: tuple[np.ndarray, Geometry],
    ) -> tuple[Slots, list[Chunk]]:
        """The kernel's part of a region read on a store that hands its answers over as they arrive, each
        decoded into ``out`` on the pool while the next comes in (benchmarks/README.md, "Numbers moved
        out of the code"); returns the read's slots and the chunks left to the pure-Python path."""
        raw: Slots = {}
        decoder = kernel.ReadInto(self.codec.native, *into)
        try:
            for part in self.reader.read_raw_as_ready(chunks, versions=versions, on_sent=decoder.touch):
                if part is RESTART:  # a shard changed: what was decoded is void, the read starts over
                    decoder.finish()
                    raw.clear()
                    continue
                raw.update(part)
                decoder.add(part)
        except BaseException:
            with contextlib.suppress(Exception):
                decoder.finish()  # no decode may still write into ``out`` once the call has failed
            raise
        return raw, decoder.finish()

    # --- writes ----------------------------------------------------------------------------------------
    def write_chunks(self, coords: Sequence[Sequence[int]] | np.ndarray, values: Sequence[Any]) -> None:
        """Write whole chunks (arrays of the clipped chunk shape). A later duplicate wins."""
        wanted, _ = self._unique(coords)
        if len(values) != len(wanted):
            raise GridError(f"write_chunks got {len(wanted)} coordinates but {len(values)} arrays")
        updates: dict[Chunk, np.ndarray | Merge | None] = {
            c: self.codec.coerce(c, v) for c, v in zip(wanted, values, strict=True)
        }
        self.writer.apply(updates)

    def delete_chunks(self, coords: Sequence[Sequence[int]] | np.ndarray) -> list[bool]:
        """Delete chunks; returns, per request, whether the chunk was stored."""
        wanted, unique = self._unique(coords)
        existed = self.writer.apply(dict.fromkeys(unique))
        seen: set[Chunk] = set()
        out = []
        for c in wanted:
            out.append(existed[c] and c not in seen)  # the writer answers for every deleted chunk
            seen.add(c)
        return out
