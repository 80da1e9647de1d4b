"""The parts of the differential fuzz against NumPy (issues 12 and 33): arrays, the objects under test,
index expressions, written values, the NumPy references of ``oindex``/``vindex``, and the comparison
(the calls drawn for an array are in :mod:`_numpy_calls`).

An example is a NumPy array of a random shape (0-d to 4-d, axes of length 0 included), one of the 13
dtypes and values (NaN, infinities, ``-0.0``, the extremes of the dtype), and one or more objects that
stand for it: a lazy array over a fetch of random chunks, a :class:`~altarr.Dataset` holding the values
(Zarr v2, Zarr v3, N5, sharded Zarr v3 or N5, nested shards) or a lazy array over such a dataset
(``aa.open``). The same call runs on NumPy and on each object; :func:`assert_same` compares the
outcomes: the exception type, or the kind (scalar or array), dtype, shape and values (bit for bit for
reads and writes; within a rounding tolerance for reductions that add in another order).
"""

from __future__ import annotations

import itertools
import operator
import os
import random
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st

import altarr as aa
from _lazy_support import lazy
from altarr.stores import MemoryStore

DTYPES = ["bool", "i1", "u1", "i2", "u2", "i4", "i8", "u8", "f2", "f4", "f8", "c8", "c16"]
N5_DTYPES = {"i1", "u1", "i2", "u2", "i4", "i8", "u8", "f4", "f8"}
FORMATS = ["zarr2", "zarr3", "zarr3-sharded", "zarr3-nested", "n5", "n5-sharded"]


def fuzz_seed() -> int:
    """The seed of the slow runs: ``ALTARR_FUZZ_SEED`` (tests/conftest.py sets the suite's), else a fresh one
    (each failure message names it)."""
    env = os.environ.get("ALTARR_FUZZ_SEED")
    return int(env) if env else random.SystemRandom().randrange(2**32)


# --- values ----------------------------------------------------------------------------------------------
def make_values(dt: np.dtype, shape: tuple[int, ...], seed: int, *, extremes: bool = False) -> np.ndarray:
    """Values of ``dt``: small numbers whose sums are exact in every dtype, NaN, infinities and ``-0.0``,
    and with ``extremes`` also the dtype's limits and numbers whose products over- or underflow (a
    0-d array, never a NumPy scalar)."""
    rng = np.random.default_rng(seed)
    if dt.kind == "b":
        return np.asarray(rng.random(shape) < 0.5)
    if dt.kind in "iu":
        vals = rng.integers(0 if dt.kind == "u" else -2, 3, size=shape).astype(dt)
        if extremes:
            info = np.iinfo(dt)
            pool = np.array([info.min, info.max, info.min + 1, info.max - 1], dtype=dt)
            vals = np.where(rng.random(shape) < 0.3, rng.choice(pool, size=shape), vals)
        return np.asarray(vals)
    part = np.dtype(dt.char.lower()) if dt.kind == "c" else dt
    real = _float_part(part, shape, rng, extremes)
    if dt.kind == "c":
        return np.asarray((real + 1j * _float_part(part, shape, rng, extremes)).astype(dt))
    return np.asarray(real)


def _float_part(dt: np.dtype, shape: tuple[int, ...], rng: np.random.Generator, extremes: bool) -> np.ndarray:
    pool = [-1.0, -0.5, 0.0, -0.0, 0.5, 1.0, 1.0, 2.0]
    vals = rng.choice(np.array(pool), size=shape).astype(dt)
    special = rng.random(shape)
    vals = np.where(special < 0.07, np.nan, vals)
    vals = np.where((special >= 0.07) & (special < 0.1), rng.choice([np.inf, -np.inf], size=shape), vals)
    if extremes:
        fi = np.finfo(dt)
        big = 2.0 ** (fi.maxexp // 2.5)
        tiny = 2.0 ** (fi.minexp // 2.5)
        limits = np.array([big, -big, tiny, -tiny, big * 3, tiny / 3, float(fi.max), float(fi.tiny)], dt)
        vals = np.where((special >= 0.1) & (special < 0.5), rng.choice(limits, size=shape), vals)
    return vals.astype(dt)


@st.composite
def arrays(draw, max_ndim: int = 4, max_side: int = 4, extremes: bool | None = None, dtypes=DTYPES):
    """``(values, chunks)``: a shape of 0 to ``max_ndim`` axes (one in ten of length 0 allowed), chunks of
    1 to 4, one of ``dtypes``; ``extremes`` drawn unless given."""
    ndim = draw(st.integers(0, max_ndim))
    shape = tuple(draw(st.integers(0 if draw(st.integers(0, 9)) == 0 else 1, max_side)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    dt = np.dtype(draw(st.sampled_from(dtypes)))
    ext = draw(st.booleans()) if extremes is None else extremes
    return make_values(dt, shape, draw(st.integers(0, 2**32 - 1)), extremes=ext), chunks


# --- the objects under test -----------------------------------------------------------------------------
def make_dataset(data: np.ndarray, chunks: tuple[int, ...], fmt: str, store: Any = None) -> aa.Dataset:
    """A dataset holding ``data`` (a format that cannot hold its dtype or shape becomes Zarr v3)."""
    base = fmt.split("-")[0]
    if base == "n5" and (data.dtype.str[1:] not in N5_DTYPES or data.ndim == 0):
        base = "zarr3"
    shards: Any = None
    if fmt.endswith(("sharded", "nested")) and data.ndim:
        shards = tuple(c * (1 + (i % 2)) for i, c in enumerate(chunks))
        if fmt.endswith("nested") and base == "zarr3":
            shards = [shards, tuple(2 * s for s in shards)]
    ds = aa.create_dataset(
        MemoryStore() if store is None else store,
        shape=data.shape,
        dtype=data.dtype,
        chunks=chunks,
        shards=shards,
        format=base,
        fill_value=0 if base == "n5" else _fill(data.dtype),
    )
    if data.size:
        ds[...] = data
    return ds


def _fill(dt: np.dtype) -> Any:
    """A fill value that some chunks hold whole (so they are not stored, and read back as the fill); N5
    has none but 0."""
    return float("nan") if dt.kind in "fc" else 0


_URLS = itertools.count()


def lazy_subject(data: np.ndarray, chunks: tuple[int, ...], source: str) -> aa.LazyArray:
    """A lazy array over ``data``: a fetch over the array in memory (``"fetch"``), or ``aa.open`` of a
    dataset of format ``source`` in an fsspec ``memory://`` store."""
    if source == "fetch":
        return lazy(data, chunks)[0]
    url = f"memory://altarr-fuzz/{os.getpid()}-{next(_URLS)}"
    make_dataset(data, chunks, source, url)
    return aa.open(url)


def forget_memory_urls() -> None:
    """Drop the ``memory://`` datasets :func:`lazy_subject` made (the fsspec memory file system is
    global)."""
    import fsspec

    fs = fsspec.filesystem("memory")
    if fs.exists("/altarr-fuzz"):
        fs.rm("/altarr-fuzz", recursive=True)


# --- outcomes --------------------------------------------------------------------------------------------
class Raised:
    """An exception as an outcome."""

    def __init__(self, exc: BaseException):
        self.exc = exc

    def __repr__(self) -> str:
        return f"Raised({type(self.exc).__name__}: {self.exc})"


def run(fn: Callable[[], Any]) -> tuple[Any, list[tuple[type, str]]]:
    """``(fn()'s result or Raised, the warnings it gave as (category, message))``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = fn()
        except Exception as e:  # the exception type is what is compared
            res = Raised(e)
    return res, [(w.category, str(w.message)) for w in caught]


def _tolerance(dt: np.dtype) -> float:
    base = {2: 2e-3, 4: 1e-5, 8: 1e-10}
    if dt.kind == "c":
        return base[dt.itemsize // 2]
    if dt.kind == "f":
        return base[dt.itemsize]
    return 0.0


def _same_bits(got: np.ndarray, exp: np.ndarray) -> bool:
    """Equal values, NaNs equal (whatever their payload), ``-0.0`` told from ``0.0``."""
    if exp.dtype.kind not in "fc":
        return bool(np.array_equal(got, exp))
    pairs = [(got.real, exp.real), (got.imag, exp.imag)] if exp.dtype.kind == "c" else [(got, exp)]
    for a, b in pairs:
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        if not np.array_equal(nan_a, nan_b):
            return False
        ok = ~nan_a
        if not (np.array_equal(a[ok], b[ok]) and np.array_equal(np.signbit(a[ok]), np.signbit(b[ok]))):
            return False
    return True


#: NumPy's ``nanvar``/``nanstd`` subtract the mean in place, in the array's own dtype (float16 deviations
#: even with ``dtype=float32``): their answers carry that dtype's rounding too.
ROUND_IN_INPUT_DTYPE = frozenset({"nanvar", "nanstd"})


def reduction_rounding(name: str, data: np.ndarray) -> bool | np.dtype:
    """``assert_same``'s ``rounding`` for NumPy's reduction ``name`` of ``data``."""
    return data.dtype if name in ROUND_IN_INPUT_DTYPE else True


def assert_same(expected: Any, got: Any, *, rounding: bool | np.dtype = False, what: str = "") -> None:
    """``got`` is NumPy's ``expected``: an exception of the same type, or the same kind (Python scalar,
    NumPy scalar, array; a lazy array counts as an array), dtype, shape and values (exactly, signed
    zeros included, unless ``rounding``: a dtype there is one NumPy rounded in on the way, whose
    tolerance applies when it is the coarser)."""
    if isinstance(expected, Raised):
        assert isinstance(got, Raised), f"{what}: NumPy raised {expected!r}, got {got!r}"
        assert isinstance(got.exc, type(expected.exc)), f"{what}: NumPy raised {expected!r}, got {got!r}"
        return
    assert not isinstance(got, Raised), f"{what}: NumPy gave {expected!r}, got {got!r}"
    if isinstance(expected, tuple | list) and not isinstance(expected, np.ndarray):
        assert type(got) is type(expected) and len(got) == len(expected), f"{what}: {got!r} != {expected!r}"
        for e, g in zip(expected, got, strict=True):
            assert_same(e, g, rounding=rounding, what=what)
        return
    if isinstance(expected, bool | int | float | complex) and not isinstance(expected, np.generic):
        assert type(got) is type(expected), f"{what}: NumPy gave {type(expected)}, got {type(got)}"
        assert _same_bits(np.asarray(got), np.asarray(expected)), f"{what}: {got!r} != {expected!r}"
        return
    assert aa.is_altarr(got) or type(got) is type(expected), (
        f"{what}: NumPy gave a {type(expected).__name__}, got a {type(got).__name__}"
    )
    got = np.asarray(got[...] if aa.is_altarr(got) else got)
    exp = np.asarray(expected)
    assert got.dtype == exp.dtype, f"{what}: dtype {got.dtype} != NumPy's {exp.dtype}"
    assert got.shape == exp.shape, f"{what}: shape {got.shape} != NumPy's {exp.shape}"
    if rounding is not False and exp.dtype.kind in "fc":
        tol = _tolerance(exp.dtype)
        if isinstance(rounding, np.dtype):
            tol = max(tol, _tolerance(rounding))
        np.testing.assert_allclose(got, exp, rtol=tol, atol=tol, equal_nan=True, err_msg=what)
    elif exp.dtype == object:
        assert got.tolist() == exp.tolist(), what
    else:
        assert _same_bits(got, exp), f"{what}:\n got {got!r}\nwant {exp!r}"


# --- index expressions -----------------------------------------------------------------------------------
def _int_like(draw, n: int) -> Any:
    i = draw(st.integers(-n - 1, n))
    how = draw(st.integers(0, 5))
    if how == 0:
        return np.int64(i)
    if how == 1 and i >= 0:
        return np.uint8(min(i, 255))
    if how == 2:
        return np.array(i)
    return i


def index_item(draw, n: int) -> Any:
    """One item of a NumPy index expression for an axis of ``n`` (valid or not)."""
    kind = draw(
        st.sampled_from(
            [
                "int",
                "int",
                "slice",
                "slice",
                "list",
                "nested",
                "range",
                "array",
                "mask",
                "zerod",
                "bool0",
                "empty",
                "bad",
            ]
        )
    )
    if kind == "int":
        return _int_like(draw, n)
    if kind == "slice":
        return slice(
            draw(st.none() | st.integers(-n - 2, n + 2)),
            draw(st.none() | st.integers(-n - 2, n + 2)),
            draw(st.none() | st.sampled_from([1, 2, 3, -1, -2, -3])),
        )
    if kind == "list":
        return draw(st.lists(st.integers(-n - 1, n), max_size=4))
    if kind == "nested":
        k = draw(st.integers(1, 3))
        rows = draw(st.integers(1, 2))
        return [draw(st.lists(st.integers(-n - 1, n), min_size=k, max_size=k)) for _ in range(rows)]
    if kind == "range":
        return range(draw(st.integers(0, n)), draw(st.integers(0, n)), draw(st.sampled_from([1, 2])))
    if kind == "array":
        vals = draw(st.lists(st.integers(-n - 1, n), max_size=3))
        dt = np.dtype(draw(st.sampled_from([np.intp, np.int8, np.uint16, np.int32])))
        # An int8 index holds no 128 or -129: the values drawn for a longer axis are clipped to its range.
        lo, hi = np.iinfo(dt).min, np.iinfo(dt).max
        arr = np.asarray([min(max(abs(v) if dt.kind == "u" else v, lo), hi) for v in vals], dtype=dt)
        return arr.reshape(-1, 1) if draw(st.integers(0, 4)) == 0 else arr
    if kind == "mask":
        length = n if draw(st.integers(0, 5)) else draw(st.integers(0, n + 1))
        return np.asarray(draw(st.lists(st.booleans(), min_size=length, max_size=length)), dtype=bool)
    if kind == "zerod":
        return np.array(draw(st.integers(-n - 1, n)))
    if kind == "bool0":
        return draw(st.sampled_from([True, False, np.True_, np.array(False)]))
    if kind == "empty":
        return draw(st.sampled_from([[], np.zeros(0, np.intp), np.zeros((0, 1), np.intp), np.zeros(0, bool)]))
    return draw(
        st.sampled_from([1.5, "a", [1.0], np.array([0.5]), [0, [1, 2]], [[0], [1, 2]], [True, 2], None])
    )


@st.composite
def index_keys(draw, shape: tuple[int, ...]):
    """A NumPy index expression for an array of ``shape`` (most valid, some refused by NumPy)."""
    form = draw(st.integers(0, 11))
    if form == 0 and shape:
        size = int(np.prod(shape))
        return np.asarray(draw(st.lists(st.booleans(), min_size=size, max_size=size))).reshape(shape)
    if form == 1:
        return draw(st.sampled_from([Ellipsis, (), None, (Ellipsis, None), (None, Ellipsis), True, False]))
    items: list = []
    for n in shape:
        if draw(st.integers(0, 4)) == 0:
            items.append(None)
        items.append(index_item(draw, n))
    items = items[: draw(st.integers(0, len(items)))]
    if draw(st.integers(0, 3)) == 0:
        items.insert(draw(st.integers(0, len(items))), Ellipsis)
    if draw(st.integers(0, 9)) == 0:
        items.append(index_item(draw, 2))  # often one index too many
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


@st.composite
def orthogonal_keys(draw, shape: tuple[int, ...], form: str):
    """A key for ``.oindex`` (``form="outer"``) or ``.vindex`` (``"vector"``): per axis an integer, a slice,
    an integer list or array or a 1-D mask, sometimes an ellipsis or an item these forms refuse."""
    items: list = []
    for n in shape[: draw(st.integers(0, len(shape)))]:
        kind = draw(st.sampled_from(["int", "slice", "list", "array", "mask", "bad"]))
        if kind == "int":
            items.append(_int_like(draw, n))
        elif kind == "slice":
            items.append(
                slice(draw(st.none() | st.integers(-n, n)), None, draw(st.sampled_from([None, 2, -1])))
            )
        elif kind == "list":
            items.append(draw(st.lists(st.integers(-n - 1, n), max_size=3)))
        elif kind == "array":
            arr = np.asarray(draw(st.lists(st.integers(-n - 1, n), max_size=4)), dtype=np.intp)
            items.append(arr.reshape(2, -1) if arr.size == 4 and form == "outer" else arr)
        elif kind == "mask":
            length = n if draw(st.integers(0, 5)) else draw(st.integers(0, n + 1))
            items.append(np.asarray(draw(st.lists(st.booleans(), min_size=length, max_size=length)), bool))
        else:
            items.append(draw(st.sampled_from([None, True, 1.5, np.ones((1, 1), bool)])))
    if draw(st.integers(0, 3)) == 0:
        items.insert(draw(st.integers(0, len(items))), Ellipsis)
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


def _expanded(key: Any, ndim: int, dims_of: Callable[[Any], int]) -> list[Any]:
    """``key``'s items with the ellipsis expanded and trailing slices added (a ragged list refused first,
    with NumPy's ``ValueError``; then NumPy's errors for a second ellipsis and too many indices)."""
    items = list(key) if isinstance(key, tuple) else [key]
    for k in items:
        if isinstance(k, list):
            np.asarray(k)
    ell = [j for j, k in enumerate(items) if k is Ellipsis]
    if len(ell) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(dims_of(k) for k in items if k is not Ellipsis)
    if used > ndim:
        raise IndexError("too many indices")
    if ell:
        items[ell[0] : ell[0] + 1] = [slice(None)] * (ndim - used)
        return items
    return items + [slice(None)] * (ndim - used)


def _orthogonal_item(k: Any, n: int) -> Any:
    """One ``oindex``/``vindex`` item as NumPy sees it: a slice, an ``int``, or an ``intp`` array (a 1-D
    mask as its positions); ``IndexError`` for what these forms refuse."""
    if isinstance(k, slice):
        return k
    if (
        k is None
        or isinstance(k, bool | np.bool_)
        or (isinstance(k, np.ndarray) and k.dtype == bool and k.ndim == 0)
    ):
        raise IndexError("orthogonal and vectorized indexing take no None or 0-d boolean")
    if isinstance(k, np.ndarray | list | tuple | range):
        arr = np.asarray(k)
        if arr.dtype == bool:
            if arr.ndim != 1 or len(arr) != n:
                raise IndexError("boolean index did not match")
            return np.flatnonzero(arr)
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(np.intp)
        if arr.dtype.kind not in "iu":
            raise IndexError("only integers, slices and integer or boolean arrays are valid indices")
        return int(arr) if arr.ndim == 0 else arr.astype(np.intp)
    try:
        return operator.index(k)
    except TypeError:
        raise IndexError("only integers, slices and integer or boolean arrays are valid indices") from None


def outer_key(a: np.ndarray, key: Any) -> Any:
    """The NumPy key that selects ``a.oindex[key]``: the key itself when it holds only integers and slices
    (NumPy's basic indexing, and its scalar assignment rules), else index arrays shaped to combine as a
    cartesian product (``np.ix_``-style, so an empty one leaves the others unchecked, as in NumPy)."""

    def dims_of(k: Any) -> int:
        return 1

    items = [_orthogonal_item(k, a.shape[d]) for d, k in enumerate(_expanded(key, a.ndim, dims_of))]
    if all(isinstance(k, slice | int) for k in items):
        return key  # NumPy's basic indexing, its ellipsis (a 0-d result, not a scalar) kept
    shapes = [
        ()
        if isinstance(k, int)
        else (len(range(*k.indices(a.shape[d]))),)
        if isinstance(k, slice)
        else k.shape
        for d, k in enumerate(items)
    ]
    total = sum(len(s) for s in shapes)
    out: list[Any] = []
    before = 0
    for d, (k, s) in enumerate(zip(items, shapes, strict=True)):
        if isinstance(k, int):
            out.append(k)
            continue
        arr = np.arange(*k.indices(a.shape[d])) if isinstance(k, slice) else np.asarray(k, dtype=np.intp)
        out.append(arr.reshape((1,) * before + s + (1,) * (total - before - len(s))))
        before += len(s)
    return tuple(out)


def vector_view_key(a: np.ndarray, key: Any) -> tuple[np.ndarray, Any]:
    """``(view, key2)`` with ``view[key2]`` selecting ``a.vindex[key]``: ``view`` is ``a`` with the axes of
    the index arrays first (a view: writing into it writes ``a``), so NumPy's broadcast dimensions come
    first whatever their place; masks become their positions."""

    def dims_of(k: Any) -> int:
        arr = np.asarray(k) if isinstance(k, list | np.ndarray) else None
        return arr.ndim if arr is not None and arr.dtype == bool and arr.ndim else 1

    items: list[Any] = []
    axes: list[int] = []
    d = 0
    for k in _expanded(key, a.ndim, dims_of):
        arr = np.asarray(k) if isinstance(k, list | np.ndarray) else None
        if arr is not None and arr.dtype == bool and arr.ndim > 1:
            if arr.shape != a.shape[d : d + arr.ndim]:
                raise IndexError("boolean index did not match")
            items.extend(np.nonzero(arr))
            axes.extend(range(d, d + arr.ndim))
            d += arr.ndim
            continue
        items.append(_orthogonal_item(k, a.shape[d]))
        axes.append(d)
        d += 1
    if all(isinstance(k, slice | int) for k in items):
        return a, key  # NumPy's basic indexing, its ellipsis (a 0-d result, not a scalar) kept
    adv = [j for j, k in enumerate(items) if not isinstance(k, slice)]
    rest = [j for j, k in enumerate(items) if isinstance(k, slice)]
    view = a.transpose([axes[j] for j in adv + rest])
    return view, tuple(items[j] for j in adv + rest)


def numpy_read(a: np.ndarray, form: str, key: Any) -> Any:
    """NumPy's answer to ``x[key]`` (``form="numpy"``), ``x.oindex[key]``, ``x.vindex[key]``, ``x.flat[key]``."""
    if form == "numpy":
        return a[key]
    if form == "outer":
        return a[outer_key(a, key)]
    if form == "vector":
        view, k = vector_view_key(a, key)
        return view[k]
    return a.flat[key]


def numpy_write(a: np.ndarray, form: str, key: Any, value: Any) -> None:
    """NumPy's ``a[key] = value`` for each form (``oindex``/``vindex`` through their NumPy keys)."""
    if form == "numpy":
        a[key] = value
    elif form == "outer":
        a[outer_key(a, key)] = value
    else:
        view, k = vector_view_key(a, key)
        view[k] = value


def subject_read(x: Any, form: str, key: Any) -> Any:
    if form == "numpy":
        return x[key]
    return {"outer": x.oindex, "vector": x.vindex, "flat": getattr(x, "flat", None)}[form][key]


def subject_write(ds: Any, form: str, key: Any, value: Any) -> None:
    if form == "numpy":
        ds[key] = value
    else:
        (ds.oindex if form == "outer" else ds.vindex)[key] = value


# --- written values --------------------------------------------------------------------------------------
@st.composite
def written_values(draw, shape: tuple[int, ...]):
    """A value for ``a[key] = value`` with a selection of ``shape``: Python and NumPy scalars of every
    dtype (out of range, NaN, infinities), lists, and arrays of every dtype of the selection's shape, a
    shape that broadcasts to it, with extra leading axes of length 1, or one that does not fit."""
    kind = draw(
        st.sampled_from(
            ["pyint", "bigint", "pyfloat", "special", "complex", "bool", "npscalar", "list", "array", "array"]
        )
    )
    if kind == "pyint":
        return draw(st.integers(-300, 300))
    if kind == "bigint":
        return draw(
            st.sampled_from([2**7, 2**8, 2**15, 2**16, 2**31, 2**32, 2**63, 2**64, -(2**63) - 1, -1, 70000])
        )
    if kind == "pyfloat":
        return draw(st.floats(-1e3, 1e3, allow_nan=False))
    if kind == "special":
        return draw(st.sampled_from([float("nan"), float("inf"), float("-inf"), 1e300, -0.0, 3e38, 1e5]))
    if kind == "complex":
        return complex(
            draw(st.sampled_from([-3, 0, 2, float("nan"), float("inf")])),
            draw(st.sampled_from([0, 1, float("nan")])),
        )
    if kind == "bool":
        return draw(st.booleans())
    if kind == "npscalar":
        dt = np.dtype(draw(st.sampled_from(DTYPES)))
        return make_values(dt, (), draw(st.integers(0, 2**32 - 1)), extremes=True)[()]  # a NumPy scalar
    vshape = _value_shape(draw, shape)
    n = int(np.prod(vshape))
    if kind == "list":
        return (
            np.asarray(draw(st.lists(st.integers(-70000, 70000), min_size=n, max_size=n)), dtype=object)
            .reshape(vshape)
            .tolist()
        )
    dt = np.dtype(draw(st.sampled_from(DTYPES)))
    return make_values(dt, vshape, draw(st.integers(0, 2**32 - 1)), extremes=draw(st.booleans()))


def _value_shape(draw, shape: tuple[int, ...]) -> tuple[int, ...]:
    how = draw(st.sampled_from(["same", "same", "trailing", "ones", "lead", "wrong"]))
    if how == "trailing":
        return shape[draw(st.integers(0, len(shape))) :]
    if how == "ones":
        return tuple(1 if draw(st.booleans()) else n for n in shape)
    if how == "lead":
        return (1,) * draw(st.integers(1, 2)) + shape
    if how == "wrong":
        return shape[:-1] + (draw(st.integers(2, 3)),) if shape else (2,)
    return shape
