#!/usr/bin/env python
"""Block-engine benchmark: altarr against zarr-python, zarrs-python, tensorstore and z5py, in one process.

Every library writes and reads its own copy of the same array (a smooth, noisy uint16 volume, generated
once from a fixed seed) as sharded Zarr v3 on local disk: ``N**3`` uint16 (default 512**3), shards of
256**3, chunks of 64**3, with zstd (level 3) and/or blosc (lz4, clevel 5, shuffle). Each scenario runs a
warm-up (not timed), then ``--repeats`` timed repetitions with ``time.perf_counter``; the median is
reported. Every library's result is checked against the source data once (on the warm-up run), so a fast
wrong answer cannot win.

Fairness: 2 worker threads everywhere (altarr ``set_options(threads=2)``; zarr-python and zarrs-python
``threading.max_workers=2``; tensorstore ``data_copy_concurrency`` and ``file_io_concurrency`` limits
of 2, ``file_io_sync`` off since no other library fsyncs, cache pool 0 bytes as by default; z5py
``n_threads=2``). The page cache is warm (files were just written): this measures the libraries, not
the disk.

Peak memory: for each scenario the kernel's peak-RSS mark is reset (``/proc/self/clear_refs`` = 5) and
the growth ``VmHWM - VmRSS(before)`` over the timed repetitions is reported (this sees C and Rust
allocations, which tracemalloc does not). Where ``clear_refs`` is not writable, a thread samples
``VmRSS`` every millisecond instead; the output says which was used.

Example:
    python benchmarks/bench_engine.py --quick                    # smoke run, 256**3, < 1 minute
    python benchmarks/bench_engine.py --codec both --json out.json  # the full run of the README
    python benchmarks/bench_engine.py --libs altarr,tensorstore --scenarios read,chunk --size 256
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import functools
import gc
import importlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from itertools import product
from typing import Any

import numpy as np

THREADS = 2
LIBS = ("altarr", "zarr", "zarrs", "tensorstore", "z5py")
SCENARIOS = (
    "write",
    "read",
    "chunk",
    "chunks_batch",
    "unaligned",
    "roundtrip",
    "sliding",
    "fancy",
    "write_chunks",
)
TITLES = {
    "write": "1 write whole array",
    "read": "2 read whole array",
    "chunk": "3 read 1 chunk (per read)",
    "chunks_batch": "3b read the same chunks in 1 batch (per chunk)",
    "unaligned": "4 read unaligned 64^3 (per read)",
    "roundtrip": "5 round trip (read all, write copy)",
    "sliding": "6 sliding-window slabs (all slabs)",
    "fancy": "7 fancy oindex read",
    "write_chunks": "8 write chunks into existing shards",
}
PER_OP = {"chunk", "chunks_batch", "unaligned"}


# --- data ---------------------------------------------------------------------------------------------
def make_volume(n: int, seed: int = 0) -> np.ndarray:
    """A realistic-looking ``n**3`` uint16 volume, like a fluorescence stack: smooth low-frequency
    sinusoidal "structures" over a dark background (about two thirds of the voxels), plus Gaussian
    noise (sigma 8). zstd level 3 compresses its 64**3 chunks about 1.7x.

    >>> v = make_volume(8)
    >>> v.shape, v.dtype
    ((8, 8, 8), dtype('uint16'))
    """
    rng = np.random.default_rng(seed)
    lin = np.linspace(0.0, 1.0, n, dtype=np.float32)
    z, y, x = lin[:, None, None], lin[None, :, None], lin[None, None, :]
    vol = np.zeros((n, n, n), dtype=np.float32)
    for _ in range(4):
        fz, fy, fx = rng.uniform(0.5, 3.0, size=3).astype(np.float32)
        pz, py, px = rng.uniform(0.0, 2 * np.pi, size=3).astype(np.float32)
        vol += (
            np.sin(2 * np.pi * fz * z + pz)
            * np.sin(2 * np.pi * fy * y + py)
            * np.cos(2 * np.pi * fx * x + px)
        )
    vol -= np.float32(0.3)
    np.maximum(vol, 0, out=vol)
    vol *= np.float32(3000.0)
    vol += np.float32(100.0)
    vol += rng.standard_normal(vol.shape, dtype=np.float32) * np.float32(8.0)
    np.rint(vol, out=vol)
    np.clip(vol, 0, 65535, out=vol)
    return vol.astype(np.uint16)


# --- memory ----------------------------------------------------------------------------------------------
def _status_kb(field_name: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    return 0


def _can_reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


try:
    _libc = ctypes.CDLL("libc.so.6")
except OSError:  # pragma: no cover - not glibc
    _libc = None


def _trim() -> None:
    """Give freed heap memory back to the OS, so the next baseline is not inflated by glibc's free lists."""
    gc.collect()
    if _libc is not None:
        with contextlib.suppress(AttributeError):
            _libc.malloc_trim(0)


class PeakRSS:
    """Peak RSS growth (bytes) over a ``with`` block: the kernel's VmHWM mark if it can be reset, else a
    1 ms sampling thread over VmRSS."""

    method = "VmHWM after clear_refs=5" if _can_reset_hwm() else "VmRSS sampled every 1 ms"

    def __enter__(self) -> PeakRSS:
        _trim()
        self.base = _status_kb("VmRSS")
        if self.method.startswith("VmHWM"):
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        else:
            self._peak = self.base
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.001):
            self._peak = max(self._peak, _status_kb("VmRSS"))

    def __exit__(self, *exc: object) -> None:
        if self.method.startswith("VmHWM"):
            peak = _status_kb("VmHWM")
        else:
            self._stop.set()
            self._thread.join()
            peak = max(self._peak, _status_kb("VmRSS"))
        self.growth = max(0, peak - self.base) * 1024


# --- library adapters -------------------------------------------------------------------------------------
Sel = tuple[slice, ...]


def _chunk_sel(coords: Sequence[int], chunk: int) -> Sel:
    return tuple(slice(c * chunk, (c + 1) * chunk) for c in coords)


@dataclass
class Geometry:
    n: int
    chunk: int
    shard: int

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.n,) * 3

    @property
    def grid(self) -> int:
        return -(-self.n // self.chunk)


class Adapter:
    """How one library does each operation. ``None`` from an optional method means "not supported"."""

    name = "?"
    note = ""

    def __init__(self, geo: Geometry, codec: str):
        self.geo, self.codec = geo, codec

    def version(self) -> str:
        return _version(self.name)

    def create(self, path: str) -> Any:
        raise NotImplementedError

    def open(self, path: str) -> Any:
        raise NotImplementedError

    def write_all(self, h: Any, data: np.ndarray) -> None:
        self.write(h, (slice(None),) * 3, data)

    def read_all(self, h: Any) -> np.ndarray:
        return self.read(h, (slice(None),) * 3)

    def read(self, h: Any, sel: Sel) -> np.ndarray:
        raise NotImplementedError

    def write(self, h: Any, sel: Sel, values: np.ndarray) -> None:
        raise NotImplementedError

    def read_chunk(self, h: Any, coords: tuple[int, ...]) -> np.ndarray:
        return self.read(h, _chunk_sel(coords, self.geo.chunk))

    def read_chunks_batch(self, h: Any, coords: list[tuple[int, ...]]) -> list[np.ndarray] | None:
        return None

    def oindex(self, h: Any, i0: np.ndarray, i1: np.ndarray, s2: slice) -> np.ndarray | None:
        return None

    def write_chunks(self, h: Any, coords: list[tuple[int, ...]], arrays: list[np.ndarray]) -> None:
        for c, a in zip(coords, arrays, strict=True):
            self.write(h, _chunk_sel(c, self.geo.chunk), a)

    def store_stats(self, h: Any) -> Any:
        return None

    def before_rep(self, h: Any) -> None:
        """Untimed hook before each repetition (drop caches that would turn a repeat into a cache hit)."""

    def context(self, scenario: str) -> contextlib.AbstractContextManager[Any]:
        """Settings held while a scenario runs."""
        return contextlib.nullcontext()

    def stats_for(self, scenario: str, h: Any) -> Any:
        """Request counters (``reset()`` and ``as_dict()``) to report for a scenario, or ``None``."""
        return self.store_stats(h)


def _version(dist: str) -> str:
    dist = {"zarr": "zarr", "zarrs": "zarrs", "altarr": "altarr"}.get(dist, dist)
    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


class AltarrAdapter(Adapter):
    name = "altarr"

    def __init__(self, geo: Geometry, codec: str):
        super().__init__(geo, codec)
        import altarr

        altarr.set_options(threads=THREADS)
        self.aa = altarr
        self.lazy_open = None
        try:
            self.lazy_open = altarr.open
            self.note = "fancy via altarr.open(path).oindex (lazy layer, cache_bytes=0 like the peers)"
        except (AttributeError, ImportError):
            self.note = "fancy via ds.read_chunks + NumPy assembly (altarr.open not available yet)"
        self._lazy: dict[int, Any] = {}  # id(dataset) -> lazy array over the same path
        self._paths: dict[int, str] = {}
        self._lazy_counters: dict[int, LazyCounters] = {}

    def _compressor(self) -> Any:
        if self.codec == "zstd":
            return {"name": "zstd", "configuration": {"level": 3, "checksum": False}}
        return {
            "name": "blosc",
            "configuration": {
                "cname": "lz4",
                "clevel": 5,
                "shuffle": "shuffle",
                "typesize": 2,
                "blocksize": 0,
            },
        }

    def create(self, path: str) -> Any:
        g = self.geo
        return self.aa.create_dataset(
            path,
            shape=g.shape,
            dtype="uint16",
            chunks=(g.chunk,) * 3,
            shards=(g.shard,) * 3,
            compressor=self._compressor(),
            checksum=False,  # like every peer here (the default's cost: --checksums)
            overwrite=True,
        )

    def open(self, path: str) -> Any:
        ds = self.aa.open_dataset(path, mode="r+")
        self._paths[id(ds)] = path
        return ds

    def read(self, h: Any, sel: Sel) -> np.ndarray:
        return h[sel]

    def write(self, h: Any, sel: Sel, values: np.ndarray) -> None:
        h[sel] = values

    def read_chunk(self, h: Any, coords: tuple[int, ...]) -> np.ndarray:
        return h.read_chunk(coords)

    def read_chunks_batch(self, h: Any, coords: list[tuple[int, ...]]) -> list[np.ndarray]:
        return h.read_chunks(coords)

    def lazy(self, h: Any) -> Any:
        """The lazy array over the same path as dataset ``h`` (one per dataset)."""
        x = self._lazy.get(id(h))
        if x is None:
            x = self._lazy[id(h)] = self.lazy_open(self._paths[id(h)])
        return x

    def oindex(self, h: Any, i0: np.ndarray, i1: np.ndarray, s2: slice) -> np.ndarray:
        if self.lazy_open is not None:
            # no decoded-chunk cache, as every peer runs here (tensorstore's cache_pool is 0): the lazy
            # layer then streams each chunk from the engine's scratch buffer into the result
            with self.aa.set_options(cache_bytes=0):
                return np.asarray(self.lazy(h).oindex[i0, i1, s2])
        return oindex_via_chunks(h, (i0, i1, s2))

    def before_rep(self, h: Any) -> None:
        if id(h) in self._lazy:  # every repetition starts with a cold decoded-chunk cache
            self._counters(h).drop_cache()

    def _counters(self, h: Any) -> LazyCounters:
        c = self._lazy_counters.get(id(h))
        if c is None:
            c = self._lazy_counters[id(h)] = LazyCounters(self.aa, self.lazy(h))
        return c

    def stats_for(self, scenario: str, h: Any) -> Any:
        if scenario == "fancy" and self.lazy_open is not None:
            return self._counters(h)
        return h.store.stats

    def write_chunks(self, h: Any, coords: list[tuple[int, ...]], arrays: list[np.ndarray]) -> None:
        h.write_chunks(coords, arrays)

    def store_stats(self, h: Any) -> Any:
        return h.store.stats


class LazyCounters:
    """The lazy layer's counters (``altarr.stats``) behind the ``reset()``/``as_dict()`` of store stats,
    summed over the cache drops between repetitions (``altarr.reset`` zeroes the counters too)."""

    KEYS = ("fetch_calls", "chunks_fetched", "bytes_fetched", "cache_hits")

    def __init__(self, aa: Any, x: Any):
        self.aa, self.x = aa, x
        self.total = dict.fromkeys(self.KEYS, 0)

    def _now(self) -> dict[str, int]:
        st = self.aa.stats(self.x)
        return {k: int(st.get(k, 0)) for k in self.KEYS}

    def drop_cache(self) -> None:
        for k, v in self._now().items():
            self.total[k] += v
        self.aa.reset(self.x, cache=True)

    def reset(self) -> None:
        self.aa.reset(self.x, cache=True)
        self.total = dict.fromkeys(self.KEYS, 0)

    def as_dict(self) -> dict[str, int]:
        return {k: self.total[k] + v for k, v in self._now().items()}


def oindex_via_chunks(ds: Any, sel: tuple[Any, ...]) -> np.ndarray:
    """Orthogonal selection (integer arrays and slices) on an altarr Dataset through one batched
    ``read_chunks`` call and NumPy assembly: what a user does without the lazy layer."""
    chunks = ds.chunks
    per_dim: list[list[tuple[int, np.ndarray, np.ndarray]]] = []  # (chunk index, local idx, output idx)
    out_shape = []
    for s, c, n in zip(sel, chunks, ds.shape, strict=True):
        idx = np.arange(n)[s] if isinstance(s, slice) else np.asarray(s, dtype=np.int64)
        out_shape.append(len(idx))
        k = idx // c
        groups = []
        for kk in np.unique(k):
            pos = np.nonzero(k == kk)[0]
            groups.append((int(kk), idx[pos] - kk * c, pos))
        per_dim.append(groups)
    out = np.empty(out_shape, dtype=ds.dtype)
    pieces = list(product(*per_dim))
    got = ds.read_chunks([tuple(p[0] for p in piece) for piece in pieces])
    for piece, arr in zip(pieces, got, strict=True):
        src = np.ix_(*(p[1] for p in piece))
        dst = np.ix_(*(p[2] for p in piece))
        out[dst] = ds.fill_value if arr is None else arr[src]
    return out


class ZarrAdapter(Adapter):
    name = "zarr"
    pipeline: str | None = None
    note = "chunk writes: one region write after another (no batch API; concurrent shard writes lose data)"

    def __init__(self, geo: Geometry, codec: str):
        super().__init__(geo, codec)
        import zarr

        zarr.config.set({"threading.max_workers": THREADS})
        self.zarr = zarr

    def _cfg(self) -> Any:
        if self.pipeline is None:
            return contextlib.nullcontext()
        return self.zarr.config.set({"codec_pipeline.path": self.pipeline})

    def _compressors(self) -> Any:
        from zarr.codecs import BloscCodec, ZstdCodec

        if self.codec == "zstd":
            return ZstdCodec(level=3, checksum=False)
        return BloscCodec(cname="lz4", clevel=5, shuffle="shuffle", typesize=2, blocksize=0)

    def create(self, path: str) -> Any:
        g = self.geo
        with self._cfg():
            return self.zarr.create_array(
                path,
                shape=g.shape,
                dtype="uint16",
                chunks=(g.chunk,) * 3,
                shards=(g.shard,) * 3,
                compressors=self._compressors(),
                fill_value=0,
                overwrite=True,
            )

    def open(self, path: str) -> Any:
        with self._cfg():
            a = self.zarr.open_array(path, mode="r+")
        if self.pipeline is not None:
            got = type(a._async_array.codec_pipeline).__name__
            assert got == self.pipeline.rsplit(".", 1)[1], f"zarrs pipeline not in use ({got})"
        return a

    def read(self, h: Any, sel: Sel) -> np.ndarray:
        return h[sel]

    def write(self, h: Any, sel: Sel, values: np.ndarray) -> None:
        h[sel] = values

    def read_chunks_batch(self, h: Any, coords: list[tuple[int, ...]]) -> list[np.ndarray]:
        from zarr.core.sync import sync

        aa = h._async_array
        c = self.geo.chunk

        async def gather() -> list[Any]:
            return await asyncio.gather(*(aa.getitem(_chunk_sel(k, c)) for k in coords))

        return [np.asarray(r) for r in sync(gather())]

    def oindex(self, h: Any, i0: np.ndarray, i1: np.ndarray, s2: slice) -> np.ndarray:
        return h.oindex[i0, i1, s2]


class ZarrsAdapter(ZarrAdapter):
    name = "zarrs"
    pipeline = "zarrs.ZarrsCodecPipeline"

    def __init__(self, geo: Geometry, codec: str):
        importlib.import_module("zarrs")  # not installed: skipped here, not a failure in the first scenario
        super().__init__(geo, codec)

    def version(self) -> str:
        return f"{_version('zarrs')} (on zarr {_version('zarr')})"


def tensorstore_context() -> Any:
    """tensorstore's context for a fair comparison: 2 threads for copies and file I/O, no fsync (nobody
    else syncs), no cache (its default)."""
    import tensorstore as ts

    return ts.Context(
        {
            "cache_pool": {"total_bytes_limit": 0},
            "data_copy_concurrency": {"limit": THREADS},
            "file_io_concurrency": {"limit": THREADS},
            "file_io_sync": False,
        }
    )


class TensorstoreAdapter(Adapter):
    name = "tensorstore"
    note = "chunk batch: ts.Batch; chunk writes: futures in one ts.Transaction"

    def __init__(self, geo: Geometry, codec: str):
        super().__init__(geo, codec)
        import tensorstore as ts

        self.ts = ts
        self.ctx = tensorstore_context()

    def _codec_json(self) -> dict[str, Any]:
        if self.codec == "zstd":
            return {"name": "zstd", "configuration": {"level": 3, "checksum": False}}
        return {
            "name": "blosc",
            "configuration": {
                "cname": "lz4",
                "clevel": 5,
                "shuffle": "shuffle",
                "typesize": 2,
                "blocksize": 0,
            },
        }

    def create(self, path: str) -> Any:
        g = self.geo
        spec = {
            "driver": "zarr3",
            "kvstore": {"driver": "file", "path": path},
            "metadata": {
                "shape": list(g.shape),
                "data_type": "uint16",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [g.shard] * 3}},
                "chunk_key_encoding": {"name": "default"},
                "fill_value": 0,
                "codecs": [
                    {
                        "name": "sharding_indexed",
                        "configuration": {
                            "chunk_shape": [g.chunk] * 3,
                            "codecs": [
                                {"name": "bytes", "configuration": {"endian": "little"}},
                                self._codec_json(),
                            ],
                            "index_codecs": [
                                {"name": "bytes", "configuration": {"endian": "little"}},
                                {"name": "crc32c"},
                            ],
                            "index_location": "end",
                        },
                    }
                ],
            },
            "create": True,
            "delete_existing": True,
        }
        return self.ts.open(spec, context=self.ctx).result()

    def open(self, path: str) -> Any:
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}, "open": True}
        return self.ts.open(spec, context=self.ctx).result()

    def read(self, h: Any, sel: Sel) -> np.ndarray:
        return h[sel].read().result()

    def write(self, h: Any, sel: Sel, values: np.ndarray) -> None:
        h[sel].write(values).result()

    def read_chunks_batch(self, h: Any, coords: list[tuple[int, ...]]) -> list[np.ndarray]:
        c = self.geo.chunk
        with self.ts.Batch() as batch:
            futs = [h[_chunk_sel(k, c)].read(batch=batch) for k in coords]
        return [f.result() for f in futs]

    def oindex(self, h: Any, i0: np.ndarray, i1: np.ndarray, s2: slice) -> np.ndarray:
        return h.oindex[i0, i1, s2].read().result()

    def write_chunks(self, h: Any, coords: list[tuple[int, ...]], arrays: list[np.ndarray]) -> None:
        txn = self.ts.Transaction()
        t = h.with_transaction(txn)
        futs = [t[_chunk_sel(k, self.geo.chunk)].write(a) for k, a in zip(coords, arrays, strict=True)]
        for f in futs:
            f.result()
        txn.commit_sync()


class Z5pyAdapter(Adapter):
    name = "z5py"
    note = "sharded Zarr v3 (z5py >= 3.0); no fancy indexing and no batch read API (n/a)"

    def __init__(self, geo: Geometry, codec: str):
        super().__init__(geo, codec)
        import z5py

        self.z5py = z5py

    def _kwargs(self) -> dict[str, Any]:
        if self.codec == "zstd":
            return {"compression": "zstd", "level": 3}
        return {"compression": "blosc", "codec": "lz4", "level": 5, "shuffle": 1, "blocksize": 0}

    def create(self, path: str) -> Any:
        g = self.geo
        if os.path.exists(path):
            shutil.rmtree(path)
        os.makedirs(path)
        f = self.z5py.ZarrFile(os.path.join(path, "z5.zarr"), mode="a", zarr_format=3)
        return f.create_dataset(
            "a",
            shape=g.shape,
            dtype="uint16",
            chunks=(g.chunk,) * 3,
            shards=(g.shard,) * 3,
            n_threads=THREADS,
            **self._kwargs(),
        )

    def open(self, path: str) -> Any:
        ds = self.z5py.ZarrFile(os.path.join(path, "z5.zarr"), mode="a")["a"]
        ds.n_threads = THREADS
        return ds

    def read(self, h: Any, sel: Sel) -> np.ndarray:
        return h[sel]

    def write(self, h: Any, sel: Sel, values: np.ndarray) -> None:
        h[sel] = values


ADAPTERS: dict[str, type[Adapter]] = {
    "altarr": AltarrAdapter,
    "zarr": ZarrAdapter,
    "zarrs": ZarrsAdapter,
    "tensorstore": TensorstoreAdapter,
    "z5py": Z5pyAdapter,
}


# --- timing -----------------------------------------------------------------------------------------------
@dataclass
class Result:
    times: list[float] = field(default_factory=list)
    ops: int = 1  # operations per repetition (per-op figures divide by this)
    nbytes: int = 0  # uncompressed bytes moved per repetition (for MB/s)
    rss_growth: int = 0  # the largest peak-RSS growth of one timed repetition
    stats: dict[str, float] | None = None
    discarded: int = 0  # repetitions re-run because other processes used the CPU meanwhile
    note: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def per_op(self) -> float:
        return self.median / self.ops

    def as_dict(self) -> dict[str, Any]:
        return {
            "times_s": self.times,
            "median_s": self.median,
            "min_s": min(self.times),
            "ops": self.ops,
            "per_op_s": self.per_op,
            "mb_per_s": (self.nbytes / self.median / 1e6) if self.nbytes else None,
            "peak_rss_growth_mb": self.rss_growth / 1e6,
            "store_stats_per_rep": self.stats,
            "discarded_reps": self.discarded,
            "note": self.note,
        }


class CpuWatch:
    """CPU used by *other* processes while we run: machine busy time (``/proc/stat``) minus our own
    process time (``os.times``, all threads), in cores. The machine is shared, so a repetition during
    which others used the CPU is re-run (see :func:`run_jobs`)."""

    def __init__(self) -> None:
        self.hz = os.sysconf("SC_CLK_TCK")
        self.ok = os.path.exists("/proc/stat")

    def snap(self) -> tuple[float, float, float]:
        busy = 0.0
        if self.ok:
            with open("/proc/stat") as f:
                v = [int(x) for x in f.readline().split()[1:9]]
            busy = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / self.hz  # user nice system irq softirq steal
        t = os.times()
        return busy, t.user + t.system, time.perf_counter()

    def others(self, a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
        wall = b[2] - a[2]
        if not self.ok or wall <= 0:
            return 0.0
        return max(0.0, (b[0] - a[0]) - (b[1] - a[1])) / wall

    def wait_idle(self, threshold: float = 0.2, max_wait: float = 120.0) -> None:
        """Sleep until other processes use less than ``threshold`` cores over half a second."""
        end = time.perf_counter() + max_wait
        while time.perf_counter() < end:
            a = self.snap()
            time.sleep(0.5)
            if self.others(a, self.snap()) < threshold:
                return


CPU = CpuWatch()
#: A timed repetition (of at least 50 ms) during which other processes used more cores than this is re-run.
MAX_INTERFERENCE = 0.3
RETRIES = 3


@dataclass
class Job:
    """One library's run of one scenario: ``fn(keep)`` does the work (keeping its results only when
    ``keep``, for the verified warm-up); ``before`` prepares each run, untimed."""

    name: str
    fn: Callable[[bool], Any]
    verify: Callable[[Any], None] | None = None
    before: Callable[[], None] | None = None
    stats: Any = None  # counters with reset() and as_dict(), reported per repetition
    context: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext
    ops: int = 1
    nbytes: int = 0


def run_jobs(jobs: Sequence[Job], repeats: int, warmup: int = 1) -> dict[str, Result]:
    """Warm up every job (the first run's result is verified), then ``repeats`` rounds in which every
    job runs once, interleaved, so that load from other processes spreads over all libraries. Each timed
    run has its own peak-RSS window; one during which other processes used more than
    ``MAX_INTERFERENCE`` cores is re-run (up to ``RETRIES`` times) after waiting for the machine to be
    idle, and counted in ``Result.discarded``."""
    results = {j.name: Result(ops=j.ops, nbytes=j.nbytes) for j in jobs}
    runs = dict.fromkeys(results, 0)
    for j in jobs:
        for i in range(max(warmup, 1 if j.verify else 0)):
            keep = i == 0 and j.verify is not None
            with j.context():
                if j.before:
                    j.before()
                out = j.fn(keep)
            if keep:
                j.verify(out)  # type: ignore[misc]
            del out
        if j.stats is not None:
            j.stats.reset()
    for _ in range(repeats):
        for j in jobs:
            res = results[j.name]
            for attempt in range(RETRIES + 1):
                with j.context():
                    if j.before:
                        j.before()
                    with PeakRSS() as mem:
                        a = CPU.snap()
                        t0 = time.perf_counter()
                        out = j.fn(False)
                        dt = time.perf_counter() - t0
                        b = CPU.snap()
                        del out
                runs[j.name] += 1
                res.rss_growth = max(res.rss_growth, mem.growth)
                if dt < 0.05 or CPU.others(a, b) < MAX_INTERFERENCE or attempt == RETRIES:
                    res.times.append(dt)
                    break
                res.discarded += 1
                CPU.wait_idle()
    for j in jobs:
        if j.stats is not None:
            results[j.name].stats = {k: v / runs[j.name] for k, v in j.stats.as_dict().items() if v}
    return results


def run_timed(fn: Callable[[bool], Any], *, repeats: int, **job: Any) -> Result:
    """One job alone (see :func:`run_jobs`)."""
    return run_jobs([Job("_", fn, **job)], repeats)["_"]


def _eq(got: Any, want: np.ndarray, what: str) -> None:
    got = np.asarray(got)
    if got.shape != want.shape or not np.array_equal(got, want):
        raise AssertionError(
            f"{what}: result differs from the source data (shape {got.shape} vs {want.shape})"
        )


# --- floor --------------------------------------------------------------------------------------------------
def numcodecs_codec(codec: str) -> Any:
    import numcodecs

    if codec == "zstd":
        return numcodecs.Zstd(level=3)
    return numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE, blocksize=0)


def floor(data: np.ndarray, geo: Geometry, codec: str, repeats: int) -> dict[str, Result]:
    """Pure numcodecs encode and decode of every chunk of ``data`` on a 2-thread pool: no I/O, no
    shard assembly, no copies beyond numcodecs' own."""
    c = geo.chunk
    comp = numcodecs_codec(codec)
    chunks = [np.ascontiguousarray(data[_chunk_sel(k, c)]) for k in product(range(geo.grid), repeat=3)]
    out: dict[str, Result] = {}
    with ThreadPoolExecutor(THREADS) as pool:
        enc = run_timed(lambda keep: list(pool.map(comp.encode, chunks)), repeats=repeats)
        encoded = list(pool.map(comp.encode, chunks))

        def check(decoded: list[Any]) -> None:
            for a, b in zip(decoded, chunks, strict=True):
                _eq(np.frombuffer(a, dtype=np.uint16).reshape(b.shape), b, "floor decode")

        dec = run_timed(lambda keep: list(pool.map(comp.decode, encoded)), repeats=repeats, verify=check)
    enc.nbytes = dec.nbytes = data.nbytes
    ratio = data.nbytes / sum(len(e) for e in encoded)
    enc.note = dec.note = f"compression ratio {ratio:.2f}"
    out["write"], out["read"] = enc, dec
    return out


# --- the run ------------------------------------------------------------------------------------------------
@dataclass
class Plan:
    """Random positions drawn once per run (the same for every library)."""

    chunk_coords: list[tuple[int, ...]]
    offsets: list[tuple[int, ...]]
    slabs: list[int]
    slab: int
    i0: np.ndarray
    i1: np.ndarray
    s2: slice
    write_coords: list[tuple[int, ...]]
    n_shards: int


def make_plan(geo: Geometry, n_chunk_reads: int, n_unaligned: int, n_writes: int, seed: int) -> Plan:
    """Draw the random positions of every scenario.

    >>> p = make_plan(Geometry(512, 64, 256), 10, 5, 64, 0)
    >>> len(p.chunk_coords), len(p.write_coords), p.n_shards, len(p.i0) * len(p.i1)
    (10, 64, 8, 5000)
    """
    rng = np.random.default_rng(seed + 1)
    n, c, s = geo.n, geo.chunk, geo.shard
    chunk_coords = [tuple(int(v) for v in row) for row in rng.integers(0, geo.grid, size=(n_chunk_reads, 3))]
    w = min(c, n)
    offsets = [tuple(int(v) for v in row) for row in rng.integers(0, n - w + 1, size=(n_unaligned, 3))]
    slab = min(64, n)
    slabs = list(range(0, n - slab + 1, max(1, slab // 2)))
    # fancy: 5000 "rows" (100 sorted indices along axis 0 x 50 along axis 1) of a fixed 64-wide slab in axis 2
    k0 = min(n, 100)
    k1 = min(n, max(1, 5000 // k0))
    i0 = np.sort(rng.choice(n, size=k0, replace=False)).astype(np.int64)
    i1 = np.sort(rng.choice(n, size=k1, replace=False)).astype(np.int64)
    x0 = int(rng.integers(0, n - w + 1))
    s2 = slice(x0, x0 + w)
    # chunk writes: distinct chunks dealt round-robin over every shard, so each shard is partly rewritten
    per_shard = s // c
    shards = list(product(range(-(-n // s)), repeat=3))
    pools: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
    for sh in shards:
        cells = [
            tuple(sh[d] * per_shard + o[d] for d in range(3)) for o in product(range(per_shard), repeat=3)
        ]
        cells = [cc for cc in cells if all(v < geo.grid for v in cc)]
        pools[sh] = [cells[i] for i in rng.permutation(len(cells))]
    target = min(n_writes, sum(len(v) for v in pools.values()))
    write_coords: list[tuple[int, ...]] = []
    while len(write_coords) < target:
        for sh in shards:
            if pools[sh] and len(write_coords) < target:
                write_coords.append(pools[sh].pop())
    return Plan(chunk_coords, offsets, slabs, slab, i0, i1, s2, sorted(write_coords), len(shards))


def dir_size(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def _each(fn: Callable[[Any], Any], items: Sequence[Any], keep: bool) -> list[Any] | None:
    """Run ``fn`` on every item; keep the results only when asked (for verification)."""
    if keep:
        return [fn(x) for x in items]
    for x in items:
        fn(x)
    return None


def bench_codec(
    codec: str,
    data: np.ndarray,
    geo: Geometry,
    plan: Plan,
    libs: list[str],
    scenarios: list[str],
    repeats: int,
    workdir: str,
    log: Callable[[str], None],
    profile_dir: str | None = None,
) -> dict[str, Any]:
    """Run every scenario for every library with one codec; returns results, sizes on disk and notes."""
    adapters: dict[str, Adapter] = {}
    skipped: dict[str, str] = {}
    for name in libs:
        try:
            adapters[name] = ADAPTERS[name](geo, codec)
        except Exception as e:  # a missing peer is reported, not fatal
            skipped[name] = f"{type(e).__name__}: {e}"
            log(f"  {name}: skipped ({skipped[name]})")
    results: dict[str, dict[str, Result]] = {s: {} for s in scenarios}
    paths = {name: os.path.join(workdir, codec, name) for name in adapters}
    c = geo.chunk
    nbytes = data.nbytes
    for p in paths.values():
        os.makedirs(p, exist_ok=True)

    def main_path(name: str) -> str:
        return os.path.join(paths[name], "main")

    def fresh_array(ad: Adapter, name: str, made: list[tuple[str, Any]]) -> None:
        """Untimed: create an empty array at a new path (removing the previous one, except the first)."""
        if len(made) > 1:
            shutil.rmtree(made.pop()[0], ignore_errors=True)
        p = os.path.join(paths[name], f"new{len(made)}-{time.monotonic_ns()}")
        made.append((p, ad.create(p)))

    def execute(key: str, jobs: list[Job]) -> None:
        if not jobs:
            return
        log(f"  {key}: " + ", ".join(j.name for j in jobs))
        results[key].update(run_jobs(jobs, repeats))
        for j in jobs:
            if profile_dir and j.name == "altarr":
                with j.context():
                    profile_one(profile_dir, codec, key, j.fn, j.before)

    # 1. write: every repetition writes a fresh array; the first one written stays as the main copy
    made_by: dict[str, list[tuple[str, Any]]] = {name: [] for name in adapters}
    if "write" in scenarios:
        jobs = []
        for name, ad in adapters.items():

            def write_fn(keep: bool, ad: Adapter = ad, made: list = made_by[name]) -> None:
                ad.write_all(made[-1][1], data)

            prep = functools.partial(fresh_array, ad, name, made_by[name])
            jobs.append(Job(name, write_fn, before=prep, nbytes=nbytes))
        execute("write", jobs)
    for name, ad in adapters.items():
        made = made_by[name]
        if made:
            os.replace(made[0][0], main_path(name))
            for p, _ in made[1:]:
                shutil.rmtree(p, ignore_errors=True)
            if name == "altarr":  # a fresh dataset (and store) per repetition: the last one's requests
                results["write"][name].stats = {
                    k: v for k, v in made[-1][1].store.stats.as_dict().items() if v
                }
        else:
            ad.write_all(ad.create(main_path(name)), data)
    handles = {name: ad.open(main_path(name)) for name, ad in adapters.items()}
    for name, ad in adapters.items():  # what every library wrote is checked here, once
        _eq(ad.read_all(handles[name]), data, f"{name}: read back after write")
    disk = {name: dir_size(main_path(name)) for name in adapters}

    for key in scenarios:
        jobs = []
        cleanup: list[Callable[[], None]] = []
        for name, ad in adapters.items():
            h = handles[name]
            common: dict[str, Any] = {
                "before": functools.partial(ad.before_rep, h),
                "stats": ad.stats_for(key, h),
                "context": functools.partial(ad.context, key),
            }
            if key == "read":

                def fn(keep: bool, ad: Adapter = ad, h: Any = h) -> np.ndarray:
                    return ad.read_all(h)

                jobs.append(Job(name, fn, lambda o: _eq(o, data, "read"), nbytes=nbytes, **common))
            elif key == "chunk":

                def fn(keep: bool, ad: Adapter = ad, h: Any = h) -> Any:
                    return _each(functools.partial(ad.read_chunk, h), plan.chunk_coords, keep)

                def ver(out: list) -> None:
                    for k, o in zip(plan.chunk_coords, out, strict=True):
                        _eq(o, data[_chunk_sel(k, c)], f"chunk {k}")

                jobs.append(Job(name, fn, ver, ops=len(plan.chunk_coords), **common))
            elif key == "chunks_batch":
                if ad.read_chunks_batch(h, plan.chunk_coords[:1]) is None:
                    continue

                def fn(keep: bool, ad: Adapter = ad, h: Any = h) -> Any:
                    return ad.read_chunks_batch(h, plan.chunk_coords)

                def ver(out: list) -> None:
                    assert len(out) == len(plan.chunk_coords)
                    for k, o in zip(plan.chunk_coords, out, strict=True):
                        _eq(o, data[_chunk_sel(k, c)], f"batched chunk {k}")

                jobs.append(Job(name, fn, ver, ops=len(plan.chunk_coords), **common))
            elif key == "unaligned":
                w = min(64, geo.n)
                sels = [tuple(slice(o, o + w) for o in off) for off in plan.offsets]

                def fn(keep: bool, ad: Adapter = ad, h: Any = h, sels: list = sels) -> Any:
                    return _each(functools.partial(ad.read, h), sels, keep)

                def ver(out: list, sels: list = sels) -> None:
                    for s, o in zip(sels, out, strict=True):
                        _eq(o, data[s], f"region {s}")

                jobs.append(Job(name, fn, ver, ops=len(sels), **common))
            elif key == "roundtrip":
                made: list[tuple[str, Any]] = []

                def prep(ad: Adapter = ad, name: str = name, h: Any = h, made: list = made) -> None:
                    ad.before_rep(h)
                    fresh_array(ad, name, made)

                def fn(keep: bool, ad: Adapter = ad, h: Any = h, made: list = made) -> str:
                    ad.write_all(made[-1][1], ad.read_all(h))
                    return made[-1][0]

                def ver(path: str, ad: Adapter = ad) -> None:
                    _eq(ad.read_all(ad.open(path)), data, "round-trip copy")

                jobs.append(Job(name, fn, ver, nbytes=nbytes, **{**common, "before": prep}))
                cleanup.append(lambda made=made: [shutil.rmtree(p, ignore_errors=True) for p, _ in made])
            elif key == "sliding":
                sels = [(slice(z, z + plan.slab), slice(None), slice(None)) for z in plan.slabs]

                def fn(keep: bool, ad: Adapter = ad, h: Any = h, sels: list = sels) -> Any:
                    return _each(functools.partial(ad.read, h), sels, keep)

                def ver(out: list, sels: list = sels) -> None:
                    for s, o in zip(sels, out, strict=True):
                        _eq(o, data[s], f"slab {s}")

                nb = len(sels) * data[sels[0]].nbytes
                jobs.append(Job(name, fn, ver, nbytes=nb, ops=len(sels), **common))
            elif key == "fancy":
                if ad.oindex(h, plan.i0[:1], plan.i1[:1], plan.s2) is None:
                    continue
                want = data[np.ix_(plan.i0, plan.i1, np.arange(geo.n)[plan.s2])]

                def fn(keep: bool, ad: Adapter = ad, h: Any = h) -> np.ndarray:
                    return ad.oindex(h, plan.i0, plan.i1, plan.s2)

                jobs.append(Job(name, fn, lambda o, want=want: _eq(o, want, "oindex"), **common))
            elif key == "write_chunks":
                p = os.path.join(paths[name], "wc")
                shutil.rmtree(p, ignore_errors=True)
                shutil.copytree(main_path(name), p)
                hw = ad.open(p)
                arrays = [(data[_chunk_sel(k, c)] ^ np.uint16(0x5A5A)) for k in plan.write_coords]

                def fn(keep: bool, ad: Adapter = ad, hw: Any = hw, arrays: list = arrays) -> None:
                    ad.write_chunks(hw, plan.write_coords, arrays)

                def check(ad: Adapter = ad, p: str = p, arrays: list = arrays, name: str = name) -> None:
                    expected = data.copy()
                    for k, a in zip(plan.write_coords, arrays, strict=True):
                        expected[_chunk_sel(k, c)] = a
                    _eq(ad.read_all(ad.open(p)), expected, f"{name}: array after chunk writes")
                    shutil.rmtree(p, ignore_errors=True)

                jobs.append(
                    Job(
                        name,
                        fn,
                        ops=len(plan.write_coords),
                        **{**common, "before": None, "stats": ad.stats_for(key, hw)},
                    )
                )
                cleanup.append(check)
        if key != "write":
            execute(key, jobs)
        for f in cleanup:
            f()
    return {
        "results": results,
        "skipped": skipped,
        "disk_bytes": disk,
        "notes": {n: a.note for n, a in adapters.items() if a.note},
        "versions": {n: a.version() for n, a in adapters.items()},
    }


# --- the cost of a chunk checksum (altarr only) ---------------------------------------------------------------
#: (label, create_dataset keywords) per codec: no checksum, the default (checksum=True: zstd's frame checksum,
#: a crc32c codec after blosc), and a crc32c codec after zstd for comparison.
CHECKSUM_VARIANTS = {
    "zstd": [
        ("none", {"checksum": False}),
        ("default: zstd frame checksum", {}),
        ("crc32c codec", {"extra": [{"name": "crc32c"}], "checksum": False}),
    ],
    "blosc": [("none", {"checksum": False}), ("default: crc32c codec", {})],
}


def checksum_cost(
    data: np.ndarray, geo: Geometry, codec: str, repeats: int, workdir: str
) -> tuple[str, dict[str, Any]]:
    """Write and read the whole array with each checksum variant of ``codec`` (interleaved repetitions,
    each result verified once); a table with the ratio of every variant to no checksum."""
    ad = AltarrAdapter(geo, codec)
    jobs: list[Job] = []
    for label, kw in CHECKSUM_VARIANTS[codec]:
        kw = dict(kw)
        path = os.path.join(workdir, "checksum", f"{codec}-{len(jobs)}.zarr")
        h = ad.aa.create_dataset(
            path,
            shape=geo.shape,
            dtype="uint16",
            chunks=(geo.chunk,) * 3,
            shards=(geo.shard,) * 3,
            compressor=[ad._compressor(), *kw.pop("extra", [])],
            overwrite=True,
            **kw,
        )
        h[...] = data

        def write(keep: bool, h: Any = h) -> None:
            h[...] = data

        def read(keep: bool, h: Any = h) -> np.ndarray:
            return h[...]

        with open(os.path.join(path, "zarr.json")) as f:
            inner = json.load(f)["codecs"][0]["configuration"]["codecs"]
        codecs = "+".join(
            c["name"] + ("(checksum)" if c.get("configuration", {}).get("checksum") else "") for c in inner
        )
        jobs.append(Job(f"write|{label}|{codecs}", write, nbytes=data.nbytes))
        jobs.append(
            Job(f"read|{label}|{codecs}", read, verify=lambda out: _eq(out, data, "read"), nbytes=data.nbytes)
        )
    # the writes among themselves, then (their dirty pages written back) the reads among themselves
    res = run_jobs([j for j in jobs if j.name.startswith("write")], repeats)
    os.sync()
    res |= run_jobs([j for j in jobs if j.name.startswith("read")], repeats)
    rows = []
    for op in ("write", "read"):
        base = next(r for k, r in res.items() if k.startswith(f"{op}|none|"))
        for key, r in res.items():
            if key.startswith(op + "|"):
                _, label, chain = key.split("|")
                rows.append([op, label, chain, fmt_time(r.median), f"{r.median / base.median:.2f}"])
    text = f"Chunk checksum cost, {codec} (altarr, whole array, median of {repeats}):\n" + _md(
        ["", "checksum", "chunk codecs", "time", "vs none"], rows
    )
    shutil.rmtree(os.path.join(workdir, "checksum"), ignore_errors=True)
    return text, {k: r.as_dict() for k, r in res.items()}


def profile_one(
    profile_dir: str, codec: str, key: str, fn: Callable[[bool], Any], before: Callable[[], None] | None
) -> None:
    """One more run of an altarr scenario under cProfile, with 1 worker so that the profile sees the
    decode/encode work that normally runs on pool threads (cProfile follows one thread only)."""
    import cProfile

    import altarr

    os.makedirs(profile_dir, exist_ok=True)
    altarr.set_options(threads=1)
    try:
        if before:
            before()
        prof = cProfile.Profile()
        prof.runcall(fn, False)
        prof.dump_stats(os.path.join(profile_dir, f"altarr_{codec}_{key}.prof"))
    finally:
        altarr.set_options(threads=THREADS)


# --- report -------------------------------------------------------------------------------------------------
def fmt_time(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} us"


def cell(res: Result | None, key: str) -> str:
    if res is None:
        return "n/a"
    t = res.per_op if key in PER_OP else res.median
    text = fmt_time(t)
    if res.nbytes and key in ("write", "read", "sliding"):
        text += f" ({res.nbytes / res.median / 1e6:.0f} MB/s)"
    return text


def table(codec_title: str, out: dict[str, Any], floor_res: dict[str, Result], libs: list[str]) -> str:
    results = out["results"]
    cols = ["scenario", *libs, "floor", "altarr/best peer", "altarr/floor"]
    rows = []
    for key, per_lib in results.items():
        if not per_lib:
            continue
        row = [TITLES[key]] + [cell(per_lib.get(n), key) for n in libs]
        fl = floor_res.get(key)
        row.append(cell(fl, key) if fl else "")
        a = per_lib.get("altarr")
        peers = [r.median for n, r in per_lib.items() if n != "altarr"]
        row.append(f"{a.median / min(peers):.2f}" if a and peers else "")
        row.append(f"{a.median / fl.median:.2f}" if a and fl else "")
        rows.append(row)
    lines = [f"### {codec_title}", "", _md(cols, rows)]
    # memory
    mem_rows = [
        [TITLES[k]] + [f"{per_lib[n].rss_growth / 1e6:.0f}" if n in per_lib else "n/a" for n in libs]
        for k, per_lib in results.items()
        if per_lib
    ]
    lines += ["", f"Peak RSS growth, MB ({PeakRSS.method}):", "", _md(["scenario", *libs], mem_rows)]
    # altarr store requests
    st_rows = []
    for k, per_lib in results.items():
        a = per_lib.get("altarr")
        if a is not None and a.stats is not None:
            s = a.stats
            std = ("reads", "bytes_read", "writes", "bytes_written")
            other = ", ".join(f"{n} {v:g}" for n, v in s.items() if n not in std)
            st_rows.append(
                [
                    TITLES[k],
                    f"{s.get('reads', 0):g}",
                    f"{s.get('bytes_read', 0) / 1e6:.1f}",
                    f"{s.get('writes', 0):g}",
                    f"{s.get('bytes_written', 0) / 1e6:.1f}",
                    other,
                ]
            )
    if st_rows:
        lines += [
            "",
            "altarr requests per repetition (ds.store.stats; the lazy layer's altarr.stats for fancy):",
            "",
            _md(["scenario", "reads", "MB read", "writes", "MB written", "other"], st_rows),
        ]
    rerun = {n: sum(per_lib[n].discarded for per_lib in results.values() if n in per_lib) for n in libs}
    lines += [
        "",
        f"Repetitions re-run because other processes used > {MAX_INTERFERENCE} cores meanwhile: "
        + ", ".join(f"{n} {k}" for n, k in rerun.items()),
    ]
    disk = out["disk_bytes"]
    lines += ["On disk (MB): " + ", ".join(f"{n} {disk[n] / 1e6:.1f}" for n in libs if n in disk)]
    if "write" in floor_res:
        lines.append(f"Floor: numcodecs on {THREADS} threads, {floor_res['write'].note}.")
    for n, note in out["notes"].items():
        lines.append(f"- {n}: {note}")
    for n, why in out["skipped"].items():
        lines.append(f"- {n}: skipped ({why})")
    return "\n".join(lines)


def _md(cols: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [cols, *rows]) for i in range(len(cols))]

    def line(r: list[str]) -> str:
        return "| " + " | ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)) + " |"

    return "\n".join([line(cols), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def machine() -> dict[str, Any]:
    cpu = "?"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    rev = "?"
    with contextlib.suppress(Exception):
        import subprocess

        import altarr

        pkg = os.path.dirname(os.path.abspath(altarr.__file__))
        marker = os.path.join(os.path.dirname(os.path.dirname(pkg)), "ALTARR_GIT_REV")

        def git(*a: str) -> str:
            return subprocess.run(
                ["git", "-C", pkg, *a], capture_output=True, text=True, timeout=10
            ).stdout.strip()

        if os.path.exists(marker):  # an exported tree (see benchmarks/README.md)
            with open(marker) as f:
                rev = f"{f.read().strip()} (clean export at {os.path.dirname(os.path.dirname(pkg))})"
        elif git("rev-parse", "--is-inside-work-tree") == "true":
            rev = git("rev-parse", "--short", "HEAD")
            rev += " (src modified)" if git("status", "--porcelain", "--", ".") else ""
        else:
            rev = f"unknown (altarr imported from {pkg})"
    native = "?"
    with contextlib.suppress(Exception):
        import altarr

        native = str(altarr.native_status())
    return {
        "altarr_git": rev,
        "altarr_native_kernel": native,
        "load_avg": os.getloadavg(),
        "nproc": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": _version("numpy"),
        "numcodecs": _version("numcodecs"),
    }


# --- CLI ------------------------------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument(
        "--quick", action="store_true", help="256^3 array, 1 repeat, fewer reads and writes (a smoke run)"
    )
    p.add_argument("--size", type=int, default=None, help="edge of the cube (default 512, 256 with --quick)")
    p.add_argument("--libs", default=",".join(LIBS), help=f"comma list out of {','.join(LIBS)}")
    p.add_argument("--codec", default="both", choices=["zstd", "blosc", "both"])
    p.add_argument(
        "--scenarios", default=",".join(SCENARIOS), help=f"comma list out of {','.join(SCENARIOS)}"
    )
    p.add_argument("--repeats", type=int, default=None, help="timed repetitions (default 5, 2 with --quick)")
    p.add_argument("--chunk-reads", type=int, default=None, help="random chunk reads (default 1000)")
    p.add_argument("--unaligned-reads", type=int, default=None, help="random unaligned reads (default 200)")
    p.add_argument("--chunk-writes", type=int, default=None, help="chunks written in scenario 8 (default 64)")
    p.add_argument("--dir", default=None, help="work directory on local disk (default: a temp dir in /tmp)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--retries",
        type=int,
        default=None,
        help=f"re-runs of a repetition during which other processes used > {MAX_INTERFERENCE} cores "
        "(default 3, 0 with --quick)",
    )
    p.add_argument("--json", default=None, help="also write every measurement to this JSON file")
    p.add_argument("--profile", default=None, help="directory for cProfile dumps of altarr's scenarios")
    p.add_argument(
        "--checksums",
        action="store_true",
        help="only measure what a chunk checksum costs altarr (whole write and read, per --codec)",
    )
    a = p.parse_args(argv)
    a.libs = [s.strip() for s in a.libs.split(",") if s.strip()]
    a.scenarios = [s.strip() for s in a.scenarios.split(",") if s.strip()]
    for name in a.libs:
        if name not in LIBS:
            p.error(f"unknown library {name!r}")
    for s in a.scenarios:
        if s not in SCENARIOS:
            p.error(f"unknown scenario {s!r}")
    a.scenarios = [s for s in SCENARIOS if s in a.scenarios]
    a.size = a.size or (256 if a.quick else 512)
    a.repeats = a.repeats or (1 if a.quick else 5)
    a.chunk_reads = a.chunk_reads or (100 if a.quick else 1000)
    a.unaligned_reads = a.unaligned_reads or (20 if a.quick else 200)
    a.chunk_writes = a.chunk_writes or (8 if a.quick else 64)
    if a.retries is None:
        a.retries = 0 if a.quick else 3
    return a


def main(argv: Sequence[str] | None = None) -> int:
    global RETRIES
    args = parse_args(argv)
    RETRIES = args.retries
    codecs = ["zstd", "blosc"] if args.codec == "both" else [args.codec]
    chunk = min(64, args.size)
    geo = Geometry(n=args.size, chunk=chunk, shard=min(256, -(-args.size // chunk) * chunk))

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    t_start = time.perf_counter()
    log(f"generating {geo.shape} uint16 (seed {args.seed})")
    data = make_volume(args.size, args.seed)
    plan = make_plan(geo, args.chunk_reads, args.unaligned_reads, args.chunk_writes, args.seed)
    workdir = args.dir or tempfile.mkdtemp(prefix="altarr-bench-", dir="/tmp")
    own_dir = args.dir is None
    os.makedirs(workdir, exist_ok=True)
    report: dict[str, Any] = {
        "command": " ".join([os.path.basename(sys.argv[0]), *(argv if argv is not None else sys.argv[1:])]),
        "machine": machine(),
        "geometry": {"shape": geo.shape, "chunks": [geo.chunk] * 3, "shards": [geo.shard] * 3},
        "repeats": args.repeats,
        "threads": THREADS,
        "memory_method": PeakRSS.method,
        "codecs": {},
    }
    header = (
        f"altarr engine benchmark: {geo.n}^3 uint16 ({data.nbytes / 2**20:.0f} MiB), chunks {geo.chunk}^3, "
        f"shards {geo.shard}^3, median of {args.repeats} (+1 warm-up), {THREADS} threads, warm page cache.\n"
        f"Reads per repetition: {len(plan.chunk_coords)} chunks, {len(plan.offsets)} unaligned 64^3 regions, "
        f"{len(plan.slabs)} slabs of {plan.slab}x{geo.n}x{geo.n} stepping {max(1, plan.slab // 2)}, "
        f"oindex[{len(plan.i0)} rows, {len(plan.i1)} rows, {plan.s2.stop - plan.s2.start}], "
        f"{len(plan.write_coords)} chunk writes over {plan.n_shards} shards."
    )
    tables = [header]
    try:
        for codec in codecs if args.checksums else []:
            log(f"checksum cost, {codec}")
            text, rows = checksum_cost(data, geo, codec, args.repeats, workdir)
            tables.append(text)
            report["codecs"][codec] = {"checksum_cost": rows}
        for codec in codecs if not args.checksums else []:
            log(f"codec {codec}")
            floor_res = {}
            if {"read", "write"} & set(args.scenarios):
                floor_res = floor(data, geo, codec, args.repeats)
            out = bench_codec(
                codec, data, geo, plan, args.libs, args.scenarios, args.repeats, workdir, log, args.profile
            )
            title = "zstd (level 3)" if codec == "zstd" else "blosc (lz4, clevel 5, shuffle)"
            tables.append(table(title, out, floor_res, [n for n in args.libs if n not in out["skipped"]]))
            report["codecs"][codec] = {
                "results": {k: {n: r.as_dict() for n, r in v.items()} for k, v in out["results"].items()},
                "floor": {k: r.as_dict() for k, r in floor_res.items()},
                "disk_bytes": out["disk_bytes"],
                "skipped": out["skipped"],
                "notes": out["notes"],
            }
            report["versions"] = out["versions"]
            shutil.rmtree(os.path.join(workdir, codec), ignore_errors=True)
    finally:
        if own_dir:
            shutil.rmtree(workdir, ignore_errors=True)
    m = report["machine"]
    versions = report.get("versions", {})
    tables.append(
        f"Machine: {m['nproc']} cores ({m['cpu']}), load average at start {m['load_avg'][0]:.1f}, "
        f"altarr at git {m['altarr_git']} ({m.get('altarr_native_kernel', 'native kernel ?')}), "
        f"Python {m['python']}, numpy {m['numpy']}, "
        f"numcodecs {m['numcodecs']}; "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + f". Total {time.perf_counter() - t_start:.0f} s."
    )
    print("\n\n".join(tables))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
