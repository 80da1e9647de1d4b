"""Products in NumPy's order where the order can matter (docs/lazy-arrays.md, "Reductions stream"): a
streamed product of an inexact dtype carries per output element its :func:`evidence`; the elements where
the order could matter (:func:`order_sensitive`) are computed again by NumPy over their factors gathered
in C order (:func:`in_numpy_order`; memory: their count times the reduced size).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .streaming import chunk_batches, chunk_regions, part_reader

__all__ = ["evidence", "in_numpy_order", "order_sensitive"]


def evidence(values: np.ndarray, red: tuple[int, ...], mask: Any = None) -> tuple[np.ndarray, ...]:
    """``(factors, nan, inf, zero, pos, neg)`` of ``values`` (an inexact array, already in the product's
    dtype) over the axes ``red``, counting only where ``mask`` (``None``: everywhere). For a complex
    factor ``inf`` counts one with any part not finite, ``nan`` stays 0, and its magnitude is bounded by
    its larger part (``pos`` adds half a bit for the ``sqrt(2)``).

    >>> [a.tolist() for a in evidence(np.array([0.25, 8.0, 0.0, np.inf]), (0,))]
    [4, 0, 1, 1, 3.0, -2.0]
    """
    v = np.asarray(values)
    kw: dict[str, Any] = {"axis": red} if mask is None else {"axis": red, "where": mask}
    with np.errstate(all="ignore"):
        if v.dtype.kind == "c":
            bad = ~np.isfinite(v)
            nan = np.zeros(bad.shape, dtype=bool)
            big = np.maximum(np.abs(v.real), np.abs(v.imag)).astype(np.float64)
            lo = np.log2(np.where(bad, 1.0, big))
            hi = lo + 0.5
        else:
            nan = np.isnan(v)
            bad = np.isinf(v)
            lo = hi = np.log2(np.abs(v.astype(np.float64)))
        zero = ~bad & ~nan & np.isneginf(lo)
        usable = np.isfinite(lo)
        pos = np.sum(np.where(usable & (hi > 0), hi, 0.0), **kw)
        neg = np.sum(np.where(usable & (lo < 0), lo, 0.0), **kw)
    count = np.sum(np.ones(v.shape, dtype=np.int64), **kw)
    return (count, np.sum(nan, **kw), np.sum(bad, **kw), np.sum(zero, **kw), pos, neg)


def order_sensitive(ev: tuple[Any, ...], dtype: np.dtype) -> np.ndarray:
    """Where a product with the :func:`evidence` ``ev`` could depend on the order of its factors in
    ``dtype``, beyond rounding.

    Real factors: a NaN makes it NaN in any order, so does an infinity with a zero; an infinity alone is
    safe unless an intermediate product could underflow to zero first, a zero alone unless one could
    overflow first, and finite non-zero factors unless either could happen. Complex factors: any factor
    that is not finite, or a possible overflow, or (without a zero factor) a possible underflow."""
    count, nan, bad, zero, pos, neg = (np.asarray(a) for a in ev)
    fi = np.finfo(dtype)
    # rounding may move each intermediate by a relative eps; complex parts add two products (one bit)
    margin = 1.0 + 2.0 * count * float(fi.eps) + (1.0 if dtype.kind == "c" else 0.0)
    over = pos + margin >= fi.maxexp
    under = neg - margin < fi.minexp
    if dtype.kind == "c":
        risky: np.ndarray = (bad > 0) | over | (under & (zero == 0))
        return risky
    safe = (nan > 0) | ((bad > 0) & ((zero > 0) | ~under)) | ((zero > 0) & ~over) | ~(over | under)
    return ~safe


def in_numpy_order(
    x: Any, red: tuple[int, ...], acc: np.ndarray, sensitive: np.ndarray, start: Any, where: Any
) -> np.ndarray:
    """``acc`` with the ``sensitive`` elements replaced by NumPy's own product of their factors: a
    second walk of the chunks gathers those elements' factors in C order of the reduced axes (``where``
    masked ones left out), and ``np.multiply.reduce`` multiplies them from ``start``."""
    kept = tuple(d for d in range(x.ndim) if d not in red)
    red_shape = tuple(x.shape[d] for d in red)
    n_red = int(np.prod(red_shape, dtype=np.int64))
    rows = np.flatnonzero(np.asarray(sensitive).reshape(-1))  # flat positions in the kept shape
    row_of = np.full(acc.size, -1, dtype=np.int64)
    row_of[rows] = np.arange(rows.size)
    vals = np.ones((rows.size, n_red), dtype=acc.dtype)
    valid = np.zeros((rows.size, n_red), dtype=bool)
    masks = None if where is True else part_reader(x, where)
    for coords, arrays in chunk_batches(x):
        regions = chunk_regions(x, coords)
        mask_parts = None if masks is None else masks(coords, regions)
        for n, (region, chunk) in enumerate(zip(regions, arrays, strict=True)):
            chunk = np.asarray(chunk)
            ok = (
                True
                if mask_parts is None
                else np.asarray(chunk if mask_parts[n] is None else mask_parts[n], bool)
            )
            # the flat kept and reduced positions of every element of the chunk
            grids = np.meshgrid(*[np.arange(r.start, r.stop) for r in region], indexing="ij")
            out_pos = (
                np.ravel_multi_index([grids[d] for d in kept], acc.shape)
                if kept
                else np.zeros(chunk.shape, int)
            )
            red_pos = (
                np.ravel_multi_index([grids[d] for d in red], red_shape)
                if red
                else np.zeros(chunk.shape, int)
            )
            r = row_of[out_pos]
            sel = r >= 0
            with np.errstate(all="ignore"):
                vals[r[sel], red_pos[sel]] = chunk[sel].astype(acc.dtype)
            valid[r[sel], red_pos[sel]] = np.broadcast_to(ok, chunk.shape)[sel]
    with np.errstate(all="ignore"):
        res = np.multiply.reduce(vals, axis=1, where=valid, initial=start)
    fixed = acc.copy()
    fixed.reshape(-1)[rows] = res
    return fixed
