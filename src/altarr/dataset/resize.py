"""Changing an array's shape: ``ds.resize(shape)`` and ``ds.append(data, axis)``, as zarr-python 3 has
them, for Zarr v3, Zarr v2 and N5. What a shrink deletes, what a grow rewrites and how appends reserve
their rows: docs/writing.md, "Growing and shrinking".
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from itertools import product
from typing import TYPE_CHECKING, Any

import numpy as np

from ..formats._common import join_key
from .consolidated import refresh_consolidated
from .grid import NestedGrid
from .locks import run_exclusive
from .shard_write import Merge

if TYPE_CHECKING:
    from ..formats.base import DatasetSpec
    from .dataset import Dataset
    from .layout import Chunk

__all__ = ["append", "resize"]

#: Shards straddling a new edge are rewritten this many per engine call.
TRIM_BATCH = 64


def _checked_shape(shape: Any, ndim: int) -> tuple[int, ...]:
    """``shape`` as a tuple of ``ndim`` non-negative integers (an integer for a 1-d array), else the
    ``TypeError``/``ValueError`` NumPy gives."""
    items = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    out = tuple(operator.index(n) for n in items)
    if len(out) != ndim:
        raise ValueError(f"new shape {out} must have {ndim} dimensions, as the array has")
    if any(n < 0 for n in out):
        raise ValueError(f"new shape {out} has a negative size")
    return out


def _rewrite_shape(
    ds: Dataset,
    shape: Callable[[tuple[int, ...]], tuple[int, ...]],
    then: Callable[[DatasetSpec], None] | None = None,
) -> DatasetSpec:
    """Rewrite the stored metadata with ``shape(stored shape)`` under its lock or write condition (and run
    ``then(spec before)`` there), pointing ``ds`` and its open buffers (written out first) at the new
    spec; returns the spec before."""
    for b in list(ds._buffers):
        b.flush()

    def rewrite() -> DatasetSpec:
        before, after = ds._format.resize_array(ds.store, ds.path, shape)
        ds._set_spec(after)
        if then is not None:
            then(before)
        return before

    before = run_exclusive(ds.store, [join_key(ds.path, ds._format.metadata_key)], rewrite)
    refresh_consolidated(ds.store, ds.path, ds._format, "changed")
    for b in list(ds._buffers):
        b.regrid()
    return before


def resize(ds: Dataset, new_shape: Any) -> None:
    """See :meth:`Dataset.resize <altarr.Dataset.resize>` and the module docstring."""
    ds._check_writable()
    shape = _checked_shape(new_shape, ds.ndim)
    before = _rewrite_shape(ds, lambda stored: shape)
    if any(n < o for n, o in zip(shape, before.shape, strict=True)):
        _trim(ds, tuple(before.shape), shape)
    if ds._access.codec.truncates and any(n > o for n, o in zip(shape, before.shape, strict=True)):
        _widen(ds, tuple(before.shape), shape)


def append(ds: Dataset, data: Any, axis: int = 0) -> tuple[int, ...]:
    """See :meth:`Dataset.append <altarr.Dataset.append>` and the module docstring."""
    ds._check_writable()
    values = np.asarray(data)
    if values.ndim != ds.ndim:
        raise ValueError(
            f"data to append has {values.ndim} dimensions, the array {ds.ndim}: all dimensions must match "
            "except the one appended along"
        )
    axis = int(np.lib.array_utils.normalize_axis_index(operator.index(axis), ds.ndim))

    def grown(stored: tuple[int, ...]) -> tuple[int, ...]:
        other = [d for d in range(ds.ndim) if d != axis and values.shape[d] != stored[d]]
        if other:
            raise ValueError(
                f"shape of data to append {values.shape} does not match the array's {stored} along "
                f"dimension {other[0]}: all dimensions must match except the one appended along ({axis})"
            )
        return tuple(n + values.shape[axis] if d == axis else n for d, n in enumerate(stored))

    if values.shape[axis] == 0:
        grown(ds.shape)  # the shape check alone
        return ds.shape

    def write(before: DatasetSpec) -> None:
        _write_appended(ds, values, axis, before.shape[axis])

    if ds.store.concurrent_writes == "locked":  # the lock is held over the reservation and the write
        _rewrite_shape(ds, grown, then=write)
    else:  # a conditional write may be tried again: only the reservation is
        write(_rewrite_shape(ds, grown))
    return ds.shape


def _write_appended(ds: Dataset, values: np.ndarray, axis: int, start: int) -> None:
    """Write the rows an append reserved, ``start`` on along ``axis``. For formats that store edge
    chunks whole (Zarr), through a handle whose shape reaches the end of the last chunk along ``axis``:
    its merge of the edge chunk keeps what lies past the reserved rows, where another appender may have
    written its rows already (a handle clipped at this append's end would store the fill value there)."""
    end = start + values.shape[axis]
    target = ds
    if not ds._access.codec.truncates:
        c = ds.chunks[axis]
        shape = tuple(-(-end // c) * c if d == axis else n for d, n in enumerate(ds.shape))
        target = type(ds)(
            ds.store, ds.path, replace(ds.spec, shape=shape), ds._format, mode=ds.mode, **ds._access_options
        )
    target[tuple(slice(start, end) if d == axis else slice(None) for d in range(ds.ndim))] = values


# --- shrinking ---------------------------------------------------------------------------------------------
def _past(old: Sequence[int], new: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Grid positions below ``old`` (blocks per dimension) with some coordinate at or past ``new``: a
    disjoint union, one box per dimension (earlier dimensions inside ``new``)."""
    for d in range(len(old)):
        if new[d] >= old[d]:
            continue
        ranges = [
            range(min(new[i], old[i])) if i < d else range(new[d], old[d]) if i == d else range(old[i])
            for i in range(len(old))
        ]
        yield from product(*ranges)


def _trim(ds: Dataset, old_shape: tuple[int, ...], shape: tuple[int, ...]) -> None:
    """Remove what lies past the new edge: the objects wholly past it, and the part of each shard (or
    unsharded chunk) that straddles it."""
    acc = ds._access
    grid, layout = acc.grid, acc.layout
    top = grid.nlevels - 1
    old_grid = NestedGrid(old_shape, grid.levels)
    past = [layout.key(p) for p in _past(old_grid.grid_shape(top), grid.grid_shape(top))]
    if past:
        stored = set(ds.store.list(ds.path))
        gone = [k for k in past if k in stored]
        if gone:
            ds.store.delete_many(gone)
    # the last block along each dimension cut inside a block straddles the new edge
    n = grid.grid_shape(top)
    cut = [d for d in range(ds.ndim) if shape[d] < old_shape[d] and shape[d] % grid.outer[d] and shape[d]]
    straddling = list(_past(n, [n[d] - 1 if d in cut else n[d] for d in range(ds.ndim)]))
    for i in range(0, len(straddling), TRIM_BATCH):
        updates: dict[Chunk, Any] = {}
        for pos in straddling[i : i + TRIM_BATCH]:
            updates.update(_trim_updates(pos, grid, old_grid, shape))
        if updates:
            acc.writer.apply(updates)


def _trim_updates(
    pos: Chunk, grid: NestedGrid, old_grid: NestedGrid, shape: tuple[int, ...]
) -> dict[Chunk, Any]:
    """For the object at ``pos`` (new grid): its chunks wholly past the new edge dropped (``None``;
    positions of the old grid, past the new one), its chunks straddling the new edge rewritten as they
    are (decoded at the old shape, re-encoded at the new: the fill value past the edge)."""
    top = grid.nlevels - 1
    updates: dict[Chunk, Any] = {}
    if top:
        for c in old_grid.chunks_in(pos, top):
            if any(ci * n >= s for ci, n, s in zip(c, grid.chunks, shape, strict=True)):
                updates[c] = None
    for c in grid.chunks_in(pos, top):
        if any(s % n and ci == (s - 1) // n for ci, n, s in zip(c, grid.chunks, shape, strict=True)):
            updates[c] = Merge(_keep)
    return updates


def _widen(ds: Dataset, old_shape: tuple[int, ...], shape: tuple[int, ...]) -> None:
    """Rewrite at their new size the chunks a format stores truncated at the array edge (N5) that the
    edge has moved away from: readers take a block smaller than its place for a block at the edge (z5py
    misreads one elsewhere)."""
    grid = ds._access.grid
    old_n = NestedGrid(old_shape, grid.levels).grid_shape(0)
    new_n = grid.grid_shape(0)
    grown = [d for d in range(ds.ndim) if shape[d] > old_shape[d] and old_shape[d] % grid.chunks[d]]
    inside = [min(o, n) for o, n in zip(old_n, new_n, strict=True)]  # chunks stored before and kept
    todo = sorted(_past(inside, [old_n[d] - 1 if d in grown else inside[d] for d in range(ds.ndim)]))
    for i in range(0, len(todo), TRIM_BATCH * 16):
        ds._access.writer.apply({c: Merge(_keep) for c in todo[i : i + TRIM_BATCH * 16]})


def _keep(values: np.ndarray) -> np.ndarray:
    """A merge that keeps a chunk's values (re-encoded at its new clipped shape)."""
    return values
