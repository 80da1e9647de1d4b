"""Building pyramids: each level equals the NumPy reference cascade for every method (edge shapes that do
not divide included), is written one destination shard per write, with threads, from a dataset or a
dask array, and resumes after an interruption to the same bytes as an uninterrupted build."""

from __future__ import annotations

import numpy as np
import pytest
from test_pyramid_downsample import reference

import altarr as aa
from altarr.errors import ExistsError, MetadataError
from altarr.multiscale import plan_factors
from altarr.multiscale.plan import normalize_axes


@pytest.mark.parametrize("method", ["mean", "mode", "stride"])
@pytest.mark.parametrize("layout", ["ome-zarr", "ome-zarr-0.4", "n5-viewer", "bdv"])
def test_every_level_equals_the_numpy_reference_cascade(tmp_path, rng, method, layout):
    values = rng.integers(0, 6 if method != "mean" else 60000, (13, 45, 51), dtype="uint16")
    shards = (8, 16, 32) if layout != "ome-zarr-0.4" else None
    ms = aa.build_pyramid(
        values,
        str(tmp_path / "p"),
        layout=layout,
        method=method,
        chunks=(4, 8, 16),
        shards=shards,
        scale=(3.0, 1.0, 1.0),
    )
    want = values
    assert ms.levels[0].factors == (1, 1, 1)
    for a, b in zip(ms.levels, ms.levels[1:], strict=False):
        step = tuple(fb // fa for fa, fb in zip(a.factors, b.factors, strict=True))
        want = reference(want, step, method)
        np.testing.assert_array_equal(b.dataset[...], want, err_msg=f"{layout} {method} {b.path}")
    np.testing.assert_array_equal(ms.levels[0].dataset[...], values)
    assert [lv.shape for lv in ms.levels] == [(13, 45, 51), (13, 22, 25), (13, 11, 12), (6, 5, 6), (3, 2, 3)]


def test_each_destination_shard_is_written_once(tmp_path):
    values = np.arange(64 * 64 * 64, dtype="uint16").reshape(64, 64, 64)
    root = aa.create_group(str(tmp_path / "p.ome.zarr"), format="zarr3")
    before = root.store.stats.as_dict()["writes"]
    ms = aa.build_pyramid(values, root.store, chunks=(8, 8, 8), shards=(16, 32, 32), levels=3, overwrite=True)
    shards = sum(
        int(np.prod([-(-n // s) for n, s in zip(lv.shape, lv.shards, strict=True)])) for lv in ms.levels
    )
    assert shards == 16 + 2 + 1
    writes = root.store.stats.as_dict()["writes"] - before
    # one write per shard, one metadata document per level and the group's (twice: created, then
    # described), and each level's journal written once per unit (plus its creation)
    journal = sum(
        int(np.prod([-(-n // s) for n, s in zip(lv.shape, lv.shards, strict=True)])) + 1 for lv in ms.levels
    )
    assert writes == shards + len(ms.levels) + 2 + journal


def test_threads_and_sources_of_every_kind_give_the_same_pyramid(tmp_path, rng):
    da = pytest.importorskip("dask.array")
    values = rng.integers(0, 1000, (20, 40, 40), dtype="int32")
    src = aa.create_dataset(str(tmp_path / "src.zarr"), shape=values.shape, dtype="int32", chunks=(5, 10, 10))
    src[...] = values
    kwargs = {"chunks": (5, 8, 8), "shards": (10, 16, 16), "levels": 3}
    first = aa.build_pyramid(values, str(tmp_path / "a"), **kwargs)
    others = [
        aa.build_pyramid(values, str(tmp_path / "b"), workers=3, **kwargs),
        aa.build_pyramid(src, str(tmp_path / "c"), **kwargs),
        aa.build_pyramid(str(tmp_path / "src.zarr"), str(tmp_path / "d"), **kwargs),
        aa.build_pyramid(da.from_array(values, chunks=7), str(tmp_path / "e"), **kwargs),
    ]
    for other in others:
        for a, b in zip(first.levels, other.levels, strict=True):
            np.testing.assert_array_equal(a.dataset[...], b.dataset[...])


def _files(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_an_interrupted_build_resumes_to_the_same_bytes(tmp_path, rng):
    values = rng.integers(0, 255, (32, 64, 64), dtype="uint8")
    kwargs = {"chunks": (8, 16, 16), "shards": (8, 16, 16), "method": "mean"}
    aa.build_pyramid(values, str(tmp_path / "whole"), **kwargs)
    seen = []

    def stop_after_a_few(nbytes: int, units: int) -> None:
        seen.append(units)
        if len(seen) == 64 + 3:  # inside level 1 (level 0 has 64 units, level 1 8, level 2 1)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        aa.build_pyramid(values, str(tmp_path / "cut"), progress=stop_after_a_few, **kwargs)
    assert (tmp_path / "cut" / "1" / ".altarr-copy.json").exists()
    with pytest.raises(MetadataError, match="no multiscale metadata"):
        aa.open_multiscale(str(tmp_path / "cut"))  # the metadata is written last
    with pytest.raises(ExistsError):
        aa.build_pyramid(values, str(tmp_path / "cut"), **kwargs)
    counted = []
    ms = aa.build_pyramid(
        values, str(tmp_path / "cut"), resume=True, progress=lambda b, u: counted.append(u), **kwargs
    )
    # a complete level is skipped; the units level 1 had done are reported first, then the others
    assert len(ms.levels) == 3 and counted == [3, 1, 1, 1, 1, 1, 1]
    assert _files(tmp_path / "cut") == _files(tmp_path / "whole")
    with pytest.raises(ExistsError, match="another layout"):
        aa.build_pyramid(values, str(tmp_path / "cut"), resume=True, chunks=(4, 4, 4))


def test_explicit_factors_levels_and_bad_requests(tmp_path):
    values = np.ones((10, 10), "f4")
    ms = aa.build_pyramid(values, "memory://build-factors/p", factors=[(1, 2), (5, 1)])
    assert isinstance(ms, aa.Multiscale) and len(ms) == 3
    assert [lv.shape for lv in ms.levels] == [(10, 10), (10, 5), (2, 5)]
    assert ms.levels[2].factors == (5, 2) and ms.levels[2].translation == (2.0, 0.5)
    assert len(aa.build_pyramid(values, "memory://build-factors/one", levels=1).levels) == 1
    with pytest.raises(MetadataError, match="level 2 would be empty"):
        aa.build_pyramid(values, "memory://build-factors/q", factors=[(2, 2), (8, 8)])
    with pytest.raises(MetadataError, match="unknown pyramid layout 'tiff'"):
        aa.build_pyramid(values, "memory://build-factors/r", layout="tiff")
    with pytest.raises(MetadataError, match=r"3 axes \[.z., .y., .x.\] given for a 2-d array"):
        aa.build_pyramid(values, "memory://build-factors/s", axes="zyx")


def test_planned_factors_keep_a_coarse_axis_until_the_others_catch_up():
    zyx = normalize_axes(None, 3)
    assert plan_factors((100, 2048, 2048), zyx, (4.0, 1.0, 1.0), (64, 64, 64))[:3] == [
        (1, 2, 2),
        (1, 2, 2),
        (2, 2, 2),
    ]
    # mildly anisotropic (1.5): halved together every level, as BigDataViewer does
    assert set(plan_factors((256, 256, 256), zyx, (1.5, 1.0, 1.0), (64, 64, 64))[1:]) == {(2, 2, 2)}
    # channels and time are never downsampled; an isotropic z goes on with y and x; the plan stops at
    # one chunk
    tczyx = normalize_axes(None, 5)
    assert plan_factors((3, 2, 64, 256, 256), tczyx, (1,) * 5, (1, 1, 64, 64, 64)) == [(1, 1, 2, 2, 2)] * 2
