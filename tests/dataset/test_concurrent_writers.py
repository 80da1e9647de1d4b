"""Many writers at once: processes x threads writing disjoint chunks that share shards, and attribute
keys, on local files and on a moto S3 server; nothing may be lost. With the cross-process guard switched
off (``altarr.dataset.locks._cross_process``) the same runs lose updates, which shows the tests can fail.

The soak runs (4 processes x 8 threads, many rounds) are marked ``slow``; the default suite runs a
small one and the deterministic checks of the lock itself."""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import threading
import uuid

import numpy as np
import pytest

import altarr as aa
from altarr.dataset import locks
from altarr.stores import LocalStore, ObstoreStore, store_from_url

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork and flock")

_CTX = mp.get_context("fork")
#: obstore (the client of s3://) cannot run in a child forked after the parent used it (its Rust
#: runtime does not survive fork): the S3 runs start their writers with "spawn".
_SPAWN = mp.get_context("spawn")


def _value(r: int, c: tuple[int, int], ncols: int) -> int:
    return r * 100_000 + c[0] * ncols + c[1] + 1


def _writer(url, options, proc, nprocs, nthreads, rounds, barrier, cross_process, failures) -> None:
    """One process: ``nthreads`` threads, each with its own dataset handle, write their own chunks of
    round ``r`` (chunk (r, i, j) with (i * n + j) % (nprocs * nthreads) == its number), one chunk per call,
    and set one attribute key per round; all processes start each round together."""
    try:
        locks._cross_process = cross_process
        handles = [aa.open_dataset(url, mode="r+", **options) for _ in range(nthreads)]
        _, ni, nj = handles[0].grid_shape
        errors: list[BaseException] = []

        def run(t: int, r: int) -> None:
            try:
                ds = handles[t]
                me = proc * nthreads + t
                for i in range(ni):
                    for j in range(nj):
                        if (i * nj + j) % (nprocs * nthreads) == me:
                            ds.write_chunks([(r, i, j)], [np.full(ds.chunks, _value(r, (i, j), nj), "i4")])
                ds.attrs[f"p{proc}t{t}r{r}"] = r
            except BaseException as e:  # reported by the parent
                errors.append(e)

        for r in range(rounds):
            barrier.wait(timeout=120)
            threads = [threading.Thread(target=run, args=(t, r)) for t in range(nthreads)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        if errors:
            failures.put(repr(errors[0]))
    except BaseException as e:
        failures.put(repr(e))


def _run(url, options, *, nprocs, nthreads, rounds, side, cross_process=True, ctx=_CTX):
    """Create the dataset, run the writers, return (lost chunks, lost attribute keys, total chunks)."""
    aa.create_dataset(
        url,
        shape=(rounds, side, side),
        dtype="i4",
        chunks=(1, 4, 4),
        shards=(1, 16, 16),
        compressor=None,
        storage_options=options,
    )
    barrier = ctx.Barrier(nprocs)
    failures = ctx.Queue()
    procs = [
        ctx.Process(
            target=_writer,
            args=(url, options, p, nprocs, nthreads, rounds, barrier, cross_process, failures),
        )
        for p in range(nprocs)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(600)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    assert failures.empty(), failures.get()
    ds = aa.open_dataset(url, **options)
    n = side // 4
    coords = [(r, i, j) for r in range(rounds) for i in range(n) for j in range(n)]
    got = ds.read_chunks(coords)
    lost = sum(
        1
        for (r, i, j), a in zip(coords, got, strict=True)
        if a is None or not (a == _value(r, (i, j), n)).all()
    )
    want_keys = {f"p{p}t{t}r{r}" for p in range(nprocs) for t in range(nthreads) for r in range(rounds)}
    lost_keys = len(want_keys - set(ds.attrs.asdict()))
    return lost, lost_keys, len(coords)


def _s3(endpoint: str) -> tuple[str, dict]:
    """A fresh dataset URL on the moto server and its options (``s3://``'s client: obstore, conditional
    PUTs)."""
    from _s3 import BUCKET, s3_options

    return f"s3://{BUCKET}/{uuid.uuid4().hex}/a.zarr", s3_options(endpoint)


# --- the default suite: small runs and the lock itself -----------------------------------------------------
def test_two_processes_four_threads_lose_nothing_on_local_files(tmp_path):
    lost, lost_keys, n = _run(str(tmp_path / "a.zarr"), {}, nprocs=2, nthreads=4, rounds=3, side=32)
    assert (lost, lost_keys) == (0, 0) and n == 3 * 64


def test_two_processes_lose_nothing_on_s3(s3_endpoint):
    url, options = _s3(s3_endpoint)
    assert isinstance(store_from_url(url, **options)[0], ObstoreStore)  # s3://'s client is proven
    lost, lost_keys, n = _run(url, options, nprocs=2, nthreads=2, rounds=2, side=16, ctx=_SPAWN)
    assert (lost, lost_keys) == (0, 0) and n == 2 * 16


def _try_lock(root: str, key: str, out) -> None:
    from altarr.stores import filelock

    s = LocalStore(root)
    dfd = s._parent_fd(key, create=True)
    fd = filelock.acquire(dfd, key.rpartition("/")[2], blocking=False)
    out.put(fd is not None)


def test_a_held_lock_excludes_another_process_and_is_gone_after(tmp_path):
    s = LocalStore(tmp_path)
    q = _CTX.Queue()
    with s.exclusive(["c/0/0"]):
        p = _CTX.Process(target=_try_lock, args=(str(tmp_path), "c/0/0", q))
        p.start()
        p.join(60)
        assert q.get(timeout=10) is False  # held here: the other process cannot take it
        assert list(s.list()) == [] and s.list_temporary() == ["c/0/.0.altarr-lock"]
    p = _CTX.Process(target=_try_lock, args=(str(tmp_path), "c/0/0", q))
    p.start()
    p.join(60)
    assert q.get(timeout=10) is True
    # the child exited holding its lock: the kernel released the lock, its file stays until removed
    assert s.list_temporary() == ["c/0/.0.altarr-lock"]
    assert s.remove_temporary(s.list_temporary()) == ["c/0/.0.altarr-lock"]
    assert not os.path.exists(tmp_path / "c")  # released lock files leave no folders behind


def test_a_killed_lock_holder_leaves_no_lock(tmp_path):
    """The kernel releases a dead holder's lock: the next writer gets it at once."""
    s = LocalStore(tmp_path)
    held = _CTX.Event()

    def hold_and_die(root):
        t = LocalStore(root)
        with t.exclusive(["k"]):
            held.set()
            os.kill(os.getpid(), 9)

    p = _CTX.Process(target=hold_and_die, args=(str(tmp_path),))
    p.start()
    assert held.wait(60)
    p.join(60)
    assert p.exitcode == -9
    with s.exclusive(["k"]):
        s.set("k", b"after")
    assert s.get("k") == b"after" and s.list_temporary() == []


def test_attributes_through_two_handles_keep_both_keys(tmp_path, store):
    g1 = aa.create_group(store)
    g2 = aa.open_group(store, mode="r+")
    g1.attrs["x"] = 1
    g2.attrs["y"] = 2
    assert aa.open_group(store).attrs.asdict() == {"x": 1, "y": 2}
    del g1.attrs["y"]
    g2.attrs.update(z=3)
    assert aa.open_group(store).attrs.asdict() == {"x": 1, "z": 3}
    with pytest.raises(KeyError):
        del g1.attrs["y"]


@pytest.mark.parametrize("fmt", ["zarr3", "zarr2", "n5"])
def test_attributes_two_threads_200_updates_none_lost(tmp_path, fmt):
    url = str(tmp_path / "a")
    aa.create_dataset(url, shape=(4,), dtype="u1", chunks=(2,), format=fmt)
    handles = [aa.open_dataset(url, mode="r+") for _ in range(2)]

    def run(t):
        for i in range(100):
            handles[t].attrs[f"t{t}_{i}"] = i

    threads = [threading.Thread(target=run, args=(t,)) for t in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(aa.open_dataset(url).attrs) == 200


def _attr_writer(url, options, t, n, cross_process):
    locks._cross_process = cross_process
    ds = aa.open_dataset(url, mode="r+", **options)
    for i in range(n):
        ds.attrs[f"p{t}_{i}"] = i


def test_attributes_two_processes_none_lost(tmp_path):
    url = str(tmp_path / "a")
    aa.create_dataset(url, shape=(4,), dtype="u1", chunks=(2,))
    procs = [_CTX.Process(target=_attr_writer, args=(url, {}, t, 100, True)) for t in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    assert len(aa.open_dataset(url).attrs) == 200


# --- soak runs (slow) ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_soak_4_processes_8_threads_local_files(tmp_path):
    lost, lost_keys, n = _run(str(tmp_path / "a.zarr"), {}, nprocs=4, nthreads=8, rounds=8, side=64)
    assert (lost, lost_keys) == (0, 0) and n == 8 * 256


@pytest.mark.slow
def test_soak_without_the_cross_process_lock_loses_updates(tmp_path):
    lost, lost_keys, n = _run(
        str(tmp_path / "a.zarr"), {}, nprocs=4, nthreads=8, rounds=8, side=64, cross_process=False
    )
    assert lost > 0, "without the lock, concurrent processes should lose chunk writes"


@pytest.mark.slow
def test_soak_4_processes_8_threads_s3(s3_endpoint):
    url, options = _s3(s3_endpoint)  # obstore
    lost, lost_keys, n = _run(url, options, nprocs=4, nthreads=8, rounds=3, side=32, ctx=_SPAWN)
    print(f"s3 (obstore): 4 processes x 8 threads, {n} chunks, lost {lost}, lost attribute keys {lost_keys}")
    assert (lost, lost_keys) == (0, 0) and n == 3 * 64


@pytest.mark.slow
def test_soak_s3_without_conditional_writes_loses_updates(s3_endpoint):
    url, options = _s3(s3_endpoint)
    lost, lost_keys, n = _run(
        url, options, nprocs=4, nthreads=8, rounds=3, side=32, cross_process=False, ctx=_SPAWN
    )
    print(f"s3 (obstore), conditions off: {n} chunks, lost {lost}, lost attribute keys {lost_keys}")
    assert lost + lost_keys > 0, "without conditional writes, concurrent processes should lose updates"
