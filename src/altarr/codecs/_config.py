"""Small helpers shared by the codec modules: configuration validation and buffer handling.

Everything here raises :class:`~altarr.errors.MetadataError` naming the codec and the field."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..errors import MetadataError

__all__ = [
    "check_keys",
    "check_int",
    "check_bool",
    "check_choice",
    "check_shape",
    "as_byte_view",
    "nbytes_of",
]


def check_keys(
    codec: str, configuration: Mapping[str, Any] | None, allowed: Iterable[str], required: Iterable[str] = ()
) -> dict[str, Any]:
    """Return ``configuration`` as a dict, refusing keys outside ``allowed`` and missing ``required`` ones."""
    configuration = {} if configuration is None else configuration
    if not isinstance(configuration, Mapping):
        raise MetadataError(
            f"codec {codec!r}: 'configuration' must be an object, got {type(configuration).__name__}",
            codec=codec,
        )
    allowed = set(allowed)
    unknown = sorted(str(k) for k in configuration if k not in allowed)
    if unknown:
        raise MetadataError(
            f"codec {codec!r}: unknown configuration field(s) {unknown}; expected a subset of {sorted(allowed)}",
            codec=codec,
        )
    for name in required:
        if name not in configuration:
            raise MetadataError(f"codec {codec!r}: field {name!r} is required", codec=codec)
    return dict(configuration)


def check_int(codec: str, field: str, value: Any, *, lo: int | None = None, hi: int | None = None) -> int:
    """Validate an integer field (``bool`` is refused), optionally within ``[lo, hi]``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise MetadataError(
            f"codec {codec!r}: field {field!r} must be an integer, got {value!r}", codec=codec
        )
    n = int(value)
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        raise MetadataError(
            f"codec {codec!r}: field {field!r} must be in [{lo}, {hi}], got {n}",
            codec=codec,
        )
    return n


def check_bool(codec: str, field: str, value: Any) -> bool:
    """Validate a boolean field."""
    if not isinstance(value, bool | np.bool_):
        raise MetadataError(f"codec {codec!r}: field {field!r} must be a boolean, got {value!r}", codec=codec)
    return bool(value)


def check_choice(codec: str, field: str, value: Any, choices: Iterable[Any]) -> Any:
    """Validate that ``value`` is one of ``choices``."""
    choices = tuple(choices)
    if value not in choices:
        raise MetadataError(
            f"codec {codec!r}: field {field!r} must be one of {list(choices)}, got {value!r}", codec=codec
        )
    return value


def check_shape(codec: str, field: str, value: Any, *, positive: bool = True) -> tuple[int, ...]:
    """Validate a shape: a non-empty list of (positive) integers."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise MetadataError(
            f"codec {codec!r}: field {field!r} must be a list of integers, got {value!r}", codec=codec
        )
    out = tuple(check_int(codec, field, v, lo=1 if positive else 0) for v in value)
    if not out:
        raise MetadataError(f"codec {codec!r}: field {field!r} must not be empty", codec=codec)
    return out


def as_byte_view(data: Any) -> memoryview:
    """A flat unsigned-byte memoryview of any C-contiguous bytes-like object (no copy)."""
    if isinstance(data, np.ndarray):
        if not data.flags.c_contiguous:
            raise ValueError("array is not C-contiguous")
        return data.reshape(-1).view(np.uint8).data
    mv = data if isinstance(data, memoryview) else memoryview(data)
    if mv.format != "B" or mv.ndim != 1:
        if not mv.c_contiguous:
            raise ValueError("buffer is not C-contiguous")
        mv = mv.cast("B")
    return mv


def nbytes_of(data: Any) -> int:
    """Byte length of a bytes-like object (``len`` of bytes/bytearray, ``nbytes`` otherwise)."""
    if isinstance(data, bytes | bytearray):
        return len(data)
    if isinstance(data, memoryview | np.ndarray):
        return data.nbytes
    return memoryview(data).nbytes
