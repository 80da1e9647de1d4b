#!/usr/bin/env python
"""The floor of ``bench_remote.py``'s read lines with obstore: a bare client with no altarr code that
sends exactly the requests altarr sent for a line, in the same rounds, and does the least work that
gives the same arrays (``benchmarks/README.md``, "bench_remote floor with obstore (session 9)").

:func:`record` takes the requests of one altarr call from the counting server's log (``netservers.py``):
``(path, Range)`` per request, grouped into rounds (requests in flight together). :class:`Floor`
replays them: a round of one request on the calling thread, a larger one from a thread per request
(obstore's synchronous ``get`` + ``bytes()``); each thread decodes the chunks its answer holds that the
call needs straight into the result, with the tree's C kernel (``read_chunks``, loaded from its file
alone) or numcodecs' public ``Zstd().decode(buf, out=...)`` and a copy; the next round starts when the
previous one is done. A result of 1 MiB or more has its pages touched while the first round is out.
Where each needed chunk lies is worked out once, on the untimed warm-up call, from the shard indexes
in the answers: the timed calls parse no metadata and no index, so the floor is a lower bound. Chunks
are decoded once per call (``boxes_loop``: once per box, as its 8 calls do).

``bench_remote.py --floor kernel`` runs it as one more worker in the turns of ``--against`` and
``--aa``: its paired ratio to the other tree is the best obstore allows with these requests.
``write_boxes`` has no floor. Routes of obstore tried for it: the README section.
"""

from __future__ import annotations

import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_remote import Geometry, make_volume, selections

#: bytes of a shard's index: (offset, nbytes) uint64 per chunk, then a crc32c
INDEX_ENTRY = 16
PAGE = 4096
#: results from this many bytes have their pages touched during the first round (as altarr does)
TOUCH_FROM = 1 << 20


def record(log: Any, call: Any) -> list[list[tuple[str, str | None]]]:
    """The rounds of ``(path, Range)`` requests the server saw for one ``call()`` (in flight together:
    one round; the server's latency makes the intervals of one round overlap)."""
    log.reset()
    call()
    log.requests()  # fetches the log of a server in another process
    rounds: list[list[tuple[str, str | None]]] = []
    end = float("-inf")
    for method, path, rng, t0, t1 in sorted(log.entries, key=lambda e: e[3]):
        if method != "GET":
            raise ValueError(f"the floor replays reads only: {method} {path}")
        if t0 > end:
            rounds.append([])
            end = t1
        end = max(end, t1)
        rounds[-1].append((path.split("?")[0], rng))
    return rounds


def range_option(rng: str | None) -> Any:
    """obstore's ``range`` of a ``Range`` header (None: the whole object).

    >>> range_option("bytes=-1028"), range_option("bytes=5-9"), range_option(None)
    ({'suffix': 1028}, (5, 10), None)
    """
    if rng is None:
        return None
    first, last = rng.removeprefix("bytes=").split("-")
    return {"suffix": int(last)} if first == "" else (int(first), int(last) + 1)


def load_kernel(tree: Path) -> Any:
    """The C kernel of the altarr checkout ``tree`` (``read_chunks``: decode and scatter many chunks in
    one call without the GIL), loaded from its file alone: no module of altarr's Python is imported."""
    import importlib.util

    path = next((tree / "src" / "altarr").glob("_native*.so"))
    spec = importlib.util.spec_from_file_location("_native", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Floor:
    """The floor of one server's lines: ``read(scenario)`` returns the arrays of altarr's call.
    ``decoder``: ``"numcodecs"`` (a chunk a call, copied into each result it feeds) or ``"kernel"``
    (:func:`load_kernel`: an answer's chunks of one result in one call)."""

    def __init__(
        self, kind: str, base: str, endpoint: str | None, geo: Geometry, rounds: dict, decoder: str
    ) -> None:
        import obstore
        from numcodecs import Zstd
        from obstore.store import from_url

        opts = {"endpoint": endpoint} if kind == "s3" else {}
        self.store = from_url(base, client_options={"allow_http": True}, **opts)
        self.base_path = base.split("://")[1].split("/", 1)[1]
        self.obs, self.geo, self.rounds, self.codec = obstore, geo, rounds, Zstd()
        self.kernel = load_kernel(Path(__file__).resolve().parents[1]) if decoder == "kernel" else None
        self.io = ThreadPoolExecutor(64)
        self.local = threading.local()
        self.plans: dict[str, list] = {}

    def _key(self, path: str) -> str:
        return path.split(self.base_path + "/", 1)[1]

    def _get(self, key: str, rng: Any) -> Any:
        return self.obs.get(self.store, key, options={} if rng is None else {"range": rng}).bytes()

    def read(self, scen: str) -> list[np.ndarray]:
        if scen not in self.plans:  # the warm-up call
            sels = selections(self.geo)["boxes" if scen == "boxes_loop" else scen]
            shapes = [[s.stop - s.start for s in _bounded(sel, self.geo)] for sel in sels]
            self.plans[scen] = (shapes, self._plan(scen, sels))
        shapes, plan = self.plans[scen]
        outs = [np.empty(shape, "uint16") for shape in shapes]
        # a large result's pages are faulted in while the first round (the metadata: no chunks) is out
        touch = sum(out.nbytes for out in outs) >= TOUCH_FROM
        for r, (requests, pieces) in enumerate(zip(self.rounds[scen], plan, strict=True)):
            if len(requests) == 1 and not (touch and r == 0):  # nothing to overlap: no hand-over
                self._answer(requests[0], pieces.get(0, ()), outs)
                continue
            futures = [
                self.io.submit(self._answer, q, pieces.get(i, ()), outs) for i, q in enumerate(requests)
            ]
            for out in outs if touch and r == 0 and not pieces else ():
                out.reshape(-1)[:: PAGE // out.itemsize] = 0
            for f in futures:
                f.result()
        return outs

    def _answer(self, request: tuple[str, str | None], pieces: Any, outs: list[np.ndarray]) -> None:
        """One GET, then the chunks it holds decoded into the results, on the thread that got it."""
        body = self._get(self._key(request[0]), range_option(request[1]))
        if self.kernel is not None:
            for j, tasks in pieces:
                status = np.ones(len(tasks) // 15, "int32")
                chunk = (self.geo.chunk,) * 3
                self.kernel.read_chunks([body], tasks, np.zeros(1, "int64"), status, outs[j], chunk, 1)
                if status.any():
                    raise ValueError(f"kernel status {status.tolist()}")
            return
        view = memoryview(body)
        tmp = getattr(self.local, "tmp", None)
        if tmp is None:
            tmp = self.local.tmp = np.empty((self.geo.chunk,) * 3, "uint16")
        for lo, hi, copies in pieces:
            self.codec.decode(view[lo:hi], out=tmp)
            for j, dst, src in copies:
                outs[j][dst] = tmp[src]

    def _plan(self, scen: str, sels: list) -> list[dict[int, Any]]:
        """Per round, per request: its pieces, ``(lo, hi, copies)`` of each needed chunk in its answer
        (``copies``: ``(result, its region, the chunk's region)``); for the kernel, ``(result, tasks)``.
        Worked out from a pass over the requests."""
        g, answers = self.geo, []
        for requests in self.rounds[scen]:
            got = [self._get(self._key(p), range_option(r)) for p, r in requests]
            answers.append(
                [(self._key(p), range_option(r), bytes(b)) for (p, r), b in zip(requests, got, strict=True)]
            )
        flat = [(k, rng, b) for rs in answers for k, rng, b in rs]
        n_index = (g.shard // g.chunk) ** 3 * INDEX_ENTRY + 4
        index = {k: b[-n_index:] for k, rng, b in flat if rng is None or isinstance(rng, dict)}
        wanted: dict[tuple, list] = {}  # (call, chunk) -> its copies (boxes_loop: 8 calls; else 1)
        for j, sel in enumerate(sels):
            box = _bounded(sel, g)
            grid = [range(s.start // g.chunk, (s.stop - 1) // g.chunk + 1) for s in box]
            for c in product(*grid):
                pairs = [
                    (max(s.start, i * g.chunk), min(s.stop, (i + 1) * g.chunk))
                    for s, i in zip(box, c, strict=True)
                ]
                dst = tuple(slice(a - s.start, b - s.start) for (a, b), s in zip(pairs, box, strict=True))
                src = tuple(
                    slice(a - i * g.chunk, b - i * g.chunk) for (a, b), i in zip(pairs, c, strict=True)
                )
                wanted.setdefault((j if scen == "boxes_loop" else 0, c), []).append((j, dst, src))
        plan: list[dict[int, list]] = [{} for _ in answers]
        for (_, c), copies in wanted.items():
            per = g.shard // g.chunk
            key = "c/" + "/".join(str(i // per) for i in c)
            entries = np.frombuffer(index[key][:-4], "<u8").reshape(per, per, per, 2)
            off, nbytes = (int(v) for v in entries[tuple(i % per for i in c)])
            r, i, lo = _find(answers, key, off, nbytes)
            plan[r].setdefault(i, []).append((lo, lo + nbytes, copies))
        return plan if self.kernel is None else [{i: _tasks(p) for i, p in r.items()} for r in plan]


def _tasks(pieces: list) -> list[tuple[int, np.ndarray]]:
    """The kernel's task rows of an answer's pieces, per result: source 0, offset, length, then per
    dimension (start in the chunk, step 1, count, start in the result)."""
    rows: dict[int, list] = {}
    for lo, hi, copies in pieces:
        for j, dst, src in copies:
            dims = [(s.start, 1, s.stop - s.start, d.start) for s, d in zip(src, dst, strict=True)]
            rows.setdefault(j, []).append([0, lo, hi - lo, *[v for d in dims for v in d]])
    return [(j, np.array(r, "int64").reshape(-1)) for j, r in rows.items()]


def _find(answers: list, key: str, off: int, nbytes: int) -> tuple[int, int, int]:
    """The first answer holding bytes ``off:off+nbytes`` of ``key``: its round, place, start in it."""
    for r, answers_r in enumerate(answers):
        for i, (k, rng, body) in enumerate(answers_r):
            start = 0 if rng is None else rng[0] if isinstance(rng, tuple) else None
            if k == key and start is not None and start <= off and off + nbytes <= start + len(body):
                return r, i, off - start
    raise LookupError(f"no answer holds bytes {off}:{off + nbytes} of {key}")


def _bounded(sel: tuple, geo: Geometry) -> list[slice]:
    return [slice(*s.indices(geo.n)[:2]) for s in sel]


def worker_main(kind: str, base: str, endpoint: str, size: int, options: str) -> None:
    """:func:`bench_remote.worker_main`'s protocol, with the floor in place of altarr; ``options``: JSON,
    ``{"rounds": {scenario: its recorded rounds}, "decoder": ...}``."""
    geo = Geometry(size, size // 2, size // 8)
    opts = json.loads(options)
    floor = Floor(kind, base, None if endpoint == "-" else endpoint, geo, opts["rounds"], opts["decoder"])
    data = make_volume(geo.n)
    print(json.dumps({"altarr": f"floor (altarr imported: {'altarr' in sys.modules})"}), flush=True)
    import gc
    import time

    for line in sys.stdin:
        ask = json.loads(line)
        scen = ask["scenario"]
        try:
            gc.collect()
            t = time.perf_counter()
            result = floor.read(scen)
            t = time.perf_counter() - t
            if ask["check"]:
                sels = selections(geo)["boxes" if scen == "boxes_loop" else scen]
                for got, s in zip(result, sels, strict=True):
                    np.testing.assert_array_equal(got, data[s])
            reply: dict[str, Any] = {"t": t}
        except Exception as e:
            reply = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    _, _, kind, base, endpoint, size, options = sys.argv  # bench_remote.Worker's command line
    worker_main(kind, base, endpoint, int(size), options)
