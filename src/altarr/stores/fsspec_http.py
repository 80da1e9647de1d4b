"""What fsspec's HTTP file system asks (the bytes as stored) and how far it reads a ``200`` answer to a
ranged ``GET``, for :class:`~altarr.stores.FsspecStore`."""

from __future__ import annotations

from typing import Any

import fsspec

from ..errors import StoreError
from ._util import NETWORK_COALESCE_GAP

__all__ = ["HTTP_PROTOCOLS", "RANGE_IGNORED_MARGIN", "bounded_answer", "identity_headers", "identity_options"]


#: Protocols whose requests ask for the bytes as stored and inflate nothing (aiohttp inflates whole
#: bodies by default: 1 MB of answer became 2 GB)
HTTP_PROTOCOLS = frozenset({"http", "https"})


#: How much longer than the range asked a ``200`` answer to a ranged ``GET`` may be and still be read
RANGE_IGNORED_MARGIN = NETWORK_COALESCE_GAP


def _extra_bytes(asked: str, length: int | None) -> int | None:
    """How many bytes longer than the ``Range`` header ``asked`` a whole answer of ``length`` bytes is;
    ``None`` where unknown or the range could not be cut out of it (from an offset to the end)."""
    first, sep, last = asked.strip().removeprefix("bytes=").partition("-")
    if length is None or not sep or not (first + last).isdigit():
        return None
    if not first:  # a suffix
        return max(length - int(last), 0)
    if not last:  # from an offset to the end: the whole object only from offset 0
        return 0 if int(first) == 0 else None
    return max(length - (int(last) + 1 - int(first)), 0)


async def bounded_answer(response: Any) -> None:
    """aiohttp's ``raise_for_status`` hook: refuse, before its body is read, a ``200`` to a ranged ``GET``
    longer than the range by more than :data:`RANGE_IGNORED_MARGIN` (or of unannounced length)."""
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
    """``options`` for ``url_to_fs(url, **options)`` with every HTTP file system of ``url`` (chained ones
    under their protocol's name) asking for identity and inflating nothing."""
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
