"""Read pipelining for remote stores: decode the shards that have arrived while the others are in flight.

A region read of a sharded array on an object store costs one round per shard level plus one for data
(see :mod:`altarr.dataset.access`); without pipelining every chunk is decoded only after the round's
last byte arrived. Here the outer shards of one read are split into a few *streams*; each stream runs
the ordinary :meth:`DatasetAccess.read_raw <altarr.dataset.access.DatasetAccess.read_raw>` on its own
shards, and the decode of a stream's chunks starts as soon as its bytes are in, on altarr's pool, while
the other streams' requests are still on the wire.

The streams do not cost rounds: their store calls meet at a *rendezvous* (:class:`_Rendezvous`) that
waits until every live stream has asked (or finished), sends all their requests as one batch through the
store's :meth:`~altarr.stores.base.Store.get_ranges_as_completed` (coalesced as one ``get_ranges`` call
would be, one round) and wakes each stream as soon as its own requests have completed. Request and
round counts are those of the unpipelined read; so are the index cache, the version checks and the
retries of a shard replaced mid-read (they are ``read_raw``'s own, per stream).

Used only where it can gain: a sharded array, a store that declares ``streaming_reads`` and has no open
readers (local files already overlap reading and decoding per chunk), at least two outer shards, and a
pool of at least two threads.

Example:
    >>> import numpy as np, altarr as aa
    >>> from altarr.stores.obstore_store import ObstoreStore
    >>> store = ObstoreStore("memory://")  # obstore's in-memory backend: a streaming store
    >>> ds = aa.create_dataset(store, shape=(8, 8), dtype="uint8", chunks=(2, 2), shards=(4, 4))
    >>> ds[...] = np.arange(64, dtype="u1").reshape(8, 8)
    >>> streams(ds._access, [(0, 0), (3, 3)])  # two shards, a streaming store
    True
    >>> store.stats.reset(); int(ds[...].sum()), store.stats.reads, store.stats.rounds  # 4 shards, 1 round
    (2016, 4, 1)
"""

from __future__ import annotations

import copy
import queue
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._threads import get_threads
from . import kernel
from .parallel import pmap

if TYPE_CHECKING:
    from .access import DatasetAccess

__all__ = ["streams", "visit", "MAX_STREAMS", "ENABLED"]

Chunk = tuple[int, ...]

#: Outer shards of one read are dealt over at most this many streams (each a waiting thread).
MAX_STREAMS = 16

#: Set to ``False`` to read every round whole before decoding (the benchmarks compare both).
ENABLED = True


def streams(acc: DatasetAccess, chunks: Sequence[Chunk]) -> bool:
    """Whether a read of ``chunks`` is pipelined (see the module docstring)."""
    store = acc.store
    if (
        not ENABLED
        or not acc.sharded
        or not getattr(store, "streaming_reads", False)
        or hasattr(store, "open_reader")
    ):
        return False
    if get_threads() < 2 or len(chunks) < 2:
        return False
    first = acc.shard_of(chunks[0])
    return any(acc.shard_of(c) != first for c in chunks)


class _Call:
    __slots__ = ("requests", "results", "versions", "left", "done", "error")

    def __init__(self, requests: list) -> None:
        self.requests = requests
        self.results: list[Any] = [None] * len(requests)
        self.versions: list[Any] = [None] * len(requests)
        self.left = len(requests)
        self.done = threading.Event()
        self.error: BaseException | None = None


class _Rendezvous:
    """A stand-in for the store seen by the streams' ``read_raw``: their batched reads are gathered into
    one streaming store call per round (see the module docstring). Other attributes are the store's."""

    def __init__(self, store: Any, participants: int) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._live = participants
        self._waiting: list[_Call] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def get_ranges(self, requests: Sequence[Any]) -> list[Any]:
        return self._call(requests)[0]

    def get_ranges_versioned(self, requests: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        return self._call(requests)

    def leave(self) -> None:
        """A stream is done with the store (finished or failed): the others no longer wait for it."""
        with self._lock:
            self._live -= 1
            batch = self._ready()
        if batch:
            self._start(batch)

    def _call(self, requests: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        call = _Call(list(requests))
        if call.left:
            with self._lock:
                self._waiting.append(call)
                batch = self._ready()
            if batch:
                self._start(batch)
            call.done.wait()
        if call.error is not None:
            raise call.error
        return call.results, call.versions

    def _ready(self) -> list[_Call]:
        if self._waiting and len(self._waiting) >= self._live:
            batch, self._waiting = self._waiting, []
            return batch
        return []

    def _start(self, batch: list[_Call]) -> None:
        threading.Thread(target=self._serve, args=(batch,), name="altarr-stream", daemon=True).start()

    def _serve(self, batch: list[_Call]) -> None:
        requests: list[Any] = []
        owners: list[tuple[_Call, int]] = []
        for call in batch:
            requests += call.requests
            owners += [(call, j) for j in range(len(call.requests))]
        try:
            for i, data, version in self._store.get_ranges_as_completed(requests):
                call, j = owners[i]
                call.results[j], call.versions[j] = data, version
                call.left -= 1
                if call.left == 0:
                    call.done.set()
        except BaseException as e:  # noqa: BLE001 - every waiting stream gets it
            for call in batch:
                if not call.done.is_set():
                    call.error = e
                    call.done.set()
            return
        for call in batch:  # (a store that yields fewer results than asked would otherwise hang them)
            if not call.done.is_set():
                call.error = RuntimeError(f"{self._store!r} answered {call.left} requests too few")
                call.done.set()


class _CacheView:
    """The access's index cache, reading through the rendezvous (entries and counters are shared)."""

    def __init__(self, cache: Any, store: _Rendezvous) -> None:
        self._cache = cache
        self.store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cache, name)

    def read(self, requests: list) -> tuple[list, list]:
        return type(self._cache).read(self, requests)


def visit(
    acc: DatasetAccess,
    chunks: list[Chunk],
    fn: Callable[[Chunk, np.ndarray], Any],
    *,
    versions: dict[str, Any] | None = None,
    into: tuple[np.ndarray, dict[Chunk, Any]] | None = None,
) -> None:
    """:meth:`DatasetAccess.visit <altarr.dataset.access.DatasetAccess.visit>` with each stream's chunks
    decoded as soon as they arrived (same arguments, same effects)."""
    by_shard = acc.group_by_shard(chunks)
    n = min(MAX_STREAMS, len(by_shard))
    parts: list[list[Chunk]] = [[] for _ in range(n)]
    for i, group in enumerate(by_shard.values()):
        parts[i % n] += group
    # the object that reads a shard's raw chunks: the engine's ShardReader where the access is split into
    # parts (``acc.reader``), else the access itself; a copy of it reads through the rendezvous
    reader = getattr(acc, "reader", acc)
    proxy = _Rendezvous(acc.store, n)
    sub = copy.copy(reader)
    sub.index_cache = _CacheView(reader.index_cache, proxy)
    arrived: queue.SimpleQueue = queue.SimpleQueue()

    def stream(part: list[Chunk]) -> None:
        seen: dict[str, Any] | None = {} if versions is not None else None
        try:
            raw = sub.read_raw(part, versions=seen)
        except BaseException as e:  # noqa: BLE001 - re-raised by the calling thread
            arrived.put((part, None, None, e))
            return
        finally:
            proxy.leave()
        arrived.put((part, raw, seen, None))

    for part in parts:
        threading.Thread(target=stream, args=(part,), name="altarr-stream", daemon=True).start()
    fill = np.asarray(acc.fill_value, dtype=acc.dtype)
    raw: dict[Chunk, Any] = {}

    def one(chunk: Chunk) -> None:
        got = raw[chunk]
        if got is None:
            a = np.broadcast_to(fill, acc._clipped(chunk))
        else:
            span = got[2] if len(got) > 2 else None  # the bytes' (start, stop) in their object
            a = acc.decode_chunk(
                reader.materialize(got[0], got[1]), chunk, got[0], scratch=True, byte_range=span
            )
            a = a.view()
            a.flags.writeable = False
        fn(chunk, a)

    error: BaseException | None = None
    left = n
    while left:
        # every stream that has arrived by now is decoded in one go: answers that land together (a fast
        # network) cost one hand-off to the pool, as without pipelining, not one per stream
        batch = [arrived.get()]
        while True:
            try:
                batch.append(arrived.get_nowait())
            except queue.Empty:
                break
        left -= len(batch)
        ready: list[Chunk] = []
        for part, got, seen, err in batch:
            if err is not None and error is None:
                error = err
            if error is not None:
                continue
            if versions is not None and seen:
                versions.update(seen)
            raw.update(got)
            ready += part
        if error is not None or not ready:
            continue
        try:
            rest = kernel.read_into(acc, raw, ready, *into) if into is not None else ready
            pmap(one, rest)
        except BaseException as e:  # noqa: BLE001 - raised after the other streams are drained
            error = e
    if error is not None:
        raise error
