"""N5 groups without ``attributes.json`` (issue 32 item 5), as z5py and Java N5 write a group that has no
attributes: a bare directory below the container root. Each place a group opens opens them: ``altarr
info`` (the console script), ``aa.open_group`` by ``path=`` and by the group's own path, a child of an open
group, ``xr.open_dataset(..., group=...)`` and ``xr.open_datatree``. The container is written by z5py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import z5py

import altarr as aa
from _cli_support import run_cli
from altarr.dataset.n5_container import MAX_LEVELS, n5_container_above
from altarr.errors import NodeNotFoundError
from altarr.stores import LocalStore

VALUES = np.arange(24, dtype="uint16").reshape(4, 6)


@pytest.fixture
def container(tmp_path) -> Path:
    """z5py's container: root attributes.json only; ``g`` holds an array and an empty group ``sub``."""
    path = tmp_path / "z.n5"
    f = z5py.File(str(path), mode="w")
    g = f.create_group("g")
    d = g.create_dataset("d", shape=VALUES.shape, chunks=(2, 3), dtype="uint16", compression="gzip")
    d[:] = VALUES
    d.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
    g.create_group("sub")
    assert not (path / "g/attributes.json").exists() and not (path / "g/sub/attributes.json").exists()
    assert "n5" in json.loads((path / "attributes.json").read_text())
    assert list((path / "g/sub").iterdir()) == []  # an empty directory
    return path


def test_open_group_by_path_inside_the_container_and_by_path_argument(container):
    for group in (aa.open_group(container / "g"), aa.open_group(container, path="g")):
        assert group.format == "n5" and group.path == "g"
        assert list(group.keys()) == ["d", "sub"]
        np.testing.assert_array_equal(group["d"][...], VALUES)
        assert isinstance(group["sub"], aa.Group) and list(group["sub"].keys()) == []
    assert aa.open_group(container / "g" / "sub").path == "g/sub"
    assert aa.open_group(container, mode="r+", path="g").create_group("new").path == "g/new"


def test_xarray_opens_the_group_and_the_tree(container):
    ds = xr.open_dataset(container, engine="altarr", group="g")
    assert list(ds.data_vars) == ["d"] and ds["d"].dims == ("y", "x")
    np.testing.assert_array_equal(ds["d"].values, VALUES)
    assert list(xr.open_dataset(container / "g", engine="altarr").data_vars) == ["d"]
    tree = xr.open_datatree(container, engine="altarr")
    assert sorted(tree.groups) == ["/", "/g", "/g/sub"]
    np.testing.assert_array_equal(tree["g/d"].values, VALUES)
    assert sorted(xr.open_datatree(container / "g", engine="altarr").groups) == ["/", "/sub"]


def test_altarr_info_and_tree_on_the_console(container):
    for node, children in (("g", ["d", "sub"]), ("g/sub", [])):
        proc = run_cli("info", container / node, "--json", timeout=120)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        assert doc["format"] == "n5" and [c["name"] for c in doc["children"]] == children
    proc = run_cli("tree", container, timeout=120)
    assert proc.returncode == 0 and "sub/ (group, n5)" in proc.stdout, proc.stdout + proc.stderr


def test_a_missing_node_is_still_not_found_and_the_walk_up_is_bounded(container, tmp_path):
    with pytest.raises(FileNotFoundError):
        aa.open_group(container / "g" / "nope")
    with pytest.raises(NodeNotFoundError):
        aa.open_group(tmp_path / "plain-folder")
    deep = tmp_path.joinpath(*[f"d{i}" for i in range(MAX_LEVELS + 3)])
    deep.mkdir(parents=True)
    assert n5_container_above(deep, "", "r", {}) is None
    # a directory below a folder that is no N5 container is no group
    (tmp_path / "other" / "g").mkdir(parents=True)
    assert n5_container_above(tmp_path / "other", "g", "r", {}) is None
    (tmp_path / "other" / "attributes.json").write_text("not json")  # not a container root either
    assert n5_container_above(tmp_path / "other", "g", "r", {}) is None
    store, prefix = n5_container_above(container / "g", "sub", "r", {})
    assert isinstance(store, LocalStore) and prefix == "g/sub"
