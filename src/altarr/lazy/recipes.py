"""What a pickled lazy array holds (its recipe, never values, cache or counters), and how it is rebuilt
(docs/lazy-arrays.md, "Recipes: pickling a lazy array").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedError

__all__ = ["rebuild_lazy_array", "register_lazy_type", "RECIPE_VERSION"]

#: The recipe format this altarr writes; it reads every version up to this one.
RECIPE_VERSION = 1

#: The class unpickled recipes rebuild: LazyArray registers itself (no import cycle).
_LAZY_TYPE: type | None = None


def register_lazy_type(cls: type) -> type:
    """Make ``cls`` the class unpickled lazy-array recipes rebuild (a class decorator)."""
    global _LAZY_TYPE
    _LAZY_TYPE = cls
    return cls


def rebuild_lazy_array(
    version: int,
    shape: tuple[int, ...],
    chunks: tuple[int, ...],
    dtype: str,
    dims: tuple[str, ...] | None,
    coords: dict[str, Any] | None,
    source: Any,
) -> Any:
    """Rebuild a pickled lazy array (recipe version 1)."""
    if _LAZY_TYPE is None:  # pragma: no cover - altarr.lazy's __init__ always loads the array module
        raise UnsupportedError("no lazy array class is registered: import altarr.lazy first")
    if version > RECIPE_VERSION:
        raise UnsupportedError(
            f"this lazy-array recipe has version {version}; this altarr reads versions <= {RECIPE_VERSION}"
        )
    return _LAZY_TYPE(tuple(shape), tuple(chunks), np.dtype(dtype), source, dims, coords)
