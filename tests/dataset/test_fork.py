"""altarr's one fork rule (``altarr._threads``): a child forked with multiprocessing's ``fork`` context
forgets every pool of its parent (the worker pool, the I/O threads) and every shared obstore client, and
makes its own at first use. So a forked child reads and writes correctly after its parent used them all,
even while a parent's thread was in the middle of a read when it forked; obstore alone, whose Rust
runtime does not survive fork, is refused there with a ``StoreError`` (never a hang)."""

from __future__ import annotations

import gc
import multiprocessing
import sys
import threading
import weakref
from typing import Any

import numpy as np
import pytest

import altarr as aa
from altarr import _threads
from altarr.errors import StoreError
from altarr.stores import WHOLE, LocalStore, ObstoreStore

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork")
pytest.importorskip("obstore")

_FORK = multiprocessing.get_context("fork")
#: what the child inherits as it is (module state, not pickled)
_INHERITED: dict[str, Any] = {}


def _values(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 60000, shape, dtype="u2")


def _in_child(queue: Any) -> None:
    """Read and write through every pool the parent used; report what happened (never raise: a child's
    traceback would be lost)."""
    try:
        ds, store, remote = _INHERITED["ds"], _INHERITED["store"], _INHERITED["remote"]
        fresh = not _threads._workers and not _threads._io  # the parent's pools are forgotten
        read = ds[...]  # many chunks: decoded on the worker pool, shards read on the I/O threads
        target = _INHERITED.get("target", ds)
        target[8:40, 0:24] = _values((32, 24), 2)  # a write across shards: encoded on the pool
        again = aa.open_dataset(target.store, mode="r")[...]
        items = [(f"child{i}", bytes([i]) * 1000) for i in range(8)]
        store.set_many(items)  # the I/O threads, at the store's max_workers
        got = store.get_ranges([(k, WHOLE) for k, _ in items])
        try:
            remote.get_ranges([("k0", WHOLE), ("k1", WHOLE)])
            obstore = "read"
        except StoreError as e:
            obstore = str(e)
        names = {t.name.rpartition("_")[0] for t in threading.enumerate()}
        queue.put((fresh, read, again, got == [v for _, v in items], obstore, names))
    except BaseException as e:  # reported to the parent, which fails the test
        queue.put(repr(e))


def _run_child() -> Any:
    child = _FORK.Process(target=_in_child, args=(queue := _FORK.Queue(),))
    child.start()
    try:
        return queue.get(timeout=60)
    finally:
        child.join(timeout=10)
        if child.is_alive():
            child.kill()


@pytest.mark.parametrize("threads", [2, 4])
def test_a_forked_child_reads_and_writes_after_the_parent_used_every_pool(tmp_path, threads):
    data = _values((64, 48), 1)
    with aa.set_options(threads=threads):
        ds = aa.create_dataset(
            str(tmp_path / "a.zarr"), shape=data.shape, dtype="u2", chunks=(8, 8), shards=(16, 24)
        )
        ds[...] = data  # the worker pool and the I/O threads, in the parent
        np.testing.assert_array_equal(ds[...], data)
        store = LocalStore(tmp_path / "kv", max_workers=3)
        store.set_many([(f"k{i}", bytes([i]) * 100) for i in range(6)])
        remote = ObstoreStore("memory://")
        remote.set_many([(f"k{i}", bytes([i]) * 100) for i in range(4)])  # obstore's request threads
        assert remote.get_ranges([("k0", WHOLE), ("k1", WHOLE)]) == [b"\0" * 100, b"\1" * 100]
        assert _threads._workers and _threads._io  # the parent's pools exist
        _INHERITED.update(ds=ds, store=store, remote=remote)
        try:
            out = _run_child()
        finally:
            _INHERITED.clear()
        assert not isinstance(out, str), out
        fresh, read, again, set_and_got, obstore, names = out
        assert fresh
        np.testing.assert_array_equal(read, data)
        expected = data.copy()
        expected[8:40, 0:24] = _values((32, 24), 2)
        np.testing.assert_array_equal(again, expected)
        assert set_and_got
        assert "forked" in obstore and "spawn" in obstore  # refused, with the way out
        assert {"altarr", "altarr-io"} <= names  # the child made its own pools
        # the child's write is on disk for the parent, whose pools still work
        np.testing.assert_array_equal(ds[...], expected)
        assert store.get("child7") == bytes([7]) * 1000


def test_forking_while_a_parent_thread_reads_leaves_the_child_working(tmp_path):
    """A parent thread in the middle of pooled reads (holding the pools' locks, its tasks queued) when
    the main thread forks: each child still reads and writes (the rule renews the locks too)."""
    data = _values((64, 48), 3)
    with aa.set_options(threads=4):
        ds = aa.create_dataset(
            str(tmp_path / "b.zarr"), shape=data.shape, dtype="u2", chunks=(8, 8), shards=(16, 24)
        )
        ds[...] = data
        target = aa.create_dataset(str(tmp_path / "c.zarr"), shape=data.shape, dtype="u2", chunks=(8, 8))
        store = LocalStore(tmp_path / "kv", max_workers=3)
        remote = ObstoreStore("memory://")
        stop = threading.Event()
        errors: list[BaseException] = []

        def keep_reading() -> None:
            try:
                while not stop.is_set():
                    np.testing.assert_array_equal(ds[...], data)
            except BaseException as e:  # checked below
                errors.append(e)

        reader = threading.Thread(target=keep_reading)
        reader.start()
        _INHERITED.update(ds=ds, target=target, store=store, remote=remote)
        try:
            outs = [_run_child() for _ in range(3)]
        finally:
            stop.set()
            reader.join(30)
            _INHERITED.clear()
        assert errors == []
        for out in outs:
            assert not isinstance(out, str), out
            np.testing.assert_array_equal(out[1], data)
            np.testing.assert_array_equal(out[2][8:40, 0:24], _values((32, 24), 2))
            assert out[3]


def _report_clients(queue: Any) -> None:
    gc.collect()
    queue.put([ref() is not None for ref in _INHERITED["refs"]])


def test_a_forked_child_destroys_none_of_its_parents_obstore_clients():
    """The child never uses the parent's obstore clients (it refuses obstore), and must not destroy them
    either: that runs obstore's Rust destructors in a process where the runtime's threads are gone."""
    stores = [ObstoreStore(f"http://127.0.0.1:9/fork-{i}") for i in range(3)]  # no request is sent
    refs = [weakref.ref(s._store) for s in stores]
    del stores  # now only the shared cache holds the clients
    _INHERITED.update(refs=refs)
    try:
        child = _FORK.Process(target=_report_clients, args=(queue := _FORK.Queue(),))
        child.start()
        alive = queue.get(timeout=60)
    finally:
        child.join(timeout=10)
        _INHERITED.clear()
    assert alive == [True] * len(refs)
