"""Values written to a dataset cast exactly as ``ndarray.__setitem__`` casts them (by NumPy, before
anything is written, so a refused value never leaves a partial write).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..selection import Selection

__all__ = ["broadcast_like_setitem", "cast_like_setitem", "cast_for_selection"]


def cast_like_setitem(values: Any, dtype: np.dtype, *, advanced: bool = False) -> np.ndarray:
    """``values`` as an array of ``dtype``, converted as ``a[key] = values`` converts them for an
    ``ndarray`` ``a`` of that dtype (same errors, same warnings, same results).

    NumPy converts differently for basic keys (a view assigned with ``[...]``) and for advanced keys
    (integer arrays, masks: ``np.int64(128)`` into ``int8`` raises for the first and wraps for the
    second), so the conversion is done by the same kind of assignment, into an array of the values' own
    shape."""
    if isinstance(values, np.ndarray) and values.dtype == dtype:
        return values
    shape = np.shape(values)
    if not advanced:
        out = np.empty(shape, dtype=dtype)
        out[...] = values
        return out
    n = int(np.prod(shape, dtype=np.int64))
    flat = np.empty(max(n, 1), dtype=dtype)
    flat[np.arange(n, dtype=np.intp).reshape(shape) if shape else np.zeros(1, dtype=np.intp)] = values
    return flat[:n].reshape(shape) if shape else flat.reshape(())


def broadcast_like_setitem(
    values: np.ndarray, shape: tuple[int, ...], *, lone_mask: bool = False
) -> np.ndarray:
    """``values`` (already cast) broadcast to a selection's result ``shape`` as ``a[key] = values`` does:
    leading axes of length 1 beyond the result's dimensions are dropped (``a[:] = [[1, 2, 3]]``), and a
    key that is one boolean array over every dimension (``lone_mask``: ``a[mask] = v``, a 0-d boolean of
    a 0-d array) takes NumPy's boolean assignment: 0-d or 1-d values only, of one value or one per
    selected element. Errors are NumPy's (``ValueError``, ``TypeError`` for the boolean rule).

    >>> broadcast_like_setitem(np.ones((1, 1, 3)), (2, 3)).shape
    (2, 3)
    >>> broadcast_like_setitem(np.ones((1, 2)), (2,), lone_mask=True)
    Traceback (most recent call last):
    ...
    TypeError: NumPy boolean array indexing assignment requires a 0 or 1-dimensional input, input has 2 dimensions
    """
    if lone_mask:
        if values.ndim > 1:
            raise TypeError(
                "NumPy boolean array indexing assignment requires a 0 or 1-dimensional input, input has "
                f"{values.ndim} dimensions"
            )
        if values.ndim == 1 and values.size not in (1, shape[0]):
            raise ValueError(
                f"NumPy boolean array indexing assignment cannot assign {values.size} input values to the "
                f"{shape[0]} output values where the mask is true"
            )
    trimmed = values
    while trimmed.ndim > len(shape) and trimmed.shape[0] == 1:
        trimmed = trimmed[0]
    try:
        return np.broadcast_to(trimmed, shape)
    except ValueError:
        raise ValueError(
            f"shape mismatch: value array of shape {values.shape} could not be broadcast to indexing result "
            f"of shape {shape}"
        ) from None


def cast_for_selection(values: Any, dtype: np.dtype, sel: Selection) -> np.ndarray:
    """``values`` converted and broadcast to the result of ``sel`` (normalized with ``resolve=False``) as
    ``a[key] = values`` does for an ``ndarray`` ``a`` of ``dtype``, in NumPy's order: the values
    converted, then the index arrays broadcast (``IndexError``), then the values broadcast.

    NumPy converts by the kind of selection: one element (integers only, no ellipsis) by its scalar rules
    (``np.uint16(40000)`` into int16 raises ``OverflowError``; a list into a bool element is its truth
    value); a basic selection as a view (a list of more dimensions than the view is refused, an
    array's leading axes of length 1 dropped); advanced indices by the unsafe array cast (wrapping).

    >>> from altarr.selection import normalize
    >>> cast_for_selection(7, np.dtype("u1"), normalize((slice(0, 2), [1]), (3, 3), resolve=False)).shape
    (2, 1)
    >>> cast_for_selection([[1, 2]], np.dtype("f4"), normalize(slice(0, 2), (3,), resolve=False))
    Traceback (most recent call last):
    ...
    ValueError: setting an array element with a sequence. The requested array would exceed the maximum number of dimension of 1.
    """
    if sel.basic and sel.scalar:
        out = np.empty((), dtype=dtype)
        out[()] = values
        return out
    if sel.basic:
        shape = sel.result_shape
        if not isinstance(values, np.ndarray) and np.ndim(values) > len(shape):
            raise ValueError(
                "setting an array element with a sequence. The requested array would exceed the maximum "
                f"number of dimension of {len(shape)}."
            )
        return broadcast_like_setitem(cast_like_setitem(values, dtype), shape)
    vals = cast_like_setitem(values, dtype, advanced=True)
    return broadcast_like_setitem(vals, sel.result_shape, lone_mask=sel.lone_mask)
