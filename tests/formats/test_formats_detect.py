"""Format lookup and detection: which metadata key exists, in one batched store request."""

from __future__ import annotations

import pytest
import z5py
import zarr

from _batch_counting_store import CountingStore
from altarr.errors import MetadataError, UnsupportedError
from altarr.formats import detect_format, get_format, open_node
from altarr.stores import LocalStore, MemoryStore


def test_get_format():
    assert {get_format(n).name for n in ("zarr3", "zarr2", "n5")} == {"zarr3", "zarr2", "n5"}
    assert get_format("zarr3").metadata_key == "zarr.json"
    assert get_format("zarr2").metadata_key == ".zarray"
    assert get_format("n5").metadata_key == "attributes.json"
    assert get_format("n5") is get_format("n5")
    with pytest.raises(MetadataError, match="hdf5"):
        get_format("hdf5")


@pytest.mark.parametrize("fmt", ["zarr3", "zarr2", "n5"])
def test_detect_arrays_and_groups_in_one_batch(fmt):
    store = CountingStore()
    f = get_format(fmt)
    f.create_group(store, "")
    f.create_group(store, "g")
    f.create_array(store, "g/a", shape=(4, 4), dtype="uint16", chunks=(2, 2), compressor=None)
    for prefix, kind in [("", "group"), ("g", "group"), ("g/a", "array")]:
        store.batches.clear()
        found, k = detect_format(store, prefix)
        assert (found.name, k) == (fmt, kind)
        assert len(store.batches) == 1  # one batched request for all candidate keys
    store.batches.clear()
    node = open_node(store, "g/a")
    assert node.kind == "array" and node.spec.shape == (4, 4) and node.spec.format == fmt
    assert len(store.batches) == 1


def test_nothing_found_names_the_prefix():
    store = MemoryStore()
    with pytest.raises(MetadataError, match="no Zarr v3, Zarr v2 or N5 metadata") as ei:
        detect_format(store, "some/where")
    assert ei.value.key == "some/where"
    with pytest.raises(MetadataError) as ei:
        detect_format(store, "")
    assert ei.value.key == "/"


def test_precedence_zarr3_over_zarr2_over_n5():
    store = MemoryStore()
    get_format("n5").create_group(store, "x")
    assert detect_format(store, "x")[0].name == "n5"
    get_format("zarr2").create_group(store, "x")
    assert detect_format(store, "x")[0].name == "zarr2"
    get_format("zarr3").create_group(store, "x")
    assert detect_format(store, "x")[0].name == "zarr3"


def test_n5_root_needs_its_version_attribute():
    store = MemoryStore()
    store.set("attributes.json", b'{"something": 1}')
    with pytest.raises(MetadataError):
        detect_format(store, "")
    store.set("attributes.json", b'{"n5": "2.5.1", "something": 1}')
    assert detect_format(store, "")[1] == "group"
    store.set("attributes.json", b'{"n5": "5.0.0"}')
    with pytest.raises(UnsupportedError):
        detect_format(store, "")


def test_n5_directory_without_attributes_is_a_group(tmp_path):
    # Java N5 and z5py create intermediate groups as bare directories
    f = z5py.File(str(tmp_path / "c.n5"), "a", use_zarr_format=False)
    f.create_dataset("a/b/ds", shape=(4,), chunks=(2,), dtype="uint8", compression="raw")
    store = LocalStore(tmp_path / "c.n5")
    assert detect_format(store, "")[0].name == "n5"
    assert detect_format(store, "a/b/ds") == (get_format("n5"), "array")
    kind = detect_format(store, "a")[1]
    assert kind == "group"
    with pytest.raises(MetadataError):
        detect_format(store, "a/nothing")


def test_detect_does_not_validate_array_metadata_but_open_node_does():
    store = MemoryStore()
    store.set("a/zarr.json", b'{"zarr_format": 3, "node_type": "array", "shape": [2]}')
    assert detect_format(store, "a")[1] == "array"
    with pytest.raises(MetadataError, match="required field"):
        open_node(store, "a")


def test_detect_zarr_python_hierarchies(tmp_path):
    root = zarr.open_group(str(tmp_path / "v3"), mode="w", zarr_format=3)
    root.create_array("arr", shape=(3,), dtype="i4")
    root2 = zarr.open_group(str(tmp_path / "v2"), mode="w", zarr_format=2)
    root2.create_array("arr", shape=(3,), dtype="i4")
    store = LocalStore(tmp_path)
    assert detect_format(store, "v3")[0].name == "zarr3" and detect_format(store, "v3/arr")[1] == "array"
    assert detect_format(store, "v2")[0].name == "zarr2" and detect_format(store, "v2/arr")[1] == "array"


def test_bad_zgroup_and_zarr_json():
    store = MemoryStore()
    store.set("g/.zgroup", b'{"zarr_format": 3}')
    with pytest.raises(MetadataError, match="zarr_format") as ei:
        detect_format(store, "g")
    assert ei.value.key == "g/.zgroup"
    store.set("h/zarr.json", b"nope")
    with pytest.raises(MetadataError, match="malformed JSON") as ei:
        detect_format(store, "h")
    assert ei.value.key == "h/zarr.json"


def test_a_format_registers_once_unless_replaced():
    from altarr.formats import FORMATS, register_format, unregister_format

    n5 = get_format("n5")
    with pytest.raises(ValueError) as ei:
        register_format(n5)
    assert str(ei.value) == "format 'n5' is already registered"
    assert register_format(n5, replace=True) is n5 and get_format("n5") is n5

    class Other(type(n5)):
        name = "n5-copy"

    other = Other()
    try:
        assert register_format(other) is other  # a new name needs no replace
        assert get_format("n5-copy") is other
        unregister_format("n5-copy")
        assert "n5-copy" not in FORMATS
        unregister_format("n5-copy")  # unknown names are ignored
    finally:
        FORMATS.pop("n5-copy", None)
    with pytest.raises(MetadataError) as ei:
        get_format("n5-copy")
    assert str(ei.value) == "unknown format 'n5-copy'; expected one of ['n5', 'zarr2', 'zarr3']"
