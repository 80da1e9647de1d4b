"""``resize`` and ``append`` round-tripped through the peers: Zarr v3 (sharded and not) and Zarr v2 through
zarr-python and tensorstore, N5 through z5py and tensorstore's ``n5`` driver; both directions (altarr
changes a peer's array, a peer changes altarr's) and zarr-python's own ``resize``/``append`` beside
altarr's, whose signatures and results they share."""

from __future__ import annotations

import numpy as np
import pytest
import tensorstore as ts
import z5py
import zarr

import altarr as aa
from _peers import ts_read

CASES = {  # name: (altarr create options, tensorstore driver)
    "zarr3-sharded": ({"format": "zarr3", "chunks": (4, 3), "shards": (8, 6)}, "zarr3"),
    "zarr3": ({"format": "zarr3", "chunks": (4, 3)}, "zarr3"),
    "zarr2": ({"format": "zarr2", "chunks": (4, 3)}, "zarr"),
}


def _values(shape, seed):
    return np.random.default_rng(seed).integers(1, 30000, shape).astype("i2")


def _steps():
    """(what, argument) applied in turn: cuts inside shards and chunks, grows past them, appends on both
    axes; the expected array follows NumPy (a shrink drops values for good, growth reads as fill 0)."""
    return [
        ("append", (_values((5, 11), 1), 0)),
        ("resize", (13, 7)),  # cuts a shard and a chunk along both axes
        ("resize", (21, 12)),  # grows past the old shape: the cut values do not come back
        ("append", (_values((21, 2), 2), 1)),
        ("resize", (8, 14)),  # exactly on a shard edge along 0
        ("append", (_values((3, 14), 3), 0)),
    ]


def _apply_numpy(ref: np.ndarray, what: str, arg) -> np.ndarray:
    if what == "append":
        return np.concatenate([ref, arg[0]], axis=arg[1])
    out = np.zeros(arg, ref.dtype)
    overlap = tuple(slice(0, min(a, b)) for a, b in zip(ref.shape, arg, strict=True))
    out[overlap] = ref[overlap]
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_altarr_resizes_and_appends_and_the_peers_read_it(tmp_path, case):
    options, driver = CASES[case]
    path = str(tmp_path / "a")
    ds = aa.create_dataset(path, shape=(16, 11), dtype="i2", compressor="zstd", **options)
    ref = _values((16, 11), 0)
    ds[...] = ref
    for what, arg in _steps():
        got = ds.append(*arg) if what == "append" else ds.resize(arg)
        ref = _apply_numpy(ref, what, arg)
        assert got == (ref.shape if what == "append" else None)
        z = zarr.open_array(path, mode="r")
        assert z.shape == ref.shape
        np.testing.assert_array_equal(z[...], ref, err_msg=f"zarr-python after {what} {ref.shape}")
        np.testing.assert_array_equal(ts_read(path, driver), ref, err_msg=f"tensorstore after {what}")
        np.testing.assert_array_equal(aa.open_dataset(path)[...], ref)


@pytest.mark.parametrize("case", list(CASES))
def test_altarr_resizes_and_appends_zarr_pythons_array(tmp_path, case):
    options, _ = CASES[case]
    path = str(tmp_path / "z")
    zarr_format = 2 if case == "zarr2" else 3
    kwargs = {"shards": options["shards"]} if "shards" in options else {}
    z = zarr.create_array(
        path,
        shape=(16, 11),
        chunks=options["chunks"],
        dtype="i2",
        fill_value=0,
        zarr_format=zarr_format,
        **kwargs,
    )
    ref = _values((16, 11), 4)
    z[...] = ref
    ds = aa.open_dataset(path, mode="r+")
    for what, arg in _steps():
        if what == "append":
            ds.append(*arg)
        else:
            ds.resize(arg)
        ref = _apply_numpy(ref, what, arg)
        np.testing.assert_array_equal(zarr.open_array(path, mode="r")[...], ref, err_msg=what)


@pytest.mark.parametrize("case", list(CASES))
def test_zarr_python_resizes_and_appends_altarrs_array_and_altarr_reads_what_it_reads(tmp_path, case):
    """zarr-python's own resize keeps the objects that straddle the new edge as they are (its
    documented behaviour), so values cut off come back when it grows the array again: altarr reads what
    is stored, exactly what zarr-python reads; both return the same from ``append``."""
    options, _ = CASES[case]
    path = str(tmp_path / "b")
    ds = aa.create_dataset(path, shape=(16, 11), dtype="i2", compressor="zstd", **options)
    ds[...] = _values((16, 11), 5)
    z = zarr.open_array(path, mode="r+")
    assert z.append(_values((4, 11), 6)) == (20, 11)
    # altarr's handle still says 16 rows: its append goes after the 20 stored, as the same call of zarr's
    assert ds.shape == (16, 11) and ds.append(_values((4, 11), 6)) == (24, 11)
    z = zarr.open_array(path, mode="r+")
    z.resize((10, 5))
    z.resize((16, 11))
    np.testing.assert_array_equal(aa.open_dataset(path)[...], zarr.open_array(path, mode="r")[...])
    z.append(_values((2, 11), 7), axis=0)
    np.testing.assert_array_equal(aa.open_dataset(path)[...], zarr.open_array(path, mode="r")[...])


def test_tensorstore_reads_a_resized_sharded_array_with_its_shape(tmp_path):
    path = str(tmp_path / "t")
    ds = aa.create_dataset(path, shape=(16, 11), dtype="i2", chunks=(4, 3), shards=(8, 6))
    ds[...] = 3
    ds.resize((9, 4))
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}).result()
    assert tuple(t.shape) == (9, 4)
    t = t.resize(exclusive_max=[16, 11]).result()  # tensorstore grows it: the cut values stay fill
    want = np.zeros((16, 11), "i2")
    want[:9, :4] = 3
    np.testing.assert_array_equal(t.read().result(), want)
    np.testing.assert_array_equal(aa.open_dataset(path)[...], want)


@pytest.mark.parametrize("sharded", [False, True])
def test_n5_resize_and_append_round_trip(tmp_path, sharded):
    """N5 edge blocks are stored truncated: a cut block is rewritten at its new size, a grown one read
    padded. z5py (plain N5) and tensorstore's ``n5`` driver (reversed order) read the results."""
    path = str(tmp_path / "a.n5")
    shards = (8, 6) if sharded else None
    ds = aa.create_dataset(
        path, path="v", shape=(16, 11), dtype="i2", chunks=(4, 3), shards=shards, format="n5"
    )
    ref = _values((16, 11), 8)
    ds[...] = ref
    for what, arg in _steps():
        _ = ds.append(*arg) if what == "append" else ds.resize(arg)
        ref = _apply_numpy(ref, what, arg)
        np.testing.assert_array_equal(aa.open_dataset(path, path="v")[...], ref)
        if not sharded:  # neither peer reads sharded N5 (docs/n5.md)
            f = z5py.File(path, mode="r", use_zarr_format=False)
            np.testing.assert_array_equal(f["v"][...], ref, err_msg=f"z5py after {what}")
            np.testing.assert_array_equal(
                ts_read(f"{path}/v", "n5").T, ref, err_msg=f"tensorstore after {what}"
            )


def test_altarr_appends_to_a_z5py_dataset(tmp_path):
    path = str(tmp_path / "z.n5")
    f = z5py.File(path, mode="w", use_zarr_format=False)
    d = f.create_dataset("v", shape=(10, 7), chunks=(4, 3), dtype="int16", compression="gzip")
    ref = _values((10, 7), 9)
    d[...] = ref
    ds = aa.open_dataset(path, path="v", mode="r+")
    assert ds.append(_values((3, 7), 10)) == (13, 7)
    ds.resize((13, 5))
    ref = np.concatenate([ref, _values((3, 7), 10)])[:, :5]
    np.testing.assert_array_equal(z5py.File(path, mode="r", use_zarr_format=False)["v"][...], ref)
