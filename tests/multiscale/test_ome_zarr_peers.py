"""OME-Zarr pyramids against the independent readers and writers: ngff-zarr and ome-zarr-py read altarr's
0.4 and 0.5 pyramids (ngff-zarr validating the metadata with the spec's JSON schemas, strict ones too),
and altarr reads the pyramids they write, levels and physical scales included."""

from __future__ import annotations

import json

import numpy as np
import pytest

import altarr as aa

nz = pytest.importorskip("ngff_zarr")
ome_io = pytest.importorskip("ome_zarr.io")
ome_reader = pytest.importorskip("ome_zarr.reader")

VERSIONS = [("ome-zarr", "0.5"), ("ome-zarr-0.4", "0.4")]


@pytest.fixture(scope="module")
def volume() -> np.ndarray:
    rng = np.random.default_rng(3)
    return rng.integers(0, 4000, (19, 70, 90), dtype="uint16")


def _attributes(path) -> dict:
    v3 = path / "zarr.json"
    if v3.exists():
        return json.loads(v3.read_text())["attributes"]
    return json.loads((path / ".zattrs").read_text())


@pytest.mark.parametrize("layout, version", VERSIONS)
def test_ngff_zarr_validates_and_reads_altarr_pyramids(tmp_path, volume, layout, version):
    path = tmp_path / "img.ome.zarr"
    shards = (16, 32, 32) if version == "0.5" else None
    ms = aa.build_pyramid(
        volume,
        str(path),
        layout=layout,
        scale=(2.0, 0.5, 0.5),
        unit="micrometer",
        chunks=(8, 16, 16),
        shards=shards,
    )
    attrs = _attributes(path)
    nz.validate(attrs, version=version, model="image", strict=False)
    nz.validate(attrs, version=version, model="image", strict=True)
    theirs = nz.from_ngff_zarr(str(path), validate=True)
    assert len(theirs.images) == len(ms.levels) == 5
    for image, level in zip(theirs.images, ms.levels, strict=True):
        np.testing.assert_array_equal(np.asarray(image.data), level.dataset[...])
        assert tuple(image.dims) == ("z", "y", "x")
        assert tuple(image.scale[d] for d in "zyx") == level.scale
        assert tuple(image.translation[d] for d in "zyx") == level.translation
    assert [a.unit for a in theirs.metadata.axes] == ["micrometer"] * 3


@pytest.mark.parametrize("layout, version", VERSIONS)
def test_ome_zarr_py_reads_altarr_pyramids(tmp_path, volume, layout, version):
    path = tmp_path / "img.ome.zarr"
    ms = aa.build_pyramid(volume, str(path), layout=layout, method="mode", chunks=(8, 32, 32), levels=3)
    nodes = list(ome_reader.Reader(ome_io.parse_url(str(path)))())
    image = nodes[0]
    assert image.zarr.version == version
    assert [tuple(d.shape) for d in image.data] == [lv.shape for lv in ms.levels]
    for data, level in zip(image.data, ms.levels, strict=True):
        np.testing.assert_array_equal(np.asarray(data), level.dataset[...])
    transforms = image.metadata["coordinateTransformations"]
    assert [t[0]["scale"] for t in transforms] == [list(lv.scale) for lv in ms.levels]


@pytest.mark.parametrize("version", ["0.4", "0.5"])
def test_altarr_reads_ngff_zarr_pyramids(tmp_path, volume, version):
    path = tmp_path / "theirs.ome.zarr"
    image = nz.to_ngff_image(
        volume,
        dims=("z", "y", "x"),
        scale={"z": 3.0, "y": 0.25, "x": 0.25},
        translation={"z": 1.0, "y": 0.0, "x": 0.0},
        axes_units={"z": "micrometer", "y": "micrometer", "x": "micrometer"},
    )
    theirs = nz.to_multiscales(image, scale_factors=[2, 4], method=nz.Methods.DASK_BIN_SHRINK, chunks=16)
    nz.to_ngff_zarr(str(path), theirs, version=version)
    ms = aa.open_multiscale(str(path))
    assert ms.layout == ("ome-zarr" if version == "0.5" else "ome-zarr-0.4")
    assert [a.name for a in ms.axes] == ["z", "y", "x"] and ms.axes[0].unit == "micrometer"
    for level, their in zip(ms.levels, theirs.images, strict=True):
        np.testing.assert_array_equal(ms.array(ms.levels.index(level))[...], np.asarray(their.data))
        assert level.scale == tuple(their.scale[d] for d in "zyx")
        assert level.translation == pytest.approx(tuple(their.translation[d] for d in "zyx"))
    # their levels are our mean levels of the same factors
    ours = aa.build_pyramid(volume, str(tmp_path / "ours.ome.zarr"), factors=[(2, 2, 2), (2, 2, 2)])
    for a, b in zip(ours.levels, ms.levels, strict=True):
        np.testing.assert_array_equal(a.dataset[...], b.dataset[...])


@pytest.mark.parametrize("version", ["0.4", "0.5"])
def test_altarr_reads_ome_zarr_py_pyramids(tmp_path, volume, version):
    import zarr
    from ome_zarr.format import FormatV04, FormatV05
    from ome_zarr.writer import write_image

    path = tmp_path / "theirs.ome.zarr"
    fmt = FormatV05() if version == "0.5" else FormatV04()
    group = zarr.open_group(str(path), mode="w", zarr_format=3 if version == "0.5" else 2)
    write_image(volume, group, scale_factors=[2, 4], method="nearest", fmt=fmt, axes="zyx")
    ms = aa.open_multiscale(str(path))
    assert len(ms.levels) == 3
    theirs = zarr.open_group(str(path), mode="r")
    for level in ms.levels:
        np.testing.assert_array_equal(level.dataset[...], theirs[level.path][...])
    # ome-zarr-py keeps z (an integer ladder halves y and x only)
    assert [lv.factors for lv in ms.levels] == [(1, 1, 1), (1, 2, 2), (1, 4, 4)]
