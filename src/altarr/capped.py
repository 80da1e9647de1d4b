"""Stream decompression with a cap: a decoder stops at the size its output can have, so a decompression
bomb fails with :class:`~altarr.errors.CorruptChunkError` after at most ``max_size + 1`` bytes (the
codecs cap a chunk at its decoded size, the zip store a member at its declared size).
"""

from __future__ import annotations

import bz2
import lzma
import zlib
from collections.abc import Callable
from typing import Any

from .errors import CorruptChunkError

__all__ = ["inflate", "bunzip2", "unxz", "check_announced", "bound", "too_large"]


def bound(n: int) -> int:
    """A generous bound of what any of altarr's compressors makes of ``n`` bytes (the cap of a stage
    whose exact size is not fixed)."""
    return 2 * n + 4096


def too_large(codec: str, max_size: int, got: int | None = None) -> CorruptChunkError:
    """The error of a stream that decodes (or announces) more than ``max_size`` bytes."""
    what = "decodes to more than" if got is None else f"announces {got} bytes, more than"
    return CorruptChunkError(
        f"{codec} decompression stopped: the stream {what} the {max_size} bytes a chunk can hold "
        "(decompression bomb or corrupt stream)",
        codec=codec,
    )


def check_announced(codec: str, announced: int | None, max_size: int) -> None:
    """Refuse a header that announces more than ``max_size`` decoded bytes."""
    if announced is not None and announced > max_size:
        raise too_large(codec, max_size, announced)


def _incremental(
    codec: str,
    data: Any,
    max_size: int,
    new: Callable[[], Any],
    errors: tuple[type[BaseException], ...],
    *,
    multi: bool = True,
) -> bytes:
    """Run decompressors from ``new()`` over ``data`` (concatenated streams when ``multi``), never asking
    for more than ``max_size + 1`` bytes in total."""
    parts: list[bytes] = []
    total = 0
    rest: Any = memoryview(data).cast("B")
    try:
        while True:
            d = new()
            chunk = d.decompress(rest, max_size + 1 - total)
            parts.append(chunk)
            total += len(chunk)
            if total > max_size:
                raise too_large(codec, max_size)
            if not d.eof:  # below the cap, so every input byte was consumed: the stream is cut short
                raise CorruptChunkError(f"{codec} decompression failed: the stream is truncated", codec=codec)
            rest = d.unused_data
            if not multi or not rest:
                break
            if not any(rest):  # trailing zero padding, which gzip readers ignore
                break
    except CorruptChunkError:
        raise
    except errors as e:
        raise CorruptChunkError(f"{codec} decompression failed: {e}", codec=codec) from e
    return parts[0] if len(parts) == 1 else b"".join(parts)  # one stream: no copy


def inflate(data: Any, max_size: int, *, wbits: int = 31, codec: str | None = None) -> bytes:
    """Deflate-decode ``data`` (``wbits`` 31: gzip members, concatenated ones too; 15: a zlib stream;
    47: either) into at most ``max_size`` bytes."""
    name = codec or {31: "gzip", 15: "zlib"}.get(wbits, "deflate")
    return _incremental(
        name, data, max_size, lambda: zlib.decompressobj(wbits), (zlib.error,), multi=wbits != 15
    )


def bunzip2(data: Any, max_size: int, *, codec: str = "bzip2") -> bytes:
    """bzip2-decode ``data`` (concatenated streams too) into at most ``max_size`` bytes."""
    return _incremental(codec, data, max_size, bz2.BZ2Decompressor, (OSError, ValueError, EOFError))


def unxz(
    data: Any, max_size: int, *, format: int = lzma.FORMAT_XZ, filters: Any = None, codec: str = "xz"
) -> bytes:
    """LZMA/xz-decode ``data`` into at most ``max_size`` bytes (``format``/``filters`` as :mod:`lzma`)."""
    return _incremental(
        codec,
        data,
        max_size,
        lambda: lzma.LZMADecompressor(format=format, filters=filters),
        (lzma.LZMAError, EOFError),
        multi=format != lzma.FORMAT_RAW,
    )
