"""``to_dask``: a dask array over a lazy array, its blocks aligned to whole altarr chunks.

Each dask task reads its block with one planned ``x[block]`` call, so a block of several altarr chunks
is one fetch call for all of them, and the lazy array's cache is shared by all tasks of a threaded
scheduler. The dask token is the lazy array's recipe token (no pickling to tokenize).

Example:
    >>> import numpy as np, altarr as aa
    >>> x = aa.altarr((6, 4), (3, 2), lambda c: [np.ones((3, 2))] * len(c))
    >>> d = to_dask(x, chunks=(6, 2))
    >>> d.chunks, float(d.sum().compute())
    (((6,), (2, 2)), 24.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["to_dask"]


def _import_dask() -> Any:
    try:
        import dask.array as da
    except ImportError as e:
        raise ImportError(
            "LazyArray.to_dask() needs the optional dependency dask: pip install 'dask[array]' "
            "(or pip install 'altarr[dask]')"
        ) from e
    return da


def _block_shape(x: Any, chunks: Any) -> tuple[int, ...]:
    if chunks is None:
        return tuple(x.chunks)
    blocks = (
        (int(chunks),) * x.ndim if isinstance(chunks, int | np.integer) else tuple(int(c) for c in chunks)
    )
    if len(blocks) != x.ndim:
        raise ValueError(f"chunks {blocks} must give one block length per dimension ({x.ndim})")
    for d, (b, c, n) in enumerate(zip(blocks, x.chunks, x.shape, strict=True)):
        if b < 1 or (b % c != 0 and b < n):
            raise ValueError(
                f"dask block length {b} along dimension {d} must be a multiple of the altarr chunk length {c} "
                f"(or cover the whole dimension of length {n})"
            )
    return blocks


def to_dask(x: Any, chunks: Any = None) -> Any:
    """A dask array over ``x``.

    Args:
        x: a lazy array.
        chunks: dask block shape; ``None`` (default) for one altarr chunk per block, else multiples of
            the altarr chunk shape, so that each task fetches its chunks in one call.
    """
    da = _import_dask()
    blocks = _block_shape(x, chunks)
    meta = np.empty((0,) * x.ndim, dtype=x.dtype)
    return da.from_array(x, chunks=blocks, meta=meta, asarray=False, fancy=False, lock=False)
