"""Writes that arrive piece by piece (planes, tiles, time steps), held in memory until each stored object
is whole: :class:`WriteBuffer`, opened with :meth:`Dataset.buffered <altarr.Dataset.buffered>`. When an
object is written, the memory bound and reads through the buffer: docs/writing.md, "The write buffer".
"""

from __future__ import annotations

import itertools
import math
import threading
from functools import partial
from itertools import product
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import AltarrError
from ..selection import DimSelection, RegionPlan, normalize, plan, plan_dim
from .casting import cast_for_selection
from .shard_write import Merge, scatter
from .written import Pending, box_of, simple_box

if TYPE_CHECKING:
    from ..selection import SelectionPlan
    from .dataset import Dataset
    from .layout import Chunk

__all__ = ["DEFAULT_BUFFER_BYTES", "ON_ERROR", "WriteBuffer"]

#: The default budget of a write buffer: decoded values (and masks) it may hold.
DEFAULT_BUFFER_BYTES = 256 << 20

#: Objects written out together go in groups of at most this many decoded bytes (and a quarter of the
#: budget), or one object: the chunks of a group are encoded on the pool together (one chunk per call
#: would leave the other cores idle on an unsharded array), into an output arena the buffer keeps.
WRITE_OUT_BYTES = 8 << 20

#: What a ``with`` block that raises does with the buffered writes: write them (the default) or drop them.
ON_ERROR = ("commit", "discard")


class WriteBuffer:
    """Buffered writes into one dataset (see the module docstring). Made by :meth:`Dataset.buffered
    <altarr.Dataset.buffered>`; use it as a context manager, or call :meth:`close` yourself.

    ``b[sel] = values`` takes any selection ``ds[sel] = values`` takes, cast the same way; ``b[sel]``
    reads through the buffer. ``on_error`` says what leaving a ``with`` block with an exception does:
    ``"commit"`` (the default) writes what was buffered, so the store holds every write made before the
    exception, as unbuffered writes would have left it; ``"discard"`` drops what was not written yet
    (objects already written, complete or forced out by the budget, stay written). The buffer is safe to
    use from several threads (one at a time inside)."""

    def __init__(
        self, dataset: Dataset, max_bytes: int = DEFAULT_BUFFER_BYTES, on_error: str = "commit"
    ) -> None:
        if on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
        if int(max_bytes) < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes!r}")
        dataset._check_writable()
        self.dataset = dataset
        self.max_bytes = int(max_bytes)
        self.on_error = on_error
        #: The most bytes of decoded values and masks the buffer held at once.
        self.peak_bytes = 0
        #: How many stored objects the buffer wrote (complete, forced out, or flushed).
        self.objects_written = 0
        self._pending: dict[Chunk, Pending] = {}
        self._held = 0  # pending values and masks, the spare values array and the output arena
        self._spare: np.ndarray | None = None
        self._arena: np.ndarray | None = None
        self._geometry = self._write_out_geometry()
        self._ready: dict[Chunk, None] = {}  # objects completed by the current call, written at its end
        self._ticks = itertools.count(1)
        self._lock = threading.RLock()
        self._closed = False
        dataset._buffers.add(self)

    # --- the dataset's geometry (read at each call: a resize flushes the buffer and changes it) ----------
    @property
    def _access(self) -> Any:
        return self.dataset._access

    def _write_out_geometry(self) -> tuple[int, int, int]:
        """``(bytes of one object, objects per write-out group, bytes of the output arena)``."""
        grid = self._access.grid
        obj = math.prod(grid.outer) * self.dataset.dtype.itemsize
        per_group = max(1, min(WRITE_OUT_BYTES, self.max_bytes // 4) // max(obj, 1))
        slot = self._access.writer.codec.encode_slot
        chunks_per_object = math.prod(o // c for o, c in zip(grid.outer, grid.chunks, strict=True))
        arena_rows = chunks_per_object * per_group
        return obj, per_group, 0 if slot is None or arena_rows < 2 else arena_rows * slot

    # --- state --------------------------------------------------------------------------------------------
    @property
    def nbytes(self) -> int:
        """Bytes the buffer holds now (never above ``max_bytes``): decoded values and masks of the objects
        not written yet, one values array kept for the next object, the output arena writes encode into."""
        return self._held

    @property
    def pending(self) -> int:
        """How many stored objects hold buffered writes that are not written yet."""
        return len(self._pending)

    @property
    def closed(self) -> bool:
        return self._closed

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._pending)} objects, {self._held} bytes"
        return f"<altarr.WriteBuffer of {self.dataset!r}: {state}, max_bytes={self.max_bytes}>"

    def _check_open(self) -> None:
        if self._closed:
            raise AltarrError("the write buffer is closed", key=self.dataset.path)

    # --- writes -------------------------------------------------------------------------------------------
    def __setitem__(self, selection: Any, values: Any) -> None:
        ds = self.dataset
        with self._lock:
            self._check_open()
            obj, _, arena = self._geometry
            if obj + arena > self.max_bytes:  # one object and the output arena do not fit: no buffering
                ds[selection] = values
                return
            box = simple_box(selection, values, ds)
            if box is not None:  # the streaming case, without the general planning (see simple_box)
                starts, counts, vals = box
                grid = self._access.grid
                per_dim = [
                    plan_dim(DimSelection(a, 1, n), b)
                    for a, n, b in zip(starts, counts, grid.outer, strict=True)
                ]
            else:
                sel = normalize(selection, ds.shape, resolve=False)
                # NumPy's order: the values are cast before the index arrays are checked
                vals = cast_for_selection(values, ds.dtype, sel)
                if not sel.basic:
                    p = plan(sel, ds.chunks)
                    self._scatter(p, p.unfinish(vals))
                    self._write_ready()
                    return
                r = RegionPlan(sel, self._access.grid.outer)
                per_dim, vals = r.per_dim, r.unfinish(vals)
            if vals.size:  # per dimension: (object, slice of the object, slice of vals)
                for piece in product(*per_dim):
                    self._put(
                        tuple(q[0] for q in piece),
                        tuple(q[1] for q in piece),
                        vals[tuple(q[2] for q in piece)],
                    )
            self._write_ready()

    def _take(self, pos: Chunk) -> Pending:
        """The pending object at ``pos``, made (after making room for it) if there is none: in the values
        array of the last object written when it has the same shape (its pages are mapped already)."""
        p = self._pending.get(pos)
        if p is not None:
            return p
        grid = self._access.grid
        shape = grid.block_clipped_shape(pos, grid.nlevels - 1)
        spare, self._spare = self._spare, None
        if spare is not None and spare.shape != shape:
            self._held -= spare.nbytes
            spare = None
        if spare is None:
            arena = self._geometry[2] if self._arena is None else 0
            self._make_room(math.prod(shape) * self.dataset.dtype.itemsize + arena)
            if arena:
                self._arena = self._access.writer.new_arena(arena // self._access.codec.encode_slot)
                self._held += arena
            spare = np.empty(shape, self.dataset.dtype)
            self._held += spare.nbytes
        p = self._pending[pos] = Pending(spare)
        self.peak_bytes = max(self.peak_bytes, self._held)
        return p

    def _add_mask(self, pos: Chunk, p: Pending) -> bool:
        """Give ``p`` its mask, making room for it; ``False`` (and no mask) when its values and mask
        together exceed the budget."""
        arena = 0 if self._arena is None else self._arena.nbytes
        if p.nbytes + p.size + arena > self.max_bytes:
            return False
        self._make_room(p.size, keep=pos)
        self._held += p.size
        p.to_mask()  # (its bytes counted just before)
        self.peak_bytes = max(self.peak_bytes, self._held)
        return True

    def _put(self, pos: Chunk, src: tuple[slice, ...], values: np.ndarray) -> None:
        """Write ``values`` into ``src`` of the object at ``pos``."""
        p = self._take(pos)
        box = box_of(src)
        union = p.union(box)
        if union is None and p.mask is None and not self._add_mask(pos, p):
            # values and mask together exceed the budget: what the object has goes out, this piece
            # goes straight through
            self._write_out([pos])
            top = self._access.grid.nlevels - 1
            first = self._access.grid.first_chunk(pos, top)
            origin = [f * n for f, n in zip(first, self._access.grid.chunks, strict=True)]
            self.dataset[
                tuple(slice(o + r.start, o + r.stop, r.step) for o, r in zip(origin, src, strict=True))
            ] = values
            return
        p.values[src] = values
        p.cover(src, union)
        p.tick = next(self._ticks)
        if p.complete:
            self._ready[pos] = None

    def _scatter(self, pl: SelectionPlan, work: np.ndarray) -> None:
        """Write a planned (advanced) selection's values: per touched chunk, scattered into its object's
        values and mask."""
        grid = self._access.grid
        layout = self._access.layout
        ones = np.broadcast_to(np.True_, work.shape)
        for i, chunk in enumerate(pl.coords.tolist()):
            c = tuple(chunk)
            pos = layout.shard_of(c)
            p = self._take(pos)
            if p.mask is None and not self._add_mask(pos, p):
                self._write_out([pos])  # values and mask together exceed the budget: this chunk goes through
                self._access.writer.apply({c: Merge(partial(scatter, pl, i, work))})
                continue
            region = self._region(grid, c, pos)
            pl.scatter(work, i, p.values[region])
            m = p.to_mask()[region]
            before = int(np.count_nonzero(m))
            pl.scatter(ones, i, m)
            p.covered += int(np.count_nonzero(m)) - before
            p.tick = next(self._ticks)
            if p.complete:
                self._ready[pos] = None

    # --- writing out --------------------------------------------------------------------------------------
    def _make_room(self, nbytes: int, keep: Chunk | None = None) -> None:
        """Write objects out until ``nbytes`` more fit in the budget: the most complete first, the least
        recently written of equals (``keep`` stays). The spare values array goes before anything."""
        while self._held + nbytes > self.max_bytes:
            if self._spare is not None:  # (a written object may leave one behind: checked each round)
                self._held -= self._spare.nbytes
                self._spare = None
                continue
            others = [(pos, p) for pos, p in self._pending.items() if pos != keep]
            if not others:
                return
            pos, _ = max(others, key=lambda item: (item[1].covered / item[1].size, -item[1].tick))
            self._write_out([pos])

    @staticmethod
    def _region(grid: Any, chunk: Chunk, pos: Chunk) -> tuple[slice, ...]:
        """The slices of ``chunk`` (clipped at the array edge) within its object at ``pos``."""
        top = grid.nlevels - 1
        first = grid.first_chunk(pos, top)
        return tuple(
            slice((c - f) * n, (c - f) * n + k)
            for c, f, n, k in zip(chunk, first, grid.chunks, grid.block_clipped_shape(chunk), strict=True)
        )

    def _updates(self, pos: Chunk, p: Pending) -> dict[Chunk, Any]:
        """The chunk updates that write ``p`` out: wholly written chunks as arrays (views of its values,
        never read back), chunks written in part as merges with their stored values."""
        grid = self._access.grid
        updates: dict[Chunk, Any] = {}
        for c in grid.chunks_in(pos, grid.nlevels - 1):
            u = p.update(self._region(grid, c, pos))
            if u is not None:
                updates[c] = u if isinstance(u, np.ndarray) else Merge(u)
        return updates

    def _write_ready(self) -> None:
        """Write out the objects completed by the last call, in groups."""
        ready = [pos for pos in self._ready if pos in self._pending]
        self._ready.clear()
        self._write_out(ready)

    def _write_out(self, positions: list[Chunk]) -> None:
        """Write the objects at ``positions`` through the engine's write, a group of them per call (see
        :data:`WRITE_OUT_BYTES`), encoded into the buffer's arena. An object leaves the buffer once
        written (a failed write keeps it and the rest, so :meth:`flush` can try again or
        :meth:`discard` drop them)."""
        _, per_group, _ = self._geometry
        for i in range(0, len(positions), per_group):
            group = positions[i : i + per_group]
            updates: dict[Chunk, Any] = {}
            for pos in group:
                updates.update(self._updates(pos, self._pending[pos]))
            if updates:
                self._access.writer.apply(updates, arena=self._arena)
            for pos in group:
                self._release_object(self._pending.pop(pos))

    def _release_object(self, p: Pending) -> None:
        """Forget a written object: its mask is freed, its values kept as the spare if there is none."""
        self.objects_written += 1
        if p.mask is not None:
            self._held -= p.mask.nbytes
        if self._spare is None and p.values.shape == self._access.grid.outer:
            self._spare = p.values
        else:
            self._held -= p.values.nbytes

    def regrid(self) -> None:
        """Write everything out and take the dataset's grid anew (after a resize changed its shape)."""
        with self._lock:
            self.flush()
            self._spare = self._arena = None
            self._held = 0
            self._geometry = self._write_out_geometry()

    def flush(self) -> None:
        """Write every buffered object now (in grid order), one at a time; the buffer stays open."""
        with self._lock:
            self._ready.clear()
            self._write_out(sorted(self._pending))

    def discard(self) -> None:
        """Drop every buffered write not written yet (objects already written stay written)."""
        with self._lock:
            self._pending.clear()
            self._spare = None
            self._held = 0 if self._arena is None else self._arena.nbytes

    def close(self) -> None:
        """Write what is buffered and close the buffer (a failed write leaves it open, holding what it
        could not write: :meth:`flush` again or :meth:`discard`)."""
        with self._lock:
            if self._closed:
                return
            self.flush()
            self._release()

    def _release(self) -> None:
        self._closed = True
        self._spare = self._arena = None
        self._held = 0
        self.dataset._buffers.discard(self)

    def __enter__(self) -> WriteBuffer:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None and self.on_error == "discard":
            with self._lock:
                self.discard()
                self._release()
            return
        self.close()

    # --- reads --------------------------------------------------------------------------------------------
    def __getitem__(self, selection: Any) -> Any:
        """Read a selection (any NumPy index) as the dataset will hold it once the buffer is written."""
        ds = self.dataset
        with self._lock:
            self._check_open()
            pl = plan(normalize(selection, ds.shape), ds.chunks)
            work = pl.new_work(ds.dtype)
            stored: list[int] = []  # rows read from the store, with what the buffer wrote of them on top
            overlays: dict[int, Any] = {}
            grid, layout = self._access.grid, self._access.layout
            for i, chunk in enumerate(pl.coords.tolist()):
                pos = layout.shard_of(chunk)
                p = self._pending.get(pos)
                u = None if p is None else p.update(self._region(grid, tuple(chunk), pos))
                if isinstance(u, np.ndarray):
                    pl.place(work, i, u)
                    continue
                if u is not None:
                    overlays[len(stored)] = u
                stored.append(i)

            def place(j: int, a: np.ndarray) -> None:
                pl.place(work, stored[j], overlays[j](a.copy()) if j in overlays else a)

            if stored:
                self._access.visit_chunks(pl.coords[stored], place)
        return pl.finish(work)
