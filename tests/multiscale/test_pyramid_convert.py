"""Converting pyramids between the four layouts: every level's values, factors, scale and translation
survive a tour OME-Zarr 0.5 (sharded) -> BigDataViewer N5 -> n5-viewer N5 -> OME-Zarr 0.4 -> 0.5, and
the OME-Zarr it ends in validates with ngff-zarr."""

from __future__ import annotations

import json

import numpy as np
import pytest

import altarr as aa
from altarr.errors import MetadataError


@pytest.fixture
def pyramid(tmp_path, rng):
    values = rng.integers(0, 5000, (12, 50, 60), dtype="uint16")
    return aa.build_pyramid(
        values,
        str(tmp_path / "src.ome.zarr"),
        scale=(3.0, 0.5, 0.5),
        unit="micrometer",
        chunks=(4, 16, 16),
        shards=(8, 32, 32),
        name="cells",
    )


def test_a_tour_of_every_layout_keeps_levels_and_physical_coordinates(tmp_path, pyramid):
    current = pyramid
    for i, layout in enumerate(["bdv", "n5-viewer", "ome-zarr-0.4", "ome-zarr"]):
        shards = (8, 32, 32) if layout == "ome-zarr" else "same"  # 0.4 had none to keep
        current = aa.convert_pyramid(
            current, str(tmp_path / f"step{i}"), layout=layout, shards=shards, workers=2
        )
        assert current.layout == layout
        assert [a.name for a in current.axes] == ["z", "y", "x"]
        assert {a.unit for a in current.axes} == {"micrometer"}
        for a, b in zip(pyramid.levels, current.levels, strict=True):
            np.testing.assert_array_equal(a.dataset[...], b.dataset[...], err_msg=f"{layout} {b.path}")
            assert (a.factors, a.scale, a.translation) == (b.factors, b.scale, b.translation)
            assert b.chunks == a.chunks
            assert b.shards == (None if layout == "ome-zarr-0.4" else a.shards)
    # N5 has no field for the downsampling method; BigDataViewer's layout none for the name
    assert (current.name, current.method) == ("image", None)
    named = aa.convert_pyramid(pyramid, str(tmp_path / "named.n5"), layout="n5-viewer")
    assert aa.convert_pyramid(named, str(tmp_path / "named.zarr")).name == "cells"
    nz = pytest.importorskip("ngff_zarr")
    attrs = json.loads((tmp_path / "step3" / "zarr.json").read_text())["attributes"]
    # not strict: the strict schema wants a "type" (the method), which no N5 layout recorded
    nz.validate(attrs, version="0.5", model="image", strict=False)
    assert "type" not in attrs["ome"]["multiscales"][0]


def test_rechunking_resharding_and_refusals(tmp_path, pyramid):
    out = aa.convert_pyramid(
        str(tmp_path / "src.ome.zarr"),
        str(tmp_path / "b.n5"),
        layout="n5-viewer",
        chunks=(8, 8, 8),
        shards=None,
        compressor="gzip:5",
    )
    assert [lv.chunks for lv in out.levels][:2] == [(8, 8, 8), (8, 8, 8)] and out.levels[0].shards is None
    np.testing.assert_array_equal(out.levels[-1].dataset[...], pyramid.levels[-1].dataset[...])
    with pytest.raises(MetadataError, match="cannot hold shards"):
        aa.convert_pyramid(pyramid, str(tmp_path / "c.zarr"), layout="ome-zarr-0.4", shards=(8, 32, 32))
    c = aa.build_pyramid(
        np.zeros((2, 16, 16), "u1"), str(tmp_path / "c.ome.zarr"), axes="cyx", chunks=(1, 8, 8)
    )
    with pytest.raises(MetadataError, match="2-D or 3-D spatial pyramids"):
        aa.convert_pyramid(c, str(tmp_path / "c.n5"), layout="bdv")
