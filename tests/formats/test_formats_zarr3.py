"""Zarr v3 metadata: data types, fill values, keys, extensions, creation, and interop with zarr-python and
tensorstore (metadata + single chunks/shards)."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
import tensorstore as ts
import zarr

from altarr.codecs import BytesCodec, Crc32cCodec, GzipCodec, ShardingCodec, ZstdCodec
from altarr.codecs.registry import registered_codecs
from altarr.errors import GridError, MetadataError, UnknownCodecError, UnsupportedError
from altarr.formats import get_format, open_node
from altarr.formats._common import encode_fill_value
from altarr.formats.base import NewArray
from altarr.formats.zarr3 import data_type_name, decode_fill_value, parse_array_metadata
from altarr.stores import LocalStore, MemoryStore

Z3 = get_format("zarr3")
KEY = "arr/zarr.json"


def base_doc(**changes):
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [10, 7],
        "data_type": "int16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    }
    doc.update(changes)
    return doc


# --- data types and fill values ---------------------------------------------------------------------------
FILL_CASES = [
    ("bool", True, np.bool_(True)),
    ("int8", -128, np.int8(-128)),
    ("int16", 32767, np.int16(32767)),
    ("int32", -5, np.int32(-5)),
    ("int64", -(2**63), np.int64(-(2**63))),
    ("uint8", 255, np.uint8(255)),
    ("uint16", 7, np.uint16(7)),
    ("uint32", 2**32 - 1, np.uint32(2**32 - 1)),
    ("uint64", 2**64 - 1, np.uint64(2**64 - 1)),
    ("float16", 1.5, np.float16(1.5)),
    ("float32", -0.25, np.float32(-0.25)),
    ("float64", 1e300, np.float64(1e300)),
    ("float64", "Infinity", np.float64(math.inf)),
    ("float32", "-Infinity", np.float32(-math.inf)),
    ("float16", "0x7c00", np.float16(math.inf)),
    ("float32", "0x3f800000", np.float32(1.0)),
    ("float64", "0x4000000000000000", np.float64(2.0)),
    ("complex64", [1.0, -2.5], np.complex64(1 - 2.5j)),
    ("complex128", ["Infinity", 0.5], np.complex128(complex(math.inf, 0.5))),
]


@pytest.mark.parametrize("data_type, fill, expected", FILL_CASES)
def test_fill_values(data_type, fill, expected):
    spec = parse_array_metadata(base_doc(data_type=data_type, fill_value=fill), key=KEY)
    assert spec.dtype == np.dtype(data_type)
    assert spec.fill_value.dtype == np.dtype(data_type)
    assert spec.fill_value == expected
    # and back to JSON: the canonical forms
    assert decode_fill_value(encode_fill_value(spec.fill_value, spec.dtype), spec.dtype) == expected


@pytest.mark.parametrize(
    "data_type, bits", [("float16", 0x7E00), ("float32", 0x7FC00000), ("float64", 0x7FF8 << 48)]
)
def test_nan_fill_values(data_type, bits):
    dt = np.dtype(data_type)
    for form in ("NaN", f"0x{bits:0{dt.itemsize * 2}x}"):
        fv = parse_array_metadata(base_doc(data_type=data_type, fill_value=form)).fill_value
        assert np.isnan(fv) and fv.dtype == dt
    assert encode_fill_value(np.nan, dt) == "NaN"
    # a NaN with a payload survives as its bit pattern
    payload = np.array(bits | 1, dtype=f"u{dt.itemsize}").view(dt)[()]
    js = encode_fill_value(payload, dt)
    assert js.startswith("0x")
    back = decode_fill_value(js, dt)
    assert back.tobytes() == payload.tobytes()


def test_raw_bits_type():
    spec = parse_array_metadata(base_doc(data_type="r24", fill_value=[1, 2, 3]))
    assert spec.dtype == np.dtype("V3") and spec.fill_value.tobytes() == b"\x01\x02\x03"
    assert encode_fill_value(spec.fill_value, spec.dtype) == [1, 2, 3]


def test_complex_nan_fill():
    fv = parse_array_metadata(base_doc(data_type="complex128", fill_value=["NaN", "-Infinity"])).fill_value
    assert np.isnan(fv.real) and fv.imag == -math.inf
    assert encode_fill_value(fv, np.dtype("complex128")) == ["NaN", "-Infinity"]


@pytest.mark.parametrize(
    "data_type, fill, match",
    [
        ("int8", 128, "out of range"),
        ("uint8", -1, "out of range"),
        ("int16", 1.5, "integer"),
        ("int16", "1", "integer"),
        ("int16", True, "integer"),
        ("bool", 1, "true or false"),
        ("float32", "nan", "not a valid"),
        ("float32", "0x7fc0", "8 hex digits"),
        ("float32", "0xZZZZZZZZ", "8 hex digits"),
        ("float64", True, "number"),
        ("complex64", 1.0, "pair"),
        ("complex64", [1.0], "pair"),
        ("r16", [1, 2, 3], "2 byte values"),
        ("int32", None, "required"),
    ],
)
def test_bad_fill_values(data_type, fill, match):
    with pytest.raises(MetadataError, match=match) as ei:
        parse_array_metadata(base_doc(data_type=data_type, fill_value=fill), key=KEY)
    assert ei.value.key == KEY


def test_data_type_errors():
    with pytest.raises(UnknownCodecError, match="bfloat16") as ei:
        parse_array_metadata(base_doc(data_type="bfloat16"), key=KEY)
    assert ei.value.key == KEY
    with pytest.raises(UnsupportedError, match="string"):
        parse_array_metadata(base_doc(data_type="string"), key=KEY)
    with pytest.raises(MetadataError, match="multiple of 8"):
        parse_array_metadata(base_doc(data_type="r12"), key=KEY)
    with pytest.raises(MetadataError, match="data_type"):
        parse_array_metadata(base_doc(data_type=5), key=KEY)
    # the object form of a core type is fine
    assert parse_array_metadata(base_doc(data_type={"name": "int16"})).dtype == np.dtype("int16")


# --- keys, names, attributes --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "encoding, pos, key",
    [
        ({"name": "default", "configuration": {"separator": "/"}}, (1, 23), "c/1/23"),
        ({"name": "default", "configuration": {"separator": "."}}, (1, 23), "c.1.23"),
        ({"name": "default"}, (0, 4), "c/0/4"),
        ("default", (2, 0), "c/2/0"),
        ({"name": "v2"}, (1, 23), "1.23"),
        ({"name": "v2", "configuration": {"separator": "/"}}, (1, 23), "1/23"),
    ],
)
def test_chunk_key_encodings(encoding, pos, key):
    assert parse_array_metadata(base_doc(chunk_key_encoding=encoding)).chunk_key(pos) == key


def test_zero_dimensional_keys():
    doc = base_doc(shape=[], chunk_grid={"name": "regular", "configuration": {"chunk_shape": []}})
    assert parse_array_metadata(doc).chunk_key(()) == "c"
    assert parse_array_metadata({**doc, "chunk_key_encoding": {"name": "v2"}}).chunk_key(()) == "0"


def test_chunk_key_encoding_errors():
    with pytest.raises(UnknownCodecError, match="hash"):
        parse_array_metadata(base_doc(chunk_key_encoding={"name": "hash"}), key=KEY)
    with pytest.raises(MetadataError, match="separator"):
        parse_array_metadata(
            base_doc(chunk_key_encoding={"name": "default", "configuration": {"separator": "-"}})
        )


def test_dimension_names_and_attributes():
    spec = parse_array_metadata(base_doc(dimension_names=["y", None], attributes={"a": [1, 2]}))
    assert spec.dimension_names == ("y", None) and spec.attributes == {"a": [1, 2]}
    for bad in (["y"], ["y", 3], "yx"):
        with pytest.raises(MetadataError, match="dimension_names"):
            parse_array_metadata(base_doc(dimension_names=bad), key=KEY)
    with pytest.raises(MetadataError, match="attributes"):
        parse_array_metadata(base_doc(attributes=[1]), key=KEY)


# --- extensions ---------------------------------------------------------------------------------------------
def test_unknown_fields_fail_unless_must_understand_false():
    with pytest.raises(MetadataError, match="'my_ext'") as ei:
        parse_array_metadata(base_doc(my_ext={"name": "x"}), key=KEY)
    assert ei.value.key == KEY
    with pytest.raises(MetadataError, match="'flag'"):
        parse_array_metadata(base_doc(flag=True), key=KEY)
    spec = parse_array_metadata(base_doc(my_ext={"name": "x", "must_understand": False}))
    assert spec.shape == (10, 7)


def test_storage_transformers():
    assert parse_array_metadata(base_doc(storage_transformers=[])).shape == (10, 7)
    with pytest.raises(UnknownCodecError, match="storage transformer 'chunk-manifest'") as ei:
        parse_array_metadata(base_doc(storage_transformers=[{"name": "chunk-manifest"}]), key=KEY)
    assert ei.value.key == KEY
    optional = [{"name": "cache-hint", "must_understand": False}]
    assert parse_array_metadata(base_doc(storage_transformers=optional)).shape == (10, 7)


def test_unknown_codec_names_key_and_codec():
    doc = base_doc(codecs=[{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zfp"}])
    with pytest.raises(UnknownCodecError, match="zfp") as ei:
        parse_array_metadata(doc, key=KEY)
    assert ei.value.key == KEY and ei.value.codec == "zfp"
    doc["codecs"][1]["must_understand"] = False  # a codec can never be skipped
    with pytest.raises(UnknownCodecError):
        parse_array_metadata(doc, key=KEY)


def test_unknown_chunk_grid():
    with pytest.raises(UnknownCodecError, match="rectilinear"):
        parse_array_metadata(base_doc(chunk_grid={"name": "rectilinear", "configuration": {}}), key=KEY)


@pytest.mark.parametrize(
    "change, match",
    [
        ({"zarr_format": 2}, "zarr_format"),
        ({"node_type": "group"}, "group"),
        ({"node_type": "blob"}, "node_type"),
        ({"shape": [10, -1]}, "shape"),
        ({"shape": [10.5, 7]}, "shape"),
        ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}}}, "chunk_shape"),
        ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 0]}}}, "chunk_shape"),
        ({"chunk_grid": {"name": "regular"}}, "chunk_shape"),
        ({"chunk_grid": "regular"}, "chunk_grid"),
        ({"codecs": []}, "codecs"),
        ({"codecs": [{"name": "gzip"}]}, "array->bytes"),
        ({"codecs": [{"name": "bytes"}]}, "endian"),  # int16 needs an endian
    ],
)
def test_malformed_documents_name_key_and_field(change, match):
    with pytest.raises(MetadataError, match=match) as ei:
        parse_array_metadata(base_doc(**change), key=KEY)
    assert ei.value.key == KEY


@pytest.mark.parametrize(
    "field", ["shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value", "codecs"]
)
def test_missing_required_field(field):
    doc = base_doc()
    del doc[field]
    with pytest.raises(MetadataError, match=field) as ei:
        parse_array_metadata(doc, key=KEY)
    assert ei.value.key == KEY


def test_malformed_json_names_the_key():
    store = MemoryStore()
    store.set(KEY, b'{"zarr_format": 3,')
    with pytest.raises(MetadataError, match="malformed JSON") as ei:
        open_node(store, "arr", format="zarr3")
    assert ei.value.key == KEY


def test_sharding_chunk_shape_must_divide_the_shard():
    doc = base_doc(
        chunk_grid={"name": "regular", "configuration": {"chunk_shape": [8, 4]}},
        codecs=[{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [3, 4], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}],
    )  # fmt: skip
    with pytest.raises(GridError) as ei:
        parse_array_metadata(doc, key=KEY)
    assert ei.value.key == KEY


# --- creation -----------------------------------------------------------------------------------------------
def test_create_unsharded():
    store = MemoryStore()
    spec = Z3.create_array(
        store,
        "arr",
        shape=(10, 7),
        dtype="float32",
        chunks=(4, 4),
        fill_value=float("nan"),
        attributes={"a": 1},
    )
    raw = store.get(KEY)
    doc = json.loads(raw)
    assert raw.decode() == json.dumps(doc, indent=2)
    assert doc == {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [10, 7],
        "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "NaN",
        "codecs": [
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "zstd", "configuration": {"level": 3, "checksum": True}},  # checksum=True by default
        ],
        "attributes": {"a": 1},
    }
    assert spec.codecs.codecs == (BytesCodec("little"), ZstdCodec(level=3, checksum=True))
    assert np.isnan(spec.fill_value) and spec.metadata == {"zarr.json": doc}


def test_create_sharded_and_nested():
    store = MemoryStore()
    spec = Z3.create_array(
        store, "arr", shape=(64, 64), dtype="uint16", chunks=(4, 4), shards=(16, 32), compressor="gzip"
    )
    doc = json.loads(store.get(KEY))
    assert doc["chunk_grid"]["configuration"]["chunk_shape"] == [16, 32]
    assert doc["codecs"] == [
        {
            "name": "sharding_indexed",
            "configuration": {
                "chunk_shape": [4, 4],
                "codecs": [
                    {"name": "bytes", "configuration": {"endian": "little"}},
                    {"name": "gzip", "configuration": {"level": 5}},
                ],
                "index_codecs": [
                    {"name": "bytes", "configuration": {"endian": "little"}},
                    {"name": "crc32c"},
                ],
                "index_location": "end",
            },
        }
    ]
    sc = spec.codecs.array_bytes
    assert isinstance(sc, ShardingCodec) and sc.codecs.codecs == (BytesCodec("little"), GzipCodec(5))
    assert sc.index_codecs.codecs == (BytesCodec("little"), Crc32cCodec())

    spec = Z3.create_array(
        store,
        "n",
        shape=(64, 64),
        dtype="uint16",
        chunks=(2, 2),
        shards=[(4, 8), (16, 32)],
        index_location="start",
    )
    outer = spec.codecs.array_bytes
    inner = outer.codecs.array_bytes
    assert spec.outer_chunks == (16, 32) and outer.chunk_shape == (4, 8) and inner.chunk_shape == (2, 2)
    assert outer.index_location == inner.index_location == "start"
    assert isinstance(inner.codecs.array_bytes, BytesCodec)


@pytest.mark.parametrize(
    "chunks, shards",
    [((4, 4), (6, 8)), ((2, 2), [(4, 4), (6, 8)]), ((4, 4), (8,)), ((0, 4), None), ((4, 4), [])],
)
def test_create_bad_grids(chunks, shards):
    store = MemoryStore()
    with pytest.raises(GridError) as ei:
        Z3.create_array(store, "arr", shape=(64, 64), dtype="uint8", chunks=chunks, shards=shards)
    assert ei.value.key == KEY
    assert store.get(KEY) is None


@pytest.mark.parametrize(
    "compressor, expected",
    [
        (None, [{"name": "crc32c"}]),  # every chunk carries a checksum unless checksum=False
        ("none", [{"name": "crc32c"}]),
        ("zstd", [{"name": "zstd", "configuration": {"level": 3, "checksum": True}}]),
        ("gzip", [{"name": "gzip", "configuration": {"level": 5}}]),  # a gzip member has its CRC-32
        (
            "blosc",
            [{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 8, "blocksize": 0}},
             {"name": "crc32c"}],
        ),
        ({"name": "gzip", "configuration": {"level": 1}}, [{"name": "gzip", "configuration": {"level": 1}}]),
        (ZstdCodec(level=7), [{"name": "zstd", "configuration": {"level": 7, "checksum": True}}]),
    ],
)  # fmt: skip
def test_create_compressors(compressor, expected):
    doc = Z3.array_metadata(NewArray(shape=(4,), dtype="float64", chunks=(2,), compressor=compressor))
    assert doc["codecs"] == [{"name": "bytes", "configuration": {"endian": "little"}}, *expected]


def test_create_errors():
    store = MemoryStore()
    with pytest.raises(UnknownCodecError, match="lzma"):
        Z3.create_array(store, "arr", shape=(4,), dtype="u1", chunks=(2,), compressor="lzma")
    with pytest.raises(UnsupportedError, match="no core data type"):
        Z3.create_array(store, "arr", shape=(4,), dtype="U3", chunks=(2,))
    with pytest.raises(MetadataError, match="dimension_names"):
        Z3.create_array(store, "arr", shape=(4,), dtype="u1", chunks=(2,), dimension_names=["a", "b"])
    with pytest.raises(MetadataError, match="cannot be represented"):
        Z3.create_array(store, "arr", shape=(4,), dtype="u1", chunks=(2,), fill_value=300)
    with pytest.raises(MetadataError, match="unknown Zarr v3 option"):
        Z3.create_array(store, "arr", shape=(4,), dtype="u1", chunks=(2,), order="F")
    with pytest.raises(MetadataError, match="index_location"):
        Z3.create_array(
            store, "arr", shape=(4,), dtype="u1", chunks=(2,), shards=(4,), index_location="middle"
        )
    assert store.get(KEY) is None


def test_create_options_separator_and_names():
    store = MemoryStore()
    spec = Z3.create_array(
        store, "arr", shape=(4, 4), dtype="bool", chunks=(2, 2), fill_value=True, chunk_key_separator=".",
        dimension_names=["y", None],
    )  # fmt: skip
    doc = json.loads(store.get(KEY))
    assert doc["fill_value"] is True and doc["dimension_names"] == ["y", None]
    assert spec.chunk_key((1, 0)) == "c.1.0"


@pytest.mark.parametrize(
    "dtype", ["bool", "int8", "uint16", "int32", "uint64", "float16", "float32", "complex64", "complex128"]
)
def test_metadata_round_trip_every_type(dtype):
    store = MemoryStore()
    dt = np.dtype(dtype)
    fill = {"b": True, "i": -3, "u": 3, "f": -np.inf, "c": complex(np.nan, 2)}[dt.kind]
    created = Z3.create_array(store, "arr", shape=(5, 3), dtype=dtype, chunks=(2, 2), fill_value=fill)
    opened = open_node(store, "arr", format="zarr3").spec
    assert opened.dtype == created.dtype == dt
    assert opened.fill_value.tobytes() == created.fill_value.tobytes() == np.asarray(fill, dt).tobytes()
    assert opened.codecs == created.codecs and opened.outer_chunks == (2, 2)


# --- groups -------------------------------------------------------------------------------------------------
def test_groups_and_attributes():
    store = MemoryStore()
    Z3.create_group(store, "g", {"x": 1})
    assert json.loads(store.get("g/zarr.json")) == {
        "zarr_format": 3,
        "node_type": "group",
        "attributes": {"x": 1},
    }
    assert open_node(store, "g", parse=False).kind == "group"
    assert Z3.read_attributes(store, "g") == {"x": 1}
    Z3.write_attributes(store, "g", {"y": 2})
    assert Z3.read_attributes(store, "g") == {"y": 2}
    Z3.create_array(store, "g/a", shape=(2,), dtype="u1", chunks=(2,), attributes={"k": "v"})
    assert open_node(store, "g/a", parse=False).kind == "array"
    Z3.write_attributes(store, "g/a", {"k": "w"})
    assert open_node(store, "g/a", format="zarr3").spec.attributes == {"k": "w"}
    with pytest.raises(MetadataError, match="missing"):
        Z3.read_attributes(store, "nope")
    store.set("bad/zarr.json", b'{"zarr_format": 3, "node_type": "group", "extra": 1}')
    with pytest.raises(MetadataError, match="'extra'"):
        open_node(store, "bad", parse=False)


# --- interop -------------------------------------------------------------------------------------------------
def test_zarr_python_reads_our_metadata_and_chunks(tmp_path):
    store = LocalStore(tmp_path)
    spec = Z3.create_array(
        store, "arr", shape=(10, 7), dtype="float32", chunks=(4, 4), fill_value=-1.0,
        dimension_names=["y", "x"], attributes={"units": "m"}, compressor="gzip",
    )  # fmt: skip
    a = np.arange(70, dtype="float32").reshape(10, 7)
    for pos in [(0, 0), (2, 1)]:  # (2, 1) is an edge chunk: stored padded
        padded = np.full(spec.outer_chunks, -1.0, dtype="float32")
        part = a[pos[0] * 4 : pos[0] * 4 + 4, pos[1] * 4 : pos[1] * 4 + 4]
        padded[: part.shape[0], : part.shape[1]] = part
        store.set("arr/" + spec.chunk_key(pos), bytes(spec.codecs.encode(padded)))
    z = zarr.open_array(str(tmp_path / "arr"), mode="r")
    assert z.metadata.dimension_names == ("y", "x") and z.attrs["units"] == "m"
    got = z[:]
    np.testing.assert_array_equal(got[:4, :4], a[:4, :4])
    np.testing.assert_array_equal(got[8:, 4:], a[8:, 4:])
    assert (got[4:8] == -1).all()


def test_we_read_zarr_python_sharded_array(tmp_path):
    a = np.arange(10 * 7, dtype="float32").reshape(10, 7)
    z = zarr.create_array(
        str(tmp_path / "arr"), shape=(10, 7), chunks=(4, 4), shards=(8, 4), dtype="f4", fill_value=np.nan,
        dimension_names=["y", "x"],
    )  # fmt: skip
    z[:] = a
    store = LocalStore(tmp_path)
    spec = open_node(store, "arr", format="zarr3").spec
    assert spec.outer_chunks == (8, 4) and spec.dimension_names == ("y", "x") and np.isnan(spec.fill_value)
    shard = store.get("arr/" + spec.chunk_key((1, 1)))
    out = spec.codecs.decode(shard, spec.outer_chunks, spec.dtype, fill_value=spec.fill_value)
    np.testing.assert_array_equal(out[:2, :3], a[8:10, 4:7])
    assert np.isnan(out[2:]).all()  # inner chunk (3, 1) is outside the array: empty in the index


@pytest.mark.parametrize("compressor", ["zstd", "gzip", "blosc", None])
def test_tensorstore_reads_our_nested_shard(tmp_path, compressor):
    store = LocalStore(tmp_path)
    spec = Z3.create_array(
        store,
        "arr",
        shape=(16, 16),
        dtype="int32",
        chunks=(2, 2),
        shards=[(4, 8), (8, 16)],
        compressor=compressor,
    )
    a = np.arange(256, dtype="int32").reshape(16, 16)
    store.set("arr/" + spec.chunk_key((1, 0)), bytes(spec.codecs.encode(a[8:16, :])))
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / "arr")}}).result()
    got = t.read().result()
    np.testing.assert_array_equal(got[8:], a[8:])
    assert (got[:8] == 0).all()


def test_we_read_tensorstore_array(tmp_path):
    t = ts.open(
        {
            "driver": "zarr3",
            "kvstore": {"driver": "file", "path": str(tmp_path / "arr")},
            "metadata": {
                "shape": [6, 5],
                "data_type": "uint16",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
                "chunk_key_encoding": {"name": "v2", "configuration": {"separator": "."}},
                "fill_value": 9,
                "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": "big"}}, {"name": "zstd", "configuration": {"level": 1}}],
            },
        },
        create=True,
    ).result()  # fmt: skip
    a = np.arange(30, dtype="uint16").reshape(6, 5)
    t.write(a).result()
    store = LocalStore(tmp_path)
    spec = open_node(store, "arr", format="zarr3").spec
    assert spec.fill_value == 9 and spec.chunk_key((1, 0)) == "1.0"
    chunk = spec.codecs.decode(store.get("arr/1.0"), (4, 4), spec.dtype)
    np.testing.assert_array_equal(chunk[:2, :4], a[4:6, :4])


def test_zarr_python_documents_parse():
    # every array document zarr-python writes for the core types parses, and the fill value agrees
    for dtype, fill in [
        ("bool", True),
        ("int64", -7),
        ("uint32", 9),
        ("float16", np.inf),
        ("complex64", 1 - 1j),
    ]:
        z = zarr.create_array(store={}, shape=(3,), chunks=(2,), dtype=dtype, fill_value=fill)
        doc = json.loads(json.dumps(z.metadata.to_dict(), default=str))
        spec = parse_array_metadata(copy.deepcopy(doc))
        assert spec.fill_value == np.asarray(fill, dtype=dtype)


# --- float fill values: every JSON form, exact refusals ----------------------------------------------------------
def test_integer_json_fill_for_a_float_type():
    spec = parse_array_metadata(base_doc(data_type="float32", fill_value=3), key=KEY)
    assert spec.fill_value == np.float32(3.0) and spec.fill_value.dtype == np.dtype("float32")


def test_bare_infinity_literal_is_an_infinite_fill():
    # Python's json (and zarr-python 2's writer) accept the bare Infinity / NaN literals
    doc = json.loads(
        json.dumps(base_doc(data_type="float64")).replace('"fill_value": 0', '"fill_value": -Infinity')
    )
    assert parse_array_metadata(doc, key=KEY).fill_value == -math.inf


@pytest.mark.parametrize(
    "data_type, fill, message",
    [
        ("float64", 10**400, f"field 'fill_value': {10**400} is too large for float64"),
        ("float32", 10**40, f"field 'fill_value': {10**40} is too large for float32"),
        ("float32", 1e300, "field 'fill_value': 1e+300 is too large for float32"),
        ("float16", 70000.0, "field 'fill_value': 70000.0 is too large for float16"),
        ("float32", "nan", "field 'fill_value': 'nan' is not a valid float32 fill value (a number, 'NaN', "
         "'Infinity', '-Infinity' or a hex bit pattern)"),
        ("float32", "0x7fc0", "field 'fill_value': hex fill value '0x7fc0' must have 8 hex digits for float32"),
        ("float64", True, "field 'fill_value' must be a number for float64, got True"),
    ],
)  # fmt: skip
def test_bad_float_fill_exact_message_without_warnings(data_type, fill, message):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflowing cast is refused, not warned about
        with pytest.raises(MetadataError) as ei:
            parse_array_metadata(base_doc(data_type=data_type, fill_value=fill), key=KEY)
    assert type(ei.value) is MetadataError
    assert str(ei.value) == f"{message} [key='{KEY}']"


def test_detection_and_read_attributes_errors_name_the_document():
    store = MemoryStore()
    store.set("g/zarr.json", b'{"zarr_format": 2, "node_type": "group"}')
    for op in (lambda: open_node(store, "g", parse=False), lambda: Z3.read_attributes(store, "g")):
        with pytest.raises(MetadataError) as ei:
            op()
        assert str(ei.value) == "field 'zarr_format' must be 3, got 2 [key='g/zarr.json']"


@pytest.mark.parametrize(
    "name, expected",
    [
        ("zstd", {"name": "zstd", "configuration": {"level": 4, "checksum": False}}),
        ("gzip", {"name": "gzip", "configuration": {"level": 4}}),
        ("blosc", {"name": "blosc", "configuration": {"cname": "zlib", "clevel": 4, "shuffle": "shuffle",
                                                     "typesize": 4, "blocksize": 0}}),
    ],
)  # fmt: skip
def test_zarr3_codec_objects_are_written_as_given(name, expected):
    store = MemoryStore()
    spec = Z3.create_array(
        store, "a", shape=(4,), dtype="float32", chunks=(2,), compressor=expected, checksum=False
    )
    assert json.loads(store.get("a/zarr.json"))["codecs"] == [
        {"name": "bytes", "configuration": {"endian": "little"}},
        expected,
    ]
    assert Z3.codecs_json(spec) == [{"name": "bytes", "configuration": {"endian": "little"}}, expected]


def test_consolidated_metadata_written_by_zarr_python(tmp_path):
    g = zarr.open_group(str(tmp_path / "c"), mode="w", zarr_format=3)
    g.create_array("a", shape=(4,), chunks=(2,), dtype="i2", fill_value=3)
    g.create_group("sub").create_array("b", shape=(2,), chunks=(2,), dtype="f4")
    with pytest.warns(UserWarning):
        zarr.consolidate_metadata(str(tmp_path / "c"))
    store = LocalStore(tmp_path)
    raw = {"zarr.json": store.get("c/zarr.json")}
    children = Z3.consolidated_children(raw, "c")
    assert sorted(children) == ["a", "sub", "sub/b"]
    assert Z3.consolidated_children({"zarr.json": None}, "c") is None
    assert Z3.consolidated_children({}, "c") is None
    plain = b'{"zarr_format": 3, "node_type": "group", "attributes": {}}'
    assert Z3.consolidated_children({"zarr.json": plain}, "c") is None
    no_meta = b'{"zarr_format": 3, "node_type": "group", "consolidated_metadata": {"kind": "inline"}}'
    assert Z3.consolidated_children({"zarr.json": no_meta}, "c") is None
    for meta in (b"[]", b'"a"', b"3"):  # "metadata" that is not an object reads as no consolidated metadata
        doc = (
            b'{"zarr_format": 3, "node_type": "group", "consolidated_metadata": {"metadata": ' + meta + b"}}"
        )
        assert Z3.consolidated_children({"zarr.json": doc}, "c") is None
    with pytest.raises(MetadataError) as ei:
        Z3.consolidated_children({"zarr.json": b"{"}, "c")
    assert ei.value.key == "c/zarr.json"

    node = Z3.child_from_consolidated(children, "sub/b", "c/sub/b")
    assert node.format is Z3 and node.kind == "array"
    assert node.spec.shape == (2,) and node.spec.dtype == np.dtype("f4") and node.spec.format == "zarr3"
    node = Z3.child_from_consolidated(children, "a", "c/a")
    assert node.kind == "array" and node.spec.fill_value == np.int16(3)
    node = Z3.child_from_consolidated(children, "sub", "c/sub")
    assert node.format is Z3 and node.kind == "group" and node.spec is None
    assert Z3.child_from_consolidated(children, "nope", "c/nope") is None
    bad = {"x": {**children["a"], "zarr_format": 2}, "y": {**children["a"], "shape": "s"}}
    with pytest.raises(MetadataError) as ei:
        Z3.child_from_consolidated(bad, "x", "c/x")
    assert str(ei.value) == "field 'zarr_format' must be 3, got 2 [key='c/x/zarr.json']"
    with pytest.raises(MetadataError) as ei:
        Z3.child_from_consolidated(bad, "y", "c/y")
    assert str(ei.value) == "field 'shape' must be a list of integers, got 's' [key='c/y/zarr.json']"


# --- exact refusals: every validation of zarr.json names its field, the key and (for extensions) the name ------
@pytest.mark.parametrize(
    "changes, error, message",
    [
        ({'zarr_format': 2}, MetadataError, "field 'zarr_format' must be 3, got 2"),
        ({'node_type': 'grp'}, MetadataError, "field 'node_type' must be 'array' or 'group', got 'grp'"),
        ({'node_type': 'group'}, MetadataError, 'node is a group, not an array'),
        ({'extra': 1}, MetadataError, 'unknown field \'extra\' (extension fields must say "must_understand": false to be ignored)'),
        ({'extra': {'must_understand': True}}, MetadataError, 'unknown field \'extra\' (extension fields must say "must_understand": false to be ignored)'),
        ({'attributes': [1]}, MetadataError, "field 'attributes' must be an object, got list"),
        ({'shape': 'x'}, MetadataError, "field 'shape' must be a list of integers, got 'x'"),
        ({'data_type': 5}, MetadataError, "field 'data_type' must be a string, got 5"),
        ({'data_type': {'name': 'int16', 'configuration': {'a': 1}}}, UnknownCodecError, "field 'data_type': data type 'int16' with a configuration is not supported"),
        ({'data_type': 'r12'}, MetadataError, "field 'data_type': raw type 'r12' needs a positive multiple of 8 bits, at most 524288"),
        ({'data_type': 'r0'}, MetadataError, "field 'data_type': raw type 'r0' needs a positive multiple of 8 bits, at most 524288"),
        ({'data_type': 'r524296'}, MetadataError, "field 'data_type': raw type 'r524296' needs a positive multiple of 8 bits, at most 524288"),
        ({'data_type': 'string'}, UnsupportedError, "field 'data_type': variable-length type 'string' is not supported"),
        ({'data_type': 'bfloat16'}, UnknownCodecError, "field 'data_type': unknown data type 'bfloat16'"),
        ({'chunk_grid': 5}, MetadataError, "field 'chunk_grid' must be an object with a 'name', got 5"),
        ({'chunk_grid': {'name': 'regular', 'configuration': {'chunk_shape': [4, 4]}, 'x': 1}}, MetadataError, "field 'chunk_grid': unknown member(s) ['x']"),
        ({'chunk_grid': {'name': 'rectilinear', 'configuration': {}}}, UnknownCodecError, "field 'chunk_grid': unknown chunk grid 'rectilinear'"),
        ({'chunk_grid': {'name': 'regular'}}, MetadataError, "field 'chunk_grid.configuration.chunk_shape' is required"),
        ({'chunk_grid': {'name': 'regular', 'configuration': {'chunk_shape': [4]}}}, MetadataError, "field 'chunk_grid.configuration.chunk_shape' has 1 dimensions, the array has 2"),
        ({'chunk_key_encoding': 5}, MetadataError, "field 'chunk_key_encoding' must be an object with a 'name', got 5"),
        ({'chunk_key_encoding': {'name': 'default', 'x': 1}}, MetadataError, "field 'chunk_key_encoding': unknown member(s) ['x']"),
        ({'chunk_key_encoding': {'name': 'default', 'configuration': 5}}, MetadataError, "field 'chunk_key_encoding.configuration' must be an object"),
        ({'chunk_key_encoding': {'name': 'hash'}}, UnknownCodecError, "field 'chunk_key_encoding': unknown encoding 'hash'"),
        ({'chunk_key_encoding': {'name': 'default', 'configuration': {'separator': '/', 'y': 1}}}, MetadataError, "field 'chunk_key_encoding.configuration': unknown field(s) ['y']"),
        ({'chunk_key_encoding': {'name': 'v2', 'configuration': {'separator': '-'}}}, MetadataError, "field 'chunk_key_encoding.configuration.separator' must be '/' or '.', got '-'"),
        ({'storage_transformers': 5}, MetadataError, "field 'storage_transformers' must be a list"),
        ({'storage_transformers': [{'name': 't'}]}, UnknownCodecError, "field 'storage_transformers': storage transformer 't' is not supported"),
        ({'storage_transformers': ['t']}, UnknownCodecError, "field 'storage_transformers': storage transformer 't' is not supported"),
        ({'dimension_names': ['a']}, MetadataError, "field 'dimension_names' must be a list of 2 strings or nulls, got ['a']"),
        ({'dimension_names': 'ab'}, MetadataError, "field 'dimension_names' must be a list of 2 strings or nulls, got 'ab'"),
        ({'dimension_names': ['a', 1]}, MetadataError, "field 'dimension_names' must be a list of 2 strings or nulls, got ['a', 1]"),
        ({'codecs': []}, MetadataError, "field 'codecs' must be a non-empty list, got []"),
        ({'codecs': {}}, MetadataError, "field 'codecs' must be a non-empty list, got {}"),
        ({'codecs': [{'name': 'nope'}]}, UnknownCodecError, "unknown codec 'nope': data encoded with it cannot be decoded (known codecs: {known})"),
        ({'fill_value': None}, MetadataError, "field 'fill_value' is required (null is not allowed in Zarr v3)"),
        ({'fill_value': 40000}, MetadataError, "field 'fill_value' 40000 is out of range for int16"),
        ({'fill_value': 1.5}, MetadataError, "field 'fill_value' must be an integer for int16, got 1.5"),
        ({'data_type': 'bool', 'fill_value': 1}, MetadataError, "field 'fill_value' must be true or false for bool, got 1"),
        ({'data_type': 'complex64', 'fill_value': 1.0}, MetadataError, "field 'fill_value' must be a [real, imaginary] pair for complex64, got 1.0"),
        ({'data_type': 'r16', 'fill_value': [1, 2, 3]}, MetadataError, "field 'fill_value' must be a list of 2 byte values for r16, got [1, 2, 3]"),
        ({'data_type': 'r16', 'fill_value': [1, 256]}, MetadataError, "field 'fill_value' must be a list of 2 byte values for r16, got [1, 256]"),
        ({'data_type': 'r16', 'fill_value': [True, 1]}, MetadataError, "field 'fill_value' must be a list of 2 byte values for r16, got [True, 1]"),
    ],
)  # fmt: skip
def test_bad_document_exact_message(changes, error, message):
    # the codecs registered in this process (other test modules register their own test codecs)
    message = message.replace("{known}", str(sorted(registered_codecs())))
    with pytest.raises(error) as ei:
        parse_array_metadata(base_doc(**changes), key=KEY)
    assert type(ei.value) is error
    assert str(ei.value).startswith(f"{message} [key='{KEY}'")
    assert ei.value.key == KEY


@pytest.mark.parametrize(
    "changes, codec",
    [
        ({"data_type": "bfloat16"}, "bfloat16"),
        ({"chunk_grid": {"name": "rectilinear", "configuration": {}}}, "rectilinear"),
        ({"chunk_key_encoding": {"name": "hash"}}, "hash"),
        ({"storage_transformers": [{"name": "t"}]}, "t"),
        ({"storage_transformers": ["t"]}, "t"),
        ({"storage_transformers": [5]}, "5"),
    ],
)
def test_unknown_extensions_name_themselves(changes, codec):
    with pytest.raises(UnknownCodecError) as ei:
        parse_array_metadata(base_doc(**changes), key=KEY)
    assert ei.value.codec == codec


def test_raw_fill_takes_every_byte_value():
    spec = parse_array_metadata(base_doc(data_type="r16", fill_value=[0, 255]), key=KEY)
    assert spec.fill_value.tobytes() == b"\x00\xff"


def test_complex_fill_parts_are_floats_of_half_the_width():
    spec = parse_array_metadata(
        base_doc(data_type="complex64", fill_value=["0x7fc00000", "0x3f800000"]), key=KEY
    )
    assert np.isnan(spec.fill_value.real) and spec.fill_value.imag == 1.0
    with pytest.raises(MetadataError) as ei:
        parse_array_metadata(base_doc(data_type="complex64", fill_value=[1e300, 0]), key=KEY)
    assert str(ei.value) == f"field 'fill_value': 1e+300 is too large for float32 [key='{KEY}']"


@pytest.mark.parametrize("name, dtype", [("r8", "V1"), ("r16", "V2"), (f"r{8 * 65536}", "V65536")])
def test_raw_types_from_one_byte_to_the_widest(name, dtype):
    fill = [0] * np.dtype(dtype).itemsize
    assert parse_array_metadata(base_doc(data_type=name, fill_value=fill), key=KEY).dtype == np.dtype(dtype)


@pytest.mark.parametrize("name", ["x16", "rgb", "R16", "r"])
def test_names_that_only_look_raw_are_unknown_types(name):
    with pytest.raises(UnknownCodecError) as ei:
        parse_array_metadata(base_doc(data_type=name), key=KEY)
    assert str(ei.value) == f"field 'data_type': unknown data type {name!r} [key='{KEY}', codec={name!r}]"


@pytest.mark.parametrize("name", ["string", "bytes", "variable_length_bytes", "variable_length_utf8"])
def test_variable_length_types_are_unsupported(name):
    with pytest.raises(UnsupportedError) as ei:
        parse_array_metadata(base_doc(data_type=name), key=KEY)
    assert str(ei.value) == f"field 'data_type': variable-length type {name!r} is not supported [key='{KEY}']"


def test_an_ignorable_storage_transformer_does_not_hide_a_later_unsupported_one():
    ignorable = {"name": "a", "must_understand": False}
    assert parse_array_metadata(base_doc(storage_transformers=[ignorable]), key=KEY).shape == (10, 7)
    with pytest.raises(UnknownCodecError) as ei:
        parse_array_metadata(base_doc(storage_transformers=[ignorable, {"name": "t"}]), key=KEY)
    assert ei.value.codec == "t"


def test_compressor_json_lists_unknown_names_and_wrong_types():
    """``compressor=`` of ``create_array``, read by the codec vocabulary: a list chains its items' codecs
    (each with the dtype's item size where it has one); an unknown name is an ``UnknownCodecError`` naming
    it and the grammar; anything else a ``MetadataError`` saying what is accepted."""
    from altarr.formats.zarr3 import compressor_json

    got = compressor_json(["blosc", None, "gzip"], np.dtype("u2"))
    assert got == [
        {
            "name": "blosc",
            "configuration": {
                "cname": "lz4",
                "clevel": 5,
                "shuffle": "shuffle",
                "typesize": 2,
                "blocksize": 0,
            },
        },
        {"name": "gzip", "configuration": {"level": 5}},
    ]
    with pytest.raises(UnknownCodecError) as info:
        compressor_json(["zstd", "lz5"], np.dtype("f4"))
    assert info.value.codec == "lz5"
    assert info.value.message == (
        "compressor='lz5': unknown codec 'lz5'; use NAME[:LEVEL] (zstd, gzip, zlib, bz2, lzma, lz4), "
        "blosc[:CNAME][:LEVEL] or none"
    )
    with pytest.raises(MetadataError) as info:
        compressor_json(3, np.dtype("f4"))
    assert info.value.message == (
        "compressor=3: a compressor is a name string, a codec dict, a numcodecs or zarr.codecs codec"
    )


# --- writers: data types, fill values, options and the errors that name the document ----------------------
_NO_CORE_TYPE = (
    "(supported: bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64, "
    "complex64, complex128, r<N>)"
)


@pytest.mark.parametrize("dtype, name", [("V1", "r8"), ("V3", "r24"), ("V16", "r128")])
def test_plain_void_dtypes_are_written_as_raw_bits(dtype, name):
    assert data_type_name(dtype) == name
    store = MemoryStore()
    spec = Z3.create_array(store, "arr", shape=(4,), dtype=dtype, chunks=(2,), fill_value=None)
    doc = json.loads(store.get(KEY))
    assert doc["data_type"] == name and doc["fill_value"] == [0] * np.dtype(dtype).itemsize
    assert spec.dtype == np.dtype(dtype)


@pytest.mark.parametrize(
    "dtype, shown",
    [
        (np.dtype("U4"), "<U4"),
        (np.dtype([("a", "u1")]), "[('a', 'u1')]"),  # a structured void is not raw bits
        (np.dtype(("V2", (3,))), "('V2', (3,))"),  # nor is a sub-array of them
        (np.dtype("M8[s]"), "datetime64[s]"),
    ],
)
def test_dtypes_without_a_zarr3_type_name_the_supported_ones(dtype, shown):
    with pytest.raises(UnsupportedError) as ei:
        data_type_name(dtype)
    assert str(ei.value) == f"Zarr v3 has no core data type for {shown} {_NO_CORE_TYPE}"


@pytest.mark.parametrize(
    "value, expected",
    [
        (None, [0, 0]),
        (0, [0, 0]),
        (np.uint8(0), [0, 0]),
        (b"\x01\x02", [1, 2]),
        (bytearray(b"\xff\x00"), [255, 0]),
        ([3, 4], [3, 4]),
        ((5, 6), [5, 6]),
        (np.void(b"\x07\x08"), [7, 8]),
    ],
)
def test_raw_fill_values_are_written_as_byte_lists(value, expected):
    assert encode_fill_value(value, np.dtype("V2")) == expected


@pytest.mark.parametrize("value", [1, 2, np.int16(5), "ab", 1.5, b"\x01", b"\x01\x02\x03"])
def test_raw_fill_values_must_be_exactly_the_item_size_in_bytes(value):
    """Only zero (or None) stands for all-zero bytes; any other number, a string or a byte string of
    another length is refused, even when it would have the right size in memory."""
    with pytest.raises(MetadataError) as ei:
        encode_fill_value(value, np.dtype("V2"))
    assert str(ei.value) == f"fill value for |V2 must be 2 bytes, got {value!r}"


@pytest.mark.parametrize(
    "dtype, expected",
    [
        ("float64", 0.0),
        ("float32", 0.0),
        ("int16", 0),
        ("uint64", 0),
        ("bool", False),
        ("complex64", [0.0, 0.0]),
    ],
)
def test_no_fill_value_writes_the_types_zero(dtype, expected):
    got = encode_fill_value(None, np.dtype(dtype))
    assert got == expected and type(got) is type(expected)


def test_fill_value_encoding_errors_exact_message():
    with pytest.raises(MetadataError) as ei:
        encode_fill_value(1.5, np.dtype("int16"))
    assert str(ei.value) == "fill value 1.5 is not an integer (int16)"
    with pytest.raises(MetadataError) as ei:
        encode_fill_value(np.float32(-2.5), np.dtype("uint8"))
    assert str(ei.value) == "fill value np.float32(-2.5) is not an integer (uint8)"
    assert encode_fill_value(np.float64(2.0), np.dtype("int16")) == 2  # a whole float is fine
    with pytest.raises(MetadataError) as ei:
        encode_fill_value([1, 2], np.dtype("int16"))
    assert str(ei.value) == "fill value must be a scalar, got [1, 2]"
    with pytest.raises(UnsupportedError) as ei:  # representable, but Zarr has no JSON form for it
        encode_fill_value(0, np.dtype("U4"))
    assert str(ei.value) == "fill values of <U4 are not supported"


@pytest.mark.parametrize("field", ["chunk_grid", "chunk_key_encoding"])
@pytest.mark.parametrize("must_understand", [True, False])
def test_extension_objects_may_say_must_understand(field, must_understand):
    doc = base_doc()
    doc[field] = {**doc[field], "must_understand": must_understand}
    spec = parse_array_metadata(doc, key=KEY)
    assert spec.outer_chunks == (4, 4) and spec.chunk_key((1, 0)) == "c/1/0"


def test_group_documents_refuse_array_fields():
    store = MemoryStore()
    store.set(KEY, json.dumps({"zarr_format": 3, "node_type": "group", "shape": [1]}).encode())
    with pytest.raises(MetadataError) as ei:
        open_node(store, "arr")
    assert str(ei.value) == (
        f"unknown field 'shape' (extension fields must say \"must_understand\": false to be ignored) [key='{KEY}']"
    )


def test_an_ignorable_extension_field_does_not_hide_a_later_unknown_one():
    doc = {**base_doc(), "ext": {"must_understand": False}}
    assert parse_array_metadata(doc, key=KEY).shape == (10, 7)
    with pytest.raises(MetadataError) as ei:
        parse_array_metadata({**doc, "bogus": 1}, key=KEY)
    assert str(ei.value) == (
        f"unknown field 'bogus' (extension fields must say \"must_understand\": false to be ignored) [key='{KEY}']"
    )


def test_detection_errors_name_the_nodes_document():
    store = MemoryStore()
    store.set(KEY, json.dumps({"zarr_format": 2, "node_type": "array"}).encode())
    with pytest.raises(MetadataError) as ei:
        open_node(store, "arr", format="zarr3")
    assert str(ei.value) == f"field 'zarr_format' must be 3, got 2 [key='{KEY}']"
    doc = base_doc()
    del doc["shape"]
    store.set(KEY, json.dumps(doc).encode())
    assert open_node(store, "arr", format="zarr3", parse=False).kind == "array"
    for op in (
        lambda: open_node(store, "arr", format="zarr3"),
        lambda: open_node(store, "arr", format="zarr3").spec,
    ):
        with pytest.raises(MetadataError) as ei:
            op()
        assert str(ei.value) == f"required field(s) ['shape'] missing [key='{KEY}']"


def test_a_missing_node_names_its_document():
    store = MemoryStore()
    ops = [
        lambda s, p: Z3.resize_array(s, p, (1,)),
        Z3.read_attributes,
        lambda s, p: Z3.write_attributes(s, p, {"a": 1}),
    ]
    for op in ops:
        with pytest.raises(MetadataError) as ei:
            op(store, "arr")
        assert str(ei.value) == f"no Zarr v3 node here (zarr.json is missing) [key='{KEY}']"
    assert store.get(KEY) is None


@pytest.mark.parametrize(
    "compressor, checksum, codecs",
    [
        ("zstd", True, [{"name": "zstd", "configuration": {"level": 3, "checksum": True}}]),
        ("blosc", True, [{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle",
                                                             "typesize": 2, "blocksize": 0}}, {"name": "crc32c"}]),
        (None, True, [{"name": "crc32c"}]),
        ([{"name": "zstd", "configuration": {"level": 3, "checksum": False}}, {"name": "crc32c"}], True,
         [{"name": "zstd", "configuration": {"level": 3, "checksum": False}}, {"name": "crc32c"}]),
        ("zstd", False, [{"name": "zstd", "configuration": {"level": 3, "checksum": False}}]),
    ],
)  # fmt: skip
def test_the_checksum_option_gives_every_chunk_a_checksum_zarr_python_verifies(
    tmp_path, compressor, checksum, codecs
):
    """checksum=True (the default): zstd's frame checksum, else a crc32c codec (none added where the
    chain has one); zarr-python reads each chain and verifies the checksum of a chunk altarr wrote."""
    store = LocalStore(tmp_path)
    spec = Z3.create_array(
        store, "arr", shape=(4,), dtype="u2", chunks=(2,), compressor=compressor, checksum=checksum
    )
    assert json.loads(store.get(KEY))["codecs"] == [
        {"name": "bytes", "configuration": {"endian": "little"}},
        *codecs,
    ]
    good = bytes(spec.codecs.encode(np.array([7, 9], dtype="u2")))
    store.set("arr/" + spec.chunk_key((1,)), good)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "arr"), mode="r")[:], [0, 0, 7, 9])
    if checksum:  # the last byte is the checksum's (crc32c, or the zstd frame's): zarr-python refuses it
        store.set("arr/" + spec.chunk_key((1,)), good[:-1] + bytes([good[-1] ^ 1]))
        with pytest.raises(Exception, match="(?i)checksum"):
            zarr.open_array(str(tmp_path / "arr"), mode="r")[:]


_CREATE_OK = {"shape": (4, 4), "dtype": "u1", "chunks": (2, 2)}


@pytest.mark.parametrize(
    "changes, error, message",
    [
        ({"checksum": "yes"}, MetadataError, "checksum must be True or False, got 'yes'"),
        ({"dtype": "nope"}, MetadataError, "invalid dtype 'nope'"),
        ({"shape": (4, -1)}, MetadataError, "field 'shape' must hold integers >= 0, got [4, -1]"),
        ({"shards": (4, 4), "index_location": "middle"}, MetadataError, "index_location must be 'start' or 'end', got 'middle'"),
        ({"chunk_key_separator": "-"}, MetadataError, "field 'chunk_key_encoding.configuration.separator' must be '/' or '.', got '-'"),
        ({"dtype": "i2", "fill_value": 1.5}, MetadataError, "fill value 1.5 is not an integer (int16)"),
        ({"dimension_names": ["y"]}, MetadataError, "dimension_names must be 2 strings or None, got ['y']"),
        ({"dimension_names": ("y", "x", "z")}, MetadataError, "dimension_names must be 2 strings or None, got ('y', 'x', 'z')"),
        ({"dimension_names": ["y", 1]}, MetadataError, "dimension_names must be 2 strings or None, got ['y', 1]"),
        ({"attributes": {"a": {1}}}, MetadataError, "metadata is not JSON-serializable: Object of type set is not JSON serializable"),
    ],
)  # fmt: skip
def test_create_errors_exact_message_and_key(changes, error, message):
    store = MemoryStore()
    with pytest.raises(error) as ei:
        Z3.create_array(store, "arr", **{**_CREATE_OK, **changes})
    assert type(ei.value) is error
    assert str(ei.value) == f"{message} [key='{KEY}']"
    assert store.get(KEY) is None


@pytest.mark.parametrize(
    "compressor, message, codec",
    [
        ("lzma", "compressor='lzma': Zarr v3 has no 'lzma' compressor its readers decode; use one of ['zstd', 'gzip', 'blosc', 'crc32c']", "lzma"),
        ({"name": "bytes", "configuration": {"endian": "big"}}, "codec 'bytes' at position 1 is a second array->bytes codec (the first is 'bytes'); a chain has exactly one", "bytes"),
    ],
)  # fmt: skip
def test_create_compressor_errors_name_the_document_and_codec(compressor, message, codec):
    store = MemoryStore()
    with pytest.raises(MetadataError) as ei:
        Z3.create_array(store, "arr", **_CREATE_OK, compressor=compressor)
    assert str(ei.value) == f"{message} [key='{KEY}', codec='{codec}']"
    assert store.get(KEY) is None


def test_attribute_and_group_writers_name_the_document():
    store = MemoryStore()
    Z3.create_group(store, "arr")
    for op in (
        lambda: Z3.write_attributes(store, "arr", {"a": {1}}),
        lambda: Z3.create_group(store, "arr", {"a": {1}}),
    ):
        with pytest.raises(MetadataError) as ei:
            op()
        assert str(ei.value) == (
            f"metadata is not JSON-serializable: Object of type set is not JSON serializable [key='{KEY}']"
        )
    assert json.loads(store.get(KEY)) == {"zarr_format": 3, "node_type": "group", "attributes": {}}
    store.set(KEY, b'{"zarr_format": 3, "node_type": "folder"}')
    with pytest.raises(MetadataError) as ei:
        Z3.write_attributes(store, "arr", {"a": 1})
    assert str(ei.value) == f"field 'node_type' must be 'array' or 'group', got 'folder' [key='{KEY}']"
