"""Streaming chunk visits: Dataset.visit_chunks and the lazy layer's uncached reads through it."""

from __future__ import annotations

import threading
import tracemalloc

import numpy as np
import pytest

import altarr as aa
from altarr.errors import AltarrError
from altarr.stores import WHOLE


def _dataset(store, fmt="zarr3"):
    data = np.arange(24 * 20, dtype="int32").reshape(24, 20)
    kw = {"shards": (12, 10)} if fmt == "zarr3" else {}
    fill = 0 if fmt == "n5" else -1  # N5 has no fill value
    ds = aa.create_dataset(
        store, shape=data.shape, dtype="int32", chunks=(4, 5), format=fmt, fill_value=fill, **kw
    )
    ds[:12, :] = data[:12]  # the lower half stays unwritten
    return ds, data


@pytest.mark.parametrize("fmt", ["zarr3", "zarr2", "n5"])
def test_visit_gives_the_read_chunks_values_with_fewer_requests(store, fmt):
    ds, _ = _dataset(store, fmt)
    coords = [(0, 0), (2, 3), (0, 0), (5, 1), (1, 2)]  # a repeat and an unwritten chunk
    want = ds.read_chunks(coords)
    store.stats.reset()
    ds.read_chunks(coords)
    batch_reads = store.stats.reads
    got, lock, threads = {}, threading.Lock(), set()

    def fn(i, a):
        assert not a.flags.writeable
        with lock:
            got.setdefault(i, []).append(a.copy())
            threads.add(threading.get_ident())

    store.stats.reset()
    ds.visit_chunks(coords, fn)
    assert store.stats.reads <= batch_reads + 2  # per chunk ranges instead of coalesced ones
    assert sorted(got) == list(range(len(coords))) and all(len(v) == 1 for v in got.values())
    for i, w in enumerate(want):
        expected = np.full(ds._access.layout.clipped(coords[i]), ds.fill_value, "int32") if w is None else w
        np.testing.assert_array_equal(got[i][0], expected)


def test_visit_reports_the_first_error_after_every_row(store):
    ds, _ = _dataset(store)
    seen = []

    def fn(i, a):
        seen.append(i)
        if i == 1:
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        ds.visit_chunks([(0, 0), (0, 1), (1, 0)], fn)
    assert sorted(seen) == [0, 1, 2]
    # a corrupt shard names its key, like every other read
    key = ds.chunk_key((0, 0))
    store.set(key, bytes(store.get_ranges([(key, WHOLE)])[0])[:-9])
    with pytest.raises(AltarrError) as e:
        ds.visit_chunks([(0, 0)], lambda i, a: None)
    assert e.value.key == key


@pytest.mark.parametrize("threads", [1, 2, 8])
def test_uncached_lazy_reads_hold_only_their_result(tmp_path, threads):
    """altarr.open with cache_bytes=0: an orthogonal read over 64 chunks of 128 KiB places each chunk
    from the engine's scratch buffer, so its peak memory stays near its 70 KB result instead of the
    8 MiB the chunks would take. The bound is computed from the pool size the test sets (each worker
    holds at most one chunk's worth), so it holds on a machine of any size."""
    rng = np.random.default_rng(0)
    data = (rng.normal(1000, 4, size=(256, 256, 64))).astype("uint16")  # compresses about 2x, like images
    path = str(tmp_path / "a.zarr")
    ds = aa.create_dataset(path, shape=data.shape, dtype="uint16", chunks=(32, 32, 64), shards=(128, 128, 64))
    ds[...] = data
    i0, i1 = np.arange(0, 256, 3), np.arange(0, 256, 5)
    want = data[np.ix_(i0, i1)][:, :, 8:16]
    x = aa.open(path)
    with aa.set_options(cache_bytes=0, threads=threads):
        # warm-up: threads and their scratch buffers (a few passes, so that on a loaded machine every pool
        # thread has taken chunks once; the native kernel's writes above no longer touch these buffers)
        for _ in range(4):
            np.testing.assert_array_equal(x.oindex[i0, i1, 8:16], want)
        aa.reset(x)
        tracemalloc.start()
        try:
            got = x.oindex[i0, i1, 8:16]
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    np.testing.assert_array_equal(got, want)
    chunk_bytes = 32 * 32 * 64 * 2
    # the result, plus at most a chunk's worth per worker (its compressed range in flight); measured
    # (tracemalloc, independent of load): 178 KB with 1 worker, 145-192 KB with 2, 208-812 KB with 8,
    # against 8 MiB for the decoded chunks
    assert peak < want.nbytes + threads * chunk_bytes, (peak, want.nbytes, threads)
    st = aa.stats(x)
    assert st["chunks_fetched"] == 64 and st["chunks_cached"] == 0 and st["fetch_calls"] == 1
    # with the cache on, the same read keeps the chunks for the next one
    aa.reset(x)
    np.testing.assert_array_equal(x.oindex[i0, i1, 8:16], want)
    assert aa.stats(x)["chunks_cached"] == 64


class _StreamingOnly:
    """A fetch whose plain call must not be used when altarr keeps nothing (cache_bytes=0)."""

    def __init__(self, skip=None):
        self.visits, self.skip = [], skip

    def __call__(self, chunks):
        raise AssertionError("the batch form was used although the chunks are not kept")

    def visit(self, chunks, fn):
        self.visits.append(len(chunks))
        for row, (i, j) in enumerate(chunks.tolist()):
            if (i, j) != self.skip:
                fn(row, np.full((3, 3), 10 * i + j, dtype="int64")[: min(3, 7 - 3 * i), : min(3, 8 - 3 * j)])


def test_user_fetch_with_visit_streams_uncached_reads():
    f = _StreamingOnly()
    x = aa.altarr((7, 8), (3, 3), f, dtype="int16")
    want = np.add.outer(10 * (np.arange(7) // 3), np.arange(8) // 3).astype("int16")
    with aa.set_options(cache_bytes=0, batch_chunks=4):
        np.testing.assert_array_equal(x[1:7, 0:8], want[1:7])
        np.testing.assert_array_equal(x.oindex[[0, 6], [7, 1, 4]], want[np.ix_([0, 6], [7, 1, 4])])
    assert f.visits == [4, 4, 1, 4, 2] and aa.stats(x)["chunks_cached"] == 0  # batches of batch_chunks
    assert aa.stats(x)["chunks_fetched"] == sum(f.visits)


def test_a_visit_that_skips_a_chunk_is_refused():
    x = aa.altarr((7, 8), (3, 3), _StreamingOnly(skip=(1, 1)), dtype="int16")
    with aa.set_options(cache_bytes=0), pytest.raises(aa.errors.FetchError, match="skipped") as e:
        x[...]
    assert e.value.chunk == (1, 1)


def test_visit_reports_the_version_of_every_shard_it_read(store):
    from altarr.dataset.index_cache import MISSING

    ds, _ = _dataset(store)
    coords = [(0, 0), (5, 1)]  # shard (0, 0) is stored, shard (1, 0) is not
    versions = {}
    ds._access.visit_chunks(coords, lambda i, a: None, versions=versions)
    stored = ds.chunk_key((0, 0))
    assert versions == {stored: store.stat(stored)[1], ds.chunk_key((5, 1)): MISSING}
    assert versions[stored] is not None
    read_versions = {}  # read_chunks reports the same
    ds._access.read_chunks(coords, versions=read_versions)
    assert read_versions == versions


def test_an_unstored_chunk_is_visited_as_fill_values_of_the_dataset_dtype(store):
    ds, _ = _dataset(store)
    got = {}
    ds.visit_chunks([(5, 1), (0, 0)], lambda i, a: got.__setitem__(i, (a.dtype, a.shape, a.copy())))
    assert got[0][:2] == (np.dtype("int32"), (4, 5))
    np.testing.assert_array_equal(got[0][2], np.full((4, 5), -1, "int32"))
    assert got[1][0] == np.dtype("int32")


def test_a_shard_cut_short_under_an_open_visit_is_named(tmp_path):
    import os

    from altarr._threads import set_threads

    store = aa.LocalStore(tmp_path / "a.zarr")
    ds, _ = _dataset(store)
    key = ds.chunk_key((0, 0))
    path = tmp_path / "a.zarr" / key

    def fn(i, a):
        if i == 0:  # another process truncates the shard in place (not an atomic replace)
            os.truncate(path, 10)

    before = set_threads(1)  # the chunks are visited in request order
    try:
        with pytest.raises(AltarrError, match="past the end of the object") as info:
            ds.visit_chunks([(0, 0), (2, 1)], fn)
    finally:
        set_threads(before)
    assert info.value.key == key and info.value.chunk == (2, 1)
