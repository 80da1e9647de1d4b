"""The command line with pyramids, through the real console script: ``altarr pyramid`` builds one from an
array and converts one between layouts, ``altarr copy`` converts every level and its metadata, ``info``
and ``tree`` show a pyramid as such, ``show`` draws from the level that fits ``--size``, and bad
arguments get one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

import altarr as aa
from _cli_support import run_cli, tree_bytes


@pytest.fixture
def stack(tmp_path):
    path = tmp_path / "stack.n5"
    ds = aa.create_dataset(str(path), shape=(20, 90, 120), dtype="uint16", chunks=(10, 32, 32), format="n5")
    ds[...] = np.random.default_rng(1).integers(0, 3000, ds.shape, dtype="uint16")
    return path


def test_pyramid_builds_from_an_array_and_copy_converts_it(tmp_path, stack):
    out = tmp_path / "stack.ome.zarr"
    proc = run_cli(
        "pyramid",
        stack,
        out,
        "--scale",
        "4,1,1",
        "--unit",
        "micrometer",
        "--chunks",
        "10,32,32",
        "--shards",
        "20,64,64",
        "--workers",
        "2",
    )
    assert proc.returncode == 0, proc.stderr
    assert "wrote a ome-zarr pyramid of 4 levels (20x90x120, 20x45x60, 20x22x30, 10x11x15)" in proc.stdout
    ms = aa.open_multiscale(str(out))
    assert ms.levels[2].scale == (4.0, 4.0, 4.0) and ms.levels[1].shards == (20, 64, 64)

    info = json.loads(run_cli("info", out, "--json").stdout)
    assert info["multiscale"]["layout"] == "ome-zarr"
    assert [lv["factors"] for lv in info["multiscale"]["levels"]] == [
        [1, 1, 1],
        [1, 2, 2],
        [1, 4, 4],
        [2, 8, 8],
    ]
    tree = run_cli("tree", out).stdout
    assert "ome-zarr pyramid of 4 levels" in tree and "level 2, factors (1, 4, 4), scale (4, 4, 4)" in tree

    proc = run_cli("copy", out, tmp_path / "bdv.n5", "--format", "n5", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert "written as n5-viewer" in proc.stderr
    back = aa.open_multiscale(str(tmp_path / "bdv.n5"))
    assert back.layout == "n5-viewer" and [lv.scale for lv in back.levels] == [lv.scale for lv in ms.levels]
    np.testing.assert_array_equal(back.levels[2].dataset[...], ms.levels[2].dataset[...])

    proc = run_cli("pyramid", out, tmp_path / "b.n5", "--layout", "bdv", "--shards", "none", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert aa.open_multiscale(str(tmp_path / "b.n5")).levels[0].shards is None
    assert json.loads((tmp_path / "b.n5" / "setup0" / "attributes.json").read_text())["downsamplingFactors"][
        2
    ] == [4, 4, 1]


def test_show_draws_a_pyramid_from_the_level_that_fits(tmp_path, stack):
    pytest.importorskip("matplotlib")
    out = tmp_path / "p.ome.zarr"
    assert run_cli("pyramid", stack, out, "--chunks", "10,32,32", "--no-progress").returncode == 0
    proc = run_cli("show", out, "--index", "10,:,:", "--size", "50", "-o", tmp_path / "s.png")
    assert proc.returncode == 0, proc.stderr
    assert "a 22x30 slice" in proc.stdout  # level 2: 90x120 / 4
    proc = run_cli("show", out, "--index", "10,:,:", "-o", tmp_path / "full.png")
    assert "a 90x120 slice" in proc.stdout


def test_an_interrupted_pyramid_resumes_and_bad_arguments_are_one_line(tmp_path, stack):
    out = tmp_path / "p.ome.zarr"
    first = run_cli("pyramid", stack, out, "--no-progress", "--chunks", "10,32,32")
    whole = tree_bytes(out)
    assert first.returncode == 0
    again = run_cli("pyramid", stack, out, "--no-progress", "--chunks", "10,32,32", "--resume")
    assert again.returncode == 0 and tree_bytes(out) == whole
    for args, message in [
        (["--method", "median"], "--method must be one of mean, mode, stride"),
        (["--layout", "tiff"], "unknown pyramid layout 'tiff'"),
        (["--factors", "2,2"], "--factors '2,2' must give 3 numbers"),
        (["--scale", "a,b,c"], "--scale must be 3 comma-separated numbers"),
        (["--resume", "--overwrite"], "--resume and --overwrite contradict each other"),
    ]:
        proc = run_cli("pyramid", stack, tmp_path / "x.zarr", *args)
        assert proc.returncode in (1, 2) and message in proc.stderr, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1
    proc = run_cli("pyramid", out, tmp_path / "y.zarr", "--method", "mode")
    assert proc.returncode == 2 and "converting a pyramid keeps its levels" in proc.stderr
    proc = run_cli("pyramid", stack, out)
    assert proc.returncode == 1 and "already exists" in proc.stderr


@pytest.mark.parametrize("layout", ["n5-viewer", "ome-zarr"])
def test_info_reads_a_pyramids_metadata_once(layout):
    """``altarr info`` (and ``tree``, ``show``, ``copy``: one helper) reads a pyramid's levels as one
    ``open_multiscale`` does, beside listing the group's children: asking ``is_multiscale`` first read
    an N5 pyramid's metadata twice (twice the requests on a remote store)."""
    from altarr.cli.inspect import describe
    from altarr.stores import MemoryStore

    store = MemoryStore()
    aa.build_pyramid(np.ones((64, 64), "u2"), store, chunks=(16, 16), levels=3, layout=layout)

    def reads(fn) -> int:
        group = aa.open_group(store)
        store.stats.reset()
        fn(group)
        return store.stats.reads

    children = reads(lambda group: [group[name] for name in group.keys()])
    assert reads(describe) == children + reads(aa.open_multiscale)


def test_copy_of_a_pyramid_says_it_copied_the_pyramid_and_its_levels(tmp_path):
    src = tmp_path / "p.ome.zarr"
    aa.build_pyramid(np.ones((64, 64), "u2"), str(src), chunks=(16, 16), levels=3)
    proc = run_cli("copy", src, tmp_path / "p.n5", "--format", "n5", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"copied a ome-zarr pyramid of 3 levels to {tmp_path / 'p.n5'}: "), (
        proc.stdout
    )
