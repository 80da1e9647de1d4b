"""datetime64 / timedelta64 Zarr v2 arrays (written by zarr-python) open lazily with ``altarr.open``
(issue 34: a ``TypeError`` before): reads, slicing, comparisons, min/max and arithmetic give what NumPy
gives on the same values, and what NumPy refuses fails with NumPy's own error."""

from __future__ import annotations

import numpy as np
import pytest

import altarr as aa

zarr = pytest.importorskip("zarr")

NAT = np.datetime64("NaT")


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    """(lazy datetime64, its values, lazy timedelta64, its values), 2-d, edge chunks, NaT included."""
    root = tmp_path_factory.mktemp("dt")
    dates = np.datetime64("2020-01-01T00:00:00", "ns") + np.arange(35).reshape(5, 7) * np.timedelta64(3, "h")
    deltas = np.arange(35).reshape(5, 7).astype("m8[ms]") - np.timedelta64(10, "ms")
    for name, values in (("dates", dates), ("deltas", deltas)):
        z = zarr.open_array(
            root / name, mode="w", shape=values.shape, chunks=(2, 3), dtype=values.dtype, zarr_format=2
        )
        z[:] = values
    return aa.open(str(root / "dates")), dates, aa.open(str(root / "deltas")), deltas


def test_reads_and_slices(arrays):
    a, dates, t, deltas = arrays
    assert a.dtype == dates.dtype and t.dtype == deltas.dtype
    np.testing.assert_array_equal(np.asarray(a), dates)
    np.testing.assert_array_equal(np.asarray(a[1:4, ::2]), dates[1:4, ::2])
    np.testing.assert_array_equal(np.asarray(t[[0, 4], 3]), deltas[[0, 4], 3])
    assert a[2, 3] == dates[2, 3]


def test_comparisons(arrays):
    a, dates, t, deltas = arrays
    np.testing.assert_array_equal(np.asarray(a > dates[2, 2]), dates > dates[2, 2])
    np.testing.assert_array_equal(np.asarray(a == a), dates == dates)
    np.testing.assert_array_equal(np.asarray(t <= np.timedelta64(5, "ms")), deltas <= np.timedelta64(5, "ms"))
    assert int(np.asarray((a < dates[1, 0]).sum())) == int((dates < dates[1, 0]).sum())


@pytest.mark.parametrize("fn", ["min", "max", "argmin", "argmax"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_min_max(arrays, fn, axis):
    a, dates, t, deltas = arrays
    for lazy, values in ((a, dates), (t, deltas)):
        np.testing.assert_array_equal(
            np.asarray(getattr(lazy, fn)(axis=axis)), getattr(values, fn)(axis=axis)
        )


def test_nat_propagates_as_in_numpy(tmp_path):
    values = np.array(["2021-05-01", "NaT", "2020-01-01", "2022-01-01"], "M8[D]")
    z = zarr.open_array(tmp_path / "n", mode="w", shape=(4,), chunks=(3,), dtype=values.dtype, zarr_format=2)
    z[:] = values
    a = aa.open(str(tmp_path / "n"))
    assert np.isnat(a.min()) and np.isnat(a.max()) and np.isnat(values.min())
    np.testing.assert_array_equal(np.asarray(np.isnat(a)), np.isnat(values))


def test_arithmetic_numpy_allows(arrays):
    a, dates, t, deltas = arrays
    cases = [
        (a - a, dates - dates),
        (a - dates[0, 0], dates - dates[0, 0]),
        (a + t, dates + deltas),
        (t * 3, deltas * 3),
        (t / np.timedelta64(1, "s"), deltas / np.timedelta64(1, "s")),
        (abs(t), abs(deltas)),
    ]
    for lazy, expected in cases:
        got = np.asarray(lazy)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    assert t.sum() == deltas.sum() and t.mean() == deltas.mean()


def test_arithmetic_numpy_refuses_fails_alike(arrays):
    a, dates, t, _ = arrays
    with pytest.raises(TypeError) as numpy_error:
        dates + dates
    with pytest.raises(type(numpy_error.value)):
        np.asarray(a + a)
    with pytest.raises(type(numpy_error.value)):
        a.sum()
