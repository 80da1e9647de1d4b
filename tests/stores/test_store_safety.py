"""Store safety: use-time root checks (a folder swapped for a symlink later), durable writes, stale
temporary files, conditional writes on S3 (conflicts and their retries), the zip store's bounded growth
and its one-writer rule."""

from __future__ import annotations

import os
import uuid
import zipfile

import fsspec
import numpy as np
import pytest

import altarr as aa
from altarr.dataset import locks
from altarr.errors import InvalidKeyError, StoreError, WriteConflictError
from altarr.stores import WHOLE, FsspecStore, LocalStore, ObstoreStore, Range, ZipStore, store_from_url


# --- item 5: paths are checked at every use ------------------------------------------------------------
def test_a_folder_swapped_for_a_symlink_later_cannot_lead_outside(tmp_path):
    outside = tmp_path / "outside"
    (outside / "c").mkdir(parents=True)
    (outside / "c" / "0").write_bytes(b"secret")
    root = tmp_path / "root"
    s = LocalStore(root)
    s.set("arr/c/0", b"mine")
    s.set("arr/c/1", b"mine too")
    assert s.get("arr/c/0") == b"mine" and s.size("arr/c/0") == 4  # folders used (and checked) once
    os.rename(root / "arr", tmp_path / "moved")
    os.symlink(outside, root / "arr")  # the long-lived store's folder now leads outside
    for call in (
        lambda: s.get("arr/c/0"),
        lambda: s.get_ranges([("arr/c/0", Range(0, 2)), ("arr/c/1", WHOLE)]),
        lambda: s.size("arr/c/0"),
        lambda: s.stat("arr/c/0"),
        lambda: s.open_reader("arr/c/0"),
        lambda: s.set("arr/c/0", b"overwrite"),
        lambda: s.set("arr/c/new/deep", b"x"),
        lambda: s.delete("arr/c/0"),
    ):
        with pytest.raises(InvalidKeyError):
            call()
    with pytest.raises(InvalidKeyError):
        with s.exclusive(["arr/c/0"]):
            pass
    assert sorted(os.listdir(outside / "c")) == ["0"] and (outside / "c" / "0").read_bytes() == b"secret"


def test_a_symlinked_file_is_followed_only_inside_at_use_time(tmp_path):
    (tmp_path / "out").write_bytes(b"outside")
    s = LocalStore(tmp_path / "root")
    s.set("data/real", b"inside")
    os.symlink(tmp_path / "root" / "data" / "real", tmp_path / "root" / "alias")
    assert s.get("alias") == b"inside"
    os.remove(tmp_path / "root" / "alias")
    os.symlink(tmp_path / "out", tmp_path / "root" / "alias")  # retargeted later
    with pytest.raises(InvalidKeyError):
        s.get("alias")


# --- item 2: durable writes, temporary files ------------------------------------------------------------
def test_durable_writes_fsync_file_and_folder(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.fstat(fd).st_mode), real(fd))[1])
    LocalStore(tmp_path / "plain").set("a/k", b"1")
    assert synced == []
    LocalStore(tmp_path / "d", durable=True).set("a/k", b"1")
    import stat

    assert [stat.S_ISREG(m) for m in synced] == [True, False]  # the file, then its folder
    synced.clear()
    FsspecStore(fsspec.filesystem("file"), str(tmp_path / "f"), durable=True).set("k", b"1")
    assert len(synced) == 2
    synced.clear()
    with ZipStore(tmp_path / "z.zip", "w", durable=True) as z:
        z.set("k", b"1")
    assert [stat.S_ISREG(m) for m in synced] == [True, False]
    synced.clear()
    s, _ = aa.stores.store_from_url(str(tmp_path / "u"), mode="w", durable=True)
    s.set("k", b"1")
    assert len(synced) == 2


@pytest.mark.parametrize("kind", ["local", "fsspec-local"])
def test_stale_temporary_files_are_listed_and_removed(tmp_path, kind):
    s = LocalStore(tmp_path) if kind == "local" else FsspecStore(fsspec.filesystem("file"), str(tmp_path))
    s.set("a/c/0", b"x")
    (tmp_path / "a" / "c" / ".0.0123abcd.altarr-tmp").write_bytes(b"half")
    (tmp_path / "a" / ".zarr.json.altarr-lock").write_bytes(b"")
    (tmp_path / "a" / "c" / "keep.tmp").write_bytes(b"not ours")
    assert sorted(s.list()) == ["a/c/0", "a/c/keep.tmp"]
    stale = s.list_temporary()
    assert stale == ["a/.zarr.json.altarr-lock", "a/c/.0.0123abcd.altarr-tmp"]
    assert s.list_temporary("a/c") == ["a/c/.0.0123abcd.altarr-tmp"]
    with pytest.raises(InvalidKeyError):
        s.remove_temporary(["a/c/keep.tmp"])  # never anything but temporary files
    assert s.remove_temporary(stale) == stale
    assert s.list_temporary() == [] and sorted(s.list()) == ["a/c/0", "a/c/keep.tmp"]


def test_fsspec_local_writes_replace_files_atomically(tmp_path):
    s = FsspecStore(fsspec.filesystem("file"), str(tmp_path))
    s.set("k", b"old")
    ino = os.stat(tmp_path / "k").st_ino
    s.set("k", [b"n", b"ew"])
    assert s.get("k") == b"new" and os.stat(tmp_path / "k").st_ino != ino  # a new file, renamed over
    assert s.concurrent_writes == "locked" and s.stats.writes == 2
    assert s.delete("k") and not s.delete("k")


# --- the zip store --------------------------------------------------------------------------------------
def test_zip_rewriting_one_shard_50_times_stays_bounded(tmp_path):
    path = tmp_path / "a.zip"
    rng = np.random.default_rng(0)
    with ZipStore(path, "w") as z:
        sizes = []
        for _ in range(50):
            z.set("c/0/0", rng.bytes(128 << 10))
            sizes.append(os.path.getsize(z._session.staging))
        last = z.get("c/0/0")
    assert max(sizes) < 1.3 * (1 << 20)  # compacted whenever dead bytes pass max(live, 1 MiB)
    assert os.path.getsize(path) < (128 << 10) + 1024  # published with the live member only
    with zipfile.ZipFile(path) as zf:
        assert zf.namelist() == ["c/0/0"] and zf.read("c/0/0") == last
    for _ in range(3):  # later sessions too
        with ZipStore(path, "a") as z:
            for _ in range(20):
                z.set("c/0/0", rng.bytes(128 << 10))
    assert os.path.getsize(path) < (128 << 10) + 1024


def test_zip_has_one_writer_and_readers_see_the_published_archive(tmp_path):
    path = tmp_path / "a.zip"
    with ZipStore(path, "w") as z:
        z.set("k", b"old")
    w = ZipStore(path, "a")
    with pytest.raises(StoreError, match="open for writing"):
        ZipStore(path, "a")
    w.set("k", b"new")
    w.set("more", b"1")
    assert ZipStore(path).get("k") == b"old"  # nothing published yet
    w.close()
    r = ZipStore(path)
    assert r.get("k") == b"new" and r.get("more") == b"1" and r.list_temporary() == []
    r.close()
    w = ZipStore(path, "a")
    w.set("k", b"discarded")
    w.abort()
    assert ZipStore(path).get("k") == b"new" and os.listdir(tmp_path) == ["a.zip"]
    with pytest.raises(StoreError):
        ZipStore(path, "x")


def test_zip_dataset_round_trip_with_overwrite(tmp_path):
    path = str(tmp_path / "d.zip")
    ds = aa.create_dataset(path, shape=(8, 8), dtype="i2", chunks=(4, 4), shards=(8, 8))
    ds[:] = np.arange(64, dtype="i2").reshape(8, 8)
    ds[2:6, 2:6] = -1
    ds.store.close()
    back = aa.open_dataset(path)
    want = np.arange(64, dtype="i2").reshape(8, 8)
    want[2:6, 2:6] = -1
    np.testing.assert_array_equal(back[:], want)
    back.store.close()
    ds = aa.create_dataset(path, shape=(4,), dtype="u1", chunks=(2,), overwrite=True)  # deletes members
    ds[:] = 3
    ds.store.close()
    with zipfile.ZipFile(path) as zf:
        assert not any(n.startswith("c/1/") for n in zf.namelist())
    assert aa.open_dataset(path)[:].tolist() == [3, 3, 3, 3]


# --- conditional writes on S3 ---------------------------------------------------------------------------
def _s3_store(endpoint: str) -> tuple[str, dict]:
    from _s3 import BUCKET, s3_options

    return f"s3://{BUCKET}/{uuid.uuid4().hex}", s3_options(endpoint)


def _another_client(url: str, options: dict) -> ObstoreStore:
    """A store on ``url`` that shares nothing with ``store_from_url``'s in this process (its own obstore
    client, its own identity, so none of this process's locks): the server reached as ``localhost``, as
    another process or machine would reach it by its own name."""
    other = {
        **options,
        "client_kwargs": {
            "endpoint_url": options["client_kwargs"]["endpoint_url"].replace("127.0.0.1", "localhost")
        },
    }
    return ObstoreStore(url, **other)


def test_s3_conditional_writes_detect_other_writers(s3_endpoint):
    url, options = _s3_store(s3_endpoint)
    a, b = store_from_url(url, mode="w", **options)[0], _another_client(url, options)
    assert type(a) is ObstoreStore and a.identity != b.identity
    assert a.concurrent_writes == "conditional"
    with a.exclusive(["k"]):
        assert a.get("k") is None
        b.set("k", b"theirs")  # created meanwhile: If-None-Match fails
        with pytest.raises(WriteConflictError) as info:
            a.set("k", b"mine")
    assert info.value.keys == ["k"] and a.get("k") == b"theirs"
    with a.exclusive(["k"]):
        assert a.get("k") == b"theirs"
        b.set("k", b"again")  # changed meanwhile: If-Match fails, for writes and deletes
        with pytest.raises(WriteConflictError):
            a.set("k", b"mine")
        with pytest.raises(WriteConflictError):
            a.delete("k")
    assert b.get("k") == b"again"
    with a.exclusive(["k", "other"]):
        assert a.get_ranges([("k", Range(1, 3)), ("other", WHOLE)]) == [b"ga", None]
        a.set_many([("k", b"mine"), ("other", b"o")])  # unchanged: both go through
    assert b.get("k") == b"mine" and b.get("other") == b"o"
    with a.exclusive(["k", "other"]):  # objects read as they arrive are conditioned alike
        answers = [x for batch in a.get_ranges_as_ready([("k", WHOLE), ("other", WHOLE)]) for x in batch]
        assert sorted((i, bytes(d)) for i, d, _, _ in answers) == [(0, b"mine"), (1, b"o")]
        b.set("other", b"theirs")
        with pytest.raises(WriteConflictError) as info:
            a.set_many([("k", b"mine"), ("other", b"o1")])
    assert info.value.keys == ["other"] and b.get("other") == b"theirs"
    with a.exclusive(["k"]):  # a second write in one update is conditioned on the first
        assert a.get("k") == b"mine"
        a.set("k", b"mine2")
        a.set("k", b"mine3")
    assert b.get("k") == b"mine3"
    a.set("k", b"outside")  # outside exclusive(): unconditional
    assert b.get("k") == b"outside"


def test_obstore_conditions_only_where_the_backend_can():
    """obstore's HTTP backend has no conditional PUT: such stores say so (one writer per object)."""
    assert ObstoreStore("memory://").concurrent_writes == "conditional"
    assert ObstoreStore("http://127.0.0.1:9/x").concurrent_writes == "single-writer"
    m = ObstoreStore("memory://")
    m.set("k", b"1")
    with m.exclusive(["k"]):
        assert m.get("k") == b"1"
        ObstoreStore.set(m, "other", b"x")  # not read inside: unconditional
        m._store  # noqa: B018
        import obstore

        obstore.put(m._store, "k", b"2")  # another writer (the same in-memory backend)
        with pytest.raises(WriteConflictError) as info:
            m.set("k", b"3")
    assert info.value.keys == ["k"] and m.get("k") == b"2"


@pytest.mark.parametrize("keys", [["a"], ["a", "b"]])
def test_obstore_a_failed_answer_of_an_as_ready_batch_is_a_store_error_naming_its_key(keys):
    """Requests that cannot be sent (nothing listens on the port): advancing ``get_ranges_as_ready``
    raises ``StoreError`` naming the key of the first answer that failed; the batch's requests were
    counted when they were sent, as one round. A lone request (sent from the calling thread) alike."""
    import datetime

    short = datetime.timedelta(milliseconds=10)
    s = ObstoreStore(
        "http://127.0.0.1:9/x",
        retry_config={"max_retries": 0, "backoff": {"init_backoff": short, "max_backoff": short, "base": 2},
                      "retry_timeout": datetime.timedelta(seconds=1)},
    )  # fmt: skip
    batch = s.get_ranges_as_ready([(k, WHOLE) for k in keys])
    with pytest.raises(StoreError, match="read failed") as info:
        list(batch)
    assert info.value.key in keys and info.value.byte_range == (None, None)
    assert (s.stats.reads, s.stats.rounds, s.stats.bytes_read) == (len(keys), 1, 0)


def test_s3_retries_a_conflicting_shard_write_and_gives_up_with_a_clear_error(s3_endpoint, monkeypatch):
    url, options = _s3_store(s3_endpoint)
    ds = aa.create_dataset(
        url, shape=(8,), dtype="u1", chunks=(2,), shards=(8,), compressor=None, storage_options=options
    )
    other = _another_client(url, options)  # another writer: none of this process's locks are shared
    ds.write_chunks([(0,)], [np.full(2, 1, "u1")])
    store = ds.store
    name = "_put"
    real_put = getattr(store, name)
    sneaks = {"n": 1}

    def sneak() -> None:
        if sneaks["n"] > 0:  # another writer adds chunk 3 between our read and our write
            sneaks["n"] -= 1
            v = 9 if sneaks["n"] == 0 else sneaks["n"] % 200 + 10  # new bytes each time (S3's ETag is an MD5)
            aa.open_dataset(other, mode="r+").write_chunks([(3,)], [np.full(2, v, "u1")])

    def put_after_another_writer(*args):  # obstore's blocking put, on the store's request threads
        sneak()
        return real_put(*args)

    monkeypatch.setattr(store, name, put_after_another_writer)
    ds.write_chunks([(1,)], [np.full(2, 5, "u1")])  # conflicts once, then read again and merged
    assert aa.open_dataset(other)[:].tolist() == [1, 1, 5, 5, 0, 0, 9, 9]
    sneaks["n"] = 10**6  # another writer always gets in between
    monkeypatch.setattr(locks, "MAX_ATTEMPTS", 3)
    monkeypatch.setattr(locks, "conflict_backoff", lambda attempt: None)
    with pytest.raises(WriteConflictError, match="gave up after 3 attempts") as info:
        ds.write_chunks([(2,)], [np.full(2, 7, "u1")])
    assert info.value.keys == ["c/0"]


@pytest.mark.parametrize("sharded", [False, True], ids=["partial-chunk", "shard"])
def test_obstore_retries_a_merge_another_writer_got_into_first(sharded):
    """Partial chunk writes (unsharded) and shard writes both read, merge and write conditioned on the
    version read: another writer's change between the read and the write is merged in, not lost."""
    store = ObstoreStore("memory://")
    kw = {"chunks": (2,), "shards": (8,)} if sharded else {"chunks": (8,)}
    # raw chunks without a checksum: the other writer below puts raw values
    ds = aa.create_dataset(store, shape=(8,), dtype="u1", compressor=None, checksum=False, **kw)
    ds[0:2] = 1
    key = "c/0"
    import obstore

    real_put = store._put
    sneaks = {"n": 1}

    def put_after_another_writer(k, data, mode):
        if sneaks["n"] > 0 and k == key:  # another writer changes the object between read and write
            sneaks["n"] -= 1
            other = np.frombuffer(bytes(store.get(key)), "u1").copy() if not sharded else None
            if other is not None:
                other[6:8] = 9
                obstore.put(store._store, key, other.tobytes())
            else:
                _other_shard_writer(store, key)
        return real_put(k, data, mode)

    store._put = put_after_another_writer
    ds[2:4] = 5
    assert sneaks["n"] == 0
    assert aa.open_dataset(store)[:].tolist() == [1, 1, 5, 5, 0, 0, 9, 9]


def _other_shard_writer(store, key):
    """Write chunk 3 of the shard as a separate writer would: build the shard bytes with another
    dataset over a copy, then put them (unconditionally) at ``key``."""
    import obstore

    from altarr.stores import MemoryStore

    copy = MemoryStore()
    for k in store.list():
        copy.set(k, store.get(k))
    aa.open_dataset(copy, mode="r+")[6:8] = 9
    obstore.put(store._store, key, copy.get(key))


def _another_writer_touches_before_put(store: ObstoreStore, key: str) -> dict:
    """Before the store's first write of ``key``, another writer puts the same bytes again (a new
    version): the conditional write of the read version fails for ``key`` alone."""
    import obstore

    real_put = store._put
    sneaks = {"n": 1}

    def put(k, data, mode):
        if sneaks["n"] > 0 and k == key:
            sneaks["n"] -= 1
            obstore.put(store._store, key, bytes(store.get(key)))
        return real_put(k, data, mode)

    store._put = put
    return sneaks


def test_a_conflict_on_one_chunk_does_not_drop_the_deletes_of_the_same_write():
    """Unsharded: ``ds[1:4] = [5, 0, 0]`` merges chunk 0 and deletes chunk 1 (all fill). The merge's
    conditional write meets another writer: the delete, not tried yet, goes again with it (it was
    dropped, leaving chunk 1's old values: a lost write)."""
    store = ObstoreStore("memory://")
    ds = aa.create_dataset(store, shape=(8,), dtype="u1", chunks=(2,), compressor=None)
    ds[:] = 1
    sneaks = _another_writer_touches_before_put(store, "c/0")
    ds[1:4] = np.array([5, 0, 0], "u1")
    assert sneaks["n"] == 0  # the conflict happened
    assert aa.open_dataset(store)[:].tolist() == [1, 5, 0, 0, 1, 1, 1, 1]
    assert "c/1" not in set(store.list())


def test_delete_chunks_reports_every_chunk_when_one_shard_write_conflicts():
    """Sharded: deleting a chunk of each of two shards, the first shard's write meets another writer
    and goes again; the second was written in the first attempt, and its chunk is still reported as
    having existed."""
    store = ObstoreStore("memory://")
    ds = aa.create_dataset(store, shape=(16,), dtype="u1", chunks=(2,), shards=(8,), compressor=None)
    ds[:] = 1
    sneaks = _another_writer_touches_before_put(store, "c/0")
    # (a repeated chunk answers as deleting it twice would: stored, then not)
    assert ds.delete_chunks([(0,), (4,), (4,)]) == [True, True, False]
    assert sneaks["n"] == 0
    assert aa.open_dataset(store)[:].tolist() == [0, 0] + [1] * 6 + [0, 0] + [1] * 6
    assert ds.delete_chunks([(0,), (4,)]) == [False, False]
