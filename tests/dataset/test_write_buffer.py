"""The write buffer (``ds.buffered()``): every shard written once, reads through it, its budget, its
exception policies, and the cost of unbuffered plane writes (request, byte, encode and decode counts)."""

from __future__ import annotations

import numpy as np
import pytest

import altarr as aa
from altarr.dataset import buffer as buffer_module
from altarr.errors import AltarrError, ReadOnlyError
from altarr.stores import LocalStore, MemoryStore

# region writes through the native kernel and the pure-Python path (conftest.py)
pytestmark = pytest.mark.usefixtures("engine_path")

SHAPE, CHUNKS, SHARDS = (32, 24, 24), (8, 8, 8), (16, 24, 24)  # 2 shards of 3 x 3 x 2 chunks


def _volume(shape=SHAPE, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(1, 60000, shape).astype("u2")


def _make(store, **kw) -> aa.Dataset:
    opts = {"shape": SHAPE, "dtype": "u2", "chunks": CHUNKS, "shards": SHARDS, "compressor": "zstd"}
    opts.update(kw)
    return aa.create_dataset(store, **opts)


def _arena(ds) -> int:
    """The output arena of a write-out of one shard: a slot per chunk, where the chain compresses into
    one (0 where it does not)."""
    return 18 * (ds._access.codec.encode_slot or 0)


def _stored_bytes(store, ds) -> int:
    keys = [k for k in store.list(ds.path) if not k.rsplit("/", 1)[-1].startswith((".z", "zarr.json"))]
    return sum(len(store.get(k)) for k in keys if k != "attributes.json")


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_buffered_plane_loop_writes_each_shard_once_and_reads_nothing(tmp_path, kind):
    store = MemoryStore() if kind == "memory" else LocalStore(tmp_path / "a.zarr")
    ds = _make(store)
    vol = _volume()
    store.stats.reset()
    with ds.buffered(max_bytes=1 << 20) as b:
        for z in range(SHAPE[0]):
            b[z] = vol[z]
    stats = store.stats.as_dict()
    assert stats["writes"] == 2 and stats["reads"] == 0  # 2 shards, each written once, none read
    assert stats["deletes"] == 0 and stats["size_queries"] == 0
    assert stats["bytes_written"] == _stored_bytes(store, ds)  # written / stored = 1.0
    assert b.objects_written == 2
    # one shard held at a time, and the output arena where the chain compresses into one: a slot per chunk
    # (a chunk's bytes and the codec's bound) for a write-out group (14 of these small shards fit a
    # quarter of the budget)
    _, per_group, arena = b._geometry
    slot = ds._access.codec.encode_slot
    assert per_group == 14 and arena == (0 if slot is None else 14 * 18 * slot)
    assert b.peak_bytes == 16 * 24 * 24 * 2 + arena
    np.testing.assert_array_equal(ds[...], vol)


def test_tiles_in_any_order_write_each_shard_once():
    """2-D tiles into a 3-D volume, in a shuffled order: the written region of a shard is no box for a
    while (a mask then), and each shard still goes out once, complete, without a read."""
    ds = _make(MemoryStore())
    vol = _volume()
    tiles = [(z, y, x) for z in range(SHAPE[0]) for y in range(0, 24, 12) for x in range(0, 24, 8)]
    order = np.random.default_rng(1).permutation(len(tiles))
    ds.store.stats.reset()
    with ds.buffered(max_bytes=4 << 20) as b:
        for i in order:
            z, y, x = tiles[i]
            b[z, y : y + 12, x : x + 8] = vol[z, y : y + 12, x : x + 8]
    assert ds.store.stats.writes == 2 and ds.store.stats.reads == 0
    np.testing.assert_array_equal(ds[...], vol)


def test_reads_through_the_buffer_see_its_writes():
    ds = _make(MemoryStore(), fill_value=7)
    old = _volume(seed=2)
    ds[...] = old
    want = old.copy()
    with ds.buffered() as b:
        b[3, 2:20, 5] = 1  # part of some chunks: the stored values show around it
        want[3, 2:20, 5] = 1
        b[8:16] = 2  # whole chunks: read from memory
        want[8:16] = 2
        b[[0, 31], 0, [1, 2]] = [3, 4]  # an advanced write (a mask)
        want[[0, 31], 0, [1, 2]] = [3, 4]
        np.testing.assert_array_equal(b[...], want)
        np.testing.assert_array_equal(b[8:16, 4], want[8:16, 4])
        assert b[9, 9, 9] == 2 and b[3, 4, 5] == 1
        np.testing.assert_array_equal(b[[3, 9], ::-3, 5], want[[3, 9], ::-3, 5])
        np.testing.assert_array_equal(b[want > 60000 - 3], want[want > 60000 - 3])
        assert not np.array_equal(ds[...], want)  # nothing written yet: the shards are not complete
    np.testing.assert_array_equal(ds[...], want)


def test_a_read_of_wholly_buffered_chunks_costs_no_request():
    ds = _make(MemoryStore())
    with ds.buffered() as b:
        b[0:8] = 5
        ds.store.stats.reset()
        np.testing.assert_array_equal(b[0:8, :, 3], 5)
        assert ds.store.stats.reads == 0
        np.testing.assert_array_equal(b[6:10, 0, 0], [5, 5, 0, 0])  # chunk row 1 is not buffered
        assert ds.store.stats.reads > 0


def test_budget_forces_out_the_most_complete_shard_and_merges_the_rest_later():
    """Two shards written in alternation with room for one: each goes out when the other needs room,
    merged with what the store holds; the values are right and the buffer never held more than its
    budget."""
    ds = _make(MemoryStore())
    vol = _volume(seed=3)
    budget = 18432 + _arena(ds) + 9000  # one shard (18432 bytes) and the output arena, not two
    with ds.buffered(max_bytes=budget) as b:
        for z in range(16):
            b[z] = vol[z]
            b[16 + z] = vol[16 + z]
            assert b.nbytes <= budget
    assert b.peak_bytes <= budget
    assert b.objects_written > 2  # the budget forced shards out before they were complete
    np.testing.assert_array_equal(ds[...], vol)


def test_a_budget_below_one_shard_writes_straight_through():
    ds = _make(MemoryStore())
    vol = _volume(seed=4)
    ds.store.stats.reset()
    with ds.buffered(max_bytes=1000) as b:
        for z in range(4):
            b[z] = vol[z]
    assert b.peak_bytes == 0 and ds.store.stats.writes == 4  # one write per plane, as unbuffered
    np.testing.assert_array_equal(ds[:4], vol[:4])


def test_a_mask_that_does_not_fit_sends_the_object_out_and_the_piece_through():
    """Values of one shard and the arena fit the budget, a mask too does not: strided writes cannot be
    held."""
    ds = _make(MemoryStore())
    with ds.buffered(max_bytes=18432 + _arena(ds) + 100) as b:
        b[0:4] = 1  # a box
        b[4:8:2] = 2  # gaps: would take a mask
        assert b.pending == 0
    want = np.zeros(SHAPE, "u2")
    want[0:4] = 1
    want[4:8:2] = 2
    np.testing.assert_array_equal(ds[...], want)


@pytest.mark.parametrize("policy", ["commit", "discard"])
def test_an_exception_inside_the_block(policy):
    """``commit`` (the default) writes what was buffered before the exception, as unbuffered writes
    would have left it; ``discard`` drops what was not written yet, and shards written before stay."""
    ds = _make(MemoryStore())
    vol = _volume(seed=5)
    kwargs = {} if policy == "commit" else {"on_error": "discard"}
    with pytest.raises(RuntimeError, match="camera"):
        with ds.buffered(**kwargs) as b:
            for z in range(SHAPE[0]):
                if z == 20:
                    raise RuntimeError("camera unplugged")
                b[z] = vol[z]
    assert b.closed and b.nbytes == 0
    got = ds[...]
    np.testing.assert_array_equal(got[:16], vol[:16])  # shard 0 was complete: written either way
    if policy == "commit":
        np.testing.assert_array_equal(got[16:20], vol[16:20])
        np.testing.assert_array_equal(got[20:], 0)
    else:
        np.testing.assert_array_equal(got[16:], 0)
    with pytest.raises(AltarrError, match="closed"):
        b[0] = 1


def test_flush_discard_and_close_by_hand():
    ds = _make(MemoryStore())
    b = ds.buffered()
    b[0] = 3
    b.flush()
    assert b.pending == 0 and ds[0, 0, 0] == 3
    b[1] = 4
    b.discard()
    assert ds[1, 0, 0] == 0 and b.pending == 0
    b[2] = 5
    b.close()
    b.close()  # a second close is a no-op
    assert ds[2, 0, 0] == 5 and b.closed
    assert "closed" in repr(b)
    with pytest.raises(ValueError, match="on_error"):
        ds.buffered(on_error="maybe")
    with pytest.raises(ValueError, match="max_bytes"):
        ds.buffered(max_bytes=-1)
    with pytest.raises(ReadOnlyError):
        aa.open_dataset(ds.store, mode="r").buffered()


def test_values_are_cast_and_broadcast_as_assignments_are():
    ds = _make(MemoryStore())
    with ds.buffered() as b:
        b[0, 0] = 2.7  # a float into uint16, broadcast over a row
        b[1, :, ::-1] = np.arange(24)  # reversed
        b[2, 3, 4] = np.int64(9)
        with pytest.raises(OverflowError):
            b[3] = 70000
        with pytest.raises(ValueError, match="broadcast"):
            b[4, 0] = np.ones(5)
        with pytest.raises(IndexError):
            b[99] = 1
    np.testing.assert_array_equal(ds[0, 0], 2)
    np.testing.assert_array_equal(ds[1, 0], np.arange(24)[::-1])
    assert ds[2, 3, 4] == 9


@pytest.mark.parametrize(
    ("fmt", "shards"), [("zarr3", None), ("zarr2", None), ("n5", None), ("n5", (16, 24, 24))]
)
def test_every_format_and_unsharded_arrays(fmt, shards):
    """Unsharded arrays buffer chunks; completed chunks go out together, one call per group."""
    ds = _make(MemoryStore(), format=fmt, shards=shards, shape=(20, 24, 20))
    vol = _volume((20, 24, 20), seed=6)
    ds.store.stats.reset()
    with ds.buffered() as b:
        for z in range(20):
            b[z] = vol[z]
    n_objects = 3 * 3 * 3 if shards is None else 2 * 1 * 1
    assert ds.store.stats.writes == n_objects and ds.store.stats.reads == 0
    np.testing.assert_array_equal(ds[...], vol)


def test_zero_dimensional_dataset():
    ds = aa.create_dataset(MemoryStore(), shape=(), dtype="f8", chunks=())
    with ds.buffered() as b:
        b[()] = 2.5
        assert b[()] == 2.5
    assert ds[()] == 2.5


def test_random_writes_match_numpy(rng):
    """Random boxes, strided and reversed slices, integer arrays and masks, through buffers of several
    budgets, read back through the buffer and from the store: always NumPy's result."""
    for trial in range(60):
        shape = tuple(int(n) for n in rng.integers(1, 12, int(rng.integers(1, 4))))
        chunks = tuple(int(c) for c in rng.integers(1, 5, len(shape)))
        shards = tuple(c * int(rng.integers(1, 3)) for c in chunks) if rng.random() < 0.7 else None
        fmt = "zarr3" if shards else str(rng.choice(["zarr3", "zarr2", "n5"]))
        ds = aa.create_dataset(
            MemoryStore(), shape=shape, dtype="i2", chunks=chunks, shards=shards, format=fmt
        )
        want = rng.integers(-9, 9, shape).astype("i2")
        ds[...] = want
        obj = int(np.prod(shards or chunks))
        budget = int(rng.choice([0, 2 * obj, 3 * obj + obj, 1 << 20]))
        with ds.buffered(max_bytes=budget) as b:
            for _ in range(int(rng.integers(1, 12))):
                r = rng.random()
                if r < 0.5:
                    sel = tuple(
                        slice(int(a), int(a) + int(rng.integers(0, 6)), int(rng.choice([1, 1, 2])))
                        for a in (rng.integers(0, n) for n in shape)
                    )
                    if rng.random() < 0.3:
                        sel = tuple(slice(s.stop, s.start, -1) if s.stop > s.start else s for s in sel)
                elif r < 0.7:
                    sel = (int(rng.integers(0, shape[0])),)
                elif r < 0.85:
                    sel = (np.unique(rng.integers(0, shape[0], 3)),)
                else:
                    sel = rng.random(shape) < 0.3
                vals = rng.integers(-100, 100, np.shape(want[sel])).astype("i2")
                b[sel] = vals
                want[sel] = vals
                assert b.nbytes <= budget
                if rng.random() < 0.3:
                    np.testing.assert_array_equal(b[...], want, err_msg=f"trial {trial}: read through")
        np.testing.assert_array_equal(ds[...], want, err_msg=f"trial {trial}: {shape} {chunks} {shards}")


def test_threads_share_one_buffer():
    import threading

    ds = _make(MemoryStore())
    vol = _volume(seed=7)
    with ds.buffered() as b:
        threads = [
            threading.Thread(target=lambda k=k: [b.__setitem__(z, vol[z]) for z in range(k, SHAPE[0], 4)])
            for k in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    np.testing.assert_array_equal(ds[...], vol)


# --- unbuffered writes: what a plane costs -----------------------------------------------------------------
def test_an_unbuffered_plane_reads_and_rewrites_its_shard_once_and_decodes_only_the_partial_chunks():
    """``ds[z] = plane``: per touched shard one read and one write; the chunks the plane cuts are
    decoded once each and re-encoded, the shard's other chunks move as bytes (never decoded), and a
    chunk the write covers whole is encoded without being decoded."""
    from test_dataset_requests import CountingCodec

    ds = _make(MemoryStore(), compressor={"name": "altarr_test.counting"})
    ds[...] = _volume(seed=8)
    CountingCodec.reset()
    ds.store.stats.reset()
    ds[3] = 9  # cuts the 3 x 3 chunks of chunk row 0 in shard 0
    assert ds.store.stats.reads == 1 and ds.store.stats.writes == 1
    assert CountingCodec.decodes == 9 and CountingCodec.encodes == 9
    CountingCodec.reset()
    ds[0:8, 0:8, 0:12] = 4  # one chunk whole (not decoded), one in part (decoded)
    assert CountingCodec.decodes == 1 and CountingCodec.encodes == 2
    assert ds[3, 0, 0] == 4 and ds[3, 20, 20] == 9


def test_buffer_module_constants():
    assert buffer_module.ON_ERROR == ("commit", "discard")
    assert buffer_module.DEFAULT_BUFFER_BYTES >= buffer_module.WRITE_OUT_BYTES
