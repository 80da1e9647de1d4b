"""The chunk planner: a normalized :class:`~altarr.selection.items.Selection` -> a
:class:`~altarr.selection.plan.SelectionPlan`, for each indexing form and for batches of selections.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .items import Item, Selection
from .normalize import normalize
from .plan import Entry, SelectionPlan
from .tables import Points, array_table, group_points, nchunks_of, slice_table

__all__ = [
    "MODES",
    "chunk_users",
    "plan",
    "plan_selections",
]


def _adv(item: Item) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """An advanced item as (dims (0 or 1), int64 positions) per index array (a mask gives one per axis)."""
    if item.kind == "int":
        return [(item.dims, np.asarray(item.value.start, dtype=np.int64))]
    if item.kind == "array":
        return [(item.dims, item.value)]
    if item.kind == "mask":
        return [((d,), p) for d, p in zip(item.dims, item.positions(), strict=True)]
    if item.kind == "bool0":
        return [((), np.zeros(int(item.value), dtype=np.int64))]
    return []


def _build_points(
    adv: list[tuple[tuple[int, ...], np.ndarray]],
    bshape: tuple[int, ...],
    chunks: Sequence[int],
    grid: Sequence[int],
) -> Points:
    """``adv``: (dims (0 or 1 dim), normalised array) per advanced index; arrays broadcast together to
    ``bshape`` (:attr:`Selection.index_shape`)."""
    dims: list[int] = []
    pos: list[np.ndarray] = []
    for ds, a in adv:
        if ds:
            dims.append(ds[0])
            pos.append(np.broadcast_to(a, bshape).reshape(-1))
    order: np.ndarray | list[int] = np.argsort(dims, kind="stable") if dims else []
    dims_sorted = tuple(dims[i] for i in order)
    pos_sorted = [pos[i] for i in order]
    return group_points(dims_sorted, pos_sorted, bshape, chunks, grid)


def _table(item: Item, chunks: tuple[int, ...], drop: bool = False) -> Entry:
    """An orthogonal item's entry: its table, the shape its axis takes in the result, whether it drops."""
    d = item.dims[0]
    if item.kind == "array":
        return array_table(d, item.value.reshape(-1), chunks[d]), tuple(item.value.shape), drop
    if item.kind == "mask":
        t = array_table(d, item.positions()[0], chunks[d])
    else:  # a slice or an integer (a progression of one)
        t = slice_table(d, item.value, chunks[d])
    return t, (t.length,), drop


# --- the four indexing forms ---------------------------------------------------------------------------
def plan(selection: Selection, chunks: Sequence[int], *, keep_dims: bool = False) -> SelectionPlan:
    """Plan a normalized selection over chunks of ``chunks`` elements (``keep_dims``: ``oindex`` integers
    keep their dimension, as :func:`altarr.extract` with ``drop=False`` asks).
    """
    sel = selection.resolve()
    chunks = tuple(int(c) for c in chunks)
    if sel.form == "numpy":
        return _plan_numpy(sel, chunks)
    if sel.form == "outer":
        return _plan_outer(sel, chunks, keep_dims)
    if sel.form == "vector":
        return _plan_vector(sel, chunks)
    return _plan_flat(sel, chunks)


def _plan_numpy(sel: Selection, chunks: tuple[int, ...]) -> SelectionPlan:
    scalar = not sel.ellipsis
    if sel.basic:
        entries = ["new" if i.kind == "new" else _table(i, chunks, i.kind == "int") for i in sel.items]
        return SelectionPlan(sel.shape, chunks, entries, None, scalar)
    adv = [a for item in sel.items for a in _adv(item)]
    points = _build_points(adv, sel.index_shape, chunks, nchunks_of(sel.shape, chunks))
    entries = ["points"] if sel.points_first else []
    placed = sel.points_first
    for item in sel.items:
        if item.kind == "new":
            entries.append("new")
        elif item.kind == "slice":
            entries.append(_table(item, chunks))
        elif not placed:
            entries.append("points")
            placed = True
    return SelectionPlan(sel.shape, chunks, entries, points, scalar)


def _plan_outer(sel: Selection, chunks: tuple[int, ...], keep_dims: bool) -> SelectionPlan:
    entries = [_table(i, chunks, i.kind == "int" and not keep_dims) for i in sel.items]
    return SelectionPlan(sel.shape, chunks, entries, None, not sel.ellipsis)


def _plan_vector(sel: Selection, chunks: tuple[int, ...]) -> SelectionPlan:
    adv = [a for item in sel.items if item.kind != "slice" for a in _adv(item)]
    points = _build_points(adv, sel.index_shape, chunks, nchunks_of(sel.shape, chunks)) if adv else None
    entries: list[Any] = [] if points is None else ["points"]
    entries += [_table(i, chunks) for i in sel.items if i.kind == "slice"]
    return SelectionPlan(sel.shape, chunks, entries, points, not sel.ellipsis)


def _plan_flat(sel: Selection, chunks: tuple[int, ...]) -> SelectionPlan:
    shape = sel.shape
    (item,) = sel.items
    if item.kind == "array":
        pos = item.value
    else:  # int (a 0-d position) or slice
        pos = item.positions()[0]
        if item.kind == "int":
            pos = pos.reshape(())
    flat = pos.reshape(-1)
    multi = np.unravel_index(flat, shape) if shape else ()
    dims = tuple(range(len(shape)))
    grid = nchunks_of(shape, chunks)
    points = group_points(
        dims, [np.asarray(m, dtype=np.int64) for m in multi], tuple(pos.shape), chunks, grid
    )
    return SelectionPlan(shape, chunks, ["points"], points, item.kind == "int")


# --- many selections ----------------------------------------------------------------------------------
#: How the selections of a batch are interpreted: NumPy indexing, orthogonal (``oindex``) or vectorized
#: (``vindex``) indexing, by the form :func:`~altarr.selection.normalize.normalize` takes.
MODES = {"numpy": "numpy", "oindex": "outer", "vindex": "vector"}


def plan_selections(
    selections: Sequence[Any], shape: tuple[int, ...], chunks: tuple[int, ...], mode: str = "numpy"
) -> list[SelectionPlan]:
    """One plan per selection; ``mode`` is a key of :data:`MODES`."""
    try:
        form = MODES[mode]
    except KeyError:
        raise ValueError(f"mode must be one of {sorted(MODES)}, got {mode!r}") from None
    if isinstance(selections, tuple | str) or not isinstance(selections, Sequence):
        raise TypeError(
            "read_regions/read_many take a list of selections (one per region), e.g. [np.s_[0:4, 2], ...]"
        )
    return [plan(normalize(sel, shape, form), chunks) for sel in selections]


def chunk_users(plans: Sequence[SelectionPlan]) -> dict[tuple[int, ...], list[tuple[int, int]]]:
    """Every distinct chunk the plans touch, in first-seen order, with ``(plan, row)`` of each use."""
    users: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    for pi, p in enumerate(plans):
        for row, c in enumerate(p.coords.tolist()):
            users.setdefault(tuple(c), []).append((pi, row))
    return users
