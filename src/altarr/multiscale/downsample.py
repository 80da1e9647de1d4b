"""Downsampling a block of values by an integer factor per axis: ``mean``, ``mode`` and ``stride``, each
over whole windows (the partial window at the end of an axis is dropped); docs/pyramids.md,
"Downsampling".
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from itertools import product

import numpy as np

from ..errors import MetadataError

__all__ = ["METHODS", "downsample", "downsampled_shape", "check_method"]

#: The downsampling methods, by name.
METHODS = ("mean", "mode", "stride")


def check_method(method: str) -> str:
    """``method`` if it is one of :data:`METHODS`, else a :class:`~altarr.errors.MetadataError`."""
    if method not in METHODS:
        raise MetadataError(f"unknown downsampling method {method!r}; use one of {', '.join(METHODS)}")
    return method


def downsampled_shape(shape: Sequence[int], factors: Sequence[int]) -> tuple[int, ...]:
    """The shape after downsampling: ``n // f`` per axis (the partial window is dropped)."""
    return tuple(int(n) // int(f) for n, f in zip(shape, factors, strict=True))


def _windows(values: np.ndarray, factors: Sequence[int]) -> Iterator[np.ndarray]:
    """Strided views, one per offset inside a window (C order): element ``k`` of view ``o`` is element
    ``o`` of window ``k``."""
    out = downsampled_shape(values.shape, factors)
    for offset in product(*(range(f) for f in factors)):
        yield values[tuple(slice(o, o + n * f, f) for o, n, f in zip(offset, out, factors, strict=True))]


def _mean(values: np.ndarray, factors: Sequence[int]) -> np.ndarray:
    dtype = values.dtype
    count = math.prod(factors)
    if dtype.kind in "fc":
        acc = np.zeros(
            downsampled_shape(values.shape, factors), np.complex128 if dtype.kind == "c" else np.float64
        )
        with np.errstate(invalid="ignore"):  # inf + -inf is NaN, as in the mean NumPy computes
            for view in _windows(values, factors):
                acc += view
        acc /= count
        return acc.astype(dtype)
    if dtype.kind == "b":
        return _mean(values.view(np.uint8), factors).astype(bool)
    if dtype.kind not in "iu":
        raise MetadataError(f"the mean of {dtype} values is not defined; use method 'mode' or 'stride'")
    if dtype.itemsize < 8:  # the sum of int32 windows fits int64 for any window below 2**31 elements
        total = np.zeros(downsampled_shape(values.shape, factors), np.int64)
        for view in _windows(values, factors):
            total += view
        return ((2 * total + count) // (2 * count)).astype(dtype)
    # 64-bit integers: v = q*n + r with 0 <= r < n, so sum(v)/n = sum(q) + sum(r)/n, and neither sum can
    # overflow (|sum(q)| <= max/n * n, sum(r) < n*n)
    n = dtype.type(count)
    quotient = np.zeros(downsampled_shape(values.shape, factors), dtype)
    remainder = np.zeros_like(quotient)
    for view in _windows(values, factors):
        quotient += view // n
        remainder += view % n
    two = dtype.type(2)
    rounded: np.ndarray = quotient + (two * remainder + n) // (two * n)
    return rounded


def _mode(values: np.ndarray, factors: Sequence[int]) -> np.ndarray:
    windows = np.stack(list(_windows(values, factors)), axis=-1)
    windows.sort(axis=-1)
    size = windows.shape[-1]
    position = np.arange(size, dtype=np.intp)
    # the position where the run of equal values holding each element starts
    starts = np.zeros(windows.shape, dtype=bool)
    starts[..., 0] = True
    np.not_equal(windows[..., 1:], windows[..., :-1], out=starts[..., 1:])
    run_start = np.maximum.accumulate(np.where(starts, position, 0), axis=-1)
    # the first element that ends a longest run is in the longest run of the smallest value
    best = np.argmax(position - run_start, axis=-1)
    return np.take_along_axis(windows, best[..., None], axis=-1)[..., 0]


def downsample(values: np.ndarray, factors: Sequence[int], method: str = "mean") -> np.ndarray:
    """``values`` downsampled by ``factors`` (one positive integer per axis) with ``method``: a new array
    of ``values``' dtype and shape :func:`downsampled_shape`.

    >>> downsample(np.array([-3, -2, 4, 5], dtype="int16"), (2,), "mean")  # -2.5 rounds up to -2
    array([-2,  5], dtype=int16)
    """
    values = np.asarray(values)
    factors = tuple(int(f) for f in factors)
    if len(factors) != values.ndim or any(f < 1 for f in factors):
        raise MetadataError(f"factors {factors} must give one positive integer per axis of {values.shape}")
    check_method(method)
    if all(f == 1 for f in factors):
        return values.copy()
    if method == "stride":
        return next(_windows(values, factors)).copy()
    if 0 in downsampled_shape(values.shape, factors):
        return np.empty(downsampled_shape(values.shape, factors), values.dtype)
    if method == "mode":
        return _mode(values, factors)
    return _mean(values, factors)
