"""The xarray engine opens a level of a pyramid with the physical coordinates of its voxels, of any layout,
reading nothing but metadata until values are asked for."""

from __future__ import annotations

import numpy as np
import pytest

import altarr as aa

xr = pytest.importorskip("xarray")


@pytest.mark.parametrize("layout", ["ome-zarr", "ome-zarr-0.4", "n5-viewer", "bdv"])
def test_a_level_opens_with_physical_coordinates(tmp_path, rng, layout):
    values = rng.integers(0, 1000, (8, 40, 50), dtype="uint16")
    path = str(tmp_path / "p")
    ms = aa.build_pyramid(
        values,
        path,
        layout=layout,
        scale=(2.0, 0.5, 0.5),
        translation=(10.0, 0.0, 5.0),
        unit="micrometer",
        chunks=(4, 16, 16),
    )
    ds = xr.open_dataset(path, engine="altarr", level=1)
    image = ds["image"]
    assert image.dims == ("z", "y", "x") and image.shape == ms.levels[1].shape
    assert ds["x"].attrs["units"] == "micrometer"
    # level 1 halves y and x: voxel i of x is at 5 + 0.25 + 1.0 * i (N5 keeps no translation: 0 there)
    offset = 0.0 if layout in ("n5-viewer", "bdv") else 5.0
    np.testing.assert_allclose(ds["x"].values, offset + 0.25 + np.arange(25))
    np.testing.assert_allclose(ds["z"].values, (10.0 if offset else 0.0) + 2.0 * np.arange(8))
    picked = image.sel(x=offset + 10.25, method="nearest").isel(z=3)
    np.testing.assert_array_equal(picked.values, ms.levels[1].dataset[3, :, 10])
    assert xr.open_dataset(path, engine="altarr")["image"].shape == (8, 40, 50)  # level 0 by default


def test_level_is_refused_for_a_plain_array(tmp_path):
    aa.create_dataset(str(tmp_path / "a.zarr"), shape=(4, 4), dtype="u1", chunks=(2, 2))
    with pytest.raises(ValueError, match="level=1 applies to image pyramids"):
        xr.open_dataset(str(tmp_path / "a.zarr"), engine="altarr", level=1)
