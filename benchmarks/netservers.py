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

__all__ = ["RequestLog", "RemoteLog", "http_server", "s3_server", "server_process", "BUCKET", "AWS_ENV"]

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


#: Path prefix of the control requests of a server in another process (not logged, not delayed):
#: ``/__bench__/log`` (the entries as JSON), ``/__bench__/reset``, ``/__bench__/latency?s=0.02``.
CONTROL = "/__bench__/"


class RequestLog:
    """Thread-safe record of the requests a server answered."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.entries: list[tuple[str, str, str | None, float, float]] = []
        self.latency = 0.0
        #: body bytes a server that ignores ``Range`` got out before the client closed (``ranges=False``)
        self.body_bytes = 0

    def add(self, method: str, path: str, rng: str | None, t0: float, t1: float) -> None:
        with self._lock:
            self.entries.append((method, path, rng, t0, t1))

    def reset(self) -> None:
        with self._lock:
            self.entries.clear()

    def requests(self, method: str | None = None) -> int:
        with self._lock:
            return sum(1 for e in self.entries if method is None or e[0] == method)

    def control(self, path: str) -> str:
        """Answer a control request (see :data:`CONTROL`)."""
        import json

        what, _, query = path[len(CONTROL) :].partition("?")
        if what == "reset":
            self.reset()
        elif what == "latency":
            self.latency = float(query.partition("=")[2])
        with self._lock:
            return json.dumps(self.entries)

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
def _handler(
    root: Path, log: RequestLog, etag: bool = True, ranges: bool = True
) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: a client reuses its connections, as with real servers
        # headers and body go out in two writes: without TCP_NODELAY, Nagle's algorithm holds the body
        # until the client's delayed ACK (40 ms) - a stall per request that real servers do not have
        disable_nagle_algorithm = True

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
            if head:
                return
            if ranges:
                self.wfile.write(body)
                return
            try:  # in pieces, counting what the client took before it closed the connection
                for i in range(0, len(body), 1 << 16):
                    self.wfile.write(body[i : i + (1 << 16)])
                    log.body_bytes += len(body[i : i + (1 << 16)])
            except OSError:
                self.close_connection = True

        def _serve(self, head: bool) -> None:
            if self.path.startswith(CONTROL):
                return self._control()
            self._t0 = time.perf_counter()
            rng = self.headers.get("Range")
            if log.latency:
                time.sleep(log.latency)
            path = self.path.split("?", 1)[0]
            target = (root / path.lstrip("/")).resolve()
            if root not in target.parents or not target.is_file():
                return self._send(404, b"not found", {}, head)
            st = target.stat()
            tag = f'"{st.st_size:x}-{st.st_mtime_ns:x}"'
            base = {
                "Accept-Ranges": "bytes",
                "Last-Modified": email.utils.formatdate(st.st_mtime, usegmt=True),
            }
            if etag:
                base["ETag"] = tag
            match = self.headers.get("If-Match")
            if match is not None and match not in ("*", tag):
                return self._send(412, b"", base, head)
            data = target.read_bytes()
            size = len(data)
            if rng is None or not ranges:
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

        def _control(self) -> None:
            body = log.control(self.path).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._serve(head=False)

        def do_HEAD(self) -> None:
            self._serve(head=True)

    return Handler


class _Server(http.server.ThreadingHTTPServer):
    # socketserver's default listen backlog is 5: a client opening more connections at once (a batch of
    # concurrent requests) had the extra SYNs dropped under load and retried 1 s later, which split one
    # round of requests into two and added a second to it
    request_queue_size = 128


@contextmanager
def http_server(
    root: str | os.PathLike[str], latency: float = 0.0, *, etag: bool = True, ranges: bool = True
) -> Iterator[tuple[str, RequestLog]]:
    """Serve the files under ``root`` (read-only, single ``Range`` requests, ETags) on a free port;
    yields ``(base_url, log)``. ``log.latency`` may be changed while it runs. ``etag=False``: no ``ETag``
    header (a plain static server); ``ranges=False``: every ``GET`` answered ``200`` with the whole file,
    written in pieces of 64 KiB and counted in ``log.body_bytes`` until the client closes the
    connection."""
    log = RequestLog()
    log.latency = latency
    server = _Server(("127.0.0.1", 0), _handler(Path(root).resolve(), log, etag, ranges))
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
        if environ.get("PATH_INFO", "").startswith(CONTROL):
            q = environ.get("QUERY_STRING")
            body = log.control(environ["PATH_INFO"] + ("?" + q if q else "")).encode()
            start_response("200 OK", [("Content-Length", str(len(body)))])
            return [body]
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


# --- a server in its own process --------------------------------------------------------------------------
class RemoteLog(RequestLog):
    """The :class:`RequestLog` of a server running in another process, read through its control path."""

    def __init__(self, base: str) -> None:
        super().__init__()
        self._base = base

    def _ask(self, what: str) -> None:
        import json
        import urllib.request

        with urllib.request.urlopen(self._base + CONTROL + what, timeout=30) as r:
            entries = json.loads(r.read())
        with self._lock:
            self.entries = [tuple(e) for e in entries]

    @property
    def latency(self) -> float:
        return self._latency

    @latency.setter
    def latency(self, value: float) -> None:
        self._latency = value
        if hasattr(self, "_base"):
            self._ask(f"latency?s={value}")

    def reset(self) -> None:
        self._ask("reset")

    def requests(self, method: str | None = None) -> int:
        self._ask("log")
        return super().requests(method)

    def rounds(self) -> int:
        self._ask("log")
        return super().rounds()


@contextmanager
def server_process(
    kind: str, root: str | None = None, *, etag: bool = True
) -> Iterator[tuple[str, RemoteLog]]:
    """Run :func:`http_server` (``kind="http"``, serving ``root``; ``etag=False``: no ``ETag``) or
    :func:`s3_server` (``"s3"``) in a child process, so the server's Python does not compete with the
    client's for one GIL; yields ``(url, log)`` as they do. The AWS test credentials are set in this
    process meanwhile."""
    import subprocess
    import sys

    cmd = [sys.executable, __file__, kind] + ([str(root)] if root else []) + ([] if etag else ["no-etag"])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    saved = {k: os.environ.get(k) for k in AWS_ENV}
    os.environ.update(AWS_ENV)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url:
            raise RuntimeError(f"the {kind} server did not start")
        yield url, RemoteLog(url)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _main() -> None:
    import logging
    import sys

    logging.disable(logging.CRITICAL)
    kind = sys.argv[1]
    ctx = http_server(sys.argv[2], etag="no-etag" not in sys.argv) if kind == "http" else s3_server()
    with ctx as (url, _log):
        # what the server holds after its start (moto's and botocore's models: a full collection of
        # them took 66-78 ms) is never garbage: frozen, the collector does not walk it again during a
        # timed call of whichever client happens to be served then
        import gc

        gc.collect()
        gc.freeze()
        print(url, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    _main()
