#!/usr/bin/env python
"""Network benchmark: altarr against tensorstore and zarr-python (with fsspec and with obstore) over a
loopback HTTP server and a moto S3 server, each waiting a set latency before answering every request.

The array is written once per server by altarr: 256**3 uint16 (``--size``), shards of 128**3, chunks of
32**3, zstd (level 3), a smooth noisy volume from a fixed seed. Every timed call **opens the array
afresh** (a cold open: metadata, then the shard indexes, then the data) and does one scenario:

* ``open_chunk`` - one aligned chunk;
* ``scattered``  - 48 chunks scattered over the array, in one call (altarr ``read_regions``, tensorstore
  ``ts.Batch``, zarr-python ``asyncio.gather`` of its async ``getitem``);
* ``boxes``      - 8 unaligned 48**3 boxes in one call (same APIs);
* ``boxes_loop`` - the same 8 boxes one region at a time (altarr only: the baseline of ``boxes``);
* ``slab``       - one 128x256x256 slab;
* ``whole``      - the whole array;
* ``write_boxes``- (S3 only) 8 unaligned 48**3 boxes written into the existing shards (altarr
  ``write_regions``, tensorstore one ``ts.Transaction``, zarr-python ``gather`` of ``setitem``); the
  values written are the array's own, so every later read still checks against the source.

Each library's result is checked against the source data on the warm-up run. Reported per call: the
median time of ``--repeats`` runs, the requests the server answered and the rounds (requests whose
service intervals overlapped, i.e. were in flight together, count as one round; see ``netservers.py``),
and altarr's time over the best peer's (the peer with the lowest median); from 5 repetitions on, also
the median of the per-repetition ratios to that peer with its 95 % bootstrap interval (``paired``; see
:func:`paired_ratio`), the number to read for a line within a few percent. The servers run in child
processes (their Python must not take the client's GIL).

``--against TREE`` compares altarr with another version of itself (``TREE``: a checkout whose ``src``
holds it, the C kernel built; ``--other-options`` adds options of ``open_dataset`` for that version
only): each version runs in its own worker process, a child that imports
altarr from its tree and this script's code, and the two take turns repetition by repetition (in
alternating order) against the same servers; the table gives each one's median, the requests and rounds
the server saw, and the paired ratio of this tree to the other with its interval (:func:`paired_ratio`).
``--tree TREE`` runs that checkout's altarr as "this tree" instead of the one beside this script.
``--aa TREE2`` adds a third worker, a second checkout of the ``--against`` version, in the same turns
(the three in every order in turn): its paired ratio to the other is the A/A, each line's own noise
measured beside the A/B, and the table says whether the A/B ratio lies inside the A/A interval, below
it or at most 1 ("meets"), or above both ("above").

``--no-etag``: the HTTP server sends no ``ETag`` (a plain static file server): each library's requests
for the same reads, none sent twice.

Fairness: every library is told the format (altarr ``format="zarr3"``, tensorstore's ``zarr3`` driver,
zarr-python ``zarr_format=3``), so none probes for other formats' metadata. 2 worker threads where a library has a setting (altarr ``set_options(threads=2)``, tensorstore
``data_copy_concurrency`` 2 and ``cache_pool`` 0, zarr-python ``threading.max_workers`` 2); network
concurrency is each library's default. Everything runs in one process, one library at a time.

Example:
    python benchmarks/bench_remote.py --latencies 0,5,20 --json remote.json
    python benchmarks/bench_remote.py --quick            # 64**3, latency 5 ms, one repeat
    python benchmarks/bench_remote.py --against ../baseline --latencies 20 --repeats 21
    python benchmarks/bench_remote.py --against ../baseline --aa ../baseline2 --latencies 20 --repeats 24
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from netservers import BUCKET, server_process

THREADS = 2
LIBS = ("altarr", "tensorstore", "zarr-fsspec", "zarr-obstore")
PEERS = ("tensorstore", "zarr-fsspec", "zarr-obstore")
SCENARIOS = ("open_chunk", "scattered", "boxes", "boxes_loop", "slab", "whole", "write_boxes")


@dataclass
class Geometry:
    n: int
    shard: int
    chunk: int

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.n,) * 3


def make_volume(n: int, seed: int = 0) -> np.ndarray:
    """A smooth ramp plus noise (compresses like real images, not like zeros or white noise)."""
    rng = np.random.default_rng(seed)
    i, j, k = np.ogrid[:n, :n, :n]
    smooth = (i * 7 + j * 3 + k) % 4096
    return (smooth + rng.integers(0, 256, (n, n, n))).astype("uint16")


def selections(geo: Geometry, seed: int = 1) -> dict[str, list[tuple[slice, ...]]]:
    rng = np.random.default_rng(seed)
    c, n = geo.chunk, geo.n
    grid = n // c
    flat = rng.choice(grid**3, size=min(48, grid**3), replace=False)
    scattered = [
        tuple(slice(int(v) * c, int(v) * c + c) for v in np.unravel_index(f, (grid,) * 3)) for f in flat
    ]
    box = min(48, n // 2)
    boxes = [tuple(slice(int(s), int(s) + box) for s in rng.integers(0, n - box, 3)) for _ in range(8)]
    one = tuple(slice(min(3, grid - 1) * c, min(3, grid - 1) * c + c) for _ in range(3))
    return {
        "open_chunk": [one],
        "scattered": scattered,
        "boxes": boxes,
        "slab": [(slice(0, geo.shard), slice(None), slice(None))],
        "whole": [(slice(None),) * 3],
    }


# --- libraries ----------------------------------------------------------------------------------------------
class Lib:
    name = ""

    def __init__(self, kind: str, base: str, endpoint: str | None):
        self.kind, self.base, self.endpoint = kind, base, endpoint

    def read(self, sels: list) -> list[np.ndarray]:
        raise NotImplementedError

    def read_loop(self, sels: list) -> list[np.ndarray]:
        raise NotImplementedError

    def write(self, sels: list, values: list) -> None:
        raise NotImplementedError


class Altarr(Lib):
    #: more options of ``open_dataset`` (``--other-options``: the other tree's, in an A/B)
    options: dict[str, Any] = {}

    def __init__(self, *a: Any):
        super().__init__(*a)
        import altarr as aa

        aa.set_options(threads=THREADS)
        self.aa = aa

    def _open(self, mode: str = "r") -> Any:
        opts = {"endpoint_url": self.endpoint} if self.kind == "s3" else {}
        return self.aa.open_dataset(self.base, mode=mode, format="zarr3", **opts, **self.options)

    def read(self, sels):
        ds = self._open()
        return ds.read_regions(sels) if len(sels) > 1 else [ds[sels[0]]]

    def read_loop(self, sels):
        ds = self._open()
        return [ds[s] for s in sels]

    def write(self, sels, values):
        self._open("r+").write_regions(sels, values)


class Tensorstore(Lib):
    def __init__(self, *a: Any):
        super().__init__(*a)
        import tensorstore as ts

        self.ts = ts

    def _open(self, write: bool = False) -> Any:
        ts = self.ts
        if self.kind == "s3":
            kv = {
                "driver": "s3",
                "bucket": BUCKET,
                "path": self.base.split(BUCKET + "/", 1)[1] + "/",
                "endpoint": self.endpoint,
                "aws_region": "us-east-1",
            }
        else:
            kv = {"driver": "http", "base_url": self.base}
        ctx = ts.Context(
            {"cache_pool": {"total_bytes_limit": 0}, "data_copy_concurrency": {"limit": THREADS}}
        )
        return ts.open({"driver": "zarr3", "kvstore": kv}, read=True, write=write, context=ctx).result()

    def read(self, sels):
        a = self._open()
        if len(sels) == 1:
            return [a[sels[0]].read().result()]
        with self.ts.Batch() as batch:
            futs = [a[s].read(batch=batch) for s in sels]
        return [f.result() for f in futs]

    def write(self, sels, values):
        a = self._open(write=True)
        with self.ts.Transaction() as txn:
            t = a.with_transaction(txn)
            futs = [t[s].write(v) for s, v in zip(sels, values, strict=True)]
            for f in futs:
                f.result()


class ZarrFsspec(Lib):
    def __init__(self, *a: Any):
        super().__init__(*a)
        import zarr

        zarr.config.set({"threading.max_workers": THREADS})
        self.zarr = zarr

    def _store(self, read_only: bool) -> Any:
        opts = {"endpoint_url": self.endpoint} if self.kind == "s3" else {}
        return self.zarr.storage.FsspecStore.from_url(self.base, storage_options=opts, read_only=read_only)

    def _open(self, read_only: bool = True) -> Any:
        return self.zarr.open_array(self._store(read_only), mode="r" if read_only else "r+", zarr_format=3)

    def _gather(self, coros: list) -> list:
        from zarr.core.sync import sync

        async def run() -> list:
            return await asyncio.gather(*coros)

        return sync(run())

    def read(self, sels):
        z = self._open()
        if len(sels) == 1:
            return [z[sels[0]]]
        return self._gather([z._async_array.getitem(s) for s in sels])

    def write(self, sels, values):
        z = self._open(read_only=False)
        self._gather([z._async_array.setitem(s, v) for s, v in zip(sels, values, strict=True)])


class ZarrObstore(ZarrFsspec):
    def _store(self, read_only: bool) -> Any:
        from obstore.store import from_url

        if self.kind == "s3":
            st = from_url(self.base, endpoint=self.endpoint, client_options={"allow_http": True})
        else:
            st = from_url(self.base, client_options={"allow_http": True})
        return self.zarr.storage.ObjectStore(st, read_only=read_only)


CLASSES: dict[str, type[Lib]] = {
    "altarr": Altarr,
    "tensorstore": Tensorstore,
    "zarr-fsspec": ZarrFsspec,
    "zarr-obstore": ZarrObstore,
}


# --- running --------------------------------------------------------------------------------------------------
def cases(
    kind: str, base: str, endpoint: str | None, geo: Geometry, data: np.ndarray, args: argparse.Namespace
):
    """``(scenario, lib, fn, check)`` for every case of this server."""
    sels = selections(geo)
    libs = {name: CLASSES[name](kind, base, endpoint) for name in args.libs}
    for scen in args.scenarios:
        if scen == "write_boxes" and kind != "s3":
            continue
        key = "boxes" if scen in ("boxes_loop", "write_boxes") else scen
        ss = sels[key]
        for name, lib in libs.items():
            if scen == "boxes_loop" and not name.startswith("altarr"):
                continue
            if scen == "write_boxes":
                vals = [data[s] for s in ss]

                def fn(lib=lib, ss=ss, vals=vals):
                    return lib.write(ss, vals)

                def check(_r, ss=ss):
                    for got, s in zip(Altarr(kind, base, endpoint).read(ss), ss, strict=True):
                        np.testing.assert_array_equal(got, data[s])

            else:

                def fn(lib=lib, ss=ss, loop=scen == "boxes_loop"):
                    return lib.read_loop(ss) if loop else lib.read(ss)

                def check(results, ss=ss):
                    for got, s in zip(results, ss, strict=True):
                        np.testing.assert_array_equal(np.asarray(got), data[s])

            yield scen, name, fn, check


def bench_server(
    kind: str,
    base: str,
    endpoint: str | None,
    log: Any,
    geo: Geometry,
    data: np.ndarray,
    args: argparse.Namespace,
) -> list[dict[str, Any]]:
    """Every case at every latency. The libraries of one scenario take turns repetition by repetition,
    so a change of the machine's load in between hits them alike.

    Each timed call starts after a full garbage collection, outside its time: otherwise the collector
    runs in whichever call happens to allocate past its threshold and frees what the calls before it
    left, and the libraries that leave the most (zarr-python: per read of the whole array ~23
    collections of the youngest generation, and a full one every 5 reads) charge it to those that
    allocate Python objects at all (altarr) and never to those that allocate none (tensorstore). Measured before this (2026-12-03, HTTP, whole
    array, 20 ms, the five default libraries alternated 16 times): altarr 73-89 ms in most calls and
    124-144 ms in one of every 2-3, the spikes gone with the collection (76-92 ms); each library's own
    collections still run inside its calls. ``bench_engine.py`` collects before each measurement too."""
    rows = []
    by_scen: dict[str, list] = {}
    for scen, name, fn, check in cases(kind, base, endpoint, geo, data, args):
        by_scen.setdefault(scen, []).append((name, fn, check))
    for scen, group in by_scen.items():
        for lat in args.latencies:
            log.latency = lat / 1000
            res: dict[str, dict[str, Any]] = {}
            for name, fn, check in group:  # warm-up (imports, connections): checked, not timed
                try:
                    check(fn())
                    res[name] = {"times": [], "requests": [], "rounds": []}
                except Exception as e:  # a peer that cannot do it: reported, not fatal
                    res[name] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
            for _ in range(args.repeats):
                for name, fn, _check in group:
                    r = res[name]
                    if "error" in r:
                        continue
                    log.reset()
                    gc.collect()  # the garbage of the previous call is not this one's (see above)
                    t = time.perf_counter()
                    fn()
                    _record(r, time.perf_counter() - t, log)
            rows += [_row(kind, lat, name, scen, r) for name, r in res.items()]
    return rows


def _record(r: dict[str, Any], seconds: float, log: Any) -> None:
    """One timed call's time and the requests and rounds the server saw for it."""
    r["times"].append(seconds)
    r["requests"].append(log.requests())
    r["rounds"].append(log.rounds())


def _row(kind: str, lat: float, lib: str, scen: str, r: dict[str, Any]) -> dict[str, Any]:
    """The result row of one library's calls of one scenario (printed to stderr as it is made)."""
    row: dict[str, Any] = {"server": kind, "latency_ms": lat, "lib": lib, "scenario": scen}
    if "error" in r:
        row["error"] = r["error"]
    else:
        row.update(
            ms=1000 * statistics.median(r["times"]),
            requests=int(statistics.median(r["requests"])),
            rounds=int(statistics.median(r["rounds"])),
            times_ms=[round(1000 * t, 3) for t in r["times"]],
        )
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


def paired_ratio(ours: list[float], theirs: list[float], draws: int = 2000) -> tuple[float, float, float]:
    """The median of the per-repetition ratios ``ours[i] / theirs[i]`` and its 95 % bootstrap interval
    (fixed seed). The libraries of a scenario take turns repetition by repetition, so the two times of one
    repetition saw the same machine: a drift of the machine's speed over the run (a neighbour's load, the
    moto server's garbage collection) moves both and cancels in their ratio, where it widens the spread
    of each library's own median.

    >>> paired_ratio([1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 2.0, 3.0, 4.0, 5.0])
    (1.0, 1.0, 1.0)
    """
    r = np.asarray(ours, dtype=float) / np.asarray(theirs, dtype=float)
    rng = np.random.default_rng(0)
    boot = np.median(rng.choice(r, size=(draws, r.size)), axis=1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return float(np.median(r)), float(lo), float(hi)


def table(rows: list[dict[str, Any]], kind: str, lat: float, libs: list[str]) -> str:
    sel = [r for r in rows if r["server"] == kind and r["latency_ms"] == lat]
    scen = [s for s in SCENARIOS if any(r["scenario"] == s for r in sel)]
    head = "| scenario | " + " | ".join(libs) + " | altarr / best peer |"
    out = [head, "|---" * (len(libs) + 2) + "|"]
    for s in scen:
        cells = []
        by = {r["lib"]: r for r in sel if r["scenario"] == s}
        for lib in libs:
            r = by.get(lib)
            if r is None:
                cells.append("")
            elif "error" in r:
                cells.append("error")
            else:
                cells.append(f"{r['ms']:.0f} ms ({r['requests']} req, {r['rounds']} rd)")
        best = min((p for p in PEERS if "ms" in by.get(p, {})), key=lambda p: by[p]["ms"], default=None)
        base = by.get("altarr", {}).get("ms")
        if s == "boxes_loop":
            batch = next((r for r in sel if r["scenario"] == "boxes" and r["lib"] == "altarr"), None)
            ratio = f"batch is {base / batch['ms']:.1f}x faster" if base and batch and "ms" in batch else ""
        else:
            ratio = f"{base / by[best]['ms']:.2f}" if base and best else ""
            if ratio and len(by["altarr"].get("times_ms", ())) >= 5:
                mid, lo, hi = paired_ratio(by["altarr"]["times_ms"], by[best]["times_ms"])
                ratio += f"; paired {mid:.3f} [{lo:.3f}, {hi:.3f}]"
        out.append(f"| {s} | " + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(out)


# --- this tree against another version of altarr ----------------------------------------------------------------
class Worker:
    """altarr of one tree in a child process (this script with ``--worker``, ``PYTHONPATH`` the tree's
    ``src``), which times the scenarios it is asked for, one at a time, and answers with the time."""

    def __init__(
        self, name: str, src: Path, kind: str, base: str, endpoint: str | None, size: int, options: str = "{}"
    ):
        import subprocess

        self.name = name
        script = Path(__file__).with_name("remote_floor.py") if name == "floor" else __file__
        cmd = [sys.executable, str(script), "--worker", kind, base, endpoint or "-", str(size), options]
        env = {**os.environ, "PYTHONPATH": str(src)}
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.altarr = ""

    def ready(self) -> Worker:
        """Wait until the worker has started; it says where it imported altarr from (the tree's)."""
        self.altarr = self._reply()["altarr"]
        return self

    def _reply(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.name} worker ended (exit code {self.proc.wait(timeout=60)})")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"{self.name}: {reply['error']}")
        return reply

    def call(self, scenario: str, check: bool = False) -> float:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"scenario": scenario, "check": check}) + "\n")
        self.proc.stdin.flush()
        return self._reply()["t"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def worker_main(kind: str, base: str, endpoint: str, size: int, options: str) -> None:
    """The child of :class:`Worker`: times the scenario named on each line of stdin (a full garbage
    collection first, outside the time, as :func:`bench_server`), checks its result when asked, and
    writes ``{"t": seconds}`` (or ``{"error": ...}``) to stdout. ``options``: JSON, more options of
    ``open_dataset``."""
    import altarr

    Altarr.options = json.loads(options)

    geo = Geometry(size, size // 2, size // 8)
    data = make_volume(geo.n)
    args = argparse.Namespace(libs=["altarr"], scenarios=list(SCENARIOS))
    calls = {
        s: (fn, check)
        for s, _, fn, check in cases(kind, base, None if endpoint == "-" else endpoint, geo, data, args)
    }
    print(json.dumps({"altarr": altarr.__file__}), flush=True)
    for line in sys.stdin:
        ask = json.loads(line)
        fn, check = calls[ask["scenario"]]
        try:
            gc.collect()
            t = time.perf_counter()
            result = fn()
            t = time.perf_counter() - t
            if ask["check"]:
                check(result)
            reply: dict[str, Any] = {"t": t}
        except Exception as e:
            reply = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        print(json.dumps(reply), flush=True)


def bench_against(
    kind: str,
    base: str,
    endpoint: str | None,
    log: Any,
    geo: Geometry,
    data: np.ndarray,
    args: argparse.Namespace,
) -> list[dict[str, Any]]:
    """Every scenario at every latency, this tree's altarr (``altarr``) and the other's
    (``altarr@other``; with ``--aa`` also ``altarr@other2``) in workers taking turns repetition by
    repetition, each repetition in the next of their orders (two workers: swapped every other one);
    each call checked on its warm-up (the workers make their own copy of ``data``).

    The repetitions of a scenario run in as many blocks as there are workers, each block with workers
    started anew, in the order rotated by one: a worker process can be a few percent faster or slower
    than another of the same tree for its whole life (HTTP scattered, c9fd1c8 against itself: the second
    worker started 2.4-3.5 % slower than the third in three runs, either tree in either place), which
    turns alone would not cancel."""
    arms = [
        ("altarr", Path(args.tree or Path(__file__).resolve().parents[1]) / "src", "{}"),
        ("altarr@other", Path(args.against) / "src", args.other_options),
    ]
    if args.aa:
        arms.append(("altarr@other2", Path(args.aa) / "src", args.other_options))
    rows = []
    for scen in args.scenarios:
        if scen == "write_boxes" and kind != "s3":
            continue
        for lat in args.latencies:
            log.latency = lat / 1000
            floor = bool(args.floor) and scen != "write_boxes"  # the floor replays reads only
            options = _floor_options(kind, base, endpoint, log, geo, scen, args) if floor else ""
            scen_arms = arms + [("floor", Path(), options)] * floor
            res = {name: {"times": [], "requests": [], "rounds": []} for name, _, _ in scen_arms}
            for b, reps in enumerate(np.array_split(np.arange(args.repeats), len(scen_arms))):
                started = [
                    Worker(n, src, kind, base, endpoint, geo.n, o)
                    for n, src, o in scen_arms[b:] + scen_arms[:b]
                ]
                try:
                    workers = [w.ready() for w in started]
                    print("# " + " against ".join(w.altarr for w in workers), file=sys.stderr)
                    orders = list(itertools.permutations(sorted(workers, key=lambda w: w.name)))
                    for w in workers:
                        w.call(scen, check=True)
                    for rep in reps:
                        for w in orders[rep % len(orders)]:
                            log.reset()
                            _record(res[w.name], w.call(scen), log)
                finally:
                    for w in started:
                        w.close()
            rows += [_row(kind, lat, name, scen, r) for name, r in res.items()]
    return rows


def _floor_options(
    kind: str, base: str, endpoint: str | None, log: Any, geo: Geometry, scen: str, args: argparse.Namespace
) -> str:
    """The options of the floor's worker (JSON): its decoder and the rounds of requests one call of this
    tree's altarr sends for ``scen`` (``remote_floor.record``; at 20 ms, so a round's requests overlap)."""
    from remote_floor import record

    latency, log.latency = log.latency, 0.02
    one = argparse.Namespace(libs=["altarr"], scenarios=[scen])
    fn = next(fn for _, _, fn, _ in cases(kind, base, endpoint, geo, np.empty(0), one))
    fn()  # warm-up: connections
    rounds = record(log, fn)
    log.latency = latency
    return json.dumps({"rounds": {scen: rounds}, "decoder": args.floor})


def table_against(rows: list[dict[str, Any]], kind: str, lat: float) -> str:
    """The :func:`bench_against` table: each version's median, requests and rounds, and this tree's time
    over the other's (ratio of medians; paired, with its interval, from 5 repetitions on); with
    ``--aa``, the A/A (other2 / other, paired) and the verdict: "meets" when this / other is at most
    the A/A interval's upper end (inside the noise or below it) or at most 1 (no slower). With
    ``--floor``, the floor over the other (paired) and what it says of the line: "unreachable" when the
    floor's interval lies above both the A/A's upper end and 1, "room" when its median does not."""
    sel = [r for r in rows if r["server"] == kind and r["latency_ms"] == lat]
    aa = any(r["lib"] == "altarr@other2" for r in sel)
    floor = aa and any(r["lib"] == "floor" for r in sel)
    head = "| scenario | altarr (this tree) | altarr (other) | this / other |"
    head += (" A/A: other2 / other | verdict |" if aa else "") + (
        " floor / other | floor says |" if floor else ""
    )
    out = [head, "|---" * (4 + 2 * aa + 2 * floor) + "|"]
    for s in [s for s in SCENARIOS if any(r["scenario"] == s for r in sel)]:
        by = {r["lib"]: r for r in sel if r["scenario"] == s}
        a, b = by["altarr"], by["altarr@other"]
        ratio = f"{a['ms'] / b['ms']:.3f}"
        cells = [f"{r['ms']:.1f} ms ({r['requests']} req, {r['rounds']} rd)" for r in (a, b)]
        if len(a["times_ms"]) >= 5:
            mid, lo, hi = paired_ratio(a["times_ms"], b["times_ms"])
            ratio += f"; paired {mid:.3f} [{lo:.3f}, {hi:.3f}]"
            if aa:
                mid2, lo2, hi2 = paired_ratio(by["altarr@other2"]["times_ms"], b["times_ms"])
                top = max(hi2, 1.0)
                ratio += f" | {mid2:.3f} [{lo2:.3f}, {hi2:.3f}] | {'meets' if mid <= top else 'above'}"
            if floor and "floor" in by:
                f, flo, fhi = paired_ratio(by["floor"]["times_ms"], b["times_ms"])
                says = "unreachable" if flo > top else "room" if f <= top else "unclear"
                ratio += f" | {f:.3f} [{flo:.3f}, {fhi:.3f}] | {says}"
            elif floor:
                ratio += " | |"
        out.append(f"| {s} | {cells[0]} | {cells[1]} | {ratio} |")
    return "\n".join(out)


def print_pooled(paths: list[str]) -> None:
    """The :func:`table_against` tables of several runs' rows taken as one run: each line's repetitions
    one after the other, in the same order for every arm (so the pairs stay pairs)."""
    pooled: dict[tuple, dict[str, Any]] = {}
    for path in paths:
        for r in json.loads(Path(path).read_text()):
            key = (r["server"], r["latency_ms"], r["lib"], r["scenario"])
            row = pooled.setdefault(key, {**r, "times_ms": []})
            row["times_ms"] = row["times_ms"] + r["times_ms"]
    rows = [{**r, "ms": statistics.median(r["times_ms"])} for r in pooled.values()]
    for kind, lat in dict.fromkeys((r["server"], r["latency_ms"]) for r in rows):
        print(f"\n### {kind}, {lat:g} ms per request, {len(paths)} runs pooled\n")
        print(table_against(rows, kind, lat))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=256)
    p.add_argument("--latencies", default="0,5,20", help="milliseconds, comma-separated")
    p.add_argument("--servers", default="http,s3")
    p.add_argument("--libs", default=",".join(LIBS))
    p.add_argument("--scenarios", default=",".join(SCENARIOS))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="64**3, 5 ms, one repeat")
    p.add_argument("--json", help="write every row here")
    p.add_argument("--against", help="another altarr tree (a checkout, kernel built): this one against it")
    p.add_argument("--tree", help="with --against: this arm's altarr from that checkout, not this one")
    p.add_argument("--aa", help="with --against: a second checkout of that version, a third arm (A/A)")
    p.add_argument(
        "--other-options",
        default="{}",
        help='JSON: more open_dataset options of the other tree ("--against")',
    )
    p.add_argument(
        "--floor",
        choices=("kernel", "numcodecs"),
        help="with --against: one more arm, remote_floor.py (bare obstore) decoding with this",
    )
    p.add_argument("--no-etag", action="store_true", help="the HTTP server sends no ETag (a plain one)")
    p.add_argument("--pool", help="JSON files of --against runs (comma-separated): their tables, pooled")
    p.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.pool:
        print_pooled(args.pool.split(","))
        return 0
    if args.worker:
        kind, base, endpoint, size, options = args.worker
        worker_main(kind, base, endpoint, int(size), options)
        return 0
    if args.quick:
        args.size, args.latencies, args.repeats = 64, "5", 1
    args.latencies = [float(v) for v in args.latencies.split(",")]
    args.libs = args.libs.split(",")
    args.scenarios = args.scenarios.split(",")
    geo = Geometry(args.size, args.size // 2, args.size // 8)
    data = make_volume(geo.n)

    import altarr as aa

    def write(url: str, **opts: Any) -> None:
        ds = aa.create_dataset(
            url, shape=geo.shape, dtype="uint16", chunks=(geo.chunk,) * 3, shards=(geo.shard,) * 3,
            compressor="zstd", overwrite=True, storage_options=opts or None,
        )  # fmt: skip
        ds[...] = data

    rows: list[dict[str, Any]] = []
    servers = args.servers.split(",")
    if "http" in servers:
        with tempfile.TemporaryDirectory() as d:
            write(f"{d}/a.zarr")
            with server_process("http", d, etag=not args.no_etag) as (url, log):
                run = bench_against if args.against else bench_server
                rows += run("http", f"{url}/a.zarr", None, log, geo, data, args)
    if "s3" in servers:
        with server_process("s3") as (endpoint, log):
            write(f"s3://{BUCKET}/a.zarr", endpoint_url=endpoint)
            run = bench_against if args.against else bench_server
            rows += run("s3", f"s3://{BUCKET}/a.zarr", endpoint, log, geo, data, args)
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.platform()}, size {geo.n}")
    for kind in servers:
        for lat in args.latencies:
            print(f"\n### {kind}, {lat:g} ms per request\n")
            print(table_against(rows, kind, lat) if args.against else table(rows, kind, lat, args.libs))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
