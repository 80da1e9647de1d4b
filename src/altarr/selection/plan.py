"""The chunk planner: a normalized :class:`~altarr.selection.normalize.Selection` -> the chunks it touches.

Every indexing form (NumPy ``x[...]``, ``.oindex``, ``.vindex``, ``.flat``, hyperslabs) is planned into
one :class:`Plan`: the sorted list of touched chunks (``plan.coords``, ``(n, ndim)`` int64), and for each
of them the vectorised copy that moves its selected part into the result. Nothing is read while planning.

A plan splits the array's dimensions into two kinds:

* *orthogonal* dimensions (slices, integers of basic indexing, ``.oindex`` arrays): for each one a
  :class:`DimTable` lists the touched chunk indices and, per chunk, the output positions and in-chunk
  offsets (slices whenever possible). Their touched chunks combine as a cartesian product.
* *point* dimensions (NumPy advanced indexing, ``.vindex``, ``.flat``): the index arrays broadcast to a
  shape ``B`` of ``P`` points; points are grouped by the chunk that holds them (a sort of their raveled
  chunk ids, no per-point Python objects) and each group is gathered with one fancy take.

The result is assembled in a work array of shape ``(P?, *orthogonal lengths)`` and then reshaped and
transposed into NumPy's output layout (broadcast dimensions in place or first, ``None`` axes, dropped
integer axes). Basic selections read by the block engine have a leaner plan of their own,
:class:`~altarr.selection.regions.RegionPlan`, built on the same per-dimension arithmetic
(:func:`forward_pieces`).

Example:
    >>> p = plan_numpy((slice(2, 9), 1), shape=(10, 7), chunks=(4, 3))
    >>> p.coords.tolist()
    [[0, 0], [1, 0], [2, 0]]
    >>> p.result_shape
    (7,)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import SelectionError
from .normalize import DimSelection, Item, Selection, normalize

__all__ = [
    "DimTable",
    "MODES",
    "Plan",
    "Points",
    "chunk_users",
    "forward_pieces",
    "piece_rows",
    "nchunks_of",
    "plan",
    "plan_flat",
    "plan_numpy",
    "plan_outer",
    "plan_selections",
    "plan_vector",
]


def nchunks_of(shape: Sequence[int], chunks: Sequence[int]) -> tuple[int, ...]:
    """Chunks along each dimension (0 for an empty dimension).

    >>> nchunks_of((10, 0, 7), (4, 2, 7))
    (3, 0, 1)
    """
    return tuple(-(-int(s) // int(c)) for s, c in zip(shape, chunks, strict=True))


# --- per-dimension tables --------------------------------------------------------------------------------
@dataclass
class DimTable:
    """One orthogonal dimension: touched chunks and, per chunk, where its selected part goes."""

    dim: int
    chunk_ids: np.ndarray  # (m,) ascending
    out_sel: list[Any]  # per chunk: slice (step 1) or int64 array of positions along the work axis
    in_sel: list[Any]  # per chunk: slice or int64 array of offsets inside the chunk
    counts: np.ndarray  # (m,) selected elements per chunk
    length: int  # elements along the work axis
    has_array: bool


def _ceil_div(a: np.ndarray, b: int) -> np.ndarray:
    return -((-a) // b)


def forward_pieces(
    d: DimSelection, c: int, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The chunks of ``c`` elements that the forward progression ``d`` touches on a dimension of ``size``:
    ``(chunk ids, k0, k1, first)``, ascending, where the chunk holds the progression's elements
    ``k0 <= k < k1`` and ``first`` is the offset of element ``k0`` inside the chunk. The one piece of chunk
    arithmetic both planners share (``d.reverse`` is ignored here: callers flip).

    >>> list(zip(*(a.tolist() for a in forward_pieces(DimSelection(1, 2, 5), 4, 10))))  # (id, k0, k1, first)
    [(0, 0, 2, 1), (1, 2, 4, 1), (2, 4, 5, 1)]
    """
    if d.n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    j = np.arange(d.start // c, d.last // c + 1, dtype=np.int64)
    lo = j * c
    hi = np.minimum(lo + c, size)
    k0 = np.maximum(_ceil_div(lo - d.start, d.step), 0)
    k1 = np.minimum(_ceil_div(hi - d.start, d.step), d.n)
    keep = k1 > k0
    j, lo, k0, k1 = j[keep], lo[keep], k0[keep], k1[keep]
    return j, k0, k1, d.start + d.step * k0 - lo


#: Up to this many chunks along a dimension, :func:`piece_rows` walks them with Python integers: NumPy's
#: per-call overhead (~10 us an operation) dominated small reads (a few elements in one chunk).
_SMALL_WALK = 64


def piece_rows(d: DimSelection, c: int, size: int) -> list[tuple[int, int, int, int]]:
    """:func:`forward_pieces` as rows ``(chunk id, k0, k1, first)`` of Python integers, for the planners
    that build slices from them (the same arithmetic; NumPy only when many chunks are touched).

    >>> piece_rows(DimSelection(1, 2, 5), 4, 10)
    [(0, 0, 2, 1), (1, 2, 4, 1), (2, 4, 5, 1)]
    """
    if d.n == 0:
        return []
    start, step, n = d.start, d.step, d.n
    j0, j1 = start // c, d.last // c
    if j1 - j0 >= _SMALL_WALK:
        return list(zip(*(a.tolist() for a in forward_pieces(d, c, size)), strict=True))
    rows = []
    for j in range(j0, j1 + 1):
        lo = j * c
        hi = min(lo + c, size)
        k0 = max(-((start - lo) // step), 0)
        k1 = min(-((start - hi) // step), n)
        if k1 > k0:
            rows.append((j, k0, k1, start + step * k0 - lo))
    return rows


def _slice_table(dim: int, d: DimSelection, n: int, c: int) -> DimTable:
    """A slice (or an integer, as a one-element progression) along one dimension; a backwards one reads
    each chunk backwards into the mirrored output positions."""
    rows = piece_rows(d, c, n)
    j = np.array([r[0] for r in rows], dtype=np.int64)
    counts = np.array([r[2] - r[1] for r in rows], dtype=np.int64)
    out_sel: list[Any] = []
    in_sel: list[Any] = []
    step = d.step
    for _, a, b, i0 in rows:
        cnt = b - a
        if not d.reverse:
            out_sel.append(slice(a, b))
            in_sel.append(slice(i0, i0 + step * (cnt - 1) + 1, step))
        else:
            out_sel.append(slice(d.n - b, d.n - a))
            in_sel.append(slice(i0 + step * (cnt - 1), i0 - 1 if i0 >= 1 else None, -step))
    return DimTable(dim, j, out_sel, in_sel, counts, d.n, False)


def _runs(keys: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray]:
    """Group equal ``keys`` (chunk ids of selected points): ``(order, sorted keys, starts, ends)``, where
    ``order`` is the stable sort (``None`` when the keys are already ascending) and each run of equal
    sorted keys is ``[starts[i], ends[i])``.

    >>> [a.tolist() for a in _runs(np.array([2, 0, 2]))]
    [[1, 0, 2], [0, 2, 2], [0, 1], [1, 3]]
    """
    n = len(keys)
    if n == 1 or bool(np.all(keys[1:] >= keys[:-1])):
        order, skeys = None, keys
    else:
        order = np.argsort(keys, kind="stable")
        skeys = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], skeys[1:] != skeys[:-1])))
    return order, skeys, starts, np.append(starts[1:], n)


def _array_table(dim: int, pos: np.ndarray, c: int) -> DimTable:
    """``pos``: 1-D int64 positions, already bounds-checked and non-negative."""
    total = len(pos)
    if total == 0:
        empty = np.zeros(0, dtype=np.int64)
        return DimTable(dim, empty, [], [], empty, 0, False)
    cid = pos // c
    order, scid, starts, ends = _runs(cid)
    ids = scid[starts]
    out_sel: list[Any] = []
    in_sel: list[Any] = []
    has_array = False
    for s, e, j in zip(starts.tolist(), ends.tolist(), ids.tolist(), strict=True):
        outs = np.arange(s, e, dtype=np.int64) if order is None else order[s:e]
        offs = pos[outs] - j * c
        n_here = e - s
        contiguous_out = order is None or int(outs[-1]) - int(outs[0]) == n_here - 1
        if contiguous_out and n_here > 1 and order is not None:
            contiguous_out = bool(np.all(np.diff(outs) == 1))
        step_one = n_here == 1 or bool(np.all(np.diff(offs) == 1))
        if contiguous_out and step_one:
            o0, i0 = int(outs[0]), int(offs[0])
            out_sel.append(slice(o0, o0 + n_here))
            in_sel.append(slice(i0, i0 + n_here))
        else:
            has_array = True
            out_sel.append(slice(int(outs[0]), int(outs[0]) + n_here) if contiguous_out else outs)
            in_sel.append(offs)
    return DimTable(dim, ids, out_sel, in_sel, (ends - starts).astype(np.int64), total, has_array)


# --- point groups ----------------------------------------------------------------------------------------
@dataclass
class Points:
    """Point (vectorised) dimensions: ``P`` points grouped by the chunk that holds them."""

    dims: tuple[int, ...]
    bshape: tuple[int, ...]
    npoints: int
    chunk_ids: np.ndarray  # (G, k)
    pidx: list[Any]  # per group: slice or int64 array of point numbers
    offsets: list[tuple[np.ndarray, ...]]  # per group: in-chunk offsets along each point dimension
    sizes: np.ndarray  # (G,) points per group


def _points(
    dims: tuple[int, ...],
    pos: list[np.ndarray],
    bshape: tuple[int, ...],
    chunks: Sequence[int],
    grid: Sequence[int],
) -> Points:
    npts = int(np.prod(bshape, dtype=np.int64))
    k = len(dims)
    if npts == 0:
        return Points(dims, bshape, 0, np.zeros((0, k), np.int64), [], [], np.zeros(0, np.int64))
    if k == 0:  # only 0-d boolean indices: every point takes the whole remaining selection
        return Points(
            dims, bshape, npts, np.zeros((1, 0), np.int64), [slice(0, npts)], [()], np.array([npts], np.int64)
        )
    csz = [int(chunks[d]) for d in dims]
    cids = [p // c for p, c in zip(pos, csz, strict=True)]
    sub_grid = [int(grid[d]) for d in dims]
    if float(np.prod(sub_grid, dtype=np.float64)) < 2.0**62:
        lin = np.ravel_multi_index(cids, sub_grid) if k > 1 else cids[0]
    else:  # astronomically large grids: group by unique rows instead of raveled ids
        _, lin = np.unique(np.stack(cids, axis=1), axis=0, return_inverse=True)
        lin = lin.reshape(-1)
    order, slin, starts, ends = _runs(lin)
    first = starts if order is None else order[starts]
    group_ids = np.stack([c[first] for c in cids], axis=1).astype(np.int64)
    pidx: list[Any] = []
    offsets: list[tuple[np.ndarray, ...]] = []
    for g, (s, e) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        if order is None:
            sel: Any = slice(s, e)
            offs = tuple(p[s:e] - int(group_ids[g, a]) * csz[a] for a, p in enumerate(pos))
        else:
            sel = order[s:e]
            offs = tuple(p[sel] - int(group_ids[g, a]) * csz[a] for a, p in enumerate(pos))
        pidx.append(sel)
        offsets.append(offs)
    return Points(dims, bshape, npts, group_ids, pidx, offsets, (ends - starts).astype(np.int64))


# --- the plan ---------------------------------------------------------------------------------------------
def _ix_selectors(per_axis: list[list[Any]], limits: list[int]) -> list[list[Any]] | None:
    """``np.ix_``-style selectors over the span of axes that hold index arrays (``None`` if none do).

    ``per_axis[a][j]`` is a slice or an int64 array; ``limits[a]`` bounds axis ``a`` (for the slices).
    Axes outside the span keep their selectors. Inside it, axis ``k`` of ``m`` gets an array of shape
    ``(1, .., n, .., 1)``, so the arrays broadcast to the cartesian block and NumPy keeps it in place.
    """
    has = [any(type(s) is np.ndarray for s in sels) for sels in per_axis]
    if not any(has):
        return None
    first = has.index(True)
    last = len(has) - 1 - has[::-1].index(True)
    m = last - first + 1
    out: list[list[Any]] = []
    for a, sels in enumerate(per_axis):
        if a < first or a > last:
            out.append(sels)
            continue
        shape = [1] * m
        shape[a - first] = -1
        conv = []
        for s in sels:
            arr = np.arange(*s.indices(limits[a]), dtype=np.intp) if isinstance(s, slice) else s
            conv.append(np.asarray(arr, dtype=np.intp).reshape(shape))
        out.append(conv)
    return out


class Plan:
    """Touched chunks of a selection and how to assemble the result from them."""

    def __init__(
        self,
        shape: tuple[int, ...],
        chunks: tuple[int, ...],
        ortho: list[DimTable],
        points: Points | None,
        layout: list[tuple[Any, ...]],
        exp_shapes: list[tuple[int, ...]],
        dropped: list[bool],
        scalar: bool,
    ) -> None:
        self.shape = shape
        self.chunks = chunks
        self.ortho = ortho
        self.points = points
        ndim = len(shape)
        ortho_dims = [t.dim for t in ortho]
        # work array and final layout
        bshape = points.bshape if points is not None else ()
        lead = (points.npoints,) if points is not None else ()
        self.work_shape = lead + tuple(t.length for t in ortho)
        expanded: list[int] = list(bshape)
        axes_of: list[list[int]] = []
        for es in exp_shapes:
            axes_of.append(list(range(len(expanded), len(expanded) + len(es))))
            expanded.extend(es)
        self._expanded = tuple(expanded)
        perm: list[int] = []
        final: list[int] = []
        for entry in layout:
            if entry[0] == "new":
                final.append(1)
            elif entry[0] == "points":
                perm.extend(range(len(bshape)))
                final.extend(bshape)
            else:
                j = entry[1]
                if not dropped[j]:
                    perm.extend(axes_of[j])
                    final.extend(exp_shapes[j])
        for j, drop in enumerate(dropped):
            if drop:
                perm.extend(axes_of[j])
        self._perm = None if perm == list(range(len(perm))) else tuple(perm)
        self.result_shape = tuple(final)
        self.scalar = scalar and not self.result_shape
        # touched chunks
        ortho_ids = [t.chunk_ids for t in ortho]
        m = [len(ids) for ids in ortho_ids]
        n_combo = int(np.prod(m, dtype=np.int64))
        if ortho:
            combo = (
                np.indices(m, dtype=np.int64).reshape(len(m), -1).T
                if n_combo
                else np.zeros((0, len(m)), np.int64)
            )
        else:
            combo = np.zeros((1, 0), np.int64)
        if points is None:
            coords = np.empty((len(combo), ndim), np.int64)
            for a, t in enumerate(ortho):
                coords[:, t.dim] = t.chunk_ids[combo[:, a]]
            self._row_group = None
            row_ortho = combo
        else:
            g = len(points.chunk_ids)
            row_group = np.repeat(np.arange(g, dtype=np.int64), len(combo))
            row_ortho = np.tile(combo, (g, 1))
            coords = np.empty((len(row_group), ndim), np.int64)
            for a, d in enumerate(points.dims):
                coords[:, d] = points.chunk_ids[row_group, a]
            for a, t in enumerate(ortho):
                coords[:, t.dim] = t.chunk_ids[row_ortho[:, a]]
            if len(coords) > 1 and ndim:
                order = np.lexsort(coords.T[::-1])
                coords, row_group, row_ortho = coords[order], row_group[order], row_ortho[order]
            self._row_group = row_group.tolist()
        if int(np.prod(self.work_shape, dtype=np.int64)) == 0:
            coords = coords[:0]
            row_ortho = row_ortho[:0]
            if self._row_group is not None:
                self._row_group = []
        self.coords = coords
        self._row_ortho_arr = row_ortho
        self._row_ortho = row_ortho.tolist()
        self._sel: Any = None  # per-axis selectors, built on the first place()
        if points is not None:
            pt_perm = tuple(points.dims) + tuple(ortho_dims)
            self._pt_perm = None if pt_perm == tuple(range(ndim)) else pt_perm
        self.dtype: np.dtype | None = None

    def __len__(self) -> int:
        return len(self.coords)

    def row_elements(self) -> np.ndarray:
        """Selected elements taken from each touched chunk (duplicates counted)."""
        n = len(self.coords)
        out = np.ones(n, dtype=np.int64)
        for a, t in enumerate(self.ortho):
            out *= t.counts[self._row_ortho_arr[:n, a]] if n else 1
        if self.points is not None and n:
            out *= self.points.sizes[np.asarray(self._row_group, dtype=np.int64)]
        return out

    def new_work(self, dtype: np.dtype) -> np.ndarray:
        return np.empty(self.work_shape, dtype=dtype)

    def place(self, work: np.ndarray, i: int, chunk: np.ndarray) -> None:
        """Copy the selected part of row ``i``'s chunk into the work array.

        One gather from the chunk and one store into the work array per chunk, no intermediate copies:
        index arrays of several orthogonal dimensions are combined ``np.ix_``-style (see
        :meth:`_selectors`), so ``chunk[ins]`` reads only the selected elements.
        """
        outs, blk, ins = self._row(i, chunk)
        work[outs] = blk[ins]

    def scatter(self, work: np.ndarray, i: int, chunk: np.ndarray) -> None:
        """The inverse of :meth:`place`: write row ``i``'s part of the work array into its chunk (an
        assignment ``x[key] = values`` of NumPy's semantics; for repeated indices the last value wins)."""
        outs, blk, ins = self._row(i, chunk)
        blk[ins] = work[outs]

    def _row(self, i: int, chunk: np.ndarray) -> tuple[tuple[Any, ...], np.ndarray, tuple[Any, ...]]:
        """Row ``i``'s selectors: ``(outs, blk, ins)`` with ``work[outs]`` and ``blk[ins]`` the same
        elements, ``blk`` the chunk (a transposed view of it for point dimensions)."""
        js = self._row_ortho[i]
        sel = self._sel
        if sel is None:
            sel = self._sel = self._selectors()
        in_raw, in_adv, out_raw, out_adv = sel
        ins = tuple(in_raw[a][j] for a, j in enumerate(js))
        outs = tuple(out_raw[a][j] for a, j in enumerate(js))
        if self.points is None:
            if in_adv is not None and any(type(s) is np.ndarray for s in ins):
                ins = tuple(in_adv[a][j] for a, j in enumerate(js))
            if out_adv is not None and any(type(s) is np.ndarray for s in outs):
                outs = tuple(out_adv[a][j] for a, j in enumerate(js))
            return outs, chunk, ins
        # Point dimensions: every orthogonal dimension is a slice here (NumPy advanced indexing and
        # .vindex combine index arrays as points), so one fancy take per group does it.
        g = self._row_group[i]  # type: ignore[index]  # set wherever points is (__init__)
        pts = self.points
        blk = chunk if self._pt_perm is None else chunk.transpose(self._pt_perm)
        return (pts.pidx[g],) + outs, blk, pts.offsets[g] + ins

    def unfinish(self, values: np.ndarray) -> np.ndarray:
        """The inverse of :meth:`finish`: ``values`` of the result shape laid out as the work array."""
        vals = np.broadcast_to(values, self.result_shape)
        inter = tuple(self._expanded[p] for p in self._perm) if self._perm is not None else self._expanded
        vals = vals.reshape(inter)
        if self._perm is not None:
            vals = vals.transpose(tuple(int(k) for k in np.argsort(self._perm)))
        return vals.reshape(self.work_shape)

    def _selectors(
        self,
    ) -> tuple[list[list[Any]], list[list[Any]] | None, list[list[Any]], list[list[Any]] | None]:
        """Per orthogonal axis and chunk: the raw in/out selectors, and ``np.ix_``-style ones.

        When some axes select with index arrays, NumPy's advanced indexing would move (or, for several
        arrays, pair up) those axes; instead every axis from the first to the last array axis gets an
        index array shaped to broadcast along its own position only (slices in that span become
        ``arange``), so the arrays form one contiguous block that stays in place and ``chunk[ins]`` is
        the cartesian selection in the work array's axis order. Rows whose selectors are all slices
        keep the raw ones (a basic-indexing copy).
        """
        ortho = self.ortho
        in_raw = [t.in_sel for t in ortho]
        out_raw = [t.out_sel for t in ortho]
        if self.points is not None:
            return in_raw, None, out_raw, None
        in_adv = _ix_selectors(in_raw, [self.chunks[t.dim] for t in ortho])
        out_adv = _ix_selectors(out_raw, [t.length for t in ortho])
        return in_raw, in_adv, out_raw, out_adv

    def finish(self, work: np.ndarray) -> Any:
        """The result in NumPy's layout (a NumPy scalar where NumPy gives one)."""
        res = work.reshape(self._expanded)
        if self._perm is not None:
            res = res.transpose(self._perm)
        res = res.reshape(self.result_shape)
        if self.scalar:
            return res[()]
        return res


def _broadcast(arrays: list[np.ndarray]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*[a.shape for a in arrays]))
    except ValueError:
        shapes = " ".join(str(a.shape) for a in arrays)
        raise SelectionError(
            f"shape mismatch: indexing arrays could not be broadcast together with shapes {shapes}"
        ) from None


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
    chunks: Sequence[int],
    grid: Sequence[int],
) -> Points:
    """``adv``: (dims (0 or 1 dim), normalised array) per advanced index; arrays broadcast together."""
    bshape = _broadcast([a for _, a in adv])
    dims: list[int] = []
    pos: list[np.ndarray] = []
    for ds, a in adv:
        if ds:
            dims.append(ds[0])
            pos.append(np.broadcast_to(a, bshape).reshape(-1))
    order: np.ndarray | list[int] = np.argsort(dims, kind="stable") if dims else []
    dims_sorted = tuple(dims[i] for i in order)
    pos_sorted = [pos[i] for i in order]
    return _points(dims_sorted, pos_sorted, bshape, chunks, grid)


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
        t = _slice_table(d, item.value, self.shape[d], self.chunks[d])
        self.add(t, (t.length,), drop)

    def plan(self, points: Points | None, scalar: bool) -> Plan:
        return Plan(
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
def plan(selection: Selection, chunks: Sequence[int], *, keep_dims: bool = False) -> Plan:
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


def _plan_numpy(sel: Selection, chunks: tuple[int, ...]) -> Plan:
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
                out.add(_slice_table(d, item.value, sel.shape[d], chunks[d]), (1,), True)
        return out.plan(None, scalar)
    adv: list[tuple[tuple[int, ...], np.ndarray]] = []
    adv_items: list[int] = []
    for item in sel.items:
        if item.kind in ("int", "array", "mask", "bool0"):
            adv.extend(_adv(item))
            adv_items.append(item.number)
    contiguous = adv_items[-1] - adv_items[0] == len(set(adv_items)) - 1
    points = _build_points(adv, chunks, nchunks_of(sel.shape, chunks))
    if not contiguous:
        out.layout.append(("points",))
    placed = not contiguous
    for item in sel.items:
        if item.kind == "new":
            out.layout.append(("new",))
        elif item.kind == "slice":
            out.add_range(item, drop=False)
        elif not placed:
            out.layout.append(("points",))
            placed = True
    return out.plan(points, scalar)


def _plan_outer(sel: Selection, chunks: tuple[int, ...], keep_dims: bool) -> Plan:
    out = _Layout(sel.shape, chunks)
    for item in sel.items:
        d = item.dims[0]
        if item.kind == "slice":
            out.add_range(item, drop=False)
        elif item.kind == "int":
            out.add(_slice_table(d, item.value, sel.shape[d], chunks[d]), (1,), not keep_dims)
        elif item.kind == "mask":
            t = _array_table(d, item.positions()[0], chunks[d])
            out.add(t, (t.length,), False)
        else:  # array
            a = item.value
            out.add(_array_table(d, a.reshape(-1), chunks[d]), tuple(a.shape), False)
    return out.plan(None, not sel.ellipsis)


def _plan_vector(sel: Selection, chunks: tuple[int, ...]) -> Plan:
    out = _Layout(sel.shape, chunks)
    adv: list[tuple[tuple[int, ...], np.ndarray]] = []
    for item in sel.items:
        if item.kind != "slice":
            adv.extend(_adv(item))
    points = _build_points(adv, chunks, nchunks_of(sel.shape, chunks)) if adv else None
    if points is not None:
        out.layout.append(("points",))
    for item in sel.items:
        if item.kind == "slice":
            out.add_range(item, drop=False)
    return out.plan(points, not sel.ellipsis)


def _plan_flat(sel: Selection, chunks: tuple[int, ...]) -> Plan:
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
    points = _points(dims, [np.asarray(m, dtype=np.int64) for m in multi], tuple(pos.shape), chunks, grid)
    return Plan(shape, chunks, [], points, [("points",)], [], [], scalar=item.kind == "int")


def plan_numpy(key: Any, shape: tuple[int, ...], chunks: tuple[int, ...]) -> Plan:
    """Plan ``x[key]`` with exactly NumPy's semantics."""
    return plan(normalize(key, shape, "numpy"), chunks)


def plan_outer(key: Any, shape: tuple[int, ...], chunks: tuple[int, ...], *, keep_dims: bool = False) -> Plan:
    """Plan ``x.oindex[key]``: one subscript per dimension, combined as a cartesian product.

    Integers drop their dimension (unless ``keep_dims``), integer arrays of any shape put their shape in
    place, 1-D boolean arrays select positions.
    """
    return plan(normalize(key, shape, "outer"), chunks, keep_dims=keep_dims)


def plan_vector(key: Any, shape: tuple[int, ...], chunks: tuple[int, ...]) -> Plan:
    """Plan ``x.vindex[key]``: index arrays broadcast together, their dimensions first, slices after."""
    return plan(normalize(key, shape, "vector"), chunks)


def plan_flat(key: Any, shape: tuple[int, ...], chunks: tuple[int, ...]) -> Plan:
    """Plan ``x.flat[key]``: a C-order linear index (int, slice, integer or boolean array)."""
    return plan(normalize(key, shape, "flat"), chunks)


# --- many selections ----------------------------------------------------------------------------------
#: How the selections of a batch are interpreted: NumPy indexing, orthogonal (``oindex``) or vectorized
#: (``vindex``) indexing.
MODES: dict[str, Callable[..., Plan]] = {"numpy": plan_numpy, "oindex": plan_outer, "vindex": plan_vector}


def plan_selections(
    selections: Sequence[Any], shape: tuple[int, ...], chunks: tuple[int, ...], mode: str = "numpy"
) -> list[Plan]:
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


def chunk_users(plans: Sequence[Plan]) -> dict[tuple[int, ...], list[tuple[int, int]]]:
    """Every distinct chunk the plans touch, in first-seen order, with ``(plan, row)`` of each use.

    >>> chunk_users(plan_selections([np.s_[0:3], np.s_[2]], (8,), (2,)))
    {(0,): [(0, 0)], (1,): [(0, 1), (1, 0)]}
    """
    users: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    for pi, p in enumerate(plans):
        for row, c in enumerate(p.coords.tolist()):
            users.setdefault(tuple(c), []).append((pi, row))
    return users
