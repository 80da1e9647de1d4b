"""N5 metadata: legacy and N5 4.x ``codecs`` forms, sharded layout, attributes, versions, bad input."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from _batch_counting_store import CountingStore
from altarr.codecs import BytesCodec, Crc32cCodec, ShardingCodec
from altarr.codecs.n5 import N5BlockCodec
from altarr.codecs.n5_compressions import GzipCompression, RawCompression, XzCompression
from altarr.errors import (
    AltarrError,
    GridError,
    MetadataError,
    NodeNotFoundError,
    UnknownCodecError,
    UnsupportedError,
)
from altarr.formats import detect_format, get_format, open_node
from altarr.formats.n5 import parse_n5_attributes
from altarr.stores import MemoryStore

N5 = get_format("n5")


def _doc(store, key):
    return json.loads(store.get(key))


# --- reading ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "doc",
    [
        {"dataType": "uint8", "compressionType": "raw", "blockSize": [5, 4], "dimensions": [7, 5]},  # 1.5.0
        {"dataType": "uint8", "compression": {"type": "raw"}, "blockSize": [5, 4], "dimensions": [7, 5]},
        {
            "dataType": "uint8",
            "codecs": [{"name": "n5bytes"}],
            "blockSize": [5, 4],
            "dimensions": [7, 5],
            "compression": {"type": "gzip"},  # codecs win over compression, as in the Java reader
        },
    ],
    ids=["compressionType", "compression", "codecs"],
)
def test_java_fixture_metadata_forms(doc):
    spec = parse_n5_attributes(doc, key="raw/attributes.json")
    assert spec.format == "n5"
    assert spec.shape == (5, 7) and spec.outer_chunks == (4, 5) and spec.dtype == np.dtype("uint8")
    assert spec.codecs.array_bytes == N5BlockCodec(RawCompression())
    assert spec.fill_value == 0 and spec.attributes == {}
    assert [spec.chunk_key(p) for p in [(0, 0), (0, 1), (1, 0)]] == ["0/0", "1/0", "0/1"]


def test_three_d_keys_reverse_positions():
    spec = parse_n5_attributes(
        {
            "dataType": "int16",
            "compression": {"type": "xz"},
            "blockSize": [3, 5, 7],
            "dimensions": [6, 15, 35],
        }
    )
    assert spec.shape == (35, 15, 6) and spec.outer_chunks == (7, 5, 3)
    assert spec.chunk_key((4, 2, 1)) == "1/2/4"
    assert spec.codecs.array_bytes.data_codecs == (XzCompression(),)


def test_codecs_with_data_codecs_and_bytes_block_codec():
    spec = parse_n5_attributes(
        {
            "dataType": "uint16",
            "blockSize": [4, 4],
            "dimensions": [8, 8],
            "codecs": [
                {"name": "n5bytes"},
                {"name": "gzip", "configuration": {"level": 6}},
                {"name": "crc32c"},
            ],
        }
    )
    ab = spec.codecs.array_bytes
    assert isinstance(ab, N5BlockCodec) and ab.data_codecs == (GzipCompression(6), Crc32cCodec())
    spec = parse_n5_attributes(
        {"dataType": "uint16", "blockSize": [4, 4], "dimensions": [8, 8], "codecs": [{"name": "bytes"}]}
    )
    assert spec.codecs.array_bytes == BytesCodec("big")  # Java's default endianness for "bytes"
    assert not spec.codecs.array_bytes.truncates_edges


@pytest.mark.parametrize("index_name", ["raw-bytes", "bytes"])  # N5 >= 4.0.0-alpha-7, and before
def test_sharding_chunk_shape_is_numpy_order_as_java_writes_it(index_name):
    # N5 chunk [2, 1] in shards [8, 4]: Java writes chunk_shape reversed (@N5Annotations.ReverseArray)
    doc = {
        "dataType": "uint8",
        "compression": {"type": "raw"},  # Java's legacy key beside codecs: ignored
        "blockSize": [8, 4],  # outer = shard size, N5 order
        "dimensions": [24, 12],
        "codecs": [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": [1, 2],
                    "index_codecs": [
                        {"name": index_name, "configuration": {"endian": "big"}},
                        {"name": "crc32c"},
                    ],
                    "codecs": [{"name": "n5bytes"}, {"name": "gzip", "configuration": {"level": 3}}],
                },
            }
        ],
    }
    spec = parse_n5_attributes(doc)
    assert spec.shape == (12, 24) and spec.outer_chunks == (4, 8)
    sc = spec.codecs.array_bytes
    assert isinstance(sc, ShardingCodec)
    assert sc.chunk_shape == (1, 2) and sc.index_location == "end"  # index_location defaults to end
    assert sc.codecs.array_bytes == N5BlockCodec(GzipCompression(3))
    assert sc.index_codecs.codecs == (BytesCodec("big"), Crc32cCodec())
    # the endian of raw-bytes defaults to big, as Java's RawBlockCodecInfo
    doc["codecs"][0]["configuration"]["index_codecs"] = [{"name": index_name}]
    assert parse_n5_attributes(doc).codecs.array_bytes.index_codecs.codecs == (BytesCodec("big"),)


def test_n5_order_chunk_shape_is_refused_not_misread():
    # N5 dims [16, 8], chunk [2, 4], shard [8, 8]: a chunk_shape in N5 order ([2, 4]) divides the shard
    # either way, so only the n5bytes headers ([2, 4] where [4, 2] is expected) can tell; they are checked
    store = MemoryStore()
    ds_doc = {
        "dataType": "uint8",
        "blockSize": [8, 8],
        "dimensions": [16, 8],
        "codecs": [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": [2, 4],
                    "index_codecs": [{"name": "raw-bytes", "configuration": {"endian": "big"}}],
                    "index_location": "end",
                    "codecs": [{"name": "n5bytes"}],
                },
            }
        ],
    }
    store.set("attributes.json", b'{"n5": "4.0.0"}')
    spec = N5.create_array(
        store, "ok", shape=(8, 16), dtype="uint8", chunks=(4, 2), shards=(8, 8), index_crc32c=False
    )
    right = spec.codecs.encode(np.arange(64, dtype="uint8").reshape(8, 8))
    store.set("bad/attributes.json", json.dumps(ds_doc).encode())
    store.set("bad/0/0", right)  # a shard of N5 chunks [2, 4] read with the N5 chunk [4, 2] of the doc
    import altarr as aa

    # refused either by the block headers or, first, by the index entries: the doc's raw chunks have a fixed
    # size that the stored (compressed) chunks do not have
    with pytest.raises(AltarrError, match="does not fit|longer than the 20 bytes"):
        aa.open_dataset(store, path="bad")[...]


def test_sharding_chunk_shape_must_divide_the_block_size():
    doc = {
        "dataType": "uint8",
        "blockSize": [8, 8],
        "dimensions": [24, 24],
        "codecs": [
            {
                "name": "sharding_indexed",
                "configuration": {"chunk_shape": [3, 2], "codecs": ["n5bytes"], "index_codecs": ["bytes"]},
            }
        ],
    }
    with pytest.raises(GridError) as ei:
        parse_n5_attributes(doc, key="ds/attributes.json")
    assert ei.value.key == "ds/attributes.json"


@pytest.mark.parametrize(
    "doc, error, match",
    [
        ({"dataType": "uint8", "blockSize": [2]}, MetadataError, "dimensions"),
        ({"dataType": "uint8", "blockSize": [2], "dimensions": [4]}, MetadataError, "'compression'"),
        ({"dataType": "uint9", "compression": {"type": "raw"}, "blockSize": [2], "dimensions": [4]}, MetadataError, "uint9"),
        ({"dataType": "object", "compression": {"type": "raw"}, "blockSize": [2], "dimensions": [4]}, UnsupportedError, "object"),
        ({"dataType": "string", "compression": {"type": "raw"}, "blockSize": [2], "dimensions": [4]}, UnsupportedError, "string"),
        ({"dataType": "uint8", "compression": {"type": "zip"}, "blockSize": [2], "dimensions": [4]}, UnknownCodecError, "zip"),
        ({"dataType": "uint8", "compression": {"type": "raw"}, "blockSize": [2, 2], "dimensions": [4]}, MetadataError, "blockSize"),
        ({"dataType": "uint8", "compression": {"type": "raw"}, "blockSize": [0], "dimensions": [4]}, MetadataError, "blockSize"),
        ({"dataType": "uint8", "compression": {"type": "raw"}, "blockSize": [2], "dimensions": [-4]}, MetadataError, "dimensions"),
        ({"dataType": "uint8", "compression": {"type": "raw"}, "blockSize": [2], "dimensions": "4"}, MetadataError, "dimensions"),
        ({"dataType": "uint8", "codecs": [{"name": "zfp"}], "blockSize": [2], "dimensions": [4]}, UnknownCodecError, "zfp"),
        ({"dataType": "uint8", "codecs": [], "blockSize": [2], "dimensions": [4]}, MetadataError, "codecs"),
        ({"dataType": "uint8", "codecs": ["n5bytes", {"name": "lzw"}], "blockSize": [2], "dimensions": [4]}, UnknownCodecError, "lzw"),
    ],
)  # fmt: skip
def test_bad_metadata_names_the_key(doc, error, match):
    store = MemoryStore()
    store.set("attributes.json", b'{"n5":"4.0.0"}')
    store.set("a/ds/attributes.json", json.dumps(doc).encode())
    with pytest.raises(error, match=match) as ei:
        open_node(store, "a/ds", format="n5")
    assert ei.value.key == "a/ds/attributes.json"


def test_malformed_json_names_the_key():
    store = MemoryStore()
    store.set("ds/attributes.json", b'{"dataType": "uint8", ')
    with pytest.raises(MetadataError, match="malformed JSON") as ei:
        open_node(store, "ds", format="n5")
    assert ei.value.key == "ds/attributes.json"
    store.set("ds/attributes.json", b"[1, 2]")
    with pytest.raises(MetadataError, match="JSON object"):
        open_node(store, "ds", format="n5")


def test_missing_dataset_names_the_key():
    with pytest.raises(MetadataError, match="attributes.json is missing") as ei:
        N5.resize_array(MemoryStore(), "nothing/here", (1,))  # resizing an array deleted meanwhile
    assert ei.value.key == "nothing/here/attributes.json"


# --- writing ------------------------------------------------------------------------------------------------
def test_create_unsharded_writes_java_layout_and_root_version():
    store = MemoryStore()
    spec = N5.create_array(
        store,
        "g/ds",
        shape=(5, 7),
        dtype="int32",
        chunks=(4, 5),
        compressor="gzip",
        attributes={"unit": "nm"},
    )
    assert store.get("g/ds/attributes.json") == (
        b'{"dataType":"int32","compression":{"type":"gzip","useZlib":false,"level":6},'
        b'"blockSize":[5,4],"dimensions":[7,5],"unit":"nm"}'
    )
    assert _doc(store, "attributes.json") == {"n5": "4.0.0"}
    assert spec.shape == (5, 7) and spec.attributes == {"unit": "nm"}
    assert open_node(store, "g/ds", format="n5").spec.codecs == spec.codecs


@pytest.mark.parametrize(
    "compressor, expected",
    [
        (None, {"type": "raw"}),
        ("none", {"type": "raw"}),
        ("zstd", {"type": "zstd", "level": 3}),
        ("bzip2", {"type": "bzip2", "blockSize": 9}),
        ("xz", {"type": "xz", "preset": 6}),
        ("lz4", {"type": "lz4", "blockSize": 65536}),
        ("blosc", {"type": "blosc", "cname": "blosclz", "clevel": 6, "shuffle": 0, "blocksize": 0}),
        ({"type": "gzip", "level": 9, "useZlib": True}, {"type": "gzip", "level": 9, "useZlib": True}),
        ({"name": "xz", "configuration": {"preset": 1}}, {"type": "xz", "preset": 1}),
        (XzCompression(2), {"type": "xz", "preset": 2}),
    ],
)
def test_create_compressors(compressor, expected):
    store = MemoryStore()
    N5.create_array(store, "ds", shape=(4,), dtype="uint8", chunks=(2,), compressor=compressor)
    assert _doc(store, "ds/attributes.json")["compression"] == expected


def test_create_unknown_compressor():
    with pytest.raises(UnknownCodecError, match="snappy") as ei:
        N5.create_array(MemoryStore(), "ds", shape=(4,), dtype="uint8", chunks=(2,), compressor="snappy")
    assert ei.value.key == "ds/attributes.json"


def test_create_sharded_writes_java_codecs_and_outer_block_size():
    store = MemoryStore()
    spec = N5.create_array(
        store, "ds", shape=(24, 12), dtype="uint16", chunks=(2, 1), shards=(8, 4), compressor="gzip"
    )
    doc = _doc(store, "ds/attributes.json")
    assert doc == {
        "dataType": "uint16",
        "blockSize": [4, 8],
        "dimensions": [12, 24],
        "codecs": [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": [2, 1],  # NumPy order, as Java writes it
                    "index_codecs": [
                        {"name": "raw-bytes", "configuration": {"endian": "big"}},
                        {"name": "crc32c"},  # on by default
                    ],
                    "index_location": "end",
                    "codecs": [{"name": "n5bytes"}, {"name": "gzip", "configuration": {"level": 6}}],
                },
            }
        ],
    }
    assert "compression" not in doc  # legacy readers must not mistake shards for blocks
    assert spec.outer_chunks == (8, 4)
    assert spec.codecs.array_bytes.chunk_shape == (2, 1)
    assert open_node(store, "ds", format="n5").spec.codecs == spec.codecs
    # Java's index options and its legacy compression key
    N5.create_array(
        store,
        "java",
        shape=(24, 12),
        dtype="uint16",
        chunks=(2, 1),
        shards=(8, 4),
        compressor="raw",
        index_location="start",
        index_endian="little",
        index_crc32c=False,
        legacy_compression=True,
    )
    assert store.get("java/attributes.json") == (
        b'{"dataType":"uint16","compression":{"type":"raw"},"blockSize":[4,8],"dimensions":[12,24],'
        b'"codecs":[{"name":"sharding_indexed","configuration":{"chunk_shape":[2,1],"index_codecs":'
        b'[{"name":"raw-bytes","configuration":{"endian":"little"}}],"index_location":"start",'
        b'"codecs":[{"name":"n5bytes"}]}}]}'
    )
    sc = open_node(store, "java", format="n5").spec.codecs.array_bytes
    assert sc.index_location == "start" and sc.index_codecs.codecs == (BytesCodec("little"),)


@pytest.mark.parametrize(
    "options, match",
    [
        ({"index_location": "middle"}, "index_location"),
        ({"index_endian": "native"}, "index_endian"),
        ({"index_crc32c": 1}, "index_crc32c"),
        ({"legacy_compression": "yes"}, "legacy_compression"),
        ({"index_order": "C"}, "unknown N5 option"),
    ],
)
def test_create_sharded_bad_options(options, match):
    with pytest.raises(MetadataError, match=match) as ei:
        N5.create_array(MemoryStore(), "ds", shape=(8,), dtype="uint8", chunks=(2,), shards=(4,), **options)
    assert ei.value.key == "ds/attributes.json"


def test_shard_options_without_shards_are_refused():
    with pytest.raises(MetadataError, match="sharded N5 only"):
        N5.create_array(MemoryStore(), "ds", shape=(8,), dtype="uint8", chunks=(2,), index_crc32c=False)


def test_create_nested_shards():
    store = MemoryStore()
    spec = N5.create_array(
        store, "ds", shape=(24, 24, 24), dtype="int8", chunks=(3, 3, 3), shards=[(6, 6, 6), (24, 24, 24)]
    )
    doc = _doc(store, "ds/attributes.json")
    outer = doc["codecs"][0]["configuration"]
    inner = outer["codecs"][0]["configuration"]
    assert doc["blockSize"] == [24, 24, 24] and outer["chunk_shape"] == [6, 6, 6]
    assert inner["chunk_shape"] == [3, 3, 3]
    assert inner["codecs"] == [{"name": "n5bytes"}, {"name": "zstd", "configuration": {"level": 3}}]
    assert spec.codecs.array_bytes.codecs.array_bytes.chunk_shape == (3, 3, 3)
    with pytest.raises(GridError, match="not a multiple"):
        N5.create_array(store, "bad", shape=(24,), dtype="int8", chunks=(3,), shards=[(6,), (16,)])


def test_java_shard_test_sizes():
    # Java ShardTest.writeShardDataSizeTest: dims [24,24], shard [8,8], block [2,2], uint8, inner n5bytes +
    # raw, index bytes big-endian at the end: 4 blocks -> 320 bytes, 2 -> 288, 1 -> 272.
    store = MemoryStore()
    spec = N5.create_array(
        store,
        "ds",
        shape=(24, 24),
        dtype="uint8",
        chunks=(2, 2),
        shards=(8, 8),
        compressor="raw",
        index_crc32c=False,
    )
    sc = spec.codecs.array_bytes
    cps = sc.chunks_per_shard(spec.outer_chunks)
    assert cps == (4, 4)
    block = bytes(sc.codecs.encode(np.full((2, 2), 7, dtype="uint8")))
    assert block == bytes.fromhex("0000 0002 00000002 00000002") + b"\x07" * 4
    for n, size in [(4, 320), (2, 288), (1, 272)]:
        chunks = [block if i < n else None for i in range(16)]
        shard = sc.assemble(chunks, cps)
        assert len(shard) == size
        index = struct.unpack(">32Q", shard[-256:])
        assert index[:2] == (0, 16)  # offset, nbytes of chunk (0, 0), big-endian
        assert index[-2:] == (2**64 - 1, 2**64 - 1)


def test_create_refusals():
    store = MemoryStore()
    with pytest.raises(UnsupportedError, match="no data type"):
        N5.create_array(store, "a", shape=(4,), dtype="bool", chunks=(2,))
    with pytest.raises(UnsupportedError, match="fill value"):
        N5.create_array(store, "a", shape=(4,), dtype="uint8", chunks=(2,), fill_value=3)
    with pytest.raises(UnsupportedError, match="dimension names"):
        N5.create_array(store, "a", shape=(4,), dtype="uint8", chunks=(2,), dimension_names=["x"])
    with pytest.raises(UnsupportedError, match="0-dimensional"):
        N5.create_array(store, "a", shape=(), dtype="uint8", chunks=())
    with pytest.raises(MetadataError, match="reserved"):
        N5.create_array(store, "a", shape=(4,), dtype="uint8", chunks=(2,), attributes={"dimensions": 1})
    with pytest.raises(GridError):
        N5.create_array(store, "a", shape=(4,), dtype="uint8", chunks=(2, 2))
    assert store.get("a/attributes.json") is None


def test_dataset_at_the_root_keeps_the_version():
    store = MemoryStore()
    spec = N5.create_array(store, "", shape=(4,), dtype="uint8", chunks=(2,), attributes={"a": 1})
    doc = _doc(store, "attributes.json")
    assert doc["n5"] == "4.0.0" and doc["dimensions"] == [4]
    assert spec.attributes == {"a": 1}
    assert N5.read_attributes(store, "") == {"a": 1}
    assert detect_format(store, "")[1] == "array"


# --- attributes and groups -------------------------------------------------------------------------------
def test_attributes_live_beside_the_dataset_keys():
    store = MemoryStore()
    N5.create_array(
        store, "ds", shape=(4,), dtype="uint8", chunks=(2,), compressor="raw", attributes={"x": 1}
    )
    assert N5.read_attributes(store, "ds") == {"x": 1}
    N5.write_attributes(store, "ds", {"y": [1, 2], "z": {"k": "v"}})
    doc = _doc(store, "ds/attributes.json")
    assert doc == {
        "dataType": "uint8",
        "compression": {"type": "raw"},
        "blockSize": [2],
        "dimensions": [4],
        "y": [1, 2],
        "z": {"k": "v"},
    }
    assert N5.read_attributes(store, "ds") == {"y": [1, 2], "z": {"k": "v"}}
    with pytest.raises(MetadataError, match="reserved"):
        N5.write_attributes(store, "ds", {"blockSize": 3})


def test_groups_and_root_version():
    store = MemoryStore()
    N5.create_group(store, "", {"title": "t"})
    assert _doc(store, "attributes.json") == {"n5": "4.0.0", "title": "t"}
    assert N5.read_attributes(store, "") == {"title": "t"}
    N5.write_attributes(store, "", {"title": "u"})
    assert _doc(store, "attributes.json") == {"n5": "4.0.0", "title": "u"}
    N5.create_group(store, "a/b", {"k": 1})
    assert _doc(store, "a/b/attributes.json") == {"k": 1}
    assert open_node(store, "a/b", parse=False).kind == open_node(store, "", parse=False).kind == "group"
    with pytest.raises(NodeNotFoundError):
        open_node(store, "a/c", parse=False)
    with pytest.raises(MetadataError, match="reserved"):
        N5.create_group(store, "", {"n5": "9"})


def test_group_creation_adds_the_version_to_an_existing_root():
    store = MemoryStore()
    store.set("attributes.json", b'{"owner":"me"}')
    N5.create_group(store, "sub")
    assert _doc(store, "attributes.json") == {"n5": "4.0.0", "owner": "me"}
    store.set("attributes.json", b'{"n5":"7.1.0"}')
    with pytest.raises(UnsupportedError, match="7.1.0"):
        N5.create_group(store, "sub2")
    with pytest.raises(UnsupportedError):
        N5.create_array(store, "ds", shape=(2,), dtype="uint8", chunks=(2,))


def test_old_versions_are_read():
    store = MemoryStore()
    for version in ("1.5.0", "2.5.1", "3.1.3", "4.0.0"):
        store.set("attributes.json", json.dumps({"n5": version}).encode())
        store.set(
            "raw/attributes.json",
            b'{"dataType":"uint8","compressionType":"raw","blockSize":[5,4],"dimensions":[7,5]}',
        )
        assert open_node(store, "raw", format="n5").spec.shape == (5, 7)


def test_default_value_is_the_fill_value():
    spec = parse_n5_attributes(
        {
            "dataType": "float32",
            "compression": {"type": "raw"},
            "blockSize": [2],
            "dimensions": [4],
            "defaultValue": 1.5,
        }
    )
    assert spec.fill_value == np.float32(1.5) and "defaultValue" not in spec.attributes


# --- exact errors: the message and the key of every refusal --------------------------------------------------
_BASE = {"dataType": "uint8", "compression": {"type": "raw"}, "blockSize": [2], "dimensions": [4]}
_KEY = "[key='g/a/attributes.json']"


def _sharded(**config):
    conf = {"chunk_shape": [1], "codecs": ["n5bytes"], "index_codecs": ["raw-bytes"], **config}
    return [{"name": "sharding_indexed", "configuration": conf}]


@pytest.mark.parametrize(
    "changes, error, message",
    [
        ({"dimensions": "x"}, MetadataError, "field 'dimensions' must be a list of integers, got 'x'"),
        ({"dimensions": []}, UnsupportedError, "0-dimensional N5 datasets are not supported"),
        ({"blockSize": [0]}, MetadataError, "field 'blockSize' must hold integers >= 1, got [0]"),
        ({"codecs": {}}, MetadataError, "field 'codecs' must be a non-empty list of codecs, got {}"),
        ({"compression": None, "compressionType": 5}, MetadataError, "field 'compressionType' must be a string"),
        ({"compression": None, "compressionType": "snappy"}, UnknownCodecError,
         "unknown N5 compression type 'snappy'; known: ['blosc', 'bzip2', 'gzip', 'lz4', 'raw', 'xz', 'zstd']"),
        ({"compression": None}, MetadataError, "N5 dataset attributes need 'compression' (or 'codecs')"),
        ({"codecs": [5]}, MetadataError, "field 'codecs': a codec must be an object with a string 'name', got 5"),
        ({"codecs": [[1]]}, MetadataError, "field 'codecs': a codec must be an object with a string 'name', got [1]"),
        ({"codecs": [{"name": "n5bytes", "configuration": [1]}]}, MetadataError,
         "field 'codecs': codec 'n5bytes' has a non-object 'configuration'"),
        ({"codecs": [{"name": "zz"}]}, UnknownCodecError,
         "field 'codecs': unknown N5 block codec 'zz' (expected n5bytes, raw-bytes, bytes or sharding_indexed)"),
        ({"codecs": [{"name": "sharding_indexed", "configuration": {"codecs": []}}]}, MetadataError,
         "field 'codecs': sharding_indexed needs 'chunk_shape'"),
        ({"codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [1], "codecs": []}}]},
         MetadataError, "field 'codecs': sharding_indexed needs 'index_codecs'"),
        ({"codecs": _sharded(chunk_shape=[0])}, MetadataError,
         "field 'codecs.sharding_indexed.chunk_shape' must hold integers >= 1, got [0]"),
        ({"codecs": _sharded(codecs=[])}, MetadataError,
         "field 'codecs.sharding_indexed.codecs' must be a non-empty list of codecs, got []"),
        ({"codecs": _sharded(codecs=[7])}, MetadataError,
         "field 'codecs.sharding_indexed.codecs': a codec must be an object with a string 'name', got 7"),
        ({"codecs": _sharded(index_codecs=[7])}, MetadataError,
         "field 'codecs.sharding_indexed.index_codecs': a codec must be an object with a string 'name', got 7"),
        ({"codecs": _sharded(index_location="middle")}, MetadataError,
         "codec 'sharding_indexed': field 'index_location' must be one of ['start', 'end'], got 'middle'"),
        ({"defaultValue": 300}, MetadataError, "field 'defaultValue': 300 does not fit uint8"),
        ({"defaultValue": -1}, MetadataError, "field 'defaultValue': -1 does not fit uint8"),
    ],
)  # fmt: skip
def test_bad_metadata_exact_message_and_key(changes, error, message):
    doc = {k: v for k, v in {**_BASE, **changes}.items() if v is not None}
    store = MemoryStore()
    store.set("attributes.json", b'{"n5":"4.0.0"}')
    store.set("g/a/attributes.json", json.dumps(doc).encode())
    for read in (
        lambda: open_node(store, "g/a", format="n5").spec,
        lambda: parse_n5_attributes(doc, key="g/a/attributes.json"),
    ):
        with pytest.raises(error) as ei:
            read()
        assert type(ei.value) is error
        assert str(ei.value).startswith(message + " [key='g/a/attributes.json'")
        assert ei.value.key == "g/a/attributes.json"


def test_unknown_block_codec_and_compression_name_the_codec():
    for changes, codec in [
        ({"codecs": [{"name": "zz"}]}, "zz"),
        ({"compression": {"type": "snappy"}}, "snappy"),
    ]:
        with pytest.raises(UnknownCodecError) as ei:
            parse_n5_attributes({**_BASE, **changes}, key="k")
        assert ei.value.codec == codec


@pytest.mark.parametrize(
    "version, error, message",
    [
        ("x.1", MetadataError, "field 'n5': malformed version 'x.1'"),
        (4, MetadataError, "field 'n5' must be a version string, got 4"),
        ("5.0.0", UnsupportedError, "N5 container version 5.0.0 is newer than the supported 4.0.0 (major version > 4)"),
    ],
)  # fmt: skip
def test_bad_container_version_exact_message_names_the_root(version, error, message):
    store = MemoryStore()
    store.set("attributes.json", json.dumps({"n5": version}).encode())
    store.set("g/a/attributes.json", json.dumps(_BASE).encode())
    store.set("g/attributes.json", b"{}")
    for op in (
        lambda: open_node(store, "g/a", format="n5").spec,
        lambda: open_node(store, "g", parse=False),
        lambda: detect_format(store, "g/a"),
    ):
        with pytest.raises(error) as ei:
            op()
        assert type(ei.value) is error
        assert str(ei.value) == f"{message} [key='attributes.json']"


def test_missing_dataset_exact_message():
    with pytest.raises(MetadataError) as ei:
        N5.resize_array(MemoryStore(), "g/a", (1,))
    assert str(ei.value) == "no N5 dataset here (attributes.json is missing) [key='g/a/attributes.json']"


def test_legacy_compression_type_string_is_read():
    doc = {"dataType": "uint16", "compressionType": "gzip", "blockSize": [2], "dimensions": [4]}
    spec = parse_n5_attributes(doc)
    assert spec.codecs.array_bytes == N5BlockCodec(GzipCompression())


def test_n5_version_is_a_user_attribute_below_the_root_only():
    doc = {**_BASE, "n5": "note", "x": 1}
    assert parse_n5_attributes(doc).attributes == {"n5": "note", "x": 1}  # default: not the root
    assert parse_n5_attributes(doc, root=False).attributes == {"n5": "note", "x": 1}
    assert parse_n5_attributes(doc, root=True).attributes == {"x": 1}
    store = MemoryStore()
    store.set("attributes.json", json.dumps({**_BASE, "n5": "4.0.0", "x": 1}).encode())
    store.set("g/attributes.json", json.dumps(doc).encode())
    assert open_node(store, "", format="n5").spec.attributes == {"x": 1}
    assert open_node(store, "g", format="n5").spec.attributes == {"n5": "note", "x": 1}


def test_spec_keeps_the_document_it_was_read_from():
    store = MemoryStore()
    store.set("g/attributes.json", json.dumps({**_BASE, "x": 1}).encode())
    spec = open_node(store, "g", format="n5").spec
    assert spec.metadata == {"attributes.json": {**_BASE, "x": 1}}
    assert spec.dimension_names is None


@pytest.mark.parametrize("value", [True, "7", None, [1], {"v": 1}])
def test_non_numeric_default_value_reads_as_zero(value):
    for data_type in ("uint8", "float32"):
        spec = parse_n5_attributes({**_BASE, "dataType": data_type, "defaultValue": value})
        assert spec.fill_value == 0 and not np.isnan(spec.fill_value)
        assert spec.fill_value.dtype == np.dtype(data_type)


def test_default_value_beyond_float32_reads_as_infinity_without_a_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spec = parse_n5_attributes({**_BASE, "dataType": "float32", "defaultValue": -1e300})
    assert spec.fill_value == np.float32(-np.inf)


def test_raw_bytes_without_an_endian_is_refused_for_multi_byte_types():
    codecs = [{"name": "raw-bytes", "configuration": {"endian": None}}]
    doc = {"dataType": "uint16", "codecs": codecs, "blockSize": [2], "dimensions": [4]}
    with pytest.raises(MetadataError) as ei:
        parse_n5_attributes(doc, key="g/a/attributes.json")
    assert str(ei.value) == (
        "codec 'bytes': field 'endian' is required for the multi-byte data type uint16 "
        "[key='g/a/attributes.json', codec='bytes']"
    )
    assert parse_n5_attributes({**doc, "dataType": "uint8"}).dtype == np.dtype("uint8")  # one byte: no order


@pytest.mark.parametrize(
    "name, expected",
    [
        ("zstd", {"type": "zstd", "level": 4}),
        ("gzip", {"type": "gzip", "level": 4, "useZlib": False}),
        ("blosc", {"type": "blosc", "cname": "zlib", "clevel": 4, "shuffle": 1, "blocksize": 0}),
    ],
)
def test_n5_compression_objects_are_written_as_given(name, expected):
    store = MemoryStore()
    N5.create_array(store, "a", shape=(4,), dtype="float32", chunks=(2,), compressor=expected)
    assert _doc(store, "a/attributes.json")["compression"] == expected


def test_codecs_json_lists_n5bytes_and_the_compression_or_the_sharded_chain():
    store = MemoryStore()
    spec = N5.create_array(store, "a", shape=(4,), dtype="uint16", chunks=(2,), compressor="gzip")
    assert N5.codecs_json(spec) == [{"name": "n5bytes"}, {"name": "gzip", "configuration": {"level": 6}}]
    spec = N5.create_array(store, "s", shape=(4,), dtype="uint16", chunks=(2,), shards=(4,), compressor="raw")
    assert N5.codecs_json(spec) == spec.codecs.to_json()
    assert [c["name"] for c in N5.codecs_json(spec)] == ["sharding_indexed"]


# --- compressor arguments ----------------------------------------------------------------------------------
def test_compressor_arguments_that_are_no_n5_compression_are_refused_word_for_word():
    from altarr.formats.n5 import n5_compression

    with pytest.raises(MetadataError) as ei:
        n5_compression({"name": "crc32c"})  # an N5 4.x data codec, but not a compression
    assert str(ei.value) == "{'name': 'crc32c'} is not an N5 compression"
    for bad in (42, ["name"]):
        with pytest.raises(MetadataError) as ei:
            n5_compression(bad)
        assert str(ei.value) == f"compressor must be an N5 compression name or object, got {bad!r}"
    with pytest.raises(MetadataError) as ei:
        N5.create_array(MemoryStore(), "ds", shape=(4,), dtype="uint8", chunks=(2,), compressor=42)
    assert str(ei.value) == (
        "compressor must be an N5 compression name or object, got 42 [key='ds/attributes.json']"
    )


# --- create_array: every refusal word for word with its key ---------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"dtype": "not-a-dtype"}, MetadataError, "invalid dtype 'not-a-dtype'"),
        ({"shape": (-1,)}, MetadataError, "field 'shape' must hold integers >= 0, got [-1]"),
        ({"shape": (), "chunks": ()}, UnsupportedError, "0-dimensional N5 datasets are not supported"),
        ({"fill_value": 3}, UnsupportedError,
         "N5 has no fill value (missing blocks read as 0); fill_value=3 cannot be stored"),
        ({"index_crc32c": False}, MetadataError,
         "option(s) ['index_crc32c'] apply to sharded N5 only (no shards given)"),
        ({"dimension_names": ["x"]}, UnsupportedError, "N5 has no dimension names"),
        ({"attributes": {"dimensions": 1}}, MetadataError,
         "attribute name(s) ['dimensions'] are reserved by the N5 format"),
        ({"attributes": {"x": object}}, MetadataError,
         "metadata is not JSON-serializable: Object of type type is not JSON serializable"),
    ],
)  # fmt: skip
def test_create_refusals_exact_message_and_key(kwargs, error, message):
    store = MemoryStore()
    args = {"shape": (4,), "dtype": "uint8", "chunks": (2,), **kwargs}
    with pytest.raises(error) as ei:
        N5.create_array(store, "g/ds", **args)
    assert type(ei.value) is error
    assert str(ei.value) == f"{message} [key='g/ds/attributes.json']"
    assert store.get("g/ds/attributes.json") is None


def test_create_chunks_of_another_rank_names_the_key():
    with pytest.raises(GridError) as ei:
        N5.create_array(MemoryStore(), "g/ds", shape=(4,), dtype="uint8", chunks=(2, 2))
    assert ei.value.key == "g/ds/attributes.json"


def test_a_compression_altarr_cannot_read_back_is_refused_before_the_dataset_is_written():
    from altarr.codecs.n5_compressions import N5Compression

    class Unregistered(N5Compression):  # a user's compression never registered with altarr
        name = "not-registered"

        def encode(self, data):
            return data

        def decode(self, data):
            return data

    store = MemoryStore()
    with pytest.raises(UnknownCodecError) as ei:
        N5.create_array(store, "g/ds", shape=(4,), dtype="uint8", chunks=(2,), compressor=Unregistered())
    assert ei.value.key == "g/ds/attributes.json" and ei.value.codec == "not-registered"
    assert store.get("g/ds/attributes.json") is None


def test_creating_at_the_root_checks_the_container_version_and_reserves_n5():
    store = MemoryStore()
    store.set("attributes.json", b'{"n5":"7.1.0"}')
    with pytest.raises(UnsupportedError) as ei:
        N5.create_array(store, "", shape=(4,), dtype="uint8", chunks=(2,))
    assert ei.value.key == "attributes.json"
    with pytest.raises(UnsupportedError) as ei:
        N5.create_array(store, "ds", shape=(4,), dtype="uint8", chunks=(2,))
    assert ei.value.key == "attributes.json"
    assert store.get("attributes.json") == b'{"n5":"7.1.0"}'
    with pytest.raises(MetadataError) as ei:
        N5.create_array(MemoryStore(), "", shape=(4,), dtype="uint8", chunks=(2,), attributes={"n5": "9"})
    assert str(ei.value) == "attribute name(s) ['n5'] are reserved by the N5 format [key='attributes.json']"
    # below the root "n5" is an ordinary attribute
    spec = N5.create_array(
        store := MemoryStore(), "ds", shape=(4,), dtype="uint8", chunks=(2,), attributes={"n5": "x"}
    )
    assert spec.attributes == {"n5": "x"} and _doc(store, "ds/attributes.json")["n5"] == "x"


def test_an_unreadable_attributes_json_at_the_node_is_refused_not_overwritten():
    for create in (
        lambda store: N5.create_array(store, "g", shape=(4,), dtype="uint8", chunks=(2,)),
        lambda store: N5.create_group(store, "g"),
    ):
        store = MemoryStore()
        store.set("g/attributes.json", b"{")
        with pytest.raises(MetadataError, match="malformed JSON") as ei:
            create(store)
        assert ei.value.key == "g/attributes.json"
        assert store.get("g/attributes.json") == b"{"


# --- the root document ---------------------------------------------------------------------------------------
def test_the_root_version_is_added_as_compact_json():
    store = MemoryStore()
    store.set("attributes.json", b'{\n  "owner": "me"\n}')
    N5.create_array(store, "ds", shape=(4,), dtype="uint8", chunks=(2,))
    assert store.get("attributes.json") == b'{"n5":"4.0.0","owner":"me"}'
    store = MemoryStore()
    N5.create_group(store, "g")
    assert store.get("attributes.json") == b'{"n5":"4.0.0"}'


def test_the_root_metadata_is_fetched_once():
    store = CountingStore()
    store.set("attributes.json", b'{"n5":"4.0.0"}')
    assert open_node(store, "", parse=False, format="n5").kind == "group"
    assert store.batches == [["attributes.json"]]
    store.batches.clear()
    with pytest.raises(NodeNotFoundError):
        open_node(store, "g", parse=False, format="n5")
    assert store.batches == [["g/attributes.json", "attributes.json"]]


# --- groups --------------------------------------------------------------------------------------------------
def test_a_group_with_a_data_type_is_a_group_as_bigdataviewer_writes_its_setups():
    # BigDataViewer's N5 export: setup0/attributes.json {"downsamplingFactors": [[1,1,1],[2,2,2]], "dataType": "uint8"}
    store = MemoryStore()
    N5.create_group(store, "", None)
    setup = {"downsamplingFactors": [[1, 1, 1], [2, 2, 2]], "dataType": "uint8"}
    store.set("setup0/attributes.json", json.dumps(setup).encode())
    assert detect_format(store, "setup0")[1] == "group"
    assert N5.read_attributes(store, "setup0") == setup
    N5.write_attributes(store, "setup0", {**setup, "dataType": "uint16"})
    assert json.loads(store.get("setup0/attributes.json"))["dataType"] == "uint16"
    N5.create_group(store, "setup1", setup)
    assert detect_format(store, "setup1")[1] == "group"
    # on a dataset dataType stays the format's, and a partial dataset document is still a broken dataset
    N5.create_array(store, "ds", shape=(4,), dtype="uint8", chunks=(2,))
    with pytest.raises(MetadataError, match=r"\['dataType'\] are reserved"):
        N5.write_attributes(store, "ds", {"dataType": "int8"})
    store.set("bad/attributes.json", b'{"dataType": "uint8", "blockSize": [2]}')
    with pytest.raises(MetadataError, match="dimensions"):
        open_node(store, "bad", format="n5")


def test_create_group_writes_compact_json_and_names_the_key():
    store = MemoryStore()
    N5.create_group(store, "", {"title": "t"})
    assert store.get("attributes.json") == b'{"n5":"4.0.0","title":"t"}'
    N5.create_group(store, "a/b", {"k": 1, "n5": "below the root: a user attribute"})
    assert store.get("a/b/attributes.json") == b'{"k":1,"n5":"below the root: a user attribute"}'
    for prefix, attrs, message in [
        ("", {"n5": "9"}, "attribute name(s) ['n5'] are reserved by the N5 format"),
        ("a", {"codecs": 1}, "attribute name(s) ['codecs'] are reserved by the N5 format"),
        (
            "",
            {"x": object},
            "metadata is not JSON-serializable: Object of type type is not JSON serializable",
        ),
        (
            "a",
            {"x": object},
            "metadata is not JSON-serializable: Object of type type is not JSON serializable",
        ),
    ]:
        _refused_naming_the_key(N5.create_group, store, prefix, attrs, message)


def _refused_naming_the_key(call, store, prefix: str, attrs: dict, message: str) -> None:
    """``call(store, prefix, attrs)`` raises a MetadataError worded ``message`` naming the node's
    attributes.json."""
    with pytest.raises(MetadataError) as ei:
        call(store, prefix, attrs)
    key = f"{prefix}/attributes.json" if prefix else "attributes.json"
    assert str(ei.value) == f"{message} [key={key!r}]"


def test_creating_the_root_group_checks_the_existing_root():
    store = MemoryStore()
    store.set("attributes.json", b'{"n5":"7.1.0"}')
    with pytest.raises(UnsupportedError) as ei:
        N5.create_group(store, "")
    assert str(ei.value) == (
        "N5 container version 7.1.0 is newer than the supported 4.0.0 (major version > 4) [key='attributes.json']"
    )
    store.set("attributes.json", b"{")
    with pytest.raises(MetadataError, match="malformed JSON") as ei:
        N5.create_group(store, "")
    assert ei.value.key == "attributes.json"
    store.set("attributes.json", b'{"n5":"2.5.1","old":1}')
    N5.create_group(store, "", {"new": 2})  # an older container is rewritten with the current version
    assert store.get("attributes.json") == b'{"n5":"4.0.0","new":2}'


# --- attributes ----------------------------------------------------------------------------------------------
def test_read_attributes_of_a_missing_root_exact_message():
    with pytest.raises(MetadataError) as ei:
        N5.read_attributes(MemoryStore(), "")
    assert type(ei.value) is NodeNotFoundError and isinstance(ei.value, FileNotFoundError)
    assert str(ei.value) == "no N5 container here (attributes.json is missing) [key='attributes.json']"


def test_a_group_keeps_dataset_key_names_as_user_attributes():
    # a group (no dimensions/blockSize/dataType) written by another tool may use "compression" freely
    store = MemoryStore()
    store.set("g/attributes.json", b'{"compression":"by hand","title":"t"}')
    assert N5.read_attributes(store, "g") == {"compression": "by hand", "title": "t"}
    N5.write_attributes(store, "g", {"title": "u"})
    assert store.get("g/attributes.json") == b'{"title":"u"}'


def test_write_attributes_writes_compact_json_and_names_the_key():
    store = MemoryStore()
    N5.create_array(store, "ds", shape=(4,), dtype="uint8", chunks=(2,), compressor="raw")
    N5.write_attributes(store, "ds", {"y": [1, 2], "n5": "below the root: a user attribute"})
    assert store.get("ds/attributes.json") == (
        b'{"dataType":"uint8","compression":{"type":"raw"},"blockSize":[2],"dimensions":[4],'
        b'"y":[1,2],"n5":"below the root: a user attribute"}'
    )
    for prefix, attrs, message in [
        ("", {"n5": "9"}, "attribute name(s) ['n5'] are reserved by the N5 format"),
        ("ds", {"blockSize": 3}, "attribute name(s) ['blockSize'] are reserved by the N5 format"),
        (
            "ds",
            {"x": object},
            "metadata is not JSON-serializable: Object of type type is not JSON serializable",
        ),
    ]:
        _refused_naming_the_key(N5.write_attributes, store, prefix, attrs, message)
    assert store.get("attributes.json") == b'{"n5":"4.0.0"}'


# --- detection -----------------------------------------------------------------------------------------------
def test_detection_without_parsing_does_not_validate_the_dataset():
    from altarr.formats import open_node

    store = MemoryStore()
    store.set("ds/attributes.json", json.dumps({**_BASE, "compression": {"type": "snappy"}}).encode())
    assert detect_format(store, "ds") == (N5, "array")
    node = open_node(store, "ds", parse=False)
    assert node.kind == "array" and node.spec is None
    with pytest.raises(UnknownCodecError) as ei:
        open_node(store, "ds")
    assert ei.value.key == "ds/attributes.json"


def test_detection_parses_a_dataset_below_the_root_as_such():
    from altarr.formats import open_node

    store = MemoryStore()
    store.set("attributes.json", b'{"n5":"4.0.0"}')
    store.set("ds/attributes.json", json.dumps({**_BASE, "n5": "note"}).encode())
    assert open_node(store, "ds").spec.attributes == {"n5": "note"}


def test_a_bare_directory_below_an_n5_root_is_an_n5_group_after_the_version_check():
    store = MemoryStore()
    store.set("attributes.json", b'{"n5":"4.0.0"}')
    store.set("a/0/0", b"x")
    fmt, kind = detect_format(store, "a")
    assert fmt is N5 and kind == "group"
    store.set("attributes.json", b'{"n5":"7.1.0"}')
    with pytest.raises(UnsupportedError) as ei:
        detect_format(store, "a")
    assert ei.value.key == "attributes.json"
