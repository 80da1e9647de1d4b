"""Bad N5 and Zarr v2 input through the dataset API: each error names the store key (issue 3)."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import altarr as aa
from altarr.errors import AltarrError, CorruptChunkError, MetadataError, UnknownCodecError
from altarr.stores import MemoryStore

# region reads and writes through the native kernel and the pure-Python path (conftest.py)
pytestmark = pytest.mark.usefixtures("engine_path")


def n5_dataset(compressor=None):
    ds = aa.create_dataset(
        MemoryStore(), shape=(6, 8), dtype="uint16", chunks=(4, 4), format="n5", compressor=compressor
    )
    ds[...] = np.arange(48, dtype="uint16").reshape(6, 8)
    return ds


def test_n5_header_dimensions_disagreeing_with_the_dataset():
    ds = n5_dataset()
    key = ds.chunk_key((0, 0))
    blob = ds.store.get(key)
    # mode 0, ndim 3 (the dataset is 2-d), sizes 4, 4, 1
    ds.store.set(key, struct.pack(">HHIII", 0, 3, 4, 4, 1) + blob[12:])
    with pytest.raises(CorruptChunkError) as info:
        ds.read_chunk((0, 0))
    assert info.value.key == key and key in str(info.value)


def test_n5_block_larger_than_the_block_size():
    ds = n5_dataset()
    key = ds.chunk_key((0, 1))
    payload = np.zeros((9, 4), ">u2").tobytes()  # header says 4 x 9 in N5 order: more than 4 x 4
    ds.store.set(key, struct.pack(">HHII", 0, 2, 4, 9) + payload)
    with pytest.raises(CorruptChunkError, match=key) as info:
        ds[...]
    assert info.value.key == key


def test_n5_truncated_payload():
    ds = n5_dataset(compressor="gzip")
    key = ds.chunk_key((1, 0))
    blob = ds.store.get(key)
    ds.store.set(key, blob[: len(blob) - 7])
    with pytest.raises(AltarrError) as info:
        ds.read_chunks([(0, 0), (1, 0)])
    assert info.value.key == key and info.value.chunk == (1, 0)


def test_n5_unknown_compression_type():
    ds = n5_dataset()
    meta = json.loads(ds.store.get("attributes.json"))
    meta["compression"] = {"type": "snappy-of-the-future"}
    ds.store.set("attributes.json", json.dumps(meta).encode())
    with pytest.raises(UnknownCodecError, match="attributes.json"):
        aa.open_dataset(ds.store)


def test_zarray_naming_an_unknown_codec():
    ds = aa.create_dataset(MemoryStore(), shape=(4,), dtype="<i4", chunks=(2,), format="zarr2")
    meta = json.loads(ds.store.get(".zarray"))
    meta["compressor"] = {"id": "no-such-numcodec"}
    ds.store.set(".zarray", json.dumps(meta).encode())
    with pytest.raises(UnknownCodecError, match=r"\.zarray") as info:
        aa.open_dataset(ds.store)
    assert "no-such-numcodec" in str(info.value)
    assert isinstance(info.value, MetadataError)
