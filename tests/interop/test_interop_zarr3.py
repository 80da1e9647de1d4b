"""Zarr v3 at the dataset level, both directions, against zarr-python 3.1 and tensorstore (issue 2).

Every case writes two overlapping regions of a small 3-D array whose shape is not a multiple of the chunk
or shard shape, so the result has full chunks, clipped edge chunks, chunks that are partly fill value and
chunks/shards that are never written. The reader must give the written values and the fill value
elsewhere; ``read_chunks`` must give every stored chunk and ``None`` only where the values are all fill.

Matrix: 10 dtypes x 5 layouts (unsharded, sharded with the index at the end / start, nested sharding with
the index at the end / start) and 7 codec chains x 5 layouts, for each of altarr, zarr-python and
tensorstore as the writer; fill values including NaN, infinities, complex NaN and the integer extremes;
partial writes by altarr into shards zarr-python and tensorstore wrote; and the specification's worked
shard layout byte for byte.
"""

from __future__ import annotations

import json
import struct

import google_crc32c
import numpy as np
import pytest
import tensorstore as ts
import zarr

import altarr as aa
from _peers import (
    all_chunks,
    altarr_chunks_match,
    assert_same,
    bytes_codec,
    chain_json,
    chunk_slices,
    fill_array,
    read_json,
    sample,
    ts_fill_value,
    ts_read,
)

# region reads and writes through the native kernel and the pure-Python path (conftest.py)
pytestmark = pytest.mark.usefixtures("engine_path")

SHAPE = (7, 10, 9)
#: Two overlapping writes; their union leaves whole chunks and shards unwritten in every layout.
REGIONS = [
    (slice(0, 5), slice(1, 10), slice(0, 9)),
    (slice(3, 7), slice(0, 4), slice(2, 6)),
]
LAYOUTS = {
    "unsharded": {"chunks": (3, 4, 4), "shards": None, "index_location": "end"},
    "shard-end": {"chunks": (2, 3, 4), "shards": (4, 6, 8), "index_location": "end"},
    "shard-start": {"chunks": (2, 3, 4), "shards": (4, 6, 8), "index_location": "start"},
    "nested-end": {"chunks": (2, 2, 2), "shards": [(2, 4, 4), (4, 8, 8)], "index_location": "end"},
    "nested-start": {"chunks": (2, 2, 2), "shards": [(4, 4, 2), (4, 8, 4)], "index_location": "start"},
}
DTYPES = [
    "bool",
    "int8",
    "uint16",
    "int32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]
#: A fill value per dtype that is not the type's zero (NaN, infinities and extremes included).
FILLS = {
    "bool": True,
    "int8": -7,
    "uint16": 65535,
    "int32": -(2**31),
    "uint64": 2**64 - 1,
    "float16": float("nan"),
    "float32": float("-inf"),
    "float64": float("nan"),
    "complex64": complex(1.5, -2.0),
    "complex128": complex(float("nan"), 0.0),
}


def codec_case(name: str, dtype: np.dtype) -> tuple[list[dict], str, list[dict]]:
    """(array->array codecs, bytes endianness, bytes->bytes codecs) of a named chain."""
    zstd = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}
    cases: dict[str, tuple[list[dict], str, list[dict]]] = {
        "none": ([], "little", []),
        "gzip": ([], "little", [{"name": "gzip", "configuration": {"level": 5}}]),
        "zstd": ([], "little", [zstd]),
        "blosc": (
            [],
            "little",
            [
                {
                    "name": "blosc",
                    "configuration": {
                        "cname": "zstd",
                        "clevel": 3,
                        "shuffle": "bitshuffle",
                        "typesize": dtype.itemsize,
                        "blocksize": 0,
                    },
                }
            ],
        ),
        "crc32c": ([], "little", [zstd, {"name": "crc32c"}]),
        "transpose": ([{"name": "transpose", "configuration": {"order": [2, 0, 1]}}], "little", [zstd]),
        "big-endian": ([], "big", [{"name": "crc32c"}]),
    }
    return cases[name]


CODECS = ["none", "gzip", "zstd", "blosc", "crc32c", "transpose", "big-endian"]


def expected_values(dtype: str, fill: object, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(all values, what the array holds after writing REGIONS of them)."""
    values = sample(SHAPE, dtype, seed)
    expected = fill_array(SHAPE, dtype, fill)
    for sel in REGIONS:
        expected[sel] = values[sel]
    return values, expected


# --- writers ------------------------------------------------------------------------------------------------
def write_with_altarr(path, dtype: str, layout: dict, codec: str, fill) -> aa.Dataset:
    """create_dataset with the codec chain's bytes->bytes part as ``compressor``; a chain create_dataset
    cannot express (transpose inside the chunk chain, big-endian bytes) is put into zarr.json by editing the
    document altarr wrote, and the dataset reopened: the data are then written by altarr's engine."""
    aa_codecs, endian, bb = codec_case(codec, np.dtype(dtype))
    ds = aa.create_dataset(
        str(path),
        shape=SHAPE,
        dtype=dtype,
        chunks=layout["chunks"],
        shards=layout["shards"],
        compressor=bb or None,
        checksum=False,  # the chain exactly as the case names it
        fill_value=fill,
        index_location=layout["index_location"],
        attributes={"writer": "altarr"},
    )
    if aa_codecs or endian != "little":
        doc = read_json(path / "zarr.json")
        doc["codecs"], _ = chain_json(
            layout["chunks"],
            layout["shards"],
            [*aa_codecs, bytes_codec(endian), *bb],
            layout["index_location"],
        )
        (path / "zarr.json").write_text(json.dumps(doc))
        ds = aa.open_dataset(str(path), mode="r+")
    values, _ = expected_values(dtype, fill)
    for sel in REGIONS:
        ds[sel] = values[sel]
    return ds


def write_with_zarr_python(path, dtype: str, layout: dict, codec: str, fill) -> None:
    aa_codecs, endian, bb = codec_case(codec, np.dtype(dtype))
    inner = [*aa_codecs, bytes_codec(endian), *bb]
    if layout["shards"] is None:
        z = zarr.create_array(
            store=str(path),
            shape=SHAPE,
            chunks=layout["chunks"],
            dtype=dtype,
            filters=aa_codecs or None,
            serializer=bytes_codec(endian),
            compressors=bb or None,
            fill_value=fill,
        )
    else:
        codecs, outer = chain_json(layout["chunks"], layout["shards"], inner, layout["index_location"])
        z = zarr.create_array(
            store=str(path),
            shape=SHAPE,
            chunks=outer,
            dtype=dtype,
            filters=None,
            serializer=codecs[0],
            compressors=None,
            fill_value=fill,
        )
    values, _ = expected_values(dtype, fill)
    for sel in REGIONS:
        z[sel] = values[sel]


def _ts_fill_json(fill, dtype: str):
    from altarr.formats._common import encode_fill_value

    return encode_fill_value(fill, np.dtype(dtype))


def write_with_tensorstore(path, dtype: str, layout: dict, codec: str, fill) -> None:
    aa_codecs, endian, bb = codec_case(codec, np.dtype(dtype))
    codecs, outer = chain_json(
        layout["chunks"], layout["shards"], [*aa_codecs, bytes_codec(endian), *bb], layout["index_location"]
    )
    spec = {
        "driver": "zarr3",
        "kvstore": {"driver": "file", "path": str(path)},
        "create": True,
        "metadata": {
            "shape": list(SHAPE),
            "data_type": dtype,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(outer)}},
            "codecs": codecs,
            "fill_value": _ts_fill_json(fill, dtype),
        },
    }
    t = ts.open(spec).result()
    values, _ = expected_values(dtype, fill)
    for sel in REGIONS:
        t[sel].write(values[sel]).result()


def check_with_peers(path, dtype: str, fill, expected: np.ndarray) -> None:
    """zarr-python and tensorstore read what altarr wrote, and agree on the fill value."""
    z = zarr.open_array(str(path), mode="r")
    assert z.dtype == np.dtype(dtype)
    assert_same(z[...], expected, "zarr-python")
    assert_same(np.asarray(z.fill_value, dtype=dtype), fill_array((), dtype, fill), "zarr-python fill_value")
    assert_same(ts_read(path), expected, "tensorstore")
    assert_same(np.asarray(ts_fill_value(path)), fill_array((), dtype, fill), "tensorstore fill_value")


def check_with_altarr(path, dtype: str, fill, expected: np.ndarray, layout: dict) -> None:
    ds = aa.open_dataset(str(path))
    assert ds.dtype == np.dtype(dtype) and ds.shape == SHAPE
    assert ds.chunks == tuple(layout["chunks"])
    shards = layout["shards"]
    assert ds.shards == (
        None if shards is None else tuple(shards[-1] if isinstance(shards, list) else shards)
    )
    assert_same(np.asarray(ds.fill_value, dtype=dtype), fill_array((), dtype, fill), "fill_value")
    assert_same(ds[...], expected, "open_dataset(...)[...]")
    stored, missing = altarr_chunks_match(ds, expected)
    assert stored > 0 and missing > 0
    # an unaligned region read as well
    sel = (slice(1, 6), slice(2, 9, 2), slice(None, None, -1))
    assert_same(ds[sel], expected[sel], "region")


# --- altarr writes, peers read ------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_altarr_writes_dtypes(tmp_path, dtype, layout):
    path = tmp_path / "a.zarr"
    write_with_altarr(path, dtype, LAYOUTS[layout], "zstd", FILLS[dtype])
    _, expected = expected_values(dtype, FILLS[dtype])
    check_with_peers(path, dtype, FILLS[dtype], expected)
    assert zarr.open_array(str(path), mode="r").attrs["writer"] == "altarr"


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("codec", CODECS)
def test_altarr_writes_codecs(tmp_path, codec, layout):
    dtype = "int16" if codec != "blosc" else "float32"
    fill = 3
    path = tmp_path / "a.zarr"
    write_with_altarr(path, dtype, LAYOUTS[layout], codec, fill)
    aa_codecs, endian, bb = codec_case(codec, np.dtype(dtype))
    chain = read_json(path / "zarr.json")["codecs"]
    while chain[-1]["name"] == "sharding_indexed":  # down to the chunks' own chain
        assert len(chain) == 1
        chain = chain[0]["configuration"]["codecs"]
    assert [c["name"] for c in chain] == [c["name"] for c in [*aa_codecs, bytes_codec(endian), *bb]]
    assert chain[len(aa_codecs)] == bytes_codec(endian)
    _, expected = expected_values(dtype, fill)
    check_with_peers(path, dtype, fill, expected)


@pytest.mark.parametrize(
    "dtype,fill",
    [
        ("float32", float("nan")),
        ("float64", float("inf")),
        ("float16", -0.0),
        ("complex64", complex(float("nan"), float("nan"))),
        ("complex128", complex(float("-inf"), 2.5)),
        ("int8", -128),
        ("uint64", 2**63 + 5),
        ("bool", False),
        ("int32", 0),
    ],
)
def test_fill_values(tmp_path, dtype, fill):
    path = tmp_path / "f.zarr"
    write_with_altarr(path, dtype, LAYOUTS["shard-end"], "none", fill)
    _, expected = expected_values(dtype, fill)
    check_with_peers(path, dtype, fill, expected)
    check_with_altarr(path, dtype, fill, expected, LAYOUTS["shard-end"])
    # a chunk written as nothing but the fill value is not stored
    ds = aa.open_dataset(str(path), mode="r+")
    ds.write_chunk((0, 0, 0), fill_array((2, 3, 4), dtype, fill))
    assert ds.read_chunk((0, 0, 0)) is None
    assert_same(zarr.open_array(str(path), mode="r")[0:2, 0:3, 0:4], fill_array((2, 3, 4), dtype, fill))


def test_nan_payload_fill_value_survives(tmp_path):
    """A NaN with a payload is written as its hex bit pattern; every reader keeps the bits."""
    nan = np.array(0x7FC00123, dtype="uint32").view("float32")[()]
    path = tmp_path / "p.zarr"
    ds = aa.create_dataset(str(path), shape=(4,), dtype="float32", chunks=(2,), fill_value=nan)
    assert read_json(path / "zarr.json")["fill_value"] == "0x7fc00123"
    ds[0:2] = 1.0
    z = zarr.open_array(str(path), mode="r")
    assert np.asarray(z.fill_value, "float32").view("uint32") == 0x7FC00123
    assert z[...][2:].view("uint32").tolist() == [0x7FC00123] * 2
    assert ts_read(path)[2:].view("uint32").tolist() == [0x7FC00123] * 2


# --- peers write, altarr reads ------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_zarr_python_writes_dtypes(tmp_path, dtype, layout):
    path = tmp_path / "z.zarr"
    write_with_zarr_python(path, dtype, LAYOUTS[layout], "zstd", FILLS[dtype])
    _, expected = expected_values(dtype, FILLS[dtype])
    check_with_altarr(path, dtype, FILLS[dtype], expected, LAYOUTS[layout])


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("codec", CODECS)
def test_zarr_python_writes_codecs(tmp_path, codec, layout):
    dtype = "uint16" if codec != "blosc" else "float64"
    path = tmp_path / "z.zarr"
    write_with_zarr_python(path, dtype, LAYOUTS[layout], codec, 9)
    _, expected = expected_values(dtype, 9)
    check_with_altarr(path, dtype, 9, expected, LAYOUTS[layout])


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_tensorstore_writes_dtypes(tmp_path, dtype, layout):
    path = tmp_path / "t.zarr"
    write_with_tensorstore(path, dtype, LAYOUTS[layout], "zstd", FILLS[dtype])
    _, expected = expected_values(dtype, FILLS[dtype])
    check_with_altarr(path, dtype, FILLS[dtype], expected, LAYOUTS[layout])


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("codec", CODECS)
def test_tensorstore_writes_codecs(tmp_path, codec, layout):
    dtype = "int32" if codec != "blosc" else "complex64"
    path = tmp_path / "t.zarr"
    write_with_tensorstore(path, dtype, LAYOUTS[layout], codec, 0)
    _, expected = expected_values(dtype, 0)
    check_with_altarr(path, dtype, 0, expected, LAYOUTS[layout])


def test_tensorstore_omits_index_location_end(tmp_path):
    """tensorstore drops ``index_location`` when it is "end" (the spec's default); altarr reads that."""
    path = tmp_path / "t.zarr"
    write_with_tensorstore(path, "uint16", LAYOUTS["shard-end"], "none", 0)
    assert "index_location" not in read_json(path / "zarr.json")["codecs"][0]["configuration"]
    _, expected = expected_values("uint16", 0)
    check_with_altarr(path, "uint16", 0, expected, LAYOUTS["shard-end"])


# --- altarr edits shards a peer wrote -----------------------------------------------------------------------
@pytest.mark.parametrize("writer", ["zarr-python", "tensorstore"])
@pytest.mark.parametrize("layout", ["shard-end", "shard-start", "nested-end", "nested-start"])
def test_partial_writes_into_peer_shards(tmp_path, writer, layout):
    dtype, fill = "float32", float("nan")
    path = tmp_path / "w.zarr"
    spec = LAYOUTS[layout]
    if writer == "zarr-python":
        write_with_zarr_python(path, dtype, spec, "crc32c", fill)
    else:
        write_with_tensorstore(path, dtype, spec, "crc32c", fill)
    _, expected = expected_values(dtype, fill)
    ds = aa.open_dataset(str(path), mode="r+")
    ds.store.stats.reset()

    # 1. whole chunks into one existing shard: its other chunks stay as they are
    shard = ds.shard_of((0, 0, 0))
    inside = ds.chunks_in_shard(shard)
    picked = inside[1::3]
    new = [sample(chunk_slices_shape(ds, c), dtype, seed=10 + i) for i, c in enumerate(picked)]
    ds.write_chunks(picked, new)
    assert ds.store.stats.writes == 1  # one shard object rewritten
    for c, a in zip(picked, new, strict=True):
        expected[chunk_slices(ds, c)] = a
    # 2. an unaligned region across shards, partly over chunks that were never written
    sel = (slice(1, 6), slice(3, 10), slice(1, 8))
    region = sample(expected[sel].shape, dtype, seed=99)
    ds[sel] = region
    expected[sel] = region
    # 3. delete one stored chunk: it reads as fill value again
    victim = inside[0]
    assert ds.delete_chunk(victim) is True
    expected[chunk_slices(ds, victim)] = fill

    assert_same(zarr.open_array(str(path), mode="r")[...], expected, "zarr-python after altarr's writes")
    assert_same(ts_read(path), expected, "tensorstore after altarr's writes")
    assert_same(aa.open_dataset(str(path))[...], expected, "altarr")
    stored, missing = altarr_chunks_match(aa.open_dataset(str(path)), expected)
    assert stored and missing


def chunk_slices_shape(ds: aa.Dataset, c) -> tuple[int, ...]:
    return tuple(s.stop - s.start for s in chunk_slices(ds, c))


def test_partial_write_keeps_sibling_bytes(tmp_path):
    """Sibling chunks of a zarr-python shard are carried over byte for byte (never re-encoded)."""
    path = tmp_path / "b.zarr"
    a = np.arange(64 * 64, dtype="uint16").reshape(64, 64)
    z = zarr.create_array(
        store=str(path),
        shape=a.shape,
        chunks=(16, 16),
        shards=(64, 64),
        dtype="uint16",
        compressors=[{"name": "gzip", "configuration": {"level": 9}}],
        fill_value=0,
    )
    z[...] = a

    def entries(raw: bytes) -> dict[int, bytes]:
        idx = np.frombuffer(raw[-(16 * 16 + 4) : -4], "<u8").reshape(16, 2)
        return {i: raw[o : o + n] for i, (o, n) in enumerate(idx.tolist())}

    before = entries((path / "c" / "0" / "0").read_bytes())
    ds = aa.open_dataset(str(path), mode="r+")
    ds.write_chunk((1, 2), np.full((16, 16), 7, "uint16"))
    after = entries((path / "c" / "0" / "0").read_bytes())
    flat = 1 * 4 + 2
    assert all(after[i] == before[i] for i in range(16) if i != flat)
    assert after[flat] != before[flat]
    a[16:32, 32:48] = 7
    assert_same(zarr.open_array(str(path), mode="r")[...], a)


# --- the specification's worked example ---------------------------------------------------------------------
@pytest.mark.parametrize("location", ["end", "start"])
def test_spec_worked_shard_layout(tmp_path, location):
    """A [64, 64] shard of [32, 32] chunks, index codecs bytes(little) + crc32c: the index is 16 * 4 + 4 = 68
    bytes, entries (offset, nbytes) as little-endian uint64 in C order over the 2 x 2 chunk grid, then the
    CRC32C of those 64 bytes as a little-endian uint32; offsets count from byte 0 of the object."""
    path = tmp_path / "spec.zarr"
    ds = aa.create_dataset(
        str(path),
        shape=(64, 64),
        dtype="uint8",
        chunks=(32, 32),
        shards=(64, 64),
        compressor=None,
        checksum=False,
        index_location=location,
    )
    conf = read_json(path / "zarr.json")["codecs"][0]["configuration"]
    assert conf["chunk_shape"] == [32, 32]
    assert conf["index_codecs"] == [bytes_codec("little"), {"name": "crc32c"}]
    assert conf["index_location"] == location
    values = {(0, 0): 1, (0, 1): 2, (1, 0): 3, (1, 1): 4}
    chunks = {
        c: (np.arange(32 * 32, dtype="uint32").reshape(32, 32) * v % 251).astype("uint8")
        for c, v in values.items()
    }
    order = [(1, 1), (0, 0), (1, 0), (0, 1)]  # request order does not matter
    ds.write_chunks(order, [chunks[c] for c in order])

    raw = (path / "c" / "0" / "0").read_bytes()
    assert len(raw) == 4 * 32 * 32 + 68
    index = raw[:68] if location == "start" else raw[-68:]
    words = struct.unpack("<8Q", index[:64])
    (checksum,) = struct.unpack("<I", index[64:])
    assert checksum == google_crc32c.value(index[:64])
    data_start = 68 if location == "start" else 0
    seen = []
    for flat, c in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):  # C order over the chunk grid
        offset, nbytes = words[2 * flat], words[2 * flat + 1]
        assert nbytes == 32 * 32
        assert data_start <= offset <= data_start + 3 * 1024
        assert raw[offset : offset + nbytes] == chunks[c].tobytes()  # bytes codec: C order, no header
        seen.append(offset)
    assert sorted(seen) == [data_start + i * 1024 for i in range(4)]  # compact, no gaps

    # an empty entry is (2^64 - 1, 2^64 - 1) and the object shrinks by one chunk
    ds.delete_chunk((0, 1))
    raw = (path / "c" / "0" / "0").read_bytes()
    assert len(raw) == 3 * 1024 + 68
    index = raw[:68] if location == "start" else raw[-68:]
    words = struct.unpack("<8Q", index[:64])
    assert words[2:4] == (2**64 - 1, 2**64 - 1)
    assert struct.unpack("<I", index[64:])[0] == google_crc32c.value(index[:64])
    expected = np.zeros((64, 64), "uint8")
    for (i, j), a in chunks.items():
        if (i, j) != (0, 1):
            expected[i * 32 : (i + 1) * 32, j * 32 : (j + 1) * 32] = a
    assert_same(zarr.open_array(str(path), mode="r")[...], expected)
    assert_same(ts_read(path), expected)


def test_corrupt_index_checksum_is_an_altarr_error(tmp_path):
    """A zarr-python shard whose index checksum is damaged fails loudly, naming the key."""
    from altarr.errors import ChecksumError

    path = tmp_path / "c.zarr"
    z = zarr.create_array(store=str(path), shape=(8, 8), chunks=(4, 4), shards=(8, 8), dtype="int32")
    z[...] = np.arange(64).reshape(8, 8)
    key = path / "c" / "0" / "0"
    raw = bytearray(key.read_bytes())
    raw[-10] ^= 0xFF  # inside the index, before the checksum
    key.write_bytes(bytes(raw))
    ds = aa.open_dataset(str(path))
    with pytest.raises(ChecksumError) as info:
        ds.read_chunks([(0, 0)])
    assert info.value.key is not None and info.value.key.endswith("c/0/0")


def test_every_chunk_of_the_grid_is_addressed(tmp_path):
    """all_chunks covers the grid; a dataset zarr-python filled completely has no missing chunk."""
    path = tmp_path / "full.zarr"
    write_with_zarr_python(path, "int8", LAYOUTS["nested-end"], "none", 0)
    z = zarr.open_array(str(path), mode="r+")
    full = sample(SHAPE, "int8", 5)
    full[full == 0] = 1  # no chunk may be all fill value
    z[...] = full
    ds = aa.open_dataset(str(path))
    got = ds.read_chunks(all_chunks(ds))
    assert all(a is not None for a in got)
    assert len(got) == int(np.prod(ds.grid_shape))
    assert_same(ds[...], full)
