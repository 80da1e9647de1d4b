"""A moto S3 server on 127.0.0.1 for the tests that need a real S3 peer (one per test session; see the
``s3_endpoint`` fixture in conftest.py). Tests keep apart by writing under a fresh uuid prefix.

moto checks a conditional write's ``If-Match``/``If-None-Match`` and then stores the object in two
steps, on a threaded server, so two racing conditional PUTs can both pass the check; S3 does both in
one atomic step. The server here runs requests that change objects (PUT, POST, DELETE) one at a time,
which gives moto S3's atomicity (reads stay concurrent).

Every request the server answers is logged in :data:`REQUESTS` as ``(method, path, range header)``;
:func:`requests_since` gives those answered since a mark."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

BUCKET = "altarr-test"

#: ``(method, path, Range header or None)`` of every request the server answered, in order
REQUESTS: list[tuple[str, str, str | None]] = []

_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}


def requests_since(mark: int) -> list[tuple[str, str | None]]:
    """``(method, Range header)`` of the requests the server answered since ``mark = len(REQUESTS)``
    (the tests of one process run one at a time)."""
    return [(m, r) for m, _, r in REQUESTS[mark:]]


def s3_options(endpoint: str) -> dict:
    """fsspec storage options for the server at ``endpoint``."""
    return {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": endpoint}}


@contextmanager
def moto_server() -> Iterator[str]:
    """Start the server (a free port) with :data:`BUCKET` in it; yields its endpoint URL. The AWS
    environment variables it needs are set meanwhile and restored afterwards."""
    saved = {k: os.environ.get(k) for k in _AWS_ENV}
    os.environ.update(_AWS_ENV)
    server = _server_class()(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        endpoint = "http://{}:{}".format(*server.get_host_and_port())
        import boto3

        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=BUCKET)
        yield endpoint
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _server_class() -> type:
    """moto's threaded server with requests that change objects serialized (see the module docstring)."""
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    class AtomicWritesMotoServer(ThreadedMotoServer):
        def _server_entry(self) -> None:
            app = DomainDispatcherApplication(create_backend_app)
            lock = threading.Lock()

            def serialized_writes(environ, start_response):
                query = environ.get("QUERY_STRING")
                path = environ.get("PATH_INFO", "") + ("?" + query if query else "")
                REQUESTS.append((environ.get("REQUEST_METHOD", ""), path, environ.get("HTTP_RANGE")))
                if environ.get("REQUEST_METHOD") in ("PUT", "POST", "DELETE"):
                    with lock:
                        return list(app(environ, start_response))
                return app(environ, start_response)

            self._server = make_server(self._ip_address, self._port, serialized_writes, True)
            self._server_ready_event.set()
            self._server.serve_forever()

    return AtomicWritesMotoServer
