"""The ``sharding_indexed`` byte layer: index layout, assemble/split, nesting, and interop with
zarr-python and tensorstore (both read and write, for real)."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import google_crc32c
import numpy as np
import pytest
import tensorstore as ts
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.codecs import GzipCodec as ZGzip
from zarr.codecs import ZstdCodec as ZZstd

from altarr.codecs import (
    EMPTY,
    BloscCodec,
    BytesCodec,
    CodecChain,
    Crc32cCodec,
    GzipCodec,
    ShardingCodec,
    TransposeCodec,
    ZstdCodec,
    codec_from_json,
)
from altarr.codecs import sharding as sharding_module
from altarr.codecs.n5 import N5BlockCodec
from altarr.errors import (
    ChecksumError,
    CodecError,
    CorruptChunkError,
    CorruptShardError,
    GridError,
    MetadataError,
)


def inner_slices(pos: tuple[int, ...], chunk: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(p * c, (p + 1) * c) for p, c in zip(pos, chunk, strict=True))


def write_zarr3(
    path: Path, shape: tuple[int, ...], shard: tuple[int, ...], dtype: str, codecs: list, fill=0
) -> None:
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(shape),
        "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shard)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill,
        "codecs": codecs,
    }
    path.mkdir(parents=True, exist_ok=True)
    (path / "zarr.json").write_text(json.dumps(meta))


def put(path: Path, key: str, data: bytes) -> None:
    p = path / key
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)


# --- the spec's worked example -------------------------------------------------------------------------
def test_spec_example_index_layout(tmp_path: Path) -> None:
    sc = ShardingCodec([32, 32], [BytesCodec("little")], [BytesCodec("little"), Crc32cCodec()])
    cps = sc.chunks_per_shard((64, 64))
    assert cps == (2, 2)
    assert sc.index_nbytes(cps) == 16 * 4 + 4 == 68
    a = (np.arange(64 * 64) % 251).astype("uint8").reshape(64, 64)
    shard = sc.encode(a)
    assert len(shard) == 4096 + 68
    index = shard[-68:]
    words = struct.unpack("<8Q", index[:64])
    # (0,0) off,nb | (0,1) off,nb | (1,0) off,nb | (1,1) off,nb | checksum
    assert words == (0, 1024, 1024, 1024, 2048, 1024, 3072, 1024)
    assert struct.unpack("<I", index[64:])[0] == google_crc32c.value(index[:64])
    for i, pos in enumerate(np.ndindex(2, 2)):
        assert shard[1024 * i : 1024 * (i + 1)] == a[inner_slices(pos, (32, 32))].tobytes()
    # zarr-python writes the same chunks and index size (its payload order is Morton, ours C order)
    z = zarr.create_array(
        store=str(tmp_path / "z"),
        shape=(64, 64),
        chunks=(32, 32),
        shards=(64, 64),
        dtype="uint8",
        compressors=None,
    )
    z[:] = a
    theirs = (tmp_path / "z" / "c" / "0" / "0").read_bytes()
    assert len(theirs) == len(shard)
    assert [bytes(p) for p in sc.split(theirs, cps)] == [bytes(p) for p in sc.split(shard, cps)]


# --- the n5-zarr mid_sharded fixture, built by hand -----------------------------------------------------
MID_SHARDED_CODECS = [
    {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": [2, 3],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_location": "end",
        },
    }
]


def mid_sharded_object(a: np.ndarray) -> bytes:
    c = {pos: a[inner_slices(pos, (2, 3))].tobytes() for pos in np.ndindex(2, 2)}
    payload = c[(0, 0)] + c[(1, 0)] + c[(0, 1)] + c[(1, 1)]  # write order differs from index order
    index = struct.pack("<8Q", 0, 6, 12, 6, 6, 6, 18, 6)  # (0,0) (0,1) (1,0) (1,1)
    return payload + index


def test_mid_sharded_fixture(tmp_path: Path) -> None:
    a = np.arange(24, dtype="uint8").reshape(4, 6) * 3
    obj = mid_sharded_object(a)
    assert len(obj) == 88
    chain = CodecChain.from_json(MID_SHARDED_CODECS)
    sc = chain.array_bytes
    assert isinstance(sc, ShardingCodec) and sc.index_location == "end"
    cps = sc.chunks_per_shard((4, 6))
    assert sc.index_nbytes(cps) == 64
    index = sc.decode_index(obj[-64:], cps, object_size=88)
    assert index.tolist() == [[[0, 6], [12, 6]], [[6, 6], [18, 6]]]
    pieces = sc.split(obj, cps)
    for pos, piece in zip(np.ndindex(*cps), pieces, strict=True):
        assert piece is not None
        np.testing.assert_array_equal(sc.codecs.decode(piece, (2, 3), "uint8"), a[inner_slices(pos, (2, 3))])
    np.testing.assert_array_equal(chain.decode(obj, (4, 6), "uint8"), a)
    # zarr-python agrees with the hand-built object
    write_zarr3(tmp_path, (4, 6), (4, 6), "uint8", MID_SHARDED_CODECS)
    put(tmp_path, "c/0/0", obj)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path), mode="r")[:], a)
    # re-assembling compacts in C order: same chunks, canonical layout, 88 bytes
    again = sc.assemble(pieces, cps)
    assert len(again) == 88 and again != obj
    assert [bytes(p) for p in sc.split(again, cps)] == [bytes(p) for p in pieces]


# --- start vs end, assemble/split -----------------------------------------------------------------------
@pytest.mark.parametrize("location", ["start", "end"])
def test_start_and_end_locations(location: str) -> None:
    sc = ShardingCodec([2], [BytesCodec()], [BytesCodec("little")], location)
    cps = (4,)
    chunks = [b"ab", None, b"cdef", b""]
    shard = sc.assemble(chunks, cps)
    n = sc.index_nbytes(cps)
    assert n == 64 and len(shard) == 6 + 64
    if location == "start":
        words = struct.unpack("<8Q", shard[:64])
        assert shard[64:] == b"abcdef"
        assert words == (64, 2, EMPTY, EMPTY, 66, 4, 70, 0)
    else:
        words = struct.unpack("<8Q", shard[-64:])
        assert shard[:6] == b"abcdef"
        assert words == (0, 2, EMPTY, EMPTY, 2, 4, 6, 0)
    got = sc.split(shard, cps)
    assert [None if g is None else bytes(g) for g in got] == chunks
    assert all(isinstance(g, memoryview) for g in got if g is not None)  # zero-copy slices


def test_assemble_empty_shard_and_count() -> None:
    sc = ShardingCodec([2, 2])
    assert sc.assemble([None] * 4, (2, 2)) is None
    with pytest.raises(GridError, match="4 chunk entries"):
        sc.assemble([b"x"] * 3, (2, 2))


def test_split_carries_untouched_chunks_as_bytes() -> None:
    sc = ShardingCodec([4, 4], [BytesCodec("little"), ZstdCodec(3)])
    a = np.arange(64, dtype="int64").reshape(8, 8)
    shard = sc.encode(a)
    pieces = sc.split(shard, (2, 2))
    replacement = np.full((4, 4), -1, dtype="int64")
    pieces[2] = sc.codecs.encode(replacement)
    new = sc.assemble(pieces, (2, 2))
    expected = a.copy()
    expected[4:8, 0:4] = -1
    np.testing.assert_array_equal(sc.decode(new, (8, 8), "int64"), expected)
    old_raw, new_raw = sc.split(shard, (2, 2)), sc.split(new, (2, 2))
    for i in (0, 1, 3):
        assert bytes(old_raw[i]) == bytes(new_raw[i])


def test_decode_fill_value_and_out() -> None:
    sc = ShardingCodec([2, 2], [BytesCodec("big"), GzipCodec(1)])
    a = np.arange(16, dtype="float32").reshape(4, 4)
    pieces = [sc.codecs.encode(np.ascontiguousarray(a[inner_slices(p, (2, 2))])) for p in np.ndindex(2, 2)]
    pieces[1] = None
    shard = sc.assemble(pieces, (2, 2))
    expected = a.copy()
    expected[0:2, 2:4] = 7.5
    np.testing.assert_array_equal(sc.decode(shard, (4, 4), "float32", fill_value=7.5), expected)
    out = np.zeros((4, 4), "float32")
    assert sc.decode(shard, (4, 4), "float32", fill_value=7.5, out=out) is out
    np.testing.assert_array_equal(out, expected)
    # through a chain: fill_value reaches the sharding codec
    np.testing.assert_array_equal(CodecChain([sc]).decode(shard, (4, 4), "float32", fill_value=7.5), expected)


@settings(max_examples=60, deadline=None)
@given(
    chunks=st.lists(st.one_of(st.none(), st.binary(max_size=40)), min_size=1, max_size=12),
    start=st.booleans(),
    crc=st.booleans(),
)
def test_assemble_split_round_trip(chunks: list[bytes | None], start: bool, crc: bool) -> None:
    index_codecs: list[Any] = [BytesCodec("big" if crc else "little")] + ([Crc32cCodec()] if crc else [])
    sc = ShardingCodec([1], index_codecs=index_codecs, index_location="start" if start else "end")
    cps = (len(chunks),)
    shard = sc.assemble(chunks, cps)
    if all(c is None for c in chunks):
        assert shard is None
        return
    assert len(shard) == sum(len(c) for c in chunks if c is not None) + sc.index_nbytes(cps)
    got = sc.split(shard, cps)
    assert [None if g is None else bytes(g) for g in got] == chunks


# --- nested sharding ------------------------------------------------------------------------------------
def test_nested_sharding_round_trip() -> None:
    chunk_chain = CodecChain([BytesCodec("little"), ZstdCodec(1)])
    inner = ShardingCodec([4, 4], chunk_chain, index_location="end")
    outer = ShardingCodec([8, 8], [inner], index_location="start")
    a = np.arange(256, dtype="uint16").reshape(16, 16)
    shard = outer.encode(a)
    # build the same object bottom-up from raw chunk bytes
    subs = []
    for sp in np.ndindex(2, 2):
        sub = a[inner_slices(sp, (8, 8))]
        raw = [
            chunk_chain.encode(np.ascontiguousarray(sub[inner_slices(cp, (4, 4))])) for cp in np.ndindex(2, 2)
        ]
        subs.append(inner.assemble(raw, (2, 2)))
    assert outer.assemble(subs, (2, 2)) == shard
    # and take it apart top-down
    for sp, sub_bytes in zip(np.ndindex(2, 2), outer.split(shard, (2, 2)), strict=True):
        for cp, raw in zip(np.ndindex(2, 2), inner.split(sub_bytes, (2, 2)), strict=True):
            block = chunk_chain.decode(raw, (4, 4), "uint16")
            np.testing.assert_array_equal(block, a[inner_slices(sp, (8, 8))][inner_slices(cp, (4, 4))])
    np.testing.assert_array_equal(outer.decode(shard, (16, 16), "uint16"), a)
    chain = CodecChain.from_json([outer.to_json()])
    assert isinstance(chain.array_bytes, ShardingCodec)
    assert isinstance(chain.array_bytes.codecs.array_bytes, ShardingCodec)
    np.testing.assert_array_equal(chain.decode(shard, (16, 16), "uint16"), a)


def test_nested_inner_shape_must_divide() -> None:
    with pytest.raises(MetadataError, match="codecs"):
        ShardingCodec([8, 8], [ShardingCodec([3, 3])])


# --- zarr-python and tensorstore interop ----------------------------------------------------------------
@pytest.mark.parametrize("compressor", [ZZstd(level=1), ZGzip(level=1), None])
def test_read_shards_written_by_zarr_python(tmp_path: Path, compressor: Any) -> None:
    shape, chunks, shards = (10, 13), (2, 3), (4, 6)
    a = (np.arange(130, dtype="int16") - 60).reshape(shape)
    z = zarr.create_array(
        store=str(tmp_path),
        shape=shape,
        chunks=chunks,
        shards=shards,
        dtype="int16",
        compressors=compressor,
        fill_value=-5,
    )
    z[:] = a
    meta = json.loads((tmp_path / "zarr.json").read_text())
    chain = CodecChain.from_json(meta["codecs"])
    assert chain.to_json() == meta["codecs"]
    sc = chain.array_bytes
    assert isinstance(sc, ShardingCodec)
    cps = sc.chunks_per_shard(shards)
    padded = np.full((12, 18), -5, dtype="int16")
    padded[:10, :13] = a
    seen_empty = 0
    for si in np.ndindex(3, 3):
        obj = (tmp_path / "c" / str(si[0]) / str(si[1])).read_bytes()
        region = padded[inner_slices(si, shards)]
        for cp, raw in zip(np.ndindex(*cps), sc.split(obj, cps), strict=True):
            g = tuple(s * c + p for s, c, p in zip(si, cps, cp, strict=True))  # global chunk position
            inside = all(gp * c < n for gp, c, n in zip(g, chunks, shape, strict=True))
            if raw is None:
                assert not inside  # zarr-python leaves chunks wholly outside the array out
                seen_empty += 1
                continue
            np.testing.assert_array_equal(
                sc.codecs.decode(raw, chunks, "int16"), region[inner_slices(cp, chunks)]
            )
        np.testing.assert_array_equal(chain.decode(obj, shards, "int16", fill_value=-5), region)
    assert seen_empty > 0


@pytest.mark.parametrize("location", ["start", "end"])
@pytest.mark.parametrize("nested", [False, True])
def test_shards_we_write_are_read_by_zarr_python_and_tensorstore(
    tmp_path: Path, location: str, nested: bool
) -> None:
    shape, shard = (24, 20), (8, 10)
    inner_chain = [TransposeCodec([1, 0]), BytesCodec("big"), GzipCodec(2), Crc32cCodec()]
    if nested:
        codecs: list[Any] = [
            ShardingCodec([2, 5], inner_chain, index_location="start" if location == "end" else "end")
        ]
        sc = ShardingCodec([4, 5], codecs, index_location=location)
    else:
        sc = ShardingCodec([4, 5], inner_chain, index_location=location)
    a = np.random.default_rng(3).standard_normal(shape).astype("float64")
    write_zarr3(tmp_path, shape, shard, "float64", [sc.to_json()])
    for si in np.ndindex(3, 2):
        put(tmp_path, f"c/{si[0]}/{si[1]}", sc.encode(a[inner_slices(si, shard)]))
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path), mode="r")[:], a)
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)}}).result()
    np.testing.assert_array_equal(t.read().result(), a)


def test_zarr_python_reads_partial_shards_we_assemble(tmp_path: Path) -> None:
    sc = codec_from_json(MID_SHARDED_CODECS[0])
    a = np.arange(24, dtype="uint8").reshape(4, 6) + 1
    pieces = [a[inner_slices(p, (2, 3))].tobytes() for p in np.ndindex(2, 2)]
    pieces[0] = pieces[3] = None
    write_zarr3(tmp_path, (4, 6), (4, 6), "uint8", MID_SHARDED_CODECS, fill=9)
    put(tmp_path, "c/0/0", sc.assemble(pieces, (2, 2)))
    expected = a.copy()
    expected[0:2, 0:3] = expected[2:4, 3:6] = 9
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path), mode="r")[:], expected)


# --- bad input ------------------------------------------------------------------------------------------
def _shard(location: str = "end", crc: bool = True) -> tuple[ShardingCodec, bytes]:
    idx: list[Any] = [BytesCodec("little")] + ([Crc32cCodec()] if crc else [])
    sc = ShardingCodec([2, 2], [BytesCodec("little")], idx, location)
    return sc, sc.encode(np.arange(16, dtype="int32").reshape(4, 4))


def test_truncated_shard() -> None:
    sc, shard = _shard("end")
    with pytest.raises(CorruptShardError, match="shorter than its 68-byte index"):
        sc.split(shard[:50], (2, 2))
    with pytest.raises(ChecksumError):  # the index is read from the wrong place
        sc.split(shard[:-1], (2, 2))
    sc, shard = _shard("start", crc=False)
    with pytest.raises(CorruptShardError) as info:
        sc.split(shard[:-1], (2, 2))
    assert info.value.chunk == (1, 1)
    assert info.value.byte_range == (64 + 48, 64 + 64)


@pytest.fixture(params=["python", "numpy"])
def index_check(request, monkeypatch):
    """Both ways ``index_words`` checks an index: entry by entry on Python ints (small, usual encoding)
    and with NumPy (``SCALAR_INDEX_ENTRIES`` set to 0 sends every index there)."""
    if request.param == "numpy":
        monkeypatch.setattr(sharding_module, "SCALAR_INDEX_ENTRIES", 0)
    return request.param


def test_bad_crc_in_index() -> None:
    sc, shard = _shard("end")
    bad = bytearray(shard)
    bad[-10] ^= 0x01
    with pytest.raises(ChecksumError, match="shard index") as info:
        sc.split(bytes(bad), (2, 2))
    assert info.value.codec == "crc32c"
    with pytest.raises(ChecksumError):
        sc.decode_index(bytes(bad[-68:]), (2, 2))


def test_index_entry_outside_object(index_check: str) -> None:
    sc = ShardingCodec([2], [BytesCodec()], [BytesCodec("little")], "end")
    index = np.array([[0, 4], [4, 100]], dtype="<u8")
    obj = b"abcdefgh" + index.tobytes()
    with pytest.raises(CorruptShardError) as info:
        sc.split(obj, (2,))
    assert info.value.chunk == (1,) and info.value.byte_range == (4, 104)
    assert "inner chunk (1,)" in str(info.value)
    # an offset overflowing uint64 arithmetic is caught too
    huge = np.array([[0, 4], [2**64 - 2, 8]], dtype="<u8")
    with pytest.raises(CorruptShardError):
        sc.split(b"abcdefgh" + huge.tobytes(), (2,))
    # a start index refuses offsets pointing into the index itself
    sc_start = ShardingCodec([2], [BytesCodec()], [BytesCodec("little")], "start")
    index = np.array([[0, 4], [36, 4]], dtype="<u8")
    with pytest.raises(CorruptShardError) as info:
        sc_start.split(index.tobytes() + b"abcdefgh", (2,))
    assert info.value.chunk == (0,)


def test_half_empty_entries_are_refused(index_check: str) -> None:
    """Only both words 2**64-1 mark an empty chunk (as zarr-python and the spec say); an entry with one
    of them is corrupt, not missing data (issue 11: it used to read as fill)."""
    sc = ShardingCodec([2], [BytesCodec()], [BytesCodec("little")])
    for bad in ([EMPTY, 4], [0, EMPTY]):
        index = np.array([[EMPTY, EMPTY], bad, [0, 2]], dtype="<u8")
        with pytest.raises(CorruptShardError, match="one word is the empty marker") as info:
            sc.decode_index(index.tobytes(), (3,), object_size=2 + 48)
        assert info.value.chunk == (1,)
    index = np.array([[EMPTY, EMPTY], [EMPTY, EMPTY], [0, 2]], dtype="<u8")
    got = sc.decode_index(index.tobytes(), (3,), object_size=2 + 48)
    assert got.tolist() == [[EMPTY, EMPTY], [EMPTY, EMPTY], [0, 2]]
    assert got.flags.writeable and got.dtype == np.uint64
    with pytest.raises(CorruptShardError, match="expected 48 bytes"):
        sc.decode_index(index.tobytes()[:-1], (3,))
    assert sc.encode_index(got) == np.array(got, dtype="<u8").tobytes()


def test_index_entries_checked_against_size_limits_and_the_index(index_check: str) -> None:
    """Entries must lie in the data region (not in the index, at either end), below 2**63 when the
    object's size is unknown, and no longer than an inner chunk can be."""
    for location in ("start", "end"):
        sc = ShardingCodec([2], [BytesCodec()], [BytesCodec("little")], index_location=location)
        base = 32 if location == "start" else 0
        ok = np.array([[base, 2], [base + 2, 2]], dtype="<u8")
        assert sc.decode_index(ok.tobytes(), (2,), object_size=36, max_nbytes=2).tolist() == ok.tolist()
        into_index = np.array([[base, 2], [32 if location == "end" else 0, 2]], dtype="<u8")
        with pytest.raises(CorruptShardError, match="outside the data region"):
            sc.decode_index(into_index.tobytes(), (2,), object_size=36)
        for entry in ([2**63, 1], [base, 2**63], [2**63 - 1, 2]):
            bad = np.array([[base, 2], entry], dtype="<u8")
            with pytest.raises(CorruptShardError, match="outside the data region") as info:
                sc.decode_index(bad.tobytes(), (2,))
            assert info.value.chunk == (1,)
        too_long = np.array([[base, 2], [base + 2, 3]], dtype="<u8")
        with pytest.raises(CorruptShardError, match="longer than the 2 bytes"):
            sc.decode_index(too_long.tobytes(), (2,), max_nbytes=2)


_WORD = st.one_of(
    st.sampled_from([EMPTY, EMPTY - 1, 2**63, 2**63 - 1, 0]), st.integers(0, 400), st.integers(0, 2**64 - 1)
)


def _index_outcome(sc: ShardingCodec, data: bytes, cps: tuple[int, ...], size: Any, longest: Any) -> Any:
    try:
        index = sc.decode_index(data, cps, object_size=size, max_nbytes=longest)
    except CodecError as e:
        return type(e).__name__, str(e), e.chunk, e.byte_range
    assert index.dtype == np.uint64 and index.flags.writeable and index.shape == (*cps, 2)
    words = sc.index_words(data, cps, object_size=size, max_nbytes=longest)
    assert np.frombuffer(words, dtype=np.uint64).tolist() == index.reshape(-1).tolist()
    return index.tolist()


@settings(max_examples=150, deadline=None, database=None)
@given(
    words=st.lists(st.tuples(_WORD, _WORD), min_size=6, max_size=6),
    good=st.lists(st.booleans(), min_size=6, max_size=6),
    location=st.sampled_from(["start", "end"]),
    size=st.one_of(st.none(), st.integers(0, 500)),
    longest=st.one_of(st.none(), st.integers(0, 300)),
    crc=st.booleans(),
)
def test_small_indexes_are_checked_on_python_ints_exactly_as_numpy_checks_them(
    words, good, location, size, longest, crc
):
    """``decode_index`` checks indexes of at most ``SCALAR_INDEX_ENTRIES`` entries in the usual encoding
    on Python integers: same values, same first error (half-empty entries before bad ranges, C order)."""
    index_codecs = [BytesCodec("little")] + ([Crc32cCodec()] if crc else [])
    sc = ShardingCodec([2, 1], [BytesCodec()], index_codecs, location)
    entries = [(w if keep else (EMPTY, EMPTY)) for w, keep in zip(words, good, strict=True)]
    data = np.array(entries, dtype="<u8").tobytes()
    if crc:
        data += google_crc32c.value(data).to_bytes(4, "little")
    cps = (3, 2)
    calls: list[int] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sc, "_check_entries", lambda *a: (calls.append(1), ShardingCodec._check_entries(sc, *a)))
        scalar = _index_outcome(sc, data, cps, size, longest)
        ran = len(calls)
        assert ran  # the scalar check ran
        mp.setattr(sharding_module, "SCALAR_INDEX_ENTRIES", 0)
        vector = _index_outcome(sc, data, cps, size, longest)
        assert len(calls) == ran  # and now NumPy's
    assert scalar == vector


def test_the_scalar_index_check_is_only_for_small_plain_indexes(monkeypatch) -> None:
    calls: list[int] = []
    original = ShardingCodec._check_entries
    monkeypatch.setattr(
        ShardingCodec, "_check_entries", lambda self, *a: (calls.append(1), original(self, *a))
    )
    index = np.full((257, 2), EMPTY, dtype="<u8").tobytes()
    plain = ShardingCodec([1], [BytesCodec()])
    assert plain.decode_index(index + google_crc32c.value(index).to_bytes(4, "little"), (257,)).shape == (
        257,
        2,
    )
    big_endian = ShardingCodec([1], [BytesCodec()], [BytesCodec("big")])
    assert big_endian.decode_index(index[: 16 * 3], (3,)).shape == (3, 2)
    assert not calls
    assert plain.decode_index(
        index[: 16 * 3] + google_crc32c.value(index[: 16 * 3]).to_bytes(4, "little"), (3,)
    ).shape == (3, 2)
    assert calls == [1]
    at_bound = index[: 16 * 256]  # SCALAR_INDEX_ENTRIES entries: still checked on Python ints
    assert plain.decode_index(
        at_bound + google_crc32c.value(at_bound).to_bytes(4, "little"), (256,)
    ).shape == (
        256,
        2,
    )
    assert calls == [1, 1]


def test_chunk_decoding_to_wrong_size() -> None:
    sc = ShardingCodec([2, 3], [BytesCodec()], [BytesCodec("little")])
    pieces = [bytes(6), bytes(6), bytes(5), bytes(6)]
    shard = sc.assemble(pieces, (2, 2))
    with pytest.raises(CorruptChunkError, match="needs 6 bytes, got 5") as info:
        sc.decode(shard, (4, 6), "uint8")
    assert info.value.chunk == (1, 0)


@pytest.mark.parametrize("bad", [GzipCodec(1), ZstdCodec(1)])
def test_index_codecs_must_be_fixed_size(bad: Any) -> None:
    with pytest.raises(MetadataError, match=bad.name) as info:
        ShardingCodec([2, 2], index_codecs=[BytesCodec("little"), bad, Crc32cCodec()])
    assert info.value.codec == bad.name
    with pytest.raises(MetadataError, match="endian"):
        ShardingCodec([2, 2], index_codecs=[BytesCodec(None)])


def test_chunk_shape_must_divide_shard() -> None:
    sc = ShardingCodec([2, 3])
    with pytest.raises(GridError) as info:
        sc.chunks_per_shard((4, 7))
    assert "(2, 3)" in str(info.value) and "(4, 7)" in str(info.value)
    with pytest.raises(GridError):
        sc.chunks_per_shard((4,))
    with pytest.raises(GridError):
        sc.encode(np.zeros((5, 6)))
    assert math.prod(sc.chunks_per_shard((8, 9))) == 12


@pytest.mark.parametrize(
    "dtype",
    ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
    + ["float16", "float32", "float64", "complex64", "complex128"],
)
def test_sharding_round_trip_every_dtype(dtype: str) -> None:
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((6, 8)) * 50).astype(dtype)
    inner = [TransposeCodec([1, 0]), BytesCodec("big"), BloscCodec("lz4", 5, "shuffle", typesize=a.itemsize)]
    sc = ShardingCodec([4, 3], inner, index_location="start")  # in the transposed (8, 6) space
    chain = CodecChain([TransposeCodec([1, 0]), sc, Crc32cCodec()])  # transpose outside the shard too
    enc = chain.encode(a)
    got = chain.decode(enc, a.shape, dtype)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, a)


# --- exact error messages, their context and the edges of the checks (mutation-testing survivors) -------
def test_from_config_defaults_the_index_to_the_end_and_names_itself_in_errors() -> None:
    little = [{"name": "bytes", "configuration": {"endian": "little"}}]
    cfg = {"chunk_shape": [2], "codecs": little, "index_codecs": little}
    sc = ShardingCodec.from_config(cfg)
    assert sc.index_location == "end" and sc.index_nbytes((2,)) == 32
    with pytest.raises(MetadataError) as info:
        ShardingCodec.from_config({**cfg, "index_place": "start"})
    assert info.value.codec == "sharding_indexed"
    assert info.value.message.startswith(
        "codec 'sharding_indexed': unknown configuration field(s) ['index_place']"
    )
    for required in ("chunk_shape", "codecs", "index_codecs"):
        partial = {k: v for k, v in cfg.items() if k != required}
        with pytest.raises(MetadataError) as info:
            ShardingCodec.from_config(partial)
        assert info.value.message == f"codec 'sharding_indexed': field {required!r} is required"
        assert info.value.codec == "sharding_indexed"


def test_index_errors_carry_the_codec_and_the_exact_message() -> None:
    sc = ShardingCodec([2], [BytesCodec()], [BytesCodec("little")])
    with pytest.raises(CorruptShardError) as info:
        sc.decode_index(bytes(47), (3,))
    assert info.value.message == "shard index: expected 48 bytes for (3,) chunks per shard, got 47"
    assert info.value.codec == "sharding_indexed"
    half = np.array([[EMPTY, EMPTY], [EMPTY, 4], [0, 2]], dtype="<u8")
    with pytest.raises(CorruptShardError) as info:
        sc.decode_index(half.tobytes(), (3,), object_size=50)
    assert info.value.message == (
        f"shard index entry of inner chunk (1,) is ({EMPTY}, 4): "
        "one word is the empty marker 2**64-1 and the other is not"
    )
    assert info.value.codec == "sharding_indexed" and info.value.chunk == (1,)


def test_out_of_region_message_names_the_entry_the_region_and_the_limit() -> None:
    sc = ShardingCodec([2], [BytesCodec()], [BytesCodec("little")])  # end index of 32 bytes
    index = np.array([[0, 2], [5, 3]], dtype="<u8")
    with pytest.raises(CorruptShardError) as info:
        sc.decode_index(index.tobytes(), (2,), object_size=38)  # data region [0, 6)
    assert info.value.message == (
        "shard index entry of inner chunk (1,) points at bytes [5, 8), outside the data region "
        "[0, 6) of a 38-byte shard"
    )
    assert info.value.codec == "sharding_indexed" and info.value.byte_range == (5, 8)
    index = np.array([[0, 2], [2**63 - 4, 8]], dtype="<u8")
    with pytest.raises(CorruptShardError) as info:
        sc.decode_index(index.tobytes(), (2,), max_nbytes=4)  # size unknown: the region ends at 2**63-1
    assert info.value.message == (
        f"shard index entry of inner chunk (1,) points at bytes [{2**63 - 4}, {2**63 + 4}), outside the data "
        f"region [0, {2**63 - 1}), or is longer than the 4 bytes an inner chunk can have"
    )


def test_an_entry_ending_exactly_at_2_63_minus_1_is_accepted_without_an_object_size() -> None:
    sc = ShardingCodec([2], [BytesCodec()], [BytesCodec("little")])
    last = np.array([[0, 2], [2**63 - 2, 1]], dtype="<u8")
    assert sc.decode_index(last.tobytes(), (2,)).tolist() == last.tolist()


def test_an_end_index_alone_leaves_no_room_for_any_entry() -> None:
    """An object of exactly its end index has an empty data region: even a 1-byte entry at 0 points into
    the index."""
    sc = ShardingCodec([2], [BytesCodec()], [BytesCodec("little")])
    for entry in ([0, 1], [1, 0]):
        index = np.array([[EMPTY, EMPTY], entry], dtype="<u8")
        with pytest.raises(CorruptShardError, match=r"outside the data region \[0, 0\)") as info:
            sc.decode_index(index.tobytes(), (2,), object_size=32)
        assert info.value.chunk == (1,)
    empty = np.array([[EMPTY, EMPTY], [0, 0]], dtype="<u8")
    assert sc.decode_index(empty.tobytes(), (2,), object_size=32).tolist() == empty.tolist()


def test_max_nbytes_adds_to_the_region_check_and_does_not_replace_it() -> None:
    sc = ShardingCodec([2], [BytesCodec()], [BytesCodec("little")])
    index = np.array([[0, 2], [6, 2]], dtype="<u8")  # short enough, but past the 6-byte data region
    with pytest.raises(CorruptShardError, match="outside the data region") as info:
        sc.decode_index(index.tobytes(), (2,), object_size=38, max_nbytes=2)
    assert info.value.byte_range == (6, 8)


def test_read_index_passes_max_nbytes_on_and_names_a_truncated_object() -> None:
    sc = ShardingCodec([2], [BytesCodec()], [BytesCodec("little")])
    shard = sc.assemble([b"ab", b"cde"], (2,))
    assert sc.read_index(shard, (2,), max_nbytes=3).tolist() == [[0, 2], [2, 3]]
    with pytest.raises(CorruptShardError, match="longer than the 2 bytes") as info:
        sc.read_index(shard, (2,), max_nbytes=2)
    assert info.value.chunk == (1,)
    with pytest.raises(CorruptShardError) as info:
        sc.read_index(shard[:20], (2,))
    assert info.value.message == "shard of 20 bytes is shorter than its 32-byte index (truncated object?)"
    assert info.value.byte_range == (0, 20) and info.value.codec == "sharding_indexed"


def test_big_endian_index_decodes_to_a_writable_native_array() -> None:
    sc = ShardingCodec([2], [BytesCodec()], [BytesCodec("big"), Crc32cCodec()])
    shard = sc.assemble([b"ab", None], (2,))
    index = sc.read_index(shard, (2,))
    assert index.dtype == np.dtype(np.uint64) and index.dtype.isnative and index.flags.writeable
    assert index.tolist() == [[0, 2], [EMPTY, EMPTY]]


def test_max_encoded_size_uses_the_dtype() -> None:
    sc = ShardingCodec([2, 2], [BytesCodec("little")])
    assert sc.max_encoded_size((4, 4), "int16") == 68 + 4 * (2 * 2 * 2)
    assert sc.max_encoded_size((4, 4), "uint8") == 68 + 4 * (2 * 2)


def test_decode_fills_empty_chunks_with_zero_by_default_and_checks_out() -> None:
    sc = ShardingCodec([2], [BytesCodec("little")])
    shard = sc.assemble([None, np.array([5, 6], "int32").tobytes()], (2,))
    np.testing.assert_array_equal(sc.decode(shard, (4,), "int32"), [0, 0, 5, 6])
    for out in (np.zeros((3,), "int32"), np.zeros((4,), "int64")):
        with pytest.raises(CodecError) as info:
            sc.decode(shard, (4,), "int32", out=out)
        assert info.value.message == (
            f"sharding_indexed: out has shape {out.shape} and dtype {out.dtype}, expected (4,) and int32"
        )
        assert info.value.codec == "sharding_indexed"


def test_nested_shards_fill_their_empty_chunks_with_the_outer_fill_value() -> None:
    inner = ShardingCodec([2], [BytesCodec("little")], index_location="start")
    outer = ShardingCodec([4], [inner])
    sub0 = inner.assemble([np.array([1, 2], "int16").tobytes(), None], (2,))  # its 2nd chunk empty
    sub1 = inner.assemble([None, np.array([3, 4], "int16").tobytes()], (2,))
    shard = outer.assemble([sub0, sub1], (2,))
    np.testing.assert_array_equal(
        outer.decode(shard, (8,), "int16", fill_value=-7), [1, 2, -7, -7, -7, -7, 3, 4]
    )
    out = np.zeros(8, "int16")
    outer.decode(shard, (8,), "int16", fill_value=9, out=out)
    np.testing.assert_array_equal(out, [1, 2, 9, 9, 9, 9, 3, 4])


def test_an_inner_chunk_decoding_smaller_than_its_place_is_refused() -> None:
    """An edge-truncating inner codec (N5 blocks record their own size) may hand back fewer values than
    the inner chunk holds; the shard refuses it, naming the chunk, instead of leaving values unset."""
    n5 = N5BlockCodec()
    sc = ShardingCodec([2, 2], [n5], [BytesCodec("little")])
    pieces = [n5.encode(np.ones((2, 2), "int16"))] * 3 + [n5.encode(np.ones((1, 2), "int16"))]
    shard = sc.assemble(pieces, (2, 2))
    with pytest.raises(CodecError) as info:
        sc.decode(shard, (4, 4), "int16")
    assert (
        info.value.message == "sharding_indexed: inner chunk (1, 1) decoded to shape (1, 2), expected (2, 2)"
    )
    assert info.value.chunk == (1, 1) and info.value.codec == "sharding_indexed"
    whole = sc.assemble([n5.encode(np.full((2, 2), i, "int16")) for i in range(4)], (2, 2))
    np.testing.assert_array_equal(
        sc.decode(whole, (4, 4), "int16"), np.repeat(np.repeat([[0, 1], [2, 3]], 2, 0), 2, 1)
    )


def test_construction_errors_name_the_field_and_the_codec() -> None:
    unknown = [{"name": "nope"}]
    for field in ("codecs", "index_codecs"):
        with pytest.raises(MetadataError) as info:
            ShardingCodec([2, 2], **{field: unknown})
        assert info.value.message.startswith(
            f"codec 'sharding_indexed': field {field!r}: unknown codec 'nope'"
        )
        assert info.value.codec == "nope"
    with pytest.raises(MetadataError) as info:
        ShardingCodec([0, 2])
    assert info.value.message.startswith("codec 'sharding_indexed': field 'chunk_shape' ")
    with pytest.raises(MetadataError) as info:
        ShardingCodec([2, 2], index_location="middle")
    assert info.value.message.startswith("codec 'sharding_indexed': field 'index_location' ")
    with pytest.raises(MetadataError) as info:
        ShardingCodec([2, 2], index_codecs=[BytesCodec(None)])
    assert info.value.message.startswith("codec 'sharding_indexed': field 'index_codecs': codec 'bytes': ")
    assert info.value.codec == "bytes"
    with pytest.raises(MetadataError) as info:
        ShardingCodec([8, 8], [ShardingCodec([3, 3])])
    assert info.value.message.startswith("codec 'sharding_indexed': field 'codecs': sharding_indexed: ")
    assert info.value.codec == "sharding_indexed"
    with pytest.raises(MetadataError) as info:
        ShardingCodec([2, 2], index_codecs=[BytesCodec("little"), GzipCodec(1)])
    assert info.value.message == (
        "codec 'sharding_indexed': field 'index_codecs': codec 'gzip' has no fixed encoded size; "
        "the shard index must have a fixed size (use e.g. bytes + crc32c, no compression)"
    )


def test_the_default_inner_chain_is_little_endian_bytes() -> None:
    sc = ShardingCodec([2])
    assert sc.codecs.to_json() == [{"name": "bytes", "configuration": {"endian": "little"}}]
    shard = sc.encode(np.array([1, 2, 3, 4], "int16"))
    assert shard[:8] == np.array([1, 2, 3, 4], "<i2").tobytes()


def test_nesting_depth_is_counted_and_capped_at_16_levels() -> None:
    sc = ShardingCodec([1])
    assert sc.depth == 1
    for level in range(2, 17):
        sc = ShardingCodec([1], [sc])
        assert sc.depth == level
    with pytest.raises(MetadataError) as info:
        ShardingCodec([1], [sc])
    assert info.value.message == "codec 'sharding_indexed': nested 17 levels deep, more than the 16 supported"
    assert info.value.codec == "sharding_indexed"


def test_grid_and_count_errors_carry_the_codec() -> None:
    sc = ShardingCodec([1])
    assert sc.chunks_per_shard((1,)) == (1,)
    for shape in ((0,), (3, 1)):
        with pytest.raises(GridError) as info:
            sc.chunks_per_shard(shape)
        assert info.value.codec == "sharding_indexed"
    with pytest.raises(GridError) as info:
        sc.assemble([b"a"], (2,))
    assert (
        info.value.message
        == "sharding_indexed: assemble needs 2 chunk entries for (2,) chunks per shard, got 1"
    )
    assert info.value.codec == "sharding_indexed"


def test_encode_index_refuses_a_wrong_shape() -> None:
    sc = ShardingCodec([2])
    for bad in (np.zeros((2, 3), "u8"), np.zeros((2, 2, 2), "u8")):
        with pytest.raises(CodecError) as info:
            sc.encode_index(bad)
        assert info.value.message == (
            f"shard index: expected an array of shape (*chunks_per_shard, 2), got {bad.shape}"
        )
        assert info.value.codec == "sharding_indexed"


def test_validate_checks_the_inner_chain_with_the_dtype() -> None:
    sc = ShardingCodec([2, 2], [BytesCodec(None)])
    sc.validate((4, 4), "uint8")
    with pytest.raises(MetadataError, match="endian"):
        sc.validate((4, 4), "int16")
