"""Lazy views: transposes, joins (``np.concatenate``, ``np.stack``) and reshapes of lazy arrays, each
chunk of a view one chunk of an array underneath (so joined arrays share their chunk shape and all but
the last end on a chunk boundary; other joins materialize under the guard).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

if TYPE_CHECKING:
    from .array import LazyArray
    from .fetching import FetchSource

__all__ = [
    "JoinSource",
    "ReshapeSource",
    "TransposeSource",
    "concatenate",
    "reshape",
    "reshape_chunks",
    "stack",
    "transpose",
]


class _ViewSource:
    """Chunks of a view of lazy array ``base``: chunk ``c`` is ``base``'s chunk :meth:`_base_coords`,
    turned into the view's by :meth:`_view`; ``args`` (after ``base``) rebuild the view, the first names
    it."""

    base: Any
    kind: str
    args: tuple[Any, ...]

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.base, *self.args))

    def describe(self) -> str:
        return f"{self.kind}{self.args[0]} of {self.base._source.describe()}"

    def dask_token(self) -> Any:
        return (f"altarr-{self.kind}", self.args[0], self.base.__dask_tokenize__())

    def _base_coords(self, coords: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _view(self, c: np.ndarray, chunk: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def leaves(self) -> list[FetchSource]:
        leaves: list[FetchSource] = self.base._source.leaves()
        return leaves

    def row_missing_nbytes(self, coords: np.ndarray) -> np.ndarray:
        nbytes: np.ndarray = self.base._source.row_missing_nbytes(self._base_coords(coords))
        return nbytes

    def get_chunks(self, coords: np.ndarray, *, store: bool) -> list[np.ndarray]:
        chunks = self.base._source.get_chunks(self._base_coords(coords), store=store)
        return [self._view(c, v) for c, v in zip(coords, chunks, strict=True)]

    def visit_chunks(self, coords: np.ndarray, fn: Callable[[int, np.ndarray], Any]) -> None:
        self.base._source.visit_chunks(
            self._base_coords(coords), lambda i, v: fn(i, self._view(coords[i], v))
        )


class TransposeSource(_ViewSource):
    """Chunks of ``base.transpose(axes)``: chunk ``c`` is ``base``'s chunk ``c[argsort(axes)]``."""

    kind = "transpose"

    def __init__(self, base: Any, axes: tuple[int, ...]) -> None:
        self.base = base
        self.axes = tuple(axes)
        self.args = (self.axes,)
        self._inverse = tuple(int(i) for i in np.argsort(self.axes))

    def _base_coords(self, coords: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(coords[:, list(self._inverse)]) if len(coords) else coords

    def _view(self, c: np.ndarray, chunk: np.ndarray) -> np.ndarray:
        return np.asarray(chunk).transpose(self.axes)


class JoinSource:
    """Chunks of a concatenation or stack of lazy arrays along ``axis``; ``offsets[k]``: the first chunk
    index of array ``k`` along it."""

    def __init__(self, arrays: Sequence[Any], axis: int, stack: bool, offsets: Sequence[int]) -> None:
        self.arrays = tuple(arrays)
        self.axis = int(axis)
        self.stack = bool(stack)
        self.offsets = np.asarray(offsets, dtype=np.int64)

    def __reduce__(self) -> tuple[Any, ...]:
        return (JoinSource, (self.arrays, self.axis, self.stack, self.offsets.tolist()))

    def leaves(self) -> list[Any]:
        return list({id(leaf): leaf for a in self.arrays for leaf in a._source.leaves()}.values())

    def describe(self) -> str:
        what = "stack" if self.stack else "concatenate"
        return f"{what}(axis={self.axis}, {len(self.arrays)} arrays)"

    def dask_token(self) -> Any:
        return (
            "altarr-join",
            self.stack,
            self.axis,
            tuple(a.__dask_tokenize__() for a in self.arrays),
        )

    def _split(self, coords: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """Per array: (array number, rows of ``coords``, the array's own chunk coordinates)."""
        if not len(coords):
            return []
        along = coords[:, self.axis]
        which = np.searchsorted(self.offsets, along, side="right") - 1
        out = []
        for k in np.unique(which).tolist():
            rows = np.flatnonzero(which == k)
            own = coords[rows].copy()
            own[:, self.axis] -= self.offsets[k]
            if self.stack:
                own = np.delete(own, self.axis, axis=1)
            out.append((k, rows, np.ascontiguousarray(own)))
        return out

    def _shape_chunk(self, chunk: np.ndarray) -> np.ndarray:
        return np.expand_dims(np.asarray(chunk), self.axis) if self.stack else np.asarray(chunk)

    def row_missing_nbytes(self, coords: np.ndarray) -> np.ndarray:
        total = np.zeros(len(coords), dtype=np.int64)
        for k, rows, own in self._split(coords):
            total[rows] = self.arrays[k]._source.row_missing_nbytes(own)
        return total

    def get_chunks(self, coords: np.ndarray, *, store: bool) -> list[np.ndarray]:
        out: list[Any] = [None] * len(coords)
        for k, rows, own in self._split(coords):
            for r, chunk in zip(
                rows.tolist(), self.arrays[k]._source.get_chunks(own, store=store), strict=True
            ):
                out[r] = self._shape_chunk(chunk)
        return out

    def visit_chunks(self, coords: np.ndarray, fn: Callable[[int, np.ndarray], Any]) -> None:
        for k, rows, own in self._split(coords):
            self.arrays[k]._source.visit_chunks(
                own, lambda j, chunk, rows=rows: fn(int(rows[j]), self._shape_chunk(chunk))
            )


def transpose(x: LazyArray, axes: Sequence[int] | None = None) -> LazyArray:
    """A lazy ``x.transpose(axes)`` (reversed axes when ``axes`` is None)."""
    LazyArray = type(x)  # the class of the operand builds the result (no import cycle)
    if axes is None:
        perm = tuple(range(x.ndim))[::-1]
    else:
        perm = tuple(normalize_axis_index(int(a), x.ndim) for a in axes)
        if len(perm) != x.ndim:
            raise ValueError("axes don't match array")
        if len(set(perm)) != len(perm):
            raise ValueError("repeated axis in transpose")
    if perm == tuple(range(x.ndim)):
        return LazyArray(x.shape, x.chunks, x.dtype, x._source, x.dims, x.coords)
    shape = tuple(x.shape[a] for a in perm)
    chunks = tuple(x.chunks[a] for a in perm)
    dims = tuple(x.dims[a] for a in perm) if x.dims else None
    return LazyArray(shape, chunks, x.dtype, TransposeSource(x, perm), dims, x.coords if dims else None)


def concatenate(arrays: Sequence[Any], axis: int) -> Any:
    """A lazy ``np.concatenate(arrays, axis)`` of lazy arrays of one dtype, or ``None`` when the chunk
    grids do not line up."""
    ref = arrays[0]
    if ref.ndim == 0:
        return None
    axis = normalize_axis_index(axis, ref.ndim)
    for a in arrays:
        if a.ndim != ref.ndim or a.chunks != ref.chunks:
            return None
        if any(a.shape[d] != ref.shape[d] for d in range(ref.ndim) if d != axis):
            return None
    c = ref.chunks[axis]
    if any(a.shape[axis] % c for a in arrays[:-1]):
        return None
    offsets = np.cumsum([0] + [a.shape[axis] // c for a in arrays[:-1]]).tolist()
    shape = list(ref.shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    return type(ref)(
        tuple(shape), ref.chunks, ref.dtype, JoinSource(arrays, axis, False, offsets), None, None
    )


def stack(arrays: Sequence[Any], axis: int) -> Any:
    """A lazy ``np.stack(arrays, axis)`` of lazy arrays of one dtype, or ``None`` when they differ in
    shape or chunks."""
    ref = arrays[0]
    if any(a.shape != ref.shape or a.chunks != ref.chunks for a in arrays):
        return None
    axis = normalize_axis_index(axis, ref.ndim + 1)
    shape = ref.shape[:axis] + (len(arrays),) + ref.shape[axis:]
    chunks = ref.chunks[:axis] + (1,) + ref.chunks[axis:]
    source = JoinSource(arrays, axis, True, list(range(len(arrays))))
    return type(ref)(shape, chunks, ref.dtype, source, None, None)


def _groups(shape: Sequence[int], new: Sequence[int]) -> list[tuple[list[int], list[int]]] | None:
    """The axes of ``shape`` and ``new`` (lengths 1 left out) in groups of equal products, in order (``None``
    when the products do not line up)."""
    a = [d for d, n in enumerate(shape) if n != 1]
    b = [d for d, n in enumerate(new) if n != 1]
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        ga, gb = [a[i]], [b[j]]
        pa, pb = shape[a[i]], new[b[j]]
        i, j = i + 1, j + 1
        while pa != pb:
            if pa < pb and i < len(a):
                ga.append(a[i])
                pa *= shape[a[i]]
                i += 1
            elif pb < pa and j < len(b):
                gb.append(b[j])
                pb *= new[b[j]]
                j += 1
            else:
                return None
        groups.append((ga, gb))
    return groups if i == len(a) and j == len(b) else None


def reshape_chunks(x: Any, new: tuple[int, ...]) -> tuple[tuple[int, ...], list[tuple[int, int]]] | None:
    """The chunk shape of a lazy ``x.reshape(new)`` whose every chunk is one chunk of ``x`` reshaped, and
    the pairs ``(axis of new, axis of x)`` whose chunk coordinates are equal (every other chunk coordinate
    is 0); ``None`` unless, in each group of axes the reshape maps onto each other, the chunks of ``x``
    split the first axis only and each chunk's run of elements fills whole rows of the new group's
    trailing axes.

    >>> import numpy as np, altarr as aa
    >>> x = aa.altarr((4, 6), (2, 6), lambda c: [np.zeros((2, 6))] * len(c))
    >>> reshape_chunks(x, (2, 2, 3, 2)), reshape_chunks(x, (4, 1, 6)), reshape_chunks(x, (3, 8))
    (((1, 2, 3, 2), [(0, 0), (2, 1)]), ((2, 1, 6), [(0, 0), (2, 1)]), None)
    """
    groups = _groups(x.shape, new)
    if groups is None or x.size == 0:
        return None
    chunks = [1] * len(new)
    pairs = []
    for ga, gb in groups:
        first, rest = ga[0], ga[1:]
        if any(x.chunks[d] < x.shape[d] for d in rest):
            return None
        per_row = int(np.prod([x.shape[d] for d in rest], dtype=np.int64))
        tail = int(np.prod([new[d] for d in gb[1:]], dtype=np.int64))
        run = min(x.chunks[first], x.shape[first]) * per_row
        last = (x.shape[first] % x.chunks[first]) * per_row
        if run % tail or last % tail:
            return None
        chunks[gb[0]] = run // tail
        for d in gb[1:]:
            chunks[d] = new[d]
        pairs.append((gb[0], first))
    return tuple(chunks), pairs


class ReshapeSource(_ViewSource):
    """Chunks of ``base.reshape(shape)`` in C order (:func:`reshape_chunks`)."""

    kind = "reshape"

    def __init__(
        self, base: Any, shape: tuple[int, ...], chunks: tuple[int, ...], pairs: Sequence[Any]
    ) -> None:
        self.base = base
        self.shape, self.chunks = tuple(shape), tuple(chunks)
        self.pairs = [(int(a), int(b)) for a, b in pairs]
        self.args = (self.shape, self.chunks, self.pairs)

    def _base_coords(self, coords: np.ndarray) -> np.ndarray:
        out = np.zeros((len(coords), self.base.ndim), dtype=np.int64)
        for new_axis, base_axis in self.pairs:
            out[:, base_axis] = coords[:, new_axis]
        return out

    def _view(self, c: np.ndarray, chunk: np.ndarray) -> np.ndarray:
        extent = tuple(min(k, n - int(i) * k) for i, k, n in zip(c, self.chunks, self.shape, strict=True))
        return np.asarray(chunk).reshape(extent)


def reshape(x: Any, new: tuple[int, ...]) -> Any:
    """A lazy C-order ``x.reshape(new)`` (``new`` already checked, ``-1`` resolved) when the chunks allow it
    (:func:`reshape_chunks`), else NumPy data through the guarded materialization."""
    LazyArray = type(x)  # the class of the operand builds the result (no import cycle)
    if new == x.shape:
        return LazyArray(x.shape, x.chunks, x.dtype, x._source, x.dims, x.coords)
    found = reshape_chunks(x, new)
    if found is None:
        return x._materialize().reshape(new)
    chunks, pairs = found
    return LazyArray(new, chunks, x.dtype, ReshapeSource(x, new, chunks, pairs), None, None)
