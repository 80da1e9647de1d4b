"""Selections bigger than the cache budget stream in batches of at least ``batch_chunks`` chunks (as many
as fit the budget when that is more), never one chunk per call, keep nothing and equal NumPy; the
per-chunk placement (``np.ix_``-style gathers) equals NumPy for every mix of arrays and slices."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

import altarr as aa
from _lazy_support import lazy, outer_reference, positions, vector_reference

CHUNK_BYTES = 2 * 2 * 8  # the 2x2 float64 chunks used below


@pytest.mark.parametrize("budget", [0, CHUNK_BYTES])
@pytest.mark.parametrize("batch", [1, 7, 64, 200])
def test_over_budget_fetches_ceil_n_over_batch_chunks_calls(batch, budget):
    hot, _ = lazy(positions((2, 2)), 2)
    data = positions((24, 20))  # 12 x 10 = 120 chunks of 2x2
    x, fetch = lazy(data, 2)
    with aa.set_options(cache_bytes=budget, batch_chunks=batch):
        hot[...]  # with a one-chunk budget: cached, and the streamed read below must leave it alone
        np.testing.assert_array_equal(x[...], data)
        s = aa.stats(x)
        assert s["fetch_calls"] == len(fetch.calls) == math.ceil(120 / batch)
        assert [len(c) for c in fetch.calls[:-1]] == [batch] * (len(fetch.calls) - 1)
        assert sorted(fetch.fetched) == sorted(set(fetch.fetched)) and len(fetch.fetched) == 120
        assert s["chunks_cached"] == 0 and s["cache_bytes"] == 0
        assert aa.stats(hot)["chunks_cached"] == (1 if budget else 0) and aa.stats(hot)["evictions"] == 0


@pytest.mark.parametrize(
    ("budget_chunks", "batch", "per_call"),
    [
        (10, 4, 10),  # the budget holds more than batch_chunks: as many as fit
        (3, 8, 8),  # batch_chunks is more than the budget holds: batch_chunks anyway, not one at a time
        (0, 8, 8),
    ],
)
def test_over_budget_batches_take_the_larger_of_budget_and_batch_chunks(budget_chunks, batch, per_call):
    data = positions((24, 20))
    x, fetch = lazy(data, 2)
    with aa.set_options(cache_bytes=budget_chunks * CHUNK_BYTES, batch_chunks=batch):
        np.testing.assert_array_equal(x[1:23, 3:19], data[1:23, 3:19])  # 12 x 9 = 108 chunks
    sizes = [len(c) for c in fetch.calls]
    assert sizes == [per_call] * (108 // per_call) + ([108 % per_call] if 108 % per_call else [])
    assert len(sizes) == math.ceil(108 / per_call)
    assert aa.stats(x)["chunks_cached"] == 0


def test_cached_chunks_of_an_over_budget_selection_are_used_not_refetched():
    data = positions((24, 20))
    x, fetch = lazy(data, 2)
    with aa.set_options(cache_bytes=10 * CHUNK_BYTES, batch_chunks=4):
        x[0:2, :]  # 10 chunks: fit, cached
        assert aa.stats(x)["chunks_cached"] == 10
        fetch.calls.clear()
        np.testing.assert_array_equal(x[...], data)
        s = aa.stats(x)
    # 110 missing chunks, 10 per batch (as many as fit the budget); the cached 10 are hits
    assert len(fetch.calls) == 11 and all(len(c) == 10 for c in fetch.calls)
    assert not {(0, j) for j in range(10)} & set(fetch.fetched)
    assert s["cache_hits"] == 10 and s["chunks_cached"] == 10 and s["evictions"] == 0


def test_every_indexing_form_over_budget_equals_numpy():
    rng = np.random.default_rng(7)
    data = positions((13, 11, 9))
    rows = rng.integers(-13, 13, size=17)  # unsorted, negative, repeated
    cols = np.sort(rng.choice(11, size=6, replace=False))
    cases = [
        ("numpy", (slice(None, None, -2), slice(1, 10), 3), lambda a, k: a[k]),
        ("numpy", (rows, slice(None), [0, 8, 8, 1] * 4 + [2]), lambda a, k: a[k]),
        ("oindex", (rows, slice(10, 0, -3), cols[:4]), outer_reference),
        ("oindex", (cols, [[1, 0], [5, 5]], slice(None)), outer_reference),
        ("vindex", (rows, slice(None), rows % 9), vector_reference),
        ("flat", (rng.integers(0, data.size, size=40),), lambda a, k: a.reshape(-1)[k]),
    ]
    for batch in (1, 3, 64):
        for form, key, ref in cases:
            x, fetch = lazy(data, (2, 3, 2))
            with aa.set_options(cache_bytes=0, batch_chunks=batch):
                if form == "numpy":
                    got = x[key]
                elif form == "flat":
                    got = x.flat[key[0]]
                else:
                    got = getattr(x, form)[key]
            np.testing.assert_array_equal(got, ref(data, key[0] if form == "flat" else key))
            n = len(fetch.fetched)
            assert n == len(set(fetch.fetched))
            assert len(fetch.calls) == math.ceil(n / batch), (form, key, batch)
            assert aa.stats(x)["chunks_cached"] == 0


def test_elementwise_expression_over_budget_batches_each_leaf():
    a_data = positions((12, 12))
    x, fx = lazy(a_data, 3)
    y, fy = lazy(a_data[::-1].copy(), 3)
    with aa.set_options(cache_bytes=0, batch_chunks=5):
        got = (x * 2 + y)[1:11, ::2]
    np.testing.assert_array_equal(got, (a_data * 2 + a_data[::-1])[1:11, ::2])
    assert len(fx.calls) == len(fy.calls) == math.ceil(16 / 5)


def test_dataset_sliding_windows_without_cache_fetch_in_batches(tmp_path):
    rng = np.random.default_rng(3)
    data = rng.integers(0, 60000, size=(32, 24, 24)).astype(np.uint16)
    path = str(tmp_path / "a.zarr")
    ds = aa.create_dataset(path, shape=data.shape, dtype="uint16", chunks=(4, 8, 8), shards=(16, 24, 24))
    ds[...] = data
    x = aa.open(path)
    calls = 0
    with aa.set_options(cache_bytes=0, batch_chunks=8):
        for z in range(0, 32 - 8 + 1, 2):  # 8-thick slabs: 2 or 3 chunk layers of 9 chunks
            np.testing.assert_array_equal(x[z : z + 8], data[z : z + 8])
            layers = (z + 8 - 1) // 4 - z // 4 + 1
            calls += math.ceil(layers * 9 / 8)
            assert aa.stats(x)["fetch_calls"] == calls
    assert aa.stats(x)["chunks_cached"] == 0


# --- placement: one gather per chunk for any mix of index arrays and slices ------------------------------
@pytest.mark.parametrize(
    "key",
    [
        ([5, 0, 5, 12, 3], slice(None, None, -1), [8, 1, 1, 0]),  # arrays around a reversed slice
        ([5, 0, 5, 12, 3], [10, 2, 2], slice(2, 9, 3)),  # two adjacent unsorted arrays, stepped slice
        (slice(1, None, 2), [4, 5, 6, 7], slice(None), [0, 3]),  # step-one run, then a sorted array
        ([[0, 12], [6, 6]], 4, [3, 2, 1, 0]),  # a 2-d array, an int, a reversed array
        (np.arange(13) % 2 == 0, slice(None, None, -3), np.arange(9) > 4),  # boolean arrays
        (slice(None), slice(None), [8, 0]),  # one array, last axis
    ],
)
def test_oindex_placement_matches_numpy(key):
    shape = (13, 11, 9) if len(key) == 3 else (13, 11, 9, 5)
    data = positions(shape)
    ref = outer_reference(data, key)
    chunk_options = [(2, 3, 2), (4, 11, 4), (13, 11, 9)] if len(shape) == 3 else [(2, 3, 2, 2), (5, 4, 9, 5)]
    for chunks in chunk_options:
        x, _ = lazy(data, chunks)
        got = x.oindex[key]
        assert got.shape == ref.shape
        np.testing.assert_array_equal(got, ref)
        np.testing.assert_array_equal(x.oindex[key], ref)  # again, from the cache


def test_hyperslab_with_unsorted_arrays_on_every_axis():
    data = positions((10, 8, 6))
    x, fetch = lazy(data, (3, 3, 3))
    rows, cols, deps = [9, 0, 4, 4], [7, 1], [5, 0, 2]
    p = aa.plan(x, rows, cols, deps)  # the chunks extract reads
    got = aa.extract(x, rows, cols, deps)
    np.testing.assert_array_equal(got, data[np.ix_(rows, cols, deps)])
    assert len(fetch.calls) == 1 and len(fetch.fetched) == len(p)


def test_set_options_plain_call_is_global_and_with_block_restores_even_on_error():
    before = aa.get_options()
    seen = {}
    try:
        aa.set_options(batch_chunks=5)  # plain call: global, also for other threads, and it stays
        t = threading.Thread(target=lambda: seen.update(aa.get_options()))
        t.start()
        t.join()
        assert seen["batch_chunks"] == 5 and aa.get_options()["batch_chunks"] == 5
        with pytest.raises(RuntimeError):
            with aa.set_options(batch_chunks=9, max_materialize=10):
                assert aa.get_options()["batch_chunks"] == 9
                raise RuntimeError
        assert aa.get_options()["batch_chunks"] == 5 and aa.get_options()["max_materialize"] is None
    finally:
        aa.set_options(**before)
    assert aa.get_options() == before
