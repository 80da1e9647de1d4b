"""A store over obstore (Rust's ``object_store``): the one client of ``s3://``, ``gs://``, ``az://`` and
``http(s)://``. Each batch of ranges is coalesced and sent as concurrent ``GET`` requests (one round),
each answer carrying the object's ETag; failures are told apart by obstore's exception types; writes
are conditioned on the version read inside :meth:`ObstoreStore.exclusive` where the backend can
(``docs/remote.md``: clients, failures, ``storage_options``, credentials, concurrent writers).
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import as_completed
from contextlib import contextmanager
from typing import Any

from .._threads import io_threads
from ..errors import WriteConflictError
from ._util import as_bytes, byte_length, client_failure, coalesce_gap_for
from .base import Fetched, ReadRequest, Store, normalize_key
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
    size_of,
    version_of,
)
from .ranges import ByteRequest, Offset, Range, Suffix, Whole, legacy_bounds, normalize_requests

__all__ = ["ObstoreStore"]

#: Schemes whose obstore backend implements ``PutMode::Update`` (HTTP and local files do not).
_CONDITIONAL_SCHEMES = ("s3", "s3a", "gs", "gcs", "az", "azure", "abfs", "abfss", "memory")


class _Scope(threading.local):
    """One thread's read-modify-write in :meth:`ObstoreStore.exclusive`: keys watched, versions read."""

    keys: set[str] | None = None
    versions: dict[str, Any] | None = None


class ObstoreStore(Store):
    """A store rooted at an object-store or HTTP URL. Tuning: ``coalesce_gap``, ``max_coalesced_size``,
    ``concurrency``; other keywords are obstore's ``storage_options`` (``docs/remote.md``).

    >>> s = ObstoreStore("memory://")
    >>> s.set("x", b"abc"); s.size("x"), s.exists("y"), s.stat("x")[0]
    (3, False, 3)
    """

    versioned_reads = True
    reports_versions = True
    reports_sizes = True
    _whole_views = True
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
        self._rm_reports_missing = url.startswith("memory://")
        self.concurrent_writes = "conditional" if scheme in _CONDITIONAL_SCHEMES else "single-writer"
        self._scope = _Scope()

    @property
    def _store(self) -> Any:
        """The obstore client, shared by the stores of one URL and configuration in a process."""
        if self._client is None or forked_after_use():
            self._client = client_for(self.url, self._config, self._client)
        return self._client

    @property
    def identity(self) -> object:
        """The URL and its endpoint (one S3 URL names other storage on another server)."""
        return ("obstore", self.url, self._config.get("endpoint"))

    def __repr__(self) -> str:
        ro = ", read_only=True" if self.read_only else ""
        return f"ObstoreStore({self.url!r}{ro})"

    def _kwargs(self) -> dict[str, Any]:
        tuning = {"coalesce_gap": self.coalesce_gap, "max_coalesced_size": self.max_coalesced_size}
        return {**tuning, "concurrency": self.concurrency, **self.storage_options}

    def __reduce__(self) -> tuple[Callable[..., ObstoreStore], tuple[object, ...]]:
        return (_rebuild, (self.url, self.read_only, self._kwargs()))

    def _gather(self, calls: Sequence[tuple[Callable[..., Any], tuple]]) -> list[Any]:
        """Run blocking ``(fn, args)`` calls concurrently, each on an I/O thread in one of obstore's
        synchronous calls (not its async ones: ``docs/remote.md``); exceptions are returned in place of
        results."""
        if len(calls) == 1:
            return [outcome(*calls[0])]
        pool = io_threads(self.concurrency)
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

    def _get_sync(self, key: str, req: ByteRequest) -> tuple[Any, Any]:
        """One ``GET`` (a ``HEAD`` for an empty range): ``(bytes, metadata)``."""
        obs, store = self._obs, self._store
        if type(req) is Range and req.stop <= req.start:  # an empty range: only whether it exists
            return b"", obs.head(store, key)
        try:
            got = obs.get(store, key, options=self._options(req))
        except (self._obs.exceptions.GenericError, self._obs.exceptions.NotSupportedError) as err:
            if type(req) is Whole:
                raise
            return self._beyond_range(key, req, err)
        return got.bytes(), got.meta

    def _beyond_range(self, key: str, req: ByteRequest, err: Exception) -> tuple[Any, Any]:
        """A ranged ``GET`` failed with an untyped error (416, a ``200`` to a ranged request, 5xx...): a
        ``HEAD`` tells whether the range lies past the end (empty read) or is the whole object (a suffix
        at least as long: read whole); else ``err`` stands."""
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
        """Concurrent ``GET`` requests (one round), each with its ETag and the object's size."""
        out = self._gather([(self._get_sync, (k, req)) for k, req in merged])
        answers = [self._answer(key, req, r) for (key, req), r in zip(merged, out, strict=True)]
        if self._watched():
            self._record([k for k, _ in merged], out)
        self.stats.add(rounds=1)
        return Fetched([a[0] for a in answers], [a[1] for a in answers], sizes=[a[2] for a in answers])

    def _answer(self, key: str, req: ByteRequest, r: Any) -> tuple[Any, Any, int | None]:
        """``(bytes, version, object size)`` of one ``GET``'s outcome; a failure raises ``StoreError``."""
        if isinstance(r, FileNotFoundError):
            return None, None, None
        if isinstance(r, BaseException):
            raise client_failure("read", key, r, legacy_bounds(req)) from r
        return r[0], version_of(r[1]), size_of(r[1])

    def get_ranges_as_ready(
        self, requests: Sequence[ReadRequest]
    ) -> Iterator[list[tuple[int, Any, Any, int | None]]]:
        """Every merged ``GET`` sent now (one round); each answer handed over as soon as it is in. One
        request is sent from the calling thread (nothing to overlap), its answer taken the same way."""
        if not requests:
            return iter([])
        plan = plan_reads(normalize_requests(requests), self.coalesce_gap, self.max_coalesced_size)
        self.stats.add(reads=len(plan.merged), rounds=1)  # sent, whether or not the answers are taken
        if len(plan.merged) < 2:
            return self._as_ready(plan, [(0, outcome(self._get_sync, plan.merged[0]))])
        pool = io_threads(self.concurrency)
        futures = {pool.submit(outcome, self._get_sync, m): j for j, m in enumerate(plan.merged)}
        return self._as_ready(plan, ((futures[f], f.result()) for f in as_completed(futures)))

    def _as_ready(
        self, plan: CoalescePlan, outcomes: Iterable[tuple[int, Any]]
    ) -> Iterator[list[tuple[int, Any, Any, int | None]]]:
        """Per ``(merged request, outcome)`` as they come, the answers of the requests it merged."""
        answers: dict[int, list[int]] = {}  # merged request -> the requests it answers
        for i, part in enumerate(plan.parts):
            answers.setdefault(part[0], []).append(i)
        for m, r in outcomes:
            key, req = plan.merged[m]
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

    def stat(self, key: str) -> tuple[int, float | int | str] | None:
        meta = self._heads([normalize_key(key)])[0]
        if meta is None:
            return None
        v = version_of(meta)
        return int(meta["size"]), (v if v is not None else int(meta["size"]))

    # --- writes ---------------------------------------------------------------------------------------
    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        self.set_many([(key, value)])

    def set_many(self, items: Sequence[tuple[str, bytes | bytearray | memoryview]]) -> None:
        """Write many objects with concurrent PUTs (one round); inside :meth:`exclusive`, conditioned on
        the version read (:class:`~altarr.errors.WriteConflictError` names the objects changed meanwhile)."""
        if not items:
            return
        keys = [self._check_key_for_write(k, "write") for k, _ in items]
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
        """Condition the writes of ``keys`` on the versions read inside, where the backend can
        (:attr:`concurrent_writes` ``"conditional"``); elsewhere this does nothing.

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
        return self._scope.keys

    def _recorded(self) -> dict[str, Any]:
        versions = self._scope.versions
        return {} if versions is None else versions

    def _record(self, keys: Sequence[str], outcomes: Sequence[Any]) -> None:
        """Record the versions reads of watched keys saw; two different ones are a conflict."""
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
        """Delete many objects; whether each existed (a ``HEAD`` each first: S3 reports no difference).
        Inside :meth:`exclusive`, an object changed since it was read is left and named by
        :class:`~altarr.errors.WriteConflictError`."""
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
        return (key for key, _ in self.list_sized(prefix))

    def list_sized(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        prefix = normalize_key(prefix)
        self.stats.add(lists=1, rounds=1)
        pre = prefix + "/" if prefix else ""
        try:
            pages = self._obs.list(self._store, pre or None)
            sized = [(m["path"], m["size"]) for page in pages for m in page]
        except FileNotFoundError:
            sized = []
        except Exception as e:
            raise client_failure("listing", prefix or None, e) from e
        return iter(sorted((k, int(n)) for k, n in sized if k.startswith(pre) and k != prefix))

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
