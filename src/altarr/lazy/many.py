"""Many selections of one lazy array (or dataset) in one call: :func:`read_many`.

The selections are planned one by one (NumPy, ``oindex`` or ``vindex`` meaning), the chunks they touch
merged into one set, and the missing ones fetched in **one** fetch call (for :func:`altarr.open` arrays
one batched engine read: one store round per shard level plus one for the chunks, coalesced across the
selections). A chunk shared by several selections is fetched and decoded once. When the missing
chunks fit the cache budget they are cached as a plain read would cache them; otherwise they are
streamed through the fetch's ``visit`` and placed straight into every result that needs them.

Example:
    >>> import numpy as np, altarr as aa
    >>> x = aa.altarr((6, 6), 2, lambda c: [np.full((2, 2), 10 * i + j) for i, j in c], dtype="i8")
    >>> a, b = aa.read_many(x, [np.s_[0, :3], np.s_[[1, 5], 4]])
    >>> a.tolist(), b.tolist(), aa.stats(x)["fetch_calls"]
    ([0, 0, 1], [2, 22], 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..selection import SelectionPlan, chunk_users, plan_selections
from . import options

__all__ = ["read_many"]


def read_many(x: Any, selections: Sequence[Any], *, mode: str = "numpy") -> list[Any]:
    """The values of every selection of ``x`` (a lazy array or a :class:`~altarr.Dataset`), in request
    order, fetched together (see the module docstring). ``mode``: ``"numpy"``, ``"oindex"`` or
    ``"vindex"``.

    >>> import numpy as np, altarr as aa
    >>> ds = aa.create_dataset("memory://doc-read-many", shape=(4, 4), dtype="u1", chunks=(2, 2))
    >>> ds[...] = 3
    >>> a, b = aa.read_many(ds, [np.s_[1:3, 1:3], np.s_[0]])
    >>> a.shape, b.shape
    ((2, 2), (4,))
    """
    if hasattr(x, "read_regions") and not getattr(x, "_is_lazy_array", False):
        values: list[Any] = x.read_regions(selections, mode=mode)
        return values
    if not getattr(x, "_is_lazy_array", False):
        raise TypeError(f"read_many takes a lazy array or a Dataset, got {type(x).__name__}")
    keys = [x._convert_key(k) for k in selections] if not isinstance(selections, tuple | str) else selections
    plans: list[SelectionPlan] = plan_selections(keys, x.shape, x.chunks, mode)
    x._count("extract_subset", len(plans))
    return _read_plans(x, plans)


def _read_plans(x: Any, plans: list[SelectionPlan]) -> list[Any]:
    """The results of ``plans`` (of lazy array ``x``), their missing chunks fetched in one call."""
    works = [p.new_work(x.dtype) for p in plans]
    users = chunk_users(plans)
    if users:
        coords = np.asarray(list(users), dtype=np.int64).reshape(len(users), x.ndim)
        order = list(users.values())
        src = x._source

        def place(i: int, chunk: np.ndarray) -> None:
            for pi, row in order[i]:
                plans[pi].place(works[pi], row, chunk)

        missing = src.row_missing_nbytes(coords)
        if int(missing.sum()) <= options._get("cache_bytes"):
            for i, chunk in enumerate(src.get_chunks(coords, store=True)):
                place(i, chunk)
        else:  # bigger than the cache: one streamed fetch, nothing cached
            src.visit_chunks(coords, place)
    return [p.finish(w) for p, w in zip(plans, works, strict=True)]
