"""Lazy arrays over the block engine: altarr.open, the Zarr v2 demo (checked with zarr-python), CF
unpacking, and recipes that pickle small and read the same values in a fresh process."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

import numcodecs
import numpy as np
import pytest
import zarr

import altarr as aa
from altarr.errors import MetadataError
from altarr.lazy.sources import CFDecoder, DatasetFetch


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    return aa.example_zarr(tmp_path_factory.mktemp("example") / "example.zarr")


def test_example_zarr_is_a_zlib_c_order_zarr_v2_array_of_positions(example):
    meta = json.loads(open(f"{example}/.zarray").read())
    assert meta["zarr_format"] == 2 and meta["compressor"]["id"] == "zlib" and meta["order"] == "C"
    assert meta["dtype"] == "<f8" and meta["shape"] == [30, 50, 70] and meta["chunks"] == [7, 16, 20]
    z = zarr.open_array(example, mode="r")
    assert z.shape == (30, 50, 70) and z.chunks == (7, 16, 20) and z.dtype == np.float64
    np.testing.assert_array_equal(z[...], np.arange(30 * 50 * 70, dtype=float).reshape(30, 50, 70))
    edge = numcodecs.Zlib().decode(open(f"{example}/4.3.3", "rb").read())  # the corner chunk, padded
    assert len(edge) == 7 * 16 * 20 * 8


def test_example_zarr_in_a_new_temporary_directory_and_rewritten_in_place(tmp_path):
    path = aa.example_zarr(shape=(5,), chunks=(2,))
    assert path.endswith("example.zarr")
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[:], np.arange(5.0))
    aa.example_zarr(tmp_path / "demo.zarr", shape=(5,), chunks=(2,))
    again = aa.example_zarr(tmp_path / "demo.zarr", shape=(3, 4), chunks=(2, 3))
    assert again == str(tmp_path / "demo.zarr")  # written at the path itself (issue 12), not inside it
    assert sorted(os.listdir(tmp_path)) == ["demo.zarr"] and os.path.exists(
        tmp_path / "demo.zarr" / ".zarray"
    )
    np.testing.assert_array_equal(zarr.open_array(again, mode="r")[...], np.arange(12.0).reshape(3, 4))


def test_zarr_v2_reads_through_batched_read_chunks(example):
    x = aa.zarr_v2(example)
    assert (x.shape, x.chunks, x.dtype, x.dims) == (
        (30, 50, 70),
        (7, 16, 20),
        np.float64,
        ("dim_0", "dim_1", "dim_2"),
    )
    assert x[29, 49, 69] == 104999.0 and x[0, 0, 0] == 0.0  # the Zarr fill_value (0) is not missing
    np.testing.assert_array_equal(
        x[3:9, ::7, [69, 0]], np.arange(105000.0).reshape(30, 50, 70)[3:9, ::7, [69, 0]]
    )
    ds = x._source.fetch.dataset()
    reads_before = ds.store.stats.reads
    with aa.set_options(batch_chunks=16):
        assert x.sum() == 105000 * 104999 / 2
    assert aa.stats(x)["fetch_calls"] == 3 + 5  # 80 chunks in batches of 16, plus the three selections
    assert ds.store.stats.reads - reads_before == 80 - aa.stats(x)["chunks_cached"]


@pytest.mark.parametrize("fmt", ["zarr3", "n5", "zarr2"])
def test_open_any_engine_format_with_missing_chunks(tmp_path, fmt):
    shards = (4, 6) if fmt == "zarr3" else None
    ds = aa.create_dataset(
        str(tmp_path / f"a.{fmt}"),
        shape=(9, 11),
        dtype="int32",
        chunks=(2, 3),
        shards=shards,
        format=fmt,
        compressor={"zarr3": "zstd", "n5": "gzip", "zarr2": "zlib"}[fmt],
        fill_value=0 if fmt == "n5" else -7,  # N5 has no fill value: missing blocks read as 0
    )
    values = np.arange(99, dtype="int32").reshape(9, 11)
    ds[0:6, :] = values[0:6]  # rows 6..8 never written: missing chunks
    x = aa.open(str(tmp_path / f"a.{fmt}"))
    assert (x.shape, x.chunks, x.dtype) == ((9, 11), (2, 3), np.int32)
    expected = values.copy()
    fill = 0 if fmt == "n5" else -7
    expected[6:] = fill
    np.testing.assert_array_equal(x[...], expected)
    assert x.max() == 65 and x.min() == fill
    assert aa.stats(x)["fetch_calls"] == 1


def _cf_dataset(tmp_path, attrs, raw):
    ds = aa.create_dataset(
        str(tmp_path / "cf.zarr"),
        shape=raw.shape,
        dtype=raw.dtype,
        chunks=(3,),
        format="zarr2",
        compressor=None,
        fill_value=0,
        attributes=attrs,
    )
    ds[...] = raw
    return str(tmp_path / "cf.zarr")


def test_cf_unpacking(tmp_path):
    raw = np.array([-999, -1, 0, 5, 100, 2000, 30000, 7, -32768, 12], dtype="int16")
    attrs = {
        "_FillValue": -999,
        "missing_value": [-32768, 7],
        "valid_range": [-10, 10000],
        "scale_factor": 0.5,
        "add_offset": 100.0,
        "_ARRAY_DIMENSIONS": ["t"],
    }
    path = _cf_dataset(tmp_path, attrs, raw)
    x = aa.zarr_v2(path)
    assert x.dtype == np.float64 and x.dims == ("t",)
    expected = raw * 0.5 + 100.0
    expected[[0, 6, 7, 8]] = np.nan  # _FillValue, above valid max, missing_value x2
    np.testing.assert_array_equal(x[...], expected)
    assert np.isnan(x).sum() == 4 and np.nanmax(x) == 1100.0
    raw_x = aa.zarr_v2(path, unpack=False)
    assert raw_x.dtype == np.int16
    np.testing.assert_array_equal(raw_x[...], raw)
    assert aa.open(path).dtype == np.int16  # open: unpack=False by default


def test_cf_rules():
    only_fill = CFDecoder(np.dtype("int16"), {"_FillValue": 3})
    assert only_fill.dtype == np.float32  # no packing: float32 for <= 2-byte integers (xarray's rule)
    np.testing.assert_array_equal(only_fill(np.array([3, 4], "int16")), [np.nan, 4])
    assert CFDecoder(np.dtype("int32"), {"_FillValue": 3}).dtype == np.float64
    f4 = np.float32
    assert CFDecoder(np.dtype("int16"), {"scale_factor": f4(0.5), "add_offset": f4(1)}).dtype == np.float32
    assert CFDecoder(np.dtype("int32"), {"scale_factor": f4(0.5), "add_offset": f4(1)}).dtype == np.float64
    assert CFDecoder(np.dtype("int16"), {"add_offset": 1}).dtype == np.float64
    unsigned = CFDecoder(np.dtype("int8"), {"_Unsigned": "true", "_FillValue": 255, "valid_min": 2})
    np.testing.assert_array_equal(unsigned(np.array([-1, 1, 2, -56], "int8")), [np.nan, np.nan, 2, 200])
    plain = CFDecoder(np.dtype("float64"), {"units": "m"})
    assert not plain.active and plain.dtype == np.float64
    nan_fill = CFDecoder(np.dtype("float32"), {"_FillValue": float("nan"), "valid_max": 5.0})
    np.testing.assert_array_equal(nan_fill(np.array([np.nan, 6, 1], "float32")), [np.nan, np.nan, 1])


def test_zarr_v2_refuses_other_formats(tmp_path):
    aa.create_dataset(str(tmp_path / "v3"), shape=(4,), dtype="f8", chunks=(2,), format="zarr3")
    with pytest.raises(MetadataError, match="not a Zarr v2"):
        aa.zarr_v2(str(tmp_path / "v3"))
    assert aa.open(str(tmp_path / "v3")).shape == (4,)


def test_dataset_arrays_pickle_small_and_read_the_same_in_a_fresh_process(example, tmp_path):
    x = aa.zarr_v2(example)
    x[0:7, 0:16, 0:20]  # a cached chunk and counters must not travel
    blob = pickle.dumps(x)
    assert len(blob) < 2048, len(blob)
    assert b"example.zarr" in blob
    f = pickle.loads(pickle.dumps(x._source.fetch))
    assert isinstance(f, DatasetFetch) and f._ds is None  # the open dataset is not pickled
    (tmp_path / "x.pkl").write_bytes(blob)
    code = (
        "import pickle, sys, altarr as aa\n"
        "x = pickle.load(open(sys.argv[1], 'rb'))\n"
        "assert aa.stats(x)['chunks_cached'] == 0 and aa.stats(x)['fetch_calls'] == 0\n"
        "print(float(x.sum()), float(x[29, 49, 69]), x.vindex[[0, 29], [0, 49], [1, 68]].tolist())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "x.pkl")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    assert out.stdout.strip() == "5512447500.0 104999.0 [1.0, 104998.0]"
