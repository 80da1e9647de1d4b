"""The read side: the encoded bytes of a batch of chunks, one batched store round per nesting level
(the steps of a read: docs/architecture.md, "The dataset engine").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, TypeAlias, cast

import numpy as np

from ..errors import AltarrError, CorruptShardError
from ..stores.base import ObjectReader, OpensReaders
from ..stores.ranges import WHOLE, ByteRequest, Range, Suffix, legacy_bounds
from .chunk_codec import scratch_bytes
from .index_cache import MISSING, IndexCache, ShardChanged, check_versions
from .layout import Chunk, ShardLayout

if TYPE_CHECKING:
    from ..stores.base import Store

__all__ = [
    "READ_ATTEMPTS",
    "RESTART",
    "WHOLE_SHARD_FRACTION",
    "ChunkRange",
    "ChunkSlot",
    "ReadPart",
    "ShardReader",
    "Slots",
]

#: An absent entry's offset and length, as a Python int (compared with the index's ``tolist()``)
_EMPTY = 2**64 - 1

#: Read a shard whole when the requested chunks are at least this fraction of its in-bounds chunks.
WHOLE_SHARD_FRACTION = 0.5

#: How often a batched read is redone when another writer replaces a shard during it, before it gives up.
READ_ATTEMPTS = 5


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


@dataclass(frozen=True)
class ChunkRange:
    """Where a chunk's bytes are in its shard, for a read deferred to the decode task, and the open file
    (a :class:`~altarr.stores.local_files.FileReader`) to read them from."""

    chunk: Chunk
    start: int
    length: int
    reader: ObjectReader


class ChunkSlot(NamedTuple):
    """One stored chunk's encoded bytes as a read found them (:meth:`ShardReader.read_raw`)."""

    #: the store key of the object that holds them (the chunk's own, or its outermost shard's)
    key: str
    #: the bytes: a view of the store's answer, or a :class:`ChunkRange` read later by
    #: :meth:`ShardReader.slot_bytes` (with open readers)
    data: bytes | memoryview | ChunkRange
    #: ``(start, stop)`` of the bytes in that object, where the read knows it
    span: tuple[int, int] | None = None


#: The slots of a read: per requested chunk, its :class:`ChunkSlot`, or ``None`` where it is not stored.
Slots: TypeAlias = dict[Chunk, ChunkSlot | None]


class _Restart(Enum):
    RESTART = "restart"


#: A part of :meth:`ShardReader.read_raw_as_ready` saying that another writer replaced a shard during the
#: read: every part before it is void and the read starts over.
RESTART: Final = _Restart.RESTART

#: One part of :meth:`ShardReader.read_raw_as_ready`: some chunks' slots, or :data:`RESTART`.
ReadPart: TypeAlias = Mapping[Chunk, ChunkSlot | None] | Literal[_Restart.RESTART]


@dataclass(eq=False)
class _Node:
    """A block at some level whose bytes are either in memory or at ``[start, start+length)`` of ``key``."""

    key: str
    pos: Chunk
    chunks: list[Chunk]
    start: int = 0
    length: int | None = None  # None: the whole object, length unknown
    mem: memoryview | None = None

    @property
    def size(self) -> int:
        """``length`` of a node found in its parent's index (every chunk's node), where it is known."""
        assert self.length is not None, "a node read whole has no length yet"
        return self.length


def _span(n: _Node) -> tuple[int, int]:
    return (n.start, n.start + n.size)


#: Up to this many children of one node are looked up in its index on Python integers, more with one
#: NumPy fancy index (see :func:`_entries`): its six NumPy calls cost ~20 us, a twentieth of a local
#: one-chunk read (benchmarks/README.md, "bench_engine against c9fd1c8, every line").
SCALAR_LOOKUPS = 16


def _entries(index: Any, positions: Iterable[Chunk], cps: tuple[int, ...]) -> list[Any]:
    """The ``(offset, nbytes)`` index entries, as Python ints, of the children at grid ``positions``
    (taken modulo ``cps``, the children per node) of an index: up to :data:`SCALAR_LOOKUPS` of them on
    Python ints, more with one NumPy fancy index."""
    positions = list(positions)
    if len(positions) <= SCALAR_LOOKUPS:
        words = memoryview(index).cast("B").cast("Q")
        found: list[Any] = []
        for pos in positions:
            flat = 0
            for p, c in zip(pos, cps, strict=True):
                flat = flat * c + p % c
            found.append((words[2 * flat], words[2 * flat + 1]))
        return found
    where = np.array(positions, dtype=np.intp) % np.array(cps, dtype=np.intp)
    pairs = np.frombuffer(index, dtype=np.uint64).reshape(-1, 2)
    entries: list[Any] = pairs[np.ravel_multi_index(tuple(where.T), cps)].tolist()
    return entries


def _slots(nodes: list[_Node]) -> dict[Chunk, ChunkSlot]:
    """The :meth:`ShardReader.read_raw` slots of chunk nodes whose bytes are in memory (made by
    ``tuple.__new__``: a NamedTuple's own ``__new__`` runs Python code, twice the cost of this dict)."""
    new = tuple.__new__
    return {n.pos: new(ChunkSlot, (n.key, n.mem, (n.start, n.start + n.size))) for n in nodes}


class ShardReader:
    """Reads the encoded bytes of chunks from ``store`` (see the module docstring)."""

    def __init__(self, store: Store, layout: ShardLayout, index_cache: IndexCache) -> None:
        self.store = store
        self.layout = layout
        self.grid = layout.grid
        self.index_cache = index_cache

    def read_raw(
        self,
        chunks: Sequence[Chunk],
        *,
        readers: dict[str, Any] | None = None,
        versions: dict[str, Any] | None = None,
    ) -> Slots:
        """The encoded bytes of each chunk (a :class:`ChunkSlot`), or ``None`` where it is not stored.

        ``readers`` (a dict from :meth:`open_readers`): each shard is opened once for the call (its
        version from the open file), shards are never read whole, and the chunks' slots hold a
        :class:`ChunkRange` that :meth:`slot_bytes` reads inside the decode task. ``versions``: a dict
        that receives the version token of every shard the call read."""
        if not self.layout.sharded:
            keys = [self.layout.key(c) for c in chunks]
            datas = self.store.get_ranges([(k, WHOLE) for k in keys])
            return {
                c: (None if d is None else ChunkSlot(k, d, (0, len(d))))
                for c, k, d in zip(chunks, keys, datas, strict=True)
            }
        result: Slots = dict.fromkeys(chunks)
        for part in self._attempts(chunks, readers, versions, as_ready=False):
            if part is not RESTART:  # one part: _read_sharded yields after every check when not as_ready
                result.update(part)
        return result

    def read_raw_as_ready(
        self,
        chunks: Sequence[Chunk],
        *,
        versions: dict[str, Any] | None = None,
        on_sent: Callable[[], None] | None = None,
    ) -> Iterator[ReadPart]:
        """:meth:`read_raw` (without open readers) in parts as the store's answers arrive; together the
        parts cover every chunk once (one part on stores without
        :attr:`~altarr.stores.base.Store.answers_as_ready` and for unsharded arrays).

        A :data:`RESTART` part voids every part before it: the read starts over. ``versions`` is filled
        once the iterator is exhausted; ``on_sent()`` is called each time a batch of requests has been
        handed to the store."""
        if not self.layout.sharded or not self.store.answers_as_ready:
            yield self.read_raw(chunks, versions=versions)
            return
        yield from self._attempts(chunks, None, versions, as_ready=True, on_sent=on_sent)

    def _attempts(
        self,
        chunks: Sequence[Chunk],
        readers: dict[str, Any] | None,
        versions: dict[str, Any] | None,
        *,
        as_ready: bool,
        on_sent: Callable[[], None] | None = None,
    ) -> Iterator[ReadPart]:
        """:meth:`_read_sharded`'s parts, then one of the chunks it found no bytes for (missing shards,
        empty entries); a shard replaced between its index read and its chunks' reads makes the read
        start over (a :data:`RESTART` part first), at most :data:`READ_ATTEMPTS` times."""
        changed: set[str] = set()
        for attempt in range(READ_ATTEMPTS):
            if attempt:
                yield RESTART
            try:
                got: set[Chunk] = set()
                parts = self._read_sharded(chunks, readers, seen=versions, as_ready=as_ready, on_sent=on_sent)
                for part in parts:
                    got.update(part)
                    yield part
                absent = {c: None for c in chunks if c not in got}
                if absent:
                    yield absent
                return
            except ShardChanged as e:
                self.index_cache.forget(e.keys)
                changed = e.keys
        raise CorruptShardError(
            f"the shard was replaced by another writer during each of {READ_ATTEMPTS} attempts to read it",
            key=min(changed),  # the one that changed in the last attempt (not the call's first shard)
        )

    def _read_sharded(
        self,
        chunks: Sequence[Chunk],
        readers: dict[str, Any] | None,
        *,
        seen: dict[str, Any] | None = None,
        as_ready: bool = False,
        on_sent: Callable[[], None] | None = None,
    ) -> Iterator[dict[Chunk, ChunkSlot]]:
        """The slots of the stored chunks, in parts: one at the end, or with ``as_ready`` one per store
        answer of the last two rounds (the chunks of a shard read whole as soon as it is in, those read
        by range as their answer comes)."""
        top = self.grid.nlevels - 1
        groups = self.layout.group_by_shard(chunks)
        nodes = [_Node(self.layout.key(pos), pos, group) for pos, group in groups.items()]
        tokens: dict[str, Any] = {}  # object versions seen in this call (for the index cache)
        if readers is not None:
            for n in nodes:
                if n.key not in readers:
                    readers[n.key] = cast(OpensReaders, self.store).open_reader(n.key)
                reader = readers[n.key]
                if reader is None:
                    tokens[n.key] = MISSING
                else:
                    tokens[n.key] = reader.version
            nodes = [n for n in nodes if readers[n.key] is not None]  # a missing shard: chunks stay None
        for level in range(top, 1, -1):
            nodes = [c for part in self._descend(nodes, level, tokens, readers) for c in part]
        # level 1: the chunks' own nodes; those read whole with their shard are done as they arrive
        pending: list[_Node] = []
        done: list[_Node] = []
        for part in self._descend(nodes, 1, tokens, readers, as_ready=as_ready, on_sent=on_sent):
            for n in part:
                (done if n.mem is not None else pending).append(n)
            if as_ready and done and not pending:
                yield _slots(done)
                done = []
        if seen is not None:  # the version of every shard this call reads (None: the store tells none)
            for pos in groups:
                key = self.layout.key(pos)
                seen[key] = tokens.get(key)
        if pending and readers is not None:  # each range read by its decode task, from the open file
            yield _slots(done) | {
                n.pos: ChunkSlot(n.key, ChunkRange(n.pos, n.start, n.size, readers[n.key]), _span(n))
                for n in pending
            }
            return
        if pending:
            requests = [(n.key, Range(*_span(n))) for n in pending]
            answers = self._answers(requests, None, as_ready, on_sent)
            if as_ready and done:  # the chunks of shards read whole decode while these ranges are out
                yield _slots(done)
                done = []
            for answered in answers:
                ns = [pending[i] for i, _, _, _ in answered]
                check_versions(tokens, [n.key for n in ns], [v for _, _, v, _ in answered])
                if self.index_cache.optimistic:
                    gone = {n.key for n, (_, d, _, _) in zip(ns, answered, strict=True) if d is None}
                    if gone:  # a shard deleted since its index was cached: read the index again
                        raise ShardChanged(gone)
                for n, (_, d, _, _) in zip(ns, answered, strict=True):
                    n.mem = _checked_range(n.key, n.pos, n.start, n.size, d)
                done += ns
                if as_ready:
                    yield _slots(done)
                    done = []
        if done:
            yield _slots(done)

    @contextmanager
    def open_readers(self) -> Iterator[dict[str, Any] | None]:
        """A dict for :meth:`read_raw`'s ``readers`` that closes the files it collects on exit; ``None``
        (read in batched calls instead) for unsharded arrays and stores without ``open_reader``."""
        if not self.layout.sharded or not isinstance(self.store, OpensReaders):
            yield None
            return
        readers: dict[str, Any] = {}
        try:
            yield readers
        finally:
            for r in readers.values():
                if r is not None:
                    r.close()

    @staticmethod
    def slot_bytes(key: str, data: bytes | memoryview | ChunkRange) -> bytes | memoryview:
        """The bytes of a :meth:`read_raw` slot: a :class:`ChunkRange` is read now into this thread's
        reusable input buffer (valid until the thread reads again)."""
        if not isinstance(data, ChunkRange):
            return data
        buf = scratch_bytes(data.length)
        got = data.reader.read_into(data.start, buf)
        return _checked_range(key, data.chunk, data.start, data.length, buf[:got])

    def _answers(
        self,
        requests: list[tuple[str, Any]],
        readers: dict[str, Any] | None,
        as_ready: bool = False,
        on_sent: Callable[[], None] | None = None,
    ) -> Iterator[list[tuple[int, Any, Any, int | None]]]:
        """Ranged reads answered as ``(request number, bytes, version, object size)``: from each key's
        open reader when the call has readers, else sent to the store now (then ``on_sent()``) and
        handed over all at once or (``as_ready``) per store answer; versions only where the index cache
        is on."""
        if readers:
            got: list[tuple[int, Any, Any, int | None]] = [
                (i, readers[k].read(req), readers[k].version, readers[k].size)
                for i, (k, req) in enumerate(requests)
            ]
            return iter([got])
        if as_ready:
            answers = self.store.get_ranges_as_ready(requests)
        else:
            sized = self.store.get_ranges_sized(requests)
            answers = iter([list(zip(range(len(requests)), *sized, strict=True))])
        if on_sent is not None:
            on_sent()
        if self.index_cache.enabled:
            return answers
        return ([(i, d, None, z) for i, d, _, z in answered] for answered in answers)

    def _index_error(self, e: AltarrError, n: _Node, level: int) -> AltarrError:
        """``e`` from the index of node ``n`` naming its key and, as ``chunk``, dataset chunk coordinates
        (the first chunk of the inner block the codec named, else the call's first chunk of ``n``)."""
        if e.chunk is not None and len(e.chunk) == len(n.pos):
            per = self.grid.per_block(level)
            inner = tuple(p * k + w for p, k, w in zip(n.pos, per, e.chunk, strict=True))
            first = self.grid.first_chunk(inner, level - 1)
            return type(e)(e.message, **{**e._context(), "chunk": first}).with_context(key=n.key)
        return e.with_context(key=n.key, chunk=n.chunks[0])

    def _descend(
        self,
        nodes: list[_Node],
        level: int,
        tokens: dict[str, Any],
        readers: dict[str, Any] | None = None,
        *,
        as_ready: bool = False,
        on_sent: Callable[[], None] | None = None,
    ) -> Iterator[list[_Node]]:
        """Read the index of every level-``level`` node (or the whole node) and yield its children: first
        those whose index needs no read, then those of the nodes read, all at once or (``as_ready``) one
        part per store answer. Every entry is checked before it leads to a read."""
        indexed, requests, targets = self._index_reads(nodes, level, tokens, readers)
        if indexed:
            yield self._children(indexed, level)
        if not requests:
            return
        # where an index is read, its children lead to requests sent once every answer is in: the children
        # of nodes read whole wait with them, to be decoded while those requests are out (_read_sharded)
        each = all(whole for _, whole in targets)
        held: list[_Node] = []
        for answered in self._answers(requests, readers, as_ready, on_sent):
            check_versions(tokens, [targets[i][0].key for i, *_ in answered], [a[2] for a in answered])
            indexed = []
            for i, d, version, object_size in answered:
                (n, whole), rng = targets[i], requests[i][1]
                tokens.setdefault(n.key, version)
                index = self._answered(n, level, whole, rng, d, version, tokens, object_size)
                if index is not None:
                    indexed.append((n, index))
            held += self._children(indexed, level)
            if each:
                yield held
                held = []
        if held:
            yield held

    def _index_reads(
        self, nodes: list[_Node], level: int, tokens: dict[str, Any], readers: dict[str, Any] | None
    ) -> tuple[list[tuple[_Node, Any]], list[tuple[str, Any]], list[tuple[_Node, bool]]]:
        """Every node's index where it needs no read (in memory or cached), and for the others the
        request that reads it or the whole node (the whole-shard rule), with ``(node, whole)`` each."""
        sc, cps = self.layout.level_codec(level)
        n_idx = sc.index_nbytes(cps)
        indexed: list[tuple[_Node, Any]] = []  # index words (ShardingCodec.index_words)
        requests, targets = [], []
        for n in nodes:
            if n.mem is not None:
                indexed.append((n, self._parse_index(n, level, tokens.get(n.key))))
                continue
            # a cached index comes first, also for a shard mostly wanted (a warm read: one round); with
            # open files a shard is never read whole (benchmarks/README.md: "Numbers moved out of the code")
            cached = self.index_cache.get(n.key, level, n.start, tokens)
            if cached is not None:
                indexed.append((n, cached))
                continue
            whole = readers is None and len(n.chunks) >= WHOLE_SHARD_FRACTION * self.grid.n_chunks_in(
                n.pos, level
            )
            rng: ByteRequest
            if whole:
                rng = WHOLE if n.length is None else Range(n.start, n.start + n.length)
            elif n.length is None:  # the index of a whole object: at its start or its end
                rng = Range(0, n_idx) if sc.index_location == "start" else Suffix(n_idx)
            elif sc.index_location == "start":
                rng = Range(n.start, n.start + n_idx)
            else:
                rng = Range(n.start + n.length - n_idx, n.start + n.length)
            requests.append((n.key, rng))
            targets.append((n, whole))
        return indexed, requests, targets

    def _answered(
        self,
        n: _Node,
        level: int,
        whole: bool,
        rng: Any,
        d: Any,
        version: Any,
        tokens: dict[str, Any],
        object_size: int | None,
    ) -> Any:
        """Node ``n``'s index from the answer ``d`` (index or whole read), checked and cached; ``None``
        for a shard that is not stored."""
        if d is None:
            if n.length is None:  # a missing shard: all its chunks are absent
                tokens[n.key] = MISSING
                return None
            if self.index_cache.optimistic:  # deleted since its outer index was cached: read that again
                raise ShardChanged({n.key})
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
            return self._parse_index(n, level, tokens.get(n.key))
        sc, cps = self.layout.level_codec(level)
        n_idx = sc.index_nbytes(cps)
        if len(d) != n_idx:
            raise CorruptShardError(
                f"shard is truncated: its index needs {n_idx} bytes, the object gave {len(d)}",
                key=n.key,
                byte_range=legacy_bounds(rng),
            )
        # a node that is a whole object has the size its answer reported
        return self._parse_index(n, level, version, d, n.length if n.length is not None else object_size)

    def _parse_index(
        self, n: _Node, level: int, version: Any, d: Any = None, object_size: int | None = None
    ) -> Any:
        """The index of node ``n``, from its bytes in memory or (``d``) its index bytes as read, checked
        and cached."""
        sc, cps = self.layout.level_codec(level)
        max_child = self.layout.max_block_bytes[level - 1]
        try:
            if d is not None:
                index = sc.index_words(d, cps, object_size=object_size, max_nbytes=max_child)
            else:
                assert n.mem is not None
                index = sc.read_index(n.mem, cps, max_nbytes=max_child)
        except AltarrError as e:
            raise self._index_error(e, n, level) from e
        self.index_cache.put(n.key, level, n.start, version, index)
        return index

    def _children(self, indexed: list[tuple[_Node, Any]], level: int) -> list[_Node]:
        """The stored children of each node, with their byte ranges (and bytes, for a node in memory)."""
        cps = self.grid.per_block(level)
        children: list[_Node] = []
        for n, index in indexed:
            blocks = self.grid.group_by_block(n.chunks, level - 1)
            for (child_pos, group), (off, nb) in zip(
                blocks.items(), _entries(index, blocks, cps), strict=True
            ):
                if off == _EMPTY or nb == _EMPTY:
                    continue  # absent: its chunks stay None
                mem = None if n.mem is None else n.mem[off : off + nb]
                children.append(_Node(n.key, child_pos, group, n.start + off, nb, mem))
        return children
