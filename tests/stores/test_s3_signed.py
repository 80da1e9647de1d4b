"""S3 reads through presigned URLs on the standard library's reader (``altarr.stores.s3_signed``), held
to obstore's own requests on a real S3 protocol server (moto on 127.0.0.1).

Every test reads the same requests through two stores of one URL, ``http_client="stdlib"`` (the
default) and ``http_client="obstore"``, and asserts the same bytes, versions and object sizes, and which
requests the presigned path answered itself and which it declined (sent again through obstore).
"""

from __future__ import annotations

import os
import time
import uuid

import pytest

from _processes import read_in_fork_and_spawn
from _s3 import BUCKET
from altarr.errors import StoreError
from altarr.stores import WHOLE, ObstoreStore, Offset, Range, Suffix, http_get, s3_signed
from altarr.stores.s3_signed import SignedReads, usable_for

pytest.importorskip("s3fs")

DATA = os.urandom(100_000)


@pytest.fixture(autouse=True)
def fresh_readers(monkeypatch):
    """Readers of this test's own (a rest started by another test's declines must not carry over)."""
    monkeypatch.setattr(http_get, "_readers", {})


def _pair(
    endpoint: str, prefix: str | None = None, bucket: str = BUCKET
) -> tuple[ObstoreStore, ObstoreStore]:
    url = f"s3://{bucket}/{prefix or uuid.uuid4().hex}"
    opts = {"endpoint": endpoint, "client_options": {"allow_http": True}}
    fast, slow = ObstoreStore(url, **opts), ObstoreStore(url, http_client="obstore", **opts)
    assert isinstance(fast._http, SignedReads) and slow._http is None
    return fast, slow


def _counts(store: ObstoreStore) -> tuple[int, int]:
    return store._http.answered, store._http.declined


REQUESTS = [
    ("shard", WHOLE),
    ("shard", Range(0, 100)),
    ("shard", Range(99_990, 100_010)),  # clipped at the end
    ("shard", Suffix(64)),
    ("shard", Suffix(1_000_000)),  # longer than the object: all of it
    ("shard", Offset(99_000)),
    ("a b/ü+c", Range(1, 9)),  # a key obstore percent-encodes, in the URL it signs as in its own GET
    ("empty", WHOLE),
    ("empty", Suffix(4)),  # moto answers 200 with the (empty) whole object
    ("missing", Range(0, 5)),
    ("missing", WHOLE),
]


def test_same_answers_as_obstore_and_answered_here(s3_endpoint):
    fast, slow = _pair(s3_endpoint)
    fast.set_many([("shard", DATA), ("a b/ü+c", DATA[:50]), ("empty", b"")])
    before = _counts(fast)
    for key, req in REQUESTS:  # one at a time: no coalescing, every request reaches the reader
        got = fast.get_ranges_sized([(key, req)])
        assert got == slow.get_ranges_sized([(key, req)]), (key, req)
        data, versions, sizes = got
        expected = {"shard": DATA, "a b/ü+c": DATA[:50], "empty": b""}.get(key)
        if expected is None:
            assert data == [None] and versions == [None]
        else:
            off, end = req.bounds(len(expected))
            assert bytes(data[0]) == expected[off:end] and sizes == [len(expected)]
            assert versions[0].startswith('"')  # the ETag
    assert _counts(fast) == (before[0] + len(REQUESTS), before[1])


def test_past_the_end_is_declined_to_obstore(s3_endpoint):
    """A range past the end (416) is obstore's to settle (empty bytes, the size from a HEAD)."""
    fast, slow = _pair(s3_endpoint)
    fast.set("shard", DATA)
    before = _counts(fast)
    for req in (Range(200_000, 200_010), Offset(100_000)):
        assert fast.get_ranges_sized([("shard", req)]) == slow.get_ranges_sized([("shard", req)])
        assert fast.get_ranges([("shard", req)]) == [b""]
    assert _counts(fast) == (before[0], before[1] + 4)


def test_a_versioned_bucket_reports_the_version_id_as_obstore_does(s3_endpoint):
    import boto3

    bucket = f"versioned-{uuid.uuid4().hex[:8]}"
    s3 = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    fast, slow = _pair(s3_endpoint, bucket=bucket)
    fast.set("k", b"first")
    fast.set("k", b"second")
    want = slow._get_sync("k", Range(0, 3))[1]
    body, meta = fast._http.get("k", Range(0, 3))
    assert body == b"sec" and want["version"] and meta["version"] == want["version"]
    assert meta["e_tag"] == want["e_tag"] and meta["size"] == want["size"] == 6


def test_a_dataset_batch_is_answered_here_with_the_same_rounds(s3_endpoint):
    """The request contract of a batched read holds on the presigned path: metadata 1 round, indexes 1,
    data 1; warm, the data round only; every request answered here, none declined."""
    import numpy as np

    import altarr as aa

    url = f"s3://{BUCKET}/{uuid.uuid4().hex}/a.zarr"
    opts = {"endpoint": s3_endpoint, "client_options": {"allow_http": True}}
    values = np.arange(64**3, dtype="uint16").reshape((64,) * 3)
    aa.create_dataset(
        url, shape=values.shape, dtype="uint16", chunks=(16,) * 3, shards=(32,) * 3, storage_options=opts
    )[...] = values
    ds = aa.open_dataset(url, **opts)
    reads = ds.store._http
    assert isinstance(reads, SignedReads)
    boxes = [(slice(3, 20), slice(40, 60), slice(0, 9)), (slice(30, 64), slice(1, 2), slice(17, 50))]
    got = ds.read_regions(boxes)
    for g, b in zip(got, boxes, strict=True):
        np.testing.assert_array_equal(g, values[b])
    st = ds.store.stats
    assert st.rounds == 1 + 1 + 1  # this store's reads from the open on: metadata, indexes, data
    assert (reads.answered, reads.declined) == (st.reads, 0)
    st.reset()
    ds.read_regions(boxes)
    assert st.rounds == 1


# --- where it is used -----------------------------------------------------------------------------------------
def test_usable_for_options():
    env: dict[str, str] = {}
    assert usable_for("s3://b/a", {}, env)
    assert usable_for("s3a://b/a", {"region": "eu-west-1", "aws_access_key_id": "k"}, env)
    assert usable_for("s3://b/a", {"endpoint": "http://h:1", "client_options": {"allow_http": True}}, env)
    assert usable_for("s3://b/a", {"request_payer": True, "virtual_hosted_style_request": True}, env)
    assert not usable_for("gs://b/a", {}, env) and not usable_for("https://h/a", {}, env)
    assert usable_for("s3://b/odd://key", {}, env)  # the scheme is what comes before the first "://"
    every = {k: "x" for k in s3_signed.SAFE_OPTIONS} | {"client_options": {"allow_http": True}}
    assert usable_for("s3://b/a", every, env)
    for unsafe in ("skip_signature", "aws_skip_signature", "s3_express", "sse_customer_key_base64"):
        assert not usable_for("s3://b/a", {unsafe: "x"}, env), unsafe
    assert not usable_for("s3://b/a", {"credential_provider": object()}, env)
    assert not usable_for("s3://b/a", {"client_options": {"timeout": "1s"}}, env)
    assert not usable_for("s3://b/a", {"client_options": {"proxy_url": "http://p:1"}}, env)


@pytest.mark.parametrize(
    ("name", "usable"),
    [
        ("AWS_SSE_CUSTOMER_KEY_BASE64", False),
        ("AWS_SKIP_SIGNATURE", False),
        ("AWS_S3_EXPRESS", False),
        ("AWS_PROXY_URL", False),
        ("aws_timeout", False),
        ("AWS_ALLOW_INVALID_CERTIFICATES", False),
        ("AWS_CA_BUNDLE", True),  # botocore's, not object_store's
        ("AWS_REQUEST_PAYER", True),  # a query parameter of the presigned URL
        ("AWS_ALLOW_HTTP", True),
        ("AWS_PROFILE", True),
    ],
)
def test_usable_for_environment(name, usable):
    assert usable_for("s3://b/a", {}, {name: "1"}) is usable


def test_an_environment_variable_obstore_reads_keeps_reads_on_obstore(s3_endpoint, monkeypatch):
    monkeypatch.setenv("AWS_SSE_CUSTOMER_KEY_BASE64", "AAAA")
    store = ObstoreStore(f"s3://{BUCKET}/x", endpoint=s3_endpoint, client_options={"allow_http": True})
    assert store._http is None


def test_http_client_obstore_keeps_everything_on_obstore(s3_endpoint):
    s = ObstoreStore(f"s3://{BUCKET}/x", endpoint=s3_endpoint, http_client="obstore")
    assert s._http is None and s.with_read_only()._http is None
    import pickle

    assert pickle.loads(pickle.dumps(s))._http is None
    assert isinstance(pickle.loads(pickle.dumps(_pair(s3_endpoint)[0]))._http, SignedReads)


# --- presigned URLs kept for a while --------------------------------------------------------------------------
def test_a_presigned_url_is_used_again_for_its_key_within_reuse_seconds(s3_endpoint, monkeypatch):
    """One signature per key (and client) for REUSE_SECONDS: a shard's index and its chunks, or a read
    repeated soon after, cost one; another client's store signs its own; an old URL is signed anew."""
    monkeypatch.setattr(s3_signed, "_urls", {})
    prefix = uuid.uuid4().hex
    fast, _ = _pair(s3_endpoint, prefix)
    fast.set_many([("a", DATA), ("b", DATA)])
    signed: list[str] = []

    def counting(store):
        sign = store._presign

        def wrapped(key: str) -> str:
            signed.append(key)
            return sign(key)

        store._http._sign = wrapped

    counting(fast)
    assert fast.get_ranges([("a", Suffix(10))]) == [DATA[-10:]]
    assert fast.get_ranges([("a", Range(0, 5))]) == [DATA[:5]]
    assert fast.get_ranges([("b", WHOLE)]) == [DATA]
    assert signed == ["a", "b"]
    again, _ = _pair(s3_endpoint, prefix)  # a store of the same client: the same URLs
    counting(again)
    assert again.get_ranges([("a", Range(5, 9))]) == [DATA[5:9]] and signed == ["a", "b"]
    other = ObstoreStore(
        f"s3://{BUCKET}/{prefix}",
        endpoint=s3_endpoint,
        client_options={"allow_http": True},
        region="us-east-1",
    )  # another configuration, another client: signs its own
    counting(other)
    assert other.get_ranges([("a", Range(0, 2))]) == [DATA[:2]] and signed == ["a", "b", "a"]
    monkeypatch.setattr(s3_signed, "REUSE_SECONDS", 0.0)
    assert fast.get_ranges([("a", Range(0, 2))]) == [DATA[:2]] and signed == ["a", "b", "a", "a"]
    assert fast._http.answered == 4 and fast._http.declined == 0


def test_readers_without_a_client_name_keep_their_own_urls(monkeypatch):
    monkeypatch.setattr(s3_signed, "_urls", {})
    one = SignedReads(lambda key: f"http://127.0.0.1:1/one/{key}?X-Amz-Signature=0")
    two = SignedReads(lambda key: f"http://127.0.0.1:1/two/{key}?X-Amz-Signature=0")
    assert one._url("k") != two._url("k") and len(s3_signed._urls) == 2


def test_kept_urls_are_bounded(monkeypatch):
    monkeypatch.setattr(s3_signed, "_urls", {})
    monkeypatch.setattr(s3_signed, "MAX_URLS", 3)
    reads = SignedReads(lambda key: f"http://127.0.0.1:1/b/{key}?X-Amz-Signature=0", client="c")
    for key in "abcd":
        reads._url(key)
    assert list(s3_signed._urls) == [("c", "d")]


# --- what it declines -------------------------------------------------------------------------------------------
def test_a_signing_failure_is_declined():
    def sign(key: str) -> str:
        raise RuntimeError("no credentials")

    reads = SignedReads(sign)
    assert reads.get("k", WHOLE) is None and (reads.answered, reads.declined) == (0, 1)


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://127.0.0.1:1", None),  # no path: no reader made
        ("127.0.0.1:1/b/k", None),  # no scheme
        ("http://127.0.0.1:1/b/k?X=1\r\nHost: evil", "http://127.0.0.1:1"),  # not a request target
        ("http://127.0.0.1:1/b/k v", "http://127.0.0.1:1"),
    ],
)
def test_urls_it_cannot_send_are_declined(url, origin):
    """Declined without a request: the reader (where one is made) refuses a target that is not a plain
    encoded path and query."""
    reads = SignedReads(lambda key: url)
    assert reads.get("k", WHOLE) is None and reads.declined == 1
    assert list(reads._readers) == ([origin] if origin else [])
    if origin:
        assert (reads._readers[origin].answered, reads._readers[origin].declined) == (0, 1)


def test_a_proxied_endpoint_is_declined(monkeypatch):
    for k in ("http_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    reads = SignedReads(lambda key: f"http://s3.example/b/{key}?X-Amz-Signature=0")
    assert reads.get("k", WHOLE) is None and reads.declined == 1
    assert reads._readers == {"http://s3.example": None}
    monkeypatch.setenv("NO_PROXY", "s3.example,localhost")  # decided once per store: this one still declines
    assert reads.get("k", WHOLE) is None and reads.declined == 2
    assert reads._readers == {"http://s3.example": None}
    bypassing = SignedReads(lambda key: f"http://localhost/b/{key}?X-Amz-Signature=0")
    bypassing.get("k", Range(0, 1))  # (whatever answers on port 80 here, if anything)
    assert isinstance(bypassing._readers["http://localhost"], http_get.HttpReader)  # NO_PROXY's host


def test_a_kept_url_gone_meanwhile_is_no_error(monkeypatch):
    """A declined request drops its key's kept URL, which another thread may have dropped already (two
    requests of one key declined at once, or the kept URLs cleared when full)."""
    monkeypatch.setattr(s3_signed, "_urls", {})

    class Gone:
        def fetch(self, target, req):
            s3_signed._urls.clear()  # as another thread would, meanwhile
            return None

    reads = SignedReads(lambda key: f"http://127.0.0.1:1/b/{key}?X-Amz-Signature=0", client="c")
    monkeypatch.setattr(reads, "_reader", lambda origin: Gone())
    assert reads.get("k", WHOLE) is None and reads.declined == 1 and s3_signed._urls == {}


def test_many_declines_in_a_row_rest_the_path_then_it_tries_again(s3_endpoint, monkeypatch):
    """A setup where presigned URLs never work (here: every one points to a closed port) costs
    DECLINES_BEFORE_REST requests, then none until the rest is over; obstore answers every read."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    monkeypatch.setattr(http_get, "REST_SECONDS", 0.5)
    fast, slow = _pair(s3_endpoint)
    fast.set("k", b"abcdef")
    reads = fast._http
    signed: list[str] = []

    def sign(key: str) -> str:
        signed.append(key)
        return f"http://127.0.0.1:{port}/{BUCKET}/{key}?X-Amz-Signature=0"

    reads._sign = sign
    n = http_get.DECLINES_BEFORE_REST
    for _ in range(n + 3):
        assert fast.get_ranges([("k", Range(1, 3))]) == [b"bc"]
    assert len(signed) == n and reads.declined == n + 3 and reads.answered == 0
    time.sleep(0.6)
    reads._sign = fast._presign  # the presigned URLs work again
    assert fast.get_ranges([("k", Range(1, 3))]) == [b"bc"] and reads.answered == 1


def test_a_forked_child_fails_fast_as_with_obstore_and_a_spawned_one_reads(s3_endpoint):
    fast, _ = _pair(s3_endpoint)
    fast.set("k", b"abcdef")
    assert fast.get_ranges([("k", 0, 3)]) == [b"abc"] and fast._http.answered == 1
    read_in_fork_and_spawn(fast, "k", b"abc")


def test_a_missing_bucket_is_reported_by_obstore(s3_endpoint):
    """moto answers a GET in a missing bucket with 404 (NoSuchBucket): a missing key, as obstore has it."""
    fast, slow = _pair(s3_endpoint, bucket=f"nobucket-{uuid.uuid4().hex[:8]}")

    def outcome(store):
        try:
            return store.get_ranges_sized([("k", WHOLE)])
        except StoreError as e:
            return type(e)

    assert outcome(fast) == outcome(slow)


def test_expires_is_what_s3_tolerates_as_clock_skew():
    assert s3_signed.EXPIRES.total_seconds() == 15 * 60
