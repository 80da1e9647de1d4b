"""The public :class:`Dataset`: one array of any format, its batched chunk API and region I/O.

Example:
    >>> import numpy as np, altarr as aa
    >>> ds = aa.create_dataset("memory://doc-ds", shape=(6, 8), dtype="int32", chunks=(2, 4), shards=(4, 8))
    >>> ds[1:5, 2:6] = 7
    >>> int(ds[:, :].sum()), ds.shard_of((2, 1)), ds.chunks_in_shard((1, 0))
    (112, (1, 0), [(2, 0), (2, 1)])
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping, Sequence
from itertools import product
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ReadOnlyError
from ..formats.base import DatasetSpec, Format
from .access import DatasetAccess, Merge
from .regions import flip_reversed, normalize_selection, plan_dim

if TYPE_CHECKING:
    from ..stores.base import Store

__all__ = ["Dataset", "Attributes"]


class Attributes(MutableMapping):
    """User attributes of a node, read from and written through to its metadata.

    Every mutation rewrites the metadata document once; use :meth:`update` for several keys at once.
    """

    def __init__(self, store: Store, prefix: str, fmt: Format, read_only: bool, initial: dict | None = None):
        self._store, self._prefix, self._fmt, self._read_only = store, prefix, fmt, read_only
        self._cache = dict(initial) if initial is not None else None

    def _load(self) -> dict[str, Any]:
        if self._cache is None:
            self._cache = dict(self._fmt.read_attributes(self._store, self._prefix))
        return self._cache

    def _save(self, attrs: dict[str, Any]) -> None:
        if self._read_only:
            raise ReadOnlyError("attributes of a node opened read-only cannot be changed", key=self._prefix)
        self._fmt.write_attributes(self._store, self._prefix, attrs)
        self._cache = attrs

    def __getitem__(self, k: str) -> Any:
        return self._load()[k]

    def __setitem__(self, k: str, v: Any) -> None:
        self._save({**self._load(), k: v})

    def __delitem__(self, k: str) -> None:
        d = dict(self._load())
        del d[k]
        self._save(d)

    def update(self, *args: Any, **kwargs: Any) -> None:  # one write for many keys
        self._save({**self._load(), **dict(*args, **kwargs)})

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def asdict(self) -> dict[str, Any]:
        return dict(self._load())

    def refresh(self) -> None:
        self._cache = None

    def __repr__(self) -> str:
        return f"Attributes({self._load()!r})"


class Dataset:
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
    ) -> None:
        self.store = store
        self.path = path
        self.spec = spec
        self._format = fmt
        self.mode = mode
        self.read_only = mode == "r"
        self._access = DatasetAccess(store, path, spec, write_empty_chunks=write_empty_chunks)
        self.attrs = Attributes(store, path, fmt, self.read_only, spec.attributes)

    # --- description -----------------------------------------------------------------------------------
    @property
    def format(self) -> str:
        return self._format.name

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
        return self._access.grid.outer if self._access.sharded else None

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
        return self.spec.fill_value

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

    # --- chunk API -------------------------------------------------------------------------------------
    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(
                "dataset was opened read-only (mode='r'); open it with mode='r+'", key=self.path
            )

    def read_chunk(self, coords: Sequence[int]) -> np.ndarray | None:
        """One chunk (clipped at the array edge), or ``None`` if it is not stored."""
        return self._access.read_chunks([coords])[0]

    def read_chunks(self, coords: Sequence[Sequence[int]] | np.ndarray) -> list[np.ndarray | None]:
        """Many chunks in one batched call, in request order; ``None`` for chunks that are not stored.

        Per shard: one index read and only the byte ranges of the requested chunks."""
        return self._access.read_chunks(coords)

    def visit_chunks(
        self, coords: Sequence[Sequence[int]] | np.ndarray, fn: Callable[[int, np.ndarray], Any]
    ) -> None:
        """Call ``fn(i, chunk)`` for every requested row ``i``, on the thread pool, with the chunk decoded
        into a per-thread scratch buffer: nothing is allocated per chunk, so a caller that copies out
        what it needs (a gather into its own result) holds only that result in memory. ``chunk`` is
        read-only for ``fn`` and valid only during the call; a chunk that is not stored comes as a
        read-only array of the fill value. Same requests as :meth:`read_chunks` (region-read style on
        local files: each shard opened once, chunk ranges read inside their decode tasks). ``fn`` runs
        concurrently for different rows; the first exception propagates after every row was visited.

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
        return self._access.shard_of(c)

    def chunks_in_shard(self, shard_coords: Sequence[int]) -> list[tuple[int, ...]]:
        """The in-bounds chunks of the outermost shard at ``shard_coords``, in C order."""
        g = self._access.grid
        pos = g.check_chunk(shard_coords, g.nlevels - 1)
        return g.chunks_in(pos, g.nlevels - 1)

    def group_by_shard(self, coords: Sequence[Sequence[int]]) -> dict[tuple[int, ...], list[tuple[int, ...]]]:
        """Chunk coordinates grouped by the shard that holds them (insertion order of first appearance)."""
        arr = self._access.grid.check_chunks(coords)
        return self._access.group_by_shard([tuple(int(v) for v in row) for row in arr.tolist()])

    def chunk_key(self, coords: Sequence[int]) -> str:
        """The store key of the object holding chunk ``coords``."""
        return self._access.key(self.shard_of(coords))

    # --- regions ---------------------------------------------------------------------------------------
    def _plan(self, selection: Any, *, allow_newaxis: bool):
        dims, out_shape = normalize_selection(selection, self.shape, allow_newaxis=allow_newaxis)
        per_dim = [plan_dim(d, c, s) for d, c, s in zip(dims, self.chunks, self.shape, strict=True)]
        return dims, out_shape, per_dim

    def __getitem__(self, selection: Any) -> np.ndarray:
        """Read a region (integers, slices with any step, ``...``, ``None``): one batched store call per
        nesting level for the indexes, then the chunks' ranges (in one more batched call, or on local
        files inside each chunk's decode task), decoded on the thread pool."""
        dims, out_shape, per_dim = self._plan(selection, allow_newaxis=True)
        work = tuple(d.n for d in dims)
        out = np.empty(work, dtype=self.dtype)
        if out.size:
            # one piece per touched chunk: (chunk index, part of the chunk, part of the result) per dim
            pieces = {tuple(p[0] for p in piece): piece for piece in product(*per_dim)}

            def place(chunk: tuple[int, ...], values: np.ndarray) -> None:
                piece = pieces[chunk]
                out[tuple(p[2] for p in piece)] = values[tuple(p[1] for p in piece)]

            self._access.visit(list(pieces), place, into=(out, pieces))
        out = flip_reversed(out, dims)
        return out.reshape(out_shape)

    def __setitem__(self, selection: Any, values: Any) -> None:
        """Write a region, any alignment. Chunks wholly covered are replaced without being read; partly
        covered chunks are read, merged and rewritten; per shard one read (none if the region covers it)
        and one write."""
        self._check_writable()
        dims, out_shape, per_dim = self._plan(selection, allow_newaxis=False)
        work = tuple(d.n for d in dims)
        vals = np.asarray(values)
        if vals.dtype != self.dtype:
            vals = vals.astype(self.dtype)
        try:
            vals = np.broadcast_to(vals, out_shape)
        except ValueError as e:
            raise ValueError(
                f"could not broadcast values of shape {np.shape(values)} to the selection's shape {out_shape}"
            ) from e
        vals = vals.reshape(work)
        vals = flip_reversed(vals, dims)
        if vals.size == 0:
            return
        acc = self._access
        updates: dict[tuple[int, ...], Any] = {}
        for piece in product(*per_dim):
            chunk = tuple(p[0] for p in piece)
            src = tuple(p[1] for p in piece)
            dst = tuple(p[2] for p in piece)
            clipped = acc.grid.block_clipped_shape(chunk)
            covered = all(
                s.step == 1 and s.start == 0 and s.stop == c for s, c in zip(src, clipped, strict=True)
            )
            if covered:
                updates[chunk] = vals[dst]
            else:
                updates[chunk] = Merge(_Paste(src, vals[dst]))
        acc.apply(updates)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy is False:
            raise ValueError("a Dataset's values live in its store: np.asarray needs copy=None or True")
        a = self[...]
        return a if dtype is None else a.astype(dtype, copy=False)

    # --- convenience -----------------------------------------------------------------------------------
    def stored_chunks(self) -> Iterator[tuple[int, ...]]:
        """Coordinates of every chunk position whose object exists (lists the store once). For sharded
        datasets this yields the chunks of existing shards (whose entries may still be empty)."""
        g = self._access.grid
        existing = set(self.store.list(self.path))
        top = g.nlevels - 1
        for pos in product(*(range(n) for n in g.grid_shape(top))):
            if self._access.key(pos) in existing:
                yield from g.chunks_in(pos, top)


class _Paste:
    """Merge function writing ``values`` into ``old[src]`` (a class, so it pickles and reads well)."""

    __slots__ = ("src", "values")

    def __init__(self, src: tuple[slice, ...], values: np.ndarray):
        self.src, self.values = src, values

    def __call__(self, old: np.ndarray) -> np.ndarray:
        old[self.src] = self.values
        return old
