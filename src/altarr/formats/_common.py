"""Helpers shared by the format modules: JSON documents, shape validation, fill values, N-d keys.

Everything here raises :class:`~altarr.errors.MetadataError` naming the metadata key and the field."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import GridError, MetadataError, UnsupportedError
from ..stores.ranges import WHOLE

if TYPE_CHECKING:
    from ..stores.base import Store

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_RANK",
    "MAX_CHUNK_BYTES",
    "MAX_CHUNKS_PER_SHARD",
    "MAX_ELEMENTS",
    "check_spec_limits",
    "check_option",
    "nest_in_shards",
    "parse_json",
    "fetch_documents",
    "dump_json",
    "check_shape",
    "check_chunk_shape",
    "normalize_levels",
    "decode_float_fill",
    "encode_fill_value",
]


#: Limits on what a metadata document may describe. Each protects an allocation or a recursion that a
#: hostile document could otherwise blow up (``MetadataError`` naming the key instead).
MAX_JSON_DEPTH = 128  # nesting of lists/objects in one document (deeper recursion overflows the stack)
MAX_RANK = 64  # NumPy's limit on dimensions
MAX_ELEMENTS = 2**62  # elements of an array, and of its grid (keeps every index product in int64)
MAX_CHUNK_BYTES = 2**34  # 16 GiB decoded per chunk: one chunk is decoded into memory at a time
MAX_CHUNKS_PER_SHARD = 2**24  # a 256 MiB index


def join_key(prefix: str, key: str) -> str:
    """Join a node prefix and a relative key with ``/`` (an empty prefix is the store root)."""
    return f"{prefix}/{key}" if prefix else key


def _json_depth(doc: Any) -> int:
    """The nesting depth of a parsed JSON value (iterative: no recursion on hostile input)."""
    depth, stack = 0, [(doc, 1)]
    while stack:
        value, d = stack.pop()
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            depth = max(depth, d)
            if d > MAX_JSON_DEPTH:
                return d
            stack.extend((v, d + 1) for v in value if isinstance(v, dict | list))
    return depth


def parse_json(data: bytes | bytearray | memoryview, key: str) -> dict[str, Any]:
    """Parse a metadata document; it must be a JSON object nested at most :data:`MAX_JSON_DEPTH` deep."""
    try:
        doc = json.loads(bytes(data).decode("utf-8"))
    except RecursionError as e:
        raise MetadataError(
            f"malformed JSON in metadata document: nested deeper than {MAX_JSON_DEPTH} levels", key=key
        ) from e
    except (UnicodeDecodeError, ValueError) as e:
        raise MetadataError(f"malformed JSON in metadata document: {e}", key=key) from e
    if _json_depth(doc) > MAX_JSON_DEPTH:
        raise MetadataError(
            f"malformed JSON in metadata document: nested deeper than {MAX_JSON_DEPTH} levels", key=key
        )
    if not isinstance(doc, dict):
        raise MetadataError(f"metadata document must be a JSON object, got {type(doc).__name__}", key=key)
    return doc


def check_spec_limits(
    shape: Sequence[int], levels: Sequence[Sequence[int]], dtype: np.dtype, *, key: str | None
) -> None:
    """Refuse an array that no allocation could serve: more than :data:`MAX_RANK` dimensions, a block shape
    of another rank, more than :data:`MAX_ELEMENTS` elements (so also grid positions, never more than the
    elements), a chunk of more than :data:`MAX_CHUNK_BYTES` decoded bytes, a shard of more than
    :data:`MAX_CHUNKS_PER_SHARD` chunks. ``levels``: the block shapes, the chunk first."""
    if len(shape) > MAX_RANK:
        raise MetadataError(
            f"field 'shape': {len(shape)} dimensions, more than the {MAX_RANK} NumPy supports", key=key
        )
    for block in levels:
        if len(block) != len(shape):
            raise MetadataError(
                f"block shape {list(block)} has {len(block)} dimensions, the array has {len(shape)}", key=key
            )
    n = math.prod(int(s) for s in shape)
    if n > MAX_ELEMENTS:
        raise MetadataError(f"field 'shape': {n} elements, more than the 2**62 altarr supports", key=key)
    chunk = tuple(int(c) for c in levels[0])
    nbytes = math.prod(chunk) * dtype.itemsize
    if nbytes > MAX_CHUNK_BYTES:
        raise MetadataError(
            f"chunk shape {list(chunk)} of {dtype} is {nbytes} bytes, more than the {MAX_CHUNK_BYTES} bytes "
            "(16 GiB) a chunk may have",
            key=key,
        )
    for inner, outer in zip(levels, levels[1:], strict=False):
        cps = math.prod(-(-int(o) // int(i)) for i, o in zip(inner, outer, strict=True))
        if cps > MAX_CHUNKS_PER_SHARD:
            raise MetadataError(
                f"shard shape {list(outer)} holds {cps} blocks of {list(inner)}, more than the "
                f"{MAX_CHUNKS_PER_SHARD} a shard index may have",
                key=key,
            )


def fetch_documents(store: Store, prefix: str, names: Sequence[str]) -> dict[str, bytes | None]:
    """Read the metadata documents ``names`` (relative to ``prefix``) in one batched store request."""
    keys = [join_key(prefix, n) for n in names]
    values = store.get_ranges([(k, WHOLE) for k in keys])
    return dict(zip(names, values, strict=True))


def dump_json(doc: dict[str, Any], *, key: str, indent: int | None = 2, compact: bool = False) -> bytes:
    """Serialize a metadata document (NaN/Infinity in user attributes are written as zarr-python does)."""
    try:
        if compact:
            return json.dumps(doc, separators=(",", ":")).encode("utf-8")
        return json.dumps(doc, indent=indent).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise MetadataError(f"metadata is not JSON-serializable: {e}", key=key) from e


def check_option(
    options: dict[str, Any], name: str, choices: tuple[Any, Any], default: Any, *, key: str
) -> Any:
    """The writer option ``name`` of ``options`` (``default`` when not given): one of ``choices``, of
    their type (``1`` is not ``True``); ``MetadataError`` naming ``key`` otherwise."""
    value = options.get(name, default)
    if not isinstance(value, type(default)) or value not in choices:
        raise MetadataError(f"{name} must be {choices[0]!r} or {choices[1]!r}, got {value!r}", key=key)
    return value


def _is_int(v: Any) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)


def check_shape(value: Any, *, key: str, field: str, positive: bool = False) -> tuple[int, ...]:
    """A list of non-negative (or positive) integers."""
    if not isinstance(value, list | tuple) or not all(_is_int(v) for v in value):
        raise MetadataError(f"field {field!r} must be a list of integers, got {value!r}", key=key)
    lo = 1 if positive else 0
    if any(int(v) < lo for v in value):
        raise MetadataError(f"field {field!r} must hold integers >= {lo}, got {list(value)!r}", key=key)
    return tuple(int(v) for v in value)


def check_chunk_shape(value: Any, ndim: int, *, key: str, field: str) -> tuple[int, ...]:
    """Positive integers, one per dimension."""
    shape = check_shape(value, key=key, field=field, positive=True)
    if len(shape) != ndim:
        raise MetadataError(f"field {field!r} has {len(shape)} dimensions, the array has {ndim}", key=key)
    return shape


def normalize_levels(
    chunks: Sequence[int], shards: Sequence[int] | Sequence[Sequence[int]] | None, ndim: int, *, key: str
) -> list[tuple[int, ...]]:
    """Validate ``chunks`` and ``shards`` (one shape, or shapes from the innermost level outwards) and
    return all block shapes, innermost (the chunk) first. Raises ``GridError`` when a level does not divide
    the next one."""
    chunk = _shape_arg(chunks, ndim, key=key, what="chunks")
    if shards is None:
        return [chunk]
    given = list(shards)
    if given and all(_is_int(s) for s in given):
        shard_levels: list[Any] = [given]
    else:
        shard_levels = given
    if not shard_levels:
        raise GridError("'shards' must be a shape or a non-empty list of shapes", key=key)
    levels = [chunk]
    for i, s in enumerate(shard_levels):
        shape = _shape_arg(s, ndim, key=key, what=f"shards[{i}]" if len(shard_levels) > 1 else "shards")
        prev = levels[-1]
        if any(b % a for a, b in zip(prev, shape, strict=True)):
            raise GridError(
                f"shard shape {shape} is not a multiple of the next inner level {prev} in every dimension",
                key=key,
            )
        levels.append(shape)
    return levels


def nest_in_shards(
    levels: Sequence[Sequence[int]],
    inner: list[dict[str, Any]],
    index_codecs: list[dict[str, Any]],
    index_location: str,
    *,
    codecs_last: bool = False,
) -> list[dict[str, Any]]:
    """The ``codecs`` JSON that wraps the chunk codecs ``inner`` in one ``sharding_indexed`` level per
    shard shape: ``levels`` are the block shapes innermost (the chunk) first, in the document's order.
    ``codecs_last`` writes the configuration's keys in Java N5's order (``codecs`` after the index's)."""
    codecs = inner
    for i in range(1, len(levels)):
        config: dict[str, Any] = {"chunk_shape": list(levels[i - 1]), "codecs": codecs}
        config["index_codecs"] = copy.deepcopy(index_codecs)  # each document owns its parts
        config["index_location"] = index_location
        if codecs_last:
            config["codecs"] = config.pop("codecs")
        codecs = [{"name": "sharding_indexed", "configuration": config}]
    return codecs


def _shape_arg(value: Any, ndim: int, *, key: str, what: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(v) for v in value)
        ok = all(_is_int(v) or float(v) == int(v) for v in value)
    except (TypeError, ValueError):
        raise GridError(f"{what} must be a sequence of integers, got {value!r}", key=key) from None
    if not ok or len(shape) != ndim or any(v <= 0 for v in shape):
        raise GridError(
            f"{what} must be {ndim} positive integers (one per dimension), got {value!r}", key=key
        )
    return shape


_FLOAT_BITS = {2: (np.uint16, 4), 4: (np.uint32, 8), 8: (np.uint64, 16)}


def decode_float_fill(value: Any, dtype: np.dtype, *, key: str, field: str = "fill_value") -> Any:
    """A float fill value from JSON: a number, ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` or a hex bit
    pattern (``"0x7fc00000"`` for a float32) of exactly the type's width."""
    if _is_int(value) or isinstance(value, float):
        try:
            number = float(value)  # an integer beyond float64 raises OverflowError
        except OverflowError:
            number = math.inf
        if math.isinf(number) and not (isinstance(value, float) and math.isinf(value)):
            raise MetadataError(f"field {field!r}: {value} is too large for {dtype}", key=key)
        with np.errstate(over="ignore"):
            out = dtype.type(number)
        if math.isfinite(number) and not np.isfinite(out):
            raise MetadataError(f"field {field!r}: {value} is too large for {dtype}", key=key)
        return out
    if isinstance(value, str):
        special = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
        if value in special:
            return dtype.type(special[value])
        if value.startswith("0x") and dtype.itemsize in _FLOAT_BITS:
            utype, width = _FLOAT_BITS[dtype.itemsize]
            digits = value[2:]
            if len(digits) == width:
                try:
                    bits = int(digits, 16)
                except ValueError:
                    bits = None
                if bits is not None:
                    return np.array(bits, dtype=utype).view(dtype)[()]
            raise MetadataError(
                f"field {field!r}: hex fill value {value!r} must have {width} hex digits for {dtype}", key=key
            )
    raise MetadataError(
        f"field {field!r}: {value!r} is not a valid {dtype} fill value (a number, 'NaN', 'Infinity', "
        "'-Infinity' or a hex bit pattern)",
        key=key,
    )


_CANONICAL_NAN = {2: 0x7E00, 4: 0x7FC00000, 8: 0x7FF8000000000000}


def _encode_float(v: Any, nan_payloads: bool) -> Any:
    if np.isnan(v):
        utype, width = _FLOAT_BITS[v.dtype.itemsize]
        bits = int(v.view(utype))
        exact = nan_payloads and bits != _CANONICAL_NAN[v.dtype.itemsize]
        return f"0x{bits:0{width}x}" if exact else "NaN"
    if np.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return float(v)


def encode_fill_value(value: Any, dtype: np.dtype, *, nan_payloads: bool = True) -> Any:
    """The JSON form of a Zarr fill value of ``dtype`` (``None`` means the type's zero): booleans,
    integers (datetimes as their int64), floats with ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (a NaN
    with another payload than the canonical quiet NaN as its hex bit pattern, unless ``nan_payloads`` is
    false: Zarr v2), complex numbers as ``[real, imaginary]``, raw types as a list of byte values."""
    dtype = np.dtype(dtype)
    if dtype.kind == "V":
        if value is None or (isinstance(value, int | np.integer) and value == 0):
            return [0] * dtype.itemsize
        raw = bytes(value) if isinstance(value, bytes | bytearray | list | tuple) else None
        if raw is None and isinstance(value, np.void):
            raw = value.tobytes()
        if raw is None or len(raw) != dtype.itemsize:
            raise MetadataError(f"fill value for {dtype} must be {dtype.itemsize} bytes, got {value!r}")
        return list(raw)
    if value is None:
        value = np.zeros((), dtype=dtype)[()]
    if dtype.kind in "iumM" and isinstance(value, float | np.floating) and not float(value).is_integer():
        raise MetadataError(f"fill value {value!r} is not an integer ({dtype})")
    try:
        scalar = np.asarray(value).astype(dtype) if dtype.kind in "mM" else np.asarray(value, dtype)
    except (TypeError, ValueError, OverflowError) as e:
        raise MetadataError(f"fill value {value!r} cannot be represented as {dtype}: {e}") from e
    if scalar.shape != ():
        raise MetadataError(f"fill value must be a scalar, got {value!r}")
    if dtype.kind == "b":
        return bool(scalar)
    if dtype.kind in "iu":
        return int(scalar)
    if dtype.kind in "mM":
        return int(scalar.view("i8"))
    if dtype.kind == "f":
        return _encode_float(scalar, nan_payloads)
    if dtype.kind == "c":
        return [_encode_float(scalar.real, nan_payloads), _encode_float(scalar.imag, nan_payloads)]
    raise UnsupportedError(f"fill values of {dtype} are not supported")
