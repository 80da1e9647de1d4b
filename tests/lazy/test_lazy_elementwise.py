"""Lazy elementwise expressions (ufuncs, operators, np.where & co.) and the guarded materialization
path for everything else."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import altarr as aa
from _lazy_support import ArrayFetch, lazy, positions
from altarr.errors import MaterializeError, ReadOnlyError

DATA = positions((10, 7)) - 20.0


def test_operators_and_ufuncs_are_lazy_and_correct():
    x, fetch = lazy(DATA, (4, 3))
    exprs = {
        "x * 2 + 1": (lambda a: a * 2 + 1),
        "x > 0": (lambda a: a > 0),
        "-x ** 2": (lambda a: -(a**2)),
        "abs": (lambda a: abs(a)),
        "isnan": np.isnan,
        "sqrt": np.sqrt,
        "where": (lambda a: np.where(a > 0, a, 0)),
        "clip": (lambda a: np.clip(a, -5, 5)),
        "round": (lambda a: np.round(a / 3, 1)),
        "rpow": (lambda a: 2.0**a),
        "mixed": (lambda a: np.maximum(a, a * 0.5) - a),
    }
    with np.errstate(invalid="ignore"):
        for name, f in exprs.items():
            y = f(x)
            assert aa.is_altarr(y), name
            np.testing.assert_array_equal(y[...], f(DATA), err_msg=name)
            np.testing.assert_array_equal(y[2:9:3, [6, 0]], f(DATA)[2:9:3, [6, 0]], err_msg=name)
    assert fetch.calls and len(fetch.calls) == 1  # every expression read through the one cached fetch
    assert aa.stats(x)["materialize"] == 0


@pytest.mark.parametrize(
    ("dtype", "expr"),
    [
        ("uint8", lambda a: a + 1),
        ("uint8", lambda a: a + 300),
        ("int8", lambda a: a * 1.5),
        ("float32", lambda a: a * 2.0),
        ("float32", lambda a: a + np.float64(1)),
        ("int16", lambda a: a > 2),
        ("int32", lambda a: a / 2),
        ("bool", lambda a: ~a),
        ("complex64", lambda a: np.abs(a)),
        ("int64", lambda a: a // 3),
    ],
)
def test_result_dtypes_follow_numpy(dtype, expr):
    data = (positions((5, 4)) % 9).astype(dtype)
    x, _ = lazy(data, 3)
    try:
        want = expr(data)
    except OverflowError:
        with pytest.raises(OverflowError):
            expr(x)
        return
    y = expr(x)
    assert aa.is_altarr(y) and y.dtype == want.dtype
    np.testing.assert_array_equal(y[...], want)


def test_two_lazy_arrays_and_broadcast_numpy_operands():
    x, fx = lazy(DATA, (4, 3))
    y, fy = lazy(DATA * 10, (4, 3))
    z = x + y
    np.testing.assert_array_equal(z[3:7], DATA[3:7] * 11)
    assert len(fx.calls) == 1 and len(fy.calls) == 1
    row = np.arange(7.0)
    w = x - row
    assert aa.is_altarr(w)
    np.testing.assert_array_equal(w[...], DATA - row)
    same = x * np.ones(DATA.shape)
    assert aa.is_altarr(same)
    q, r = np.divmod(x, 3)
    assert aa.is_altarr(q) and aa.is_altarr(r)
    np.testing.assert_array_equal(q[...], DATA // 3)
    np.testing.assert_array_equal(r[...], DATA % 3)
    xx = x * x  # one source used twice: fetched once per chunk
    aa.reset(x)
    with aa.set_options(batch_chunks=100):
        assert float(xx.sum()) == float((DATA * DATA).sum())
    assert aa.stats(x)["chunks_fetched"] == 9


def test_incompatible_operands_materialize_under_the_guard():
    x, _ = lazy(DATA, (4, 3))
    other, _ = lazy(DATA, (5, 7))  # another chunk grid
    res = x + other
    assert isinstance(res, np.ndarray) and not aa.is_altarr(res)
    np.testing.assert_array_equal(res, DATA * 2)
    big = np.ones((3, 10, 7))  # would enlarge the shape
    np.testing.assert_array_equal(x + big, DATA + big)
    assert aa.stats(x)["materialize"] == 2


def test_other_numpy_functions_materialize_once_and_are_refused_above_the_limit():
    x, fetch = lazy(DATA, (4, 3))
    np.testing.assert_array_equal(np.sort(x, axis=0), np.sort(DATA, axis=0))
    np.testing.assert_array_equal(np.asarray(x), DATA)
    np.testing.assert_array_equal(np.cumsum(x, axis=1), np.cumsum(DATA, axis=1))
    assert np.shape(x) == (10, 7) and np.ndim(x) == 2 and np.size(x) == 70
    assert aa.stats(x)["materialize"] == 3
    aa.reset(x)
    with aa.set_options(max_materialize=69):
        for op in (
            np.asarray,
            np.sort,
            lambda a: np.percentile(a, 50),
            lambda a: np.array(a),
            lambda a: a.to_numpy(),
        ):
            with pytest.raises(MaterializeError) as info:
                op(x)
            msg = str(info.value)
            assert "70" in msg and "max_materialize=69" in msg
            assert "extract" in msg and "to_dask" in msg and "x[...]" in msg
        # explicit selections and streamed reductions are not materializations
        assert x[...].shape == (10, 7) and float(x.sum()) == DATA.sum()
    assert aa.stats(x)["fetch_calls"] == 1 and aa.stats(x)["materialize"] == 0


def test_array_protocol_details():
    x, _ = lazy(DATA, (4, 3))
    with pytest.raises(ValueError, match="copy"):
        np.asarray(x, copy=False) if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else x.__array__(
            copy=False
        )
    assert np.asarray(x, dtype="float32").dtype == np.float32
    with pytest.raises(ValueError, match="ambiguous"):
        bool(x > 0)
    one, _ = lazy(np.array([[3.0]]), 1)
    zero_d, _ = lazy(np.array(3.0), ())
    assert float(zero_d) == 3.0 and int(zero_d) == 3 and bool(one)  # float(one): see test_numpy_regressions
    with pytest.raises(ReadOnlyError):
        x[0, 0] = 1
    with pytest.raises(ReadOnlyError):
        np.add(DATA, 1, out=x)
    assert x.astype("int32").dtype == np.int32 and aa.is_altarr(x.astype("int32"))
    np.testing.assert_array_equal(np.astype(x, "int16")[...], DATA.astype("int16"))


def test_foreign_array_types_get_notimplemented():
    import xarray as xr

    x, _ = lazy(DATA, (4, 3))
    da = xr.DataArray(DATA, dims=("a", "b"))
    res = da + x
    assert isinstance(res, xr.DataArray)
    np.testing.assert_array_equal(res.values, DATA * 2)


def _fetch_positions(coords):
    return ArrayFetch(DATA, (4, 3))(coords)


def test_lazy_expressions_pickle_as_recipes():
    x = aa.altarr(DATA.shape, (4, 3), _fetch_positions, dims=("r", "c"))
    expr = np.where(np.isnan(x), 0, x * 2)
    data = pickle.dumps(expr)
    assert len(data) < 2000
    back = pickle.loads(data)
    assert aa.is_altarr(back) and back.dims == ("r", "c")
    np.testing.assert_array_equal(back[...], DATA * 2)
