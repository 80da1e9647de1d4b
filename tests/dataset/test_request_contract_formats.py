"""The batched chunk API's request contract on N5 and Zarr v2, counted with ``store.stats`` (issue 2).

Unsharded (N5, Zarr v2 with either separator and memory order):

* ``read_chunks`` of k stored and m never-written chunks = k + m reads: one request per stored chunk, one
  that finds each missing chunk missing, nothing else (no size queries, no writes);
* ``write_chunks`` of k chunks = k writes and 0 reads;
* a region write reads exactly the chunks it covers partly, and writes every chunk it touches;
* a region read reads every chunk it touches once; ``delete_chunks`` reads nothing.

Sharded N5 (N5 4.x ``sharding_indexed``): one index read per shard plus the chunks' byte ranges (one per
chunk when the store does not merge ranges), one request for a missing shard, one more index read per
nesting level; a warm read skips the index (one version check per shard instead); writes cost one read
and one write per touched shard, no read when the shard is wholly replaced.

Each measured read goes through a freshly opened dataset, so no index cache from the writes helps it.
Stores: ``MemoryStore`` and ``LocalStore``; "exact" stores never merge ranges (``max_coalesced_size=1``),
so every range is a request of its own.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

import altarr as aa
from _peers import chunk_slices
from _shard_layout import Layout
from altarr.stores import LocalStore, MemoryStore

# region reads and writes through the native kernel and the pure-Python path (conftest.py)
pytestmark = pytest.mark.usefixtures("engine_path")

SHAPE = (19, 30)
CHUNKS = (4, 7)  # grid (5, 5); the last row and column of chunks are clipped
UNSHARDED = {
    "n5": {"format": "n5", "compressor": "gzip"},
    "zarr2": {"format": "zarr2", "compressor": "zlib"},
    "zarr2-slash-F": {"format": "zarr2", "compressor": "blosc", "dimension_separator": "/", "order": "F"},
}


@pytest.fixture(params=["memory", "local"])
def make_store(request, tmp_path):
    """A factory of fresh stores of one kind; ``exact=True`` turns range merging off."""
    counter = itertools.count()

    def make(exact: bool = False):
        kw = {"max_coalesced_size": 1} if exact else {}
        if request.param == "memory":
            return MemoryStore(**kw)
        return LocalStore(tmp_path / f"store{next(counter)}", **kw)

    return make


def values_of(ds, c, seed: int = 0) -> np.ndarray:
    shape = ds._access.grid.block_clipped_shape(c)
    return (np.arange(np.prod(shape)).reshape(shape) % 250 + 1 + seed + sum(c)).astype(ds.dtype)  # never 0


def reopen(store, mode: str = "r"):
    ds = aa.open_dataset(store, mode=mode)
    store.stats.reset()
    return ds


def create(store, layout: dict, shape=SHAPE, chunks=CHUNKS, **kw):
    return aa.create_dataset(store, shape=shape, dtype="uint16", chunks=chunks, **layout, **kw)


# --- unsharded N5 and Zarr v2 -------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", list(UNSHARDED))
def test_read_k_stored_and_m_missing_chunks(make_store, layout):
    store = make_store()
    ds = create(store, UNSHARDED[layout])
    present = [(0, 0), (4, 4), (2, 3), (4, 0), (1, 1)]
    ds.write_chunks(present, [values_of(ds, c) for c in present])
    missing = [(3, 3), (0, 4)]
    wanted = [present[0], missing[0], *present[1:3], missing[1], *present[3:]]
    stored_bytes = {c: len(store.get(ds.chunk_key(c))) for c in present}

    ds = reopen(store)
    got = ds.read_chunks(wanted)
    s = store.stats
    assert (s.reads, s.size_queries, s.writes, s.lists) == (len(present) + len(missing), 0, 0, 0)
    assert s.bytes_read == sum(stored_bytes.values())  # each stored object once, whole; missing ones: 0
    for c, a in zip(wanted, got, strict=True):  # request order, None for the missing ones
        if c in missing:
            assert a is None
        else:
            np.testing.assert_array_equal(a, values_of(ds, c))

    store.stats.reset()
    twice = ds.read_chunks([(4, 4), (4, 4), (3, 3), (3, 3)])
    assert store.stats.reads == 2  # a chunk asked for twice is read once
    assert store.stats.bytes_read == stored_bytes[(4, 4)]
    np.testing.assert_array_equal(twice[1], values_of(ds, (4, 4)))
    assert twice[2] is None and twice[3] is None


@pytest.mark.parametrize("layout", list(UNSHARDED))
def test_write_k_chunks_costs_k_writes_and_no_read(make_store, layout):
    store = make_store()
    ds = create(store, UNSHARDED[layout])
    chunks = [(0, 0), (0, 1), (3, 4), (4, 4), (2, 2), (4, 0)]
    store.stats.reset()
    ds.write_chunks(chunks, [values_of(ds, c) for c in chunks])
    s = store.stats
    assert (s.writes, s.reads, s.size_queries, s.deletes) == (len(chunks), 0, 0, 0)
    # overwriting stored chunks reads nothing either
    store.stats.reset()
    ds.write_chunks(chunks[:3], [values_of(ds, c, 5) for c in chunks[:3]])
    assert (store.stats.writes, store.stats.reads) == (3, 0)
    back = reopen(store).read_chunks(chunks)
    for c, a in zip(chunks, back, strict=True):
        np.testing.assert_array_equal(a, values_of(ds, c, 5 if c in chunks[:3] else 0))


def touched(ds, sel: tuple[slice, ...]) -> tuple[set, set]:
    """Chunks a region covers wholly (in their clipped extent) and partly."""
    full, part = set(), set()
    per_dim = []
    for s, n, size in zip(sel, ds.chunks, ds.shape, strict=True):
        dim = []
        for i in range(s.start // n, (s.stop - 1) // n + 1):
            lo, hi = i * n, min((i + 1) * n, size)
            dim.append((i, s.start <= lo and s.stop >= hi))
        per_dim.append(dim)
    for combo in itertools.product(*per_dim):
        c = tuple(i for i, _ in combo)
        (full if all(w for _, w in combo) else part).add(c)
    return full, part


@pytest.mark.parametrize("layout", list(UNSHARDED))
def test_region_write_reads_only_partly_covered_chunks(make_store, layout):
    store = make_store()
    ds = create(store, UNSHARDED[layout])
    stored = [(0, 1), (0, 2), (2, 2), (4, 3)]
    ds.write_chunks(stored, [values_of(ds, c) for c in stored])
    sel = (slice(2, 17), slice(7, 30))
    full, part = touched(ds, sel)
    assert (len(full), len(part)) == (12, 8)  # rows 1-3 x cols 1-4 whole; rows 0 and 4 partly

    expected = np.zeros(SHAPE, "uint16")
    for c in stored:
        expected[chunk_slices(ds, c)] = values_of(ds, c)
    region = (np.arange(15 * 23).reshape(15, 23) % 200 + 3).astype("uint16")
    expected[sel] = region

    ds = reopen(store, "r+")
    ds[sel] = region
    s = store.stats
    assert s.reads == len(part)  # partly covered chunks only, stored or not (a missing one: one request)
    assert s.writes == len(full) + len(part)
    assert s.size_queries == 0
    np.testing.assert_array_equal(reopen(store)[...], expected)


@pytest.mark.parametrize("layout", list(UNSHARDED))
def test_region_read_and_delete(make_store, layout):
    store = make_store()
    ds = create(store, UNSHARDED[layout])
    stored = [(0, 0), (1, 1), (1, 2), (3, 3)]
    ds.write_chunks(stored, [values_of(ds, c) for c in stored])
    stored_bytes = sum(len(store.get(ds.chunk_key(c))) for c in stored)
    ds = reopen(store, "r+")
    ds[3:13, 5:22]  # rows 0-3 x cols 0-3: 16 chunks, 4 of them stored
    assert (store.stats.reads, store.stats.size_queries) == (16, 0)
    assert store.stats.bytes_read == stored_bytes
    store.stats.reset()
    assert ds.delete_chunks([(0, 0), (4, 4), (1, 2)]) == [True, False, True]
    assert (store.stats.reads, store.stats.writes) == (0, 0)
    assert reopen(store).read_chunks([(0, 0), (1, 1), (1, 2)])[::2] == [None, None]


# --- sharded N5 ----------------------------------------------------------------------------------------------------
SH_CHUNKS = (2, 3)
SH_SHARDS = (8, 12)  # 4 x 4 chunks per shard; shard grid (3, 3) over SHAPE, edge shards partly out of bounds
N5_SHARDED = {"format": "n5", "compressor": "zstd", "shards": SH_SHARDS}


def sharded(store, shards=SH_SHARDS):
    return aa.create_dataset(
        store, shape=SHAPE, dtype="uint16", chunks=SH_CHUNKS, format="n5", compressor="zstd", shards=shards
    )


def fill_shards(ds, shards) -> None:
    chunks = [c for s in shards for c in ds.chunks_in_shard(s)]
    ds.write_chunks(chunks, [values_of(ds, c) for c in chunks])


def test_sharded_n5_metadata_is_n5_4_codecs(make_store):
    store = make_store()
    sharded(store)
    doc = json.loads(store.get("attributes.json"))
    assert doc["blockSize"] == [12, 8] and doc["dimensions"] == [30, 19]
    conf = doc["codecs"][0]["configuration"]
    # chunk_shape in NumPy order, as Java N5 writes it (@ReverseArray); blockSize/dimensions in N5 order
    assert conf["chunk_shape"] == [2, 3] and conf["index_location"] == "end"
    assert conf["codecs"][0] == {"name": "n5bytes"}


def test_sharded_n5_read_contract(make_store):
    store = make_store(exact=True)
    ds = sharded(store)
    fill_shards(ds, [(0, 0), (1, 1)])
    ds.delete_chunks([(1, 1)])  # an absent entry inside an existing shard
    in_00 = [(0, 0), (3, 3), (1, 2)]
    in_11 = [(4, 4), (7, 5), (6, 7)]
    absent_entry = [(1, 1)]
    missing_shard = [(9, 9), (8, 0)]  # shards (2, 2) and (2, 0) were never written
    wanted = [in_00[0], *missing_shard[:1], in_11[0], *absent_entry, *in_00[1:], *in_11[1:], missing_shard[1]]
    lays = [Layout(ds, store, (0, 0)), Layout(ds, store, (1, 1))]
    chunk_bytes = lays[0].chunk_bytes(in_00) + lays[1].chunk_bytes(in_11)

    ds = reopen(store)
    got = ds.read_chunks(wanted)
    s = store.stats
    # 2 index reads + 6 chunk ranges + 1 request per missing shard; the absent entry costs nothing
    assert (s.reads, s.size_queries, s.writes) == (2 + 6 + 2, 0, 0)
    assert s.bytes_read == lays[0].index + lays[1].index + chunk_bytes
    for c, a in zip(wanted, got, strict=True):
        if c in absent_entry or c in missing_shard:
            assert a is None
        else:
            np.testing.assert_array_equal(a, values_of(ds, c))

    # warm: the indexes are reused after one version check per shard
    store.stats.reset()
    ds.read_chunks(in_00 + in_11)
    assert (store.stats.reads, store.stats.size_queries) == (6, 2)
    assert store.stats.bytes_read == chunk_bytes


def test_sharded_n5_ranges_are_merged_by_a_coalescing_store(make_store):
    store = make_store()  # default coalescing: the chunk ranges of one small shard become one request
    ds = sharded(store)
    fill_shards(ds, [(0, 0), (1, 1)])
    lays = [Layout(ds, store, (0, 0)), Layout(ds, store, (1, 1))]
    ds = reopen(store)
    ds.read_chunks([(0, 0), (3, 3), (1, 2), (4, 4), (7, 5), (6, 7)])
    assert store.stats.reads == 2 + 2
    spans = lays[0].span([(0, 0), (3, 3), (1, 2)]) + lays[1].span([(4, 4), (7, 5), (6, 7)])
    assert store.stats.bytes_read == lays[0].index + lays[1].index + spans


def test_sharded_n5_most_of_a_shard_is_read_whole(make_store):
    store = make_store(exact=True)
    ds = sharded(store)
    fill_shards(ds, [(0, 0)])
    size = Layout(ds, store, (0, 0)).size
    ds = reopen(store)
    got = ds.read_chunks(ds.chunks_in_shard((0, 0))[:9])  # 9 of 16: one request for the whole object
    assert store.stats.reads == 1 and all(a is not None for a in got)
    assert store.stats.bytes_read == size


def test_nested_sharded_n5_one_index_read_per_level(make_store):
    store = make_store(exact=True)
    ds = sharded(store, shards=[(4, 6), (8, 12)])
    assert ds.shard_levels == [(2, 3), (4, 6), (8, 12)]
    fill_shards(ds, [(0, 0), (1, 1)])
    ds = reopen(store)
    got = ds.read_chunks([(5, 7)])
    assert store.stats.reads == 3  # outer index, inner index, the chunk
    np.testing.assert_array_equal(got[0], values_of(ds, (5, 7)))
    store.stats.reset()
    ds = reopen(store)
    ds.read_chunks([(0, 0), (5, 7)])  # two outer shards
    assert store.stats.reads == 2 * 3


def test_sharded_n5_write_contract(make_store):
    store = make_store(exact=True)
    ds = sharded(store)
    fill_shards(ds, [(0, 0), (1, 1)])

    ds = reopen(store, "r+")
    updates = [(0, 0), (2, 1), (5, 5), (4, 6), (9, 9)]  # shards (0,0), (1,1) partly; (2,2) new
    ds.write_chunks(updates, [values_of(ds, c, 9) for c in updates])
    s = store.stats
    assert (s.reads, s.writes) == (3, 3)  # one whole-object read per touched shard (the new one: missing)

    # every in-bounds chunk of an edge shard replaced: no read at all
    edge = ds.chunks_in_shard((2, 1))
    assert len(edge) == 2 * 4  # 2 of its 4 chunk rows lie outside the array
    store.stats.reset()
    ds.write_chunks(edge, [values_of(ds, c, 4) for c in edge])
    assert (store.stats.reads, store.stats.writes) == (0, 1)

    # a region write touching 4 shards, each through partly covered chunks: one read and one write each
    store.stats.reset()
    ds[6:10, 10:14] = 7
    assert (store.stats.reads, store.stats.writes) == (4, 4)

    expected = np.zeros(SHAPE, "uint16")
    for c in [c for s in [(0, 0), (1, 1)] for c in ds.chunks_in_shard(s)]:
        expected[chunk_slices(ds, c)] = values_of(ds, c)
    for c in updates:
        expected[chunk_slices(ds, c)] = values_of(ds, c, 9)
    for c in edge:
        expected[chunk_slices(ds, c)] = values_of(ds, c, 4)
    expected[6:10, 10:14] = 7
    np.testing.assert_array_equal(reopen(store)[...], expected)
