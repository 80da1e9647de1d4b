"""The Zarr v3 ``crc32c`` codec: appends the CRC-32C (Castagnoli, RFC 3720) of the data as a little-endian
uint32; decoding verifies and strips it.

Example:
    >>> c = Crc32cCodec()
    >>> bytes(c.encode(b"123456789"))[-4:].hex()   # 0xE3069283, little-endian
    '839206e3'
    >>> bytes(c.decode(c.encode(b"abc")))
    b'abc'
"""

from __future__ import annotations

from typing import Any, ClassVar

import google_crc32c
import numpy as np

from ..errors import ChecksumError, CorruptChunkError
from ._config import as_byte_view, check_keys
from .base import BytesBytesCodec, BytesLike
from .registry import register_codec

__all__ = ["Crc32cCodec", "crc32c_value"]


def crc32c_value(data: BytesLike) -> int:
    """CRC-32C of ``data`` as an int (google-crc32c, hardware-accelerated where the CPU has it).

    >>> hex(crc32c_value(b"123456789")), crc32c_value(memoryview(bytearray(b"abc"))[1:]) == crc32c_value(b"bc")
    ('0xe3069283', True)
    """
    # google-crc32c takes neither memoryview nor bytearray: a NumPy view passes without a copy
    value: int = google_crc32c.value(np.frombuffer(as_byte_view(data), dtype=np.uint8))
    return value


@register_codec
class Crc32cCodec(BytesBytesCodec):
    """Append/verify a 4-byte CRC-32C. Decoding returns a zero-copy view without the checksum.

    >>> Crc32cCodec().encoded_size(10)
    14
    """

    name: ClassVar[str] = "crc32c"

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> Crc32cCodec:
        check_keys(cls.name, configuration, [])
        return cls()

    def encode(self, data: BytesLike) -> bytes:
        mv = as_byte_view(data)
        return b"".join((mv, crc32c_value(mv).to_bytes(4, "little")))

    def decode(self, data: BytesLike) -> memoryview:
        mv = as_byte_view(data)
        if len(mv) < 4:
            raise CorruptChunkError(f"crc32c: {len(mv)} bytes cannot hold a 4-byte checksum", codec=self.name)
        payload = mv[:-4]
        stored = int.from_bytes(mv[-4:], "little")
        actual = crc32c_value(payload)
        if stored != actual:
            raise ChecksumError(
                f"crc32c mismatch: stored checksum 0x{stored:08X}, computed 0x{actual:08X} "
                f"over {len(payload)} bytes",
                codec=self.name,
            )
        return payload

    def encoded_size(self, decoded_size: int) -> int:
        return decoded_size + 4
