"""Differential tests (issue 12): NumPy's answer, or NumPy's exception type, from LazyArray and Dataset.

Every example builds a NumPy array of a random shape, dtype and values (NaN and inf included for the
inexact types), a LazyArray over it (random chunks) and a Dataset holding the same values (random format
that supports the dtype), then runs the same thing on each: index expressions of every form NumPy
accepts (and some it refuses), reductions with axis / keepdims / where / initial / ddof, the comparison
functions, random sequences of views and elementwise calls, and casting writes. The results must be
identical (dtype, shape, scalar-or-array, values; floats within a rounding tolerance for reductions that
sum in another order) or the exceptions of the same type. Reductions and comparisons run with
``max_materialize=0``: they must stream, never convert the lazy array.

``test_*_many`` run the same checks with many more examples behind the ``slow`` marker.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import altarr as aa
from _lazy_support import lazy
from altarr.stores import MemoryStore

FEW = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
MANY = settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))

DTYPES = ["bool", "i1", "u1", "i2", "u2", "i4", "i8", "u8", "f2", "f4", "f8", "c8", "c16"]
N5_DTYPES = {"i1", "u1", "i2", "u2", "i4", "i8", "u8", "f4", "f8"}


# --- data ------------------------------------------------------------------------------------------------
def make_values(dt: np.dtype, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Values whose sums and products are exact in every dtype (so only var/std/mean need a tolerance)."""
    return np.asarray(_values(dt, shape, seed))  # a 0-d array, never a NumPy scalar


def _values(dt: np.dtype, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -2
        return rng.integers(lo, 3, size=shape).astype(dt)
    pool = np.array([-1.0, -0.5, 0.0, 0.5, 1.0, 1.0])
    vals = rng.choice(pool, size=shape)
    special = rng.random(shape)
    vals = np.where(special < 0.08, np.nan, vals)
    vals = np.where((special >= 0.08) & (special < 0.1), np.inf, vals)
    if dt.kind == "c":
        imag = rng.choice(pool, size=shape)
        return (vals + 1j * imag).astype(dt)
    return vals.astype(dt)


@st.composite
def arrays(draw, max_ndim: int = 3, max_side: int = 5):
    ndim = draw(st.integers(0, max_ndim))
    shape = tuple(draw(st.integers(0 if draw(st.integers(0, 9)) == 0 else 1, max_side)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    dt = np.dtype(draw(st.sampled_from(DTYPES)))
    data = make_values(dt, shape, draw(st.integers(0, 2**32 - 1)))
    return data, chunks


def as_dataset(data: np.ndarray, chunks: tuple[int, ...], fmt: str) -> aa.Dataset:
    if fmt == "n5" and (data.dtype.str[1:] not in N5_DTYPES or data.ndim == 0):
        fmt = "zarr3"
    ds = aa.create_dataset(MemoryStore(), shape=data.shape, dtype=data.dtype, chunks=chunks, format=fmt)
    if data.size:
        ds[...] = data
    return ds


# --- outcomes --------------------------------------------------------------------------------------------
class Raised:
    def __init__(self, exc: BaseException):
        self.exc = exc

    def __repr__(self) -> str:
        return f"Raised({type(self.exc).__name__}: {self.exc})"


def run(fn):
    """(result or Raised, warning categories and messages)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = fn()
        except Exception as e:  # noqa: BLE001 - the exception type is what is compared
            res = Raised(e)
    return res, [(w.category, str(w.message)) for w in caught]


def _tolerance(dt: np.dtype) -> float:
    base = {2: 2e-3, 4: 1e-5, 8: 1e-10}
    if dt.kind == "c":
        return base[dt.itemsize // 2]
    if dt.kind == "f":
        return base[dt.itemsize]
    return 0.0


def assert_same(expected, got, *, rounding: bool = False, what: str = "") -> None:
    """``got`` is NumPy's ``expected``: same exception type, or same kind, dtype, shape and values."""
    if isinstance(expected, Raised):
        assert isinstance(got, Raised), f"{what}: NumPy raised {expected!r}, got {got!r}"
        assert isinstance(got.exc, type(expected.exc)), f"{what}: NumPy raised {expected!r}, got {got!r}"
        return
    assert not isinstance(got, Raised), f"{what}: NumPy gave {expected!r}, got {got!r}"
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected), what
        for e, g in zip(expected, got, strict=True):
            assert_same(e, g, rounding=rounding, what=what)
        return
    if isinstance(expected, bool | int | float | complex) and not isinstance(expected, np.generic):
        assert type(got) is type(expected), f"{what}: NumPy gave {type(expected)}, got {type(got)}"
        if isinstance(expected, float) and np.isnan(expected):
            assert np.isnan(got), what
        else:
            assert got == expected, f"{what}: {got!r} != {expected!r}"
        return
    assert aa.is_altarr(got) or type(got) is type(expected), (
        f"{what}: NumPy gave a {type(expected).__name__}, got a {type(got).__name__}"
    )
    got = np.asarray(got[...] if aa.is_altarr(got) else got)
    exp = np.asarray(expected)
    assert got.dtype == exp.dtype, f"{what}: dtype {got.dtype} != NumPy's {exp.dtype}"
    assert got.shape == exp.shape, f"{what}: shape {got.shape} != NumPy's {exp.shape}"
    tol = _tolerance(exp.dtype) if rounding else 0.0
    if exp.dtype.kind in "fc":
        np.testing.assert_allclose(got, exp, rtol=tol, atol=tol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, exp, err_msg=what)


# --- index expressions -----------------------------------------------------------------------------------
def index_item(draw, n: int, ndim_left: int):
    kind = draw(
        st.sampled_from(
            ["int", "int", "slice", "slice", "list", "nested", "range", "array", "mask", "zerod", "bad"]
        )
    )
    if kind == "int":
        return draw(st.integers(-n - 1, n))
    if kind == "slice":
        return slice(
            draw(st.none() | st.integers(-n - 2, n + 2)),
            draw(st.none() | st.integers(-n - 2, n + 2)),
            draw(st.none() | st.sampled_from([1, 2, 3, -1, -2, -3])),
        )
    if kind == "list":
        return draw(st.lists(st.integers(-n, max(n - 1, 0)), max_size=4)) if n else []
    if kind == "nested":
        k = draw(st.integers(1, 3))
        return (
            [draw(st.lists(st.integers(-n, n - 1), min_size=k, max_size=k)) for _ in range(2)] if n else [[]]
        )
    if kind == "range":
        return range(draw(st.integers(0, n)), draw(st.integers(0, n)), draw(st.sampled_from([1, 2])))
    if kind == "array":
        return np.asarray(
            draw(st.lists(st.integers(-n, max(n - 1, 0)), max_size=3)) if n else [], dtype=np.intp
        )
    if kind == "mask":
        return np.asarray(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    if kind == "zerod":
        return np.array(draw(st.integers(-n, max(n - 1, 0)))) if n else np.array(0)
    return draw(st.sampled_from([1.5, "a", [1.0], np.array([0.5])]))


@st.composite
def index_keys(draw, shape: tuple[int, ...]):
    form = draw(st.integers(0, 9))
    if form == 0 and shape:
        return np.asarray(
            draw(st.lists(st.booleans(), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
        ).reshape(shape)
    if form == 1:
        return draw(st.sampled_from([Ellipsis, (), None, (Ellipsis, None), (None, Ellipsis)]))
    items: list = []
    for d, n in enumerate(shape):
        if draw(st.integers(0, 4)) == 0:
            items.append(None)
        items.append(index_item(draw, n, len(shape) - d))
    cut = draw(st.integers(0, len(items)))
    items = items[:cut]
    if draw(st.integers(0, 3)) == 0:
        items.insert(draw(st.integers(0, len(items))), Ellipsis)
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


def _index_check(data, chunks, key, fmt):
    expected, _ = run(lambda: data[key])
    x, _ = lazy(data, chunks)
    got, _ = run(lambda: x[key])
    assert_same(expected, got, what=f"LazyArray[{key!r}] shape={data.shape}")
    ds = as_dataset(data, chunks, fmt)
    got, _ = run(lambda: ds[key])
    assert_same(expected, got, what=f"Dataset[{key!r}] shape={data.shape}")


@FEW
@given(st.data())
def test_every_index_form_gives_numpys_result(data):
    arr, chunks = data.draw(arrays())
    key = data.draw(index_keys(arr.shape))
    _index_check(arr, chunks, key, data.draw(st.sampled_from(["zarr2", "zarr3", "n5"])))


@pytest.mark.slow
@MANY
@given(st.data())
def test_every_index_form_gives_numpys_result_many(data):
    test_every_index_form_gives_numpys_result.hypothesis.inner_test(data)


def test_index_forms_of_the_issue():
    data = np.arange(24.0).reshape(4, 6)
    for key in [
        range(3),
        [[0, 1], [2, 3]],
        (np.array([0, 3]), np.array([5, 1])),
        data > 20,
        (slice(None, None, -1), 2),
        (Ellipsis, None, 1),
        np.array(2),
        (1, 2),
        ([True, False, True, False],),
    ]:
        _index_check(data, (3, 4), key, "zarr3")
    x, _ = lazy(data, (3, 4))
    assert type(x[1, 2]) is np.float64 and type(as_dataset(data, (3, 4), "zarr2")[1, 2]) is np.float64


def test_a_zero_length_mask_matches_any_axis_as_in_numpy():
    """Found by the slow search: ``np.stack([x, x], 0).T.astype('f8')[..., None, mask0]`` on an empty
    array. NumPy does not compare a mask axis of length 0 with the axis it indexes (only a non-empty mask
    must have the axis' length); integer indices out of bounds are refused even when nothing is read."""
    empty = np.zeros(0, dtype=bool)
    cases = [
        (np.zeros((0, 0, 2)), (Ellipsis, None, empty)),
        (np.zeros((0, 2)), (slice(None), empty)),
        (np.zeros((2, 0)), (empty,)),
        (np.arange(6.0).reshape(2, 3), (empty,)),
        (np.arange(6.0).reshape(2, 3), (empty, 1)),
        (np.arange(6.0).reshape(2, 3), (np.zeros((0, 3), dtype=bool),)),
        (np.arange(6.0).reshape(2, 3), (np.zeros((0, 0), dtype=bool), None)),
        (np.arange(6.0).reshape(2, 3), (np.zeros(1, dtype=bool), slice(0, 0))),  # IndexError in NumPy
        (np.zeros((0, 2)), (np.zeros((1, 0), dtype=bool),)),  # IndexError in NumPy
        (np.zeros((0, 2)), (slice(None), np.array([5]))),  # IndexError in NumPy
    ]
    for data, key in cases:
        for fmt in ("zarr2", "zarr3"):
            _index_check(data, (1,) * data.ndim, key, fmt)
    x, _ = lazy(np.zeros((2, 0, 0)), (1, 1, 1))
    got = np.stack([x, x], 0).T.astype("f8")[..., None, empty]
    assert got.shape == (0, 0, 2, 1, 0) == np.stack([np.zeros((2, 0, 0))] * 2, 0).T[..., None, empty].shape


# --- reductions ------------------------------------------------------------------------------------------
REDUCTIONS = {
    # name: the keyword arguments it takes besides axis / keepdims
    "sum": {"initial", "where"},
    "prod": {"initial", "where"},
    "min": {"initial", "where"},
    "max": {"initial", "where"},
    "mean": {"where"},
    "var": {"where", "ddof"},
    "std": {"where", "ddof"},
    "any": {"where"},
    "all": {"where"},
    "nansum": {"initial", "where"},
    "nanprod": {"initial", "where"},
    "nanmin": {"initial", "where"},
    "nanmax": {"initial", "where"},
    "nanmean": {"where"},
    "nanvar": {"where", "ddof"},
    "nanstd": {"where", "ddof"},
    "count_nonzero": set(),
    "argmin": set(),
    "argmax": set(),
}


@st.composite
def reduction_calls(draw, shape: tuple[int, ...], dt: np.dtype):
    names = [
        n for n in REDUCTIONS if not (n.startswith("nan") and dt.kind == "c" and n in ("nanmin", "nanmax"))
    ]
    name = draw(st.sampled_from(names))
    kw: dict = {}
    ndim = len(shape)
    if name in ("argmin", "argmax"):
        if ndim and draw(st.booleans()):
            kw["axis"] = draw(st.integers(-ndim, ndim - 1))
    elif ndim and draw(st.booleans()):
        axes = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
        kw["axis"] = axes[0] - ndim if len(axes) == 1 and draw(st.booleans()) else tuple(axes)
    if draw(st.booleans()):
        kw["keepdims"] = True
    allowed = REDUCTIONS[name]
    if "where" in allowed and draw(st.integers(0, 2)) == 0:
        wshape = (
            tuple(s if draw(st.booleans()) else 1 for s in shape)[draw(st.integers(0, ndim)) :]
            if ndim
            else ()
        )
        kw["where"] = (
            np.asarray(
                draw(st.lists(st.booleans(), min_size=int(np.prod(wshape)), max_size=int(np.prod(wshape))))
            )
            .reshape(wshape)
            .astype(bool)
        )
    if "initial" in allowed and draw(st.integers(0, 2)) == 0:
        kw["initial"] = draw(st.sampled_from([0, 1, -1, 2]))
    if "ddof" in allowed and draw(st.booleans()):
        kw["ddof"] = draw(st.integers(0, 5))
    return name, kw


def _reduce_check(data, chunks, name, kw, fmt=None):
    fn = getattr(np, name)
    kind = data.dtype.kind
    if kind == "b" and name in ("initial",):
        return
    expected, exp_warn = run(lambda: fn(data, **kw))
    x, _ = lazy(data, chunks)
    with aa.set_options(max_materialize=0, batch_chunks=2):
        got, got_warn = run(lambda: fn(x, **kw))
    assert_same(
        expected, got, rounding=True, what=f"np.{name}(x, **{kw}) {data.dtype} {data.shape} chunks {chunks}"
    )
    dof = "Degrees of freedom <= 0"
    if any(dof in m for _, m in exp_warn):
        assert any(dof in m for _, m in got_warn), (
            f"np.{name}(x, **{kw}): NumPy warned {exp_warn}, got {got_warn}"
        )


@FEW
@given(st.data())
def test_reductions_give_numpys_result(data):
    arr, chunks = data.draw(arrays())
    name, kw = data.draw(reduction_calls(arr.shape, arr.dtype))
    _reduce_check(arr, chunks, name, kw)


@pytest.mark.slow
@MANY
@given(st.data())
def test_reductions_give_numpys_result_many(data):
    test_reductions_give_numpys_result.hypothesis.inner_test(data)


@pytest.mark.parametrize("name", ["prod", "nanprod"])
def test_complex_products_with_inf_multiply_in_numpys_order(name):
    """Found by the slow search: a complex product with an infinite factor depends on the order of the
    multiplications. NumPy multiplies from ``1+0j`` (or ``initial``) left to right in C order of the
    reduced axes, skipping ``where=False``; chunk partials multiplied together give ``nan+nanj`` for
    ``[1+.5j, 1+.5j, inf+1j]`` where NumPy gives ``inf+infj``. Each case must be NumPy's answer."""
    inf, nan = np.inf, np.nan
    triple = np.array([1 + 0.5j, 1 + 0.5j, complex(inf, 1)])
    for dt in ("c8", "c16"):
        _reduce_check(triple.astype(dt), (1,), name, {})
        _reduce_check(triple.astype(dt), (2,), name, {"initial": 2})
        _reduce_check(triple.astype(dt), (1,), name, {"where": np.array([True, False, True])})
    assert np.prod(lazy(triple.astype("c8"), (1,))[0]) == complex(inf, inf)
    # a single factor is multiplied into 1+0j too: inf+1j gives inf+nanj, as in NumPy
    _reduce_check(np.array([complex(inf, 1)]), (1,), name, {})
    grid = np.array(
        [
            [1 + 0.5j, complex(inf, 1), -1j, 0.5],
            [1 + 0.5j, 1 + 0.5j, complex(nan, 1), 2j],
            [complex(inf, 1), 1 + 0.5j, complex(1, inf), -1 + 1j],
        ]
    )
    for axis in (None, 0, 1, (0, 1), -1):
        _reduce_check(grid, (2, 3), name, {"axis": axis})
        _reduce_check(grid, (1, 1), name, {"axis": axis, "keepdims": True, "initial": -1})
        _reduce_check(grid, (2, 1), name, {"axis": axis, "where": np.array([True, False, True, True])})
    _reduce_check(grid.real.copy(), (1, 1), name, {"axis": 0, "dtype": "c16"})


def test_complex_products_read_again_only_when_a_result_is_not_finite():
    """The recomputation in NumPy's order is a second walk of the chunks, only when some output element
    came out non-finite; finite products are read once."""
    values = np.arange(1, 13).reshape(3, 4).astype("c16")
    x, fetch = lazy(values, (1, 2))
    with aa.set_options(batch_chunks=2):
        assert np.prod(x, axis=0).tolist() == np.prod(values, axis=0).tolist()
        first = len(fetch.calls)
        values[0, 0] = complex(np.inf, 1)
        y, fetch_y = lazy(values, (1, 2))
        np.testing.assert_array_equal(np.prod(y, axis=0), np.prod(values, axis=0))
    assert first == 3 and len(fetch_y.calls) == 6


def test_nanmin_of_a_0d_array_with_where_is_the_ndarray_answer():
    """Found by the slow search (seed 1): ``np.isnan(x).astype('f8')`` of a 0-d array is a NumPy scalar
    on the NumPy side, and ``np.nanmin(scalar, where=False, initial=0)`` is ``nan`` (NumPy's path for
    non-ndarrays) while it is ``0.0`` for a 0-d ndarray. A 0-d LazyArray answers as the ndarray."""
    x, _ = lazy(np.array(False), ())
    y = np.isnan(x).astype("f8")
    assert aa.is_altarr(y)
    for name, initial in (("nanmin", 0), ("nanmax", 7)):
        _reduce_check(np.array(0.0), (), name, {"where": np.array(False), "initial": initial})
        with aa.set_options(max_materialize=0):
            got = getattr(np, name)(y, where=np.array(False), initial=initial)
        assert got == getattr(np, name)(np.array(0.0), where=np.array(False), initial=initial) == initial

    data = np.array([[1.0, 2.0], [3.0, 5.0], [4.0, 4.0]])
    for name in ("var", "std", "nanvar", "nanstd"):
        for kw in ({"ddof": 5}, {"ddof": 5, "axis": 0}, {"ddof": 3, "axis": 0, "keepdims": True}):
            _reduce_check(data, (2, 1), name, kw)
    x, _ = lazy(data, (2, 1))
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        assert np.all(np.isinf(x.var(axis=0, ddof=5)))


# --- comparison functions --------------------------------------------------------------------------------
@st.composite
def comparison_calls(draw, data: np.ndarray):
    other = data.copy()
    change = draw(st.sampled_from(["same", "one", "shape", "scalar", "row", "nan", "tiny", "list"]))
    if change == "one" and data.size:
        flat = other.reshape(-1)
        i = draw(st.integers(0, data.size - 1))
        flat[i] = (not flat[i]) if data.dtype.kind == "b" else flat[i] + 1
    elif change == "shape":
        other = np.zeros(data.shape + (1,), data.dtype)
    elif change == "scalar":
        other = data.reshape(-1)[0] if data.size else np.zeros((), data.dtype)
    elif change == "row" and data.ndim:
        other = data[(0,) * (data.ndim - 1)] if data.shape[0] and all(data.shape) else data
    elif change == "nan" and data.dtype.kind in "fc" and data.size:
        other.reshape(-1)[draw(st.integers(0, data.size - 1))] = np.nan
    elif change == "tiny" and data.dtype.kind in "fc":
        other = other + other.dtype.type(1e-9)
    elif change == "list":
        other = data.tolist()
    func = draw(
        st.sampled_from(
            ["array_equal", "array_equal_nan", "array_equiv", "allclose", "allclose_nan", "isclose"]
        )
    )
    swap = draw(st.booleans())
    return func, other, swap


def _compare_check(data, chunks, func, other, swap):
    fn = getattr(np, func.removesuffix("_nan"))
    kw = {"equal_nan": True} if func.endswith("_nan") else {}
    x, fetch = lazy(data, chunks)

    def call(a):
        return fn(other, a, **kw) if swap else fn(a, other, **kw)

    expected, _ = run(lambda: call(data))
    # the functions NumPy runs inside try/except must stream (isclose is lazy elementwise, or materialized
    # under the guard when the other operand is bigger: it raises loudly then, so it needs no such check)
    guard = 0 if fn is not np.isclose else aa.get_options()["max_materialize"]
    with aa.set_options(max_materialize=guard, batch_chunks=2):
        got, _ = run(lambda: call(x))
    assert_same(expected, got, what=f"np.{fn.__name__}({'other, x' if swap else 'x, other'}, **{kw})")


@FEW
@given(st.data())
def test_comparison_functions_give_numpys_answer_without_materializing(data):
    arr, chunks = data.draw(arrays())
    func, other, swap = data.draw(comparison_calls(arr))
    _compare_check(arr, chunks, func, other, swap)


@pytest.mark.slow
@MANY
@given(st.data())
def test_comparison_functions_give_numpys_answer_many(data):
    test_comparison_functions_give_numpys_answer_without_materializing.hypothesis.inner_test(data)


def test_array_equal_of_the_issue_streams_instead_of_answering_false():
    x = aa.altarr((2000, 1000), (500, 500), lambda c: [np.zeros((500, 500))] * len(c))
    assert np.array_equal(x, np.zeros((2000, 1000))) is True
    assert np.array_equiv(x, 0.0) is True and np.allclose(x, np.zeros((2000, 1000))) is True
    assert aa.stats(x)["materialize"] == 0


# --- random sequences of NumPy calls ---------------------------------------------------------------------
def _step(draw, cur_shape: tuple[int, ...], dt: np.dtype):
    """One NumPy call applied to both sides: (description, function)."""
    ndim = len(cur_shape)
    options = ["astype", "add", "isnan", "where", "stack"]
    if ndim >= 1:
        options += ["T", "transpose", "moveaxis", "concatenate", "ravel", "abs"]
    if ndim >= 2:
        options += ["swapaxes"]
    op = draw(st.sampled_from(options))
    if op == "T":
        return "x.T", lambda v: v.T
    if op == "transpose":
        perm = draw(st.permutations(range(ndim)))
        return f"np.transpose(x, {perm})", lambda v: np.transpose(v, perm)
    if op == "swapaxes":
        a, b = draw(st.integers(-ndim, ndim - 1)), draw(st.integers(-ndim, ndim - 1))
        return f"x.swapaxes({a}, {b})", lambda v: v.swapaxes(a, b)
    if op == "moveaxis":
        a, b = draw(st.integers(0, ndim - 1)), draw(st.integers(-ndim, ndim - 1))
        return f"np.moveaxis(x, {a}, {b})", lambda v: np.moveaxis(v, a, b)
    if op == "astype":
        to = draw(st.sampled_from(["f8", "i4", "bool", "c8"]))
        if dt.kind in "fc" and to in ("i4",):
            to = "f4"  # NaN/inf into integers is undefined in NumPy's astype
        return f"x.astype({to})", lambda v: v.astype(to)
    if op == "add":
        k = draw(st.sampled_from([1, 2]))
        return f"x + {k}", lambda v: v + k
    if op == "abs":
        return "np.abs(x)", np.abs
    if op == "isnan":
        return "np.isnan(x)", np.isnan
    if op == "where":
        return "np.where(x > 0, x, 0)", lambda v: np.where(v > 0, v, 0)
    if op == "stack":
        axis = draw(st.integers(0, ndim))
        return f"np.stack([x, x], {axis})", lambda v: np.stack([v, v], axis)
    if op == "concatenate":
        axis = draw(st.integers(0, ndim - 1))
        return f"np.concatenate([x, x], {axis})", lambda v: np.concatenate([v, v], axis)
    return "x.ravel()", lambda v: v.ravel()


@FEW
@given(st.data())
def test_sequences_of_numpy_calls_match(data):
    arr, chunks = data.draw(arrays(max_side=4))
    if arr.dtype.kind in "c":
        arr = arr.astype("f8")
    x, _ = lazy(arr, chunks)
    ref = arr
    done = []
    for _ in range(data.draw(st.integers(1, 4))):
        what, f = _step(data.draw, ref.shape, ref.dtype)
        done.append(what)
        was_lazy = aa.is_altarr(x)
        expected, _ = run(lambda f=f, ref=ref: f(ref))
        got, _ = run(lambda f=f, x=x: f(x))
        assert_same(expected, got, what=" -> ".join(done))
        if isinstance(expected, Raised):
            return
        if was_lazy and what.startswith(
            ("x.T", "np.transpose", "x.swapaxes", "np.moveaxis", "x.astype", "np.stack", "x +")
        ):
            assert aa.is_altarr(got), f"{what} should stay lazy"
        # a lazy array stands for an ndarray: NumPy's 0-d results are scalars, and some NumPy functions
        # (nanmin/nanmax with where=) answer differently for a scalar than for a 0-d array
        ref, x = (np.asarray(expected) if aa.is_altarr(got) else expected), got
    if not aa.is_altarr(x):
        return
    if data.draw(st.booleans()):
        name, kw = data.draw(reduction_calls(ref.shape, ref.dtype))
        expected, _ = run(lambda: getattr(np, name)(ref, **kw))
        with aa.set_options(max_materialize=0, batch_chunks=2):
            got, _ = run(lambda: getattr(np, name)(x, **kw))
        assert_same(expected, got, rounding=True, what=" -> ".join(done) + f" -> np.{name}(**{kw})")
    else:
        key = data.draw(index_keys(ref.shape))
        expected, _ = run(lambda: ref[key])
        got, _ = run(lambda: x[key])
        assert_same(expected, got, what=" -> ".join(done) + f" -> [{key!r}]")


@pytest.mark.slow
@MANY
@given(st.data())
def test_sequences_of_numpy_calls_match_many(data):
    test_sequences_of_numpy_calls_match.hypothesis.inner_test(data)


# --- casting writes --------------------------------------------------------------------------------------
@st.composite
def written_values(draw, shape: tuple[int, ...]):
    kind = draw(
        st.sampled_from(["pyint", "bigint", "pyfloat", "special", "complex", "npscalar", "list", "array"])
    )
    if kind == "pyint":
        return draw(st.integers(-300, 300))
    if kind == "bigint":
        return draw(st.sampled_from([2**15, 2**16, 2**31, 2**32, 2**63, 2**64, -(2**63) - 1, -1, 70000]))
    if kind == "pyfloat":
        return draw(st.floats(-1e3, 1e3, allow_nan=False))
    if kind == "special":
        return draw(st.sampled_from([float("nan"), float("inf"), float("-inf"), 1e300]))
    if kind == "complex":
        return complex(draw(st.integers(-3, 3)), draw(st.integers(-3, 3)))
    if kind == "npscalar":
        dt = np.dtype(draw(st.sampled_from(["i8", "u2", "f8", "f4", "bool"])))
        return np.asarray(draw(st.integers(0, 70000))).astype(dt)[()]  # a NumPy scalar, wrapped
    n = int(np.prod(shape))
    if kind == "list":
        return (
            np.asarray(draw(st.lists(st.integers(-70000, 70000), min_size=n, max_size=n)), dtype=object)
            .reshape(shape)
            .tolist()
        )
    dt = np.dtype(draw(st.sampled_from(["f8", "i8", "u1", "f2"])))
    return (
        make_values(dt, shape, draw(st.integers(0, 1000)))
        if dt.kind == "f"
        else np.arange(n, dtype=dt).reshape(shape)
    )


def _write_check(data, chunks, fmt, key, value):
    ds = as_dataset(data, chunks, fmt)
    ref = data.copy()

    def numpy_write():
        ref[key] = value

    expected, _ = run(numpy_write)
    got, _ = run(lambda: ds.__setitem__(key, value))
    assert_same(expected, got, what=f"ds[{key!r}] = {value!r} ({data.dtype})")
    # written as NumPy wrote it; where NumPy refused, nothing at all (NumPy itself may have written the
    # elements of a list before the one it refused: the dataset checks every value first)
    want = data if isinstance(expected, Raised) else ref
    np.testing.assert_array_equal(ds[...], want, err_msg=f"after ds[{key!r}] = {value!r}")


@FEW
@given(st.data())
def test_writes_cast_as_numpy_casts(data):
    arr, chunks = data.draw(arrays(max_ndim=2))
    fmt = data.draw(st.sampled_from(["zarr2", "zarr3", "n5"]))
    key = data.draw(index_keys(arr.shape))
    sel = run(lambda: arr[key])[0]
    shape = () if isinstance(sel, Raised) or data.draw(st.booleans()) else np.shape(sel)
    value = data.draw(written_values(shape))
    _write_check(arr, chunks, fmt, key, value)


@pytest.mark.slow
@MANY
@given(st.data())
def test_writes_cast_as_numpy_casts_many(data):
    test_writes_cast_as_numpy_casts.hypothesis.inner_test(data)


@pytest.mark.parametrize("fmt", ["zarr2", "zarr3", "n5"])
def test_a_mask_of_the_wrong_shape_is_refused_before_the_value_is_cast(fmt):
    # found by test_writes_cast_as_numpy_casts: NumPy checks a mask's shape before converting the value
    _write_check(np.zeros((3, 0), dtype="i1"), (2, 1), fmt, (Ellipsis, np.array([False])), 128)
    _write_check(np.zeros((3, 4), dtype="i1"), (2, 2), fmt, (0, np.array([False, True, False])), 128)
    _write_check(np.zeros((3, 4), dtype="i1"), (2, 2), fmt, (np.array([5]), 0), 128)  # bounds: after


@pytest.mark.parametrize("fmt", ["zarr2", "zarr3", "n5"])
def test_writes_of_the_issue(fmt):
    data = np.zeros(4, dtype="u2")
    for value in (70000, -1, float("nan"), float("inf"), [1, 70000], np.array([np.nan, 1.0]), 3.7):
        _write_check(data, (2,), fmt, 0 if np.ndim(value) == 0 else slice(0, 2), value)
    ds = as_dataset(data, (2,), fmt)
    with pytest.raises(OverflowError):
        ds.write_chunks([(0,), (1,)], [[1, 2], [3, 70000]])  # the second chunk is bad: nothing written
    assert ds[...].tolist() == [0, 0, 0, 0] and not list(ds.stored_chunks())
    ds.write_chunks([(0,), (1,)], [[1.9, 2], np.array([3, 4], dtype="i8")])
    assert ds[...].tolist() == [1, 2, 3, 4]
