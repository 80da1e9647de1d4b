"""The blosc codec on both of its paths, against numcodecs' own wrapper: c-blosc's reentrant calls in the
native extension (altarr.native active) and numcodecs' ``Blosc`` (the pure-Python path)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from numcodecs import Blosc

from altarr import native
from altarr.codecs.compress import BloscCodec
from altarr.errors import CodecError, CorruptChunkError


@pytest.fixture(params=["native", "python"])
def path(request):
    if request.param == "native":
        request.getfixturevalue("native_required")
    with native.use_native(request.param == "native"):
        yield request.param


CASES = [
    ("lz4", 5, "shuffle", 2, "<u2"),
    ("zstd", 3, "bitshuffle", 4, "<f4"),
    ("blosclz", 9, "noshuffle", None, "u1"),
    ("lz4hc", 1, "shuffle", 8, "<i8"),
    ("zlib", 6, "shuffle", 2, "<i2"),
]
SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}


@pytest.mark.parametrize("cname,clevel,shuffle,typesize,dtype", CASES)
def test_frames_are_numcodecs_frames_both_ways(path, cname, clevel, shuffle, typesize, dtype):
    """Blosc 1 frames (what numcodecs, zarr-python and N5 readers read): numcodecs decodes ours and we
    decode numcodecs'. (Byte equality is not promised: the linked c-blosc may be another 1.x release than
    numcodecs' own copy, with another zstd inside.)"""
    rng = np.random.default_rng(0)
    a = (rng.normal(100, 5, 40_000)).astype(dtype)
    ours = BloscCodec(cname=cname, clevel=clevel, shuffle=shuffle, typesize=typesize)
    theirs = Blosc(cname=cname, clevel=clevel, shuffle=SHUFFLE[shuffle], typesize=typesize or 1)
    frame = ours.encode(a.view(np.uint8))
    assert bytes(frame[:4]) == bytes(theirs.encode(a.view(np.uint8))[:4])  # blosc 1 header: version, flags
    np.testing.assert_array_equal(np.frombuffer(theirs.decode(frame), dtype), a)
    np.testing.assert_array_equal(np.frombuffer(ours.decode(theirs.encode(a)), dtype), a)
    out = np.empty_like(a)
    assert ours.decode(frame, out=out) is out
    np.testing.assert_array_equal(out, a)


def test_decoding_from_the_main_thread_and_workers_at_once(path):
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


def test_bad_frames_are_refused_with_numcodecs_words(path):
    a = np.arange(5000, dtype="<u2")
    codec = BloscCodec(typesize=2)
    frame = bytes(codec.encode(a))
    ext = native.loaded()
    if path == "native":
        assert ext.blosc_nbytes(frame) == a.nbytes and ext.blosc_nbytes(frame[:10]) is None
    for bad in (frame[:10], frame[:-7], b"\x02\x01" + frame[2:8] + b"\xff" * 8 + frame[16:]):
        if path == "native":
            assert not ext.decompress(2, bad, np.empty(a.nbytes, np.uint8))
        with pytest.raises(CodecError, match="blosc decompression failed"):
            codec.decode(bad)
    # a valid frame of another size is not decoded into a buffer that does not fit it: a larger one is
    # refused from its header (the decoded size a chunk can have is the cap), a smaller one comes back new
    small = np.empty(a.nbytes - 2, np.uint8)
    if path == "native":
        assert not ext.decompress(2, frame, small)
    with pytest.raises(CorruptChunkError, match="announces 10000 bytes"):
        codec.decode(frame, out=small)
    large = np.empty(a.nbytes + 2, np.uint8)
    got = codec.decode(frame, out=large)
    assert got is not large and bytes(got) == a.tobytes()


def test_encoding_into_a_given_buffer(native_required):
    a = np.arange(20_000, dtype="<u2")
    codec = BloscCodec(typesize=2)
    assert codec.encode_bound(a.nbytes) == a.nbytes + 16  # BLOSC_MAX_OVERHEAD
    with native.use_native(False):  # numcodecs allocates its own output: no bound, no arena
        assert codec.encode_bound(a.nbytes) is None
    out = np.empty(a.nbytes + 16, np.uint8)
    frame = codec.encode(a, out=out)
    assert np.shares_memory(frame, out) and bytes(frame) == bytes(codec.encode(a))
    # a buffer that is too small is not used: a new frame comes back
    small = np.empty(100, np.uint8)
    frame2 = codec.encode(a, out=small)
    assert not np.shares_memory(frame2, small) and bytes(frame2) == bytes(frame)


@pytest.mark.parametrize("store_kind", ["memory", "local"])
def test_writes_through_the_output_arena_store_what_fresh_buffers_store(
    tmp_path, monkeypatch, store_kind, native_required
):
    """Several write groups reuse one arena: every shard must still hold its own chunks, byte for byte
    what the write stores without the arena."""
    import altarr as aa
    from altarr.dataset import shard_write
    from altarr.stores import WHOLE, LocalStore, MemoryStore

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
            checksum=False,  # [bytes, blosc]: the chain the arena serves
        )
        if slot == "fresh":
            ds._access.codec.encode_slot = None
        else:
            assert ds._access.codec.encode_slot == 16 * 16 * 16 * 2 + 16  # + BLOSC_MAX_OVERHEAD
        ds[...] = data
        np.testing.assert_array_equal(ds[...], data)
        stores.append(store)
    keys = sorted(k for k in stores[0].list() if k.startswith("c/"))
    assert len(keys) == 4
    for k in keys:
        assert stores[0].get_ranges([(k, WHOLE)]) == stores[1].get_ranges([(k, WHOLE)])
