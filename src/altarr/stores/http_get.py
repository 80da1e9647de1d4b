"""Ranged ``GET`` requests over HTTP(S) on the standard library's :mod:`http.client`: the read path of
:class:`~altarr.stores.ObstoreStore` for ``http://`` and ``https://`` URLs (``http_client="stdlib"``,
the default there).

Why (numbers in ``benchmarks/README.md``, "HTTP reads on the standard library"): a small read over a
network is a chain of dependent rounds (metadata, shard index, chunk), and each round pays the HTTP
client's own send and wake-up. obstore's request goes from Python into a Tokio runtime and its answer
comes back through one of that runtime's threads; a blocking request on a kept-alive ``http.client``
connection of the calling thread, written as one prebuilt buffer, reached a loopback server 0.1-0.2 ms
sooner per request, and the answer's head is read by :func:`read_head` (see there why not
``HTTPResponse``). That is what separated altarr from tensorstore on a cold open and one chunk (three
rounds) at 20 ms per request.

What it answers itself, and what it leaves to obstore: it answers ``200``, ``206`` (checked against
the range asked before its body is read) and ``404`` of a plain server (:meth:`HttpReader._take`).
Everything else is *declined* (:meth:`HttpReader.get` returns ``None``) and the store sends the same
request again through obstore, whose retry, back-off, redirect and error handling apply unchanged:
redirects, ``416``, ``5xx``, ``429``, any other status, an answer without an ``ETag`` (the version the
index cache is checked against), with a ``Content-Encoding`` or a chunked body, a ``Content-Range``
that does not match the request, a head :func:`read_head` does not take, a short body, a timeout, a TLS
or connection failure. A kept-alive connection the server has closed meanwhile is opened again and the
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
import time
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from .ranges import ByteRequest, Offset, Range, Suffix

__all__ = [
    "CONNECT_TIMEOUT",
    "READ_TIMEOUT",
    "DECLINES_BEFORE_REST",
    "REST_SECONDS",
    "HttpReader",
    "Resting",
    "read_head",
    "reader_for",
    "usable_for",
]

#: Seconds to open a connection, and to wait for a byte of an answer: object_store's defaults (5 s and
#: 30 s). A request that runs out of either is declined and sent again through obstore.
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 30.0

#: Keys sent as they are: characters that never need percent-encoding in a URL path (RFC 3986
#: unreserved, and ``/``). Any other key is read through obstore, which encodes it its own way.
_PLAIN_KEY = re.compile(r"[A-Za-z0-9._~/-]*")
#: A request target already percent-encoded by its maker (a presigned URL's path and query, see
#: :mod:`altarr.stores.s3_signed`): sent as it is; nothing in it can end the request line.
_ENCODED_TARGET = re.compile(r"/[A-Za-z0-9._~/%-]*(\?[A-Za-z0-9._~%&=-]*)?")

#: Declines in a row (no answer taken between them) after which a reader rests: for
#: :data:`REST_SECONDS` it declines at once, without a request, and every read goes straight to obstore.
#: A server that never sends an ETag, or an S3 bucket whose policy refuses presigned URLs, would
#: otherwise cost every read two requests, one after the other.
DECLINES_BEFORE_REST = 8
REST_SECONDS = 60.0

#: Limits on an answer's head, as :mod:`http.client` has them: header lines, and bytes in one line.
MAX_HEADERS = 100
MAX_LINE = 65536
#: The longest body of an answer not taken (a ``404``, a redirect, an error) read to keep its connection;
#: a longer one closes it instead.
MAX_ERROR_BODY = 1 << 16

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
    return _no_proxy_for(parts.scheme, parts.hostname)


#: The environment variables :func:`urllib.request.getproxies` reads on this platform (in the two usual
#: spellings), whose values key :data:`_proxy_answers`.
_PROXY_ENV = tuple(
    name for base in ("http_proxy", "https_proxy", "all_proxy", "no_proxy") for name in (base, base.upper())
) + ("REQUEST_METHOD",)
#: Whether a host is reached without a proxy, by (scheme, host, the values of :data:`_PROXY_ENV`):
#: asking :mod:`urllib.request` costs 70-90 us, on the way to every open's first request.
_proxy_answers: dict[tuple[str, str, tuple[str | None, ...]], bool] = {}


def _no_proxy_for(scheme: str, host: str) -> bool:
    """No proxy for ``scheme`` and ``host`` in the environment (or a ``NO_PROXY`` entry that covers it)."""
    key = (scheme, host, tuple(os.environ.get(name) for name in _PROXY_ENV))
    answer = _proxy_answers.get(key)
    if answer is None:
        proxies = urllib.request.getproxies()
        proxied = proxies.get(scheme) or proxies.get("all")
        answer = not (proxied and not urllib.request.proxy_bypass(host))
        if len(_proxy_answers) >= 256:
            _proxy_answers.clear()
        _proxy_answers[key] = answer
    return answer


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
_readers: dict[tuple[str, str | None], HttpReader] = {}
_lock = threading.Lock()


def reader_for(url: str, version_header: str | None = None) -> tuple[HttpReader, str]:
    """The shared :class:`HttpReader` of ``url``'s server (and ``version_header``), and the path under it
    that keys are joined to.

    >>> reader, base = reader_for("http://127.0.0.1:1/data/")
    >>> base, reader is reader_for("http://127.0.0.1:1/other")[0]
    ('/data/', True)
    """
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}"
    with _lock:
        reader = _readers.get((origin, version_header))
        if reader is None:
            if len(_readers) >= 64:
                _readers.clear()
            reader = _readers[(origin, version_header)] = HttpReader(origin, version_header)
    return reader, parts.path.rstrip("/") + "/"


class Resting:
    """Counts of a direct read path's outcomes (``answered``; ``declined``: left to obstore), and its
    rest: after :data:`DECLINES_BEFORE_REST` declines in a row it declines everything at once for
    :data:`REST_SECONDS` (:meth:`resting`), then tries again.

    >>> r = Resting()
    >>> [r._count(None) for _ in range(DECLINES_BEFORE_REST)] == [None] * DECLINES_BEFORE_REST
    True
    >>> r.declined, r.resting(), r.declined
    (8, True, 9)
    """

    def __init__(self) -> None:
        #: requests answered here, and declined (sent again through obstore): for tests and diagnosis
        self.answered = 0
        self.declined = 0
        self._in_row = 0
        self._rest_until = 0.0
        self._counting = threading.Lock()  # the request threads count at once

    def resting(self) -> bool:
        """Whether it declines without trying (counted as declined when it does)."""
        if self._rest_until == 0.0 or time.monotonic() >= self._rest_until:
            return False
        with self._counting:
            self.declined += 1
        return True

    def _count(self, got: Any) -> Any:
        """Count ``got`` (``None``: declined), start a rest where it is due; returns ``got``."""
        with self._counting:
            if got is None:
                self.declined += 1
                self._in_row += 1
                if self._in_row >= DECLINES_BEFORE_REST:
                    self._in_row = 0
                    self._rest_until = time.monotonic() + REST_SECONDS
            else:
                self.answered += 1
                self._in_row = 0
        return got


class HttpReader(Resting):
    """``GET`` requests to one HTTP(S) server, on one kept-alive connection per thread (and process: a
    forked child opens its own). ``version_header``: the header that carries an object's version id
    (S3's ``x-amz-version-id``), reported as obstore reports it.

    >>> r = HttpReader("http://127.0.0.1:1")
    >>> r.get("/data/a/b", Range(0, 4)) is None   # nothing listens there: declined, for obstore
    True
    """

    def __init__(self, origin: str, version_header: str | None = None) -> None:
        super().__init__()
        parts = urlsplit(origin)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if self.https else 80)
        self.version_header = version_header
        self._head = f"Host: {parts.netloc}\r\nAccept-Encoding: identity\r\nUser-Agent: altarr\r\n"
        self._local = threading.local()
        self._tls = ssl.create_default_context() if self.https else None

    def _connection(self) -> tuple[http.client.HTTPConnection, Any]:
        """This thread's connection, and the buffered reader of its socket (``None`` until it connects)."""
        local = self._local
        conn = getattr(local, "conn", None)
        if conn is None or local.pid != os.getpid():
            if self.https:
                conn = http.client.HTTPSConnection(
                    self.host, self.port, timeout=CONNECT_TIMEOUT, context=self._tls
                )
            else:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=CONNECT_TIMEOUT)
            local.conn, local.fp, local.pid = conn, None, os.getpid()
        return conn, local.fp

    def _drop(self) -> None:
        """Close this thread's connection (the next request opens a new one)."""
        local = self._local
        for name in ("fp", "conn"):
            obj = getattr(local, name, None)
            if obj is not None:
                obj.close()
            setattr(local, name, None)

    def get(self, path: str, req: ByteRequest) -> tuple[bytes, dict[str, Any]] | None:
        """``(bytes, meta)`` of one ``GET`` of the object at ``path`` (``meta`` as obstore's: ``e_tag``,
        ``version`` and the object's ``size``), ``FileNotFoundError`` for a ``404``, or ``None`` where
        the request is declined (see the module docstring). ``path`` is a key's path as it is: one
        that would need percent-encoding is declined."""
        if not _PLAIN_KEY.fullmatch(path):
            return self._count(None)
        return self.fetch(path, req)

    def fetch(self, target: str, req: ByteRequest) -> tuple[bytes, dict[str, Any]] | None:
        """:meth:`get` of a request target already percent-encoded by its maker (a path and query)."""
        if not _ENCODED_TARGET.fullmatch(target):
            return self._count(None)
        if self.resting():
            return None
        request = f"GET {target} HTTP/1.1\r\n{self._head}{_range_header(req)}\r\n".encode("ascii")
        got: Any = None
        for attempt in (0, 1):
            conn, fp = self._connection()
            reused = fp is not None
            try:
                if fp is None:
                    conn.connect()
                    conn.sock.settimeout(READ_TIMEOUT)
                    fp = self._local.fp = conn.sock.makefile("rb")
                conn.sock.sendall(request)
                head = read_head(fp)
                got = self._take(fp, head, req) if head is not None else self._drop()
            except ConnectionError:
                self._drop()
                if reused and attempt == 0:
                    continue  # the server closed an idle kept-alive connection: once more on a new one
            except OSError:
                self._drop()  # a timeout, TLS or network failure: obstore's retries take over
            break
        if self._count(got) is _MISSING:
            raise FileNotFoundError(target.partition("?")[0])
        return got

    def _take(self, fp: Any, head: tuple[int, bool, dict[str, str]], req: ByteRequest) -> Any:
        """The outcome of an answer whose head was read: ``(bytes, meta)``, :data:`_MISSING` for a
        ``404``, or ``None`` (declined). The body is read only where its length is the one expected; a
        connection whose next answer could not be found (a body not read, ``Connection: close``,
        HTTP/1.0) is closed."""
        status, keep, h = head
        length = h.get("content-length", "")
        if "transfer-encoding" in h or not (length.isascii() and length.isdigit()):
            return self._drop()
        n = int(length)
        out: Any = None
        if status in (200, 206):
            etag = h.get("etag")
            if not etag or h.get("content-encoding", "identity").lower() != "identity":
                return self._drop()
            if status == 206:
                m = _CONTENT_RANGE.fullmatch(h.get("content-range", ""))
                if m is None:
                    return self._drop()
                first, last, size = int(m[1]), int(m[2]), int(m[3])
                if (first, last + 1) != req.bounds(size) or n != last + 1 - first:
                    return self._drop()  # not the bytes asked for: the body is not read
                off, end = 0, n
            else:  # the whole object (a server that ignores Range): the part asked is cut here
                size = n
                off, end = req.bounds(size)
            body = fp.read(n)
            if len(body) != n:
                return self._drop()
            if (off, end) != (0, n):
                body = body[off:end]
            version = h.get(self.version_header) if self.version_header else None
            out = (body, {"e_tag": etag, "size": size, "version": version})
        elif n > MAX_ERROR_BODY:
            return self._drop()
        elif len(fp.read(n)) != n:
            return self._drop()
        elif status == 404:
            out = _MISSING
        if not keep:
            self._drop()
        return out


#: A ``404`` answer (see :meth:`HttpReader._take`).
_MISSING = object()


def read_head(fp: Any) -> tuple[int, bool, dict[str, str]] | None:
    r"""The status, whether the connection stays open after the body, and the headers (names in lower
    case, repeated ones joined with ``", "``) of the answer ``fp`` (a buffered socket reader) starts with;
    ``None`` for anything but a plain HTTP/1.0 or 1.1 head within :data:`MAX_HEADERS` lines of at most
    :data:`MAX_LINE` bytes (no folded lines). Raises ``ConnectionError`` when the connection ends before
    the first byte (a kept-alive connection the server closed).

    Why not :class:`http.client.HTTPResponse`: its head parse goes through the :mod:`email` package's
    feed parser, 48 us a 206 answer warm and 338 us right after a 20 ms wait, against 5 and 87 us for
    this (with the body read of 64 KiB); a small read over a network is three dependent answers.

    >>> import io
    >>> read_head(io.BytesIO(b"HTTP/1.1 206 Partial\r\nETag: \"a\"\r\nContent-Length: 3\r\n\r\nabc"))
    (206, True, {'etag': '"a"', 'content-length': '3'})
    >>> read_head(io.BytesIO(b"HTTP/1.1 200 OK\r\nX: 1\r\n  folded\r\n\r\n")) is None
    True
    """
    line = fp.readline(MAX_LINE + 1)
    if not line:
        raise ConnectionError("the server closed the connection")
    version, _, rest = line.partition(b" ")
    code = rest[:3]
    if (
        version not in (b"HTTP/1.1", b"HTTP/1.0")
        or not (code.isdigit() and len(code) == 3)
        or rest[3:4] not in (b" ", b"\r", b"\n")
        or not line.endswith(b"\n")
        or len(line) > MAX_LINE
    ):
        return None
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADERS + 1):
        line = fp.readline(MAX_LINE + 1)
        if line in (b"\r\n", b"\n"):
            keep = version == b"HTTP/1.1" and "close" not in headers.get("connection", "").lower()
            return int(code), keep, headers
        name, sep, value = line.partition(b":")
        if not sep or not name or name != name.strip() or not line.endswith(b"\n") or len(line) > MAX_LINE:
            return None  # not a header line, a folded one, or one cut at MAX_LINE (or the stream's end)
        key = name.decode("latin-1").lower()
        text = value.strip().decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return None
