"""0-d datasets work everywhere (issue 11: ``ds.read_chunks([()])`` returned ``[]`` and ``altarr.open``
of a 0-d dataset failed): Zarr v3 and Zarr v2, memory and local stores, every read and write path, the
lazy layer, verify, and peers (zarr-python, tensorstore) reading and writing them."""

from __future__ import annotations

import numpy as np
import pytest
import tensorstore as ts
import zarr

import altarr as aa
from altarr.errors import AltarrError

FORMATS = ["zarr3", "zarr2"]


@pytest.fixture(params=["memory", "local"])
def where(request, tmp_path):
    if request.param == "memory":
        return f"memory://zero-d-{request.node.name}"
    return str(tmp_path / "a")


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_path(where, fmt):
    ds = aa.create_dataset(where, shape=(), dtype="f4", chunks=(), format=fmt, fill_value=1.5)
    assert ds.read_chunks([()]) == [None]  # not stored yet
    assert ds[()] == np.float32(1.5) and ds[...].shape == ()
    ds[...] = 3.5
    got = ds.read_chunks([(), ()])
    assert [float(a) for a in got] == [3.5, 3.5] and got[0] is not got[1]
    assert list(ds.stored_chunks()) == [()]
    ds.write_chunks([()], [np.array(4.5, "f4")])
    assert float(ds[()]) == 4.5
    seen = []
    ds.visit_chunks([()], lambda i, a: seen.append((i, float(a))))
    assert seen == [(0, 4.5)]
    ds[()] = 5.5
    again = aa.open_dataset(where)
    assert again.shape == () and float(again[...]) == 5.5
    x = aa.open(where)
    assert x.shape == () and float(np.asarray(x)) == 5.5 and float(x[()]) == 5.5
    assert float(np.asarray(x + 1)) == 6.5
    report = aa.verify(where)
    assert report.ok and report.checked["chunks"] == 1
    assert ds.delete_chunks([()]) == [True]
    assert ds.read_chunks([()]) == [None] and float(ds[()]) == 1.5


def test_wrong_coordinates_for_a_0d_array_are_grid_errors():
    ds = aa.create_dataset("memory://zero-d-bad", shape=(), dtype="u1", chunks=())
    with pytest.raises(AltarrError):
        ds.read_chunks([(0,)])
    with pytest.raises(AltarrError):
        ds.write_chunks([(0,)], [np.array(1, "u1")])


def test_peers_read_and_write_0d(tmp_path):
    ours = str(tmp_path / "ours.zarr")
    ds = aa.create_dataset(ours, shape=(), dtype="i8", chunks=(), compressor="zstd", fill_value=0)
    ds[...] = 42
    assert int(zarr.open_array(ours, mode="r")[...]) == 42
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": ours}}).result()
    assert int(t.read().result()) == 42

    theirs = str(tmp_path / "theirs.zarr")
    z = zarr.create_array(theirs, shape=(), dtype="float64", fill_value=-1.0)
    z[...] = 2.25
    assert float(aa.open_dataset(theirs)[...]) == 2.25
    assert float(np.asarray(aa.open(theirs))) == 2.25
    assert aa.open_dataset(theirs).read_chunks([()])[0] == 2.25
