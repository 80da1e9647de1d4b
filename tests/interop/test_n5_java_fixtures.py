"""N5 exactly as the Java N5 library (saalfeldlab/n5 4.0.2) writes and reads it (issue 10).

The data under ``tests/data/n5-java/`` was written by Java N5 and read back by Java before it was kept (see
its README.md and manifest.json): 43 plain datasets (every type and compression), 24 sharded ones (index at
the start or the end, big- or little-endian, with and without crc32c, every compression Java can describe
in ``codecs``, 1-D to 3-D, ragged at every level, missing chunks and one missing shard file each) and 5
``sharded-bytes-only`` ones (shard files by Java, ``attributes.json`` in Java's dialect completed where Java
cannot write it: zstd, blosc, gzip with useZlib inside shards, nested shards).

* Reading: every dataset equals ``expected/<name>.npy``, whole and by regions, and exactly the chunks the
  manifest lists as missing are missing.
* Writing: every dataset written again by altarr from the manifest's spec, values and missing chunks gives
  the same files (no more, no fewer), ``attributes.json`` equal to Java's as JSON (byte for byte, in fact),
  and every block/shard file byte-identical wherever the manifest says ``byte_identical_writer``. The one
  deliberate difference: blosc's ``typesize``/``nthreads``, which tensorstore refuses (asserted below).
* The peers without N5 sharding (tensorstore, z5py) and what they do with Java's sharded layout, which is
  why altarr's default leaves out Java's legacy ``"compression"`` key (see docs/n5.md).
* A sharded N5 dataset round-trips through ``altarr copy`` to sharded Zarr v3 (read by zarr-python too)
  and back, byte for byte.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorstore as ts
import z5py
import zarr

import altarr as aa
from altarr.codecs import ShardingCodec
from altarr.stores import LocalStore

DATA = Path(__file__).resolve().parents[1] / "data" / "n5-java"
MANIFEST = json.loads((DATA / "manifest.json").read_text())
DATASETS = {d["name"]: d for d in MANIFEST["datasets"]}
SHARDED = [n for n, d in DATASETS.items() if d["kind"] != "plain"]
#: Java's plain blosc JSON carries "typesize" (always 1: n5-blosc hard-codes it) and "nthreads" (a run-time
#: setting); tensorstore refuses both, and Java reads their absence as those same defaults.
BLOSC_LEFT_OUT = {"typesize": 1, "nthreads": 1}


def numpy_pos(n5_pos) -> tuple[int, ...]:
    return tuple(reversed(n5_pos))


def chunk_grid(d: dict) -> list[tuple[int, ...]]:
    shape, chunks = d["numpy"]["shape"], d["numpy"]["chunks"]
    return list(np.ndindex(*[-(-s // c) for s, c in zip(shape, chunks, strict=True)]))


def stored_files(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.name != "attributes.json"
    )


def test_manifest_is_what_the_readme_describes():
    kinds = [d["kind"] for d in MANIFEST["datasets"]]
    assert (kinds.count("plain"), kinds.count("sharded"), kinds.count("sharded-bytes-only")) == (43, 24, 5)
    assert sum(d["byte_identical_writer"] for d in MANIFEST["datasets"]) == 37
    for d in MANIFEST["datasets"]:
        assert stored_files(DATA / d["path"]) == sorted(d["files"]), d["name"]


# --- reading ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(DATASETS))
def test_reads_every_java_dataset(name):
    d = DATASETS[name]
    expected = np.load(DATA / d["expected"])
    ds = aa.open_dataset(str(DATA / "data.n5"), path=name)
    assert ds.format == "n5" and ds.dtype == expected.dtype and ds.shape == tuple(d["numpy"]["shape"])
    assert ds.chunks == tuple(d["numpy"]["chunks"])
    levels = d["numpy"]["shards"]
    if levels is None:
        assert ds.shards is None
    else:
        assert ds.shards == tuple(levels[-1])
    got = ds[...]
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    # regions that cut through shards and chunks (ranged reads of single chunks), and a strided one
    inner = tuple(slice(1, max(2, s - 1)) for s in expected.shape)
    np.testing.assert_array_equal(ds[inner], expected[inner])
    strided = tuple(slice(None, None, -3) for _ in expected.shape)
    np.testing.assert_array_equal(ds[strided], expected[strided])
    # exactly the chunks Java never wrote are missing (an empty index entry or a missing shard file)
    grid = chunk_grid(d)
    arrays = ds.read_chunks(grid)
    missing = {numpy_pos(c) for c in d["missing_chunks"]}
    assert {c for c, a in zip(grid, arrays, strict=True) if a is None} == missing


def test_edge_shards_index_chunks_outside_the_array_as_empty():
    # dims [19, 11] in shards [6, 4] of chunks [3, 2]: shard (2, 3) (NumPy) holds N5 chunk columns 6 and 7,
    # and column 7 lies wholly outside the array: Java indexes it as empty; altarr reads the rest
    d = DATASETS["shard-raw-uint8"]
    ds = aa.open_dataset(str(DATA / "data.n5"), path=d["name"])
    sc = ds._access.spec.codecs.array_bytes
    assert isinstance(sc, ShardingCodec)
    raw = (DATA / d["path"] / "3" / "2").read_bytes()
    index = sc.read_index(raw, sc.chunks_per_shard((4, 6)))
    assert index.shape == (2, 2, 2)
    assert (index[:, 1] == 2**64 - 1).all()  # the column outside the array
    assert (index[:, 0] != 2**64 - 1).any()


# --- writing ---------------------------------------------------------------------------------------------------
def write_like_java(out: Path, d: dict, **options) -> aa.Dataset:
    """Write the manifest's dataset with altarr: its spec, its values, its missing chunks."""
    expected = np.load(DATA / d["expected"])
    npy = d["numpy"]
    shards = None if npy["shards"] is None else [tuple(s) for s in npy["shards"]]
    if shards is not None:
        options = {
            "index_location": d["index_location"],
            "index_endian": d["index_endian"],
            "index_crc32c": d["index_crc32c"],
            **options,
        }
    ds = aa.create_dataset(
        str(out),
        path=d["name"],
        format="n5",
        shape=expected.shape,
        dtype=expected.dtype,
        chunks=tuple(npy["chunks"]),
        shards=shards,
        compressor=d["compression"],
        **options,
    )
    missing = {numpy_pos(c) for c in d["missing_chunks"]}
    coords = [c for c in chunk_grid(d) if c not in missing]
    chunks = npy["chunks"]
    arrays = [
        expected[tuple(slice(i * c, (i + 1) * c) for i, c in zip(pos, chunks, strict=True))] for pos in coords
    ]
    ds.write_chunks(coords, arrays)
    return ds


def java_attributes(d: dict) -> dict:
    doc = json.loads((DATA / d["path"] / "attributes.json").read_text())
    if d["compression_key"] == "blosc":  # see BLOSC_LEFT_OUT
        if d["kind"] == "plain":
            blosc = doc["compression"]
        else:
            blosc = doc["codecs"][0]["configuration"]["codecs"][1]["configuration"]
        for k, v in BLOSC_LEFT_OUT.items():
            assert blosc.pop(k) == v
    return doc


@pytest.mark.parametrize("name", list(DATASETS))
def test_writes_every_java_dataset(tmp_path, name):
    d = DATASETS[name]
    out = tmp_path / "data.n5"
    # sharded: Java's legacy "compression" key on request (altarr leaves it out by default, see below)
    options = {"legacy_compression": True} if d["kind"] != "plain" else {}
    write_like_java(out, d, **options)
    java, mine = DATA / d["path"], out / d["name"]
    assert stored_files(mine) == sorted(d["files"])  # missing chunks and shards are not written
    assert json.loads((mine / "attributes.json").read_text()) == java_attributes(d)
    if d["compression_key"] != "blosc":  # and byte for byte: Java's key order, compact JSON
        assert (mine / "attributes.json").read_bytes() == (java / "attributes.json").read_bytes()
    if d["byte_identical_writer"]:
        for f in d["files"]:
            assert (mine / f).read_bytes() == (java / f).read_bytes(), f
    # every stored chunk decodes to Java's values, and the whole dataset reads back
    java_ds = aa.open_dataset(str(DATA / "data.n5"), path=name)
    my_ds = aa.open_dataset(str(out), path=name)
    grid = chunk_grid(d)
    for a, b in zip(java_ds.read_chunks(grid), my_ds.read_chunks(grid), strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(my_ds[...], np.load(DATA / d["expected"]))


@pytest.mark.parametrize("name", [n for n, d in DATASETS.items() if d["compression_key"] in ("gzip", "lz4")])
def test_gzip_and_lz4_are_byte_identical_too(tmp_path, name):
    """Beyond the manifest's promise (raw, zstd, gzip+useZlib): gzip members match Java's, since altarr
    writes commons-compress's 0xff OS byte in the gzip header, and so do lz4-java block streams."""
    d = DATASETS[name]
    write_like_java(tmp_path / "data.n5", d, **({"legacy_compression": True} if d["kind"] != "plain" else {}))
    for f in d["files"]:
        assert (tmp_path / "data.n5" / name / f).read_bytes() == (DATA / d["path"] / f).read_bytes(), f


@pytest.mark.parametrize("name", SHARDED)
def test_default_sharded_attributes_are_javas_without_the_legacy_key(tmp_path, name):
    """altarr's default: Java's document minus ``"compression":{"type":"raw"}``, which no N5 4.x reader
    needs (codecs win) and which lets N5 readers without sharding misread shards as blocks."""
    d = DATASETS[name]
    write_like_java(tmp_path / "data.n5", d)
    doc = json.loads((tmp_path / "data.n5" / name / "attributes.json").read_text())
    java = java_attributes(d)
    assert java.pop("compression") == {"type": "raw"}
    assert doc == java
    for f in d["files"]:  # the shard files do not depend on it
        if d["byte_identical_writer"]:
            assert (tmp_path / "data.n5" / name / f).read_bytes() == (DATA / d["path"] / f).read_bytes()


@pytest.mark.parametrize("name", ["shard-crc32c-raw-int32", "shard-crc32c-xz-uint8"])
def test_altarr_defaults_are_a_layout_java_wrote_and_read(tmp_path, name):
    """altarr's default index (big-endian raw-bytes + crc32c at the end) is the layout of these fixtures,
    which Java wrote and read back from their attributes.json: with no index option given, the shard files
    are Java's byte for byte (xz: the same values), and the document is Java's without the legacy key."""
    d = DATASETS[name]
    assert (d["index_location"], d["index_endian"], d["index_crc32c"]) == ("end", "big", True)
    assert d["java_reads_attributes_json"]
    expected = np.load(DATA / d["expected"])
    ds = aa.create_dataset(
        str(tmp_path / "d.n5"),
        path=name,
        format="n5",
        shape=expected.shape,
        dtype=expected.dtype,
        chunks=tuple(d["numpy"]["chunks"]),
        shards=tuple(d["numpy"]["shards"][0]),
        compressor=d["compression_key"],  # a bare name: Java's defaults
    )
    ds[...] = expected  # the missing chunks are all zero: not written
    mine = tmp_path / "d.n5" / name
    assert stored_files(mine) == sorted(d["files"])
    java = java_attributes(d)
    java.pop("compression")
    assert json.loads((mine / "attributes.json").read_text()) == java
    if d["byte_identical_writer"]:
        for f in d["files"]:
            assert (mine / f).read_bytes() == (DATA / d["path"] / f).read_bytes()
    np.testing.assert_array_equal(aa.open_dataset(str(tmp_path / "d.n5"), path=name)[...], expected)


def test_java_defaults_for_bare_compressions(tmp_path):
    """A bare ``"gzip"`` is Java 4.x's gzip: level 6 (also inside shards), written as Java writes it."""
    ds = aa.create_dataset(
        str(tmp_path / "a.n5"),
        path="p",
        shape=(7, 13),
        dtype="uint8",
        chunks=(3, 4),
        format="n5",
        compressor="gzip",
    )
    assert json.loads((tmp_path / "a.n5" / "p" / "attributes.json").read_text())["compression"] == {
        "type": "gzip",
        "useZlib": False,
        "level": 6,
    }
    assert ds.attrs.asdict() == {}
    aa.create_dataset(
        str(tmp_path / "a.n5"),
        path="s",
        shape=(11, 19),
        dtype="uint16",
        chunks=(2, 3),
        shards=(4, 6),
        format="n5",
        compressor="gzip",
    )
    inner = json.loads((tmp_path / "a.n5" / "s" / "attributes.json").read_text())["codecs"][0][
        "configuration"
    ]
    assert inner["codecs"] == [{"name": "n5bytes"}, {"name": "gzip", "configuration": {"level": 6}}]
    # the default index: big-endian raw-bytes + crc32c at the end
    assert inner["index_codecs"] == [
        {"name": "raw-bytes", "configuration": {"endian": "big"}},
        {"name": "crc32c"},
    ]
    assert inner["index_location"] == "end"


def test_crc32c_index_is_checked(tmp_path):
    name = "shard-crc32c-raw-int32"
    shutil.copytree(DATA / "data.n5", tmp_path / "data.n5")
    shard = tmp_path / "data.n5" / name / "0" / "0"
    raw = bytearray(shard.read_bytes())
    raw[-5] ^= 0x01  # one bit of the index (the crc32c is the last 4 bytes)
    shard.write_bytes(bytes(raw))
    with pytest.raises(aa.errors.ChecksumError) as ei:
        aa.open_dataset(str(tmp_path / "data.n5"), path=name)[...]
    assert ei.value.key == f"{name}/0/0"


# --- peers ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SHARDED)
def test_peers_without_n5_sharding_fail_on_javas_fixtures(name):
    """tensorstore's and z5py's ``n5`` take Java's legacy key at its word and read a shard as one block;
    on every fixture that fails (trailing index bytes, impossible headers)."""
    with pytest.raises(ValueError):
        ts.open(
            {"driver": "n5", "kvstore": {"driver": "file", "path": str(DATA / "data.n5" / name)}}
        ).result().read().result()
    with pytest.raises(RuntimeError):
        z5py.File(str(DATA / "data.n5"), mode="r", use_zarr_format=False)[name][...]


def test_z5py_misreads_javas_layout_when_shards_compress_well(tmp_path):
    """Why altarr leaves out the legacy key by default: with it, z5py reads a well-compressed shard as a
    truncated block, silently (values that are not the data); without it, z5py does not see a dataset."""
    values = np.full((32, 32, 32), 7, dtype="uint16")
    for legacy in (True, False):
        path = tmp_path / f"legacy-{legacy}.n5"
        ds = aa.create_dataset(
            str(path),
            path="ds",
            shape=values.shape,
            dtype=values.dtype,
            chunks=(16, 16, 16),
            shards=(32, 32, 32),
            format="n5",
            compressor="gzip",
            legacy_compression=legacy,
        )
        ds[...] = values
        np.testing.assert_array_equal(aa.open_dataset(str(path), path="ds")[...], values)
        node = z5py.File(str(path), mode="r", use_zarr_format=False)["ds"]
        if legacy:
            misread = node[...]
            assert misread.shape == values.shape and not np.array_equal(misread, values)  # no error raised
        else:
            assert not isinstance(node, z5py.Dataset)


# --- altarr copy: sharded N5 -> sharded Zarr v3 -> sharded N5 ---------------------------------------------------
def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "altarr.cli", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_sharded_n5_round_trips_through_altarr_copy(tmp_path):
    d = DATASETS["shard-start-raw-uint16-3d"]  # ragged 3-D, a missing shard, missing chunks
    expected = np.load(DATA / d["expected"])
    src = tmp_path / "src.n5"
    write_like_java(src, d, index_location="end", index_endian="big", index_crc32c=True)  # altarr's defaults
    src_ds = aa.open_dataset(str(src), path=d["name"])
    shards = ",".join(str(s) for s in src_ds.shards)
    zarr3, back = tmp_path / "mid.zarr", tmp_path / "back.n5"
    res = run_cli(
        "copy",
        str(src / d["name"]),
        str(zarr3),
        "--format",
        "zarr3",
        "--shards",
        shards,
        "--compressor",
        "zstd",
    )
    assert res.returncode == 0, res.stderr
    mid = aa.open_dataset(str(zarr3))
    assert mid.format == "zarr3" and mid.chunks == src_ds.chunks and mid.shards == src_ds.shards
    np.testing.assert_array_equal(mid[...], expected)
    np.testing.assert_array_equal(zarr.open_array(str(zarr3), mode="r")[...], expected)  # a peer agrees
    res = run_cli(
        "copy",
        str(zarr3),
        str(back / d["name"]),
        "--format",
        "n5",
        "--shards",
        shards,
        "--compressor",
        "none",
    )
    assert res.returncode == 0, res.stderr
    again = aa.open_dataset(str(back), path=d["name"])
    assert again.chunks == src_ds.chunks and again.shards == src_ds.shards
    np.testing.assert_array_equal(again[...], expected)
    # the same writer, the same layout: the same files, byte for byte, and only the chunks that hold data
    assert stored_files(back / d["name"]) == stored_files(src / d["name"]) == sorted(d["files"])
    for f in d["files"]:
        assert (back / d["name"] / f).read_bytes() == (src / d["name"] / f).read_bytes()
    back_doc = json.loads((back / d["name"] / "attributes.json").read_text())
    assert back_doc.pop("n5") == "4.0.0"  # the copy is the root of its own container
    assert back_doc == json.loads((src / d["name"] / "attributes.json").read_text())


def test_java_nested_fixture_copies_to_nested_zarr3(tmp_path):
    d = DATASETS["nested-raw-uint8"]
    src = aa.open_dataset(str(DATA / "data.n5"), path=d["name"])
    dst = aa.copy_dataset(
        src, str(tmp_path / "n.zarr"), format="zarr3", shards=[tuple(s) for s in d["numpy"]["shards"]]
    )
    assert dst.chunks == (3, 2) and dst.shards == (12, 8)
    np.testing.assert_array_equal(
        zarr.open_array(str(tmp_path / "n.zarr"), mode="r")[...], np.load(DATA / d["expected"])
    )


# --- request counts on Java's shards ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name",
    ["shard-raw-uint32", "shard-start-little-crc32c-gzip-uint32", "shard-start-crc32c-zstd-float32-3d"],
)
def test_reading_javas_shards_request_counts(name):
    """Index at the end (a suffix read: no size query) or at the start, with or without crc32c: one chunk
    costs the index and its own range; a shard's stored chunks all at once cost one whole-object read; a
    chunk of a missing shard file one request."""
    d = DATASETS[name]
    store = LocalStore(DATA / "data.n5", max_coalesced_size=1)  # no merging: every request counted
    ds = aa.open_dataset(store, path=name)
    expected = np.load(DATA / d["expected"])
    missing = {numpy_pos(c) for c in d["missing_chunks"]}
    first_shard = [c for c in chunk_grid(d) if ds._access.layout.shard_of(c) == (0,) * len(c)]
    stored = [c for c in first_shard if c not in missing]
    for wanted, reads in (([stored[0]], 2), (stored, 1)):
        ds = aa.open_dataset(store, path=name)  # no cached index
        store.stats.reset()
        arrays = ds.read_chunks(wanted)
        assert (store.stats.reads, store.stats.size_queries, store.stats.writes) == (reads, 0, 0)
        for c, a in zip(wanted, arrays, strict=True):
            sel = tuple(slice(p * k, (p + 1) * k) for p, k in zip(c, ds.chunks, strict=True))
            np.testing.assert_array_equal(a, expected[sel])
    shard_key = "/".join(str(p) for p in d["missing_shards"][0])
    in_missing = [c for c in chunk_grid(d) if ds._access.layout.object_key(c) == f"{name}/{shard_key}"]
    store.stats.reset()
    assert ds.read_chunks(in_missing[:1]) == [None]
    assert (store.stats.reads, store.stats.size_queries) == (1, 0)


# --- the case of the issue, decoded independently from the fixtures' README ----------------------------------------
def test_issue_case_decodes_by_the_readme_layout(tmp_path):
    """N5 dims [16, 8], chunk [2, 4], shard [8, 8]: the layout Java read wrongly from altarr before. Decoded
    here without altarr, from the README's description of Java's shards: the index is (offset, nbytes)
    big-endian uint64 pairs in C order over the NumPy-order chunk grid of the shard, each chunk an n5bytes
    block whose header holds its N5-order size."""
    values = np.arange(128, dtype="uint16").reshape(8, 16) + 1  # NumPy order: N5 dims [16, 8]
    ds = aa.create_dataset(
        str(tmp_path / "i.n5"),
        path="ds",
        format="n5",
        shape=values.shape,
        dtype=values.dtype,
        chunks=(4, 2),  # N5 chunk [2, 4]
        shards=(8, 8),
        compressor="raw",
        index_crc32c=False,
    )
    ds[...] = values
    doc = json.loads((tmp_path / "i.n5" / "ds" / "attributes.json").read_text())
    assert doc["blockSize"] == [8, 8] and doc["codecs"][0]["configuration"]["chunk_shape"] == [4, 2]
    decoded = np.zeros_like(values)
    for sx in range(2):  # N5 shard position (sx, 0)
        raw = (tmp_path / "i.n5" / "ds" / str(sx) / "0").read_bytes()
        cps = (8 // 4, 8 // 2)  # NumPy order
        index = np.frombuffer(raw[-16 * 4 * 2 :], dtype=">u8").reshape(*cps, 2)
        for i, j in np.ndindex(*cps):
            off, n = (int(v) for v in index[i, j])
            block = raw[off : off + n]
            mode, ndim, w, h = struct.unpack(">HHII", block[:12])
            assert (mode, ndim, w, h) == (0, 2, 2, 4)  # N5-order size [2, 4]
            chunk = np.frombuffer(block[12:], dtype=">u2").reshape(h, w)
            decoded[i * 4 : (i + 1) * 4, sx * 8 + j * 2 : sx * 8 + (j + 1) * 2] = chunk
    np.testing.assert_array_equal(decoded, values)
