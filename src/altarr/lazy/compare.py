"""Streamed comparisons: ``np.array_equal``, ``np.array_equiv`` and ``np.allclose`` with early exit (why:
docs/lazy-arrays.md, "Functions NumPy runs inside try/except").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .geometry import is_lazy
from .streaming import chunk_batches, chunk_regions, part_reader

__all__ = ["array_equal", "array_equiv", "allclose", "all_chunks"]


def _reader(ref: Any, other: Any, shape: tuple[int, ...]) -> Callable[[np.ndarray], list[Any]]:
    """How to read, for a batch of ``ref``'s chunks, the matching part of ``other`` in the broadcast
    ``shape`` of the two (``ref`` itself may be broadcast: its chunk is then compared with every part of
    ``other`` it stands for). ``other`` is NumPy data, or a lazy array of ``ref``'s shape."""
    if is_lazy(other) or ref.shape == shape:  # a lazy other has the shape of ref (see _streamable)
        read = part_reader(ref, other)
        return lambda coords: read(coords, chunk_regions(ref, coords))
    full = np.broadcast_to(other, shape)
    lead = len(shape) - ref.ndim

    def part(region: tuple[slice, ...]) -> np.ndarray:
        key = [slice(None)] * lead
        for d, r in enumerate(region):
            key.append(slice(None) if ref.shape[d] == 1 and shape[lead + d] != 1 else r)
        return full[tuple(key)]

    return lambda coords: [part(r) for r in chunk_regions(ref, coords)]


def all_chunks(ref: Any, other: Any, shape: tuple[int, ...], test: Callable[..., bool]) -> bool:
    """Whether ``test(ref_chunk, other_part)`` holds for every chunk of ``ref``, streamed with early exit:
    ``batch_chunks`` chunks of ``ref`` per fetch call, nothing cached, stop at the first failure."""
    ref._count("reduce")
    read_other = _reader(ref, other, shape)
    for coords, mine in chunk_batches(ref):
        theirs = read_other(coords)
        for chunk, part in zip(mine, theirs, strict=True):
            if not test(chunk, chunk if part is None else part):
                return False
    return True


def _streamable(a: Any, b: Any, shape: tuple[int, ...]) -> bool:
    """One lazy operand (the other NumPy data) or two lazy operands of the broadcast shape."""
    if is_lazy(a) and is_lazy(b):
        return bool(a.shape == b.shape == shape)
    return True


def _convert(v: Any) -> Any:
    """A non-lazy argument as NumPy converts it (may raise, as NumPy's conversion does)."""
    return v if is_lazy(v) else np.asarray(v)


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> bool:
    """``np.array_equal`` with NumPy's answer, streamed with early exit."""
    try:
        a1, a2 = _convert(a1), _convert(a2)
    except Exception:  # NumPy's own rule for arguments it cannot convert
        return False
    if a1.shape != a2.shape:
        return False
    ref, other = (a1, a2) if is_lazy(a1) else (a2, a1)
    if ref.size == 0:
        return True
    nan_aware = equal_nan and not (a1.dtype.kind in "biu" and a2.dtype.kind in "biu")

    def test(a: np.ndarray, b: np.ndarray) -> bool:
        if not nan_aware:
            return bool(np.asarray(a == b).all())
        an, bn = np.isnan(a), np.isnan(b)
        if not (an == bn).all():
            return False
        return bool(np.asarray(a[~an] == b[~an]).all())

    return all_chunks(ref, other, ref.shape, test)


def array_equiv(a1: Any, a2: Any) -> bool:
    """``np.array_equiv`` with NumPy's answer, streamed when the broadcast shape is a lazy operand's."""
    try:
        a1, a2 = _convert(a1), _convert(a2)
    except Exception:  # NumPy's own rule, as in array_equal
        return False
    try:
        shape = np.broadcast_shapes(a1.shape, a2.shape)
    except ValueError:
        return False
    shape = tuple(shape)
    ref, other = (a1, a2) if is_lazy(a1) else (a2, a1)
    if not _streamable(a1, a2, shape):  # two lazy arrays broadcast together: guarded, never swallowed
        return bool(np.array_equiv(np.asarray(a1), np.asarray(a2)))
    if int(np.prod(shape, dtype=np.int64)) == 0:
        return True
    return all_chunks(ref, other, shape, lambda a, b: bool(np.asarray(a == b).all()))


def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """``np.allclose`` with NumPy's answer, streamed with early exit."""
    a, b = _convert(a), _convert(b)
    shape = tuple(np.broadcast_shapes(a.shape, b.shape))  # raises as NumPy's isclose does
    ref, other = (a, b) if is_lazy(a) else (b, a)
    if int(np.prod(shape, dtype=np.int64)) == 0:
        return True
    if not _streamable(a, b, shape):  # two lazy arrays broadcast together: guarded, never swallowed
        return bool(np.allclose(np.asarray(a), np.asarray(b), rtol, atol, equal_nan))
    swapped = ref is b

    def test(x: np.ndarray, y: np.ndarray) -> bool:
        first, second = (y, x) if swapped else (x, y)  # isclose is not symmetric in (a, b)
        return bool(np.isclose(first, second, rtol=rtol, atol=atol, equal_nan=equal_nan).all())

    return all_chunks(ref, other, shape, test)
