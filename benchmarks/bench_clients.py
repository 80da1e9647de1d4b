#!/usr/bin/env python
"""Object-store clients compared at the store level: altarr's ``ObstoreStore`` (obstore) against its
``FsspecStore`` (s3fs), on a moto S3 server in a child process with a per-request latency.

Operations (each the median of ``--repeats`` runs, stats of the store and of the server reported):

* ``ranged_reads`` - one ``get_ranges`` batch of 256 ranges of 24 KiB spread over 8 objects of 4 MiB
  (no two ranges close enough to coalesce): the engine's data round;
* ``suffix_reads`` - 64 suffix ranges (shard indexes) in one batch: the engine's index round;
* ``whole_writes`` - 8 objects of 4 MiB written in one ``set_many`` (shards);
* ``conditional_writes`` - 8 objects of 4 MiB each written only if its ETag is still the one read
  (``If-Match``): obstore's ``put(mode={"e_tag": ...})`` against s3fs's client called with ``IfMatch``
  (s3fs has no public API for it); both in one concurrent batch.

Example:
    python benchmarks/bench_clients.py --latencies 0,20
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from altarr.stores import FsspecStore, ObstoreStore  # noqa: E402
from netservers import BUCKET, server_process  # noqa: E402

OBJ = 4 << 20
N_OBJ = 8


def conditional_obstore(store: ObstoreStore, items: list[tuple[str, bytes]]) -> None:
    import obstore as obs

    metas = [obs.head(store._store, k) for k, _ in items]

    async def run() -> list:
        return await asyncio.gather(
            *(
                obs.put_async(store._store, k, v, mode={"e_tag": m["e_tag"]})
                for (k, v), m in zip(items, metas, strict=True)
            )
        )

    from altarr.stores.obstore_store import _run

    _run(run())


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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--latencies", default="0,20")
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    payload = [os.urandom(OBJ) for _ in range(N_OBJ)]
    rows: list[tuple[str, float, str, float, int, int]] = []
    with server_process("s3") as (endpoint, log):
        opts = {"endpoint_url": endpoint}
        stores = {
            "obstore": ObstoreStore(f"s3://{BUCKET}/c", **opts),
            "fsspec": FsspecStore(f"s3://{BUCKET}/c", client_kwargs={"endpoint_url": endpoint}),
        }
        stores["obstore"].set_many([(f"o{i}", payload[i]) for i in range(N_OBJ)])
        # 32 ranges per object, 128 KiB apart: too far apart to coalesce (gap 64 KiB)
        ranges = [
            (f"o{i % N_OBJ}", (i // N_OBJ) * 128 * 1024, (i // N_OBJ) * 128 * 1024 + 24 * 1024)
            for i in range(256)
        ]
        suffixes = [(f"o{i % N_OBJ}", -(1000 + i), None) for i in range(64)]
        writes = [(f"w{i}", payload[i]) for i in range(N_OBJ)]
        ops: dict[str, Any] = {
            "ranged_reads": lambda s: s.get_ranges(ranges),
            "suffix_reads": lambda s: s.get_ranges(suffixes),
            "whole_writes": lambda s: s.set_many(writes),
            "conditional_writes": lambda s: (
                conditional_obstore(s, writes)
                if isinstance(s, ObstoreStore)
                else conditional_fsspec(s, writes)
            ),
        }
        for lat in [float(v) for v in args.latencies.split(",")]:
            log.latency = lat / 1000
            for op, fn in ops.items():
                times: dict[str, list[float]] = {k: [] for k in stores}
                reqs: dict[str, int] = {}
                for s in stores.values():
                    fn(s)  # warm-up
                for _ in range(args.repeats):
                    for name, s in stores.items():
                        log.reset()
                        t = time.perf_counter()
                        fn(s)
                        times[name].append(time.perf_counter() - t)
                        reqs[name] = log.requests()
                for name in stores:
                    rows.append(
                        (op, lat, name, 1000 * statistics.median(times[name]), reqs[name], log.rounds())
                    )
    print("| operation | latency | obstore | fsspec (s3fs) | fsspec / obstore |")
    print("|---|---|---|---|---|")
    by = {(op, lat, name): (ms, rq) for op, lat, name, ms, rq, _ in rows}
    for op, lat in dict.fromkeys((r[0], r[1]) for r in rows):
        o, f = by[(op, lat, "obstore")], by[(op, lat, "fsspec")]
        print(
            f"| {op} | {lat:g} ms | {o[0]:.0f} ms ({o[1]} req) | {f[0]:.0f} ms ({f[1]} req) | {f[0] / o[0]:.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
