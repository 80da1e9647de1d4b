"""The obstore side of :class:`~altarr.stores.ObstoreStore`: its configuration from storage options, one
client per URL and configuration in a process, the threads that send requests, and what obstore's
answers and exceptions mean.

Example:
    >>> fsspec_to_obstore_options("s3://b", {"anon": True, "endpoint_url": "http://127.0.0.1:9000"})
    {'skip_signature': True, 'endpoint': 'http://127.0.0.1:9000', 'client_options': {'allow_http': True}}
    >>> version_of({"e_tag": '"abc"', "size": 3}), version_of({"e_tag": None, "version": None})
    ('"abc"', None)
"""

from __future__ import annotations

import atexit
import hashlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .._threads import after_fork_in_child, io_threads
from ..errors import StoreError

__all__ = [
    "ABSENT",
    "DEFAULT_CONCURRENCY",
    "client_for",
    "forked_after_use",
    "fsspec_to_obstore_options",
    "is_conflict",
    "outcome",
    "put_version",
    "request_threads",
    "size_of",
    "version_of",
]

#: Requests of one batch in flight at once (object stores serve many; HTTP/1.1 servers one per socket).
DEFAULT_CONCURRENCY = 64

#: The recorded version of an object that did not exist when it was read (written with ``"create"``).
ABSENT = "<absent>"

#: Whether this process made an obstore client, and whether it is a child forked after its parent (or an
#: ancestor) did: obstore's Rust runtime does not survive fork(), a request from such a child would hang
#: (a new client too), so :func:`client_for` raises there instead (set by the fork rule of altarr._threads)
_used = False
_forked_after_use = False
#: obstore clients by URL and a digest of their configuration (the configuration holds credentials:
#: kept out of anything that could be shown): opening a dataset again reuses the client and its open
#: connections (a new client cost 3-6 ms here, plus a TCP and TLS handshake per connection)
_clients: dict[Any, Any] = {}
atexit.register(_clients.clear)  # dropped while the interpreter is whole, not during finalization
_lock = threading.Lock()  # guards _clients


@after_fork_in_child
def _after_fork() -> None:
    """altarr's fork rule (:mod:`altarr._threads`), for obstore: the child keeps none of the parent's
    clients, and refuses obstore altogether when the parent used it."""
    global _forked_after_use, _lock
    _forked_after_use = _forked_after_use or _used
    _clients.clear()
    _lock = threading.Lock()


def forked_after_use() -> bool:
    """Whether this process was forked after obstore was used (then every obstore call is refused)."""
    return _forked_after_use


def request_threads(limit: int) -> ThreadPoolExecutor:
    """The threads that send a batch's requests, at most ``limit`` at once (altarr's I/O threads,
    :func:`altarr._threads.io_threads`), each blocking in one of obstore's synchronous calls (``get``,
    ``put``, ``head``, ``delete``) with the GIL released.

    Not obstore's async calls on an event-loop thread, for two reasons:

    * speed: each async call's completion crosses into the loop thread (a read twice: headers, then
      body). The 8 whole shards (23 MB) of a 256^3 read over a loopback HTTP server at 20 ms per request
      took 37.1 ms as coroutines and 32.0 ms from threads (tensorstore 31.8 ms); 6 whole-shard PUTs
      (2.9 MB each) to moto 58.1 ms and 52.4 ms (``benchmarks/README.md``);
    * exit: obstore completes an async call from one of its Rust threads, which takes the GIL to call
      ``loop.call_soon_threadsafe`` and wakes the loop through a socket ``send`` that releases the GIL
      and takes it back. The caller can finish and the interpreter start finalizing before that
      ``send`` returns; a thread taking the GIL back then is ended with ``pthread_exit``, which cannot
      unwind through Rust frames, and the process aborted (SIGABRT) after all its work was done: 5 of
      60 short processes of 8 writing threads, one S3 soak writer in four. A blocking call returns on
      the Python thread that made it; no Rust thread ever enters Python."""
    return io_threads(limit)


def outcome(fn: Callable[..., Any], args: tuple) -> Any:
    """``fn(*args)``, or the exception it raised (a batch reports each request's failure in its place)."""
    try:
        return fn(*args)
    except Exception as err:
        return err


def fsspec_to_obstore_options(url: str, options: dict[str, Any]) -> dict[str, Any]:
    """obstore configuration from ``storage_options`` that may use fsspec's (s3fs, gcsfs) spellings.

    >>> fsspec_to_obstore_options("s3://b", {"key": "k", "secret": "s",
    ...                                      "client_kwargs": {"endpoint_url": "http://127.0.0.1:9000"}})
    {'access_key_id': 'k', 'secret_access_key': 's', 'endpoint': 'http://127.0.0.1:9000', 'client_options': {'allow_http': True}}
    """
    out: dict[str, Any] = {}
    opts = dict(options)
    renames = {"key": "access_key_id", "secret": "secret_access_key", "token": "session_token"}
    if url.startswith(("s3://", "s3a://")):
        for a, b in renames.items():
            if a in opts:
                out[b] = opts.pop(a)
        if opts.pop("anon", False):
            out["skip_signature"] = True
    elif opts.pop("anon", False) and url.startswith(("gs://", "gcs://", "az://", "abfs://")):
        out["skip_signature"] = True
    ck = dict(opts.pop("client_kwargs", None) or {})
    endpoint = opts.pop("endpoint_url", None) or ck.pop("endpoint_url", None)
    if endpoint:
        out["endpoint"] = endpoint
    if ck.get("region_name"):
        out["region"] = ck.pop("region_name")
    client = dict(opts.pop("client_options", None) or {})
    if (endpoint or "").startswith("http://") or url.startswith("http://"):
        client.setdefault("allow_http", True)
    out.update(opts)
    if client:
        out["client_options"] = client
    return out


def _check_not_forked(url: str) -> None:
    """Raise in a process forked after its parent used obstore (its Rust runtime's threads are not the
    child's: a request would hang); mark obstore used otherwise."""
    global _used
    if _forked_after_use:
        raise StoreError(
            "obstore cannot be used in a process forked after its parent used it (its Rust runtime "
            "does not survive fork): start workers with multiprocessing's 'spawn' or 'forkserver' "
            f"method (a pickled store rebuilds its client there); {url!r}"
        )
    _used = True


def client_for(url: str, config: dict[str, Any], own: Any = None) -> Any:
    """The obstore client of ``url`` with ``config``: shared by the stores of one URL and configuration in
    a process. ``memory://`` stores keep their own (``own``, once made): each is its own storage, as a
    test double should be. Raises :class:`~altarr.errors.StoreError` in a forked child (see
    :func:`_check_not_forked`) and for a URL or configuration obstore refuses."""
    _check_not_forked(url)
    shared = not url.startswith("memory:")
    if not shared and own is not None:
        return own
    ident = (url, hashlib.sha256(repr(sorted(config.items())).encode()).hexdigest())
    with _lock:
        client = _clients.get(ident) if shared else None
    if client is not None:
        return client
    from obstore.store import from_url

    try:
        client = from_url(url, **config)
    except Exception as e:
        raise StoreError(f"could not open {url!r} with obstore: {type(e).__name__}: {e}") from e
    if shared:
        with _lock:
            if len(_clients) > 64:
                _clients.clear()
            client = _clients.setdefault(ident, client)
    return client


def version_of(meta: Any) -> str | None:
    """The version of the object a ``GET`` or ``HEAD`` answer describes: its ETag (GCS: its generation,
    obstore's ``version``), ``None`` when the server sends neither. Not its ``Last-Modified``: a date of
    one-second resolution would call two writes within a second one version (and obstore reports the
    epoch when the header is missing)."""
    if not meta:
        return None
    for name in ("e_tag", "version"):
        if meta.get(name):
            return str(meta[name])
    return None


def size_of(meta: Any) -> int | None:
    """The object's total size in a ``GET`` or ``HEAD`` answer's metadata (not the length of the range
    read: obstore takes it from ``Content-Range`` for ranged reads)."""
    size = meta.get("size") if meta else None
    return None if size is None else int(size)


def put_version(meta: Any) -> dict[str, str] | str:
    """What a conditional PUT is conditioned on: obstore's ``UpdateVersion`` (ETag and, for GCS, the
    generation) of the object ``meta`` describes.

    >>> put_version({"e_tag": '"e1"', "version": None}), put_version({})
    ({'e_tag': '"e1"'}, '<absent>')
    """
    out = {name: str(meta[name]) for name in ("e_tag", "version") if meta.get(name)}
    return out or ABSENT


def is_conflict(e: BaseException) -> bool:
    """Whether a conditional PUT failed because the object changed: ``412 Precondition Failed`` for a
    version that is no longer current, the object's existence for ``"create"``."""
    from obstore.exceptions import AlreadyExistsError, PreconditionError

    return isinstance(e, PreconditionError | AlreadyExistsError)
