"""Store keys: ``/``-separated, relative, checked before any use (not public; see :func:`normalize_key`)."""

from __future__ import annotations

from ..errors import InvalidKeyError

__all__ = ["normalize_key"]


def normalize_key(key: str) -> str:
    """Check and normalize a store key: ``/``-separated, relative, no ``..``/``.`` segments.

    Raises :class:`~altarr.errors.InvalidKeyError` for a key that would escape the store's root.

    >>> normalize_key("a//b/")
    'a/b'
    """
    if not isinstance(key, str):
        raise InvalidKeyError(f"store keys are strings, got {type(key).__name__}", key=repr(key))
    if "\\" in key or "\x00" in key:
        raise InvalidKeyError("store keys may not contain backslashes or NUL bytes", key=key)
    if key.startswith("/"):
        raise InvalidKeyError("store keys are relative to the store root; absolute keys are refused", key=key)
    parts = [p for p in key.split("/") if p != ""]
    for p in parts:
        if p in (".", ".."):
            raise InvalidKeyError("store keys may not contain '.' or '..' segments", key=key)
    return "/".join(parts)
