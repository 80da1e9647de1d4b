"""The paths of :class:`~altarr.stores.LocalStore`, confined to its root at every use: each operation is
relative to the key's open folder, checked to lie inside the root (``docs/engine.md``).
"""

from __future__ import annotations

import errno
import os
import stat as _stat
from collections.abc import Callable
from contextlib import suppress
from typing import TypeVar

from ..errors import InvalidKeyError, StoreError
from . import filelock
from .keys import normalize_key
from .local_files import DIR_FLAGS, O_NOFOLLOW, PROC_FD, READ_FLAGS, fstat_of, oserror_message

__all__ = ["PRUNED_RETRIES", "RootedPaths"]

T = TypeVar("T")

#: How many times a write or a lock makes its folder again when a concurrent delete prunes it first
PRUNED_RETRIES = 64


class RootedPaths:
    """Mixin of :class:`~altarr.stores.LocalStore`: keys as paths under ``root``, checked where opened."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.path.abspath(os.path.expanduser(os.fspath(root)))
        self._root_sep = self.root.rstrip(os.sep) + os.sep
        self._real_root = os.path.realpath(self.root)
        self._real_root_sep = self._real_root.rstrip(os.sep) + os.sep

    def _fspath(self, key: str) -> str:
        if not key:
            return self.root
        if os.sep != "/":  # pragma: no cover - Windows
            key = key.replace("/", os.sep)
        return self._root_sep + key

    def _check_inside(self, real: str, key: str, fd: int | None = None) -> None:
        """Refuse the real path ``real`` of ``key`` outside the root (closing ``fd``, opened from it)."""
        if not (real == self._real_root or real.startswith(self._real_root_sep)):
            if fd is not None:
                os.close(fd)
            raise InvalidKeyError(
                f"key resolves outside the store root {self.root!r} (via a symlink)", key=key
            )

    def _check_fd(self, fd: int, path: str, key: str) -> None:
        """Check that the open ``fd`` (opened from ``path``) lies inside the root; closes it if not."""
        real = None
        if PROC_FD is not None:
            try:
                real = os.readlink(PROC_FD + str(fd))
            except OSError:  # pragma: no cover - /proc unmounted meanwhile
                real = None
        self._check_inside(os.path.realpath(path) if real is None else real, key, fd)

    def _parent_fd(self, key: str, create: bool = False) -> int | None:
        """The folder holding ``key``, open and checked to lie inside the root (``None``: missing)."""
        parent_key = key.rpartition("/")[0]
        path = self._fspath(parent_key)
        try:
            dfd = os.open(path, DIR_FLAGS)
        except (FileNotFoundError, NotADirectoryError):
            return self._make_dirs(parent_key, key) if create else None
        except OSError as e:
            raise StoreError(oserror_message(f"opening folder {path!r}", e), key=key) from e
        self._check_fd(dfd, path, key)
        return dfd

    def _create_in_folder(self, key: str, create: Callable[[int], T], what: str) -> tuple[int, T]:
        """``create(folder descriptor)`` in the folder of ``key`` (made, and made again when a concurrent
        delete pruned it or one on its way first): the folder's descriptor and what ``create`` returned."""
        for attempt in range(PRUNED_RETRIES):
            dfd = None
            try:
                dfd = self._parent_fd(key, create=True)
                assert dfd is not None
                return dfd, create(dfd)
            except OSError as e:
                if dfd is not None:
                    os.close(dfd)
                if isinstance(e, StoreError):
                    raise
                # FileNotFoundError: a folder on the way was pruned under us: make it again
                if not isinstance(e, FileNotFoundError) or attempt == PRUNED_RETRIES - 1:
                    raise StoreError(oserror_message(what, e), key=key) from e
            except BaseException:
                if dfd is not None:
                    os.close(dfd)
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _lock(self, key: str) -> tuple[int, str, int, str]:
        """Take ``key``'s lock in its folder: ``(folder descriptor, name, lock descriptor, key)``."""
        name = key.rpartition("/")[2]
        dfd, fd = self._create_in_folder(key, lambda folder: filelock.acquire(folder, name), "locking")
        assert fd is not None
        return dfd, name, fd, key

    def _make_dirs(self, parent_key: str, key: str) -> int:
        """Create the folders of ``parent_key`` one at a time, each checked before going into it; returns
        the last one; ``FileNotFoundError`` when a concurrent delete pruned one on the way."""
        try:
            os.makedirs(self.root, exist_ok=True)
            dfd = os.open(self.root, DIR_FLAGS)
        except OSError as e:
            raise StoreError(oserror_message(f"creating folder {self.root!r}", e), key=key) from e
        self._check_fd(dfd, self.root, key)
        path = self.root
        for part in parent_key.split("/") if parent_key else ():
            path = os.path.join(path, part)
            try:
                with suppress(FileExistsError):
                    os.mkdir(part, dir_fd=dfd)
                nfd = os.open(part, DIR_FLAGS, dir_fd=dfd)
            except FileNotFoundError:  # this folder or the one it goes in was pruned meanwhile
                os.close(dfd)
                raise
            except OSError as e:
                os.close(dfd)
                raise StoreError(oserror_message(f"creating folder {path!r}", e), key=key) from e
            os.close(dfd)
            dfd = nfd
            self._check_fd(dfd, path, key)
        return dfd

    def _open(self, key: str) -> int | None:
        """A read descriptor for ``key``, or ``None`` if it does not exist."""
        dfd = self._parent_fd(key)
        if dfd is None:
            return None
        name = key.rpartition("/")[2]
        try:
            try:
                return os.open(name, READ_FLAGS, dir_fd=dfd)
            except (FileNotFoundError, NotADirectoryError):
                return None
            except OSError as e:
                if e.errno != errno.ELOOP:
                    raise StoreError(oserror_message("opening", e), key=key) from e
            # The last component is a symlink: follow it only if what it opens lies inside the root.
            try:
                fd = os.open(name, READ_FLAGS & ~O_NOFOLLOW, dir_fd=dfd)
            except (FileNotFoundError, NotADirectoryError):
                return None
            except OSError as e:
                raise StoreError(oserror_message("opening", e), key=key) from e
            self._check_fd(fd, self._fspath(key), key)
            return fd
        finally:
            os.close(dfd)

    def _lstat(self, key: str) -> os.stat_result | None:
        dfd = self._parent_fd(key)
        if dfd is None:
            return None
        try:
            st = os.stat(key.rpartition("/")[2], dir_fd=dfd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            raise StoreError(oserror_message("stat", e), key=key) from e
        finally:
            os.close(dfd)
        if _stat.S_ISLNK(st.st_mode):  # a symlink: follow it only inside the root
            fd = self._open(key)
            if fd is None:
                return None
            try:
                st = fstat_of(fd, key)
            finally:
                os.close(fd)
        return st if _stat.S_ISREG(st.st_mode) else None

    def _folder(self, prefix: str) -> tuple[str, str]:
        prefix = normalize_key(prefix)
        top = self._fspath(prefix)
        if prefix:
            self._check_inside(os.path.realpath(top), prefix)
        return prefix, top
