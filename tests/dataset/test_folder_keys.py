"""A chunk or shard key that names a folder on local files is refused loudly on every path (a region
read, a batched read, a visit, a lazy read and a write), never read as a missing object (fill values)
and never replaced: ``LocalStore`` reads of a folder raise :class:`~altarr.errors.StoreError` naming the
key, as reading a folder does on a local file system. Object stores have no folders (a key there is an
object or nothing), so this costs them nothing."""

from __future__ import annotations

import os

import numpy as np
import pytest

import altarr as aa
from altarr.errors import StoreError

#: format -> (creation keywords, the stored object holding chunk (0, 0))
CASES = {
    "zarr3-sharded": ({"format": "zarr3", "shards": (4, 4)}, "c/0/0"),
    "zarr3": ({"format": "zarr3"}, "c/0/0"),
    "zarr2": ({"format": "zarr2"}, "0.0"),
    "n5": ({"format": "n5"}, "0/0"),
}


def _dataset_with_a_folder(tmp_path, case: str, empty: bool):
    kwargs, key = CASES[case]
    path = str(tmp_path / "a")
    ds = aa.create_dataset(path, shape=(8, 8), dtype="u1", chunks=(2, 2), **kwargs)
    ds[:] = 1
    obj = os.path.join(path, *key.split("/"))
    os.remove(obj)
    os.mkdir(obj)
    if not empty:
        with open(os.path.join(obj, "x"), "wb") as f:
            f.write(b"stray")
    return path, key, obj


def _refused(info, key: str) -> None:
    assert "folder" in str(info.value)
    assert info.value.key is not None and info.value.key.endswith(key), info.value.key


@pytest.mark.parametrize("empty", [True, False], ids=["empty-folder", "folder"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_folder_where_a_chunk_or_shard_is_read_is_refused(tmp_path, case, empty):
    path, key, obj = _dataset_with_a_folder(tmp_path, case, empty)
    ds = aa.open_dataset(path)
    with pytest.raises(StoreError) as info:  # region read
        ds[:]
    _refused(info, key)
    with pytest.raises(StoreError) as info:  # a region inside the chunk
        ds[0:1, 0:1]
    _refused(info, key)
    with pytest.raises(StoreError) as info:  # batched chunk read
        ds.read_chunks([(0, 0), (3, 3)])
    _refused(info, key)
    with pytest.raises(StoreError) as info:  # batched region reads
        ds.read_regions([(slice(0, 2), slice(0, 2)), (slice(6, 8), slice(6, 8))])
    _refused(info, key)
    with pytest.raises(StoreError) as info:  # visit
        ds.visit_chunks([(1, 1), (0, 0)], lambda i, a: None)
    _refused(info, key)
    with pytest.raises(StoreError) as info:  # lazy
        np.asarray(aa.open(path)[0:2, 0:2])
    _refused(info, key)
    # the other objects still read
    assert (ds[6:8, 6:8] == 1).all()


@pytest.mark.parametrize("case", list(CASES))
def test_a_write_does_not_replace_a_folder(tmp_path, case):
    path, key, obj = _dataset_with_a_folder(tmp_path, case, empty=False)
    ds = aa.open_dataset(path, mode="r+")
    with pytest.raises(StoreError) as info:  # a partial write reads the old object first
        ds[0:1, 0:1] = 5
    _refused(info, key)
    with pytest.raises(StoreError) as info:  # a whole object (chunk or shard) replaced outright
        ds[0:4, 0:4] = 5
    _refused(info, key)
    assert ds.store.list_temporary() == []
    assert os.path.isdir(obj) and os.listdir(obj) == ["x"]
