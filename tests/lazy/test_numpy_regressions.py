"""Issue 33: the seven differences from NumPy a differential fuzz found, one test each (every one failed
before its fix), and the methods and exception classes that were missing.

``L(a, chunks)`` is a lazy array over ``a``, ``D(a, chunks, ...)`` a dataset holding ``a``; every answer
is compared with NumPy's own on the same values (dtype, shape, scalar or array, values, exception type).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import altarr as aa
from _lazy_support import lazy
from altarr.stores import MemoryStore

nan, inf = np.nan, np.inf


def L(a, chunks):  # noqa: N802 - the issue's names
    return lazy(np.asarray(a), chunks)[0]


def D(a, chunks, fmt="zarr3", **kw):  # noqa: N802
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
        except Exception as e:  # noqa: BLE001 - the type is what is compared
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
