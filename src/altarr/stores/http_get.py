"""Ranged ``GET`` requests over HTTP(S) on the standard library's :mod:`http.client`: the read path of
:class:`~altarr.stores.ObstoreStore` for ``http://`` and ``https://`` URLs (``http_client="stdlib"``,
the default there).

Why (numbers in ``benchmarks/README.md``, "HTTP reads on the standard library"): a small read over a
network is a chain of dependent rounds (metadata, shard index, chunk), and each round pays the HTTP
client's own send and wake-up. obstore's request goes from Python into a Tokio runtime and its answer
comes back through one of that runtime's threads; a blocking ``http.client`` request on a kept-alive
connection of the calling thread, written as one prebuilt buffer, reached a loopback server 0.1-0.2 ms
sooner per request, which is what separated altarr from tensorstore on a cold open and one chunk
(three rounds) at 20 ms per request.

What it answers itself, and what it leaves to obstore: it answers ``200``, ``206`` (checked against
the range asked) and ``404`` of a plain server. Everything else is *declined* (:meth:`HttpReader.get`
returns ``None``) and the store sends the same request again through obstore, whose retry, back-off,
redirect and error handling apply unchanged: redirects, ``416``, ``5xx``, ``429``, any other status, an
answer without an ``ETag`` (the version the index cache is checked against) or with a
``Content-Encoding``, a ``Content-Range`` that does not match the request, a timeout, a TLS or
connection failure. A kept-alive connection the server has closed meanwhile is opened again and the
request sent once more (a ``GET`` is idempotent), as every HTTP client does.

It is only used where it reaches the server the way obstore would (:func:`usable_for`): no user name or
password in the URL, no proxy for the host in the environment (``HTTP_PROXY``/``HTTPS_PROXY``/
``NO_PROXY``), no storage options but ``client_options={"allow_http": ...}``, and keys made of
characters that need no percent-encoding. TLS is verified against the system's certificate store
(:func:`ssl.create_default_context`); a certificate only obstore's roots trust is declined and read
through obstore.

Example:
    >>> usable_for("https://example.org/data", {}), usable_for("https://u:p@example.org/data", {})
    (True, False)
"""

from __future__ import annotations

import http.client
import os
import re
import ssl
import threading
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from .ranges import ByteRequest, Offset, Range, Suffix

__all__ = ["CONNECT_TIMEOUT", "READ_TIMEOUT", "HttpReader", "reader_for", "usable_for"]

#: Seconds to open a connection, and to wait for a byte of an answer: object_store's defaults (5 s and
#: 30 s). A request that runs out of either is declined and sent again through obstore.
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 30.0

#: Keys sent as they are: characters that never need percent-encoding in a URL path (RFC 3986
#: unreserved, and ``/``). Any other key is read through obstore, which encodes it its own way.
_PLAIN_KEY = re.compile(r"[A-Za-z0-9._~/-]*")

#: ``bytes <first>-<last>/<size>`` of a ``206`` answer
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")


def usable_for(url: str, config: dict[str, Any]) -> bool:
    """Whether :class:`HttpReader` reaches ``url`` as obstore would, given the store's obstore
    ``config`` (see the module docstring).

    >>> usable_for("http://127.0.0.1:8000/a", {"client_options": {"allow_http": True}})
    True
    >>> usable_for("http://127.0.0.1:8000/a", {"client_options": {"timeout": "1s"}})
    False
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        return False
    if any(k != "client_options" for k in config):
        return False
    if any(k != "allow_http" for k in config.get("client_options") or {}):
        return False
    if not _PLAIN_KEY.fullmatch(parts.path):
        return False
    proxies = urllib.request.getproxies()
    proxied = proxies.get(parts.scheme) or proxies.get("all")
    return not (proxied and not urllib.request.proxy_bypass(parts.hostname))


def _range_header(req: ByteRequest) -> str:
    t = type(req)
    if t is Range:
        return f"Range: bytes={req.start}-{req.stop - 1}\r\n"  # type: ignore[union-attr]
    if t is Suffix:
        return f"Range: bytes=-{req.length}\r\n"  # type: ignore[union-attr]
    if t is Offset:
        return f"Range: bytes={req.start}-\r\n"  # type: ignore[union-attr]
    return ""


#: One reader per server (scheme, host and port), shared by every store of a URL there: opening a dataset
#: again reuses the connections its threads hold.
_readers: dict[str, HttpReader] = {}
_lock = threading.Lock()


def reader_for(url: str) -> tuple[HttpReader, str]:
    """The shared :class:`HttpReader` of ``url``'s server, and the path under it that keys are joined to.

    >>> reader, base = reader_for("http://127.0.0.1:1/data/")
    >>> base, reader is reader_for("http://127.0.0.1:1/other")[0]
    ('/data/', True)
    """
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}"
    with _lock:
        reader = _readers.get(origin)
        if reader is None:
            if len(_readers) >= 64:
                _readers.clear()
            reader = _readers[origin] = HttpReader(origin)
    return reader, parts.path.rstrip("/") + "/"


class HttpReader:
    """``GET`` requests to one HTTP(S) server, on one kept-alive connection per thread (and process: a
    forked child opens its own).

    >>> r = HttpReader("http://127.0.0.1:1")
    >>> r.get("/data/a/b", Range(0, 4)) is None   # nothing listens there: declined, for obstore
    True
    """

    def __init__(self, origin: str) -> None:
        parts = urlsplit(origin)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if self.https else 80)
        self._head = f"Host: {parts.netloc}\r\nAccept-Encoding: identity\r\nUser-Agent: altarr\r\n"
        self._local = threading.local()
        self._tls = ssl.create_default_context() if self.https else None
        #: requests answered here, and declined (sent again through obstore): for tests and diagnosis
        self.answered = 0
        self.declined = 0

    def _connection(self) -> http.client.HTTPConnection:
        local = self._local
        conn = getattr(local, "conn", None)
        if conn is None or local.pid != os.getpid():
            if self.https:
                conn = http.client.HTTPSConnection(
                    self.host, self.port, timeout=CONNECT_TIMEOUT, context=self._tls
                )
            else:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=CONNECT_TIMEOUT)
            local.conn, local.pid = conn, os.getpid()
        return conn

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
        self._local.conn = None

    def get(self, path: str, req: ByteRequest) -> tuple[bytes, dict[str, Any]] | None:
        """``(bytes, meta)`` of one ``GET`` of the object at ``path`` (``meta`` as obstore's: ``e_tag`` and the object's
        ``size``), ``FileNotFoundError`` for a ``404``, or ``None`` where the request is declined (see
        the module docstring)."""
        if not _PLAIN_KEY.fullmatch(path):
            self.declined += 1
            return None
        request = f"GET {path} HTTP/1.1\r\n{self._head}{_range_header(req)}\r\n".encode("ascii")
        for attempt in (0, 1):
            conn = self._connection()
            reused = conn.sock is not None
            try:
                if not reused:
                    conn.connect()
                    conn.sock.settimeout(READ_TIMEOUT)
                conn.sock.sendall(request)
                answer = conn.response_class(conn.sock, method="GET")
                answer.begin()
                body = answer.read()
            except (ConnectionError, http.client.BadStatusLine):
                self._drop()
                if reused and attempt == 0:
                    continue  # the server closed an idle kept-alive connection: once more on a new one
                self.declined += 1
                return None
            except (OSError, http.client.HTTPException):
                self._drop()  # a timeout, TLS or network failure: obstore's retries take over
                self.declined += 1
                return None
            if answer.will_close:
                self._drop()
            if answer.status == 404:
                self.answered += 1
                raise FileNotFoundError(path)
            got = self._answer(answer, body, req)
            if got is None:
                self.declined += 1
            else:
                self.answered += 1
            return got
        return None  # pragma: no cover - the loop returns

    @staticmethod
    def _answer(answer: http.client.HTTPResponse, body: bytes, req: ByteRequest) -> Any:
        status = answer.status
        if status not in (200, 206):
            return None
        etag = answer.getheader("ETag")
        if not etag or answer.getheader("Content-Encoding", "identity").lower() != "identity":
            return None
        if status == 200:  # the whole object (a server that ignores Range): the part asked is cut here
            size = len(body)
            off, end = req.bounds(size)
            if (off, end) != (0, size):
                body = body[off:end]
        else:
            m = _CONTENT_RANGE.fullmatch(answer.getheader("Content-Range") or "")
            if m is None:
                return None
            first, last, size = int(m[1]), int(m[2]), int(m[3])
            if (first, last + 1) != req.bounds(size) or len(body) != last + 1 - first:
                return None
        return body, {"e_tag": etag, "size": size, "version": None}
