"""A store over a directory of the local file system.

Keys map to files under the root (``a/b/c`` -> ``<root>/a/b/c``). Reads are positional (``os.pread``
on a file descriptor, no seek, no buffered file object), and a batch runs concurrently on one thread pool
per store (created on first use, shut down by :meth:`LocalStore.close`); a batch of one request runs
inline. Writes go to a temporary file in the target's directory, optionally fsync'ed, then
``os.replace`` it over the target (atomic: readers see the old or the new object). A key can never
resolve outside the root: keys are normalized, directories are checked with ``realpath`` (once each), and
a symlink as the last component is opened only if it points inside the root.

Example:
    >>> import tempfile
    >>> s = LocalStore(tempfile.mkdtemp())
    >>> s.set("a/b", b"0123456789")
    >>> s.get_ranges([("a/b", 2, 4), ("a/b", -3, None), ("nope", None, None)])
    [b'23', b'789', None]
"""

from __future__ import annotations

import errno
import os
import secrets
import stat as _stat
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from ..errors import InvalidKeyError, StoreError
from ._util import as_byte_view, default_workers, resolve_range
from .base import DEFAULT_COALESCE_GAP, RangeRequest, Store, VersionedReads, normalize_key
from .coalesce import DEFAULT_MAX_COALESCED_SIZE, coalesce_requests

__all__ = ["LocalStore", "FileReader", "TEMP_SUFFIX"]

#: Temporary files of in-flight writes end with this suffix; listings skip them.
TEMP_SUFFIX = ".altarr-tmp"

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_READ_FLAGS = os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | getattr(os, "O_BINARY", 0)
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_CLOEXEC | getattr(os, "O_BINARY", 0)
# Bounded reads longer than this are clipped to the file size first (one fstat), so a request such as
# (key, 0, 2**62) does not allocate its nominal length.
_CLIP_ABOVE = 1 << 20


def _oserror_message(what: str, e: OSError) -> str:
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


def _read_fd(fd: int, start: int | None, stop: int | None) -> bytes | None:
    """One merged request (see :mod:`.coalesce` for the four shapes) on an open descriptor.

    ``None`` when the descriptor is not a regular file (the key names a folder)."""
    if start is not None and stop is not None:
        n = stop - start
        if 0 < n <= _CLIP_ABOVE:
            try:
                return os.pread(fd, n, start)
            except IsADirectoryError:
                return None
    st = os.fstat(fd)
    if not _stat.S_ISREG(st.st_mode):
        return None
    off, end = resolve_range(start, stop, st.st_size)
    if end <= off:
        return b""
    return _pread_all(fd, end - off, off)


def _version(st: os.stat_result) -> str:
    """The version token of a file: every write replaces the file by a new inode, so this changes even
    when two writes fall within the file system's timestamp granularity."""
    return f"{st.st_mtime_ns}:{st.st_ino}"


def _write_all(fd: int, mv: memoryview) -> None:
    off, n = 0, mv.nbytes
    while off < n:
        off += os.write(fd, mv[off:])


def _writev_all(fd: int, parts: list[memoryview]) -> None:
    """Write ``parts`` back to back with as few ``writev`` calls as the OS allows (no joined copy)."""
    parts = [p for p in parts if p.nbytes]
    while parts:
        n = os.writev(fd, parts[:1024])  # IOV_MAX
        while parts and n >= parts[0].nbytes:
            n -= parts[0].nbytes
            parts.pop(0)
        if n:
            parts[0] = parts[0][n:]


class FileReader:
    """An open file of a :class:`LocalStore` for ranged reads (see :meth:`LocalStore.open_reader`).

    ``version`` is the file's version token (as :meth:`LocalStore.stat` gives it) taken from the open
    descriptor. :meth:`read` is safe to call from several threads at once (``pread``); each call counts
    as one read in the store's stats."""

    __slots__ = ("fd", "key", "version", "_stats")

    def __init__(self, fd: int, key: str, version: str, stats: Any) -> None:
        self.fd, self.key, self.version, self._stats = fd, key, version, stats

    def read(self, start: int | None, stop: int | None) -> bytes:
        """The bytes ``[start, stop)`` (fewer at the end of the file); a negative ``start`` with ``stop``
        ``None`` is a suffix, ``start`` ``None`` the whole file (the range shapes of ``get_ranges``)."""
        data = LocalStore._read_one(self.fd, self.key, start, stop) or b""
        self._stats.add(reads=1, bytes_read=len(data))
        return data

    def read_into(self, start: int, buffer: Any) -> int:
        """Read ``len(buffer)`` bytes at ``start`` into the writable ``buffer`` (no allocation: callers
        reuse one buffer per thread); returns how many bytes were read (fewer only at end of file)."""
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
                _oserror_message("reading", e), key=self.key, byte_range=(start, start + n)
            ) from e
        self._stats.add(reads=1, bytes_read=got)
        return got

    def count_reads(self, reads: int, nbytes: int) -> None:
        """Count ``reads`` ranged reads of ``nbytes`` in all that were made on :attr:`fd` directly (the
        native kernel reads chunk ranges itself), as :meth:`read_into` counts its own."""
        self._stats.add(reads=reads, bytes_read=nbytes)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> FileReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalStore(VersionedReads, Store):
    """Files under a root directory. See the module docstring.

    Parameters: ``root`` (created on the first write), ``read_only`` (writes raise ``ReadOnlyError``),
    ``max_workers`` (thread pool size for batches; default: the cores available), ``fsync`` (fsync each
    written file and its directory before returning), ``coalesce_gap``/``max_coalesced_size`` (request
    merging, see :func:`~altarr.stores.coalesce.coalesce_ranges`).

    The :meth:`stat` version token is ``"<mtime_ns>:<inode>"``: every write replaces the file by a new
    inode, so the token changes even when two writes fall within the file system's timestamp granularity.

    >>> import tempfile
    >>> s = LocalStore(tempfile.mkdtemp())
    >>> s.set("x/y", b"abc"); s.size("x/y"), list(s.list())
    (3, ['x/y'])
    """

    #: ``stat`` is a local system call: cheap enough to validate cached data on every use.
    cheap_stat = True

    def __init__(
        self,
        root: str | os.PathLike[str],
        read_only: bool = False,
        max_workers: int | None = None,
        *,
        fsync: bool = False,
        coalesce_gap: int = DEFAULT_COALESCE_GAP,
        max_coalesced_size: int = DEFAULT_MAX_COALESCED_SIZE,
    ) -> None:
        super().__init__()
        self.root = os.path.abspath(os.path.expanduser(os.fspath(root)))
        self.read_only = bool(read_only)
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        self.max_workers = max_workers or default_workers()
        self.fsync = bool(fsync)
        self.coalesce_gap = coalesce_gap
        self.max_coalesced_size = max_coalesced_size
        self._root_sep = self.root.rstrip(os.sep) + os.sep
        self._real_root = os.path.realpath(self.root)
        self._real_root_sep = self._real_root.rstrip(os.sep) + os.sep
        # Parent folders (as keys) already checked to be real directories inside the root.
        self._safe_dirs: set[str] = set()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = 0
        self._pool_lock = threading.Lock()

    @property
    def identity(self) -> object:
        return ("local", self._real_root)

    def __repr__(self) -> str:
        ro = ", read_only=True" if self.read_only else ""
        return f"LocalStore({self.root!r}{ro})"

    def __reduce__(self):
        kwargs = {
            "read_only": self.read_only,
            "max_workers": self.max_workers,
            "fsync": self.fsync,
            "coalesce_gap": self.coalesce_gap,
            "max_coalesced_size": self.max_coalesced_size,
        }
        return (_rebuild, (self.root, kwargs))

    # --- paths and safety -----------------------------------------------------------------------------
    def _fspath(self, key: str) -> str:
        if not key:
            return self.root
        if os.sep != "/":  # pragma: no cover - Windows
            key = key.replace("/", os.sep)
        return self._root_sep + key

    def _check_inside(self, path: str, key: str) -> None:
        real = os.path.realpath(path)
        if real != self._real_root and not real.startswith(self._real_root_sep):
            raise InvalidKeyError(
                f"key resolves outside the store root {self.root!r} (via a symlink)", key=key
            )

    def _check_parent(self, key: str, path: str, create: bool = False) -> None:
        """Check that the folder holding ``key`` resolves inside the root; create it if asked."""
        parent_key = key.rpartition("/")[0]
        if parent_key in self._safe_dirs:
            return
        parent = os.path.dirname(path)
        self._check_inside(parent, key)
        if create:
            try:
                os.makedirs(parent, exist_ok=True)
            except OSError as e:
                raise StoreError(_oserror_message(f"creating folder {parent!r}", e), key=key) from e
            self._check_inside(parent, key)  # a racing symlink swap
        if os.path.isdir(parent):
            self._safe_dirs.add(parent_key)

    def _open(self, key: str) -> int | None:
        """A read descriptor for ``key``, or ``None`` if it does not exist."""
        path = self._fspath(key)
        self._check_parent(key, path)
        try:
            return os.open(path, _READ_FLAGS)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            if e.errno != errno.ELOOP:
                raise StoreError(_oserror_message("opening", e), key=key) from e
        # The last component is a symlink: follow it only if it stays inside the root.
        self._check_inside(path, key)
        try:
            return os.open(path, _READ_FLAGS & ~_O_NOFOLLOW)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            raise StoreError(_oserror_message("opening", e), key=key) from e

    def _lstat(self, key: str) -> os.stat_result | None:
        path = self._fspath(key)
        self._check_parent(key, path)
        follow = False
        while True:
            try:
                st = os.stat(path, follow_symlinks=follow)
            except (FileNotFoundError, NotADirectoryError):
                return None
            except OSError as e:
                raise StoreError(_oserror_message("stat", e), key=key) from e
            if follow or not _stat.S_ISLNK(st.st_mode):
                return st if _stat.S_ISREG(st.st_mode) else None
            self._check_inside(path, key)  # a symlink: follow it only inside the root
            follow = True

    def open_reader(self, key: str) -> FileReader | None:
        """One open file to read many ranges of ``key`` from (``None`` if it does not exist).

        The engine opens each shard once per call and reads every chunk's range from it, inside the
        chunk's decode task: one ``open`` per shard instead of per chunk, and every range comes from the
        same version of the file (a writer replaces files by rename, so an open descriptor keeps seeing
        the file it opened). Close it (or use it as a context manager) when done.

        >>> import tempfile
        >>> s = LocalStore(tempfile.mkdtemp()); s.set("k", b"0123456789")
        >>> with s.open_reader("k") as r:
        ...     r.read(2, 5), r.read(8, 10)
        (b'234', b'89')
        """
        key = normalize_key(key)
        fd = self._open(key)
        if fd is None:
            return None
        try:
            st = self._fstat(fd, key)
        except BaseException:
            os.close(fd)
            raise
        if not _stat.S_ISREG(st.st_mode):
            os.close(fd)
            return None
        return FileReader(fd, key, _version(st), self.stats)

    # --- pool -----------------------------------------------------------------------------------------
    def _executor(self) -> ThreadPoolExecutor:
        pool = self._pool
        if pool is None or self._pool_pid != os.getpid():
            with self._pool_lock:
                pool = self._pool
                if pool is None or self._pool_pid != os.getpid():  # none yet, or inherited through fork
                    pool = self._pool = ThreadPoolExecutor(
                        self.max_workers, thread_name_prefix="altarr-local"
                    )
                    self._pool_pid = os.getpid()
        return pool

    def close(self) -> None:
        """Shut down the thread pool (a later batch starts a new one)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None and self._pool_pid == os.getpid():
            pool.shutdown(wait=True)

    # --- reads ----------------------------------------------------------------------------------------
    def _read_group(self, key: str, items: list, results: list, versions: list | None) -> None:
        """Read the merged requests ``items`` = ``[(m, start, stop), ...]`` of one key into ``results[m]``
        (and the file's version token into ``versions[m]`` when asked)."""
        fd = self._open(key)
        if fd is None:
            return
        try:
            if versions is not None:
                token = _version(self._fstat(fd, key))
                for m, _, _ in items:
                    versions[m] = token
            for m, s, e in items:
                results[m] = self._read_one(fd, key, s, e)
        finally:
            os.close(fd)

    @staticmethod
    def _fstat(fd: int, key: str) -> os.stat_result:
        try:
            return os.fstat(fd)
        except OSError as e:  # pragma: no cover - fstat of an open descriptor does not fail in practice
            raise StoreError(_oserror_message("fstat", e), key=key) from e

    @staticmethod
    def _read_one(fd: int, key: str, start: int | None, stop: int | None) -> bytes | None:
        try:
            return _read_fd(fd, start, stop)
        except OSError as e:
            raise StoreError(_oserror_message("reading", e), key=key, byte_range=(start, stop)) from e

    def _get_ranges(self, requests: Sequence[RangeRequest], versioned: bool) -> tuple[list, list]:
        """The ranges, and with ``versioned`` the version token (as :meth:`stat` gives it) of the file
        each came from, taken from the same open file (``None`` for a missing key)."""
        if not requests:
            return [], []
        plan = coalesce_requests(requests, self.coalesce_gap, self.max_coalesced_size)
        merged = plan.requests
        results: list[bytes | None] = [None] * len(merged)
        versions: list | None = [None] * len(merged) if versioned else None
        if len(merged) == 1:
            key, s, e = merged[0]
            self._read_group(key, [(0, s, e)], results, versions)
        else:
            groups: dict[str, list[tuple[int, int | None, int | None]]] = {}
            for m, (key, s, e) in enumerate(merged):
                groups.setdefault(key, []).append((m, s, e))
            if self.max_workers == 1:
                for key, items in groups.items():
                    self._read_group(key, items, results, versions)
            elif len(groups) == len(merged) or len(groups) >= self.max_workers:
                self._read_by_key(groups, results, versions)
            else:
                self._read_by_request(groups, results, versions)
        self.stats.add(reads=len(merged), bytes_read=sum(len(r) for r in results if r is not None))
        out = plan.split(results, views=versioned)  # the engine's reads take zero-copy slices
        return out, ([] if versions is None else plan.versions(out, versions))

    def _read_keys(self, keys: list[str], groups: dict, results: list, versions: list | None) -> None:
        for key in keys:
            self._read_group(key, groups[key], results, versions)

    def _read_by_key(self, groups: dict, results: list, versions: list | None) -> None:
        """Many keys: a few tasks per worker, each reading a contiguous run of keys (a task per key would
        cost more in thread hand-offs than reading a small file)."""
        keys = list(groups)
        n_tasks = min(len(keys), 2 * self.max_workers)
        step = -(-len(keys) // n_tasks)
        runs = [keys[i : i + step] for i in range(0, len(keys), step)]
        futures = [
            self._executor().submit(self._read_keys, run, groups, results, versions) for run in runs[1:]
        ]
        try:
            self._read_keys(runs[0], groups, results, versions)  # the calling thread takes a share too
        finally:
            wait(futures)
        for f in futures:
            f.result()

    def _read_by_request(self, groups: dict, results: list, versions: list | None) -> None:
        """Few keys, many requests each: open each file once, read its ranges in parallel runs."""
        fds: dict[str, int | None] = {}
        try:
            for key, items in groups.items():
                fd = fds[key] = self._open(key)
                if fd is not None and versions is not None:
                    token = _version(self._fstat(fd, key))
                    for m, _, _ in items:
                        versions[m] = token
            work = [(fds[key], key, m, s, e) for key, items in groups.items() for m, s, e in items]
            n_tasks = min(len(work), 2 * self.max_workers)
            step = -(-len(work) // n_tasks)
            runs = [work[i : i + step] for i in range(0, len(work), step)]
            futures = [self._executor().submit(self._read_run, run, results) for run in runs[1:]]
            try:
                self._read_run(runs[0], results)
            finally:
                wait(futures)
        finally:
            for fd in fds.values():
                if fd is not None:
                    os.close(fd)
        for f in futures:
            f.result()

    def _read_run(self, run: list, results: list) -> None:
        for fd, key, m, s, e in run:
            results[m] = None if fd is None else self._read_one(fd, key, s, e)

    def size(self, key: str) -> int | None:
        key = normalize_key(key)
        self.stats.add(size_queries=1)
        st = self._lstat(key)
        return None if st is None else st.st_size

    def stat(self, key: str) -> tuple[int, float | int | str] | None:
        key = normalize_key(key)
        self.stats.add(size_queries=1)
        st = self._lstat(key)
        return None if st is None else (st.st_size, _version(st))

    # --- writes ---------------------------------------------------------------------------------------
    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        key = normalize_key(key)
        self._require_writable(key, "write")
        if not key:
            raise InvalidKeyError("the empty key names the store root, not an object", key=key)
        # an object given in parts (a shard's chunks and index) is written with writev, never joined
        mvs = [as_byte_view(p) for p in value] if isinstance(value, list | tuple) else [as_byte_view(value)]
        nbytes = sum(m.nbytes for m in mvs)
        path = self._fspath(key)
        parent = os.path.dirname(path)
        name = os.path.basename(path)
        tmp = os.path.join(parent, f".{name[:100]}.{secrets.token_hex(6)}{TEMP_SUFFIX}")
        self._check_parent(key, path, create=True)
        fd = None
        for attempt in range(3):
            try:
                fd = os.open(tmp, _TEMP_FLAGS, 0o666)
                break
            except FileNotFoundError as e:  # the folder was pruned by a concurrent delete
                if attempt == 2:
                    raise StoreError(_oserror_message("creating a temporary file", e), key=key) from e
                self._safe_dirs.discard(key.rpartition("/")[0])
                self._check_parent(key, path, create=True)
            except OSError as e:
                raise StoreError(_oserror_message("creating a temporary file", e), key=key) from e
        assert fd is not None
        try:
            try:
                if len(mvs) == 1:
                    _write_all(fd, mvs[0])
                else:
                    _writev_all(fd, mvs)
                if self.fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except BaseException as e:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            if isinstance(e, OSError):
                raise StoreError(_oserror_message("writing", e), key=key) from e
            raise
        if self.fsync:
            self._fsync_dir(parent, key)
        self.stats.add(writes=1, bytes_written=nbytes)

    @staticmethod
    def _fsync_dir(path: str, key: str) -> None:
        try:
            dfd = os.open(path, os.O_RDONLY | _O_CLOEXEC)
        except OSError:  # pragma: no cover - platforms without directory descriptors
            return
        try:
            os.fsync(dfd)
        except OSError as e:  # pragma: no cover - depends on the file system
            raise StoreError(_oserror_message("fsync of the folder", e), key=key) from e
        finally:
            os.close(dfd)

    def set_many(self, items: Sequence[tuple[str, bytes | bytearray | memoryview]]) -> None:
        """Write many objects concurrently on the store's thread pool (each write atomic)."""
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
        key = normalize_key(key)
        self._require_writable(key, "delete")
        if not key:
            raise InvalidKeyError("the empty key names the store root, not an object", key=key)
        path = self._fspath(key)
        self._check_parent(key, path)
        self.stats.add(deletes=1)
        try:
            os.unlink(path)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return False
        except OSError as e:
            if e.errno == errno.EPERM and os.path.isdir(path):  # macOS: unlink(dir) -> EPERM
                return False
            raise StoreError(_oserror_message("deleting", e), key=key) from e
        self._prune(key)
        return True

    def _prune(self, key: str) -> None:
        """Remove now-empty folders above ``key``, up to (not including) the root."""
        parent_key = key.rpartition("/")[0]
        while parent_key:
            try:
                os.rmdir(self._fspath(parent_key))
            except OSError:
                break
            self._safe_dirs.discard(parent_key)
            parent_key = parent_key.rpartition("/")[0]

    def delete_many(self, keys: Sequence[str]) -> list[bool]:
        if len(keys) <= 1 or self.max_workers == 1:
            return [self.delete(k) for k in keys]
        self._require_writable(None, "delete")
        return list(self._executor().map(self.delete, keys))

    # --- listing --------------------------------------------------------------------------------------
    def _folder(self, prefix: str) -> tuple[str, str]:
        prefix = normalize_key(prefix)
        top = self._fspath(prefix)
        if prefix:
            self._check_inside(top, prefix)
        return prefix, top

    def list(self, prefix: str = "") -> Iterator[str]:
        prefix, top = self._folder(prefix)
        self.stats.add(lists=1)
        return self._walk(prefix, top)

    def _walk(self, prefix: str, top: str) -> Iterator[str]:
        def onerror(e: OSError) -> None:
            if not isinstance(e, FileNotFoundError | NotADirectoryError):
                raise StoreError(_oserror_message("listing", e), key=prefix or None) from e

        n = len(top) + 1
        for dirpath, dirnames, filenames in os.walk(top, onerror=onerror):
            dirnames.sort()
            rel = dirpath[n:]
            if os.sep != "/":  # pragma: no cover - Windows
                rel = rel.replace(os.sep, "/")
            parts = [p for p in (prefix, rel) if p]
            base = "/".join(parts) + "/" if parts else ""
            for f in sorted(filenames):
                if not f.endswith(TEMP_SUFFIX):
                    yield base + f

    def list_dir(self, prefix: str = "") -> tuple[list[str], list[str]]:
        prefix, top = self._folder(prefix)
        self.stats.add(lists=1)
        keys: list[str] = []
        dirs: list[str] = []
        try:
            with os.scandir(top) as it:
                for entry in it:
                    if entry.is_dir():
                        dirs.append(entry.name)
                    elif entry.is_file() and not entry.name.endswith(TEMP_SUFFIX):
                        keys.append(entry.name)
        except (FileNotFoundError, NotADirectoryError):
            return [], []
        except OSError as e:
            raise StoreError(_oserror_message("listing", e), key=prefix or None) from e
        return sorted(keys), sorted(dirs)

    def with_read_only(self) -> LocalStore:
        """A read-only store over the same root."""
        return LocalStore(
            self.root,
            True,
            self.max_workers,
            fsync=self.fsync,
            coalesce_gap=self.coalesce_gap,
            max_coalesced_size=self.max_coalesced_size,
        )


def _rebuild(root: str, kwargs: dict) -> LocalStore:
    return LocalStore(root, **kwargs)
