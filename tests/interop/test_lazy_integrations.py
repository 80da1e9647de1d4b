"""to_dask and to_xarray: still lazy, aligned to the altarr chunk grid, same values as NumPy."""

from __future__ import annotations

import pickle

import dask
import dask.array as dsa
import numpy as np
import pytest
import xarray as xr

import altarr as aa
from _lazy_support import lazy, positions

DATA = positions((10, 7))


def test_to_dask_blocks_are_altarr_chunks_and_values_match():
    x, fetch = lazy(DATA, (4, 3))
    d = x.to_dask()
    assert fetch.calls == []
    assert d.chunks == ((4, 4, 2), (3, 3, 1)) and d.dtype == DATA.dtype
    with dask.config.set(scheduler="threads"):
        np.testing.assert_array_equal(d.compute(), DATA)
        np.testing.assert_allclose(d.mean(axis=0).compute(), DATA.mean(axis=0))
    assert aa.stats(x)["chunks_fetched"] == 9  # every chunk once; the second pass hit the cache
    assert dask.base.tokenize(x.to_dask()) == dask.base.tokenize(d)


def test_to_dask_batches_several_chunks_per_task():
    x, fetch = lazy(DATA, (2, 3))  # 5 x 3 chunks
    d = x.to_dask(chunks=(4, 7))
    assert d.chunks == ((4, 4, 2), (7,))
    with dask.config.set(scheduler="sync"):
        np.testing.assert_array_equal(d.compute(), DATA)
    assert len(fetch.calls) == 3 and sorted(len(c) for c in fetch.calls) == [3, 6, 6]
    with pytest.raises(ValueError, match="multiple"):
        x.to_dask(chunks=(3, 7))


def test_dask_graph_pickles_the_recipe():
    x = aa.altarr(DATA.shape, (4, 3), _positions_fetch)
    d = pickle.loads(pickle.dumps(x.to_dask()))
    with dask.config.set(scheduler="sync"):
        np.testing.assert_array_equal(d.compute(), DATA)
    assert isinstance(d, dsa.Array)


def _positions_fetch(chunks):
    return [DATA[4 * i : 4 * i + 4, 3 * j : 3 * j + 3] for i, j in chunks]


def test_to_xarray_keeps_dims_coords_and_laziness():
    coords = {"row": np.arange(10) * 10, "col": list("abcdefg")}
    x, fetch = lazy(DATA, (4, 3), dims=("row", "col"), coords=coords)
    da = x.to_xarray(name="v", attrs={"units": "m"})
    ref = xr.DataArray(DATA, dims=("row", "col"), coords=coords, name="v")
    assert fetch.calls == [] and da.name == "v" and da.attrs["units"] == "m"
    assert list(da.coords["row"].values) == list(ref.coords["row"].values)
    cases = [
        {"row": 3},
        {"row": slice(2, 9, 3), "col": [6, 0, 2]},
        {"row": [1, 9, 1], "col": [0, 6]},  # outer
        {"row": xr.DataArray([0, 9, 5], dims="p"), "col": xr.DataArray([6, 0, 2], dims="p")},  # vectorized
    ]
    for sel in cases:
        got = da.isel(sel)
        want = ref.isel(sel)
        assert got.dims == want.dims
        np.testing.assert_array_equal(got.values, want.values)
    np.testing.assert_array_equal(da.sel(col="c").values, DATA[:, 2])
    # the vectorized selection read only the three chunks holding its points
    aa.reset(x)
    points = da.isel(row=xr.DataArray([0, 9, 5], dims="p"), col=xr.DataArray([6, 0, 2], dims="p")).values
    np.testing.assert_array_equal(points, [6.0, 63.0, 37.0])
    assert aa.stats(x)["chunks_fetched"] == 3


def test_to_xarray_with_dask_and_default_dims():
    x, _ = lazy(DATA, (4, 3))
    da = x.to_xarray(dask=True)
    assert da.dims == ("dim_0", "dim_1") and isinstance(da.data, dsa.Array)
    np.testing.assert_allclose(da.sum("dim_0").values, DATA.sum(axis=0))
    plain = x.to_xarray()
    assert plain.dims == ("dim_0", "dim_1")
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(plain)).values, DATA)


def test_missing_optional_dependencies_give_a_clear_import_error(monkeypatch):
    x, _ = lazy(DATA, (4, 3))
    monkeypatch.setitem(__import__("sys").modules, "dask.array", None)
    with pytest.raises(ImportError, match=r"pip install 'dask\[array\]'"):
        x.to_dask()
    monkeypatch.setitem(__import__("sys").modules, "xarray", None)
    with pytest.raises(ImportError, match="pip install xarray"):
        x.to_xarray()
