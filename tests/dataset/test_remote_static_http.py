"""Reads from a plain static HTTP server, one that serves ``Range`` requests but sends no ``ETag`` (as
most file servers and CDNs without one do), counted by the server itself: every read is exactly the
requests it needs, none sent twice; and without a version to check them against, no shard index is
kept across calls (a shard rewritten within the second of its ``Last-Modified`` is read afresh)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import altarr as aa

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from netservers import http_server

SHAPE, CHUNKS, SHARDS = (32, 32), (4, 4), (16, 16)
VALUES = (np.arange(32 * 32, dtype="uint16").reshape(SHAPE) * 7) % 5003
#: the shard index: 16 chunks x (offset, length) as uint64, and its crc32c
INDEX = f"bytes=-{16 * 16 + 4}"


@pytest.fixture(params=[False, True], ids=["no-etag", "etag"])
def served(request, tmp_path):
    aa.create_dataset(
        str(tmp_path / "a.zarr"), shape=SHAPE, dtype="uint16", chunks=CHUNKS, shards=SHARDS, checksum=False
    )[...] = VALUES
    with http_server(tmp_path, etag=request.param) as (url, log):
        yield f"{url}/a.zarr", log, request.param, tmp_path / "a.zarr"


def _sent(log) -> list[tuple[str, str, str | None]]:
    """The requests since the last reset, checked to be each sent once, then cleared."""
    got = [(m, p, r) for m, p, r, *_ in log.entries]
    log.reset()
    twice = [e for e, n in Counter(got).items() if n > 1]
    assert not twice, f"sent more than once: {twice}"
    return got


def test_open_and_one_chunk_is_one_request_a_round(served):
    url, log, _, _ = served
    ds = aa.open_dataset(url, format="zarr3")
    np.testing.assert_array_equal(ds[0:4, 0:4], VALUES[0:4, 0:4])
    assert _sent(log) == [
        ("GET", "/a.zarr/zarr.json", None),
        ("GET", "/a.zarr/c/0/0", INDEX),
        ("GET", "/a.zarr/c/0/0", "bytes=0-40"),  # the chunk's range, from the index
    ]
    aa.open_dataset(url)  # no format named: every format's documents probed at once, each once
    assert sorted(p for _, p, _ in _sent(log)) == [
        "/a.zarr/.zarray", "/a.zarr/.zattrs", "/a.zarr/.zgroup", "/a.zarr/attributes.json", "/a.zarr/zarr.json"
    ]  # fmt: skip


def test_region_reads_and_read_chunks_send_each_request_once(served):
    url, log, etag, _ = served
    ds = aa.open_dataset(url, format="zarr3")
    _sent(log)
    region = np.s_[6:20, 5:9]  # two shards, under half the chunks of each (else read whole)
    np.testing.assert_array_equal(ds[region], VALUES[region])
    cold = _sent(log)
    assert [r for _, _, r in cold].count(INDEX) == 2 and len(cold) == 2 + 2  # indexes, then one range each
    np.testing.assert_array_equal(ds[region], VALUES[region])
    warm = _sent(log)
    # with ETags the indexes are kept (checked by the chunk answers' ETags); without, read again
    assert sorted(warm) == sorted(e for e in cold if e[2] != INDEX or not etag)
    got = ds.read_chunks([(0, 0), (5, 6), (7, 1)])  # three shards, one chunk each
    for c, a in zip([(0, 0), (5, 6), (7, 1)], got, strict=True):
        np.testing.assert_array_equal(a, VALUES[c[0] * 4 : c[0] * 4 + 4, c[1] * 4 : c[1] * 4 + 4])
    sent = _sent(log)  # shards (0, 0) and (1, 0) were read above: their indexes are kept with an ETag
    assert [r for _, _, r in sent].count(INDEX) == (1 if etag else 3) and len(sent) == (4 if etag else 6)


def test_a_shard_rewritten_within_its_second_is_read_afresh(served):
    """``Last-Modified`` has a resolution of one second: it cannot tell two versions of a shard apart,
    so without an ``ETag`` nothing is cached against it."""
    url, log, _, folder = served
    ds = aa.open_dataset(url, format="zarr3")
    np.testing.assert_array_equal(ds[0:16, 0:16], VALUES[0:16, 0:16])
    local = aa.open_dataset(str(folder), mode="r+")
    local[0:3, 0:3] = 1  # the shard changes length and layout
    want = VALUES[0:16, 0:16].copy()
    want[0:3, 0:3] = 1
    np.testing.assert_array_equal(ds[0:16, 0:16], want)


def test_a_chained_simplecache_url_opens_and_reads_a_sparse_array(tmp_path):
    """``simplecache::http://...``: fsspec's cache over its HTTP file system. Its ``cat_ranges`` reads
    nothing that is not cached yet (fsspec 2025.7 to 2026.8) or fails the whole batch when one object is
    absent (2026.9: the format probe's other documents, a shard never written), and its ``cat_file`` fails a
    suffix range (a shard index): the store reads each range through a file the cache opened, so the array
    opens, absent shards read as the fill value, and a read of what is cached sends no request."""
    ds = aa.create_dataset(
        str(tmp_path / "a.zarr"), shape=SHAPE, dtype="uint16", chunks=CHUNKS, shards=SHARDS, checksum=False
    )
    ds[:16, 16:] = VALUES[:16, 16:]  # one shard of four
    expected = np.zeros(SHAPE, "uint16")
    expected[:16, 16:] = VALUES[:16, 16:]
    with http_server(tmp_path, etag=False) as (url, log):
        opts = {"simplecache": {"cache_storage": str(tmp_path / "cache")}}
        chained = aa.open_dataset(f"simplecache::{url}/a.zarr", storage_options=opts)
        np.testing.assert_array_equal(chained[...], expected)
        got = {(m, p) for m, p, *_ in log.entries}
        assert {("GET", "/a.zarr/c/0/1"), ("GET", "/a.zarr/c/1/1")} <= got  # c/1/1 absent: answered 404
        log.reset()
        np.testing.assert_array_equal(chained[:4, 16:20], VALUES[:4, 16:20])  # an index and a chunk
        assert log.entries == []
