"""dask: :func:`to_dask` over datasets and lazy arrays, :func:`store` of a dask array into a dataset one
shard per task, and :func:`cluster_runner` for copies on a dask.distributed cluster.

Example:
    >>> import numpy as np, altarr as aa
    >>> x = aa.altarr((6, 4), (3, 2), lambda c: [np.ones((3, 2))] * len(c))
    >>> d = to_dask(x, chunks=(6, 2))
    >>> d.chunks, float(d.sum().compute())
    (((6,), (2, 2)), 24.0)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

__all__ = ["to_dask", "store", "cluster_runner"]


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
    if chunks is None:  # a dataset's shards, or its chunks, or a lazy array's chunks
        return tuple(getattr(x, "shards", None) or x.chunks)
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
    """A dask array over a dataset or a lazy array.

    Args:
        x: an :class:`~altarr.Dataset` or a lazy array.
        chunks: dask block shape; ``None`` (default) for one block per shard of a dataset (per chunk if it
            is unsharded) or per altarr chunk of a lazy array; else multiples of the chunk shape, so that
            each task reads its chunks in one call.

    Example:
        >>> import numpy as np, altarr as aa
        >>> ds = aa.create_dataset("memory://doc-to-dask", shape=(8, 8), dtype="u1", chunks=(2, 2),
        ...                        shards=(4, 8))
        >>> ds[...] = 1
        >>> d = aa.to_dask(ds)
        >>> d.chunks, int(d.sum().compute())
        (((4, 4), (8,)), 64)
    """
    da = _import_dask()
    blocks = _block_shape(x, chunks)
    meta = np.empty((0,) * x.ndim, dtype=x.dtype)
    return da.from_array(x, chunks=blocks, meta=meta, asarray=False, fancy=False, lock=False)


def shard_aligned_chunks(darr: Any, ds: Any) -> tuple[tuple[int, ...], ...]:
    """The dask chunks that make each block of ``darr`` one shard (or chunk) of ``ds``."""
    block = ds.shards or ds.chunks
    return tuple(
        tuple(min(b, n - s) for s in range(0, n, b)) if n else (0,)
        for b, n in zip(block, ds.shape, strict=True)
    )


def store(darr: Any, ds: Any, *, compute: bool = True, **kwargs: Any) -> Any:
    """Write the dask array ``darr`` into the dataset ``ds``, re-chunked to its shard grid so that each
    task writes whole shards; ``kwargs`` go to ``dask.array.store``.

    Example:
        >>> import dask.array as da, numpy as np, altarr as aa
        >>> ds = aa.create_dataset("memory://doc-store", shape=(6, 6), dtype="i4", chunks=(2, 2),
        ...                        shards=(4, 4))
        >>> _ = aa.store(da.arange(36, dtype="i4", chunks=5).reshape(6, 6), ds)
        >>> int(ds[5, 5]), ds.store.stats.as_dict()["writes"] - 1  # one write per shard (+ metadata)
        (35, 4)
    """
    da = _import_dask()
    if tuple(darr.shape) != tuple(ds.shape):
        raise ValueError(f"dask array shape {tuple(darr.shape)} differs from the dataset's {ds.shape}")
    aligned = darr.rechunk(shard_aligned_chunks(darr, ds))
    if aligned.dtype != ds.dtype:
        aligned = aligned.astype(ds.dtype)
    return da.store(aligned, ds, lock=False, compute=compute, **kwargs)


def cluster_runner(address: str) -> Callable[[Any, Any, list], Iterator[tuple[int, int]]]:
    """A ``run_units`` for :func:`altarr.transfer.copy_array`: one task per destination shard on the
    dask.distributed scheduler at ``address``, yielding ``(unit, value_bytes)`` as they finish."""
    try:
        from distributed import Client, as_completed
    except ImportError as e:
        raise ImportError(
            "altarr copy --scheduler needs dask.distributed: pip install 'altarr[distributed]'"
        ) from e
    client = Client(address, timeout="20s")

    def run(src: Any, dst: Any, todo: list[tuple[int, Any]]) -> Iterator[tuple[int, int]]:
        from ..transfer import copy_unit

        futures = {client.submit(copy_unit, src, dst, region, pure=False): i for i, region in todo}
        try:
            for future in as_completed(futures):
                yield futures[future], future.result()
        finally:
            for future in futures:
                future.cancel()

    return run
