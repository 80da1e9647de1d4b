"""The lazy cache never combines chunks of two versions of one shard in one read (issue 11: a long-lived
``altarr.open()`` array returned old and new chunks of the same shard after a rewrite).

Where the store tells a shard's version cheaply (local files, memory) a cached chunk is used only while
its shard is unchanged; elsewhere a cached chunk is used only when every requested chunk of its shard is
cached from one read, and the others are read again together with the rest of their shard."""

from __future__ import annotations

import numpy as np
import pytest

import altarr as aa
from altarr.stores import MemoryStore


class _NoCheapStat(MemoryStore):
    """A memory store that, like an object store, offers no cheap version check."""

    cheap_stat = False


@pytest.fixture(params=["local", "memory", "no-cheap-stat"])
def location(request, tmp_path):
    if request.param == "local":
        return str(tmp_path / "a")
    if request.param == "memory":
        return f"memory://lazy-versions-{request.node.name}"
    return _NoCheapStat()


def _make(location):
    ds = aa.create_dataset(location, shape=(8, 8), dtype="i4", chunks=(2, 2), shards=(4, 4))
    ds[...] = 1
    return ds


def _rewrite(location, value):
    aa.open_dataset(location, mode="r+")[0:4, 0:4] = value


@pytest.mark.parametrize("how", ["getitem", "sum", "visit-rows"])
def test_one_read_never_mixes_shard_versions(location, how):
    _make(location)
    x = aa.open(location)
    assert np.asarray(x[0:2, 0:2]).tolist() == [[1, 1], [1, 1]]  # caches chunk (0, 0) of shard (0, 0)
    _rewrite(location, 2)
    if how == "getitem":
        got = np.unique(np.asarray(x[0:2, 0:4]))  # chunk (0, 0) cached, (0, 1) not
    elif how == "sum":
        got = np.unique([float(x[0:4, 0:4].sum()) / 16])
    else:
        got = np.unique(np.asarray(x[0:4, 0:4].max(axis=1)))
    assert got.tolist() == [2]


def test_unchanged_shards_are_served_from_the_cache(tmp_path):
    path = str(tmp_path / "a")
    _make(path)
    x = aa.open(path)
    np.asarray(x[...])
    before = aa.stats(x)
    np.asarray(x[...])
    after = aa.stats(x)
    assert after["fetch_calls"] == before["fetch_calls"]  # nothing re-read
    assert after["cache_hits"] - before["cache_hits"] == 16


def test_a_rewritten_shard_is_read_again_and_others_stay_cached(tmp_path):
    path = str(tmp_path / "a")
    _make(path)
    x = aa.open(path)
    np.asarray(x[...])
    _rewrite(path, 3)
    before = aa.stats(x)
    got = np.asarray(x[...])
    after = aa.stats(x)
    assert (got[0:4, 0:4] == 3).all() and (got[4:, :] == 1).all() and (got[:, 4:] == 1).all()
    assert after["chunks_fetched"] - before["chunks_fetched"] == 4  # the rewritten shard's 4 chunks only


def test_without_cheap_versions_a_fully_cached_shard_is_consistent():
    """An object-store-like source cannot tell a shard changed without a request: a fully cached shard
    is served from the cache (consistently old), a partly cached one is read again whole (new)."""
    store = _NoCheapStat()
    _make(store)
    x = aa.open(store)
    np.asarray(x[0:4, 0:4])  # shard (0, 0) fully cached
    np.asarray(x[0:2, 4:6])  # one chunk of shard (0, 1)
    aa.open_dataset(store, mode="r+")[...] = 5
    assert np.unique(np.asarray(x[0:4, 0:4])).tolist() == [1]  # all from one (cached) version
    assert np.unique(np.asarray(x[0:4, 4:8])).tolist() == [5]  # partly cached: read again whole
