"""Writes racing writes that empty the same shard (issue 34): two processes each write their own chunk of
one shard and then write it back to the fill value, so the shard empties again and again.

On local files the emptying write deletes the shard and prunes its folder, and the other process's lock
or temporary file found no folder (up to 191 of 200 writes failed with ``locking failed: No such file or
directory``): the store makes the folder again. On S3 a delete is a ``HEAD`` then a ``DELETE`` and a write
landing between the two was deleted with the shard (5 of 200 writes vanished): an emptied shard is
written as an empty shard (its index alone) with the conditional ``PUT`` instead. Each process reads its
chunk back after writing it: a value that is not there is a lost write.

The soaks (``slow``) also run with each guard switched off (``PRUNED_RETRIES = 1``; shard_write's
``_keep_emptied_shards = False``) and require failures or losses there, which shows they can fail."""

from __future__ import annotations

import multiprocessing as mp
import sys
import uuid

import numpy as np
import pytest

import altarr as aa

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork and flock")

_FORK = mp.get_context("fork")
_SPAWN = mp.get_context("spawn")  # obstore's runtime does not survive fork


def _worker(url, options, row, rounds, guard, barrier, out) -> None:
    """Write chunk row ``row`` (values ``i + 1``), read it back, write it back to fill, ``rounds`` times."""
    from altarr.dataset import shard_write
    from altarr.errors import AltarrError
    from altarr.stores import local_paths

    if not guard:
        local_paths.PRUNED_RETRIES = 1
        shard_write._keep_emptied_shards = False
    failed = lost = 0
    first = ""
    try:
        ds = aa.open_dataset(url, mode="r+", **options)
        barrier.wait(timeout=120)
        for i in range(rounds):
            try:
                ds[row] = i % 250 + 1
                if not (ds[row] == i % 250 + 1).all():
                    lost += 1
                ds[row] = 0
            except AltarrError as e:
                failed += 1
                first = first or repr(e)
        out.put((failed, lost, first))
    except BaseException as e:  # reported by the parent
        out.put((-1, -1, repr(e)))


def _run(url, options, *, rounds, guard, ctx):
    """Two processes on one shard; returns (failed writes, lost writes, first error)."""
    aa.create_dataset(
        url,
        shape=(2, 64),
        dtype="u1",
        chunks=(1, 64),
        shards=(2, 64),
        compressor=None,
        storage_options=options,
    )
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(url, options, r, rounds, guard, barrier, out)) for r in (0, 1)]
    for p in procs:
        p.start()
    got = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(60)
    assert all(f >= 0 for f, _, _ in got), got
    return sum(f for f, _, _ in got), sum(lost for _, lost, _ in got), next((e for _, _, e in got if e), "")


def _s3(endpoint: str) -> tuple[str, dict]:
    from _s3 import BUCKET, s3_options

    return f"s3://{BUCKET}/{uuid.uuid4().hex}/a.zarr", s3_options(endpoint)


# --- the default suite: short runs ------------------------------------------------------------------------
def test_local_writes_racing_emptying_writes_neither_fail_nor_vanish(tmp_path):
    failed, lost, first = _run(str(tmp_path / "a.zarr"), {}, rounds=40, guard=True, ctx=_FORK)
    assert (failed, lost) == (0, 0), first


def test_s3_writes_racing_emptying_writes_neither_fail_nor_vanish(s3_endpoint):
    url, options = _s3(s3_endpoint)
    failed, lost, first = _run(url, options, rounds=15, guard=True, ctx=_SPAWN)
    assert (failed, lost) == (0, 0), first


def test_an_emptied_shard_on_s3_stays_as_its_index(s3_endpoint):
    """The emptied shard is an object holding its index alone: reads give fill, zarr-python reads it too."""
    url, options = _s3(s3_endpoint)
    ds = aa.create_dataset(
        url, shape=(2, 64), dtype="u1", chunks=(1, 64), shards=(2, 64), storage_options=options
    )
    ds[...] = 7
    ds[...] = np.zeros((2, 64), "u1")  # replaced outright, never read: deleted as before
    assert list(ds.store.list("c")) == []
    ds[...] = 7
    ds[0] = 0
    ds[1] = 0  # emptied by a read-modify-write: written as an empty shard, conditioned on the read
    assert list(ds.store.list("c")) == ["c/0/0"]
    assert len(ds.store.get("c/0/0")) == 2 * 16 + 4
    assert (ds[...] == 0).all() and (aa.open_dataset(url, **options)[...] == 0).all()


# --- soaks (slow): long runs, and the same with each guard off ----------------------------------------------
@pytest.mark.slow
def test_soak_local_emptying_writers(tmp_path):
    failed, lost, first = _run(str(tmp_path / "a.zarr"), {}, rounds=400, guard=True, ctx=_FORK)
    print(f"local, guard on: 800 writes, {failed} failed, {lost} lost")
    assert (failed, lost) == (0, 0), first


@pytest.mark.slow
def test_soak_local_emptying_writers_without_the_guard_fail(tmp_path):
    failed, lost, first = _run(str(tmp_path / "a.zarr"), {}, rounds=400, guard=False, ctx=_FORK)
    print(f"local, guard off: 800 writes, {failed} failed, {lost} lost; {first}")
    assert failed > 0 and "No such file or directory" in first, "without the retry, writes should fail"


@pytest.mark.slow
def test_soak_s3_emptying_writers(s3_endpoint):
    url, options = _s3(s3_endpoint)
    failed, lost, first = _run(url, options, rounds=200, guard=True, ctx=_SPAWN)
    print(f"s3, guard on: 400 writes, {failed} failed, {lost} lost")
    assert (failed, lost) == (0, 0), first


@pytest.mark.slow
def test_soak_s3_emptying_writers_without_the_guard_lose_writes(s3_endpoint):
    url, options = _s3(s3_endpoint)
    failed, lost, first = _run(url, options, rounds=200, guard=False, ctx=_SPAWN)
    print(f"s3, guard off: 400 writes, {failed} failed, {lost} lost; {first}")
    assert lost > 0, "deleting an emptied shard with HEAD then DELETE should lose writes"
