"""``altarr pyramid --scheduler``: every level of a pyramid built on a real dask.distributed LocalCluster
(2 worker processes), one task per destination shard, gives the same bytes as a build on threads."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import altarr as aa
from _cli_support import run_cli, tree_bytes
from altarr.multiscale import Downsampled


def test_a_downsampled_view_of_a_dataset_pickles_as_its_location(tmp_path):
    ds = aa.create_dataset(str(tmp_path / "a.zarr"), shape=(8, 8), dtype="u1", chunks=(4, 4))
    ds[...] = np.arange(64, dtype="u1").reshape(8, 8)
    view = Downsampled(ds, (2, 2), "mean")
    raw = pickle.dumps(view)
    assert len(raw) < 2000  # the location, not the values
    np.testing.assert_array_equal(pickle.loads(raw)[0:4, 0:4], view[0:4, 0:4])


def test_a_pyramid_built_on_a_cluster_has_the_bytes_of_one_built_on_threads(tmp_path):
    distributed = pytest.importorskip("distributed")
    from distributed.diagnostics.plugin import SchedulerPlugin

    src = aa.create_dataset(str(tmp_path / "src.zarr"), shape=(16, 64, 48), dtype="u2", chunks=(8, 16, 16))
    src[...] = (np.arange(16 * 64 * 48) % 65521).astype("u2").reshape(16, 64, 48)
    args = ["--chunks", "8,16,16", "--shards", "8,32,32", "--no-progress"]
    local = run_cli("pyramid", tmp_path / "src.zarr", tmp_path / "local.ome.zarr", *args)
    assert local.returncode == 0, local.stderr

    class Tasks(SchedulerPlugin):
        def __init__(self) -> None:
            self.done: dict[str, str] = {}

        def transition(self, key, start, finish, *args, **kwargs):
            if finish == "memory" and str(key).startswith("copy_unit-"):
                self.done[str(key)] = kwargs.get("worker")

    tasks = Tasks()
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1"
    ) as cluster:
        cluster.scheduler.add_plugin(tasks)
        out = run_cli(
            "pyramid",
            tmp_path / "src.zarr",
            tmp_path / "dist.ome.zarr",
            *args,
            "--scheduler",
            cluster.scheduler_address,
        )
        assert out.returncode == 0, out.stderr
    ms = aa.open_multiscale(str(tmp_path / "dist.ome.zarr"))
    shards = sum(
        int(np.prod([-(-n // s) for n, s in zip(lv.shape, lv.shards, strict=True)])) for lv in ms.levels
    )
    # one task per destination shard of every level: the levels below 0 are downsampled on the workers
    assert len(tasks.done) == shards
    assert tree_bytes(tmp_path / "dist.ome.zarr") == tree_bytes(tmp_path / "local.ome.zarr")
