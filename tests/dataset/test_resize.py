"""``ds.resize`` and ``ds.append``: NumPy's results for every format and layout, what each costs in store
requests, the metadata rewritten under its lock (attributes of other writers kept), concurrent appenders
each getting their own rows, and open write buffers written out first."""

from __future__ import annotations

import itertools
import multiprocessing as mp
import sys

import numpy as np
import pytest

import altarr as aa
from altarr.errors import ReadOnlyError
from altarr.stores import LocalStore, MemoryStore


def _numpy_resize(ref: np.ndarray, shape) -> np.ndarray:
    out = np.zeros(shape, ref.dtype)
    overlap = tuple(slice(0, min(a, b)) for a, b in zip(ref.shape, shape, strict=True))
    out[overlap] = ref[overlap]
    return out


def _objects_past_the_edge(ds) -> list[str]:
    """Stored keys that are neither metadata nor an object of the current grid."""
    grid = ds._access.grid
    top = grid.nlevels - 1
    valid = {ds._access.layout.key(p) for p in itertools.product(*(range(n) for n in grid.grid_shape(top)))}
    meta = {"zarr.json", ".zarray", ".zattrs", "attributes.json"}
    return [k for k in ds.store.list("") if k not in valid and k not in meta]


def test_random_resizes_and_appends_match_numpy(rng):
    """Shrinks and growths by any amount, appends along any axis, in Zarr v3 (sharded, nested, plain),
    Zarr v2 and N5 (plain and sharded): the values are NumPy's (a value cut off reads as the fill value
    when the array grows again), a reopened handle agrees, and nothing is stored past the edge."""
    for trial in range(80):
        nd = int(rng.integers(1, 4))
        shape = tuple(int(x) for x in rng.integers(0, 12, nd))
        chunks = tuple(int(x) for x in rng.integers(1, 5, nd))
        kind = rng.random()
        shards = tuple(c * int(rng.integers(1, 3)) for c in chunks) if kind < 0.6 else None
        if kind < 0.15:
            shards = [shards, tuple(s * 2 for s in shards)]  # nested
        fmt = str(rng.choice(["zarr3", "n5"])) if shards else str(rng.choice(["zarr3", "zarr2", "n5"]))
        if fmt == "n5" and isinstance(shards, list):
            fmt = "zarr3"
        store = MemoryStore()
        ds = aa.create_dataset(store, shape=shape, dtype="i2", chunks=chunks, shards=shards, format=fmt)
        ref = rng.integers(1, 100, shape).astype("i2")
        ds[...] = ref
        for step in range(4):
            if rng.random() < 0.5:
                new = tuple(int(x) for x in rng.integers(0, 12, nd))
                assert ds.resize(new) is None
                ref = _numpy_resize(ref, new)
            else:
                axis = int(rng.integers(-nd, nd))
                extra = list(ref.shape)
                extra[axis] = int(rng.integers(0, 4))
                data = rng.integers(1, 100, extra).astype("i2")
                ref = np.concatenate([ref, data], axis=axis)
                assert ds.append(data, axis=axis) == ref.shape
            msg = f"trial {trial} step {step}: {fmt} {chunks} {shards}"
            assert ds.shape == ref.shape, msg
            np.testing.assert_array_equal(ds[...], ref, err_msg=msg)
            np.testing.assert_array_equal(aa.open_dataset(store)[...], ref, err_msg=msg)
        assert _objects_past_the_edge(ds) == [], msg


def _sharded(store, shape=(32, 12)):
    ds = aa.create_dataset(store, shape=shape, dtype="u2", chunks=(4, 4), shards=(8, 12))
    ds[...] = 5
    return ds


def test_growing_rewrites_the_metadata_only():
    ds = _sharded(MemoryStore())
    ds.store.stats.reset()
    ds.resize((40, 20))
    assert ds.store.stats.as_dict()["writes"] == 1  # zarr.json
    assert ds.store.stats.reads == 1 and ds.store.stats.deletes == 0
    want = np.zeros((40, 20), "u2")
    want[:32, :12] = 5
    np.testing.assert_array_equal(ds[...], want)


def test_shrinking_deletes_the_objects_past_the_edge_and_rewrites_the_one_that_straddles_it():
    """4 shards of 8 rows; cut at row 13: shards 2 and 3 are deleted (the store lists what is stored,
    so a shard never written costs nothing), shard 1 is read and rewritten without its chunk row 3 (rows
    12-15 would be cut to one row and keep it: chunk row 3 of the array holds rows 12-15)."""
    ds = _sharded(MemoryStore())
    ds.delete_chunks(ds.chunks_in_shard((3, 0)))  # shard 3 no longer stored
    ds.store.stats.reset()
    ds.resize((13, 12))
    stats = ds.store.stats.as_dict()
    assert stats["deletes"] == 1  # shard 2 (shard 3 was not stored)
    assert stats["lists"] == 1
    assert stats["writes"] == 2  # zarr.json and shard 1
    key = ds._access.layout.key  # of a shard's grid position
    assert ds.store.exists(key((1, 0))) and not ds.store.exists(key((2, 0)))
    ds.resize((32, 12))
    want = np.zeros((32, 12), "u2")
    want[:13] = 5
    np.testing.assert_array_equal(ds[...], want)


def test_a_cut_on_a_shard_edge_rewrites_no_shard():
    ds = _sharded(MemoryStore())
    ds.store.stats.reset()
    ds.resize((16, 12))
    assert ds.store.stats.as_dict()["writes"] == 1 and ds.store.stats.deletes == 2


def test_n5_growing_rewrites_truncated_edge_blocks_at_their_new_size():
    store = MemoryStore()
    ds = aa.create_dataset(store, shape=(10, 6), dtype="u1", chunks=(4, 4), format="n5")
    ds[...] = 1
    ds.resize((12, 6))  # blocks in chunk row 2 were 2 rows high; now 4
    header = store.get(ds.chunk_key((2, 0)))  # mode, rank, then the block's size (N5 order), big-endian
    assert int.from_bytes(header[4:8], "big") == 4 and int.from_bytes(header[8:12], "big") == 4
    np.testing.assert_array_equal(ds[...], np.r_[np.ones((10, 6)), np.zeros((2, 6))])


def test_append_checks_shapes_before_writing():
    ds = aa.create_dataset(MemoryStore(), shape=(4, 3), dtype="f4", chunks=(2, 2))
    ds.store.stats.reset()
    with pytest.raises(ValueError, match="dimensions"):
        ds.append(np.ones(3))
    with pytest.raises(ValueError, match="dimension 1"):
        ds.append(np.ones((2, 4)))
    with pytest.raises(np.exceptions.AxisError):
        ds.append(np.ones((4, 3)), axis=2)
    assert ds.append(np.ones((0, 3))) == (4, 3)
    assert ds.store.stats.writes == 0
    assert ds.append(np.ones((4, 2)), axis=-1) == (4, 5)
    assert ds.append([[7.5] * 5]) == (5, 5) and ds[4, 4] == 7.5


def test_resize_arguments_and_read_only():
    ds = aa.create_dataset(MemoryStore(), shape=(4,), dtype="u1", chunks=(2,))
    ds.resize(6)  # an integer for a 1-d array, as zarr-python takes it
    assert ds.shape == (6,)
    with pytest.raises(ValueError, match="dimensions"):
        ds.resize((2, 2))
    with pytest.raises(ValueError, match="negative"):
        ds.resize((-1,))
    with pytest.raises(TypeError):
        ds.resize((2.5,))
    ro = aa.open_dataset(ds.store, mode="r")
    with pytest.raises(ReadOnlyError):
        ro.resize((2,))
    with pytest.raises(ReadOnlyError):
        ro.append([1])


@pytest.mark.parametrize("fmt", ["zarr3", "zarr2", "n5"])
def test_resize_keeps_attributes_another_handle_wrote(tmp_path, fmt):
    path = str(tmp_path / "a")
    ds = aa.create_dataset(path, shape=(4, 4), dtype="u1", chunks=(2, 2), format=fmt, attributes={"a": 1})
    other = aa.open_dataset(path, mode="r+")
    other.attrs["b"] = 2  # after ds was opened: ds's own copy of the metadata does not hold it
    ds.resize((6, 4))
    again = aa.open_dataset(path)
    assert again.shape == (6, 4) and again.attrs.asdict() == {"a": 1, "b": 2}


def test_resize_writes_open_buffers_out_first_and_they_go_on_in_the_new_shape():
    ds = _sharded(MemoryStore())
    with ds.buffered() as b:
        b[0:3] = 1  # part of shard 0, buffered
        ds.resize((20, 12))
        assert b.pending == 0 and ds[0, 0] == 1
        b[16:20] = 2  # shard 2 is cut to 4 rows now: complete, written at once
        assert b.pending == 0
        b[4:8] = 3
    want = np.zeros((20, 12), "u2")
    want[:20] = 5
    want[0:3], want[16:20], want[4:8] = 1, 2, 3
    np.testing.assert_array_equal(ds[...], want)


def _appender(path: str, value: int, n: int, out) -> None:
    ds = aa.open_dataset(path, mode="r+")
    rows = [ds.append(np.full((1, 3), value, "i4"))[0] for _ in range(n)]
    out.put(rows)


@pytest.mark.skipif(sys.platform == "win32", reason="fork")
def test_concurrent_appenders_each_get_their_own_rows(tmp_path):
    """Two processes append 20 rows each to one array: the metadata's lock makes each append reserve
    rows no other append has, so all 40 rows are there, each process's value in its own rows."""
    path = str(tmp_path / "log.zarr")
    aa.create_dataset(path, shape=(0, 3), dtype="i4", chunks=(4, 3), shards=(16, 3))
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_appender, args=(path, v, 20, q)) for v in (1, 2)]
    for p in procs:
        p.start()
    got = [q.get(timeout=120), q.get(timeout=120)]
    for p in procs:
        p.join(60)
    a = aa.open_dataset(path)[...]
    assert a.shape == (40, 3)
    assert (a[:, 0] == 1).sum() == 20 and (a[:, 0] == 2).sum() == 20
    assert (a == a[:, :1]).all()  # no row mixes two appends
    assert sorted(r for rows in got for r in rows) == list(range(1, 41))  # each append saw its own end


def test_resize_on_local_files_replaces_the_metadata_atomically(tmp_path):
    """The document is written to a temporary file and renamed over the old one (no partial document),
    under the lock beside it (released: none left)."""
    store = LocalStore(tmp_path / "a")
    ds = aa.create_dataset(store, shape=(4,), dtype="u1", chunks=(2,))
    ds.resize((9,))
    assert store.list_temporary() == [] and aa.open_dataset(store).shape == (9,)


def test_resize_on_s3_conditions_the_metadata_write(s3_endpoint):
    """On S3 the metadata write is conditioned on the version read (obstore, If-Match): a resize in
    between two handles' attribute writes keeps them all."""
    import uuid

    from _s3 import BUCKET, s3_options

    url, options = f"s3://{BUCKET}/{uuid.uuid4().hex}/a.zarr", s3_options(s3_endpoint)
    ds = aa.create_dataset(
        url, shape=(8, 8), dtype="u1", chunks=(4, 4), shards=(8, 8), storage_options=options
    )
    ds[...] = 3
    other = aa.open_dataset(url, mode="r+", **options)
    other.attrs["x"] = 1
    ds.resize((6, 10))
    ds.append(np.full((2, 10), 4, "u1"))
    again = aa.open_dataset(url, **options)
    assert again.shape == (8, 10) and again.attrs.asdict() == {"x": 1}
    assert (again[:6, :8] == 3).all() and (again[6:] == 4).all() and (again[:6, 8:] == 0).all()


def test_an_append_keeps_rows_another_append_wrote_past_its_end_in_the_edge_chunk():
    """Appender A reserved row 33, appender B then row 34 and wrote it first; both rows share chunk rows
    32-35. A's handle clips at 34: a plain write through it re-encodes the edge chunk with the fill value
    past row 33 (B's row lost), so an append writes through a handle reaching the chunk's end, whose
    merge keeps row 34 (the way concurrent appends on object stores, without a lock over both steps,
    lose nothing)."""
    from dataclasses import replace

    from altarr.dataset.resize import _write_appended

    store = MemoryStore()
    ds = aa.create_dataset(store, shape=(35, 3), dtype="i4", chunks=(4, 3))
    ds[34] = 2  # B's row
    stale = aa.Dataset(store, "", replace(ds.spec, shape=(34, 3)), ds._format, mode="r+")
    _write_appended(stale, np.full((1, 3), 1, "i4"), 0, 33)
    np.testing.assert_array_equal(ds[32:35, 0], [0, 1, 2])
    stale[33] = 1  # what a plain write through the stale handle does
    np.testing.assert_array_equal(ds[32:35, 0], [0, 1, 0])


def _s3_appender(url: str, options: dict, value: int, n: int, out) -> None:
    ds = aa.open_dataset(url, mode="r+", **options)
    for _ in range(n):
        ds.append(np.full((1, 3), value, "i4"))
    out.put(value)


def test_concurrent_appenders_on_s3_each_get_their_own_rows(s3_endpoint):
    """The same on S3, where nothing holds a lock over both steps: the reservation is a conditional
    write of the metadata (retried when the other appender got there first), and each row is written
    through a handle that keeps the other's rows in the shared edge chunk."""
    import uuid

    from _s3 import BUCKET, s3_options

    url, options = f"s3://{BUCKET}/{uuid.uuid4().hex}/log.zarr", s3_options(s3_endpoint)
    aa.create_dataset(url, shape=(0, 3), dtype="i4", chunks=(4, 3), shards=(8, 3), storage_options=options)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_s3_appender, args=(url, options, v, 8, q)) for v in (1, 2)]
    for p in procs:
        p.start()
    assert sorted([q.get(timeout=300), q.get(timeout=300)]) == [1, 2]
    for p in procs:
        p.join(60)
    a = aa.open_dataset(url, **options)[...]
    assert a.shape == (16, 3)
    assert (a[:, 0] == 1).sum() == 8 and (a[:, 0] == 2).sum() == 8 and (a == a[:, :1]).all()
