"""Zarr v3: ``zarr.json`` array and group metadata <-> :class:`~altarr.formats.base.DatasetSpec` (what
is read and written: docs/engine.md, "Formats"), with its data types (the core types and ``r<N>`` raw
bits as NumPy void) and fill values in all their JSON forms."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..codecs.chain import CodecChain
from ..codecs.registry import codec_from_json
from ..codecs.vocabulary import compressor_argument
from ..errors import AltarrError, MetadataError, NodeNotFoundError, UnknownCodecError, UnsupportedError
from ._common import (
    check_chunk_shape,
    check_option,
    check_shape,
    decode_float_fill,
    dump_json,
    encode_fill_value,
    fetch_documents,
    join_key,
    nest_in_shards,
    normalize_levels,
    parse_json,
)
from .base import DatasetSpec, Format, NewArray, NewShape, Node, Probe, new_shape
from .registry import register_format

if TYPE_CHECKING:
    from ..stores.base import Store

__all__ = [
    "Zarr3Format",
    "parse_array_metadata",
    "compressor_json",
    "chunk_key_function",
    "dtype_from_data_type",
    "data_type_name",
    "decode_fill_value",
]

METADATA_KEY = "zarr.json"

_ARRAY_FIELDS = {
    "zarr_format",
    "node_type",
    "shape",
    "data_type",
    "chunk_grid",
    "chunk_key_encoding",
    "fill_value",
    "codecs",
    "attributes",
    "storage_transformers",
    "dimension_names",
}
_REQUIRED = ("shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value", "codecs")
_GROUP_FIELDS = {"zarr_format", "node_type", "attributes", "consolidated_metadata"}


# --- data types and fill values ---------------------------------------------------------------------------
_CORE_TYPES = {
    name: np.dtype(name)
    for name in (
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    )
}
#: The widest raw data type (``r<N>``) accepted: 64 KiB per element.
_MAX_RAW_BITS = 8 * 65536


def dtype_from_data_type(value: Any, *, key: str = "zarr.json") -> np.dtype:
    """The NumPy dtype of a Zarr v3 ``data_type`` (a core name, ``r<N>``, or ``{"name": ...}``)."""
    name = value
    if isinstance(value, dict):
        name = value.get("name")
        if value.get("configuration") not in (None, {}):
            raise UnknownCodecError(
                f"field 'data_type': data type {name!r} with a configuration is not supported", key=key
            )
    if not isinstance(name, str):
        raise MetadataError(f"field 'data_type' must be a string, got {value!r}", key=key)
    if name in _CORE_TYPES:
        return _CORE_TYPES[name]
    if name.startswith("r") and name[1:].isdigit():
        bits = int(name[1:])
        if bits <= 0 or bits % 8 or bits > _MAX_RAW_BITS:
            raise MetadataError(
                f"field 'data_type': raw type {name!r} needs a positive multiple of 8 bits, at most "
                f"{_MAX_RAW_BITS}",
                key=key,
            )
        return np.dtype(f"V{bits // 8}")
    if name in ("string", "bytes", "variable_length_bytes", "variable_length_utf8"):
        raise UnsupportedError(f"field 'data_type': variable-length type {name!r} is not supported", key=key)
    raise UnknownCodecError(f"field 'data_type': unknown data type {name!r}", key=key, codec=name)


def data_type_name(dtype: Any) -> str:
    """The Zarr v3 ``data_type`` of a NumPy dtype (any byte order)."""
    dt = np.dtype(dtype)
    if dt.kind == "V" and dt.fields is None and dt.subdtype is None:
        return f"r{dt.itemsize * 8}"
    for name, candidate in _CORE_TYPES.items():
        if dt.kind == candidate.kind and dt.itemsize == candidate.itemsize:
            return name
    raise UnsupportedError(
        f"Zarr v3 has no core data type for {dt} (supported: {', '.join(_CORE_TYPES)}, r<N>)"
    )


def decode_fill_value(value: Any, dtype: np.dtype, *, key: str = "zarr.json") -> Any:
    """A NumPy scalar of ``dtype`` from the JSON ``fill_value``."""
    dtype = np.dtype(dtype)
    if value is None:
        raise MetadataError("field 'fill_value' is required (null is not allowed in Zarr v3)", key=key)
    kind = dtype.kind
    if kind == "b":
        if not isinstance(value, bool):
            raise MetadataError(f"field 'fill_value' must be true or false for bool, got {value!r}", key=key)
        return np.bool_(value)
    if kind in "iu":
        if isinstance(value, bool) or not isinstance(value, int):
            raise MetadataError(f"field 'fill_value' must be an integer for {dtype}, got {value!r}", key=key)
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise MetadataError(f"field 'fill_value' {value} is out of range for {dtype}", key=key)
        return dtype.type(value)
    if kind == "f":
        if isinstance(value, bool):
            raise MetadataError(f"field 'fill_value' must be a number for {dtype}, got {value!r}", key=key)
        return decode_float_fill(value, dtype, key=key)
    if kind == "c":
        if not isinstance(value, list) or len(value) != 2:
            raise MetadataError(
                f"field 'fill_value' must be a [real, imaginary] pair for {dtype}, got {value!r}", key=key
            )
        part = np.dtype(f"f{dtype.itemsize // 2}")
        re, im = (decode_float_fill(v, part, key=key) for v in value)
        out = np.zeros((), dtype=dtype)
        out.real, out.imag = re, im
        return out[()]
    if kind == "V":
        if (
            not isinstance(value, list)
            or len(value) != dtype.itemsize
            or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 255 for v in value)
        ):
            raise MetadataError(
                f"field 'fill_value' must be a list of {dtype.itemsize} byte values for r{dtype.itemsize * 8}, "
                f"got {value!r}",
                key=key,
            )
        return np.frombuffer(bytes(value), dtype=dtype)[0]
    raise UnsupportedError(f"fill values of {dtype} are not supported", key=key)  # pragma: no cover


# --- chunk keys -------------------------------------------------------------------------------------------
def chunk_key_function(encoding: Any, *, key: str = METADATA_KEY) -> Callable[[tuple[int, ...]], str]:
    """The key function of a ``chunk_key_encoding``."""
    if isinstance(encoding, str):
        encoding = {"name": encoding}
    if not isinstance(encoding, dict) or not isinstance(encoding.get("name"), str):
        raise MetadataError(
            f"field 'chunk_key_encoding' must be an object with a 'name', got {encoding!r}", key=key
        )
    _check_extension_keys(encoding, "chunk_key_encoding", key)
    name = encoding["name"]
    config = encoding.get("configuration") or {}
    if not isinstance(config, dict):
        raise MetadataError("field 'chunk_key_encoding.configuration' must be an object", key=key)
    if name not in ("default", "v2"):
        raise UnknownCodecError(f"field 'chunk_key_encoding': unknown encoding {name!r}", key=key, codec=name)
    unknown = sorted(set(config) - {"separator"})
    if unknown:
        raise MetadataError(f"field 'chunk_key_encoding.configuration': unknown field(s) {unknown}", key=key)
    sep = config.get("separator", "/" if name == "default" else ".")
    if sep not in ("/", "."):
        raise MetadataError(
            f"field 'chunk_key_encoding.configuration.separator' must be '/' or '.', got {sep!r}", key=key
        )
    if name == "default":
        return lambda pos: "c" + "".join(f"{sep}{int(p)}" for p in pos)
    return lambda pos: sep.join(str(int(p)) for p in pos) if pos else "0"


def _check_extension_keys(obj: dict[str, Any], field: str, key: str) -> None:
    extra = sorted(set(obj) - {"name", "configuration", "must_understand"})
    if extra:
        raise MetadataError(f"field {field!r}: unknown member(s) {extra}", key=key)


# --- parsing ----------------------------------------------------------------------------------------------
def _check_common(doc: dict[str, Any], key: str, node_type: str | None = None) -> str:
    if doc.get("zarr_format") != 3:
        raise MetadataError(f"field 'zarr_format' must be 3, got {doc.get('zarr_format')!r}", key=key)
    kind = doc.get("node_type")
    if kind not in ("array", "group"):
        raise MetadataError(f"field 'node_type' must be 'array' or 'group', got {kind!r}", key=key)
    if node_type is not None and kind != node_type:
        raise MetadataError(f"node is a {kind}, not an {node_type}", key=key)
    allowed = _ARRAY_FIELDS if kind == "array" else _GROUP_FIELDS
    for field, value in doc.items():
        if field in allowed:
            continue
        if isinstance(value, dict) and value.get("must_understand") is False:
            continue  # an extension field that may be ignored
        raise MetadataError(
            f'unknown field {field!r} (extension fields must say "must_understand": false to be ignored)',
            key=key,
        )
    attrs = doc.get("attributes", {})
    if not isinstance(attrs, dict):
        raise MetadataError(f"field 'attributes' must be an object, got {type(attrs).__name__}", key=key)
    return str(kind)  # "array" or "group"


def parse_array_metadata(doc: dict[str, Any], *, key: str = METADATA_KEY) -> DatasetSpec:
    """Validate a Zarr v3 array document and build its spec (``key`` names it in errors)."""
    _check_common(doc, key, "array")
    missing = [f for f in _REQUIRED if f not in doc]
    if missing:
        raise MetadataError(f"required field(s) {missing} missing", key=key)
    shape = check_shape(doc["shape"], key=key, field="shape")
    dtype = dtype_from_data_type(doc["data_type"], key=key)

    grid = doc["chunk_grid"]
    if not isinstance(grid, dict) or not isinstance(grid.get("name"), str):
        raise MetadataError(f"field 'chunk_grid' must be an object with a 'name', got {grid!r}", key=key)
    _check_extension_keys(grid, "chunk_grid", key)
    if grid["name"] != "regular":
        raise UnknownCodecError(
            f"field 'chunk_grid': unknown chunk grid {grid['name']!r}", key=key, codec=grid["name"]
        )
    config = grid.get("configuration")
    if not isinstance(config, dict) or "chunk_shape" not in config:
        raise MetadataError("field 'chunk_grid.configuration.chunk_shape' is required", key=key)
    chunk_shape = check_chunk_shape(
        config["chunk_shape"], len(shape), key=key, field="chunk_grid.configuration.chunk_shape"
    )
    chunk_key = chunk_key_function(doc["chunk_key_encoding"], key=key)
    fill_value = decode_fill_value(doc["fill_value"], dtype, key=key)

    transformers = doc.get("storage_transformers", [])
    if not isinstance(transformers, list):
        raise MetadataError("field 'storage_transformers' must be a list", key=key)
    for t in transformers:
        if isinstance(t, dict) and t.get("must_understand") is False:
            continue
        name = t.get("name") if isinstance(t, dict) else t
        raise UnknownCodecError(
            f"field 'storage_transformers': storage transformer {name!r} is not supported",
            key=key,
            codec=str(name),
        )

    names = doc.get("dimension_names")
    if names is not None:
        if (
            not isinstance(names, list)
            or len(names) != len(shape)
            or not all(n is None or isinstance(n, str) for n in names)
        ):
            raise MetadataError(
                f"field 'dimension_names' must be a list of {len(shape)} strings or nulls, got {names!r}",
                key=key,
            )
        names = tuple(names)

    codecs = doc["codecs"]
    if not isinstance(codecs, list) or not codecs:
        raise MetadataError(f"field 'codecs' must be a non-empty list, got {codecs!r}", key=key)
    try:  # the chain, checked against the block shape it encodes (shard shapes divide, ``bytes`` endianness)
        chain = CodecChain.from_json(codecs)
        chain.validate(chunk_shape, dtype)
    except AltarrError as e:
        raise e.with_context(key=key) from e
    return DatasetSpec(
        format="zarr3",
        shape=shape,
        dtype=dtype,
        outer_chunks=chunk_shape,
        codecs=chain,
        fill_value=fill_value,
        chunk_key=chunk_key,
        attributes=dict(doc.get("attributes", {})),
        dimension_names=names,
        metadata={METADATA_KEY: doc},
    )


# --- creation helpers -------------------------------------------------------------------------------------
def compressor_json(compressor: Any, dtype: np.dtype) -> list[dict[str, Any]]:
    """The bytes->bytes codec list of a compressor argument in any form of the codec vocabulary
    (:func:`altarr.codecs.vocabulary.compressor_argument`: ``"zstd"`` level 3, ``"gzip"`` level 5,
    ``"blosc"`` lz4 clevel 5 with shuffle and the item size, ``None``, a codec JSON object or instance,
    a list of those), each as its codec writes it."""
    return [codec_from_json(c).to_json() for c in compressor_argument(compressor, "zarr3", dtype)]


def with_checksum(codecs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The bytes->bytes codecs ``codecs`` made to carry a checksum of every chunk (``checksum=True``, the
    default): zstd's own frame checksum when zstd is the last codec (free: the native kernel computes it
    while compressing; measured in ``benchmarks/bench_engine.py --checksums``), nothing more when a
    ``crc32c`` or gzip (whose members carry a CRC-32) is there already, else a ``crc32c`` codec appended.
    zarr-python and tensorstore verify all three."""
    names = [c.get("name") for c in codecs]
    if "crc32c" in names or "gzip" in names:
        return list(codecs)
    if names and names[-1] == "zstd":
        last = codecs[-1]
        return [*codecs[:-1], {**last, "configuration": {**last.get("configuration", {}), "checksum": True}}]
    return [*codecs, {"name": "crc32c"}]


#: Zarr v3 shard indexes: little-endian offsets and sizes with a crc32c, as zarr-python and tensorstore
#: write them.
_INDEX_CODECS: list[dict[str, Any]] = [
    {"name": "bytes", "configuration": {"endian": "little"}},
    {"name": "crc32c"},
]


class Zarr3Format(Format):
    """The Zarr v3 format (``zarr.json``)."""

    name = "zarr3"
    metadata_key = METADATA_KEY
    title = "Zarr v3"
    array_options = ("index_location", "chunk_key_separator", "checksum")
    probe_keys = (METADATA_KEY,)
    priority = 0
    can_shard = True
    attributes_document = METADATA_KEY

    def detect(self, probe: Probe, parse: bool) -> Node | None:
        """A Zarr v3 node when ``zarr.json`` exists (validated; the spec built with ``parse``)."""
        return self._node(probe.doc(METADATA_KEY), probe.prefix, parse) if probe.has(METADATA_KEY) else None

    def child_from_consolidated(self, children: dict[str, Any], rel: str, path: str) -> Node | None:
        doc = children.get(rel)
        return self._node(doc, path, True) if isinstance(doc, dict) else None

    def _node(self, doc: dict[str, Any], prefix: str, parse: bool) -> Node:
        key = join_key(prefix, METADATA_KEY)
        kind = _check_common(doc, key)
        return Node(self, kind, parse_array_metadata(doc, key=key) if kind == "array" and parse else None)

    # --- reading --------------------------------------------------------------------------------------
    def _require(self, store: Store, prefix: str) -> dict[str, Any]:
        """The node's ``zarr.json``, checked as every Zarr v3 document is (:func:`_check_common`)."""
        key = join_key(prefix, METADATA_KEY)
        data = fetch_documents(store, prefix, [METADATA_KEY])[METADATA_KEY]
        if data is None:
            raise NodeNotFoundError("no Zarr v3 node here (zarr.json is missing)", key=key)
        doc = parse_json(data, key)
        _check_common(doc, key)
        return doc

    # --- writing --------------------------------------------------------------------------------------
    def array_metadata(self, new: NewArray, key: str = METADATA_KEY) -> dict[str, Any]:
        """The ``zarr.json`` document :meth:`create_array` writes (without writing it)."""
        chunk_key_separator = new.options.get("chunk_key_separator", "/")
        checksum = check_option(new.options, "checksum", (True, False), True, key=key)

        try:
            dt = np.dtype(new.dtype)
        except TypeError as e:
            raise MetadataError(f"invalid dtype {new.dtype!r}", key=key) from e
        data_type = data_type_name(dt)
        shape = check_shape(list(new.shape), key=key, field="shape")
        levels = normalize_levels(new.chunks, new.shards, len(shape), key=key)
        index_location = check_option(new.options, "index_location", ("start", "end"), "end", key=key)
        cke = {"name": "default", "configuration": {"separator": chunk_key_separator}}
        chunk_key_function(cke, key=key)
        try:
            compression = compressor_json(new.compressor, dt)
            inner = [
                {"name": "bytes", "configuration": {"endian": "little"}},
                *(with_checksum(compression) if checksum else compression),
            ]
            fill = encode_fill_value(new.fill_value, dt)
        except AltarrError as e:
            raise e.with_context(key=key) from e
        doc: dict[str, Any] = {
            "zarr_format": 3,
            "node_type": "array",
            "shape": list(shape),
            "data_type": data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(levels[-1])}},
            "chunk_key_encoding": cke,
            "fill_value": fill,
            "codecs": nest_in_shards(levels, inner, _INDEX_CODECS, index_location),
            "attributes": dict(new.attributes or {}),
        }
        if new.dimension_names is not None:
            names = list(new.dimension_names)
            if len(names) != len(shape) or not all(n is None or isinstance(n, str) for n in names):
                raise MetadataError(
                    f"dimension_names must be {len(shape)} strings or None, got {new.dimension_names!r}",
                    key=key,
                )
            doc["dimension_names"] = names
        return doc

    def _write_array(self, store: Store, prefix: str, key: str, new: NewArray) -> DatasetSpec:
        """Write ``zarr.json`` for a new array (options ``index_location`` "end", ``chunk_key_separator``
        "/", ``checksum`` True: every chunk carries a checksum, see :func:`with_checksum`; False adds
        none) and return its spec."""
        doc = self.array_metadata(new, key=key)
        spec = parse_array_metadata(doc, key=key)  # validates what we are about to write
        store.set(key, dump_json(doc, key=key))
        return spec

    def resize_array(self, store: Store, prefix: str, shape: NewShape) -> tuple[DatasetSpec, DatasetSpec]:
        """``zarr.json`` with a new ``shape`` (see :meth:`Format.resize_array`)."""
        key = join_key(prefix, METADATA_KEY)
        doc = self._require(store, prefix)
        before = parse_array_metadata(doc, key=key)
        doc["shape"] = list(check_shape(new_shape(shape, before.shape), key=key, field="shape"))
        after = parse_array_metadata(doc, key=key)  # validates what we are about to write
        store.set(key, dump_json(doc, key=key))
        return before, after

    def read_attributes(self, store: Store, prefix: str) -> dict[str, Any]:
        return dict(self._require(store, prefix).get("attributes", {}))

    def write_attributes(self, store: Store, prefix: str, attributes: dict[str, Any]) -> None:
        key = join_key(prefix, METADATA_KEY)
        doc = self._require(store, prefix)
        doc["attributes"] = dict(attributes)
        store.set(key, dump_json(doc, key=key))

    def create_group(self, store: Store, prefix: str, attributes: dict[str, Any] | None = None) -> None:
        key = join_key(prefix, METADATA_KEY)
        doc = {"zarr_format": 3, "node_type": "group", "attributes": dict(attributes or {})}
        store.set(key, dump_json(doc, key=key))


register_format(Zarr3Format())
