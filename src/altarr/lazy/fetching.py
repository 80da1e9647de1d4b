"""The fetch contract (docs/lazy-arrays.md): :class:`FetchSource`, the leaf of every lazy array, calls a
user ``fetch(chunks)``, sync or async, validates what it returns and keeps the counters and the link to
the shared cache.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import itertools
import threading
import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol, cast

import numpy as np

from ..errors import FetchError
from . import options
from .cache import CACHE, Key

__all__ = ["FetchSource", "Counters", "run_awaitable", "COUNTER_NAMES"]

#: Counters kept per fetch source (zeroed by :func:`altarr.reset`).
COUNTER_NAMES = (
    "extract_subset",
    "hyperslab",
    "reduce",
    "materialize",
    "fetch_calls",
    "chunks_fetched",
    "bytes_fetched",
    "cache_hits",
    "cache_misses",
)

_tokens = itertools.count(1)
_reads = itertools.count(1)

#: The guard that keeps a lazy read to one version of each shard (docs/engine.md). ``False`` only in the
#: tests that show the concurrency soak detects mixed versions without it.
SHARD_VERSION_GUARD = True


class Counters:
    """Thread-safe operation and I/O counters of one fetch source."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values = dict.fromkeys(COUNTER_NAMES, 0)

    def add(self, name: str, amount: int = 1) -> None:
        with self._lock:
            self._values[name] += amount

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._values)

    def reset(self) -> None:
        with self._lock:
            for name in self._values:
                self._values[name] = 0


async def _await(awaitable: Any) -> Any:
    return await awaitable


def run_awaitable(awaitable: Any) -> Any:
    """Run an awaitable to completion: ``asyncio.run``, in a helper thread inside a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(awaitable))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _await(awaitable)).result()


def _describe_chunks(coords: np.ndarray, limit: int = 4) -> str:
    rows = [tuple(int(v) for v in r) for r in coords[:limit]]
    more = f" and {len(coords) - limit} more" if len(coords) > limit else ""
    return ", ".join(map(str, rows)) + more


class GroupedFetch(Protocol):
    """A fetch that names the group (shard) of each chunk, as :class:`~altarr.lazy.sources.DatasetFetch`."""

    def chunk_groups(self, chunks: np.ndarray) -> Sequence[Hashable] | None: ...
    def current_versions(self, groups: Sequence[Any]) -> dict[Any, Any] | None: ...
    def visit(self, chunks: np.ndarray, fn: Any) -> None: ...
    def fetch_versioned(self, chunks: np.ndarray) -> tuple[list[np.ndarray], dict[Any, Any]]: ...


class FetchSource:
    """The leaf of a lazy array: ``fetch``, geometry, counters and the cache owner token (shared by copies;
    unpickling makes a fresh one)."""

    def __init__(
        self, fetch: Callable[..., Any], shape: tuple[int, ...], chunks: tuple[int, ...], dtype: np.dtype
    ):
        self.fetch = fetch
        self.shape = tuple(int(s) for s in shape)
        self.chunks = tuple(int(c) for c in chunks)
        self.dtype = np.dtype(dtype)
        self.ndim = len(self.shape)
        self.token: Hashable = ("altarr-source", next(_tokens))
        self.counters = Counters()
        self._shape_arr = np.asarray(self.shape, dtype=np.int64)
        self._chunks_arr = np.asarray(self.chunks, dtype=np.int64)
        # Free this source's cache entries when it is garbage-collected.
        weakref.finalize(self, CACHE.forget_owner_later, self.token)

    # --- pickling: the recipe only --------------------------------------------------------------------
    def __reduce__(self) -> tuple[Any, ...]:
        return (FetchSource, (self.fetch, self.shape, self.chunks, self.dtype.str))

    def leaves(self) -> list[FetchSource]:
        return [self]

    def describe(self) -> str:
        name = getattr(self.fetch, "__qualname__", None) or type(self.fetch).__name__
        return f"fetch={name}"

    def dask_token(self) -> Any:
        tok = getattr(self.fetch, "__dask_tokenize__", None)
        return ("altarr-fetch", tok()) if callable(tok) else self.token

    # --- geometry --------------------------------------------------------------------------------------
    def extents(self, coords: np.ndarray) -> np.ndarray:
        """Clipped chunk shapes, ``(n, ndim)``."""
        start = coords * self._chunks_arr
        clipped: np.ndarray = np.minimum(self._chunks_arr, self._shape_arr - start)
        return clipped

    def keys(self, coords: np.ndarray) -> list[tuple[Hashable, tuple[int, ...]]]:
        tok = self.token
        return [(tok, tuple(row)) for row in coords.tolist()]

    def row_missing_nbytes(self, coords: np.ndarray) -> np.ndarray:
        """Bytes each row would cost to fetch (0 where cached)."""
        if len(coords) == 0:
            return np.zeros(0, dtype=np.int64)
        nbytes = self.extents(coords).prod(axis=1) * self.dtype.itemsize
        cached = np.asarray(CACHE.contains(self.keys(coords)), dtype=bool)
        return np.where(cached, 0, nbytes)

    # --- reading: one version of each shard in a read (docs/engine.md) --------------------------------
    def get_chunks(self, coords: np.ndarray, *, store: bool) -> list[np.ndarray]:
        """The chunks at ``coords`` (unique rows), in row order: cached ones as they are, the missing ones
        in one fetch call (waiting for those another thread is fetching), cached when ``store``. A fetch
        that names each chunk's shard (:class:`GroupedFetch`) gives one version of each shard: a cached
        chunk is used only while it is current, and a shard read at two versions is read again whole."""
        keys = self.keys(coords)
        groups = self._groups(coords)
        by_group = None if groups is None else _rows_by_group(groups)
        claims = CACHE.claim(keys)
        got: list[Any] = [(obj, version) if kind == "hit" else None for kind, obj, version in claims]
        if by_group is not None:
            self._drop_stale(got, by_group)
        if hits := sum(g is not None for g in got):
            self.counters.add("cache_hits", hits)
        waits = [(i, c[1]) for i, c in enumerate(claims) if c[0] == "wait"]
        todo = [i for i, c in enumerate(claims) if got[i] is None and c[0] != "wait"]
        try:
            while todo or waits:
                for i, entry in zip(todo, self._fetch_rows(coords, todo, keys, groups, store), strict=True):
                    got[i] = entry
                todo = []
                for i, flight in waits:  # after our own fetch: two threads never wait for each other
                    if flight.exception() is None:
                        got[i] = flight.result()
                    else:  # the thread we waited for failed: fetch those ourselves
                        todo.append(i)
                waits = []
                if by_group is not None and not todo:
                    todo = _mixed_rows(got, by_group)  # whole shards: one call reads one version of each
        except BaseException as e:
            CACHE.fail([keys[i] for i, c in enumerate(claims) if c[0] == "mine"], e)
            raise
        return [g[0] for g in got]

    def _fetch_rows(
        self, coords: np.ndarray, rows: list[int], keys: list[Key], groups: list[Hashable] | None, store: bool
    ) -> list[tuple[np.ndarray, Hashable]]:
        """``(chunk, version)`` of ``rows`` in one fetch call, published to the threads waiting for them
        and cached when ``store``. The version of a shard is the one the fetch reports, else a token of
        this read (cached chunks of two reads are never one version); ``None`` without ``groups``."""
        if not rows:
            return []
        self.counters.add("cache_misses", len(rows))
        reported: dict[Hashable, Any] = {}

        def versioned(request: np.ndarray) -> Any:
            result, versions = self._grouped().fetch_versioned(request)
            reported.update(versions)
            return result

        values = self._fetch_validated(coords[rows], None if groups is None else versioned)
        versions: list[Hashable] = [None] * len(rows)
        if groups is not None:
            read = ("read", next(_reads))
            versions = [read if (v := reported.get(groups[i])) is None else v for i in rows]
        if store:
            values = [_compact(v) for v in values]
        got = list(zip(values, versions, strict=True))
        CACHE.complete([keys[i] for i in rows], got, store=store, budget=options._get("cache_bytes"))
        return got

    def visit_chunks(self, coords: np.ndarray, fn: Callable[[int, np.ndarray], Any]) -> None:
        """``fn(i, chunk)`` for every row of ``coords``, caching nothing. The fetch's ``visit(chunks, fn)``,
        when it has one, streams the chunks of the shards none of whose requested chunks are cached
        (``fn`` then runs on its threads, with chunks valid only during the call); the others come from
        :meth:`get_chunks` (so cached and read chunks of a shard share a version)."""
        if not callable(getattr(self.fetch, "visit", None)):
            for i, chunk in enumerate(self.get_chunks(coords, store=False)):
                fn(i, chunk)
            return
        cached = CACHE.contains(self.keys(coords))
        groups = self._groups(coords)
        if groups is not None:
            read_with_cached = {g for g, c in zip(groups, cached, strict=True) if c}
            cached = [g in read_with_cached for g in groups]
        rest = np.flatnonzero(cached)
        if len(rest):
            for i, chunk in zip(rest.tolist(), self.get_chunks(coords[rest], store=False), strict=True):
                fn(i, chunk)
        rows = np.flatnonzero(~np.asarray(cached, dtype=bool))
        if len(rows):
            self._stream(coords, rows, fn)

    def _grouped(self) -> GroupedFetch:
        return cast(GroupedFetch, self.fetch)

    def _groups(self, coords: np.ndarray) -> list[Hashable] | None:
        fn = getattr(self.fetch, "chunk_groups", None)
        return fn(coords) if callable(fn) and SHARD_VERSION_GUARD else None

    def _drop_stale(self, got: list[Any], by_group: dict[Hashable, list[int]]) -> None:
        """Forget the cached ``(chunk, version)`` of ``got`` that this read may not use: where the fetch
        tells the current versions, those of another; elsewhere all of a shard unless every requested
        chunk of it is cached from one read (``by_group``: the rows of each shard)."""
        current = self._grouped().current_versions(list(by_group))
        for g, rows in by_group.items():
            hits = [got[i] for i in rows]
            if current is not None:
                keep = [h is not None and h[1] == current.get(g) for h in hits]
            else:
                one_read = all(h is not None for h in hits) and len({h[1] for h in hits}) == 1
                keep = [one_read] * len(rows)
            for i, k in zip(rows, keep, strict=True):
                if not k:
                    got[i] = None

    def _stream(self, coords: np.ndarray, rows: np.ndarray, fn: Callable[[int, np.ndarray], Any]) -> None:
        request = np.array(coords[rows], dtype=np.int64, order="C", copy=True)
        extents = self.extents(request)
        self.counters.add("cache_misses", len(rows))
        self.counters.add("fetch_calls")
        seen = np.zeros(len(rows), dtype=bool)

        def checked(j: int, values: Any) -> None:
            arr = validate([values], request[j : j + 1], extents[j : j + 1], self.dtype)[0]
            seen[j] = True
            fn(int(rows[j]), arr)

        try:
            self._grouped().visit(request, checked)
        except Exception as e:
            e.add_note(f"altarr: raised by fetch.visit() asked for chunks {_describe_chunks(request)}")
            raise
        if not seen.all():
            raise FetchError("fetch.visit() skipped a requested chunk", chunk=request[int(np.argmin(seen))])
        self.counters.add("chunks_fetched", len(rows))
        self.counters.add("bytes_fetched", int(extents.prod(axis=1).sum()) * self.dtype.itemsize)

    def _fetch_validated(
        self, coords: np.ndarray, call: Callable[[np.ndarray], Any] | None = None
    ) -> list[np.ndarray]:
        request = np.array(coords, dtype=np.int64, order="C", copy=True)
        self.counters.add("fetch_calls")
        try:
            result = (call or self.fetch)(request)
            if inspect.isawaitable(result):
                result = run_awaitable(result)
        except Exception as e:
            e.add_note(f"altarr: raised by fetch() asked for chunks {_describe_chunks(coords)}")
            raise
        values = validate(result, coords, self.extents(coords), self.dtype)
        self.counters.add("chunks_fetched", len(values))
        self.counters.add("bytes_fetched", sum(v.nbytes for v in values))
        return values


def _mixed_rows(got: list[Any], by_group: dict[Hashable, list[int]]) -> list[int]:
    """The rows of the shards (``by_group``: the rows of each) whose ``(chunk, version)`` in ``got`` come
    from two versions."""
    return [i for rows in by_group.values() if len({got[j][1] for j in rows}) > 1 for i in rows]


def _rows_by_group(groups: Sequence[Hashable]) -> dict[Hashable, list[int]]:
    """The rows of each group, groups in first-seen order."""
    out: dict[Hashable, list[int]] = {}
    for i, g in enumerate(groups):
        out.setdefault(g, []).append(i)
    return out


def _compact(arr: np.ndarray) -> np.ndarray:
    """A chunk to cache: copied when it is a small view of a much larger buffer (so the cache's byte count
    is the memory it holds)."""
    if arr.base is None:
        return arr
    base: Any = arr.base
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    try:
        held = base.nbytes if isinstance(base, np.ndarray) else memoryview(base).nbytes
    except TypeError:
        return arr
    return arr.copy() if held > 2 * arr.nbytes else arr


def validate(result: Any, coords: np.ndarray, extents: np.ndarray, dtype: np.dtype) -> list[np.ndarray]:
    """Check a fetch result against the contract; return arrays of the clipped shapes and ``dtype``."""
    n = len(coords)
    if not hasattr(result, "__len__") and hasattr(result, "__iter__") and not isinstance(result, str | bytes):
        result = list(result)  # a generator of chunks
    if (isinstance(result, np.ndarray) and result.ndim == 0) or not hasattr(result, "__len__"):
        raise FetchError(
            f"fetch returned {type(result).__name__}, expected a sequence of {n} arrays (one per chunk row)",
            chunk=coords[0],
        )
    got = len(result)
    if got != n:
        first_bad = coords[min(got, n - 1)]
        raise FetchError(
            f"fetch returned {got} values for {n} requested chunks ({_describe_chunks(coords)})",
            chunk=first_bad,
        )
    out: list[np.ndarray] = []
    for i, value in enumerate(result):
        ext = tuple(int(e) for e in extents[i])
        try:
            arr = np.asarray(value)
            if arr.dtype != dtype:
                arr = arr.astype(dtype)
        except Exception as e:  # ValueError, TypeError, OverflowError from NumPy's conversion
            raise FetchError(
                f"fetch returned a value that cannot be converted to {dtype} ({type(value).__name__}: {e})",
                chunk=coords[i],
            ) from e
        if arr.shape != ext:
            size = int(np.prod(ext))
            if arr.ndim == 1 and arr.size == size:
                arr = arr.reshape(ext)
            else:
                raise FetchError(
                    f"fetch returned shape {arr.shape} for a chunk of clipped shape {ext}; "
                    f"expected that shape or {size} values flat in C order",
                    chunk=coords[i],
                )
        out.append(arr)
    return out
