"""A store over a directory of local files: positional reads on the I/O threads, atomic writes (a
temporary file renamed), keys confined to the root at every use (:mod:`.local_paths`), cross-process
locks for read-modify-writes (:mod:`.filelock`).
"""

from __future__ import annotations

import builtins
import errno
import os
import secrets
import stat as _stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager, suppress
from functools import partial
from itertools import groupby
from typing import Any

from .._threads import get_threads, io_threads
from ..errors import InvalidKeyError, StoreError
from . import filelock
from ._util import as_byte_view
from .base import (
    DEFAULT_COALESCE_GAP,
    Fetched,
    OpensReaders,
    ReadRequest,
    Store,
    normalize_key,
)
from .coalesce import DEFAULT_MAX_COALESCED_SIZE
from .local_files import (
    TEMP_FLAGS,
    TEMP_SUFFIX,
    FileReader,
    file_version,
    fstat_of,
    oserror_message,
    read_one,
    require_file,
    writev_all,
)
from .local_paths import RootedPaths

__all__ = ["LocalStore", "FileReader", "TEMP_SUFFIX"]


class LocalStore(OpensReaders, RootedPaths, Store):
    """Files under ``root`` (created on the first write). ``max_workers``: a batch's threads (default:
    altarr's pool size); ``durable``: fsync each written file and its folder before returning. The
    :meth:`stat` version token is ``"<mtime_ns>:<inode>"`` (every write makes a new inode).

    >>> import tempfile
    >>> s = LocalStore(tempfile.mkdtemp())
    >>> s.set("x/y", b"abc"); s.size("x/y"), list(s.list())
    (3, ['x/y'])
    """

    cheap_stat = True
    reports_versions = True
    reports_sizes = True

    def __init__(
        self,
        root: str | os.PathLike[str],
        read_only: bool = False,
        max_workers: int | None = None,
        *,
        durable: bool = False,
        coalesce_gap: int = DEFAULT_COALESCE_GAP,
        max_coalesced_size: int = DEFAULT_MAX_COALESCED_SIZE,
    ) -> None:
        Store.__init__(self)
        RootedPaths.__init__(self, root)
        self.read_only = bool(read_only)
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        self._max_workers = max_workers
        self.durable = bool(durable)
        self.coalesce_gap = coalesce_gap
        self.max_coalesced_size = max_coalesced_size

    @property
    def max_workers(self) -> int:
        return self._max_workers or get_threads()

    @property
    def identity(self) -> object:
        return ("local", self._real_root)

    def __repr__(self) -> str:
        ro = ", read_only=True" if self.read_only else ""
        return f"LocalStore({self.root!r}{ro})"

    def __reduce__(self) -> tuple[Callable[..., LocalStore], tuple[object, ...]]:
        tuning = {"coalesce_gap": self.coalesce_gap, "max_coalesced_size": self.max_coalesced_size}
        options: dict[str, Any] = {"max_workers": self._max_workers, "durable": self.durable, **tuning}
        return (partial(LocalStore, **options), (self.root, self.read_only))

    def open_reader(self, key: str) -> FileReader | None:
        """One open file to read many ranges of ``key`` from, all of one version (``None`` if missing).

        >>> import tempfile
        >>> s = LocalStore(tempfile.mkdtemp()); s.set("k", b"0123456789")
        >>> from altarr.stores import Range
        >>> with s.open_reader("k") as r:
        ...     r.read(Range(2, 5)), r.read(Range(8, 10))
        (b'234', b'89')
        """
        key = normalize_key(key)
        fd = self._open(key)
        if fd is None:
            return None
        try:
            st = fstat_of(fd, key)
            require_file(st)
        except BaseException as e:
            os.close(fd)
            if isinstance(e, OSError):
                raise StoreError(oserror_message("opening", e), key=key) from e
            raise
        return FileReader(fd, key, file_version(st), self.stats)

    def _executor(self) -> ThreadPoolExecutor:
        return io_threads(self.max_workers)

    # --- reads ----------------------------------------------------------------------------------------
    def _fetch(self, merged: list[ReadRequest], versioned: bool) -> Fetched:
        """The requests in runs (a key's together) spread over the I/O threads, each run opening each of
        its keys once; one request, or one thread, runs inline (the pool's runs and wait: ~8 us a call)."""
        n = len(merged)
        data: list[bytes | None] = [None] * n
        stats: list[os.stat_result | None] | None = [None] * n if versioned else None
        if n == 1 or self.max_workers == 1:
            self._read_run(merged, range(n), data, stats)
        else:
            step = -(-n // min(n, 2 * self.max_workers))
            runs = [range(i, min(i + step, n)) for i in range(0, n, step)]
            futures = [self._executor().submit(self._read_run, merged, run, data, stats) for run in runs[1:]]
            try:
                self._read_run(merged, runs[0], data, stats)
            finally:
                wait(futures)
            for f in futures:
                f.result()
        if stats is None:
            return Fetched(data)
        versions = [None if st is None else file_version(st) for st in stats]
        return Fetched(data, versions, sizes=[None if st is None else st.st_size for st in stats])

    def _read_run(self, merged: list[ReadRequest], run: range, data: list, stats: list | None) -> None:
        """The requests at positions ``run`` into ``data`` (and the file's ``stat`` into ``stats``)."""
        for key, positions in groupby(run, key=lambda m: merged[m][0]):
            fd = self._open(key)
            if fd is None:
                continue
            try:
                st = None if stats is None else fstat_of(fd, key)
                for m in positions:
                    if stats is not None:
                        stats[m] = st
                    data[m] = read_one(fd, key, merged[m][1])
            finally:
                os.close(fd)

    def stat(self, key: str) -> tuple[int, float | int | str] | None:
        key = normalize_key(key)
        self.stats.add(size_queries=1)
        st = self._lstat(key)
        return None if st is None else (st.st_size, file_version(st))

    # --- writes ---------------------------------------------------------------------------------------
    concurrent_writes = "locked" if filelock.AVAILABLE else "single-writer"

    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        key = self._check_key_for_write(key, "write")
        mvs = [as_byte_view(p) for p in value] if isinstance(value, list | tuple) else [as_byte_view(value)]
        nbytes = sum(m.nbytes for m in mvs)
        name = key.rpartition("/")[2]
        tmp = f".{name[:100]}.{secrets.token_hex(6)}{TEMP_SUFFIX}"
        dfd, fd = self._create_in_folder(
            key, lambda folder: os.open(tmp, TEMP_FLAGS, 0o666, dir_fd=folder), "creating a temporary file"
        )
        try:
            try:
                try:
                    writev_all(fd, mvs)
                    if self.durable:
                        os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException as e:
                with suppress(OSError):
                    os.unlink(tmp, dir_fd=dfd)
                if isinstance(e, IsADirectoryError):  # rename never replaces a folder: say so
                    raise StoreError("writing failed: the key names a folder, not an object", key=key) from e
                if isinstance(e, OSError):
                    raise StoreError(oserror_message("writing", e), key=key) from e
                raise
            if self.durable:
                try:
                    os.fsync(dfd)
                except OSError as e:  # pragma: no cover - depends on the file system
                    raise StoreError(oserror_message("fsync of the folder", e), key=key) from e
        finally:
            os.close(dfd)
        self.stats.add(writes=1, bytes_written=nbytes)

    def set_many(self, items: Sequence[tuple[str, bytes | bytearray | memoryview]]) -> None:
        if len(items) <= 1 or self.max_workers == 1:
            for key, value in items:
                self.set(key, value)
            return
        self._require_writable(None, "write")
        futures = [self._executor().submit(self.set, key, value) for key, value in items]
        wait(futures)
        for f in futures:
            f.result()

    def delete(self, key: str) -> bool:
        key = self._check_key_for_write(key, "delete")
        dfd = self._parent_fd(key)
        self.stats.add(deletes=1)
        if dfd is None:
            return False
        try:
            os.unlink(key.rpartition("/")[2], dir_fd=dfd)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return False
        except OSError as e:
            if e.errno == errno.EPERM:  # macOS: unlink(dir) -> EPERM
                try:
                    if _stat.S_ISDIR(os.stat(key.rpartition("/")[2], dir_fd=dfd).st_mode):
                        return False
                except OSError:
                    pass
            raise StoreError(oserror_message("deleting", e), key=key) from e
        finally:
            os.close(dfd)
        self._prune(key)
        return True

    def _prune(self, key: str) -> None:
        """Remove now-empty folders above ``key``, up to (not including) the root."""
        parent_key = key.rpartition("/")[0]
        while parent_key:
            dfd = self._parent_fd(parent_key)
            if dfd is None:
                break
            try:
                os.rmdir(parent_key.rpartition("/")[2], dir_fd=dfd)
            except OSError:
                break
            finally:
                os.close(dfd)
            parent_key = parent_key.rpartition("/")[0]

    @contextmanager
    def exclusive(self, keys: Iterable[str]) -> Iterator[None]:
        """Hold the cross-process lock of each of ``keys`` (sorted: no deadlock) for a read-modify-write.

        >>> import tempfile
        >>> s = LocalStore(tempfile.mkdtemp())
        >>> with s.exclusive(["a/k"]):
        ...     s.set("a/k", (s.get("a/k") or b"") + b"+")
        >>> s.get("a/k"), list(s.list())
        (b'+', ['a/k'])
        """
        if self.read_only or not filelock.AVAILABLE:
            yield
            return
        held: list[tuple[int, str, int, str]] = []
        try:
            for key in sorted({normalize_key(k) for k in keys} - {""}):
                held.append(self._lock(key))
            yield
        finally:
            for dfd, name, fd, key in reversed(held):
                try:
                    filelock.release(dfd, name, fd)
                finally:
                    os.close(dfd)
                self._prune(key)  # the lock file may have been the last entry of a new folder

    def list_temporary(self, prefix: str = "") -> list[str]:
        """Leftover ``.altarr-tmp``/``.altarr-lock`` files under ``prefix`` (run when no writer is active).

        >>> import os, tempfile
        >>> d = tempfile.mkdtemp(); s = LocalStore(d)
        >>> s.set("a/k", b"1"); open(os.path.join(d, "a", ".k.1f2e.altarr-tmp"), "wb").close()
        >>> s.list_temporary(), list(s.list())
        (['a/.k.1f2e.altarr-tmp'], ['a/k'])
        >>> s.remove_temporary(s.list_temporary()), s.list_temporary()
        (['a/.k.1f2e.altarr-tmp'], [])
        """
        prefix, top = self._folder(prefix)
        self.stats.add(lists=1)
        return builtins.list(self._walk(prefix, top, temporary=True))

    def remove_temporary(self, keys: Iterable[str]) -> list[str]:
        """Remove leftover temporary files (a held lock file stays); returns the keys removed."""
        removed = []
        for key in keys:
            key = normalize_key(key)
            self._require_writable(key, "remove temporary files")
            name = key.rpartition("/")[2]
            if not name.startswith(".") or not name.endswith((TEMP_SUFFIX, filelock.LOCK_SUFFIX)):
                raise InvalidKeyError("not a temporary file of altarr", key=key)
            dfd = self._parent_fd(key)
            if dfd is None:
                continue
            try:
                if name.endswith(TEMP_SUFFIX):
                    try:
                        os.unlink(name, dir_fd=dfd)
                    except FileNotFoundError:
                        continue
                elif not filelock.remove_stale(dfd, name):
                    continue
            except OSError as e:
                raise StoreError(oserror_message("removing a temporary file", e), key=key) from e
            finally:
                os.close(dfd)
            removed.append(key)
            self.stats.add(deletes=1)
            self._prune(key)
        return removed

    def delete_many(self, keys: Sequence[str]) -> list[bool]:
        if len(keys) <= 1 or self.max_workers == 1:
            return [self.delete(k) for k in keys]
        self._require_writable(None, "delete")
        return list(self._executor().map(self.delete, keys))

    # --- listing --------------------------------------------------------------------------------------
    def list(self, prefix: str = "") -> Iterator[str]:
        prefix, top = self._folder(prefix)
        self.stats.add(lists=1)
        return self._walk(prefix, top)

    def _walk(self, prefix: str, top: str, temporary: bool = False) -> Iterator[str]:

        def onerror(e: OSError) -> None:
            if not isinstance(e, FileNotFoundError | NotADirectoryError):
                raise StoreError(oserror_message("listing", e), key=prefix or None) from e

        n = len(top) + 1
        for dirpath, dirnames, filenames in os.walk(top, onerror=onerror):
            dirnames.sort()
            rel = dirpath[n:]
            if os.sep != "/":  # pragma: no cover - Windows
                rel = rel.replace(os.sep, "/")
            parts = [p for p in (prefix, rel) if p]
            base = "/".join(parts) + "/" if parts else ""
            for f in sorted(filenames):
                if f.endswith((TEMP_SUFFIX, filelock.LOCK_SUFFIX)) == temporary:
                    yield base + f

    def list_dir(self, prefix: str = "") -> tuple[builtins.list[str], builtins.list[str]]:
        prefix, top = self._folder(prefix)
        self.stats.add(lists=1)
        keys: list[str] = []
        dirs: list[str] = []
        try:
            with os.scandir(top) as it:
                for entry in it:
                    if entry.is_dir():
                        dirs.append(entry.name)
                    elif entry.is_file() and not entry.name.endswith((TEMP_SUFFIX, filelock.LOCK_SUFFIX)):
                        keys.append(entry.name)
        except (FileNotFoundError, NotADirectoryError):
            return [], []
        except OSError as e:
            raise StoreError(oserror_message("listing", e), key=prefix or None) from e
        return sorted(keys), sorted(dirs)
