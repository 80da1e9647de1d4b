"""The Python journeys of issue 32 as a new user met them: each test is what the user typed, and what
they should have got (the console-script journeys are in tests/cli)."""

from __future__ import annotations

import numpy as np
import pytest

import altarr as aa
from altarr.errors import MaterializeError, MetadataError, NodeNotFoundError
from altarr.lazy import options


# --- the materialization limit ------------------------------------------------------------------------
def test_an_8_mib_volume_converts_to_numpy_and_takes_a_lazy_mask_with_the_default_limit(tmp_path):
    volume = (np.arange(128 * 128 * 256, dtype="uint32") % 4000).astype("uint16").reshape(128, 128, 256)
    ds = aa.create_dataset(tmp_path / "vol.zarr", shape=volume.shape, dtype="uint16", chunks=(32, 32, 64))
    ds[...] = volume
    x = aa.open(tmp_path / "vol.zarr")
    assert aa.get_options()["max_materialize"] is None  # the default: from the memory available
    assert x.nbytes == 8 * 2**20 and x.size > 1_000_000  # above the old limit of 10**6 elements
    np.testing.assert_array_equal(np.asarray(x), volume)
    np.testing.assert_array_equal(x[x > 3995], volume[volume > 3995])


def test_the_default_limit_is_half_the_available_memory_and_refuses_what_cannot_fit():
    limit = options.materialize_limit()
    free = options.available_memory()
    # measured at each call: a second reading may move a little, never by half
    assert 0.4 * free <= limit <= 0.6 * free
    huge = aa.altarr((2**20, 2**20), (1024, 1024), lambda c: [np.zeros((1024, 1024))] * len(c))
    assert huge.nbytes > 4 * free  # 8 TiB
    with pytest.raises(MaterializeError, match="half the free memory") as info:
        np.asarray(huge)
    assert "max_materialize=" in str(info.value) and "bytes" in str(info.value)
    assert aa.stats(huge)["fetch_calls"] == 0  # refused before anything was read


def test_a_limit_set_in_bytes_counts_bytes_not_elements_and_none_restores_the_default():
    calls = []
    x = aa.altarr((100,), (10,), lambda c: calls.append(len(c)) or [np.ones(10, "f8")] * len(c))
    with aa.set_options(max_materialize=800):  # 100 float64 values: exactly 800 bytes
        assert np.asarray(x).sum() == 100
        assert options.materialize_limit() == 800
    with aa.set_options(max_materialize=799), pytest.raises(MaterializeError, match="max_materialize=799"):
        np.asarray(x)
    with aa.set_options(max_materialize=10**9):
        aa.set_options(max_materialize=None)
        assert aa.get_options()["max_materialize"] is None
    for bad in (-1, "1GB", 1.5):
        with pytest.raises((ValueError, TypeError)):
            aa.set_options(max_materialize=bad)


# --- errors of the right kind ---------------------------------------------------------------------------
@pytest.mark.parametrize("opener", [aa.open_dataset, aa.open_group, aa.open])
def test_a_missing_path_is_a_file_not_found_error_naming_the_path(tmp_path, opener):
    missing = tmp_path / "no-such.zarr"
    with pytest.raises(FileNotFoundError) as info:
        opener(missing)
    err = info.value
    assert isinstance(err, NodeNotFoundError) and isinstance(err, MetadataError)  # old handlers still work
    assert "no-such.zarr" in str(err) and err.errno == 2


@pytest.mark.parametrize("fmt", ["zarr3", "zarr2", "n5"])
def test_a_missing_node_of_a_named_format_is_a_file_not_found_error(tmp_path, fmt):
    aa.create_group(tmp_path / "g", format=fmt)
    with pytest.raises(FileNotFoundError):
        aa.open_dataset(tmp_path / "g", path="nothing", format=fmt)
    with pytest.raises(FileNotFoundError):
        aa.open_group(tmp_path / "g")["nothing"]
