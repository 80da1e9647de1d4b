"""N5 at the dataset level, both directions, against z5py and tensorstore's ``n5`` driver (issue 2).

Order conventions: altarr and z5py use NumPy order (shape ``dimensions[::-1]``); tensorstore's ``n5``
driver keeps N5 order, so its arrays are compared with the transpose.

Matrix: every N5 numeric dtype x every N5 compression (raw, gzip, gzip with ``useZlib``, bzip2, xz, lz4,
zstd, blosc) x writer (altarr, z5py, tensorstore), on a 3-D array whose shape is no multiple of the block
shape (truncated edge blocks) with some blocks never written. Where a peer lacks a compression, the test
asserts its refusal:

* tensorstore's ``n5`` driver has no ``lz4`` (``"lz4" is not registered``), for reading and writing;
* z5py's N5 ``lz4`` is a bare LZ4 block, not the lz4-java block stream Java N5 (and altarr) use: z5py
  fails to decompress Java-style lz4 blocks, and altarr refuses z5py's lz4 metadata, whose ``blockSize``
  (z5py writes its compression level there, e.g. 6) is no valid lz4-java block size;
* z5py cannot write gzip with ``useZlib`` (it reads it).

Plus the Java backward-compatibility fixture ``data-3.1.3.n5/raw`` byte for byte.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorstore as ts
import z5py

import altarr as aa
from _peers import altarr_chunks_match, read_json, sample
from altarr.errors import MetadataError

# region reads and writes through the native kernel and the pure-Python path (conftest.py)
pytestmark = pytest.mark.usefixtures("engine_path")

SHAPE = (5, 9, 7)  # NumPy order; N5 dimensions [7, 9, 5]
CHUNKS = (2, 4, 5)  # N5 blockSize [5, 4, 2]: edge blocks truncated in every dimension
#: Two overlapping writes: the corner block (truncated in every dimension) is written, blocks (2, 0, *) not.
REGIONS = [(slice(0, 4), slice(0, 9), slice(1, 7)), (slice(3, 5), slice(5, 9), slice(4, 7))]
DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32", "float64"]
#: altarr's compressor argument per case (N5 names and N5 JSON objects).
COMPRESSIONS = {
    "raw": None,
    "gzip": "gzip",
    "gzip-zlib": {"type": "gzip", "level": 6, "useZlib": True},
    "bzip2": "bzip2",
    "xz": "xz",
    "lz4": "lz4",
    "zstd": "zstd",
    "blosc": {"type": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0, "nthreads": 1},
}
#: z5py's compression name and options per case (None: z5py cannot write it).
Z5PY = {
    "raw": ("raw", {}),
    "gzip": ("gzip", {"level": 5}),
    "gzip-zlib": None,
    "bzip2": ("bzip2", {"level": 9}),
    "xz": ("xz", {"level": 6}),
    "lz4": ("lz4", {}),
    "zstd": ("zstd", {"level": 3}),
    "blosc": ("blosc", {"codec": "zstd", "clevel": 3, "shuffle": 2}),
}
#: tensorstore's N5 compression JSON per case (None: the driver lacks it).
TENSORSTORE = {
    "raw": {"type": "raw"},
    "gzip": {"type": "gzip", "level": 5},
    "gzip-zlib": {"type": "gzip", "useZlib": True},
    "bzip2": {"type": "bzip2", "blockSize": 9},
    "xz": {"type": "xz", "preset": 6},
    "lz4": None,
    "zstd": {"type": "zstd", "level": 3},
    "blosc": {"type": "blosc", "cname": "zstd", "clevel": 5, "shuffle": 1},
}


def expected_values(dtype: str, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    values = sample(SHAPE, dtype, seed)
    expected = np.zeros(SHAPE, dtype)  # N5 has no fill value: missing blocks read as 0
    for sel in REGIONS:
        expected[sel] = values[sel]
    return values, expected


def ts_spec(path, **extra) -> dict:
    return {"driver": "n5", "kvstore": {"driver": "file", "path": str(path / "ds")}, **extra}


def check_altarr(path, expected: np.ndarray) -> None:
    ds = aa.open_dataset(str(path), path="ds")
    assert ds.format == "n5" and ds.shape == SHAPE and ds.chunks == CHUNKS and ds.shards is None
    assert ds.dtype == expected.dtype
    np.testing.assert_array_equal(ds[...], expected)
    stored, missing = altarr_chunks_match(ds, expected)
    assert stored and missing
    np.testing.assert_array_equal(ds[4:0:-2, ::3, 2:], expected[4:0:-2, ::3, 2:])


# --- altarr writes ------------------------------------------------------------------------------------------
def write_with_altarr(path, dtype: str, comp: str) -> np.ndarray:
    values, expected = expected_values(dtype)
    ds = aa.create_dataset(
        str(path),
        path="ds",
        shape=SHAPE,
        dtype=dtype,
        chunks=CHUNKS,
        format="n5",
        compressor=COMPRESSIONS[comp],
        attributes={"writer": "altarr"},
    )
    for sel in REGIONS:
        ds[sel] = values[sel]
    return expected


@pytest.mark.parametrize("comp", list(COMPRESSIONS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_altarr_writes(tmp_path, dtype, comp):
    path = tmp_path / "a.n5"
    expected = write_with_altarr(path, dtype, comp)
    attrs = read_json(path / "ds" / "attributes.json")
    assert attrs["dimensions"] == [7, 9, 5] and attrs["blockSize"] == [5, 4, 2] and attrs["dataType"] == dtype
    assert attrs["compression"]["type"] == comp.split("-")[0]
    assert read_json(path / "attributes.json") == {"n5": "4.0.0"}
    # an edge block is stored truncated: N5 position (1, 2, 2) holds 2 x 1 x 1 elements
    assert (path / "ds" / "1" / "2" / "2").read_bytes()[:16] == bytes.fromhex(
        "0000 0003 00000002 00000001 00000001"
    )

    f = z5py.File(str(path), mode="r", use_zarr_format=False)
    if comp == "lz4":
        # z5py's lz4 is a bare LZ4 block; altarr writes Java N5's lz4-java block stream
        with pytest.raises(RuntimeError, match="lz4"):
            f["ds"][...]
    else:
        np.testing.assert_array_equal(f["ds"][...], expected)
        assert f["ds"].attrs["writer"] == "altarr"

    if comp == "lz4":
        # tensorstore's n5 driver has no lz4 compression
        with pytest.raises(ValueError, match='"lz4" is not registered'):
            ts.open(ts_spec(path)).result()
    else:
        t = ts.open(ts_spec(path)).result()
        assert t.shape == SHAPE[::-1]
        np.testing.assert_array_equal(t.read().result(), expected.T)  # tensorstore keeps N5 order


# --- z5py writes --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("comp", list(COMPRESSIONS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_z5py_writes(tmp_path, dtype, comp):
    path = tmp_path / "z.n5"
    values, expected = expected_values(dtype)
    f = z5py.File(str(path), mode="w", use_zarr_format=False)
    if Z5PY[comp] is None:
        # z5py's N5 gzip has no useZlib option
        with pytest.raises(RuntimeError, match="Invalid options"):
            f.create_dataset("ds", shape=SHAPE, chunks=CHUNKS, dtype=dtype, compression="gzip", useZlib=True)
        return
    name, options = Z5PY[comp]
    ds = f.create_dataset("ds", shape=SHAPE, chunks=CHUNKS, dtype=dtype, compression=name, **options)
    for sel in REGIONS:
        ds[sel] = values[sel]
    assert read_json(path / "ds" / "attributes.json")["compression"]["type"] == name
    if comp == "lz4":
        # z5py records its level as lz4 "blockSize" (not a valid lz4-java block size) and writes a bare
        # LZ4 block: altarr refuses the metadata instead of misreading the blocks
        with pytest.raises(MetadataError, match="blockSize"):
            aa.open_dataset(str(path), path="ds")
        return
    check_altarr(path, expected)


# --- tensorstore writes -------------------------------------------------------------------------------------
@pytest.mark.parametrize("comp", list(COMPRESSIONS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_tensorstore_writes(tmp_path, dtype, comp):
    path = tmp_path / "t.n5"
    values, expected = expected_values(dtype)
    meta = {"dimensions": list(SHAPE[::-1]), "blockSize": list(CHUNKS[::-1]), "dataType": dtype}
    if TENSORSTORE[comp] is None:
        with pytest.raises(ValueError, match='"lz4" is not registered'):
            ts.open(ts_spec(path, create=True, metadata={**meta, "compression": {"type": "lz4"}})).result()
        return
    t = ts.open(ts_spec(path, create=True, metadata={**meta, "compression": TENSORSTORE[comp]})).result()
    for sel in REGIONS:
        t[sel[::-1]].write(values[sel].T).result()
    # tensorstore writes no container root attributes.json and full-size (untruncated) edge blocks
    assert not (path / "attributes.json").exists()
    if comp == "raw":
        header = (path / "ds" / "1" / "2" / "2").read_bytes()[:16]
        assert header == bytes.fromhex("0000 0003 00000005 00000004 00000002")
    check_altarr(path, expected)


# --- altarr edits peer datasets ---------------------------------------------------------------------------------
@pytest.mark.parametrize("writer", ["z5py", "tensorstore"])
def test_altarr_edits_a_peer_dataset(tmp_path, writer):
    """altarr writes regions and whole blocks into a dataset a peer wrote; both peers read the result."""
    path = tmp_path / "e.n5"
    values, expected = expected_values("int16")
    if writer == "z5py":
        ds = z5py.File(str(path), mode="w", use_zarr_format=False).create_dataset(
            "ds", shape=SHAPE, chunks=CHUNKS, dtype="int16", compression="gzip"
        )
        for sel in REGIONS:
            ds[sel] = values[sel]
    else:
        meta = {"dimensions": [7, 9, 5], "blockSize": [5, 4, 2], "dataType": "int16"}
        t = ts.open(ts_spec(path, create=True, metadata={**meta, "compression": {"type": "gzip"}})).result()
        for sel in REGIONS:
            t[sel[::-1]].write(values[sel].T).result()
    ds = aa.open_dataset(str(path), mode="r+", path="ds")
    ds[1:4, 3:8, 2:6] = -np.arange(60, dtype="int16").reshape(3, 5, 4)
    expected[1:4, 3:8, 2:6] = -np.arange(60, dtype="int16").reshape(3, 5, 4)
    ds.write_chunk((2, 2, 1), np.full((1, 1, 2), 99, "int16"))  # the truncated corner block
    expected[4:5, 8:9, 5:7] = 99
    assert ds.delete_chunk((0, 0, 0)) is True
    expected[0:2, 0:4, 0:5] = 0
    if writer == "z5py":
        f = z5py.File(str(path), mode="r", use_zarr_format=False)
        np.testing.assert_array_equal(f["ds"][...], expected)
    else:
        # z5py cannot open a container without a root attributes.json, which tensorstore never writes
        # (altarr's edits do not add one either: they touch the dataset only)
        assert not (path / "attributes.json").exists()
        with pytest.raises(RuntimeError, match="empty input"):
            z5py.File(str(path), mode="r", use_zarr_format=False)
    np.testing.assert_array_equal(ts.open(ts_spec(path)).result().read().result(), expected.T)
    np.testing.assert_array_equal(aa.open_dataset(str(path), path="ds")[...], expected)


def test_peers_do_not_misread_sharded_n5(tmp_path):
    """altarr's sharded N5 (an N5 4.x ``codecs`` list, no legacy ``compression``) is refused by the peers,
    which have no N5 sharding, rather than misread as plain blocks."""
    path = tmp_path / "s.n5"
    values = sample(SHAPE, "uint16", 1)
    ds = aa.create_dataset(
        str(path), path="ds", shape=SHAPE, dtype="uint16", chunks=CHUNKS, shards=(4, 8, 10), format="n5"
    )
    ds[...] = values
    attrs = read_json(path / "ds" / "attributes.json")
    assert "compression" not in attrs and attrs["codecs"][0]["name"] == "sharding_indexed"
    assert attrs["blockSize"] == [10, 8, 4]
    with pytest.raises(ValueError, match='"compression"'):
        ts.open(ts_spec(path)).result()
    node = z5py.File(str(path), mode="r", use_zarr_format=False)["ds"]
    assert not isinstance(node, z5py.Dataset)  # z5py sees a group, not a dataset
    np.testing.assert_array_equal(aa.open_dataset(str(path), path="ds")[...], values)


# --- the Java backward-compatibility fixture --------------------------------------------------------------------
def test_java_fixture_data_3_1_3_raw(tmp_path):
    """``data-3.1.3.n5/raw`` of the Java N5 CompatibilityTest: dims [7, 5] (N5 order), blockSize [5, 4],
    uint8, raw; blocks (0,0), (1,0), (0,1), (1,1) in N5 grid order hold the constants 0, 1, 2, 3 and the
    edge blocks are truncated to (2,4), (5,1), (2,1)."""
    root = tmp_path / "data-3.1.3.n5"
    # block 0 holds the constant 0, the default value: keep it stored as the fixture does
    ds = aa.create_dataset(
        str(root),
        path="raw",
        shape=(5, 7),
        dtype="uint8",
        chunks=(4, 5),
        format="n5",
        compressor=None,
        write_empty_chunks=True,
    )
    n5_order = [(0, 0), (1, 0), (0, 1), (1, 1)]  # N5 grid positions; NumPy coordinates are reversed
    ds.write_chunks(
        [p[::-1] for p in n5_order],
        [np.full(ds._access.grid.block_clipped_shape(p[::-1]), v, "uint8") for v, p in enumerate(n5_order)],
    )
    assert read_json(root / "raw" / "attributes.json") == {
        "dataType": "uint8",
        "compression": {"type": "raw"},
        "blockSize": [5, 4],
        "dimensions": [7, 5],
    }
    assert read_json(root / "attributes.json") == {"n5": "4.0.0"}
    blocks = {
        "0/0": "0000 0002 00000005 00000004" + "00" * 20,
        "1/0": "0000 0002 00000002 00000004" + "01" * 8,
        "0/1": "0000 0002 00000005 00000001" + "02" * 5,
        "1/1": "0000 0002 00000002 00000001" + "03" * 2,
    }
    for key, hexbytes in blocks.items():
        assert (root / "raw" / key).read_bytes() == bytes.fromhex(hexbytes), key
    stored = sorted(str(p.relative_to(root / "raw")) for p in (root / "raw").rglob("*") if p.is_file())
    assert stored == sorted(["attributes.json", *blocks])

    expected = np.zeros((5, 7), "uint8")
    expected[:4, :5], expected[:4, 5:], expected[4:, :5], expected[4:, 5:] = 0, 1, 2, 3
    back = aa.open_dataset(str(root), path="raw")
    np.testing.assert_array_equal(back[...], expected)
    assert [int(a[0, 0]) for a in back.read_chunks([(0, 0), (0, 1), (1, 0), (1, 1)])] == [0, 1, 2, 3]
    assert [a.shape for a in back.read_chunks([(0, 0), (0, 1), (1, 0), (1, 1)])] == [
        (4, 5),
        (4, 2),
        (1, 5),
        (1, 2),
    ]
    np.testing.assert_array_equal(z5py.File(str(root), mode="r", use_zarr_format=False)["raw"][...], expected)
    t = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(root / "raw")}}).result()
    np.testing.assert_array_equal(t.read().result(), expected.T)


def test_legacy_compression_type_fixture(tmp_path):
    """The 1.5.0 fixture's legacy ``compressionType`` metadata with the same blocks reads the same."""
    root = tmp_path / "data-1.5.0.n5"
    (root / "raw").mkdir(parents=True)
    (root / "attributes.json").write_text('{"n5":"1.5.0"}')
    (root / "raw" / "attributes.json").write_text(
        '{"dataType":"uint8","compressionType":"raw","blockSize":[5,4],"dimensions":[7,5]}'
    )
    for (x, y), size, v in [
        ((0, 0), (5, 4), 0),
        ((1, 0), (2, 4), 1),
        ((0, 1), (5, 1), 2),
        ((1, 1), (2, 1), 3),
    ]:
        (root / "raw" / str(x)).mkdir(exist_ok=True)
        header = bytes.fromhex(f"0000 0002 {size[0]:08x} {size[1]:08x}")
        (root / "raw" / str(x) / str(y)).write_bytes(header + bytes([v]) * (size[0] * size[1]))
    expected = np.zeros((5, 7), "uint8")
    expected[:4, 5:], expected[4:, :5], expected[4:, 5:] = 1, 2, 3
    np.testing.assert_array_equal(aa.open_dataset(str(root), path="raw")[...], expected)
    np.testing.assert_array_equal(z5py.File(str(root), mode="r", use_zarr_format=False)["raw"][...], expected)
