"""A store over obstore, the Python binding of Rust's ``object_store``: ``s3://``, ``gs://``, ``az://``,
``http(s)://``.

Every batch of range requests is coalesced (see :mod:`altarr.stores.coalesce`) and sent as concurrent
``GET`` requests, all in flight together (one *round*, counted in ``stats.rounds``). Each answer carries
the object's ETag, which :meth:`ObstoreStore.get_ranges_versioned` hands back with the bytes: the
dataset layer validates its cached shard indexes against the version of the very response that brought
a chunk's bytes, so a warm read needs no index request and no ``HEAD``, and never uses a stale index
(see ``docs/remote.md``).

Why this client is the default for object stores and HTTP (numbers in ``benchmarks/README.md``): its
requests run on a Rust HTTP client outside the GIL, it answers a ranged ``GET`` with the object's ETag
(s3fs and fsspec's HTTP file system drop it), and it writes conditionally (``If-Match``) without a
second code path.

``http(s)://`` objects are read through the standard library's ``http.client`` by default
(``http_client="stdlib"``, :mod:`altarr.stores.http_get`): it sends each ``GET`` 0.1-0.2 ms sooner than
obstore, which counts on a chain of small dependent reads; every request it does not answer itself
(redirects, errors, answers without an ETag, ...) goes through obstore as before, and so do ``HEAD``,
listings and writes. ``s3://`` objects are read the same way through URLs obstore presigns
(:mod:`altarr.stores.s3_signed`: 3-4 ms less CPU for a 12 MB read). ``http_client="obstore"`` sends
everything through obstore.

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
and ``client_kwargs={"endpoint_url": ..., "region_name": ...}`` are translated, so the same options
work with either client. Credentials otherwise come from the client's usual environment
(``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_REGION``/``AWS_ENDPOINT_URL``,
``GOOGLE_SERVICE_ACCOUNT``, ``AZURE_STORAGE_ACCOUNT_NAME``/``AZURE_STORAGE_ACCOUNT_KEY``, ...).

Example:
    >>> s = ObstoreStore("memory://")
    >>> s.set("a/b", b"0123456789")
    >>> s.stats.reset()
    >>> s.get_ranges([("a/b", 0, 3), ("a/b", -2, None), ("missing", None, None)])
    [b'012', b'89', None]
    >>> s.stats.reads, s.stats.rounds  # three GETs in flight together: one round
    (3, 1)
"""

from __future__ import annotations

import atexit
import datetime
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from typing import Any

from ..errors import InvalidKeyError, StoreError, WriteConflictError
from . import s3_signed
from ._util import as_bytes, byte_length, coalesce_gap_for
from .base import Fetched, RangeRequest, ReadRequest, Store, _one_batch, normalize_key
from .coalesce import DEFAULT_MAX_COALESCED_SIZE, CoalescePlan, plan_reads
from .http_get import HttpReader, reader_for, usable_for
from .ranges import ByteRequest, Offset, Range, Suffix, legacy_bounds, normalize_requests
from .watch import VersionWatch, WatchScope

__all__ = ["ObstoreStore", "fsspec_to_obstore_options"]

#: ``http_client=`` values: how ``http(s)://`` and ``s3://`` objects are read. ``"stdlib"``: ranged GETs
#: on the standard library's ``http.client`` (:mod:`altarr.stores.http_get`; for S3 through URLs obstore
#: presigns, :mod:`altarr.stores.s3_signed`), each request it cannot answer itself sent again through
#: obstore; ``"obstore"``: every request through obstore.
HTTP_CLIENTS = ("stdlib", "obstore")

#: Requests of one batch in flight at once (object stores serve many; HTTP/1.1 servers one per socket).
DEFAULT_CONCURRENCY = 64

#: The process that used obstore first: obstore's Rust runtime does not survive fork(), a request from a
#: forked child would hang, so it raises instead.
_used_in = 0
#: obstore clients by (URL, configuration): opening a dataset again reuses the client and its open
#: connections (a new client cost 3-6 ms here, plus a TCP and TLS handshake per connection)
_clients: dict[str, Any] = {}
atexit.register(_clients.clear)  # dropped while the interpreter is whole, not during finalization

#: The threads that send a batch's requests, by concurrency limit (see :func:`_request_threads`)
_pools: dict[int, ThreadPoolExecutor] = {}
_pools_pid = 0
_lock = threading.Lock()  # guards _pools and _clients


def _request_threads(limit: int) -> ThreadPoolExecutor:
    """The threads that send a batch's requests, at most ``limit`` at once, each blocking in one of
    obstore's synchronous calls (``get``, ``put``, ``head``, ``delete``) with the GIL released.

    Not obstore's async calls on an event-loop thread, for two reasons:

    * speed: each async call's completion crosses into the loop thread (a read twice: headers, then
      body). The 8 whole shards (23 MB) of a 256^3 read over a loopback HTTP server at 20 ms per request
      took 37.1 ms as coroutines and 32.0 ms from threads (tensorstore 31.8 ms); 6 whole-shard PUTs
      (2.9 MB each) to moto 58.1 ms and 52.4 ms (``benchmarks/README.md``);
    * exit: obstore completes an async call from one of its Rust threads, which takes the GIL to call
      ``loop.call_soon_threadsafe`` and wakes the loop through a socket ``send`` that releases the GIL
      and takes it back. The caller can finish and the interpreter start finalizing before that
      ``send`` returns; a thread taking the GIL back then is ended with ``pthread_exit``, which cannot
      unwind through Rust frames, and the process aborted (SIGABRT) after all its work was done: 5 of
      60 short processes of 8 writing threads, one S3 soak writer in four. A blocking call returns on
      the Python thread that made it; no Rust thread ever enters Python.

    Made anew in a forked child, whose copy of the parent's threads does not run."""
    global _pools_pid
    with _lock:
        if _pools_pid != os.getpid():
            _pools.clear()
            _pools_pid = os.getpid()
        pool = _pools.get(limit)
        if pool is None:
            pool = _pools[limit] = ThreadPoolExecutor(limit, thread_name_prefix="altarr-obstore")
        return pool


def _outcome(fn: Callable[..., Any], args: tuple) -> Any:
    """``fn(*args)``, or the exception it raised (a batch reports each request's failure in its place)."""
    try:
        return fn(*args)
    except Exception as err:
        return err


def fsspec_to_obstore_options(url: str, options: dict[str, Any]) -> dict[str, Any]:
    """obstore configuration from ``storage_options`` that may use fsspec's (s3fs, gcsfs) spellings.

    >>> fsspec_to_obstore_options("s3://b", {"key": "k", "secret": "s",
    ...                                      "client_kwargs": {"endpoint_url": "http://127.0.0.1:9000"}})
    {'access_key_id': 'k', 'secret_access_key': 's', 'endpoint': 'http://127.0.0.1:9000', 'client_options': {'allow_http': True}}
    """
    out: dict[str, Any] = {}
    opts = dict(options)
    renames = {"key": "access_key_id", "secret": "secret_access_key", "token": "session_token"}
    if url.startswith(("s3://", "s3a://")):
        for a, b in renames.items():
            if a in opts:
                out[b] = opts.pop(a)
        if opts.pop("anon", False):
            out["skip_signature"] = True
    elif opts.pop("anon", False) and url.startswith(("gs://", "gcs://", "az://", "abfs://")):
        out["skip_signature"] = True
    ck = dict(opts.pop("client_kwargs", None) or {})
    endpoint = opts.pop("endpoint_url", None) or ck.pop("endpoint_url", None)
    if endpoint:
        out["endpoint"] = endpoint
    if ck.get("region_name"):
        out["region"] = ck.pop("region_name")
    client = dict(opts.pop("client_options", None) or {})
    if (endpoint or "").startswith("http://") or url.startswith("http://"):
        client.setdefault("allow_http", True)
    out.update(opts)
    if client:
        out["client_options"] = client
    return out


def _version_of(meta: Any) -> str | float | None:
    if not meta:
        return None
    for name in ("e_tag", "version"):
        if meta.get(name):
            return str(meta[name])
    lm = meta.get("last_modified")
    return lm.timestamp() if isinstance(lm, datetime.datetime) else None


def _size_of(meta: Any) -> int | None:
    """The object's total size in a ``GET`` or ``HEAD`` answer's metadata (not the length of the range
    read: obstore takes it from ``Content-Range`` for ranged reads)."""
    size = meta.get("size") if meta else None
    return None if size is None else int(size)


def _is_416(e: BaseException) -> bool:
    return "416" in str(e)[:400]


def _whole_object_answered(e: BaseException, req: ByteRequest) -> bool:
    """object_store refused a suffix request because the server sent the whole object (``200``, not
    ``206``): moto does so for an empty object, as may servers for a suffix longer than the object.
    The caller asks again without a range and keeps the suffix itself (one more request, in that case
    only)."""
    return type(req) is Suffix and "non-partial response" in str(e)[:400]


def _part_of(data: Any, req: ByteRequest) -> memoryview:
    """The bytes ``req`` asks for out of a whole object's ``data`` (:meth:`Suffix.bounds` and kin)."""
    off, end = req.bounds(len(data))
    return memoryview(data)[off:end]


#: The recorded version of an object that did not exist when it was read (written with ``"create"``).
_ABSENT = "<absent>"

#: URL schemes whose obstore backend conditions a PUT on the version read (``PutMode``): S3 sends
#: ``If-Match``/``If-None-Match`` (``conditional_put="etag"``, object_store's default), GCS
#: ``x-goog-if-generation-match`` with the object's generation, Azure ``If-Match``/``If-None-Match``,
#: and the in-memory store compares its own ETags. object_store's HTTP (WebDAV) and local-file backends
#: do not implement ``PutMode::Update``: they stay ``"single-writer"``.
_CONDITIONAL_SCHEMES = ("s3", "s3a", "gs", "gcs", "az", "azure", "abfs", "abfss", "memory")


def _put_version(meta: Any) -> dict[str, str] | str:
    """What a conditional PUT is conditioned on: obstore's ``UpdateVersion`` (ETag and, for GCS, the
    generation) of the object ``meta`` describes."""
    out = {name: str(meta[name]) for name in ("e_tag", "version") if meta.get(name)}
    return out or _ABSENT


def _is_conflict(e: BaseException) -> bool:
    """Whether a conditional PUT failed because the object changed (412, or it exists for "create")."""
    from obstore.exceptions import AlreadyExistsError, PreconditionError

    return isinstance(e, PreconditionError | AlreadyExistsError)


class ObstoreStore(VersionWatch, Store):
    """A store rooted at an object-store or HTTP URL, read and written through obstore.

    Keyword-only tuning: ``coalesce_gap``/``max_coalesced_size`` (request merging; the gap is 1 MiB by
    default, 64 KiB for ``file://`` and ``memory://``, see
    :data:`~altarr.stores._util.NETWORK_COALESCE_GAP`), ``concurrency`` (requests in flight at once) and
    ``http_client`` (see :data:`HTTP_CLIENTS`).
    Other keywords are ``storage_options`` (see the module docstring). The :meth:`stat` version token is
    the object's ETag.

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
        http_client: str = "stdlib",
        **storage_options: Any,
    ) -> None:
        super().__init__()
        if http_client not in HTTP_CLIENTS:
            raise ValueError(f"http_client must be one of {HTTP_CLIENTS}, got {http_client!r}")
        try:
            import obstore
        except ImportError as e:  # pragma: no cover - obstore is a dependency
            raise StoreError("client='obstore' needs the obstore package (pip install obstore)") from e
        self._obs = obstore
        self.url = url
        self.read_only = bool(read_only)
        scheme = url.partition("://")[0].lower()
        self.coalesce_gap = coalesce_gap_for({scheme}) if coalesce_gap is None else coalesce_gap
        self.max_coalesced_size = max_coalesced_size
        self.concurrency = max(1, int(concurrency))
        self.storage_options = dict(storage_options)
        self._config = fsspec_to_obstore_options(url, storage_options)
        #: the URL and configuration: stores with the same one share an obstore client (_clients)
        self._ident = repr((url, sorted(self._config.items())))
        self._client_pid = 0
        self._client: Any = None
        self._store  # noqa: B018 - build the client now: a bad URL or option fails here
        # S3 answers a DELETE of a missing key with success: ask first where "existed" is wanted
        self._rm_reports_missing = url.startswith("memory://")
        #: ``"conditional"`` where the backend conditions PUTs on a version (see _CONDITIONAL_SCHEMES)
        self.concurrent_writes = "conditional" if scheme in _CONDITIONAL_SCHEMES else "single-writer"
        self._scope = WatchScope()
        self.http_client = http_client
        #: the standard library's read path (see :mod:`altarr.stores.http_get`), or None: for http(s)://
        #: the server's reader (``get(_http_base + key, req)``), for s3:// the presigned reads (a base of "")
        self._http: HttpReader | s3_signed.SignedReads | None = None
        self._http_base = ""
        if http_client == "stdlib" and usable_for(url, self._config):
            self._http, self._http_base = reader_for(url)
        elif http_client == "stdlib" and s3_signed.usable_for(url, self._config):
            self._http = s3_signed.SignedReads(self._presign, self._ident)

    @property
    def _store(self) -> Any:
        """The obstore client: shared by the stores of one URL and configuration in a process, made
        anew in a forked child (the parent's connections and runtime threads are not the child's)."""
        global _used_in
        pid = os.getpid()
        if self._client_pid == pid:
            return self._client
        if _used_in and _used_in != pid:
            raise StoreError(
                "obstore cannot be used in a process forked after its parent used it (its Rust runtime "
                "does not survive fork): start workers with multiprocessing's 'spawn' or 'forkserver' "
                f"method, or open {self.url!r} with client='fsspec'"
            )
        _used_in = pid
        url, config, ident = self.url, self._config, self._ident
        with _lock:  # (memory:// stays one store per object, as a test double should)
            if _clients.get("pid") != pid:
                _clients.clear()
                _clients["pid"] = pid
            client = None if url.startswith("memory:") else _clients.get(ident)
        if client is None:
            if self._client is not None and url.startswith("memory:"):
                client = self._client  # a memory store keeps its contents
            else:
                from obstore.store import from_url

                try:
                    client = from_url(url, **config)
                except Exception as e:
                    raise StoreError(f"could not open {url!r} with obstore: {type(e).__name__}: {e}") from e
            if not url.startswith("memory:"):
                with _lock:
                    if len(_clients) > 64:
                        _clients.clear()
                        _clients["pid"] = pid
                    _clients.setdefault(ident, client)
        self._client, self._client_pid = client, pid
        return client

    @property
    def identity(self) -> object:
        return ("obstore", self.url)

    def __repr__(self) -> str:
        ro = ", read_only=True" if self.read_only else ""
        return f"ObstoreStore({self.url!r}{ro})"

    def __reduce__(self):
        kwargs = {
            "coalesce_gap": self.coalesce_gap,
            "max_coalesced_size": self.max_coalesced_size,
            "concurrency": self.concurrency,
            "http_client": self.http_client,
            **self.storage_options,
        }
        return (_rebuild, (self.url, self.read_only, kwargs))

    def with_read_only(self) -> ObstoreStore:
        """A read-only store over the same URL."""
        kwargs = {"coalesce_gap": self.coalesce_gap, "http_client": self.http_client}
        return _rebuild(self.url, True, {**self.storage_options, **kwargs})

    def _fail(self, what: str, key: str | None, e: BaseException, byte_range=None) -> StoreError:
        return StoreError(
            f"{what} failed: {type(e).__name__}: {str(e)[:500]}", key=key, byte_range=byte_range
        )

    def _gather(self, calls: Sequence[tuple[Callable[..., Any], tuple]]) -> list[Any]:
        """Run blocking ``(fn, args)`` calls concurrently on :func:`_request_threads` (at most
        ``concurrency`` at once; one call runs on the calling thread); exceptions are returned in place
        of results."""
        if len(calls) == 1:
            return [_outcome(*calls[0])]
        pool = _request_threads(self.concurrency)
        return [f.result() for f in [pool.submit(_outcome, fn, args) for fn, args in calls]]

    # --- reads ----------------------------------------------------------------------------------------
    @staticmethod
    def _options(req: ByteRequest) -> dict[str, Any]:
        t = type(req)
        if t is Range:
            return {"range": (req.start, req.stop)}  # type: ignore[union-attr]
        if t is Suffix:
            return {"range": {"suffix": req.length}}  # type: ignore[union-attr]
        if t is Offset:
            return {"range": {"offset": req.start}}  # type: ignore[union-attr]
        return {}

    @staticmethod
    def _existence_only(req: ByteRequest) -> bool:
        """An empty range: the backend is only asked whether the object exists."""
        return type(req) is Range and req.stop <= req.start

    def _presign(self, key: str) -> str:
        return self._obs.sign(self._store, "GET", key, s3_signed.EXPIRES)

    def _get_sync(self, key: str, req: ByteRequest) -> tuple[Any, Any]:
        """One ``GET`` (a ``HEAD`` for an empty range), blocking the calling thread (see :meth:`_gather`):
        through the standard library's reader where the store has one (``http(s)://``, ``s3://``), through
        obstore where it has none or declines (see :mod:`altarr.stores.http_get`)."""
        obs, store = self._obs, self._store  # (raises in a forked child, whichever client reads)
        if self._existence_only(req):
            return b"", obs.head(store, key)
        if self._http is not None:
            got = self._http.get(self._http_base + key, req)
            if got is not None:
                return got
        try:
            got = obs.get(store, key, options=self._options(req))
        except Exception as err:
            if _whole_object_answered(err, req):
                got = obs.get(store, key)
                return _part_of(got.bytes(), req), got.meta
            if isinstance(err, FileNotFoundError) or not _is_416(err):
                raise
            return b"", obs.head(store, key)  # past the end of an existing object
        return got.bytes(), got.meta

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
            raise self._fail("read", key, r, legacy_bounds(req)) from r
        return r[0], _version_of(r[1]), _size_of(r[1])

    def get_ranges_as_ready(
        self, requests: Sequence[ReadRequest | RangeRequest]
    ) -> Iterator[list[tuple[int, Any, Any, int | None]]]:
        """Every merged ``GET`` sent now, all in flight together (one round); each answer handed over (as
        zero-copy views of obstore's buffer) as soon as it is in, its version recorded inside
        :meth:`exclusive` on the thread that advances the iterator (the scope is that thread's)."""
        if not requests:
            return iter([])
        typed, cuts = normalize_requests(requests)
        plan = plan_reads(typed, self.coalesce_gap, self.max_coalesced_size, cuts)
        if len(plan.merged) < 2:  # one request: nothing to overlap (answered as get_ranges_sized does)
            return _one_batch(*self._read_planned(plan, True))
        pool = _request_threads(self.concurrency)
        futures = {pool.submit(_outcome, self._get_sync, m): j for j, m in enumerate(plan.merged)}
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
                raise self._fail("size query", k, r) from r
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
        v = _version_of(meta)
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
                (self._put, (k, v, None if c is None else ("create" if c == _ABSENT else c)))
                for k, (_, v), c in zip(keys, items, conditions, strict=True)
            ]
        )
        ok = [i for i, r in enumerate(out) if not isinstance(r, BaseException)]
        self.stats.add(writes=len(ok), rounds=1, bytes_written=sum(sizes[i] for i in ok))
        for i in ok:  # a second write of the object in this update is conditioned on this one
            if conditions[i] is not None:
                recorded[keys[i]] = _put_version(out[i])
        conflicts = [keys[i] for i, r in enumerate(out) if conditions[i] is not None and _is_conflict(r)]
        for k, r in zip(keys, out, strict=True):
            if isinstance(r, BaseException) and k not in conflicts:
                raise self._fail("write", k, r) from r
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
        with self._watching(keys):
            yield

    def _record(self, keys: Sequence[str], outcomes: Sequence[Any]) -> None:
        """Record the versions that reads of watched keys saw (``(data, meta)`` or an exception per key).
        Two reads of one object in one update that saw different versions are a conflict, raised before
        anything is written: it names every watched key, so the caller does the whole update again."""
        watched, versions = self._scope.keys, self._scope.versions
        for key, r in zip(keys, outcomes, strict=True):
            key = normalize_key(key)
            if key not in watched:
                continue
            if isinstance(r, FileNotFoundError):
                seen: Any = _ABSENT
            elif isinstance(r, BaseException) or not r[1]:
                continue
            else:
                seen = _put_version(r[1])
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
            if k in recorded and recorded[k] != (_ABSENT if m is None else _put_version(m))
        ]
        existed = [m is not None for m in metas]
        todo = [k for k, e in zip(keys, existed, strict=True) if e and k not in conflicts]
        if todo:
            out = self._gather([(self._obs.delete, (self._store, k)) for k in todo])
            self.stats.add(deletes=len(todo), rounds=1)
            for k, r in zip(todo, out, strict=True):
                if isinstance(r, BaseException) and not isinstance(r, FileNotFoundError):
                    raise self._fail("delete", k, r) from r
        for k in todo:
            if k in recorded:
                recorded[k] = _ABSENT
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
                raise self._fail("bulk delete", prefix or None, e) from e
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
            raise self._fail("listing", prefix or None, e) from e
        return iter(sorted(k for k in keys if k.startswith(pre) and k != prefix))

    def list_dir(self, prefix: str = "") -> tuple[list[str], list[str]]:
        prefix = normalize_key(prefix)
        self.stats.add(lists=1, rounds=1)
        pre = prefix + "/" if prefix else ""
        try:
            got = self._obs.list_with_delimiter(self._store, pre or None)
        except FileNotFoundError:
            return [], []
        except Exception as e:
            raise self._fail("listing", prefix or None, e) from e
        keys = [m["path"][len(pre) :] for m in got["objects"] if m["path"].startswith(pre)]
        dirs = [p[len(pre) :].rstrip("/") for p in got["common_prefixes"] if p.startswith(pre)]
        return sorted({k for k in keys if k and "/" not in k}), sorted({d for d in dirs if d})


def _rebuild(url: str, read_only: bool, kwargs: dict[str, Any]) -> ObstoreStore:
    return ObstoreStore(url, read_only, **kwargs)
