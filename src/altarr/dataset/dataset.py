"""The public :class:`Dataset`: one array of any format, its batched chunk API and region I/O."""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from itertools import product
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import NodeTypeError
from ..formats import open_node
from ..formats.base import DatasetSpec, Format
from ..selection import RegionPlan, Selection, normalize, plan
from .access import DatasetAccess
from .buffer import DEFAULT_BUFFER_BYTES, WriteBuffer
from .casting import cast_for_selection, cast_like_setitem
from .index_cache import MISSING
from .kernel import empty_result
from .many import merge_update, plan_selections, read_plans
from .members import Attributes, Info, StoredNode, byte_size, inner_chain
from .resize import append as _append
from .resize import resize as _resize
from .shard_write import Merge, paste, scatter

if TYPE_CHECKING:
    from ..stores.base import Store

__all__ = ["Dataset", "Attributes"]


class Dataset(StoredNode):
    """One N5, Zarr v2 or Zarr v3 array. Create with :func:`altarr.create_dataset`, open with
    :func:`altarr.open_dataset`.

    ``chunks`` is the innermost chunk shape (the unit that is encoded); ``shards`` is ``None`` or the
    outermost shard shape (the stored object). All shapes and coordinates are NumPy (C) order, also for
    N5. Chunks handed out are clipped at the array edge.
    """

    def __init__(
        self,
        store: Store,
        path: str,
        spec: DatasetSpec,
        fmt: Format,
        *,
        mode: str = "r",
        write_empty_chunks: bool = False,
        recheck: bool | None = None,
    ) -> None:
        super().__init__(store, path, fmt, mode, spec.attributes)
        self.spec = spec
        self._access_options: dict[str, Any] = {"write_empty_chunks": write_empty_chunks, "recheck": recheck}
        self._access = DatasetAccess(store, path, spec, **self._access_options)
        #: The open write buffers of this handle (a resize writes them out first).
        self._buffers: weakref.WeakSet[WriteBuffer] = weakref.WeakSet()

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles as its store (its location), path, format, mode and options; reopened when unpickled."""
        return (_reopen, (self.store, self.path, self.format, self.mode, self._access_options))

    # --- description -----------------------------------------------------------------------------------
    @property
    def access(self) -> DatasetAccess:
        """The engine under this handle (:class:`~altarr.dataset.DatasetAccess`), for tools that work on
        stored objects rather than values (the integrity check). Replaced when the array is resized.

        >>> import altarr as aa
        >>> ds = aa.create_dataset("memory://doc-dataset-access", shape=(8,), dtype="u1", chunks=(4,))
        >>> ds.access.layout.key((1,))
        'c/1'
        """
        return self._access

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.spec.shape)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.spec.dtype)

    @property
    def ndim(self) -> int:
        return len(self.spec.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.spec.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def chunks(self) -> tuple[int, ...]:
        return self._access.grid.chunks

    @property
    def shards(self) -> tuple[int, ...] | None:
        return self._access.grid.outer if self._access.layout.sharded else None

    @property
    def shard_levels(self) -> list[tuple[int, ...]]:
        """Block shapes of every level, innermost (the chunk) first."""
        return list(self._access.grid.levels)

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """Number of chunks along each dimension."""
        return self._access.grid.grid_shape(0)

    @property
    def fill_value(self) -> Any:
        """The fill value, as a plain Python value (so messages and ``altarr info`` print ``3``, never
        ``np.int16(3)``)."""
        v = self.spec.fill_value
        return v.item() if isinstance(v, np.generic) else v

    @property
    def dimension_names(self) -> tuple[str | None, ...] | None:
        return self.spec.dimension_names

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d dataset")
        return self.shape[0]

    def __repr__(self) -> str:
        shards = f", shards={self.shards}" if self.shards else ""
        return (
            f"<altarr.Dataset {self.format} {self.path or '/'!r} shape={self.shape} dtype={self.dtype} "
            f"chunks={self.chunks}{shards}>"
        )

    # --- zarr-python's members (docs/zarr-python.md) -------------------------------------------------
    @property
    def cdata_shape(self) -> tuple[int, ...]:
        """Chunks along each dimension (zarr-python's name for ``grid_shape``)."""
        return self.grid_shape

    @property
    def nchunks(self) -> int:
        """How many chunks the array has (the innermost, encoded unit; shards hold several)."""
        return math.prod(self.grid_shape)

    @property
    def nchunks_initialized(self) -> int:
        """How many chunks are stored: with shards, every chunk of each shard that exists (as zarr-python
        3.1 counts them). Lists the store once."""
        return sum(1 for _ in self.stored_chunks())

    @property
    def compressors(self) -> tuple[Any, ...]:
        """The bytes-to-bytes codecs of one chunk, in order: altarr codecs for Zarr v3 (inside the
        shards), the numcodecs compressor for Zarr v2 (as zarr-python gives it), the N5 compression."""
        chain = inner_chain(self.spec)
        ab = chain.array_bytes
        if self.format == "zarr2":
            return () if ab.compressor is None else (ab.compressor,)
        if self.format == "n5":
            return tuple(getattr(ab, "data_codecs", ())) + tuple(chain.bytes_bytes)
        return tuple(chain.bytes_bytes)

    @property
    def filters(self) -> tuple[Any, ...]:
        """The array-to-array codecs (Zarr v3, ``transpose``) or the numcodecs filters (Zarr v2)."""
        chain = inner_chain(self.spec)
        if self.format == "zarr2":
            return tuple(chain.array_bytes.filters)
        return tuple(chain.array_array)

    @property
    def serializer(self) -> Any:
        """The array-to-bytes codec of one chunk (Zarr v3 ``bytes``, N5's block header); ``None`` for Zarr
        v2, as in zarr-python."""
        return None if self.format == "zarr2" else inner_chain(self.spec).array_bytes

    @property
    def codecs(self) -> list[dict[str, Any]]:
        """The whole codec pipeline as the format describes it (JSON, shards included), as ``altarr info``
        prints it."""
        return self._format.codecs_json(self.spec)

    def _info_fields(self) -> dict[str, Any]:
        return {
            "Type": "Array",
            "Format": self._format.title,
            "Data type": str(self.spec.dtype),
            "Fill value": self.fill_value,
            "Shape": self.shape,
            **({"Shard shape": self.shards} if self.shards else {}),
            "Chunk shape": self.chunks,
            "Read-only": self.read_only,
            "Store type": type(self.store).__name__,
            "Filters": self.filters,
            "Serializer": self.serializer,
            "Compressors": self.compressors,
            "No. bytes": byte_size(self.nbytes),
        }

    def info_complete(self) -> Info:
        """:attr:`info` and the chunks stored (lists the store)."""
        return Info(
            {**self._info_fields(), "Chunks initialized": f"{self.nchunks_initialized}/{self.nchunks}"}
        )

    # --- chunk API -------------------------------------------------------------------------------------
    def read_chunk(self, coords: Sequence[int]) -> np.ndarray | None:
        """One chunk (clipped at the array edge), or ``None`` if it is not stored."""
        return self._access.read_chunks([coords])[0]

    def read_chunks(
        self, coords: Sequence[Sequence[int]] | np.ndarray, *, versions: dict[str, Any] | None = None
    ) -> list[np.ndarray | None]:
        """Many chunks in one batched call, in request order; ``None`` for chunks that are not stored.

        Per shard: one index read and only the byte ranges of the requested chunks. All chunks of one
        shard come from one version of it (a shard replaced during the call is read again). ``versions``:
        a dict that receives, for a sharded array, the version of every shard the call read, keyed by
        :meth:`chunk_key` (``None`` where the store reports none; compare with :meth:`shard_versions`)."""
        return self._access.read_chunks(coords, versions=versions)

    def shard_versions(self, keys: Sequence[str]) -> dict[str, Any] | None:
        """The current version of each shard (by :meth:`chunk_key`), as :meth:`read_chunks` reports it,
        where the store tells it without a request (local files, memory, zip: a ``stat``); ``None`` on
        other stores, where asking would cost a request per shard.

        >>> import altarr as aa
        >>> from altarr.stores import MemoryStore
        >>> ds = aa.create_dataset(MemoryStore(), shape=(4,), dtype="u1", chunks=(1,), shards=(2,))
        >>> ds[:2] = 1
        >>> seen = {}
        >>> _ = ds.read_chunks([(0,)], versions=seen)
        >>> seen == ds.shard_versions(list(seen))
        True
        """
        store = self.store
        if not store.cheap_stat:
            return None
        stats = {key: store.stat(key) for key in dict.fromkeys(keys)}
        return {key: MISSING if st is None else st[1] for key, st in stats.items()}

    def visit_chunks(
        self, coords: Sequence[Sequence[int]] | np.ndarray, fn: Callable[[int, np.ndarray], Any]
    ) -> None:
        """Call ``fn(i, chunk)`` for every requested row ``i``, concurrently on the thread pool, with the
        chunk decoded into a per-thread scratch buffer (read-only, valid only during the call; a chunk
        that is not stored comes as the fill value): docs/engine.md, "Reading without holding chunks".
        The first exception propagates after every row was visited. A read that starts over (a shard
        replaced during it) calls ``fn`` again for its rows: put each row's result in its own slot, never
        accumulate (same section).

        >>> import numpy as np, altarr as aa
        >>> ds = aa.create_dataset("memory://doc-visit", shape=(4, 4), dtype="int32", chunks=(2, 2))
        >>> ds[:2, :2] = 5
        >>> sums = {}
        >>> ds.visit_chunks([(0, 0), (1, 1)], lambda i, a: sums.__setitem__(i, int(a.sum())))
        >>> sorted(sums.items())
        [(0, 20), (1, 0)]
        """
        self._access.visit_chunks(coords, fn)

    def write_chunk(self, coords: Sequence[int], array: Any) -> None:
        """Write one whole chunk (an array of the chunk's clipped shape)."""
        self.write_chunks([coords], [array])

    def write_chunks(self, coords: Sequence[Sequence[int]] | np.ndarray, arrays: Sequence[Any]) -> None:
        """Write many whole chunks in one batched call: per shard at most one read and one write, and no
        read at all for a shard whose every in-bounds chunk is written. A chunk equal to the fill value
        is not stored (unless the dataset was opened with ``write_empty_chunks=True``)."""
        self._check_writable()
        # cast like ndarray.__setitem__, every array before any byte is written
        arrays = [cast_like_setitem(a, self.dtype) for a in arrays]
        self._access.write_chunks(coords, arrays)

    def delete_chunk(self, coords: Sequence[int]) -> bool:
        """Delete one chunk; returns whether it was stored."""
        return self.delete_chunks([coords])[0]

    def delete_chunks(self, coords: Sequence[Sequence[int]] | np.ndarray) -> list[bool]:
        """Delete many chunks; a shard whose last chunk goes is deleted. Returns per request whether the
        chunk was stored."""
        self._check_writable()
        return self._access.delete_chunks(coords)

    def shard_of(self, coords: Sequence[int]) -> tuple[int, ...]:
        """Grid position of the stored object (outermost shard) that holds chunk ``coords``."""
        c = self._access.grid.check_chunk(coords)
        return self._access.layout.shard_of(c)

    def chunks_in_shard(self, shard_coords: Sequence[int]) -> list[tuple[int, ...]]:
        """The in-bounds chunks of the outermost shard at ``shard_coords``, in C order."""
        g = self._access.grid
        pos = g.check_chunk(shard_coords, g.nlevels - 1)
        return g.chunks_in(pos, g.nlevels - 1)

    def group_by_shard(self, coords: Sequence[Sequence[int]]) -> dict[tuple[int, ...], list[tuple[int, ...]]]:
        """Chunk coordinates grouped by the shard that holds them (insertion order of first appearance)."""
        arr = self._access.grid.check_chunks(coords)
        return self._access.layout.group_by_shard([tuple(int(v) for v in row) for row in arr.tolist()])

    def chunk_key(self, coords: Sequence[int]) -> str:
        """The store key of the object holding chunk ``coords``."""
        return self._access.layout.key(self.shard_of(coords))

    def buffered(self, max_bytes: int = DEFAULT_BUFFER_BYTES, on_error: str = "commit") -> WriteBuffer:
        """A write buffer: writes land in memory and each shard (each chunk of an unsharded array) is
        encoded and written once, when it is complete, when the buffer needs room (``max_bytes`` of
        decoded values) or when the buffer is closed. Reads through it see its writes. ``on_error``:
        what a ``with`` block that raises does with what is not written yet, ``"commit"`` (write it,
        the default) or ``"discard"``. See :mod:`altarr.dataset.buffer` and docs/writing.md.

        >>> import numpy as np, altarr as aa
        >>> ds = aa.create_dataset("memory://doc-buffered", shape=(4, 6), dtype="i2", chunks=(2, 3),
        ...                        shards=(2, 6))
        >>> with ds.buffered() as b:
        ...     for row in range(4):
        ...         b[row] = np.arange(6) + row
        >>> ds[3].tolist(), ds.store.stats.writes - 1  # one write per shard
        ([3, 4, 5, 6, 7, 8], 2)
        """
        return WriteBuffer(self, max_bytes=max_bytes, on_error=on_error)

    def resize(self, new_shape: Any) -> None:
        """Change the shape in place (as zarr-python's ``resize``: returns ``None``). Shrinking deletes
        the stored objects wholly past the new edge and rewrites the shards that straddle it, so values
        past the edge read as the fill value if the array grows again; growing keeps every value, and the
        new elements read as the fill value. The metadata is rewritten atomically under its lock (local
        files) or conditioned on its version (object stores). Open write buffers are written out first.
        docs/writing.md ("Growing and shrinking") says what zarr-python and tensorstore do differently.

        >>> import altarr as aa
        >>> ds = aa.create_dataset("memory://doc-ds-resize", shape=(4, 4), dtype="u1", chunks=(2, 2))
        >>> ds[...] = 9
        >>> ds.resize((3, 5)); ds.shape, ds[...].tolist()
        ((3, 5), [[9, 9, 9, 9, 0], [9, 9, 9, 9, 0], [9, 9, 9, 9, 0]])
        """
        _resize(self, new_shape)

    def append(self, data: Any, axis: int = 0) -> tuple[int, ...]:
        """Append ``data`` along ``axis`` (every other dimension must match) and return the new shape, as
        zarr-python's ``append``. The rows are reserved first (the stored shape grown under the
        metadata's lock or condition), then written, so concurrent appenders each get their own rows.

        >>> import numpy as np, altarr as aa
        >>> ds = aa.create_dataset("memory://doc-ds-append", shape=(0, 3), dtype="i2", chunks=(4, 3))
        >>> ds.append(np.ones((2, 3))), ds.append([[5, 6, 7]])
        ((2, 3), (3, 3))
        >>> ds[2].tolist()
        [5, 6, 7]
        """
        return _append(self, data, axis)

    def _set_spec(self, spec: DatasetSpec) -> None:
        """Point this handle at a new description of its array (a resize changed the shape)."""
        self.spec = spec
        self._access = DatasetAccess(self.store, self.path, spec, **self._access_options)

    # --- regions ---------------------------------------------------------------------------------------
    def __getitem__(self, selection: Any) -> Any:
        """Read a selection (any NumPy index; see :attr:`oindex`, :attr:`vindex`), with NumPy's semantics
        and result (a NumPy scalar for an element), in one batched store call per nesting level and one
        for the chunks' ranges (docs/engine.md, "The request contract").

        >>> import numpy as np, altarr as aa
        >>> ds = aa.create_dataset("memory://doc-getitem", shape=(4, 5), dtype="int16", chunks=(2, 2))
        >>> ds[...] = np.arange(20).reshape(4, 5)
        >>> ds[1, 2], ds[[0, 3], 1:3].tolist(), ds[ds[...] > 16].tolist()
        (np.int16(7), [[1, 2], [16, 17]], [17, 18, 19])
        """
        sel = normalize(selection, self.shape)  # the one normalization (altarr.selection)
        if not sel.basic:
            return read_plans(self._access, [plan(sel, self.chunks)])[0]
        r = RegionPlan(sel, self.chunks)
        out = empty_result(r.work_shape, self.dtype)
        if out.size:
            # one piece per touched chunk: (chunk index, part of the chunk, part of the result) per dim
            pieces = r.pieces()

            def place(chunk: tuple[int, ...], values: np.ndarray) -> None:
                piece = pieces[chunk]
                out[tuple(p[2] for p in piece)] = values[tuple(p[1] for p in piece)]

            self._access.visit_distinct(list(pieces), place, into=(out, r.geometry()))
        return r.finish(out)

    def __setitem__(self, selection: Any, values: Any) -> None:
        """Write a selection (any NumPy index), values cast as ``ndarray.__setitem__`` casts them: a Python
        integer out of range raises ``OverflowError``, a NaN into an integer dtype ``ValueError``, all
        before anything is written. Chunks wholly covered are replaced without being read, the others
        merged: per shard one read (none if the region covers it) and one write.

        >>> import numpy as np, altarr as aa
        >>> ds = aa.create_dataset("memory://doc-setitem", shape=(4,), dtype="uint8", chunks=(2,))
        >>> ds[[0, 3]] = 7
        >>> ds[...].tolist()
        [7, 0, 0, 7]
        >>> ds[1] = 300
        Traceback (most recent call last):
        ...
        OverflowError: Python integer 300 out of bounds for uint8
        """
        self._check_writable()
        self._write_selection(normalize(selection, self.shape, resolve=False), values)

    def _write_selection(self, sel: Selection, values: Any) -> None:
        """Write ``values`` into a selection of any form (``ds[...]``, ``ds.oindex``, ``ds.vindex``) normalized
        with ``resolve=False``; the rest is checked in NumPy's order (:func:`.casting.cast_for_selection`)."""
        if sel.basic:  # integers and slices, in whichever form: a region, as ``ndarray[...] = `` writes it
            self._write_regions([(sel, values)])
            return
        vals = cast_for_selection(values, self.dtype, sel)
        p = plan(sel, self.chunks)
        work = p.unfinish(vals)
        if not len(p.coords) or work.size == 0:
            return
        self._access.writer.apply(
            {tuple(c): Merge(partial(scatter, p, i, work)) for i, c in enumerate(p.coords.tolist())}
        )

    def _write_regions(self, regions: Iterable[tuple[Selection, Any]]) -> None:
        """Write ``values`` into each basic selection ``sel`` of ``regions`` (later ones win where they
        overlap) in one engine call, every region's values cast as ``ndarray.__setitem__`` casts them
        before anything is written."""
        updates: dict[tuple[int, ...], Any] = {}
        for sel, values in regions:
            r = RegionPlan(sel, self.chunks)
            vals = r.unfinish(cast_for_selection(values, self.dtype, sel))
            if vals.size == 0:
                continue
            for piece in product(*r.per_dim):
                chunk = tuple(p[0] for p in piece)
                src = tuple(p[1] for p in piece)
                dst = tuple(p[2] for p in piece)
                clipped = self._access.grid.block_clipped_shape(chunk)
                covered = all(
                    s.step == 1 and s.start == 0 and s.stop == c for s, c in zip(src, clipped, strict=True)
                )
                merge_update(updates, chunk, vals[dst] if covered else Merge(partial(paste, src, vals[dst])))
        if updates:
            self._access.writer.apply(updates)

    # --- many regions in one call (see altarr.dataset.many) ----------------------------------------------
    def read_regions(self, selections: Sequence[Any], *, mode: str = "numpy") -> list[Any]:
        """Read many selections in one batched call, the results in request order: each shard index and
        chunk range read once, a chunk shared by several selections decoded once. ``mode`` says how each
        selection indexes: ``"numpy"`` (as ``ds[...]``), ``"oindex"`` (orthogonal) or ``"vindex"`` (points).

        >>> import numpy as np, altarr as aa
        >>> ds = aa.create_dataset("memory://doc-rr", shape=(6, 6), dtype="int32", chunks=(2, 2))
        >>> ds[...] = np.arange(36).reshape(6, 6)
        >>> [r.tolist() for r in ds.read_regions([np.s_[0, 1:3], np.s_[4:, 5]])] == [[1, 2], [29, 35]]
        True
        >>> ds.read_regions([([0, 5], [1, 4])], mode="vindex")[0].tolist()
        [1, 34]
        """
        plans = plan_selections(selections, self.shape, self.chunks, mode)
        return read_plans(self._access, plans)

    def write_regions(self, selections: Sequence[Any], values: Sequence[Any]) -> None:
        """Write many regions (basic selections, any alignment) in one batched call: per touched shard
        one read (none when the regions cover all of it) and one write for the whole batch. Where
        regions overlap, later ones win.

        >>> import numpy as np, altarr as aa
        >>> ds = aa.create_dataset("memory://doc-wr", shape=(4, 4), dtype="int8", chunks=(2, 2), shards=(4, 4))
        >>> ds.write_regions([np.s_[0:3, 0:3], np.s_[1, :]], [1, 2])
        >>> ds.store.stats.writes, ds[...].tolist()[:2]
        (2, [[1, 1, 1, 0], [2, 2, 2, 2]])
        """
        self._check_writable()
        if isinstance(selections, tuple | str) or not isinstance(selections, Sequence):
            raise TypeError("write_regions takes a list of selections and a list of values, one per region")
        if len(values) != len(selections):
            raise ValueError(f"write_regions got {len(selections)} selections but {len(values)} values")
        pairs = zip(selections, values, strict=True)
        self._write_regions((normalize(sel, self.shape, resolve=False), vals) for sel, vals in pairs)

    # --- advanced selections (NumPy fancy indexing, oindex, vindex) -------------------------------------
    @property
    def oindex(self) -> _DatasetIndexer:
        """Orthogonal selection (NEP 21): one subscript per dimension (int, slice, integer array, 1-D
        boolean mask), combined as a cartesian product; read and written in one batched call.

        >>> import numpy as np, altarr as aa
        >>> ds = aa.create_dataset("memory://doc-oindex", shape=(4, 5), dtype="int16", chunks=(2, 2))
        >>> ds[...] = np.arange(20).reshape(4, 5)
        >>> ds.oindex[[0, 3], [4, 0]].tolist()
        [[4, 0], [19, 15]]
        """
        return _DatasetIndexer(self, "outer")

    @property
    def vindex(self) -> _DatasetIndexer:
        """Vectorized (point) selection (NEP 21): index arrays broadcast together, their dimensions first.

        >>> import numpy as np, altarr as aa
        >>> ds = aa.create_dataset("memory://doc-vindex", shape=(4, 5), dtype="int16", chunks=(2, 2))
        >>> ds[...] = np.arange(20).reshape(4, 5)
        >>> ds.vindex[[0, 3], [4, 0]].tolist()
        [4, 15]
        """
        return _DatasetIndexer(self, "vector")

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy is False:
            raise ValueError("a Dataset's values live in its store: np.asarray needs copy=None or True")
        a: np.ndarray = self[...]
        return a if dtype is None else a.astype(dtype, copy=False)

    # --- convenience -----------------------------------------------------------------------------------
    def stored_chunks(self) -> Iterator[tuple[int, ...]]:
        """Coordinates of every chunk position whose object exists (lists the store once). For sharded
        datasets this yields the chunks of existing shards (whose entries may still be empty)."""
        g = self._access.grid
        existing = set(self.store.list(self.path))
        top = g.nlevels - 1
        for pos in product(*(range(n) for n in g.grid_shape(top))):
            if self._access.layout.key(pos) in existing:
                yield from g.chunks_in(pos, top)


class _DatasetIndexer:
    """``ds.oindex`` / ``ds.vindex``: ``[...]`` reads or writes a selection of one indexing form."""

    __slots__ = ("_ds", "_form")

    def __init__(self, ds: Dataset, form: str) -> None:
        self._ds, self._form = ds, form

    def __getitem__(self, selection: Any) -> Any:
        ds = self._ds
        return read_plans(ds._access, [plan(normalize(selection, ds.shape, self._form), ds.chunks)])[0]

    def __setitem__(self, selection: Any, values: Any) -> None:
        self._ds._check_writable()
        self._ds._write_selection(normalize(selection, self._ds.shape, self._form, resolve=False), values)


def _reopen(store: Store, path: str, format: str, mode: str, options: dict[str, Any]) -> Dataset:
    """A pickled :class:`Dataset` opened again (its metadata read where it is unpickled)."""
    node = open_node(store, path, format=format)
    if node.spec is None:
        raise NodeTypeError("node is a group, not an array", key=path or "/")
    return Dataset(store, path, node.spec, node.format, mode=mode, **options)
