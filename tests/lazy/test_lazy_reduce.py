"""Streamed reductions: NumPy's results, batches of batch_chunks chunks per call, no cache filling,
early exit, bounded memory."""

from __future__ import annotations

import itertools
import math
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import altarr as aa
from _lazy_support import lazy, positions
from altarr.errors import MaterializeError

RNG = np.random.default_rng(7)
DATA3 = RNG.normal(size=(9, 10, 7)) * 3 + 1
DATA3_NAN = DATA3.copy()
DATA3_NAN[RNG.random(DATA3.shape) < 0.2] = np.nan
DATA3_NAN[:, 2, 3] = np.nan  # an all-NaN slice along axis 0

AXES = [None, 0, 1, 2, -1, (0, 2), (1, 2), (0, 1, 2)]
FUNCS = ["sum", "prod", "min", "max", "mean", "std", "var", "any", "all"]


@pytest.mark.parametrize("func", FUNCS)
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_match_numpy(func, axis, keepdims):
    data = DATA3 if func != "prod" else 1 + DATA3 / 50
    x, fetch = lazy(data, (4, 3, 5))
    got_np = getattr(np, func)(x, axis=axis, keepdims=keepdims)
    got_method = getattr(x, func)(axis=axis, keepdims=keepdims)
    want = getattr(np, func)(data, axis=axis, keepdims=keepdims)
    for got in (got_np, got_method):
        assert np.shape(got) == np.shape(want)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert aa.stats(x)["chunks_cached"] == 0 and aa.stats(x)["reduce"] == 2


@pytest.mark.parametrize("func", ["nansum", "nanprod", "nanmin", "nanmax", "nanmean", "nanstd", "nanvar"])
@pytest.mark.parametrize("axis", [None, 0, 2, (1, 2)])
def test_nan_reductions_match_numpy(func, axis):
    data = DATA3_NAN if func != "nanprod" else 1 + DATA3_NAN / 50
    x, _ = lazy(data, (4, 3, 5))
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        got = getattr(np, func)(x, axis=axis)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        want = getattr(np, func)(data, axis=axis)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    # NumPy's RuntimeWarnings for all-NaN slices; other categories (a ResourceWarning of an unclosed file
    # that another test left for the garbage collector to close inside this block) are not ours to judge
    runtime = [[w for w in ws if issubclass(w.category, RuntimeWarning)] for ws in (ours, theirs)]
    assert bool(runtime[0]) == bool(runtime[1])


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "bool", "float32", "float16", "complex128"])
def test_result_dtypes_follow_numpy(dtype):
    data = (positions((6, 5)) % 5).astype(dtype)
    x, _ = lazy(data, (4, 2))
    for func in ("sum", "prod", "min", "max", "mean", "var", "std", "count_nonzero"):
        for axis in (None, 1):
            got = getattr(np, func)(x, axis=axis)
            want = getattr(np, func)(data, axis=axis)
            assert np.asarray(got).dtype == np.asarray(want).dtype, (func, axis)
            rtol = 1e-3 if dtype in ("float16", "float32") else 1e-12
            np.testing.assert_allclose(
                np.asarray(got, dtype=complex), np.asarray(want, dtype=complex), rtol=rtol
            )


def test_dtype_ddof_initial_out_and_ufunc_reduce():
    data = positions((5, 8)).astype("int16")
    x, _ = lazy(data, (2, 3))
    assert x.sum(dtype="int8").dtype == np.int8
    assert np.sum(x, dtype="float32") == np.float32(data.sum())
    np.testing.assert_allclose(x.var(axis=0, ddof=1), data.var(axis=0, ddof=1))
    np.testing.assert_allclose(np.std(x, ddof=2), np.std(data, ddof=2))
    np.testing.assert_allclose(np.var(x, axis=1, correction=1), np.var(data, axis=1, correction=1))
    assert x.max(initial=1000) == 1000 and x.sum(initial=5) == data.sum() + 5
    out = np.empty(8)
    assert x.mean(axis=0, out=out) is out
    np.testing.assert_allclose(out, data.mean(axis=0))
    np.testing.assert_array_equal(np.add.reduce(x), np.add.reduce(data))  # default axis 0
    np.testing.assert_array_equal(np.maximum.reduce(x, axis=1), data.max(axis=1))
    np.testing.assert_array_equal(np.bitwise_or.reduce(x, axis=None), np.bitwise_or.reduce(data, axis=None))
    assert x.sum(where=data > 3) == data.sum(where=data > 3)  # where= is streamed (issue 12)
    with pytest.raises(np.exceptions.AxisError):
        x.sum(axis=2)


def test_numpys_warnings_name_the_callers_line_through_methods_and_numpy_functions():
    """ "All-NaN slice", "Mean of empty slice" and "Degrees of freedom" name the line that called the
    reduction, as a method and through ``np.*`` (``__array_function__`` adds frames of altarr that a
    fixed ``stacklevel`` counted wrong)."""
    nans, _ = lazy(np.full((4, 6), np.nan), (2, 3))
    ones, _ = lazy(np.ones((4, 6)), (2, 3))
    calls = [
        (lambda: np.nanmin(nans), "All-NaN slice encountered"),
        (lambda: np.nanmax(nans, axis=1), "All-NaN slice encountered"),
        (lambda: np.nanmean(nans), "Mean of empty slice"),
        (lambda: ones.mean(where=np.zeros((4, 6), bool)), "Mean of empty slice"),
        (lambda: np.mean(ones, where=np.zeros((4, 6), bool)), "Mean of empty slice"),
        (lambda: ones.var(ddof=30), "Degrees of freedom <= 0 for slice"),
        (lambda: np.std(ones, ddof=30), "Degrees of freedom <= 0 for slice"),
        (lambda: np.nanvar(ones, ddof=30), "Degrees of freedom <= 0 for slice."),
    ]
    for call, message in calls:
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            call()
        ours = [w for w in got if str(w.message) == message]
        assert len(ours) == 1, (message, [str(w.message) for w in got])
        assert (ours[0].filename, ours[0].lineno) == (__file__, call.__code__.co_firstlineno), message


def test_ddof_at_or_past_the_count_answers_like_numpy_with_its_warning():
    """``var``/``std`` with ``ddof >= n``: NumPy divides by ``max(n - ddof, 0)``, so a positive sum of
    squares gives ``inf`` and a zero one ``nan``, with a RuntimeWarning, never a negative variance."""
    data = np.arange(6.0).reshape(3, 2) ** 2
    x, _ = lazy(data, (2, 1))
    for func, kwargs in [
        ("var", {"axis": 0, "ddof": 5}),
        ("var", {"ddof": 7}),
        ("std", {"axis": 0, "ddof": 3}),
    ]:
        with pytest.warns(RuntimeWarning):
            want = getattr(np, func)(data, **kwargs)
        with pytest.warns(RuntimeWarning):
            got = getattr(x, func)(**kwargs)
        np.testing.assert_array_equal(np.asarray(got), want)
        assert np.all(np.isinf(got)), (func, kwargs, got)
    flat, _ = lazy(np.ones((3, 2)), (2, 2))  # all equal: 0 / 0
    with pytest.warns(RuntimeWarning):
        np.testing.assert_array_equal(flat.var(axis=0, ddof=4), [np.nan, np.nan])


def test_variance_is_numerically_stable():
    rng = np.random.default_rng(3)
    data = 1e9 + rng.normal(size=(200, 50))
    x, _ = lazy(data, (7, 11))
    exact = data - 1e9  # exact subtraction: a well-conditioned reference
    np.testing.assert_allclose(x.var(), exact.var(), rtol=1e-7)
    np.testing.assert_allclose(x.std(axis=0), exact.std(axis=0), rtol=1e-7)
    naive = (data**2).mean() - data.mean() ** 2  # what a one-pass sum of squares would give
    assert abs(naive - exact.var()) > 1e-3


@pytest.mark.parametrize("batch", [1, 4, 7, 64])
def test_whole_array_reduction_costs_ceil_n_over_batch_calls_and_caches_nothing(batch):
    data = positions((10, 7))
    x, fetch = lazy(data, (4, 3))  # 9 chunks
    with aa.set_options(batch_chunks=batch):
        assert x.sum() == data.sum()
        assert aa.stats(x)["fetch_calls"] == math.ceil(9 / batch)
        assert max(len(c) for c in fetch.calls) <= batch
        assert aa.stats(x)["chunks_cached"] == 0
        np.testing.assert_allclose(np.mean(x, axis=0), data.mean(axis=0))
        assert aa.stats(x)["fetch_calls"] == 2 * math.ceil(9 / batch)
        assert aa.stats(x)["chunks_cached"] == 0


def test_reductions_use_chunks_already_cached():
    data = positions((10, 7))
    x, fetch = lazy(data, (4, 3))
    x[0:4, 0:6]  # caches chunks (0, 0) and (0, 1)
    with aa.set_options(batch_chunks=3):
        assert x.max() == data.max()
    s = aa.stats(x)
    assert s["chunks_fetched"] == 2 + 7 and s["chunks_cached"] == 2
    assert s["fetch_calls"] == 1 + 3  # batches of 3 grid positions; the first holds one missing chunk


def test_any_and_all_stop_early():
    data = np.zeros((12, 12), dtype=bool)
    data[0, 0] = True
    x, fetch = lazy(data, 3)  # 16 chunks
    with aa.set_options(batch_chunks=2):
        assert bool(x.any())
        assert len(fetch.calls) == 1
        assert not bool(x.all())
        assert len(fetch.calls) == 2
        assert np.any(x, axis=1).tolist() == data.any(axis=1).tolist()
        assert len(fetch.calls) == 2 + 8
    ones, fetch1 = lazy(np.ones((12, 12)), 3)
    with aa.set_options(batch_chunks=4):
        assert np.all(ones, axis=1).all()  # all decided only after every chunk
        assert len(fetch1.calls) == 4
        assert np.any(ones, axis=1).all()  # every row True after the first chunk column
        assert len(fetch1.calls) == 4 + 4


def test_isnan_any_streams_with_early_exit():
    data = positions((12, 12))
    data[1, 1] = np.nan
    x, fetch = lazy(data, 3)
    with aa.set_options(batch_chunks=2):
        assert bool(np.isnan(x).any())
        assert len(fetch.calls) == 1
        assert int((x > 100).sum()) == int((data > 100).sum())
        np.testing.assert_array_equal((x > 100).sum(axis=0), (data > 100).sum(axis=0))
    assert aa.stats(x)["chunks_cached"] == 0


def test_nonzero_flatnonzero_argwhere_count_nonzero():
    rng = np.random.default_rng(5)
    data = rng.random((11, 9, 4)) < 0.1
    x, fetch = lazy(data, (4, 5, 3))
    for got, want in zip(np.nonzero(x), np.nonzero(data), strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.flatnonzero(x), np.flatnonzero(data))
    np.testing.assert_array_equal(np.argwhere(x), np.argwhere(data))
    np.testing.assert_array_equal(np.where(x)[1], np.where(data)[1])
    assert np.count_nonzero(x) == np.count_nonzero(data)
    np.testing.assert_array_equal(np.count_nonzero(x, axis=(0, 2)), np.count_nonzero(data, axis=(0, 2)))
    assert aa.stats(x)["chunks_cached"] == 0 and aa.stats(x)["materialize"] == 0


def test_empty_arrays_reduce_like_numpy_without_fetching():
    x, fetch = lazy(np.zeros((0, 4)), 2)
    assert x.sum() == 0.0
    np.testing.assert_array_equal(x.sum(axis=0), np.zeros(4))
    with pytest.raises(ValueError):
        x.max()
    assert x.max(initial=-1) == -1
    assert not x.any() and x.all()
    with pytest.warns(RuntimeWarning):
        assert np.isnan(x.mean())
    assert fetch.calls == []


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 8), min_size=1, max_size=3).map(tuple),
    data=st.data(),
)
def test_reductions_property(shape, data):
    chunks = tuple(data.draw(st.integers(1, n + 1)) for n in shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    func = data.draw(st.sampled_from(["sum", "min", "max", "mean", "var", "any", "count_nonzero"]))
    values = np.random.default_rng(len(shape)).integers(-3, 4, size=shape).astype(float)
    x, fetch = lazy(values, chunks)
    with aa.set_options(batch_chunks=data.draw(st.integers(1, 5))):
        got = getattr(np, func)(x, axis=axis)
    np.testing.assert_allclose(got, getattr(np, func)(values, axis=axis), rtol=1e-12, atol=1e-12)
    assert len(fetch.fetched) <= int(np.prod([-(-n // c) for n, c in zip(shape, chunks, strict=True)]))


class _GeneratedFetch:
    """Chunks computed from their coordinates; holds no data."""

    def __init__(self, shape, chunks):
        self.shape, self.chunks = shape, chunks

    def __call__(self, coords):
        out = []
        for c in coords:
            ext = [min(ch, n - i * ch) for i, ch, n in zip(c, self.chunks, self.shape, strict=True)]
            out.append(np.full(ext, float(c.sum() % 5)))
        return out


def test_reducing_an_array_twenty_times_the_cache_stays_within_budget_plus_one_batch():
    shape, chunks = (2048, 1024), (64, 128)  # 16 MiB in 256 chunks of 64 KiB
    budget = 2**20 * 16 // 20  # the array is 20x the cache budget
    batch = 4
    batch_bytes = batch * 64 * 128 * 8
    x = aa.altarr(shape, chunks, _GeneratedFetch(shape, chunks))
    with aa.set_options(cache_bytes=budget, batch_chunks=batch):
        x[0:128, 0:256]  # fill part of the cache first
        warm = aa.altarr((4, 4), 2, _GeneratedFetch((4, 4), (2, 2)))  # import every code path first
        warm.sum(), warm.mean(axis=0), warm.std(), (warm > 3).any(axis=1)
        tracemalloc.start()
        try:
            total = x.sum()
            means = x.mean(axis=0)
            sd = x.std()
            any_big = (x > 3).any(axis=1)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        with aa.set_options(max_materialize=budget), pytest.raises(MaterializeError):
            np.asarray(x)  # 16 MiB: more than a limit set to the cache budget
    grid = np.indices((32, 8)).sum(axis=0) % 5
    expected = np.repeat(np.repeat(grid, 64, axis=0), 128, axis=1).astype(float)
    assert total == expected.sum()
    np.testing.assert_allclose(means, expected.mean(axis=0))
    np.testing.assert_allclose(sd, expected.std())
    np.testing.assert_array_equal(any_big, (expected > 3).any(axis=1))
    assert peak <= budget + batch_bytes, (peak, budget + batch_bytes)
    assert aa.stats(x)["chunks_cached"] == 4


def _same_complex(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.real, want.real)
    np.testing.assert_array_equal(got.imag, want.imag)


CPLX = np.array(
    [
        [[1 + 0.5j, complex(np.inf, 1), -1j], [0.5, 1 + 0.5j, 2j]],
        [[1 + 0.5j, 1 + 0.5j, complex(np.nan, 1)], [complex(1, np.inf), -1 + 1j, 0.5 - 0.5j]],
        [[complex(np.inf, 1), 1 + 0.5j, 1 + 0.5j], [1j, 1 + 0.5j, complex(-np.inf, 0)]],
        [[2, 0.5, 1 + 1j], [complex(np.inf, 1), 0.5j, 1 + 0.5j]],
    ]
)


@pytest.mark.parametrize("func", ["prod", "nanprod"])
@pytest.mark.parametrize("axis", [None, 0, 1, 2, (0, 1), (0, 2), (1, 2), ()])
@pytest.mark.parametrize("chunks", [(1, 1, 1), (3, 2, 2), (2, 1, 3)])
def test_complex_products_with_inf_are_numpys_bit_for_bit(func, axis, chunks):
    """Complex multiplication with inf/NaN depends on the order: the result is NumPy's, which multiplies
    from ``1+0j`` (or ``initial``) one value at a time in C order, skipping ``where=False``."""
    fn = getattr(np, func)
    mask = np.array([[True, False, True], [True, True, False]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for dt in ("c8", "c16"):
            data = CPLX.astype(dt)
            x, _ = lazy(data, chunks)
            for kw in ({}, {"initial": 2 - 1j}, {"where": mask}, {"keepdims": True, "initial": -1}):
                with aa.set_options(max_materialize=0, batch_chunks=2):
                    got = fn(x, axis=axis, **kw)
                _same_complex(got, fn(data, axis=axis, **kw))
        real = CPLX.real.copy()
        x, _ = lazy(real, chunks)
        _same_complex(fn(x, axis=axis, dtype="c16"), fn(real, axis=axis, dtype="c16"))


def test_complex_nanprod_counts_a_nan_as_exactly_one_in_numpys_order():
    """nanprod's NumPy-order walk replaces a NaN by 1, not by any other real: after a NaN, 2 * (1e308 +
    1e308j) would overflow to inf+infj, and times inf+1j give nan+infj, where NumPy answers inf+infj."""
    data = np.array([np.nan, 1e308 + 1e308j, complex(np.inf, 1)])
    x, _ = lazy(data, (1,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.nanprod(data)
        assert want == complex(np.inf, np.inf)
        _same_complex(np.nanprod(x), want)


def test_complex64_products_are_recomputed_in_complex64():
    """The NumPy-order walk multiplies in the array's own precision: in complex64 (1e-25+1e-25j)**2
    underflows to 0 and times inf+1j gives nan+nanj, as NumPy's; in complex128 it would be nan+infj."""
    data = np.array([1e-25 + 1e-25j, 1e-25 + 1e-25j, complex(np.inf, 1)], dtype="c8")
    x, _ = lazy(data, (1,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.prod(data)
        assert np.isnan(want.real) and np.isnan(want.imag)
        _same_complex(np.prod(x), want)


def test_the_numpy_order_walk_of_a_complex_product_adds_no_warning_of_its_own():
    """Over every axis NumPy warns "invalid value encountered in reduce" for CPLX's products; the second
    walk that recomputes the non-finite elements multiplies under ``errstate`` and adds no "invalid
    value encountered in multiply" of its own."""
    for axis in (None, (0, 1, 2), (1, 2)):
        for func in (np.prod, np.nanprod):
            x, _ = lazy(CPLX, (3, 2, 2))
            with warnings.catch_warnings(record=True) as numpys:
                warnings.simplefilter("always")
                func(CPLX, axis=axis)
            with warnings.catch_warnings(record=True) as ours:
                warnings.simplefilter("always")
                func(x, axis=axis)
            assert {str(w.message) for w in ours} == {str(w.message) for w in numpys}, (axis, func)
    # a product that overflows before its inf factor: NumPy warns of the overflow "in reduce" only
    big = np.array([1e200 + 1e200j, 1e200 + 1e200j, complex(np.inf, 1)])
    x, _ = lazy(big, (3,))
    with warnings.catch_warnings(record=True) as numpys:
        warnings.simplefilter("always")
        np.prod(big)
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        np.prod(x)
    assert "overflow encountered in reduce" in {str(w.message) for w in numpys}
    assert {str(w.message) for w in ours} == {str(w.message) for w in numpys}


def test_complex_product_of_one_infinite_value_multiplies_it_into_one():
    for v in (complex(np.inf, 1), complex(1, np.inf), complex(np.inf, 0)):
        data = np.array([v, 1 + 0j, 1 + 0j])
        x, fetch = lazy(data, (1,))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            _same_complex(np.prod(x), np.prod(data))
            _same_complex(x.prod(), np.prod(data))
            _same_complex(np.multiply.reduce(x), np.multiply.reduce(data))


def test_complex_products_are_read_twice_only_when_not_finite():
    data = (np.arange(1, 25).reshape(4, 6) / 8).astype("c16")
    x, fetch = lazy(data, (2, 2))
    with aa.set_options(batch_chunks=4):
        _same_complex(np.prod(x, axis=1), np.prod(data, axis=1))
        assert len(fetch.calls) == 2 and len(fetch.fetched) == 6
        data[3, 5] = complex(np.inf, 1)
        y, fetch = lazy(data, (2, 2))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            _same_complex(np.prod(y, axis=1), np.prod(data, axis=1))
            _same_complex(np.nanprod(y, axis=0), np.nanprod(data, axis=0))
        assert len(fetch.calls) == 4 + 4 and len(fetch.fetched) == 6 * 4
    # a real product is never read twice, even with inf in it
    real = data.real.copy()
    z, fetch = lazy(real, (2, 2))
    with aa.set_options(batch_chunks=4):
        assert np.prod(z, axis=1).tolist() == np.prod(real, axis=1).tolist()
    assert len(fetch.calls) == 2


_NV = np._NoValue
_SWEEP_ARRAYS = {
    "i2": (np.arange(-5, 7, dtype="i2").reshape(3, 4), (2, 3)),
    "f8-nan": (
        np.array([[1.5, np.nan, -2.0, 4.0], [np.nan, np.nan, 0.5, 3.0], [2.0, -1.0, np.nan, 0.0]]),
        (2, 3),
    ),
    "bool": (
        np.array([[True, False, True, False], [False, False, False, False], [True, True, True, False]]),
        (1, 3),
    ),
    "c16": ((np.arange(12).reshape(3, 4) - 4) * (0.5 + 0.25j), (2, 2)),
    "i4-empty": (np.zeros((0, 4), dtype="i4"), (2, 3)),
    "f4-empty": (np.zeros((3, 0), dtype="f4"), (2, 3)),
    "f8-0d": (np.array(2.5), ()),
    "zeros": (np.zeros((3, 4), dtype="u1"), (2, 2)),
}
_SWEEP = {
    "sum": {"initial", "where"}, "prod": {"initial", "where"}, "min": {"initial", "where"},
    "max": {"initial", "where"}, "mean": {"where"}, "var": {"where", "ddof"}, "std": {"where", "ddof"},
    "any": {"where"}, "all": {"where"}, "nansum": {"initial", "where"}, "nanprod": {"initial", "where"},
    "nanmin": {"initial", "where"}, "nanmax": {"initial", "where"}, "nanmean": {"where"},
    "nanvar": {"where", "ddof"}, "nanstd": {"where", "ddof"}, "count_nonzero": set(),
    "argmin": set(), "argmax": set(),
}  # fmt: skip
_WARNINGS = ("Degrees of freedom", "Mean of empty slice", "All-NaN", "invalid value encountered in divide")


def _outcome(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = fn()
        except Exception as e:  # the exception type is compared
            res = e
    said = {m for m in _WARNINGS for w in caught if m in str(w.message) and m != _WARNINGS[-1]}
    return res, said


def _same_outcome(got, want, what):
    (g, gw), (w, ww) = got, want
    if isinstance(w, Exception):
        assert isinstance(g, type(w)), f"{what}: NumPy raised {w!r}, got {g!r}"
        return
    assert not isinstance(g, Exception), f"{what}: NumPy gave {w!r}, got {g!r}"
    assert gw == ww, f"{what}: NumPy warned {ww}, got {gw}"
    if isinstance(w, tuple):
        assert isinstance(g, tuple) and len(g) == len(w), what
        for a, b in zip(g, w, strict=True):
            _same_outcome((a, gw), (b, ww), what)
        return
    assert type(g) is type(w), f"{what}: NumPy gave a {type(w).__name__}, got a {type(g).__name__}"
    g, w = np.asarray(g), np.asarray(w)
    assert g.dtype == w.dtype and g.shape == w.shape, f"{what}: {g.dtype}{g.shape} != {w.dtype}{w.shape}"
    if w.dtype.kind in "fc":
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-12, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(g, w, err_msg=what)


@pytest.mark.parametrize("name", sorted(_SWEEP_ARRAYS))
def test_every_reduction_with_every_keyword_against_numpy(name):
    """Each streamed reduction, with axis / keepdims / where / initial / ddof, on an integer, a float with
    NaN (an all-NaN column), a boolean, a complex, two empty, a 0-d and an all-zero array: NumPy's
    result, dtype, kind (scalar or array), exception type and warnings."""
    data, chunks = _SWEEP_ARRAYS[name]
    x, _ = lazy(data, chunks)
    nd = data.ndim
    axes = [None] + ([0, -1, (0, 1)] if nd == 2 else [])
    masks = [True, np.array([True, False, True, True])[: data.shape[-1]] if nd else np.array(False)]
    if nd == 2:
        masks.append(np.array([[True], [False], [True]])[: data.shape[0]])
    for func, allowed in _SWEEP.items():
        if data.dtype.kind == "c" and func in ("nanmin", "nanmax"):
            continue
        fn = getattr(np, func)
        for axis in axes:
            if func in ("argmin", "argmax") and isinstance(axis, tuple):
                continue
            for keepdims in (False, True):
                for where in masks if "where" in allowed else [True]:
                    for initial in [_NV, 2] if "initial" in allowed else [_NV]:
                        for ddof in [0, 2] if "ddof" in allowed else [0]:
                            kw = {"axis": axis, "keepdims": keepdims}
                            if where is not True:
                                kw["where"] = where
                            if initial is not _NV:
                                kw["initial"] = initial
                            if ddof:
                                kw["ddof"] = ddof
                            want = _outcome(lambda fn=fn, kw=kw: fn(data, **kw))
                            with aa.set_options(max_materialize=0, batch_chunks=2):
                                got = _outcome(lambda fn=fn, kw=kw: fn(x, **kw))
                            _same_outcome(got, want, f"np.{func}({name}, **{kw})")
    # nonzero and its relatives: C order, int indices, NumPy's refusal of 0-d
    for f in (np.nonzero, np.flatnonzero, np.argwhere):
        want = _outcome(lambda f=f: f(data))
        with aa.set_options(max_materialize=0, batch_chunks=2):
            got = _outcome(lambda f=f: f(x))
        if f is np.nonzero or not isinstance(want[0], Exception):
            _same_outcome(got, want, f"{f.__name__}({name})")


_WHERE_MASK = np.array([[True, False, True, True], [False, False, True, False], [True, False, False, True]])


@pytest.mark.parametrize("name", ["i2", "f8-nan", "bool", "c16", "i4-empty", "f4-empty"])
def test_lazy_where_masks_reduce_like_the_same_mask_in_numpy(name):
    """``where=`` given as a lazy boolean array (an all-False column in it): on ``x``'s chunk grid (its
    chunks fetched beside ``x``'s), on other grids (a read of each batch's bounding box), of a shape that
    broadcasts (read whole), and ``x`` itself for a boolean ``x``: each reduction's result, dtype, kind,
    warnings and exception type are NumPy's for the same mask as a NumPy array."""
    data, chunks = _SWEEP_ARRAYS[name]
    x, _ = lazy(data, chunks)
    mask = _WHERE_MASK[: data.shape[0], : data.shape[1]]
    cases = [(mask, lazy(mask, chunks)[0]), (mask, lazy(mask, (1, 2))[0]), (mask, lazy(mask, (3, 1))[0])]
    # a row (or for no columns a column) that broadcasts to x's shape
    small = _WHERE_MASK[1, : data.shape[1]] if data.shape[1] else _WHERE_MASK[: data.shape[0], :1]
    cases.append((small, lazy(small, (3,) * small.ndim)[0]))
    if data.dtype == bool:
        cases.append((data, x))
    for func, allowed in _SWEEP.items():
        if "where" not in allowed or (data.dtype.kind == "c" and func in ("nanmin", "nanmax")):
            continue
        fn = getattr(np, func)
        for (want_mask, lazy_mask), axis, keepdims in itertools.product(cases, [None, 0, -1], (False, True)):
            for initial in [_NV, 2] if "initial" in allowed else [_NV]:
                kw = {"axis": axis, "keepdims": keepdims}
                if initial is not _NV:
                    kw["initial"] = initial
                want = _outcome(lambda fn=fn, kw=kw, w=want_mask: fn(data, where=w, **kw))
                # a mask of another shape is read whole; x never is
                read_whole = want_mask.size if want_mask.shape != data.shape else 0
                with aa.set_options(max_materialize=read_whole, batch_chunks=2):
                    got = _outcome(lambda fn=fn, kw=kw, w=lazy_mask: fn(x, where=w, **kw))
                _same_outcome(got, want, f"np.{func}({name}, where={lazy_mask.chunks}, **{kw})")


def test_a_lazy_where_mask_is_read_beside_each_batch_and_its_grid_chunks_are_not_cached():
    """A lazy mask on ``x``'s grid has its chunks fetched in the same batches as ``x``'s and cached
    nowhere; on another grid, each batch reads the mask's part under that batch's bounding box."""
    data = np.arange(24.0).reshape(4, 6)
    mask = (data % 4) != 1
    x, fx = lazy(data, (2, 2))  # 2 x 3 chunks: batches of 3 are its two chunk rows
    same, fs = lazy(mask, (2, 2))
    rows, fr = lazy(mask, (1, 6))  # one chunk per row of the array
    with aa.set_options(batch_chunks=3):
        assert np.sum(x, where=same) == data.sum(where=mask)
        assert [c.tolist() for c in fs.calls] == [c.tolist() for c in fx.calls]
        assert aa.stats(same)["chunks_cached"] == 0
        assert np.sum(x, where=rows) == data.sum(where=mask)
    assert [c.tolist() for c in fr.calls] == [[[0, 0], [1, 0]], [[2, 0], [3, 0]]]
    # batches of 2: the last one, chunks (1, 1) and (1, 2), has its bounding box start at (2, 2) and
    # chunk (1, 1) end before it does
    with aa.set_options(batch_chunks=2):
        for other in (rows, lazy(mask, (3, 4))[0]):
            np.testing.assert_array_equal(np.sum(x, axis=0, where=other), data.sum(axis=0, where=mask))


@pytest.mark.parametrize("func", ["prod", "nanprod"])
def test_complex_products_with_inf_under_a_lazy_where_mask_are_numpys_bit_for_bit(func):
    """The second, NumPy-order walk of a complex product reads a lazy ``where=`` mask beside the values,
    on the values' grid or another one."""
    fn = getattr(np, func)
    mask = np.broadcast_to(np.array([[True, False, True], [True, True, False]]), CPLX.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        x, _ = lazy(CPLX, (3, 2, 2))
        for mask_chunks in ((3, 2, 2), (1, 1, 2), (4, 1, 1)):
            where, _ = lazy(np.ascontiguousarray(mask), mask_chunks)
            for axis in (None, 0, 2, (0, 1)):
                with aa.set_options(max_materialize=0, batch_chunks=2):
                    got = fn(x, axis=axis, where=where)
                _same_complex(got, fn(CPLX, axis=axis, where=mask))


def test_nonzero_of_1d_and_0d_arrays_as_numpy():
    data = np.array([0, 3, 0, 0, 5, 1, 0], dtype="i2")
    x, fetch = lazy(data, (3,))
    with aa.set_options(max_materialize=0, batch_chunks=2):
        (got,) = np.nonzero(x)
        assert got.dtype == np.intp and got.tolist() == [1, 4, 5]
        assert np.flatnonzero(x).tolist() == [1, 4, 5] and np.argwhere(x).tolist() == [[1], [4], [5]]
        (none,) = np.nonzero(lazy(np.zeros(4), (3,))[0])
        assert none.dtype == np.intp and none.shape == (0,)
        zero_d, _ = lazy(np.array(3.0), ())
        with pytest.raises(ValueError) as raised:
            np.nonzero(zero_d)
        with pytest.raises(ValueError) as numpys:
            np.nonzero(np.array(3.0))
        assert str(raised.value) == str(numpys.value)
        assert np.flatnonzero(zero_d).tolist() == [0] and np.argwhere(zero_d).shape == (1, 0)


def test_out_arguments_and_refusals_of_streamed_reductions_are_numpys():
    data = np.array([[True, False, False], [False, False, True]])
    for shape in ((2, 3), (0, 3)):
        values = data[: shape[0]]
        x, _ = lazy(values, (1, 2))
        for fn in (np.any, np.all):
            out = np.zeros(3, dtype=bool) if fn is np.all else np.ones(3, dtype=bool)
            assert fn(x, axis=0, out=out) is out
            assert out.tolist() == fn(values, axis=0).tolist()
        fl = values.astype("f8")
        y, _ = lazy(fl, (1, 2))
        out = np.full(3, 7.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            assert np.mean(y, axis=0, out=out) is out
            np.testing.assert_array_equal(out, np.mean(fl, axis=0))
    x, _ = lazy(np.arange(6.0).reshape(2, 3), (1, 2))
    mask = np.array([True, False, True])
    for fn in (np.min, np.max):
        with pytest.raises(ValueError) as ours:
            fn(x, where=mask)
        with pytest.raises(ValueError) as numpys:
            fn(np.arange(6.0).reshape(2, 3), where=mask)
        assert str(ours.value) == str(numpys.value)


@pytest.mark.parametrize("fn", [np.argmin, np.argmax])
def test_argmin_argmax_stream_in_batches_with_out_and_thin_chunks(fn):
    """Arg-reductions walk the chunks batch by batch (never one whole read), fill ``out=`` in every path
    (empty, 0-d, streamed) and place the winners of chunks one element thick along a kept axis."""
    one = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0])
    two = np.arange(24.0).reshape(4, 6)[:, ::-1] % 7
    for data, chunks in ((one, (2,)), (two, (2, 2))):
        x, fetch = lazy(data, chunks)
        with aa.set_options(batch_chunks=2):
            assert fn(x) == fn(data)
        n_chunks = int(np.prod(x.nchunks))
        assert len(fetch.calls) == math.ceil(n_chunks / 2) and len(fetch.fetched) == n_chunks
    cube = (np.arange(24.0).reshape(4, 3, 2) * 5) % 7
    x, _ = lazy(cube, (2, 2, 1))
    for axis in (0, 1, 2):
        np.testing.assert_array_equal(fn(x, axis=axis), fn(cube, axis=axis))
    outs = [
        (np.zeros((0, 3)), (2, 2), {"axis": 1}, np.zeros(0, dtype=np.intp)),
        (np.array(7.0), (), {}, np.zeros((), dtype=np.intp)),
        (two, (2, 2), {"axis": 0}, np.full(6, -1, dtype=np.intp)),
        (two, (2, 2), {}, np.full((), -1, dtype=np.intp)),
    ]
    for data, chunks, kw, out in outs:
        x, _ = lazy(data, chunks)
        out[...] = -1
        assert fn(x, out=out, **kw) is out
        np.testing.assert_array_equal(out, fn(data, **kw))


@pytest.mark.parametrize("dtype", ["f8", "i2", "bool", "c16"])
def test_arg_reductions_break_ties_across_chunks_by_the_flat_index(dtype):
    """A later chunk of the walk can hold the earlier flat index (chunk (0, 1) has (0, 2), flat 2; chunk
    (0, 0) has (1, 0), flat 4): equal winners, and two NaNs, go to the smaller flat index, as NumPy's."""
    data = np.full((4, 4), 3, dtype=dtype) if dtype != "bool" else np.ones((4, 4), dtype=bool)
    low = 0 if dtype != "bool" else False
    data[1, 0] = data[0, 2] = low
    x, _ = lazy(data, (2, 2))
    assert np.argmin(x) == np.argmin(data) == 2
    high = data.copy()
    high[:] = low
    high[1, 0] = high[0, 2] = 5 if dtype != "bool" else True
    y, _ = lazy(high, (2, 2))
    assert np.argmax(y) == np.argmax(high) == 2
    if dtype in ("f8", "c16"):
        nan = data.copy()
        nan[1, 0] = nan[0, 2] = np.nan
        z, _ = lazy(nan, (2, 2))
        for fn in (np.argmin, np.argmax):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                assert fn(z) == fn(nan) == 2


def test_arg_reductions_cache_nothing_and_compare_complex_values_whole():
    data = np.array([[1 + 2j, 5 + 0j, 1 + 1j], [3 + 0j, 1 + 1.5j, 2 + 0j]])
    x, _ = lazy(data, (1, 1))
    with aa.set_options(batch_chunks=2):
        assert np.argmin(x) == np.argmin(data) == 2  # equal real parts: the imaginary part decides
        np.testing.assert_array_equal(np.argmin(x, axis=1), np.argmin(data, axis=1))
        np.testing.assert_array_equal(np.argmax(x, axis=0), np.argmax(data, axis=0))
    assert aa.stats(x)["chunks_cached"] == 0


def test_nan_reductions_of_integers_keep_numpys_dtype_and_out():
    """An integer array has no NaN: ``nansum`` is the plain sum, with the ``dtype`` (int8 wraps as
    NumPy's does) and the ``out`` given; an empty float one is NumPy's own answer, in the dtype asked."""
    i1 = np.array([[100, 100], [100, 27]], dtype="i1")
    x, _ = lazy(i1, (1, 2))
    for kw in ({"dtype": "i1"}, {"axis": 0, "dtype": "i1"}):
        got, want = np.nansum(x, **kw), np.nansum(i1, **kw)
        assert np.asarray(got).dtype == np.asarray(want).dtype == np.int8
        np.testing.assert_array_equal(got, want)
    out = np.zeros(2, dtype="i2")
    assert np.nansum(x, axis=0, out=out) is out
    np.testing.assert_array_equal(out, [200, 127])
    empty = np.zeros((0, 3), "f4")
    xe, _ = lazy(empty, (1, 3))
    for axis in (None, 0):
        assert (
            np.nansum(xe, axis=axis, dtype="f8").dtype
            == np.nansum(empty, axis=axis, dtype="f8").dtype
            == np.float64
        )
    floats = np.array([[1.0, np.nan], [2.0, 3.0]])
    xf, _ = lazy(floats, (1, 2))
    outf = np.zeros(2)
    assert np.nansum(xf, axis=0, out=outf) is outf
    np.testing.assert_array_equal(outf, [3.0, 3.0])
    out3 = np.ones(3, dtype="f8")
    assert np.nansum(xe, axis=0, out=out3) is out3
    np.testing.assert_array_equal(out3, [0.0, 0.0, 0.0])


def test_mean_and_var_compute_in_the_dtype_asked():
    """``dtype=`` is the type NumPy computes in: a float16 mean of 100 values of 1000.0 overflows to inf
    (the sum 1e5 exceeds float16's range), in NumPy and here."""
    data = np.full(100, 1000.0)
    x, _ = lazy(data, (10,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.mean(data, dtype="f2")
        assert want == np.inf and want.dtype == np.float16
        got = np.mean(x, dtype="f2")
    assert got == want and got.dtype == want.dtype


def test_nanmin_and_nanmax_of_an_all_nan_slice_warn_numpys_message_and_fill_out():
    data = np.array([[np.nan, 1.0], [np.nan, 2.0]])
    x, _ = lazy(data, (1, 1))
    for func in (np.nanmin, np.nanmax):
        with warnings.catch_warnings(record=True) as numpys:
            warnings.simplefilter("always")
            want = func(data, axis=0)
        with warnings.catch_warnings(record=True) as ours:
            warnings.simplefilter("always")
            out = np.zeros(2)
            got = func(x, axis=0, out=out)
        assert got is out
        np.testing.assert_array_equal(out, want)
        assert [(w.category, str(w.message)) for w in ours] == [(w.category, str(w.message)) for w in numpys]
        assert str(numpys[0].message) == "All-NaN slice encountered"


# --- mean: survivors of the mutation run (2026-12-02)


def _answer_and_warnings(call):
    """The value of ``call()`` and the messages of the RuntimeWarnings it gave, in order."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        value = call()
    return value, [str(w.message) for w in got if issubclass(w.category, RuntimeWarning)]


def _same_mean(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # NaN equals NaN here, every other value bit for bit


@pytest.mark.parametrize("func", [np.mean, np.nanmean])
@pytest.mark.parametrize(
    "kwargs", [{}, {"axis": 0}, {"axis": 1}, {"dtype": "f4"}, {"axis": 0, "dtype": "f4", "keepdims": True}]
)
def test_mean_and_nanmean_of_an_empty_array_are_numpys_with_its_warnings(func, kwargs):
    """An empty array is answered by NumPy's own function: mean warns "Mean of empty slice" and
    "invalid value", nanmean only the first; ``dtype=`` makes a float32 NaN."""
    data = np.empty((0, 3))
    x, _ = lazy(data, (2, 2))
    got, got_warnings = _answer_and_warnings(lambda: func(x, **kwargs))
    want, want_warnings = _answer_and_warnings(lambda: func(data, **kwargs))
    _same_mean(got, want)
    assert got_warnings == want_warnings


def test_mean_with_dtype_computes_and_answers_in_that_dtype():
    """``dtype="f4"`` on float64 or integer data: a float32 result, summed in float32 (2**24 + 1 is
    2**24 there, so the mean of [2**24, 1, 1, 1] is exactly 2**22, not 2**22 + 0.75)."""
    rounding = np.array([2.0**24, 1.0, 1.0, 1.0])
    x, _ = lazy(rounding, (4,))
    _same_mean(np.mean(x, dtype="f4"), np.mean(rounding, dtype="f4"))
    assert np.mean(x, dtype="f4") == np.float32(2.0**22)
    for data in (positions((6, 5)) % 7, (positions((6, 5)) % 7).astype("int16")):
        x, _ = lazy(data, (4, 2))
        for kwargs in ({}, {"axis": 0}, {"axis": 1, "keepdims": True}, {"where": data > 2}):
            _same_mean(np.mean(x, dtype="f4", **kwargs), np.mean(data, dtype="f4", **kwargs))
            _same_mean(x.mean(dtype="f4", **kwargs), data.mean(dtype="f4", **kwargs))
        out = np.zeros(5, dtype="f4")
        assert np.mean(x, axis=0, dtype="f4", out=out) is out
        _same_mean(out, np.mean(data, axis=0, dtype="f4"))


def test_integer_mean_sums_in_float64_so_large_values_do_not_wrap():
    """NumPy sums integers for ``mean`` in float64: four values of 2**62 in one chunk sum to 2**64,
    which an int64 sum would wrap to 0; also under ``where=`` and in ``nanmean`` (no NaN in integers)."""
    data = np.full((4, 3), 2**62, dtype=np.int64)
    data[0, 0] = 3
    x, _ = lazy(data, (4, 2))
    mask = np.ones((4, 3), bool)
    mask[1, 1] = False
    for func in (np.mean, np.nanmean):
        for kwargs in ({}, {"axis": 0}, {"where": mask}, {"axis": 0, "where": mask}):
            want = func(data, **kwargs)
            _same_mean(func(x, **kwargs), want)
    assert np.mean(x, axis=0)[1] == 2.0**62


def test_mean_warnings_of_slices_with_no_element_are_numpys():
    """A slice left empty by ``where=`` or (nanmean) by NaNs gives NaN and NumPy's warnings: nanmean of
    floats "Mean of empty slice" only; mean, and nanmean of integers, also NumPy's "invalid value
    encountered in (scalar) divide" of 0/0."""
    floats = positions((4, 3))
    floats[:, 1] = np.nan
    ints = positions((4, 3), "int32")
    empty_column = np.ones((4, 3), bool)
    empty_column[:, 2] = False
    nothing = np.zeros((4, 3), bool)
    calls = [
        (np.nanmean, floats, {"axis": 0}),
        (np.nanmean, np.full((4, 3), np.nan), {}),
        (np.nanmean, floats, {"axis": 0, "where": empty_column}),
        (np.mean, floats, {"axis": 0, "where": empty_column}),
        (np.mean, floats, {"where": nothing}),
        (np.mean, ints, {"axis": 0, "where": empty_column}),
        (np.mean, ints, {"where": nothing}),
        (np.nanmean, ints, {"axis": 0, "where": empty_column}),
        (np.nanmean, ints, {"where": nothing}),
    ]
    for func, data, kwargs in calls:
        x, _ = lazy(data, (3, 2))
        got, got_warnings = _answer_and_warnings(lambda: func(x, **kwargs))  # noqa: B023
        want, want_warnings = _answer_and_warnings(lambda: func(data, **kwargs))  # noqa: B023
        _same_mean(got, want)
        assert got_warnings == want_warnings, (func.__name__, kwargs)
        assert "Mean of empty slice" in got_warnings


def test_var_and_std_warn_numpys_messages_when_the_degrees_of_freedom_run_out():
    """NumPy's var/std: "Degrees of freedom <= 0 for slice" (no period; nanvar's has one) and then the
    division's own warnings ("divide by zero", or "invalid value" for 0/0, "in scalar divide" for the
    whole array), every message of NumPy's and no other."""
    data = np.arange(6.0).reshape(2, 3)
    none = np.zeros((2, 3), bool)
    x, _ = lazy(data, (1, 2))
    cases = ({"ddof": 6}, {"axis": 0, "ddof": 2}, {"axis": 0, "where": none}, {"where": none})
    for kw in cases:
        for func in (np.var, np.std, np.nanvar, np.nanstd):
            with warnings.catch_warnings(record=True) as numpys:
                warnings.simplefilter("always")
                want = func(data, **kw)
            with warnings.catch_warnings(record=True) as ours:
                warnings.simplefilter("always")
                got = func(x, **kw)
            np.testing.assert_array_equal(got, want)
            assert {str(w.message) for w in ours} == {str(w.message) for w in numpys}, (func, kw)
    with np.errstate(divide="raise"), warnings.catch_warnings():  # the caller's errstate rules, as in NumPy
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(FloatingPointError):
            np.var(x, ddof=6)


def test_ddof_and_correction_together_are_refused_with_numpys_message():
    data = np.arange(6.0)
    x, fetch = lazy(data, (2,))
    for func in (np.var, np.std, np.nanvar, np.nanstd):
        with pytest.raises(ValueError) as numpys:
            func(data, ddof=1, correction=1)
        with pytest.raises(ValueError) as ours:
            func(x, ddof=1, correction=1)
        assert str(ours.value) == str(numpys.value) == "ddof and correction can't be provided simultaneously."
    assert fetch.calls == []


# --- var/std: survivors of the mutation run (2026-12-02)


def test_var_and_std_refuse_mean_with_a_message_saying_it_is_computed_while_streaming():
    from altarr.errors import UnsupportedError

    data = np.arange(6.0).reshape(2, 3)
    x, _ = lazy(data, (1, 2))
    message = "^lazy var/std do not support mean=; it is computed while streaming$"
    with pytest.raises(UnsupportedError, match=message):
        np.var(x, mean=np.mean(data, keepdims=True))
    with pytest.raises(UnsupportedError, match=message):
        x.std(mean=np.mean(data, keepdims=True))


def test_var_and_std_with_dtype_answer_in_that_dtype_and_compute_in_it():
    narrow, _ = lazy(np.arange(6.0).reshape(2, 3), (1, 2))
    for func in (np.var, np.std, np.nanvar, np.nanstd):
        got = func(narrow, dtype=np.float32)
        assert got.dtype == np.float32 and got == func(np.arange(6.0).reshape(2, 3), dtype=np.float32)
    # float32 data around 1000 loses digits of the variance when computed in float32, not in float64
    data = (np.random.default_rng(3).normal(size=1000) + 1000).astype(np.float32)
    x, _ = lazy(data, (100,))
    for func in (np.var, np.std):
        got = func(x, dtype=np.float64)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, func(data, dtype=np.float64), rtol=1e-12)


def test_var_of_slices_of_one_element_reads_them():
    """One element per slice is not "nothing to read": inf and nan in it give NumPy's nan."""
    data = np.array([[1.0, np.inf, np.nan, -np.inf]])
    for func in (np.var, np.std, np.nanvar):
        x, fetch = lazy(data, (1, 2))
        got, got_warnings = _answer_and_warnings(lambda: func(x, axis=0))  # noqa: B023
        want, want_warnings = _answer_and_warnings(lambda: func(data, axis=0))  # noqa: B023
        np.testing.assert_array_equal(got, want)
        assert set(got_warnings) == set(want_warnings)  # each chunk's inf - inf warns once
        assert sorted(fetch.fetched) == [(0, 0), (0, 1)]


def test_var_of_an_empty_array_keeps_out_dtype_and_ddof_as_numpy():
    data = np.zeros((0, 3))
    x, _ = lazy(data, (1, 2))
    out = np.full(3, 7.0)
    got, got_warnings = _answer_and_warnings(lambda: np.var(x, axis=0, out=out))
    want, want_warnings = _answer_and_warnings(lambda: np.var(data, axis=0))
    assert got is out and got_warnings == want_warnings
    np.testing.assert_array_equal(out, want)
    for func in (np.var, np.std, np.nanvar, np.nanstd):
        got = func(x, axis=0, dtype=np.float32)
        assert got.dtype == np.float32 == func(data, axis=0, dtype=np.float32).dtype
    # ddof=-1: NumPy divides the empty sum 0 by 1, so 0, not nan
    for kw in ({"ddof": -1}, {"axis": 0, "ddof": -1}):
        got, got_warnings = _answer_and_warnings(lambda: np.var(x, **kw))  # noqa: B023
        want, want_warnings = _answer_and_warnings(lambda: np.var(data, **kw))  # noqa: B023
        np.testing.assert_array_equal(got, want)
        assert not np.isnan(want).any() and got_warnings == want_warnings


def test_var_of_real_data_in_a_complex_dtype_squares_the_deviations_as_numpy():
    """NumPy squares real data's deviations (d * d) even in a complex dtype, so an inf gives nan+nanj."""
    for data in (np.array([1.0, np.inf, 2.0, 3.0]), np.array([1.0, 2.0, np.nan, 4.0]), np.arange(5.0)):
        x, _ = lazy(data, (2,))
        for func in (np.var, np.std, np.nanvar, np.nanstd):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                got, want = func(x, dtype=np.complex128), func(data, dtype=np.complex128)
            _same_complex(got, want)
            assert np.signbit(got.imag) == np.signbit(want.imag), (func.__name__, data)


def test_nanvar_merging_past_all_nan_chunks_keeps_the_mean_of_the_counted_values():
    # a chunk of NaNs merged first must not pull the running mean: a constant gives exactly 0
    x, _ = lazy(np.array([np.nan, np.nan, 0.1, 0.1, 0.1, 0.1]), (2,))
    assert np.nanvar(x) == 0.0 == np.nanvar(np.array([0.1] * 4))
    data = np.array([np.nan, 5.0, 7.0, 9.0, np.nan, 2.0])
    x, _ = lazy(data, (1,))
    for func in (np.nanvar, np.nanstd):
        np.testing.assert_allclose(func(x), func(data), rtol=1e-14)


def test_nanvar_warns_only_numpys_messages_for_all_nan_slices_and_infinite_ddof():
    data = np.array([[np.nan, 1.0], [np.nan, 2.0], [np.nan, 4.0], [np.nan, 8.0]])
    x, _ = lazy(data, (1, 1))
    for func in (np.nanvar, np.nanstd):
        got, got_warnings = _answer_and_warnings(lambda: func(x, axis=0))  # noqa: B023
        want, want_warnings = _answer_and_warnings(lambda: func(data, axis=0))  # noqa: B023
        np.testing.assert_allclose(got, want, rtol=1e-14)
        assert got_warnings == want_warnings == ["Degrees of freedom <= 0 for slice."]
    # ddof=-inf: an overflowing sum of squares over an infinite dof is nan without an "invalid value"
    data = np.array([1e200, -1e200, 1.0, np.nan])
    x, _ = lazy(data, (2,))
    got, got_warnings = _answer_and_warnings(lambda: np.nanvar(x, ddof=-np.inf))
    want, want_warnings = _answer_and_warnings(lambda: np.nanvar(data, ddof=-np.inf))
    np.testing.assert_array_equal(got, want)
    assert got_warnings == want_warnings == ["overflow encountered in multiply"]


def test_var_and_std_fill_out_and_nanvar_divides_by_a_fractional_degree_of_freedom():
    data = DATA3_NAN[:4, :5, :3]
    x, _ = lazy(data, (2, 2, 2))
    for func in (np.var, np.std, np.nanvar, np.nanstd):
        for keepdims in (False, True):
            want = func(data, axis=(0, 2), keepdims=keepdims)
            out = np.full(want.shape, 7.0)
            got = func(x, axis=(0, 2), keepdims=keepdims, out=out)
            assert got is out
            np.testing.assert_allclose(out, want, rtol=1e-12)
    # ddof=1.5 leaves 0.5 degree of freedom for two values: nanvar divides by 0.5, as NumPy
    data = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 2.5, 3.0, 4.0]])
    x, _ = lazy(data, (1, 2))
    for func in (np.nanvar, np.nanstd):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            np.testing.assert_allclose(func(x, axis=1, ddof=1.5), func(data, axis=1, ddof=1.5), rtol=1e-14)


def test_a_where_mask_that_is_not_boolean_numpy_or_lazy_is_refused_with_numpys_error_before_any_fetch():
    data = np.arange(12.0).reshape(3, 4)
    x, fetch = lazy(data, (2, 3))
    for mask in (np.ones((3, 4), dtype="i1"), np.ones(4, dtype="f4")):
        with pytest.raises(TypeError) as numpys:
            np.sum(data, where=mask)
        for where in (mask, lazy(mask, (2,) * mask.ndim)[0]):
            for func in (np.sum, np.mean, np.var, np.any, np.nanmax):
                with pytest.raises(TypeError) as ours:
                    func(x, where=where)
                assert str(ours.value) == str(numpys.value), (func, where)
    assert fetch.calls == []
    # anything but an array a ufunc's reduce converts to bool by value: lists of 0/1 or floats, NumPy
    # scalars, None (np.mean/np.var count such a mask by summing it, a NumPy quirk not followed here)
    for mask in ([True, False, True, False], [1, 0, 2, 1], [0.0, 1.0, 0.5, 0.0], np.int64(1), 0.5, None):
        for func in (np.sum, np.max, np.prod):
            kw = {"initial": -1.0} if func is np.max else {}
            np.testing.assert_array_equal(func(x, where=mask, **kw), func(data, where=mask, **kw))


# --- ufunc_reduce/stream: survivors of the mutation run (2026-12-02)
def test_a_reduction_of_an_empty_array_computes_in_the_dtype_asked_and_fills_out():
    data = np.empty((0, 3), np.int8)
    x, fetch = lazy(data, (2, 2))
    for kw in ({"axis": 0}, {"axis": None}, {"axis": 1}):
        got = np.sum(x, dtype=np.float32, **kw)
        want = np.sum(data, dtype=np.float32, **kw)
        assert np.asarray(got).dtype == np.asarray(want).dtype == np.float32
        np.testing.assert_array_equal(got, want)
    out = np.full(3, 7.0)
    assert np.sum(x, axis=0, out=out) is out
    np.testing.assert_array_equal(out, np.zeros(3))
    assert fetch.calls == []


def test_a_reduction_along_an_axis_fills_out_and_returns_it():
    data = positions((4, 3))
    x, _ = lazy(data, (3, 2))
    for func in (np.sum, np.prod, np.min, np.max):
        out = np.full(3, -1.0)
        assert func(x, axis=0, out=out) is out, func.__name__
        np.testing.assert_array_equal(out, func(data, axis=0))


def test_min_and_max_with_a_where_mask_but_no_initial_are_refused_before_reading_a_chunk():
    data = positions((4, 3))
    x, fetch = lazy(data, (2, 2))
    mask = np.ones((4, 3), bool)
    for func in (np.min, np.max):
        with pytest.raises(ValueError) as numpys:
            func(data, axis=0, where=mask)
        with pytest.raises(ValueError) as ours:
            func(x, axis=0, where=mask)
        assert str(ours.value) == str(numpys.value)
    assert fetch.calls == []
    assert aa.stats(x)["reduce"] == 0


def test_a_masked_sum_computes_in_the_dtype_asked():
    mask = np.ones((4, 3), bool)
    mask[1, :2] = False
    cases = [
        (positions((4, 3)) / 3, np.float32),
        ((positions((4, 3), "int64") * 50 % 127).astype(np.int8), np.int8),  # wraps in int8 as NumPy's
    ]
    for data, dtype in cases:
        x, _ = lazy(data, (3, 2))
        for axis in (None, 0, 1):
            for kw in ({}, {"initial": 3}):
                got = np.sum(x, axis=axis, dtype=dtype, where=mask, **kw)
                want = np.sum(data, axis=axis, dtype=dtype, where=mask, **kw)
                assert np.asarray(got).dtype == np.asarray(want).dtype == dtype, (axis, kw)
                np.testing.assert_allclose(got, want, rtol=1e-6)


def test_initial_is_converted_to_the_dtype_asked_not_to_the_datas():
    data = positions((4, 3), "int32")
    x, _ = lazy(data, (3, 2))
    for axis in (None, 0):
        got = np.sum(x, axis=axis, dtype=np.float64, initial=0.5)
        want = np.sum(data, axis=axis, dtype=np.float64, initial=0.5)
        assert np.asarray(got).dtype == np.float64
        np.testing.assert_array_equal(got, want)
    assert np.sum(x, dtype=np.float64, initial=0.5) == 66.5


def test_logical_reductions_with_dtype_object_combine_the_chunks_as_python_objects():
    """NumPy's object loop of ``logical_and``/``logical_or`` keeps Python's ``and``/``or`` operands (the
    last truthy value, not ``True``); the chunks' partials are combined in the same loop."""
    data = np.array([1, 2, 3, 4])
    x, _ = lazy(data, (2,))
    for ufunc in (np.logical_and, np.logical_or):
        got = ufunc.reduce(x, axis=None, dtype=object)
        want = ufunc.reduce(data, axis=None, dtype=object)
        assert got == want and want in (1, 4) and type(got) is type(want) is int, ufunc.__name__


def test_sums_and_products_with_dtype_object_are_pythons_exact_integers_as_numpys():
    """``dtype=object`` is NumPy's way to exact integer arithmetic: over every axis the answer is a Python
    int beyond int64's range (it overflowed, or raised, when a chunk's partial went through int64), and
    an object product is not recomputed as a complex one (``isfinite`` refuses object arrays)."""
    data = np.full((4, 3), 2**40)
    x, _ = lazy(data, (2, 2))
    calls = [
        (np.sum, {}),
        (np.sum, {"initial": 2**70}),
        (np.sum, {"axis": 1}),
        (np.prod, {}),
        (np.prod, {"axis": 0}),
        (np.prod, {"initial": 3, "where": data > 0}),
    ]
    for func, kw in calls:
        got = func(x, dtype=object, **kw)
        want = func(data, dtype=object, **kw)
        assert type(got) is type(want), (func.__name__, kw)
        assert type(want) is int or got.dtype == want.dtype == object, (func.__name__, kw)
        assert np.array_equal(got, want), (func.__name__, kw)
    assert np.sum(x, dtype=object) == 12 * 2**40 and np.prod(x, dtype=object) == 2 ** (40 * 12)


def test_a_complex_product_that_overflows_is_recomputed_from_one_as_numpys():
    """(1e300+1j) * (1e10+0j) overflows its real part only: NumPy's product starts from the first value
    (as from 1+0j), giving inf+1e10j; the finite imaginary part shows the start."""
    data = np.array([1e300 + 1j, 1e10 + 0j])
    x, _ = lazy(data, (1,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.prod(data)
        got = np.prod(x)
        got_initial = np.prod(x, initial=2 + 0j)
        want_initial = np.prod(data, initial=2 + 0j)
    assert want == complex(np.inf, 1e10)
    _same_complex(got, want)
    _same_complex(got_initial, want_initial)


def test_a_reduction_fills_an_out_tuple_and_answers_an_array_of_its_own():
    """``np.add.reduce(x, out=(o,))`` (the ufunc form takes a tuple) fills and returns ``o``; ``np.sum``
    and the others refuse a tuple as NumPy does; without ``out`` the answer owns its data, as NumPy's
    does (not a view of a scratch array)."""
    data = np.arange(12.0).reshape(3, 4)
    x, _ = lazy(data, (2, 3))
    out = np.zeros(4)
    assert np.add.reduce(x, axis=0, out=(out,)) is out
    np.testing.assert_array_equal(out, np.add.reduce(data, axis=0))
    for func in (np.sum, np.max, np.mean, np.var, np.nansum, np.any):
        got = func(x, axis=0)
        assert got.flags.owndata and got.base is None, func
        np.testing.assert_allclose(got, func(data, axis=0))
        with pytest.raises(TypeError) as numpys:  # the functions and methods refuse the tuple form
            func(data, axis=0, out=(np.zeros(4, got.dtype),))
        with pytest.raises(TypeError) as ours:
            func(x, axis=0, out=(np.zeros(4, got.dtype),))
        assert str(ours.value) == str(numpys.value), func
