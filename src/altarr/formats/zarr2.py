"""Zarr v2: ``.zarray`` / ``.zattrs`` / ``.zgroup`` <-> :class:`~altarr.formats.base.DatasetSpec`; the
chunk pipeline is one :class:`~altarr.codecs.zarr2.Zarr2ChunkCodec`, and ``_ARRAY_DIMENSIONS`` (xarray's
convention) in ``.zattrs`` gives the dimension names (docs/engine.md, "Formats")."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from ..codecs.chain import CodecChain
from ..codecs.vocabulary import compressor_argument
from ..codecs.zarr2 import Zarr2ChunkCodec, check_zarr2_dtype, numcodec_from_config
from ..errors import AltarrError, MetadataError, NodeNotFoundError, UnsupportedError
from ._common import (
    check_chunk_shape,
    check_option,
    check_shape,
    dump_json,
    encode_fill_value,
    fetch_documents,
    join_key,
    parse_json,
)
from .base import DatasetSpec, Format, NewArray, NewShape, Node, Probe, new_shape
from .registry import register_format

if TYPE_CHECKING:
    from ..stores.base import Store

__all__ = [
    "Zarr2Format",
    "parse_zarray",
    "decode_fill_value",
    "compressor_config",
]

ZARRAY = ".zarray"
ZATTRS = ".zattrs"
ZGROUP = ".zgroup"
ZMETADATA = ".zmetadata"
DIMENSIONS_ATTR = "_ARRAY_DIMENSIONS"


def decode_fill_value(value: Any, dtype: np.dtype, *, key: str = ZARRAY) -> Any:
    """The spec fill value (a NumPy scalar; the type's zero for ``null``) from the ``.zarray`` one."""
    dtype = np.dtype(dtype).newbyteorder("=")
    if value is None:
        return np.zeros((), dtype=dtype)[()]
    try:
        if dtype.kind == "f" and isinstance(value, str):
            special = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
            if value not in special:
                raise ValueError(f"unknown float string {value!r}")
            return dtype.type(special[value])
        if dtype.kind == "c":
            if isinstance(value, list) and len(value) == 2:
                re, im = (decode_fill_value(v, np.dtype(f"f{dtype.itemsize // 2}"), key=key) for v in value)
                return dtype.type(complex(re, im))
            if isinstance(value, int | float) and not isinstance(value, bool):
                return dtype.type(value)
            raise ValueError("expected [real, imaginary]")
        if dtype.kind == "b":
            if not isinstance(value, bool | int):
                raise ValueError("expected a boolean")
            return np.bool_(value)
        if dtype.kind in "iumM":
            if isinstance(value, bool) or not isinstance(value, int | float) or float(value) != int(value):
                raise ValueError("expected an integer")
            iv = int(value)
            if dtype.kind in "mM":
                return np.array(iv, dtype="i8").view(dtype)[()]
            info = np.iinfo(dtype)
            if not info.min <= iv <= info.max:
                raise ValueError(f"{iv} is out of range")
            return dtype.type(iv)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("expected a number")
        return dtype.type(value)
    except (ValueError, TypeError, OverflowError) as e:
        raise MetadataError(
            f"field 'fill_value': {value!r} is not a valid {dtype} fill value ({e})", key=key
        ) from e


def parse_zarray(
    doc: dict[str, Any], attrs: dict[str, Any] | None = None, *, key: str = ZARRAY
) -> DatasetSpec:
    """Validate a ``.zarray`` document (plus its ``.zattrs``) and build the spec."""
    if doc.get("zarr_format") != 2:
        raise MetadataError(f"field 'zarr_format' must be 2, got {doc.get('zarr_format')!r}", key=key)
    missing = [f for f in ("shape", "chunks", "dtype", "compressor", "fill_value", "order") if f not in doc]
    if missing:
        raise MetadataError(f"required field(s) {missing} missing", key=key)
    shape = check_shape(doc["shape"], key=key, field="shape")
    chunks = check_chunk_shape(doc["chunks"], len(shape), key=key, field="chunks")
    if isinstance(doc["dtype"], str) and not re.fullmatch(r"[<>|][a-zA-Z]\d*(\[\w+\])?", doc["dtype"]):
        raise MetadataError(
            f"field 'dtype' must be a NumPy typestr with a byte order such as '<i4', got {doc['dtype']!r}",
            key=key,
        )
    stored = check_zarr2_dtype(doc["dtype"], key=key)
    order = doc["order"]
    if order not in ("C", "F"):
        raise MetadataError(f"field 'order' must be 'C' or 'F', got {order!r}", key=key)
    filters = doc.get("filters")
    if filters is not None and not isinstance(filters, list):
        raise MetadataError(f"field 'filters' must be null or a list, got {filters!r}", key=key)
    filter_codecs = [numcodec_from_config(f, key=key, role="filter") for f in filters or []]
    compressor = doc["compressor"]
    comp = None if compressor is None else numcodec_from_config(compressor, key=key)
    sep = doc.get("dimension_separator", ".")
    if sep not in (".", "/"):
        raise MetadataError(f"field 'dimension_separator' must be '.' or '/', got {sep!r}", key=key)
    dtype = stored.newbyteorder("=")
    fill_value = decode_fill_value(doc["fill_value"], stored, key=key)
    codec = Zarr2ChunkCodec(stored, order, filter_codecs, comp)  # every part checked above

    def chunk_key(pos: tuple[int, ...]) -> str:
        return sep.join(str(int(p)) for p in pos) if pos else "0"

    attributes = dict(attrs or {})
    names = attributes.get(DIMENSIONS_ATTR)
    dimension_names = None
    if isinstance(names, list) and len(names) == len(shape) and all(isinstance(n, str) for n in names):
        dimension_names = tuple(names)
    metadata: dict[str, Any] = {ZARRAY: doc}
    if attrs is not None:
        metadata[ZATTRS] = attrs
    return DatasetSpec(
        format="zarr2",
        shape=shape,
        dtype=dtype,
        outer_chunks=chunks,
        codecs=CodecChain([codec]),
        fill_value=fill_value,
        chunk_key=chunk_key,
        attributes=attributes,
        dimension_names=dimension_names,
        metadata=metadata,
    )


def compressor_config(compressor: Any, dtype: np.dtype) -> dict[str, Any] | None:
    """The ``.zarray`` ``compressor`` of a compressor argument in any form of the codec vocabulary
    (:func:`altarr.codecs.vocabulary.compressor_argument`: ``"zstd"`` level 3, ``"zlib"``/``"gzip"``
    level 5, ``"blosc"`` lz4 clevel 5 byte shuffle, ``None``, a numcodecs config dict or codec, ...)."""
    given = compressor_argument(compressor, "zarr2", dtype)
    if given is None:
        return None
    config: dict[str, Any] = numcodec_from_config(given).get_config()
    if config.get("id") == "zstd" and config.get("checksum") is False:
        # numcodecs' default; leaving it out lets tensorstore's zarr driver, which refuses members it
        # does not know, read the array (zarr-python and numcodecs read both forms)
        del config["checksum"]
    return config


class Zarr2Format(Format):
    """The Zarr v2 format (``.zarray``, ``.zattrs``, ``.zgroup``)."""

    name = "zarr2"
    metadata_key = ZARRAY
    title = "Zarr v2"
    array_options = ("filters", "order", "dimension_separator")
    probe_keys = (ZARRAY, ZGROUP, ZATTRS)
    node_keys = (ZARRAY, ZGROUP)
    priority = 10
    attributes_document = ZATTRS

    def detect(self, probe: Probe, parse: bool) -> Node | None:
        """An array when ``.zarray`` exists (spec from it and ``.zattrs`` with ``parse``), a group when
        ``.zgroup`` does (its ``zarr_format`` checked)."""
        if probe.has(ZARRAY):
            if not parse:
                return Node(self, "array")
            docs = {ZARRAY: probe.doc(ZARRAY), ZATTRS: probe.doc(ZATTRS)}
            return Node(self, "array", self.spec_from_documents(docs, probe.prefix))
        if probe.has(ZGROUP):
            d = probe.doc(ZGROUP)
            if not isinstance(d, dict) or d.get("zarr_format") != 2:
                raise MetadataError("field 'zarr_format' must be 2", key=probe.key(ZGROUP))
            return Node(self, "group")
        return None

    def consolidated_probe_keys(self) -> tuple[str, ...]:
        return (ZMETADATA,)

    def child_from_consolidated(self, children: dict[str, Any], rel: str, path: str) -> Node | None:
        if isinstance(children.get(f"{rel}/{ZARRAY}"), dict):
            docs = {ZARRAY: children[f"{rel}/{ZARRAY}"], ZATTRS: children.get(f"{rel}/{ZATTRS}")}
            return Node(self, "array", self.spec_from_documents(docs, path))
        if isinstance(children.get(f"{rel}/{ZGROUP}"), dict):
            return Node(self, "group")
        return None

    def spec_from_documents(self, docs: dict[str, Any], prefix: str) -> DatasetSpec:
        """Build the spec from parsed documents ``{".zarray": doc, ".zattrs": doc or None}``."""
        key = join_key(prefix, ZARRAY)
        if docs.get(ZARRAY) is None:
            raise NodeNotFoundError("no Zarr v2 array here (.zarray is missing)", key=key)
        attrs = docs.get(ZATTRS)
        if attrs is not None and not isinstance(attrs, dict):
            raise MetadataError(".zattrs must be a JSON object", key=join_key(prefix, ZATTRS))
        return parse_zarray(docs[ZARRAY], attrs, key=key)

    def array_metadata(self, new: NewArray, key: str = ZARRAY) -> dict[str, Any]:
        """The ``.zarray`` document :meth:`create_array` writes (without writing it)."""
        filters = new.options.get("filters")

        try:
            dt = check_zarr2_dtype(new.dtype, key=key)
        except AltarrError as e:
            raise e.with_context(key=key) from e
        shape = check_shape(list(new.shape), key=key, field="shape")
        chunks = check_chunk_shape(list(new.chunks), len(shape), key=key, field="chunks")
        order = check_option(new.options, "order", ("C", "F"), "C", key=key)
        dimension_separator = check_option(new.options, "dimension_separator", (".", "/"), ".", key=key)
        try:
            comp = compressor_config(new.compressor, dt)
            filter_configs = [numcodec_from_config(f, role="filter").get_config() for f in filters or []]
            fill = (
                None if new.fill_value is None else encode_fill_value(new.fill_value, dt, nan_payloads=False)
            )
        except AltarrError as e:
            raise e.with_context(key=key) from e
        doc: dict[str, Any] = {
            "chunks": list(chunks),
            "compressor": comp,
            "dtype": dt.str,
            "fill_value": fill,
            "filters": filter_configs or None,
            "order": order,
            "shape": list(shape),
            "zarr_format": 2,
        }
        if dimension_separator != ".":
            doc["dimension_separator"] = dimension_separator
        return doc

    def _write_array(self, store: Store, prefix: str, key: str, new: NewArray) -> DatasetSpec:
        """Write ``.zarray`` (and ``.zattrs``) for a new array. Options: ``filters`` (numcodecs configs),
        ``order`` ("C"/"F"), ``dimension_separator`` ("."/"/"). Zarr v2 has no sharding."""
        if new.shards is not None:
            raise UnsupportedError("Zarr v2 has no sharding (use format='zarr3' or 'n5')", key=key)
        doc = self.array_metadata(new, key=key)
        attrs = dict(new.attributes or {})
        if new.dimension_names is not None:
            names = list(new.dimension_names)
            if len(names) != len(doc["shape"]) or not all(isinstance(n, str) for n in names):
                raise MetadataError(
                    f"dimension_names must be {len(doc['shape'])} strings for Zarr v2 (stored as "
                    f"{DIMENSIONS_ATTR}), got {new.dimension_names!r}",
                    key=key,
                )
            attrs[DIMENSIONS_ATTR] = names
        spec = parse_zarray(doc, attrs, key=key)
        items = [(key, dump_json(doc, key=key, indent=4))]
        if attrs:
            items.append((join_key(prefix, ZATTRS), dump_json(attrs, key=join_key(prefix, ZATTRS), indent=4)))
        store.set_many(items)
        return spec

    def resize_array(self, store: Store, prefix: str, shape: NewShape) -> tuple[DatasetSpec, DatasetSpec]:
        """``.zarray`` with a new ``shape`` (see :meth:`Format.resize_array`); ``.zattrs`` is kept as it
        is (a consolidated ``.zmetadata`` above is updated by the dataset layer,
        :mod:`altarr.dataset.consolidated`)."""
        key = join_key(prefix, ZARRAY)
        raw = fetch_documents(store, prefix, [ZARRAY, ZATTRS])
        docs = {n: None if v is None else parse_json(v, join_key(prefix, n)) for n, v in raw.items()}
        before = self.spec_from_documents(docs, prefix)
        meta = docs[ZARRAY]
        assert meta is not None  # spec_from_documents raised NodeNotFoundError without it
        meta["shape"] = list(check_shape(new_shape(shape, before.shape), key=key, field="shape"))
        after = self.spec_from_documents(docs, prefix)
        store.set(key, dump_json(meta, key=key, indent=4))
        return before, after

    def read_attributes(self, store: Store, prefix: str) -> dict[str, Any]:
        docs = fetch_documents(store, prefix, [ZATTRS, ZARRAY, ZGROUP])
        if docs[ZARRAY] is None and docs[ZGROUP] is None:
            raise NodeNotFoundError(
                "no Zarr v2 node here (.zarray/.zgroup missing)", key=join_key(prefix, ZARRAY)
            )
        attrs = docs[ZATTRS]
        if attrs is None:
            return {}
        return parse_json(attrs, join_key(prefix, ZATTRS))

    def write_attributes(self, store: Store, prefix: str, attributes: dict[str, Any]) -> None:
        key = join_key(prefix, ZATTRS)
        store.set(key, dump_json(dict(attributes), key=key, indent=4))

    def create_group(self, store: Store, prefix: str, attributes: dict[str, Any] | None = None) -> None:
        items = [
            (join_key(prefix, ZGROUP), dump_json({"zarr_format": 2}, key=join_key(prefix, ZGROUP), indent=4))
        ]
        if attributes:
            key = join_key(prefix, ZATTRS)
            items.append((key, dump_json(dict(attributes), key=key, indent=4)))
        store.set_many(items)


register_format(Zarr2Format())
