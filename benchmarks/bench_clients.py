#!/usr/bin/env python
"""Object-store and HTTP clients compared at the store level, on loopback servers in child processes
that wait a set latency before answering each request (``netservers.py``).

Both servers: ``ObstoreStore`` (obstore, the client of ``http(s)://`` and ``s3://``) and ``FsspecStore``
(fsspec's aiohttp file system over HTTP, s3fs over S3): why obstore is the client of these schemes.
Reads:

* ``dependent_reads`` - 8 ranged reads of 4 KiB, each sent after the previous one's answer (a cold
  open and a small read: metadata, then a shard index, then a chunk, each waiting for the one before);
* ``ranged_reads`` - one ``get_ranges`` batch of 256 ranges of 24 KiB spread over 8 objects of 4 MiB,
  128 KiB apart (each store merges ranges at most 64 KiB apart here: 256 requests): the data round;
* ``suffix_reads`` - 64 suffix ranges (shard indexes) in one batch: the index round;
* ``whole_reads`` - the 8 objects of 4 MiB in one batch (shards read whole).

S3 (moto) also writes:

* ``whole_writes`` - 8 objects of 4 MiB written in one ``set_many`` (shards);
* ``conditional_writes`` - 8 objects of 4 MiB each written only if its ETag is still the one read
  (``If-Match``): obstore's ``put(mode={"e_tag": ...})`` against s3fs's client called with ``IfMatch``
  (s3fs has no public API for it, which is why altarr's fsspec store does not condition writes); both
  in one concurrent batch.

Each cell is the median of ``--repeats`` runs (the stores take turns run by run), with the requests the
server answered; the last column is each store's time over the fastest.

Example:
    python benchmarks/bench_clients.py --latencies 0,20
    python benchmarks/bench_clients.py --quick          # small objects, 0 ms, one run
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from altarr.stores import WHOLE, FsspecStore, ObstoreStore, Range, Suffix
from netservers import BUCKET, server_process

N_OBJ = 8
GAP = 64 << 10


def conditional_obstore(store: ObstoreStore, items: list[tuple[str, bytes]]) -> None:
    """HEADs in one concurrent round, then conditional PUTs in another (as s3fs's below)."""
    import obstore as obs

    client = store._store
    with ThreadPoolExecutor(len(items)) as pool:
        metas = list(pool.map(lambda kv: obs.head(client, kv[0]), items))
        puts = [
            pool.submit(obs.put, client, k, v, mode={"e_tag": m["e_tag"]})
            for (k, v), m in zip(items, metas, strict=True)
        ]
        for f in puts:
            f.result()


def conditional_fsspec(store: FsspecStore, items: list[tuple[str, bytes]]) -> None:
    fs = store.fs
    from fsspec.asyn import sync

    async def run() -> list:
        heads = await asyncio.gather(
            *(fs._call_s3("head_object", Bucket=BUCKET, Key=f"c/{k}") for k, _ in items)
        )
        return await asyncio.gather(
            *(
                fs._call_s3("put_object", Bucket=BUCKET, Key=f"c/{k}", Body=v, IfMatch=h["ETag"])
                for (k, v), h in zip(items, heads, strict=True)
            )
        )

    sync(fs.loop, run)


def read_ops(size: int) -> dict[str, Any]:
    """The read operations, over ``N_OBJ`` objects ``o0``... of ``size`` bytes."""
    step = size // 32
    ranges = [
        (f"o{i % N_OBJ}", Range((i // N_OBJ) * step, (i // N_OBJ) * step + step * 3 // 16))
        for i in range(256)
    ]
    suffixes = [(f"o{i % N_OBJ}", Suffix(1000 + i)) for i in range(64)]
    chain = [(f"o{i}", Range(i * 4096, i * 4096 + 4096)) for i in range(N_OBJ)]
    return {
        "dependent_reads": lambda s: [s.get_ranges([r]) for r in chain],
        "ranged_reads": lambda s: s.get_ranges(ranges),
        "suffix_reads": lambda s: s.get_ranges(suffixes),
        "whole_reads": lambda s: s.get_ranges([(f"o{i}", WHOLE) for i in range(N_OBJ)]),
    }


def measure(stores: dict[str, Any], ops: dict[str, Any], log: Any, server: str, args: Any) -> list[tuple]:
    rows = []
    for lat in args.latencies:
        log.latency = lat / 1000
        for op, fn in ops.items():
            times: dict[str, list[float]] = {k: [] for k in stores}
            reqs: dict[str, int] = {}
            for s in stores.values():
                fn(s)  # warm-up: connections, imports
            for _ in range(args.repeats):
                for name, s in stores.items():
                    log.reset()
                    gc.collect()  # not this call's garbage: see bench_remote.bench_server
                    t = time.perf_counter()
                    fn(s)
                    times[name].append(time.perf_counter() - t)
                    reqs[name] = log.requests()
            for name in stores:
                rows.append((server, op, lat, name, 1000 * statistics.median(times[name]), reqs[name]))
    return rows


def table(rows: list[tuple], server: str, names: list[str]) -> str:
    out = [
        f"| operation | latency | {' | '.join(names)} | over the fastest |",
        "|---" * (len(names) + 3) + "|",
    ]
    by = {(op, lat, name): (ms, rq) for srv, op, lat, name, ms, rq in rows if srv == server}
    for op, lat in dict.fromkeys((r[1], r[2]) for r in rows if r[0] == server):
        cells = [by[(op, lat, n)] for n in names]
        best = min(ms for ms, _ in cells)
        ratios = " / ".join(f"{ms / best:.2f}" for ms, _ in cells)
        out.append(
            f"| {op} | {lat:g} ms | "
            + " | ".join(f"{ms:.1f} ms ({rq} req)" for ms, rq in cells)
            + f" | {ratios} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--latencies", default="0,20")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--servers", default="http,s3")
    p.add_argument("--quick", action="store_true", help="objects of 256 KiB, 0 ms, one run")
    args = p.parse_args(argv)
    if args.quick:
        args.latencies, args.repeats = "0", 1
    args.latencies = [float(v) for v in args.latencies.split(",")]
    size = (256 << 10) if args.quick else (4 << 20)
    payload = [os.urandom(size) for _ in range(N_OBJ)]
    rows: list[tuple] = []
    servers = args.servers.split(",")
    names = ["obstore", "fsspec"]
    if "http" in servers:
        with tempfile.TemporaryDirectory() as d:
            for i, data in enumerate(payload):
                Path(d, f"o{i}").write_bytes(data)
            with server_process("http", d) as (url, log):
                stores = {
                    "obstore": ObstoreStore(url, read_only=True, coalesce_gap=GAP),
                    "fsspec": FsspecStore(url, read_only=True, coalesce_gap=GAP),
                }
                rows += measure(stores, read_ops(size), log, "http", args)
    if "s3" in servers:
        with server_process("s3") as (endpoint, log):
            url, opts = f"s3://{BUCKET}/c", {"endpoint_url": endpoint, "coalesce_gap": GAP}
            stores = {
                "obstore": ObstoreStore(url, **opts),
                "fsspec": FsspecStore(url, client_kwargs={"endpoint_url": endpoint}, coalesce_gap=GAP),
            }
            stores["obstore"].set_many([(f"o{i}", payload[i]) for i in range(N_OBJ)])
            writes = [(f"w{i}", payload[i]) for i in range(N_OBJ)]
            ops = read_ops(size)
            ops["whole_writes"] = lambda s: s.set_many(writes)
            ops["conditional_writes"] = lambda s: (
                conditional_obstore(s, writes)
                if isinstance(s, ObstoreStore)
                else conditional_fsspec(s, writes)
            )
            stores["obstore"].set_many(writes)
            rows += measure(stores, ops, log, "s3", args)
    for server in servers:
        print(f"\n### {server}\n")
        print(table(rows, server, names))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
