"""Blosc 1 through its reentrant ``*_ctx`` calls, in the c-blosc library that numcodecs already loaded.

Why not numcodecs' ``Blosc`` wrapper on the hot path: with ``numcodecs.blosc.use_threads`` at its default
(``None``), a call made *from the main thread* goes through blosc's global context, which means one
process-wide lock and blosc's own internal thread pool. altarr's pool runs chunk tasks on the calling
thread as well as on its workers, so half of the chunks would queue on that lock while blosc's threads
competed with ours for the cores. Measured on this project's 2-core machine, one 64^3 uint16 chunk
(lz4, level 5, shuffle): numcodecs decodes it in 68-85 us on the main thread and 31 us on another thread;
``blosc_decompress_ctx(..., nthreads=1)`` decodes it in 26 us from any thread, straight into the
caller's buffer. Changing ``numcodecs.blosc.use_threads`` instead would change a process-wide setting
that belongs to the user.

The ``*_ctx`` functions take their thread count per call and touch no global state; calls through
:mod:`ctypes` release the GIL. The frames are the same bytes numcodecs writes (blosc 1's output does not
depend on the thread count); ``tests/codecs/test_blosc_ctx.py`` checks both directions against numcodecs.

This path is used only when the extension module exports the symbols and reports a 1.x version (the
frame format of Zarr's and N5's ``blosc``); otherwise :data:`AVAILABLE` is ``False`` and callers keep
using numcodecs. A frame this module does not accept (bad header, size mismatch) is left to numcodecs,
whose error message callers report.

Example:
    >>> import numpy as np
    >>> a = np.arange(1000, dtype="<u2")
    >>> frame = compress(a, cname="lz4", clevel=5, shuffle=1, typesize=2) if AVAILABLE else None
    >>> out = np.empty(a.nbytes, np.uint8)
    >>> not AVAILABLE or (decompress_into(frame, out) and bool((out.view("<u2") == a).all()))
    True
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

__all__ = ["AVAILABLE", "MAX_OVERHEAD", "compress", "decompress_into", "frame_nbytes"]

#: Bytes blosc 1 may add to an incompressible input (BLOSC_MAX_OVERHEAD).
MAX_OVERHEAD = 16

_size_t = ctypes.c_size_t
_vp = ctypes.c_void_p


def _load() -> Any:
    """The c-blosc functions of numcodecs' extension module, or ``None`` when they are not usable."""
    try:
        import numcodecs.blosc as nb

        lib = ctypes.CDLL(nb.__file__)
        version = lib.blosc_get_version_string
        version.restype = ctypes.c_char_p
        version.argtypes = []
        if not (version() or b"").startswith(b"1."):
            return None
        lib.blosc_cbuffer_validate.argtypes = [_vp, _size_t, ctypes.POINTER(_size_t)]
        lib.blosc_cbuffer_validate.restype = ctypes.c_int
        lib.blosc_decompress_ctx.argtypes = [_vp, _vp, _size_t, ctypes.c_int]
        lib.blosc_decompress_ctx.restype = ctypes.c_int
        lib.blosc_compress_ctx.argtypes = [
            ctypes.c_int,  # clevel
            ctypes.c_int,  # doshuffle
            _size_t,  # typesize
            _size_t,  # nbytes
            _vp,  # src
            _vp,  # dest
            _size_t,  # destsize
            ctypes.c_char_p,  # compressor name
            _size_t,  # blocksize
            ctypes.c_int,  # numinternalthreads
        ]
        lib.blosc_compress_ctx.restype = ctypes.c_int
        return lib
    except (ImportError, OSError, AttributeError):
        return None


_lib = _load()

#: Whether the direct path is usable in this process.
AVAILABLE: bool = _lib is not None


def _u8(buf: Any) -> np.ndarray:
    """A flat uint8 view of a C-contiguous bytes-like object or array (no copy); keeps it alive."""
    if isinstance(buf, np.ndarray):
        return buf.reshape(-1).view(np.uint8)
    return np.frombuffer(buf, dtype=np.uint8)


def _validated(frame: Any) -> tuple[np.ndarray, int] | None:
    """The frame as uint8 and its decoded size, when blosc's header check accepts it."""
    if _lib is None:
        return None
    src = _u8(frame)
    nbytes = _size_t(0)
    if src.size < MAX_OVERHEAD or _lib.blosc_cbuffer_validate(
        src.ctypes.data, src.size, ctypes.byref(nbytes)
    ):
        return None
    return src, nbytes.value


def frame_nbytes(frame: Any) -> int | None:
    """Decoded size of a valid blosc 1 frame, or ``None`` when the header does not check out."""
    checked = _validated(frame)
    return None if checked is None else checked[1]


def decompress_into(frame: Any, out: np.ndarray) -> bool:
    """Decode ``frame`` into the C-contiguous buffer ``out`` on the calling thread, without the GIL.

    Returns ``False`` (``out`` untouched or partly written) when the frame is not valid or does not decode
    to exactly ``out.nbytes`` bytes; the caller then asks numcodecs, which says what is wrong.
    """
    checked = _validated(frame) if out.flags.c_contiguous else None
    if checked is None or checked[1] != out.nbytes:
        return False
    src = checked[0]
    return _lib.blosc_decompress_ctx(src.ctypes.data, out.ctypes.data, out.nbytes, 1) == out.nbytes


def compress(
    data: Any,
    *,
    cname: str,
    clevel: int,
    shuffle: int,
    typesize: int,
    blocksize: int = 0,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """One blosc 1 frame of ``data`` (single-threaded, GIL released) as a uint8 array of its exact size.

    ``shuffle`` is blosc's code (0 none, 1 byte, 2 bit). With ``out`` (a C-contiguous uint8 array of at
    least ``len(data) + MAX_OVERHEAD`` bytes) the frame is written there and a view of it returned: a
    caller that reuses one large buffer for many chunks skips the page faults of fresh memory, which on
    this project's machine cost more per chunk than a third of the compression itself. Raises
    ``RuntimeError`` when blosc refuses, ``ValueError`` for an ``out`` that is too small.
    """
    if _lib is None:
        raise RuntimeError("the direct blosc path is not available")
    src = _u8(data)
    cap = src.size + MAX_OVERHEAD
    if out is None:
        dest = np.empty(cap, dtype=np.uint8)
    else:
        if out.dtype != np.uint8 or out.ndim != 1 or not out.flags.c_contiguous or out.size < cap:
            raise ValueError(f"out must be a contiguous uint8 array of at least {cap} bytes")
        dest = out
    n = _lib.blosc_compress_ctx(
        clevel,
        shuffle,
        typesize,
        src.size,
        src.ctypes.data,
        dest.ctypes.data,
        cap,
        cname.encode(),
        blocksize,
        1,
    )
    if n <= 0:
        raise RuntimeError(f"blosc_compress_ctx failed with code {n}")
    if out is not None:
        return dest[:n]
    dest.resize(n, refcheck=False)  # realloc: shrinks in place, no copy
    return dest
