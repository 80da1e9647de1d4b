"""N5: ``attributes.json`` <-> :class:`~altarr.formats.base.DatasetSpec`, byte-compatible with Java N5,
plain and sharded (docs/n5.md). Shapes and positions are reversed at this boundary: users see NumPy
order, N5 documents, keys and block headers keep N5's (docs/engine.md, "N5 and dimension order")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..codecs.base import BytesBytesCodec
from ..codecs.bytes import BytesCodec
from ..codecs.chain import CodecChain
from ..codecs.n5 import N5BlockCodec, n5_data_type_name, n5_dtype
from ..codecs.n5_compressions import (
    N5Compression,
    RawCompression,
    compression_from_n5_json,
    n5_codec_from_json,
)
from ..codecs.sharding import ShardingCodec
from ..errors import AltarrError, MetadataError, NodeNotFoundError, UnknownCodecError, UnsupportedError
from ..stores.ranges import WHOLE
from ._common import (
    check_chunk_shape,
    check_option,
    check_shape,
    dump_json,
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
    "N5Format",
    "parse_n5_attributes",
    "check_version",
    "n5_compression",
    "N5_VERSION",
    "ATTRIBUTES_KEY",
    "DATASET_KEYS",
]

ATTRIBUTES_KEY = "attributes.json"
VERSION_KEY = "n5"
#: The N5 format version altarr writes (and the highest major version it reads).
N5_VERSION = "4.0.0"
#: Keys of a dataset's attributes.json that belong to the format, not to the user.
DATASET_KEYS = (
    "dimensions",
    "blockSize",
    "dataType",
    "compression",
    "compressionType",
    "codecs",
    "defaultValue",
)
_ARRAY_MARKERS = ("dimensions", "blockSize", "dataType")
#: Names of Java's raw (header-less) block codec: ``raw-bytes`` since N5 4.0.0-alpha-7
#: (``RawBlockCodecInfo.TYPE``), ``bytes`` before.
RAW_BYTES_NAMES = ("raw-bytes", "bytes")
#: Writer options of sharded N5 (see :func:`_codecs_json` and :meth:`N5Format.array_attributes`).
SHARD_OPTIONS = ("index_location", "index_endian", "index_crc32c", "legacy_compression")


def check_version(root_doc: dict[str, Any] | None, *, key: str = ATTRIBUTES_KEY) -> str | None:
    """The container version of a root ``attributes.json`` (``None`` when absent); a major version above 4
    raises :class:`~altarr.errors.UnsupportedError`."""
    if root_doc is None or VERSION_KEY not in root_doc:
        return None
    version = root_doc[VERSION_KEY]
    try:
        major = int(str(version).split(".")[0])
    except ValueError:
        raise MetadataError(f"field 'n5': malformed version {version!r}", key=key) from None
    if not isinstance(version, str):
        raise MetadataError(f"field 'n5' must be a version string, got {version!r}", key=key)
    if major > int(N5_VERSION.split(".")[0]):
        raise UnsupportedError(
            f"N5 container version {version} is newer than the supported {N5_VERSION} (major version > 4)",
            key=key,
        )
    return version


def n5_compression(compressor: Any) -> N5Compression:
    """An N5 compression from a ``create_array`` compressor argument: a name (``"raw"``/``None``/``"none"``,
    ``"gzip"``, ``"bzip2"``, ``"xz"``, ``"lz4"``, ``"zstd"``, ``"blosc"``, each with the N5 defaults), an N5
    ``{"type": ...}`` object, an N5 4.x ``{"name": ..., "configuration": ...}`` object, or an instance."""
    if compressor is None or compressor == "none":
        return RawCompression()
    if isinstance(compressor, N5Compression):
        return compressor
    if isinstance(compressor, str):
        return compression_from_n5_json({"type": compressor})
    if isinstance(compressor, dict) and "type" in compressor:
        return compression_from_n5_json(compressor)
    if isinstance(compressor, dict) and "name" in compressor:
        codec = n5_codec_from_json(compressor)
        if not isinstance(codec, N5Compression):
            raise MetadataError(f"{compressor!r} is not an N5 compression")
        return codec
    raise MetadataError(f"compressor must be an N5 compression name or object, got {compressor!r}")


# --- N5 4.x codecs --------------------------------------------------------------------------------------
def _codec_obj(obj: Any, key: str, field: str) -> tuple[str, dict[str, Any]]:
    if isinstance(obj, str):
        return obj, {}
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        raise MetadataError(
            f"field {field!r}: a codec must be an object with a string 'name', got {obj!r}", key=key
        )
    config = obj.get("configuration") or {}
    if not isinstance(config, dict):
        raise MetadataError(
            f"field {field!r}: codec {obj['name']!r} has a non-object 'configuration'", key=key
        )
    return obj["name"], config


def _n5_chain(value: Any, key: str, field: str) -> CodecChain:
    """An N5 4.x codec list (block codec first, then data codecs) as a CodecChain in NumPy order."""
    if not isinstance(value, list) or not value:
        raise MetadataError(f"field {field!r} must be a non-empty list of codecs, got {value!r}", key=key)
    name, config = _codec_obj(value[0], key, field)
    data: list[BytesBytesCodec] = [n5_codec_from_json(c, key=key) for c in value[1:]]
    try:
        if name == "n5bytes":
            return CodecChain([N5BlockCodec(data)])
        if name in RAW_BYTES_NAMES:
            endian = config.get("endian", "big")  # Java's RawBlockCodecInfo defaults to big-endian
            return CodecChain([BytesCodec(endian), *data])
        if name == "sharding_indexed":
            for required in ("chunk_shape", "codecs", "index_codecs"):
                if required not in config:
                    raise MetadataError(f"field {field!r}: sharding_indexed needs {required!r}", key=key)
            # Java writes chunk_shape reversed (@N5Annotations.ReverseArray): it is already NumPy order
            np_shape = check_shape(
                config["chunk_shape"], key=key, field=f"{field}.sharding_indexed.chunk_shape", positive=True
            )
            sharding = ShardingCodec(
                chunk_shape=np_shape,
                codecs=_n5_chain(config["codecs"], key, f"{field}.sharding_indexed.codecs"),
                index_codecs=_n5_chain(config["index_codecs"], key, f"{field}.sharding_indexed.index_codecs"),
                index_location=config.get("index_location", "end"),
            )
            return CodecChain([sharding, *data])
    except AltarrError as e:
        raise e.with_context(key=key) from e
    raise UnknownCodecError(
        f"field {field!r}: unknown N5 block codec {name!r} (expected n5bytes, raw-bytes, bytes or "
        "sharding_indexed)",
        key=key,
        codec=name,
    )


def _codecs_json(
    levels: list[tuple[int, ...]], compression: N5Compression, options: dict[str, Any], *, key: str
) -> list[dict[str, Any]]:
    """The N5 4.x ``codecs`` list as Java's ``NameConfigAdapter`` serializes it, for chunks of
    ``levels[0]`` nested in shards (NumPy order, innermost first): per level one ``sharding_indexed`` with
    its keys in Java's order and ``chunk_shape`` in NumPy order (Java's ``@ReverseArray``), an index of
    ``raw-bytes`` (+ ``crc32c``), and inside ``n5bytes`` followed by the compression (``raw`` is dropped,
    as Java does). The writer options: ``index_location`` ``"end"`` or ``"start"``, ``index_endian``
    ``"big"`` (as every number in N5) or ``"little"``, ``index_crc32c`` (a crc32c checksum after the
    index; on by default, see docs/n5.md)."""
    location = check_option(options, "index_location", ("start", "end"), "end", key=key)
    endian = check_option(options, "index_endian", ("big", "little"), "big", key=key)
    index: list[dict[str, Any]] = [{"name": "raw-bytes", "configuration": {"endian": endian}}]
    if check_option(options, "index_crc32c", (True, False), True, key=key):
        index.append({"name": "crc32c"})
    codecs: list[dict[str, Any]] = [{"name": "n5bytes"}]
    if not isinstance(compression, RawCompression):
        codecs.append(compression.to_json())
    return nest_in_shards(levels, codecs, index, location, codecs_last=True)


# --- parsing --------------------------------------------------------------------------------------------
def parse_n5_attributes(doc: dict[str, Any], *, key: str = ATTRIBUTES_KEY, root: bool = False) -> DatasetSpec:
    """Validate a dataset's ``attributes.json`` and build the spec (NumPy order; see the module docstring).
    ``root`` marks the container root, whose ``"n5"`` version key is not a user attribute."""
    missing = [f for f in _ARRAY_MARKERS if f not in doc]
    if missing:
        raise MetadataError(f"N5 dataset attributes miss required field(s) {missing}", key=key)
    dims = check_shape(doc["dimensions"], key=key, field="dimensions")
    if not dims:
        raise UnsupportedError("0-dimensional N5 datasets are not supported", key=key)
    block = check_chunk_shape(doc["blockSize"], len(dims), key=key, field="blockSize")
    dtype = n5_dtype(doc["dataType"], key=key)
    if "codecs" in doc:
        chain = _n5_chain(doc["codecs"], key, "codecs")
    else:
        if "compression" in doc:
            compression = compression_from_n5_json(doc["compression"], key=key)
        elif "compressionType" in doc:
            if not isinstance(doc["compressionType"], str):
                raise MetadataError("field 'compressionType' must be a string", key=key)
            compression = compression_from_n5_json(doc["compressionType"], key=key)
        else:
            raise MetadataError("N5 dataset attributes need 'compression' (or 'codecs')", key=key)
        chain = CodecChain([N5BlockCodec(compression)])
    shape = dims[::-1]
    outer = block[::-1]
    try:
        chain.validate(outer, dtype)
    except AltarrError as e:
        raise e.with_context(key=key) from e
    fill = doc.get("defaultValue", 0)
    if isinstance(fill, bool) or not isinstance(fill, int | float):
        fill = 0
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            fill_value = dtype.type(fill)
    except (OverflowError, ValueError) as e:  # an integer type refuses a value out of its range
        raise MetadataError(f"field 'defaultValue': {fill!r} does not fit {dtype}", key=key) from e
    strip = set(DATASET_KEYS) | ({VERSION_KEY} if root else set())
    return DatasetSpec(
        format="n5",
        shape=shape,
        dtype=dtype,
        outer_chunks=outer,
        codecs=chain,
        fill_value=fill_value,
        chunk_key=_chunk_key,
        attributes={k: v for k, v in doc.items() if k not in strip},
        dimension_names=None,
        metadata={ATTRIBUTES_KEY: doc},
    )


def _chunk_key(pos: tuple[int, ...]) -> str:
    return "/".join(str(int(p)) for p in reversed(pos))


def is_array_document(doc: dict[str, Any]) -> bool:
    """Whether an ``attributes.json`` describes a dataset: it has ``dimensions`` or ``blockSize`` (a
    partial one is reported as a broken dataset). ``dataType`` alone does not make one: BigDataViewer
    writes it on its ``setup`` groups, and Java N5 needs dimensions, blockSize and dataType together."""
    return any(k in doc for k in _ARRAY_MARKERS if k != "dataType")


class N5Format(Format):
    """The N5 format (``attributes.json``); see the module docstring for the order conventions."""

    name = "n5"
    metadata_key = ATTRIBUTES_KEY
    title = "N5"
    array_options = SHARD_OPTIONS
    probe_keys = (ATTRIBUTES_KEY,)
    root_probe_keys = (ATTRIBUTES_KEY,)  # the container's version
    priority = 20
    can_shard = True
    has_dimension_names = False
    attributes_document = ATTRIBUTES_KEY
    #: gzip (Java's level 6): every N5 reader decodes it, inside shards too (Java 4.0.2 cannot describe
    #: zstd or blosc there; tensorstore has no lz4), see docs/n5.md.
    default_compressor = "gzip"

    def detect(self, probe: Probe, parse: bool) -> Node | None:
        """An N5 array or group from ``attributes.json`` (the root's checked for the version); a
        directory below an N5 root without ``attributes.json`` is a group when it holds anything (one
        listing), or when it is an empty directory its parent lists (z5py and Java create a group
        without attributes as one; a second listing)."""
        node = probe.doc(ATTRIBUTES_KEY)
        root = probe.root_doc(ATTRIBUTES_KEY)
        check_version(root, key=ATTRIBUTES_KEY)
        if node is not None and is_array_document(node):
            return Node(self, "array", self.spec_from_documents(node, root, probe.prefix) if parse else None)
        if node is not None:
            return Node(self, "group") if probe.prefix or VERSION_KEY in node else None
        if probe.prefix and root is not None and VERSION_KEY in root:
            keys, folders = probe.store.list_dir(probe.prefix)
            parent, _, name = probe.prefix.rpartition("/")
            if keys or folders or name in probe.store.list_dir(parent)[1]:
                return Node(self, "group")  # N5: every directory is a group, attributes.json is optional
        return None

    def codecs_json(self, spec: DatasetSpec) -> list[dict[str, Any]]:
        """An unsharded array's N5 4.x ``codecs`` list (``n5bytes`` and its compression)."""
        ab = spec.codecs.array_bytes
        return ab.codecs_json() if isinstance(ab, N5BlockCodec) else spec.codecs.to_json()

    def _batch(self, store: Store, prefix: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        keys = [join_key(prefix, ATTRIBUTES_KEY)] + ([ATTRIBUTES_KEY] if prefix else [])
        values = store.get_ranges([(k, WHOLE) for k in keys])
        docs = [None if v is None else parse_json(v, k) for k, v in zip(keys, values, strict=True)]
        return docs[0], docs[-1]

    def spec_from_documents(
        self, node: dict[str, Any] | None, root: dict[str, Any] | None, prefix: str
    ) -> DatasetSpec:
        """Build the spec from the parsed node and root documents."""
        key = join_key(prefix, ATTRIBUTES_KEY)
        check_version(root, key=ATTRIBUTES_KEY)
        if node is None:
            raise NodeNotFoundError("no N5 dataset here (attributes.json is missing)", key=key)
        return parse_n5_attributes(node, key=key, root=not prefix)

    # --- writing --------------------------------------------------------------------------------------
    def array_attributes(self, new: NewArray, key: str = ATTRIBUTES_KEY) -> dict[str, Any]:
        """The format keys :meth:`create_array` writes (in Java N5's order), without user attributes."""
        try:
            data_type = n5_data_type_name(np.dtype(new.dtype))
            compression = n5_compression(new.compressor)
        except AltarrError as e:
            raise e.with_context(key=key) from e
        except TypeError as e:
            raise MetadataError(f"invalid dtype {new.dtype!r}", key=key) from e
        shape = check_shape(list(new.shape), key=key, field="shape")
        if not shape:
            raise UnsupportedError("0-dimensional N5 datasets are not supported", key=key)
        levels = normalize_levels(new.chunks, new.shards, len(shape), key=key)
        if new.fill_value is not None and np.asarray(new.fill_value) != 0:
            raise UnsupportedError(
                f"N5 has no fill value (missing blocks read as 0); fill_value={new.fill_value!r} cannot be stored",
                key=key,
            )
        if len(levels) == 1:
            given = sorted(set(new.options) & set(SHARD_OPTIONS))
            if given:
                raise MetadataError(f"option(s) {given} apply to sharded N5 only (no shards given)", key=key)
            return {
                "dataType": data_type,
                "compression": compression.to_n5_json(),
                "blockSize": list(levels[0][::-1]),
                "dimensions": list(shape[::-1]),
            }
        codecs = _codecs_json(levels, compression, new.options, key=key)
        doc: dict[str, Any] = {"dataType": data_type}
        if check_option(new.options, "legacy_compression", (True, False), False, key=key):
            doc["compression"] = {
                "type": "raw"
            }  # what Java's createDataset writes beside codecs (docs/n5.md)
        doc["blockSize"] = list(levels[-1][::-1])  # the shard size, N5 order
        doc["dimensions"] = list(shape[::-1])
        doc["codecs"] = codecs
        return doc

    def _rooted(self, store: Store, prefix: str, doc: dict[str, Any]) -> dict[str, Any]:
        """``doc`` as it is written at ``prefix``: at the container root with the ``"n5"`` version, below
        it as it is, the root's version recorded first when it is missing (a newer container refused)."""
        _, root = self._batch(store, prefix)
        check_version(root, key=ATTRIBUTES_KEY)
        if not prefix:
            return {VERSION_KEY: N5_VERSION, **doc}
        if root is None or VERSION_KEY not in root:
            root_doc = {VERSION_KEY: N5_VERSION, **(root or {})}
            store.set(ATTRIBUTES_KEY, dump_json(root_doc, key=ATTRIBUTES_KEY, compact=True))
        return doc

    def _write_array(self, store: Store, prefix: str, key: str, new: NewArray) -> DatasetSpec:
        """Write ``attributes.json`` for a new dataset (and the root version if missing); shapes in NumPy
        order. ``compressor`` takes N5 names (default ``"gzip"``: Java's level 6, what every N5 reader
        decodes; a bare name gets Java's defaults) or N5 JSON objects. Sharded datasets take the options ``index_location``,
        ``index_endian``, ``index_crc32c`` and ``legacy_compression`` (docs/n5.md). N5 has no
        dimension names: they are refused (``UnsupportedError``) rather than dropped."""
        if new.dimension_names is not None and any(n is not None for n in new.dimension_names):
            raise UnsupportedError("N5 has no dimension names", key=key)
        doc = self.array_attributes(new, key=key)
        user = self._check_user_attributes(new.attributes, key, root=not prefix)
        full = self._rooted(store, prefix, {**doc, **user})
        spec = parse_n5_attributes(full, key=key, root=not prefix)
        store.set(key, dump_json(full, key=key, compact=True))
        return spec

    def resize_array(self, store: Store, prefix: str, shape: NewShape) -> tuple[DatasetSpec, DatasetSpec]:
        """``attributes.json`` with new ``dimensions`` (``shape`` in NumPy order, stored reversed; see
        :meth:`Format.resize_array`), its other keys and user attributes kept."""
        key = join_key(prefix, ATTRIBUTES_KEY)
        node, root = self._batch(store, prefix)
        before = self.spec_from_documents(node, root, prefix)
        assert node is not None  # spec_from_documents refused a missing document
        node["dimensions"] = list(check_shape(new_shape(shape, before.shape), key=key, field="shape"))[::-1]
        after = self.spec_from_documents(node, root, prefix)
        store.set(key, dump_json(node, key=key, compact=True))
        return before, after

    @staticmethod
    def _check_user_attributes(
        attributes: dict[str, Any] | None, key: str, *, root: bool, group: bool = False
    ) -> dict[str, Any]:
        attrs = dict(attributes or {})
        reserved = set(DATASET_KEYS) | ({VERSION_KEY} if root else set())
        if group:  # a group may say a dataType (BigDataViewer's setups): it does not make it a dataset
            reserved.discard("dataType")
        clash = sorted(reserved & set(attrs))
        if clash:
            raise MetadataError(f"attribute name(s) {clash} are reserved by the N5 format", key=key)
        return attrs

    def read_attributes(self, store: Store, prefix: str) -> dict[str, Any]:
        node, _ = self._batch(store, prefix)
        if node is None:
            if prefix:
                return {}  # an N5 group may be a bare directory without attributes.json
            raise NodeNotFoundError("no N5 container here (attributes.json is missing)", key=ATTRIBUTES_KEY)
        strip = set(DATASET_KEYS) if is_array_document(node) else set()
        if not prefix:
            strip.add(VERSION_KEY)
        return {k: v for k, v in node.items() if k not in strip}

    def write_attributes(self, store: Store, prefix: str, attributes: dict[str, Any]) -> None:
        key = join_key(prefix, ATTRIBUTES_KEY)
        node, _ = self._batch(store, prefix)
        node = node or {}
        array = is_array_document(node)
        keep = set(DATASET_KEYS) if array else set()
        if not prefix:
            keep.add(VERSION_KEY)
        user = self._check_user_attributes(attributes, key, root=not prefix, group=not array)
        doc = {k: v for k, v in node.items() if k in keep}
        doc.update(user)
        store.set(key, dump_json(doc, key=key, compact=True))

    def create_group(self, store: Store, prefix: str, attributes: dict[str, Any] | None = None) -> None:
        key = join_key(prefix, ATTRIBUTES_KEY)
        user = self._check_user_attributes(attributes, key, root=not prefix, group=True)
        store.set(key, dump_json(self._rooted(store, prefix, user), key=key, compact=True))


register_format(N5Format())
