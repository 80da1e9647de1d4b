"""A store over obstore, the Python binding of Rust's ``object_store``: ``s3://``, ``gs://``, ``az://``,
``http(s)://`` (the one client of these schemes: reads, writes, conditional writes, listings).

Every batch of range requests is coalesced (see :mod:`altarr.stores.coalesce`) and sent as concurrent
``GET`` requests, all in flight together (one *round*, counted in ``stats.rounds``). Each answer carries
the object's ETag, which :meth:`ObstoreStore.get_ranges_versioned` hands back with the bytes: the
dataset layer validates its cached shard indexes against the version of the very response that brought
a chunk's bytes, so a warm read needs no index request and no ``HEAD``, and never uses a stale index
(see ``docs/remote.md``). A server that sends no ETag reports no version: its indexes are read again on
every call.

Why this client (numbers in ``benchmarks/README.md``): its requests run on a Rust HTTP client outside
the GIL, it answers a ranged ``GET`` with the object's ETag (s3fs and fsspec's HTTP file system drop it),
and it writes conditionally (``If-Match``) without a second code path.

Failures are told apart by obstore's exception types, never by their text: ``FileNotFoundError`` is a
missing key (``None``); a ranged ``GET`` that fails otherwise (obstore reports ``416 Range Not
Satisfiable`` and a whole-object ``200`` answer to a ranged request as ``GenericError`` and
``NotSupportedError``, with no status) is an empty read only where a ``HEAD`` shows the range lies past
the end of the object; every other failure is a :class:`~altarr.errors.StoreError` with obstore's
exception as its cause. A ``200`` answer to a ranged ``GET`` is refused by obstore before its body is
read.

Concurrent writers (:attr:`ObstoreStore.concurrent_writes`): on S3, GCS, Azure and obstore's memory
store, a read-modify-write inside :meth:`ObstoreStore.exclusive` records the version of each object it
reads (ETag; GCS: generation) and writes it with ``put(..., mode=UpdateVersion)`` (``"create"`` for
an object that did not exist); another writer's change fails the write with
:class:`~altarr.errors.WriteConflictError` naming it, and the dataset layer reads, merges and writes it
again. object_store has no conditional ``DELETE``: a delete compares the ETag of a ``HEAD`` first
(a write between the two requests is not seen). HTTP has no conditional ``PUT`` in object_store:
``"single-writer"``, one writer per object.

``storage_options`` are obstore's own configuration keys (``access_key_id``, ``endpoint``, ``region``,
``client_options``, ...); the fsspec spellings ``key``, ``secret``, ``token``, ``anon``, ``endpoint_url``
and ``client_kwargs={"endpoint_url": ..., "region_name": ...}`` are translated
(:func:`~altarr.stores.obstore_client.fsspec_to_obstore_options`). Credentials otherwise come from the
client's usual environment (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_REGION``/
``AWS_ENDPOINT_URL``, ``GOOGLE_SERVICE_ACCOUNT``, ``AZURE_STORAGE_ACCOUNT_NAME``/
``AZURE_STORAGE_ACCOUNT_KEY``, ...).

Example:
    >>> from altarr.stores import WHOLE, Range, Suffix
    >>> s = ObstoreStore("memory://")
    >>> s.set("a/b", b"0123456789")
    >>> s.stats.reset()
    >>> s.get_ranges([("a/b", Range(0, 3)), ("a/b", Suffix(2)), ("missing", WHOLE)])
    [b'012', b'89', None]
    >>> s.stats.reads, s.stats.rounds  # three GETs in flight together: one round
    (3, 1)
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, as_completed
from contextlib import contextmanager
from typing import Any

from ..errors import InvalidKeyError, WriteConflictError
from ._util import as_bytes, byte_length, client_failure, coalesce_gap_for
from .base import Fetched, ReadRequest, Store, _one_batch, normalize_key
from .coalesce import DEFAULT_MAX_COALESCED_SIZE, CoalescePlan, plan_reads
from .obstore_client import (
    ABSENT,
    DEFAULT_CONCURRENCY,
    client_for,
    forked_after_use,
    fsspec_to_obstore_options,
    is_conflict,
    outcome,
    put_version,
    request_threads,
    size_of,
    version_of,
)
from .ranges import ByteRequest, Offset, Range, Suffix, Whole, legacy_bounds, normalize_requests

__all__ = ["ObstoreStore"]

#: URL schemes whose obstore backend conditions a PUT on the version read (``PutMode``): S3 sends
#: ``If-Match``/``If-None-Match`` (``conditional_put="etag"``, object_store's default), GCS
#: ``x-goog-if-generation-match`` with the object's generation, Azure ``If-Match``/``If-None-Match``,
#: and the in-memory store compares its own ETags. object_store's HTTP (WebDAV) and local-file backends
#: do not implement ``PutMode::Update``: they stay ``"single-writer"``.
_CONDITIONAL_SCHEMES = ("s3", "s3a", "gs", "gcs", "az", "azure", "abfs", "abfss", "memory")


class _Scope(threading.local):
    """One thread's read-modify-write inside :meth:`ObstoreStore.exclusive`: the keys watched and the
    versions their reads saw, ``None`` outside one. Class defaults, so that asking outside a scope raises
    nothing inside (a ``getattr`` default on a bare ``threading.local`` raised and caught an
    ``AttributeError`` on each of a read's requests)."""

    keys: set[str] | None = None
    versions: dict[str, Any] | None = None


class ObstoreStore(Store):
    """A store rooted at an object-store or HTTP URL, read and written through obstore.

    Keyword-only tuning: ``coalesce_gap``/``max_coalesced_size`` (request merging; the gap is 1 MiB by
    default, 64 KiB for ``file://`` and ``memory://``, see
    :data:`~altarr.stores._util.NETWORK_COALESCE_GAP`) and ``concurrency`` (requests in flight at once).
    Other keywords are ``storage_options`` (see the module docstring). The :meth:`stat` version token is
    the object's ETag (its size where the server sends none).

    >>> s = ObstoreStore("memory://")
    >>> s.set("x", b"abc"); s.size("x"), s.exists("y"), s.stat("x")[0]
    (3, False, 3)
    """

    #: Ranged reads come back with the version (ETag) of the object they were read from.
    versioned_reads = True
    reports_versions = True
    #: ... and with the object's total size (the ``GET`` answer's metadata, ``Content-Range`` on S3).
    reports_sizes = True
    #: obstore's buffers are handed out as zero-copy views by ``get_ranges_versioned``.
    _whole_views = True
    #: Each answer of :meth:`get_ranges_as_ready` is handed over as it arrives.
    answers_as_ready = True

    def __init__(
        self,
        url: str,
        read_only: bool = False,
        *,
        coalesce_gap: int | None = None,
        max_coalesced_size: int = DEFAULT_MAX_COALESCED_SIZE,
        concurrency: int = DEFAULT_CONCURRENCY,
        **storage_options: Any,
    ) -> None:
        super().__init__()
        import obstore

        self._obs = obstore
        self.url = url
        self.read_only = bool(read_only)
        scheme = url.partition("://")[0].lower()
        self.coalesce_gap = coalesce_gap_for({scheme}) if coalesce_gap is None else coalesce_gap
        self.max_coalesced_size = max_coalesced_size
        self.concurrency = max(1, int(concurrency))
        self.storage_options = dict(storage_options)
        self._config = fsspec_to_obstore_options(url, storage_options)
        self._client: Any = None
        self._store  # noqa: B018 - build the client now: a bad URL or option fails here
        # S3 answers a DELETE of a missing key with success: ask first where "existed" is wanted
        self._rm_reports_missing = url.startswith("memory://")
        #: ``"conditional"`` where the backend conditions PUTs on a version (see _CONDITIONAL_SCHEMES)
        self.concurrent_writes = "conditional" if scheme in _CONDITIONAL_SCHEMES else "single-writer"
        self._scope = _Scope()

    @property
    def _store(self) -> Any:
        """The obstore client (:func:`~altarr.stores.obstore_client.client_for`): shared by the stores of
        one URL and configuration in a process, refused in a forked child."""
        if self._client is None or forked_after_use():
            self._client = client_for(self.url, self._config, self._client)
        return self._client

    @property
    def identity(self) -> object:
        """The URL and the endpoint it is reached at (one S3 URL names other storage on another server)."""
        return ("obstore", self.url, self._config.get("endpoint"))

    def __repr__(self) -> str:
        ro = ", read_only=True" if self.read_only else ""
        return f"ObstoreStore({self.url!r}{ro})"

    def _kwargs(self) -> dict[str, Any]:
        """The keywords this store was made with (tuning and storage options)."""
        tuning = {"coalesce_gap": self.coalesce_gap, "max_coalesced_size": self.max_coalesced_size}
        return {**tuning, "concurrency": self.concurrency, **self.storage_options}

    def __reduce__(self) -> tuple[Callable[..., ObstoreStore], tuple[object, ...]]:
        return (_rebuild, (self.url, self.read_only, self._kwargs()))

    def with_read_only(self) -> ObstoreStore:
        """A read-only store over the same URL."""
        return _rebuild(self.url, True, self._kwargs())

    def _gather(self, calls: Sequence[tuple[Callable[..., Any], tuple]]) -> list[Any]:
        """Run blocking ``(fn, args)`` calls concurrently on :func:`request_threads` (at most
        ``concurrency`` at once; one call runs on the calling thread); exceptions are returned in place
        of results."""
        if len(calls) == 1:
            return [outcome(*calls[0])]
        pool = request_threads(self.concurrency)
        return [f.result() for f in [pool.submit(outcome, fn, args) for fn, args in calls]]

    # --- reads ----------------------------------------------------------------------------------------
    @staticmethod
    def _options(req: ByteRequest) -> dict[str, Any]:
        if type(req) is Range:
            return {"range": (req.start, req.stop)}
        if type(req) is Suffix:
            return {"range": {"suffix": req.length}}
        if type(req) is Offset:
            return {"range": {"offset": req.start}}
        return {}

    @staticmethod
    def _existence_only(req: ByteRequest) -> bool:
        """An empty range: the backend is only asked whether the object exists."""
        return type(req) is Range and req.stop <= req.start

    def _get_sync(self, key: str, req: ByteRequest) -> tuple[Any, Any]:
        """One ``GET`` (a ``HEAD`` for an empty range), blocking the calling thread (see :meth:`_gather`):
        ``(bytes, metadata)``, or obstore's exception (``FileNotFoundError`` for a missing key)."""
        obs, store = self._obs, self._store
        if self._existence_only(req):
            return b"", obs.head(store, key)
        try:
            got = obs.get(store, key, options=self._options(req))
        except (self._obs.exceptions.GenericError, self._obs.exceptions.NotSupportedError) as err:
            if type(req) is Whole:
                raise
            return self._beyond_range(key, req, err)
        return got.bytes(), got.meta

    def _beyond_range(self, key: str, req: ByteRequest, err: Exception) -> tuple[Any, Any]:
        """A ranged ``GET`` that failed with an error obstore gives no type of its own (a ``416 Range Not
        Satisfiable``, a whole-object ``200`` answer to a ranged request, a ``5xx``, a timeout): the
        object's size, asked with a ``HEAD``, tells whether the range lies past its end (an empty read,
        as a slice past the end) or the whole object is what the request asks for (a suffix at least as
        long as the object: moto answers it with ``200``), and then it is read whole, its length checked
        before the body is; else ``err`` stands."""
        obs, store = self._obs, self._store
        self.stats.add(size_queries=1)
        try:
            meta = obs.head(store, key)
        except FileNotFoundError:
            raise
        except (obs.exceptions.BaseError, OSError):  # the HEAD failed too: the GET's error stands
            raise err from None
        size = size_of(meta) or 0
        off, end = req.bounds(size)
        if end <= off:
            return b"", meta
        if off == 0 and type(req) is Suffix:
            got = obs.get(store, key)
            if (size_of(got.meta) or 0) > req.length:  # replaced meanwhile by a longer object
                raise err
            return got.bytes(), got.meta
        raise err

    def _fetch(self, merged: list[ReadRequest], versioned: bool) -> Fetched:
        """Concurrent ``GET`` requests, all in flight together (one round; see :meth:`_gather`); each
        with its ETag and the object's total size, both from the answer's metadata."""
        out = self._gather([(self._get_sync, (k, req)) for k, req in merged])
        answers = [self._answer(key, req, r) for (key, req), r in zip(merged, out, strict=True)]
        if self._watched():
            self._record([k for k, _ in merged], out)
        self.stats.add(rounds=1)
        return Fetched([a[0] for a in answers], [a[1] for a in answers], sizes=[a[2] for a in answers])

    def _answer(self, key: str, req: ByteRequest, r: Any) -> tuple[Any, Any, int | None]:
        """The ``(bytes, version, object size)`` of one ``GET``'s outcome (``_get_sync``'s answer or its
        exception): all ``None`` for a missing key; any other failure raises ``StoreError``."""
        if isinstance(r, FileNotFoundError):
            return None, None, None
        if isinstance(r, BaseException):
            raise client_failure("read", key, r, legacy_bounds(req)) from r
        return r[0], version_of(r[1]), size_of(r[1])

    def get_ranges_as_ready(
        self, requests: Sequence[ReadRequest]
    ) -> Iterator[list[tuple[int, Any, Any, int | None]]]:
        """Every merged ``GET`` sent now, all in flight together (one round); each answer handed over (as
        zero-copy views of obstore's buffer) as soon as it is in, its version recorded inside
        :meth:`exclusive` on the thread that advances the iterator (the scope is that thread's)."""
        if not requests:
            return iter([])
        plan = plan_reads(normalize_requests(requests), self.coalesce_gap, self.max_coalesced_size)
        if len(plan.merged) < 2:  # one request: nothing to overlap (answered as get_ranges_sized does)
            return _one_batch(*self._read_planned(plan, True))
        pool = request_threads(self.concurrency)
        futures = {pool.submit(outcome, self._get_sync, m): j for j, m in enumerate(plan.merged)}
        self.stats.add(reads=len(plan.merged), rounds=1)  # sent, whether or not the answers are taken
        return self._as_ready(plan, futures)

    def _as_ready(
        self, plan: CoalescePlan, futures: dict[Future, int]
    ) -> Iterator[list[tuple[int, Any, Any, int | None]]]:
        answers: dict[int, list[int]] = {}  # merged request -> the requests it answers
        for i, part in enumerate(plan.parts):
            answers.setdefault(part[0], []).append(i)
        for f in as_completed(futures):
            m = futures[f]
            key, req = plan.merged[m]
            r = f.result()
            if self._watched():
                self._record([key], [r])
            data, version, size = self._answer(key, req, r)
            if data is None:
                yield [(i, None, None, None) for i in answers[m]]
                continue
            self.stats.add(bytes_read=len(data))
            view, parts = memoryview(data), plan.parts
            yield [
                (i, view if parts[i][3] else view[parts[i][1] : parts[i][2]], version, size)
                for i in answers[m]
            ]

    def _heads(self, keys: Sequence[str], record: bool = True) -> list[Any]:
        self.stats.add(size_queries=len(keys), rounds=1)
        out = self._gather([(self._obs.head, (self._store, k)) for k in keys])
        for k, r in zip(keys, out, strict=True):
            if isinstance(r, BaseException) and not isinstance(r, FileNotFoundError):
                raise client_failure("size query", k, r) from r
        if record and self._watched():
            self._record(keys, [(None, r) for r in out])
        return [None if isinstance(r, BaseException) else r for r in out]

    def size(self, key: str) -> int | None:
        meta = self._heads([normalize_key(key)])[0]
        return None if meta is None else int(meta["size"])

    def stat(self, key: str) -> tuple[int, float | int | str] | None:
        meta = self._heads([normalize_key(key)])[0]
        if meta is None:
            return None
        v = version_of(meta)
        return int(meta["size"]), (v if v is not None else int(meta["size"]))

    # --- writes ---------------------------------------------------------------------------------------
    def _check_key_for_write(self, key: str, operation: str) -> str:
        key = normalize_key(key)
        self._require_writable(key, operation)
        if not key:
            raise InvalidKeyError("the empty key names the store root, not an object", key=key)
        return key

    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        self.set_many([(key, value)])

    def set_many(self, items: Sequence[tuple[str, bytes | bytearray | memoryview]]) -> None:
        """Write many objects with concurrent PUTs (one round). Each write is atomic on its own.

        Inside :meth:`exclusive`, an object read there is written conditioned on the version read
        (``UpdateVersion``, or ``"create"`` where it did not exist); a conditional PUT is never multipart.
        :class:`~altarr.errors.WriteConflictError` names the objects another writer changed meanwhile
        (the others are written)."""
        if not items:
            return
        keys = [self._check_key_for_write(k, "write") for k, _ in items]
        # the parts of an object given in parts are joined by the thread that sends it (_put): the
        # joins (2.9 MB a shard) run side by side and beside the other PUTs, not one after another here
        sizes = [byte_length(v) for _, v in items]
        recorded = self._recorded()
        conditions = [recorded.get(k) for k in keys]
        out = self._gather(
            [
                (self._put, (k, v, None if c is None else ("create" if c == ABSENT else c)))
                for k, (_, v), c in zip(keys, items, conditions, strict=True)
            ]
        )
        ok = [i for i, r in enumerate(out) if not isinstance(r, BaseException)]
        self.stats.add(writes=len(ok), rounds=1, bytes_written=sum(sizes[i] for i in ok))
        for i in ok:  # a second write of the object in this update is conditioned on this one
            if conditions[i] is not None:
                recorded[keys[i]] = put_version(out[i])
        conflicts = [keys[i] for i, r in enumerate(out) if conditions[i] is not None and is_conflict(r)]
        for k, r in zip(keys, out, strict=True):
            if isinstance(r, BaseException) and k not in conflicts:
                raise client_failure("write", k, r) from r
        if conflicts:
            raise WriteConflictError("another writer changed the object since it was read", keys=conflicts)

    def _put(self, key: str, value: Any, mode: Any) -> Any:
        data = as_bytes(value)
        if mode is None:
            return self._obs.put(self._store, key, data)
        return self._obs.put(self._store, key, data, mode=mode, use_multipart=False)

    # --- conditional writes -----------------------------------------------------------------------------
    @contextmanager
    def exclusive(self, keys: Iterable[str]) -> Iterator[None]:
        """Guard a read-modify-write of ``keys`` against other writers where the backend conditions
        writes (:attr:`concurrent_writes` ``"conditional"``: S3, GCS, Azure, memory): the version (ETag,
        generation) of each of them read inside is recorded, and their writes are conditioned on it;
        deletes compare it with a ``HEAD`` first (object_store has no conditional DELETE). Elsewhere
        (HTTP) this does nothing: one writer per object.

        >>> s = ObstoreStore("memory://")
        >>> s.set("k", b"1")
        >>> with s.exclusive(["k"]):
        ...     old = s.get("k")
        ...     s.set("k", old + b"2")
        >>> s.get("k"), s.concurrent_writes
        (b'12', 'conditional')
        """
        if self.concurrent_writes != "conditional" or self.read_only or self._watched() is not None:
            yield
            return
        self._scope.keys, self._scope.versions = {normalize_key(k) for k in keys}, {}
        try:
            yield
        finally:
            self._scope.keys = self._scope.versions = None

    def _watched(self) -> builtins.set[str] | None:
        """The keys of this thread's read-modify-write (:meth:`exclusive`), ``None`` outside one."""
        return self._scope.keys

    def _recorded(self) -> dict[str, Any]:
        """The versions this thread's read-modify-write recorded (a new empty dict outside one)."""
        versions = self._scope.versions
        return {} if versions is None else versions

    def _record(self, keys: Sequence[str], outcomes: Sequence[Any]) -> None:
        """Record the versions that reads of watched keys saw (``(data, meta)`` or an exception per key).
        Two reads of one object in one update that saw different versions are a conflict, raised before
        anything is written: it names every watched key, so the caller does the whole update again."""
        watched, versions = self._scope.keys, self._scope.versions
        if watched is None or versions is None:  # not inside exclusive(): nothing to record
            return
        for key, r in zip(keys, outcomes, strict=True):
            key = normalize_key(key)
            if key not in watched:
                continue
            if isinstance(r, FileNotFoundError):
                seen: Any = ABSENT
            elif isinstance(r, BaseException) or not r[1]:
                continue
            else:
                seen = put_version(r[1])
            if versions.setdefault(key, seen) != seen:
                raise WriteConflictError(
                    f"{key!r} changed between two reads of one update", keys=sorted(watched)
                )

    def delete(self, key: str) -> bool:
        return self.delete_many([key])[0]

    def delete_many(self, keys: Sequence[str]) -> list[bool]:
        """Delete many objects (concurrently); whether each existed (asked with one HEAD each first, since
        S3 reports no difference). Inside :meth:`exclusive`, an object whose HEAD shows another version
        than the one read is left alone and named by :class:`~altarr.errors.WriteConflictError` (after
        the others are deleted); the HEAD and the DELETE are two requests (object_store has no
        conditional DELETE), so a write landing between them is not seen."""
        if not keys:
            return []
        keys = [self._check_key_for_write(k, "delete") for k in keys]
        recorded = self._recorded()
        metas = self._heads(keys, record=False)
        conflicts = [
            k
            for k, m in zip(keys, metas, strict=True)
            if k in recorded and recorded[k] != (ABSENT if m is None else put_version(m))
        ]
        existed = [m is not None for m in metas]
        todo = [k for k, e in zip(keys, existed, strict=True) if e and k not in conflicts]
        if todo:
            out = self._gather([(self._obs.delete, (self._store, k)) for k in todo])
            self.stats.add(deletes=len(todo), rounds=1)
            for k, r in zip(todo, out, strict=True):
                if isinstance(r, BaseException) and not isinstance(r, FileNotFoundError):
                    raise client_failure("delete", k, r) from r
        for k in todo:
            if k in recorded:
                recorded[k] = ABSENT
        if conflicts:
            raise WriteConflictError("another writer changed the object since it was read", keys=conflicts)
        return existed

    def delete_prefix(self, prefix: str) -> int:
        """Delete every key under folder ``prefix``: one listing and bulk deletes."""
        self._require_writable(prefix, "delete")
        keys = list(self.list(prefix))
        if keys:
            try:
                self._obs.delete(self._store, keys)
            except Exception as e:
                raise client_failure("bulk delete", prefix or None, e) from e
            self.stats.add(deletes=len(keys), rounds=1)
        return len(keys)

    # --- listing --------------------------------------------------------------------------------------
    def list(self, prefix: str = "") -> Iterator[str]:
        prefix = normalize_key(prefix)
        self.stats.add(lists=1, rounds=1)
        pre = prefix + "/" if prefix else ""
        try:
            pages = self._obs.list(self._store, pre or None)
            keys = [m["path"] for page in pages for m in page]
        except FileNotFoundError:
            keys = []
        except Exception as e:
            raise client_failure("listing", prefix or None, e) from e
        return iter(sorted(k for k in keys if k.startswith(pre) and k != prefix))

    def list_dir(self, prefix: str = "") -> tuple[builtins.list[str], builtins.list[str]]:
        prefix = normalize_key(prefix)
        self.stats.add(lists=1, rounds=1)
        pre = prefix + "/" if prefix else ""
        try:
            got = self._obs.list_with_delimiter(self._store, pre or None)
        except FileNotFoundError:
            return [], []
        except Exception as e:
            raise client_failure("listing", prefix or None, e) from e
        keys = [m["path"][len(pre) :] for m in got["objects"] if m["path"].startswith(pre)]
        dirs = [p[len(pre) :].rstrip("/") for p in got["common_prefixes"] if p.startswith(pre)]
        return sorted({k for k in keys if k and "/" not in k}), sorted({d for d in dirs if d})


def _rebuild(url: str, read_only: bool, kwargs: dict[str, Any]) -> ObstoreStore:
    return ObstoreStore(url, read_only, **kwargs)
