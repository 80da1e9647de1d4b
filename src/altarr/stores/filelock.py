"""Cross-process exclusive locks on objects of local files: ``flock`` on ``.<name>.altarr-lock`` beside
the object, held from a read-modify-write's read to its rename (``docs/engine.md``, "Safety"); no lock
where ``fcntl`` is missing (:data:`AVAILABLE`).
"""

from __future__ import annotations

import os

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]  # no fcntl module here: AVAILABLE says so to every caller

__all__ = ["LOCK_SUFFIX", "AVAILABLE", "lock_name", "acquire", "release", "remove_stale"]

#: Lock files end with this suffix; listings skip them.
LOCK_SUFFIX = ".altarr-lock"
#: Whether this platform has ``flock``.
AVAILABLE = fcntl is not None

_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def lock_name(name: str) -> str:
    """The lock file name of the object file ``name`` (in the same folder)."""
    return f".{name}{LOCK_SUFFIX}"


def acquire(dir_fd: int, name: str, blocking: bool = True) -> int | None:
    """Lock the object ``name`` of the folder open as ``dir_fd``; returns the lock's descriptor (pass it
    to :func:`release`), or ``None`` when ``blocking`` is false and another holder has it."""
    assert fcntl is not None
    lname = lock_name(name)
    while True:
        fd = os.open(lname, _FLAGS, 0o666, dir_fd=dir_fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        mine = os.fstat(fd)
        try:
            now = os.stat(lname, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            now = None
        if now is not None and (now.st_ino, now.st_dev) == (mine.st_ino, mine.st_dev):
            return fd
        os.close(fd)  # the previous holder removed the file we locked: lock the one at the path now


def release(dir_fd: int, name: str, fd: int) -> None:
    """Remove the lock file (while still holding it) and release the lock."""
    try:
        os.unlink(lock_name(name), dir_fd=dir_fd)
    except FileNotFoundError:  # pragma: no cover - removed by hand
        pass
    finally:
        os.close(fd)


def remove_stale(dir_fd: int, lock_file: str) -> bool:
    """Remove the lock file ``lock_file`` (``.<name>.altarr-lock``) of the folder open as ``dir_fd``
    unless someone holds it; whether it was removed (never without ``flock``)."""
    if fcntl is None:  # pragma: no cover - Windows
        return False
    name = lock_file[1 : -len(LOCK_SUFFIX)]
    fd = acquire(dir_fd, name, blocking=False)
    if fd is None:
        return False
    release(dir_fd, name, fd)
    return True
