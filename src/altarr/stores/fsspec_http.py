"""What fsspec's HTTP file system asks and what it does with an answer, for
:class:`~altarr.stores.FsspecStore` (obstore reads ``http(s)://`` URLs; fsspec's HTTP file system serves
chained URLs such as ``simplecache::https://...`` and file systems given as instances): every request
asks for the bytes as stored, and a ``200`` answer to a ranged ``GET`` (a server that ignores ``Range``)
is read only within a bound.

Example:
    >>> identity_options("https://h/x", {})["headers"]
    {'Accept-Encoding': 'identity'}
"""

from __future__ import annotations

from typing import Any

import fsspec

from ..errors import StoreError
from ._util import NETWORK_COALESCE_GAP

__all__ = ["HTTP_PROTOCOLS", "RANGE_IGNORED_MARGIN", "bounded_answer", "identity_headers", "identity_options"]


#: What every request of fsspec's HTTP file system asks and does with an answer: the bytes as stored
#: (``Accept-Encoding: identity``), and a body a server compresses anyway handed over as sent, not
#: inflated (aiohttp asks for ``gzip, deflate`` and inflates the whole body by default: 1 MB of answer
#: became 2 GB). A compressed answer then fails as a corrupt chunk or document, at its own size.
HTTP_PROTOCOLS = frozenset({"http", "https"})


#: A ``200`` answer (the whole object) to a ranged ``GET`` over HTTP is read when it is at most this many
#: bytes longer than the range asked: an object on a server that ignores ``Range`` stays readable where
#: it is no longer than a coalesced read may be (unwanted bytes up to the network's coalescing gap), and
#: the range is cut out of it here; a longer one is refused before its body is read.
RANGE_IGNORED_MARGIN = NETWORK_COALESCE_GAP


def _extra_bytes(asked: str, length: int | None) -> int | None:
    """How many bytes longer than the range ``asked`` (a ``Range`` header as fsspec writes it:
    ``bytes=a-b``, ``bytes=a-``, ``bytes=-n``) a whole-object answer of ``length`` bytes is; ``None``
    where that is not known (no announced length, a header of another form) or the range's bytes
    could not be cut out of it (from an offset to the end: the answer's length cannot tell a whole
    object from the range, see :meth:`FsspecStore._cut`).

    >>> _extra_bytes("bytes=0-9", 100), _extra_bytes("bytes=-16", 10), _extra_bytes("bytes=5-", 100)
    (90, 0, None)
    """
    first, sep, last = asked.strip().removeprefix("bytes=").partition("-")
    if length is None or not sep or not (first + last).isdigit():
        return None
    if not first:  # a suffix
        return max(length - int(last), 0)
    if not last:  # from an offset to the end: the whole object only from offset 0
        return 0 if int(first) == 0 else None
    return max(length - (int(last) + 1 - int(first)), 0)


async def bounded_answer(response: Any) -> None:
    """aiohttp's status hook (``raise_for_status``) of each read of fsspec's HTTP file system, called
    with the answer's head before its body is read: a ``200`` to a ranged ``GET`` (a server that ignores
    ``Range`` sends the whole object) whose announced length exceeds the range asked by more than
    :data:`RANGE_IGNORED_MARGIN`, or is not announced, is refused with a
    :class:`~altarr.errors.StoreError` naming the URL; the connection is closed unread (fsspec's
    ``cat_file`` would otherwise read the whole body into memory, however long)."""
    asked = response.request_info.headers.get("Range")
    if response.status != 200 or not asked:
        return
    extra = _extra_bytes(asked, response.content_length)
    if extra is not None and extra <= RANGE_IGNORED_MARGIN:
        return
    response.close()
    length = (
        "of unannounced length" if response.content_length is None else f"of {response.content_length} bytes"
    )
    raise StoreError(
        f"{response.url} answered the ranged GET {asked!r} with the whole object ({length}): the "
        "server ignores Range; refused before reading its body"
    )


def identity_headers(headers: Any) -> dict[str, Any]:
    return {**dict(headers or {}), "Accept-Encoding": "identity"}


def identity_options(url: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` for ``url_to_fs(url, **options)`` with every HTTP file system of ``url`` (chained
    ones too: ``simplecache::https://...``) asking for identity and inflating nothing (see
    :data:`HTTP_PROTOCOLS`). fsspec gives the outermost file system the options left over, an inner one
    those under its protocol's name.

    >>> identity_options("simplecache::https://h/x", {"https": {"headers": {"X": "1"}}})["https"]
    {'headers': {'X': '1', 'Accept-Encoding': 'identity'}, 'client_kwargs': {'auto_decompress': False}}
    """
    out = dict(options)
    for i, bit in enumerate(url.split("::")):
        protocol = fsspec.core.split_protocol(bit)[0]
        if protocol not in HTTP_PROTOCOLS:
            continue
        target = out if i == 0 else dict(out.get(protocol) or {})
        target["headers"] = identity_headers(target.get("headers"))
        target["client_kwargs"] = {**dict(target.get("client_kwargs") or {}), "auto_decompress": False}
        if i:
            out[protocol] = target
    return out
