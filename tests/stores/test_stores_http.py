"""FsspecStore over plain HTTP (fsspec's aiohttp file system) against two loopback servers: the one of the
network benchmarks (``benchmarks/netservers.py``), which serves ``Range`` headers (suffix ranges go out
natively, 416 past the end), and Python's ``http.server``, which ignores them (the store slices the whole
answer itself)."""

from __future__ import annotations

import http.server
import os
import sys
import threading
from functools import partial
from pathlib import Path

import pytest

from altarr.stores import WHOLE, FsspecStore, Range, Suffix

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from netservers import http_server

DATA = os.urandom(100_000)
OBJECTS = {"/data/shard": DATA, "/data/empty": b""}


@pytest.fixture(scope="module")
def range_server(tmp_path_factory):
    """The benchmarks' loopback HTTP server (``benchmarks/netservers.py``, shared with ``test_remote.py``)
    over OBJECTS written to files; yields ``(url, log)``."""
    root = tmp_path_factory.mktemp("ranged")
    for path, data in OBJECTS.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    with http_server(root) as (url, log):
        yield url, log


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("www")
    (root / "data").mkdir()
    (root / "data" / "shard").write_bytes(DATA)
    handler = partial(QuietFiles, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_http_ranges_suffixes_and_counts(range_server):
    url, log = range_server
    store = FsspecStore(f"{url}/data", read_only=True)
    log.reset()
    reqs = [
        ("shard", Range(0, 100)),
        ("shard", Range(500, 600)),
        ("shard", Suffix(64)),
        ("shard", Suffix(10)),
        ("missing", Range(0, 5)),
    ]
    assert store.get_ranges(reqs) == [DATA[0:100], DATA[500:600], DATA[-64:], DATA[-10:], None]
    sent = sorted((m, p, r) for m, p, r, _, _ in log.entries)
    assert sent == [
        ("GET", "/data/missing", "bytes=0-4"),
        ("GET", "/data/shard", "bytes=-64"),
        ("GET", "/data/shard", "bytes=0-599"),
    ]
    assert store.stats.reads == 3 and store.stats.size_queries == 0


def test_http_past_the_end_and_empty(range_server):
    store = FsspecStore(f"{range_server[0]}/data", read_only=True)
    got = store.get_ranges([("shard", Range(200_000, 200_010)), ("empty", Range(0, 10)), ("empty", WHOLE)])
    assert got == [b"", b"", b""]
    assert store.size("shard") == len(DATA) and store.size("missing") is None


def test_http_server_ignoring_range_is_sliced_here(plain_server):
    store = FsspecStore(f"{plain_server}/data", read_only=True)
    got = store.get_ranges(
        [
            ("shard", Range(10, 20)),
            ("shard", Suffix(5)),
            ("shard", Range(90_000, 90_004)),
            ("nope", Range(0, 1)),
        ]
    )
    assert got == [DATA[10:20], DATA[-5:], DATA[90_000:90_004], None]
