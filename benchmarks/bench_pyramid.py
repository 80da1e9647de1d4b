#!/usr/bin/env python
"""Pyramid benchmark: a uint16 volume (default 512 x 1024 x 1024, z y x) to a 5-level sharded OME-Zarr 0.5
pyramid, altarr (``build_pyramid``) against ngff-zarr (``to_multiscales`` + ``to_ngff_zarr``), in one
process, on the same cores.

Both write the same pyramid: mean downsampling by 2 along every axis per level (ngff-zarr's
``DASK_BIN_SHRINK``: the same windows, remainder dropped, integers rounded half up), chunks of 64**3 in
shards of 256**3 (``chunks_per_shard=4``), zstd level 3 without a checksum, from the volume in memory.
The levels of both are compared once, after the first repetition of each, so a fast wrong answer
cannot win.

Fairness: 2 threads everywhere (altarr ``workers=2`` and ``set_options(threads=2)``; ngff-zarr's dask graph
on the threaded scheduler with ``num_workers=2``; zarrista's Rust pool ``RAYON_NUM_THREADS=2``). The
libraries alternate repetition by repetition (altarr, ngff-zarr, altarr, ...), each writing into a fresh
folder; the median of ``--repeats`` is reported. Peak memory is measured as ``bench_engine.py`` measures
it: the growth of the kernel's peak-RSS mark (``VmHWM`` after ``clear_refs=5``) over one repetition,
above the RSS before it (the volume itself is allocated before, so it is not counted).

Example:
    python benchmarks/bench_pyramid.py --quick                       # 128 x 256 x 256, one repetition
    python benchmarks/bench_pyramid.py --repeats 3 --json out.json   # the run of benchmarks/README.md
"""

from __future__ import annotations

import os

os.environ.setdefault("RAYON_NUM_THREADS", "2")  # zarrista's pool, read when it is first used

import argparse
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import PeakRSS  # the benchmarks share one memory measure

THREADS = 2
LEVELS = 5
ZSTD_LEVEL = 3


def make_volume(shape: tuple[int, int, int], seed: int = 0) -> np.ndarray:
    """A fluorescence-like uint16 volume (smooth structures over a dark background, Gaussian noise),
    generated slab by slab so no float copy of the whole volume is ever held."""
    rng = np.random.default_rng(seed)
    nz, ny, nx = shape
    waves = [(rng.uniform(0.5, 3.0, 3), rng.uniform(0.0, 2 * np.pi, 3)) for _ in range(4)]
    y = np.linspace(0.0, 1.0, ny, dtype=np.float32)[:, None]
    x = np.linspace(0.0, 1.0, nx, dtype=np.float32)[None, :]
    out = np.empty(shape, np.uint16)
    for z0 in range(0, nz, 16):
        z = np.linspace(0.0, 1.0, nz, dtype=np.float32)[z0 : z0 + 16, None, None]
        slab = np.zeros((z.shape[0], ny, nx), np.float32)
        for (fz, fy, fx), (pz, py, px) in waves:
            slab += (
                np.sin(2 * np.pi * fz * z + pz)
                * np.sin(2 * np.pi * fy * y + py)
                * np.cos(2 * np.pi * fx * x + px)
            )
        slab = (
            np.maximum(slab - 0.3, 0) * 3000.0
            + 100.0
            + rng.standard_normal(slab.shape, dtype=np.float32) * 8.0
        )
        out[z0 : z0 + 16] = np.clip(np.rint(slab), 0, 65535)
    return out


def run_altarr(volume: np.ndarray, path: Path) -> Any:
    import altarr as aa

    aa.set_options(threads=THREADS)
    return aa.build_pyramid(
        volume,
        str(path),
        factors=[(2, 2, 2)] * (LEVELS - 1),
        chunks=(64, 64, 64),
        shards=(256, 256, 256),
        compressor=f"zstd:{ZSTD_LEVEL}",
        workers=THREADS,
    )


def run_ngff_zarr(volume: np.ndarray, path: Path) -> Any:
    import dask
    import ngff_zarr as nz

    image = nz.to_ngff_image(volume, dims=("z", "y", "x"))
    factors = [2**i for i in range(1, LEVELS)]
    with dask.config.set(scheduler="threads", num_workers=THREADS):
        multiscales = nz.to_multiscales(
            image, scale_factors=factors, method=nz.Methods.DASK_BIN_SHRINK, chunks=64
        )
        nz.to_ngff_zarr(
            str(path),
            multiscales,
            version="0.5",
            chunks_per_shard=4,
            compressors=[{"name": "zstd", "configuration": {"level": ZSTD_LEVEL, "checksum": False}}],
        )
    return multiscales


RUNNERS: dict[str, Callable[[np.ndarray, Path], Any]] = {"altarr": run_altarr, "ngff-zarr": run_ngff_zarr}


def read_levels(path: Path) -> list[np.ndarray]:
    """Every level as written, read back with zarr-python (neither library under test)."""
    import zarr

    group = zarr.open_group(str(path), mode="r")
    paths = [d["path"] for d in group.attrs["ome"]["multiscales"][0]["datasets"]]
    return [group[p][...] for p in paths]


def stored_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="512,1024,1024", help="z,y,x of the volume")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--libs", default="altarr,ngff-zarr")
    parser.add_argument("--quick", action="store_true", help="128,256,256 and one repetition")
    parser.add_argument("--dir", default=None, help="where to write (default: a temporary folder)")
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args(argv)
    shape = (128, 256, 256) if args.quick else tuple(int(n) for n in args.shape.split(","))
    repeats = 1 if args.quick else args.repeats
    libs = [lib for lib in args.libs.split(",") if lib]
    work = Path(args.dir or tempfile.mkdtemp(prefix="bench-pyramid-"))
    work.mkdir(parents=True, exist_ok=True)
    volume = make_volume(shape)
    print(
        f"volume {shape} uint16 ({volume.nbytes / 2**20:.0f} MiB) -> {LEVELS}-level OME-Zarr 0.5, chunks 64^3, "
        f"shards 256^3, zstd {ZSTD_LEVEL}, mean by 2 per level, {THREADS} threads; peak memory: {PeakRSS.method}"
    )
    times: dict[str, list[float]] = {lib: [] for lib in libs}
    peaks: dict[str, list[int]] = {lib: [] for lib in libs}
    sizes: dict[str, int] = {}
    reference: list[np.ndarray] | None = None
    for rep in range(repeats):
        for lib in libs:
            path = work / f"{lib}-{rep}.ome.zarr"
            with PeakRSS() as peak:
                t0 = time.perf_counter()
                RUNNERS[lib](volume, path)
                seconds = time.perf_counter() - t0
            times[lib].append(seconds)
            peaks[lib].append(peak.growth)
            if rep == 0:
                levels = read_levels(path)
                sizes[lib] = stored_bytes(path)
                if reference is None:
                    reference = levels
                    if not np.array_equal(levels[0], volume):
                        raise SystemExit(f"{lib}: level 0 differs from the volume")
                elif [a.shape for a in levels] != [a.shape for a in reference] or not all(
                    np.array_equal(a, b) for a, b in zip(levels, reference, strict=True)
                ):
                    raise SystemExit(f"{lib}: levels differ from {libs[0]}'s")
            shutil.rmtree(path)
            print(
                f"  {lib:10s} repetition {rep + 1}: {seconds:7.2f} s, peak +{peak.growth / 2**20:7.0f} MiB",
                flush=True,
            )
    print()
    print("| library | median s | per level-0 GiB | peak memory MiB | stored MiB | time / altarr |")
    print("|---|---|---|---|---|---|")
    base = statistics.median(times[libs[0]])
    rows = {}
    for lib in libs:
        med = statistics.median(times[lib])
        rows[lib] = {
            "median_s": med,
            "times_s": times[lib],
            "peak_bytes": max(peaks[lib]),
            "stored_bytes": sizes.get(lib),
        }
        print(
            f"| {lib} | {med:.2f} | {med / (volume.nbytes / 2**30):.2f} | {max(peaks[lib]) / 2**20:.0f} | "
            f"{sizes.get(lib, 0) / 2**20:.0f} | {med / base:.2f} |"
        )
    if args.json:
        doc = {
            "benchmark": "pyramid",
            "shape": list(shape),
            "levels": LEVELS,
            "threads": THREADS,
            "repeats": repeats,
            "memory_method": PeakRSS.method,
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            "versions": {
                name: _version(name) for name in ("altarr", "ngff-zarr", "zarrista", "dask", "numpy")
            },
            "results": rows,
        }
        Path(args.json).write_text(json.dumps(doc, indent=2))
    if args.dir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


if __name__ == "__main__":
    sys.exit(main())
