"""N5 metadata + blocks written by altarr and read by tensorstore and z5py, and the reverse.

tensorstore's ``n5`` driver keeps N5 dimension order (its arrays are the transpose of ours); z5py uses
NumPy order like altarr. Each test writes every block of a small dataset with truncated edge blocks.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import tensorstore as ts
import z5py

from altarr.codecs.n5 import N5BlockCodec
from altarr.codecs.n5_compressions import Lz4Compression
from altarr.errors import CorruptChunkError, MetadataError
from altarr.formats import detect_format, get_format, open_node
from altarr.stores import LocalStore

SHAPE = (9, 7)  # NumPy order; N5 dimensions [7, 9]
CHUNKS = (4, 5)  # N5 blockSize [5, 4]: edge blocks are truncated in both dimensions
N5 = get_format("n5")


def _data(dtype: str) -> np.ndarray:
    dt = np.dtype(dtype)
    a = np.arange(math.prod(SHAPE)).reshape(SHAPE) * 3 - 20
    if dt.kind == "u":
        a = np.abs(a)
    return a.astype(dt)


def _grid() -> list[tuple[int, int]]:
    return [(i, j) for i in range(-(-SHAPE[0] // CHUNKS[0])) for j in range(-(-SHAPE[1] // CHUNKS[1]))]


def _slices(pos: tuple[int, int]) -> tuple[slice, ...]:
    return tuple(slice(p * c, min((p + 1) * c, s)) for p, c, s in zip(pos, CHUNKS, SHAPE, strict=True))


def write_with_altarr(root, compressor, dtype: str) -> np.ndarray:
    store = LocalStore(root)
    spec = N5.create_array(store, "ds", shape=SHAPE, dtype=dtype, chunks=CHUNKS, compressor=compressor)
    a = _data(dtype)
    for pos in _grid():
        store.set("ds/" + spec.chunk_key(pos), bytes(spec.codecs.encode(a[_slices(pos)])))
    return a


def read_with_altarr(root) -> np.ndarray:
    store = LocalStore(root)
    fmt, kind = detect_format(store, "ds")
    assert (fmt.name, kind) == ("n5", "array")
    spec = open_node(store, "ds", format=fmt.name).spec
    assert spec.shape == SHAPE and spec.outer_chunks == CHUNKS
    out = np.zeros(spec.shape, dtype=spec.dtype)
    for pos in _grid():
        data = store.get("ds/" + spec.chunk_key(pos))
        assert data is not None, pos
        block = spec.codecs.decode(data, spec.outer_chunks, spec.dtype)
        clipped = out[_slices(pos)].shape
        # N5 edge blocks are truncated (Java, z5py, altarr) or full-size (tensorstore pads them)
        assert block.shape in (clipped, spec.outer_chunks)
        out[_slices(pos)] = block[tuple(slice(0, n) for n in clipped)]
    return out


TS_COMPRESSIONS = [
    ("raw", {"type": "raw"}),
    ("gzip", {"type": "gzip", "level": 6, "useZlib": False}),
    ("zlib", {"type": "gzip", "level": 3, "useZlib": True}),
    ("bzip2", {"type": "bzip2", "blockSize": 9}),
    ("xz", {"type": "xz", "preset": 6}),
    ("blosc", {"type": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}),
    ("zstd", {"type": "zstd", "level": 3}),
]


@pytest.mark.parametrize("dtype", ["uint8", "int16", "uint32", "int64", "float32", "float64"])
@pytest.mark.parametrize("name, compression", TS_COMPRESSIONS, ids=[c[0] for c in TS_COMPRESSIONS])
def test_tensorstore_reads_altarr_n5(tmp_path, name, compression, dtype):
    a = write_with_altarr(tmp_path, compression, dtype)
    t = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(tmp_path / "ds")}}).result()
    assert tuple(t.shape) == SHAPE[::-1]  # tensorstore keeps N5 order
    np.testing.assert_array_equal(t.read().result(), a.T)


@pytest.mark.parametrize("dtype", ["uint16", "int32", "float64"])
@pytest.mark.parametrize("name, compression", TS_COMPRESSIONS, ids=[c[0] for c in TS_COMPRESSIONS])
def test_altarr_reads_tensorstore_n5(tmp_path, name, compression, dtype):
    # tensorstore writes edge blocks at the full block size (padded); read_with_altarr accepts both
    a = _data(dtype)
    t = ts.open(
        {
            "driver": "n5",
            "kvstore": {"driver": "file", "path": str(tmp_path / "ds")},
            "metadata": {
                "dimensions": list(SHAPE[::-1]),
                "blockSize": list(CHUNKS[::-1]),
                "dataType": dtype,
                "compression": compression,
            },
        },
        create=True,
    ).result()
    t.write(a.T).result()
    np.testing.assert_array_equal(read_with_altarr(tmp_path), a)


def test_tensorstore_has_no_n5_lz4():
    # tensorstore's n5 driver lacks the lz4 compression entirely, so there is no lz4 interop to test there.
    with pytest.raises(ValueError, match="lz4"):
        ts.open(
            {
                "driver": "n5",
                "kvstore": {"driver": "memory"},
                "metadata": {
                    "dimensions": [4],
                    "blockSize": [4],
                    "dataType": "uint8",
                    "compression": {"type": "lz4"},
                },
            },
            create=True,
        ).result()


Z5_COMPRESSIONS = [
    ("raw", {}),
    ("gzip", {"level": 4}),
    ("bzip2", {}),
    ("xz", {}),
    ("zstd", {}),
    ("blosc", {"codec": "lz4", "clevel": 5, "shuffle": 1}),
]


@pytest.mark.parametrize("dtype", ["int8", "uint16", "float32", "uint64"])
@pytest.mark.parametrize("name, opts", Z5_COMPRESSIONS, ids=[c[0] for c in Z5_COMPRESSIONS])
def test_altarr_reads_z5py_n5(tmp_path, name, opts, dtype):
    a = _data(dtype)
    tmp_path = tmp_path / "z5.n5"
    f = z5py.File(str(tmp_path), "a", use_zarr_format=False)
    ds = f.create_dataset("ds", shape=SHAPE, chunks=CHUNKS, dtype=dtype, compression=name, **opts)
    ds[:] = a
    np.testing.assert_array_equal(read_with_altarr(tmp_path), a)


@pytest.mark.parametrize("dtype", ["uint8", "int32", "float64"])
@pytest.mark.parametrize(
    "compression",
    [
        "raw",
        {"type": "gzip", "level": -1, "useZlib": False},
        "bzip2",
        "xz",
        "zstd",
        {"type": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0},
    ],
    ids=["raw", "gzip", "bzip2", "xz", "zstd", "blosc"],
)
def test_z5py_reads_altarr_n5(tmp_path, compression, dtype):
    a = write_with_altarr(tmp_path, compression, dtype)
    f = z5py.File(str(tmp_path), "r", use_zarr_format=False)
    assert f["ds"].shape == SHAPE
    np.testing.assert_array_equal(f["ds"][:], a)


def test_z5py_lz4_is_not_the_lz4_java_format(tmp_path):
    # z5 writes N5 "lz4" blocks as raw LZ4 data, not the lz4-java LZ4BlockOutputStream stream the Java N5
    # library (and altarr) use, so neither side can read the other's lz4 blocks. Assert that both sides
    # fail loudly instead of returning garbage.
    a = _data("uint16")
    f = z5py.File(str(tmp_path / "z5.n5"), "a", use_zarr_format=False)
    f.create_dataset("ds", shape=SHAPE, chunks=CHUNKS, dtype="uint16", compression="lz4")[:] = a
    store = LocalStore(tmp_path / "z5.n5")
    # z5 even records {"type": "lz4", "blockSize": 6}, which is no valid lz4-java block size
    with pytest.raises(MetadataError, match="blockSize"):
        open_node(store, "ds", format="n5")
    with pytest.raises(CorruptChunkError, match="lz4"):
        N5BlockCodec(Lz4Compression()).decode(store.get("ds/0/0"), CHUNKS, np.dtype("uint16"))

    write_with_altarr(tmp_path / "ours.n5", "lz4", "uint16")
    with pytest.raises(RuntimeError, match="lz4"):
        z5py.File(str(tmp_path / "ours.n5"), "r", use_zarr_format=False)["ds"][:]


def test_attributes_json_like_java(tmp_path):
    store = LocalStore(tmp_path)
    N5.create_array(store, "raw", shape=(5, 7), dtype="uint8", chunks=(4, 5), compressor="raw")
    # the bytes Java N5 (3.1.3 fixture) writes, compact JSON in this key order
    assert (tmp_path / "raw" / "attributes.json").read_bytes() == (
        b'{"dataType":"uint8","compression":{"type":"raw"},"blockSize":[5,4],"dimensions":[7,5]}'
    )
    assert json.loads((tmp_path / "attributes.json").read_bytes()) == {"n5": "4.0.0"}


def test_z5py_root_version_and_attributes(tmp_path):
    tmp_path = tmp_path / "z5.n5"
    f = z5py.File(str(tmp_path), "a", use_zarr_format=False)
    ds = f.create_dataset("ds", shape=(4, 4), chunks=(2, 2), dtype="uint8", compression="raw")
    ds.attrs["answer"] = 42
    store = LocalStore(tmp_path)
    assert N5.read_attributes(store, "ds") == {"answer": 42}
    assert detect_format(store, "")[1] == "group"
    N5.write_attributes(store, "ds", {"answer": 43, "unit": "nm"})
    assert dict(z5py.File(str(tmp_path), "r")["ds"].attrs) == {"answer": 43, "unit": "nm"}
    assert open_node(store, "ds", format="n5").spec.shape == (4, 4)


def test_newer_major_version_is_refused(tmp_path):
    store = LocalStore(tmp_path)
    N5.create_array(store, "ds", shape=(4,), dtype="uint8", chunks=(2,), compressor="raw")
    store.set("attributes.json", b'{"n5":"5.0.0"}')
    with pytest.raises(Exception, match="newer than the supported") as ei:
        detect_format(store, "ds")
    assert ei.value.key == "attributes.json"
    store.set("attributes.json", b'{"n5":"banana"}')
    with pytest.raises(MetadataError, match="malformed version"):
        open_node(store, "ds", format="n5")
