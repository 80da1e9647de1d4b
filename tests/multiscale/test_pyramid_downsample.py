"""Downsampling against a reference written window by window with NumPy, for every method, dtype and
edge shape that does not divide by the factor, and against ngff-zarr's own methods (its bin shrink and
mode reduce windows the same way: remainder dropped, integers rounded half up, the smallest label on a
tie)."""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pytest

from altarr.errors import MetadataError
from altarr.multiscale import downsample
from altarr.multiscale.downsample import downsampled_shape


def reference(values: np.ndarray, factors: tuple[int, ...], method: str) -> np.ndarray:
    """One window at a time: the window's values, reduced as the method says."""
    out_shape = tuple(n // f for n, f in zip(values.shape, factors, strict=True))
    out = np.empty(out_shape, values.dtype)
    for index in product(*(range(n) for n in out_shape)):
        window = values[tuple(slice(i * f, (i + 1) * f) for i, f in zip(index, factors, strict=True))].ravel()
        if method == "stride":
            out[index] = window[0]
        elif method == "mode":
            labels, counts = np.unique(window, return_counts=True)  # sorted labels: argmax takes the smallest
            out[index] = labels[np.argmax(counts)]
        elif values.dtype.kind in "iub":
            exact = sum(int(v) for v in window)  # Python integers: no overflow, no rounding
            out[index] = (
                math.floor(exact / len(window) + 0.5)
                if abs(exact) < 2**52
                else (2 * exact + len(window)) // (2 * len(window))
            )
        else:
            out[index] = np.mean(window.astype(np.complex128 if values.dtype.kind == "c" else np.float64))
    return out


DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32", "float64"]
# shapes that do not divide by the factors, windows that are not cubes, an axis left alone
CASES = [((7, 10, 5), (2, 3, 2)), ((9, 9), (2, 2)), ((5, 11, 13), (1, 2, 4)), ((3,), (3,)), ((4, 6), (4, 1))]


def _values(shape: tuple[int, ...], dtype: str, rng: np.random.Generator) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return (rng.standard_normal(shape) * 100).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", ["mean", "mode", "stride"])
def test_methods_equal_the_window_by_window_reference(dtype, method, rng):
    for shape, factors in CASES:
        values = _values(shape, dtype, rng)
        if method == "mode":  # few labels, so windows have real modes and ties
            values = (values % 4).astype(dtype)
        got = downsample(values, factors, method)
        want = reference(values, factors, method)
        assert got.dtype == values.dtype and got.shape == downsampled_shape(shape, factors)
        if np.dtype(dtype).kind == "f" and method == "mean":
            np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == "float32" else 1e-13)
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{method} {dtype} {shape} {factors}")


def test_integer_means_round_half_up_exactly_at_the_ends_of_the_range():
    for dtype in ("int64", "uint64", "int32", "uint8"):
        info = np.iinfo(dtype)
        values = np.array(
            [
                info.max,
                info.max - 1,
                info.min,
                info.min + 1,
                3,
                4,
                -3 if info.min else 5,
                -4 if info.min else 6,
            ],
            dtype,
        )
        got = downsample(values, (2,), "mean")
        np.testing.assert_array_equal(got, reference(values, (2,), "mean"), err_msg=dtype)
    # the halves: 2.5 -> 3, -2.5 -> -2, 3.5 -> 4
    np.testing.assert_array_equal(downsample(np.array([2, 3, -2, -3, 3, 4], "i1"), (2,), "mean"), [3, -2, 4])


def test_float_means_keep_nan_and_infinity_and_bool_means_take_the_majority():
    x = np.array([1.0, np.nan, np.inf, 1.0, -np.inf, np.inf, 2.0, 4.0], "f4")
    got = downsample(x, (2,), "mean")
    assert np.isnan(got[0]) and got[1] == np.inf and np.isnan(got[2]) and got[3] == 3.0
    b = np.array([True, False, True, True, False, False])
    np.testing.assert_array_equal(downsample(b, (2,), "mean"), [True, True, False])  # 0.5 rounds up


def test_complex_means_and_empty_levels():
    z = np.array([1 + 1j, 3 - 1j, 2j, 2j], "c8")
    np.testing.assert_array_equal(downsample(z, (2,), "mean"), np.array([2 + 0j, 2j], "c8"))
    assert downsample(np.zeros((1, 5)), (2, 2), "mean").shape == (0, 2)


def test_mode_picks_the_smallest_of_tied_labels_and_only_labels_of_the_window():
    x = np.array([[7, 3], [3, 7]], "u4")
    assert downsample(x, (2, 2), "mode")[0, 0] == 3
    labels = np.array([[1, 2], [3, 4]], "u8") * 1000003
    assert downsample(labels, (2, 2), "mode")[0, 0] == 1000003


def test_bad_arguments_name_what_is_wrong():
    with pytest.raises(MetadataError, match="unknown downsampling method 'median'"):
        downsample(np.zeros(4), (2,), "median")
    with pytest.raises(MetadataError, match="one positive integer per axis"):
        downsample(np.zeros((4, 4)), (2,), "mean")
    with pytest.raises(MetadataError, match="mean of <U1 values"):
        downsample(np.array(["a", "b"]), (2,), "mean")


@pytest.mark.parametrize(
    "method, theirs",
    [("mean", "DASK_BIN_SHRINK"), ("mode", "DASK_IMAGE_MODE")],
)
@pytest.mark.parametrize("dtype", ["uint16", "int32", "float32"])
def test_levels_equal_ngff_zarr_on_shapes_that_do_not_divide(method, theirs, dtype, rng):
    nz = pytest.importorskip("ngff_zarr")
    from altarr.multiscale import Downsampled

    values = _values((13, 37, 42), dtype, rng)
    if method == "mode":
        values = (values % 5).astype(dtype)
    image = nz.to_ngff_image(values, dims=("z", "y", "x"))
    steps = [{"z": 1, "y": 2, "x": 2}, {"z": 2, "y": 4, "x": 4}, {"z": 4, "y": 8, "x": 8}]
    ms = nz.to_multiscales(image, scale_factors=steps, method=getattr(nz.Methods, theirs), chunks=16)
    level = values
    for step, theirs_image in zip([(1, 2, 2), (2, 2, 2), (2, 2, 2)], ms.images[1:], strict=True):
        level = Downsampled(level, step, method)[:, :, :]
        np.testing.assert_array_equal(level, np.asarray(theirs_image.data), err_msg=f"{method} {dtype}")
