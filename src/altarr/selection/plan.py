"""A planned selection (:class:`SelectionPlan`): the sorted chunks it touches and, per chunk, the copy that
moves its selected part into a work array (:meth:`~SelectionPlan.place`; :meth:`~SelectionPlan.scatter`
for writes), laid out as NumPy's result by :meth:`~SelectionPlan.finish`. Nothing is read while planning.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .tables import DimTable, Points

__all__ = ["Entry", "SelectionPlan"]


def _ix_selectors(per_axis: list[list[Any]], limits: list[int]) -> list[list[Any]] | None:
    """``np.ix_``-style selectors over the span of axes that hold index arrays (``None`` if none do; see
    :meth:`SelectionPlan._selectors`); ``limits[a]`` bounds axis ``a``'s slices."""
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


#: One orthogonal dimension of a plan: its table, the shape its axis takes in the result (an index
#: array's) and whether it is dropped (an integer); a plan's ``entries`` are these, ``"points"`` (the
#: advanced indices' broadcast dimensions) and ``"new"`` (a ``None`` axis), in the result's order.
Entry = tuple[DimTable, tuple[int, ...], bool]


class SelectionPlan:
    """Touched chunks of a selection and how to assemble the result from them."""

    def __init__(
        self,
        shape: tuple[int, ...],
        chunks: tuple[int, ...],
        entries: list[Any],
        points: Points | None,
        scalar: bool,
    ) -> None:
        self.shape = shape
        self.chunks = chunks
        ortho = self.ortho = [e[0] for e in entries if isinstance(e, tuple)]
        self.points = points
        ndim = len(shape)
        lead = (points.npoints,) if points is not None else ()
        self.work_shape = lead + tuple(t.length for t in ortho)
        self._expanded, self._perm, self.result_shape = _layout(
            points.bshape if points is not None else (), entries
        )
        self.scalar = scalar and not self.result_shape
        coords, row_ortho, row_group = _touched(ndim, ortho, points)
        if 0 in self.work_shape:
            coords, row_ortho = coords[:0], row_ortho[:0]
            row_group = None if row_group is None else row_group[:0]
        self._row_group = None if row_group is None else row_group.tolist()
        self.coords = coords
        self._row_ortho_arr = row_ortho
        self._row_ortho = row_ortho.tolist()
        self._sel: Any = None  # per-axis selectors, built on the first place()
        if points is not None:
            pt_perm = tuple(points.dims) + tuple(t.dim for t in ortho)
            self._pt_perm = None if pt_perm == tuple(range(ndim)) else pt_perm

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
        """Copy the selected part of row ``i``'s chunk into the work array: one gather, one store."""
        outs, blk, ins = self._row(i, chunk)
        work[outs] = blk[ins]

    def scatter(self, work: np.ndarray, i: int, chunk: np.ndarray) -> None:
        """The inverse of :meth:`place` (NumPy's assignment: for repeated indices the last value wins)."""
        outs, blk, ins = self._row(i, chunk)
        if self.points is not None and not self.points.dims:
            # only 0-d booleans index: each point is the whole selection, so the last one wins
            outs = (self.points.npoints - 1,) + outs[1:]
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
        # point dimensions: every orthogonal one is a slice here, so one fancy take per group does it
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
        """Per orthogonal axis and chunk: the raw in/out selectors, and ``np.ix_``-style ones. NumPy's
        advanced indexing would move or pair up axes selected by arrays; instead every axis from the first
        to the last array axis gets an array broadcasting along its own position only (slices become
        ``arange``), so ``chunk[ins]`` is the cartesian selection in the work array's axis order. Rows of
        slices only keep the raw ones."""
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


def _layout(
    bshape: tuple[int, ...], entries: list[Any]
) -> tuple[tuple[int, ...], tuple[int, ...] | None, tuple[int, ...]]:
    """From the work array to NumPy's layout: ``(expanded, perm, result shape)``. The work array reshaped
    to ``expanded`` (the broadcast shape of the points, then each orthogonal axis expanded to its index's
    shape) and transposed by ``perm`` (``None``: in order) puts the axes where NumPy puts them, the
    dropped integer axes last; reshaped to the result's shape they are gone and ``None`` axes are in."""
    expanded: list[int] = list(bshape)
    perm: list[int] = []
    final: list[int] = []
    dropped: list[int] = []
    for entry in entries:
        if entry == "new":
            final.append(1)
        elif entry == "points":
            perm.extend(range(len(bshape)))
            final.extend(bshape)
        else:
            _, exp_shape, drop = entry
            axes = range(len(expanded), len(expanded) + len(exp_shape))
            expanded.extend(exp_shape)
            if drop:
                dropped.extend(axes)
            else:
                perm.extend(axes)
                final.extend(exp_shape)
    perm.extend(dropped)
    return tuple(expanded), (None if perm == list(range(len(perm))) else tuple(perm)), tuple(final)


def _touched(
    ndim: int, ortho: list[DimTable], points: Points | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The touched chunks ``(coords, row_ortho, row_group)``: the cartesian product of the orthogonal
    tables' chunks (``row_ortho``: each row's chunk number in each table), times the point groups
    (``row_group``: each row's group; ``None`` without points), sorted in C order."""
    m = [len(t.chunk_ids) for t in ortho]
    if not ortho:
        combo = np.zeros((1, 0), np.int64)
    elif 0 not in m:
        combo = np.indices(m, dtype=np.int64).reshape(len(m), -1).T
    else:
        combo = np.zeros((0, len(m)), np.int64)
    if points is None:
        coords = np.empty((len(combo), ndim), np.int64)
        for a, t in enumerate(ortho):
            coords[:, t.dim] = t.chunk_ids[combo[:, a]]
        return coords, combo, None
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
    return coords, row_ortho, row_group
