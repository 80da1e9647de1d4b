"""Normalization: any NumPy index expression of the four forms, once, into one canonical
:class:`Selection`, with NumPy's errors (:class:`~altarr.errors.SelectionError`) in NumPy's order.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import GridError, SelectionError
from .items import DimSelection, Item, Selection, norm_array, norm_int, resolve_item

__all__ = [
    "hyperslab_key",
    "normalize",
]

#: The indexing forms: NumPy's ``x[...]``, orthogonal ``.oindex``, vectorized ``.vindex``, C-order ``.flat``.
FORMS = ("numpy", "outer", "vector", "flat")

_VALID = (
    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or boolean arrays "
    "are valid indices"
)
_VALID_FLAT = "only integers, slices (`:`), ellipsis (`...`) and integer or boolean arrays are valid indices"
_NO_FLAT_BOOLEANS = (
    "boolean indices for iterators are not supported because of previous behavior that was confusing "
    "(valid boolean indices are expected to work in the future)"
)


# --- classification of index items ---------------------------------------------------------------------
def _classify(item: Any, valid: str = _VALID) -> tuple[str, Any]:
    if item is None:
        return ("none", None)
    if item is Ellipsis:
        return ("ellipsis", None)
    if isinstance(item, slice):
        return ("slice", item)
    if isinstance(item, bool | np.bool_):
        return ("bool0", bool(item))
    if isinstance(item, np.ndarray):
        arr = item
    elif isinstance(item, list | tuple | range):
        arr = np.asarray(item)  # a ragged nested list: NumPy's ValueError ("inhomogeneous shape")
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(np.intp)
        elif arr.dtype.kind not in "biu":  # NumPy names a list of floats (or strings) as any bad item
            raise SelectionError(valid)
    else:
        try:
            return ("int", operator.index(item))
        except TypeError:
            if hasattr(item, "__array__"):
                arr = np.asarray(item)
            else:
                raise SelectionError(valid) from None
    if arr.dtype == np.bool_:
        return ("bool0", bool(arr)) if arr.ndim == 0 else ("boolarr", arr)
    if arr.dtype.kind in "iu":
        return ("int", int(arr)) if arr.ndim == 0 else ("intarr", arr)
    raise SelectionError("arrays used as indices must be of integer (or boolean) type")


# --- dimensions per item, ellipsis -----------------------------------------------------------------------
def _item_dims(form: str, kind: str, val: Any) -> int:
    """How many array dimensions an item of ``kind`` indexes in ``form``."""
    if kind in ("none", "bool0"):
        if form == "outer":
            raise SelectionError("orthogonal and vectorized indexing do not accept None or a 0-d boolean")
        if form == "vector":
            raise SelectionError("vectorized indexing does not accept None or a 0-d boolean")
        return 0
    ndim: int = val.ndim if kind == "boolarr" and form != "outer" else 1
    return ndim


def _as_tuple(key: Any) -> tuple[Any, ...]:
    return key if isinstance(key, tuple) else (key,)


def _free_dims(classified: list[tuple[str, Any]], ndim: int, form: str) -> tuple[int, bool]:
    """The dimensions left to the ellipsis (or to implicit trailing slices), and whether there is one."""
    kinds = [k for k, _ in classified]
    if kinds.count("ellipsis") > 1:
        raise SelectionError("an index can only have a single ellipsis ('...')")
    used = sum(_item_dims(form, k, v) for k, v in classified if k != "ellipsis")
    if used > ndim:
        raise SelectionError(
            f"too many indices for array: array is {ndim}-dimensional, but {used} were indexed"
        )
    return ndim - used, "ellipsis" in kinds


# --- the one entry point ---------------------------------------------------------------------------------
def normalize(key: Any, shape: Sequence[int], form: str = "numpy", *, resolve: bool = True) -> Selection:
    """Normalize the index expression ``key`` over an array of ``shape``; ``form`` is one of :data:`FORMS`.
    With ``resolve=False`` integer arrays are left unchecked (as NumPy's assignments check them after
    converting the values); :meth:`Selection.resolve` finishes the job.
    """
    shape = tuple(map(int, shape))
    if form == "flat":
        return _normalize_flat(key, shape)
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    raw = _as_tuple(key)
    classified = [_classify(k) for k in raw]
    free, had_ellipsis = _free_dims(classified, len(shape), form)
    if not had_ellipsis:  # implicit trailing slices: numbered one past the last item
        classified.append(("ellipsis", None))
    items: list[Item] = []
    d = 0  # the next dimension
    for item_no, (kind, val) in enumerate(classified):
        src = raw[item_no] if item_no < len(raw) else slice(None)
        if kind == "ellipsis":
            for e in range(d, d + free):
                items.append(Item("slice", (e,), DimSelection(0, 1, shape[e]), item_no, src))
            d += free
        elif kind == "none":
            items.append(Item("new", (), None, item_no, src))
        elif kind == "slice":
            items.append(Item("slice", (d,), DimSelection.of_slice(val, shape[d]), item_no, src))
            d += 1
        elif kind == "int":
            items.append(Item("int", (d,), DimSelection(norm_int(val, shape[d], d), 1, 1), item_no, src))
            d += 1
        elif kind == "bool0":
            items.append(Item("bool0", (), val, item_no, src))
        else:
            if kind == "boolarr" and form == "outer" and val.ndim != 1:
                raise SelectionError("orthogonal boolean indices must be 1-dimensional")
            dims = tuple(range(d, d + _item_dims(form, kind, val)))
            item = Item("mask" if kind == "boolarr" else "array", dims, val, item_no, src)
            # a mask's shape is checked at once even unresolved: NumPy checks it before an assignment's
            # values (``a[..., [False]] = 128`` into int8 of 0 columns: IndexError, not OverflowError)
            items.append(resolve_item(item, shape, form) if item.kind == "mask" else item)
            d += len(dims)
    resolved = resolve and all(i.kind != "array" for i in items)  # nothing left to check: no resolve()
    sel = Selection(shape, form, tuple(items), had_ellipsis, resolved)
    return sel.resolve() if resolve else sel


def _normalize_flat(key: Any, shape: tuple[int, ...]) -> Selection:
    """``x.flat[key]``: one C-order linear index over ``prod(shape)`` elements (dimension ``(0,)``), with
    the errors of NumPy's flat iterator."""
    size = int(np.prod(shape, dtype=np.int64))
    raw = _as_tuple(key)
    kind, val = _flat_item(key, size)
    src = raw[0] if raw else key
    if kind == "int":
        item = Item("int", (0,), DimSelection(norm_int(val, size, None), 1, 1), 0, src)
    elif kind == "slice":
        item = Item("slice", (0,), DimSelection.of_slice(val, size), 0, src)
    elif kind == "ellipsis":
        item = Item("slice", (0,), DimSelection.of_slice(slice(None), size), 0, src)
    elif kind == "intarr":
        item = Item("array", (0,), norm_array(val, size, None), 0, src)
    elif kind == "boolarr":
        item = Item("array", (0,), np.flatnonzero(val).astype(np.int64), 0, src)
    else:
        raise SelectionError(_VALID_FLAT)
    return Selection(shape, "flat", (item,), False)


def _flat_item(key: Any, size: int) -> tuple[str, Any]:
    """The classified item ``x.flat[key]`` indexes with: NumPy checks the items as an index of a 1-d array,
    then takes the first item, alone or followed by 0-d boolean arrays only (docs/lazy-arrays.md,
    "Differences from NumPy")."""
    raw = _as_tuple(key)
    if not raw:
        return "ellipsis", None
    classified: list[tuple[str, Any]] = []
    for item in raw:
        if isinstance(item, np.bool_) or (isinstance(item, bool) and item is not key):
            raise SelectionError(_NO_FLAT_BOOLEANS)  # a lone Python bool is NumPy's deprecated 0-d case
        if isinstance(item, list | tuple) and np.asarray(item).dtype == np.bool_:
            raise SelectionError(_NO_FLAT_BOOLEANS)
        try:
            kind, val = _classify(item, _VALID_FLAT)
        except SelectionError:  # NumPy casts a float (deprecated) and goes on to the next item's errors
            if isinstance(item, np.ndarray) or np.asarray(item).dtype.kind not in "fc":
                raise
            kind, val = "float", None
        if kind == "ellipsis" and any(k == "ellipsis" for k, _ in classified):
            raise SelectionError("an index can only have a single ellipsis ('...')")
        classified.append((kind, val))
    used = sum(v.ndim if k == "boolarr" else k in ("int", "slice", "intarr", "float") for k, v in classified)
    if used > 1:
        raise SelectionError(
            f"too many indices for flat iterator: flat iterator is 1-dimensional, but {used} were indexed"
        )
    for kind, val in classified:
        if kind == "boolarr" and val.size not in (size, 0):
            raise SelectionError(
                "boolean index did not match indexed flat iterator along axis 0; size of axis is "
                f"{size} but size of corresponding boolean axis is {val.size}"
            )
    kind, val = classified[0]
    if len(raw) == 1 or (kind in ("intarr", "boolarr") and all(k == "bool0" for k, _ in classified[1:])):
        return kind, val
    raise SelectionError(_VALID_FLAT)


def hyperslab_key(subscripts: Sequence[Any], ndim: int) -> tuple[Any, ...]:
    """The ``oindex`` key of a hyperslab (:func:`altarr.extract`, :func:`altarr.plan`): one subscript per
    dimension, ``None`` (or a missing trailing one) for a whole dimension; ``...`` is refused.
    """
    if len(subscripts) > ndim:
        raise GridError(f"{len(subscripts)} subscripts for a {ndim}-dimensional array")
    key = tuple(slice(None) if s is None else s for s in subscripts)
    for s in key:
        if s is Ellipsis:
            raise GridError("extract/plan take one subscript per dimension; use None for a whole dimension")
    return key + (slice(None),) * (ndim - len(key))
