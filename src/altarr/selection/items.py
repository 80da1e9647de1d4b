"""The normalized form of an index expression: :class:`Selection`, its :class:`Item` s and their
:class:`DimSelection` progressions, and the checks of their values against the array's shape with NumPy's
messages.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np

from ..errors import SelectionError

__all__ = [
    "DimSelection",
    "Item",
    "Selection",
    "broadcast_index_shapes",
    "norm_array",
    "norm_int",
    "resolve_item",
]


class DimSelection(NamedTuple):
    """``n`` indices ``start, start+step, ...`` (``step > 0``) along one array dimension; ``reverse``: a
    negative step (the result is flipped). A named tuple: one is made per dimension of every key.
    """

    start: int
    step: int
    n: int
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


@dataclass(frozen=True)
class Item:
    """One item of a normalized index expression: ``kind`` ``"new"`` (``None``), ``"slice"``, ``"int"``
    (``value``: a :class:`DimSelection`), ``"array"`` (``int64`` positions), ``"mask"`` (a boolean array
    over ``dims``) or ``"bool0"`` (a bool); ``dims`` the dimensions it indexes, ``number`` its place in the
    expression (implicit trailing slices: one past the end)."""

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
    """A normalized index expression over an array of ``shape``, in one of :data:`FORMS`: ``items`` hold
    every dimension once, in the expression's order; ``ellipsis``: whether it had one (an all-integer
    selection then gives a 0-d array); ``resolved``: false until the arrays and masks are checked."""

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
        """Whether the key is one boolean array of the array's shape (``x[mask]``, ``x[True]`` of a 0-d
        array; not ``x[..., mask]``): NumPy assigns to it by its boolean assignment rule. An empty mask of
        another shape (``x[np.array([], bool)]`` of a 1-element ``x``) selects nothing as an index array
        does, and takes the ordinary broadcast (``= [[0]]`` is allowed)."""
        item = self.items[0] if len(self.items) == 1 else None
        return (
            self.form == "numpy"
            and not self.ellipsis
            and item is not None
            and (item.kind == "bool0" or (item.kind == "mask" and np.shape(item.value) == self.shape))
            and item.dims == tuple(range(len(self.shape)))
        )

    @property
    def result_shape(self) -> tuple[int, ...]:
        """The shape of the selection's result (``None`` axes inserted, integer axes dropped, the
        broadcast dimensions of advanced indices where NumPy puts them), known before any bound of an
        index array is checked.
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
        items = tuple(resolve_item(i, self.shape, self.form, check=check) for i in self.items)
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
    """The shape index arrays of ``shapes`` broadcast to; NumPy's ``IndexError`` when they do not."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        listed = " ".join(str(tuple(s)) for s in shapes)
        raise SelectionError(
            f"shape mismatch: indexing arrays could not be broadcast together with shapes {listed}"
        ) from None


# --- normalization of values ---------------------------------------------------------------------------
def _out_of_bounds(i: int, n: int, axis: int | None) -> SelectionError:
    """NumPy's message for index ``i`` outside ``n`` elements (``axis=None``: of the flat iterator)."""
    where = f"size {n}" if axis is None else f"axis {axis} with size {n}"
    return SelectionError(f"index {i} is out of bounds for {where}")


def norm_int(i: int, n: int, axis: int | None) -> int:
    if i < -n or i >= n:
        raise _out_of_bounds(i, n, axis)
    return i + n if i < 0 else i


def _first_out_of_bounds(a: np.ndarray, n: int, axis: int | None) -> SelectionError:
    """NumPy names the first index out of bounds in C order (not the smallest or the largest)."""
    flat = a.reshape(-1)
    return _out_of_bounds(int(flat[int(np.argmax((flat >= n) | (flat < -n)))]), n, axis)


def norm_array(arr: np.ndarray, n: int, axis: int | None, *, check: bool = True) -> np.ndarray:
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


def resolve_item(item: Item, shape: Sequence[int], form: str, *, check: bool = True) -> Item:
    if item.kind == "array":
        d = item.dims[0]
        return replace(item, value=norm_array(item.value, shape[d], d, check=check))
    if item.kind == "mask":
        _bool_check(item.value, item.dims, shape, numpy_rule=form == "numpy")
    return item
