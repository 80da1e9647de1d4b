"""Each destination object written once, whatever the layout on the way in: ``altarr.store`` of dask arrays
whose blocks do not line up with the shards (planes, misaligned boxes, blocks larger than a shard), and
``copy_array`` (``altarr copy``) re-chunking from sources of any chunk and shard layout. Counted per key
on the store: every shard (or chunk) once, and no read of the destination."""

from __future__ import annotations

from collections import Counter

import dask
import dask.array as da
import numpy as np
import pytest

import altarr as aa
from altarr.stores import MemoryStore
from altarr.transfer import copy_array

SHAPE = (40, 36, 30)


class KeyCountingStore(MemoryStore):
    """A memory store that counts the writes and the reads of each key."""

    def __init__(self) -> None:
        super().__init__()
        self.writes_per_key: Counter[str] = Counter()
        self.reads_per_key: Counter[str] = Counter()

    def set(self, key, value):
        self.writes_per_key[key] += 1
        super().set(key, value)

    def _fetch(self, merged, versioned):
        self.reads_per_key.update(key for key, _ in merged)
        return super()._fetch(merged, versioned)


def _volume() -> np.ndarray:
    return np.random.default_rng(0).integers(1, 60000, SHAPE).astype("u2")


def _data_keys(counts: Counter[str]) -> Counter[str]:
    """The counts of the shard (or chunk) keys: Zarr v3's ``c/...``, not metadata or a copy's journal."""
    return Counter({k: n for k, n in counts.items() if k.startswith("c/")})


@pytest.mark.parametrize(
    "blocks",
    [(1, 36, 30), (7, 11, 13), (33, 36, 30), SHAPE],
    ids=["planes", "misaligned", "larger than a shard", "one block"],
)
@pytest.mark.parametrize("shards", [(16, 12, 10), None], ids=["sharded", "unsharded"])
def test_dask_store_writes_each_object_once(blocks, shards):
    store = KeyCountingStore()
    ds = aa.create_dataset(store, shape=SHAPE, dtype="u2", chunks=(8, 6, 5), shards=shards)
    vol = _volume()
    store.writes_per_key.clear()
    with dask.config.set(scheduler="threads", num_workers=2):
        aa.store(da.from_array(vol, chunks=blocks), ds)
    counts = _data_keys(store.writes_per_key)
    grid = [-(-n // s) for n, s in zip(SHAPE, shards or ds.chunks, strict=True)]
    assert len(counts) == int(np.prod(grid)) and set(counts.values()) == {1}
    assert not _data_keys(store.reads_per_key)  # (each task opens the dataset: its metadata is read)
    np.testing.assert_array_equal(ds[...], vol)


@pytest.mark.parametrize(
    ("chunks", "shards"),
    [
        ((1, 36, 30), None),
        ((7, 5, 30), None),
        ((4, 4, 4), (12, 12, 12)),
        ((3, 9, 5), (9, 18, 10)),
        (SHAPE, None),
    ],
    ids=["planes", "misaligned chunks", "misaligned shards", "shards of odd chunks", "one chunk"],
)
def test_copy_writes_each_destination_shard_once_from_any_source_layout(chunks, shards):
    src = aa.create_dataset(MemoryStore(), shape=SHAPE, dtype="u2", chunks=chunks, shards=shards)
    vol = _volume()
    src[...] = vol
    dst_store = KeyCountingStore()
    result = copy_array(src, dst_store, chunks=(8, 8, 8), shards=(16, 16, 16))
    counts = _data_keys(dst_store.writes_per_key)
    assert len(counts) == 3 * 3 * 2 and set(counts.values()) == {1}
    assert not _data_keys(dst_store.reads_per_key)  # only the copy's journal and metadata were read
    np.testing.assert_array_equal(result.dataset[...], vol)
