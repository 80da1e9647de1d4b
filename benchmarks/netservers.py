"""Loopback servers for the network benchmark and tests: an HTTP file server and a moto S3 server, both
on 127.0.0.1, both waiting a set latency before answering each request, both logging every request.

A :class:`RequestLog` records ``(method, path, range, start, end)`` per request and counts *rounds*:
requests whose service intervals overlap (they were in flight together) form one round, so a client
that sends 40 ranged GETs at once and then 40 more costs 2 rounds, whichever library it is. With a
latency of a few milliseconds the intervals of concurrent requests overlap reliably; at 0 ms the count
is an upper bound.

Example (not run as a doctest; it starts servers):
    with http_server("/path/to/dir", latency=0.02) as (url, log):
        ...  # read url + "/array.zarr"
        print(log.requests(), log.rounds())
"""

from __future__ import annotations

import email.utils
import http.server
import os
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["RequestLog", "http_server", "s3_server", "BUCKET", "AWS_ENV"]

BUCKET = "altarr-bench"
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}


class RequestLog:
    """Thread-safe record of the requests a server answered."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.entries: list[tuple[str, str, str | None, float, float]] = []
        self.latency = 0.0

    def add(self, method: str, path: str, rng: str | None, t0: float, t1: float) -> None:
        with self._lock:
            self.entries.append((method, path, rng, t0, t1))

    def reset(self) -> None:
        with self._lock:
            self.entries.clear()

    def requests(self, method: str | None = None) -> int:
        with self._lock:
            return sum(1 for e in self.entries if method is None or e[0] == method)

    def rounds(self) -> int:
        """Groups of requests that were in flight together (overlapping service intervals)."""
        with self._lock:
            spans = sorted((e[3], e[4]) for e in self.entries)
        n, end = 0, float("-inf")
        for t0, t1 in spans:
            if t0 > end:
                n += 1
                end = t1
            else:
                end = max(end, t1)
        return n


# --- HTTP -----------------------------------------------------------------------------------------------
def _handler(root: Path, log: RequestLog) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: a client reuses its connections, as with real servers

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes, headers: dict[str, str], head: bool) -> None:
            # logged before the answer goes out, so a client that got it finds it in the log
            log.add(self.command, self.path, self.headers.get("Range"), self._t0, time.perf_counter())
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _serve(self, head: bool) -> None:
            self._t0 = time.perf_counter()
            rng = self.headers.get("Range")
            if log.latency:
                time.sleep(log.latency)
            path = self.path.split("?", 1)[0]
            target = (root / path.lstrip("/")).resolve()
            if root not in target.parents or not target.is_file():
                return self._send(404, b"not found", {}, head)
            st = target.stat()
            etag = f'"{st.st_size:x}-{st.st_mtime_ns:x}"'
            base = {
                "Accept-Ranges": "bytes",
                "ETag": etag,
                "Last-Modified": email.utils.formatdate(st.st_mtime, usegmt=True),
            }
            match = self.headers.get("If-Match")
            if match is not None and match not in ("*", etag):
                return self._send(412, b"", base, head)
            data = target.read_bytes()
            size = len(data)
            if rng is None:
                return self._send(200, data, base, head)
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip())
            if m is None:
                return self._send(200, data, base, head)
            first, last = m.group(1), m.group(2)
            if first == "":
                start, stop = max(size - int(last), 0), size
            else:
                start = int(first)
                stop = size if last == "" else min(int(last) + 1, size)
            if start >= size or stop <= start:
                return self._send(416, b"", {**base, "Content-Range": f"bytes */{size}"}, head)
            headers = {**base, "Content-Range": f"bytes {start}-{stop - 1}/{size}"}
            self._send(206, data[start:stop], headers, head)

        def do_GET(self) -> None:
            self._serve(head=False)

        def do_HEAD(self) -> None:
            self._serve(head=True)

    return Handler


@contextmanager
def http_server(root: str | os.PathLike[str], latency: float = 0.0) -> Iterator[tuple[str, RequestLog]]:
    """Serve the files under ``root`` (read-only, single ``Range`` requests, ETags) on a free port;
    yields ``(base_url, log)``. ``log.latency`` may be changed while it runs."""
    log = RequestLog()
    log.latency = latency
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(Path(root).resolve(), log))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", log
    finally:
        server.shutdown()
        server.server_close()


# --- S3 (moto) ------------------------------------------------------------------------------------------
@contextmanager
def s3_server(latency: float = 0.0, bucket: str = BUCKET) -> Iterator[tuple[str, RequestLog]]:
    """A moto S3 server on a free port with ``bucket`` created; every request waits ``log.latency``
    seconds. Sets the AWS test credentials in the environment meanwhile. Yields ``(endpoint, log)``."""
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    saved = {k: os.environ.get(k) for k in AWS_ENV}
    os.environ.update(AWS_ENV)
    log = RequestLog()
    log.latency = latency
    app = DomainDispatcherApplication(create_backend_app)

    def delayed(environ: dict, start_response: Any) -> Any:
        t0 = time.perf_counter()
        if log.latency:
            time.sleep(log.latency)
        try:
            return list(app(environ, start_response))
        finally:
            path = environ.get("PATH_INFO", "")
            if environ.get("QUERY_STRING"):
                path += "?" + environ["QUERY_STRING"]
            log.add(
                environ.get("REQUEST_METHOD", ""), path, environ.get("HTTP_RANGE"), t0, time.perf_counter()
            )

    server = make_server("127.0.0.1", 0, delayed, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_port}"
        import boto3

        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)
        log.reset()
        yield endpoint, log
    finally:
        server.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
