"""Many selections in one call: planned together, read in one round per nesting level plus one for data.

A batch of selections (basic regions, integer-array or boolean index expressions, in NumPy, ``oindex``
or ``vindex`` meaning) is planned selection by selection with the lazy layer's planners
(:mod:`altarr.lazy.indexing`); the chunks they touch are merged into one set, so every shard's index is
read once, in one batched store call per nesting level, every chunk's byte range once, coalesced across
selections in one more call, and a chunk that several selections share is decoded once and copied into
each of their results. Writes of many regions are merged into one update per chunk and applied in one
pass: per touched shard one read (none when the regions cover it) and one write for the whole batch.

Example:
    >>> import numpy as np, altarr as aa
    >>> ds = aa.create_dataset("memory://doc-many", shape=(8, 8), dtype="int32", chunks=(2, 2), shards=(4, 4))
    >>> ds.write_regions([np.s_[0:3, 0:3], np.s_[2:6, 2:6]], [1, 2])
    >>> a, b = ds.read_regions([np.s_[0:2, 0:2], (np.array([2, 5]), 3)])
    >>> a.tolist(), b.tolist()
    ([[1, 1], [1, 1]], [2, 2])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..lazy.indexing import Plan, plan_numpy, plan_outer, plan_vector
from .access import Merge

if TYPE_CHECKING:
    from .access import DatasetAccess

__all__ = ["MODES", "plan_selections", "read_plans", "merge_update", "Chain"]

Chunk = tuple[int, ...]

#: How the selections of a batch are interpreted: NumPy indexing, orthogonal (``oindex``) or vectorized
#: (``vindex``) indexing.
MODES: dict[str, Callable[..., Plan]] = {"numpy": plan_numpy, "oindex": plan_outer, "vindex": plan_vector}


def plan_selections(
    selections: Sequence[Any], shape: tuple[int, ...], chunks: tuple[int, ...], mode: str = "numpy"
) -> list[Plan]:
    """One plan per selection (see :mod:`altarr.lazy.indexing`); ``mode`` is a key of :data:`MODES`.

    >>> [len(p) for p in plan_selections([np.s_[0:3], np.s_[5]], (8,), (2,))]
    [2, 1]
    """
    try:
        planner = MODES[mode]
    except KeyError:
        raise ValueError(f"mode must be one of {sorted(MODES)}, got {mode!r}") from None
    if isinstance(selections, tuple | str) or not isinstance(selections, Sequence):
        raise TypeError(
            "read_regions/read_many take a list of selections (one per region), e.g. [np.s_[0:4, 2], ...]"
        )
    return [planner(sel, shape, chunks) for sel in selections]


def chunk_users(plans: Sequence[Plan]) -> dict[Chunk, list[tuple[int, int]]]:
    """Every distinct chunk the plans touch, in first-seen order, with ``(plan, row)`` of each use."""
    users: dict[Chunk, list[tuple[int, int]]] = {}
    for pi, p in enumerate(plans):
        for row, c in enumerate(p.coords.tolist()):
            users.setdefault(tuple(c), []).append((pi, row))
    return users


def read_plans(access: DatasetAccess, plans: Sequence[Plan]) -> list[Any]:
    """The results of ``plans`` from one batched read of the union of their chunks (each decoded once)."""
    works = [p.new_work(access.dtype) for p in plans]
    users = chunk_users(plans)

    def place(chunk: Chunk, values: np.ndarray) -> None:
        for pi, row in users[chunk]:
            plans[pi].place(works[pi], row, values)

    access.visit(list(users), place)
    return [p.finish(w) for p, w in zip(plans, works, strict=True)]


class Chain:
    """Merge function applying several edits of one chunk in order (regions of a batch that overlap)."""

    __slots__ = ("fns",)

    def __init__(self, fns: list[Callable[[np.ndarray], np.ndarray]]):
        self.fns = fns

    def __call__(self, old: np.ndarray) -> np.ndarray:
        for fn in self.fns:
            old = fn(old)
        return old


def merge_update(updates: dict[Chunk, Any], chunk: Chunk, new: Any) -> None:
    """Record ``new`` (a whole-chunk array or a :class:`~altarr.dataset.access.Merge`) for ``chunk`` after
    whatever earlier regions of the batch wrote there: a whole chunk replaces everything before it, an
    edit is applied on top of the earlier ones (later regions win where they overlap)."""
    prev = updates.get(chunk)
    if prev is None or not isinstance(new, Merge):
        updates[chunk] = new
    elif isinstance(prev, Merge):
        fns = prev.fn.fns if isinstance(prev.fn, Chain) else [prev.fn]
        updates[chunk] = Merge(Chain([*fns, new.fn]))
    else:  # an earlier whole-chunk array: edit a copy of it now
        updates[chunk] = new.fn(np.array(prev, copy=True))
