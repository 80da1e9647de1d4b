"""Hostile metadata (issue 11): documents that used to raise RecursionError, OverflowError, TypeError,
ValueError or MemoryError from open, reads, writes, lazy arrays and verify now raise altarr.errors
exceptions naming the metadata key (verify reports them as problems)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import altarr as aa
from altarr.errors import AltarrError, GridError, MetadataError
from altarr.formats import get_format
from altarr.formats._common import check_spec_limits, parse_json
from altarr.stores import MemoryStore

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
INDEX = [BYTES, {"name": "crc32c"}]


def _z3(**over):
    d = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [8, 8],
        "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [BYTES],
    }
    d.update(over)
    return json.dumps(d)


def _grid(shape):
    return {"name": "regular", "configuration": {"chunk_shape": shape}}


def _nested(levels):
    codecs = [BYTES]
    for _ in range(levels):
        codecs = [
            {
                "name": "sharding_indexed",
                "configuration": {"chunk_shape": [4, 4], "codecs": codecs, "index_codecs": INDEX},
            }
        ]
    return codecs


def _z2(**over):
    d = {"zarr_format": 2, "shape": [8, 8], "chunks": [4, 4], "dtype": "<u2", "compressor": None}
    d.update({"fill_value": 0, "filters": None, "order": "C"}, **over)
    return json.dumps(d)


def _n5(**over):
    d = {"dimensions": [8, 8], "blockSize": [4, 4], "dataType": "uint16", "compression": {"type": "raw"}}
    d.update(over)
    return json.dumps(d)


DEEP = "[" * 100_000 + "]" * 100_000
BIG = "1" + "0" * 400  # 10**400 as a JSON integer

DOCS = {
    "deep JSON": ("zarr.json", '{"zarr_format": 3, "node_type": "array", "attributes": {"a": ' + DEEP + "}}"),
    "deep JSON (N5)": ("attributes.json", '{"dimensions": [8], "blockSize": [4], "x": ' + DEEP + "}"),
    "deep filters (v2)": (
        ".zarray",
        _z2().replace('"filters": null', f'"filters": [{"[" * 2000 + "]" * 2000}]'),
    ),
    "attributes 300 deep": ("zarr.json", _z3(attributes={"a": json.loads("[" * 300 + "]" * 300)})),
    "200 sharding levels": ("zarr.json", _z3(codecs=_nested(200))),
    "20 sharding levels": ("zarr.json", _z3(codecs=_nested(20))),
    "float32 fill 10**400": (
        "zarr.json",
        _z3(data_type="float32").replace('"fill_value": 0', f'"fill_value": {BIG}'),
    ),
    "float32 fill 1e300": (
        "zarr.json",
        _z3(data_type="float32").replace('"fill_value": 0', '"fill_value": 1e300'),
    ),
    "complex fill 10**400": (
        "zarr.json",
        _z3(data_type="complex64").replace('"fill_value": 0', f'"fill_value": [1e400, {BIG}]'),
    ),
    "shape 10**30": ("zarr.json", _z3(shape=[10**30, 8])),
    "shape 2**62 x 2**62": ("zarr.json", _z3(shape=[2**62, 2**62])),
    "chunk 10**30": ("zarr.json", _z3(chunk_grid=_grid([10**30, 4]))),
    "chunk 2**40 elements": ("zarr.json", _z3(shape=[2**40, 8], chunk_grid=_grid([2**40, 1]))),
    "dtype r8796093022208": ("zarr.json", _z3(data_type="r8796093022208", fill_value=[0])),
    "rank 100": ("zarr.json", _z3(shape=[1] * 100, chunk_grid=_grid([1] * 100))),
    "2**40 chunks per shard": (
        "zarr.json",
        _z3(
            shape=[2**21, 2**21],
            chunk_grid=_grid([2**20, 2**20]),
            codecs=[
                {
                    "name": "sharding_indexed",
                    "configuration": {"chunk_shape": [1, 1], "codecs": [BYTES], "index_codecs": INDEX},
                }
            ],
        ),
    ),
    "v2 shape 10**30": (".zarray", _z2(shape=[10**30, 8])),
    "v2 chunk 2**40": (".zarray", _z2(shape=[2**40, 8], chunks=[2**40, 1])),
    "v2 float fill 10**400": (".zarray", _z2(dtype="<f4").replace('"fill_value": 0', f'"fill_value": {BIG}')),
    "v2 dtype V2**40": (".zarray", _z2(dtype="|V" + str(2**40))),
    "v2 rank 100": (".zarray", _z2(shape=[1] * 100, chunks=[1] * 100)),
    "N5 dimensions 10**30": ("attributes.json", _n5(dimensions=[10**30, 8])),
    "N5 block 2**40": ("attributes.json", _n5(dimensions=[8, 2**40], blockSize=[1, 2**40])),
    "N5 rank 100": ("attributes.json", _n5(dimensions=[1] * 100, blockSize=[1] * 100)),
    "not UTF-8": ("zarr.json", b"\xff\xfe{}"),
}

OPS = ["open", "region", "chunks", "write", "lazy"]


def _write(tmp_path, name):
    fname, text = DOCS[name]
    path = tmp_path / "a"
    os.makedirs(path)
    (path / fname).write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path), fname


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("name", list(DOCS))
def test_hostile_document_raises_altarr_error_naming_the_key(tmp_path, name, op):
    path, fname = _write(tmp_path, name)
    with pytest.raises(AltarrError) as info:
        if op == "open":
            aa.open_dataset(path)
        elif op == "region":
            aa.open_dataset(path)[...]
        elif op == "chunks":
            aa.open_dataset(path).read_chunks([(0, 0)])
        elif op == "write":
            aa.open_dataset(path, mode="r+")[...] = 1
        else:
            np.asarray(aa.open(path))
    assert isinstance(info.value, MetadataError | aa.errors.UnsupportedError | aa.errors.GridError)
    assert info.value.key in (fname, "/", ""), info.value  # the document (or the node) is named


@pytest.mark.parametrize("name", list(DOCS))
def test_verify_reports_hostile_documents(tmp_path, name):
    path, fname = _write(tmp_path, name)
    report = aa.verify(path)
    assert not report.ok
    assert [p.kind for p in report.problems] == ["metadata"], str(report)
    assert report.problems[0].key in (fname, "/")


def test_limits_leave_ordinary_arrays_alone(tmp_path):
    """A large sparse array (2**40 x 2**20, 1 MiB chunks, 16 levels of nothing) opens and reads."""
    ds = aa.create_dataset(str(tmp_path / "big"), shape=(2**40, 2**20), dtype="u1", chunks=(1024, 1024))
    ds[2**40 - 1, 2**20 - 1] = 5
    assert ds[2**40 - 2 :, 2**20 - 1].tolist() == [0, 5]
    assert aa.verify(str(tmp_path / "big")).checked["chunks"] == 1


def _nested_doc(depth: int) -> bytes:
    """A JSON object ``depth`` levels deep (the object itself is the first level)."""
    return ('{"a": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}").encode()


def test_metadata_json_may_nest_128_levels_and_no_more():
    assert parse_json(_nested_doc(128), "zarr.json")["a"] is not None
    too_deep = "malformed JSON in metadata document: nested deeper than 128 levels [key='zarr.json']"
    with pytest.raises(MetadataError) as info:
        parse_json(_nested_doc(129), "zarr.json")
    assert str(info.value) == too_deep
    with pytest.raises(MetadataError) as info:  # deep enough to overflow the JSON parser itself
        parse_json(DEEP.encode(), "zarr.json")
    assert str(info.value) == too_deep
    with pytest.raises(MetadataError) as info:
        parse_json(b"[1]", "g/zarr.json")
    assert str(info.value) == "metadata document must be a JSON object, got list [key='g/zarr.json']"


def _refusal(shape, levels, dtype="u1") -> str | None:
    try:
        check_spec_limits(shape, levels, np.dtype(dtype), key="zarr.json")
    except MetadataError as e:
        return str(e)
    return None


def test_spec_limits_hold_exactly_at_their_bounds():
    """Rank 64, 2**62 elements, 16 GiB chunks and 2**24 chunks per shard pass; one more is refused."""
    assert _refusal((1,) * 64, [(1,) * 64]) is None
    assert _refusal((1,) * 65, [(1,) * 65]) == (
        "field 'shape': 65 dimensions, more than the 64 NumPy supports [key='zarr.json']"
    )
    assert _refusal((2**62,), [(2**30,)]) is None
    assert _refusal((2**62 + 1,), [(2**30,)]) == (
        "field 'shape': 4611686018427387905 elements, more than the 2**62 altarr supports [key='zarr.json']"
    )
    assert _refusal((2**34,), [(2**34,)]) is None
    assert _refusal((2**31,), [(2**31,)], "f8") is None
    assert _refusal((2**32,), [(2**32,)], "f8") == (
        "chunk shape [4294967296] of float64 is 34359738368 bytes, more than the 17179869184 bytes (16 GiB) "
        "a chunk may have [key='zarr.json']"
    )
    assert _refusal((2**24,), [(1,), (2**24,)]) is None
    assert _refusal((2**24 + 1,), [(1,), (2**24 + 1,)]) == (
        "shard shape [16777217] holds 16777217 blocks of [1], more than the 16777216 a shard index may "
        "have [key='zarr.json']"
    )


def test_metadata_that_json_cannot_hold_is_refused_naming_the_document():
    for fmt, key in [("zarr3", "a/zarr.json"), ("n5", "a/attributes.json")]:
        with pytest.raises(MetadataError) as info:
            get_format(fmt).create_array(
                MemoryStore(), "a", shape=(2,), dtype="u1", chunks=(1,), attributes={"s": {1}}
            )
        assert str(info.value) == (
            f"metadata is not JSON-serializable: Object of type set is not JSON serializable [key='{key}']"
        )


@pytest.mark.parametrize(
    ("chunks", "shards", "message"),
    [
        ((0,), None, "chunks must be 1 positive integers (one per dimension), got (0,)"),
        (("x",), None, "chunks must be a sequence of integers, got ('x',)"),
        ((2.5,), None, "chunks must be 1 positive integers (one per dimension), got (2.5,)"),
        ((1,), [], "'shards' must be a shape or a non-empty list of shapes"),
        ((1,), (0,), "shards must be 1 positive integers (one per dimension), got [0]"),
        ((1,), [(2,), (0,)], "shards[1] must be 1 positive integers (one per dimension), got (0,)"),
        ((1,), [(2,), ("x",)], "shards[1] must be a sequence of integers, got ('x',)"),
    ],
)
def test_bad_chunk_and_shard_shapes_are_refused_by_name(chunks, shards, message):
    with pytest.raises(GridError) as info:
        get_format("zarr3").create_array(
            MemoryStore(), "a", shape=(4,), dtype="u1", chunks=chunks, shards=shards
        )
    assert str(info.value) == f"{message} [key='a/zarr.json']"


def test_chunk_shapes_may_be_whole_floats_and_integers_beyond_float_precision():
    z3 = get_format("zarr3")
    assert z3.create_array(MemoryStore(), "a", shape=(4,), dtype="u1", chunks=(2.0,)).outer_chunks == (2,)
    big = 2**53 + 1  # not a float exactly: only its integer test accepts it
    assert z3.create_array(MemoryStore(), "a", shape=(4,), dtype="u1", chunks=(big,)).outer_chunks == (big,)
    huge = 10**400  # beyond float64 altogether
    assert z3.create_array(MemoryStore(), "a", shape=(4,), dtype="u1", chunks=(huge,)).outer_chunks == (huge,)


def test_each_array_document_owns_its_shard_index_codecs():
    """Editing one written document's index codecs changes neither its other level nor the next array's."""
    z3 = get_format("zarr3")
    spec = z3.create_array(MemoryStore(), "a", shape=(8,), dtype="u1", chunks=(2,), shards=[(4,), (8,)])
    outer = spec.metadata["zarr.json"]["codecs"][0]["configuration"]
    inner = outer["codecs"][0]["configuration"]
    outer["index_codecs"][0]["configuration"]["endian"] = "big"
    little = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]
    assert inner["index_codecs"] == little
    again = z3.create_array(MemoryStore(), "b", shape=(8,), dtype="u1", chunks=(2,), shards=(8,))
    assert again.metadata["zarr.json"]["codecs"][0]["configuration"]["index_codecs"] == little


class ShortStore(MemoryStore):
    """A store that answers one value fewer than it was asked for (a broken store plug-in)."""

    def get_ranges(self, requests):
        return super().get_ranges(requests)[:-1]


def test_a_store_answering_too_few_documents_is_not_read_as_absent_documents():
    store = ShortStore()
    get_format("zarr2").create_array(store, "a", shape=(2,), dtype="u1", chunks=(1,), attributes={"x": 1})
    with pytest.raises(ValueError, match="^zip\\(\\) argument 2 is shorter than argument 1$"):
        get_format("zarr2").read_attributes(store, "a")  # not {'x': 1} with .zgroup taken as absent
