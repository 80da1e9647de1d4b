"""The obstore side of :class:`~altarr.stores.ObstoreStore`: its configuration from storage options, one
client per URL and configuration in a process, the threads that send requests, and what obstore's
answers and exceptions mean.
"""

from __future__ import annotations

import atexit
import hashlib
import threading
from collections.abc import Callable
from typing import Any

from .._threads import after_fork_in_child
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
    "size_of",
    "version_of",
]

#: Requests of one batch in flight at once (object stores serve many; HTTP/1.1 servers one per socket).
DEFAULT_CONCURRENCY = 64

#: The recorded version of an object that did not exist when it was read (written with ``"create"``).
ABSENT = "<absent>"

#: Whether this process made an obstore client, and whether it was forked after an ancestor did (obstore's
#: Rust runtime does not survive fork(): :func:`client_for` raises there instead of hanging)
_used = False
_forked_after_use = False
#: obstore clients by URL and a digest of their configuration (which holds credentials), reused with
#: their open connections
_clients: dict[Any, Any] = {}
atexit.register(_clients.clear)  # dropped while the interpreter is whole, not during finalization
_lock = threading.Lock()  # guards _clients


@after_fork_in_child
def _after_fork() -> None:
    """The child refuses obstore when the parent used it, and keeps the parent's clients, unused: freeing
    one there would run obstore's Rust destructors with the runtime's threads gone."""
    global _forked_after_use, _lock
    _forked_after_use = _forked_after_use or _used
    _lock = threading.Lock()


def forked_after_use() -> bool:
    return _forked_after_use


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
    """Raise in a process forked after its parent used obstore; mark obstore used otherwise."""
    global _used
    if _forked_after_use:
        raise StoreError(
            "obstore cannot be used in a process forked after its parent used it (its Rust runtime "
            "does not survive fork): start workers with multiprocessing's 'spawn' or 'forkserver' "
            f"method (a pickled store rebuilds its client there); {url!r}"
        )
    _used = True


def client_for(url: str, config: dict[str, Any], own: Any = None) -> Any:
    """The obstore client of ``url`` with ``config``, shared in a process (a ``memory://`` store keeps its
    ``own``: each is its own storage); :class:`~altarr.errors.StoreError` for what obstore refuses."""
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
    """The ETag (GCS: generation) of a ``GET``/``HEAD`` answer's object; never ``Last-Modified``, whose
    one-second resolution cannot tell two writes apart."""
    if not meta:
        return None
    for name in ("e_tag", "version"):
        if meta.get(name):
            return str(meta[name])
    return None


def size_of(meta: Any) -> int | None:
    """The object's total size in a ``GET`` or ``HEAD`` answer's metadata (not the range's length)."""
    size = meta.get("size") if meta else None
    return None if size is None else int(size)


def put_version(meta: Any) -> dict[str, str] | str:
    """What a conditional PUT is conditioned on: obstore's ``UpdateVersion`` of ``meta``'s object.

    >>> put_version({"e_tag": '"e1"', "version": None}), put_version({})
    ({'e_tag': '"e1"'}, '<absent>')
    """
    out = {name: str(meta[name]) for name in ("e_tag", "version") if meta.get(name)}
    return out or ABSENT


def is_conflict(e: BaseException) -> bool:
    """Whether a conditional PUT failed because the object changed (412, or it exists for a create)."""
    from obstore.exceptions import AlreadyExistsError, PreconditionError

    return isinstance(e, PreconditionError | AlreadyExistsError)
