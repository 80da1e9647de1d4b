"""What a remote store makes of an HTTP server's failures, for both clients (obstore, the client of
``http(s)://``, and fsspec's HTTP file system given as a store): told apart by exception type and by the
object's size, never by an error message's text, so a key that contains ``416``, ``404`` or ``412``
reads like any other. A failed read is a ``StoreError`` with the client's exception as its cause, never
an empty read; a server that ignores ``Range`` is not read whole; a server that sends its body slowly is
cut off by a deadline on the whole request."""

from __future__ import annotations

import datetime
import http.server
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

import altarr as aa
from altarr.errors import StoreError
from altarr.stores import WHOLE, FsspecStore, ObstoreStore, Offset, Range, Suffix
from altarr.stores.fsspec_store import RANGE_IGNORED_MARGIN

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from netservers import RequestLog, _handler, http_server

KEY = "c/416/404/412"
REQUESTS = [WHOLE, Range(0, 10), Offset(5), Suffix(10)]
#: obstore retries 5xx answers and failed connections for up to 3 minutes by default: once, briefly, here
_SHORT = datetime.timedelta(milliseconds=10)
RETRY = {
    "max_retries": 1,
    "backoff": {"init_backoff": _SHORT, "max_backoff": _SHORT, "base": 2},
    "retry_timeout": datetime.timedelta(seconds=2),
}


class _Misbehaving(http.server.BaseHTTPRequestHandler):
    """``mode``: ``"500"`` answers everything with a server error; ``"416"`` answers every ranged GET
    with ``416`` although the object (100 bytes, as its HEAD says) holds the range; ``"slow"`` sends a
    100-byte body one byte every 0.2 s."""

    protocol_version = "HTTP/1.1"
    mode = "500"
    seen: list[tuple[str, str, str | None]] = []
    sent = 0

    def log_message(self, *args):
        pass

    def _answer(self, head: bool) -> None:
        type(self).seen.append((self.command, self.path, self.headers.get("Range")))
        mode = type(self).mode
        status, length = {"500": (500, 0), "416": (416 if self.headers.get("Range") else 200, 100)}.get(
            mode, (200, 100)
        )
        if mode == "416" and head:
            status = 200
        self.send_response(status)
        self.send_header("Content-Length", str(0 if status >= 400 else length))
        self.end_headers()
        if head or status >= 400:
            return
        try:
            for _ in range(length):
                if mode == "slow":
                    time.sleep(0.2)
                self.wfile.write(b"x")
                self.wfile.flush()
                type(self).sent += 1
        except OSError:
            self.close_connection = True

    def do_GET(self):
        self._answer(head=False)

    def do_HEAD(self):
        self._answer(head=True)


@contextmanager
def misbehaving(mode: str) -> Iterator[str]:
    handler = type("Handler", (_Misbehaving,), {"mode": mode, "seen": [], "sent": 0})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def _refused_url() -> str:
    """A loopback URL nothing listens on (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _stores(url: str) -> list:
    return [ObstoreStore(f"{url}/data", retry_config=RETRY), FsspecStore(f"{url}/data")]


def _assert_store_error(store, req) -> None:
    with pytest.raises(StoreError) as info:
        store.get_ranges([(KEY, req)])
    assert info.value.key == KEY and info.value.__cause__ is not None, type(store).__name__


@pytest.mark.parametrize("mode", ["500", "refused"])
def test_a_failed_read_of_a_key_naming_status_codes_is_a_store_error(mode):
    with misbehaving("500") as (url, _):
        url = _refused_url() if mode == "refused" else url
        for store in _stores(url):
            for req in REQUESTS:
                _assert_store_error(store, req)


def test_a_416_for_a_range_the_object_holds_is_a_store_error_and_one_past_its_end_an_empty_read():
    """The object's size decides, not the status: the server answers every ranged GET with 416, but its
    HEAD says the object has 100 bytes."""
    with misbehaving("416") as (url, handler):
        for store in _stores(url):
            for req in (Range(0, 10), Offset(5), Suffix(10)):
                _assert_store_error(store, req)
            assert store.get_ranges([(KEY, Range(200, 210)), (KEY, Offset(100))]) == [b"", b""]
            if isinstance(store, ObstoreStore):
                assert store.get(KEY) == b"x" * 100  # a plain GET
            else:  # fsspec's HTTP file system reads a whole object as the range "bytes=0-", refused here
                _assert_store_error(store, WHOLE)
        assert {path for _, path, _ in handler.seen} == {f"/data/{KEY}"}


def test_a_server_that_ignores_range_is_not_read_whole(tmp_path):
    """A ``200`` with the whole object for a ranged GET: obstore refuses it before reading the body (the
    server got a few of its 64 MiB out before the connection closed) and the read is a ``StoreError``;
    a suffix longer than the object asks for all of it, which is read, checked against the length
    asked."""
    big = os.urandom(1 << 16) * 1024
    (tmp_path / "big").write_bytes(big)
    (tmp_path / "small").write_bytes(b"0123456789")
    with http_server(tmp_path, ranges=False) as (url, log):
        store = ObstoreStore(url)
        for req in (Range(0, 16), Suffix(16), Offset(1 << 20)):
            log.body_bytes = 0
            with pytest.raises(StoreError) as info:
                store.get_ranges([("big", req)])
            assert info.value.key == "big"
            assert log.body_bytes <= 8 << 20, (req, log.body_bytes)
        assert store.get_ranges([("small", Suffix(100)), ("small", Offset(20))]) == [b"0123456789", b""]


def test_fsspec_reads_a_server_that_ignores_range_within_a_bound(tmp_path):
    """fsspec's HTTP file system, whose ``cat_file`` would read a ``200`` answer to a ranged GET whole:
    an answer longer than the range asked by more than ``RANGE_IGNORED_MARGIN`` is refused before its
    body is read (the server got at most a few MiB of its 64 MiB out), a ``StoreError`` naming the key
    whose cause names the URL; a small object answered whole is cut to the range asked; a range past the
    end of an object is an empty read, as a slice past the end."""
    big = os.urandom(1 << 16) * 1024
    (tmp_path / "big").write_bytes(big)
    (tmp_path / "small").write_bytes(b"0123456789")
    near = os.urandom(RANGE_IGNORED_MARGIN + 10)
    (tmp_path / "near").write_bytes(near)
    with http_server(tmp_path, ranges=False) as (url, log):
        store = FsspecStore(url)
        for key, req in [("big", Range(0, 16)), ("big", Suffix(16)), ("big", Offset(1 << 20))]:
            log.body_bytes = 0
            with pytest.raises(StoreError) as info:
                store.get_ranges([(key, req)])
            assert info.value.key == key and f"{url}/{key}" in str(info.value), info.value
            assert log.body_bytes <= 8 << 20, (req, log.body_bytes)
        with pytest.raises(StoreError):  # 1 byte asked, the margin and 9 more answered
            store.get_ranges([("near", Range(0, 1))])
        got = store.get_ranges([("near", Range(5, 15)), ("small", Range(2, 5))])
        assert got == [near[5:15], b"234"]
        assert store.get_ranges([("small", Suffix(4))]) == [b"6789"]
        # an offset's answer cannot be told from the whole object by its length: refused, and the
        # object's size then shows a range past its end (an empty read)
        assert store.get_ranges([("small", Offset(20))]) == [b""]
        assert store.get_ranges([("small", WHOLE), ("small", Suffix(100))]) == [b"0123456789"] * 2


def test_a_slow_body_is_cut_off_by_the_deadline_of_the_whole_request():
    """Each byte comes within 0.2 s (a timeout per socket read would never fire), the whole body in 20
    s: obstore's ``timeout`` bounds the whole request."""
    with misbehaving("slow") as (url, handler):
        store = ObstoreStore(f"{url}/data", retry_config=RETRY, client_options={"timeout": "1s"})
        with pytest.raises(StoreError):
            store.get(KEY)
        assert handler.sent < 100


@contextmanager
def failing_shards(root: Path, status: int) -> Iterator[str]:
    """A file server (``netservers``) whose shard objects (``/c/`` in the path) fail: every request of
    one with ``500``, or (``416``) every ranged ``GET`` of one with ``416`` although its ``HEAD`` shows
    it holds the range."""

    class Failing(_handler(root, RequestLog())):  # type: ignore[misc]
        def _serve(self, head: bool) -> None:
            if "/c/" in self.path and (status == 500 or (self.headers.get("Range") and not head)):
                self._t0 = time.perf_counter()
                return self._send(status, b"", {}, head)
            return super()._serve(head)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("status", [500, 416])
def test_a_sharded_array_whose_shard_reads_fail_raises_store_error_naming_the_key(tmp_path, status):
    """The issue's case end to end: every object's path holds ``416``, ``404`` and ``412``; a shard
    whose reads fail is a ``StoreError`` naming it, never an empty read that would surface as a missing
    shard (fill values) or a ``CorruptShardError``. With ``416`` only ranged reads fail: the whole
    array, its shards read whole, is read right."""
    name = "a-416-404-412.zarr"
    aa.create_dataset(str(tmp_path / name), shape=(16, 16), dtype="uint8", chunks=(4, 4), shards=(8, 8))[
        ...
    ] = 7
    with failing_shards(tmp_path, status) as url:
        ds = aa.open_dataset(f"{url}/{name}", format="zarr3", storage_options={"retry_config": RETRY})
        for sel in (np.s_[0:4, 0:4], np.s_[...]) if status == 500 else (np.s_[0:4, 0:4],):
            with pytest.raises(StoreError) as info:
                ds[sel]
            assert type(info.value) is StoreError and info.value.key in ("c/0/0", "c/0/1", "c/1/0", "c/1/1")
            assert "416-404-412" in str(info.value.__cause__)  # the text the old code matched on
        if status == 416:
            np.testing.assert_array_equal(ds[...], np.full((16, 16), 7, "uint8"))
