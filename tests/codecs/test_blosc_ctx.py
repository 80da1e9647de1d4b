"""The direct blosc path (altarr.codecs.blosc_ctx) against numcodecs' own wrapper."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from numcodecs import Blosc

from altarr.codecs import blosc_ctx
from altarr.codecs.compress import BloscCodec
from altarr.errors import CodecError, CorruptChunkError

pytestmark = pytest.mark.skipif(not blosc_ctx.AVAILABLE, reason="numcodecs' c-blosc exports no *_ctx symbols")

CASES = [
    ("lz4", 5, "shuffle", 2, "<u2"),
    ("zstd", 3, "bitshuffle", 4, "<f4"),
    ("blosclz", 9, "noshuffle", None, "u1"),
    ("lz4hc", 1, "shuffle", 8, "<i8"),
    ("zlib", 6, "shuffle", 2, "<i2"),
]
SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}


def test_the_direct_path_is_on_in_this_environment():
    # numcodecs ships c-blosc 1.x with exported symbols on every platform CI uses; if this fails the
    # fast path silently fell back to numcodecs and the benchmark figures would not hold
    assert blosc_ctx.AVAILABLE


@pytest.mark.parametrize("cname,clevel,shuffle,typesize,dtype", CASES)
def test_frames_are_numcodecs_frames_both_ways(cname, clevel, shuffle, typesize, dtype):
    rng = np.random.default_rng(0)
    a = (rng.normal(100, 5, 40_000)).astype(dtype)
    ours = BloscCodec(cname=cname, clevel=clevel, shuffle=shuffle, typesize=typesize)
    theirs = Blosc(cname=cname, clevel=clevel, shuffle=SHUFFLE[shuffle], typesize=typesize or 1)
    frame = ours.encode(a.view(np.uint8))
    assert bytes(frame) == bytes(theirs.encode(a.view(np.uint8)))  # the same bytes numcodecs writes
    np.testing.assert_array_equal(np.frombuffer(theirs.decode(frame), dtype), a)
    np.testing.assert_array_equal(np.frombuffer(ours.decode(theirs.encode(a)), dtype), a)
    out = np.empty_like(a)
    assert ours.decode(frame, out=out) is out
    np.testing.assert_array_equal(out, a)


def test_decoding_from_the_main_thread_and_workers_at_once():
    a = np.arange(64**3, dtype="<u2").reshape(64, 64, 64)
    codec = BloscCodec(typesize=2)
    frames = [codec.encode(a + i) for i in range(8)]
    errors = []

    def work(offset):
        out = np.empty_like(a)
        for i in range(40):
            k = (i + offset) % 8
            if codec.decode(frames[k], out=out) is not out or not np.array_equal(out, a + k):
                errors.append(k)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(3)]
    for t in threads:
        t.start()
    work(5)  # the main thread too: numcodecs would take blosc's global lock here
    for t in threads:
        t.join()
    assert errors == []


def test_bad_frames_are_refused_with_numcodecs_words():
    a = np.arange(5000, dtype="<u2")
    codec = BloscCodec(typesize=2)
    frame = bytes(codec.encode(a))
    assert blosc_ctx.frame_nbytes(frame) == a.nbytes
    for bad in (frame[:10], frame[:-7], b"\x02\x01" + frame[2:8] + b"\xff" * 8 + frame[16:]):
        assert not blosc_ctx.decompress_into(bad, np.empty(a.nbytes, np.uint8))
        with pytest.raises(CodecError, match="blosc decompression failed"):
            codec.decode(bad)
    # a valid frame of another size is not decoded into a buffer that does not fit it: a larger one is
    # refused from its header (the decoded size a chunk can have is the cap), a smaller one comes back new
    small = np.empty(a.nbytes - 2, np.uint8)
    assert not blosc_ctx.decompress_into(frame, small)
    with pytest.raises(CorruptChunkError, match="announces 10000 bytes"):
        codec.decode(frame, out=small)
    large = np.empty(a.nbytes + 2, np.uint8)
    got = codec.decode(frame, out=large)
    assert got is not large and bytes(got) == a.tobytes()


def test_encoding_into_a_given_buffer():
    a = np.arange(20_000, dtype="<u2")
    codec = BloscCodec(typesize=2)
    assert codec.encode_bound(a.nbytes) == a.nbytes + blosc_ctx.MAX_OVERHEAD
    out = np.empty(a.nbytes + blosc_ctx.MAX_OVERHEAD, np.uint8)
    frame = codec.encode(a, out=out)
    assert np.shares_memory(frame, out) and bytes(frame) == bytes(codec.encode(a))
    # a buffer that is too small is not used: a new frame comes back
    small = np.empty(100, np.uint8)
    frame2 = codec.encode(a, out=small)
    assert not np.shares_memory(frame2, small) and bytes(frame2) == bytes(frame)


@pytest.mark.parametrize("store_kind", ["memory", "local"])
def test_writes_through_the_output_arena_store_what_fresh_buffers_store(tmp_path, monkeypatch, store_kind):
    """Several write groups reuse one arena: every shard must still hold its own chunks, byte for byte
    what the write stores without the arena."""
    import altarr as aa
    from altarr.dataset import shard_write
    from altarr.stores import LocalStore, MemoryStore

    monkeypatch.setattr(shard_write, "WRITE_GROUP_BYTES", 2 * 8 * 16 * 16 * 2)  # 2 shards per group
    data = (np.arange(64 * 64 * 16).reshape(64, 64, 16) % 1013).astype("<u2")
    stores = []
    for slot in ("arena", "fresh"):
        store = MemoryStore() if store_kind == "memory" else LocalStore(tmp_path / slot)
        ds = aa.create_dataset(
            store,
            shape=data.shape,
            dtype="uint16",
            chunks=(16, 16, 16),
            shards=(32, 32, 16),
            compressor="blosc",
        )
        if slot == "fresh":
            ds._access.encode_slot = None
        else:
            assert ds._access.encode_slot == 16 * 16 * 16 * 2 + blosc_ctx.MAX_OVERHEAD
        ds[...] = data
        np.testing.assert_array_equal(ds[...], data)
        stores.append(store)
    keys = sorted(k for k in stores[0].list() if k.startswith("c/"))
    assert len(keys) == 4
    for k in keys:
        assert stores[0].get_ranges([(k, None, None)]) == stores[1].get_ranges([(k, None, None)])
