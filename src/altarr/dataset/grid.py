"""Chunk <-> shard <-> nested-shard coordinate math: :class:`NestedGrid` holds the block shape of every
level (level 0 the chunk, the last the stored object), in NumPy order, 0-based.

Example:
    >>> g = NestedGrid((100, 70), [(10, 7), (20, 35)])
    >>> g.grid_shape(0), g.grid_shape(1)
    ((10, 10), (5, 2))
    >>> g.position((3, 6), 1)          # the level-1 shard holding chunk (3, 6)
    (1, 1)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from itertools import product
from operator import floordiv

import numpy as np

from ..errors import GridError

__all__ = ["NestedGrid"]


class NestedGrid:
    """Regular nested grid over an array of ``shape``; ``levels[0]`` is the chunk shape."""

    def __init__(self, shape: Sequence[int], levels: Sequence[Sequence[int]]) -> None:
        self.shape = tuple(int(s) for s in shape)
        if not levels:
            raise GridError("a grid needs at least one level (the chunk shape)")
        lv = [tuple(int(b) for b in level) for level in levels]
        nd = len(self.shape)
        for i, level in enumerate(lv):
            if len(level) != nd:
                raise GridError(
                    f"level {i} block shape {level} has a different length than the array shape {self.shape}"
                )
            if any(b <= 0 for b in level):
                raise GridError(f"level {i} block shape {level} has a negative or zero size")
            if i:
                prev = lv[i - 1]
                if any(b < p for b, p in zip(level, prev, strict=True)):
                    raise GridError(f"level {i} block shape {level} is smaller than previous level {prev}")
                if any(b % p for b, p in zip(level, prev, strict=True)):
                    raise GridError(
                        f"level {i} block shape {level} is not a multiple of previous level {prev}"
                    )
        if any(s < 0 for s in self.shape):
            raise GridError(f"array shape {self.shape} has a negative size")
        self.levels: tuple[tuple[int, ...], ...] = tuple(lv)
        self.ndim = nd
        # ratio[l][d]: how many level-0 chunks one level-l block spans along d
        self._ratio = [tuple(b // c for b, c in zip(level, lv[0], strict=True)) for level in lv]

    # ------------------------------------------------------------------------------------------------
    @property
    def nlevels(self) -> int:
        return len(self.levels)

    @property
    def chunks(self) -> tuple[int, ...]:
        return self.levels[0]

    @property
    def outer(self) -> tuple[int, ...]:
        return self.levels[-1]

    def grid_shape(self, level: int = 0) -> tuple[int, ...]:
        """Number of level-``level`` blocks along each dimension (edge blocks included)."""
        return tuple(-(-s // b) for s, b in zip(self.shape, self.levels[level], strict=True))

    def per_block(self, level: int) -> tuple[int, ...]:
        """Number of level-``level - 1`` blocks in one level-``level`` block, per dimension."""
        return tuple(b // p for b, p in zip(self.levels[level], self.levels[level - 1], strict=True))

    def check_chunk(self, coords: Sequence[int], level: int = 0) -> tuple[int, ...]:
        """Validate and normalize grid coordinates at ``level``; ``GridError`` when outside the grid."""
        try:
            c = tuple(int(x) for x in coords)
        except (TypeError, ValueError) as e:
            raise GridError(f"chunk coordinates must be a sequence of integers, got {coords!r}") from e
        gs = self.grid_shape(level)
        if len(c) != self.ndim or any(x < 0 or x >= g for x, g in zip(c, gs, strict=True)):
            raise GridError(f"chunk coordinates {c} are outside the chunk grid {gs}", chunk=c)
        return c

    def check_chunks(self, coords: Iterable[Sequence[int]] | np.ndarray, level: int = 0) -> np.ndarray:
        """Validate many coordinates at once; returns an ``int64`` array of shape ``(n, ndim)``."""
        arr = np.asarray(coords)
        if arr.size == 0 and (arr.ndim == 1 or (arr.ndim == 2 and (len(arr) == 0 or self.ndim == 0))):
            # no coordinates at all, or n empty tuples of a 0-d array (its one chunk, asked for n times);
            # empty tuples for an array of higher rank go on to the scalar path, which names them
            return np.zeros((len(arr) if arr.ndim == 2 else 0, self.ndim), dtype=np.int64)
        if arr.dtype.kind not in "iu" or arr.ndim != 2 or arr.shape[1] != self.ndim:
            # fall back to the scalar path for a precise error
            return np.array([self.check_chunk(c, level) for c in coords], dtype=np.int64).reshape(
                -1, self.ndim
            )
        arr = arr.astype(np.int64, copy=False)
        gs = np.array(self.grid_shape(level), dtype=np.int64)
        bad = np.any((arr < 0) | (arr >= gs), axis=1)
        if bad.any():
            c = tuple(int(x) for x in np.asarray(coords)[np.argmax(bad)])  # as given: no uint64 wrap
            raise GridError(f"chunk coordinates {c} are outside the chunk grid {tuple(gs.tolist())}", chunk=c)
        return arr

    # ------------------------------------------------------------------------------------------------
    def position(self, chunk: Sequence[int], level: int) -> tuple[int, ...]:
        """Absolute grid position at ``level`` of the block holding ``chunk`` (level-0 coordinates)."""
        return tuple(c // r for c, r in zip(chunk, self._ratio[level], strict=True))

    def group_by_block(
        self, chunks: Iterable[tuple[int, ...]], level: int
    ) -> dict[tuple[int, ...], list[tuple[int, ...]]]:
        """The level-0 ``chunks`` by the position of the level-``level`` block holding them, in
        first-seen order (one C-level ``map`` per chunk: a batch's planning calls this for every chunk
        at every level).

        >>> NestedGrid((8, 8), [(2, 2), (4, 4)]).group_by_block([(0, 0), (3, 3), (1, 0)], 1)
        {(0, 0): [(0, 0), (1, 0)], (1, 1): [(3, 3)]}
        """
        groups: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
        if level == 0:  # every chunk is its own block
            for c in chunks:
                groups.setdefault(tuple(c), []).append(c)
            return groups
        r = self._ratio[level]
        for c in chunks:
            groups.setdefault(tuple(map(floordiv, c, r)), []).append(c)
        return groups

    def block_clipped_shape(self, position: Sequence[int], level: int = 0) -> tuple[int, ...]:
        """Shape of the level-``level`` block at ``position`` clipped at the array edge."""
        block = self.levels[level]
        return tuple(min(b, s - p * b) for s, b, p in zip(self.shape, block, position, strict=True))

    def first_chunk(self, position: Sequence[int], level: int) -> tuple[int, ...]:
        """The level-0 coordinates of the first chunk of the level-``level`` block at ``position``.

        >>> NestedGrid((100, 70), [(10, 7), (20, 35)]).first_chunk((1, 1), 1)
        (2, 5)
        """
        return tuple(p * r for p, r in zip(position, self._ratio[level], strict=True))

    def _chunk_ranges(self, position: Sequence[int], level: int) -> list[range]:
        r, gs = self._ratio[level], self.grid_shape(0)
        return [range(p * k, min((p + 1) * k, g)) for p, k, g in zip(position, r, gs, strict=True)]

    def chunks_in(self, position: Sequence[int], level: int) -> list[tuple[int, ...]]:
        """In-bounds level-0 chunks of the level-``level`` block at ``position`` (C order)."""
        return list(product(*self._chunk_ranges(position, level)))

    def n_chunks_in(self, position: Sequence[int], level: int) -> int:
        """How many in-bounds level-0 chunks the level-``level`` block at ``position`` holds."""
        return math.prod(len(r) for r in self._chunk_ranges(position, level))

    def flat_index(self, relative: Iterable[int], level: int) -> int:
        """C-order flat index of a child at ``relative`` inside a level-``level`` block."""
        n = self.per_block(level)
        idx = 0
        for r, k in zip(relative, n, strict=True):
            idx = idx * k + r
        return idx

    def __repr__(self) -> str:
        return f"NestedGrid(shape={self.shape}, levels={list(self.levels)})"
