"""The file side of :class:`~altarr.stores.LocalStore`: positional reads and writes, version tokens,
:class:`FileReader`.
"""

from __future__ import annotations

import errno
import os
import stat as _stat
from typing import Any

from ..errors import StoreError
from .base import ObjectReader
from .ranges import ByteRequest, Range, legacy_bounds

__all__ = [
    "DIR_FLAGS",
    "O_NOFOLLOW",
    "PROC_FD",
    "READ_FLAGS",
    "TEMP_FLAGS",
    "TEMP_SUFFIX",
    "FileReader",
    "file_version",
    "fstat_of",
    "oserror_message",
    "read_one",
    "require_file",
    "writev_all",
]

TEMP_SUFFIX = ".altarr-tmp"

O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
READ_FLAGS = os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC | getattr(os, "O_BINARY", 0)
TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | getattr(os, "O_BINARY", 0)
DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | O_CLOEXEC
# Where the kernel tells the path of an open descriptor (Linux; elsewhere ``realpath``)
PROC_FD = "/proc/self/fd/" if os.path.isdir("/proc/self/fd") else None
# Longer ranges are clipped to the file size first: Range(0, 2**62) allocates nothing
_CLIP_ABOVE = 1 << 20


def oserror_message(what: str, e: OSError) -> str:
    return f"{what} failed: {e.strerror or e}"


def _pread_all(fd: int, n: int, offset: int) -> bytes:
    """Up to ``n`` bytes at ``offset`` (fewer only at end of file)."""
    data = os.pread(fd, n, offset)
    if len(data) == n or not data:
        return data
    parts = [data]
    got = len(data)
    while got < n:
        chunk = os.pread(fd, n - got, offset + got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _read_fd(fd: int, req: ByteRequest) -> bytes | None:
    """One byte request on an open descriptor (``IsADirectoryError`` for a folder: never read as missing)."""
    if type(req) is Range:
        n = req.stop - req.start
        if 0 < n <= _CLIP_ABOVE:
            return os.pread(fd, n, req.start)  # a folder: IsADirectoryError
    st = os.fstat(fd)
    require_file(st)
    off, end = req.bounds(st.st_size)
    if end <= off:
        return b""
    return _pread_all(fd, end - off, off)


def require_file(st: os.stat_result) -> None:
    """Refuse a folder (or another non-regular file) where an object is read."""
    if _stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "the key names a folder, not an object")
    if not _stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "the key names a special file, not an object")


def file_version(st: os.stat_result) -> str:
    """The version token of a file (every write makes a new inode)."""
    return f"{st.st_mtime_ns}:{st.st_ino}"


def writev_all(fd: int, parts: list[memoryview]) -> None:
    """Write ``parts`` back to back with as few ``writev`` calls as the OS allows (no joined copy)."""
    parts = [p for p in parts if p.nbytes]
    while parts:
        n = os.writev(fd, parts[:1024])  # IOV_MAX
        while parts and n >= parts[0].nbytes:
            n -= parts[0].nbytes
            parts.pop(0)
        if n:
            parts[0] = parts[0][n:]


def fstat_of(fd: int, key: str) -> os.stat_result:
    """``os.fstat`` of an open descriptor of ``key``, as a :class:`~altarr.errors.StoreError` naming it."""
    try:
        return os.fstat(fd)
    except OSError as e:  # pragma: no cover - fstat of an open descriptor does not fail in practice
        raise StoreError(oserror_message("fstat", e), key=key) from e


def read_one(fd: int, key: str, req: ByteRequest) -> bytes | None:
    """One byte request on an open descriptor of ``key``; failures are a ``StoreError`` naming both."""
    try:
        return _read_fd(fd, req)
    except IsADirectoryError as e:
        msg = "reading failed: the key names a folder, not an object"
        raise StoreError(msg, key=key, byte_range=legacy_bounds(req)) from e
    except OSError as e:
        raise StoreError(oserror_message("reading", e), key=key, byte_range=legacy_bounds(req)) from e


class FileReader(ObjectReader):
    """An open file of a :class:`LocalStore` for ranged reads (:meth:`LocalStore.open_reader`)."""

    __slots__ = ("fd", "key", "version", "_stats")
    fd: int

    def __init__(self, fd: int, key: str, version: str, stats: Any) -> None:
        self.fd, self.key, self.version, self._stats = fd, key, version, stats

    def read(self, request: ByteRequest) -> bytes:
        data = read_one(self.fd, self.key, request) or b""
        self._stats.add(reads=1, bytes_read=len(data))
        return data

    def read_into(self, start: int, buffer: Any) -> int:
        mv = memoryview(buffer).cast("B")
        got, n = 0, mv.nbytes
        try:
            while got < n:
                k = os.preadv(self.fd, [mv[got:]], start + got)
                if k <= 0:
                    break
                got += k
        except OSError as e:
            raise StoreError(
                oserror_message("reading", e), key=self.key, byte_range=(start, start + n)
            ) from e
        self._stats.add(reads=1, bytes_read=got)
        return got

    @property
    def size(self) -> int | None:
        if self.fd < 0:
            return None
        try:
            return os.fstat(self.fd).st_size
        except OSError:
            return None

    def count_reads(self, reads: int, nbytes: int) -> None:
        self._stats.add(reads=reads, bytes_read=nbytes)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
