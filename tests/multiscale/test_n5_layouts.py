"""N5 pyramids in n5-viewer's and BigDataViewer's layouts: the keys and paths the Java readers read, and
their vectors in N5 (F) order, the reverse of altarr's NumPy order (a level that keeps z has
``downsamplingFactors`` ``[2, 2, 1]``). Read back, and read from documents written as the Java tools
write them."""

from __future__ import annotations

import json

import numpy as np
import pytest

import altarr as aa
from altarr.errors import MetadataError


def _doc(path) -> dict:
    return json.loads(path.read_text())


def test_n5_viewer_layout_stores_factors_and_resolution_in_n5_order(tmp_path, rng):
    values = rng.integers(0, 255, (10, 40, 48), dtype="uint8")
    root = tmp_path / "p.n5"
    ms = aa.build_pyramid(
        values,
        str(root),
        layout="n5-viewer",
        scale=(4.0, 1.0, 0.5),
        unit="micrometer",
        chunks=(8, 16, 16),
        levels=4,
    )
    # NumPy order: x (0.5) halves first, then x and y, then all three
    assert [lv.factors for lv in ms.levels] == [(1, 1, 1), (1, 1, 2), (1, 2, 4), (1, 4, 8)]
    group = _doc(root / "attributes.json")
    assert group["scales"] == [[1, 1, 1], [2, 1, 1], [4, 2, 1], [8, 4, 1]]
    assert group["pixelResolution"] == {"unit": "um", "dimensions": [0.5, 1.0, 4.0]}
    s2 = _doc(root / "s2" / "attributes.json")
    assert s2["downsamplingFactors"] == [4, 2, 1] and s2["dimensions"] == [12, 20, 10]
    assert s2["pixelResolution"] == group["pixelResolution"]  # the voxel size of s0, as n5-viewer reads it
    back = aa.open_multiscale(str(root))
    assert back.layout == "n5-viewer" and back.axes[2].unit == "micrometer"
    assert [lv.scale for lv in back.levels] == [lv.scale for lv in ms.levels]
    assert back.levels[2].translation == (0.0, 0.5, 0.75)  # n5-viewer's (f - 1) / 2 voxels of s0
    np.testing.assert_array_equal(back[3][...], ms.levels[3].dataset[...])
    assert back[3].dims == ms[3].dims == ("z", "y", "x")  # from a path and from a store alike


def test_bdv_layout_has_the_paths_and_keys_of_bigdataviewers_n5_export(tmp_path, rng):
    values = rng.integers(0, 4000, (12, 30, 34), dtype="uint16")
    root = tmp_path / "bdv.n5"
    aa.build_pyramid(values, str(root), layout="bdv", scale=(2.0, 1.0, 1.0), chunks=(8, 8, 8), levels=3)
    setup = _doc(root / "setup0" / "attributes.json")
    assert setup["downsamplingFactors"] == [[1, 1, 1], [2, 2, 1], [4, 4, 2]]
    assert setup["dataType"] == "uint16"
    timepoint = _doc(root / "setup0" / "timepoint0" / "attributes.json")
    assert timepoint["multiScale"] is True and timepoint["resolution"] == [1.0, 1.0, 2.0]
    level = _doc(root / "setup0" / "timepoint0" / "s1" / "attributes.json")
    assert level["downsamplingFactors"] == [2, 2, 1] and level["dimensions"] == [17, 15, 12]
    assert _doc(root / "attributes.json")["n5"].startswith("4.")
    back = aa.open_multiscale(str(root))
    assert back.layout == "bdv" and [lv.path for lv in back.levels] == [
        f"setup0/timepoint0/s{i}" for i in range(3)
    ]
    assert back.levels[2].shape == (6, 7, 8)


def test_reads_n5_viewer_metadata_written_as_the_java_tools_write_it(tmp_path):
    # the group attributes of n5-viewer's README ([x, y, z] order), levels written by hand with Java's keys
    root = tmp_path / "java.n5"
    group = aa.create_group(str(root), format="n5")
    group.attrs.update(
        {
            "scales": [[1, 1, 1], [2, 2, 1], [4, 4, 2]],
            "pixelResolution": {"unit": "um", "dimensions": [0.097, 0.097, 0.18]},
        }
    )
    for i, shape in enumerate([(40, 64, 64), (40, 32, 32), (20, 16, 16)]):
        ds = group.create_dataset(f"s{i}", shape=shape, dtype="uint8", chunks=(8, 8, 8))
        ds[...] = i
    ms = aa.open_multiscale(str(root))
    assert [lv.factors for lv in ms.levels] == [(1, 1, 1), (1, 2, 2), (2, 4, 4)]
    assert ms.levels[0].scale == (0.18, 0.097, 0.097)
    assert ms.levels[2].scale == pytest.approx((0.36, 0.388, 0.388))
    # per-level downsamplingFactors (N5 Spark) win over the group's scales
    group["s2"].attrs["downsamplingFactors"] = [4, 4, 1]
    assert aa.open_multiscale(str(root)).levels[2].factors == (1, 4, 4)


def test_reads_a_bdv_container_from_its_root_a_setup_and_another_setup(tmp_path):
    root = tmp_path / "many.n5"
    g = aa.create_group(str(root), format="n5")
    for setup, value in [(0, 1), (1, 2)]:
        g.create_group(f"setup{setup}", {"downsamplingFactors": [[1, 1, 1], [2, 2, 2]], "dataType": "uint8"})
        for i, shape in enumerate([(8, 8, 8), (4, 4, 4)]):
            ds = g.create_dataset(
                f"setup{setup}/timepoint0/s{i}", shape=shape, dtype="uint8", chunks=(4, 4, 4)
            )
            ds[...] = value
    assert aa.open_multiscale(str(root)).levels[1].dataset[0, 0, 0] == 1
    assert aa.open_multiscale(str(root), setup=1).levels[1].dataset[0, 0, 0] == 2
    one = aa.open_multiscale(str(root), path="setup1")
    assert one.layout == "bdv" and [lv.factors for lv in one.levels] == [(1, 1, 1), (2, 2, 2)]


def test_a_bdv_timepoint_group_is_its_view_of_the_bdv_pyramid(tmp_path):
    """A timepoint group (levels with no resolution of their own, as BigDataViewer's exporter writes
    them) opens as the bdv pyramid it holds, its voxel size the timepoint's resolution, and ``altarr
    tree`` labels it so (it said "n5-viewer pyramid", with voxel size 1)."""
    from _cli_support import run_cli

    root = tmp_path / "java-bdv.n5"
    g = aa.create_group(str(root), format="n5")
    g.create_group("setup0", {"downsamplingFactors": [[1, 1, 1], [2, 2, 2]], "dataType": "uint8"})
    g.create_group("setup0/timepoint0", {"multiScale": True, "resolution": [0.5, 0.5, 2.0]})
    for i, shape in enumerate([(8, 8, 8), (4, 4, 4)]):
        g.create_dataset(f"setup0/timepoint0/s{i}", shape=shape, dtype="uint8", chunks=(4, 4, 4))
    view = aa.open_multiscale(str(root), path="setup0/timepoint0")
    whole = aa.open_multiscale(str(root))
    assert view.layout == whole.layout == "bdv" and view.views == 1
    assert [lv.scale for lv in view.levels] == [lv.scale for lv in whole.levels] == [(2, 0.5, 0.5), (4, 1, 1)]
    proc = run_cli("tree", root)
    assert proc.returncode == 0, proc.stderr
    assert (
        "timepoint0/ (group, n5; bdv pyramid of 2 levels)" in proc.stdout and "n5-viewer" not in proc.stdout
    )


def test_a_bdv_pyramid_copied_into_n5_stays_the_bdv_pyramid_altarr_reopens(tmp_path, rng):
    """altarr copy --format n5 and aa.copy_group(format="n5") keep a BigDataViewer pyramid (written as
    its exporter writes it: no resolution on the levels) a bdv pyramid: same paths, factors, voxel
    sizes and values; so does a copy of its timepoint group."""
    from _cli_support import run_cli

    root = tmp_path / "java-bdv.n5"
    g = aa.create_group(str(root), format="n5")
    g.create_group("setup0", {"downsamplingFactors": [[1, 1, 1], [2, 2, 1]], "dataType": "uint16"})
    g.create_group("setup0/timepoint0", {"multiScale": True, "resolution": [0.25, 0.25, 1.5]})
    for i, shape in enumerate([(6, 16, 20), (6, 8, 10)]):
        ds = g.create_dataset(f"setup0/timepoint0/s{i}", shape=shape, dtype="uint16", chunks=(4, 8, 8))
        ds[...] = rng.integers(0, 4000, shape, dtype="uint16")
    source = aa.open_multiscale(str(root))
    assert run_cli("copy", root, tmp_path / "cli.n5", "--format", "n5", "--no-progress").returncode == 0
    view = run_cli(
        "copy", root / "setup0" / "timepoint0", tmp_path / "tp.n5", "--format", "n5", "--no-progress"
    )
    assert view.returncode == 0, view.stderr
    aa.copy_group(str(root), str(tmp_path / "api.n5"), format="n5")
    for copy in ("cli.n5", "tp.n5", "api.n5"):
        back = aa.open_multiscale(str(tmp_path / copy))
        assert back.layout == "bdv", copy
        assert [lv.path for lv in back.levels] == ["setup0/timepoint0/s0", "setup0/timepoint0/s1"]
        assert [(lv.factors, lv.scale) for lv in back.levels] == [(lv.factors, lv.scale) for lv in source]
        assert back.levels[0].scale == (1.5, 0.25, 0.25)
        for a, b in zip(source.levels, back.levels, strict=True):
            np.testing.assert_array_equal(a.dataset[...], b.dataset[...])


def test_n5_layouts_refuse_channel_axes_and_a_group_without_a_pyramid_says_so(tmp_path):
    with pytest.raises(MetadataError, match="2-D or 3-D spatial pyramids"):
        aa.build_pyramid(np.zeros((2, 8, 8), "u1"), str(tmp_path / "c.n5"), layout="n5-viewer", axes="cyx")
    aa.create_group(str(tmp_path / "empty.n5"), format="n5")
    with pytest.raises(MetadataError, match="no pyramid here"):
        aa.open_multiscale(str(tmp_path / "empty.n5"))


def test_a_bdv_container_of_several_views_is_copied_whole_as_a_hierarchy(tmp_path):
    from _cli_support import run_cli

    root = tmp_path / "views.n5"
    g = aa.create_group(str(root), format="n5")
    for setup in (0, 1):
        g.create_group(f"setup{setup}", {"downsamplingFactors": [[1, 1, 1], [2, 2, 2]], "dataType": "uint8"})
        for i, shape in enumerate([(8, 8, 8), (4, 4, 4)]):
            ds = g.create_dataset(
                f"setup{setup}/timepoint0/s{i}", shape=shape, dtype="uint8", chunks=(4, 4, 4)
            )
            ds[...] = setup + 1
    assert aa.open_multiscale(str(root)).views == 2
    assert aa.open_multiscale(str(root), path="setup1").views == 1
    proc = run_cli("copy", root, tmp_path / "copy.n5", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert "copied 4 array(s)" in proc.stdout  # every view, not only setup0's pyramid
    assert aa.open_multiscale(str(tmp_path / "copy.n5"), setup=1).levels[1].dataset[0, 0, 0] == 2


@pytest.mark.parametrize("layout", ["n5-viewer", "bdv"])
def test_opening_an_n5_pyramid_opens_each_level_once(layout):
    """The levels found by their s0, s1, ... names are the levels opened: each level's attributes.json is
    read once (it was read three times: probed, opened to check it is an array, opened again)."""
    from tests._batch_counting_store import CountingStore

    store = CountingStore()
    aa.build_pyramid(np.zeros((64, 64), "u2"), store, layout=layout, chunks=(16, 16), levels=3)
    store.batches.clear()
    ms = aa.open_multiscale(store)
    read = [k for batch in store.batches for k in batch]
    assert [lv.path.rsplit("/", 1)[-1] for lv in ms.levels] == ["s0", "s1", "s2"]
    for lv in ms.levels:
        assert read.count(f"{lv.path}/attributes.json") == 1, (lv.path, read)
