"""A moto S3 server on 127.0.0.1 for the tests that need a real S3 peer (one per test session; see the
``s3_endpoint`` fixture in conftest.py). Tests keep apart by writing under a fresh uuid prefix."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

BUCKET = "altarr-test"

_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}


def s3_options(endpoint: str) -> dict:
    """fsspec storage options for the server at ``endpoint``."""
    return {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": endpoint}}


@contextmanager
def moto_server() -> Iterator[str]:
    """Start the server (a free port) with :data:`BUCKET` in it; yields its endpoint URL. The AWS
    environment variables it needs are set meanwhile and restored afterwards."""
    from moto.server import ThreadedMotoServer

    saved = {k: os.environ.get(k) for k in _AWS_ENV}
    os.environ.update(_AWS_ENV)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
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
