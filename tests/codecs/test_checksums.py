"""Checksums (issue 11 item 6, issue 32): Zarr v3 shard indexes carry a crc32c by default, and so does
every chunk (``checksum=True``, the default: zstd's frame checksum, else a crc32c codec in the chain); zarr-python and tensorstore read both, and a flipped byte
anywhere in a chunk's stored bytes is a ChecksumError naming key and chunk (without a checksum, a flip
in a raw chunk would silently change a value)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import tensorstore as ts
import zarr

import altarr as aa
from altarr.errors import ChecksumError


@pytest.mark.parametrize("shards", [None, (8, 8)])
@pytest.mark.parametrize("compressor", [None, "zstd", "blosc"])
def test_checksum_option_is_read_by_peers(tmp_path, shards, compressor):
    path = str(tmp_path / "a.zarr")
    a = np.arange(256, dtype="int32").reshape(16, 16)
    ds = aa.create_dataset(
        path, shape=a.shape, dtype=a.dtype, chunks=(4, 4), shards=shards, compressor=compressor, checksum=True
    )
    ds[...] = a
    doc = json.load(open(os.path.join(path, "zarr.json")))
    chain = doc["codecs"] if shards is None else doc["codecs"][0]["configuration"]["codecs"]
    if compressor == "zstd":  # zstd carries its own frame checksum
        assert chain[-1] == {"name": "zstd", "configuration": {"level": 3, "checksum": True}}
    else:
        assert chain[-1] == {"name": "crc32c"}
    if shards is not None:  # the index is checksummed by default
        assert doc["codecs"][0]["configuration"]["index_codecs"][-1] == {"name": "crc32c"}
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[...], a)
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}).result()
    np.testing.assert_array_equal(t.read().result(), a)


def test_default_index_and_chunks_are_checksummed(tmp_path):
    """The default zstd chunks carry zstd's frame checksum (no crc32c codec: it would cost the native
    kernel's path, see benchmarks/bench_engine.py --checksums); zarr-python and tensorstore read them."""
    path = str(tmp_path / "a.zarr")
    a = np.arange(8, dtype="u1")
    aa.create_dataset(path, shape=(8,), dtype="u1", chunks=(2,), shards=(4,))[...] = a
    doc = json.load(open(os.path.join(path, "zarr.json")))
    cfg = doc["codecs"][0]["configuration"]
    assert cfg["index_codecs"][-1] == {"name": "crc32c"}
    assert cfg["codecs"][1:] == [{"name": "zstd", "configuration": {"level": 3, "checksum": True}}]
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[...], a)
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}).result()
    np.testing.assert_array_equal(t.read().result(), a)


@pytest.mark.parametrize("shards", [None, (8, 8)])
def test_flipped_byte_in_raw_chunk_is_caught_only_with_checksum(tmp_path, shards):
    a = np.arange(256, dtype="uint16").reshape(16, 16)
    results = {}
    for checksum in (False, True):
        path = str(tmp_path / f"c{checksum}")
        ds = aa.create_dataset(
            path,
            shape=a.shape,
            dtype=a.dtype,
            chunks=(4, 4),
            shards=shards,
            compressor=None,
            checksum=checksum,
        )
        ds[...] = a
        key = os.path.join(path, "c", "0", "0")
        raw = bytearray(open(key, "rb").read())
        raw[5] ^= 0x01  # inside the first chunk's values
        open(key, "wb").write(bytes(raw))
        try:
            results[checksum] = aa.open_dataset(path)[...]
        except ChecksumError as e:
            results[checksum] = e
    assert isinstance(results[False], np.ndarray) and not np.array_equal(results[False], a)  # silent
    err = results[True]
    assert isinstance(err, ChecksumError) and err.key == "c/0/0" and err.chunk == (0, 0)


def test_checksum_option_is_validated(tmp_path):
    with pytest.raises(aa.errors.MetadataError):
        aa.create_dataset(str(tmp_path / "x"), shape=(4,), dtype="u1", chunks=(2,), checksum="yes")
