"""Bad input raises altarr.errors exceptions naming the key (and chunk, byte range, codec) (issue 2)."""

from __future__ import annotations

import json
import struct
import uuid

import google_crc32c
import numpy as np
import pytest

import altarr as aa
from altarr import native
from altarr.errors import (
    AltarrError,
    ChecksumError,
    CorruptChunkError,
    CorruptShardError,
    GridError,
    InvalidKeyError,
    MetadataError,
    UnsupportedError,
)
from altarr.stores import MemoryStore

# region reads and writes through the native kernel and the pure-Python path (conftest.py)
pytestmark = pytest.mark.usefixtures("engine_path")


def sharded(store=None, compressor=None, **kw):
    store = store or MemoryStore()
    ds = aa.create_dataset(
        store,
        shape=(8, 8),
        dtype="uint16",
        chunks=(4, 4),
        shards=(8, 8),
        compressor=compressor,
        checksum=False,
        **kw,
    )
    ds[...] = np.arange(64, dtype="uint16").reshape(8, 8) + 1
    return ds


def index_of(blob: bytes, n: int = 4):
    """(offset, nbytes) pairs of a shard with a bytes(little)+crc32c index at the end."""
    raw = blob[-(16 * n + 4) : -4]
    return [struct.unpack_from("<QQ", raw, 16 * i) for i in range(n)]


def with_index(blob: bytes, entries, n: int = 4) -> bytes:
    raw = b"".join(struct.pack("<QQ", o, nb) for o, nb in entries)
    return blob[: -(16 * n + 4)] + raw + struct.pack("<I", google_crc32c.value(raw))


def test_truncated_shard():
    ds = sharded()
    key = ds.chunk_key((0, 0))
    blob = ds.store.get(key)
    ds.store.set(key, blob[: len(blob) // 3])
    with pytest.raises(AltarrError) as info:
        ds.read_chunks([(0, 0)])
    assert info.value.key == key
    assert key in str(info.value)
    with pytest.raises(AltarrError, match=key):  # a whole-shard read too
        ds[...]
    # a shard shorter than its own index: named with the suffix its index was asked as
    ds.store.set(key, blob[:10])
    with pytest.raises(CorruptShardError) as info:
        ds.read_chunks([(0, 0)])
    assert info.value.message == "shard is truncated: its index needs 68 bytes, the object gave 10"
    assert (info.value.key, info.value.byte_range) == (key, (-68, None))


def test_index_checksum_mismatch():
    ds = sharded()
    key = ds.chunk_key((0, 0))
    blob = bytearray(ds.store.get(key))
    blob[-10] ^= 0xFF
    ds.store.set(key, bytes(blob))
    with pytest.raises(ChecksumError) as info:
        ds.read_chunks([(1, 1)])
    assert info.value.key == key and info.value.codec == "crc32c"
    assert info.value.chunk == (1, 1)  # the first chunk asked for in the shard
    with pytest.raises(ChecksumError) as info:  # 3 of its 4 chunks: the shard is read whole
        ds.read_chunks([(1, 1), (0, 0), (0, 1)])
    assert (info.value.key, info.value.chunk, info.value.codec) == (key, (1, 1), "crc32c")
    with pytest.raises(ChecksumError):  # a write needing the old shard refuses it too, and writes nothing
        ds.write_chunk((0, 0), np.zeros((4, 4), "uint16") + 9)
    assert ds.store.get(key) == bytes(blob)


def test_index_entry_past_the_end():
    ds = sharded()
    key = ds.chunk_key((0, 0))
    blob = ds.store.get(key)
    entries = index_of(blob)
    entries[3] = (entries[3][0], len(blob) * 10)
    ds.store.set(key, with_index(blob, entries))
    with pytest.raises(CorruptShardError) as info:
        ds.read_chunks([(1, 1)])
    err = info.value
    assert err.key == key and err.byte_range is not None and err.byte_range[1] > len(blob)
    with pytest.raises(CorruptShardError) as info:  # whole-shard path: the chunk is named
        ds[...]
    assert info.value.key == key and info.value.chunk == (1, 1)


def test_chunk_decoding_to_the_wrong_size():
    ds = sharded()
    key = ds.chunk_key((0, 0))
    blob = ds.store.get(key)
    entries = index_of(blob)
    entries[2] = (entries[2][0], entries[2][1] - 6)  # 26 bytes cannot hold a 4x4 uint16 chunk
    ds.store.set(key, with_index(blob, entries))
    with pytest.raises(CorruptChunkError) as info:
        ds.read_chunks([(1, 0)])
    assert info.value.key == key and info.value.chunk == (1, 0)
    np.testing.assert_array_equal(ds.read_chunk((0, 0)), np.arange(64).reshape(8, 8)[:4, :4] + 1)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda m: "{not json",
        lambda m: json.dumps({**m, "shape": "big"}),
        lambda m: json.dumps({k: v for k, v in m.items() if k != "data_type"}),
        lambda m: json.dumps({**m, "data_type": "float128"}),
        lambda m: json.dumps({**m, "codecs": [{"name": "no-such-codec"}]}),
        lambda m: json.dumps({**m, "some_extension": {"name": "x"}}),
    ],
)
def test_malformed_zarr_json(mutate):
    ds = sharded()
    meta = json.loads(ds.store.get("zarr.json"))
    ds.store.set("zarr.json", mutate(meta).encode())
    with pytest.raises(MetadataError, match="zarr.json"):
        aa.open_dataset(ds.store)


def test_unknown_extension_that_need_not_be_understood_is_accepted():
    ds = sharded()
    meta = json.loads(ds.store.get("zarr.json"))
    meta["some_extension"] = {"name": "x", "must_understand": False}
    ds.store.set("zarr.json", json.dumps(meta).encode())
    assert aa.open_dataset(ds.store).shape == (8, 8)


def test_chunk_shape_must_divide_the_shard_shape():
    with pytest.raises(GridError):
        aa.create_dataset(MemoryStore(), shape=(10, 10), dtype="u1", chunks=(3, 3), shards=(8, 8))


def test_keys_cannot_escape_the_root(tmp_path):
    inside = tmp_path / "root"
    with pytest.raises(InvalidKeyError):
        aa.create_dataset(aa.LocalStore(inside), path="../escape", shape=(2,), dtype="u1", chunks=(1,))
    assert not (tmp_path / "escape").exists()


def test_failed_write_leaves_old_data_intact(monkeypatch):
    ds = sharded(compressor="zstd")
    before = {k: ds.store.get(k) for k in ds.store.list("")}
    # a value that cannot be cast: nothing is encoded, nothing written
    with pytest.raises((ValueError, TypeError)):
        ds.write_chunks([(0, 0), (1, 1)], [np.zeros((4, 4)), np.array([["x"] * 4] * 4, dtype=object)])
    # an encoder failing midway through a batch: nothing is written either
    from altarr.codecs.compress import ZstdCodec

    calls = {"n": 0}
    original = ZstdCodec.encode

    def failing(self, data):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("disk on fire")
        return original(self, data)

    monkeypatch.setattr(ZstdCodec, "encode", failing)
    # the patched encoder is the pure-Python path's (the kernel's own failures: test_native_kernel.py)
    with native.use_native(False), pytest.raises(AltarrError, match="disk on fire|zstd"):
        ds.write_chunks([(0, 0), (1, 1)], [np.zeros((4, 4), "u2") + 5, np.zeros((4, 4), "u2") + 6])
    assert {k: ds.store.get(k) for k in ds.store.list("")} == before
    monkeypatch.undo()
    np.testing.assert_array_equal(ds[...], np.arange(64).reshape(8, 8) + 1)


def test_opening_a_path_without_metadata_names_the_path(tmp_path):
    missing = tmp_path / "nothing-here.zarr"
    with pytest.raises(MetadataError, match="nothing-here.zarr"):
        aa.open_dataset(str(missing))
    with pytest.raises(MetadataError, match="nothing-here.zarr"):
        aa.open_group(str(missing))


def test_an_index_entry_past_the_end_of_a_local_file_is_refused_before_the_chunk_is_read(tmp_path):
    store = aa.LocalStore(tmp_path / "a.zarr")
    ds = sharded(store)
    key = ds.chunk_key((0, 0))
    blob = store.get(key)
    entries = index_of(blob)
    entries[3] = (len(blob) - 8, entries[3][1])  # a chunk-sized entry running past the end of the file
    store.set(key, with_index(blob, entries))
    store.stats.reset()
    with pytest.raises(CorruptShardError) as info:
        ds.read_chunks([(1, 1)])
    assert info.value.key == key
    assert store.stats.reads == 1  # the index read told the file's size: the chunk is never asked for
    store.stats.reset()  # a visit opens the file: its size comes from the open file
    with pytest.raises(CorruptShardError) as info:
        ds.visit_chunks([(1, 1)], lambda i, a: None)
    assert info.value.key == key
    assert store.stats.reads == 1


def test_a_chunk_range_past_the_end_of_its_file_names_key_chunk_and_bytes(tmp_path):
    from altarr.dataset.shard_read import ChunkRange, ShardReader, _checked_range

    store = aa.LocalStore(tmp_path)
    store.set("s", b"0123456789")
    with store.open_reader("s") as reader:
        assert bytes(ShardReader.slot_bytes("s", ChunkRange((1, 2), 4, 3, reader))) == b"456"
        # the file is shorter than its index said (changed in place under the open file)
        with pytest.raises(
            CorruptShardError, match=r"past the end of the object \(read 4 of 6 bytes\)"
        ) as info:
            ShardReader.slot_bytes("s", ChunkRange((1, 2), 6, 6, reader))
    assert (info.value.key, info.value.chunk, info.value.byte_range) == ("s", (1, 2), (6, 12))
    # an object gone by the time its chunk is read
    with pytest.raises(CorruptShardError, match=r"\(read 0 of 5 bytes\)") as info:
        _checked_range("s", (0, 1), 8, 5, None)
    assert (info.value.key, info.value.chunk, info.value.byte_range) == ("s", (0, 1), (8, 13))


@pytest.mark.parametrize("shards", [(8, 8), None])
def test_a_corrupt_chunk_read_by_visit_or_merged_by_a_write_is_named(tmp_path, shards):
    store = aa.LocalStore(tmp_path / "a.zarr")
    ds = aa.create_dataset(
        store, shape=(8, 8), dtype="uint16", chunks=(4, 4), shards=shards, compressor="zstd"
    )
    ds[...] = np.arange(64, dtype="uint16").reshape(8, 8) + 1
    key = ds.chunk_key((1, 0))
    blob = bytearray(store.get(key))
    if shards is None:
        start, nbytes = 0, len(blob)
    else:
        start, nbytes = index_of(bytes(blob))[2]  # chunk (1, 0)
    blob[start : start + nbytes] = b"\xff" * nbytes  # not a zstd frame any more
    store.set(key, bytes(blob))
    for read in (
        lambda: ds.visit_chunks([(0, 0), (1, 0)], lambda i, a: None),
        lambda: ds.read_chunks([(1, 0)]),
    ):
        with pytest.raises(CorruptChunkError) as info:
            read()
        assert (info.value.key, info.value.chunk, info.value.byte_range) == (
            key,
            (1, 0),
            (start, start + nbytes),
        )
    with pytest.raises(CorruptChunkError) as info:  # a partial write must merge with the old values
        ds[5, 1] = 0
    assert (info.value.key, info.value.chunk) == (key, (1, 0))
    if shards is None:
        assert info.value.byte_range == (0, nbytes)


def test_write_chunks_needs_one_array_per_coordinate():
    ds = sharded()
    with pytest.raises(GridError, match="write_chunks got 2 coordinates but 1 arrays"):
        ds.write_chunks([(0, 0), (1, 1)], [np.zeros((4, 4), "u2")])


def test_an_index_entry_past_the_end_on_a_store_that_tells_no_size_is_named_when_read():
    from altarr.stores.fsspec_store import FsspecStore

    store = FsspecStore(f"memory://past-the-end-{uuid.uuid4().hex}")
    ds = sharded(store)
    key = ds.chunk_key((0, 0))
    blob = store.get(key)
    entries = index_of(blob)
    entries[3] = (len(blob) - 8, entries[3][1])  # a chunk-sized entry running past the end of the object
    store.set(key, with_index(blob, entries))
    with pytest.raises(CorruptShardError, match="past the end of the object") as info:
        ds.read_chunks([(1, 1)])
    assert (info.value.key, info.value.chunk) == (key, (1, 1))
    assert info.value.byte_range == (len(blob) - 8, len(blob) - 8 + entries[3][1])


@pytest.mark.parametrize("wanted", [[(0, 0)], [(0, 0), (0, 1), (1, 0)]])  # the index alone, the shard whole
def test_an_index_entry_longer_than_a_chunk_can_be_is_refused_at_the_index(wanted):
    """An entry inside the object but longer than an encoded chunk can be is refused by the index
    check (the shard is corrupt), before any chunk bytes are read or decoded."""
    ds = sharded()
    key = ds.chunk_key((0, 0))
    blob = ds.store.get(key)
    entries = index_of(blob)
    entries[0] = (0, 64)  # 32 bytes is all an uncompressed 4x4 uint16 chunk can take
    ds.store.set(key, with_index(blob, entries))
    with pytest.raises(CorruptShardError, match="longer than the 32 bytes an inner chunk can have") as info:
        aa.open_dataset(ds.store).read_chunks(wanted)
    assert (info.value.key, info.value.chunk, info.value.byte_range) == (key, (0, 0), (0, 64))


@pytest.mark.parametrize("whole", [False, True], ids=["index-read", "whole-shard"])
def test_an_index_error_names_the_dataset_chunk_not_its_place_in_the_shard(whole):
    """The entry of inner chunk (1, 1) of shard (1, 0) is dataset chunk (3, 1): ``chunk`` says so, the
    message keeps the place inside the shard, ``key`` names the shard."""
    ds = aa.create_dataset(
        MemoryStore(),
        shape=(8, 8),
        dtype="uint16",
        chunks=(2, 2),
        shards=(4, 4),
        compressor=None,
        checksum=False,
    )
    ds[...] = 1
    key = ds.chunk_key((3, 1))  # the shard holding chunk (3, 1): c/1/0
    blob = ds.store.get(key)
    entries = index_of(blob)
    entries[3] = (0, 64)  # longer than the 8 bytes a chunk can take
    ds.store.set(key, with_index(blob, entries))
    wanted = [(2, 0), (2, 1), (3, 0), (3, 1)] if whole else [(3, 1)]  # all of the shard: read whole
    with pytest.raises(CorruptShardError) as info:
        aa.open_dataset(ds.store).read_chunks(wanted)
    assert info.value.message.startswith("shard index entry of inner chunk (1, 1) points at bytes [0, 64)")
    assert (info.value.key, info.value.chunk, info.value.byte_range) == (key, (3, 1), (0, 64))


def nested(store=None):
    """(8, 8) uint16, 2 x 2 uncompressed chunks in 4 x 4 inner shards (100 bytes each: four 8-byte chunks
    and a 68-byte index) in one 8 x 8 outer shard (468 bytes), every chunk stored."""
    ds = aa.create_dataset(
        store or MemoryStore(),
        shape=(8, 8),
        dtype="uint16",
        chunks=(2, 2),
        shards=[(4, 4), (8, 8)],
        compressor=None,
        checksum=False,
    )
    ds[...] = np.arange(64, dtype="uint16").reshape(8, 8) + 1
    return ds


def test_an_outer_index_entry_past_the_end_is_named_when_its_nested_shard_is_read_whole():
    """On a store that tells no object size the outer index cannot be checked against it: an inner shard
    whose entry runs past the end of the object is read short, which its whole read names."""
    from altarr.stores.fsspec_store import FsspecStore

    ds = nested(FsspecStore(f"memory://nested-past-the-end-{uuid.uuid4().hex}"))
    key = ds.chunk_key((0, 0))
    blob = ds.store.get(key)
    assert len(blob) == 468 and index_of(blob) == [(0, 100), (100, 100), (200, 100), (300, 100)]
    ds.store.set(key, with_index(blob, [(0, 100), (100, 100), (200, 100), (400, 100)]))
    # 2 of the 4 chunks of inner shard (1, 1): read whole; 2 of the 16 of the outer shard: not
    with pytest.raises(CorruptShardError) as info:
        aa.open_dataset(ds.store).read_chunks([(2, 2), (3, 3)])
    assert info.value.message == "read 68 of 100 bytes of a nested shard"
    assert (info.value.key, info.value.byte_range) == (key, (400, 500))


def test_an_inner_index_entry_past_its_nested_shard_is_refused_even_inside_the_object():
    """Entries of an inner index are checked against their nested shard's own bytes, not the object's."""
    ds = nested()
    key = ds.chunk_key((0, 0))
    blob = ds.store.get(key)
    inner = blob[:100]  # inner shard (0, 0): chunks at [0, 32), its index at [32, 100)
    assert index_of(inner) == [(0, 8), (8, 8), (16, 8), (24, 8)]
    ds.store.set(key, with_index(inner, [(40, 8), (8, 8), (16, 8), (24, 8)]) + blob[100:])
    with pytest.raises(CorruptShardError) as info:
        aa.open_dataset(ds.store).read_chunks([(0, 0)])
    assert info.value.message.startswith(
        "shard index entry of inner chunk (0, 0) points at bytes [40, 48), outside the data region [0, 32) "
        "of a 100-byte shard"
    )
    assert (info.value.key, info.value.byte_range) == (key, (40, 48))


@pytest.mark.parametrize("nested", [False, True], ids=["shard", "nested-shard"])
def test_a_corrupt_shard_index_met_by_a_merging_write_names_the_shard(nested):
    """A write that carries a shard's other chunks over splits the old shard (and the nested shard
    holding the written chunk): a corrupt index there is refused naming the shard's key, and nothing
    is written."""
    store = MemoryStore()
    shards = [(4,), (8,)] if nested else (4,)
    ds = aa.create_dataset(
        store, shape=(8,), dtype="u2", chunks=(2,), shards=shards, compressor=None, checksum=False
    )
    ds[...] = np.arange(8, dtype="u2") + 1
    blob = bytearray(store.get("c/0"))
    if nested:  # the last byte of the first nested shard: its index checksum (the outer index is intact)
        offset, nbytes = index_of(bytes(blob), n=2)[0]
        blob[offset + nbytes - 1] ^= 0xFF
    else:
        blob[-1] ^= 0xFF
    store.set("c/0", bytes(blob))
    with pytest.raises(ChecksumError) as info:
        ds.write_chunks([(0,)], [np.full(2, 7, "u2")])
    assert str(info.value) == (
        "shard index: crc32c mismatch: stored checksum 0x706FFFF6, computed 0x8F6FFFF6 over 32 bytes "
        "[key='c/0', codec='crc32c']"
    )
    assert store.get("c/0") == bytes(blob)


TRANSPOSE = {"name": "transpose", "configuration": {"order": [1, 0]}}


@pytest.mark.parametrize(
    ("before", "after", "nested", "names"),
    [
        ([TRANSPOSE], [], False, ["transpose"]),
        ([], [{"name": "crc32c"}], False, ["crc32c"]),
        ([TRANSPOSE], [{"name": "gzip", "configuration": {"level": 1}}], False, ["transpose", "gzip"]),
        ([], [{"name": "crc32c"}], True, ["crc32c"]),  # around the nested shard, inside the outer one
    ],
)
def test_codecs_around_sharding_are_refused_by_name(before, after, nested, names):
    ds = sharded()
    doc = json.loads(ds.store.get("zarr.json"))
    sharding = doc["codecs"][0]
    if nested:  # the outer shard's chain: the inner sharding codec with a codec around it
        inner = {**sharding, "configuration": {**sharding["configuration"], "chunk_shape": [4, 4]}}
        sharding["configuration"]["chunk_shape"] = [8, 8]
        sharding["configuration"]["codecs"] = [*before, inner, *after]
    else:
        doc["codecs"] = [*before, sharding, *after]
    store = MemoryStore()
    store.set("zarr.json", json.dumps(doc).encode())
    with pytest.raises(UnsupportedError) as info:
        aa.open_dataset(store)
    assert str(info.value) == (
        f"codecs {names} around sharding_indexed would need whole-shard decoding; altarr supports "
        "array->array codecs inside the shard's own codec chain only [codec='sharding_indexed']"
    )
    assert info.value.codec == "sharding_indexed"


def test_an_array_too_large_to_serve_is_refused_naming_its_metadata_document():
    store = MemoryStore()
    aa.create_dataset(store, path="a/b", shape=(8, 8), dtype="u2", chunks=(4, 4), shards=(8, 8))
    doc = json.loads(store.get("a/b/zarr.json"))
    doc["shape"] = [2**40, 2**40]
    store.set("a/b/zarr.json", json.dumps(doc).encode())
    with pytest.raises(MetadataError) as info:
        aa.open_dataset(store, path="a/b")
    assert str(info.value) == (
        "field 'shape': 1208925819614629174706176 elements, more than the 2**62 altarr supports "
        "[key='a/b/zarr.json']"
    )


@pytest.mark.parametrize(
    ("prefix", "documents", "key"),
    [("a/b", True, "a/b/zarr.json"), ("", True, "zarr.json"), ("a/b", False, "a/b"), ("", False, None)],
)
def test_the_layout_names_the_first_metadata_document_or_else_the_arrays_path(prefix, documents, key):
    """A spec from a format plug-in may come without its metadata documents: the array's path (None at
    the root) is named instead."""
    import dataclasses

    from altarr.dataset.layout import ShardLayout

    spec = dataclasses.replace(sharded().spec, shape=(2**40, 2**40))
    if not documents:
        spec = dataclasses.replace(spec, metadata={})
    with pytest.raises(MetadataError, match="more than the 2[*][*]62 altarr supports") as info:
        ShardLayout(spec, prefix)
    assert info.value.key == key


def test_the_limits_hold_per_level_a_chunk_for_its_bytes_a_shard_for_its_index():
    # a shard of 32 GiB of 16 MiB chunks is fine (only a chunk is ever decoded whole) ...
    ds = aa.create_dataset(
        MemoryStore(), shape=(2**18, 2**17), dtype="u1", chunks=(2**12, 2**12), shards=(2**18, 2**17)
    )
    assert ds.shards == (2**18, 2**17)
    # ... but not a shard of more chunks than an index may have, nor a nested one of too many blocks
    for chunks, shards, message in [
        ((1, 1), (2**16, 2**16), "shard shape [65536, 65536] holds 4294967296 blocks of [1, 1]"),
        ((1, 1), [(4, 4), (2**16, 2**16)], "shard shape [65536, 65536] holds 268435456 blocks of [4, 4]"),
    ]:
        with pytest.raises(MetadataError) as info:
            aa.create_dataset(MemoryStore(), shape=(2**16, 2**16), dtype="u1", chunks=chunks, shards=shards)
        assert (
            str(info.value) == f"{message}, more than the 16777216 a shard index may have [key='zarr.json']"
        )


def test_an_outer_index_entry_longer_than_a_nested_shard_can_be_is_refused_at_the_index():
    """Nested sharding: an outer entry may be as long as a full nested shard (its chunks at their
    largest and its index), not a byte longer."""
    store = MemoryStore()
    ds = aa.create_dataset(
        store, shape=(16,), dtype="u2", chunks=(2,), shards=[(8,), (16,)], compressor=None, checksum=False
    )
    values = np.arange(16, dtype="u2") + 1
    ds[...] = values
    blob = store.get("c/0")
    entries = index_of(blob, n=2)
    assert entries == [(0, 84), (84, 84)]  # 4 chunks of 4 bytes, 4 index entries of 16, a checksum
    fresh = aa.open_dataset(store)
    np.testing.assert_array_equal(np.concatenate(fresh.read_chunks([(0,), (5,)])), values[[0, 1, 10, 11]])
    np.testing.assert_array_equal(fresh[...], values)
    entries[0] = (0, 85)
    store.set("c/0", with_index(blob, entries, n=2))
    with pytest.raises(CorruptShardError, match="longer than the 84 bytes an inner chunk can have") as info:
        aa.open_dataset(store).read_chunks([(0,)])
    assert (info.value.key, info.value.byte_range) == ("c/0", (0, 85))
