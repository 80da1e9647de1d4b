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
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol, cast

import numpy as np

from ..errors import FetchError
from . import options
from .cache import CACHE

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

    # --- reading ---------------------------------------------------------------------------------------
    def get_chunks(self, coords: np.ndarray, *, store: bool) -> list[np.ndarray]:
        """The chunks at ``coords`` (unique rows), in row order: cached ones as they are, the missing ones
        in one fetch call (waiting for those another thread is fetching), cached when ``store``."""
        n = len(coords)
        if n == 0:
            return []
        groups = self._groups(coords)
        if groups is not None:
            return self._get_consistent(coords, groups, store=store)
        keys = self.keys(coords)
        claims = CACHE.claim(keys)
        out: list[np.ndarray | None] = [None] * n
        mine: list[int] = []
        waits: list[tuple[int, Any]] = []
        for i, (kind, obj) in enumerate(claims):
            if kind == "hit":
                out[i] = obj
            elif kind == "wait":
                waits.append((i, obj))
            else:
                mine.append(i)
        hits = n - len(mine) - len(waits)
        if hits:
            self.counters.add("cache_hits", hits)
        if mine:
            self.counters.add("cache_misses", len(mine))
            my_keys = [keys[i] for i in mine]
            try:
                values = self._fetch_validated(coords[mine])
            except BaseException as e:
                CACHE.fail(my_keys, e)
                raise
            if store:
                values = [_compact(v) for v in values]
            CACHE.complete(my_keys, values, store=store, budget=options._get("cache_bytes"))
            for i, v in zip(mine, values, strict=True):
                out[i] = v
        retry: list[int] = []
        for i, flight in waits:
            if flight.exception() is None:  # waits for the other thread's fetch
                out[i] = flight.result()
            else:
                retry.append(i)
        if retry:  # the thread we waited for failed: fetch those ourselves
            values = self._fetch_validated(coords[retry])
            if store:
                CACHE.complete(
                    [keys[i] for i in retry], values, store=True, budget=options._get("cache_bytes")
                )
            for i, v in zip(retry, values, strict=True):
                out[i] = v
        return cast(list[np.ndarray], out)  # every slot was filled above

    def visit_chunks(self, coords: np.ndarray, fn: Callable[[int, np.ndarray], Any]) -> None:
        """``fn(i, chunk)`` for every row of ``coords``, caching nothing. The missing chunks go through the
        fetch's ``visit(chunks, fn)`` when it has one (``fn`` then runs on its threads, with chunks valid
        only during the call), else through one fetch call."""
        n = len(coords)
        if n == 0:
            return
        visit = getattr(self.fetch, "visit", None)
        if callable(visit) and self._groups(coords) is not None:
            self._visit_consistent(coords, fn)
            return
        if not callable(visit):
            for i, chunk in enumerate(self.get_chunks(coords, store=False)):
                fn(i, chunk)
            return
        cached = np.asarray(CACHE.contains(self.keys(coords)), dtype=bool)
        hits = np.flatnonzero(cached)
        if len(hits):
            for i, chunk in zip(hits.tolist(), self.get_chunks(coords[hits], store=False), strict=True):
                fn(i, chunk)
        rows = np.flatnonzero(~cached)
        if len(rows):
            self._stream(coords, rows, fn)

    # --- sources with shard versions: one version per shard in a read (docs/engine.md) ----------------
    def _grouped(self) -> GroupedFetch:
        return cast(GroupedFetch, self.fetch)

    def _groups(self, coords: np.ndarray) -> list[Hashable] | None:
        fn = getattr(self.fetch, "chunk_groups", None)
        return fn(coords) if callable(fn) and SHARD_VERSION_GUARD else None

    def _usable_hits(self, coords: np.ndarray, groups: list[Hashable]) -> tuple[list[Any], dict]:
        """Cached ``(array, version)`` per row where it may be used in this read (else ``None``), and the
        version of each group those hits come from."""
        cached = CACHE.get_versions(self.keys(coords))
        by_group = _rows_by_group(groups)
        current = self._grouped().current_versions(list(by_group))
        use: list[Any] = [None] * len(coords)
        hit_version: dict[Hashable, Any] = {}
        for g, rows in by_group.items():
            got = [cached[i] for i in rows]
            if current is not None:
                now = current.get(g)
                ok = [i for i, c in zip(rows, got, strict=True) if c is not None and c[1] == now]
            elif all(c is not None for c in got) and len({c[1] for c in got if c is not None}) == 1:
                ok = rows
            else:
                ok = []
            for i in ok:
                use[i] = cached[i]
            if ok:
                hit_version[g] = use[ok[0]][1]
        return use, hit_version

    def _get_consistent(
        self,
        coords: np.ndarray,
        groups: list[Hashable],
        *,
        store: bool,
        found: tuple[list[Any], dict] | None = None,
    ) -> list[np.ndarray]:
        """:meth:`get_chunks` of a grouped fetch; ``found``: :meth:`_usable_hits` when already known."""
        use, hit_version = found if found is not None else self._usable_hits(coords, groups)
        out: list[Any] = [None if u is None else u[0] for u in use]
        todo = [i for i, u in enumerate(use) if u is None]
        if len(coords) > len(todo):
            self.counters.add("cache_hits", len(coords) - len(todo))
        by_group = _rows_by_group(groups)
        budget = options._get("cache_bytes")
        while todo:  # two rounds at most: the second reads no cached chunk, so none can be stale
            self.counters.add("cache_misses", len(todo))
            values, versions = self._fetch_validated_versioned(coords[todo])
            if store:
                values = [_compact(v) for v in values]
                keys = self.keys(coords[todo])
                CACHE.put(keys, values, [versions[groups[i]] for i in todo], budget=budget)
            for i, v in zip(todo, values, strict=True):
                out[i] = v
            # a shard rewritten since its cached chunks were read: every requested chunk of it again
            stale = [
                g
                for g in dict.fromkeys(groups[i] for i in todo)
                if hit_version.get(g, versions[g]) != versions[g]
            ]
            for g in stale:
                del hit_version[g]
            todo = [i for g in stale for i in by_group[g]]
        return cast(list[np.ndarray], out)  # every slot was filled above

    def _visit_consistent(self, coords: np.ndarray, fn: Callable[[int, np.ndarray], Any]) -> None:
        """:meth:`visit_chunks` of a grouped fetch: the shards none of whose requested chunks are cached
        are streamed (one call, one version per shard); the chunks of shards with cached chunks come from
        :meth:`_get_consistent` (so the cached and the read ones share a version)."""
        groups = self._groups(coords)
        assert groups is not None
        use, hit_version = self._usable_hits(coords, groups)
        streamed = np.asarray(
            [i for i, u in enumerate(use) if u is None and groups[i] not in hit_version], dtype=np.int64
        )
        if len(streamed):
            self._stream(coords, streamed, fn)
        rest = [i for i, g in enumerate(groups) if g in hit_version]
        if rest:
            found = ([use[i] for i in rest], hit_version)
            values = self._get_consistent(coords[rest], [groups[i] for i in rest], store=False, found=found)
            for i, v in zip(rest, values, strict=True):
                fn(i, v)

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

    def _fetch_validated_versioned(self, coords: np.ndarray) -> tuple[list[np.ndarray], dict]:
        """The chunks at ``coords`` and the version of every shard they came from: the one the fetch
        reports, else a token of this read (cached chunks of two reads are never one version)."""
        reported: dict[Hashable, Any] = {}

        def call(request: np.ndarray) -> Any:
            result, versions = self._grouped().fetch_versioned(request)
            reported.update(versions)
            return result

        values = self._fetch_validated(coords, call)
        read = ("read", next(_reads))
        versions = defaultdict(lambda: read, {g: read if v is None else v for g, v in reported.items()})
        return values, versions

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
    """Check a fetch result against the contract; return arrays of the clipped shapes and ``dtype``.

    Example:
        >>> validate([[1, 2, 3]], np.array([[0]]), np.array([[3]]), np.dtype("f4"))[0].dtype
        dtype('float32')
    """
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
