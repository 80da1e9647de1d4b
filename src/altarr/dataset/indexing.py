"""Selection normalisation and planning.

Every indexing form (NumPy ``x[...]``, ``.oindex``, ``.vindex``, ``.flat``, hyperslabs) is normalised
into one :class:`Plan`: the sorted list of touched chunks (``plan.coords``, ``(n, ndim)`` int64), and for
each of them the vectorised copy that moves its selected part into the result. Nothing is read while
planning.

A plan splits the array's dimensions into two kinds:

* *orthogonal* dimensions (slices, integers of basic indexing, ``.oindex`` arrays): for each one a
  :class:`DimTable` lists the touched chunk indices and, per chunk, the output positions and in-chunk
  offsets (slices whenever possible). Their touched chunks combine as a cartesian product.
* *point* dimensions (NumPy advanced indexing, ``.vindex``, ``.flat``): the index arrays broadcast to a
  shape ``B`` of ``P`` points; points are grouped by the chunk that holds them (a sort of their raveled
  chunk ids, no per-point Python objects) and each group is gathered with one fancy take.

The result is assembled in a work array of shape ``(P?, *orthogonal lengths)`` and then reshaped and
transposed into NumPy's output layout (broadcast dimensions in place or first, ``None`` axes, dropped
integer axes).

Example:
    >>> p = plan_numpy((slice(2, 9), 1), shape=(10, 7), chunks=(4, 3))
    >>> p.coords.tolist()
    [[0, 0], [1, 0], [2, 0]]
    >>> p.result_shape
    (7,)
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import SelectionError

__all__ = ["Plan", "DimTable", "Points", "plan_numpy", "plan_outer", "plan_vector", "plan_flat", "nchunks_of"]

_VALID = (
    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or boolean arrays "
    "are valid indices"
)


def nchunks_of(shape: Sequence[int], chunks: Sequence[int]) -> tuple[int, ...]:
    """Chunks along each dimension (0 for an empty dimension)."""
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


def _slice_table(dim: int, sl: slice, n: int, c: int) -> DimTable:
    start, stop, step = sl.indices(n)
    count = len(range(start, stop, step))
    if count == 0:
        empty = np.zeros(0, dtype=np.int64)
        return DimTable(dim, empty, [], [], empty, 0, False)
    last = start + step * (count - 1)
    lo_pos, hi_pos = min(start, last), max(start, last)
    j = np.arange(lo_pos // c, hi_pos // c + 1, dtype=np.int64)
    lo = j * c
    hi = np.minimum(lo + c, n)
    if step > 0:
        k0 = np.maximum(_ceil_div(lo - start, step), 0)
        k1 = np.minimum(_ceil_div(hi - start, step), count)
    else:
        s = -step
        k0 = np.maximum((start - hi) // s + 1, 0)
        k1 = np.minimum((start - lo) // s + 1, count)
    keep = k1 > k0
    j, lo, k0, k1 = j[keep], lo[keep], k0[keep], k1[keep]
    counts = k1 - k0
    in_start = start + step * k0 - lo
    out_sel: list[Any] = []
    in_sel: list[Any] = []
    for a, b, i0, cnt in zip(k0.tolist(), k1.tolist(), in_start.tolist(), counts.tolist(), strict=True):
        out_sel.append(slice(a, b))
        if step > 0:
            in_sel.append(slice(i0, i0 + step * (cnt - 1) + 1, step))
        else:
            stop_ = i0 + step * (cnt - 1) - 1
            in_sel.append(slice(i0, stop_ if stop_ >= 0 else None, step))
    return DimTable(dim, j, out_sel, in_sel, counts, count, False)


def _array_table(dim: int, pos: np.ndarray, c: int) -> DimTable:
    """``pos``: 1-D int64 positions, already bounds-checked and non-negative."""
    total = len(pos)
    if total == 0:
        empty = np.zeros(0, dtype=np.int64)
        return DimTable(dim, empty, [], [], empty, 0, False)
    cid = pos // c
    if total == 1 or bool(np.all(cid[1:] >= cid[:-1])):
        order = None
        scid = cid
    else:
        order = np.argsort(cid, kind="stable")
        scid = cid[order]
    starts = np.flatnonzero(np.concatenate(([True], scid[1:] != scid[:-1])))
    ends = np.append(starts[1:], total)
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
    if npts == 1 or bool(np.all(lin[1:] >= lin[:-1])):
        order = None
        slin = lin
    else:
        order = np.argsort(lin, kind="stable")
        slin = lin[order]
    starts = np.flatnonzero(np.concatenate(([True], slin[1:] != slin[:-1])))
    ends = np.append(starts[1:], npts)
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
        js = self._row_ortho[i]
        sel = self._sel
        if sel is None:
            sel = self._sel = self._selectors()
        in_raw, in_adv, out_raw, out_adv = sel
        if self.points is None:
            ins = tuple(in_raw[a][j] for a, j in enumerate(js))
            if in_adv is not None and any(type(s) is np.ndarray for s in ins):
                ins = tuple(in_adv[a][j] for a, j in enumerate(js))
            outs = tuple(out_raw[a][j] for a, j in enumerate(js))
            if out_adv is not None and any(type(s) is np.ndarray for s in outs):
                outs = tuple(out_adv[a][j] for a, j in enumerate(js))
            work[outs] = chunk[ins]
            return
        # Point dimensions: every orthogonal dimension is a slice here (NumPy advanced indexing and
        # .vindex combine index arrays as points), so one fancy take per group does it.
        g = self._row_group[i]  # type: ignore[index]
        pts = self.points
        blk = chunk if self._pt_perm is None else chunk.transpose(self._pt_perm)
        outs = tuple(out_raw[a][j] for a, j in enumerate(js))
        ins = tuple(in_raw[a][j] for a, j in enumerate(js))
        work[(pts.pidx[g],) + outs] = blk[pts.offsets[g] + ins]

    def scatter(self, work: np.ndarray, i: int, chunk: np.ndarray) -> None:
        """The inverse of :meth:`place`: write row ``i``'s part of the work array into its chunk (an
        assignment ``x[key] = values`` of NumPy's semantics; for repeated indices the last value wins)."""
        js = self._row_ortho[i]
        sel = self._sel
        if sel is None:
            sel = self._sel = self._selectors()
        in_raw, in_adv, out_raw, out_adv = sel
        if self.points is None:
            ins = tuple(in_raw[a][j] for a, j in enumerate(js))
            if in_adv is not None and any(type(s) is np.ndarray for s in ins):
                ins = tuple(in_adv[a][j] for a, j in enumerate(js))
            outs = tuple(out_raw[a][j] for a, j in enumerate(js))
            if out_adv is not None and any(type(s) is np.ndarray for s in outs):
                outs = tuple(out_adv[a][j] for a, j in enumerate(js))
            chunk[ins] = work[outs]
            return
        g = self._row_group[i]  # type: ignore[index]
        pts = self.points
        blk = chunk if self._pt_perm is None else chunk.transpose(self._pt_perm)
        outs = tuple(out_raw[a][j] for a, j in enumerate(js))
        ins = tuple(in_raw[a][j] for a, j in enumerate(js))
        blk[pts.offsets[g] + ins] = work[(pts.pidx[g],) + outs]

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


# --- classification of index items ---------------------------------------------------------------------
def _classify(item: Any) -> tuple[str, Any]:
    if item is None:
        return ("none", None)
    if item is Ellipsis:
        return ("ellipsis", None)
    if isinstance(item, slice):
        return ("slice", item)
    if isinstance(item, bool | np.bool_):
        return ("bool0", bool(item))
    if isinstance(item, np.ndarray):
        arr = item
    elif isinstance(item, list | tuple | range):
        try:
            arr = np.asarray(item)
        except ValueError:  # a ragged nested list
            raise SelectionError(_VALID) from None
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(np.intp)
    else:
        try:
            return ("int", operator.index(item))
        except TypeError:
            if hasattr(item, "__array__"):
                arr = np.asarray(item)
            else:
                raise SelectionError(_VALID) from None
    if arr.dtype == np.bool_:
        return ("bool0", bool(arr)) if arr.ndim == 0 else ("boolarr", arr)
    if arr.dtype.kind in "iu":
        return ("int", int(arr)) if arr.ndim == 0 else ("intarr", arr)
    raise SelectionError("arrays used as indices must be of integer (or boolean) type")


def check_index_types(key: Any, shape: Sequence[int]) -> None:
    """Raise NumPy's ``IndexError`` for what NumPy checks before an assignment's values are converted:
    index items of a refused type, the number of indices, and integer (not array) indices out of bounds.
    Index arrays' bounds and broadcast shapes are checked after the values, as NumPy does."""
    classified = [_classify(item) for item in _as_tuple(key)]
    entries, _ = _expand(classified, len(shape), _numpy_dims)
    for kind, val, ds, _ in entries:
        if kind == "int":
            _norm_int(val, shape[ds[0]], ds[0])


def _norm_int(i: int, n: int, axis: int) -> int:
    if i < -n or i >= n:
        raise SelectionError(f"index {i} is out of bounds for axis {axis} with size {n}")
    return i + n if i < 0 else i


def _norm_array(arr: np.ndarray, n: int, axis: int) -> np.ndarray:
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype.kind == "u":
        hi = int(arr.max())
        if hi >= n:
            raise SelectionError(f"index {hi} is out of bounds for axis {axis} with size {n}")
        return arr.astype(np.int64)
    a = arr.astype(np.int64, copy=False)
    lo, hi = int(a.min()), int(a.max())
    if lo < -n:
        raise SelectionError(f"index {lo} is out of bounds for axis {axis} with size {n}")
    if hi >= n:
        raise SelectionError(f"index {hi} is out of bounds for axis {axis} with size {n}")
    if lo < 0:
        a = np.where(a < 0, a + n, a)
    return a


def _bool_check(arr: np.ndarray, dims: range, shape: Sequence[int], *, numpy_rule: bool = False) -> None:
    """A mask's shape against the dimensions it covers. ``x[key]`` follows NumPy (``numpy_rule``), which
    does not compare a mask axis of length 0 (``np.zeros((0, 2))[:, []]`` is fine, so is ``[:, mask0]``);
    ``oindex``/``vindex`` keep the strict check."""
    for a, d in enumerate(dims):
        if arr.shape[a] != shape[d] and not (numpy_rule and arr.shape[a] == 0):
            raise SelectionError(
                f"boolean index did not match indexed array along axis {d}; size of axis is {shape[d]} "
                f"but size of corresponding boolean axis is {arr.shape[a]}"
            )


def _as_tuple(key: Any) -> tuple[Any, ...]:
    return key if isinstance(key, tuple) else (key,)


def _expand(classified: list[tuple[str, Any]], ndim: int, per_item_dims: Any) -> tuple[list[Any], bool]:
    """Attach dimensions to items; expand the ellipsis. Returns (entries, had_ellipsis).

    Each entry: (kind, value, dims(range), item_no). Trailing dimensions get implicit slices.
    """
    n_ell = sum(1 for k, _ in classified if k == "ellipsis")
    if n_ell > 1:
        raise SelectionError("an index can only have a single ellipsis ('...')")
    consumed = sum(per_item_dims(k, v) for k, v in classified if k != "ellipsis")
    if consumed > ndim:
        raise SelectionError(
            f"too many indices for array: array is {ndim}-dimensional, but {consumed} were indexed"
        )
    entries: list[Any] = []
    d = 0
    for item_no, (kind, val) in enumerate(classified):
        if kind == "ellipsis":
            for _ in range(ndim - consumed):
                entries.append(("slice", slice(None), range(d, d + 1), item_no))
                d += 1
            continue
        k = per_item_dims(kind, val)
        entries.append((kind, val, range(d, d + k), item_no))
        d += k
    while d < ndim:
        entries.append(("slice", slice(None), range(d, d + 1), len(classified)))
        d += 1
    return entries, n_ell == 1


def _numpy_dims(kind: str, val: Any) -> int:
    if kind in ("slice", "int", "intarr"):
        return 1
    if kind == "boolarr":
        return val.ndim
    return 0


def _broadcast(arrays: list[np.ndarray]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*[a.shape for a in arrays]))
    except ValueError:
        shapes = " ".join(str(a.shape) for a in arrays)
        raise SelectionError(
            f"shape mismatch: indexing arrays could not be broadcast together with shapes {shapes}"
        ) from None


def _build_points(
    adv: list[tuple[tuple[int, ...], np.ndarray]],
    shape: Sequence[int],
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
    order = np.argsort(dims, kind="stable") if dims else []
    dims_sorted = tuple(dims[i] for i in order)
    pos_sorted = [pos[i] for i in order]
    return _points(dims_sorted, pos_sorted, bshape, chunks, grid)


# --- the four indexing forms ---------------------------------------------------------------------------
def plan_numpy(key: Any, shape: tuple[int, ...], chunks: tuple[int, ...]) -> Plan:
    """Plan ``x[key]`` with exactly NumPy's semantics."""
    ndim = len(shape)
    classified = [_classify(k) for k in _as_tuple(key)]
    entries, had_ellipsis = _expand(classified, ndim, _numpy_dims)
    adv_mode = any(e[0] in ("intarr", "boolarr", "bool0") for e in entries)
    grid = nchunks_of(shape, chunks)
    ortho: list[DimTable] = []
    layout: list[tuple[Any, ...]] = []
    exp_shapes: list[tuple[int, ...]] = []
    dropped: list[bool] = []
    if not adv_mode:
        for kind, val, ds, _ in entries:
            if kind == "none":
                layout.append(("new",))
                continue
            d = ds[0]
            if kind == "slice":
                t = _slice_table(d, val, shape[d], chunks[d])
                exp_shapes.append((t.length,))
                dropped.append(False)
            else:  # int
                i = _norm_int(val, shape[d], d)
                t = _slice_table(d, slice(i, i + 1), shape[d], chunks[d])
                exp_shapes.append((1,))
                dropped.append(True)
            layout.append(("ortho", len(ortho)))
            ortho.append(t)
        return Plan(shape, chunks, ortho, None, layout, exp_shapes, dropped, scalar=not had_ellipsis)
    adv: list[tuple[tuple[int, ...], np.ndarray]] = []
    adv_items: list[int] = []
    for kind, val, ds, item_no in entries:
        if kind == "int":
            adv.append(((ds[0],), np.asarray(_norm_int(val, shape[ds[0]], ds[0]), dtype=np.int64)))
        elif kind == "intarr":
            adv.append(((ds[0],), _norm_array(val, shape[ds[0]], ds[0])))
        elif kind == "boolarr":
            _bool_check(val, ds, shape, numpy_rule=True)
            for d, nz in zip(ds, np.nonzero(val), strict=True):
                adv.append(((d,), nz.astype(np.int64)))
        elif kind == "bool0":
            adv.append(((), np.zeros(int(val), dtype=np.int64)))
        else:
            continue
        adv_items.append(item_no)
    contiguous = adv_items[-1] - adv_items[0] == len(set(adv_items)) - 1
    points = _build_points(adv, shape, chunks, grid)
    if not contiguous:
        layout.append(("points",))
    placed = not contiguous
    for kind, val, ds, _ in entries:
        if kind == "none":
            layout.append(("new",))
        elif kind == "slice":
            d = ds[0]
            layout.append(("ortho", len(ortho)))
            t = _slice_table(d, val, shape[d], chunks[d])
            ortho.append(t)
            exp_shapes.append((t.length,))
            dropped.append(False)
        elif not placed:
            layout.append(("points",))
            placed = True
    return Plan(shape, chunks, ortho, points, layout, exp_shapes, dropped, scalar=not had_ellipsis)


def _one_dim(kind: str, val: Any) -> int:
    if kind in ("none", "bool0"):
        raise SelectionError("orthogonal and vectorized indexing do not accept None or a 0-d boolean")
    return 1


def plan_outer(key: Any, shape: tuple[int, ...], chunks: tuple[int, ...], *, keep_dims: bool = False) -> Plan:
    """Plan ``x.oindex[key]``: one subscript per dimension, combined as a cartesian product.

    Integers drop their dimension (unless ``keep_dims``), integer arrays of any shape put their shape in
    place, 1-D boolean arrays select positions.
    """
    ndim = len(shape)
    classified = [_classify(k) for k in _as_tuple(key)]
    entries, had_ellipsis = _expand(classified, ndim, _one_dim)
    ortho: list[DimTable] = []
    layout: list[tuple[Any, ...]] = []
    exp_shapes: list[tuple[int, ...]] = []
    dropped: list[bool] = []
    for kind, val, ds, _ in entries:
        d = ds[0]
        n, c = shape[d], chunks[d]
        if kind == "slice":
            t = _slice_table(d, val, n, c)
            es, drop = (t.length,), False
        elif kind == "int":
            i = _norm_int(val, n, d)
            t = _slice_table(d, slice(i, i + 1), n, c)
            es, drop = (1,), not keep_dims
        elif kind == "boolarr":
            if val.ndim != 1:
                raise SelectionError("orthogonal boolean indices must be 1-dimensional")
            _bool_check(val, range(d, d + 1), shape)
            t = _array_table(d, np.flatnonzero(val).astype(np.int64), c)
            es, drop = (t.length,), False
        else:  # intarr
            a = _norm_array(val, n, d)
            t = _array_table(d, a.reshape(-1), c)
            es, drop = tuple(a.shape), False
        layout.append(("ortho", len(ortho)))
        ortho.append(t)
        exp_shapes.append(es)
        dropped.append(drop)
    return Plan(shape, chunks, ortho, None, layout, exp_shapes, dropped, scalar=not had_ellipsis)


def _vector_dims(kind: str, val: Any) -> int:
    if kind in ("none", "bool0"):
        raise SelectionError("vectorized indexing does not accept None or a 0-d boolean")
    return val.ndim if kind == "boolarr" else 1


def plan_vector(key: Any, shape: tuple[int, ...], chunks: tuple[int, ...]) -> Plan:
    """Plan ``x.vindex[key]``: index arrays broadcast together, their dimensions first, slices after."""
    ndim = len(shape)
    classified = [_classify(k) for k in _as_tuple(key)]
    entries, had_ellipsis = _expand(classified, ndim, _vector_dims)
    grid = nchunks_of(shape, chunks)
    adv: list[tuple[tuple[int, ...], np.ndarray]] = []
    ortho: list[DimTable] = []
    layout: list[tuple[Any, ...]] = []
    exp_shapes: list[tuple[int, ...]] = []
    dropped: list[bool] = []
    for kind, val, ds, _ in entries:
        if kind == "int":
            adv.append(((ds[0],), np.asarray(_norm_int(val, shape[ds[0]], ds[0]), dtype=np.int64)))
        elif kind == "intarr":
            adv.append(((ds[0],), _norm_array(val, shape[ds[0]], ds[0])))
        elif kind == "boolarr":
            _bool_check(val, ds, shape)
            for d, nz in zip(ds, np.nonzero(val), strict=True):
                adv.append(((d,), nz.astype(np.int64)))
    points = _build_points(adv, shape, chunks, grid) if adv else None
    if points is not None:
        layout.append(("points",))
    for kind, val, ds, _ in entries:
        if kind == "slice":
            d = ds[0]
            t = _slice_table(d, val, shape[d], chunks[d])
            layout.append(("ortho", len(ortho)))
            ortho.append(t)
            exp_shapes.append((t.length,))
            dropped.append(False)
    return Plan(shape, chunks, ortho, points, layout, exp_shapes, dropped, scalar=not had_ellipsis)


def plan_flat(key: Any, shape: tuple[int, ...], chunks: tuple[int, ...]) -> Plan:
    """Plan ``x.flat[key]``: a C-order linear index (int, slice, integer or boolean array)."""
    size = int(np.prod(shape, dtype=np.int64))
    items = _as_tuple(key)
    if len(items) != 1:
        raise SelectionError("flat indexing takes exactly one index")
    kind, val = _classify(items[0])
    scalar = False
    if kind == "int":
        pos = np.asarray(_norm_int(val, size, 0), dtype=np.int64)
        scalar = True
    elif kind == "slice":
        pos = np.arange(*val.indices(size), dtype=np.int64)
    elif kind == "ellipsis":
        pos = np.arange(size, dtype=np.int64)
    elif kind == "intarr":
        pos = _norm_array(val, size, 0)
    elif kind == "boolarr":
        if val.size != size:
            raise SelectionError(f"boolean flat index has {val.size} elements; the array has {size}")
        pos = np.flatnonzero(val).astype(np.int64)
    else:
        raise SelectionError(_VALID)
    grid = nchunks_of(shape, chunks)
    flat = pos.reshape(-1)
    multi = np.unravel_index(flat, shape) if shape else ()
    dims = tuple(range(len(shape)))
    points = _points(dims, [np.asarray(m, dtype=np.int64) for m in multi], tuple(pos.shape), chunks, grid)
    return Plan(shape, chunks, [], points, [("points",)], [], [], scalar=scalar)
