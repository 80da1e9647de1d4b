"""Issue 33: the seven differences from NumPy a differential fuzz found, one test each (every one failed
before its fix), and the methods and exception classes that were missing.

``L(a, chunks)`` is a lazy array over ``a``, ``D(a, chunks, ...)`` a dataset holding ``a``; every answer
is compared with NumPy's own on the same values (dtype, shape, scalar or array, values, exception type).
"""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest

import altarr as aa
from _lazy_support import lazy
from altarr.stores import MemoryStore

nan, inf = np.nan, np.inf


def L(a, chunks):  # the names
    return lazy(np.asarray(a), chunks)[0]


def D(a, chunks, fmt="zarr3", **kw):
    a = np.asarray(a)
    ds = aa.create_dataset(MemoryStore(), shape=a.shape, dtype=a.dtype, chunks=chunks, format=fmt, **kw)
    if a.size:
        ds[...] = a
    return ds


def outcome(fn):
    """``fn()``'s result, or the type of the exception it raised (warnings silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn()
        except Exception as e:  # the type is what is compared
            return type(e)


def same(got, want):
    """``got`` is NumPy's ``want``: the same exception type, or the same type, dtype, shape and values."""
    if isinstance(want, type):
        assert isinstance(got, type) and issubclass(got, want), f"NumPy raised {want}, got {got!r}"
        return
    assert not isinstance(got, type), f"NumPy gave {want!r}, raised {got}"
    assert type(got) is type(want), f"{type(got)} != NumPy's {type(want)}"
    got, want = np.asarray(got), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_array_equal(got, want)


# --- 1. a complex value is the fill value only when both of its parts are ---------------------------------
@pytest.mark.parametrize("fmt", ["zarr2", "zarr3"])
def test_complex_values_with_a_nan_part_are_not_a_nan_fill(fmt):
    for values in ([complex(1, nan), complex(2, nan)], [complex(nan, 1), complex(nan, nan)]):
        ds = D(np.zeros(2, "c16"), (2,), fmt, fill_value=nan)
        ds[...] = values
        got = ds[...]
        np.testing.assert_array_equal(got.real, np.array(values).real)
        np.testing.assert_array_equal(got.imag, np.array(values).imag)
    ds = D(np.zeros(2, "c8"), (2,), fmt, fill_value=nan)
    ds[...] = complex(nan, 0)  # the fill value itself (nan+0j): not stored
    assert not list(ds.stored_chunks()) and np.isnan(ds[0].real) and ds[0].imag == 0


@pytest.mark.parametrize(
    ("fmt", "dtype"),
    [(f, d) for f in ("zarr2", "zarr3", "n5") for d in ("f4", "f8", "c8") if (f, d) != ("n5", "c8")],
)
def test_a_zero_fill_is_no_fill_for_the_other_zero(fmt, dtype):
    """Found by the fuzz of issue 33: a chunk of -0.0 was taken for the fill value 0.0 (compared as
    values) and read back as +0.0, in Python and in the native kernel alike."""
    for compressor in ("zstd", None):  # the native kernel encodes zstd chunks; without a compressor NumPy
        ds = aa.create_dataset(
            MemoryStore(), shape=(4,), dtype=dtype, chunks=(2,), format=fmt, compressor=compressor
        )
        ds[...] = np.array([-0.0, -0.0, 0.0, 1.0], dtype)
        got = ds[...]
        assert np.signbit(got.real).tolist() == [True, True, False, False], (compressor, got)
        assert len(list(ds.stored_chunks())) == 2
        ds[2:] = 0.0  # the fill itself: that chunk goes
        assert len(list(ds.stored_chunks())) == 1


# --- 2. one scalar cast for every write form --------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["zarr2", "zarr3", "n5"])
def test_oindex_and_vindex_writes_cast_scalars_as_numpy_does(fmt):
    def check(dtype, write, key, value):
        ref = np.zeros(3, dtype)
        want = outcome(lambda: ref.__setitem__(key, value))
        ds = D(np.zeros(3, dtype), (2,), fmt)
        got = outcome(lambda: write(ds, key, value))
        same(got, want)
        np.testing.assert_array_equal(ds[...], ref)

    def oindex(ds, k, v):
        ds.oindex[k] = v

    def vindex(ds, k, v):
        ds.vindex[k] = v

    def setitem(ds, k, v):
        ds[k] = v

    for write in (oindex, vindex, setitem):
        check("i2", write, 1, np.uint16(40000))  # OverflowError (it stored -25536)
        check("i4", write, np.array(1), np.complex64(complex(nan, 0)))  # ValueError (it stored INT_MIN)
        check("i4", write, 1, np.float64(nan))
        check("u1", write, slice(0, 2), np.int64(300))
        check("i2", write, [1], np.uint16(40000))  # an index array: NumPy's array cast wraps
        check("i2", write, np.array([1, 2]), np.uint16(40000))


# --- 3. ``**`` takes NumPy's fast paths -----------------------------------------------------------------
def test_power_operator_takes_numpys_fast_paths():
    cases = [
        (np.array([True, False]), 2),  # int8 (np.square), not int64
        (np.array([1e200 + 1e200j]), 2),  # -inf+infj
        (np.array([inf + 0j]), -1),  # 0-0j (np.reciprocal)
        (np.array([4.0, 2.0], "f2"), 0.5),  # np.sqrt
        (np.array([4.0, -1.0]), 0.5),
        (np.array([-1 + 0j, 4j]), 0.5),
        (np.array([3, 4], "u1"), 2),
        (np.array([3, 4], "i8"), -1),  # integers: no fast path (ValueError from np.power)
        (np.array([3.0, 0.0], "f4"), -1),
        (np.array([3.0, 2.0]), 2.0),  # a float 2.0 is no fast path: np.power
        (np.array([3.0, 2.0]), np.int64(2)),  # nor a NumPy integer
        (np.array([3.0, 2.0]), True),
        (np.array([3, 2]), 0.5),  # sqrt only for inexact arrays
        (np.array([3.0, 2.0]), 2**70),  # too big for a C long: np.power
    ]
    for data, exponent in cases:
        x = L(data, (1,))
        same(outcome(lambda x=x, e=exponent: (x**e)[...]), outcome(lambda d=data, e=exponent: d**e))
        # the reflected form and the function never take the fast path, in NumPy as here
        same(
            outcome(lambda x=x, e=exponent: np.power(x, e)[...]),
            outcome(lambda d=data, e=exponent: np.power(d, e)),
        )
    x = L(np.array([2.0, 3.0]), (1,))
    same((2**x)[...], 2 ** np.array([2.0, 3.0]))
    same(operator.pow(x, x)[...], np.array([4.0, 27.0]))


# --- 4. products in NumPy's order -----------------------------------------------------------------------
def test_products_at_extreme_values_are_numpys():
    cases = [
        (np.array([1e-30, 1e-30, 1e30, 1e30], "f4"), (2,), {}),  # 0.0, not nan
        (np.array([3.4e38, 3.0], "f4"), (2,), {"initial": 0}),  # 0.0, not nan
        (np.array([1e30, 1e30, 1e-30, 1e-30], "f4"), (1,), {}),  # inf
        (np.array([1e-30, 1e30, 1e30, 1e-30], "f4"), (3,), {}),  # 1.0
        (np.array([1e-30, 1e-30, 1e30, 1e30], "f4"), (1,), {}),  # 0.0 (a finite product of partials: 1)
        (np.array([1e300, 1e300, 1e-300, 0.0]), (2,), {}),  # nan
        (np.array([[1e30, 1e-30], [1e30, 1e-30], [1e-30, 1e30]], "f4"), (1, 1), {"axis": 0}),
        (np.array([[1e30, 1e30, 1e-30], [1e-30, 1e30, 1e30]], "f4"), (1, 2), {"axis": 1}),
        (np.array([[1e30, 1e30], [1e-30, 1e-30]], "f4"), (1, 1), {"axis": None}),  # C order: inf
        (np.array([1e30, 2.0, 1e30, 1e-30], "f4"), (2,), {"where": np.array([True, False, True, True])}),
    ]
    for data, chunks, kw in cases:
        for fn in (np.prod, np.nanprod):
            same(
                outcome(lambda f=fn, d=data, c=chunks, k=kw: f(L(d, c), **k)),
                outcome(lambda f=fn, d=data, k=kw: f(d, **k)),
            )


# --- 5. nan-reductions cast ``initial`` to the reduction's dtype -------------------------------------------
def test_nan_reductions_cast_initial_as_numpy_does():
    data = np.array([1.0, nan, 2.0], "f2")
    cases = [
        (np.nansum, {"initial": np.float64(1)}),  # float16, not float64
        (np.nansum, {"initial": 0, "dtype": bool}),  # np.True_, not np.int64(1)
        (np.nansum, {"initial": nan, "dtype": "u1"}),  # ValueError, not nan
        (np.nanprod, {"initial": np.float64(3)}),
        (np.nanprod, {"initial": 2, "dtype": "i2"}),
        (np.nanmin, {"initial": np.float64(-1)}),
        (np.nanmax, {"initial": np.float64(7)}),
        (np.nanmax, {"initial": 7, "where": np.array([True, False, False])}),
    ]
    for fn, kw in cases:
        same(outcome(lambda f=fn, k=kw: f(L(data, (2,)), **k)), outcome(lambda f=fn, k=kw: f(data, **k)))


# --- 6. 0-d boolean indices in writes ----------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["zarr2", "zarr3"])
def test_zero_d_boolean_writes_assign_as_numpy_does(fmt):
    for key in (True, np.array(True), False, (True, True), (Ellipsis, True), (None, True), (True, False)):
        for value in (5.0, [6.0], np.array([[7.0]])):
            ref = np.array(0.0)
            want = outcome(lambda k=key, v=value, r=ref: r.__setitem__(k, v))
            ds = D(np.array(0.0), (), fmt)
            same(outcome(lambda k=key, v=value, d=ds: d.__setitem__(k, v)), want)
            assert ds[...] == ref, (key, value)
    ref = np.arange(6.0).reshape(2, 3)
    ds = D(ref, (1, 2), fmt)
    ds[True, 1] = -1.0
    ref[True, 1] = -1.0
    np.testing.assert_array_equal(ds[...], ref)


# --- 7. no bounds checks on an empty selection -------------------------------------------------------------
def test_empty_selections_are_not_bounds_checked():
    data = np.arange(6.0).reshape(2, 3)
    keys = [
        ([5], []),
        (False, [5]),
        (np.array(False), [5]),
        ([5], [[]]),
        (np.zeros(0, bool), [5]),
        ([[5]], np.zeros((0, 1), int)),
        # and where NumPy does check: the broadcast indices are not empty, or an integer is out of bounds
        ([5], slice(0, 0)),
        (slice(0, 0), [5]),
        (5, []),
        (True, [5]),
        ([], [5, 6]),
    ]
    for key in keys:
        want = outcome(lambda k=key: data[k])
        same(outcome(lambda k=key: L(data, (1, 1))[k]), want)
        same(outcome(lambda k=key: D(data, (1, 1))[k]), want)
        ref = data.copy()
        want = outcome(lambda k=key, r=ref: r.__setitem__(k, -1.0))
        ds = D(data, (1, 1))
        same(outcome(lambda k=key, d=ds: d.__setitem__(k, -1.0)), want)
        np.testing.assert_array_equal(ds[...], ref)
    for key in ([5], []), ([[5]], [[]]):  # vindex: NumPy's rule too
        same(outcome(lambda k=key: L(data, (1, 1)).vindex[k]), data[key])


# --- the missing methods and exception classes ------------------------------------------------------------
def test_reshape_and_tolist():
    data = np.arange(24.0).reshape(4, 6)
    x = L(data, (3, 4))
    for shape in ((6, 4), (24,), (-1, 3), ((2, 3, 4),), (2, -1, 2), ()):
        args = shape if shape else ((),)
        same(outcome(lambda a=args: np.asarray(x.reshape(*a))), outcome(lambda a=args: data.reshape(*a)))
    same(outcome(lambda: x.reshape(5, 5)), ValueError)
    same(outcome(lambda: x.reshape(6, 4, order="F")[...]), data.reshape(6, 4, order="F"))
    assert np.reshape(x, (24,)).tolist() == data.reshape(24).tolist()
    assert x.tolist() == data.tolist()
    assert type(L(np.array(3), ()).tolist()) is int and L(np.array(3.5), ()).tolist() == 3.5


def test_ufunc_reductions_of_a_0d_array_take_axis_0_and_minus_1():
    data = np.array(3.0)
    for name in ("sum", "prod", "min", "max", "any", "all", "argmin", "argmax", "mean", "var", "std"):
        for axis in (0, -1, 1, (0,), None):
            want = outcome(lambda n=name, a=axis: getattr(data, n)(axis=a))
            same(outcome(lambda n=name, a=axis: getattr(L(data, ()), n)(axis=a)), want)
    for name in ("nansum", "nanprod", "nanmin", "nanmax", "nanmean", "count_nonzero"):
        for axis in (0, -1, 1):
            want = outcome(lambda n=name, a=axis: getattr(np, n)(data, axis=a))
            same(outcome(lambda n=name, a=axis: getattr(np, n)(L(data, ()), axis=a)), want)


def test_a_ragged_index_raises_valueerror_as_in_numpy():
    data = np.arange(6.0)
    for key in ([0, [1, 2]], ([0, [1, 2]],), [[0], [1, 2]]):
        want = outcome(lambda k=key: data[k])
        assert want is ValueError
        same(outcome(lambda k=key: L(data, (4,))[k]), want)
        same(outcome(lambda k=key: D(data, (4,))[k]), want)


def test_scalar_conversions_follow_the_installed_numpy():
    for data in (np.array([2.0]), np.array([[2]]), np.array(2.0), np.array([1 + 1j]), np.array([True])):
        x = L(data, (1,) * data.ndim)
        for conv in (float, int, complex, bool, operator.index):
            same(outcome(lambda c=conv, x=x: c(x)), outcome(lambda c=conv, d=data: c(d)))
    if np.lib.NumpyVersion(np.__version__) >= "2.4.0":  # NumPy 2.4 made float() of ndim > 0 a TypeError
        with pytest.raises(TypeError, match="only 0-dimensional arrays"):
            float(L(np.array([2.0]), (1,)))


# --- soak seed 945414790: complex var/std without degrees of freedom, .flat's index conversion ------------
def test_complex_var_and_std_divide_in_the_complex_dtype_where_ddof_reaches_the_count():
    data = np.array([[nan, 1 + 1j], [0.5 + 0.5j, -1j], [1j, complex(nan, nan)]], "c8")
    for fn in (np.var, np.std):
        for dtype in ("c8", "c16", None):
            for ddof in (1, 2, 3):
                kw = {"axis": (1,), "ddof": ddof, "dtype": dtype}
                got, want = (
                    outcome(lambda f=fn, k=kw: f(L(data, (1, 1)), **k)),
                    outcome(lambda f=fn, k=kw: f(data, **k)),
                )
                same(got, want)
                np.testing.assert_array_equal(np.isnan(np.imag(got)), np.isnan(np.imag(want)))
    ones = np.ones((2, 2), "c8")  # 0 / 0 in a complex dtype: nan+nanj, as the whole-array scalar
    got = outcome(lambda: np.std(L(ones, (1, 1)), ddof=4, dtype="c8"))
    assert np.isnan(got.imag) and got.dtype == np.complex64


def test_flat_converts_every_item_of_a_tuple_before_counting_them():
    ragged = [0, [1, 2]]
    keys = [(None, ragged), (ragged, None), (0, ragged), (1.5, ragged), ("a", ragged), (True, ragged)]
    keys += [(*k, 0) for k in keys]
    keys += [([0.5], ragged), (np.array([0.5]), ragged), (["a"], ragged), ([True], ragged)]
    for data in (np.array(False), np.arange(6.0).reshape(2, 3)):
        x = L(data, (1,) * data.ndim)
        for key in keys:
            same(outcome(lambda k=key, x=x: x.flat[k]), outcome(lambda k=key, d=data: d.flat[k]))
    with pytest.raises(ValueError):
        L(np.array(False), ()).flat[None, [0, [1, 2]]]


def test_flat_takes_an_empty_mask_as_an_empty_index():  # soak seed 20261205
    for data in (np.array(False), np.arange(3), np.arange(0)):
        x = L(data, (1,) * data.ndim)
        for mask in (np.zeros(0, bool), np.zeros((0, 2), bool), np.zeros(1, bool), np.zeros(4, bool)):
            same(outcome(lambda m=mask, x=x: x.flat[m]), outcome(lambda m=mask, d=data: d.flat[m]))


# --- soak seed 995061715: a 0-d boolean array after .flat's index array indexes no dimension ---------------
def test_flat_ignores_0d_boolean_arrays_after_its_index_array():
    F, T = np.array(False), np.array(True)
    mask = np.array([True, False, True, False, False, True])
    keys = [([], F), ([0, 2], F), ([0, 2], T), ([[1], [0]], F, T), (np.array([1]), T), (mask, F), ([9], F)]
    keys += [(np.zeros(0, bool), T), ([0], F, None), ([0], F, ...), (0, F), (slice(1), F), (np.array(0), F)]
    keys += [(None, F), (..., F), ([0], F, 0), ([0], np.False_), ([0], F, True), ([0], F, [True])]
    keys += [[True, False], (True,), np.True_]  # booleans that are not arrays: NumPy refuses them in .flat
    for data in (np.array(False), np.arange(6.0).reshape(2, 3)):
        x = L(data, (1,) * data.ndim)
        for key in keys:
            same(outcome(lambda k=key, x=x: x.flat[k]), outcome(lambda k=key, d=data: d.flat[k]))
    assert L(np.array(False), ()).flat[[], np.array(False)].shape == (0,)  # the soak's example


# --- soak seed 20261205: an orthogonal selection that selects nothing checks no index array's bounds -------
def test_an_empty_orthogonal_product_checks_no_bounds():
    data = np.zeros((0, 3))
    for key in ((slice(None), [5]), (Ellipsis, [7, 0]), (slice(0, 0), [5])):
        assert L(data, (1, 1)).oindex[key].shape == (0, len(key[1]))
        assert D(data, (1, 1)).oindex[key].shape == (0, len(key[1]))
    assert L(np.zeros((2, 3)), (1, 1)).oindex[0:0, [5]].shape == (0, 1)
    for key in ((slice(None), 5), ([5], slice(None))):  # an integer, or an array over a non-empty axis
        with pytest.raises(IndexError):
            L(data, (1, 1)).oindex[key]


# --- soak seed 245824412: var/std overflow where NumPy's sums in the computing dtype do ---------------------
def test_var_and_std_overflow_as_numpys_sums_in_the_computing_dtype_do():
    f4, f8 = np.finfo("f4").max, np.finfo("f8").max
    cases = [
        np.array([-0.0, -f4, 1.0], "f4"),  # the soak's example: the squared deviations overflow float32
        np.array([-1.5e19, 1.5e19], "f4"),  # each square fits, their sum does not
        np.array([f4, f4], "f4"),  # the sum of the values overflows (the squares are 0)
        np.array([f8, f8, f8, 1.0, -0.0, 1.0, f8]),  # float64: a chunk's sum overflows, its mean does not
        np.array([-1e154, 6.7e153, -7e153]),  # float64: the merge's squared difference alone overflows
        np.array([f4, -f4], "c8"),
        np.array([3e38, 1e38], "c8"),  # a complex sum that overflows, divided by the count: NaN
        np.array([1.0, 2.0, 4.0, 8.0], "f4"),  # (finite, as before)
    ]
    for data in cases:
        for f in (np.var, np.std, np.nanvar, np.nanstd):
            want = outcome(lambda f=f, d=data: f(d))
            for c in (1, 2, 3):  # whatever the chunks; finite answers to rounding (merged moments)
                got = outcome(lambda f=f, d=data, c=c: f(L(d, (c,))))
                assert type(got) is type(want) and got.dtype == want.dtype, (got, want)
                np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"{f.__name__} {data} chunks {c}")


# --- soak seed 2469696439: an empty mask of another shape is an empty index, not a boolean assignment -------
@pytest.mark.parametrize("fmt", ["zarr2", "zarr3"])
def test_an_empty_mask_of_another_shape_assigns_as_an_index_array(fmt):
    cases = [
        ((1,), (np.zeros(0, bool),), [[0.0]]),  # the soak's case: NumPy broadcasts [[0]] to nothing
        ((3,), np.zeros(0, bool), [[5.0]]),
        ((2, 3), np.zeros((0, 3), bool), [[1.0]]),
        ((3,), np.zeros(0, bool), [1.0, 2.0]),  # still a broadcast error
        ((2, 3), np.zeros((2, 3), bool), [[1.0]]),  # of the array's shape: the boolean rule's error
        ((2, 0), np.zeros((2, 0), bool), [[1.0]]),  # also when it selects nothing
    ]
    for shape, key, value in cases:
        ref = np.arange(float(np.prod(shape))).reshape(shape)
        ds = D(ref, tuple(max(1, n) for n in shape), fmt)
        want = outcome(lambda k=key, v=value, r=ref: r.__setitem__(k, v))
        same(outcome(lambda k=key, v=value, d=ds: d.__setitem__(k, v)), want)
        np.testing.assert_array_equal(ds[...], ref)
