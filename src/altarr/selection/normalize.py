"""Normalization: any NumPy index expression, once, into one canonical :class:`Selection`.

An index expression (``x[key]``, ``x.oindex[key]``, ``x.vindex[key]``, ``x.flat[key]``) is read item by
item: every item is classified (slice, integer, integer array, boolean mask, 0-d boolean, ``None``,
``...``), the ellipsis is expanded, implicit trailing slices are appended, every item is attached to the
array dimensions it indexes, and its values are normalized against the array's shape:

* a slice or an integer becomes a :class:`DimSelection`, a forward progression ``start, start+step, ...``
  (``step > 0``) with a ``reverse`` flag for negative steps and a ``drop`` flag for integers;
* an integer array becomes non-negative ``int64`` positions (bounds checked);
* a boolean mask is checked against the dimensions it covers (NumPy's rule: a mask axis of length 0
  is not compared) and kept as the mask;
* ``None`` and 0-d booleans index no dimension.

Errors are :class:`~altarr.errors.SelectionError` (an ``IndexError``) with NumPy's messages. Nothing here
knows chunks: :mod:`altarr.selection.plan` maps a :class:`Selection` to the chunks it touches.

Example:
    >>> import numpy as np
    >>> s = normalize((slice(None, None, -2), 3), (10, 7))
    >>> s.basic, [i.kind for i in s.items], s.items[0].value
    (True, ['slice', 'int'], DimSelection(start=1, step=2, n=5, drop=False, reverse=True))
    >>> normalize((..., np.array([True, False, True])), (2, 3)).items[-1].positions()
    (array([0, 2]),)
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import GridError, SelectionError

__all__ = [
    "DimSelection",
    "FORMS",
    "Item",
    "Selection",
    "check_index_types",
    "hyperslab_key",
    "is_basic_selection",
    "normalize",
]

#: The indexing forms: NumPy's ``x[...]``, orthogonal ``.oindex``, vectorized ``.vindex``, C-order ``.flat``.
FORMS = ("numpy", "outer", "vector", "flat")

_VALID = (
    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or boolean arrays "
    "are valid indices"
)
_VALID_FLAT = "only integers, slices (`:`), ellipsis (`...`) and integer or boolean arrays are valid indices"


@dataclass(frozen=True)
class DimSelection:
    """``n`` indices ``start, start+step, ...`` (``step > 0``) along one array dimension.

    ``reverse``: the selection runs backwards (a negative step), so the result is flipped along this
    dimension; ``drop``: an integer index, the dimension disappears from the result.

    >>> DimSelection.of_slice(slice(None, None, -3), 10), DimSelection.of_slice(slice(2, 9), 10).as_slice()
    (DimSelection(start=0, step=3, n=4, drop=False, reverse=True), slice(2, 9, 1))
    """

    start: int
    step: int
    n: int
    drop: bool = False
    reverse: bool = False

    @classmethod
    def of_slice(cls, s: slice, size: int) -> DimSelection:
        """The progression a slice selects on a dimension of ``size`` elements."""
        start, stop, step = s.indices(size)
        rng = range(start, stop, step)
        n = len(rng)
        if step > 0:
            return cls(start if n else 0, step, n)
        return cls(rng[-1] if n else 0, -step, n, reverse=True)

    @property
    def last(self) -> int:
        """The last (largest) index selected (``start - step`` when nothing is)."""
        return self.start + self.step * (self.n - 1)

    def as_slice(self) -> slice:
        """The selection as a slice in its own direction (backwards for ``reverse``)."""
        if not self.n:
            return slice(0, 0, -self.step if self.reverse else self.step)
        if not self.reverse:
            return slice(self.start, self.last + 1, self.step)
        stop = self.start - self.step
        return slice(self.last, stop if stop >= 0 else None, -self.step)


@dataclass(frozen=True)
class Item:
    """One item of a normalized index expression.

    ``kind`` is one of ``"new"`` (``None``), ``"slice"``, ``"int"`` (``value``: a :class:`DimSelection`),
    ``"array"`` (``value``: ``int64`` positions of any shape), ``"mask"`` (``value``: a boolean array over
    ``dims``), ``"bool0"`` (``value``: a Python bool). ``dims`` are the array dimensions the item indexes,
    ``number`` its place in the expression (implicit trailing slices count as one past the end).
    """

    kind: str
    dims: tuple[int, ...]
    value: Any
    number: int
    raw: Any = field(default=None, compare=False, repr=False)

    @property
    def advanced(self) -> bool:
        """Whether the item makes NumPy use advanced indexing."""
        return self.kind in ("array", "mask", "bool0")

    def positions(self) -> tuple[np.ndarray, ...]:
        """The selected positions along each of ``dims`` as ``int64`` arrays (a mask's ``nonzero``)."""
        if self.kind == "mask":
            return tuple(p.astype(np.int64) for p in np.nonzero(self.value))
        if self.kind == "array":
            return (self.value,)
        if self.kind in ("slice", "int"):
            d = self.value
            return (
                np.arange(d.start, d.start + d.step * d.n, d.step, dtype=np.int64)[:: -1 if d.reverse else 1],
            )
        return ()


@dataclass(frozen=True)
class Selection:
    """A normalized index expression over an array of ``shape``, in one of :data:`FORMS`.

    ``items`` hold every dimension exactly once (implicit trailing slices included), in the order of the
    expression; ``ellipsis`` says whether it had one (then an all-integer selection gives a 0-d array
    instead of a scalar). ``resolved`` is false for a selection normalized with ``resolve=False``: its
    arrays and masks are not checked yet (see :func:`normalize`).
    """

    shape: tuple[int, ...]
    form: str
    items: tuple[Item, ...]
    ellipsis: bool
    resolved: bool = True

    @property
    def basic(self) -> bool:
        """NumPy *basic* indexing: only slices, integers and ``None``."""
        return not any(i.advanced for i in self.items)

    @property
    def dims(self) -> list[DimSelection]:
        """One :class:`DimSelection` per array dimension (basic selections only)."""
        return [i.value for i in self.items if i.kind in ("slice", "int")]

    @functools.cached_property
    def index_shape(self) -> tuple[int, ...]:
        """The shape NumPy's advanced indices broadcast to (its "index result"): integer arrays their
        shape, a mask ``(selected,)``, a 0-d boolean ``(1,)`` or ``(0,)``, an integer ``()`` (in an advanced
        selection); ``SelectionError`` where they do not broadcast. ``()`` for a basic selection; the
        orthogonal form combines its arrays as a cartesian product instead (their shapes in turn).

        >>> normalize(([[0], [1]], slice(None), [2, 0, 1]), (2, 3, 4)).index_shape
        (2, 3)
        """
        shapes = [_index_shape(i) for i in self.items if i.advanced or (i.kind == "int" and not self.basic)]
        if self.form == "outer":
            return tuple(n for s in shapes for n in s)
        return broadcast_index_shapes(shapes)

    @property
    def points_first(self) -> bool:
        """Whether the broadcast dimensions of NumPy's advanced indices go first (the advanced items are
        not next to each other) rather than in place of the first of them."""
        if self.form != "numpy":
            return self.form == "vector"
        numbers = [i.number for i in self.items if i.advanced or (i.kind == "int" and not self.basic)]
        return bool(numbers) and numbers[-1] - numbers[0] != len(set(numbers)) - 1

    @property
    def lone_mask(self) -> bool:
        """Whether the key is one boolean array over every dimension (``x[mask]``, ``x[True]`` of a 0-d
        array; not ``x[..., mask]``): NumPy assigns to it by its boolean assignment rule."""
        return (
            self.form == "numpy"
            and not self.ellipsis
            and len(self.items) == 1
            and self.items[0].kind in ("mask", "bool0")
            and self.items[0].dims == tuple(range(len(self.shape)))
        )

    @property
    def result_shape(self) -> tuple[int, ...]:
        """The shape of the selection's result (``None`` axes inserted, integer axes dropped, the
        broadcast dimensions of advanced indices where NumPy puts them), known before any bound of an
        index array is checked.

        >>> normalize((slice(1, 3), [[0], [1]], None), (4, 5), resolve=False).result_shape
        (2, 2, 1, 1)
        """
        if self.form == "flat":
            (item,) = self.items
            return item.value.shape if item.kind == "array" else () if item.kind == "int" else (item.value.n,)
        if self.basic and self.form != "vector":
            return tuple(
                1 if i.kind == "new" else i.value.n for i in self.items if i.kind in ("new", "slice")
            )
        out: list[int] = list(self.index_shape) if self.points_first else []
        placed = self.points_first
        for i in self.items:
            if i.kind == "new":
                out.append(1)
            elif i.kind == "slice":
                out.append(i.value.n)
            elif self.form == "outer":
                out.extend(_index_shape(i) if i.kind != "int" else ())
            elif not placed:
                out.extend(self.index_shape)
                placed = True
        return tuple(out)

    @property
    def scalar(self) -> bool:
        """Whether a basic selection gives a NumPy scalar (all integers, no ellipsis)."""
        return not self.ellipsis and not self.result_shape

    def require_basic(self) -> Selection:
        """``self`` if basic, else the region API's error naming the first advanced item."""
        for i in self.items:
            if i.advanced:
                raise SelectionError(
                    f"datasets take basic selections (integers, slices, '...'); got {type(i.raw).__name__}. "
                    "For integer-array, boolean or point selections use the lazy array: "
                    "altarr.open(path).oindex[...] / .vindex[...] / x[...]"
                )
        return self

    def resolve(self) -> Selection:
        """Check and normalize the arrays and masks of a selection made with ``resolve=False``.

        Index arrays are bounds-checked only when the indices select something: NumPy checks none of
        them when its advanced indices broadcast to an empty shape (``x[[5], []]`` is empty, not an
        ``IndexError``), nor does the orthogonal form when its product is empty (``x.oindex[:, [5]]`` of
        ``(0, 3)``, as ``np.ix_``). The broadcast itself is checked first (NumPy's "shape mismatch").
        """
        if self.resolved:
            return self
        check = self.form == "flat" or all(self.result_shape if self.form == "outer" else self.index_shape)
        items = tuple(_resolve_item(i, self.shape, self.form, check=check) for i in self.items)
        return replace(self, items=items, resolved=True)


def _index_shape(item: Item) -> tuple[int, ...]:
    """The shape an advanced item's positions take in NumPy's broadcast of the indices."""
    if item.kind == "array":
        return tuple(item.value.shape)
    if item.kind == "mask":
        return (int(np.count_nonzero(item.value)),)
    if item.kind == "bool0":
        return (int(item.value),)
    return ()


def broadcast_index_shapes(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """The shape index arrays of ``shapes`` broadcast to; NumPy's ``IndexError`` when they do not.

    >>> broadcast_index_shapes([(2, 1), (3,)])
    (2, 3)
    """
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        listed = " ".join(str(tuple(s)) for s in shapes)
        raise SelectionError(
            f"shape mismatch: indexing arrays could not be broadcast together with shapes {listed}"
        ) from None


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


def is_basic_selection(selection: Any) -> bool:
    """Whether a selection is NumPy *basic* indexing: integers (not booleans), slices, ``...`` and
    ``None`` only. Anything else (lists, ranges, integer or boolean arrays) is advanced indexing.

    >>> is_basic_selection((1, slice(None), ..., None)), is_basic_selection(([0, 1],)), is_basic_selection(True)
    (True, False, False)
    """
    for s in _as_tuple(selection):
        if s is None or s is Ellipsis or isinstance(s, slice):
            continue
        if isinstance(s, bool | np.bool_) or (isinstance(s, np.ndarray) and (s.ndim or s.dtype == np.bool_)):
            return False
        try:
            operator.index(s)
        except TypeError:
            return False
    return True


# --- normalization of values ---------------------------------------------------------------------------
def _out_of_bounds(i: int, n: int, axis: int | None) -> SelectionError:
    """NumPy's message for index ``i`` outside ``n`` elements (``axis=None``: of the flat iterator)."""
    where = f"size {n}" if axis is None else f"axis {axis} with size {n}"
    return SelectionError(f"index {i} is out of bounds for {where}")


def _norm_int(i: int, n: int, axis: int | None) -> int:
    if i < -n or i >= n:
        raise _out_of_bounds(i, n, axis)
    return i + n if i < 0 else i


def _first_out_of_bounds(a: np.ndarray, n: int, axis: int | None) -> SelectionError:
    """NumPy names the first index out of bounds in C order (not the smallest or the largest)."""
    flat = a.reshape(-1)
    return _out_of_bounds(int(flat[int(np.argmax((flat >= n) | (flat < -n)))]), n, axis)


def _norm_array(arr: np.ndarray, n: int, axis: int | None, *, check: bool = True) -> np.ndarray:
    """``arr`` as non-negative ``int64`` positions along a dimension of ``n`` (bounds checked unless
    ``check`` is false: then the positions must not be read, as nothing is selected)."""
    if arr.size == 0:
        return arr.astype(np.int64)
    a = arr.astype(np.int64, copy=False)  # as NumPy casts: uint64 past 2**63 wraps to negative
    lo, hi = int(a.min()), int(a.max())
    if check and (lo < -n or hi >= n):
        raise _first_out_of_bounds(a, n, axis)
    if lo < 0:
        a = np.where(a < 0, a + n, a)
    return a


def _bool_check(arr: np.ndarray, dims: Sequence[int], shape: Sequence[int], *, numpy_rule: bool) -> None:
    """A mask's shape against the dimensions it covers. NumPy (``numpy_rule``) does not compare a mask
    axis of length 0 (it selects nothing, whatever the dimension's size); ``oindex``/``vindex`` do."""
    for a, d in enumerate(dims):
        if arr.shape[a] != shape[d] and not (numpy_rule and arr.shape[a] == 0):
            raise SelectionError(
                f"boolean index did not match indexed array along axis {d}; size of axis is {shape[d]} "
                f"but size of corresponding boolean axis is {arr.shape[a]}"
            )


def _resolve_item(item: Item, shape: Sequence[int], form: str, *, check: bool = True) -> Item:
    if item.kind == "array":
        d = item.dims[0]
        return replace(item, value=_norm_array(item.value, shape[d], d, check=check))
    if item.kind == "mask":
        _bool_check(item.value, item.dims, shape, numpy_rule=form == "numpy")
    return item


# --- dimensions per item, ellipsis -----------------------------------------------------------------------
def _numpy_dims(kind: str, val: Any) -> int:
    if kind in ("slice", "int", "intarr"):
        return 1
    if kind == "boolarr":
        ndim: int = val.ndim
        return ndim
    return 0


def _outer_dims(kind: str, val: Any) -> int:
    if kind in ("none", "bool0"):
        raise SelectionError("orthogonal and vectorized indexing do not accept None or a 0-d boolean")
    return 1


def _vector_dims(kind: str, val: Any) -> int:
    if kind in ("none", "bool0"):
        raise SelectionError("vectorized indexing does not accept None or a 0-d boolean")
    return val.ndim if kind == "boolarr" else 1


_DIMS: dict[str, Callable[[str, Any], int]] = {
    "numpy": _numpy_dims,
    "outer": _outer_dims,
    "vector": _vector_dims,
}


def _as_tuple(key: Any) -> tuple[Any, ...]:
    return key if isinstance(key, tuple) else (key,)


def _expand(
    classified: list[tuple[str, Any]], ndim: int, per_item_dims: Callable[[str, Any], int]
) -> tuple[list[tuple[str, Any, range, int]], bool]:
    """Attach dimensions to items; expand the ellipsis. Returns (entries, had_ellipsis).

    Each entry: (kind, value, dims(range), item_no). Trailing dimensions get implicit slices.
    """
    n_ell = sum(1 for k, _ in classified if k == "ellipsis")
    if n_ell > 1:
        raise SelectionError("an index can only have a single ellipsis ('...')")
    consumed = sum(per_item_dims(k, v) for k, v in classified if k != "ellipsis")
    if consumed > ndim:
        raise SelectionError(
            f"too many indices for array: array is {ndim}-dimensional, but {consumed} were indexed"
        )
    entries: list[tuple[str, Any, range, int]] = []
    d = 0
    for item_no, (kind, val) in enumerate(classified):
        if kind == "ellipsis":
            for _ in range(ndim - consumed):
                entries.append(("slice", slice(None), range(d, d + 1), item_no))
                d += 1
            continue
        k = per_item_dims(kind, val)
        entries.append((kind, val, range(d, d + k), item_no))
        d += k
    while d < ndim:
        entries.append(("slice", slice(None), range(d, d + 1), len(classified)))
        d += 1
    return entries, n_ell == 1


# --- the one entry point ---------------------------------------------------------------------------------
def normalize(key: Any, shape: Sequence[int], form: str = "numpy", *, resolve: bool = True) -> Selection:
    """Normalize the index expression ``key`` over an array of ``shape`` (see the module docstring).

    ``form`` is one of :data:`FORMS`. Errors come in NumPy's order: item types, the ellipsis, the number
    of indices, then each item in turn (integers, arrays and masks against their dimensions). With
    ``resolve=False`` integer arrays are left unchecked (NumPy checks their bounds only after an
    assignment's values were converted; masks' shapes before); :meth:`Selection.resolve` finishes the job.

    >>> s = normalize(([2, -1], slice(1, None)), (4, 5))
    >>> [i.kind for i in s.items], s.items[0].value.tolist(), s.basic
    (['array', 'slice'], [2, 3], False)
    """
    shape = tuple(int(n) for n in shape)
    if form == "flat":
        return _normalize_flat(key, shape)
    if form == "numpy":
        fast = _normalize_simple(key, shape, resolve)
        if fast is not None:
            return fast
    try:
        per_item_dims = _DIMS[form]
    except KeyError:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}") from None
    raw = _as_tuple(key)
    classified = [_classify(k) for k in raw]
    entries, had_ellipsis = _expand(classified, len(shape), per_item_dims)
    items: list[Item] = []
    for kind, val, ds, item_no in entries:
        src = raw[item_no] if item_no < len(raw) else slice(None)
        dims = tuple(ds)
        if kind == "none":
            items.append(Item("new", (), None, item_no, src))
        elif kind == "slice":
            items.append(Item("slice", dims, DimSelection.of_slice(val, shape[ds[0]]), item_no, src))
        elif kind == "int":
            i = _norm_int(val, shape[ds[0]], ds[0])
            items.append(Item("int", dims, DimSelection(i, 1, 1, drop=True), item_no, src))
        elif kind == "bool0":
            items.append(Item("bool0", (), val, item_no, src))
        else:
            if kind == "boolarr" and form == "outer" and val.ndim != 1:
                raise SelectionError("orthogonal boolean indices must be 1-dimensional")
            item = Item("mask" if kind == "boolarr" else "array", dims, val, item_no, src)
            # a mask's shape is checked at once even unresolved: NumPy checks it before an assignment's
            # values (``a[..., [False]] = 128`` into int8 of 0 columns: IndexError, not OverflowError)
            items.append(_resolve_item(item, shape, form) if item.kind == "mask" else item)
    sel = Selection(shape, form, tuple(items), had_ellipsis, resolved=False)
    return sel.resolve() if resolve else sel


def _normalize_simple(key: Any, shape: tuple[int, ...], resolve: bool) -> Selection | None:
    """The common case of ``x[...]`` without the general machinery: integers and slices only, no more
    of them than dimensions (the same items :func:`normalize` builds; ``None`` for anything else). Small
    reads are dominated by per-call costs, so this path matters for them."""
    raw = _as_tuple(key)
    if len(raw) > len(shape):
        return None
    for k in raw:  # every item's type first: NumPy reports a refused type before any bound
        if not (type(k) is slice or type(k) is int or isinstance(k, np.integer)):
            return None
    items: list[Item] = []
    for d, k in enumerate(raw):
        if type(k) is slice:
            items.append(Item("slice", (d,), DimSelection.of_slice(k, shape[d]), d, k))
        else:
            i = _norm_int(operator.index(k), shape[d], d)
            items.append(Item("int", (d,), DimSelection(i, 1, 1, drop=True), d, k))
    whole = slice(None)
    for d in range(len(raw), len(shape)):
        items.append(Item("slice", (d,), DimSelection.of_slice(whole, shape[d]), len(raw), whole))
    return Selection(shape, "numpy", tuple(items), False, resolve)


def _normalize_flat(key: Any, shape: tuple[int, ...]) -> Selection:
    """``x.flat[key]``: one C-order linear index over ``prod(shape)`` elements; the item's ``dims`` is
    ``(0,)`` of that flattened dimension and ``array`` positions keep the index's shape. Errors are those
    of NumPy's flat iterator (``()`` selects everything, as ``...`` does)."""
    size = int(np.prod(shape, dtype=np.int64))
    raw = _as_tuple(key)
    if len(raw) > 1:  # NumPy converts the items in turn before it counts them: a ragged list's ValueError
        for item in raw:  # (``x.flat[None, [0, [1, 2]]]``) unless a string, boolean or float array is first
            if isinstance(item, bool | np.bool_ | str | bytes) or (
                isinstance(item, list | tuple) and np.asarray(item).dtype.kind in "SUb"
            ):
                raise SelectionError(_VALID_FLAT)
            if isinstance(item, np.ndarray) and item.dtype.kind not in "biu":
                raise SelectionError("arrays used as indices must be of integer (or boolean) type")
        raise SelectionError(_too_many_flat(len(raw)))
    if raw:
        kind, val = _classify(raw[0], _VALID_FLAT)
    else:
        kind, val = "ellipsis", None
    src = raw[0] if raw else key
    if kind == "int":
        item = Item("int", (0,), DimSelection(_norm_int(val, size, None), 1, 1, drop=True), 0, src)
    elif kind == "slice":
        item = Item("slice", (0,), DimSelection.of_slice(val, size), 0, src)
    elif kind == "ellipsis":
        item = Item("slice", (0,), DimSelection.of_slice(slice(None), size), 0, src)
    elif kind == "intarr":
        item = Item("array", (0,), _norm_array(val, size, None), 0, src)
    elif kind == "boolarr":
        if val.ndim != 1:
            raise SelectionError(_too_many_flat(val.ndim))
        if val.size not in (size, 0):  # NumPy's flat iterator takes an empty mask as an empty index
            raise SelectionError(
                "boolean index did not match indexed flat iterator along axis 0; size of axis is "
                f"{size} but size of corresponding boolean axis is {val.size}"
            )
        item = Item("array", (0,), np.flatnonzero(val).astype(np.int64), 0, src)
    else:
        raise SelectionError(_VALID_FLAT)
    return Selection(shape, "flat", (item,), False)


def _too_many_flat(n: int) -> str:
    return f"too many indices for flat iterator: flat iterator is 1-dimensional, but {n} were indexed"


def hyperslab_key(subscripts: Sequence[Any], ndim: int) -> tuple[Any, ...]:
    """The ``oindex`` key of a hyperslab (:func:`altarr.extract`, :func:`altarr.plan`): one subscript per
    dimension, ``None`` (or a missing trailing one) for a whole dimension; ``...`` is refused.

    >>> hyperslab_key(([0, 3], None), 3)
    ([0, 3], slice(None, None, None), slice(None, None, None))
    """
    if len(subscripts) > ndim:
        raise GridError(f"{len(subscripts)} subscripts for a {ndim}-dimensional array")
    key = tuple(slice(None) if s is None else s for s in subscripts)
    for s in key:
        if s is Ellipsis:
            raise GridError("extract/plan take one subscript per dimension; use None for a whole dimension")
    return key + (slice(None),) * (ndim - len(key))


def check_index_types(key: Any, shape: Sequence[int]) -> None:
    """Raise NumPy's ``IndexError`` for what NumPy checks before an assignment's values are converted:
    index items of a refused type, the number of indices, and integer (not array) indices out of bounds.
    Index arrays' bounds and broadcast shapes are checked after the values, as NumPy does.

    >>> check_index_types(([0, 9], 1), (3, 4))  # the array is checked later
    """
    normalize(key, shape, "numpy", resolve=False)
