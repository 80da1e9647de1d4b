"""FsspecStore over plain HTTP (fsspec's aiohttp file system) against two loopback servers: one that
serves ``Range`` headers (suffix ranges go out natively, 416 past the end) and Python's
``http.server``, which ignores them (the store slices the whole answer itself)."""

from __future__ import annotations

import http.server
import os
import re
import threading
from functools import partial

import pytest

from altarr.stores import FsspecStore

pytest.importorskip("aiohttp")

DATA = os.urandom(100_000)
OBJECTS = {"/data/shard": DATA, "/data/empty": b""}


class RangeHandler(http.server.BaseHTTPRequestHandler):
    """Serves OBJECTS with RFC 9110 single byte ranges; records every request."""

    log: list[tuple[str, str, str | None]] = []

    def log_message(self, *args):  # keep test output quiet
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str], head: bool) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _serve(self, head: bool) -> None:
        rng = self.headers.get("Range")
        self.log.append((self.command, self.path, rng))
        obj = OBJECTS.get(self.path)
        if obj is None:
            return self._send(404, b"not found", {}, head)
        if rng is None:
            return self._send(200, obj, {"Accept-Ranges": "bytes"}, head)
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng)
        size = len(obj)
        first, last = m.group(1), m.group(2)
        if first == "":  # suffix
            start, stop = max(size - int(last), 0), size
        else:
            start = int(first)
            stop = size if last == "" else min(int(last) + 1, size)
        if start >= size or stop <= start:
            return self._send(416, b"", {"Content-Range": f"bytes */{size}"}, head)
        headers = {"Content-Range": f"bytes {start}-{stop - 1}/{size}", "Accept-Ranges": "bytes"}
        self._send(206, obj[start:stop], headers, head)

    def do_GET(self):
        self._serve(head=False)

    def do_HEAD(self):
        self._serve(head=True)


@pytest.fixture(scope="module")
def range_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


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
    store = FsspecStore(f"{range_server}/data", read_only=True)
    RangeHandler.log.clear()
    reqs = [
        ("shard", 0, 100),
        ("shard", 500, 600),
        ("shard", -64, None),
        ("shard", -10, None),
        ("missing", 0, 5),
    ]
    assert store.get_ranges(reqs) == [DATA[0:100], DATA[500:600], DATA[-64:], DATA[-10:], None]
    sent = sorted((m, p, r) for m, p, r in RangeHandler.log)
    assert sent == [
        ("GET", "/data/missing", "bytes=0-4"),
        ("GET", "/data/shard", "bytes=-64"),
        ("GET", "/data/shard", "bytes=0-599"),
    ]
    assert store.stats.reads == 3 and store.stats.size_queries == 0


def test_http_past_the_end_and_empty(range_server):
    store = FsspecStore(f"{range_server}/data", read_only=True)
    got = store.get_ranges([("shard", 200_000, 200_010), ("empty", 0, 10), ("empty", None, None)])
    assert got == [b"", b"", b""]
    assert store.size("shard") == len(DATA) and store.size("missing") is None


def test_http_server_ignoring_range_is_sliced_here(plain_server):
    store = FsspecStore(f"{plain_server}/data", read_only=True)
    got = store.get_ranges(
        [("shard", 10, 20), ("shard", -5, None), ("shard", 90_000, 90_004), ("nope", 0, 1)]
    )
    assert got == [DATA[10:20], DATA[-5:], DATA[90_000:90_004], None]
