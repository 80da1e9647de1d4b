"""Helpers for the lazy-array tests: fetch functions over in-memory data that record their calls, and
NumPy reference implementations of orthogonal and vectorized indexing."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

import altarr as aa


def region(coords: Sequence[int], chunks: Sequence[int], shape: Sequence[int]) -> tuple[slice, ...]:
    return tuple(
        slice(int(c) * ch, min(int(c) * ch + ch, n)) for c, ch, n in zip(coords, chunks, shape, strict=True)
    )


class ArrayFetch:
    """A fetch over an in-memory array; records the chunk coordinates of every call (picklable)."""

    def __init__(self, data: np.ndarray, chunks: Sequence[int], flat: bool = False, delay: float = 0.0):
        self.data = np.asarray(data)
        self.chunks = (chunks,) * self.data.ndim if isinstance(chunks, int) else tuple(chunks)
        self.flat = flat
        self.delay = delay
        self.calls: list[np.ndarray] = []
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"]
        state["calls"] = []
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __call__(self, coords: np.ndarray) -> list[np.ndarray]:
        assert coords.dtype == np.int64 and coords.ndim == 2 and coords.shape[1] == self.data.ndim
        if self.delay:
            import time

            time.sleep(self.delay)
        with self._lock:
            self.calls.append(coords.copy())
        out = [self.data[region(c, self.chunks, self.data.shape)] for c in coords]
        return [o.reshape(-1) for o in out] if self.flat else out

    @property
    def fetched(self) -> list[tuple[int, ...]]:
        """Every chunk fetched, in call order."""
        return [tuple(int(v) for v in row) for call in self.calls for row in call]


def lazy(data: np.ndarray, chunks: Sequence[int], **kw: Any) -> tuple[aa.LazyArray, ArrayFetch]:
    fetch = ArrayFetch(data, chunks, **{k: kw.pop(k) for k in list(kw) if k in ("flat", "delay")})
    return aa.altarr(data.shape, chunks, fetch, dtype=data.dtype, **kw), fetch


def positions(shape: Sequence[int], dtype: Any = "float64") -> np.ndarray:
    """An array whose every value is its own C-order flat position."""
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


def chunk_ids(shape: Sequence[int], chunks: Sequence[int]) -> np.ndarray:
    """Same shape as the data; each element holds the C-order linear id of the chunk that holds it."""
    grid = [-(-n // c) for n, c in zip(shape, chunks, strict=True)]
    idx = np.indices(shape)
    per_dim = [idx[d] // chunks[d] for d in range(len(shape))]
    return np.ravel_multi_index(per_dim, grid) if shape else np.zeros((), dtype=np.int64)


def touched(shape: Sequence[int], chunks: Sequence[int], selected_ids: np.ndarray) -> set[tuple[int, ...]]:
    grid = [-(-n // c) for n, c in zip(shape, chunks, strict=True)]
    ids = np.unique(np.asarray(selected_ids).reshape(-1))
    return (
        {tuple(int(v) for v in t) for t in zip(*np.unravel_index(ids, grid), strict=True)}
        if ids.size
        else set()
    )


def outer_reference(a: np.ndarray, key: Any) -> Any:
    """NumPy reference for orthogonal indexing: each subscript applied on its own axis."""
    key = key if isinstance(key, tuple) else (key,)
    if any(k is Ellipsis for k in key):
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (a.ndim - len(key) + 1) + key[i + 1 :]
    key = key + (slice(None),) * (a.ndim - len(key))
    out = a
    axis = 0
    for k in key:
        if isinstance(k, slice):
            out = out[(slice(None),) * axis + (k,)]
            axis += 1
        elif np.ndim(k) == 0 and not isinstance(k, np.ndarray | list):
            out = np.take(out, int(k), axis=axis)
        else:
            k = np.asarray(k)
            if k.dtype == bool:
                k = np.flatnonzero(k)
            out = np.take(out, k.astype(np.intp), axis=axis)
            axis += k.ndim
    return out


def vector_reference(a: np.ndarray, key: Any) -> Any:
    """NumPy reference for vectorized indexing: array dims first, then the sliced dims in order."""
    key = key if isinstance(key, tuple) else (key,)
    if any(k is Ellipsis for k in key):
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        used = sum(np.asarray(k).ndim if np.asarray(k).dtype == bool else 1 for k in key if k is not Ellipsis)
        key = key[:i] + (slice(None),) * (a.ndim - used) + key[i + 1 :]
    # expand boolean arrays into their nonzero() integer arrays
    expanded: list[Any] = []
    for k in key:
        if not isinstance(k, slice) and np.asarray(k).dtype == bool:
            expanded.extend(np.nonzero(np.asarray(k)))
        else:
            expanded.append(k)
    expanded += [slice(None)] * (a.ndim - len(expanded))
    adv = [d for d, k in enumerate(expanded) if not isinstance(k, slice)]
    sl = [d for d, k in enumerate(expanded) if isinstance(k, slice)]
    t = a.transpose(adv + sl)
    return t[tuple(expanded[d] for d in adv) + tuple(expanded[d] for d in sl)]
