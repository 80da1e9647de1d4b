"""Decompression with a cap (the chunk's decoded size, :meth:`altarr.codecs.CodecChain.decode_limits`):
sizes announced in a header are checked before anything is allocated, other streams inflated up to the
cap (the stream decoders live in :mod:`altarr.capped`, re-exported here), so a decompression bomb fails
with :class:`~altarr.errors.CorruptChunkError`.
"""

from __future__ import annotations

from typing import Any

from ..capped import bound, bunzip2, check_announced, inflate, too_large, unxz
from ..errors import ChecksumError, CorruptChunkError

__all__ = [
    "inflate",
    "bunzip2",
    "unxz",
    "unzstd",
    "zstd_content_size",
    "blosc_nbytes",
    "check_announced",
    "bound",
    "too_large",
]


def zstd_content_size(buf: Any) -> int | None:
    """The Frame_Content_Size of a Zstandard frame header (RFC 8878, section 3.1.1.1), if present."""
    buf = memoryview(buf).cast("B")
    if len(buf) < 6 or buf[:4] != b"\x28\xb5\x2f\xfd":
        return None
    fhd = buf[4]
    fcs_flag, single_segment, dict_flag = fhd >> 6, (fhd >> 5) & 1, fhd & 3
    pos = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_flag]
    size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if size == 0 or len(buf) < pos + size:
        return None
    value = int.from_bytes(buf[pos : pos + size], "little")
    return value + 256 if size == 2 else value


def unzstd(data: Any, max_size: int, *, codec: str = "zstd") -> bytes:
    """Decode Zstandard frames (one or several, with or without content sizes) into at most ``max_size``
    bytes, streaming through python-zstandard so a frame without a content size cannot inflate past it.
    A frame cut short yields fewer bytes (callers check the exact decoded size)."""
    import zstandard

    check_announced(codec, zstd_content_size(data), max_size)
    out = bytearray()
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(
            memoryview(data).cast("B"), read_across_frames=True, read_size=1 << 16
        )
        with reader:
            while True:
                chunk = reader.read(max_size + 1 - len(out))
                if not chunk:
                    break
                out += chunk
                if len(out) > max_size:
                    raise too_large(codec, max_size)
    except CorruptChunkError:
        raise
    except (zstandard.ZstdError, ValueError) as e:
        cls = ChecksumError if "checksum" in str(e) else CorruptChunkError  # the frame's content checksum
        raise cls(f"{codec} decompression failed: {e}", codec=codec) from e
    return bytes(out)


def blosc_nbytes(data: Any) -> int | None:
    """The decoded size a blosc 1 frame header announces (``None`` for fewer than 16 bytes)."""
    mv = memoryview(data).cast("B")
    return int.from_bytes(mv[4:8], "little") if len(mv) >= 16 else None
