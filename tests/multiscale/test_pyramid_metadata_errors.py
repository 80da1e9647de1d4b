"""Pyramid metadata that is wrong in the ways files in the wild are: each refusal is a MetadataError that
says what is wrong, never a KeyError or TypeError from inside; and a unit reads its source in bounded
slabs."""

from __future__ import annotations

import numpy as np
import pytest

import altarr as aa
from altarr.errors import MetadataError
from altarr.multiscale import build as build_module
from altarr.multiscale.ome import parse_ome


def _entry(**changes):
    entry = {
        "axes": [{"name": "y", "type": "space"}, {"name": "x", "type": "space"}],
        "datasets": [{"path": "0", "coordinateTransformations": [{"type": "scale", "scale": [1.0, 1.0]}]}],
    }
    entry.update(changes)
    return {"ome": {"version": "0.5", "multiscales": [entry]}}


@pytest.mark.parametrize(
    "attrs, message",
    [
        ({"ome": {"version": "0.5", "multiscales": []}}, "multiscales entry 0 is not there"),
        (_entry(datasets=[]), "'datasets' must be a non-empty list"),
        (_entry(datasets=[{"coordinateTransformations": []}]), "datasets\\[0\\] has no path"),
        (_entry(axes=None), "no 'axes'"),
        (_entry(axes=[{"type": "space"}, {"name": "x"}]), "has no name"),
        (
            _entry(
                datasets=[{"path": "0", "coordinateTransformations": [{"type": "scale", "scale": [1.0]}]}]
            ),
            "a scale of 2 numbers is required",
        ),
        (
            _entry(
                datasets=[{"path": "0", "coordinateTransformations": [{"type": "scale", "scale": ["a", 1]}]}]
            ),
            "is not a list of numbers",
        ),
        (
            _entry(datasets=[{"path": "0", "coordinateTransformations": [{"type": "affine", "affine": []}]}]),
            "is not a scale or a translation",
        ),
        ({"other": 1}, "no OME-Zarr 'multiscales'"),
        (
            {"ome": {"version": "0.5", "multiscales": ["0"]}},
            r"OME-Zarr 0.5 multiscales\[0\] must be an object",
        ),
    ],
)
def test_bad_ome_metadata_is_a_metadata_error_that_says_what(attrs, message):
    with pytest.raises(MetadataError, match=message):
        parse_ome(attrs)


def test_levels_that_are_missing_or_grow_are_refused(tmp_path):
    group = aa.create_group(str(tmp_path / "p.zarr"), attributes=_entry())
    with pytest.raises(MetadataError, match="level '0' of the ome-zarr pyramid cannot be opened"):
        aa.open_multiscale(str(tmp_path / "p.zarr"))
    group.create_dataset("0", shape=(4, 4), dtype="u1", chunks=(2, 2))
    group.create_dataset("1", shape=(8, 8), dtype="u1", chunks=(2, 2))
    two = _entry(
        datasets=[
            {"path": p, "coordinateTransformations": [{"type": "scale", "scale": [1, 1]}]} for p in "01"
        ]
    )
    group.attrs.update(two)
    with pytest.raises(MetadataError, match=r"level '1' \(8, 8\) is larger than level '0' \(4, 4\)"):
        aa.open_multiscale(str(tmp_path / "p.zarr"))


def test_a_unit_reads_its_source_in_slabs_of_bounded_size(monkeypatch):
    monkeypatch.setattr(build_module, "SLAB_BYTES", 4 * 64 * 2)  # 4 rows of 64 uint16 values

    class Recording:
        def __init__(self, values):
            self.values, self.shape, self.dtype, self.reads = values, values.shape, values.dtype, []

        def __getitem__(self, region):
            part = self.values[region]
            self.reads.append(part.nbytes)
            return part

    source = Recording(np.arange(32 * 64, dtype="u2").reshape(32, 64))
    view = build_module.Downsampled(source, (2, 2), "mean")
    out = view[0:16, 0:32]
    assert max(source.reads) <= 4 * 64 * 2 and sum(source.reads) == source.values.nbytes
    assert len(source.reads) == 16 // 2  # two output rows (four source rows) per slab
    np.testing.assert_array_equal(out, build_module.downsample(source.values, (2, 2), "mean"))
