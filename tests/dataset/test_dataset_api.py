"""Public names that had no test of their own (found by tests/test_public_api.py)."""

from __future__ import annotations

import numpy as np
import pytest

import altarr as aa


def test_lazy_arrays_are_lazyarray_instances(tmp_path):
    x = aa.altarr((5, 4), (2, 2), lambda chunks: [np.zeros((2, 2))] * len(chunks))
    assert isinstance(x, aa.LazyArray) and aa.is_altarr(x)
    assert not isinstance(np.zeros(3), aa.LazyArray) and not aa.is_altarr(np.zeros(3))
    path = str(tmp_path / "l.zarr")
    aa.create_dataset(path, shape=(4,), dtype="int8", chunks=(2,))[...] = np.arange(4, dtype="int8")
    opened = aa.open(path)
    assert isinstance(opened, aa.LazyArray) and opened.sum() == 6


def test_dataset_group_by_shard(tmp_path):
    ds = aa.create_dataset(
        str(tmp_path / "s.zarr"), shape=(16, 16), dtype="uint8", chunks=(2, 2), shards=(8, 8)
    )
    coords = [(0, 0), (4, 4), (1, 3), (7, 0), (4, 5)]
    assert ds.group_by_shard(coords) == {
        (0, 0): [(0, 0), (1, 3)],
        (1, 1): [(4, 4), (4, 5)],
        (1, 0): [(7, 0)],
    }
    assert list(ds.group_by_shard(coords)) == [(0, 0), (1, 1), (1, 0)]  # first-appearance order
    with pytest.raises(aa.errors.GridError):
        ds.group_by_shard([(8, 0)])
    plain = aa.create_dataset(str(tmp_path / "p.zarr"), shape=(4, 4), dtype="uint8", chunks=(2, 2))
    assert plain.group_by_shard([(1, 1), (0, 0)]) == {(1, 1): [(1, 1)], (0, 0): [(0, 0)]}


@pytest.mark.parametrize("shards", [None, (4, 4)])
def test_dataset_stored_chunks(tmp_path, shards):
    ds = aa.create_dataset(
        str(tmp_path / "c.zarr"), shape=(8, 6), dtype="uint8", chunks=(2, 2), shards=shards
    )
    assert list(ds.stored_chunks()) == []
    ds.write_chunks([(0, 0), (3, 2)], [np.ones((2, 2), "uint8")] * 2)
    got = sorted(ds.stored_chunks())
    if shards is None:
        assert got == [(0, 0), (3, 2)]
    else:  # every chunk position of the two existing shards (an edge shard holds fewer in bounds)
        assert got == sorted(ds.chunks_in_shard((0, 0)) + ds.chunks_in_shard((1, 1)))
        assert (3, 2) in got and (0, 0) in got and (0, 2) not in got
    ds.delete_chunks([(0, 0)])
    assert (0, 0) not in set(ds.stored_chunks())


@pytest.mark.parametrize("fmt", ["zarr3", "zarr2", "n5"])
def test_a_dataset_pickles_as_its_location_and_mode(tmp_path, fmt):
    import pickle

    from altarr.errors import ReadOnlyError

    path = str(tmp_path / "a")
    ds = aa.create_dataset(path, shape=(8, 8), dtype="u1", chunks=(4, 4), format=fmt)
    ds[...] = 7
    raw = pickle.dumps(ds)
    assert len(raw) < 2000  # the location, not the values
    clone = pickle.loads(raw)
    assert (clone.format, clone.mode, clone.shape) == (fmt, "r+", (8, 8))
    clone[0, 0] = 1  # opened again for writing, on the same files
    assert int(ds[0, 0]) == 1 and int(clone[7, 7]) == 7
    read_only = pickle.loads(pickle.dumps(aa.open_dataset(path)))
    with pytest.raises(ReadOnlyError):
        read_only[0, 0] = 2
