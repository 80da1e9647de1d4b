"""Consolidated metadata kept true (issue 32 item 4): ``aa.consolidate_metadata`` writes what zarr-python
writes, altarr's own writes into a consolidated hierarchy update it, and ``altarr copy`` keeps it; checked
with the real zarr-python (``zarr.open_consolidated``) and xarray (``xr.open_zarr``)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

import altarr as aa
from _cli_support import run_cli
from altarr.dataset.consolidated import is_consolidated, refresh_consolidated
from altarr.errors import UnsupportedError
from altarr.formats import get_format
from altarr.stores import MemoryStore

pytestmark = pytest.mark.filterwarnings("ignore:Consolidated metadata is currently not part:UserWarning")

HOLDER = {2: ".zmetadata", 3: "zarr.json"}


def _snapshot(path: Path, zarr_format: int) -> dict:
    doc = json.loads((path / HOLDER[zarr_format]).read_text())
    return doc["metadata"] if zarr_format == 2 else doc["consolidated_metadata"]["metadata"]


def _zarr_python_group(path: Path, zarr_format: int) -> None:
    """A group consolidated by zarr-python, with one array named for xarray."""
    g = zarr.open_group(str(path), mode="w", zarr_format=zarr_format)
    t = g.create_array("t", shape=(4,), dtype="f4", dimension_names=["x"] if zarr_format == 3 else None)
    if zarr_format == 2:
        t.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    t[:] = np.arange(1, 5)
    zarr.consolidate_metadata(str(path), zarr_format=zarr_format)


def _dims(zarr_format: int, *names: str) -> dict:
    if zarr_format == 3:
        return {"dimension_names": list(names)}
    return {"attributes": {"_ARRAY_DIMENSIONS": list(names)}}


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_an_array_altarr_adds_to_a_consolidated_group_is_listed_by_zarr_python_and_xarray(
    tmp_path, zarr_format
):
    path = tmp_path / "c.zarr"
    _zarr_python_group(path, zarr_format)
    g = aa.open_group(path, mode="r+")
    new = g.create_dataset("added", shape=(3,), dtype="i2", chunks=(3,), **_dims(zarr_format, "y"))
    new[...] = [7, 8, 9]
    # zarr-python reads the hierarchy from the consolidated document alone
    zg = zarr.open_consolidated(str(path), zarr_format=zarr_format)
    assert sorted(zg.keys()) == ["added", "t"]
    np.testing.assert_array_equal(zg["added"][:], [7, 8, 9])
    ds = xr.open_zarr(str(path), consolidated=True, zarr_format=zarr_format)
    assert sorted(ds.data_vars) == ["added", "t"]
    np.testing.assert_array_equal(ds["added"].values, [7, 8, 9])
    # and altarr's own consolidated view
    assert sorted(aa.open_group(path, consolidated=True).keys()) == ["added", "t"]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_groups_attributes_resize_and_deletion_keep_the_snapshot_true(tmp_path, zarr_format):
    path = tmp_path / "c.zarr"
    _zarr_python_group(path, zarr_format)
    g = aa.open_group(path, mode="r+")
    g.attrs["title"] = "survey"
    deep = g.create_group("a/b")  # the intermediate group "a" is written too
    arr = deep.create_dataset("v", shape=(2, 2), dtype="u1", chunks=(2, 2))
    arr.attrs["units"] = "m"
    arr.resize((5, 2))
    aa.open_dataset(path, mode="r+", path="t").append(np.arange(5, 7, dtype="f4"))
    zg = zarr.open_consolidated(str(path), zarr_format=zarr_format)
    assert zg.attrs["title"] == "survey"
    assert sorted(zg.group_keys()) == ["a"] and sorted(zg["a"].group_keys()) == ["b"]
    assert zg["a/b/v"].shape == (5, 2) and zg["a/b/v"].attrs["units"] == "m"
    assert zg["t"].shape == (6,)
    del g["a"]
    assert not any(k == "a" or k.startswith("a/") for k in _snapshot(path, zarr_format))
    assert sorted(zarr.open_consolidated(str(path), zarr_format=zarr_format).keys()) == ["t"]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_the_snapshot_after_altarr_writes_is_what_consolidating_again_gives(tmp_path, zarr_format):
    path = tmp_path / "c.zarr"
    _zarr_python_group(path, zarr_format)
    g = aa.open_group(path, mode="r+")
    g.create_group("s").create_dataset("w", shape=(4,), dtype="f8", chunks=(2,)).resize((6,))
    g.create_dataset("t", shape=(2,), dtype="u2", chunks=(2,), overwrite=True)  # replaced
    refreshed = _snapshot(path, zarr_format)
    aa.consolidate_metadata(path)
    assert _snapshot(path, zarr_format) == refreshed
    assert refreshed["t/.zarray" if zarr_format == 2 else "t"][
        "dtype" if zarr_format == 2 else "data_type"
    ] in (
        "<u2",
        "uint16",
    )


def test_zarr_v3_consolidation_holds_zarr_pythons_documents(tmp_path):
    """altarr's consolidated_metadata over a zarr-python hierarchy is zarr-python's own, byte for byte
    once parsed: the same entries in the same order, child groups with their empty inline member."""
    path = tmp_path / "c.zarr"
    _zarr_python_group(path, 3)
    g = zarr.open_group(str(path), mode="r+")
    g.create_group("sub", attributes={"k": 1}).create_array("b", shape=(3, 3), chunks=(2, 2), dtype="f4")
    zarr.consolidate_metadata(str(path))
    theirs = json.loads((path / "zarr.json").read_text())
    aa.consolidate_metadata(str(path))
    ours = json.loads((path / "zarr.json").read_text())
    assert list(ours["consolidated_metadata"]["metadata"]) == list(
        theirs["consolidated_metadata"]["metadata"]
    )
    assert ours == theirs


def test_an_unconsolidated_group_stays_unconsolidated_and_n5_has_none(tmp_path):
    g = aa.create_group(tmp_path / "plain.zarr")
    g.create_dataset("a", shape=(3,), dtype="u1", chunks=(3,))
    assert not is_consolidated(g)
    assert "consolidated_metadata" not in json.loads((tmp_path / "plain.zarr/zarr.json").read_text())
    n5 = aa.create_group(tmp_path / "c.n5", format="n5")
    assert not is_consolidated(n5)
    with pytest.raises(UnsupportedError, match="N5 has no consolidated metadata"):
        aa.consolidate_metadata(n5)


def test_nested_consolidated_groups_are_each_refreshed_and_a_write_costs_one_batched_read():
    store = MemoryStore()
    root = aa.create_group(store, format="zarr2")
    root.create_group("inner")
    aa.consolidate_metadata(store)
    aa.consolidate_metadata(store, path="inner")
    store.stats.reset()
    refresh_consolidated(store, "inner/x", get_format("zarr2"), "created")  # no such node: nothing to add
    assert store.stats.reads >= 1
    inner = aa.open_group(store, mode="r+", path="inner")
    inner.create_dataset("x", shape=(2,), dtype="u1", chunks=(2,))
    assert "inner/x/.zarray" in json.loads(store.get(".zmetadata"))["metadata"]
    assert "x/.zarray" in json.loads(store.get("inner/.zmetadata"))["metadata"]
    plain = MemoryStore()
    aa.create_group(plain, format="zarr2").create_group("g")
    plain.stats.reset()
    refresh_consolidated(plain, "g/a", get_format("zarr2"), "created")
    assert plain.stats.reads == 3 and plain.stats.writes == 0  # the three candidate holders, batched


def test_concurrent_altarr_writers_lose_no_entry(tmp_path):
    path = tmp_path / "c.zarr"
    aa.consolidate_metadata(aa.create_group(path, format="zarr3"))
    g = aa.open_group(path, mode="r+")
    names = [f"a{i}" for i in range(12)]
    threads = [
        threading.Thread(target=g.create_dataset, args=(n,), kwargs={"shape": (2,), "dtype": "u1"})
        for n in names
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(_snapshot(path, 3)) == sorted(names)


@pytest.mark.parametrize("to", ["zarr2", "zarr3"])
def test_altarr_copy_keeps_a_consolidated_group_consolidated(tmp_path, to):
    src = tmp_path / "src.zarr"
    _zarr_python_group(src, 2)
    zarr.open_group(str(src), mode="r+", zarr_format=2).create_group("g").create_array(
        "u", shape=(2,), dtype="u1"
    )
    zarr.consolidate_metadata(str(src), zarr_format=2)
    dst = tmp_path / "dst.zarr"
    proc = run_cli("copy", src, dst, "--format", to, timeout=120)
    assert proc.returncode == 0, proc.stderr
    fmt = int(to[-1])
    assert sorted(zarr.open_consolidated(str(dst), zarr_format=fmt).keys()) == ["g", "t"]
    assert sorted(k for k in _snapshot(dst, fmt) if not k.startswith(".")) == (
        ["g/.zgroup", "g/u/.zarray", "t/.zarray", "t/.zattrs"] if fmt == 2 else ["g", "g/u", "t"]
    )
