"""Many selections in one call: planned together, so each shard index is read once per nesting level,
the chunks' ranges in one more call, and a chunk several selections share is decoded once; many region
writes become one update per chunk, applied in one pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ..selection import MODES, SelectionPlan, chunk_users, plan_selections
from .shard_write import Merge, chain

if TYPE_CHECKING:
    from .access import DatasetAccess

__all__ = ["MODES", "plan_selections", "read_plans", "merge_update"]

Chunk = tuple[int, ...]


def read_plans(access: DatasetAccess, plans: Sequence[SelectionPlan]) -> list[Any]:
    """The results of ``plans`` from one batched read of the union of their chunks (each decoded once)."""
    works = [p.new_work(access.layout.dtype) for p in plans]
    by_chunk = chunk_users(plans)
    if by_chunk:
        users = list(by_chunk.values())  # row i of the visit: the (plan, row) of each use of chunk i

        def place(i: int, values: np.ndarray) -> None:
            for pi, row in users[i]:
                plans[pi].place(works[pi], row, values)

        access.visit_chunks(list(by_chunk), place)
    return [p.finish(w) for p, w in zip(plans, works, strict=True)]


def merge_update(updates: dict[Chunk, Any], chunk: Chunk, new: Any) -> None:
    """Record ``new`` (a whole-chunk array or a :class:`~altarr.dataset.access.Merge`) for ``chunk`` after
    whatever earlier regions of the batch wrote there: a whole chunk replaces everything before it, an
    edit is applied on top of the earlier ones (later regions win where they overlap)."""
    prev = updates.get(chunk)
    if prev is None or not isinstance(new, Merge):
        updates[chunk] = new
    elif isinstance(prev, Merge):
        fn = prev.fn
        fns = fn.args[0] if isinstance(fn, partial) and fn.func is chain else [fn]
        updates[chunk] = Merge(partial(chain, [*fns, new.fn]))
    else:  # an earlier whole-chunk array: edit a copy of it now
        updates[chunk] = new.fn(np.array(prev, copy=True))
