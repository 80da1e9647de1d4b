"""The exception hierarchy of altarr: every error derives from :class:`AltarrError`, names what failed
(key, chunk, byte range, codec) and derives from the built-in exception a caller expects
(``docs/errors.md``).

Example:
    >>> from altarr.errors import ChecksumError
    >>> err = ChecksumError("crc32c mismatch", key="c/0/0", codec="crc32c")
    >>> print(err)
    crc32c mismatch [key='c/0/0', codec='crc32c']
"""

from __future__ import annotations

import errno
import functools
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "AltarrError",
    "StoreError",
    "InvalidKeyError",
    "ReadOnlyError",
    "WriteConflictError",
    "MetadataError",
    "NodeNotFoundError",
    "ChildNotFoundError",
    "NodeTypeError",
    "UnknownCodecError",
    "UnsupportedError",
    "CodecError",
    "ChecksumError",
    "CorruptChunkError",
    "CorruptShardError",
    "GridError",
    "ExistsError",
    "SelectionError",
    "FetchError",
    "MaterializeError",
]


class AltarrError(Exception):
    """Base class of every altarr error; ``key``, ``chunk``, ``byte_range`` and ``codec`` (all optional)
    are attributes and appended to the message."""

    def __init__(
        self,
        message: str,
        *,
        key: str | None = None,
        chunk: Sequence[int] | None = None,
        byte_range: tuple[int | None, int | None] | None = None,
        codec: str | None = None,
    ) -> None:
        self.message = message
        self.key = key
        self.chunk = tuple(int(c) for c in chunk) if chunk is not None else None
        self.byte_range = byte_range
        self.codec = codec
        ctx = self._context()
        shown = ", ".join(f"{k}={v!r}" for k, v in ctx.items())
        super().__init__(f"{message} [{shown}]" if ctx else message)

    def _context(self) -> dict[str, Any]:
        ctx = {"key": self.key, "chunk": self.chunk, "byte_range": self.byte_range, "codec": self.codec}
        return {name: value for name, value in ctx.items() if value is not None}

    def with_context(self, **ctx: Any) -> AltarrError:
        """A copy of this error with its unset context fields filled in from ``ctx``."""
        merged = self._context()
        for name, value in ctx.items():
            if value is not None and merged.get(name) is None:
                merged[name] = value
        return type(self)(self.message, **merged)

    def __reduce__(self) -> tuple[Callable[..., AltarrError], tuple[object, ...]]:
        return (functools.partial(type(self), **self._context()), (self.message,))


# --- stores -------------------------------------------------------------------------------------------
class StoreError(AltarrError, OSError):
    """A store operation failed (I/O error, permission, unreachable object store)."""


class InvalidKeyError(StoreError, ValueError):
    """A key is malformed or would resolve outside the store's root."""


class ReadOnlyError(StoreError):
    """A write, delete or create was attempted on a store or dataset opened read-only."""


class WriteConflictError(StoreError):
    """Another writer changed the objects ``keys`` between this writer's read and its conditional write
    (raised to the caller once the retries are used up)."""

    def __init__(self, message: str, *, keys: Sequence[str] = (), **ctx: Any) -> None:
        self.keys = list(keys)
        if ctx.get("key") is None and self.keys:
            ctx["key"] = self.keys[0]
        super().__init__(message, **ctx)


# --- metadata -----------------------------------------------------------------------------------------
class MetadataError(AltarrError, ValueError):
    """Metadata (zarr.json, .zarray, attributes.json, ...) is missing, malformed or inconsistent."""


class NodeNotFoundError(MetadataError, FileNotFoundError):
    """No array or group is at the path opened (a ``FileNotFoundError``, as zarr-python's).

    >>> import altarr as aa
    >>> try:
    ...     aa.open_dataset("memory://no/such/array")
    ... except FileNotFoundError as e:
    ...     print(type(e).__name__)
    NodeNotFoundError
    """

    def __init__(self, message: str, **ctx: Any) -> None:
        super().__init__(message, **ctx)
        self.errno = errno.ENOENT  # as open() sets it; str(self) stays altarr's message


class ChildNotFoundError(NodeNotFoundError, KeyError):
    """``group[name]`` names no child (a ``KeyError``, as zarr-python's)."""


class NodeTypeError(MetadataError, TypeError):
    """A node exists but is not what was required (a ``TypeError``, as zarr-python's)."""


class UnknownCodecError(MetadataError):
    """Metadata names a codec, compression or extension that altarr does not know."""


class UnsupportedError(AltarrError, NotImplementedError):
    """A valid but unsupported feature (for example a format version above the one supported)."""


# --- codecs and data ------------------------------------------------------------------------------------
class CodecError(AltarrError, ValueError):
    """Encoding or decoding a chunk failed."""


class ChecksumError(CodecError):
    """A checksum (crc32c) did not match the data."""


class CorruptChunkError(CodecError):
    """A chunk's bytes are malformed: wrong decoded size, bad header, truncated payload."""


class CorruptShardError(CodecError):
    """A shard object is malformed: truncated, bad index, an index entry outside the object."""


class ExistsError(AltarrError, FileExistsError):
    """A node (array or group) already exists where one was to be created (pass ``overwrite=True``)."""


# --- grids, selections, lazy arrays ---------------------------------------------------------------------
class GridError(AltarrError, ValueError):
    """Chunk/shard shapes are inconsistent, or chunk coordinates are outside the grid."""


class SelectionError(AltarrError, IndexError):
    """A selection is out of bounds or malformed (behaves like NumPy's IndexError)."""


class FetchError(AltarrError, ValueError):
    """A user ``fetch(chunks)`` function broke the fetch contract (count, shape, dtype)."""


class MaterializeError(AltarrError, MemoryError):
    """Materializing a lazy array was refused: it exceeds ``max_materialize`` bytes."""
