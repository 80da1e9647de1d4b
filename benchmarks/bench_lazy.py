#!/usr/bin/env python
"""Sliding-window reads: altarr's lazy array (decoded-chunk LRU cache) against uncached readers.

One sharded Zarr v3 array (``N**3`` uint16, shards 256**3, chunks 64**3, zstd level 3; the same volume
as ``bench_engine.py``) is written once with altarr; then overlapping slabs of ``64 x N x N`` stepping
along axis 0 are read, a whole pass per repetition, by:

* ``altarr.open`` + cache: the lazy array with its default byte budget; each pass starts cold
  (``altarr.reset(x, cache=True)``), so only the overlap *within* a pass is served from the cache;
* ``altarr.open`` no cache: the same with ``set_options(cache_bytes=0)``;
* ``altarr Dataset``: ``ds[z:z+64]`` on the block engine (no decoded-chunk cache);
* zarr-python: ``arr[z:z+64]`` (it has no decoded-chunk cache);
* tensorstore + cache: a 256 MiB ``cache_pool`` (its cache is off by default), cleared per pass by
  reopening with a fresh context.

Reported per pass: median time, chunks decoded (fetched) and fetch calls for the lazy arrays, store
reads for the engine. 2 threads everywhere. Every slab is checked against the source once. As in
``bench_engine.py``, the readers take turns (one pass each per round) and a pass during which other
processes used the CPU is re-run.

Example:
    python benchmarks/bench_lazy.py                # 512**3, steps 32 and 16
    python benchmarks/bench_lazy.py --size 256 --steps 32 --repeats 2
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_engine import MAX_INTERFERENCE, THREADS, Job, machine, make_volume, run_jobs

CACHE_BYTES = 256 * 2**20


def slab_reader(get: Callable[[slice], Any], starts: Sequence[int], slab: int):
    def read_pass(keep: bool) -> list[np.ndarray] | None:
        out = []
        for z in starts:
            a = np.asarray(get(slice(z, z + slab)))
            if keep:
                out.append(a)
        return out if keep else None

    return read_pass


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=512)
    p.add_argument("--steps", default="32,16", help="comma list of slab steps along axis 0")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--dir", default=None)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    import tensorstore as ts
    import zarr

    import altarr as aa

    try:
        lazy_open = aa.open
    except (AttributeError, ImportError) as e:  # the lazy layer is not there yet
        print(f"altarr.open is not available ({e}); nothing to compare")
        return 0
    aa.set_options(threads=THREADS)
    zarr.config.set({"threading.max_workers": THREADS})

    n = args.size
    chunk, shard, slab = min(64, n), min(256, n), min(64, n)
    data = make_volume(n, args.seed)
    work = args.dir or tempfile.mkdtemp(prefix="altarr-bench-lazy-", dir="/tmp")
    path = os.path.join(work, "vol.zarr")
    try:
        ds = aa.create_dataset(
            path, shape=data.shape, dtype="uint16", chunks=(chunk,) * 3, shards=(shard,) * 3,
            compressor="zstd", overwrite=True,
        )  # fmt: skip
        ds[...] = data
        ds = aa.open_dataset(path)
        z = zarr.open_array(path, mode="r")

        def ts_open() -> Any:
            ctx = ts.Context(
                {
                    "cache_pool": {"total_bytes_limit": CACHE_BYTES},
                    "data_copy_concurrency": {"limit": THREADS},
                    "file_io_concurrency": {"limit": THREADS},
                }
            )
            return ts.open(
                {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}, context=ctx
            ).result()

        x = lazy_open(path)
        tsa: list[Any] = [ts_open()]
        rows = []
        for step in [int(s) for s in args.steps.split(",")]:
            starts = list(range(0, n - slab + 1, step))

            def verify(out: list[np.ndarray], starts: list[int] = starts) -> None:
                assert len(out) == len(starts)
                for z0, o in zip(starts, out, strict=True):
                    if not np.array_equal(o, data[z0 : z0 + slab]):
                        raise AssertionError(f"slab {z0} differs from the source")

            def reset_x() -> None:
                aa.reset(x, cache=True)

            def reset_ts() -> None:
                tsa[0] = ts_open()

            variants: list[tuple[str, Callable, Callable, Any]] = [
                ("altarr.open + cache (256 MiB)", lambda s: x[s], reset_x, None),
                (
                    "altarr.open, cache_bytes=0",
                    lambda s: x[s],
                    reset_x,
                    lambda: aa.set_options(cache_bytes=0),
                ),
                ("altarr Dataset ds[z:z+64]", lambda s: ds[s], lambda: ds.store.stats.reset(), None),
                ("zarr-python arr[z:z+64]", lambda s: z[s], lambda: None, None),
                ("tensorstore + cache_pool 256 MiB", lambda s: tsa[0][s].read().result(), reset_ts, None),
            ]
            jobs = [
                Job(
                    label,
                    slab_reader(get, starts, slab),
                    verify,
                    before=before,
                    # set_options applies when called (and restores on exit): call it only inside the job
                    context=ctx if ctx is not None else contextlib.nullcontext,
                )
                for label, get, before, ctx in variants
            ]
            print(f"step {step}: " + ", ".join(j.name for j in jobs), file=sys.stderr, flush=True)
            results = run_jobs(jobs, args.repeats)
            for label, get, before, ctx in variants:  # one more pass each, to count the fetches
                extra = ""
                if label.startswith(("altarr.open", "altarr Dataset")):
                    with ctx() if ctx is not None else contextlib.nullcontext():
                        before()
                        slab_reader(get, starts, slab)(False)
                    if label.startswith("altarr.open"):
                        st = aa.stats(x)
                        extra = f"{st['chunks_fetched']} chunks in {st['fetch_calls']} fetch calls"
                    else:
                        extra = f"{ds.store.stats.reads} store reads"
                res = results[label]
                med = statistics.median(res.times)
                mb = len(starts) * data[:slab].nbytes / med / 1e6
                rerun = f", {res.discarded} re-run" if res.discarded else ""
                rows.append([str(step), str(len(starts)), label, f"{med:.3f} s", f"{mb:.0f}", extra + rerun])
        cols = ["step", "slabs", "reader", "median pass", "MB/s delivered", "fetches"]
        widths = [max(len(r[i]) for r in [cols, *rows]) for i in range(len(cols))]
        fmt = lambda r: "| " + " | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) + " |"  # noqa: E731
        print(
            f"Sliding-window pass: {n}^3 uint16, chunks {chunk}^3, shards {shard}^3, zstd 3, slabs {slab}x{n}x{n}, "
            f"median of {args.repeats} (+1 verified warm-up), {THREADS} threads, warm page cache; a pass during "
            f"which other processes used > {MAX_INTERFERENCE} cores is re-run.\n"
        )
        print("\n".join([fmt(cols), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(fmt, rows)]))
        m = machine()
        print(f"\nMachine: {m['nproc']} cores ({m['cpu']}), altarr at git {m['altarr_git']}.")
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
