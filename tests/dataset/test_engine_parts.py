"""The dataset engine's parts on their own: each is built from explicit inputs and does one thing.

``ShardLayout`` carves and assembles nested shards as bytes without a store or a codec; ``ChunkCodec``
round-trips chunks without a store; ``ShardReader`` reads what ``ShardWriter`` wrote, with the request
counts of the contract; the façade's parts are the objects its callers reach through it.
"""

from __future__ import annotations

import numpy as np
import pytest

import altarr as aa
from altarr.dataset.access import DatasetAccess
from altarr.dataset.chunk_codec import ChunkCodec
from altarr.dataset.index_cache import IndexCache
from altarr.dataset.layout import ShardLayout
from altarr.dataset.shard_read import ShardReader
from altarr.dataset.shard_write import Merge, ShardWriter
from altarr.stores import MemoryStore


def nested_spec():
    ds = aa.create_dataset(
        MemoryStore(),
        shape=(9, 8),
        dtype="uint16",
        chunks=(2, 2),
        shards=[(4, 4), (8, 8)],
        compressor="zstd",
    )
    return ds.spec


def test_layout_builds_and_splits_nested_shards_as_bytes():
    lay = ShardLayout(nested_spec(), "arr")
    assert lay.grid.nlevels == 3 and lay.sharded
    top = lay.grid.nlevels - 1
    pos = (1, 0)  # the edge shard: row 8 of a 9-row array
    new = {(4, 0): b"first", (4, 3): b"second-chunk", (4, 1): None}
    parts = lay.build(top, pos, None, new, lay.key(pos), parts=True)
    shard = memoryview(b"".join(bytes(p) for p in parts))
    assert bytes(lay.build(top, pos, None, new, lay.key(pos))) == bytes(shard)
    found = lay.split_down(shard, top, pos, {(4, 0), (4, 3), (4, 1), (4, 2)}, lay.key(pos))
    assert {c: bytes(b) for c, b in found.items()} == {(4, 0): b"first", (4, 3): b"second-chunk"}
    # an update carries the untouched chunks over as bytes and drops the deleted one
    again = lay.build(top, pos, shard, {(4, 0): None, (4, 1): b"x"}, lay.key(pos))
    found = lay.split_down(memoryview(again), top, pos, {(4, 0), (4, 1), (4, 3)}, lay.key(pos))
    assert {c: bytes(b) for c, b in found.items()} == {(4, 1): b"x", (4, 3): b"second-chunk"}
    assert lay.build(top, pos, memoryview(again), {(4, 1): None, (4, 3): None}, lay.key(pos)) is None
    assert lay.group_by_shard([(0, 0), (4, 3), (1, 1)]) == {(0, 0): [(0, 0), (1, 1)], (1, 0): [(4, 3)]}
    assert lay.object_key((4, 3)) == lay.key((1, 0))


def test_chunk_codec_round_trips_edge_chunks_and_tells_fill_apart():
    lay = ShardLayout(nested_spec(), "")
    cc = ChunkCodec(lay, 0)
    edge = np.arange(2, dtype="uint16").reshape(1, 2)  # clipped at the array edge
    data = cc.encode_chunk(edge, (4, 0))
    np.testing.assert_array_equal(cc.decode_chunk(data, (4, 0), "k"), edge)
    assert cc.encode_chunk(np.zeros((2, 2), "uint16"), (0, 0)) is None
    keep = ChunkCodec(lay, 0, write_empty_chunks=True)
    assert keep.encode_chunk(np.zeros((2, 2), "uint16"), (0, 0)) is not None
    with pytest.raises(aa.errors.GridError):
        cc.coerce((0, 0), np.zeros((3, 3)))
    assert cc.coerce((0, 0), np.ones((2, 2), "f8")).dtype == np.uint16


def test_reader_reads_what_the_writer_wrote_with_the_contract_counts():
    store = MemoryStore()
    spec = nested_spec()
    lay = ShardLayout(spec, "")
    cache = IndexCache(store)
    codec = ChunkCodec(lay, 0)
    reader = ShardReader(store, lay, cache)
    writer = ShardWriter(store, lay, codec, reader, cache)
    a = np.full((2, 2), 7, "uint16")
    assert writer.apply({(0, 0): a, (1, 1): Merge(lambda old: old + 3)}) == {(0, 0): False, (1, 1): False}
    assert (store.stats.reads, store.stats.writes) == (1, 1)  # the shard was missing: read once, written once
    store.stats.reset()
    cache.clear()
    raw = reader.read_raw([(0, 0), (1, 1), (2, 2), (4, 0)])
    assert raw[(2, 2)] is None and raw[(4, 0)] is None  # an absent chunk and a missing shard
    np.testing.assert_array_equal(codec.decode_chunk(raw[(0, 0)][1], (0, 0), raw[(0, 0)][0]), a)
    np.testing.assert_array_equal(codec.decode_chunk(raw[(1, 1)][1], (1, 1), raw[(1, 1)][0]), a - 4)
    # round 1: both outer indexes (shard (0, 0) and the missing one); round 2: the inner shard holding
    # (0, 0) and (1, 1) read whole (2 of its 4 chunks: the whole-shard rule); (2, 2)'s inner shard is absent
    assert store.stats.reads == 2 + 1
    assert raw[(1, 1)][2][0] == raw[(0, 0)][2][1]  # byte ranges in the object: back to back


def test_the_facade_hands_out_its_parts():
    ds = aa.create_dataset(MemoryStore(), shape=(4, 4), dtype="uint8", chunks=(2, 2), shards=(4, 4))
    acc = ds._access
    assert isinstance(acc, DatasetAccess)
    assert acc.grid is acc.layout.grid and acc.sharding is acc.layout.sharding
    assert acc.reader.index_cache is acc.index_cache is acc.writer.index_cache
    assert acc.native is acc.codec.native
    acc.encode_slot = None  # the façade's knob reaches the codec the writer uses
    assert acc.writer.codec.encode_slot is None
