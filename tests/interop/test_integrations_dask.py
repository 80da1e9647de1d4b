"""dask: ``altarr.to_dask`` over datasets and lazy arrays, ``altarr.store`` writing one whole shard per
task, and ``altarr copy --scheduler`` on a real dask.distributed LocalCluster with 2 worker processes."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest

import altarr as aa
from _cli_support import run_cli, tree_bytes


def test_to_dask_over_a_dataset_has_one_block_per_shard(tmp_path):
    ds = aa.create_dataset(str(tmp_path / "a.zarr"), shape=(10, 12), dtype="f8", chunks=(2, 3), shards=(4, 6))
    values = np.arange(120, dtype="f8").reshape(10, 12)
    ds[...] = values
    d = aa.to_dask(ds)
    assert d.chunks == ((4, 4, 2), (6, 6))
    with dask.config.set(scheduler="threads"):
        np.testing.assert_array_equal(d.compute(), values)
        assert float(d[3:7, 5].sum().compute()) == float(values[3:7, 5].sum())
    unsharded = aa.create_dataset(
        str(tmp_path / "b.n5"), shape=(5, 5), dtype="u1", chunks=(2, 3), format="n5"
    )
    assert aa.to_dask(unsharded).chunks == ((2, 2, 1), (3, 2))


def test_to_dask_over_a_lazy_array():
    x = aa.altarr((6, 4), (3, 2), lambda c: [np.ones((3, 2))] * len(c))
    assert float(aa.to_dask(x).sum().compute()) == 24.0


def test_store_writes_each_shard_once_from_misaligned_dask_chunks(tmp_path):
    ds = aa.create_dataset(
        str(tmp_path / "s.zarr"), shape=(40, 30), dtype="i4", chunks=(5, 5), shards=(10, 15)
    )
    values = np.arange(1200, dtype="i4").reshape(40, 30)
    darr = da.from_array(values, chunks=(7, 11))  # crosses every shard boundary
    ds.store.stats.reset()
    with dask.config.set(scheduler="threads"):
        aa.store(darr, ds)
    counts = ds.store.stats.as_dict()
    assert counts["writes"] == 4 * 2  # one write per shard: no two tasks touched one shard
    assert counts["reads"] == 0  # whole shards are written without reading them first
    np.testing.assert_array_equal(ds[...], values)
    with pytest.raises(ValueError, match="shape"):
        aa.store(darr[:10], ds)


def test_distributed_copy_gives_the_same_bytes_as_a_local_copy(tmp_path):
    from distributed import LocalCluster

    src = aa.create_dataset(
        str(tmp_path / "src.zarr"), shape=(32, 48, 40), dtype="u2", chunks=(8, 8, 8), shards=(16, 16, 40)
    )
    src[...] = (np.arange(32 * 48 * 40) % 65521).astype("u2").reshape(32, 48, 40)
    args = ["--format", "n5", "--chunks", "8,16,8", "--shards", "16,16,40", "--codec", "zstd:3"]
    local = run_cli("copy", tmp_path / "src.zarr", tmp_path / "local.n5", *args)
    assert local.returncode == 0, local.stderr
    from distributed.diagnostics.plugin import SchedulerPlugin

    class CopyTasks(SchedulerPlugin):
        """Which worker finished each copy task."""

        def __init__(self) -> None:
            self.done: dict[str, str] = {}

        def transition(self, key, start, finish, *args, **kwargs):
            if finish == "memory" and str(key).startswith("copy_unit-"):
                self.done[str(key)] = kwargs.get("worker")

    tasks = CopyTasks()
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1"
    ) as cluster:
        cluster.scheduler.add_plugin(tasks)
        address = cluster.scheduler_address
        out = run_cli("copy", tmp_path / "src.zarr", tmp_path / "dist.n5", *args, "--scheduler", address)
        assert out.returncode == 0, out.stderr
    assert len(tasks.done) == 2 * 3 * 1  # one task per destination shard
    assert len(set(tasks.done.values())) == 2  # on both worker processes
    assert "6 shard(s) written" in out.stdout
    assert tree_bytes(tmp_path / "dist.n5") == tree_bytes(tmp_path / "local.n5")
