"""Hostile metadata (issue 11): documents that used to raise RecursionError, OverflowError, TypeError,
ValueError or MemoryError from open, reads, writes, lazy arrays and verify now raise altarr.errors
exceptions naming the metadata key (verify reports them as problems)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import altarr as aa
from altarr.errors import AltarrError, MetadataError

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
