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


def cast_like_setitem(values: Any, dtype: np.dtype) -> np.ndarray:
    """``values`` as an array of ``dtype``, converted as ``a[...] = values`` converts them for an
    ``ndarray`` ``a`` of that dtype (same errors, same warnings, same results)."""
    if isinstance(values, np.ndarray) and values.dtype == dtype:
        return values
    out = np.empty(np.shape(values), dtype=dtype)
    out[...] = values
    return out
