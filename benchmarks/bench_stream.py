#!/usr/bin/env python
"""Streaming-write benchmark: data written as it arrives, plane by plane or tile by tile, altarr against
zarr-python and tensorstore, in one process.

Every writer writes the same ``N**3`` uint16 volume (``make_volume`` of ``bench_engine.py``, default
512**3) into a new sharded Zarr v3 array on local disk: chunks 64**3, shards 128 x 256 x 256, zstd (level
3) or blosc (lz4, clevel 5, shuffle). Two workloads: ``planes`` (``a[z] = volume[z]`` for every z) and
``tiles`` (2-D tiles of ``--tile``**2 into the 3-D volume, ``a[z, y:y+t, x:x+t] = ...``, z outermost).
Writers:

* ``altarr buffered``: ``with ds.buffered(max_bytes=--budget) as b: b[...] = ...`` (each shard written
  once, when complete);
* ``altarr``: ``ds[...] = ...``, each write on its own (a read-modify-write of every shard it touches);
* ``zarr-python``: ``z[...] = ...`` (zarr-python has no write buffer);
* ``tensorstore txn``: every write in one ``ts.Transaction``, committed at the end;
* ``tensorstore``: each write on its own, ``.result()`` waited for.

Measured per run: the time (``time.perf_counter``; the fast lines: one verified warm-up, then the median of
``--repeats``, the libraries interleaved; the slow ones — every write on its own — one verified run,
``--slow-repeats``), the bytes written (``wchar`` of ``/proc/self/io``: bytes passed to write system calls
by every thread of this process; for altarr also ``ds.store.stats.bytes_written``, which agrees with it
to the metadata's bytes), the bytes read the same way (``rchar``), the bytes stored (the array's folder
on disk after the run) and their ratio, the write amplification, and the peak RSS growth as
``bench_engine.py`` measures it (the kernel's VmHWM mark reset before each run). Every library writes with
2 threads (altarr ``set_options(threads=2)``; zarr-python ``threading.max_workers=2``; tensorstore
``data_copy_concurrency`` and ``file_io_concurrency`` limits of 2, ``file_io_sync`` off). A run during
which other processes used more than 0.3 cores is re-run (``bench_engine.run_jobs``'s rule).

Example:
    python benchmarks/bench_stream.py                               # the full run: 512^3, zstd and blosc
    python benchmarks/bench_stream.py --size 128 --repeats 1        # a quick look
    python benchmarks/bench_stream.py --writers altarr-buffered,tensorstore-txn --codec zstd --json out.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_engine import (
    CPU,
    MAX_INTERFERENCE,
    RETRIES,
    THREADS,
    PeakRSS,
    _md,
    dir_size,
    fmt_time,
    machine,
    make_volume,
    tensorstore_context,
)

#: A run (of at least 50 ms) during which other processes used more cores than this is re-run
#: (``--max-interference``; ``bench_engine.py``'s rule by default).
INTERFERENCE = [MAX_INTERFERENCE]

WRITERS = ("altarr-buffered", "altarr", "zarr-python", "tensorstore-txn", "tensorstore")
SLOW = {"altarr", "zarr-python", "tensorstore"}  # every write on its own: one verified run by default
WORKLOADS = ("planes", "tiles")
CHUNK, SHARD = (64, 64, 64), (128, 256, 256)


def codec_json(codec: str) -> dict[str, Any]:
    if codec == "zstd":
        return {"name": "zstd", "configuration": {"level": 3, "checksum": False}}
    return {
        "name": "blosc",
        "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2, "blocksize": 0},
    }


def pieces(workload: str, n: int, tile: int) -> Iterator[tuple[Any, ...]]:
    """The selections of one pass, in the order the data arrives."""
    for z in range(n):
        if workload == "planes":
            yield (z,)
        else:
            for y in range(0, n, tile):
                for x in range(0, n, tile):
                    yield (z, slice(y, y + tile), slice(x, x + tile))


def proc_io() -> dict[str, int]:
    """``/proc/self/io``: ``wchar``/``rchar`` (bytes passed to write/read system calls), ``write_bytes``."""
    out = {}
    with contextlib.suppress(OSError), open("/proc/self/io") as f:
        for line in f:
            k, v = line.split(":")
            out[k] = int(v)
    return out


# --- writers ----------------------------------------------------------------------------------------------
class Writer:
    """Creates a new array at a path and writes a volume into it piece by piece."""

    name = ""

    def __init__(self, n: int, codec: str, budget: int) -> None:
        self.n, self.codec, self.budget = n, codec, budget
        self.stats: dict[str, int] = {}

    def create(self, path: str) -> Any:
        raise NotImplementedError

    def write(self, h: Any, vol: np.ndarray, sels: list[tuple[Any, ...]]) -> None:
        raise NotImplementedError


class AltarrWriter(Writer):
    name = "altarr"

    def __init__(self, n: int, codec: str, budget: int) -> None:
        super().__init__(n, codec, budget)
        import altarr

        altarr.set_options(threads=THREADS)
        self.aa = altarr

    def create(self, path: str) -> Any:
        n = self.n
        ds = self.aa.create_dataset(
            path,
            shape=(n, n, n),
            dtype="uint16",
            chunks=CHUNK,
            shards=SHARD,
            compressor=codec_json(self.codec),
        )
        ds.store.stats.reset()
        return ds

    def write(self, h: Any, vol: np.ndarray, sels: list[tuple[Any, ...]]) -> None:
        for s in sels:
            h[s] = vol[s]
        self.stats = h.store.stats.as_dict()


class AltarrBufferedWriter(AltarrWriter):
    name = "altarr-buffered"

    def write(self, h: Any, vol: np.ndarray, sels: list[tuple[Any, ...]]) -> None:
        with h.buffered(max_bytes=self.budget) as b:
            for s in sels:
                b[s] = vol[s]
        self.stats = {**h.store.stats.as_dict(), "buffer_peak_bytes": b.peak_bytes}


class ZarrWriter(Writer):
    name = "zarr-python"

    def __init__(self, n: int, codec: str, budget: int) -> None:
        super().__init__(n, codec, budget)
        import zarr

        zarr.config.set({"threading.max_workers": THREADS})
        self.zarr = zarr

    def create(self, path: str) -> Any:
        from zarr.codecs import BloscCodec, ZstdCodec

        comp = (
            ZstdCodec(level=3, checksum=False)
            if self.codec == "zstd"
            else BloscCodec(cname="lz4", clevel=5, shuffle="shuffle", typesize=2, blocksize=0)
        )
        n = self.n
        return self.zarr.create_array(
            path, shape=(n, n, n), dtype="uint16", chunks=CHUNK, shards=SHARD, compressors=comp, fill_value=0
        )

    def write(self, h: Any, vol: np.ndarray, sels: list[tuple[Any, ...]]) -> None:
        for s in sels:
            h[s] = vol[s]


class TensorstoreWriter(Writer):
    name = "tensorstore"
    transaction = False

    def __init__(self, n: int, codec: str, budget: int) -> None:
        super().__init__(n, codec, budget)
        import tensorstore as ts

        self.ts = ts
        self.ctx = tensorstore_context()

    def create(self, path: str) -> Any:
        n = self.n
        bytes_codec = {"name": "bytes", "configuration": {"endian": "little"}}
        spec = {
            "driver": "zarr3",
            "kvstore": {"driver": "file", "path": path},
            "metadata": {
                "shape": [n, n, n],
                "data_type": "uint16",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(SHARD)}},
                "chunk_key_encoding": {"name": "default"},
                "fill_value": 0,
                "codecs": [
                    {
                        "name": "sharding_indexed",
                        "configuration": {
                            "chunk_shape": list(CHUNK),
                            "codecs": [bytes_codec, codec_json(self.codec)],
                            "index_codecs": [bytes_codec, {"name": "crc32c"}],
                            "index_location": "end",
                        },
                    }
                ],
            },
            "create": True,
            "delete_existing": True,
        }
        return self.ts.open(spec, context=self.ctx).result()

    def write(self, h: Any, vol: np.ndarray, sels: list[tuple[Any, ...]]) -> None:
        if not self.transaction:
            for s in sels:
                h[s].write(vol[s]).result()
            return
        with self.ts.Transaction() as txn:  # committed (and waited for) when the block ends
            t = h.with_transaction(txn)
            for s in sels:
                t[s].write(vol[s]).result()


class TensorstoreTxnWriter(TensorstoreWriter):
    name = "tensorstore-txn"
    transaction = True


WRITER_CLASSES: dict[str, type[Writer]] = {
    w.name: w
    for w in (AltarrBufferedWriter, AltarrWriter, ZarrWriter, TensorstoreTxnWriter, TensorstoreWriter)
}


# --- runs -------------------------------------------------------------------------------------------------
@dataclass
class Line:
    """One writer on one workload: every timed run's figures."""

    times: list[float] = field(default_factory=list)
    written: list[int] = field(default_factory=list)  # wchar
    read: list[int] = field(default_factory=list)  # rchar
    stored: int = 0
    rss_growth: int = 0
    discarded: int = 0
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def amplification(self) -> float:
        return statistics.median(self.written) / self.stored if self.stored else float("nan")

    def as_dict(self) -> dict[str, Any]:
        return {
            "times_s": self.times,
            "median_s": self.median,
            "bytes_written_wchar": self.written,
            "bytes_read_rchar": self.read,
            "bytes_stored": self.stored,
            "write_amplification": self.amplification,
            "peak_rss_growth_mb": self.rss_growth / 1e6,
            "discarded_runs": self.discarded,
            "altarr_store_stats": self.stats,
        }


def one_run(
    w: Writer, path: str, vol: np.ndarray, sels: list[tuple[Any, ...]], line: Line, timed: bool
) -> bool:
    """Write the volume once into a new array at ``path``; ``False`` when other processes used the CPU
    meanwhile (the run is to be repeated)."""
    shutil.rmtree(path, ignore_errors=True)
    h = w.create(path)
    with PeakRSS() as mem:
        io0, a = proc_io(), CPU.snap()
        t0 = time.perf_counter()
        w.write(h, vol, sels)
        dt = time.perf_counter() - t0
        b, io1 = CPU.snap(), proc_io()
    if not timed:
        return True
    if dt >= 0.05 and CPU.others(a, b) >= INTERFERENCE[0]:
        return False
    line.times.append(dt)
    line.written.append(io1.get("wchar", 0) - io0.get("wchar", 0))
    line.read.append(io1.get("rchar", 0) - io0.get("rchar", 0))
    line.rss_growth = max(line.rss_growth, mem.growth)
    line.stored = dir_size(path)
    line.stats = dict(w.stats)
    return True


def verify(w: Writer, path: str, vol: np.ndarray) -> None:
    """The array written holds the volume (read back with altarr)."""
    import altarr

    got = altarr.open_dataset(path)[...]
    if not np.array_equal(got, vol):
        raise AssertionError(f"{w.name}: the array written differs from the volume")


def run_workload(
    writers: list[Writer],
    workload: str,
    vol: np.ndarray,
    tile: int,
    work: str,
    repeats: int,
    slow_repeats: int,
) -> dict[str, Line]:
    """Every writer's verified first run, then the timed rounds, the writers taking turns."""
    sels = list(pieces(workload, vol.shape[0], tile))
    lines = {w.name: Line() for w in writers}
    paths = {w.name: os.path.join(work, f"{w.name}.zarr") for w in writers}
    for w in writers:
        slow = w.name in SLOW
        ok = one_run(w, paths[w.name], vol, sels, lines[w.name], timed=slow)
        verify(w, paths[w.name], vol)
        if slow and not ok:
            lines[w.name].discarded += 1
    for r in range(max(repeats, slow_repeats)):
        for w in writers:
            line = lines[w.name]
            want = slow_repeats if w.name in SLOW else repeats
            if len(line.times) >= want or (w.name in SLOW and r >= slow_repeats):
                continue
            for attempt in range(RETRIES + 1):
                if one_run(w, paths[w.name], vol, sels, line, timed=True) or attempt == RETRIES:
                    break
                line.discarded += 1
                CPU.wait_idle()
    for w in writers:  # a slow line whose only run was disturbed keeps it, marked
        line = lines[w.name]
        if not line.times:
            one_run(w, paths[w.name], vol, sels, line, timed=True)
    return lines


# --- report -----------------------------------------------------------------------------------------------
def report(codec: str, workload: str, lines: dict[str, Line], budget: int, n: int) -> list[str]:
    shard_bytes = 128 * 256 * 256 * 2
    rows = []
    for name, ln in lines.items():
        rows.append(
            [
                name,
                fmt_time(ln.median),
                f"{statistics.median(ln.written) / 1e6:.1f}",
                f"{statistics.median(ln.read) / 1e6:.1f}",
                f"{ln.stored / 1e6:.1f}",
                f"{ln.amplification:.2f}x",
                f"{ln.rss_growth / 1e6:.0f}",
                f"{len(ln.times)}" + (f" (+{ln.discarded} re-run)" if ln.discarded else ""),
            ]
        )
    out = [
        f"### {workload}, {codec} ({n}^3 uint16, chunks 64^3, shards 128x256x256)",
        "",
        _md(
            ["writer", "time", "MB written", "MB read", "MB stored", "written/stored", "peak RSS MB", "runs"],
            rows,
        ),
        "",
    ]
    checks = []
    buf, txn = lines.get("altarr-buffered"), lines.get("tensorstore-txn")
    if buf and txn:
        checks.append(
            f"altarr buffered / tensorstore txn time: {buf.median / txn.median:.2f} (target <= 1.00)"
        )
    if buf:
        checks.append(f"altarr buffered written/stored: {buf.amplification:.3f}x (target <= 1.05x)")
        limit = budget + shard_bytes
        checks.append(
            f"altarr buffered peak RSS growth {buf.rss_growth / 2**20:.0f} MiB, budget + one shard "
            f"{limit / 2**20:.0f} MiB ({'within' if buf.rss_growth <= limit else 'ABOVE'})"
        )
    una, zp = lines.get("altarr"), lines.get("zarr-python")
    if una and zp:
        checks.append(f"altarr unbuffered / zarr-python time: {una.median / zp.median:.2f} (target < 1.00)")
    return out + [f"- {c}" for c in checks] + [""]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=512, help="cube edge (default 512)")
    p.add_argument("--tile", type=int, default=128, help="tile edge of the tiles workload (default 128)")
    p.add_argument("--codec", choices=["zstd", "blosc", "both"], default="both")
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--writers", default=",".join(WRITERS))
    p.add_argument("--budget", type=int, default=128 << 20, help="altarr's buffer budget (default 128 MiB)")
    p.add_argument("--repeats", type=int, default=3, help="timed runs of the fast lines (median)")
    p.add_argument("--slow-repeats", type=int, default=1, help="timed runs of the every-write-alone lines")
    p.add_argument("--dir", default=None, help="work directory on local disk (default: a temp dir)")
    p.add_argument("--json", default=None, help="write every run's figures here")
    p.add_argument(
        "--max-interference",
        type=float,
        default=MAX_INTERFERENCE,
        help=f"re-run a run during which other processes used more cores than this (default {MAX_INTERFERENCE})",
    )
    args = p.parse_args(argv)
    INTERFERENCE[0] = args.max_interference
    n = args.size
    names = [w for w in args.writers.split(",") if w]
    unknown = sorted(set(names) - set(WRITER_CLASSES))
    if unknown:
        p.error(f"unknown writers {unknown}; choose from {list(WRITERS)}")
    codecs = ["zstd", "blosc"] if args.codec == "both" else [args.codec]
    workloads = [w for w in args.workloads.split(",") if w]
    vol = make_volume(n)
    work = args.dir or tempfile.mkdtemp(prefix="bench-stream-")
    os.makedirs(work, exist_ok=True)
    info = machine()
    print(
        f"# altarr streaming writes: {n}^3 uint16, {THREADS} threads, {info.get('cpu', '?')}, altarr at git {info.get('altarr_git', '?')}"
    )
    print(
        f"# budget {args.budget / 2**20:.0f} MiB; peak memory: {PeakRSS.method}; bytes: /proc/self/io wchar, rchar\n"
    )
    results: dict[str, Any] = {
        "size": n,
        "tile": args.tile,
        "budget": args.budget,
        "machine": info,
        "runs": {},
    }
    try:
        for codec in codecs:
            writers = [WRITER_CLASSES[name](n, codec, args.budget) for name in names]
            for workload in workloads:
                lines = run_workload(writers, workload, vol, args.tile, work, args.repeats, args.slow_repeats)
                print("\n".join(report(codec, workload, lines, args.budget, n)), flush=True)
                results["runs"][f"{workload}-{codec}"] = {k: v.as_dict() for k, v in lines.items()}
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
