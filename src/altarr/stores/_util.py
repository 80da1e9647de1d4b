"""Small helpers shared by the store implementations (not public)."""

from __future__ import annotations

from ..errors import StoreError
from .coalesce import DEFAULT_COALESCE_GAP

__all__ = [
    "NETWORK_COALESCE_GAP",
    "as_byte_view",
    "as_bytes",
    "byte_length",
    "client_failure",
    "coalesce_gap_for",
]

#: The coalescing gap of a store behind a network (why 1 MiB: ``docs/remote.md``)
NETWORK_COALESCE_GAP = 1 << 20

#: Schemes served from this machine, which keep the small default gap
_LOCAL_SCHEMES = frozenset({"file", "local", "memory"})


def coalesce_gap_for(schemes: set[str] | frozenset[str]) -> int:
    """The default coalescing gap of a store reached through ``schemes``."""
    return DEFAULT_COALESCE_GAP if schemes <= _LOCAL_SCHEMES else NETWORK_COALESCE_GAP


def as_byte_view(value: object) -> memoryview:
    """A flat, C-contiguous byte view of ``value`` (parts in a list or tuple are joined)."""
    if isinstance(value, list | tuple):
        return memoryview(b"".join(value))
    mv = memoryview(value)  # type: ignore[arg-type]  # any object: one without a buffer raises TypeError
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
    """How many bytes :func:`as_bytes` would give for ``value``, without joining or copying."""
    if type(value) is bytes:
        return len(value)
    if isinstance(value, list | tuple):
        return sum(memoryview(v).nbytes for v in value)
    return memoryview(value).nbytes  # type: ignore[arg-type]  # any object, as in as_byte_view


def client_failure(
    what: str,
    key: str | None,
    e: BaseException,
    byte_range: tuple[int | None, int | None] | None = None,
) -> StoreError:
    """The :class:`~altarr.errors.StoreError` of a client's failure (its text cut: obstore's runs to pages).

    >>> client_failure("read", "c/0", TimeoutError("slow"), (0, 10)).message
    'read failed: TimeoutError: slow'
    """
    return StoreError(f"{what} failed: {type(e).__name__}: {str(e)[:500]}", key=key, byte_range=byte_range)
