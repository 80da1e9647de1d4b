"""FsspecStore against a real S3 protocol server (moto on 127.0.0.1): the HTTP requests actually sent
match the store's counters, suffix ranges go out as ``Range: bytes=-n``, and S3's quirks (416 past the
end, whole object for an inverted range, silent deletes of missing keys, listing caches) are handled."""

from __future__ import annotations

import os
import uuid

import fsspec.asyn
import pytest

from _s3 import BUCKET, s3_options
from altarr.errors import ReadOnlyError, StoreError
from altarr.stores import FsspecStore, store_from_url

pytest.importorskip("s3fs")


@pytest.fixture
def store(s3_endpoint):
    s = FsspecStore(f"s3://{BUCKET}/{uuid.uuid4().hex}", **s3_options(s3_endpoint))
    yield s
    s.close()


@pytest.fixture
def boto(s3_endpoint):
    import boto3

    return boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")


class Requests:
    """Records every HTTP request the store's S3 client sends."""

    def __init__(self, store: FsspecStore):
        self.log: list[tuple[str, str | None]] = []
        fsspec.asyn.sync(store.fs.loop, store.fs.set_session)  # make sure the client exists
        store.fs.s3.meta.events.register("before-send.s3", self._hook)

    def _hook(self, request, **kwargs):
        rng = request.headers.get("Range")
        self.log.append((request.method, rng.decode() if isinstance(rng, bytes) else rng))

    def methods(self) -> list[str]:
        return [m for m, _ in self.log]

    def clear(self) -> None:
        self.log.clear()


DATA = os.urandom(200_000)


def test_http_requests_match_counters(store):
    far = 9050 + store.coalesce_gap + 1  # one byte farther than the store merges (1 MiB on S3)
    data = os.urandom(far + 100)
    store.set("shard", data)
    rec = Requests(store)
    store.stats.reset()
    reqs = [("shard", i * 1000, i * 1000 + 50) for i in range(10)] + [("shard", far, far + 100)]
    assert store.get_ranges(reqs) == [data[s:e] for _, s, e in reqs]
    assert rec.methods() == ["GET", "GET"]
    assert store.stats.reads == 2
    assert sorted(r for _, r in rec.log) == ["bytes=0-9049", f"bytes={far}-{far + 99}"]
    assert store.stats.bytes_read == 9050 + 100


def test_suffix_is_a_native_suffix_request(store):
    store.set("k", DATA)
    rec = Requests(store)
    store.stats.reset()
    assert store.get_ranges([("k", -100, None), ("k", -10, None)]) == [DATA[-100:], DATA[-10:]]
    assert rec.log == [("GET", "bytes=-100")]
    assert store.stats.size_queries == 0 and store.stats.reads == 1
    assert store.get_range("k", -(10**9), None) == DATA  # longer than the object


@pytest.fixture(params=["obstore", "fsspec"])
def either_client(request, s3_endpoint):
    """A store through the default client (obstore) and through ``client="fsspec"``."""
    extra = {} if request.param == "obstore" else {"client": "fsspec"}
    url = f"s3://{BUCKET}/{uuid.uuid4().hex}"
    return store_from_url(url, mode="w", **s3_options(s3_endpoint), **extra)[0]


def test_ranges_past_the_end_and_empty_objects(either_client):
    """Suffixes of an empty or short object included: moto answers ``bytes=-2`` on an empty object
    with the whole (empty) object, which object_store refuses ("non-partial response"); obstore's
    store then asks without a range."""
    store = either_client
    store.set("k", b"0123456789")
    store.set("empty", b"")
    reqs = [("k", 10, None), ("k", 20, 30), ("empty", 0, 5), ("empty", 3, None), ("empty", -2, None)]
    reqs += [("k", -20, None), ("k", -3, None)]
    want = [b"", b"", b"", b"", b"", b"0123456789", b"789"]
    assert store.get_ranges(reqs) == want  # one batch (concurrent requests)
    assert [store.get_ranges([r])[0] for r in reqs] == want  # one request at a time
    got, versions = store.get_ranges_versioned([("empty", -2, None), ("k", -3, None)])
    assert got == [b"", b"789"]
    assert (None not in versions) == store.reports_versions  # obstore: each answer's ETag; s3fs: none


def test_empty_range_never_fetches_the_object(store):
    store.set("k", DATA)
    rec = Requests(store)
    assert store.get_ranges([("k", 900, 100), ("nope", 5, 5)]) == [b"", None]
    assert rec.methods() == ["HEAD", "HEAD"]  # S3 would send the whole object for an inverted range
    assert store.stats.bytes_read == 0 and store.stats.reads == 2


def test_missing_keys(store):
    rec = Requests(store)
    assert store.get_ranges([("a", None, None), ("b", 0, 10), ("c", -5, None)]) == [None, None, None]
    assert store.stats.reads == 3 and store.stats.bytes_read == 0
    assert rec.methods() == ["GET", "GET", "GET"]


def test_delete_reports_existence(store):
    store.set("k", b"1")
    rec = Requests(store)
    store.stats.reset()
    assert store.delete("missing") is False
    assert rec.methods() == ["HEAD"]
    assert (store.stats.size_queries, store.stats.deletes) == (1, 0)
    assert store.delete_many(["k", "missing"]) == [True, False]
    assert store.get("k") is None


def test_objects_written_by_others_are_seen(store, boto):
    store.set("a/1", b"x")
    assert list(store.list()) == ["a/1"]
    assert store.list_dir("a") == (["1"], [])
    prefix = store._root.split("/", 1)[1]
    boto.put_object(Bucket=BUCKET, Key=f"{prefix}/a/2", Body=b"yy")
    boto.put_object(Bucket=BUCKET, Key=f"{prefix}/a/sub/3", Body=b"zzz")
    assert list(store.list()) == ["a/1", "a/2", "a/sub/3"]
    assert store.list_dir("a") == (["1", "2"], ["sub"])
    assert store.size("a/2") == 2
    boto.put_object(Bucket=BUCKET, Key=f"{prefix}/a/2", Body=b"yyyy")
    assert store.size("a/2") == 4  # no stale size from a listing cache


def test_stat_token_is_the_etag(store, boto):
    store.set("k", b"one")
    size, token = store.stat("k")
    prefix = store._root.split("/", 1)[1]
    assert size == 3 and token == boto.head_object(Bucket=BUCKET, Key=f"{prefix}/k")["ETag"]
    store.set("k", b"two")
    assert store.stat("k")[1] != token


def test_batched_writes_and_reads_of_many_keys(store):
    items = [(f"c/{i}", os.urandom(100 + i)) for i in range(40)]
    rec = Requests(store)
    store.set_many(items)
    assert rec.methods().count("PUT") == 40
    rec.clear()
    got = store.get_ranges([(k, None, None) for k, _ in items])
    assert got == [v for _, v in items]
    assert rec.methods() == ["GET"] * 40 and store.stats.reads == 40
    rec.clear()
    assert store.delete_prefix("c") == 40
    assert rec.methods() == ["GET", "POST"]  # one listing, one bulk delete
    assert store.stats.deletes == 40
    assert list(store.list()) == []


def test_store_from_url_s3(s3_endpoint):
    s, prefix = store_from_url(
        f"s3://{BUCKET}/{uuid.uuid4().hex}", client="fsspec", **s3_options(s3_endpoint)
    )
    assert isinstance(s, FsspecStore) and s.read_only and prefix == ""
    with pytest.raises(ReadOnlyError):
        s.set("k", b"1")
    w, _ = store_from_url(s.url, mode="w", client="fsspec", **s3_options(s3_endpoint))
    w.set("k", b"1")
    assert s.get("k") == b"1"


def test_write_to_missing_bucket_is_a_store_error(s3_endpoint):
    s = FsspecStore("s3://altarr-no-such-bucket/x", **s3_options(s3_endpoint))
    with pytest.raises(StoreError) as info:
        s.set("k", b"1")
    assert info.value.key == "k"
    assert s.get("k") is None


def test_sharded_dataset_on_s3_one_round_per_level(s3_endpoint):
    """The engine over a real S3 protocol server: a batched read is one index request per shard (a
    native suffix range, no HEAD) plus one ranged GET per chunk group, issued in one batched call; the
    lazy array over the same URL reads the same values."""
    import numpy as np

    import altarr as aa

    url = f"s3://{BUCKET}/{uuid.uuid4().hex}/data.zarr"
    ds = aa.create_dataset(
        url,
        shape=(32, 32),
        dtype="uint16",
        chunks=(4, 4),
        shards=(16, 16),
        storage_options={**s3_options(s3_endpoint), "client": "fsspec"},
    )
    values = np.arange(32 * 32, dtype="uint16").reshape(32, 32)
    ds[...] = values
    assert ds.store.stats.writes == 1 + 4  # zarr.json + four shards
    reader = aa.open_dataset(url, client="fsspec", **s3_options(s3_endpoint))
    log = Requests(reader.store)
    reader.store.stats.reset()
    got = reader.read_chunks([(0, 0), (5, 6), (7, 1)])  # three shards, one chunk each
    assert reader.store.stats.reads == 3 + 3 and reader.store.stats.size_queries == 0
    assert log.methods().count("HEAD") == 0
    assert sum(1 for m, r in log.log if m == "GET" and r and r.startswith("bytes=-")) == 3
    for c, a in zip([(0, 0), (5, 6), (7, 1)], got, strict=True):
        np.testing.assert_array_equal(a, values[c[0] * 4 : c[0] * 4 + 4, c[1] * 4 : c[1] * 4 + 4])
    x = aa.open(url, **s3_options(s3_endpoint))
    np.testing.assert_array_equal(x[3:29, ::3], values[3:29, ::3])
