"""A store over a zip archive: reads of an existing archive, or building a new one.

Mode ``"r"`` reads an archive (read-only). Ranged reads of stored (uncompressed) members are positional
reads of the archive file at the member's data offset; compressed (deflated, ...) members are inflated
once per batch and sliced. Modes ``"w"`` (new archive, truncating), ``"x"`` (new archive, must not exist)
and ``"a"`` (append to an archive) write members with ``compression`` (``zipfile.ZIP_STORED`` by default,
so chunks stay range-readable); the central directory is written by :meth:`ZipStore.close`. A zip archive
cannot replace or delete a member in place: writing a key again appends a new member that shadows the old
one (reads see the newest), and :meth:`ZipStore.delete` raises ``UnsupportedError`` for an existing key.

Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "data.zip")
    >>> with ZipStore(path, mode="w") as z:
    ...     z.set("a/b", b"0123456789")
    >>> z = ZipStore(path)
    >>> z.get_ranges([("a/b", 2, 4), ("a/b", -3, None), ("nope", None, None)])
    [b'23', b'789', None]
    >>> z.close()
"""

from __future__ import annotations

import os
import threading
import warnings
import zipfile
from collections.abc import Iterator, Sequence

from ..errors import InvalidKeyError, ReadOnlyError, StoreError, UnsupportedError
from ._util import as_bytes, resolve_range
from .base import DEFAULT_COALESCE_GAP, RangeRequest, Store, normalize_key
from .coalesce import DEFAULT_MAX_COALESCED_SIZE, coalesce_requests

__all__ = ["ZipStore"]

_MODES = ("r", "w", "x", "a")


def _version(info: zipfile.ZipInfo) -> str:
    """A member's version token: its checksum and place in the archive (a rewrite appends a new member)."""
    return f"{info.CRC}:{info.header_offset}"


class ZipStore(Store):
    """Members of a zip archive as objects. See the module docstring.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "x.zip")
    >>> z = ZipStore(path, mode="w"); z.set("k", b"v"); z.get("k"), list(z.list())
    (b'v', ['k'])
    >>> z.close()
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: str = "r",
        *,
        compression: int = zipfile.ZIP_STORED,
        compresslevel: int | None = None,
        coalesce_gap: int = DEFAULT_COALESCE_GAP,
        max_coalesced_size: int = DEFAULT_MAX_COALESCED_SIZE,
    ) -> None:
        super().__init__()
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
        self.path = os.path.abspath(os.fspath(path))
        self.mode = mode
        self.read_only = mode == "r"
        self.cheap_stat = True  # member information is in memory
        self.coalesce_gap = coalesce_gap
        self.max_coalesced_size = max_coalesced_size
        self._lock = threading.RLock()
        try:
            self._zf = zipfile.ZipFile(
                self.path, mode, compression=compression, compresslevel=compresslevel, allowZip64=True
            )
        except FileNotFoundError as e:
            raise StoreError(f"zip archive not found: {self.path}") from e
        except (OSError, zipfile.BadZipFile) as e:
            raise StoreError(f"cannot open zip archive {self.path}: {e}") from e
        # Positional reads of stored members (read mode only): one descriptor, data offsets cached.
        self._fd: int | None = (
            os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)) if self.read_only else None
        )
        self._offsets: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"ZipStore({self.path!r}, mode={self.mode!r})"

    def __reduce__(self):
        if self.mode != "r":
            raise TypeError("a ZipStore open for writing cannot be pickled")
        return (ZipStore, (self.path, "r"))

    def close(self) -> None:
        """Close the archive (in the writing modes this writes its central directory)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            self._zf.close()

    def _info(self, key: str) -> zipfile.ZipInfo | None:
        info = self._zf.NameToInfo.get(key)
        return None if info is None or info.is_dir() else info

    def _data_offset(self, info: zipfile.ZipInfo) -> int:
        off = self._offsets.get(info.filename)
        if off is None:
            assert self._fd is not None
            header = os.pread(self._fd, 30, info.header_offset)
            if len(header) != 30 or header[:4] != b"PK\x03\x04":
                raise StoreError(
                    "bad local file header in zip archive",
                    key=info.filename,
                    byte_range=(info.header_offset, None),
                )
            n = int.from_bytes(header[26:28], "little") + int.from_bytes(header[28:30], "little")
            off = self._offsets[info.filename] = info.header_offset + 30 + n
        return off

    # --- reads ----------------------------------------------------------------------------------------
    def get_ranges_versioned(
        self, requests: Sequence[RangeRequest]
    ) -> tuple[list[bytes | None], list[float | int | str | None]]:
        """:meth:`get_ranges` plus each member's version token (as :meth:`stat` gives it)."""
        with self._lock:
            out = self.get_ranges(requests)
            versions = []
            for (key, _, _), r in zip(requests, out, strict=True):
                info = None if r is None else self._info(normalize_key(key))
                versions.append(None if info is None else _version(info))
        return out, versions

    def get_ranges(self, requests: Sequence[RangeRequest]) -> list[bytes | None]:
        if not requests:
            return []
        plan = coalesce_requests(requests, self.coalesce_gap, self.max_coalesced_size)
        results: list[bytes | None] = []
        inflated: dict[str, bytes] = {}
        with self._lock:
            self._check_open()
            for key, start, stop in plan.requests:
                info = self._info(key)
                if info is None:
                    results.append(None)
                    continue
                try:
                    results.append(self._read(info, key, start, stop, inflated))
                except StoreError:
                    raise
                except (OSError, zipfile.BadZipFile, RuntimeError, EOFError) as e:
                    raise StoreError(
                        f"reading from zip archive failed: {e}", key=key, byte_range=(start, stop)
                    ) from e
        self.stats.add(reads=len(plan.requests), bytes_read=sum(len(r) for r in results if r is not None))
        return plan.split(results)

    def _read(self, info: zipfile.ZipInfo, key: str, start, stop, inflated: dict[str, bytes]) -> bytes:
        if self._fd is not None and info.compress_type == zipfile.ZIP_STORED and not info.flag_bits & 0x1:
            off, end = resolve_range(start, stop, info.file_size)
            if end <= off:
                return b""
            data = os.pread(self._fd, end - off, self._data_offset(info) + off)
            if len(data) != end - off:
                raise StoreError("zip member truncated", key=key, byte_range=(start, stop))
            return data
        data = inflated.get(key)
        if data is None:
            data = inflated[key] = self._zf.read(info)
        return data if start is None and stop is None else data[start:stop]

    def _check_open(self) -> None:
        if self._zf.fp is None:
            raise StoreError(f"the zip archive {self.path} is closed")

    def size(self, key: str) -> int | None:
        key = normalize_key(key)
        self.stats.add(size_queries=1)
        info = self._info(key)
        return None if info is None else info.file_size

    def stat(self, key: str) -> tuple[int, float | int | str] | None:
        key = normalize_key(key)
        self.stats.add(size_queries=1)
        info = self._info(key)
        return None if info is None else (info.file_size, _version(info))

    # --- writes ---------------------------------------------------------------------------------------
    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        key = normalize_key(key)
        if self.read_only:
            raise ReadOnlyError(f"cannot write: the zip archive is open for reading ({self!r})", key=key)
        if not key:
            raise InvalidKeyError("the empty key names the store root, not an object", key=key)
        data = as_bytes(value)
        with self._lock:
            self._check_open()
            try:
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", "Duplicate name", UserWarning)
                    self._zf.writestr(key, data)
            except (OSError, ValueError) as e:
                raise StoreError(f"writing to zip archive failed: {e}", key=key) from e
        self.stats.add(writes=1, bytes_written=len(data))

    def delete(self, key: str) -> bool:
        key = normalize_key(key)
        self._require_writable(key, "delete")
        if self._info(key) is None:
            return False
        raise UnsupportedError("zip archives cannot delete a member in place", key=key)

    # --- listing --------------------------------------------------------------------------------------
    def _names(self, prefix: str) -> list[str]:
        pre = prefix + "/" if prefix else ""
        with self._lock:
            names = {n for n in self._zf.NameToInfo if not n.endswith("/")}
        return sorted(n for n in names if n.startswith(pre))

    def list(self, prefix: str = "") -> Iterator[str]:
        prefix = normalize_key(prefix)
        self.stats.add(lists=1)
        return iter(self._names(prefix))

    def list_dir(self, prefix: str = "") -> tuple[list[str], list[str]]:
        prefix = normalize_key(prefix)
        self.stats.add(lists=1)
        n = len(prefix) + 1 if prefix else 0
        keys: list[str] = []
        dirs: set[str] = set()
        for name in self._names(prefix):
            head, sep, _ = name[n:].partition("/")
            (dirs.add(head) if sep else keys.append(head))
        return keys, sorted(dirs)
