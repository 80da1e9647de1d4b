"""The dataset engine's parts on their own: each is built from explicit inputs and does one thing.

``ShardLayout`` carves and assembles nested shards as bytes without a store or a codec; ``ChunkCodec``
round-trips chunks without a store; ``ShardReader`` reads what ``ShardWriter`` wrote, with the request
counts of the contract; the façade's parts are the objects its callers reach through it.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import numpy as np
import pytest

import altarr as aa
from altarr.codecs import ArrayBytesCodec, BytesCodec, CodecChain, GzipCodec
from altarr.codecs.n5 import N5BlockCodec
from altarr.codecs.n5_compressions import IdentityCodec
from altarr.dataset.access import DatasetAccess
from altarr.dataset.chunk_codec import SCRATCH_KEEP_BYTES, ChunkCodec, scratch_array, scratch_bytes
from altarr.dataset.index_cache import IndexCache
from altarr.dataset.layout import ShardLayout
from altarr.dataset.shard_read import ShardReader
from altarr.dataset.shard_write import Merge, ShardWriter
from altarr.errors import CorruptChunkError, CorruptShardError, GridError
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
    parts = lay.build(top, None, new, lay.key(pos), parts=True)
    shard = memoryview(b"".join(bytes(p) for p in parts))
    assert bytes(lay.build(top, None, new, lay.key(pos))) == bytes(shard)
    found = lay.split_down(shard, top, {(4, 0), (4, 3), (4, 1), (4, 2)}, lay.key(pos))
    assert {c: bytes(b) for c, b in found.items()} == {(4, 0): b"first", (4, 3): b"second-chunk"}
    # an update carries the untouched chunks over as bytes and drops the deleted one
    again = lay.build(top, shard, {(4, 0): None, (4, 1): b"x"}, lay.key(pos))
    found = lay.split_down(memoryview(again), top, {(4, 0), (4, 1), (4, 3)}, lay.key(pos))
    assert {c: bytes(b) for c, b in found.items()} == {(4, 1): b"x", (4, 3): b"second-chunk"}
    assert lay.build(top, memoryview(again), {(4, 1): None, (4, 3): None}, lay.key(pos)) is None
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
    np.testing.assert_array_equal(codec.decode_chunk(raw[(0, 0)].data, (0, 0), raw[(0, 0)].key), a)
    np.testing.assert_array_equal(codec.decode_chunk(raw[(1, 1)].data, (1, 1), raw[(1, 1)].key), a - 4)
    # round 1: both outer indexes (shard (0, 0) and the missing one); round 2: the inner shard holding
    # (0, 0) and (1, 1) read whole (2 of its 4 chunks: the whole-shard rule); (2, 2)'s inner shard is absent
    assert store.stats.reads == 2 + 1
    assert raw[(1, 1)].span[0] == raw[(0, 0)].span[1]  # byte ranges in the object: back to back


def test_the_facade_hands_out_its_parts():
    ds = aa.create_dataset(MemoryStore(), shape=(4, 4), dtype="uint8", chunks=(2, 2), shards=(4, 4))
    acc = ds._access
    assert isinstance(acc, DatasetAccess)
    assert acc.grid is acc.layout.grid
    assert acc.reader.index_cache is acc.index_cache is acc.writer.index_cache
    assert acc.writer.codec is acc.codec  # the writer compresses with the façade's codec


# --- ChunkCodec, the thread buffers, the façade's attributes and the index cache, input by input ------


def codec_for(chain: list, dtype: str = "uint16", fill: Any = 7, prefix: str = "arr") -> ChunkCodec:
    """A codec for a (5, 6) array of (4, 4) chunks whose chunk chain is ``chain``."""
    ds = aa.create_dataset(MemoryStore(), shape=(5, 6), dtype=dtype, chunks=(4, 4), compressor=None)
    spec = dataclasses.replace(ds.spec, codecs=CodecChain(chain), fill_value=fill)
    return ChunkCodec(ShardLayout(spec, prefix), fill)


def test_n5_edge_blocks_are_stored_cut_and_read_back_cut_or_padded():
    cc = codec_for([N5BlockCodec()])
    assert cc.truncates
    edge = np.array([[1, 2]], "uint16")  # chunk (1, 1) is clipped to (1, 2)
    assert bytes(cc.encode_chunk(edge, (1, 1))) == bytes(N5BlockCodec().encode(edge))  # not padded
    # a block larger than its place (another writer stored the whole chunk): cut to the clipped shape
    whole = N5BlockCodec().encode(np.arange(16, dtype="uint16").reshape(4, 4))
    np.testing.assert_array_equal(cc.decode_chunk(whole, (1, 1), "k"), [[0, 1]])
    # a block smaller than its place: the rest is the fill value
    small = N5BlockCodec().encode(np.arange(1, 7, dtype="uint16").reshape(2, 3))
    got = cc.decode_chunk(small, (0, 0), "k")
    assert got.dtype == np.uint16
    np.testing.assert_array_equal(got, [[1, 2, 3, 7], [4, 5, 6, 7], [7, 7, 7, 7], [7, 7, 7, 7]])
    got = cc.decode_chunk(small, (1, 0), "k")  # clipped to (1, 4): cut in one dimension, padded in the other
    np.testing.assert_array_equal(got, [[1, 2, 3, 7]])


class _FlatCodec(ArrayBytesCodec):
    """A codec that decodes every chunk to one dimension (its raw bytes)."""

    name = "flat"

    def encode(self, array: np.ndarray) -> bytes:
        return array.tobytes()

    def decode(self, data: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return np.frombuffer(data, dtype=np.uint8)


def test_a_block_of_another_rank_is_refused_with_its_key_and_chunk():
    cc = codec_for([_FlatCodec()])
    with pytest.raises(CorruptShardError) as ei:
        cc.decode_chunk(b"abc", (0, 1), "arr/c/0/1", byte_range=(0, 15))
    e = ei.value
    assert (e.message, e.key, e.chunk) == ("chunk decoded to 1 dimensions, expected 2", "arr/c/0/1", (0, 1))


def test_a_direct_decode_of_the_wrong_size_is_refused_with_where_it_was():
    cc = codec_for([BytesCodec(), GzipCodec()])
    assert cc.direct is not None
    values = np.arange(16, dtype="uint16").reshape(4, 4)
    got = cc.decode_chunk(cc.encode_chunk(values, (0, 0)), (0, 0), "k")
    np.testing.assert_array_equal(got, values)
    assert got.flags.writeable
    short = GzipCodec().encode(b"x" * 30)  # a gzip stream does not announce its size
    with pytest.raises(CorruptChunkError) as ei:
        cc.decode_chunk(short, (0, 1), "arr/c/0/1", byte_range=(8, 40))
    e = ei.value
    assert e.message == "bytes codec: a chunk of shape (4, 4) and dtype uint16 needs 32 bytes, got 30"
    assert (e.key, e.chunk, e.byte_range) == ("arr/c/0/1", (0, 1), (8, 40))


@pytest.mark.parametrize(
    ("endian", "dtype", "stored", "direct"),
    [("big", "uint16", ">u2", False), ("little", "uint16", "<u2", True), (None, "uint8", "u1", True)],
)
def test_only_chunks_stored_in_machine_order_are_decoded_straight(
    endian: str | None, dtype: str, stored: str, direct: bool
):
    cc = codec_for([BytesCodec(endian=endian), GzipCodec()], dtype=dtype)  # no endian: one-byte types only
    assert (cc.direct is not None) == direct
    values = (np.arange(16).reshape(4, 4) * 257 + 1).astype(dtype)
    data = GzipCodec().encode(values.astype(stored).tobytes())
    np.testing.assert_array_equal(cc.decode_chunk(data, (0, 0), "k"), values)
    assert bytes(GzipCodec().decode(cc.encode_chunk(values, (0, 0)))) == values.astype(stored).tobytes()


@pytest.mark.parametrize("scratch", [False, True])
def test_an_uncompressed_chunk_is_decoded_into_its_own_writable_array(scratch: bool):
    cc = codec_for([BytesCodec()])
    data = np.arange(16, dtype="uint16").tobytes()
    got = cc.decode_chunk(data, (0, 0), "k", scratch=scratch)
    assert got.flags.writeable and not np.shares_memory(got, np.frombuffer(data, "uint8"))
    assert np.shares_memory(got, scratch_array((4, 4), np.dtype("uint16"))) == scratch
    np.testing.assert_array_equal(got, np.arange(16).reshape(4, 4))


def test_nan_fill_chunks_are_told_apart():
    cc = codec_for([BytesCodec()], dtype="float32", fill=np.float32("nan"))
    nan = np.full((4, 4), np.nan, "float32")
    assert cc.is_fill(nan) and cc.encode_chunk(nan, (0, 0)) is None
    inner = nan.copy()
    inner[1, 2] = 0  # not at a corner: only the full scan sees it
    assert not cc.is_fill(inner)
    corner = nan.copy()
    corner[3, 3] = 1
    assert not cc.is_fill(corner)
    assert cc.is_fill(np.empty((0, 4), "float32"))
    zero = codec_for([BytesCodec()], dtype="float32", fill=np.float32(0))
    assert not zero.is_fill(nan) and zero.is_fill(np.zeros((4, 4), "float32"))


def test_encode_errors_name_the_chunk_and_its_object():
    # N5 has no bool data type: its block codec refuses the chunk when encoding
    for chain in ([N5BlockCodec()], [N5BlockCodec(), GzipCodec()]):
        cc = codec_for(chain, dtype="bool", fill=False)
        for a, chunk in ((np.ones((4, 4), bool), (0, 1)), (np.ones((8, 8), bool)[::2, ::2], (1, 0))):
            with pytest.raises(aa.errors.UnsupportedError) as ei:
                cc.encode_chunk(a, chunk)
            assert ei.value.message.startswith("N5 has no data type for bool")
            assert (ei.value.key, ei.value.chunk) == (f"arr/c/{chunk[0]}/{chunk[1]}", chunk)


def test_an_encoded_view_of_the_scratch_buffer_is_copied_out():
    cc = codec_for([BytesCodec(), IdentityCodec()])  # the identity codec passes the bytes through
    values = np.arange(64, dtype="uint16").reshape(8, 8)[::2, ::2]  # not contiguous: gathered first
    got = cc.encode_chunk(values, (0, 0))
    scratch_array((4, 4), np.dtype("uint16"))[...] = 0  # the thread's next use of the buffer
    assert bytes(got) == np.ascontiguousarray(values).tobytes()


def test_coerce_cuts_a_padded_edge_chunk_and_casts_to_the_dtype():
    cc = codec_for([BytesCodec()])
    got = cc.coerce((1, 1), np.arange(16, dtype="uint16").reshape(4, 4))
    np.testing.assert_array_equal(got, [[0, 1]])
    got = cc.coerce((0, 1), np.full((4, 2), 3.0))
    assert got.dtype == np.uint16 and got.shape == (4, 2) and (got == 3).all()
    same = np.zeros((4, 4), "uint16")
    assert cc.coerce((0, 0), same) is same
    with pytest.raises(GridError) as ei:
        cc.coerce((1, 1), np.zeros((2, 2)))
    assert ei.value.message == (
        "chunk (1, 1) has shape (1, 2) (clipped at the array edge), got an array of shape (2, 2)"
    )
    assert ei.value.chunk == (1, 1)


def _address(mv: memoryview) -> int:
    return np.frombuffer(mv, dtype=np.uint8).ctypes.data


def _thread_buffer_story() -> list[bool]:
    keep = SCRATCH_KEEP_BYTES
    held = [scratch_bytes(keep)]  # held: a replaced buffer stays alive, so a new one has a new address
    same = []
    for n in (keep // 8, keep + (8 << 20), (keep + (8 << 20)) // 4, keep // 4, keep // 4):
        held.append(scratch_bytes(n))
        same.append(_address(held[-1]) == _address(held[-2]))
    return same


def test_scratch_buffers_are_given_back_only_when_large_and_far_too_large():
    out: list[list[bool]] = []
    t = threading.Thread(target=lambda: out.append(_thread_buffer_story()))  # fresh thread-local buffers
    t.start()
    t.join()
    # at the bound: kept; larger: grown; a quarter of it: kept; under a quarter: shrunk; then kept
    assert out == [[True, False, True, False, True]]


def test_the_facade_names_its_inputs_and_parts():
    store = MemoryStore()
    ds = aa.create_dataset(store, shape=(5, 6), dtype="uint16", chunks=(4, 4), path="arr")
    acc = DatasetAccess(store, "arr", ds.spec)
    assert (acc.store, acc.prefix, acc.spec) == (store, "arr", ds.spec)
    assert acc.layout.key((1, 0)) == "arr/c/1/0"
    store.stats.reset()
    acc.write_chunks([(0, 0)], [np.zeros((4, 4), "uint16")])  # the fill value: not stored by default
    assert store.stats.writes == 0 and store.get("arr/c/0/0") is None


def test_forgotten_index_entries_give_their_bytes_back():
    cache = IndexCache(MemoryStore(), max_bytes=100)
    tokens = {"a": "v", "b": "v", "c": "v"}
    cache.put("a", 1, 0, "v", np.zeros(80, np.uint8))
    cache.put("b", 1, 0, "v", np.zeros(10, np.uint8))
    cache.forget(["a"])
    cache.put("c", 1, 0, "v", np.zeros(30, np.uint8))  # 40 of 100 bytes: nothing evicted
    assert cache.get("b", 1, 0, tokens) is not None and cache.get("c", 1, 0, tokens) is not None
    assert cache.get("a", 1, 0, tokens) is None


def test_an_index_read_without_a_version_is_not_cached():
    store = MemoryStore()
    cache = IndexCache(store)
    cache.put("s", 1, 0, None, np.zeros(8, np.uint8))
    tokens: dict[str, Any] = {}
    assert cache.get("s", 1, 0, tokens) is None
    assert tokens == {} and store.stats.size_queries == 0  # nothing to check: no stat request


@pytest.mark.parametrize("lookups", [0, 16, 1000])
def test_index_entries_are_looked_up_alike_for_few_and_many_children(lookups, monkeypatch):
    """``shard_read._entries``: a few children through a memoryview on Python ints, many with one NumPy
    fancy index; the same entries either way, for positions on the global grid (taken modulo cps)."""
    from altarr.dataset import shard_read

    monkeypatch.setattr(shard_read, "SCALAR_LOOKUPS", lookups)
    rng = np.random.default_rng(7)
    cps = (3, 4, 5)
    index = rng.integers(0, 2**64, size=(*cps, 2), dtype=np.uint64)
    index[1, 2, 3] = 2**64 - 1
    positions = [tuple(int(v) for v in p) for p in rng.integers(0, 40, size=(20, 3))] + [(4, 6, 8)]
    expected = [tuple(int(w) for w in index[p[0] % 3, p[1] % 4, p[2] % 5]) for p in positions]
    words = memoryview(bytearray(index.tobytes())).cast("Q")  # as ShardingCodec.index_words gives it
    for form in (index, words):
        got = shard_read._entries(form, positions, cps)
        assert [tuple(e) for e in got] == expected and all(type(w) is int for e in got for w in e)
    assert expected[-1] == (2**64 - 1, 2**64 - 1)  # (4, 6, 8) is (1, 2, 3) of the node
    assert shard_read._entries(index, positions[:3], cps) == shard_read._entries(
        index, iter(positions[:3]), cps
    )


def test_opens_of_one_memoized_parse_share_the_layout_and_the_codec_plan_but_not_their_knobs():
    """``ShardLayout.of`` and ``ChunkCodec``'s derived parts are memoized by the codec chain, which
    every open of a memoized metadata parse shares; each open still has its own chunk codec, so a knob
    set on one (``encode_slot``, blosc's arena rows) stays there."""
    store = MemoryStore()
    for path in ("a", "b"):
        aa.create_dataset(
            store,
            path=path,
            shape=(8, 8),
            dtype="uint16",
            chunks=(2, 2),
            shards=(4, 4),
            compressor="blosc",
            checksum=False,
        )
    one, two = aa.open_dataset(store, path="a"), aa.open_dataset(store, path="a")
    assert one.spec.codecs is two.spec.codecs  # the parse's memo
    assert one._access.layout is two._access.layout and one._access.layout.prefix == "a"
    assert one._access.codec is not two._access.codec and one._access.codec.native is two._access.codec.native
    assert one._access.codec.native is not None
    one._access.codec.encode_slot = None
    assert two._access.codec.encode_slot is not None
    keeping = aa.open_dataset(store, path="a", write_empty_chunks=True)  # another plan: fill chunks kept
    assert keeping._access.layout is one._access.layout
    assert keeping._access.codec.native is not one._access.codec.native
    assert keeping._access.codec.native.fill_mode != one._access.codec.native.fill_mode
    other = aa.open_dataset(store, path="b")
    assert other._access.layout is not one._access.layout and other._access.layout.key((1, 0)) == "b/c/1/0"
    assert one._access.layout.key((1, 0)) == "a/c/1/0"


def test_a_chain_keeps_a_bounded_number_of_derived_values():
    from altarr.codecs import chain as chain_module

    chain = CodecChain(["bytes"])
    made = [chain.derive(("t", i), lambda i=i: [i]) for i in range(chain_module.DERIVED_ENTRIES)]
    assert (
        chain.derive(("t", 0), lambda: None) is made[0] and len(chain.derived) == chain_module.DERIVED_ENTRIES
    )
    assert chain.derive(("t", "new"), lambda: ["new"]) == ["new"] and len(chain.derived) == 1


def test_one_spec_at_two_prefixes_has_a_layout_for_each():
    spec = nested_spec()
    a, b = ShardLayout.of(spec, "a"), ShardLayout.of(spec, "b")
    assert a is not b and a is ShardLayout.of(spec, "a")
    assert (a.key((1, 0)), b.key((1, 0))) == ("a/c/1/0", "b/c/1/0")
