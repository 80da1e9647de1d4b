"""The format registry: a new format is one module and one registration.

``ToyFormat`` below is a whole format (the one "How to add a format" in ``docs/architecture.md`` shows):
one JSON header ``toy.json`` per node, one chunk per file under ``c/<i>/<j>``, little-endian bytes with
zstd. Registered (and removed again) by a fixture, it is created, found by ``altarr.open`` and
``altarr.open_dataset`` in the one batched detection round, and read and written through the engine.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import altarr as aa
from _batch_counting_store import CountingStore
from altarr.codecs import BytesCodec, CodecChain, ZstdCodec
from altarr.errors import ExistsError, MetadataError
from altarr.formats import (
    DatasetSpec,
    Format,
    Node,
    Probe,
    detect_format,
    get_format,
    join_key,
    open_node,
    register_format,
    registered_formats,
    unregister_format,
)
from altarr.formats.base import NewArray
from altarr.stores import MemoryStore
from altarr.transfer import FORMATS as COPY_FORMATS

HEADER = "toy.json"


class ToyFormat(Format):
    """A minimal format: ``toy.json`` holds ``{"toy": 1, "node": "array"|"group", ...}``."""

    name = "toy"
    title = "Toy"
    metadata_key = HEADER
    probe_keys = (HEADER,)
    attributes_document = HEADER
    array_options = ("level",)
    has_dimension_names = False

    # --- reading -------------------------------------------------------------------------------------
    def detect(self, probe: Probe, parse: bool) -> Node | None:
        doc = probe.doc(HEADER)
        if doc is None:
            return None
        if doc.get("toy") != 1 or doc.get("node") not in ("array", "group"):
            raise MetadataError("not a toy header", key=probe.key(HEADER))
        spec = self._spec(doc, probe.prefix) if doc["node"] == "array" and parse else None
        return Node(self, doc["node"], spec)

    def _spec(self, doc: dict[str, Any], prefix: str) -> DatasetSpec:
        codecs = CodecChain([BytesCodec("little"), ZstdCodec(level=doc["level"])])
        return DatasetSpec(
            format=self.name,
            shape=tuple(doc["shape"]),
            dtype=np.dtype(doc["dtype"]).newbyteorder("="),
            outer_chunks=tuple(doc["chunks"]),
            codecs=codecs,
            fill_value=np.dtype(doc["dtype"]).type(doc["fill_value"]),
            chunk_key=lambda pos: "/".join(["c", *map(str, pos)]),
            attributes=dict(doc.get("attributes", {})),
            metadata={HEADER: doc},
        )

    def _doc(self, store: Any, prefix: str) -> dict[str, Any] | None:
        data = store.get(join_key(prefix, HEADER))
        return None if data is None else json.loads(bytes(data))

    # --- writing -------------------------------------------------------------------------------------
    def _write_array(self, store: Any, prefix: str, key: str, new: NewArray) -> DatasetSpec:
        if new.shards is not None:
            raise MetadataError("toy arrays cannot be sharded", key=key)
        doc = {
            "toy": 1,
            "node": "array",
            "shape": list(new.shape),
            "chunks": list(new.chunks),
            "dtype": np.dtype(new.dtype).newbyteorder("<").str,
            "fill_value": new.fill_value,
            "level": new.options.get("level", 3),
            "attributes": dict(new.attributes or {}),
        }
        store.set(key, json.dumps(doc).encode())
        return self._spec(doc, prefix)

    def read_attributes(self, store: Any, prefix: str) -> dict[str, Any]:
        doc = self._doc(store, prefix)
        return dict((doc or {}).get("attributes", {}))

    def write_attributes(self, store: Any, prefix: str, attributes: dict[str, Any]) -> None:
        doc = self._doc(store, prefix) or {"toy": 1, "node": "group"}
        store.set(join_key(prefix, HEADER), json.dumps({**doc, "attributes": attributes}).encode())

    def create_group(self, store: Any, prefix: str, attributes: dict[str, Any] | None = None) -> None:
        doc = {"toy": 1, "node": "group", "attributes": dict(attributes or {})}
        store.set(join_key(prefix, HEADER), json.dumps(doc).encode())


@pytest.fixture
def toy():
    fmt = register_format(ToyFormat())
    try:
        yield fmt
    finally:
        unregister_format("toy")


def test_builtin_formats_are_registered_in_detection_order():
    assert [f.name for f in registered_formats()] == ["zarr3", "zarr2", "n5"]
    caps = {f.name: (f.can_shard, f.has_dimension_names, f.probe_keys) for f in registered_formats()}
    assert caps == {
        "zarr3": (True, True, ("zarr.json",)),
        "zarr2": (False, True, (".zarray", ".zgroup", ".zattrs")),
        "n5": (True, False, ("attributes.json",)),
    }
    sharding = {name: f.can_shard for name, f in COPY_FORMATS.items()}  # copy writes what the registry holds
    assert sharding == {"zarr3": True, "zarr2": False, "n5": True}
    with pytest.raises(ValueError, match="already registered"):
        register_format(type(get_format("n5"))())  # a built-in, registered twice


def test_toy_format_created_detected_read_and_written(toy, tmp_path):
    path = str(tmp_path / "t")
    data = np.arange(35, dtype="uint16").reshape(5, 7)
    ds = aa.create_dataset(path, shape=(5, 7), dtype="uint16", chunks=(2, 3), format="toy", level=5)
    assert ds.format == "toy" and ds.chunks == (2, 3) and ds.shards is None
    ds[...] = data  # through the engine: edge chunks padded, one object per chunk
    stored = sorted(
        p.relative_to(tmp_path / "t").as_posix() for p in (tmp_path / "t").rglob("*") if p.is_file()
    )
    assert stored == [f"c/{i}/{j}" for i in range(3) for j in range(3)] + ["toy.json"]
    assert json.loads((tmp_path / "t" / "toy.json").read_text())["level"] == 5

    again = aa.open_dataset(path)
    assert again.format == "toy" and again.shape == (5, 7)
    np.testing.assert_array_equal(again[...], data)
    np.testing.assert_array_equal(again.read_chunk((2, 2)), data[4:, 6:])
    lazy = aa.open(path)  # the lazy layer finds it too
    np.testing.assert_array_equal(np.asarray(lazy[1:4, ::2]), data[1:4, ::2])

    with pytest.raises(MetadataError, match="unknown Toy option"):
        aa.create_dataset(path + "2", shape=(2,), dtype="u1", chunks=(1,), format="toy", nope=1)
    with pytest.raises(ExistsError):
        aa.create_dataset(path, shape=(2,), dtype="u1", chunks=(1,), format="toy")


def test_toy_detection_is_in_the_one_batched_round(toy):
    store = CountingStore()
    toy.create_group(store, "g", {"a": 1})
    toy.create_array(store, "g/x", shape=(4,), dtype="f4", chunks=(2,))
    for prefix, kind in [("g", "group"), ("g/x", "array")]:
        store.batches.clear()
        fmt, found = detect_format(store, prefix)
        assert (fmt.name, found) == ("toy", kind)
        assert len(store.batches) == 1
        # every registered format's candidates in that one request, the toy's header last
        assert store.batches[0][-2:] == [join_key(prefix, HEADER), "attributes.json"]
    store.batches.clear()
    assert open_node(store, "g/x", format="toy").spec.shape == (4,)
    assert store.batches == [["g/x/toy.json"]]  # a format= hint asks for that format's documents only


def test_toy_groups_hold_children_and_attributes(toy):
    root = aa.create_group("memory://toy-groups", format="toy", attributes={"title": "t"})
    ds = root.create_dataset("sub/a", shape=(3,), dtype="i4", chunks=(2,))
    ds[...] = [1, 2, 3]
    assert sorted(root.keys()) == ["sub"] and root["sub"].format == "toy"
    assert list(root["sub/a"][...]) == [1, 2, 3]
    assert aa.open_group("memory://toy-groups").attrs["title"] == "t"


def test_copy_to_the_toy_format_asks_its_capabilities(toy):
    src = aa.create_dataset(
        "memory://toy-copy/a",
        shape=(4, 4),
        dtype="u1",
        chunks=(2, 2),
        shards=(4, 4),
        dimension_names=["y", "x"],
    )
    src[...] = np.arange(16, dtype="u1").reshape(4, 4)
    from altarr.transfer import copy_array

    result = copy_array(src, "memory://toy-copy/b", format="toy", compressor={"ignored": True})
    assert result.dataset.format == "toy" and result.dataset.shards is None  # cannot shard: dropped
    assert any("toy cannot hold shards" in n for n in result.notes)
    np.testing.assert_array_equal(result.dataset[...], src[...])


def test_unregistered_format_is_unknown_again():
    assert "toy" not in {f.name for f in registered_formats()}
    with pytest.raises(MetadataError, match="unknown format 'toy'"):
        get_format("toy")


@pytest.fixture
def only_toy():
    """The registry holding the toy format alone; yields the built-ins (registered again afterwards)."""
    builtins = registered_formats()
    for fmt in builtins:
        unregister_format(fmt.name)
    register_format(ToyFormat())
    try:
        yield {fmt.name: fmt for fmt in builtins}
    finally:
        for fmt in registered_formats():
            unregister_format(fmt.name)
        for fmt in builtins:
            register_format(fmt)


def test_nothing_found_names_every_format_and_document_looked_for(only_toy):
    store = MemoryStore()
    with pytest.raises(MetadataError) as info:
        open_node(store, "")
    assert str(info.value) == "no Toy metadata found (looked for toy.json) [key='/']"
    register_format(only_toy["zarr2"])
    with pytest.raises(MetadataError) as info:
        open_node(store, "x")
    assert str(info.value) == (
        "no Zarr v2 or Toy metadata found (looked for .zarray, .zgroup, toy.json) [key='x']"
    )


def test_nothing_found_among_the_builtin_formats_names_their_documents():
    with pytest.raises(MetadataError) as info:
        detect_format(MemoryStore(), "a/b")
    assert str(info.value) == (
        "no Zarr v3, Zarr v2 or N5 metadata found (looked for zarr.json, .zarray, .zgroup, attributes.json) "
        "[key='a/b']"
    )


def test_a_format_failing_with_a_python_error_is_reported_as_invalid_metadata_of_the_node(toy):
    store = MemoryStore()
    bad = {"toy": 1, "node": "array", "shape": 5, "chunks": [2], "dtype": "<u1", "fill_value": 0, "level": 1}
    for prefix, named in [("g/x", "g/x"), ("", "/")]:
        store.set(join_key(prefix, HEADER), json.dumps(bad).encode())
        with pytest.raises(MetadataError) as info:
            open_node(store, prefix)
        assert str(info.value) == f"invalid metadata: TypeError: 'int' object is not iterable [key='{named}']"
        assert isinstance(info.value.__cause__, TypeError)


def test_open_node_hands_back_every_fetched_document_and_the_extra_ones():
    store = MemoryStore()
    get_format("zarr3").create_group(store, "g")
    store.set("g/extra.json", b"{}")
    node = open_node(store, "g", extra=("extra.json", "missing.json"))
    assert node.raw == {
        "zarr.json": store.get("g/zarr.json"),
        ".zarray": None,
        ".zgroup": None,
        ".zattrs": None,
        "attributes.json": None,
        "/attributes.json": None,
        "extra.json": b"{}",
        "missing.json": None,
    }
    get_format("zarr3").create_group(store, "")
    root = dict.fromkeys(
        ["zarr.json", ".zarray", ".zgroup", ".zattrs", "attributes.json", "/attributes.json"]
    )
    assert open_node(store, "").raw == root | {"zarr.json": store.get("zarr.json")}  # root documents unasked


def test_a_bad_root_document_is_named_by_its_own_key():
    store = MemoryStore()
    n5 = get_format("n5")
    n5.create_group(store, "")
    n5.create_array(store, "a", shape=(2,), dtype="u1", chunks=(1,))
    store.set("attributes.json", b"nope")
    with pytest.raises(MetadataError) as info:
        detect_format(store, "a")
    assert info.value.key == "attributes.json"  # the root's, not the node's 'a/attributes.json'


class ShortStore(MemoryStore):
    """A store that answers one value fewer than it was asked for (a broken store plug-in)."""

    def get_ranges(self, requests):
        return super().get_ranges(requests)[:-1]


def test_a_store_answering_too_few_documents_fails_detection_instead_of_finding_them_absent():
    store = ShortStore()
    get_format("zarr3").create_group(store, "g")
    with pytest.raises(MetadataError) as info:
        open_node(store, "g")  # not a group found with the root's attributes.json taken as absent
    assert str(info.value) == (
        "invalid metadata: ValueError: zip() argument 2 is shorter than argument 1 [key='g']"
    )


def test_a_plugin_spec_whose_chunks_have_another_rank_is_refused_naming_its_document(toy):
    store = MemoryStore()
    doc = {
        "toy": 1,
        "node": "array",
        "shape": [4, 4],
        "chunks": [2],
        "dtype": "<u1",
        "fill_value": 0,
        "level": 1,
    }
    store.set("a/toy.json", json.dumps(doc).encode())
    with pytest.raises(MetadataError) as info:  # was a bare ValueError from a strict zip
        aa.open_dataset(store, path="a")
    assert str(info.value) == "block shape [2] has 1 dimensions, the array has 2 [key='a/toy.json']"
