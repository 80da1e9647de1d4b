"""Where a selection's elements lie in the chunk grid: a :class:`DimTable` per orthogonal dimension
(touched chunks, output positions and in-chunk offsets; combined as a cartesian product), :class:`Points`
for advanced indices (grouped by the chunk that holds them), and :func:`plan_dim`, the chunk arithmetic
every planner shares.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .items import DimSelection

__all__ = [
    "DimTable",
    "Points",
    "array_table",
    "nchunks_of",
    "Piece",
    "plan_dim",
    "group_points",
    "slice_table",
]


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


#: One touched chunk along one dimension: (chunk index, slice of the chunk, slice of the work array).
Piece = tuple[int, slice, slice]


def plan_dim(d: DimSelection, chunk: int) -> list[Piece]:
    """The chunks of ``chunk`` elements that the forward progression ``d`` touches, ascending: ``(chunk
    index, slice in the chunk, slice in the result)``, both forwards (``d.reverse`` is ignored: callers
    flip). The chunk arithmetic every planner shares: a walk from one touched chunk to the next with
    Python integers (exact on any dimension; no NumPy call, whose per-call cost dominated small reads).
    """
    pieces: list[Piece] = []
    start, step, n = d.start, d.step, d.n
    k = 0
    while k < n:  # element k is the first of chunk j that the progression holds
        j, first = divmod(start + step * k, chunk)
        k1 = min(-((start - (j + 1) * chunk) // step), n)
        pieces.append((j, slice(first, first + step * (k1 - k - 1) + 1, step), slice(k, k1)))
        k = k1
    return pieces


def slice_table(dim: int, d: DimSelection, c: int) -> DimTable:
    """A slice (or an integer, as a one-element progression) along one dimension: :func:`plan_dim`'s
    pieces; a backwards one reads each chunk backwards into the mirrored output positions."""
    pieces = plan_dim(d, c)
    ids = np.array([k for k, _, _ in pieces], dtype=np.int64)
    counts = np.array([o.stop - o.start for _, _, o in pieces], dtype=np.int64)
    in_sel: list[Any] = [i for _, i, _ in pieces]
    out_sel: list[Any] = [o for _, _, o in pieces]
    if d.reverse:
        in_sel = [slice(i.stop - 1, i.start - 1 if i.start else None, -i.step) for i in in_sel]
        out_sel = [slice(d.n - o.stop, d.n - o.start) for o in out_sel]
    return DimTable(dim, ids, out_sel, in_sel, counts, d.n)


def _runs(keys: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray]:
    """Group equal ``keys`` (chunk ids of selected points): ``(order, sorted keys, starts, ends)``, where
    ``order`` is the stable sort (``None`` when the keys are already ascending) and each run of equal
    sorted keys is ``[starts[i], ends[i])``."""
    n = len(keys)
    if n == 1 or bool(np.all(keys[1:] >= keys[:-1])):
        order, skeys = None, keys
    else:
        order = np.argsort(keys, kind="stable")
        skeys = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], skeys[1:] != skeys[:-1])))
    return order, skeys, starts, np.append(starts[1:], n)


def array_table(dim: int, pos: np.ndarray, c: int) -> DimTable:
    """``pos``: 1-D int64 positions, already bounds-checked and non-negative."""
    total = len(pos)
    if total == 0:
        empty = np.zeros(0, dtype=np.int64)
        return DimTable(dim, empty, [], [], empty, 0)
    cid = pos // c
    order, scid, starts, ends = _runs(cid)
    ids = scid[starts]
    out_sel: list[Any] = []
    in_sel: list[Any] = []
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
            out_sel.append(slice(int(outs[0]), int(outs[0]) + n_here) if contiguous_out else outs)
            in_sel.append(offs)
    return DimTable(dim, ids, out_sel, in_sel, (ends - starts).astype(np.int64), total)


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


def group_points(
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
