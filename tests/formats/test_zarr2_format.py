"""Zarr v2: the chunk codec, .zarray/.zattrs/.zgroup metadata, consolidated metadata, and interop with
zarr-python (zarr_format=2) and tensorstore's ``zarr`` driver."""

from __future__ import annotations

import json
import math

import numcodecs
import numpy as np
import pytest
import tensorstore as ts
import zarr

import altarr as aa
from altarr.codecs.zarr2 import Zarr2ChunkCodec
from altarr.errors import (
    CorruptChunkError,
    MetadataError,
    NodeNotFoundError,
    UnknownCodecError,
    UnsupportedError,
)
from altarr.formats import detect_format, get_format, open_node
from altarr.formats.base import NewArray
from altarr.formats.zarr2 import parse_zarray
from altarr.stores import LocalStore, MemoryStore

Z2 = get_format("zarr2")
KEY = "arr/.zarray"


def zarray(**changes):
    doc = {
        "zarr_format": 2,
        "shape": [5, 7],
        "chunks": [2, 3],
        "dtype": "<i4",
        "compressor": {"id": "zlib", "level": 1},
        "fill_value": 0,
        "order": "C",
        "filters": None,
    }
    doc.update(changes)
    return doc


# --- the chunk codec ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("stored", ["<i2", ">i2", ">f8", "<c8", "|u1", "|b1", ">u8", "<M8[ns]"])
def test_chunk_codec_byte_layout(stored, order):
    dt = np.dtype(stored)
    a = (np.arange(12).reshape(3, 4) % 2 == 0) if dt.kind == "b" else np.arange(12).reshape(3, 4)
    a = np.asarray(a).astype(dt.newbyteorder("="))
    codec = Zarr2ChunkCodec(stored, order, None, None)
    data = bytes(codec.encode(a))
    assert data == a.astype(dt).tobytes(order=order)  # raw: stored byte order and memory order
    out = codec.decode(data, (3, 4), a.dtype)
    assert out.dtype.isnative and out.flags.c_contiguous
    np.testing.assert_array_equal(out, a)


def test_chunk_codec_filters_and_compressor_match_numcodecs():
    filters = [{"id": "delta", "dtype": "<i4"}, {"id": "shuffle", "elementsize": 4}]
    codec = Zarr2ChunkCodec("<i4", "C", filters, {"id": "zstd", "level": 1})
    a = np.arange(20, dtype="int32").reshape(4, 5) * 3
    data = bytes(codec.encode(a))
    buf = numcodecs.Zstd(level=1).decode(data)
    buf = numcodecs.Shuffle(elementsize=4).decode(buf)
    np.testing.assert_array_equal(numcodecs.Delta("<i4").decode(buf), a.ravel())
    np.testing.assert_array_equal(codec.decode(data, (4, 5), np.dtype("int32")), a)


def test_chunk_codec_errors():
    codec = Zarr2ChunkCodec("<i4", "C", None, {"id": "zlib"})
    data = bytes(codec.encode(np.arange(6, dtype="int32").reshape(2, 3)))
    with pytest.raises(CorruptChunkError, match="decompress") as ei:
        codec.decode(data[:-4], (2, 3), np.dtype("int32"))
    assert "zlib" in ei.value.codec
    with pytest.raises(CorruptChunkError, match="expected 12"):
        codec.decode(data, (3, 4), np.dtype("int32"))
    raw = Zarr2ChunkCodec("<i4", "C", None, None)
    with pytest.raises(CorruptChunkError, match="cannot be viewed"):
        raw.decode(b"abcde", (1,), np.dtype("int32"))
    with pytest.raises(UnknownCodecError, match="'nope'"):
        Zarr2ChunkCodec("<i4", "C", [{"id": "nope"}], None)
    with pytest.raises(UnsupportedError):
        Zarr2ChunkCodec("|O", "C", None, None)


# --- metadata -----------------------------------------------------------------------------------------------
def test_parse_basic_and_keys():
    spec = parse_zarray(zarray(), {"_ARRAY_DIMENSIONS": ["y", "x"], "units": "m"}, key=KEY)
    assert spec.format == "zarr2" and spec.shape == (5, 7) and spec.outer_chunks == (2, 3)
    assert spec.dtype == np.dtype("int32") and spec.fill_value == 0
    assert spec.chunk_key((2, 1)) == "2.1"
    assert spec.dimension_names == ("y", "x") and spec.attributes["units"] == "m"
    assert not spec.codecs.array_bytes.truncates_edges
    assert parse_zarray(zarray(dimension_separator="/")).chunk_key((2, 1)) == "2/1"
    zero_d = parse_zarray(zarray(shape=[], chunks=[]))
    assert zero_d.chunk_key(()) == "0"


@pytest.mark.parametrize(
    "dtype, fill, expected",
    [
        ("<f8", "NaN", math.nan),
        (">f4", "Infinity", math.inf),
        ("<f4", "-Infinity", -math.inf),
        ("<f8", 1.25, 1.25),
        ("<i8", None, 0),
        ("|u1", 255, 255),
        ("|b1", True, True),
        ("|b1", None, False),
        ("<c16", [1.0, "NaN"], complex(1, math.nan)),
        ("<M8[s]", 5, np.datetime64(5, "s")),
    ],
)
def test_fill_values(dtype, fill, expected):
    spec = parse_zarray(zarray(dtype=dtype, fill_value=fill))
    assert spec.dtype.isnative and spec.fill_value.dtype == spec.dtype
    np.testing.assert_array_equal(spec.fill_value, np.asarray(expected, dtype=spec.dtype))


@pytest.mark.parametrize(
    "changes, error, match",
    [
        ({"zarr_format": 3}, MetadataError, "zarr_format"),
        ({"dtype": "|O"}, UnsupportedError, "objects, strings"),
        ({"dtype": "<U4"}, UnsupportedError, "U4"),
        ({"dtype": "|S3"}, UnsupportedError, "S3"),
        ({"dtype": [["a", "<i4"]]}, UnsupportedError, "structured"),
        ({"dtype": "int"}, MetadataError, "dtype"),
        ({"compressor": {"id": "snappy9"}}, UnknownCodecError, "snappy9"),
        ({"filters": [{"id": "nope"}]}, UnknownCodecError, "nope"),
        ({"compressor": "zlib"}, MetadataError, "compressor"),
        ({"order": "K"}, MetadataError, "order"),
        ({"dimension_separator": "-"}, MetadataError, "dimension_separator"),
        ({"fill_value": "NaN"}, MetadataError, "fill_value"),
        ({"fill_value": 2**40}, MetadataError, "fill_value"),
        ({"chunks": [2]}, MetadataError, "chunks"),
        ({"shape": [5, "7"]}, MetadataError, "shape"),
    ],
)
def test_bad_zarray_names_the_key(changes, error, match):
    with pytest.raises(error, match=match) as ei:
        parse_zarray(zarray(**changes), key=KEY)
    assert ei.value.key == KEY
    if error is UnknownCodecError:
        assert ei.value.codec == match


def test_missing_fields_and_malformed_json():
    doc = zarray()
    del doc["order"]
    with pytest.raises(MetadataError, match="order") as ei:
        parse_zarray(doc, key=KEY)
    assert ei.value.key == KEY
    store = MemoryStore()
    store.set(KEY, b"{not json")
    with pytest.raises(MetadataError, match="malformed JSON") as ei:
        open_node(store, "arr", format="zarr2")
    assert ei.value.key == KEY


def test_create_array_documents():
    store = MemoryStore()
    spec = Z2.create_array(
        store, "arr", shape=(5, 7), dtype=">u2", chunks=(2, 3), compressor="zlib", fill_value=None,
        order="F", dimension_separator="/", filters=[{"id": "delta", "dtype": ">u2"}],
        dimension_names=["y", "x"], attributes={"k": 1},
    )  # fmt: skip
    doc = json.loads(store.get(KEY))
    assert doc == {
        "chunks": [2, 3],
        "compressor": {"id": "zlib", "level": 5},
        "dtype": ">u2",
        "fill_value": None,
        "filters": [{"id": "delta", "dtype": ">u2", "astype": ">u2"}],
        "order": "F",
        "shape": [5, 7],
        "zarr_format": 2,
        "dimension_separator": "/",
    }
    assert json.loads(store.get("arr/.zattrs")) == {"k": 1, "_ARRAY_DIMENSIONS": ["y", "x"]}
    assert spec.dtype == np.dtype("uint16") and spec.chunk_key((1, 2)) == "1/2"
    assert open_node(store, "arr", format="zarr2").spec.codecs == spec.codecs


@pytest.mark.parametrize(
    "compressor, expected",
    [
        ("zstd", {"id": "zstd", "level": 3}),  # checksum=False is the default: left out for tensorstore
        ("gzip", {"id": "gzip", "level": 5}),
        ("zlib", {"id": "zlib", "level": 5}),
        ("blosc", {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}),
        (None, None),
        ({"id": "lzma", "preset": 1}, {"id": "lzma", "format": 1, "check": -1, "preset": 1, "filters": None}),
        (numcodecs.BZ2(level=2), {"id": "bz2", "level": 2}),
    ],
)
def test_create_compressors(compressor, expected):
    doc = Z2.array_metadata(NewArray(shape=(4,), dtype="f4", chunks=(2,), compressor=compressor))
    assert doc["compressor"] == expected and doc["dtype"] == "<f4"


def test_create_refusals():
    store = MemoryStore()
    with pytest.raises(UnsupportedError, match="sharding"):
        Z2.create_array(store, "arr", shape=(4,), dtype="u1", chunks=(2,), shards=(4,))
    with pytest.raises(UnsupportedError):
        Z2.create_array(store, "arr", shape=(4,), dtype="U2", chunks=(2,))
    with pytest.raises(UnknownCodecError, match="snappy"):
        Z2.create_array(store, "arr", shape=(4,), dtype="u1", chunks=(2,), compressor="snappy")
    with pytest.raises(MetadataError, match="option"):
        Z2.create_array(store, "arr", shape=(4,), dtype="u1", chunks=(2,), index_location="end")
    assert store.get(KEY) is None


@pytest.mark.parametrize(
    "dtype", ["bool", "int8", "uint16", "int32", "uint64", "float16", "float32", "complex128"]
)
def test_metadata_round_trip_every_type(dtype):
    store = MemoryStore()
    dt = np.dtype(dtype)
    fill = {"b": True, "i": -3, "u": 3, "f": np.nan, "c": complex(2, -np.inf)}[dt.kind]
    created = Z2.create_array(store, "arr", shape=(5, 3), dtype=dtype, chunks=(2, 2), fill_value=fill)
    opened = open_node(store, "arr", format="zarr2").spec
    assert opened.dtype == created.dtype == dt
    np.testing.assert_array_equal(opened.fill_value, np.asarray(fill, dt))


def test_groups_attributes_and_consolidation(tmp_path):
    store = LocalStore(tmp_path)
    Z2.create_group(store, "", {"title": "root"})
    Z2.create_group(store, "g")
    Z2.create_array(store, "g/a", shape=(4,), dtype="<i2", chunks=(2,), attributes={"u": 1})
    assert open_node(store, "g", parse=False).kind == "group"
    assert open_node(store, "g/a", parse=False).kind == "array"
    with pytest.raises(NodeNotFoundError):
        open_node(store, "x", parse=False)
    assert Z2.read_attributes(store, "") == {"title": "root"} and Z2.read_attributes(store, "g") == {}
    Z2.write_attributes(store, "g", {"v": 2})
    assert Z2.read_attributes(store, "g") == {"v": 2}
    with pytest.raises(MetadataError):
        Z2.read_attributes(store, "missing")
    aa.consolidate_metadata(store)
    meta = json.loads(store.get(".zmetadata"))["metadata"]
    assert set(meta) == {".zgroup", ".zattrs", "g/.zgroup", "g/.zattrs", "g/a/.zarray", "g/a/.zattrs"}
    root = aa.open_group(store)
    store.stats.reset()
    assert root["g/a"].attrs["u"] == 1 and store.stats.reads == 0  # from the snapshot alone
    # zarr-python reads our consolidated metadata
    g = zarr.open_consolidated(str(tmp_path), zarr_format=2)
    assert g.attrs["title"] == "root" and g["g/a"].shape == (4,)


# --- interop ------------------------------------------------------------------------------------------------
ZARR_CASES = [
    (">i4", "F", numcodecs.Zlib(1), [numcodecs.Delta(dtype=">i4")], None, "/"),
    ("<f8", "C", numcodecs.Blosc("zstd", 3, numcodecs.Blosc.BITSHUFFLE), None, np.nan, "."),
    ("|u1", "C", None, None, 7, "."),
    ("<c8", "F", numcodecs.GZip(3), None, 1 + 1j, "."),
    ("<u8", "C", numcodecs.LZMA(preset=1), [numcodecs.Shuffle(elementsize=8)], 0, "/"),
]


@pytest.mark.parametrize("dtype, order, compressor, filters, fill, sep", ZARR_CASES)
def test_we_read_zarr_python_v2(tmp_path, dtype, order, compressor, filters, fill, sep):
    a = (np.arange(35).reshape(5, 7) * 3).astype(dtype)
    z = zarr.create(
        shape=(5, 7), chunks=(2, 3), dtype=dtype, store=str(tmp_path / "arr"), zarr_format=2, order=order,
        compressor=compressor, filters=filters, fill_value=fill, dimension_separator=sep,
    )  # fmt: skip
    z[:] = a
    store = LocalStore(tmp_path)
    fmt, kind = detect_format(store, "arr")
    assert (fmt.name, kind) == ("zarr2", "array")
    spec = open_node(store, "arr", format=fmt.name).spec
    for pos in [(0, 0), (2, 2)]:  # (2, 2) is an edge chunk, stored padded
        chunk = spec.codecs.decode(store.get("arr/" + spec.chunk_key(pos)), spec.outer_chunks, spec.dtype)
        assert chunk.shape == (2, 3) and chunk.dtype.isnative
        part = a[pos[0] * 2 : pos[0] * 2 + 2, pos[1] * 3 : pos[1] * 3 + 3]
        np.testing.assert_array_equal(chunk[: part.shape[0], : part.shape[1]], part)


@pytest.mark.parametrize("dtype, order, compressor, filters, fill, sep", ZARR_CASES)
def test_zarr_python_v2_reads_ours(tmp_path, dtype, order, compressor, filters, fill, sep):
    a = (np.arange(35).reshape(5, 7) * 3).astype(dtype)
    store = LocalStore(tmp_path)
    spec = Z2.create_array(
        store, "arr", shape=(5, 7), dtype=dtype, chunks=(2, 3), compressor=compressor.get_config() if compressor else None,
        filters=[f.get_config() for f in filters or []], order=order, fill_value=fill, dimension_separator=sep,
    )  # fmt: skip
    for i in range(3):
        for j in range(3):
            padded = np.zeros((2, 3), dtype=spec.dtype)
            part = a[i * 2 : i * 2 + 2, j * 3 : j * 3 + 3]
            padded[: part.shape[0], : part.shape[1]] = part
            store.set("arr/" + spec.chunk_key((i, j)), bytes(spec.codecs.encode(padded)))
    z = zarr.open_array(str(tmp_path / "arr"), mode="r", zarr_format=2)
    np.testing.assert_array_equal(z[:], a)


def test_tensorstore_zarr_v2_both_ways(tmp_path):
    a = np.arange(35, dtype=">i2").reshape(5, 7)
    store = LocalStore(tmp_path)
    spec = Z2.create_array(
        store, "ours", shape=(5, 7), dtype=">i2", chunks=(5, 7), compressor="zlib", order="F"
    )
    store.set("ours/" + spec.chunk_key((0, 0)), bytes(spec.codecs.encode(a)))
    t = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": str(tmp_path / "ours")}}).result()
    np.testing.assert_array_equal(t.read().result(), a)

    t = ts.open(
        {
            "driver": "zarr",
            "kvstore": {"driver": "file", "path": str(tmp_path / "theirs")},
            "metadata": {"shape": [5, 7], "chunks": [4, 4], "dtype": "<f4", "order": "F",
                         "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1},
                         "fill_value": "NaN"},
        },
        create=True,
    ).result()  # fmt: skip
    b = np.arange(35, dtype="float32").reshape(5, 7)
    t[:4, :4].write(b[:4, :4]).result()
    node = open_node(store, "theirs")
    assert node.kind == "array" and np.isnan(node.spec.fill_value)
    chunk = node.spec.codecs.decode(store.get("theirs/0.0"), (4, 4), node.spec.dtype)
    np.testing.assert_array_equal(chunk, b[:4, :4])


# --- exact errors, consolidated children, generic compressors ----------------------------------------------------
def test_missing_or_bad_documents_exact_message_and_key():
    with pytest.raises(MetadataError) as ei:
        Z2.resize_array(MemoryStore(), "g/a", (1,))  # resizing an array deleted meanwhile
    assert str(ei.value) == "no Zarr v2 array here (.zarray is missing) [key='g/a/.zarray']"
    store = MemoryStore()
    with pytest.raises(MetadataError) as ei:  # documents parsed already (consolidated metadata)
        Z2.spec_from_documents({".zarray": zarray(), ".zattrs": [1, 2]}, "g/a")
    assert str(ei.value) == ".zattrs must be a JSON object [key='g/a/.zattrs']"
    store.set("g/a/.zattrs", b"{}")
    store.set("g/a/.zarray", json.dumps(zarray(order="K")).encode())
    with pytest.raises(MetadataError) as ei:
        open_node(store, "g/a", format="zarr2")
    assert str(ei.value) == "field 'order' must be 'C' or 'F', got 'K' [key='g/a/.zarray']"


def test_consolidated_metadata_written_by_zarr_python(tmp_path):
    g = zarr.open_group(str(tmp_path / "c"), mode="w", zarr_format=2)
    g.create_array("a", shape=(4,), chunks=(2,), dtype="i2", fill_value=3, attributes={"u": 1})
    g.create_group("sub")
    zarr.consolidate_metadata(str(tmp_path / "c"))
    store = LocalStore(tmp_path)
    assert Z2.consolidated_probe_keys() == (".zmetadata",)
    children = Z2.consolidated_children({".zmetadata": store.get("c/.zmetadata")}, "c")
    assert sorted(children) == [".zattrs", ".zgroup", "a/.zarray", "a/.zattrs", "sub/.zattrs", "sub/.zgroup"]
    assert Z2.consolidated_children({".zmetadata": None}, "c") is None
    assert Z2.consolidated_children({}, "c") is None
    for doc in ({"zarr_consolidated_format": 2, "metadata": {}}, {"zarr_consolidated_format": 1, "metadata": 5},
                {"metadata": {}}):  # fmt: skip
        assert Z2.consolidated_children({".zmetadata": json.dumps(doc).encode()}, "c") is None
    with pytest.raises(MetadataError) as ei:
        Z2.consolidated_children({".zmetadata": b"{"}, "c")
    assert ei.value.key == "c/.zmetadata"

    node = Z2.child_from_consolidated(children, "a", "c/a")
    assert node.format is Z2 and node.kind == "array"
    assert (
        node.spec.shape == (4,) and node.spec.fill_value == np.int16(3) and node.spec.attributes == {"u": 1}
    )
    node = Z2.child_from_consolidated(children, "sub", "c/sub")
    assert node.format is Z2 and node.kind == "group" and node.spec is None
    assert Z2.child_from_consolidated(children, "nope", "c/nope") is None
    bad = {"x/.zarray": {**children["a/.zarray"], "order": "K"}}
    with pytest.raises(MetadataError) as ei:
        Z2.child_from_consolidated(bad, "x", "c/x")
    assert str(ei.value) == "field 'order' must be 'C' or 'F', got 'K' [key='c/x/.zarray']"


@pytest.mark.parametrize(
    "name, expected",
    [
        ("zstd", {"id": "zstd", "level": 4}),
        ("zlib", {"id": "zlib", "level": 4}),
        ("gzip", {"id": "gzip", "level": 4}),
        ("blosc", {"id": "blosc", "cname": "zlib", "clevel": 4, "shuffle": 1, "blocksize": 0}),
    ],
)
def test_numcodecs_configs_are_written_as_given(name, expected):
    store = MemoryStore()
    Z2.create_array(store, "a", shape=(4,), dtype="float32", chunks=(2,), compressor=expected)
    assert json.loads(store.get("a/.zarray"))["compressor"] == expected


@pytest.mark.parametrize("fill, expected", [(1, 1 + 0j), (1.5, 1.5 + 0j), ([2, -1.0], 2 - 1j)])
def test_complex_fill_from_a_number_or_a_pair(fill, expected):
    spec = parse_zarray(zarray(dtype="<c8", fill_value=fill))
    assert spec.fill_value == np.complex64(expected) and spec.fill_value.dtype == np.dtype("complex64")


@pytest.mark.parametrize(
    "dtype, fill, reason",
    [
        ("<f4", "nan", "(unknown float string 'nan')"),
        ("<c8", "1", "(expected [real, imaginary])"),
        ("<c8", True, "(expected [real, imaginary])"),
        ("<c8", ["x", 0], "(field 'fill_value': 'x' is not a valid float32 fill value (unknown float string 'x') "
         "[key='g/.zarray'])"),
        ("|b1", "x", "(expected a boolean)"),
    ],
)  # fmt: skip
def test_bad_fill_value_exact_message(dtype, fill, reason):
    with pytest.raises(MetadataError) as ei:
        parse_zarray(zarray(dtype=dtype, fill_value=fill), key="g/.zarray")
    name = np.dtype(dtype).name
    assert (
        str(ei.value)
        == f"field 'fill_value': {fill!r} is not a valid {name} fill value {reason} [key='g/.zarray']"
    )


@pytest.mark.parametrize(
    "changes, error, message",
    [
        ({'zarr_format': 3}, MetadataError, "field 'zarr_format' must be 2, got 3"),
        ({'shape': 'x'}, MetadataError, "field 'shape' must be a list of integers, got 'x'"),
        ({'shape': [-1, 7]}, MetadataError, "field 'shape' must hold integers >= 0, got [-1, 7]"),
        ({'chunks': [2]}, MetadataError, "field 'chunks' has 1 dimensions, the array has 2"),
        ({'chunks': [0, 3]}, MetadataError, "field 'chunks' must hold integers >= 1, got [0, 3]"),
        ({'chunks': 'c'}, MetadataError, "field 'chunks' must be a list of integers, got 'c'"),
        ({'dtype': 'int'}, MetadataError, "field 'dtype' must be a NumPy typestr with a byte order such as '<i4', got 'int'"),
        ({'dtype': 'i4'}, MetadataError, "field 'dtype' must be a NumPy typestr with a byte order such as '<i4', got 'i4'"),
        ({'dtype': '<i4x'}, MetadataError, "field 'dtype' must be a NumPy typestr with a byte order such as '<i4', got '<i4x'"),
        ({'dtype': '|O'}, UnsupportedError, "Zarr v2 dtype '|O' (kind 'O': objects, strings, bytes or records) is not supported; altarr handles booleans, integers, floats, complex numbers and datetimes"),
        ({'order': 'K'}, MetadataError, "field 'order' must be 'C' or 'F', got 'K'"),
        ({'filters': {'id': 'zlib'}}, MetadataError, "field 'filters' must be null or a list, got {'id': 'zlib'}"),
        ({'filters': [{'id': 'nope'}]}, UnknownCodecError, "unknown Zarr v2 filter codec id 'nope' (not in the numcodecs registry)"),
        ({'compressor': {'id': 'snappy9'}}, UnknownCodecError, "unknown Zarr v2 compressor codec id 'snappy9' (not in the numcodecs registry)"),
        ({'compressor': 'zlib'}, MetadataError, "Zarr v2 compressor must be null or an object with a string 'id', got 'zlib'"),
        ({'dimension_separator': '-'}, MetadataError, "field 'dimension_separator' must be '.' or '/', got '-'"),
        ({'fill_value': 1.5}, MetadataError, "field 'fill_value': 1.5 is not a valid int32 fill value (expected an integer)"),
        ({'fill_value': '1'}, MetadataError, "field 'fill_value': '1' is not a valid int32 fill value (expected an integer)"),
        ({'fill_value': 'x'}, MetadataError, "field 'fill_value': 'x' is not a valid int32 fill value (expected an integer)"),
        ({'fill_value': True}, MetadataError, "field 'fill_value': True is not a valid int32 fill value (expected an integer)"),
        ({'fill_value': 1099511627776}, MetadataError, "field 'fill_value': 1099511627776 is not a valid int32 fill value (1099511627776 is out of range)"),
        ({'dtype': '<f4', 'fill_value': True}, MetadataError, "field 'fill_value': True is not a valid float32 fill value (expected a number)"),
        ({'dtype': '<f4', 'fill_value': [1]}, MetadataError, "field 'fill_value': [1] is not a valid float32 fill value (expected a number)"),
        ({'dtype': '<f4', 'fill_value': 'nan'}, MetadataError, "field 'fill_value': 'nan' is not a valid float32 fill value (unknown float string 'nan')"),
        ({'dtype': '<m8[s]', 'fill_value': 1.5}, MetadataError, "field 'fill_value': 1.5 is not a valid timedelta64[s] fill value (expected an integer)"),
    ],
)  # fmt: skip
def test_bad_zarray_exact_message(changes, error, message):
    with pytest.raises(error) as ei:
        parse_zarray(zarray(**changes), key=KEY)
    assert type(ei.value) is error
    assert str(ei.value).startswith(f"{message} [key='{KEY}'")
    store = MemoryStore()
    store.set("arr/.zarray", json.dumps(zarray(**changes)).encode())
    with pytest.raises(error) as ei:
        open_node(store, "arr", format="zarr2")
    assert str(ei.value).startswith(f"{message} [key='{KEY}'")


def test_datetime_and_timedelta_fill_values():
    assert parse_zarray(zarray(dtype="<m8[s]", fill_value=5)).fill_value == np.timedelta64(5, "s")
    assert parse_zarray(zarray(dtype="<M8[s]", fill_value=-1)).fill_value == np.datetime64(-1, "s")
    with pytest.raises(MetadataError) as ei:  # beyond int64: no datetime64 holds it
        parse_zarray(zarray(dtype="<M8[s]", fill_value=2**63), key=KEY)
    assert str(ei.value).startswith(f"field 'fill_value': {2**63} is not a valid datetime64[s] fill value (")


def test_spec_keeps_the_documents_and_has_no_names_without_array_dimensions():
    doc, attrs = zarray(), {"units": "m"}
    spec = parse_zarray(doc, attrs)
    assert spec.metadata == {".zarray": doc, ".zattrs": attrs}
    assert spec.dimension_names is None and spec.attributes == {"units": "m"}
    spec = parse_zarray(doc)
    assert spec.metadata == {".zarray": doc} and spec.dimension_names is None and spec.attributes == {}
    for names in (["y"], ["y", 1], "yx"):  # not one string per dimension: not names
        assert parse_zarray(doc, {"_ARRAY_DIMENSIONS": names}).dimension_names is None


# --- the writers: fill values, compressors, documents, errors (what zarr-python writes) -------------------------
@pytest.mark.parametrize(
    "dtype, fill, expected",
    [
        ("f4", 0.1, 0.10000000149011612),  # the float32 value, as zarr-python writes it
        ("f8", math.inf, "Infinity"),
        ("f8", -math.inf, "-Infinity"),
        ("f8", math.nan, "NaN"),
        ("c8", complex(math.inf, -math.inf), ["Infinity", "-Infinity"]),
        ("i4", 2.0, 2),  # a float that is an integer is accepted for an integer type
        ("u1", np.uint8(7), 7),
        ("M8[ms]", np.datetime64(5, "s"), 5000),
        ("m8[ms]", np.timedelta64(3, "s"), 3000),
        ("M8[D]", "2020-01-01", 18262),
    ],
)
def test_fill_value_is_written_in_the_zarray_as_zarr_python_writes_it(tmp_path, dtype, fill, expected):
    store = LocalStore(tmp_path)
    Z2.create_array(store, "ours", shape=(4,), dtype=dtype, chunks=(2,), compressor=None, fill_value=fill)
    assert json.loads(store.get("ours/.zarray"))["fill_value"] == expected
    g = zarr.open_group(str(tmp_path / "theirs"), mode="w", zarr_format=2)
    g.create_array("a", shape=(4,), chunks=(2,), dtype=dtype, fill_value=fill, compressors=None)
    assert json.loads(store.get("theirs/a/.zarray"))["fill_value"] == expected


@pytest.mark.parametrize("dtype", ["M8[s]", "m8[s]"])
def test_a_whole_float_fill_of_a_datetime_type_is_its_integer(dtype):
    # NumPy refuses to build a datetime64 from a float directly (zarr-python refuses it too); altarr casts it
    doc = Z2.array_metadata(NewArray(shape=(4,), dtype=dtype, chunks=(2,), compressor=None, fill_value=2.0))
    assert doc["fill_value"] == 2 and type(doc["fill_value"]) is int


@pytest.mark.parametrize(
    "dtype, fill, error, message",
    [
        ("u1", 300, MetadataError, "fill value 300 cannot be represented as uint8: Python integer 300 out of bounds "
         "for uint8"),
        ("f4", "abc", MetadataError, "fill value 'abc' cannot be represented as float32: could not convert string "
         "to float: 'abc'"),
        ("f4", [1, 2], MetadataError, "fill value must be a scalar, got [1, 2]"),
        ("i4", 1.5, MetadataError, "fill value 1.5 is not an integer (int32)"),
        ("u2", np.float32(2.5), MetadataError, "fill value np.float32(2.5) is not an integer (uint16)"),
        ("M8[s]", 1.5, MetadataError, "fill value 1.5 is not an integer (datetime64[s])"),
        ("m8[s]", 1.5, MetadataError, "fill value 1.5 is not an integer (timedelta64[s])"),
    ],
)  # fmt: skip
def test_unwritable_fill_value_exact_message_and_key(dtype, fill, error, message):
    store = MemoryStore()
    with pytest.raises(error) as ei:
        Z2.create_array(store, "arr", shape=(4,), dtype=dtype, chunks=(2,), fill_value=fill)
    assert type(ei.value) is error and str(ei.value) == f"{message} [key='arr/.zarray']"
    assert store.get(KEY) is None


def test_encode_fill_value_refuses_types_zarr2_does_not_hold():
    from altarr.formats._common import encode_fill_value

    with pytest.raises(UnsupportedError) as ei:
        encode_fill_value(1, np.dtype("U2"))
    assert str(ei.value) == "fill values of <U2 are not supported"


def test_compressor_none_by_name_and_unknown_names_exact_message():
    from altarr.formats.zarr2 import compressor_config

    assert compressor_config("none", np.dtype("f4")) is None
    doc = Z2.array_metadata(NewArray(shape=(4,), dtype="f4", chunks=(2,), compressor="none"))
    assert doc["compressor"] is None
    with pytest.raises(UnknownCodecError) as ei:
        Z2.create_array(MemoryStore(), "arr", shape=(4,), dtype="u1", chunks=(2,), compressor="NOPE")
    assert str(ei.value) == (
        "compressor='NOPE': unknown codec 'nope'; use NAME[:LEVEL] (zstd, gzip, zlib, bz2, lzma, lz4), "
        "blosc[:CNAME][:LEVEL] or none [key='arr/.zarray', codec='NOPE']"
    )
    assert ei.value.codec == "NOPE"


def test_zstd_checksum_is_kept_when_asked_for_and_dropped_when_default():
    for compressor in ({"id": "zstd", "level": 1, "checksum": True}, numcodecs.Zstd(level=1, checksum=True)):
        doc = Z2.array_metadata(NewArray(shape=(4,), dtype="i2", chunks=(2,), compressor=compressor))
        assert doc["compressor"] == {"id": "zstd", "level": 1, "checksum": True}
    doc = Z2.array_metadata(
        NewArray(shape=(4,), dtype="i2", chunks=(2,), compressor={"id": "zstd", "level": 1})
    )
    assert doc["compressor"] == {"id": "zstd", "level": 1}


def test_default_zarray_document_and_its_bytes():
    store = MemoryStore()
    spec = Z2.create_array(store, "arr", shape=(5, 7), dtype="i2", chunks=(2, 3), compressor=None)
    doc = {
        "chunks": [2, 3],
        "compressor": None,
        "dtype": "<i2",
        "fill_value": 0,
        "filters": None,
        "order": "C",
        "shape": [5, 7],
        "zarr_format": 2,
    }  # no "dimension_separator": "." is the default
    assert store.get(KEY) == json.dumps(doc, indent=4).encode()
    assert store.get("arr/.zattrs") is None and spec.attributes == {} and spec.chunk_key((1, 2)) == "1.2"


def test_create_array_returns_the_spec_with_attributes_and_writes_zattrs_bytes():
    store = MemoryStore()
    spec = Z2.create_array(
        store,
        "arr",
        shape=(4, 2),
        dtype="u1",
        chunks=(2, 2),
        attributes={"u": [1, 2]},
        dimension_names=["y", "x"],
    )
    assert spec.attributes == {"u": [1, 2], "_ARRAY_DIMENSIONS": ["y", "x"]} and spec.dimension_names == (
        "y",
        "x",
    )
    assert (
        store.get("arr/.zattrs")
        == json.dumps({"u": [1, 2], "_ARRAY_DIMENSIONS": ["y", "x"]}, indent=4).encode()
    )


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"shards": (4,)}, UnsupportedError, "Zarr v2 has no sharding (use format='zarr3' or 'n5')"),
        ({"shape": (-1,)}, MetadataError, "field 'shape' must hold integers >= 0, got [-1]"),
        ({"shape": ("4",)}, MetadataError, "field 'shape' must be a list of integers, got ['4']"),
        ({"chunks": (0,)}, MetadataError, "field 'chunks' must hold integers >= 1, got [0]"),
        ({"chunks": (2, 2)}, MetadataError, "field 'chunks' has 2 dimensions, the array has 1"),
        ({"order": "K"}, MetadataError, "order must be 'C' or 'F', got 'K'"),
        ({"dimension_separator": "-"}, MetadataError, "dimension_separator must be '.' or '/', got '-'"),
        ({"dtype": "U2"}, UnsupportedError, "Zarr v2 dtype '<U2' (kind 'U': objects, strings, bytes or records) is "
         "not supported; altarr handles booleans, integers, floats, complex numbers and datetimes"),
        ({"filters": [{"id": "nope"}]}, UnknownCodecError, "unknown Zarr v2 filter codec id 'nope' (not in the "
         "numcodecs registry)"),
        ({"filters": ["delta"]}, MetadataError, "Zarr v2 filter must be null or an object with a string 'id', got "
         "'delta'"),
        ({"dimension_names": ["x", "y"]}, MetadataError, "dimension_names must be 1 strings for Zarr v2 (stored as "
         "_ARRAY_DIMENSIONS), got ['x', 'y']"),
        ({"dimension_names": [None]}, MetadataError, "dimension_names must be 1 strings for Zarr v2 (stored as "
         "_ARRAY_DIMENSIONS), got [None]"),
        ({"attributes": {"s": {1, 2}}}, MetadataError, "metadata is not JSON-serializable: Object of type set is "
         "not JSON serializable"),
    ],
)  # fmt: skip
def test_create_array_refusals_exact_message_and_key(kwargs, error, message):
    store = MemoryStore()
    args = {"shape": (4,), "dtype": "u1", "chunks": (2,), **kwargs}
    with pytest.raises(error) as ei:
        Z2.create_array(store, "g/arr", **args)
    assert type(ei.value) is error
    key = "g/arr/.zattrs" if "attributes" in kwargs else "g/arr/.zarray"
    codec = ", codec='nope'" if error is UnknownCodecError else ""
    assert str(ei.value) == f"{message} [key='{key}'{codec}]"
    assert list(store.list("")) == []


def test_a_filter_config_that_is_not_json_names_the_zarray():
    filt = numcodecs.FixedScaleOffset(offset=np.float32(1), scale=2, dtype="<f4")  # config holds a float32
    with pytest.raises(MetadataError) as ei:
        Z2.create_array(MemoryStore(), "arr", shape=(4,), dtype="f4", chunks=(2,), filters=[filt])
    assert str(ei.value) == (
        "metadata is not JSON-serializable: Object of type float32 is not JSON serializable [key='arr/.zarray']"
    )


# --- groups, attributes, consolidated metadata ------------------------------------------------------------------
def test_group_documents_bytes_and_keys():
    store = MemoryStore()
    Z2.create_group(store, "g/sub", {"title": "t"})
    assert store.get("g/sub/.zgroup") == b'{\n    "zarr_format": 2\n}'
    assert store.get("g/sub/.zattrs") == b'{\n    "title": "t"\n}'
    assert store.get(".zattrs") is None
    Z2.write_attributes(store, "g/sub", {"a": [1]})
    assert store.get("g/sub/.zattrs") == b'{\n    "a": [\n        1\n    ]\n}'
    for write in (
        lambda: Z2.create_group(store, "h", {"s": {1}}),
        lambda: Z2.write_attributes(store, "h", {"s": {1}}),
    ):
        with pytest.raises(MetadataError) as ei:
            write()
        assert str(ei.value) == (
            "metadata is not JSON-serializable: Object of type set is not JSON serializable [key='h/.zattrs']"
        )
    assert store.get("h/.zgroup") is None


def test_read_attributes_errors_name_the_document():
    store = MemoryStore()
    with pytest.raises(MetadataError) as ei:
        Z2.read_attributes(store, "g")
    assert str(ei.value) == "no Zarr v2 node here (.zarray/.zgroup missing) [key='g/.zarray']"
    Z2.create_group(store, "g")
    store.set("g/.zattrs", b"{")
    with pytest.raises(MetadataError) as ei:
        Z2.read_attributes(store, "g")
    assert ei.value.key == "g/.zattrs" and str(ei.value).startswith("malformed JSON in metadata document: ")


def test_detect_keeps_attributes_and_names_the_documents_below_the_root():
    store = MemoryStore()
    Z2.create_array(store, "g/a", shape=(4,), dtype="u1", chunks=(2,), attributes={"u": 1})
    node = open_node(store, "g/a")
    assert node.format is Z2 and node.spec.attributes == {"u": 1}
    store.set("g/a/.zarray", json.dumps(zarray(order="K")).encode())
    with pytest.raises(MetadataError) as ei:
        open_node(store, "g/a")
    assert str(ei.value) == "field 'order' must be 'C' or 'F', got 'K' [key='g/a/.zarray']"
    store.set("g/b/.zgroup", b'{"zarr_format": 3}')
    with pytest.raises(MetadataError) as ei:
        open_node(store, "g/b")
    assert str(ei.value) == "field 'zarr_format' must be 2 [key='g/b/.zgroup']"


def test_consolidated_metadata_below_the_root():
    store = MemoryStore()
    Z2.create_group(store, "", {"root": True})
    Z2.create_group(store, "ab")
    Z2.create_array(store, "ab/a", shape=(4,), dtype="u1", chunks=(2,), attributes={"u": 1})
    aa.consolidate_metadata(store, path="ab")
    doc = json.loads(store.get("ab/.zmetadata"))
    expected = {
        "zarr_consolidated_format": 1,
        "metadata": {
            ".zgroup": {"zarr_format": 2},
            "a/.zarray": json.loads(store.get("ab/a/.zarray")),
            "a/.zattrs": {"u": 1},
        },
    }
    assert doc == expected
    assert store.get("ab/.zmetadata") == json.dumps(expected, indent=4).encode()
    assert store.get(".zmetadata") is None
    assert aa.open_group(store, path="ab")["a"].attrs["u"] == 1


def test_consolidating_a_malformed_document_names_it():
    store = MemoryStore()
    Z2.create_group(store, "g")
    store.set("g/a/.zarray", b"{")
    with pytest.raises(MetadataError) as ei:
        aa.consolidate_metadata(store, path="g")
    assert ei.value.key == "g/a/.zarray" and str(ei.value).startswith("malformed JSON in metadata document: ")
    assert store.get("g/.zmetadata") is None


class _Unregistered(numcodecs.abc.Codec):
    """A numcodecs codec whose id is in no registry: nothing could read its arrays back."""

    codec_id = "altarr-test-unregistered"

    def encode(self, buf):
        return buf

    def decode(self, buf, out=None):
        return buf


@pytest.mark.parametrize("option, role", [("compressor", "compressor"), ("filters", "filter")])
def test_a_codec_object_outside_the_numcodecs_registry_is_refused_naming_the_zarray(option, role):
    store = MemoryStore()
    codec = _Unregistered()
    with pytest.raises(UnknownCodecError) as ei:
        Z2.create_array(
            store,
            "arr",
            shape=(4,),
            dtype="u1",
            chunks=(2,),
            **{option: codec if option == "compressor" else [codec]},
        )
    if option == "compressor":  # read by the codec vocabulary, which knows what Zarr v2 readers decode
        assert str(ei.value).startswith(
            "compressor=_Unregistered(): Zarr v2 has no 'altarr-test-unregistered' compressor its readers decode"
        )
    else:
        assert str(ei.value) == (
            f"unknown Zarr v2 {role} codec id 'altarr-test-unregistered' (not in the numcodecs registry) "
            "[key='arr/.zarray', codec='altarr-test-unregistered']"
        )
    assert store.get(KEY) is None
