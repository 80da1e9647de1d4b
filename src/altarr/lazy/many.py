"""Many selections of one lazy array (or dataset) in one call: :func:`read_many`, the chunks they touch
fetched in one fetch call, each once (docs/lazy-arrays.md, "Many reads at once").
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .._threads import pmap
from ..selection import SelectionPlan, chunk_users, plan_selections
from . import options
from .geometry import is_lazy

__all__ = ["read_many", "read_plans"]


def read_many(x: Any, selections: Sequence[Any], *, mode: str = "numpy") -> list[Any]:
    """The values of every selection of ``x`` (a lazy array or a :class:`~altarr.Dataset`), in request
    order, fetched together. ``mode``: ``"numpy"``, ``"oindex"`` or ``"vindex"``.

    >>> import numpy as np, altarr as aa
    >>> ds = aa.create_dataset("memory://doc-read-many", shape=(4, 4), dtype="u1", chunks=(2, 2))
    >>> ds[...] = 3
    >>> a, b = aa.read_many(ds, [np.s_[1:3, 1:3], np.s_[0]])
    >>> a.shape, b.shape
    ((2, 2), (4,))
    """
    if hasattr(x, "read_regions") and not is_lazy(x):
        values: list[Any] = x.read_regions(selections, mode=mode)
        return values
    if not is_lazy(x):
        raise TypeError(f"read_many takes a lazy array or a Dataset, got {type(x).__name__}")
    keys = [x._convert_key(k) for k in selections] if not isinstance(selections, tuple | str) else selections
    plans: list[SelectionPlan] = plan_selections(keys, x.shape, x.chunks, mode)
    x._count("extract_subset", len(plans))
    return read_plans(x, plans)


def read_plans(x: Any, plans: list[SelectionPlan]) -> list[Any]:
    """The results of ``plans`` (of lazy array ``x``): the chunks they touch fetched in one call and cached
    when they fit the cache budget, else in bounded batches (:func:`_batches_by_bytes`), nothing cached;
    each chunk placed into every result that uses it (on the pool: disjoint parts of the results)."""
    works = [p.new_work(x.dtype) for p in plans]
    if len(plans) == 1:  # one plan: its rows are the chunks
        coords = plans[0].coords
        order: Any = [[(0, row)] for row in range(len(coords))]
    else:
        users = chunk_users(plans)
        coords = np.asarray(list(users), dtype=np.int64).reshape(len(users), x.ndim)
        order = list(users.values())

    def place(i: int, chunk: np.ndarray) -> None:
        for pi, row in order[i]:
            plans[pi].place(works[pi], row, chunk)

    if len(coords):
        src = x._source
        budget = options._get("cache_bytes")
        missing = src.row_missing_nbytes(coords)
        if int(missing.sum()) <= budget:
            chunks = src.get_chunks(coords, store=True)
            pmap(lambda i: place(i, chunks[i]), range(len(chunks)))
        else:
            for rows in _batches_by_bytes(missing, budget, options._get("batch_chunks")):
                src.visit_chunks(coords[rows], lambda j, chunk, rows=rows: place(int(rows[j]), chunk))
    return [p.finish(w) for p, w in zip(plans, works, strict=True)]


def _batches_by_bytes(missing: np.ndarray, budget: int, batch_chunks: int) -> Iterator[np.ndarray]:
    """Row numbers of the fetch batches of a read too big for the cache, in order: at least
    ``batch_chunks`` missing chunks each (``missing[i]``: the bytes row ``i`` costs, 0 when cached), more
    while they fit in ``budget``."""
    starts = [0]
    acc = count = 0
    for i, b in enumerate(missing.tolist()):
        if b and count >= batch_chunks and acc + b > budget:
            starts.append(i)
            acc = count = 0
        if b:
            acc += b
            count += 1
    starts.append(len(missing))
    for lo, hi in itertools.pairwise(starts):
        yield np.arange(lo, hi)
