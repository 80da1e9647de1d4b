"""The store layer's tests: the conformance suite (``store_conformance.py``) run over every store kind (in
memory, local files, fsspec's memory and local file systems, obstore on local files, a zip archive, and
a real S3 protocol server - moto, on the loopback interface - through obstore, its client), then what
is particular to each store."""

from __future__ import annotations

import os
import pickle
import threading
import uuid

import numpy as np
import pytest

# --- a local S3 server: the session's ``s3_endpoint`` fixture (conftest.py) ----------------------------
from _s3 import BUCKET, s3_options
from altarr import _threads
from altarr.errors import InvalidKeyError, ReadOnlyError, StoreError
from altarr.stores import (
    WHOLE,
    FsspecStore,
    LocalStore,
    MemoryStore,
    ObstoreStore,
    Offset,
    Range,
    Store,
    Suffix,
    ZipStore,
    store_from_url,
)
from store_conformance import DATA, StoreConformance


class TestMemoryStore(StoreConformance):
    @pytest.fixture
    def store(self):
        yield MemoryStore()


class TestLocalStore(StoreConformance):
    @pytest.fixture
    def store(self, tmp_path):
        s = LocalStore(tmp_path / "root")
        yield s
        s.close()


class TestFsspecMemoryStore(StoreConformance):
    @pytest.fixture
    def store(self):
        s = FsspecStore(f"memory://altarr-tests/{uuid.uuid4().hex}")
        yield s
        s.close()


class TestFsspecLocalStore(StoreConformance):
    @pytest.fixture
    def store(self, tmp_path):
        s = FsspecStore(f"file://{tmp_path}/root")
        yield s
        s.close()


class TestObstoreS3Store(StoreConformance):
    @pytest.fixture
    def store(self, s3_endpoint):
        s = ObstoreStore(f"s3://{BUCKET}/{uuid.uuid4().hex}", **s3_options(s3_endpoint))
        yield s
        s.close()


class TestObstoreLocalStore(StoreConformance):
    @pytest.fixture
    def store(self, tmp_path):
        (tmp_path / "root").mkdir()
        s = ObstoreStore(f"file://{tmp_path}/root")
        yield s
        s.close()


class TestZipStore(StoreConformance):
    @pytest.fixture
    def store(self, tmp_path):
        s = ZipStore(tmp_path / "store.zip", mode="w")
        yield s
        s.close()

    # A zip archive open for writing is one writer's session: its read-only form, and the one that
    # pickles, is the archive opened again with mode "r" once the writer has closed it.
    def test_read_only_refuses_writes(self, store):
        store.set("k", b"v")
        store.close()
        ro = ZipStore(store.path, mode="r")
        assert ro.read_only
        assert ro.get("k") == b"v"
        with pytest.raises(ReadOnlyError) as info:
            ro.set("k", b"w")
        assert info.value.key == "k"
        with pytest.raises(ReadOnlyError):
            ro.delete("k")
        with pytest.raises(ReadOnlyError):
            ro.set_many([("k", b"w"), ("j", b"w")])
        assert ro.get("k") == b"v"
        ro.close()

    def test_pickle_roundtrip(self, store):
        store.set("p", b"pickled")
        with pytest.raises(TypeError, match="cannot be pickled"):
            pickle.dumps(store)
        store.close()
        ro = ZipStore(store.path, mode="r")
        clone = pickle.loads(pickle.dumps(ro))
        assert type(clone) is ZipStore
        assert clone.get("p") == b"pickled"
        assert clone.read_only == ro.read_only
        ro.close()
        clone.close()


# --- reads ---------------------------------------------------------------------------------------------
def test_far_apart_ranges_are_separate_reads(tmp_path):
    store = MemoryStore(coalesce_gap=1000)
    store.set("shard", DATA * 100)
    reqs = [("shard", Range(i * 20000, i * 20000 + 10)) for i in range(5)]
    assert store.get_ranges(reqs) == [(DATA * 100)[r.start : r.stop] for _, r in reqs]
    assert store.stats.reads == 5 and store.stats.bytes_read == 50


# --- writes --------------------------------------------------------------------------------------------
# --- LocalStore specifics ------------------------------------------------------------------------------
def _files(root) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def test_local_layout_parents_and_pruning(tmp_path):
    root = tmp_path / "root"
    s = LocalStore(root)
    assert not root.exists()  # created on the first write
    s.set("a/b/c/d", b"1")
    s.set("a/x", b"2")
    assert (root / "a" / "b" / "c" / "d").read_bytes() == b"1"
    s.delete("a/b/c/d")
    assert not (root / "a" / "b").exists()  # empty folders pruned
    assert (root / "a").is_dir()  # still holds a/x
    s.delete("a/x")
    assert root.is_dir() and not any(root.iterdir())  # the root stays


def test_local_symlink_out_of_root_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"secret")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(outside / "secret", root / "link")
    os.symlink(outside, root / "dirlink")
    s = LocalStore(root)
    for call in (
        lambda: s.get("link"),
        lambda: s.get_range("link", Suffix(3)),
        lambda: s.size("link"),
        lambda: s.stat("link"),
        lambda: s.get("dirlink/secret"),
        lambda: s.set("dirlink/new", b"x"),
        lambda: s.set("dirlink/sub/new", b"x"),
        lambda: s.delete("dirlink/secret"),
        lambda: list(s.list("dirlink")),
    ):
        with pytest.raises(InvalidKeyError):
            call()
    assert sorted(os.listdir(outside)) == ["secret"]
    assert (outside / "secret").read_bytes() == b"secret"


def test_local_symlink_inside_root_is_followed(tmp_path):
    s = LocalStore(tmp_path)
    s.set("data/real", b"content")
    os.symlink(tmp_path / "data" / "real", tmp_path / "alias")
    assert s.get("alias") == b"content"
    assert s.get_range("alias", Range(1, 3)) == b"on"
    assert s.size("alias") == 7


def test_local_failed_replace_keeps_old_object_and_no_temp(tmp_path, monkeypatch):
    s = LocalStore(tmp_path)
    s.set("k/v", b"old")

    def boom(src, dst, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(StoreError) as info:
        s.set("k/v", b"new content")
    assert info.value.key == "k/v"
    assert isinstance(info.value.__cause__, OSError)
    monkeypatch.undo()
    assert s.get("k/v") == b"old"
    assert _files(tmp_path) == ["k/v"]


def test_local_write_failing_midway_keeps_old_object(tmp_path, monkeypatch):
    s = LocalStore(tmp_path)
    s.set("k", b"old")
    real_write = os.write
    calls = []

    def half_then_fail(fd, parts):
        calls.append(len(parts[0]))
        if len(calls) == 1:
            return real_write(fd, bytes(parts[0][: len(parts[0]) // 2]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "writev", half_then_fail)
    with pytest.raises(StoreError):
        s.set("k", b"x" * 1000)
    monkeypatch.undo()
    assert len(calls) == 2
    assert s.get("k") == b"old"
    assert _files(tmp_path) == ["k"]
    assert s.stats.writes == 1


def test_local_bad_value_leaves_nothing(tmp_path):
    s = LocalStore(tmp_path)
    s.set("k", b"old")
    with pytest.raises(TypeError):
        s.set("k", 12345)
    assert s.get("k") == b"old" and _files(tmp_path) == ["k"]


def test_local_os_errors_become_store_errors(tmp_path, monkeypatch):
    s = LocalStore(tmp_path)
    s.set("file", b"x")
    with pytest.raises(StoreError) as info:  # a parent that is a file
        s.set("file/child", b"y")
    assert info.value.key == "file/child"
    assert s.get("file/child") is None  # reading through a file: missing
    real_open = os.open

    def denied(path, flags, *args, **kwargs):
        if str(path).endswith("file"):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(StoreError) as info:
        s.get("file")
    assert info.value.key == "file" and isinstance(info.value.__cause__, PermissionError)


def test_local_folder_key_is_no_object_and_reading_it_is_refused(tmp_path):
    """A folder is not an object: size/exists/delete say there is none (as an object store with objects
    under the prefix would), but READING it is refused, as reading a folder is on a local file system.
    (It read as missing before, so a dataset whose chunk or shard key was a folder read fill values:
    tests/dataset/test_folder_keys.py.)"""
    s = LocalStore(tmp_path)
    s.set("dir/k", b"x")
    for read in (
        lambda: s.get("dir"),
        lambda: s.get_range("dir", Range(0, 5)),
        lambda: s.get_range("dir", Suffix(2)),
    ):
        with pytest.raises(StoreError, match="folder") as info:
            read()
        assert info.value.key == "dir"
    with pytest.raises(StoreError, match="folder"):
        s.get_ranges_versioned([("dir/k", WHOLE), ("dir", Range(0, 1))])
    assert s.size("dir") is None and s.stat("dir") is None and not s.exists("dir")
    assert s.delete("dir") is False
    with pytest.raises(StoreError, match="folder"):  # a write never replaces a folder
        s.set("dir", b"y")
    assert s.get("dir/k") == b"x" and s.list_temporary() == []


def test_local_huge_range_is_clipped(tmp_path):
    s = LocalStore(tmp_path)
    s.set("k", DATA)
    assert s.get_range("k", Range(10, 2**62)) == DATA[10:]


def test_local_listing_skips_temp_files(tmp_path):
    s = LocalStore(tmp_path)
    s.set("a/b", b"1")
    (tmp_path / "a" / ".b.123abc.altarr-tmp").write_bytes(b"partial")
    assert list(s.list()) == ["a/b"]
    assert s.list_dir("a") == (["b"], [])


def test_local_single_requests_run_inline_and_batches_on_the_io_threads(tmp_path, monkeypatch):
    s = LocalStore(tmp_path, max_workers=4)
    handed: list[int] = []
    real = s._executor
    monkeypatch.setattr(s, "_executor", lambda: handed.append(1) or real())
    s.set_many([("x", b"1")])
    s.get("x")
    s.get_ranges([("x", Range(0, 1)), ("x", Range(0, 1))])  # merges into one request
    assert handed == []
    s.set_many([(f"k{i}", bytes([i])) for i in range(8)])
    assert s.get_ranges([(f"k{i}", WHOLE) for i in range(8)]) == [bytes([i]) for i in range(8)]
    assert handed and real() is _threads.io_threads(4)  # altarr's I/O threads, at max_workers


def test_local_few_keys_many_ranges_in_parallel(tmp_path):
    s = LocalStore(tmp_path, max_workers=4, coalesce_gap=0)
    big = os.urandom(100_000)
    s.set("shard", big)
    reqs = [("shard", Range(i * 1000, i * 1000 + 10)) for i in range(100)]
    assert s.get_ranges(reqs) == [big[r.start : r.stop] for _, r in reqs]
    assert s.stats.reads == 100
    s.close()


def test_local_fsync_and_concurrent_writers(tmp_path):
    s = LocalStore(tmp_path, durable=True)
    values = [bytes([i]) * 5000 for i in range(8)]
    threads = [threading.Thread(target=s.set, args=("same/key", v)) for v in values]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert s.get("same/key") in values  # one whole value, never a mix
    assert _files(tmp_path) == ["same/key"]


# --- FsspecStore specifics -----------------------------------------------------------------------------
def test_fsspec_instance_and_path(tmp_path):
    import fsspec

    fs = fsspec.filesystem("file")
    s = FsspecStore(fs, str(tmp_path / "sub"))
    s.set("a/b", b"xyz")  # parent folders created
    assert (tmp_path / "sub" / "a" / "b").read_bytes() == b"xyz"
    assert s.get_ranges([("a/b", Suffix(2)), ("a/zz", WHOLE)]) == [b"yz", None]
    assert list(s.list()) == ["a/b"]
    assert s.delete("a/b") and not s.delete("a/b")
    with pytest.raises(TypeError):
        FsspecStore(fs, "x", anon=True)


def test_fsspec_url_with_path():
    base = f"memory://altarr-tests/{uuid.uuid4().hex}"
    s = FsspecStore(base, "inner/node")
    s.set("k", b"1")
    assert FsspecStore(base).get("inner/node/k") == b"1"


def test_fsspec_deleting_a_group_lists_once_and_removes_each_object_once(monkeypatch):
    """A group's objects come from one listing, which says they exist: deleting them asks no object's
    size (a delete_many of named keys does, to report which existed), counted on fsspec's own memory
    file system."""
    import fsspec

    import altarr as aa

    url = f"memory://altarr-tests/{uuid.uuid4().hex}"
    root = aa.create_group(url, format="zarr3")
    root.create_dataset("g/a", data=np.ones((4, 4)), chunks=(2, 2))
    root.create_dataset("g/b/c", data=np.ones(3), chunks=(2,))
    store = FsspecStore(url)
    objects = list(store.list("g"))
    fs = fsspec.filesystem("memory")
    calls: dict[str, int] = {}
    for name in ("info", "rm_file", "rm", "find", "ls", "exists", "isfile", "cat_file", "cat_ranges"):
        method = getattr(fs, name)

        def counted(*args, _method=method, _name=name, **kwargs):
            calls[_name] = calls.get(_name, 0) + 1
            return _method(*args, **kwargs)

        monkeypatch.setattr(fs, name, counted)
    assert store.delete_prefix("g") == len(objects) == 10
    assert calls == {"find": 1, "rm_file": 10}
    assert list(store.list("g")) == [] and "a" not in root


# --- ZipStore ------------------------------------------------------------------------------------------
def test_zip_write_then_read(tmp_path):
    import zipfile

    path = tmp_path / "a.zip"
    with ZipStore(path, mode="w") as z:
        z.set("arr/c/0", DATA)
        z.set("arr/zarr.json", b"{}")
        z.set("arr/zarr.json", b'{"v": 2}')  # rewritten: the newest member wins
        assert z.get("arr/zarr.json") == b'{"v": 2}'
        z.set("arr/gone", b"x")
        assert z.delete("arr/gone") and z.get("arr/gone") is None and not z.delete("arr/gone")
    with zipfile.ZipFile(path) as zf:  # published without the shadowed and the deleted member
        assert sorted(zf.namelist()) == ["arr/c/0", "arr/zarr.json"]
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("arr/c/1", DATA * 3)  # a compressed member
    z = ZipStore(path)
    assert z.read_only
    reqs = [
        ("arr/c/0", Range(5, 9)),
        ("arr/c/0", Suffix(3)),
        ("arr/c/1", Range(1000, 1010)),
        ("arr/c/1", Suffix(2)),
        ("no", Range(0, 1)),
    ]
    assert z.get_ranges(reqs) == [DATA[5:9], DATA[-3:], (DATA * 3)[1000:1010], (DATA * 3)[-2:], None]
    assert z.stats.reads == 5
    assert z.get("arr/zarr.json") == b'{"v": 2}'
    assert z.size("arr/c/1") == 3 * len(DATA) and z.size("arr") is None
    assert z.stat("arr/c/0")[0] == len(DATA)
    assert sorted(z.list()) == ["arr/c/0", "arr/c/1", "arr/zarr.json"]
    assert z.list_dir("arr") == (["zarr.json"], ["c"])
    with pytest.raises(ReadOnlyError):
        z.set("x", b"1")
    with pytest.raises(ReadOnlyError):
        z.delete("x")
    z2 = pickle.loads(pickle.dumps(z))
    assert z2.get("arr/c/0") == DATA
    z.close()
    z2.close()


def test_zip_written_by_zarr_is_readable(tmp_path):
    zarr = pytest.importorskip("zarr")
    path = tmp_path / "z.zip"
    zs = zarr.storage.ZipStore(path, mode="w")
    a = zarr.create_array(zs, shape=(10, 10), chunks=(5, 5), dtype="i4", compressors=None)
    a[:] = np.arange(100, dtype="i4").reshape(10, 10)
    zs.close()
    s, prefix = store_from_url(str(path))
    assert isinstance(s, ZipStore) and prefix == ""
    assert s.get("c/1/1") == np.arange(100, dtype="i4").reshape(10, 10)[5:, 5:].tobytes()
    assert b'"zarr_format": 3' in s.get("zarr.json").replace(b" ", b"").replace(b'":', b'": ')
    s.close()


def test_zip_missing_archive_is_store_error(tmp_path):
    with pytest.raises(StoreError):
        ZipStore(tmp_path / "nope.zip")


# --- store_from_url ------------------------------------------------------------------------------------
def test_store_from_url_kinds(tmp_path):
    s, p = store_from_url(str(tmp_path / "d"))
    assert isinstance(s, LocalStore) and s.read_only and p == ""
    s, p = store_from_url(tmp_path / "d", mode="w")
    assert isinstance(s, LocalStore) and not s.read_only
    s, p = store_from_url(f"file://{tmp_path}/d", mode="r+")
    assert isinstance(s, LocalStore) and s.root == str(tmp_path / "d") and not s.read_only
    s, p = store_from_url("memory://altarr-tests/url", mode="a")
    assert isinstance(s, FsspecStore) and not s.read_only
    m = MemoryStore()
    assert store_from_url(m) == (m, "")
    with pytest.raises(ValueError):
        store_from_url(str(tmp_path), mode="rw")


def test_store_from_url_zip_with_inner_prefix(tmp_path):
    path = tmp_path / "x.zip"
    z, p = store_from_url(str(path), mode="w")
    assert isinstance(z, ZipStore) and p == ""
    z.set("group/arr/zarr.json", b"{}")
    z.close()
    z, p = store_from_url(f"{path}/group/arr")
    assert isinstance(z, ZipStore) and z.read_only and p == "group/arr"
    assert z.get(p + "/zarr.json") == b"{}"
    z.close()
    z, _ = store_from_url(str(path), mode="a")
    z.set("more", b"1")
    z.close()
    with pytest.raises(StoreError):
        store_from_url(str(path), mode="w-")


# --- any request set, through a real store -------------------------------------------------------------
@pytest.mark.parametrize("kind", ["memory", "local", "fsspec-memory"])
def test_random_request_sets_match_slicing(kind, tmp_path):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    objects = {"a": os.urandom(3000), "b/c": os.urandom(70), "e": b""}
    if kind == "memory":
        store: Store = MemoryStore(coalesce_gap=100, max_coalesced_size=1000)
    elif kind == "local":
        store = LocalStore(tmp_path, max_workers=3, coalesce_gap=100, max_coalesced_size=1000)
    else:
        store = FsspecStore(
            f"memory://altarr-tests/{uuid.uuid4().hex}", coalesce_gap=100, max_coalesced_size=1000
        )
    store.set_many(list(objects.items()))
    bound = st.integers(0, 3500)
    req = st.tuples(
        st.sampled_from(["a", "b/c", "e", "missing"]),
        st.one_of(
            st.builds(Range, bound, bound), st.builds(Offset, bound), st.builds(Suffix, bound), st.just(WHOLE)
        ),
    )

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(req, max_size=30))
    def check(reqs):
        store.stats.reset()
        got = store.get_ranges(reqs)
        want = [objects[k][slice(*r.bounds(len(objects[k])))] if k in objects else None for k, r in reqs]
        assert got == want
        assert store.stats.reads <= len(reqs)

    check()
    store.close()


def test_local_versioned_reads_in_parallel_paths(tmp_path):
    s = LocalStore(tmp_path, max_workers=3, coalesce_gap=0)
    big = os.urandom(50_000)
    s.set_many([("one", big), ("two", big[::-1])])
    reqs = [
        (k, Range(i * 1000, i * 1000 + 10)) for i in range(20) for k in ("one", "two")
    ]  # few keys, many ranges
    datas, versions = s.get_ranges_versioned(reqs)
    assert datas == [(big if k == "one" else big[::-1])[r.start : r.stop] for k, r in reqs]
    assert versions == [s.stat(k)[1] for k, _ in reqs]
    many = [(f"m{i}", bytes([i])) for i in range(10)]
    s.set_many(many)
    datas, versions = s.get_ranges_versioned([(k, WHOLE) for k, _ in many] + [("gone", WHOLE)])
    assert datas == [v for _, v in many] + [None]
    assert versions == [s.stat(k)[1] for k, _ in many] + [None]
    s.close()


def test_zip_versioned_reads(tmp_path):
    path = tmp_path / "v.zip"
    with ZipStore(path, mode="w") as z:
        z.set("a", b"123")
        datas, versions = z.get_ranges_versioned([("a", Offset(1)), ("b", WHOLE)])
        assert datas == [b"23", None] and versions == [z.stat("a")[1], None]
        z.set("a", b"456")
        assert z.get_ranges_versioned([("a", WHOLE)]) == ([b"456"], [z.stat("a")[1]])
        assert z.stat("a")[1] != versions[0]


def test_local_file_reader_reads_one_version_and_counts(tmp_path):
    from altarr.stores import LocalStore

    s = LocalStore(tmp_path)
    s.set("a/k", b"0123456789")
    assert s.open_reader("a/missing") is None  # no file
    # a folder where an object is read is refused (as reading a folder is on a local file system), so a
    # dataset whose shard key is a folder fails loudly instead of reading fill values
    with pytest.raises(StoreError, match="folder") as info:
        s.open_reader("a")
    assert info.value.key == "a"
    s.stats.reset()
    with s.open_reader("a/k") as r:
        assert r.version == s.stat("a/k")[1]
        assert (r.read(Range(2, 5)), r.read(Suffix(3)), r.read(WHOLE), r.read(Range(8, 20))) == (
            b"234",
            b"789",
            b"0123456789",
            b"89",
        )
        s.set("a/k", b"replaced")  # writers replace the file: the open reader keeps its version
        assert r.read(Range(0, 4)) == b"0123"
    assert s.stats.reads == 5 and s.stats.bytes_read == 3 + 3 + 10 + 2 + 4
    assert r.fd == -1  # closed
    with s.open_reader("a/k") as r2:
        assert r2.read(Range(0, 8)) == b"replaced" and r2.version != r.version
