#!/usr/bin/env python
"""Whole response bodies taken in by obstore and by the standard library, below any store: what a read
of whole shards costs a client before altarr sees a byte (``benchmarks/README.md``, "one client per
scheme").

A loopback HTTP server in its own process (``netservers.py``, no latency) serves ``--objects`` files of
``--mib`` MiB; a batch GETs them all at once from as many threads. Per client, the median wall time and
process CPU time of ``--repeats`` batches:

* ``obstore get().bytes()`` - what :class:`altarr.stores.ObstoreStore` does for a whole object;
* ``obstore get_range()`` - obstore's one-call ranged read, for comparison;
* ``http.client readinto`` - a kept-alive connection per thread reading the body into one buffer.

To see where a client's CPU goes: ``perf record -g python benchmarks/bench_bodies.py --clients obstore``
then ``perf report --no-children --sort dso,symbol``.

Example:
    python benchmarks/bench_bodies.py --objects 4 --mib 3 --repeats 60
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from netservers import server_process


def clients(url: str, size: int) -> dict[str, Any]:
    """``name -> read(i)`` of object ``o{i}`` whole, per client."""
    import obstore as obs
    from obstore.store import from_url

    store = from_url(url, client_options={"allow_http": True})
    host, _, port = url.split("//")[1].partition(":")
    local = threading.local()

    def stdlib(i: int) -> bytearray:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = http.client.HTTPConnection(host, int(port))
        conn.request("GET", f"/o{i}")
        answer = conn.getresponse()
        body = bytearray(int(answer.getheader("Content-Length")))
        answer.readinto(body)
        return body

    return {
        "obstore get().bytes()": lambda i: obs.get(store, f"o{i}").bytes(),
        "obstore get_range()": lambda i: obs.get_range(store, f"o{i}", start=0, end=size),
        "http.client readinto": stdlib,
    }


def measure(read: Any, n: int, repeats: int, pool: ThreadPoolExecutor) -> tuple[float, float]:
    """Median wall and process CPU milliseconds of a batch reading the ``n`` objects at once."""
    for _ in range(3):
        list(pool.map(read, range(n)))
    wall, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        list(pool.map(read, range(n)))
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return 1000 * statistics.median(wall), 1000 * statistics.median(cpu)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--objects", type=int, default=4)
    p.add_argument("--mib", type=float, default=3)
    p.add_argument("--repeats", type=int, default=60)
    p.add_argument("--clients", default="", help="substrings of the client names to run (default all)")
    args = p.parse_args(argv)
    size = int(args.mib * (1 << 20))
    with tempfile.TemporaryDirectory() as d:
        for i in range(args.objects):
            Path(d, f"o{i}").write_bytes(os.urandom(size))
        with server_process("http", d) as (url, _log), ThreadPoolExecutor(args.objects) as pool:
            print(f"| client | wall ({args.objects} x {args.mib:g} MiB) | process CPU |\n|---|---|---|")
            for name, read in clients(url, size).items():
                if args.clients and not any(c in name for c in args.clients.split(",")):
                    continue
                wall, cpu = measure(read, args.objects, args.repeats, pool)
                print(f"| {name} | {wall:.2f} ms | {cpu:.2f} ms |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
