"""The write side: :meth:`ShardWriter.apply` applies ``{chunk: update}`` (an array replaces a chunk,
``None`` deletes it, a :class:`Merge` edits it) as one read-modify-write per touched stored object, in
groups of whole objects under their locks (docs/architecture.md, "The dataset engine": a write).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._threads import pmap
from ..errors import WriteConflictError
from ..stores.ranges import WHOLE
from . import kernel
from .chunk_codec import ChunkCodec, check_chunk_room
from .index_cache import IndexCache
from .layout import Chunk, ShardLayout
from .locks import run_exclusive
from .shard_read import ChunkSlot, ShardReader

if TYPE_CHECKING:
    from ..selection import SelectionPlan
    from ..stores.base import Store

__all__ = ["WRITE_GROUP_BYTES", "Merge", "ShardWriter", "chain", "paste", "paste_where", "scatter"]

#: A write is applied in groups of whole shards holding at most this many bytes of decoded values, which
#: bounds the encoded bytes held in memory at once.
WRITE_GROUP_BYTES = 64 << 20


@dataclass
class Merge:
    """A partial update of one chunk: ``fn(old)`` gets the chunk's current values (a writable array of the
    clipped chunk shape, fill-value filled if the chunk is not stored) and returns the new values."""

    fn: Callable[[np.ndarray], np.ndarray]


# --- what a Merge's ``fn`` is: ``functools.partial`` of one of these, the chunk's values last ---------------
def paste(src: tuple[slice, ...], values: np.ndarray, old: np.ndarray) -> np.ndarray:
    """``values`` written into ``old[src]``."""
    old[src] = values
    return old


def paste_where(mask: np.ndarray, values: np.ndarray, old: np.ndarray) -> np.ndarray:
    """``values`` written into ``old`` where ``mask`` is true (a buffered chunk written in parts whose
    union is no box)."""
    np.copyto(old, values, where=mask)
    return old


def scatter(plan: SelectionPlan, row: int, work: np.ndarray, old: np.ndarray) -> np.ndarray:
    """Row ``row`` of a planned selection's values (``work``) written into the chunk."""
    plan.scatter(work, row, old)
    return old


def chain(fns: list[Callable[[np.ndarray], np.ndarray]], old: np.ndarray) -> np.ndarray:
    """Several edits of one chunk applied in order (regions of a batch that overlap)."""
    for fn in fns:
        old = fn(old)
    return old


class ShardWriter:
    """Writes chunk updates to ``store`` (see the module docstring), dropping the cached indexes of the
    shards it writes."""

    def __init__(
        self,
        store: Store,
        layout: ShardLayout,
        codec: ChunkCodec,
        reader: ShardReader,
        index_cache: IndexCache,
    ) -> None:
        self.store = store
        self.layout = layout
        self.grid = layout.grid
        self.codec = codec
        self.reader = reader
        self.index_cache = index_cache

    def apply(
        self, updates: dict[Chunk, np.ndarray | Merge | None], *, arena: np.ndarray | None = None
    ) -> dict[Chunk, bool]:
        """Apply chunk updates (an array replaces a chunk, ``None`` deletes it, a :class:`Merge` edits
        it) in groups of whole objects of at most :data:`WRITE_GROUP_BYTES` of decoded values, each
        encoded whole before anything is written (docs/engine.md, "Safety"). ``arena``: output slots to
        compress into (:meth:`new_arena`), used when it has a row for every chunk of a group. Returns for
        each chunk whether it was stored before (known only where the old object was read)."""
        if not updates:
            return {}
        existed: dict[Chunk, bool] = {}
        groups = self._write_groups(updates)
        n = max(len(g) for g in groups)
        if arena is None or arena.shape[0] < n or arena.shape[1] != self.codec.encode_slot:
            arena = self.new_arena(n)
        for group in groups:
            self._apply_group(group, arena, existed)
        return existed

    #: At most this many objects are locked at once on stores with cross-process locks (each lock holds
    #: two descriptors until the group is written): larger groups are split.
    LOCKED_OBJECTS_PER_GROUP = 256

    def _apply_group(
        self, group: dict[Chunk, Any], arena: np.ndarray | None, existed: dict[Chunk, bool]
    ) -> None:
        """One group under its objects' locks (:func:`.locks.run_exclusive`); the objects whose
        conditional write met another writer's change are read, merged and written again."""
        pending = group

        def keys() -> list[str]:
            if self.layout.sharded:
                return [self.layout.key(pos) for pos in self.layout.group_by_shard(list(pending))]
            # only chunks that are read and merged need a guard; whole chunks are replaced
            return [self.layout.key(c) for c, u in pending.items() if isinstance(u, Merge)]

        def again(e: WriteConflictError) -> list[str]:
            nonlocal pending
            conflicting = set(e.keys)
            pending = {c: u for c, u in pending.items() if self.layout.object_key(c) in conflicting}
            if not pending:
                raise e
            return keys()

        apply = self._apply_sharded if self.layout.sharded else self._apply_unsharded
        run_exclusive(self.store, keys(), lambda: apply(pending, arena, existed), again)

    def new_arena(self, n: int) -> np.ndarray | None:
        """One output slot per chunk of a write group, for chains that compress into a given buffer (its
        pages faulted in once, reused by every later group of the call)."""
        if self.codec.encode_slot is None or n < 2:
            return None
        return np.empty((n, self.codec.encode_slot), dtype=np.uint8)

    def _write_groups(self, updates: dict[Chunk, Any]) -> list[dict[Chunk, Any]]:
        """Split updates into groups of whole stored objects, each of at most WRITE_GROUP_BYTES."""
        chunk_bytes = math.prod(self.grid.chunks) * self.layout.dtype.itemsize
        locked = self.store.concurrent_writes == "locked"
        max_objects = self.LOCKED_OBJECTS_PER_GROUP if locked else len(updates)
        if len(updates) * chunk_bytes <= WRITE_GROUP_BYTES and len(updates) <= max_objects:
            return [updates]
        objects = (
            self.layout.group_by_shard(list(updates)) if self.layout.sharded else {c: [c] for c in updates}
        )
        groups: list[dict[Chunk, Any]] = [{}]
        n_objects = 0
        for chunks in objects.values():
            size = (len(groups[-1]) + len(chunks)) * chunk_bytes
            if groups[-1] and (size > WRITE_GROUP_BYTES or n_objects >= max_objects):
                groups.append({})
                n_objects = 0
            n_objects += 1
            groups[-1].update((c, updates[c]) for c in chunks)
        return groups

    def _new_bytes(
        self, chunk: Chunk, update: Any, old: ChunkSlot | None, out: np.ndarray | None = None
    ) -> Any:
        if update is None:
            return None
        if isinstance(update, Merge):
            if old is None:
                shape, dtype = self.layout.clipped(chunk), self.codec.dtype
                check_chunk_room(shape, dtype, key=lambda: self.layout.object_key(chunk), chunk=chunk)
                base = np.full(shape, self.codec.fill_value, dtype=dtype)
            else:
                base = self.codec.decode_chunk(old.data, chunk, old.key, byte_range=old.span)
                if not base.flags.writeable or base.base is not None:
                    base = base.copy()
            update = self.codec.coerce(chunk, update.fn(base))
        return self.codec.encode_chunk(update, chunk, out=out)

    def _encode_items(
        self, items: list[tuple[Chunk, Any]], olds: list[ChunkSlot | None], arena: np.ndarray | None
    ) -> list[Any]:
        """The new bytes of each ``(chunk, update)`` (see :meth:`_new_bytes`) on the pool: whole arrays
        through the native kernel where it applies, everything else (and whatever it declines) here.
        Every item is encoded; one that failed holds its exception (the caller raises the first in its
        own order, :func:`_raise_first_failure`)."""
        new, rows = kernel.encode(self.codec.native, items, arena)
        todo = [i for i, b in enumerate(new) if b is kernel.TODO]

        def one(i: int) -> Any:
            try:
                return self._new_bytes(*items[i], olds[i], None if arena is None else arena[rows[i]])
            except Exception as e:
                return e

        for i, b in zip(todo, pmap(one, todo), strict=True):
            new[i] = b
        return new

    def _set_before_deletes(self, to_set: list[tuple[str, Any]], to_delete: list[str]) -> None:
        """Write ``to_set``, which goes before the call's deletes: when a conditional write meets another
        writer's change, the ``WriteConflictError`` names the deletes too (not tried yet: they go again
        with the conflicting objects)."""
        if not to_set:
            return
        try:
            self.store.set_many(to_set)
        except WriteConflictError as e:
            raise WriteConflictError(e.message, keys=[*e.keys, *to_delete]) from e

    def _apply_unsharded(
        self, updates: dict[Chunk, Any], arena: np.ndarray | None, existed: dict[Chunk, bool]
    ) -> None:
        """Write and delete the chunks of ``updates``; ``existed`` receives, per deleted chunk, whether it
        was stored. A conditional write that met another writer's change raises ``WriteConflictError``
        naming those objects and every delete of the call, which was not tried yet (all go again)."""
        merges = [c for c, u in updates.items() if isinstance(u, Merge)]
        deletes = [c for c, u in updates.items() if u is None]
        old = self.reader.read_raw(merges) if merges else {}
        items = list(updates.items())
        new = self._encode_items(items, [old.get(c) for c, _ in items], arena)
        _raise_first_failure(new)
        to_set = [(self.layout.key(c), b) for (c, _), b in zip(items, new, strict=True) if b is not None]
        to_delete = [self.layout.key(c) for (c, u), b in zip(items, new, strict=True) if b is None]
        self._set_before_deletes(to_set, to_delete)
        if to_delete:
            flags = self.store.delete_many(to_delete)
            gone = dict(zip(to_delete, flags, strict=True))
            existed.update({c: gone.get(self.layout.key(c), False) for c in deletes})

    def _apply_sharded(
        self, updates: dict[Chunk, Any], arena: np.ndarray | None, existed: dict[Chunk, bool]
    ) -> None:
        """Rebuild and write the shards of ``updates`` (one read round, each shard rebuilt as its old bytes
        arrive, then one write round); ``existed`` receives, per chunk, whether it was stored, before the
        writes (only the shards whose conditional write met a change go again)."""
        top = self.grid.nlevels - 1
        groups = self.layout.group_by_shard(list(updates))
        # a shard needs its old bytes unless every in-bounds chunk of it is replaced outright
        need_old = [
            pos
            for pos, group in groups.items()
            if len(group) < self.grid.n_chunks_in(pos, top)
            or any(updates[c] is None or isinstance(updates[c], Merge) for c in group)
        ]
        keys = {pos: self.layout.key(pos) for pos in groups}
        # sent now; each answer is a bytes-like result, a zero-copy view where the store has one
        # (obstore: no 2.9 MB copy per shard into a fresh bytes object before split_down slices it)
        arriving = self.store.get_ranges_as_ready([(keys[p], WHOLE) for p in need_old])
        old_objects: dict[Chunk, memoryview | None] = {}
        new: dict[Chunk, Any] = {}
        used = 0  # arena rows taken: each call's chunks get the next ones, kept until the writes

        def rebuild(positions: list[Chunk]) -> None:
            """Encode the updated chunks of these shards in one call (one pool hand-off for all)."""
            nonlocal used
            if not positions:
                return
            items: list[tuple[Chunk, Any]] = []
            olds: list[ChunkSlot | None] = []
            for pos in positions:
                group, mem = groups[pos], old_objects.get(pos)
                # old raw bytes of every updated chunk (zero-copy slices of the old shard)
                found = self.layout.split_down(mem, top, set(group), keys[pos]) if mem is not None else {}
                items += [(c, updates[c]) for c in group]
                olds += [ChunkSlot(keys[pos], found[c]) if c in found else None for c in group]
            rows = None if arena is None else arena[used : used + len(items)]
            used += len(items)
            new.update(zip((c for c, _ in items), self._encode_items(items, olds, rows), strict=True))
            existed.update({c: old is not None for (c, _), old in zip(items, olds, strict=True)})

        waiting = set(need_old)
        rebuild([pos for pos in groups if pos not in waiting])  # no old bytes to wait for
        for answered in arriving:  # each answer as it comes (all at once where the store cannot tell)
            for i, data, _, _ in answered:
                old_objects[need_old[i]] = None if data is None else memoryview(data)
            rebuild([need_old[i] for i, _, _, _ in answered])
        _raise_first_failure([new[c] for c in updates])  # the first in the caller's order
        # a shard emptied by a read-modify-write is written as an empty shard (its index alone) instead
        # of deleted on stores with conditional writes but no conditional delete (docs/engine.md, "Safety")
        keep_emptied = _keep_emptied_shards and self.store.concurrent_writes == "conditional"
        to_set, to_delete = [], []
        for pos, group in groups.items():
            # the outermost level as parts, which the store writes back to back (no joined copy)
            shard = self.layout.build(
                top, old_objects.get(pos), {c: new[c] for c in group}, keys[pos], parts=True
            )
            if shard is not None:
                to_set.append((keys[pos], shard))
            elif old_objects.get(pos) is not None and keep_emptied:
                to_set.append((keys[pos], self.layout.empty(top)))  # conditioned on the version read
            elif pos not in old_objects or old_objects[pos] is not None:
                to_delete.append(keys[pos])
        try:
            self._set_before_deletes(to_set, to_delete)
            if to_delete:
                self.store.delete_many(to_delete)
        finally:
            self.index_cache.forget(keys.values())


#: The guard of emptied shards written as their index (``_apply_sharded``), switched off by the soak that shows what it
#: prevents (``tests/dataset/test_emptying_writers.py``).
_keep_emptied_shards = True


def _raise_first_failure(encoded: list[Any]) -> None:
    """Raise the first item that is an exception, if any: every chunk was tried, the first failure in the
    caller's order is the one reported, and nothing has been written yet."""
    for b in encoded:
        if isinstance(b, Exception):
            raise b
