"""One codec vocabulary: every way a user names a compressor (a ``NAME[:LEVEL]`` string, a Zarr v3,
numcodecs or N5 dict, a codec object, a list of those; docs/zarr-python.md, "Codecs: one vocabulary"),
read into a numcodecs config, checked, and written in the format's own terms. A bad name or option
raises an error whose message starts with the argument, before anything is written.

Example:
    >>> import numpy as np
    >>> compressor_argument("zstd:5", "zarr3", np.dtype("u2"))
    [{'name': 'zstd', 'configuration': {'level': 5, 'checksum': False}}]
    >>> compressor_argument({"name": "gzip", "configuration": {"level": 2}}, "zarr2", np.dtype("u2"))
    {'id': 'gzip', 'level': 2}
    >>> compressor_argument("blosc:zstd:7", "n5", np.dtype("u2"))
    {'type': 'blosc', 'cname': 'zstd', 'clevel': 7, 'shuffle': 1, 'blocksize': 0}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numcodecs import blosc

from ..errors import AltarrError, MetadataError, UnknownCodecError, UnsupportedError
from .base import Codec
from .n5_compressions import N5Compression, compression_from_n5_json
from .registry import codec_from_json
from .zarr2 import numcodec_from_config

__all__ = ["compressor_argument", "filters_argument", "check_serializer", "to_numcodecs_config", "NAMES"]

#: The compressor names of the vocabulary: the numcodecs id, its level parameter, the level's range and
#: its default when the string gives none (numcodecs' own, except zstd 3 and gzip/zlib 5, as altarr wrote
#: before: the speed/ratio points of zstd's and zlib's command-line tools).
NAMES: dict[str, tuple[str, int, int, int]] = {
    "zstd": ("level", -131072, 22, 3),
    "gzip": ("level", 0, 9, 5),
    "zlib": ("level", 0, 9, 5),
    "blosc": ("clevel", 0, 9, 5),
    "bz2": ("level", 1, 9, 9),
    "lzma": ("preset", 0, 9, 6),
    "lz4": ("acceleration", 1, 65537, 1),
}
_ALIASES = {"bzip2": "bz2", "xz": "lzma"}
_NONE = ("none", "raw")
_SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}
_GRAMMAR = "NAME[:LEVEL] (zstd, gzip, zlib, bz2, lzma, lz4), blosc[:CNAME][:LEVEL] or none"
#: What each format writes, in the words of its readers (zarr-python, tensorstore, Java N5).
_WRITES = {
    "zarr3": ("zstd", "gzip", "blosc", "crc32c"),
    "zarr2": ("zstd", "gzip", "zlib", "blosc", "bz2", "lzma", "lz4", "crc32c"),
    "n5": ("zstd", "gzip", "zlib", "blosc", "bz2", "lzma", "lz4"),
}


def _fail(argument: str, value: Any, why: str, cls: type[AltarrError] = MetadataError) -> AltarrError:
    shown = f"{argument} {value!r}" if argument.startswith("-") else f"{argument}={value!r}"
    return cls(f"{shown}: {why}", codec=str(value) if isinstance(value, str) else None)


def _from_string(text: str, argument: str) -> dict[str, Any] | None:
    parts = text.strip().lower().split(":")
    name, args = _ALIASES.get(parts[0], parts[0]), parts[1:]
    if name in _NONE and not args:
        return None
    if name not in NAMES:
        raise _fail(argument, text, f"unknown codec {parts[0]!r}; use {_GRAMMAR}", UnknownCodecError)
    config: dict[str, Any] = {"id": name}  # what is not said is the format's default (see _render)
    if name == "blosc" and args and not args[0].lstrip("-").isdigit():
        config["cname"], args = args[0], args[1:]
    if len(args) > 1 or (args and not args[0].lstrip("-").isdigit()):
        raise _fail(argument, text, f"not of the form {_GRAMMAR}", UnknownCodecError)
    if args:
        config[NAMES[name][0]] = int(args[0])
    return config


def _from_zarr3(obj: Mapping[str, Any], argument: str) -> dict[str, Any]:
    name = obj.get("name")
    conf = dict(obj.get("configuration") or {})
    if not isinstance(name, str):
        raise _fail(argument, dict(obj), "a codec description needs a string 'name'")
    if name.startswith("numcodecs."):  # zarr-python's wrappers of numcodecs codecs
        return {"id": name.removeprefix("numcodecs."), **conf}
    if name == "blosc":
        shuffle = conf.get("shuffle", "noshuffle")
        return {
            "id": "blosc",
            "cname": conf.get("cname", "lz4"),
            "clevel": conf.get("clevel", 5),
            "shuffle": _SHUFFLE.get(shuffle, shuffle),
            "blocksize": conf.get("blocksize", 0),
        }
    if name == "zstd":
        return {"id": "zstd", "level": conf.get("level", 0), "checksum": conf.get("checksum", False)}
    return {"id": name, **conf}


def _from_n5(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    kind, conf = obj.get("type"), {k: v for k, v in obj.items() if k != "type"}
    if kind == "raw":
        return None
    if kind == "gzip":
        return {"id": "zlib" if conf.get("useZlib") else "gzip", "level": conf.get("level", 6)}
    if kind == "bzip2":
        return {"id": "bz2", "level": conf.get("blockSize", 9)}
    if kind == "xz":
        return {"id": "lzma", "preset": conf.get("preset", 6)}
    if kind == "lz4":
        return {"id": "lz4", "acceleration": 1}
    if kind == "blosc":
        conf.pop("nthreads", None)
    return {"id": kind, **conf}


def to_numcodecs_config(value: Any, argument: str = "compressor") -> dict[str, Any] | None:
    """The neutral description of one compressor in any accepted form: a numcodecs config dict, or
    ``None`` for no compression.

    >>> import numcodecs, zarr.codecs
    >>> to_numcodecs_config(zarr.codecs.BloscCodec(cname="zstd", clevel=3, shuffle="bitshuffle"))
    {'id': 'blosc', 'cname': 'zstd', 'clevel': 3, 'shuffle': 2, 'blocksize': 0}
    >>> to_numcodecs_config(numcodecs.GZip(level=2)), to_numcodecs_config({"type": "xz", "preset": 4})
    ({'id': 'gzip', 'level': 2}, {'id': 'lzma', 'preset': 4})
    """
    if value is None:
        return None
    if isinstance(value, str):
        return _from_string(value, argument)
    if isinstance(value, N5Compression):
        return _from_n5(value.to_n5_json())
    if isinstance(value, Codec):
        return _from_zarr3(value.to_json(), argument)
    if callable(getattr(value, "get_config", None)) and hasattr(value, "codec_id"):  # numcodecs
        return dict(value.get_config())
    if callable(getattr(value, "to_dict", None)):  # zarr.codecs
        return _from_zarr3(value.to_dict(), argument)
    if isinstance(value, Mapping):
        if isinstance(value.get("id"), str):
            return dict(value)
        if isinstance(value.get("type"), str):
            return _from_n5(value)
        return _from_zarr3(value, argument)
    raise _fail(
        argument, value, "a compressor is a name string, a codec dict, a numcodecs or zarr.codecs codec"
    )


def _check(config: dict[str, Any], fmt: str, argument: str, shown: Any) -> None:
    """Refuse a name ``fmt`` does not write and a level outside its range, naming ``argument``."""
    name = config["id"]
    if name not in _WRITES[fmt]:
        title = {"zarr3": "Zarr v3", "zarr2": "Zarr v2", "n5": "N5"}[fmt]
        raise _fail(
            argument,
            shown,
            f"{title} has no {name!r} compressor its readers decode; use one of {list(_WRITES[fmt])}",
            UnknownCodecError,
        )
    if name in NAMES:
        key, low, high, _ = NAMES[name]
        level = config.get(key)
        if level is not None and (isinstance(level, bool) or not isinstance(level, int)):
            raise _fail(argument, shown, f"{name} {key} must be a whole number, got {level!r}")
        if level is not None and not low <= level <= high:
            raise _fail(argument, shown, f"{name} {key} {level} is outside {low}..{high}")
    if name == "blosc":
        built = blosc.list_compressors()
        if config.get("cname", "lz4") not in built:
            raise _fail(
                argument,
                shown,
                f"blosc has no {config.get('cname')!r} compressor here (this blosc has {built})",
                UnknownCodecError,
            )
        if config.get("shuffle", 1) not in (-1, 0, 1, 2):
            raise _fail(argument, shown, f"blosc shuffle must be one of {list(_SHUFFLE)} or 0..2")


def _render(config: dict[str, Any], fmt: str, dtype: np.dtype) -> Any:
    """``config`` (checked) in ``fmt``'s own terms; what it leaves out is the format's default: the levels
    of :data:`NAMES` and blosc lz4 with byte shuffle for Zarr, Java N5's own defaults for N5."""
    name = config["id"]
    if fmt == "n5":
        return _render_n5(config)
    if name == "blosc":
        config = {"cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0, **config}
    elif name in NAMES:
        key, _, _, default = NAMES[name]
        config = {**config, key: config.get(key, default)}
    if fmt == "zarr3":
        if name == "blosc":
            shuffle = {v: k for k, v in _SHUFFLE.items()}.get(config["shuffle"], "shuffle")
            conf = {"cname": config["cname"], "clevel": config["clevel"], "shuffle": shuffle}
            conf.update(typesize=dtype.itemsize, blocksize=config["blocksize"])
            return {"name": "blosc", "configuration": conf}
        level = None if name == "crc32c" else {"level": config["level"]}  # zstd, gzip: as their codecs write
        return codec_from_json({"name": name, "configuration": level}).to_json()
    return config


def _render_n5(config: dict[str, Any]) -> dict[str, Any]:
    """An N5 ``compression`` object; the fields not given keep Java N5's defaults (gzip level 6...)."""
    name = config["id"]
    given = {k: v for k, v in config.items() if k != "id"}
    if name in ("gzip", "zlib"):
        out: dict[str, Any] = {"type": "gzip", "useZlib": name == "zlib"}
        return {**out, **({"level": given["level"]} if "level" in given else {})}
    if name == "bz2":
        return {"type": "bzip2", **({"blockSize": given["level"]} if "level" in given else {})}
    if name == "lzma":
        return {"type": "xz", **({"preset": given["preset"]} if "preset" in given else {})}
    if name == "lz4":
        return {"type": "lz4"}
    if name == "blosc" and given:  # named parts: the rest as the Zarr formats take it (byte shuffle)
        keep = ("cname", "clevel", "shuffle", "blocksize")
        full = {"cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0, **given}
        return {"type": "blosc", **{k: full[k] for k in keep}}
    if name == "blosc":
        return {"type": "blosc"}
    return {"type": "zstd", **({"level": given["level"]} if "level" in given else {})}


def _native(value: Any, fmt: str) -> bool:
    """Whether ``value`` is already in ``fmt``'s own terms (kept as given: every field survives)."""
    if fmt == "zarr3":
        return isinstance(value, Codec) or (isinstance(value, Mapping) and isinstance(value.get("name"), str))
    return isinstance(value, Mapping) and isinstance(value.get("id" if fmt == "zarr2" else "type"), str)


def _parse_native(item: Any, fmt: str, argument: str) -> None:
    """Parse ``item`` as ``fmt`` will when it writes it; an error names ``argument``."""
    try:
        if fmt == "zarr3":
            codec_from_json(item)
        elif fmt == "zarr2":
            numcodec_from_config(dict(item))
        else:
            compression_from_n5_json(dict(item))
    except AltarrError as e:
        raise _fail(argument, item, e.message, type(e)) from e


def compressor_argument(
    value: Any, fmt: str, dtype: Any, *, argument: str = "compressor", default: Any = "zstd"
) -> Any:
    """The ``compressor`` argument of ``create_array`` for format ``fmt`` (``"zarr3"``, ``"zarr2"``,
    ``"n5"``) from any form of the vocabulary: Zarr v3 codec JSON objects (a list) for Zarr v3, a numcodecs
    config (or ``None``) for Zarr v2, an N5 compression object (or ``None``) for N5. ``"auto"`` is
    ``default``. Errors start with ``argument`` (``"compressor"``, ``"compressors"``, ``"--codec"``).

    >>> import numcodecs
    >>> compressor_argument(numcodecs.Zstd(level=5), "zarr3", "f4")
    [{'name': 'zstd', 'configuration': {'level': 5, 'checksum': False}}]
    >>> compressor_argument("blosc:snappy", "zarr2", "f4")
    Traceback (most recent call last):
    altarr.errors.UnknownCodecError: compressor='blosc:snappy': blosc has no 'snappy' compressor here (this blosc has ['blosclz', 'lz4', 'lz4hc', 'zlib', 'zstd']) [codec='blosc:snappy']
    """
    if fmt not in _WRITES:
        return value  # a format registered by a user: its own create_array reads its own terms
    dt = np.dtype(dtype)
    if isinstance(value, str) and value == "auto":
        value = default
    items = list(value) if isinstance(value, Sequence) and not isinstance(value, str | Mapping) else [value]
    rendered: list[Any] = []
    for item in items:
        config = to_numcodecs_config(item, argument)
        if config is None:
            continue
        if _native(item, fmt):  # kept as given: the format's own parser judges it (a registered codec too)
            if config["id"] in NAMES:
                _check(config, fmt, argument, item)
            _parse_native(item, fmt, argument)
            rendered.append(item)
        else:
            _check(config, fmt, argument, item)
            rendered.append(_render(config, fmt, dt))
    if fmt == "zarr3":
        return rendered
    if len(rendered) > 1:
        raise _fail(argument, value, f"{fmt} arrays take one compressor, got {len(rendered)}")
    return rendered[0] if rendered else None


def filters_argument(value: Any, fmt: str, *, argument: str = "filters") -> list[dict[str, Any]] | None:
    """zarr-python's ``filters=`` as the format takes them: numcodecs configs for Zarr v2 (``Delta``,
    ``FixedScaleOffset``, ... as objects or dicts); no filters (``None``, ``()``, ``"auto"``) elsewhere.

    >>> import numcodecs
    >>> filters_argument([numcodecs.Delta(dtype="i4")], "zarr2")
    [{'id': 'delta', 'dtype': '<i4', 'astype': '<i4'}]
    """
    if value is None or (isinstance(value, str) and value == "auto"):
        return None
    items = [value] if isinstance(value, Mapping) or not isinstance(value, Sequence) else list(value)
    if not items:
        return None
    if fmt != "zarr2":
        raise _fail(argument, value, "only Zarr v2 arrays take filters here", UnsupportedError)
    configs = []
    for item in items:
        config = to_numcodecs_config(item, argument)
        if config is None:
            raise _fail(argument, item, "a filter cannot be 'none'")
        configs.append(config)
    return configs


def check_serializer(value: Any, fmt: str, *, argument: str = "serializer") -> None:
    """zarr-python's ``serializer=``: altarr writes Zarr v3 chunks with the little-endian ``bytes`` codec
    (as zarr-python does by default), so ``"auto"``, ``"bytes"`` and a little-endian (or endian-less)
    ``BytesCodec`` are accepted; anything else is refused, naming the argument.

    >>> import zarr.codecs
    >>> check_serializer(zarr.codecs.BytesCodec(), "zarr3")
    """
    if value is None or (isinstance(value, str) and value in ("auto", "bytes")):
        return
    desc = value.to_dict() if callable(getattr(value, "to_dict", None)) else value
    if hasattr(desc, "to_json"):
        desc = desc.to_json()
    if fmt == "zarr3" and isinstance(desc, Mapping) and desc.get("name") == "bytes":
        if (desc.get("configuration") or {}).get("endian", "little") in ("little", None):
            return
    raise _fail(
        argument, value, "altarr writes chunks with the little-endian 'bytes' codec only", UnsupportedError
    )
