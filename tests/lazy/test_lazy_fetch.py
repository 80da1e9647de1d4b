"""The fetch contract: batched int64 coordinates in, one array-like per row out; broken contracts give
FetchError naming the chunk; exceptions inside fetch propagate unchanged; async fetch works."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import altarr as aa
from _lazy_support import ArrayFetch, lazy, positions, region
from altarr.errors import FetchError, GridError


def _fetch_from(data, chunks, mutate):
    base = ArrayFetch(data, chunks)

    def fetch(coords):
        return mutate(coords, base(coords))

    return fetch


def test_wrong_count_names_the_chunk_and_caches_nothing():
    data = positions((10, 7))
    fetch = _fetch_from(data, (4, 3), lambda c, vals: vals[:-1])
    x = aa.altarr(data.shape, (4, 3), fetch)
    with pytest.raises(FetchError, match="returned 1 values for 2 requested chunks") as info:
        x[0, 2:4]
    assert info.value.chunk == (0, 1)
    assert aa.stats(x)["chunks_cached"] == 0


def test_wrong_length_and_wrong_shape():
    data = positions((10, 7))
    short = aa.altarr(data.shape, (4, 3), _fetch_from(data, (4, 3), lambda c, v: [a.ravel()[:-1] for a in v]))
    with pytest.raises(FetchError, match=r"clipped shape \(2, 1\)") as info:
        short[9, 6]
    assert info.value.chunk == (2, 2)
    transposed = aa.altarr(data.shape, (4, 3), _fetch_from(data, (4, 3), lambda c, v: [a.T for a in v]))
    with pytest.raises(FetchError, match=r"shape \(3, 4\)"):
        transposed[0, 0]


def test_values_that_cannot_be_coerced():
    x = aa.altarr((4,), 2, lambda c: [np.array(["a", "b"])] * len(c))
    with pytest.raises(FetchError, match="cannot be converted to float64") as info:
        x.sum()
    assert isinstance(info.value.__cause__, ValueError)
    y = aa.altarr((4,), 2, lambda c: [None] * len(c))
    with pytest.raises(FetchError):
        y[0]
    z = aa.altarr((4,), 2, lambda c: 42)
    with pytest.raises(FetchError, match="expected a sequence"):
        z[0]


def test_other_dtypes_are_coerced_like_astype():
    x = aa.altarr((5,), 2, lambda c: [[1, 2][: 2 if i < 2 else 1] for (i,) in c], dtype="float32")
    got = x[:]
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [1, 2, 1, 2, 1])
    b = aa.altarr((3,), 3, lambda c: [np.array([0.0, 2.0, -1.0])], dtype=bool)
    np.testing.assert_array_equal(b[:], [False, True, True])


def test_generator_results_are_accepted():
    data = positions((6,))
    x = aa.altarr((6,), 4, lambda c: (data[region(r, (4,), (6,))] for r in c))
    np.testing.assert_array_equal(x[:], data)


class Boom(Exception):
    pass


def test_exception_inside_fetch_propagates_unchanged_from_the_operation():
    err = Boom("backend down")

    def fetch(coords):
        raise err

    x = aa.altarr((10, 7), (4, 3), fetch)
    for op in (lambda: x[0], lambda: x.sum(), lambda: x.vindex[[1], [2]], lambda: np.isnan(x).any()):
        with pytest.raises(Boom) as info:
            op()
        assert info.value is err
    assert any("altarr" in n and "(0, 0)" in n for n in getattr(err, "__notes__", []))


def test_a_failed_fetch_leaves_nothing_cached_and_a_retry_works():
    data = positions((8,))
    good = ArrayFetch(data, (4,))
    state = {"fail": True}

    def flaky(coords):
        if state["fail"]:
            state["fail"] = False
            raise OSError("transient")
        return good(coords)

    x = aa.altarr((8,), 4, flaky)
    with pytest.raises(OSError):
        x[:]
    np.testing.assert_array_equal(x[:], data)
    assert aa.stats(x)["fetch_calls"] == 2 and aa.stats(x)["chunks_fetched"] == 2


def test_async_fetch_without_and_inside_a_running_loop():
    data = positions((9, 4))
    sync = ArrayFetch(data, (4, 3))

    async def afetch(coords):
        await asyncio.sleep(0)
        return sync(coords)

    x = aa.altarr(data.shape, (4, 3), afetch)
    np.testing.assert_array_equal(x[1:7, ::2], data[1:7, ::2])
    assert float(x.sum()) == data.sum()

    async def inside_loop():
        y = aa.altarr(data.shape, (4, 3), afetch)
        return y[...], float(np.mean(y))

    got, mean = asyncio.run(inside_loop())
    np.testing.assert_array_equal(got, data)
    assert mean == data.mean()


def test_async_exception_propagates():
    async def afetch(coords):
        raise Boom("async failure")

    with pytest.raises(Boom, match="async failure"):
        aa.altarr((3,), 1, afetch)[0]


@pytest.mark.parametrize(
    "dtype", ["bool", "int8", "uint16", "int32", "int64", "float16", "float32", "complex64"]
)
def test_every_numeric_dtype(dtype):
    data = (positions((5, 6)) % 7).astype(dtype)
    x, _ = lazy(data, (2, 4))
    assert x.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(x[::2, [5, 0]], data[::2, [5, 0]])
    assert x[1:3].dtype == np.dtype(dtype)


def test_constructor_validation():
    f = ArrayFetch(positions((4, 4)), (2, 2))
    assert aa.altarr((4, 4), 2, f).chunks == (2, 2)
    assert aa.altarr(5, [2], f).shape == (5,)
    with pytest.raises(GridError):
        aa.altarr((4, 4), (2, 2, 2), f)
    with pytest.raises(GridError):
        aa.altarr((4, 4), 0, f)
    with pytest.raises(GridError):
        aa.altarr((-1, 4), 2, f)
    with pytest.raises(TypeError):
        aa.altarr((4, 4), 2, f, dtype="U3")
    with pytest.raises(TypeError):
        aa.altarr((4, 4), 2, "not callable")
    with pytest.raises(ValueError):
        aa.altarr((4, 4), 2, f, dims=("a",))
    with pytest.raises(ValueError):
        aa.altarr((4, 4), 2, f, dims=("a", "b"), coords={"a": [1, 2, 3]})
    x = aa.altarr((4, 4), 2, f, dims=("a", "b"), coords={"a": [1, 2, 3, 4]})
    assert x.dims == ("a", "b") and list(x.coords["a"]) == [1, 2, 3, 4]


def test_fetch_gets_int64_rows_in_one_call():
    data = positions((10, 7))
    x, fetch = lazy(data, (4, 3))
    x[[0, 9], [0, 6]]
    assert len(fetch.calls) == 1
    call = fetch.calls[0]
    assert call.dtype == np.int64 and call.shape == (2, 2)
    assert sorted(map(tuple, call.tolist())) == [(0, 0), (2, 2)]
