"""A lazy array's recipe checked: its dtype, shape and chunk shape, dimension names and coordinates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import GridError

__all__ = [
    "VALUE_KINDS",
    "is_lazy",
    "check_dtype",
    "normalize_coords",
    "normalize_dims",
    "normalize_geometry",
]

#: NumPy kinds a lazy array's values may have: bools, numbers, datetime64 and timedelta64.
VALUE_KINDS = "biufcmM"


def is_lazy(v: Any) -> bool:
    """Whether ``v`` is a lazy array (by its class's marker: no import of the array module)."""
    return getattr(type(v), "_is_lazy_array", False)


def check_dtype(dtype: Any) -> np.dtype:
    dt: np.dtype = np.dtype(dtype)
    if dt.kind not in VALUE_KINDS:
        raise TypeError(
            f"altarr arrays hold bool, numeric, datetime64 or timedelta64 values; dtype {dt} is not supported"
        )
    return dt


def normalize_geometry(shape: Any, chunks: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if isinstance(shape, int | np.integer):
        shape = (shape,)
    try:
        shp = tuple(int(s) for s in shape)
    except TypeError as e:
        raise GridError(f"shape must be an int or a sequence of ints, got {shape!r}") from e
    if any(s < 0 for s in shp):
        raise GridError(f"shape must not be negative, got {shp}")
    if isinstance(chunks, int | np.integer):
        chk = (int(chunks),) * len(shp)
    else:
        try:
            chk = tuple(int(c) for c in chunks)
        except TypeError as e:
            raise GridError(f"chunks must be an int or a sequence of ints, got {chunks!r}") from e
        if len(chk) == 1 and len(shp) != 1:
            chk = chk * len(shp)
    if len(chk) != len(shp):
        raise GridError(f"chunks {chk} do not match the {len(shp)} dimensions of shape {shp}")
    if any(c < 1 for c in chk):
        raise GridError(f"chunk sizes must be >= 1, got {chk}")
    return shp, chk


def normalize_dims(dims: Any, ndim: int) -> tuple[str, ...] | None:
    if dims is None:
        return None
    if isinstance(dims, str):
        dims = (dims,)
    out = tuple(str(d) for d in dims)
    if len(out) != ndim:
        raise ValueError(f"dims {out} must name each of the {ndim} dimensions")
    if len(set(out)) != ndim:
        raise ValueError(f"dims must be unique, got {out}")
    return out


def normalize_coords(
    coords: Any, dims: tuple[str, ...] | None, shape: tuple[int, ...]
) -> dict[str, Any] | None:
    if coords is None:
        return None
    if not isinstance(coords, Mapping):
        if dims is None or len(coords) != len(dims):
            raise ValueError("coords must be a mapping {dim: values} or one sequence per dimension")
        coords = dict(zip(dims, coords, strict=True))
    out: dict[str, Any] = {}
    for name, values in coords.items():
        if dims is not None and name in dims:
            arr = np.asarray(values)
            n = shape[dims.index(name)]
            if arr.ndim != 1 or len(arr) != n:
                raise ValueError(f"coordinate {name!r} must be 1-D with {n} values, got shape {arr.shape}")
            out[str(name)] = arr
        else:
            out[str(name)] = values
    return out
