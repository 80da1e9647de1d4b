"""Read pipelining (``altarr.dataset.pipeline``): decoding overlaps the transfer of a remote read, and the
requests, rounds and results are those of the unpipelined read.

Stores: obstore's in-memory backend, the loopback HTTP server of ``benchmarks/netservers.py`` (obstore
and fsspec), the moto S3 server, and a small store over memory whose streamed answers arrive one by one
(to see that decoding starts before the last answer is in).
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

import altarr as aa
from _s3 import BUCKET, s3_options
from altarr.dataset import pipeline
from altarr.errors import StoreError
from altarr.stores import FsspecStore, MemoryStore, ObstoreStore
from altarr.stores.base import Store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from netservers import http_server  # noqa: E402

SHAPE = (24, 24)
VALUES = (np.arange(24 * 24, dtype="uint16").reshape(SHAPE) * 13) % 4001
REGIONS = [np.s_[...], np.s_[2:21, 3:17], np.s_[0:8, :], np.s_[[1, 22, 9], 5:19]]


def _make(store, shards=(8, 8)) -> aa.Dataset:
    ds = aa.create_dataset(
        store, shape=SHAPE, dtype="uint16", chunks=(4, 4), shards=shards, compressor="zstd"
    )
    ds[...] = VALUES
    return ds


def _counts(ds, fn):
    ds.store.stats.reset()
    out = fn()
    st = ds.store.stats
    return out, (st.reads, st.rounds, st.bytes_read, st.size_queries)


@pytest.fixture
def no_pipeline():
    def switch(on: bool) -> None:
        pipeline.ENABLED = on

    yield switch
    pipeline.ENABLED = True


@pytest.mark.parametrize(
    "shards", [(8, 8), [(4, 8), (8, 8)], [(8, 8), (24, 24)]], ids=["one", "nested", "outer1"]
)
def test_pipelined_reads_equal_and_cost_the_same(no_pipeline, shards):
    """Cold and warm, region reads and read_regions: the same values, requests, rounds and bytes as the
    unpipelined read (nested shards too; a single outer shard is not pipelined)."""
    for region in REGIONS:
        runs = {}
        for on in (True, False):
            no_pipeline(on)
            ds = _make(ObstoreStore("memory://"), shards)
            ds._access.index_cache.clear()
            cold, cold_n = _counts(ds, lambda ds=ds, region=region: ds[region])
            warm, warm_n = _counts(ds, lambda ds=ds, region=region: ds.read_regions([region, np.s_[5, 5:9]]))
            np.testing.assert_array_equal(cold, VALUES[region])
            np.testing.assert_array_equal(warm[0], VALUES[region])
            runs[on] = (cold_n, warm_n)
        assert runs[True] == runs[False], region
    no_pipeline(True)
    ds = _make(ObstoreStore("memory://"), shards)
    chunks = [(0, 0), (5, 5)]
    assert pipeline.streams(ds._access, chunks) == (ds.shards != (24, 24))


def test_visit_chunks_and_versions_through_the_pipeline():
    ds = _make(ObstoreStore("memory://"))
    coords = [(i, j) for i in range(6) for j in range(6)]
    assert pipeline.streams(ds._access, coords)
    seen: dict[int, np.ndarray] = {}
    lock = threading.Lock()

    def keep(i, a):
        with lock:
            seen[i] = a.copy()

    versions: dict[str, object] = {}
    ds._access.visit_chunks(coords, keep, versions=versions)
    for i, (a, b) in enumerate(coords):
        np.testing.assert_array_equal(seen[i], VALUES[4 * a : 4 * a + 4, 4 * b : 4 * b + 4])
    assert len(versions) == 9 and all(v is not None for v in versions.values())  # 9 shards, their ETags


class _Trickling(Store):
    """A store over memory whose streamed answers come one by one, ``delay`` seconds apart, and which
    records when each was handed over; ``fail`` names a key whose read raises."""

    streaming_reads = True

    def __init__(self, delay: float, fail: str | None = None) -> None:
        super().__init__()
        self.mem = MemoryStore()
        self.delay, self.fail = delay, fail
        self.events: list[tuple[str, float]] = []

    def get_ranges(self, requests):
        return self.mem.get_ranges(requests)

    def get_ranges_as_completed(self, requests):
        self.stats.add(rounds=1)
        got = self.mem.get_ranges(requests)
        for i, d in enumerate(got):
            time.sleep(self.delay)
            if self.fail is not None and requests[i][0].endswith(self.fail):
                raise StoreError("injected failure", key=requests[i][0])
            self.events.append(("answer", time.perf_counter()))
            yield i, d, None

    def size(self, key):
        return self.mem.size(key)

    def set(self, key, value):
        self.mem.set(key, value)

    def delete(self, key):
        return self.mem.delete(key)

    def list(self, prefix=""):
        return self.mem.list(prefix)

    def list_dir(self, prefix=""):
        return self.mem.list_dir(prefix)


def test_decoding_starts_before_the_last_answer_arrives():
    store = _Trickling(0.05)
    ds = _make(store)
    ds._access.index_cache.clear()
    decoded: list[float] = []
    store.events.clear()
    ds.visit_chunks(
        [(i, j) for i in range(6) for j in range(6)], lambda i, a: decoded.append(time.perf_counter())
    )
    answers = [t for what, t in store.events if what == "answer"]
    assert len(answers) == 9 and len(decoded) == 36
    assert min(decoded) < max(answers)  # the first shard's chunks were decoded while others were on the way
    assert store.stats.rounds == 1  # 9 shards mostly wanted: read whole, one round for all streams


def test_a_failing_request_raises_and_nothing_hangs():
    store = _Trickling(0.0)
    ds = _make(store)
    ds._access.index_cache.clear()
    store.fail = "c/1/1"
    with pytest.raises(StoreError, match="injected"):
        ds[...]
    store.fail = None
    np.testing.assert_array_equal(ds[...], VALUES)


@pytest.mark.parametrize("client", ["obstore", "fsspec"])
def test_http_requests_and_rounds_with_and_without_pipelining(tmp_path, no_pipeline, client):
    _make(str(tmp_path / "a.zarr"))
    with http_server(tmp_path, latency=0.005) as (url, log):
        per = {}
        for on in (True, False):
            no_pipeline(on)
            log.reset()
            ds = aa.open_dataset(f"{url}/a.zarr", client=client, format="zarr3")
            assert isinstance(ds.store, ObstoreStore if client == "obstore" else FsspecStore)
            assert ds.store.streaming_reads
            got = ds.read_regions([np.s_[...], np.s_[3:20, 1:2]])
            np.testing.assert_array_equal(got[0], VALUES)
            np.testing.assert_array_equal(got[1], VALUES[3:20, 1:2])
            per[on] = (log.requests(), ds.store.stats.rounds, sorted(e[:3] for e in log.entries))
        assert per[True] == per[False]
        assert per[True][1] == 2  # metadata + the 9 shards, read whole in one round


def test_s3_streamed_ranges_and_pipelined_region(s3_endpoint):
    url = f"s3://{BUCKET}/{uuid.uuid4().hex}"
    for store in (ObstoreStore(url, **s3_options(s3_endpoint)), FsspecStore(url, **s3_options(s3_endpoint))):
        store.set("k", b"0123456789")
        store.stats.reset()
        reqs = [("k", 0, 2), ("k", 8, 10), ("k", -3, None), ("nope", None, None), ("k", None, None)]
        got = {i: (None if d is None else bytes(d)) for i, d, _ in store.get_ranges_as_completed(reqs)}
        assert got == dict(enumerate(store.get_ranges(reqs)))
        assert store.stats.rounds == 2
    _make(ObstoreStore(f"{url}/a.zarr", **s3_options(s3_endpoint)))
    fresh = aa.open_dataset(f"{url}/a.zarr", **s3_options(s3_endpoint))
    fresh.store.stats.reset()
    np.testing.assert_array_equal(fresh[2:23, 1:20], VALUES[2:23, 1:20])
    assert fresh.store.stats.rounds == 1 and fresh.store.stats.reads == 9  # 9 shards, read whole


def test_default_get_ranges_as_completed_yields_the_batch():
    s = MemoryStore()
    s.set("a", b"abcdef")
    assert not s.streaming_reads
    got = list(s.get_ranges_as_completed([("a", 1, 3), ("b", None, None)]))
    assert [(i, d) for i, d, _ in got] == [(0, b"bc"), (1, None)] and got[1][2] is None
    assert list(s.get_ranges_as_completed([])) == []
