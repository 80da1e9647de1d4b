"""A zip archive that cannot be opened for writing or appended to raises ``StoreError`` naming its path
(issue 34: a full disk, a read-only folder or mount gave a bare ``OSError`` / ``PermissionError``), and
nothing is left behind: no staging file, no lock, the archive at the path as it was.

A read-only mount and a full disk are made by failing the system call they fail (``EROFS`` on the lock
file's creation, ``ENOSPC`` on the copy an append starts with), since tests cannot mount file systems;
the folder, the non-zip file and the writer's publishing run for real."""

from __future__ import annotations

import errno
import os
import zipfile

import pytest

import altarr as aa
from altarr.errors import StoreError
from altarr.stores import ZipStore
from altarr.stores import zip_store as zs


def _archive(tmp_path) -> str:
    path = str(tmp_path / "a.zip")
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("k", b"old")
    return path


def _left_alone(tmp_path, path: str) -> None:
    assert sorted(os.listdir(tmp_path)) == ["a.zip"], os.listdir(tmp_path)  # no staging file, no lock
    with zipfile.ZipFile(path) as zf:
        assert zf.read("k") == b"old"


def _failing(err: int):
    def fail(*args, **kwargs):
        raise OSError(err, os.strerror(err))

    return fail


@pytest.mark.parametrize("mode", ["w", "a", "x"])
@pytest.mark.parametrize("err", [errno.EROFS, errno.EACCES, errno.ENOSPC])
def test_a_folder_that_cannot_take_the_lock(tmp_path, monkeypatch, mode, err):
    path = _archive(tmp_path) if mode != "x" else str(tmp_path / "new.zip")
    monkeypatch.setattr(zs.filelock, "acquire", _failing(err))
    with pytest.raises(StoreError, match=f"cannot lock zip archive {path} for writing: {os.strerror(err)}"):
        ZipStore(path, mode=mode)
    if mode != "x":
        _left_alone(tmp_path, path)


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EROFS])
def test_an_append_whose_copy_fails(tmp_path, monkeypatch, err):
    path = _archive(tmp_path)
    monkeypatch.setattr(zs.shutil, "copyfile", _failing(err))
    with pytest.raises(
        StoreError, match=f"cannot copy zip archive {path} to append to it: {os.strerror(err)}"
    ):
        ZipStore(path, mode="a")
    _left_alone(tmp_path, path)


def test_a_publish_that_fails(tmp_path, monkeypatch):
    path = _archive(tmp_path)
    z = ZipStore(path, mode="a")
    z.set("k", b"new")
    monkeypatch.setattr(zs.os, "replace", _failing(errno.ENOSPC))
    with pytest.raises(StoreError, match=f"publishing zip archive {path} failed: No space left on device"):
        z.close()
    _left_alone(tmp_path, path)


def test_a_publish_that_fails_when_the_store_is_dropped(tmp_path, monkeypatch):
    """A writer dropped without ``close`` publishes from its finalizer; when that fails there is no caller
    to raise to, and the error reaches Python's unraisable hook (printed), not a silent ``abandon``."""
    import gc
    import sys

    path = _archive(tmp_path)
    z = ZipStore(path, mode="a")
    z.set("k", b"new")
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    monkeypatch.setattr(zs.os, "replace", _failing(errno.ENOSPC))
    del z
    gc.collect()
    assert [type(u.exc_value) for u in seen] == [StoreError]
    assert "No space left on device" in str(seen[0].exc_value)
    _left_alone(tmp_path, path)


def test_a_folder_and_a_file_that_is_not_a_zip(tmp_path):
    with pytest.raises(StoreError, match=f"cannot write zip archive {tmp_path}: it is a folder"):
        ZipStore(tmp_path, mode="w")
    other = tmp_path / "notes.zip"
    other.write_bytes(b"my notes, not an archive")
    with pytest.raises(StoreError, match=f"cannot append to {other}: it is not a zip archive"):
        ZipStore(other, mode="a")
    assert other.read_bytes() == b"my notes, not an archive"
    assert sorted(os.listdir(tmp_path)) == ["notes.zip"]


def test_through_create_dataset(tmp_path, monkeypatch):
    """The same error where users meet it: creating an array in a zip on a read-only mount."""
    monkeypatch.setattr(zs.filelock, "acquire", _failing(errno.EROFS))
    path = str(tmp_path / "x.zip")
    with pytest.raises(
        StoreError, match="cannot lock zip archive .*x.zip for writing: Read-only file system"
    ):
        aa.create_dataset(path, shape=(4,), chunks=(2,), dtype="u1")
