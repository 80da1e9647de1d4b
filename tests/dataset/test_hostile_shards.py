"""Hostile shard indexes and N5 blocks (issue 11): every probe ends in an altarr.errors exception naming
the key and chunk on every read path (region, batched read_chunks, visit, lazy altarr.open), before any
allocation or pread of the claimed size."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest

import altarr as aa
from altarr.codecs.crc32c import crc32c_value
from altarr.errors import AltarrError, CorruptChunkError, CorruptShardError

READS = ["region", "region-part", "chunks", "chunk-one", "visit", "lazy"]


def _read(source, how: str) -> None:
    """Read the dataset at ``source`` (a path or a store), opened afresh, one way (``READS`` and
    ``SIZED_READS`` name them)."""
    ds = aa.open_dataset(source)
    if how == "region":
        ds[...]
    elif how == "region-part":  # one chunk of the shard: its index alone is read (a suffix at the end)
        ds[0:2, 2:4]
    elif how == "chunks":
        ds.read_chunks([(0, 1), (0, 0), (1, 0), (1, 1)])
    elif how == "chunk-one":
        ds.read_chunks([(0, 1)])
    elif how == "visit":
        ds.visit_chunks([(0, 1), (1, 1)], lambda i, a: None)
    elif how == "regions":
        ds.read_regions([np.s_[0:2, 2:4], np.s_[4:6, 0:2]])
    elif how == "lazy":
        np.asarray(aa.open(source))
    elif how == "lazy-part":
        np.asarray(aa.open(source)[0:2, 2:4])
    else:
        raise ValueError(f"unknown read {how!r}")


def _make(tmp_path, **kw) -> str:
    path = str(tmp_path / "a")
    args = dict(shape=(8, 8), dtype="uint16", chunks=(2, 2), shards=(4, 4), compressor="zstd")
    args.update(kw)
    ds = aa.create_dataset(path, **args)
    ds[...] = np.arange(64, dtype="uint16").reshape(8, 8)
    return path


def _patch(shard: str, entry: int, offset: int, nbytes: int, location: str = "end") -> None:
    """Set one (offset, nbytes) entry of a bytes+crc32c index of 4 entries, with a valid crc32c."""
    raw = bytearray(open(shard, "rb").read())
    where = slice(len(raw) - 68, len(raw)) if location == "end" else slice(0, 68)
    index = np.frombuffer(bytes(raw[where][:64]), dtype="<u8").copy().reshape(-1, 2)
    index[entry] = (offset, nbytes)
    body = index.tobytes()
    raw[where] = body + crc32c_value(body).to_bytes(4, "little")
    with open(shard, "wb") as f:
        f.write(bytes(raw))


ENTRIES = {
    "offset 2**63": (2**63, 10),
    "nbytes 2**63": (0, 2**63),
    "nbytes 2**36": (0, 2**36),
    "offset 2**64-1 only": (2**64 - 1, 10),
    "nbytes 2**64-1 only": (0, 2**64 - 1),
    "past the end": (10, 10_000),
}


@pytest.mark.parametrize("how", READS)
@pytest.mark.parametrize("probe", list(ENTRIES))
def test_patched_index_entry(tmp_path, probe, how):
    path = _make(tmp_path)
    _patch(os.path.join(path, "c", "0", "0"), 1, *ENTRIES[probe])
    with pytest.raises(CorruptShardError) as info:
        _read(path, how)
    assert info.value.key == "c/0/0"
    assert info.value.chunk is not None


@pytest.mark.parametrize("how", READS)
@pytest.mark.parametrize("location", ["start", "end"])
def test_entry_pointing_into_the_index(tmp_path, location, how):
    """Every read path on local files refuses it as CorruptShardError naming the key and the entry:
    region reads, visits and lazy reads know the size from the shard's open file; batched reads read
    each end-located index from a file opened for it (the same counted read) and take its size."""
    path = _make(tmp_path, index_location=location)
    shard = os.path.join(path, "c", "0", "0")
    size = os.path.getsize(shard)
    _patch(shard, 1, size - 68 if location == "end" else 0, 16, location)
    with pytest.raises(CorruptShardError, match="outside the data region") as info:
        _read(path, how)
    assert info.value.key == "c/0/0" and info.value.chunk is not None
    assert info.value.byte_range == ((size - 68, size - 52) if location == "end" else (0, 16))


@pytest.mark.parametrize("how", ["region", "region-part", "chunks", "visit"])
def test_an_outer_entry_pointing_into_the_index_of_a_nested_shard(tmp_path, how):
    """Nested shards: the outer index's entries are checked against the object's size too, so an entry
    pointing into the outer index is refused there, before its bytes are read as a nested block."""
    path = _make(tmp_path, shards=[(4, 4), (8, 8)])  # one object of 2 x 2 nested blocks
    shard = os.path.join(path, "c", "0", "0")
    size = os.path.getsize(shard)
    _patch(shard, 1, size - 68, 16)  # the outer index: 4 entries and a crc32c at the end, as above
    with pytest.raises(CorruptShardError, match="outside the data region") as info:
        _read(path, how)
    assert info.value.key == "c/0/0"
    assert info.value.byte_range == (size - 68, size - 52)


def test_an_overlong_entry_in_a_nested_block_of_a_shard_read_whole():
    """A shard read whole has its nested blocks' indexes parsed out of its bytes with the same checks as
    an index read by itself: an entry longer than an inner chunk can be is refused there."""
    from altarr.stores import MemoryStore

    store = MemoryStore()
    ds = aa.create_dataset(
        store,
        shape=(8, 8),
        dtype="uint16",
        chunks=(2, 2),
        shards=[(4, 4), (8, 8)],
        compressor=None,
        checksum=False,
    )
    ds[...] = np.arange(64, dtype="uint16").reshape(8, 8)
    raw = bytearray(store.get("c/0/0"))
    off, nb = np.frombuffer(bytes(raw[-68:-4]), "<u8").reshape(-1, 2)[0].tolist()  # nested block 0
    where = slice(off + nb - 68, off + nb - 4)  # its index: 4 entries of 8-byte chunks, then a crc32c
    inner = np.frombuffer(bytes(raw[where]), "<u8").copy().reshape(-1, 2)
    inner[1] = (0, 16)  # inside the block's data, but twice the 8 bytes a chunk has
    body = inner.tobytes()
    raw[where.start : where.stop + 4] = body + crc32c_value(body).to_bytes(4, "little")
    store.set("c/0/0", bytes(raw))
    with pytest.raises(CorruptShardError, match="longer than the 8 bytes an inner chunk can have") as info:
        aa.open_dataset(store)[...]  # most of the shard wanted: read whole
    assert info.value.key == "c/0/0"


def _patched_in(store, compressor):
    ds = aa.create_dataset(
        store,
        shape=(8, 8),
        dtype="uint16",
        chunks=(2, 2),
        shards=(4, 4),
        compressor=compressor,
        checksum=False,
    )
    ds[...] = np.arange(64, dtype="uint16").reshape(8, 8)
    raw = bytearray(store.get("c/0/0"))
    size = len(raw)
    index = np.frombuffer(bytes(raw[-68:-4]), dtype="<u8").copy().reshape(-1, 2)
    index[1] = (size - 68, index[1][1])  # into the index, as long as the entry it replaces
    body = index.tobytes()
    raw[-68:] = body + crc32c_value(body).to_bytes(4, "little")
    store.set("c/0/0", bytes(raw))
    return ds, size


SIZED_READS = ["region", "region-part", "chunks", "chunk-one", "regions", "lazy", "lazy-part"]


@pytest.fixture(params=["memory", "obstore-memory", "obstore-s3", "zip", "local"])
def sized_store(request, tmp_path):
    """A writable store of each kind that reports object sizes with its reads (``reports_sizes``)."""
    from altarr.stores import LocalStore, MemoryStore, ObstoreStore, ZipStore

    kind = request.param
    if kind == "memory":
        store = MemoryStore()
    elif kind == "obstore-memory":
        store = ObstoreStore("memory://")
    elif kind == "obstore-s3":
        import uuid

        from _s3 import BUCKET, s3_options

        endpoint = request.getfixturevalue("s3_endpoint")
        store = ObstoreStore(f"s3://{BUCKET}/{uuid.uuid4().hex}", **s3_options(endpoint))
    elif kind == "zip":
        store = ZipStore(tmp_path / "a.zip", mode="w")
    else:
        store = LocalStore(tmp_path / "a")
    assert store.reports_sizes
    yield store
    store.close()


def _patched_into_index(store, compressor) -> tuple[int, int]:
    """The dataset of :func:`_patched_in` built in memory, its shard ``c/0/0`` patched so that chunk
    (0, 1)'s entry points into the shard's end-located index, then every object copied to ``store``."""
    from altarr.stores import MemoryStore

    src = MemoryStore()
    _, size = _patched_in(src, compressor)
    for key in src.list():
        store.set(key, src.get(key))
    return size, int(np.frombuffer(src.get("c/0/0")[-68:-4], "<u8")[3])


@pytest.mark.parametrize("how", SIZED_READS)
@pytest.mark.parametrize("compressor", [None, "zstd"])
def test_entry_pointing_into_the_index_where_the_store_reports_sizes(sized_store, compressor, how):
    """Stores that tell an object's size with the bytes of a read (files, memory, zip, obstore over its
    memory backend and S3) hand it on with the end-located index read, at no extra request: an entry
    pointing into the index is CorruptShardError naming the key and the entry on every read path, also
    for raw chunks, whose bytes alone cannot tell index bytes from values (before: a silent wrong
    answer, the index bytes returned as values)."""
    size, nbytes = _patched_into_index(sized_store, compressor)
    with pytest.raises(CorruptShardError, match="outside the data region") as info:
        _read(sized_store, how)
    assert info.value.key == "c/0/0" and info.value.chunk is not None
    assert info.value.byte_range == (size - 68, size - 68 + nbytes)


def test_entry_pointing_into_the_index_of_a_one_dimensional_shard():
    """The issue's reproduction: a raw 1-d shard whose first entry points at the index's first bytes
    read [8 0] (index bytes) as the values of chunk 0."""
    import struct as st

    from altarr.stores import MemoryStore

    s = MemoryStore()
    ds = aa.create_dataset(
        s, shape=(8,), dtype="u1", chunks=(2,), shards=(8,), compressor=None, checksum=False
    )
    ds[:] = np.arange(8, dtype="u1") + 10
    raw = bytearray(s.get("c/0"))
    idx = bytearray(raw[8:72])
    st.pack_into("<QQ", idx, 0, 8, 2)
    raw[8:72] = idx
    raw[72:76] = crc32c_value(bytes(idx)).to_bytes(4, "little")
    s.set("c/0", bytes(raw))
    s.stats.reset()
    with pytest.raises(CorruptShardError, match="outside the data region") as info:
        aa.open_dataset(s)[0:2]
    assert info.value.key == "c/0" and info.value.byte_range == (8, 10)
    assert s.stats.size_queries == 0  # the size came with the index read


@pytest.mark.parametrize("how", READS)
@pytest.mark.parametrize("kind", ["fsspec-memory", "toy"])
def test_entry_pointing_into_the_index_where_the_size_is_not_known(how, kind):
    """Stores that cannot tell an object's size with a ranged read (fsspec over object stores and its
    memory file system, whose suffix reads are native; a store that declares no ``reports_sizes``),
    where a HEAD or stat would cost a counted request: a batched read checks the entry against 2**63
    and the largest encoded block only, and the index bytes it points at reach the chunk's decoder,
    which refuses them where the chunk chain can tell (compressed or checksummed chunks; raw chunks
    without a checksum cannot tell index bytes from chunk bytes). Reads of most of a shard read it
    whole and know its size."""
    import uuid

    from altarr.stores import FsspecStore

    if kind == "toy":
        from toy_store import ToyStore

        store = ToyStore(f"hostile-{uuid.uuid4().hex}")
    else:
        store = FsspecStore(f"memory://hostile-{uuid.uuid4().hex}")
    assert not store.reports_sizes
    ds, size = _patched_in(store, "zstd")
    with pytest.raises(AltarrError) as info:
        _read(store, how)
    assert info.value.key == "c/0/0"


@pytest.mark.parametrize("how", READS)
def test_truncated_n5_shard(tmp_path, how):
    """A sharded N5 dataset (index without crc32c) whose shard lost its last 100 bytes: the index read
    from the new end is garbage, and every entry is checked before use."""
    path = _make(tmp_path, format="n5", compressor="gzip")
    shard = os.path.join(path, "0", "0")
    raw = open(shard, "rb").read()
    with open(shard, "wb") as f:
        f.write(raw[:-100])
    with pytest.raises(AltarrError) as info:
        _read(path, how)
    assert info.value.key == "0/0"


@pytest.mark.parametrize("how", ["region", "chunks", "visit", "lazy"])
@pytest.mark.parametrize(
    "header",
    [
        struct.pack(">HHII", 0, 2, 2**32 - 1, 2**32 - 1),  # a block far larger than the dataset's blocks
        struct.pack(">HHI", 0, 1, 4),  # one dimension in a 2-d dataset
        struct.pack(">HH", 0, 40000),  # ndim claims 40000 sizes, the block ends first
        struct.pack(">HHIII", 1, 2, 4, 4, 2**31),  # varlength numElements != prod(size)
        struct.pack(">HI", 2, 2**32 - 1),  # object mode
        struct.pack(">H", 7),  # unknown mode
    ],
    ids=["huge-size", "wrong-ndim", "ndim-40000", "varlength", "object", "mode-7"],
)
def test_hostile_n5_block_headers(tmp_path, header, how):
    path = str(tmp_path / "n5")
    ds = aa.create_dataset(path, shape=(8, 8), dtype="u2", chunks=(4, 4), format="n5", compressor="gzip")
    ds[...] = 1
    key = ds._access.layout.key((0, 1))
    ds.store.set(key, header + bytes(64))
    with pytest.raises(AltarrError) as info:
        if how == "region":
            ds[...]
        elif how == "chunks":
            ds.read_chunks([(0, 1)])
        elif how == "visit":
            ds.visit_chunks([(0, 1)], lambda i, a: None)
        else:
            np.asarray(aa.open(path))
    assert info.value.key == key


def test_truncated_chunk_payload_is_corrupt_chunk(tmp_path):
    path = _make(tmp_path, shards=None)
    key = os.path.join(path, "c", "0", "1")
    raw = open(key, "rb").read()
    with open(key, "wb") as f:
        f.write(raw[: len(raw) // 2])
    with pytest.raises(CorruptChunkError) as info:
        aa.open_dataset(path)[...]
    assert info.value.key == "c/0/1"
