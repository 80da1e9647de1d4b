"""Zarr v3 data types (the core types and ``r<N>`` raw bits as NumPy void) and fill values in all their
JSON forms, both ways."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import MetadataError, UnknownCodecError, UnsupportedError
from ._common import decode_float_fill, encode_fill_value

__all__ = ["dtype_from_data_type", "data_type_name", "decode_fill_value", "encode_fill_value"]

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
