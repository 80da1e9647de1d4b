"""The chunk planner: a normalized :class:`~altarr.selection.items.Selection` -> a
:class:`~altarr.selection.plan.SelectionPlan`, for each indexing form and for batches of selections.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .items import Item, Selection
from .normalize import normalize
from .plan import SelectionPlan
from .tables import DimTable, Points, array_table, group_points, nchunks_of, slice_table

__all__ = [
    "MODES",
    "chunk_users",
    "plan",
    "plan_flat",
    "plan_numpy",
    "plan_outer",
    "plan_selections",
    "plan_vector",
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


class _Layout:
    """The orthogonal tables of a plan and where their axes go in the result."""

    def __init__(self, shape: tuple[int, ...], chunks: tuple[int, ...]) -> None:
        self.shape, self.chunks = shape, chunks
        self.ortho: list[DimTable] = []
        self.layout: list[tuple[Any, ...]] = []
        self.exp_shapes: list[tuple[int, ...]] = []
        self.dropped: list[bool] = []

    def add(self, t: DimTable, exp_shape: tuple[int, ...], drop: bool) -> None:
        self.layout.append(("ortho", len(self.ortho)))
        self.ortho.append(t)
        self.exp_shapes.append(exp_shape)
        self.dropped.append(drop)

    def add_range(self, item: Item, *, drop: bool) -> None:
        d = item.dims[0]
        t = slice_table(d, item.value, self.shape[d], self.chunks[d])
        self.add(t, (t.length,), drop)

    def plan(self, points: Points | None, scalar: bool) -> SelectionPlan:
        return SelectionPlan(
            self.shape,
            self.chunks,
            self.ortho,
            points,
            self.layout,
            self.exp_shapes,
            self.dropped,
            scalar=scalar,
        )


# --- the four indexing forms ---------------------------------------------------------------------------
def plan(selection: Selection, chunks: Sequence[int], *, keep_dims: bool = False) -> SelectionPlan:
    """Plan a normalized selection over chunks of ``chunks`` elements (``keep_dims``: ``oindex`` integers
    keep their dimension, as :func:`altarr.extract` with ``drop=False`` asks).

    >>> plan(normalize([0, 5], (8,)), (2,)).coords.tolist()
    [[0], [2]]
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
    out = _Layout(sel.shape, chunks)
    scalar = not sel.ellipsis
    if sel.basic:
        for item in sel.items:
            if item.kind == "new":
                out.layout.append(("new",))
            elif item.kind == "slice":
                out.add_range(item, drop=False)
            else:  # int
                d = item.dims[0]
                out.add(slice_table(d, item.value, sel.shape[d], chunks[d]), (1,), True)
        return out.plan(None, scalar)
    adv: list[tuple[tuple[int, ...], np.ndarray]] = []
    for item in sel.items:
        if item.kind in ("int", "array", "mask", "bool0"):
            adv.extend(_adv(item))
    points = _build_points(adv, sel.index_shape, chunks, nchunks_of(sel.shape, chunks))
    if sel.points_first:
        out.layout.append(("points",))
    placed = sel.points_first
    for item in sel.items:
        if item.kind == "new":
            out.layout.append(("new",))
        elif item.kind == "slice":
            out.add_range(item, drop=False)
        elif not placed:
            out.layout.append(("points",))
            placed = True
    return out.plan(points, scalar)


def _plan_outer(sel: Selection, chunks: tuple[int, ...], keep_dims: bool) -> SelectionPlan:
    out = _Layout(sel.shape, chunks)
    for item in sel.items:
        d = item.dims[0]
        if item.kind == "slice":
            out.add_range(item, drop=False)
        elif item.kind == "int":
            out.add(slice_table(d, item.value, sel.shape[d], chunks[d]), (1,), not keep_dims)
        elif item.kind == "mask":
            t = array_table(d, item.positions()[0], chunks[d])
            out.add(t, (t.length,), False)
        else:  # array
            a = item.value
            out.add(array_table(d, a.reshape(-1), chunks[d]), tuple(a.shape), False)
    return out.plan(None, not sel.ellipsis)


def _plan_vector(sel: Selection, chunks: tuple[int, ...]) -> SelectionPlan:
    out = _Layout(sel.shape, chunks)
    adv: list[tuple[tuple[int, ...], np.ndarray]] = []
    for item in sel.items:
        if item.kind != "slice":
            adv.extend(_adv(item))
    points = _build_points(adv, sel.index_shape, chunks, nchunks_of(sel.shape, chunks)) if adv else None
    if points is not None:
        out.layout.append(("points",))
    for item in sel.items:
        if item.kind == "slice":
            out.add_range(item, drop=False)
    return out.plan(points, not sel.ellipsis)


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
    return SelectionPlan(shape, chunks, [], points, [("points",)], [], [], scalar=item.kind == "int")


def plan_numpy(key: Any, shape: tuple[int, ...], chunks: tuple[int, ...]) -> SelectionPlan:
    """Plan ``x[key]`` with exactly NumPy's semantics."""
    return plan(normalize(key, shape, "numpy"), chunks)


def plan_outer(
    key: Any, shape: tuple[int, ...], chunks: tuple[int, ...], *, keep_dims: bool = False
) -> SelectionPlan:
    """Plan ``x.oindex[key]``: one subscript per dimension, combined as a cartesian product (integers drop
    their dimension unless ``keep_dims``)."""
    return plan(normalize(key, shape, "outer"), chunks, keep_dims=keep_dims)


def plan_vector(key: Any, shape: tuple[int, ...], chunks: tuple[int, ...]) -> SelectionPlan:
    """Plan ``x.vindex[key]``: index arrays broadcast together, their dimensions first, slices after."""
    return plan(normalize(key, shape, "vector"), chunks)


def plan_flat(key: Any, shape: tuple[int, ...], chunks: tuple[int, ...]) -> SelectionPlan:
    """Plan ``x.flat[key]``: a C-order linear index (int, slice, integer or boolean array)."""
    return plan(normalize(key, shape, "flat"), chunks)


# --- many selections ----------------------------------------------------------------------------------
#: How the selections of a batch are interpreted: NumPy indexing, orthogonal (``oindex``) or vectorized
#: (``vindex``) indexing.
MODES: dict[str, Callable[..., SelectionPlan]] = {
    "numpy": plan_numpy,
    "oindex": plan_outer,
    "vindex": plan_vector,
}


def plan_selections(
    selections: Sequence[Any], shape: tuple[int, ...], chunks: tuple[int, ...], mode: str = "numpy"
) -> list[SelectionPlan]:
    """One plan per selection; ``mode`` is a key of :data:`MODES`.

    >>> tuple(len(p) for p in plan_selections([np.s_[0:3], np.s_[5]], (8,), (2,)))
    (2, 1)
    """
    try:
        planner = MODES[mode]
    except KeyError:
        raise ValueError(f"mode must be one of {sorted(MODES)}, got {mode!r}") from None
    if isinstance(selections, tuple | str) or not isinstance(selections, Sequence):
        raise TypeError(
            "read_regions/read_many take a list of selections (one per region), e.g. [np.s_[0:4, 2], ...]"
        )
    return [planner(sel, shape, chunks) for sel in selections]


def chunk_users(plans: Sequence[SelectionPlan]) -> dict[tuple[int, ...], list[tuple[int, int]]]:
    """Every distinct chunk the plans touch, in first-seen order, with ``(plan, row)`` of each use.

    >>> chunk_users(plan_selections([np.s_[0:3], np.s_[2]], (8,), (2,)))
    {(0,): [(0, 0)], (1,): [(0, 1), (1, 0)]}
    """
    users: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    for pi, p in enumerate(plans):
        for row, c in enumerate(p.coords.tolist()):
            users.setdefault(tuple(c), []).append((pi, row))
    return users
