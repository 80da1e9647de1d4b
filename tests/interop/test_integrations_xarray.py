"""The ``altarr`` xarray backend, through its installed entry point: ``xarray.open_dataset(path,
engine="altarr")`` agrees with xarray's zarr engine on a sharded Zarr v3 dataset written by zarr-python,
opens N5 that no other engine can, stays lazy, and builds a DataTree of a group hierarchy.

The entry point is registered by installing altarr (``pip install -e .``), as the README does."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
import zarr

import altarr as aa


@pytest.fixture(scope="module", autouse=True)
def _engine_installed():
    engines = xr.backends.list_engines()
    assert "altarr" in engines, "the altarr xarray engine is not registered: run pip install -e . again"


def _zarr_python_sharded(path) -> xr.Dataset:
    """A sharded Zarr v3 group written by zarr-python (through xarray's zarr engine), with CF attributes."""
    rng = np.random.default_rng(3)
    temp = rng.normal(280, 5, (6, 16, 20)).astype("f4")
    temp[0, 0, 0] = np.nan
    counts = rng.integers(0, 1000, (16, 20)).astype("i2")
    ds = xr.Dataset(
        {
            "temperature": (("time", "y", "x"), temp, {"units": "K", "long_name": "air temperature"}),
            "counts": (("y", "x"), counts, {"scale_factor": 0.5, "add_offset": 1.0}),
        },
        coords={"time": np.arange(6), "y": np.linspace(0, 1, 16), "x": np.linspace(0, 2, 20)},
        attrs={"title": "written by zarr-python"},
    )
    encoding = {
        "temperature": {"chunks": (1, 4, 5), "shards": (3, 8, 10)},
        "counts": {"chunks": (4, 5), "shards": (8, 10)},
    }
    ds.to_zarr(str(path), zarr_format=3, encoding=encoding, consolidated=False)
    return ds


def test_same_values_as_the_zarr_engine_on_sharded_zarr_v3(tmp_path):
    path = tmp_path / "sharded.zarr"
    _zarr_python_sharded(path)
    assert zarr.open_array(str(path / "temperature"), mode="r").shards == (3, 8, 10)  # really sharded
    theirs = xr.open_dataset(path, engine="zarr", consolidated=False)
    ours = xr.open_dataset(path, engine="altarr")
    assert set(ours.data_vars) | set(ours.coords) == set(theirs.data_vars) | set(theirs.coords)
    for name in ("temperature", "counts", "time", "y", "x"):
        assert ours[name].dims == theirs[name].dims, name
        xr.testing.assert_identical(ours[name].reset_coords(drop=True), theirs[name].reset_coords(drop=True))
    assert ours["temperature"].attrs["units"] == "K" and ours.attrs["title"] == "written by zarr-python"
    # CF decoding is xarray's: scale_factor/add_offset applied the same way on both sides
    assert ours["counts"].dtype == theirs["counts"].dtype
    np.testing.assert_array_equal(
        ours["temperature"].isel(time=2, x=slice(3, 17)).values,
        theirs["temperature"].isel(time=2, x=slice(3, 17)).values,
    )
    raw = xr.open_dataset(path, engine="altarr", mask_and_scale=False)
    assert raw["counts"].dtype == np.dtype("i2")


def test_opening_is_lazy_and_chunks_follow_the_shards(tmp_path):
    path = tmp_path / "lazy.zarr"
    ds = aa.create_dataset(
        str(path), shape=(12, 10), dtype="f8", chunks=(3, 5), shards=(6, 10), dimension_names=["t", "x"]
    )
    ds[...] = np.arange(120.0).reshape(12, 10)
    opened = xr.open_dataset(path, engine="altarr")
    variable = opened["lazy"].variable
    assert not isinstance(variable._data, np.ndarray)  # nothing read yet
    assert opened["lazy"].dims == ("t", "x")
    assert float(opened["lazy"].isel(t=7, x=3)) == 73.0
    chunked = xr.open_dataset(path, engine="altarr", chunks={})
    assert chunked["lazy"].chunks == ((6, 6), (10,))  # dask chunks = the stored shards


def test_opens_n5_which_no_other_engine_can(tmp_path):
    path = tmp_path / "volume.n5"
    g = aa.create_group(str(path), format="n5", attributes={"resolution": [4, 4, 40]})
    raw = g.create_dataset("raw", shape=(5, 6, 7), dtype="u1", chunks=(2, 3, 4), compressor="gzip")
    values = np.arange(210, dtype="u1").reshape(5, 6, 7)
    raw[...] = values
    raw.attrs["_ARRAY_DIMENSIONS"] = ["z", "y", "x"]
    for engine in ("zarr", "netcdf4", "h5netcdf", "scipy"):
        if engine not in xr.backends.list_engines():
            continue
        with pytest.raises(Exception):  # noqa: B017 - any failure: those engines do not read N5
            xr.open_dataset(path, engine=engine)
    opened = xr.open_dataset(path, engine="altarr")
    assert opened.attrs["resolution"] == [4, 4, 40]
    assert opened["raw"].dims == ("z", "y", "x")
    np.testing.assert_array_equal(opened["raw"].values, values)
    alone = xr.open_dataset(path / "raw", engine="altarr")
    np.testing.assert_array_equal(alone["raw"][1:3].values, values[1:3])


def test_zarr_v2_dims_from_array_dimensions_and_group_option(tmp_path):
    path = tmp_path / "v2.zarr"
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    sub = root.create_group("inner")
    arr = sub.create_array("v", shape=(4, 3), dtype="f4", chunks=(2, 3), fill_value=np.nan)
    arr[...] = np.arange(12, dtype="f4").reshape(4, 3)
    arr.attrs["_ARRAY_DIMENSIONS"] = ["row", "col"]
    opened = xr.open_dataset(path, engine="altarr", group="inner")
    theirs = xr.open_dataset(path, engine="zarr", group="inner", consolidated=False)
    assert opened["v"].dims == ("row", "col")
    xr.testing.assert_identical(opened["v"], theirs["v"])


def test_open_datatree_over_a_hierarchy(tmp_path):
    if not hasattr(xr, "open_datatree"):
        pytest.fail("this xarray has no open_datatree; the test extra requires one that does")
    path = tmp_path / "tree.zarr"
    g = aa.create_group(str(path), attributes={"level": 0})
    g.create_dataset("a", shape=(3,), dtype="i4", chunks=(2,))[...] = [1, 2, 3]
    sub = g.create_group("sub", {"level": 1})
    sub.create_dataset("b", shape=(2, 2), dtype="f4", chunks=(1, 2), shards=(2, 2))[...] = 7
    tree = xr.open_datatree(path, engine="altarr")
    assert tree.attrs["level"] == 0 and tree["sub"].attrs["level"] == 1
    assert tree["a"].values.tolist() == [1, 2, 3]
    assert tree["sub"]["b"].values.tolist() == [[7, 7], [7, 7]]
