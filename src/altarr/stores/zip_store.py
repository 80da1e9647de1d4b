"""A store over a zip archive: reads of an existing one, or writing one that is published whole.

Members are read positionally and decoded by :mod:`altarr.capped` at the size their directory entry
declares (size and CRC checked; a declared ratio over :data:`MAX_INFLATE_RATIO` is refused first).

Writes (modes ``"w"``, ``"x"``, ``"a"``) fill a staging file beside the archive, and
:meth:`ZipStore.close` publishes it with one atomic rename; a key written again shadows the old member,
and dead members are reclaimed. One writer at a time (``docs/engine.md``, "Every store crash-safe").
"""

from __future__ import annotations

import lzma
import os
import secrets
import shutil
import threading
import warnings
import weakref
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from contextlib import suppress
from typing import Any, Literal

from ..capped import bunzip2, inflate, unxz
from ..errors import CorruptChunkError, InvalidKeyError, StoreError
from . import filelock
from ._util import as_bytes
from .base import Fetched, ReadRequest, Store, normalize_key
from .local_files import O_CLOEXEC, TEMP_SUFFIX
from .ranges import ByteRequest, Whole, legacy_bounds

__all__ = ["ZipStore", "COMPACT_MIN_BYTES", "MAX_INFLATE_RATIO"]

_MODES = ("r", "w", "x", "a")
#: The staging file is compacted when dead members' bytes exceed the live ones' and this many bytes
COMPACT_MIN_BYTES = 1 << 20


def _version(info: zipfile.ZipInfo) -> str:
    """A member's version token: its checksum and place in the archive (a rewrite appends a new member)."""
    return f"{info.CRC}:{info.header_offset}"


def _member_bytes(info: zipfile.ZipInfo) -> int:
    """The bytes a member takes in the archive (local header, name, extra field, data)."""
    return 30 + len(info.filename.encode("utf-8")) + len(info.extra) + info.compress_size


#: A compressed member declaring more than this many times its compressed size (deflate's own ceiling is
#: 1032:1) and more than 1 MiB is refused as a decompression bomb.
MAX_INFLATE_RATIO = 1032
_RATIO_FREE = 1 << 20


def data_offset(fd: int, info: zipfile.ZipInfo) -> int:
    """Where a member's data starts in the zip file open as ``fd`` (after its local header)."""
    header = os.pread(fd, 30, info.header_offset)
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        raise StoreError(
            "bad local file header in zip archive", key=info.filename, byte_range=(info.header_offset, None)
        )
    n = int.from_bytes(header[26:28], "little") + int.from_bytes(header[28:30], "little")
    return info.header_offset + 30 + n


def read_member(fd: int, info: zipfile.ZipInfo, start: int) -> bytes:
    """A member's bytes, its data read at ``start`` of ``fd`` and decoded by a decoder capped at its
    declared size; the decoded size and CRC checked against its entry."""
    key, method, size = info.filename, info.compress_type, info.file_size
    if info.flag_bits & 0x1:
        raise StoreError("encrypted zip members are not supported", key=key)
    if method != zipfile.ZIP_STORED and size > max(_RATIO_FREE, MAX_INFLATE_RATIO * info.compress_size):
        raise StoreError(
            f"zip member declares {size} bytes from {info.compress_size} compressed, more than "
            f"{MAX_INFLATE_RATIO}:1: refused as a decompression bomb",
            key=key,
        )
    raw = os.pread(fd, info.compress_size, start)
    if len(raw) != info.compress_size:
        raise StoreError("zip member truncated", key=key, byte_range=(start, start + info.compress_size))
    try:
        if method == zipfile.ZIP_STORED:
            data = raw
        elif method == zipfile.ZIP_DEFLATED:
            data = inflate(raw, size, wbits=-15, codec="deflate")
        elif method == zipfile.ZIP_BZIP2:
            data = bunzip2(raw, size)
        elif method == zipfile.ZIP_LZMA:
            data = _unlzma(raw, size)
        else:
            raise StoreError(f"zip compression method {method} is not supported", key=key)
    except CorruptChunkError as e:
        raise StoreError(f"zip member failed to decompress: {e}", key=key) from e
    if len(data) != size or zlib.crc32(data) != info.CRC:
        raise StoreError(f"zip member corrupt: its {len(data)} bytes or CRC differ from its entry", key=key)
    return data


def _unlzma(raw: bytes, size: int) -> bytes:
    """A zip LZMA member (APPNOTE 5.8.8: version, properties size, LZMA1 properties, raw stream) capped at
    ``size`` bytes; the properties byte packs ``(pb * 5 + lp) * 9 + lc``, then the dictionary size."""
    n = int.from_bytes(raw[2:4], "little")
    props = raw[4 : 4 + n]
    if n != 5 or len(props) != 5 or props[0] >= 9 * 5 * 5:
        raise CorruptChunkError("bad LZMA properties in zip member", codec="lzma")
    lc, rest = props[0] % 9, props[0] // 9
    lzma1 = {"id": lzma.FILTER_LZMA1, "lc": lc, "lp": rest % 5, "pb": rest // 5}
    lzma1["dict_size"] = int.from_bytes(props[1:5], "little")
    return unxz(memoryview(raw)[4 + n :], size, format=lzma.FORMAT_RAW, filters=[lzma1], codec="lzma")


class _Session:
    """A writing :class:`ZipStore`'s staging file, its ``ZipFile`` and the writer lock (apart from the
    store, so that a store dropped without ``close`` still publishes, by ``weakref.finalize``)."""

    def __init__(self, path: str, mode: str, compression: int, compresslevel: int | None, durable: bool):
        self.path, self.durable = path, durable
        self.compression, self.compresslevel = compression, compresslevel
        folder, self.name = os.path.split(path)
        self.folder = folder or "."
        try:
            self.dir_fd = os.open(self.folder, os.O_RDONLY | O_CLOEXEC)
        except OSError as e:
            raise StoreError(f"cannot open the folder of zip archive {path}: {e.strerror or e}") from e
        self.lock_fd: int | None = None
        if filelock.AVAILABLE:
            try:
                self.lock_fd = filelock.acquire(self.dir_fd, self.name, blocking=False)
            except OSError as e:  # a read-only folder or mount, a full disk
                os.close(self.dir_fd)
                raise StoreError(f"cannot lock zip archive {path} for writing: {e.strerror or e}") from e
            if self.lock_fd is None:
                os.close(self.dir_fd)
                raise StoreError(f"zip archive {path} is open for writing by another writer")
        self.zf: zipfile.ZipFile | None = None
        self.deleted: set[str] = set()
        try:
            self.staging = self._new_staging()
            if os.path.isdir(path):
                raise StoreError(f"cannot write zip archive {path}: it is a folder")
            exists = os.path.exists(path)
            if mode == "x" and exists:
                raise StoreError(f"zip archive exists: {path}")
            if mode == "a" and exists and os.path.getsize(path) and not zipfile.is_zipfile(path):
                raise StoreError(f"cannot append to {path}: it is not a zip archive")
            append = mode == "a" and exists  # "a" on a missing archive starts a new one, as zipfile's does
            try:
                if append:
                    shutil.copyfile(path, self.staging)
            except OSError as e:
                raise StoreError(f"cannot copy zip archive {path} to append to it: {e.strerror or e}") from e
            self.zf = self._open(self.staging, "a" if append else "w")
        except BaseException:
            self.abandon()
            raise

    def _new_staging(self) -> str:
        return os.path.join(self.folder, f".{self.name}.{secrets.token_hex(6)}{TEMP_SUFFIX}")

    def _open(self, path: str, mode: Literal["w", "a"]) -> zipfile.ZipFile:
        try:
            return zipfile.ZipFile(
                path, mode, compression=self.compression, compresslevel=self.compresslevel, allowZip64=True
            )
        except (OSError, zipfile.BadZipFile) as e:
            raise StoreError(f"cannot open zip archive {self.path}: {e}") from e

    def live(self) -> list[zipfile.ZipInfo]:
        assert self.zf is not None
        return [i for n, i in self.zf.NameToInfo.items() if n not in self.deleted and not i.is_dir()]

    def dead_bytes(self) -> tuple[int, int]:
        """``(dead, live)``: bytes of shadowed or deleted members, bytes of live ones."""
        assert self.zf is not None
        live = sum(_member_bytes(i) for i in self.live())
        return max(0, self.zf.start_dir - live), live

    def compact(self) -> None:
        """Rewrite the staging file with the live members only."""
        assert self.zf is not None and self.zf.fp is not None
        self.zf.fp.flush()  # what zipfile buffered, on disk for the positional reads
        fd, target = self.zf.fp.fileno(), self._new_staging()
        try:
            with self._open(target, "w") as out:
                for info in self.live():
                    zi = zipfile.ZipInfo(info.filename, date_time=info.date_time)
                    zi.compress_type = info.compress_type
                    zi.external_attr = info.external_attr
                    out.writestr(zi, read_member(fd, info, data_offset(fd, info)))
        except BaseException:
            _unlink(target)
            raise
        self.zf.close()
        _unlink(self.staging)
        self.staging, self.deleted = target, set()
        self.zf = self._open(target, "a")

    def publish(self) -> None:
        """Write the directory, make the staging file the archive (one rename), release the lock."""
        if self.zf is None:
            return
        try:
            dead, _ = self.dead_bytes()
            if dead or self.deleted:
                self.compact()
            self.zf.close()
            if self.durable:
                with open(self.staging, "rb") as f:
                    os.fsync(f.fileno())
            os.replace(self.staging, self.path)
            if self.durable:
                os.fsync(self.dir_fd)
        except OSError as e:
            self.abandon()
            raise StoreError(f"publishing zip archive {self.path} failed: {e.strerror or e}") from e
        except BaseException:
            self.abandon()
            raise
        self.zf = None
        self._release()

    def abandon(self) -> None:
        """Drop the staging file; the archive at the path stays as it was."""
        if self.zf is not None:
            with suppress(OSError, ValueError):  # a broken staging file, a write left open
                self.zf.close()
            self.zf = None
        staging = getattr(self, "staging", None)
        if staging:
            _unlink(staging)
        self._release()

    def _release(self) -> None:
        if self.lock_fd is not None:
            filelock.release(self.dir_fd, self.name, self.lock_fd)
            self.lock_fd = None
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1


def _unlink(path: str) -> None:
    with suppress(FileNotFoundError):
        os.unlink(path)


class ZipStore(Store):
    """Members of a zip archive as objects.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "x.zip")
    >>> z = ZipStore(path, mode="w"); z.set("k", b"v"); z.get("k"), list(z.list())
    (b'v', ['k'])
    >>> z.close(); ZipStore(path).get("k")
    b'v'
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: str = "r",
        *,
        compression: int = zipfile.ZIP_STORED,
        compresslevel: int | None = None,
        durable: bool = False,
    ) -> None:
        super().__init__()
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
        self.path = os.path.abspath(os.fspath(path))
        self.mode = mode
        self.read_only = mode == "r"
        self.durable = bool(durable)
        self.cheap_stat = True  # member information is in memory
        self._lock = threading.RLock()
        self._session: _Session | None = None
        if self.read_only:
            try:
                self._zf: zipfile.ZipFile = zipfile.ZipFile(self.path, "r", allowZip64=True)
            except FileNotFoundError as e:
                raise StoreError(f"zip archive not found: {self.path}") from e
            except (OSError, zipfile.BadZipFile) as e:
                raise StoreError(f"cannot open zip archive {self.path}: {e}") from e
        else:
            self._session = _Session(self.path, mode, compression, compresslevel, self.durable)
            assert self._session.zf is not None
            self._zf = self._session.zf
            self._finalizer = weakref.finalize(self, self._session.publish)
        self._offsets: dict[int, int] = {}  # a member's data offset by its header's

    def __repr__(self) -> str:
        return f"ZipStore({self.path!r}, mode={self.mode!r})"

    def __reduce__(self) -> Any:
        if self.mode != "r":
            raise TypeError("a ZipStore open for writing cannot be pickled")
        return (ZipStore, (self.path, "r"))

    def close(self) -> None:
        """Close the archive; in the writing modes, publish it (one rename)."""
        with self._lock:
            if self._session is not None:
                self._finalizer.detach()
                self._session.publish()
            else:
                self._zf.close()

    def abort(self) -> None:
        """Close a writing store without publishing: the archive at the path stays as it was."""
        with self._lock:
            if self._session is not None:
                self._finalizer.detach()
                self._session.abandon()

    def _info(self, key: str) -> zipfile.ZipInfo | None:
        info = self._zf.NameToInfo.get(key)
        if info is None or info.is_dir():
            return None
        if self._session is not None and key in self._session.deleted:
            return None
        return info

    def _data_offset(self, fd: int, info: zipfile.ZipInfo) -> int:
        off = self._offsets.get(info.header_offset)
        if off is None:
            off = self._offsets[info.header_offset] = data_offset(fd, info)
        return off

    # --- reads ----------------------------------------------------------------------------------------
    reports_versions = True
    reports_sizes = True

    def _fetch(self, merged: list[ReadRequest], versioned: bool) -> Fetched:
        results: list[bytes | None] = []
        versions: list[str | None] = []
        sizes: list[int | None] = []
        inflated: dict[str, bytes] = {}
        with self._lock:
            self._check_open()
            assert self._zf.fp is not None
            self._zf.fp.flush()  # a writer's members, on disk for the positional reads
            fd = self._zf.fp.fileno()
            for key, req in merged:
                info = self._info(key)
                versions.append(None if info is None else _version(info))
                sizes.append(None if info is None else info.file_size)
                if info is None:
                    results.append(None)
                    continue
                try:
                    results.append(self._read(fd, info, key, req, inflated))
                except StoreError:
                    raise
                except (OSError, zipfile.BadZipFile, RuntimeError, EOFError) as e:
                    raise StoreError(
                        f"reading from zip archive failed: {e}", key=key, byte_range=legacy_bounds(req)
                    ) from e
        if not versioned:
            return Fetched(results)
        return Fetched(results, versions, sizes=sizes)

    def _read(
        self, fd: int, info: zipfile.ZipInfo, key: str, req: ByteRequest, inflated: dict[str, bytes]
    ) -> bytes:
        if info.compress_type == zipfile.ZIP_STORED and not info.flag_bits & 0x1:
            off, end = req.bounds(info.file_size)
            if end <= off:
                return b""
            data = os.pread(fd, end - off, self._data_offset(fd, info) + off)
            if len(data) != end - off:
                raise StoreError("zip member truncated", key=key, byte_range=legacy_bounds(req))
            return data
        whole = inflated.get(key)
        if whole is None:
            whole = inflated[key] = read_member(fd, info, self._data_offset(fd, info))
        if type(req) is Whole:
            return whole
        off, end = req.bounds(len(whole))
        return whole[off:end]

    def _check_open(self) -> None:
        if self._session is not None:
            if self._session.zf is None:
                raise StoreError(f"the zip archive {self.path} is closed")
            if self._session.zf is not self._zf:  # compaction opened a new staging file
                self._zf, self._offsets = self._session.zf, {}
        if self._zf.fp is None:
            raise StoreError(f"the zip archive {self.path} is closed")

    def stat(self, key: str) -> tuple[int, float | int | str] | None:
        key = normalize_key(key)
        self.stats.add(size_queries=1)
        info = self._info(key)
        return None if info is None else (info.file_size, _version(info))

    # --- writes ---------------------------------------------------------------------------------------
    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        key = self._check_key_for_write(key, "write")
        data = as_bytes(value)
        with self._lock:
            self._check_open()
            session = self._session
            assert session is not None
            try:
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", "Duplicate name", UserWarning)
                    self._zf.writestr(key, data)
                session.deleted.discard(key)
                dead, live = session.dead_bytes()
                if dead > max(live, COMPACT_MIN_BYTES):
                    session.compact()
                    self._check_open()  # the compacted file's directory
            except (OSError, ValueError) as e:
                raise StoreError(f"writing to zip archive failed: {e}", key=key) from e
        self.stats.add(writes=1, bytes_written=len(data))

    def delete(self, key: str) -> bool:
        """Drop a member (its bytes are reclaimed when the archive is published)."""
        key = normalize_key(key)
        self._require_writable(key, "delete")
        with self._lock:
            self._check_open()
            self.stats.add(deletes=1)
            if self._info(key) is None:
                return False
            assert self._session is not None
            self._session.deleted.add(key)
            return True

    # --- temporary files ------------------------------------------------------------------------------
    def list_temporary(self, prefix: str = "") -> list[str]:
        """Paths of stale staging and lock files beside the archive (``prefix`` is ignored)."""
        folder, name = os.path.split(self.path)
        own = self._session.staging if self._session is not None and self._session.zf is not None else None
        out = []
        try:
            entries = sorted(os.listdir(folder))
        except OSError:
            return []
        for f in entries:
            full = os.path.join(folder, f)
            stale_staging = f.startswith(f".{name}.") and f.endswith(TEMP_SUFFIX)
            stale_lock = f == filelock.lock_name(name) and self._session is None
            if (stale_staging or stale_lock) and full != own:
                out.append(full)
        return out

    def remove_temporary(self, keys: Iterable[str]) -> list[str]:
        allowed = set(self.list_temporary())
        removed = []
        for path in keys:
            if path not in allowed:
                raise InvalidKeyError("not a stale temporary file of this archive", key=path)
            folder, f = os.path.split(path)
            if f.endswith(filelock.LOCK_SUFFIX):
                dfd = os.open(folder, os.O_RDONLY)
                try:
                    if not filelock.remove_stale(dfd, f):
                        continue
                finally:
                    os.close(dfd)
            else:
                _unlink(path)
            removed.append(path)
        return removed

    # --- listing --------------------------------------------------------------------------------------
    def list(self, prefix: str = "") -> Iterator[str]:
        prefix = normalize_key(prefix)
        self.stats.add(lists=1)
        under = f"{prefix}/" if prefix else ""
        with self._lock:
            names = {n for n in self._zf.NameToInfo if not n.endswith("/")}
            if self._session is not None:
                names -= self._session.deleted
        return iter(sorted(n for n in names if n.startswith(under)))
