"""The store conformance suite: one class of behavioural tests that every store, present and future, runs.

Subclass :class:`StoreConformance` in a test module and give it a ``store`` fixture that yields a fresh,
empty, writable store (closed afterwards)::

    class TestMyStore(StoreConformance):
        @pytest.fixture
        def store(self, tmp_path):
            s = MyStore(tmp_path)
            yield s
            s.close()

It covers whole-object, ranged, open-ended and suffix reads in the typed and the legacy request forms,
missing keys, clipping, batch order, coalescing counts, objects written in parts, deletes, listings,
stat versions, versioned and sized reads, read-only refusal, key validation, statistics and pickling.
Stores declare what differs (``cheap_stat``, ``versioned_reads``, ``reports_versions``,
``reports_sizes``); the tests read those declarations, they do not special-case store classes.
"""

from __future__ import annotations

import copy
import os
import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from altarr.errors import InvalidKeyError, ReadOnlyError
from altarr.stores import WHOLE, Offset, Range, Suffix

__all__ = ["DATA", "StoreConformance"]

DATA = bytes(range(256)) * 4  # 1024 bytes


class StoreConformance:
    """Behavioural tests of the store contract (``altarr.stores.base``); subclasses provide ``store``."""

    @pytest.fixture
    def store(self):  # pragma: no cover - every subclass provides its own
        raise NotImplementedError("a StoreConformance subclass provides a `store` fixture")

    # --- typed requests ------------------------------------------------------------------------------
    def test_typed_requests_read_like_slices(self, store):
        store.set("k", DATA)
        store.set("empty", b"")
        reqs = [
            ("k", WHOLE),
            ("k", Range(10, 20)),
            ("k", Range(1000, 2000)),  # clipped at the end
            ("k", Range(5000, 6000)),  # past the end: empty
            ("k", Range(30, 20)),  # stop before start: empty
            ("k", Offset(1000)),
            ("k", Offset(0)),
            ("k", Suffix(7)),
            ("k", Suffix(5000)),  # longer than the object: all of it
            ("empty", WHOLE),
            ("empty", Suffix(4)),
            ("missing", Range(0, 10)),
            ("missing", Suffix(4)),
        ]
        want = [
            DATA,
            DATA[10:20],
            DATA[1000:],
            b"",
            b"",
            DATA[1000:],
            DATA,
            DATA[-7:],
            DATA,
            b"",
            b"",
            None,
            None,
        ]
        got = store.get_ranges(reqs)
        assert got == want
        assert all(r is None or type(r) is bytes for r in got)
        assert store.get_range("k", Suffix(3)) == DATA[-3:] and store.get_range("k", Range(2, 4)) == DATA[2:4]

    def test_typed_requests_merge_into_few_backend_requests(self, store):
        store.set("k", DATA)
        typed = [("k", Range(0, 4)), ("k", Range(100, 104)), ("k", Suffix(8)), ("k", Offset(900))]
        store.stats.reset()
        assert store.get_ranges(typed) == [DATA[:4], DATA[100:104], DATA[-8:], DATA[900:]]
        assert store.stats.reads == 2  # the ranges and the offset merge into one span; the suffix apart

    def test_only_typed_requests_are_taken(self, store):
        store.set("k", DATA)
        for bad in [("k", 0, 4), ("k", -8, None), ("k", None, None), ("k", (0, 4)), ("k",)]:
            with pytest.raises(TypeError, match="a read request is a"):
                store.get_ranges([bad])
        assert store.stats.reads == 0

    def test_an_empty_suffix_tells_existence(self, store):
        store.set("k", DATA)
        assert store.get_ranges([("k", Suffix(0)), ("missing", Suffix(0))]) == [b"", None]

    def test_set_get_roundtrip_and_missing(self, store):
        store.set("a/b/c", DATA)
        store.stats.reset()
        assert store.get("a/b/c") == DATA
        assert store.get("a/b/missing") is None
        assert store.get("nowhere") is None
        s = store.stats
        assert (s.reads, s.bytes_read) == (3, len(DATA))

    def test_ranges_follow_slice_semantics(self, store):
        store.set("k", DATA)
        store.set("empty", b"")
        reqs = [
            ("k", Range(0, 10)),
            ("k", Range(1000, 2000)),  # clipped at the end
            ("k", Range(5000, 6000)),  # entirely past the end
            ("k", Offset(1024)),
            ("k", Offset(1000)),
            ("k", Suffix(7)),
            ("k", Suffix(5000)),  # suffix longer than the object: the whole object
            ("k", Range(10, 10)),  # empty
            ("k", Range(30, 20)),  # stop before start: empty
            ("k", WHOLE),
            ("empty", WHOLE),
            ("empty", Range(0, 10)),
            ("empty", Suffix(4)),
            ("missing", Range(0, 10)),
            ("missing", Suffix(4)),
            ("missing", Range(4, 4)),
        ]
        got = store.get_ranges(reqs)
        objects = {"k": DATA, "empty": b""}
        want = [None if k == "missing" else objects[k][slice(*r.bounds(len(objects[k])))] for k, r in reqs]
        assert got == want
        assert all(r is None or type(r) is bytes for r in got)

    def test_empty_range_of_missing_key_is_none(self, store):
        store.set("k", DATA)
        assert store.get_ranges([("k", Range(7, 7)), ("nope", Range(7, 7))]) == [b"", None]

    def test_ten_nearby_ranges_are_one_read(self, store):
        store.set("shard", DATA * 100)
        store.stats.reset()
        reqs = [("shard", Range(i * 5000, i * 5000 + 100)) for i in range(10)]
        got = store.get_ranges(reqs)
        assert got == [(DATA * 100)[r.start : r.stop] for _, r in reqs]
        assert store.stats.reads == 1
        assert store.stats.bytes_read == 45100  # the merged span

    def test_far_apart_ranges_every_store(self, store):
        step = store.coalesce_gap + 200_000  # farther apart than the store merges
        big = os.urandom(3 * step)
        store.set("big", big)
        store.stats.reset()
        reqs = [
            ("big", Range(0, 16)),
            ("big", Range(step, step + 16)),
            ("big", Range(2 * step, 2 * step + 16)),
            ("big", Range(3 * step - 10, 3 * step)),
        ]
        assert store.get_ranges(reqs) == [big[r.start : r.stop] for _, r in reqs]
        assert store.stats.reads == 4
        assert store.stats.bytes_read == 16 * 3 + 10

    def test_missing_key_is_one_read_and_none(self, store):
        assert store.get_range("absent", Range(0, 100)) is None
        assert (store.stats.reads, store.stats.bytes_read) == (1, 0)

    def test_suffix_ranges_count(self, store):
        store.set("s", DATA)
        store.stats.reset()
        got = store.get_ranges([("s", Suffix(4)), ("s", Suffix(16)), ("s", Suffix(2000))])
        assert got == [DATA[-4:], DATA[-16:], DATA]
        assert store.stats.reads == 1  # suffixes merge into the longest
        store.stats.reset()
        assert store.get_ranges([("s", Range(0, 4)), ("s", Suffix(4))]) == [DATA[:4], DATA[-4:]]
        assert store.stats.reads == 2  # a range and a suffix cannot merge
        assert store.stats.size_queries == 0  # served natively

    def test_whole_object_absorbs_ranges(self, store):
        store.set("w", DATA)
        store.stats.reset()
        got = store.get_ranges([("w", Range(3, 9)), ("w", WHOLE), ("w", Suffix(3))])
        assert got == [DATA[3:9], DATA, DATA[-3:]]
        assert store.stats.reads == 1 and store.stats.bytes_read == len(DATA)

    def test_results_in_request_order_many_keys(self, store):
        objs = {f"c/{i}/{j}": os.urandom(50 + i * 7 + j) for i in range(4) for j in range(4)}
        store.set_many(list(objs.items()))
        keys = sorted(objs, reverse=True) + ["c/9/9"]
        got = store.get_ranges([(k, Range(1, 20)) for k in keys])
        assert got == [objs[k][1:20] if k in objs else None for k in keys]
        assert store.stats.reads == len(keys)

    def test_concurrent_reads_from_threads(self, store):
        objs = {f"t/{i}": os.urandom(3000 + i) for i in range(16)}
        store.set_many(list(objs.items()))
        store.stats.reset()
        rng = np.random.default_rng(0)
        batches = []
        for _ in range(24):
            keys = rng.choice(sorted(objs), size=5)
            batches.append(
                [
                    (str(k), Range(int(s), int(s) + 100))
                    for k, s in zip(keys, rng.integers(0, 3000, 5), strict=True)
                ]
            )

        def run(batch):
            return store.get_ranges(batch)

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(run, batches))
        for batch, res in zip(batches, results, strict=True):
            assert res == [objs[k][r.start : r.stop] for k, r in batch]
        assert store.stats.reads > 0

    def test_size_exists_stat(self, store):
        store.set("x/y", DATA)
        store.stats.reset()
        assert store.size("x/y") == len(DATA)
        assert store.size("x/none") is None
        assert store.exists("x/y") and not store.exists("x")  # a folder is not an object
        assert store.stats.size_queries == 4
        size, token = store.stat("x/y")
        assert size == len(DATA)
        assert isinstance(token, int | float | str)
        assert store.stat("x/y") == (size, token)  # stable while unchanged
        store.set("x/y", DATA[::-1])  # same size, other content
        assert store.stat("x/y")[1] != token
        assert store.stat("x/none") is None

    def test_write_counts_and_value_types(self, store):
        arr = np.arange(12, dtype="<u2").reshape(3, 4)
        store.set("a", bytearray(b"abc"))
        store.set("b", memoryview(b"0123456789")[2:5])
        store.set("c", arr)
        store.set("d", arr[:, ::2])  # not contiguous
        s = store.stats
        assert (s.writes, s.bytes_written) == (4, 3 + 3 + 24 + 12)
        assert store.get("a") == b"abc"
        assert store.get("b") == b"234"
        assert store.get("c") == arr.tobytes()
        assert store.get("d") == arr[:, ::2].tobytes()
        with pytest.raises(TypeError):
            store.set("e", object())
        assert store.get("e") is None

    def test_overwrite_and_delete(self, store):
        store.set("d/e/f", b"one")
        store.set("d/e/f", b"two!")
        assert store.get("d/e/f") == b"two!"
        assert store.delete("d/e/f") is True
        assert store.delete("d/e/f") is False
        assert store.get("d/e/f") is None
        assert store.stats.deletes >= 1
        assert list(store.list()) == []

    def test_set_many_delete_many_delete_prefix(self, store):
        items = [(f"g/{i}", bytes([i]) * 10) for i in range(10)] + [("h/0", b"x")]
        store.set_many(items)
        assert store.stats.writes == 11
        assert store.delete_many(["g/0", "g/1", "g/none"]) == [True, True, False]
        assert store.delete_prefix("g") == 8
        assert list(store.list()) == ["h/0"]

    def test_listing(self, store):
        for k in ["a/b/c", "a/b/d", "a/e", "ab/f", "g", "a/.zattrs"]:
            store.set(k, b"1")
        store.stats.reset()
        assert sorted(store.list()) == sorted(["a/b/c", "a/b/d", "a/e", "ab/f", "g", "a/.zattrs"])
        assert sorted(store.list("a")) == ["a/.zattrs", "a/b/c", "a/b/d", "a/e"]
        assert sorted(store.list("a/b/")) == ["a/b/c", "a/b/d"]
        assert list(store.list("nothing")) == []
        assert list(store.list("g")) == []  # a key is not a folder
        assert store.list_dir("") == (["g"], ["a", "ab"])
        assert store.list_dir("a") == ([".zattrs", "e"], ["b"])
        assert store.list_dir("zz") == ([], [])
        assert store.stats.lists == 8
        store.set("a/e", b"12345")  # list_sized: the listing with each object's size (altarr info)
        assert sorted(store.list_sized("a")) == [("a/.zattrs", 1), ("a/b/c", 1), ("a/b/d", 1), ("a/e", 5)]
        assert list(store.list_sized("nothing")) == []

    def test_read_only_refuses_writes(self, store):
        store.set("k", b"v")
        ro = copy.copy(store)  # the same storage, read-only
        ro.read_only = True
        assert ro.get("k") == b"v"
        with pytest.raises(ReadOnlyError) as info:
            ro.set("k", b"w")
        assert info.value.key == "k"
        with pytest.raises(ReadOnlyError):
            ro.delete("k")
        with pytest.raises(ReadOnlyError):
            ro.set_many([("k", b"w"), ("j", b"w")])
        assert store.get("k") == b"v"

    @pytest.mark.parametrize("bad", ["../x", "a/../../x", "/etc/passwd", "a/./b", "a\\b", "x\x00y"])
    def test_key_escape_attempts_raise(self, store, bad):
        for call in (
            lambda: store.get(bad),
            lambda: store.get_ranges([("ok", Range(0, 1)), (bad, Range(0, 1))]),
            lambda: store.size(bad),
            lambda: store.set(bad, b"x"),
            lambda: store.delete(bad),
            lambda: list(store.list(bad)),
        ):
            with pytest.raises(InvalidKeyError):
                call()

    def test_keys_are_normalized(self, store):
        store.set("a//b/", b"x")
        assert store.get("a/b") == b"x"
        assert list(store.list()) == ["a/b"]

    def test_stats_reset_and_dict(self, store):
        store.set("k", b"abc")
        store.get("k")
        assert store.stats.as_dict()["writes"] == 1
        store.stats.reset()
        assert set(store.stats.as_dict().values()) == {0}

    def test_pickle_roundtrip(self, store):
        store.set("p", b"pickled")
        clone = pickle.loads(pickle.dumps(store))
        assert type(clone) is type(store)
        assert clone.get("p") == b"pickled"
        assert clone.read_only == store.read_only

    def test_versioned_reads_match_stat(self, store):
        store.set("v/a", DATA)
        store.set("v/b", b"xyz")
        reqs = [("v/a", Range(0, 10)), ("v/b", WHOLE), ("v/a", Suffix(5)), ("v/none", Range(0, 1))]
        datas, versions = store.get_ranges_versioned(reqs)
        assert datas == [DATA[:10], b"xyz", DATA[-5:], None]
        assert len(versions) == 4 and versions[3] is None
        if store.cheap_stat or store.versioned_reads or store.reports_versions:  # obstore: each GET's ETag
            assert versions[0] == versions[2] == store.stat("v/a")[1]
            assert versions[1] == store.stat("v/b")[1]
            store.set("v/b", b"XYZ")
            _, again = store.get_ranges_versioned([("v/b", Range(0, 1))])
            assert again[0] == store.stat("v/b")[1] != versions[1]
        else:  # fsspec object stores: a version check costs a round trip, none is reported
            assert versions == [None] * 4

    def test_answers_as_they_arrive(self, store):
        """``get_ranges_as_ready``: every request answered once, as ``(position, bytes, version, size)``
        in batches (one per backend answer: one batch in all unless the store declares
        ``answers_as_ready``), with the bytes, versions, sizes and counts of ``get_ranges_sized``."""
        store.set("w/a", DATA)
        store.set("w/b", b"xyz")
        store.set("w/e", b"")
        far = store.coalesce_gap + 100  # two answers from one object, at least
        store.set("w/big", DATA * (far // len(DATA) + 2))
        reqs = [
            ("w/a", WHOLE), ("w/none", Range(0, 4)), ("w//b", Suffix(2)), ("w/e", WHOLE),
            ("w/a", Range(3, 9)), ("w/big", Range(0, 10)), ("w/big", Range(far, far + 10)),
        ]  # fmt: skip
        store.stats.reset()
        batches = list(store.get_ranges_as_ready(reqs))
        counted = store.stats.as_dict()
        got = {i: (d if d is None else bytes(d), v, z) for batch in batches for i, d, v, z in batch}
        assert sorted(i for batch in batches for i, *_ in batch) == list(range(len(reqs)))
        store.stats.reset()
        datas, versions, sizes = store.get_ranges_sized(reqs)
        assert counted == store.stats.as_dict()
        assert got == {
            i: (d if d is None else bytes(d), v, z)
            for i, (d, v, z) in enumerate(zip(datas, versions, sizes, strict=True))
        }
        assert got[2][0] == b"yz" and got[4][0] == DATA[3:9] and got[1] == (None, None, None)
        assert len(batches) == (store.stats.reads if store.answers_as_ready else 1)
        assert list(store.get_ranges_as_ready([])) == []
        with pytest.raises(InvalidKeyError):
            store.get_ranges_as_ready([("../up", WHOLE)])

    def test_sized_reads_report_the_object_size(self, store):
        """``get_ranges_sized``: the same bytes, versions and requests as ``get_ranges_versioned``, plus
        per request the total size of the object read (not of the range); ``None`` for a missing key.
        Stores that declare ``reports_sizes`` report every size; others report it where they learnt it
        for free, else ``None``."""
        store.set("z/a", DATA)
        store.set("z/b", b"xyz")
        store.set("z/e", b"")
        reqs = [
            ("z/a", Range(0, 10)),
            ("z/b", WHOLE),
            ("z/a", Suffix(5)),
            ("z/none", Suffix(4)),
            ("z/a", Range(900, 2000)),
            ("z/e", WHOLE),  # (a lone suffix of an empty object fails on obstore over moto S3: issue apart)
            ("z/b", Offset(1)),
        ]
        store.stats.reset()
        datas, versions, sizes = store.get_ranges_sized(reqs)
        sized_reads = store.stats.as_dict()
        assert datas == [DATA[:10], b"xyz", DATA[-5:], None, DATA[900:], b"", b"yz"]
        assert len(versions) == len(sizes) == len(reqs)
        want = [len(DATA), 3, len(DATA), None, len(DATA), 0, 3]
        if store.reports_sizes:
            assert sizes == want
        else:
            assert all(got is None or got == w for got, w in zip(sizes, want, strict=True))
        assert sizes[3] is None and versions[3] is None
        store.stats.reset()
        assert store.get_ranges_versioned(reqs) == (datas, versions)
        assert store.stats.as_dict() == sized_reads  # no request added for the sizes

    def test_an_object_given_in_parts_is_written_back_to_back(self, store):
        """A shard is handed to the store as its parts (chunks and index); local files write them with
        writev (more parts than one writev call takes, too), other stores join them."""
        parts = [b"ab", memoryview(b"cd"), bytearray(b"e"), b""] + [bytes([i % 251]) for i in range(3000)]
        store.set("shard", parts)
        want = b"abcde" + bytes(i % 251 for i in range(3000))
        assert store.get("shard") == want
        assert store.stats.writes == 1 and store.stats.bytes_written == len(want)
        # several at once (one round, each joined by the request that sends it where a store joins)
        store.set_many([("s1", parts), ("s2", [memoryview(want)[3:], b"xyz"])])
        assert store.get("s1") == want and store.get("s2") == want[3:] + b"xyz"
        assert store.stats.writes == 3 and store.stats.bytes_written == 2 * len(want) + len(want) - 3 + 3
