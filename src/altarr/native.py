"""Whether altarr's native kernel (the C extension ``altarr._native``, linked against libzstd and
c-blosc 1.x) is active in this process and, if not, why; and its switch: ``ALTARR_NATIVE=0`` (read at
import) or :func:`set_enabled` / :func:`use_native` (``docs/engine.md``, "The native kernel"). Also which
python-zstandard backend zstd writes compress with (``zstandard``).

Example:
    >>> import altarr
    >>> status = altarr.native_status()
    >>> status.active == (status.reason == "")
    True
    >>> with use_native(False):
    ...     str(native_status())
    'native kernel inactive: switched off by altarr.native.set_enabled(False)'
"""

from __future__ import annotations

import functools
import importlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["ENV", "NativeStatus", "native_status", "set_enabled", "use_native", "ext", "loaded"]

ENV = "ALTARR_NATIVE"

#: Where ``setup.py`` records whether it built the extension and why not
BUILD_RECORD = Path(__file__).with_name("_native_build.json")

_env_value = os.environ.get(ENV, "1")
_enabled = _env_value.strip().lower() not in ("0", "false", "no", "off")
_off_by = "" if _enabled else f"{ENV}={_env_value}"

#: The extension while the native path is active, else ``None``
ext: Any = None
#: The kernel's codec numbers (``_native.c``: ``CODEC_ZSTD``, ``CODEC_BLOSC``)
CODEC_ZSTD, CODEC_BLOSC = 1, 2


@dataclass(frozen=True)
class NativeStatus:
    """The native path's state: ``active``, else the ``reason``; ``libraries``' versions when loaded;
    ``zstd``, the route of zstd writes (python-zstandard's cffi backend, else its C extension and why)."""

    active: bool
    reason: str = ""
    libraries: dict[str, str] = field(default_factory=dict)
    zstd: str = ""

    def __str__(self) -> str:
        if self.active:
            return "native kernel active (" + ", ".join(f"{k} {v}" for k, v in self.libraries.items()) + ")"
        return f"native kernel inactive: {self.reason}"


try:  # python-zstandard's cffi backend: its build of libzstd compresses faster here (benchmarks/README.md)
    zstandard: ModuleType = importlib.import_module("zstandard.backend_cffi")
    _route = "cffi backend"
except ImportError as e:  # no cffi (or PyPy): its C extension
    zstandard = importlib.import_module("zstandard")
    _route = f"C extension (its cffi backend does not load: {e})"
_ZSTD = f"zstd writes: python-zstandard's {_route}, libzstd {'.'.join(map(str, zstandard.ZSTD_VERSION))}"


@functools.cache
def _load() -> tuple[ModuleType | None, str]:
    """The extension module, or ``None`` and why it does not load (imported once)."""
    try:
        from . import _native
    except ImportError as e:
        return None, str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return _native, ""


def _not_built() -> str:
    try:
        record = json.loads(BUILD_RECORD.read_text())
    except (OSError, ValueError):
        record = None
    if not isinstance(record, dict):
        return (
            "not built: no build record beside the package (a source tree never built: "
            "`pip install -e .` or `python setup.py build_ext --inplace` builds it)"
        )
    if not record.get("built"):
        return f"not built: {record.get('reason') or 'no reason recorded'}"
    return f"built, but it does not load: {_load()[1]}"


def loaded() -> ModuleType | None:
    """The extension module when it is built and loads, switched on or not (never loaded while
    ``ALTARR_NATIVE=0`` and never switched on)."""
    return _load()[0] if (_enabled or _load.cache_info().currsize) else None


def set_enabled(flag: bool) -> bool:
    """Switch the native path on or off for the whole process; returns the previous setting.

    >>> previous = set_enabled(False); native_status().active
    False
    >>> _ = set_enabled(previous)
    """
    global _enabled, _off_by, ext
    previous = _enabled
    _enabled = bool(flag)
    _off_by = "" if _enabled else "altarr.native.set_enabled(False)"
    ext = _load()[0] if _enabled else None
    return previous


@contextmanager
def use_native(flag: bool) -> Iterator[None]:
    """:func:`set_enabled` for the duration of a ``with`` block."""
    previous = set_enabled(flag)
    try:
        yield
    finally:
        set_enabled(previous)


def native_status() -> NativeStatus:
    """Whether the native kernel is active and, if not, why (not built, not loadable, switched off), and
    the route of zstd writes.

    >>> import altarr
    >>> isinstance(altarr.native_status().active, bool)
    True
    """
    module = loaded()
    libraries = {}
    if module is not None:
        libraries = {"libzstd": module.ZSTD_VERSION, "c-blosc": module.BLOSC_VERSION}
    if not _enabled:
        return NativeStatus(False, f"switched off by {_off_by}", libraries, _ZSTD)
    if module is None:
        return NativeStatus(False, _not_built(), zstd=_ZSTD)
    return NativeStatus(True, "", libraries, _ZSTD)


if _enabled:
    set_enabled(True)
