"""Small helpers shared by the store implementations (not public)."""

from __future__ import annotations

__all__ = ["as_byte_view", "as_bytes", "byte_length"]


def as_byte_view(value: object) -> memoryview:
    """A flat, C-contiguous byte view of ``value`` (bytes, bytearray, memoryview, NumPy array, ...).

    A list or tuple of buffers is an object given in parts (see ``Store.set``): they are joined.
    Raises ``TypeError`` for an object that does not export a buffer. A non-contiguous buffer is copied.
    """
    if isinstance(value, list | tuple):
        return memoryview(b"".join(value))
    mv = memoryview(value)  # type: ignore[arg-type]
    if not mv.c_contiguous:
        mv = memoryview(mv.tobytes())
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    return mv


def as_bytes(value: object) -> bytes:
    """``value`` as an immutable ``bytes`` object (no copy when it already is one)."""
    if type(value) is bytes:
        return value
    if isinstance(value, list | tuple):
        return b"".join(value)
    return as_byte_view(value).tobytes()


def byte_length(value: object) -> int:
    """How many bytes :func:`as_bytes` would give for ``value``, without joining or copying anything.

    Raises ``TypeError`` for an object that does not export a buffer, as :func:`as_bytes` would.

    >>> byte_length([b"ab", memoryview(b"cde")])
    5
    """
    if type(value) is bytes:
        return len(value)
    if isinstance(value, list | tuple):
        return sum(memoryview(v).nbytes for v in value)
    return memoryview(value).nbytes  # type: ignore[arg-type]
