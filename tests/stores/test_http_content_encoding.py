"""HTTP ``Content-Encoding`` on every client: no answer is inflated past what was sent (issue 34: fsspec's
HTTP file system turned 1 MB of ``Content-Encoding: gzip`` into 2 GB).

obstore (the client of ``http(s)://``) sends no ``Accept-Encoding`` and hands a body over as sent;
fsspec's HTTP file system (a chained URL such as ``simplecache::http://...``, a plain URL given to
``FsspecStore``, or an instance given as the store) asks for ``identity`` and does not inflate what a
server compresses anyway. Each read runs in a fresh child process with the server, so its peak memory
growth is its own; a server that compresses only when asked serves the plain bytes to every client."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

LIMIT = 64 << 20

_CHILD = r"""
import gzip, http.server, json, sys, threading
import altarr
from altarr.stores import WHOLE, FsspecStore, ObstoreStore

PLAIN = bytes(range(256)) * 64
BOMB = gzip.compress(bytes(256 << 20), 1)  # 256 MiB of zeros in 250 KB
how, server_kind = sys.argv[1], sys.argv[2]
seen = []


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        asked = self.headers.get("Accept-Encoding") or ""
        if not self.path.endswith("/warm"):
            seen.append(asked)
        if self.path.endswith("/warm"):
            body, encoding = PLAIN, None
        elif server_kind == "bomb" or "gzip" in asked:  # the bomb server compresses whatever was asked
            body, encoding = (BOMB if server_kind == "bomb" else gzip.compress(PLAIN)), "gzip"
        else:
            body, encoding = PLAIN, None
        self.send_response(200)
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(PLAIN)))
        self.end_headers()


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_address[1]}/data"
if how == "obstore":
    store = ObstoreStore(url)
elif how == "fsspec-url":
    store = FsspecStore(url)
elif how == "fsspec-chained":
    store = FsspecStore("simplecache::" + url)
else:
    from fsspec.implementations.http import HTTPFileSystem

    store = FsspecStore(HTTPFileSystem(), url)
warm = store.get_ranges([("warm", WHOLE)])  # clients and pools started before the measurement


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


before = rss()
got = store.get_ranges([("k", WHOLE)])[0]
with open("/proc/self/status") as f:
    peak = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
print(json.dumps({"n": len(got), "plain": bytes(got) == PLAIN, "bomb": len(BOMB), "seen": seen,
                  "growth": peak - before}))
"""


def _run(how: str, server_kind: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "NO_PROXY": "127.0.0.1"}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, how, server_kind], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


CLIENTS = ["obstore", "fsspec-url", "fsspec-chained", "fsspec-instance"]


@pytest.mark.parametrize("how", CLIENTS)
def test_a_compressed_answer_is_not_inflated(how):
    """A server that answers ``Content-Encoding: gzip`` whatever was asked (a 250 KB body of 256 MiB):
    the store hands the body over as sent, and memory grows by far less than the inflated size."""
    got = _run(how, "bomb")
    assert got["n"] == got["bomb"], got  # the body as sent, not inflated
    assert got["growth"] < LIMIT, f"{how}: peak memory grew by {got['growth'] / 2**20:.0f} MiB"
    if how.startswith("fsspec"):
        assert set(got["seen"]) == {"identity"}, got["seen"]


@pytest.mark.parametrize("how", CLIENTS)
def test_a_server_that_compresses_when_asked_serves_the_plain_bytes(how):
    got = _run(how, "polite")
    assert got["plain"], got
    assert not any("gzip" in s for s in got["seen"]), got["seen"]
