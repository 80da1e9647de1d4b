"""A store over any fsspec file system: ``memory://``, ``s3://``, ``gs://``, ``http(s)://``, ``file://``.

A batch of ranged reads is coalesced (see :mod:`altarr.stores.coalesce`) and sent as one
``fs.cat_ranges`` call, which async file systems (s3fs, gcsfs, HTTP) run concurrently. Suffix ranges
``(key, -n, None)`` are sent as such where the file system serves them natively (S3 and HTTP send
``Range: bytes=-n``; memory and local files slice); elsewhere a size query precedes a ranged read and both
are counted. Writes use ``fs.pipe_file`` (one atomic PUT per object on object stores), deletes
``fs.rm_file``, listings ``fs.find``/``fs.ls`` (with the listing cache invalidated first, so other
writers' objects are seen).

Concurrent writers (:attr:`FsspecStore.concurrent_writes`): on S3, a read-modify-write inside
:meth:`FsspecStore.exclusive` reads its objects with their ETags (``GetObject``) and writes them with
``If-Match: <etag>`` (``If-None-Match: *`` for an object that did not exist), deletes them with
``If-Match``; a changed object fails the write with 412 and :class:`~altarr.errors.WriteConflictError`
names it, and the dataset layer reads, merges and writes it again. On local files (``file://``) writes
and deletes go through a :class:`~altarr.stores.LocalStore` on the same folder: temporary file and
rename (``durable=True`` adds fsync), cross-process locks, stale temporary files listed. Other file
systems (GCS through gcsfs, HTTP, memory) write unconditionally: give each object one writer.

Backend behaviours handled here (checked against s3fs 2026.9 with moto and fsspec's memory and HTTP file
systems): S3 answers a range that starts at or past the end of an object with ``416`` (mapped to ``b""``
for an existing object); S3 ignores a range whose end precedes its start and sends the whole object, so
empty ranges never reach the backend; a server that ignores ``Range`` and answers ``200`` with the whole
object is detected for bounded and suffix ranges and sliced here; S3 deletes of missing keys succeed
silently, so :meth:`FsspecStore.delete` asks for the size first there (one size query).

Example:
    >>> s = FsspecStore("memory://altarr-doc-example")
    >>> s.set("a/b", b"0123456789")
    >>> s.get_ranges([("a/b", 0, 3), ("a/b", -2, None), ("missing", None, None)])
    [b'012', b'89', None]
    >>> s.delete("a/b")
    True
"""

from __future__ import annotations

import asyncio
import datetime
import errno
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import fsspec
from fsspec.core import url_to_fs

from ..errors import InvalidKeyError, StoreError, WriteConflictError
from ._util import as_bytes, coalesce_gap_for
from .base import Fetched, ReadRequest, Store, normalize_key
from .coalesce import DEFAULT_MAX_COALESCED_SIZE
from .ranges import ByteRequest, Range, Suffix, Whole, legacy_bounds
from .watch import VersionWatch, WatchScope

__all__ = ["FsspecStore"]

#: Protocols whose ``cat_file``/``cat_ranges`` serve ``start < 0, end None`` as a suffix in one request.
NATIVE_SUFFIX_PROTOCOLS = frozenset({"memory", "s3", "s3a", "http", "https", "gs", "gcs", "file", "local"})
#: Protocols whose ``rm_file`` raises ``FileNotFoundError`` for a missing object (no size query needed).
RM_REPORTS_MISSING = frozenset({"memory", "file", "local"})
#: The version recorded for an object that did not exist when it was read (written with If-None-Match).
_ABSENT = "<absent>"
#: S3 error codes that mean "the object is not the version this write was conditioned on".
_CONFLICT_CODES = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey"})
#: Info fields that identify an object version, best first.
_VERSION_FIELDS = (
    "ETag",
    "etag",
    "generation",
    "md5Hash",
    "mtime",
    "LastModified",
    "last_modified",
    "modified",
    "created",
)


def _protocols(fs: fsspec.AbstractFileSystem) -> set[str]:
    p = fs.protocol
    return {p} if isinstance(p, str) else set(p)


def _unsatisfiable(e: BaseException) -> bool:
    """A "416 range not satisfiable" answer: the object exists but the range lies past its end."""
    if getattr(e, "status", None) == 416 or getattr(e, "code", None) == 416:
        return True
    return isinstance(e, OSError) and e.errno == errno.EINVAL and "satisf" in str(e).lower()


def _conflict(r: Any) -> bool:
    """Whether the outcome ``r`` of a conditional S3 write or delete says the object changed."""
    if not isinstance(r, BaseException):
        return False
    if isinstance(r, FileExistsError | FileNotFoundError):  # If-None-Match / If-Match on a missing object
        return True
    for e in (r, r.__cause__):
        response = getattr(e, "response", None)
        if isinstance(response, dict):
            error = response.get("Error") or {}
            status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
            if error.get("Code") in _CONFLICT_CODES or status in (409, 412):
                return True
    return False


def _token(value: Any) -> float | int | str:
    if isinstance(value, datetime.datetime):
        return value.timestamp()
    if isinstance(value, int | float | str):
        return value
    return str(value)


class FsspecStore(VersionWatch, Store):
    """A store rooted at an fsspec URL (or a file system instance plus ``path``).

    ``storage_options`` go to the file system (``key``, ``secret``, ``client_kwargs``, ``anon``, ...).
    Keyword-only tuning: ``coalesce_gap``/``max_coalesced_size`` (request merging; the gap is 1 MiB by
    default, 64 KiB for local and memory file systems, see
    :data:`~altarr.stores._util.NETWORK_COALESCE_GAP`), ``native_suffix``
    (``None``: decided from the protocol; ``False`` forces size query + ranged read for suffixes),
    ``batch_size`` (concurrent requests of batched writes, deletes and size queries on async file systems).

    The :meth:`stat` version token is the object's ETag (S3), generation (GCS) or modification time.

    >>> s = FsspecStore("memory://altarr-doc-class")
    >>> s.set("x", b"abc"); s.size("x"), s.exists("y")
    (3, False)
    """

    def __init__(
        self,
        url_or_fs: str | fsspec.AbstractFileSystem,
        path: str | None = None,
        read_only: bool = False,
        *,
        coalesce_gap: int | None = None,
        max_coalesced_size: int = DEFAULT_MAX_COALESCED_SIZE,
        native_suffix: bool | None = None,
        batch_size: int | None = None,
        durable: bool = False,
        **storage_options: Any,
    ) -> None:
        super().__init__()
        if isinstance(url_or_fs, str):
            fs, root = url_to_fs(url_or_fs, **storage_options)
            self.url = url_or_fs
            if path:
                root = f"{root.rstrip('/')}/{normalize_key(path)}"
        elif isinstance(url_or_fs, fsspec.AbstractFileSystem):
            if storage_options:
                raise TypeError("storage options are only accepted with a URL, not a file system instance")
            fs = url_or_fs
            root = fs._strip_protocol(path) if path else ""
            self.url = fs.unstrip_protocol(root) if root else None
        else:
            raise TypeError(f"expected an fsspec URL or file system, got {type(url_or_fs).__name__}")
        self.fs = fs
        self.read_only = bool(read_only)
        protocols = _protocols(fs)
        self.coalesce_gap = coalesce_gap_for(protocols) if coalesce_gap is None else coalesce_gap
        self.max_coalesced_size = max_coalesced_size
        self.batch_size = batch_size
        self.native_suffix = (
            bool(protocols & NATIVE_SUFFIX_PROTOCOLS) if native_suffix is None else native_suffix
        )
        self._rm_reports_missing = bool(protocols & RM_REPORTS_MISSING)
        self._has_folders = bool(protocols & {"file", "local"})
        self._s3_head = (
            bool(protocols & {"s3", "s3a"}) and hasattr(fs, "_call_s3") and hasattr(fs, "split_path")
        )
        self._root = root.rstrip("/") if root != "/" else ""
        self._root_sep = self._root + "/" if self._root else ""
        self.durable = bool(durable)
        self._local: Any = None
        self._scope = WatchScope()
        self._set_write_mode()

    def _set_write_mode(self) -> None:
        """Local files are written through a LocalStore on the same folder (temporary file + rename,
        locks); S3 writes are conditional inside :meth:`exclusive`."""
        if self._has_folders:
            from .local import LocalStore

            self._local = LocalStore(self._root or "/", read_only=self.read_only, durable=self.durable)
            self._local.stats = self.stats
            self.concurrent_writes = self._local.concurrent_writes
        elif self._s3_head:
            self.concurrent_writes = "conditional"

    @property
    def identity(self) -> object:
        return ("fsspec", type(self.fs).__name__, id(self.fs), self._root)

    def __repr__(self) -> str:
        ro = ", read_only=True" if self.read_only else ""
        where = self.url or f"{type(self.fs).__name__}:{self._root}"
        return f"FsspecStore({where!r}{ro})"

    def __reduce__(self):
        kwargs = {
            "read_only": self.read_only,
            "coalesce_gap": self.coalesce_gap,
            "max_coalesced_size": self.max_coalesced_size,
            "native_suffix": self.native_suffix,
            "batch_size": self.batch_size,
            "durable": self.durable,
        }
        return (_rebuild, (self.fs, self._root, kwargs))

    # --- paths ----------------------------------------------------------------------------------------
    def _path(self, key: str) -> str:
        if not key:
            return self._root
        return self._root_sep + key

    def _key(self, path: str) -> str | None:
        """The key of an fsspec path under the root, or ``None`` if it is not below it."""
        path = self.fs._strip_protocol(path).rstrip("/")
        if self._root_sep:
            return path[len(self._root_sep) :] if path.startswith(self._root_sep) else None
        return path.lstrip("/")

    def _fail(self, what: str, key: str | None, e: BaseException, byte_range=None) -> StoreError:
        return StoreError(f"{what} failed: {type(e).__name__}: {e}", key=key, byte_range=byte_range)

    # --- concurrency helper ---------------------------------------------------------------------------
    def _gather(self, calls: Sequence[tuple[Callable[..., Any], tuple]]) -> list[Any]:
        """Run ``(async_fn, args)`` calls concurrently on the file system's loop (exceptions returned);
        run ``(sync_fn, args)`` one after the other on a synchronous file system."""
        if not self.fs.async_impl:
            out = []
            for fn, args in calls:
                try:
                    out.append(fn(*args))
                except Exception as e:
                    out.append(e)
            return out
        from fsspec.asyn import sync

        limit = self.batch_size or getattr(self.fs, "batch_size", None) or 128

        async def runner() -> list[Any]:
            sem = asyncio.Semaphore(limit)

            async def one(fn: Callable[..., Any], args: tuple) -> Any:
                async with sem:
                    return await fn(*args)

            return await asyncio.gather(*(one(fn, args) for fn, args in calls), return_exceptions=True)

        return sync(self.fs.loop, runner)

    def _info_call(self, path: str) -> tuple[Callable[..., Any], tuple]:
        if self._s3_head:
            return self._s3_info, (path,)
        return (self.fs._info if self.fs.async_impl else self.fs.info), (path,)

    async def _s3_info(self, path: str) -> dict[str, Any]:
        """One HEAD request. (s3fs's ``info`` follows a 404 with a listing, to detect a "directory": a
        second request per missing key, which would make request counts lie.)"""
        fs = self.fs
        bucket, key, version = fs.split_path(path)
        if not key:
            raise FileNotFoundError(path)
        kw = {"VersionId": version} if version else {}
        out = await fs._call_s3("head_object", fs.kwargs, Bucket=bucket, Key=key, **kw)
        return {
            "name": path,
            "type": "file",
            "size": out["ContentLength"],
            "ETag": out.get("ETag"),
            "LastModified": out.get("LastModified"),
        }

    def _infos(self, paths: Sequence[str]) -> list[Any]:
        self.stats.add(rounds=1)
        for p in paths:
            self.fs.invalidate_cache(p)
        return self._gather([self._info_call(p) for p in paths])

    # --- reads ----------------------------------------------------------------------------------------
    def _read_typed(
        self, requests: list[ReadRequest], cuts: list[int | None] | None, versioned: bool
    ) -> tuple[list, list, list]:
        """Inside :meth:`exclusive` (S3), the objects it guards are read whole with their ETags, which are
        recorded for the conditional writes; every other request takes the shared path."""
        watched = self._watched()
        if watched:
            mine = [i for i, (k, _) in enumerate(requests) if k in watched]
            if mine:
                unknown = [None] * len(requests)
                return self._get_ranges_recorded(requests, cuts, mine), unknown, list(unknown)
        return super()._read_typed(requests, cuts, versioned)

    def _fetch(self, merged: list[ReadRequest], versioned: bool) -> Fetched:
        """One ``fs.cat_ranges`` call for the batch (concurrent on async file systems), preceded by one
        batch of size queries for the requests the backend cannot take as they are: empty ranges
        (existence only) and, without native suffix support, suffixes (size first). The object sizes
        those size queries learnt are reported (:attr:`Fetched.sizes`); other sizes are unknown."""
        results: list[bytes | None] = [None] * len(merged)
        sizes: list[int | None] = [None] * len(merged)
        reads = size_queries = rounds = 0
        probe = {
            m
            for m, (_, req) in enumerate(merged)
            if (type(req) is Range and req.stop <= req.start)
            or (not self.native_suffix and type(req) is Suffix)
        }
        bounds: dict[int, tuple[int | None, int | None]] = {}
        if probe:
            order = sorted(probe)
            infos = self._infos([self._path(merged[m][0]) for m in order])
            for m, info in zip(order, infos, strict=True):
                key, req = merged[m]
                size = sizes[m] = self._size_from_info(info, key)
                if type(req) is Range:  # empty range: existence only
                    reads += 1
                    results[m] = None if size is None else b""
                    continue
                size_queries += 1
                if size is None:
                    continue
                if size == 0:
                    results[m] = b""
                    continue
                bounds[m] = req.bounds(size)
        todo = [m for m in range(len(merged)) if m not in probe or m in bounds]
        if todo:
            paths, starts, ends = [], [], []
            for m in todo:
                key, req = merged[m]
                s, e = bounds[m] if m in bounds else self._cat_bounds(req)
                paths.append(self._path(key))
                starts.append(s)
                ends.append(e)
            try:
                out = self.fs.cat_ranges(paths, starts, ends, on_error="return")
            except Exception as e:  # a failure of the whole batch (e.g. unreachable endpoint)
                raise self._fail("batched read", merged[todo[0]][0], e) from e
            reads += len(todo)
            rounds += 1
            for m, s, e, r in zip(todo, starts, ends, out, strict=True):
                results[m] = self._check_result(merged[m][0], s, e, r)
        self.stats.add(size_queries=size_queries, rounds=rounds)
        return Fetched(results, None, reads, sizes)

    def _cat_bounds(self, req: ByteRequest) -> tuple[int | None, int | None]:
        """A byte request as the ``start``/``end`` arguments of fsspec's ``cat_ranges`` (whose own
        convention serves a negative start as a suffix)."""
        if type(req) is not Whole:
            return legacy_bounds(req)
        # A whole object as the open range "bytes=0-": s3fs asks for the size (HEAD) before an unranged
        # GET; a ranged GET is one request (416 for an empty object -> b"").
        return (0 if self.fs.async_impl else None), None

    def _check_result(self, key: str, s: int | None, e: int | None, r: Any) -> bytes | None:
        """The answer to one ``cat_ranges`` request with the bounds it was sent with."""
        if isinstance(r, BaseException):
            if isinstance(r, FileNotFoundError):
                return None
            if _unsatisfiable(r):
                return b""
            raise self._fail("read", key, r, (s, e)) from r
        if not isinstance(r, bytes):
            r = as_bytes(r)
        # A server that ignores Range sends the whole object: cut the range out here.
        if s is not None and s >= 0 and e is not None and len(r) > e - s:
            r = r[s:e]
        elif s is not None and s < 0 and len(r) > -s:
            r = r[s:]
        return r

    def _size_from_info(self, info: Any, key: str) -> int | None:
        if isinstance(info, BaseException):
            if isinstance(info, FileNotFoundError):
                return None
            raise self._fail("size query", key, info) from info
        if info.get("type", "file") != "file":
            return None
        return int(info["size"])

    def size(self, key: str) -> int | None:
        key = normalize_key(key)
        self.stats.add(size_queries=1)
        return self._size_from_info(self._infos([self._path(key)])[0], key)

    def stat(self, key: str) -> tuple[int, float | int | str] | None:
        key = normalize_key(key)
        self.stats.add(size_queries=1)
        info = self._infos([self._path(key)])[0]
        size = self._size_from_info(info, key)
        if size is None:
            return None
        for name in _VERSION_FIELDS:
            value = info.get(name)
            if value is not None:
                return size, _token(value)
        return size, size

    # --- writes ---------------------------------------------------------------------------------------
    def _check_key_for_write(self, key: str, operation: str) -> str:
        key = normalize_key(key)
        self._require_writable(key, operation)
        if not key:
            raise InvalidKeyError("the empty key names the store root, not an object", key=key)
        return key

    def _pipe_call(self, path: str, data: bytes) -> tuple[Callable[..., Any], tuple]:
        return (self.fs._pipe_file if self.fs.async_impl else self.fs.pipe_file), (path, data)

    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        self.set_many([(key, value)])

    def set_many(self, items: Sequence[tuple[str, bytes | bytearray | memoryview]]) -> None:
        """Write many objects; concurrent PUTs on async file systems. Each write is atomic on its own.
        Inside :meth:`exclusive` on S3, objects read there are written conditioned on the version read
        (:class:`~altarr.errors.WriteConflictError` names those another writer changed meanwhile; the
        others are written)."""
        if not items:
            return
        if self._local is not None:
            for k, _ in items:
                self._check_key_for_write(k, "write")
            self._local.set_many(items)
            return
        keys = [self._check_key_for_write(k, "write") for k, _ in items]
        data = [as_bytes(v) for _, v in items]
        paths = [self._path(k) for k in keys]
        versions = self._recorded()
        conditional = [versions.get(k) for k in keys]
        out = self._gather(
            [
                self._pipe_call(p, d) if v is None else (self._s3_put, (p, d, v))
                for p, d, v in zip(paths, data, conditional, strict=True)
            ]
        )
        ok = [i for i, r in enumerate(out) if not isinstance(r, BaseException)]
        self.stats.add(writes=len(ok), bytes_written=sum(len(data[i]) for i in ok))
        conflicts = [keys[i] for i, r in enumerate(out) if conditional[i] is not None and _conflict(r)]
        for i, r in enumerate(out):
            if isinstance(r, BaseException) and keys[i] not in conflicts:
                raise self._fail("write", keys[i], r) from r
        if conflicts:
            raise WriteConflictError("another writer changed the object since it was read", keys=conflicts)

    # --- conditional writes (S3) ------------------------------------------------------------------------
    @contextmanager
    def exclusive(self, keys: Iterable[str]) -> Iterator[None]:
        """Guard a read-modify-write of ``keys`` against other writers (see the module docstring): S3
        records the ETag of each of them read inside and conditions their writes and deletes on it;
        local files hold cross-process locks; other file systems do nothing (one writer per object).

        >>> s = FsspecStore("memory://altarr-doc-exclusive")
        >>> with s.exclusive(["k"]):
        ...     s.set("k", b"1")
        >>> s.concurrent_writes
        'single-writer'
        """
        if self._local is not None:
            with self._local.exclusive(keys):
                yield
            return
        if not self._s3_head or self.read_only or self._watched() is not None:
            yield
            return
        with self._watching(keys):
            yield

    def _get_ranges_recorded(
        self, requests: list[ReadRequest], cuts: list[int | None] | None, mine: list[int]
    ) -> list[bytes | None]:
        """Requests ``mine`` (of objects inside :meth:`exclusive`) read whole with their ETags, which are
        recorded for the conditional writes; the other requests as usual."""
        versions = self._scope.versions
        keys = [requests[i][0] for i in mine]
        out = self._gather([(self._s3_get, (self._path(k),)) for k in keys])
        results: list[bytes | None] = [None] * len(requests)
        nbytes = 0
        for i, key, r in zip(mine, keys, out, strict=True):
            if isinstance(r, BaseException):
                raise self._fail("read", key, r) from r
            data, etag = r
            if versions.setdefault(key, etag) != etag:
                raise WriteConflictError("the object changed between two reads of one update", keys=[key])
            if data is not None:
                nbytes += len(data)
                req = requests[i][1]
                if type(req) is not Whole:
                    off, end = req.bounds(len(data))
                    data = data[off:end]
                cut = None if cuts is None else cuts[i]
                results[i] = data if cut is None else data[:cut]
        self.stats.add(reads=len(mine), bytes_read=nbytes)
        rest = [i for i in range(len(requests)) if i not in set(mine)]
        if rest:
            got, _, _ = super()._read_typed(
                [requests[i] for i in rest], None if cuts is None else [cuts[i] for i in rest], False
            )
            for i, r in zip(rest, got, strict=True):
                results[i] = r
        return results

    async def _s3_get(self, path: str) -> tuple[bytes | None, str]:
        fs = self.fs
        bucket, key, _ = fs.split_path(path)
        try:
            out = await fs._call_s3("get_object", Bucket=bucket, Key=key)
        except FileNotFoundError:
            return None, _ABSENT
        body = out["Body"]
        try:
            data = await body.read()
        finally:
            body.close()
        return data, out["ETag"]

    async def _s3_put(self, path: str, data: bytes, version: str) -> Any:
        fs = self.fs
        bucket, key, _ = fs.split_path(path)
        cond = {"IfNoneMatch": "*"} if version == _ABSENT else {"IfMatch": version}
        try:
            return await fs._call_s3("put_object", Bucket=bucket, Key=key, Body=data, **cond)
        finally:
            fs.invalidate_cache(path)

    async def _s3_delete(self, path: str, version: str) -> Any:
        fs = self.fs
        bucket, key, _ = fs.split_path(path)
        try:
            return await fs._call_s3("delete_object", Bucket=bucket, Key=key, IfMatch=version)
        finally:
            fs.invalidate_cache(path)

    # --- temporary files ----------------------------------------------------------------------------------
    def list_temporary(self, prefix: str = "") -> list[str]:
        """Leftover temporary files of killed writers (local files only; object stores have none)."""
        return [] if self._local is None else self._local.list_temporary(prefix)

    def remove_temporary(self, keys: Iterable[str]) -> list[str]:
        """Remove leftover temporary files (see :meth:`LocalStore.remove_temporary`)."""
        return [] if self._local is None else self._local.remove_temporary(keys)

    def delete(self, key: str) -> bool:
        return self.delete_many([key])[0]

    def delete_many(self, keys: Sequence[str]) -> list[bool]:
        """Delete many objects (concurrently on async file systems); whether each existed."""
        if not keys:
            return []
        if self._local is not None:
            for k in keys:
                self._check_key_for_write(k, "delete")
            return self._local.delete_many(keys)
        keys = [self._check_key_for_write(k, "delete") for k in keys]
        paths = [self._path(k) for k in keys]
        existed = [True] * len(keys)
        recorded = self._recorded()
        conditional = [recorded.get(k) for k in keys]
        unknown = [i for i, v in enumerate(conditional) if v is None]
        if not self._rm_reports_missing and unknown:
            infos = self._infos([paths[i] for i in unknown])
            self.stats.add(size_queries=len(unknown))
            for i, info in zip(unknown, infos, strict=True):
                existed[i] = self._size_from_info(info, keys[i]) is not None
        for i, v in enumerate(conditional):
            if v == _ABSENT:
                existed[i] = False
        todo = [i for i in range(len(keys)) if existed[i]]
        rm = self.fs._rm_file if self.fs.async_impl else self.fs.rm_file
        out = self._gather(
            [
                (rm, (paths[i],)) if conditional[i] is None else (self._s3_delete, (paths[i], conditional[i]))
                for i in todo
            ]
        )
        self.stats.add(deletes=len(todo))
        conflicts = []
        for i, r in zip(todo, out, strict=True):
            if conditional[i] is not None and _conflict(r):
                conflicts.append(keys[i])
            elif isinstance(r, FileNotFoundError):
                existed[i] = False
            elif isinstance(r, BaseException):
                raise self._fail("delete", keys[i], r) from r
        if conflicts:
            raise WriteConflictError("another writer changed the object since it was read", keys=conflicts)
        return existed

    def delete_prefix(self, prefix: str) -> int:
        """Delete every key under folder ``prefix`` with one listing and bulk deletes (S3 deletes up to
        1000 objects per request); returns how many keys were deleted (each counted in ``deletes``)."""
        self._require_writable(prefix, "delete")
        if self._local is not None:
            return self._local.delete_prefix(prefix)
        keys = list(self.list(prefix))
        if not keys:
            return 0
        try:
            self.fs.rm([self._path(k) for k in keys])
        except FileNotFoundError:  # a concurrent delete: fall back to one by one
            return sum(self.delete_many(keys))
        except Exception as e:
            raise self._fail("bulk delete", prefix or None, e) from e
        self.stats.add(deletes=len(keys))
        return len(keys)

    # --- listing --------------------------------------------------------------------------------------
    def list(self, prefix: str = "") -> Iterator[str]:
        prefix = normalize_key(prefix)
        base = self._path(prefix)
        self.stats.add(lists=1)
        self.fs.invalidate_cache(base)
        try:
            paths = self.fs.find(base)
        except FileNotFoundError:
            paths = []
        except Exception as e:
            raise self._fail("listing", prefix or None, e) from e
        pre = prefix + "/" if prefix else ""
        keys = []
        for p in paths:
            k = self._key(p)
            if k and k.startswith(pre) and k != prefix and not self._is_temporary(k):
                keys.append(k)
        return iter(sorted(keys))

    def _is_temporary(self, key: str) -> bool:
        """A temporary or lock file of the local writes (listings skip them, as LocalStore's do)."""
        if self._local is None:
            return False
        from .filelock import LOCK_SUFFIX
        from .local import TEMP_SUFFIX

        name = key.rpartition("/")[2]
        return name.startswith(".") and name.endswith((TEMP_SUFFIX, LOCK_SUFFIX))

    def list_dir(self, prefix: str = "") -> tuple[list[str], list[str]]:
        prefix = normalize_key(prefix)
        base = self._path(prefix)
        self.stats.add(lists=1)
        self.fs.invalidate_cache(base)
        try:
            entries = self.fs.ls(base, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return [], []
        except Exception as e:
            raise self._fail("listing", prefix or None, e) from e
        pre = prefix + "/" if prefix else ""
        keys: list[str] = []
        dirs: list[str] = []
        for entry in entries:
            k = self._key(entry["name"])
            if not k or not k.startswith(pre):
                continue  # the folder itself, or a file named like it
            name = k[len(pre) :]
            if not name or "/" in name or self._is_temporary(name):
                continue
            (dirs if entry.get("type") == "directory" else keys).append(name)
        return sorted(set(keys)), sorted(set(dirs))

    def with_read_only(self) -> FsspecStore:
        """A read-only store over the same file system and root."""
        return _rebuild(
            self.fs,
            self._root,
            {
                "read_only": True,
                "coalesce_gap": self.coalesce_gap,
                "max_coalesced_size": self.max_coalesced_size,
                "native_suffix": self.native_suffix,
                "batch_size": self.batch_size,
                "durable": self.durable,
            },
        )


def _rebuild(fs: fsspec.AbstractFileSystem, root: str, kwargs: dict) -> FsspecStore:
    store = FsspecStore(fs, None, **kwargs)
    store._root = root
    store._root_sep = root + "/" if root else ""
    store.url = fs.unstrip_protocol(root) if root else None
    store._set_write_mode()
    return store
