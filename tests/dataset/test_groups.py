"""The Group API (``keys``, ``arrays()``, ``groups()``, ``in``, ``[]``, ``require_group``, attributes,
read-only refusals) checked against zarr-python's groups on the same store, both ways, for Zarr v3 and
v2: a hierarchy one library writes, the other lists the same way."""

from __future__ import annotations

import numpy as np
import pytest

import altarr as aa
from altarr.errors import MetadataError, ReadOnlyError

zarr = pytest.importorskip("zarr")

FORMATS = {"zarr3": 3, "zarr2": 2}


def listing(g) -> tuple[list[str], list[str], list[str]]:
    """(keys, array names, group names) of a group of either library, sorted."""
    return (
        sorted(g.keys()),
        sorted(name for name, _ in g.arrays()),
        sorted(name for name, _ in g.groups()),
    )


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_zarr_python_hierarchy_lists_the_same_in_altarr(tmp_path, fmt):
    path = str(tmp_path / "z.zarr")
    z = zarr.open_group(path, mode="w", zarr_format=FORMATS[fmt], attributes={"title": "t", "n": [1, 2]})
    z.create_array("b", shape=(5,), chunks=(2,), dtype="int32")[:] = np.arange(5)
    sub = z.create_group("a", attributes={"level": 1})
    sub.create_group("x")
    sub.create_array("deep", shape=(2, 3), chunks=(1, 3), dtype="uint8")[:] = 7
    z.require_group("c")

    g = aa.open_group(path)
    assert isinstance(g, aa.Group) and g.format == fmt
    assert listing(g) == listing(z) == (["a", "b", "c"], ["b"], ["a", "c"])
    assert listing(g["a"]) == listing(z["a"]) == (["deep", "x"], ["deep"], ["x"])
    assert list(g) == sorted(z.keys())  # iteration is keys()
    assert dict(g.attrs) == dict(z.attrs) and dict(g["a"].attrs) == {"level": 1}
    assert "a/x" in g and "b" in g and "nope" not in g and "a/nope" not in g
    np.testing.assert_array_equal(g["b"][...], z["b"][...])
    np.testing.assert_array_equal(g["a/deep"][...], np.full((2, 3), 7, "uint8"))
    assert isinstance(g["a"], aa.Group) and isinstance(g["b"], aa.Dataset)
    # require_group: an existing group comes back (read-only is fine), an array is refused like zarr does
    assert listing(g.require_group("a")) == listing(g["a"])
    with pytest.raises(TypeError):
        z.require_group("b")
    with pytest.raises(MetadataError, match="not a group"):
        g.require_group("b")


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_an_altarr_hierarchy_lists_the_same_in_zarr_python(tmp_path, fmt):
    path = str(tmp_path / "a.zarr")
    g = aa.create_group(path, format=fmt, attributes={"title": "made by altarr"})
    ds = g.create_dataset("raw/volume", shape=(6, 4), dtype="int16", chunks=(3, 2))  # makes group "raw"
    ds[...] = np.arange(24, dtype="int16").reshape(6, 4)
    g.create_group("labels", attributes={"kind": "seg"})
    made = g.require_group("meta")  # missing: created
    assert isinstance(made, aa.Group) and made.path == "meta"
    again = g.require_group("meta")  # present: the same node, nothing rewritten
    assert again.path == made.path and listing(again) == ([], [], [])
    g.require_group("labels").create_group("sub/leaf")  # intermediate groups too

    z = zarr.open_group(path, mode="r")
    assert listing(z) == listing(g) == (["labels", "meta", "raw"], [], ["labels", "meta", "raw"])
    assert listing(z["raw"]) == listing(g["raw"]) == (["volume"], ["volume"], [])
    assert listing(z["labels"]) == listing(g["labels"]) == (["sub"], [], ["sub"])
    assert listing(z["labels/sub"]) == listing(g["labels/sub"]) == (["leaf"], [], ["leaf"])
    assert dict(z.attrs) == {"title": "made by altarr"} and dict(z["labels"].attrs) == {"kind": "seg"}
    np.testing.assert_array_equal(z["raw/volume"][...], np.arange(24).reshape(6, 4))
    # a child group made by zarr-python afterwards shows up in altarr's listing
    zarr.open_group(path, mode="a").create_group("later")
    assert "later" in g and listing(g)[2] == ["labels", "later", "meta", "raw"]


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_read_only_groups_refuse_every_write_like_zarr_python(tmp_path, fmt):
    path = str(tmp_path / "r.zarr")
    w = aa.create_group(path, format=fmt, attributes={"k": 1})
    w.create_group("child")
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))

    g = aa.open_group(path)  # mode "r"
    z = zarr.open_group(path, mode="r")
    refusals = [
        (lambda: g.create_group("x"), lambda: z.create_group("x")),
        (
            lambda: g.create_dataset("y", shape=(2,), dtype="int8", chunks=(2,)),
            lambda: z.create_array("y", shape=(2,), dtype="int8"),
        ),
        (lambda: g.require_group("q"), lambda: z.require_group("q")),
        (lambda: g.attrs.__setitem__("k", 2), lambda: z.attrs.__setitem__("k", 2)),
        (lambda: g["child"].create_group("deeper"), lambda: z["child"].create_group("deeper")),
    ]
    for ours, theirs in refusals:
        with pytest.raises(ValueError, match="read-only"):  # zarr-python refuses ...
            theirs()
        with pytest.raises(ReadOnlyError):  # ... and so do we, with our error naming the node
            ours()
    # an existing child group is still handed back read-only, by both
    assert g.require_group("child").read_only and listing(z.require_group("child")) == ([], [], [])
    # nothing was written by either
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == before
    assert dict(aa.open_group(path).attrs) == {"k": 1}


def test_a_group_path_is_checked_and_reported():
    g = aa.create_group("memory://groups-api-names")
    with pytest.raises(MetadataError, match="empty child name"):
        g[""]
    with pytest.raises(MetadataError, match="empty child name"):
        g.create_group("/")
    assert repr(g) == "<altarr.Group zarr3 '/'>"
    assert repr(g.create_group("s")) == "<altarr.Group zarr3 's'>"
