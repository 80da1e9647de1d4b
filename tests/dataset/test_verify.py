"""altarr.verify: a clean dataset passes; corrupted shard indexes, chunk bytes and metadata are each
reported with their key (and chunk), several problems in one run; stale temporary files are listed and
removed with repair=True."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import altarr as aa
from altarr.codecs.crc32c import crc32c_value


def _make(path, fmt="zarr3", **kw):
    args = dict(shape=(8, 8), dtype="uint16", chunks=(2, 2), shards=(4, 4), format=fmt, compressor="zstd")
    args.update(kw)
    ds = aa.create_dataset(str(path), **args)
    ds[...] = np.arange(64, dtype="uint16").reshape(8, 8)
    return ds


def _patch_index(path, entry, offset, nbytes, cps=4):
    """Rewrite one (offset, nbytes) entry of an end-located bytes+crc32c Zarr v3 shard index, with a
    valid crc32c, so only the bounds checks can catch it."""
    raw = bytearray(open(path, "rb").read())
    n = 16 * cps
    index = np.frombuffer(bytes(raw[-n - 4 : -4]), dtype="<u8").copy().reshape(-1, 2)
    index[entry] = (offset, nbytes)
    body = index.tobytes()
    raw[-n - 4 :] = body + crc32c_value(body).to_bytes(4, "little")
    open(path, "wb").write(bytes(raw))


@pytest.mark.parametrize(
    "fmt,kw",
    [
        ("zarr3", {}),
        ("zarr3", {"shards": None}),
        ("zarr3", {"shards": [(4, 4), (8, 8)]}),
        ("zarr3", {"index_location": "start", "checksum": True}),
        ("zarr2", {"shards": None}),
        ("n5", {"shards": None}),
        ("n5", {}),
    ],
)
def test_clean_dataset_passes(tmp_path, fmt, kw):
    _make(tmp_path / "a", fmt, **kw)
    report = aa.verify(str(tmp_path / "a"))
    assert report.ok, str(report)
    assert report.checked["chunks"] == 16
    assert report.checked["metadata"] >= 1
    assert report.stale_temp_files == []
    assert "OK" in str(report)


def test_clean_group_passes_and_counts_every_node(tmp_path):
    g = aa.create_group(str(tmp_path / "g"))
    for name in ("x", "y"):
        ds = g.create_dataset(name, shape=(4, 4), dtype="f4", chunks=(2, 2), shards=(4, 4))
        ds[...] = 1.5
    report = aa.verify(str(tmp_path / "g"))
    assert report.ok, str(report)
    assert report.checked == {"metadata": 3, "shards": 2, "chunks": 8}


def test_corrupt_shard_index_is_reported_with_its_key(tmp_path):
    _make(tmp_path / "a")
    shard = tmp_path / "a" / "c" / "1" / "0"
    raw = bytearray(shard.read_bytes())
    raw[-10] ^= 0xFF  # inside the index: the crc32c no longer matches
    shard.write_bytes(bytes(raw))
    report = aa.verify(str(tmp_path / "a"))
    assert not report.ok
    assert [(p.key, p.kind) for p in report.problems] == [("c/1/0", "index-checksum")]
    assert report.problems[0].chunk == (2, 0)  # first chunk of shard (1, 0)
    assert report.checked["chunks"] == 12  # the other three shards were still checked


def test_corrupt_chunk_bytes_are_reported_with_key_and_chunk(tmp_path):
    _make(tmp_path / "a", compressor="blosc")  # with a crc32c after it (checksum=True, the default)
    shard = tmp_path / "a" / "c" / "0" / "1"
    raw = bytearray(shard.read_bytes())
    index = np.frombuffer(bytes(raw[-68:-4]), dtype="<u8").reshape(4, 2)
    off = int(index[3, 0])  # inner chunk (1, 1) of shard (0, 1) = chunk (1, 3)
    raw[off + 2] ^= 0x55
    shard.write_bytes(bytes(raw))
    report = aa.verify(str(tmp_path / "a"))
    assert [(p.key, p.kind, p.chunk) for p in report.problems] == [("c/0/1", "checksum", (1, 3))]


def test_corrupt_metadata_is_reported_with_its_key(tmp_path):
    g = aa.create_group(str(tmp_path / "g"))
    g.create_dataset("good", shape=(4,), dtype="u1", chunks=(2,))[...] = 3
    g.create_dataset("bad", shape=(4,), dtype="u1", chunks=(2,))[...] = 4
    (tmp_path / "g" / "bad" / "zarr.json").write_text('{"zarr_format": 3, "node_type": "array", "shape": [')
    report = aa.verify(str(tmp_path / "g"))
    assert [(p.key, p.kind) for p in report.problems] == [("bad/zarr.json", "metadata")]
    assert report.checked["chunks"] == 2  # the good array was still decoded


@pytest.mark.parametrize(
    "entry,offset,nbytes,kind",
    [
        (1, 2**63, 10, "index-bounds"),
        (1, 0, 2**63, "index-bounds"),
        (1, 0, 2**36, "index-bounds"),
        (1, 2**64 - 1, 10, "index-sentinel"),
        (1, 0, 2**64 - 1, "index-sentinel"),
    ],
)
def test_patched_index_entries_are_reported(tmp_path, entry, offset, nbytes, kind):
    _make(tmp_path / "a")
    _patch_index(tmp_path / "a" / "c" / "0" / "0", entry, offset, nbytes)
    report = aa.verify(str(tmp_path / "a"))
    assert [(p.key, p.kind, p.chunk) for p in report.problems] == [("c/0/0", kind, (0, 1))]


def test_entry_pointing_into_the_index_and_overlaps(tmp_path):
    _make(tmp_path / "a")
    shard = tmp_path / "a" / "c" / "0" / "0"
    size = shard.stat().st_size
    _patch_index(shard, 3, size - 68, 16)  # the last entry points at the index itself
    _patch_index(tmp_path / "a" / "c" / "1" / "1", 2, 0, 5)  # overlaps entry 0
    report = aa.verify(str(tmp_path / "a"))
    got = {(p.key, p.kind) for p in report.problems}
    assert ("c/0/0", "index-bounds") in got
    assert ("c/1/1", "index-overlap") in got


def test_several_problems_in_one_run(tmp_path):
    g = aa.create_group(str(tmp_path / "g"))
    a = g.create_dataset("a", shape=(8, 8), dtype="u2", chunks=(2, 2), shards=(4, 4))
    a[...] = 7
    b = g.create_dataset("b", shape=(8,), dtype="u2", chunks=(4,), format="zarr3")
    b[...] = 9
    g.create_dataset("c", shape=(4,), dtype="u2", chunks=(2,))[...] = 1
    # 1: a truncated shard, 2: a chunk that is not zstd any more, 3: broken attributes, 4: bad metadata
    shard = tmp_path / "g" / "a" / "c" / "0" / "0"
    shard.write_bytes(shard.read_bytes()[:20])
    (tmp_path / "g" / "b" / "c" / "1").write_bytes(b"not a zstd frame")
    (tmp_path / "g" / "c" / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "array"}))
    _patch_index(tmp_path / "g" / "a" / "c" / "1" / "1", 0, 2**63, 1)
    report = aa.verify(str(tmp_path / "g"))
    got = sorted((p.key, p.kind) for p in report.problems)
    assert got == [
        ("a/c/0/0", "truncated"),
        ("a/c/1/1", "index-bounds"),
        ("b/c/1", "chunk"),
        ("c/zarr.json", "metadata"),
    ], str(report)
    text = str(report)
    assert "4 problem(s)" in text and "a/c/1/1" in text


def test_stale_temp_files_listed_then_removed(tmp_path):
    _make(tmp_path / "a")
    stale = [
        tmp_path / "a" / "c" / "0" / ".0.0123456789ab.altarr-tmp",
        tmp_path / "a" / ".zarr.json.ff.altarr-tmp",
    ]
    for p in stale:
        p.write_bytes(b"half a shard")
    report = aa.verify(str(tmp_path / "a"))
    assert report.ok  # leftovers are listed, not problems
    assert report.stale_temp_files == [".zarr.json.ff.altarr-tmp", "c/0/.0.0123456789ab.altarr-tmp"]
    assert all(p.exists() for p in stale) and report.removed == []
    assert "stale temporary file" in str(report)
    fixed = aa.verify(str(tmp_path / "a"), repair=True)
    assert sorted(fixed.removed) == sorted(report.stale_temp_files)
    assert not any(p.exists() for p in stale)
    assert aa.verify(str(tmp_path / "a")).stale_temp_files == []


def test_memory_store_and_module_interface():
    ds = aa.create_dataset("memory://verify-mem", shape=(5,), dtype="i8", chunks=(2,), shards=(4,))
    ds[...] = np.arange(5)
    report = aa.verify("memory://verify-mem")
    assert isinstance(report, aa.VerifyReport)
    assert report.ok and report.checked["chunks"] == 3
    from altarr.verifying import verify

    assert verify("memory://verify-mem").checked == report.checked


def test_missing_metadata_is_a_problem(tmp_path):
    os.makedirs(tmp_path / "empty")
    report = aa.verify(str(tmp_path / "empty"))
    assert not report.ok and report.problems[0].kind == "metadata"


def test_fsspec_and_zip_stores(tmp_path):
    """Temporary files are listed through the store's own listing where it shows them (fsspec)."""
    url = (tmp_path / "fs").as_uri()
    _make(url)
    stale = tmp_path / "fs" / "c" / "0" / ".0.abc.altarr-tmp"
    stale.write_bytes(b"x")
    report = aa.verify(url)
    assert report.ok and report.checked["chunks"] == 16
    assert report.stale_temp_files == ["c/0/.0.abc.altarr-tmp"]
    assert aa.verify(url, repair=True).removed == ["c/0/.0.abc.altarr-tmp"] and not stale.exists()
    zpath = str(tmp_path / "a.zip")
    ds = _make(zpath)
    ds.store.close()
    report = aa.verify(zpath)
    assert report.ok and report.checked == {"metadata": 1, "shards": 4, "chunks": 16}


# --- nested shards, edge shards, surprises (issue 34) ------------------------------------------------------
def test_nested_shards_with_edge_shards_are_clean(tmp_path):
    """The outer shard (16, 24) does not divide the shape (40, 48): the edge shards' indexes have entries
    for inner shards wholly outside the array (empty), which verify must not try to name by a chunk."""
    p = str(tmp_path / "n")
    ds = aa.create_dataset(p, shape=(40, 48), dtype="f4", chunks=(4, 4), shards=[(8, 8), (16, 24)])
    ds[...] = np.arange(40 * 48, dtype="f4").reshape(40, 48)
    report = aa.verify(p)
    assert report.ok, str(report)
    assert report.checked == {"metadata": 1, "shards": 6, "chunks": 120}
    assert [(a.chunks, a.shards) for a in report.arrays] == [(120, 6)]


def test_an_unexpected_error_in_one_shard_names_it_and_the_others_are_checked(tmp_path, monkeypatch):
    p = str(tmp_path / "n")
    ds = aa.create_dataset(p, shape=(40, 48), dtype="f4", chunks=(4, 4), shards=[(8, 8), (16, 24)])
    ds[...] = 1
    import altarr.verifying as verify_module

    real = verify_module._Walker.shard

    def shard(self, mv, level, pos, key):
        if key == "c/1/0" and level == 2:
            raise IndexError("a surprise")
        return real(self, mv, level, pos, key)

    monkeypatch.setattr(verify_module._Walker, "shard", shard)
    report = aa.verify(p)
    assert [(x.key, x.kind) for x in report.problems] == [("c/1/0", "unexpected")]
    assert "IndexError: a surprise" in report.problems[0].message
    # the shard (16:32, 0:24) holds 4 x 6 chunks; the other five shards were still checked
    assert report.checked["chunks"] == 120 - 24 and report.checked["shards"] == 6


# --- checksums: what verify counts as checked ------------------------------------------------------------
_CHECKSUMMED = [
    ("zarr3", "zstd", {}, "zstd frame checksum"),  # the default: zstd's frame checksum
    ("zarr3", "blosc", {}, "crc32c"),
    ("zarr3", None, {}, "crc32c"),
    ("zarr3", "gzip", {"checksum": False}, "gzip CRC-32"),
    ("zarr2", {"id": "zlib", "level": 5}, {}, "zlib Adler-32"),
    ("zarr2", {"id": "gzip", "level": 5}, {}, "gzip CRC-32"),
    ("zarr2", {"id": "bz2", "level": 5}, {}, "bzip2 CRC"),
    ("zarr2", {"id": "lzma"}, {}, "xz check"),
    ("zarr2", {"id": "zstd", "level": 3, "checksum": True}, {}, "zstd frame checksum"),
    ("n5", {"type": "gzip", "level": 6}, {}, "gzip CRC-32"),
    ("n5", {"type": "gzip", "useZlib": True, "level": 6}, {}, "zlib Adler-32"),
    ("n5", {"type": "bzip2"}, {}, "bzip2 CRC"),
    ("n5", {"type": "xz"}, {}, "xz check"),
    ("n5", {"type": "lz4"}, {}, "lz4 xxHash32"),
]


def _one_chunk(fmt, compressor, kw):
    url = f"memory://verify-flip-{fmt}-{abs(hash(repr((compressor, kw))))}"
    ds = aa.create_dataset(
        url, shape=(48,), dtype="u2", chunks=(48,), format=fmt, compressor=compressor, overwrite=True, **kw
    )
    values = (np.arange(48) // 3 * 7).astype("u2")
    ds[...] = values
    key = ds._access.layout.key((0,))
    return ds, key, bytes(ds.store.get(key)), values


def _flips(ds, key, stored, values):
    """Every single-byte flip of the stored chunk: (decoded the same or failed, decoded wrong)."""
    from altarr.verifying import chunk_checksum

    wrong = 0
    for i in range(len(stored)):
        flipped = bytearray(stored)
        flipped[i] ^= 0x5A
        try:
            got = ds._access.codec.decode_chunk(memoryview(bytes(flipped)), (0,), key)
        except aa.errors.AltarrError:
            continue
        wrong += not np.array_equal(got, values)
    return chunk_checksum(ds._access.codec.chain, stored), wrong


@pytest.mark.parametrize("fmt,compressor,kw,name", _CHECKSUMMED)
def test_a_checksummed_chunk_never_decodes_a_flipped_byte_to_wrong_values(fmt, compressor, kw, name):
    """What verify counts as 'checked by checksum' is true: no single flipped byte of such a chunk
    decodes to other values."""
    ds, key, stored, values = _one_chunk(fmt, compressor, kw)
    checksum, wrong = _flips(ds, key, stored, values)
    assert checksum == name
    assert wrong == 0


@pytest.mark.parametrize(
    "fmt,compressor,kw",
    [("zarr3", "zstd", {"checksum": False}), ("zarr3", "blosc", {"checksum": False}), ("n5", "raw", {})],
)
def test_a_chunk_without_checksum_can_decode_a_flipped_byte_to_wrong_values(fmt, compressor, kw):
    """The other side (and the proof that the flip test above can fail): these chunks are counted as
    'only decoded', because some flips decode to wrong values without any error."""
    ds, key, stored, values = _one_chunk(fmt, compressor, kw)
    checksum, wrong = _flips(ds, key, stored, values)
    assert checksum is None
    assert wrong > 0


def test_verify_counts_chunks_by_checksum_and_by_decoding_per_array(tmp_path):
    g = aa.create_group(str(tmp_path / "g"))
    g.create_dataset("sum", shape=(8,), dtype="u2", chunks=(2,))[...] = 1
    g.create_dataset("plain", shape=(8,), dtype="u2", chunks=(2,), checksum=False)[...] = 1
    report = aa.verify(str(tmp_path / "g"))
    rows = {a.path: (a.by_checksum, a.decoded_only, a.checksums) for a in report.arrays}
    assert rows == {"plain": (0, 4, []), "sum": (4, 0, ["zstd frame checksum"])}
    text = str(report)
    assert "8 chunks checked: 4 by checksum, 4 only by decoding" in text
    assert "plain (zarr3): 4 chunks, 0 checked by checksum, 4 only by decoding" in text


def test_a_flipped_byte_in_a_default_dataset_is_named(tmp_path):
    """Issue 32's first friction: one byte flipped inside a zstd chunk of a new dataset."""
    p = tmp_path / "a"
    ds = aa.create_dataset(str(p), shape=(64, 64), dtype="f4", chunks=(16, 16), shards=(32, 32))
    ds[...] = np.linspace(0, 1, 64 * 64, dtype="f4").reshape(64, 64)
    shard = p / "c" / "1" / "0"
    raw = bytearray(shard.read_bytes())
    raw[len(raw) // 3] ^= 0x01
    shard.write_bytes(bytes(raw))
    report = aa.verify(str(p))
    assert not report.ok
    assert {(x.key, x.kind) for x in report.problems} == {("c/1/0", "checksum")}


def test_an_unfinished_copy_is_incomplete(tmp_path):
    _make(tmp_path / "a")
    (tmp_path / "a" / ".altarr-copy.json").write_text(json.dumps({"altarr_copy": 1, "units": 16, "done": []}))
    report = aa.verify(str(tmp_path / "a"))
    assert [(x.key, x.kind) for x in report.problems] == [(".altarr-copy.json", "incomplete")]
    assert "0 of 16 units written" in report.problems[0].message
