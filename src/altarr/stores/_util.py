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

#: Ranges of one object at most this far apart are read in one request from a store behind a network
#: (S3, GCS, Azure, HTTP): a request costs a round trip, a MiB more in a response far less (the
#: measurement: ``benchmarks/README.md``, docs/remote.md).
NETWORK_COALESCE_GAP = 1 << 20

#: Schemes served from this machine, where a request is a system call or a dict lookup: the small
#: :data:`~altarr.stores.coalesce.DEFAULT_COALESCE_GAP` keeps the bytes read near what was asked.
_LOCAL_SCHEMES = frozenset({"file", "local", "memory"})


def coalesce_gap_for(schemes: set[str] | frozenset[str]) -> int:
    """The default merge distance of a store reached through ``schemes`` (its URL's, or its file
    system's protocols): :data:`NETWORK_COALESCE_GAP` unless every one of them is local.

    >>> coalesce_gap_for({"s3", "s3a"}), coalesce_gap_for({"file", "local"})
    (1048576, 65536)
    """
    return DEFAULT_COALESCE_GAP if schemes <= _LOCAL_SCHEMES else NETWORK_COALESCE_GAP


def as_byte_view(value: object) -> memoryview:
    """A flat, C-contiguous byte view of ``value`` (bytes, bytearray, memoryview, NumPy array, ...).

    A list or tuple of buffers is an object given in parts (see ``Store.set``): they are joined.
    Raises ``TypeError`` for an object that does not export a buffer. A non-contiguous buffer is copied.
    """
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
    """How many bytes :func:`as_bytes` would give for ``value``, without joining or copying anything.

    Raises ``TypeError`` for an object that does not export a buffer, as :func:`as_bytes` would.

    >>> byte_length([b"ab", memoryview(b"cde")])
    5
    """
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
    """The :class:`~altarr.errors.StoreError` of a client's failure (obstore's, a file system's): what
    failed, the exception's type and the start of its text (obstore's can run to pages), the key and
    byte range. The caller raises it ``from e``.

    >>> client_failure("read", "c/0", TimeoutError("slow"), (0, 10)).message
    'read failed: TimeoutError: slow'
    """
    return StoreError(f"{what} failed: {type(e).__name__}: {str(e)[:500]}", key=key, byte_range=byte_range)
