"""The standard library's read path for ``http(s)://`` (``altarr.stores.http_get``), held to obstore's.

Every test reads the same requests through two stores of one URL, ``http_client="stdlib"`` (the
default) and ``http_client="obstore"`` (obstore for everything), and asserts the same bytes, versions and
object sizes, plus which requests the standard library's reader answered itself and which it declined
(sent again through obstore). The servers: the benchmarks' loopback file server
(``benchmarks/netservers.py``: ETags, ``Range``, suffix ranges, 416 past the end), and a server below
whose paths misbehave on purpose: redirects, a 503 before the answer, no ``ETag``, a ``Range`` ignored, a
``Content-Range`` that lies, a ``Content-Encoding``, connections closed with and without a word, TLS.
"""

from __future__ import annotations

import datetime
import gzip
import http.server
import os
import re
import socket
import ssl
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from _processes import read_in_fork_and_spawn
from altarr.errors import StoreError
from altarr.stores import WHOLE, ObstoreStore, Offset, Range, Suffix, http_get
from altarr.stores.http_get import HttpReader, read_head, reader_for, usable_for

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from netservers import http_server  # noqa: E402

DATA = os.urandom(100_000)
SMALL = b"0123456789"


@pytest.fixture(autouse=True)
def fresh_readers(monkeypatch):
    """Each test with readers of its own: declines of another test (on purpose, to one server) must not
    put its reader to rest (see ``test_a_reader_that_keeps_declining_rests``)."""
    monkeypatch.setattr(http_get, "_readers", {})


def _pair(url: str) -> tuple[ObstoreStore, ObstoreStore]:
    fast = ObstoreStore(url)
    slow = ObstoreStore(url, http_client="obstore")
    assert fast._http is not None and slow._http is None
    return fast, slow


def _counts(store: ObstoreStore) -> tuple[int, int]:
    return store._http.answered, store._http.declined


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("files")
    (root / "d").mkdir()
    (root / "d" / "shard").write_bytes(DATA)
    (root / "d" / "small").write_bytes(SMALL)
    (root / "d" / "empty").write_bytes(b"")
    with http_server(root) as (url, log):
        yield f"{url}/d", log


REQUESTS = [
    ("shard", WHOLE),
    ("shard", Range(0, 100)),
    ("shard", Range(5000, 5001)),
    ("shard", Range(99_990, 100_010)),  # clipped at the end
    ("shard", Suffix(64)),
    ("shard", Suffix(1_000_000)),  # longer than the object: all of it
    ("shard", Offset(99_000)),
    ("small", Suffix(3)),
    ("small", WHOLE),
    ("missing", Range(0, 5)),
    ("missing", WHOLE),
]


def test_same_answers_as_obstore_and_answered_here(files):
    url, log = files
    fast, slow = _pair(url)
    before = _counts(fast)
    for key, req in REQUESTS:  # one at a time: no coalescing, every request reaches the reader
        got = fast.get_ranges_sized([(key, req)])
        want = slow.get_ranges_sized([(key, req)])
        assert got == want, (key, req)
        data, versions, sizes = got
        expected = {"shard": DATA, "small": SMALL}.get(key)
        if expected is None:
            assert data == [None] and versions == [None]
        else:
            off, end = req.bounds(len(expected))
            assert bytes(data[0]) == expected[off:end] and sizes == [len(expected)]
            assert versions[0].startswith('"')  # the ETag as the server sent it, quotes and all
    answered, declined = _counts(fast)
    assert (answered - before[0], declined - before[1]) == (len(REQUESTS), 0)  # 404s too


@pytest.mark.parametrize(
    ("key", "req"),
    [("shard", Range(200_000, 200_010)), ("shard", Offset(100_000)), ("empty", Suffix(4))],
)
def test_past_the_end_and_empty_are_declined_to_obstore(files, key, req):
    """A range past the end (416) and a suffix of an empty object are obstore's to settle (empty bytes,
    the object's size from a HEAD)."""
    url, _ = files
    fast, slow = _pair(url)
    before = _counts(fast)
    assert fast.get_ranges_sized([(key, req)]) == slow.get_ranges_sized([(key, req)])
    assert fast.get_ranges([(key, req)]) == [b""]
    assert _counts(fast)[1] == before[1] + 2


def test_a_batch_from_many_threads_each_on_its_own_connection(files):
    url, log = files
    fast, _ = _pair(url)
    reqs = [("shard", Range(i * 7000, i * 7000 + 100)) for i in range(12)]  # 6 KiB apart: with a gap
    fast.coalesce_gap = 0  # of 0 they stay 12 requests, sent by the request threads together
    want = [DATA[i * 7000 : i * 7000 + 100] for i in range(12)]
    before = _counts(fast)
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda _: fast.get_ranges(reqs), range(8)))
    assert all(o == want for o in outs)
    assert _counts(fast) == (before[0] + 8 * 12, before[1])
    assert fast.stats.reads == 8 * 12


def test_keys_that_need_encoding_are_read_through_obstore(files, tmp_path):
    url, _ = files
    fast, _ = _pair(url)
    before = _counts(fast)
    assert fast.get_ranges([("a b", WHOLE)]) == [None] and fast.get_ranges([("ü", WHOLE)]) == [None]
    assert _counts(fast) == (before[0], before[1] + 2)


# --- a server that misbehaves on purpose ------------------------------------------------------------------
ETAG = '"v1"'


class Odd(http.server.BaseHTTPRequestHandler):
    """``/<behaviour>/...`` answers SMALL plus DATA (``BODY``) the way ``behaviour`` says."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    BODY = SMALL + DATA
    flaky_left: dict[str, int] = {}
    seen: dict[str, int] = {}  # GET requests by path
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def _bounds(self) -> tuple[int, int] | None:
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range") or "")
        if m is None:
            return None
        size = len(self.BODY)
        if m[1] == "":
            return max(size - int(m[2]), 0), size
        return int(m[1]), size if m[2] == "" else min(int(m[2]) + 1, size)

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.BODY)))
        self.send_header("ETag", ETAG)
        self.send_header("Last-Modified", "Thu, 03 Dec 2026 12:00:00 GMT")
        self.end_headers()

    def do_GET(self):
        with self.lock:
            self.seen[self.path] = self.seen.get(self.path, 0) + 1
        how = self.path.strip("/").split("/")[0]
        headers = {"ETag": ETAG, "Last-Modified": "Thu, 03 Dec 2026 12:00:00 GMT"}
        if how == "redirect":
            return self._send(302, b"", {"Location": self.path.replace("/redirect/", "/plain/", 1)})
        if how == "flaky":
            with self.lock:
                left = self.flaky_left.get(self.path, 1)
                self.flaky_left[self.path] = left - 1
            if left > 0:
                return self._send(503, b"busy", {})
        if how == "noetag":
            headers.pop("ETag")
        if how == "gzip":
            headers["Content-Encoding"] = "gzip"
            return self._send(200, gzip.compress(self.BODY), headers)
        bounds = None if how == "norange" else self._bounds()
        if bounds is None:
            body, status = self.BODY, 200
        else:
            start, stop = bounds
            if how == "liar":
                start, stop = start + 1, stop  # says (and sends) one byte less than was asked
            body, status = self.BODY[start:stop], 206
            headers["Content-Range"] = f"bytes {start}-{stop - 1}/{len(self.BODY)}"
        if how == "chunked":  # no Content-Length: the body in two chunks
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            half = len(body) // 2
            for part in (body[:half], body[half:], b""):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            return None
        if how == "closehdr":
            headers["Connection"] = "close"
            self.close_connection = True
        self._send(status, body, headers)
        if how == "hangup":  # closes the kept-alive connection after answering, without a word
            self.close_connection = True


@pytest.fixture(scope="module")
def odd_url():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Odd)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


BODY = Odd.BODY


@pytest.mark.parametrize("how", ["plain", "redirect", "flaky", "norange"])
@pytest.mark.parametrize("req", [Range(3, 40), Suffix(17), Offset(100_000), WHOLE], ids=repr)
def test_misbehaving_servers_give_obstores_answer(odd_url, how, req):
    """A redirect and a 503 are declined and obstore's retries and redirects answer; a server that
    ignores ``Range`` is answered here (the part asked is cut from the whole)."""
    Odd.flaky_left.clear()
    fast, slow = _pair(f"{odd_url}/{how}")
    before = _counts(fast)
    got = fast.get_ranges_sized([("x", req)])
    off, end = req.bounds(len(BODY))
    assert bytes(got[0][0]) == BODY[off:end] and got[2] == [len(BODY)] and got[1] == [ETAG]
    Odd.flaky_left.clear()
    want = slow.get_ranges_sized([("x", req)]) if how != "norange" else None
    if want is not None:
        assert (bytes(want[0][0]), want[1], want[2]) == (bytes(got[0][0]), got[1], got[2])
    declined = how in ("redirect", "flaky")
    assert _counts(fast) == (before[0] + (not declined), before[1] + declined)


@pytest.mark.parametrize("how", ["liar", "noetag", "gzip", "chunked"])
def test_answers_it_cannot_trust_are_declined(odd_url, how):
    """A ``Content-Range`` other than the one asked, no ``ETag`` (the version the index cache needs), a
    ``Content-Encoding``, no ``Content-Length`` (a chunked body): not answered here; the store gives
    exactly what obstore gives (bytes or error: obstore refuses a chunked ranged answer too)."""
    fast, slow = _pair(f"{odd_url}/{how}")
    reader = fast._http
    assert reader.get(f"/{how}/x", Range(3, 40)) is None

    def outcome(store):
        try:
            return store.get_ranges_sized([("x", Range(3, 40))])
        except StoreError as e:
            return type(e)

    assert outcome(fast) == outcome(slow)


def test_a_closed_keepalive_connection_is_opened_again(odd_url):
    """A server that hangs up after each answer (without ``Connection: close``), and one that says so:
    every request answered here, none declined."""
    for how in ("hangup", "closehdr"):
        reader, base = reader_for(f"{odd_url}/{how}")
        before = (reader.answered, reader.declined)
        for i in range(4):
            body, meta = reader.get(f"{base}x", Range(i, i + 10))
            assert body == BODY[i : i + 10] and meta["size"] == len(BODY)
        assert (reader.answered, reader.declined) == (before[0] + 4, before[1])


def test_a_server_that_is_gone_is_declined_and_reported_by_obstore():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    reader = HttpReader(f"http://127.0.0.1:{port}")
    assert reader.get("/x", WHOLE) is None and reader.declined == 1
    store = ObstoreStore(f"http://127.0.0.1:{port}/d", client_options={"allow_http": True, "timeout": "2s"})
    assert store._http is None  # an option it does not know: obstore reads everything
    fast = ObstoreStore(f"http://127.0.0.1:{port}/d")
    fast._http.declined = 0
    with pytest.raises(StoreError, match="read failed"):
        fast.get("x")
    assert fast._http.declined == 1


def test_a_reader_that_keeps_declining_rests(odd_url, monkeypatch):
    """A server that never sends an ETag: DECLINES_BEFORE_REST requests declined one after the other,
    then the reader rests (declines at once, no request sent, whatever the path) until REST_SECONDS
    are over, and tries again; an answer taken ends a run of declines."""
    monkeypatch.setattr(http_get, "REST_SECONDS", 0.3)
    reader = HttpReader(odd_url)
    n = http_get.DECLINES_BEFORE_REST
    Odd.seen.clear()
    for _ in range(n - 1):
        assert reader.get("/noetag/x", Range(3, 40)) is None
    assert reader.get("/plain/x", Range(3, 40))[0] == BODY[3:40]  # the run of declines ends
    for _ in range(n - 1):
        assert reader.get("/noetag/x", Range(3, 40)) is None
    assert not reader.resting() and Odd.seen["/noetag/x"] == 2 * (n - 1)
    assert reader.get("/noetag/x", Range(3, 40)) is None  # the n-th in a row: the rest begins
    assert reader.get("/noetag/x", Range(3, 40)) is None and reader.get("/plain/x", Range(3, 40)) is None
    assert Odd.seen["/noetag/x"] == 2 * n - 1 and Odd.seen["/plain/x"] == 1  # no request while resting
    assert reader.get("/plain/ü", Range(3, 40)) is None  # a key it never sends: declined, counted in a row
    assert (reader.answered, reader.declined) == (1, 2 * n + 2)
    time.sleep(0.35)
    for _ in range(n - 2):  # after a rest, a run of declines starts from the first one after it began
        assert reader.get("/noetag/x", Range(3, 40)) is None
    assert not reader.resting() and Odd.seen["/noetag/x"] == 3 * n - 3
    assert reader.get("/noetag/x", Range(3, 40)) is None and reader.resting()
    time.sleep(0.35)
    assert reader.get("/plain/x", Range(3, 40))[0] == BODY[3:40] and Odd.seen["/plain/x"] == 2


def test_encoded_targets_are_sent_as_they_are_and_checked(files):
    """``fetch`` sends a target its maker encoded (a presigned URL's path and query) as it is; anything
    that is not a plain encoded path and query (a space, a line break, no leading slash) is declined
    without a request."""
    url, log = files
    reader, base = reader_for(url)
    log.reset()
    body, meta = reader.fetch(f"{base}small?X-Amz-Signature=ab%2F&X-Amz-Expires=900", Range(2, 5))
    assert body == SMALL[2:5] and meta["size"] == len(SMALL) and meta["version"] is None
    assert log.requests() == 1
    for bad in (f"{base}small x", f"{base}small?a=1\r\nX: y", "small", f"{base}small?a=b c", f"{base}sm#all"):
        assert reader.fetch(bad, WHOLE) is None, bad
    assert log.requests() == 1


def test_timeouts_are_declined(odd_url, monkeypatch):
    """A server slower than the read timeout: declined (obstore, with its own timeout, takes over)."""
    monkeypatch.setattr(http_get, "READ_TIMEOUT", 0.05)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)  # accepts the connection, never answers
        reader = HttpReader(f"http://127.0.0.1:{listener.getsockname()[1]}")
        assert reader.get("/x", WHOLE) is None and reader.declined == 1


# --- where it is used -----------------------------------------------------------------------------------------
def test_usable_for():
    assert usable_for("http://h:1/a/b.zarr", {"client_options": {"allow_http": True}})
    assert usable_for("https://h/a", {})
    assert not usable_for("https://user:pw@h/a", {})
    assert not usable_for("https://user@h/a", {}) and not usable_for("https://:pw@h/a", {})
    assert not usable_for("https://h/a?x=1", {})
    assert not usable_for("https://h/a%20b", {})  # a path obstore would encode its own way
    assert not usable_for("s3://b/a", {})
    assert not usable_for("https://h/a", {"bearer_token": "t"})
    assert not usable_for("https://h/a", {"client_options": {"default_headers": {"a": "b"}}})


def test_a_proxy_in_the_environment_leaves_reads_to_obstore(monkeypatch):
    for k in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert not usable_for("https://data.example/a", {})
    assert usable_for("http://data.example/a", {})  # no proxy for http
    monkeypatch.setenv("NO_PROXY", "data.example")
    assert usable_for("https://data.example/a", {})
    monkeypatch.setenv("ALL_PROXY", "http://proxy.example:3128")  # every scheme
    assert not usable_for("http://other.example/a", {}) and usable_for("http://data.example/a", {})
    store = ObstoreStore("https://other.example/a")
    assert store._http is None and ObstoreStore("https://data.example/a")._http is not None


def test_http_client_option_is_checked_and_kept():
    with pytest.raises(ValueError, match="http_client must be one of"):
        ObstoreStore("http://127.0.0.1:1/a", http_client="curl")
    s = ObstoreStore("http://127.0.0.1:1/a", http_client="obstore")
    import pickle

    assert pickle.loads(pickle.dumps(s)).http_client == "obstore"
    assert s.with_read_only().http_client == "obstore" and s.with_read_only()._http is None


# --- TLS --------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tls_files(tmp_path_factory, files):
    """The same files over HTTPS, with a certificate of a throwaway authority: ``(url, ca_file)``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    d = tmp_path_factory.mktemp("tls")
    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "altarr test CA")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key()).serial_number(1)
        .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name).public_key(key.public_key()).serial_number(2)
        .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    (d / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (d / "leaf.pem").write_bytes(
        leaf.public_bytes(serialization.Encoding.PEM)
        + key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(d / "leaf.pem")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Odd)
    server.daemon_threads = True
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://localhost:{server.server_address[1]}", d / "ca.pem"
    server.shutdown()
    server.server_close()


def test_tls_is_verified(tls_files):
    """A certificate no trusted authority signed is refused by both paths (never read unverified)."""
    url, _ = tls_files
    fast = ObstoreStore(f"{url}/plain")
    before = _counts(fast)
    with pytest.raises(StoreError):
        fast.get("x")
    assert _counts(fast)[1] == before[1] + 1


def test_tls_with_a_trusted_authority(tls_files, monkeypatch):
    """With the authority trusted (``SSL_CERT_FILE``, which OpenSSL reads), the reader answers itself."""
    url, ca = tls_files
    monkeypatch.setattr(http_get, "_readers", {})
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    reader, base = reader_for(f"{url}/plain")
    body, meta = reader.get(f"{base}x", Range(5, 25))
    assert body == BODY[5:25] and meta == {"e_tag": ETAG, "size": len(BODY), "version": None}
    assert (reader.answered, reader.declined) == (1, 0)


# --- processes ----------------------------------------------------------------------------------------------
def test_a_forked_child_fails_fast_as_with_obstore_and_a_spawned_one_reads(files):
    """The reader's connections are per process, but the rule stays obstore's (docs/remote.md, fork and
    spawn): a store used before a fork raises in the forked child, whichever client would read; a
    spawned child (the store pickled) reads through its own."""
    url, _ = files
    fast, _ = _pair(url)
    assert fast.get_ranges([("small", 0, 3)]) == [b"012"]
    read_in_fork_and_spawn(fast, "small", b"012")


# --- hostile and unusual answers, byte by byte --------------------------------------------------------------
class Canned:
    """A server that answers every request on a connection with ``answers[path]`` (raw bytes), then keeps
    the connection open for the next request, or closes it where the answer is marked ``True`` (after
    5 s of neither reading nor answering where it is marked ``"linger"``)."""

    def __init__(self, answers: dict[str, tuple[bytes, bool]]) -> None:
        self.answers = answers
        self.accepted = 0  # connections opened by clients
        self.ended = 0  # connections the client closed (its end seen before a request)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as f:
            while True:
                try:
                    line = f.readline()
                except OSError:
                    line = b""
                if not line:
                    self.ended += 1
                    return
                path = line.split()[1].decode()
                while f.readline() not in (b"\r\n", b""):
                    pass
                raw, close = self.answers[path]
                conn.sendall(raw)
                if close == "linger":  # neither reads nor closes for a while
                    time.sleep(5)
                if close:
                    return


OK_HEAD = b'HTTP/1.1 206 Partial Content\r\nETag: "e"\r\nContent-Range: bytes 0-2/10\r\n'


@pytest.fixture(scope="module")
def canned():
    answers = {
        "/ok": (OK_HEAD + b"Content-Length: 3\r\n\r\nabc", False),
        "/versioned": (OK_HEAD + b"X-Amz-Version-Id: v7\r\nContent-Length: 3\r\n\r\nabc", False),
        "/http10": (
            b'HTTP/1.0 206 P\r\nETag: "e"\r\nContent-Range: bytes 0-2/10\r\nContent-Length: 3\r\n\r\nabc',
            True,
        ),
        "/close": (OK_HEAD + b"Connection: close\r\nContent-Length: 3\r\n\r\nabc", True),
        # says it closes, but leaves the socket open: a request sent on it again would wait for nothing
        "/saysclose": (OK_HEAD + b"Connection: close\r\nContent-Length: 3\r\n\r\nabc", "linger"),
        "/http2": (b"HTTP/2 206 P\r\nContent-Length: 3\r\n\r\nabc", False),
        "/nostatus": (b"HTTP/1.1 2x6 P\r\n\r\n", False),
        "/folded": (OK_HEAD + b"X-A: 1\r\n  more\r\nContent-Length: 3\r\n\r\nabc", False),
        "/noColon": (OK_HEAD + b"Broken header\r\nContent-Length: 3\r\n\r\nabc", False),
        "/longline": (OK_HEAD + b"X-A: " + b"a" * 70_000 + b"\r\nContent-Length: 3\r\n\r\nabc", False),
        "/manyheaders": (OK_HEAD + b"X-A: 1\r\n" * 120 + b"Content-Length: 3\r\n\r\nabc", False),
        "/twolengths": (OK_HEAD + b"Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc", False),
        "/odddigits": (OK_HEAD + "Content-Length: ³\r\n\r\nabc".encode(), False),
        "/nolength": (OK_HEAD + b"\r\nabc", True),
        "/chunked": (OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", False),
        # both: a length that is not the body's (RFC 9112 says to ignore it; it is declined)
        "/chunkedlen": (
            OK_HEAD + b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            False,
        ),
        "/norange206": (b'HTTP/1.1 206 P\r\nETag: "e"\r\nContent-Length: 3\r\n\r\nabc', False),
        "/404edge": (b"HTTP/1.1 404 Not Found\r\nContent-Length: 65536\r\n\r\n" + b"x" * 65536, False),
        "/huge": (
            OK_HEAD.replace(b"0-2/10", b"0-2/99999999999") + b"Content-Length: 99999999999\r\n\r\n",
            True,
        ),
        "/short": (OK_HEAD + b"Content-Length: 3\r\n\r\nab", True),
        "/gone": (b"", True),
        "/404big": (b"HTTP/1.1 404 Not Found\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100_000, False),
        "/404": (b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found", False),
        "/500": (b"HTTP/1.1 500 Oops\r\nContent-Length: 4\r\n\r\noops", False),
    }
    server = Canned(answers)
    yield server
    server.sock.close()


@pytest.mark.parametrize(
    "path",
    ["/http2", "/nostatus", "/folded", "/noColon", "/longline", "/manyheaders", "/twolengths",
     "/odddigits", "/nolength", "/chunked", "/chunkedlen", "/norange206", "/huge", "/short", "/gone",
     "/404big", "/500"],
)  # fmt: skip
def test_unusual_or_hostile_answers_are_declined_and_the_next_request_works(canned, path):
    """Anything but a plain HTTP/1.x head with a length is declined without reading a body it did not
    ask for (``/huge`` says 93 GiB: nothing is allocated for it), and the reader recovers: the next
    request on the same thread is answered."""
    reader = HttpReader(canned.url)
    assert reader.get("/ok", Range(0, 3))[0] == b"abc"
    assert reader.get(path, Range(0, 3)) is None
    assert (reader.answered, reader.declined) == (1, 1)
    body, meta = reader.get("/ok", Range(0, 3))
    assert body == b"abc" and meta == {"e_tag": '"e"', "size": 10, "version": None}
    assert (reader.answered, reader.declined) == (2, 1)


def test_answers_that_end_the_connection_are_answered_and_the_next_opens_another(canned, monkeypatch):
    """HTTP/1.0 and ``Connection: close`` answers: the connection is not used again (a server that said
    so but left it open would make the next request wait out the timeout, then be declined)."""
    monkeypatch.setattr(http_get, "READ_TIMEOUT", 1.0)
    reader = HttpReader(canned.url)
    for path in ("/http10", "/close", "/ok", "/404", "/404edge", "/saysclose", "/ok", "/http10"):
        if path.startswith("/404"):  # a body of MAX_ERROR_BODY bytes is still read, not declined
            with pytest.raises(FileNotFoundError):
                reader.get(path, Range(0, 3))
        else:
            assert reader.get(path, Range(0, 3))[0] == b"abc"
    assert (reader.answered, reader.declined) == (8, 0)


def test_a_reader_with_a_version_header_reports_the_version_obstore_would(canned):
    """S3 names an object's version in ``x-amz-version-id`` (obstore reports it as ``version``): a reader
    made for that header reports it, one made without it (plain HTTP) reports none."""
    plain = reader_for(canned.url)[0]
    named = reader_for(canned.url, "x-amz-version-id")[0]
    assert plain is not named and named.version_header == "x-amz-version-id"
    assert named is reader_for(canned.url + "/elsewhere", "x-amz-version-id")[0]
    assert plain.get("/versioned", Range(0, 3))[1]["version"] is None
    assert named.fetch("/versioned", Range(0, 3))[1] == {"e_tag": '"e"', "size": 10, "version": "v7"}
    assert named.fetch("/ok", Range(0, 3))[1]["version"] is None  # no such header: none


def test_the_proxy_check_is_asked_once_per_host_and_environment(monkeypatch):
    """urllib's proxy lookup (70-90 us) is asked again only for another host or when a proxy variable
    changed; the answers kept are bounded."""
    for k in http_get._PROXY_ENV:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setattr(http_get, "_proxy_answers", {})
    asked: list[int] = []
    real = http_get.urllib.request.getproxies

    def counting():
        asked.append(1)
        return real()

    monkeypatch.setattr(http_get.urllib.request, "getproxies", counting)
    assert usable_for("https://a.example/x", {}) and usable_for("https://a.example/y", {})
    assert len(asked) == 1
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert not usable_for("https://a.example/x", {}) and not usable_for("https://a.example/x", {})
    assert len(asked) == 2
    monkeypatch.delenv("HTTPS_PROXY")
    assert usable_for("https://a.example/x", {}) and len(asked) == 2  # that environment's answer, kept
    for i in range(300):
        usable_for(f"https://h{i}.example/x", {})
    assert 1 <= len(http_get._proxy_answers) <= 256
    monkeypatch.setattr(http_get, "_proxy_answers", {})
    for i in range(256):
        usable_for(f"https://h{i}.example/x", {})
    assert len(http_get._proxy_answers) == 256
    usable_for("https://one-more.example/x", {})
    assert len(http_get._proxy_answers) == 1


def test_read_head_limits():
    import io

    head = b"HTTP/1.1 200 OK\r\n" + b"X: 1\r\n" * http_get.MAX_HEADERS + b"\r\n"
    assert read_head(io.BytesIO(head))[2] == {"x": ", ".join(["1"] * http_get.MAX_HEADERS)}
    assert read_head(io.BytesIO(head.replace(b"\r\n\r\n", b"\r\nX: 1\r\n\r\n"))) is None
    line = b"HTTP/1.1 200 OK\r\nX: " + b"a" * (http_get.MAX_LINE - 5) + b"\r\n\r\n"  # a line of MAX_LINE
    assert read_head(io.BytesIO(line)) is not None
    assert read_head(io.BytesIO(line.replace(b"X: ", b"X: a"))) is None
    assert read_head(io.BytesIO(b"HTTP/1.1 200 OK\r\nX: 1")) is None  # the stream ends in the head
    assert read_head(io.BytesIO(b"HTTP/1.0 200 OK\r\n\r\n"))[:2] == (200, False)
    assert read_head(io.BytesIO(b"HTTP/1.1 200 OK\r\nConnection: Close\r\n\r\n"))[:2] == (200, False)
    with pytest.raises(ConnectionError):
        read_head(io.BytesIO(b""))


def test_one_connection_per_thread_is_kept_and_a_dropped_one_is_closed(canned):
    """Answers that keep the connection reuse it (one connection for many requests); a fresh connection
    that fails is declined at once (no second try: only a kept-alive one is tried again); a declined
    answer's connection is closed, so the server sees its end."""
    reader = HttpReader(canned.url)
    accepted, ended = canned.accepted, canned.ended
    for _ in range(5):
        assert reader.get("/ok", Range(0, 3))[0] == b"abc"
    assert canned.accepted == accepted + 1
    assert reader.get("/500", Range(0, 3)) is None  # read in full: the connection stays
    assert reader.get("/ok", Range(0, 3))[0] == b"abc" and canned.accepted == accepted + 1
    assert reader.get("/norange206", Range(0, 3)) is None  # body not read: the connection is closed
    deadline = time.monotonic() + 5
    while canned.ended == ended and time.monotonic() < deadline:
        time.sleep(0.01)
    assert canned.ended == ended + 1
    fresh = HttpReader(canned.url)
    accepted = canned.accepted
    assert fresh.get("/gone", Range(0, 3)) is None
    assert canned.accepted == accepted + 1 and (fresh.answered, fresh.declined) == (0, 1)


def test_reader_for_shares_one_reader_per_server_and_bounds_them(monkeypatch):
    monkeypatch.setattr(http_get, "_readers", {})
    a, base = reader_for("http://h.example:81/data/")
    assert base == "/data/" and reader_for("http://h.example:81/dataX")[1] == "/dataX/"
    assert reader_for("http://h.example:81")[1] == "/" and reader_for("http://h.example:81/a/b")[0] is a
    assert reader_for("https://h.example:81/data")[0] is not a  # another scheme: another server
    for i in range(62):
        reader_for(f"http://h{i}.example/")
    assert len(http_get._readers) == 64 and reader_for("http://h.example:81/x")[0] is a
    reader_for("http://one-more.example/")  # the 65th: the table starts again
    assert len(http_get._readers) == 1 and reader_for("http://h.example:81/x")[0] is not a
    assert (HttpReader("https://h").port, HttpReader("http://h").port, HttpReader("http://h:8").port) == (
        443,
        80,
        8,
    )


def test_read_head_status_lines():
    import io

    assert read_head(io.BytesIO(b"HTTP/1.1 206\r\n\r\n"))[0] == 206  # no reason phrase
    assert read_head(io.BytesIO(b"HTTP/1.1 206\n\n"))[0] == 206  # bare line feeds
    assert read_head(io.BytesIO(b"HTTP/1.1 200 OK\nX: 1\n\n"))[2] == {"x": "1"}
    assert read_head(io.BytesIO(b"HTTP/1.1 2060 X\r\n\r\n")) is None
    edge = b"HTTP/1.1 200 " + b"r" * (http_get.MAX_LINE - 15) + b"\r\n"  # a status line of MAX_LINE
    assert len(edge) == http_get.MAX_LINE and read_head(io.BytesIO(edge + b"\r\n"))[0] == 200
    assert read_head(io.BytesIO(edge.replace(b" r", b" rr") + b"\r\n")) is None


def test_read_head_header_lines():
    import io

    got = read_head(io.BytesIO(b"HTTP/1.1 200 OK\r\nDate: Thu, 03 Dec 2026 12:00:00 GMT\r\n\r\n"))
    assert got[2] == {"date": "Thu, 03 Dec 2026 12:00:00 GMT"}  # the first colon ends the name
    for bad in (b"X: 1\r\n  Y: 2\r\n", b"X : 1\r\n", b": 1\r\n", b"X 1\r\n"):
        assert read_head(io.BytesIO(b"HTTP/1.1 200 OK\r\n" + bad + b"\r\n")) is None, bad
