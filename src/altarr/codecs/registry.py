"""The codec registry: codec classes register by ``name`` (:func:`register_codec`) in a namespace (the
default one for Zarr v3 names, ``"n5"`` for the N5 compressions), and :func:`codec_from_json` builds a
codec from a Zarr v3 description (``{"name", "configuration"}`` or a bare name). A codec is never
skipped: an unknown one raises :class:`~altarr.errors.UnknownCodecError`, ``must_understand`` or not.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, TypeVar

from ..errors import AltarrError, MetadataError, UnknownCodecError
from .base import Codec

__all__ = ["register_codec", "codec_from_json", "get_codec_class", "registered_codecs"]

C = TypeVar("C", bound=type[Codec])

_REGISTRY: dict[str, type[Codec]] = {}  # the Zarr v3 names (namespace "")
_NAMESPACES: dict[str, dict[str, type[Codec]]] = {"": _REGISTRY}
_LOCK = threading.Lock()
_ALLOWED_KEYS = frozenset({"name", "configuration", "must_understand"})


def register_codec(cls: C, *, replace: bool = False, namespace: str = "") -> C:
    """Register a codec class under ``cls.name`` in ``namespace`` (``""``: Zarr v3 names; ``"n5"``: N5
    compressions); usable as a class decorator.

    Registering a *different* class under a name that is taken raises ``MetadataError`` unless
    ``replace=True`` (a silent override would change how existing data decodes).

    >>> from altarr.codecs import register_codec, Crc32cCodec
    >>> register_codec(Crc32cCodec) is Crc32cCodec
    True
    """
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise MetadataError(f"codec class {cls!r} has no string 'name'")
    with _LOCK:
        table = _NAMESPACES.setdefault(namespace, {})
        old = table.get(name)
        if old is not None and old is not cls and not replace:
            raise MetadataError(
                f"codec name {name!r} is already registered by {old.__module__}.{old.__qualname__}; "
                f"pass replace=True to override it with {cls.__module__}.{cls.__qualname__}",
                codec=name,
            )
        table[name] = cls
    return cls


def get_codec_class(name: str, *, namespace: str = "") -> type[Codec]:
    """The class registered under ``name`` in ``namespace``; ``UnknownCodecError`` naming it if there is
    none.

    >>> get_codec_class("bytes").__name__
    'BytesCodec'
    >>> get_codec_class("zstd", namespace="n5").__name__
    'ZstdCompression'
    """
    cls = _NAMESPACES.get(namespace, {}).get(name)
    if cls is None:
        known = sorted(_NAMESPACES.get(namespace, {}))
        raise UnknownCodecError(
            f"unknown codec {name!r}: data encoded with it cannot be decoded (known codecs: {known})",
            codec=name,
        )
    return cls


def registered_codecs(namespace: str = "") -> dict[str, type[Codec]]:
    """A copy of the registry of ``namespace``, name -> class.

    >>> sorted(registered_codecs("n5"))
    ['blosc', 'bzip2', 'gzip', 'lz4', 'raw', 'xz', 'zstd']
    """
    return dict(_NAMESPACES.get(namespace, {}))


def codec_from_json(obj: Any) -> Codec:
    """Build a codec from its Zarr v3 JSON description (object or short-hand name).

    A :class:`Codec` instance is returned unchanged. Unknown names raise
    :class:`~altarr.errors.UnknownCodecError` (whatever ``must_understand`` says); malformed descriptions
    and bad configuration values raise :class:`~altarr.errors.MetadataError` naming the codec and the field.

    >>> codec_from_json({"name": "bytes", "configuration": {"endian": "little"}})
    BytesCodec({'endian': 'little'})
    """
    if isinstance(obj, Codec):
        return obj
    if isinstance(obj, str):
        name, configuration = obj, None
    elif isinstance(obj, Mapping):
        given = obj.get("name")
        if not isinstance(given, str):
            raise MetadataError(f"a codec description needs a string 'name', got {dict(obj)!r}")
        name = given
        extra = sorted(str(k) for k in obj if k not in _ALLOWED_KEYS)
        if extra:
            raise MetadataError(
                f"codec {name!r}: unknown field(s) {extra} in the codec description", codec=name
            )
        must = obj.get("must_understand", True)
        if not isinstance(must, bool):
            raise MetadataError(
                f"codec {name!r}: 'must_understand' must be a boolean, got {must!r}", codec=name
            )
        configuration = obj.get("configuration")
        if configuration is not None and not isinstance(configuration, Mapping):
            raise MetadataError(
                f"codec {name!r}: 'configuration' must be an object, got {configuration!r}", codec=name
            )
    else:
        raise MetadataError(f"a codec description is an object or a name string, got {obj!r}")
    cls = get_codec_class(name)
    try:
        return cls.from_config(dict(configuration) if configuration is not None else None)
    except AltarrError:
        raise
    except (TypeError, ValueError, KeyError) as e:
        raise MetadataError(f"codec {name!r}: bad configuration {configuration!r}: {e}", codec=name) from e
