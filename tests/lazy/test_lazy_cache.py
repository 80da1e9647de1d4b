"""The decoded-chunk cache: byte budget, LRU, shared by copies, thread-safe single flight; options and
counters."""

from __future__ import annotations

import copy
import gc
import pickle
import threading

import numpy as np
import pytest

import altarr as aa
from _lazy_support import lazy, positions
from altarr.lazy.cache import CACHE


def test_selection_that_fits_costs_one_fetch_and_a_repeat_costs_none():
    data = positions((10, 7))
    x, fetch = lazy(data, (4, 3))
    np.testing.assert_array_equal(x[1:9, 2:5], data[1:9, 2:5])
    s = aa.stats(x)
    assert s["fetch_calls"] == 1 and s["chunks_fetched"] == 6 and s["chunks_cached"] == 6
    assert s["cache_bytes"] == sum(a.nbytes for a in fetch(np.array(sorted(set(fetch.fetched)))))
    x[1:9, 2:5]
    x.oindex[[2, 5], [3, 4]]  # a subset of the cached chunks
    assert aa.stats(x)["fetch_calls"] == 1
    assert aa.stats(x)["extract_subset"] == 3 and aa.stats(x)["cache_hits"] == 6 + 2


def test_copies_share_the_cache_and_counters_pickles_do_not():
    data = positions((8, 8))
    x, fetch = lazy(data, 4)
    x[...]
    for y in (copy.copy(x), copy.deepcopy(x)):
        np.testing.assert_array_equal(y[...], data)
        assert aa.stats(y)["fetch_calls"] == 1
    z = pickle.loads(pickle.dumps(x))
    assert aa.stats(z)["fetch_calls"] == 0 and aa.stats(z)["chunks_cached"] == 0
    np.testing.assert_array_equal(z[...], data)
    assert aa.stats(z)["fetch_calls"] == 1


def test_lru_eviction_within_the_budget():
    data = positions((4, 4))  # chunks of 2x2 float64 = 32 bytes
    x, fetch = lazy(data, 2)
    aa.reset(x)
    with aa.set_options(cache_bytes=64):
        x[0, 0]  # chunk (0, 0)
        x[0, 2]  # chunk (0, 1)
        x[0, 0]  # touch (0, 0): now (0, 1) is least recently used
        x[2, 0]  # chunk (1, 0) evicts (0, 1)
        s = aa.stats(x)
        assert s["evictions"] == 1 and s["chunks_cached"] == 2 and s["cache_bytes"] == 64
        x[0, 0]
        assert aa.stats(x)["fetch_calls"] == 3
        x[0, 2]
        assert aa.stats(x)["fetch_calls"] == 4
    assert aa.stats(x)["cache_budget"] == aa.get_options()["cache_bytes"]


def test_selection_bigger_than_the_budget_streams_and_does_not_evict():
    hot_data = positions((2, 2))
    hot, _ = lazy(hot_data, 2)
    data = positions((16, 16))  # 16 chunks of 4x4 float64 = 128 bytes each
    x, fetch = lazy(data, 4)
    with aa.set_options(cache_bytes=600, batch_chunks=2):
        hot[...]
        np.testing.assert_array_equal(x[...], data)
        # 2048 bytes needed, budget 600: batches of at least 2 chunks and as many as fit (4), nothing kept
        assert [len(c) for c in fetch.calls] == [4, 4, 4, 4]
        assert aa.stats(x)["chunks_cached"] == 0
    fetch.calls.clear()
    with aa.set_options(cache_bytes=600):  # batch_chunks=64: the 16 chunks in one call, still not kept
        np.testing.assert_array_equal(x[...], data)
        assert [len(c) for c in fetch.calls] == [16]
        assert aa.stats(x)["chunks_cached"] == 0
        assert aa.stats(hot)["chunks_cached"] == 1 and aa.stats(hot)["evictions"] == 0
        x[0:4, 0:8]  # two chunks fit: cached
        assert aa.stats(x)["chunks_cached"] == 2


def test_options_global_and_as_context_manager():
    before = aa.get_options()
    from altarr._threads import default_threads  # ALTARR_THREADS, else the cores: differs by machine

    defaults = {"cache_bytes": 256 * 2**20, "batch_chunks": 64, "max_materialize": None}
    assert before == {**defaults, "threads": default_threads()}
    with aa.set_options(batch_chunks=3, max_materialize=1e3):
        assert aa.get_options()["batch_chunks"] == 3 and aa.get_options()["max_materialize"] == 1000
        with aa.set_options(batch_chunks=5):
            assert aa.get_options()["batch_chunks"] == 5
        assert aa.get_options()["batch_chunks"] == 3
    assert aa.get_options() == before
    aa.set_options(batch_chunks=7)
    try:
        assert aa.get_options()["batch_chunks"] == 7
    finally:
        aa.set_options(batch_chunks=64)
    for bad in ({"nope": 1}, {"batch_chunks": 0}, {"cache_bytes": -1}, {"max_materialize": "x"}):
        with pytest.raises((ValueError, TypeError)):
            aa.set_options(**bad)
    assert aa.get_options() == before


def test_lowering_the_budget_evicts_at_once():
    x, _ = lazy(positions((8, 8)), 4)
    x[...]
    assert aa.stats(x)["chunks_cached"] == 4
    with aa.set_options(cache_bytes=0):
        assert aa.stats(x)["chunks_cached"] == 0
        x[...]
        assert aa.stats(x)["chunks_cached"] == 0


def test_reset_zeroes_counters_and_optionally_drops_the_cache():
    x, _ = lazy(positions((8, 8)), 4)
    x[...]
    x.sum()
    aa.reset(x, cache=False)
    s = aa.stats(x)
    assert s["fetch_calls"] == s["extract_subset"] == s["reduce"] == 0 and s["chunks_cached"] == 4
    aa.reset(x)
    assert aa.stats(x)["chunks_cached"] == 0 and aa.stats(x)["cache_bytes"] == 0


def test_single_flight_across_threads():
    data = positions((4, 4))
    x, fetch = lazy(data, 4, delay=0.2)
    barrier = threading.Barrier(6)
    results = []

    def worker():
        barrier.wait()
        results.append(x[1:3, 1:3])

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 6 and all(np.array_equal(r, data[1:3, 1:3]) for r in results)
    assert aa.stats(x)["chunks_fetched"] == 1 and len(fetch.calls) == 1


def test_many_threads_random_selections_are_correct():
    rng = np.random.default_rng(1)
    data = positions((40, 30))
    x, _ = lazy(data, (7, 4))
    errors = []

    def worker(seed):
        r = np.random.default_rng(seed)
        for _ in range(30):
            i = np.sort(r.integers(0, 40, 5))
            j = r.integers(0, 30, 3)
            if not np.array_equal(x.oindex[i, j], data[np.ix_(i, j)]):
                errors.append((i, j))

    with aa.set_options(cache_bytes=3000):
        threads = [threading.Thread(target=worker, args=(int(s),)) for s in rng.integers(0, 1000, 6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []


def test_cache_entries_are_freed_with_the_array():
    x, _ = lazy(positions((64, 64)), 16)
    x[...]
    token = x._source.token
    assert CACHE.owner_stats(token)["cache_bytes"] == 64 * 64 * 8
    total = CACHE.total_bytes
    del x
    gc.collect()
    assert CACHE.owner_stats(token)["cache_bytes"] == 0
    assert CACHE.total_bytes == total - 64 * 64 * 8


def test_repr_reads_nothing():
    x, fetch = lazy(positions((10, 7)), (4, 3), dims=("y", "x"))
    text = repr(x)
    assert "shape=(10, 7)" in text and "chunks=(4, 3)" in text and "cached=0" in text
    assert str(x) == text
    assert fetch.calls == [] and aa.stats(x)["materialize"] == 0


def test_stats_keys():
    x, _ = lazy(positions((3,)), 2)
    keys = set(aa.stats(x))
    assert {
        "extract_subset",
        "hyperslab",
        "reduce",
        "materialize",
        "fetch_calls",
        "chunks_fetched",
        "chunks_cached",
        "cache_bytes",
        "cache_budget",
        "evictions",
    } <= keys
    assert aa.is_altarr(x) and not aa.is_altarr(x[:]) and not aa.is_altarr(np.zeros(2))
    with pytest.raises(TypeError):
        aa.stats(np.zeros(2))


def test_cached_views_of_a_large_buffer_are_compacted():
    big = np.arange(10_000.0)

    def fetch(coords):
        return [big[10 * i : 10 * i + 10] for (i,) in coords]  # views into one large buffer

    x = aa.altarr((1000,), 10, fetch)
    x[0:20]
    cached = CACHE.claim([(x._source.token, (0,))])[0]
    assert cached[0] == "hit" and cached[1].base is None and aa.stats(x)["cache_bytes"] == 160
