"""Zip members read positionally and decoded by :mod:`altarr.capped` at the size their directory entry
declares (size and CRC checked; a declared ratio over :data:`MAX_INFLATE_RATIO` is refused first).
"""

from __future__ import annotations

import lzma
import os
import zipfile
import zlib

from ..capped import bunzip2, inflate, unxz
from ..errors import CorruptChunkError, StoreError

__all__ = ["MAX_INFLATE_RATIO", "data_offset", "read_member"]

#: A compressed member declaring more than this many times its compressed size (deflate's own ceiling is
#: 1032:1) and more than 1 MiB is refused as a decompression bomb.
MAX_INFLATE_RATIO = 1032
_RATIO_FREE = 1 << 20


def data_offset(fd: int, info: zipfile.ZipInfo) -> int:
    """Where a member's data starts in the zip file open as ``fd`` (after its local header)."""
    header = os.pread(fd, 30, info.header_offset)
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        raise StoreError(
            "bad local file header in zip archive", key=info.filename, byte_range=(info.header_offset, None)
        )
    n = int.from_bytes(header[26:28], "little") + int.from_bytes(header[28:30], "little")
    return info.header_offset + 30 + n


def read_member(fd: int, info: zipfile.ZipInfo, start: int) -> bytes:
    """A member's bytes, its data read at ``start`` of ``fd`` and decoded by a decoder capped at its
    declared size; the decoded size and CRC checked against its entry."""
    key, method, size = info.filename, info.compress_type, info.file_size
    if info.flag_bits & 0x1:
        raise StoreError("encrypted zip members are not supported", key=key)
    if method != zipfile.ZIP_STORED and size > max(_RATIO_FREE, MAX_INFLATE_RATIO * info.compress_size):
        raise StoreError(
            f"zip member declares {size} bytes from {info.compress_size} compressed, more than "
            f"{MAX_INFLATE_RATIO}:1: refused as a decompression bomb",
            key=key,
        )
    raw = os.pread(fd, info.compress_size, start)
    if len(raw) != info.compress_size:
        raise StoreError("zip member truncated", key=key, byte_range=(start, start + info.compress_size))
    try:
        if method == zipfile.ZIP_STORED:
            data = raw
        elif method == zipfile.ZIP_DEFLATED:
            data = inflate(raw, size, wbits=-15, codec="deflate")
        elif method == zipfile.ZIP_BZIP2:
            data = bunzip2(raw, size)
        elif method == zipfile.ZIP_LZMA:
            data = _unlzma(raw, size)
        else:
            raise StoreError(f"zip compression method {method} is not supported", key=key)
    except CorruptChunkError as e:
        raise StoreError(f"zip member failed to decompress: {e}", key=key) from e
    if len(data) != size or zlib.crc32(data) != info.CRC:
        raise StoreError(f"zip member corrupt: its {len(data)} bytes or CRC differ from its entry", key=key)
    return data


def _unlzma(raw: bytes, size: int) -> bytes:
    """A zip LZMA member (APPNOTE 5.8.8: version, properties size, LZMA1 properties, raw stream) capped at
    ``size`` bytes; the properties byte packs ``(pb * 5 + lp) * 9 + lc``, then the dictionary size."""
    n = int.from_bytes(raw[2:4], "little")
    props = raw[4 : 4 + n]
    if n != 5 or len(props) != 5 or props[0] >= 9 * 5 * 5:
        raise CorruptChunkError("bad LZMA properties in zip member", codec="lzma")
    lc, rest = props[0] % 9, props[0] // 9
    lzma1 = {"id": lzma.FILTER_LZMA1, "lc": lc, "lp": rest % 5, "pb": rest // 5}
    lzma1["dict_size"] = int.from_bytes(props[1:5], "little")
    return unxz(memoryview(raw)[4 + n :], size, format=lzma.FORMAT_RAW, filters=[lzma1], codec="lzma")
