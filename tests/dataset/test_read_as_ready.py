"""Region reads on stores that hand their answers over as they arrive (``answers_as_ready``): the chunks
of each answer are decoded while the next one is still on the way, with the same values and the same
requests as reading everything first."""

from __future__ import annotations

import time

import numpy as np
import pytest

import altarr as aa
from altarr.dataset import kernel
from altarr.dataset.shard_read import RESTART, ShardReader
from altarr.errors import ChecksumError
from altarr.stores import MemoryStore, Range


class AsReady(MemoryStore):
    """A memory store that hands the answers of a batch over one at a time, last request first, and
    logs each hand-over."""

    answers_as_ready = True

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, str]] = []
        self.before_answers = None  # called with the requests before a batch is answered

    def get_ranges_as_ready(self, requests):
        if self.before_answers is not None:
            self.before_answers(requests)
        answers = [a for batch in super().get_ranges_as_ready(requests) for a in batch]
        for i, data, version, size in reversed(answers):
            self.events.append(("arrived", requests[i][0]))
            yield [(i, data, version, size)]


def _dataset(store, shards, compressor="zstd", shape=(24, 40), chunks=(4, 5)):
    ds = aa.create_dataset(
        store, shape=shape, dtype="int32", chunks=chunks, shards=shards, compressor=compressor, fill_value=-1
    )
    values = np.arange(np.prod(shape), dtype="int32").reshape(shape)
    ds[...] = values
    return ds, values


LAYOUTS = [(8, 10), [(8, 10), (16, 20)]]
SELECTIONS = [
    (slice(None), slice(None)),  # every shard read whole
    (slice(0, 8), slice(0, 10)),  # one whole shard
    (slice(1, 3), slice(2, 30)),  # a few chunks of several shards: index round, then ranges
    (slice(3, 21, 2), slice(None, None, -3)),  # steps
    (5, slice(4, 38)),
]


@pytest.mark.parametrize("compressor", ["zstd", None, "gzip"])  # the kernel's codecs, and others
@pytest.mark.parametrize("shards", LAYOUTS)
def test_region_reads_decode_each_answer_as_it_arrives_with_the_same_values_and_requests(shards, compressor):
    ready, plain = AsReady(), MemoryStore()
    ds, values = _dataset(ready, shards, compressor)
    ref, _ = _dataset(plain, shards, compressor)
    ref.delete_chunks([(5, 7), (0, 3)])
    ds.delete_chunks([(5, 7), (0, 3)])  # stored nowhere: fill values
    values[20:24, 35:40] = values[0:4, 15:20] = -1
    for sel in SELECTIONS:
        ready.stats.reset(), plain.stats.reset()
        ds._access.index_cache.clear(), ref._access.index_cache.clear()
        got = ds[sel]
        np.testing.assert_array_equal(got, values[sel])
        np.testing.assert_array_equal(ref[sel], values[sel])
        assert (ready.stats.reads, ready.stats.rounds) == (plain.stats.reads, plain.stats.rounds), sel


def test_each_answer_is_handed_to_the_decoder_before_the_next_one_is_taken(monkeypatch):
    store = AsReady()
    ds, values = _dataset(store, (8, 10))
    added = []
    real_add = kernel.ReadInto.add

    def add(self, raw):
        store.events.append(("decoding", sorted({v[0] for v in raw.values() if v is not None})))
        added.append(len(raw))
        return real_add(self, raw)

    monkeypatch.setattr(kernel.ReadInto, "add", add)
    store.events.clear()
    np.testing.assert_array_equal(ds[0:16, 0:20], values[0:16, 0:20])  # 4 shards, read whole
    assert store.events == [
        ("arrived", "c/1/1"), ("decoding", ["c/1/1"]), ("arrived", "c/1/0"), ("decoding", ["c/1/0"]),
        ("arrived", "c/0/1"), ("decoding", ["c/0/1"]), ("arrived", "c/0/0"), ("decoding", ["c/0/0"]),
    ]  # fmt: skip
    assert added == [4, 4, 4, 4]
    store.events.clear()
    np.testing.assert_array_equal(ds[1:3, 2:30], values[1:3, 2:30])  # indexes cached: one data round
    # c/0/2 (its index not cached, half its chunks wanted) read whole in the index round, then 4 chunks
    # of c/0/0 and c/0/1 by range: each answer (this store does not merge) decoded as it comes
    assert [e[0] for e in store.events] == ["arrived", "decoding"] * 5
    assert all([a[1]] == d[1] for a, d in zip(store.events[::2], store.events[1::2], strict=True))


def test_visits_and_many_region_reads_take_each_answer_before_the_next_and_fail_after_every_row():
    store, plain = AsReady(), MemoryStore()
    ds, values = _dataset(store, (8, 10))
    ref, _ = _dataset(plain, (8, 10))
    coords = [(0, 0), (2, 3), (0, 0), (5, 1), (3, 6)]  # a repeat, four shards
    store.events.clear()
    ds.visit_chunks(coords, lambda i, a: store.events.append(("visited", ds.chunk_key(coords[i]))))
    kinds = [e[0] for e in store.events]  # the indexes' round, then the chunks' (4 shards, 4 answers)
    assert kinds[4:] == ["arrived", "visited", "visited"] + ["arrived", "visited"] * 3  # (0, 0) twice
    assert all(
        e[1] == a[1] for a, e in zip(store.events[4:-1], store.events[5:], strict=True) if e[0] == "visited"
    )
    sels = [(slice(1, 7), slice(3, 33)), (slice(9, 23), slice(0, 12)), (4, slice(None))]
    store.stats.reset(), plain.stats.reset()
    ds._access.index_cache.clear(), ref._access.index_cache.clear()
    for got, ref_got, sel in zip(ds.read_regions(sels), ref.read_regions(sels), sels, strict=True):
        np.testing.assert_array_equal(got, values[sel])
        np.testing.assert_array_equal(ref_got, values[sel])
    assert (store.stats.reads, store.stats.rounds) == (plain.stats.reads, plain.stats.rounds)
    seen = []

    def fn(i, a):
        seen.append(i)
        if i == 1:  # a chunk of the second answer: those of the others are visited all the same
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        ds.visit_chunks(coords, fn)
    assert sorted(seen) == list(range(len(coords)))


def test_a_shard_read_whole_is_visited_once_the_ranges_of_the_round_after_are_sent():
    """One shard read whole and one by its index in the same round: the second's ranges go out before the
    first's chunks are visited (decoded while the ranges are on the way, not before they are sent)."""

    class Sending(AsReady):  # logs a batch when it is sent (obstore sends it in the call)
        def get_ranges_as_ready(self, requests):
            self.events.append(("sent", len(requests)))
            return super().get_ranges_as_ready(requests)

    store = Sending()
    ds, values = _dataset(store, (8, 20))
    coords = [(i, j) for i in range(2) for j in range(4)] + [(0, 4), (1, 4)]  # c/0/0 all, c/0/1 two of 8
    store.events.clear()
    ds.visit_chunks(coords, lambda i, a: store.events.append(("visited", ds.chunk_key(coords[i]))))
    assert (
        store.events
        == [("sent", 2), ("arrived", "c/0/1"), ("arrived", "c/0/0"), ("sent", 2)]
        + [("visited", "c/0/0")] * 8
        + [("arrived", "c/0/1"), ("visited", "c/0/1")] * 2
    )
    ds._access.index_cache.clear()
    np.testing.assert_array_equal(ds.read_regions([np.s_[0:8, 0:25]])[0], values[0:8, 0:25])


def test_a_shard_replaced_between_the_rounds_is_read_again_and_what_was_decoded_is_overwritten():
    """Shard c/0/0 is read whole (decoded at once), c/0/1 by index and ranges; before the ranges are
    answered another writer replaces both. The read notices it by c/0/1's version, starts over, and
    every value is the new one, also where the first attempt had decoded the old shard already."""
    store = AsReady()
    ds, values = _dataset(store, (8, 20))
    other = aa.open_dataset(store, mode="r+")
    sel = (slice(0, 8), slice(0, 25))  # all 8 chunks of c/0/0, 2 of c/0/1's 8: below the whole rule
    replaced = []

    def replace(requests):
        if not replaced and all(isinstance(r, Range) for _, r in requests):  # the chunks' round
            replaced.append(True)
            other[0:8, 0:40] = -values[0:8, 0:40]

    store.before_answers = replace
    parts = []
    real = ShardReader.read_raw_as_ready

    def spy(self, chunks, **kw):
        for part in real(self, chunks, **kw):
            parts.append(part)
            yield part

    ShardReader.read_raw_as_ready = spy
    try:
        got = ds[sel]
    finally:
        ShardReader.read_raw_as_ready = real
    assert replaced and RESTART in parts  # started over once
    np.testing.assert_array_equal(got, -values[sel])


def test_a_corrupt_shard_arriving_after_others_fails_the_read_once_their_decoding_is_over(monkeypatch):
    """The shard handed over second has a corrupt index: the read raises its error, but only after the
    decoding of the shard handed over first (slowed down here) has finished: nothing writes into the
    result once the call is over."""
    store = AsReady()
    ds, values = _dataset(store, (8, 10))
    key = ds.chunk_key((2, 0))  # c/1/0: handed over after c/1/1, before c/0/*
    assert key == "c/1/0"
    raw = bytes(store.get(key))
    store.set(key, raw[:-16] + b"\xff" * 16)  # the last index entry and the checksum
    running, finished = [], []
    real_init = kernel._Job.__init__

    def slow_init(self, *a):
        real_init(self, *a)
        call = self.call

        def slow_call():
            running.append(1)
            time.sleep(0.05)
            call()
            finished.append(1)

        self.call = slow_call

    monkeypatch.setattr(kernel._Job, "__init__", slow_init)
    with pytest.raises(ChecksumError, match="shard index: crc32c mismatch") as e:
        ds[0:16, 0:20]
    assert e.value.key == key
    assert running and len(finished) == len(running)  # c/1/1's decoding had started, and was over
    np.testing.assert_array_equal(ds[0:8, :], values[0:8, :])  # the others still read


def test_the_decoder_leaves_chunks_it_cannot_decode_to_the_python_path():
    out = np.zeros((2, 2), "u1")
    decoder = kernel.ReadInto(None, out, {})
    decoder.add({(0, 0): None, (0, 1): ("k", b"xx", (0, 2))})
    decoder.add({(1, 1): None})
    assert decoder.finish() == [(0, 0), (0, 1), (1, 1)]
    assert decoder.finish() == []  # emptied


# --- the result's pages touched while the answers are on the way ------------------------------------------
def test_touch_pages_writes_one_zero_byte_a_page_and_nothing_else():
    import mmap

    page = mmap.PAGESIZE
    out = np.full(kernel.TOUCH_BYTES + 3 * page + 5, 0xAB, dtype=np.uint8)
    with aa.set_options(threads=2):
        wait = kernel.touch_pages(out)
        assert wait is not None
        wait()
    offsets = np.flatnonzero(out != 0xAB)
    np.testing.assert_array_equal(offsets, np.arange(0, out.size, page))  # every page's first byte
    assert not out[offsets].any()
    big = np.empty(kernel.TOUCH_BYTES // 4, dtype=np.float32)
    with aa.set_options(threads=2):
        assert kernel.touch_pages(big[: big.size - 1]) is None  # under TOUCH_BYTES
        assert kernel.touch_pages(np.empty((2, big.size), np.float32)[:, ::2]) is None  # not contiguous
    with aa.set_options(threads=1):
        assert kernel.touch_pages(big) is None  # no pool: nothing to overlap with


def _late_touch(touched):
    """A ``touch_pages`` that writes the whole result 50 ms late, then logs its shape."""
    import threading

    def touch(out):
        def run():
            time.sleep(0.05)
            out.view(np.uint8).reshape(-1)[:] = 0x7F
            touched.append(out.shape)

        t = threading.Thread(target=run)
        t.start()
        return lambda skip_unstarted=False: t.join()

    return touch


@pytest.mark.parametrize("sel", SELECTIONS)
def test_nothing_is_decoded_into_the_result_before_its_pages_are_touched(monkeypatch, sel):
    """A touch that writes the whole result, late: the values read are the decoded ones, so every decode
    (and the fill of missing chunks) waited for it."""
    touched = []
    monkeypatch.setattr(kernel, "touch_pages", _late_touch(touched))
    store = AsReady()
    ds, values = _dataset(store, (8, 10))
    ds.delete_chunks([(0, 3)])
    values[0:4, 15:20] = -1
    ds._access.index_cache.clear()
    np.testing.assert_array_equal(ds[sel], values[sel])
    assert touched  # the as-ready path touched this read's result


def test_a_large_region_read_touches_its_result_on_the_pool_and_reads_the_same_values(monkeypatch):
    monkeypatch.setattr(kernel, "TOUCH_BYTES", 1024)
    calls = []
    real = kernel.touch_pages
    monkeypatch.setattr(kernel, "touch_pages", lambda out: calls.append(out.nbytes) or real(out))
    with aa.set_options(threads=2):
        store = AsReady()
        ds, values = _dataset(store, (8, 10), shape=(48, 80))
        for _ in range(3):
            ds._access.index_cache.clear()
            np.testing.assert_array_equal(ds[...], values)
    assert calls == [48 * 80 * 4] * 3


def test_a_read_that_fails_returns_only_once_nothing_touches_its_result(monkeypatch):
    touched = []
    monkeypatch.setattr(kernel, "touch_pages", _late_touch(touched))
    store = AsReady()
    ds, _ = _dataset(store, (8, 10))
    ds._access.index_cache.clear()

    def fail(requests):
        raise OSError("the network is down")

    store.before_answers = fail
    with pytest.raises(OSError, match="network is down"):
        ds[...]
    assert touched == [(24, 40)]  # done before the error reached the caller


def test_the_result_is_touched_once_the_first_requests_are_out_and_only_then(monkeypatch):
    """The pool touches the result's pages while the requests wait for their answers, not while they
    are being sent: once, after the first batch went to the store (an index round's, or the data
    round's when the indexes are cached)."""
    log = []

    class Sending(AsReady):
        def get_ranges_as_ready(self, requests):
            log.append("sent")
            return super().get_ranges_as_ready(requests)

    monkeypatch.setattr(kernel, "touch_pages", lambda out: log.append("touch"))
    store = Sending()
    ds, values = _dataset(store, (8, 10))
    for sel, expect in [
        ((slice(0, 16), slice(0, 20)), ["sent", "touch"]),  # 4 shards read whole: one round
        ((slice(1, 3), slice(2, 30, 10)), ["sent", "touch", "sent"]),  # 3 indexes, then 3 ranges
        ((slice(1, 3), slice(2, 30, 10)), ["sent", "touch"]),  # indexes cached: the ranges alone
    ]:
        if len(expect) == 3:
            ds._access.index_cache.clear()
        log.clear()
        np.testing.assert_array_equal(ds[sel], values[sel])
        assert log == expect, sel


def test_touching_that_no_pool_thread_took_up_is_dropped_not_waited_for(monkeypatch):
    """Every pool thread busy with other work: the read decodes on the calling thread and returns
    without waiting for the touch it asked for (which then never runs)."""
    import threading

    from altarr import _threads

    monkeypatch.setattr(kernel, "TOUCH_BYTES", 1024)
    real = kernel.touch_pages
    touched = []

    def counting(out):
        wait = real(out)
        touched.append(wait is not None)
        return wait

    monkeypatch.setattr(kernel, "touch_pages", counting)
    with aa.set_options(threads=2):
        store = AsReady()
        ds, values = _dataset(store, (8, 10), shape=(48, 80))
        ds._access.index_cache.clear()
        release = threading.Event()
        pool = _threads._pool(2)
        blockers = [pool.submit(release.wait, 60) for _ in range(2)]
        got = []
        reader = threading.Thread(target=lambda: got.append(ds[...]))
        reader.start()
        reader.join(30)
        done = not reader.is_alive()
        release.set()
        reader.join()
        for b in blockers:
            b.result()
    assert done, "the read waited for a touch no pool thread could start"
    assert touched == [True]
    np.testing.assert_array_equal(got[0], values)
