"""Many selections of one lazy array (or dataset) in one call: :func:`read_many`, the chunks they touch
fetched in one fetch call, each once (docs/lazy-arrays.md, "Many reads at once").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..selection import SelectionPlan, chunk_users, plan_selections
from . import options
from .geometry import is_lazy

__all__ = ["read_many"]


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
