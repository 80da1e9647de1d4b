"""The memo of parsed array metadata (``formats.registry._node_from``): a re-open of unchanged documents
parses nothing, a changed document is parsed afresh, and no open shares a mutable document with another.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import altarr as aa
from altarr.errors import MetadataError
from altarr.formats import get_format, open_node, register_format, registry
from altarr.stores import MemoryStore

FORMATS = ["zarr3", "zarr2", "n5"]


@pytest.fixture(autouse=True)
def _empty_memo():
    registry._forget_parsed()
    yield
    registry._forget_parsed()


@pytest.fixture
def parses(monkeypatch):
    """Counts the format parses (``Format.detect`` calls that build a spec)."""
    calls: list[str] = []
    for name in FORMATS:
        fmt = get_format(name)
        original = fmt.detect

        def counted(probe, parse, _original=original, _name=name):
            node = _original(probe, parse)
            if node is not None and node.spec is not None:
                calls.append(_name)
            return node

        monkeypatch.setattr(fmt, "detect", counted)
    return calls


def _array(fmt: str, store: MemoryStore | None = None, path: str = "a", **kw) -> tuple[MemoryStore, str]:
    store = store if store is not None else MemoryStore()
    aa.create_dataset(
        store,
        path=path,
        shape=(8, 6),
        chunks=(4, 3),
        dtype="int16",
        format=fmt,
        attributes={"nested": {"list": [1, 2]}, "name": "x"},
        **kw,
    )
    return store, path


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_reopen_of_unchanged_documents_parses_nothing(fmt, parses):
    store, path = _array(fmt)
    first = aa.open_dataset(store, path=path)
    second = aa.open_dataset(store, path=path, mode="r+")
    assert parses == [fmt]
    assert second.shape == first.shape == (8, 6) and second.chunks == (4, 3)
    assert second.dtype == np.dtype("int16") and second.attrs["name"] == "x"
    second[...] = np.arange(48, dtype="int16").reshape(8, 6)
    np.testing.assert_array_equal(first[...], np.arange(48).reshape(8, 6))


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_changed_document_is_parsed_afresh(fmt, parses):
    store, path = _array(fmt)
    assert aa.open_dataset(store, path=path).shape == (8, 6)
    aa.create_dataset(
        store, path=path, shape=(16, 6), chunks=(4, 3), dtype="int16", format=fmt, overwrite=True
    )
    assert aa.open_dataset(store, path=path).shape == (16, 6)
    aa.open_dataset(store, path=path, mode="r+").attrs["name"] = "y"  # this open: the memo's
    assert aa.open_dataset(store, path=path).attrs["name"] == "y"
    assert parses == [fmt] * 3  # the first open, and one after each change
    assert aa.open_dataset(store, path=path).attrs["name"] == "y"
    assert parses == [fmt] * 3


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_open_shares_a_document_another_open_can_change(fmt):
    store, path = _array(fmt)
    aa.open_dataset(store, path=path)  # parsed and memoized: the next two opens are the memo's
    one = aa.open_dataset(store, path=path)
    one.attrs["nested"]["list"].append(3)  # a caller changing what it was handed, in place
    one.attrs.asdict()["name"] = "changed"
    for doc in one.spec.metadata.values():
        if isinstance(doc, dict):
            doc.clear()
    one.spec.attributes["extra"] = 1
    two = aa.open_dataset(store, path=path)
    assert two.attrs["nested"] == {"list": [1, 2]} and two.attrs["name"] == "x"
    assert "extra" not in two.spec.attributes
    assert all(doc for doc in two.spec.metadata.values() if isinstance(doc, dict))
    assert two.spec.metadata.keys() == one.spec.metadata.keys()


def test_the_same_documents_at_another_prefix_are_parsed_for_it(parses):
    store, _ = _array("zarr3", path="a")
    _array("zarr3", store, path="b")
    assert aa.open_dataset(store, path="a").shape == aa.open_dataset(store, path="b").shape
    assert parses == ["zarr3", "zarr3"]


def test_documents_too_large_to_keep_are_parsed_each_time(parses, monkeypatch):
    store, path = _array("zarr3")
    size = len(store.get(f"{path}/zarr.json"))  # with format="zarr3" the only document probed
    monkeypatch.setattr(registry, "PARSED_MAX_BYTES", size - 1)
    aa.open_dataset(store, path=path, format="zarr3")
    aa.open_dataset(store, path=path, format="zarr3")
    assert parses == ["zarr3", "zarr3"] and not registry._parsed
    monkeypatch.setattr(registry, "PARSED_MAX_BYTES", size)  # at the limit: kept
    aa.open_dataset(store, path=path, format="zarr3")
    aa.open_dataset(store, path=path, format="zarr3")
    assert parses == ["zarr3"] * 3 and len(registry._parsed) == 1


def test_the_memo_keeps_the_most_recently_used_entries(parses, monkeypatch):
    monkeypatch.setattr(registry, "PARSED_ENTRIES", 2)
    store = MemoryStore()
    for p in "abc":
        _array("zarr3", store, path=p, fill_value=ord(p))
    for p in "abca":  # a is dropped when c comes in (a, b kept; then b, c)
        aa.open_dataset(store, path=p)
    assert parses == ["zarr3"] * 4
    aa.open_dataset(store, path="c")
    assert len(parses) == 4 and len(registry._parsed) == 2


def test_failures_are_not_memoized():
    store = MemoryStore()
    store.set("a/zarr.json", json.dumps({"zarr_format": 3, "node_type": "array", "shape": [4]}).encode())
    for _ in range(2):
        with pytest.raises(MetadataError, match="missing"):
            aa.open_dataset(store, path="a")
    assert not registry._parsed


def test_groups_and_unparsed_probes_are_not_memoized():
    store = MemoryStore()
    aa.create_group(store, path="g", format="zarr3")
    _array("zarr3", store)
    assert open_node(store, "g").kind == "group"
    assert open_node(store, "a", parse=False).spec is None
    assert not registry._parsed
    assert open_node(store, "a").spec is not None and len(registry._parsed) == 1
    assert open_node(store, "a", parse=False).spec is None  # the parsed one is not handed out


def test_registering_a_format_forgets_every_parse(parses):
    store, path = _array("zarr3")
    aa.open_dataset(store, path=path)
    register_format(get_format("zarr3"), replace=True)
    assert not registry._parsed
    aa.open_dataset(store, path=path)
    assert parses == ["zarr3", "zarr3"]


def test_a_spec_carrying_other_than_json_values_is_not_memoized(parses, monkeypatch):
    """The memo keeps each open's documents as marshal bytes; a format whose spec carries other objects
    in them is parsed every time (and opens as before)."""
    fmt = get_format("zarr3")
    counted = fmt.detect

    def with_an_object(probe, parse):
        node = counted(probe, parse)
        if node is not None and node.spec is not None:
            node.spec.attributes["handle"] = object()
        return node

    monkeypatch.setattr(fmt, "detect", with_an_object)
    store, path = _array("zarr3")
    for _ in range(2):
        assert "handle" in aa.open_dataset(store, path=path).spec.attributes
    assert parses == ["zarr3", "zarr3"] and not registry._parsed
