"""Values written to a dataset are cast exactly as ``ndarray.__setitem__`` casts them.

NumPy refuses a Python integer that does not fit the target type (``OverflowError``), a float NaN into
an integer type (``ValueError``) and a float infinity into an integer type (``OverflowError``); arrays
are cast with its unsafe rule (NumPy's ``RuntimeWarning`` on invalid values included). The cast is done
*by* NumPy, into an array of the dataset's dtype, before anything is written, so a refused value never
leaves a partly written region or batch.

Example:
    >>> import numpy as np
    >>> cast_like_setitem(3, np.dtype("u2")), cast_like_setitem([1.5, 2.5], np.dtype("i1")).tolist()
    (array(3, dtype=uint16), [1, 2])
    >>> cast_like_setitem(70000, np.dtype("u2"))
    Traceback (most recent call last):
    ...
    OverflowError: Python integer 70000 out of bounds for uint16
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["cast_like_setitem"]


def cast_like_setitem(values: Any, dtype: np.dtype, *, advanced: bool = False) -> np.ndarray:
    """``values`` as an array of ``dtype``, converted as ``a[key] = values`` converts them for an
    ``ndarray`` ``a`` of that dtype (same errors, same warnings, same results).

    NumPy converts differently for basic keys (a view assigned with ``[...]``) and for advanced keys
    (integer arrays, masks: ``np.int64(128)`` into ``int8`` raises for the first and wraps for the
    second), so the conversion is done by the same kind of assignment, into an array of the values' own
    shape.

    >>> cast_like_setitem(np.int64(128), np.dtype("i1"), advanced=True)
    array(-128, dtype=int8)
    """
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
