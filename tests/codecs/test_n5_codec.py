"""N5 block codec and N5 compressions: byte-exact fixtures, validation, every type and compression."""

from __future__ import annotations

import bz2
import gzip
import lzma
import struct
import zlib

import numpy as np
import pytest
import xxhash

from altarr.codecs.n5 import N5_DATA_TYPES, N5BlockCodec, parse_block_header
from altarr.codecs.n5_compressions import (
    BloscCompression,
    Bzip2Compression,
    GzipCompression,
    IdentityCodec,
    Lz4Compression,
    RawCompression,
    XzCompression,
    ZstdCompression,
    compression_from_n5_json,
    n5_codec_from_json,
)
from altarr.errors import (
    ChecksumError,
    CorruptChunkError,
    MetadataError,
    UnknownCodecError,
    UnsupportedError,
)

ALL_COMPRESSIONS = [
    RawCompression(),
    GzipCompression(),
    GzipCompression(level=1, use_zlib=True),
    Bzip2Compression(),
    XzCompression(preset=1),
    Lz4Compression(),
    Lz4Compression(block_size=64),
    ZstdCompression(),
    BloscCompression(),
    BloscCompression(cname="lz4", shuffle=1),
    BloscCompression(cname="zstd", shuffle=2),
]


# --- byte-exact fixtures ----------------------------------------------------------------------------------
def test_n5_spec_example_block():
    # README example: 3-D uint16 block of N5 size 1x2x3 with values 1..6, raw.
    expected = bytes.fromhex("0000 0003 00000001 00000002 00000003") + b"".join(
        struct.pack(">H", v) for v in range(1, 7)
    )
    a = np.arange(1, 7, dtype="uint16").reshape(3, 2, 1)  # NumPy order = reversed N5 size
    codec = N5BlockCodec(RawCompression())
    assert bytes(codec.encode(a)) == expected
    back = codec.decode(expected, (3, 2, 1), np.dtype("uint16"))
    assert back.dtype == np.dtype("uint16") and np.array_equal(back, a)


# data-3.1.3.n5/raw: N5 dims [7, 5], block [5, 4], uint8, raw; truncated edge blocks. Key (N5 order) ->
# (header size in N5 order, number of payload bytes). Every block holds one constant value (0..3).
JAVA_FIXTURE_BLOCKS = {
    "0/0": ((5, 4), 20),
    "1/0": ((2, 4), 8),
    "0/1": ((5, 1), 5),
    "1/1": ((2, 1), 2),
}


def _java_fixture_bytes(n5_size: tuple[int, int], n: int, value: int) -> bytes:
    return b"\x00\x00\x00\x02" + struct.pack(">II", *n5_size) + bytes([value]) * n


def test_java_backward_compat_fixture_blocks():
    from altarr.formats.n5 import parse_n5_attributes

    spec = parse_n5_attributes(
        {"dataType": "uint8", "compression": {"type": "raw"}, "blockSize": [5, 4], "dimensions": [7, 5]}
    )
    assert spec.shape == (5, 7) and spec.outer_chunks == (4, 5)
    codec = spec.codecs.array_bytes
    assert isinstance(codec, N5BlockCodec) and codec.truncates_edges
    full = np.zeros(spec.shape, dtype="uint8")
    for value, (key, (n5_size, n)) in enumerate(JAVA_FIXTURE_BLOCKS.items()):
        n5_pos = tuple(int(p) for p in key.split("/"))
        pos = n5_pos[::-1]
        assert spec.chunk_key(pos) == key
        sl = tuple(
            slice(p * c, min((p + 1) * c, s))
            for p, c, s in zip(pos, spec.outer_chunks, spec.shape, strict=True)
        )
        full[sl] = value
        clipped = full[sl]
        assert clipped.shape == n5_size[::-1]
        expected = _java_fixture_bytes(n5_size, n, value)
        assert bytes(codec.encode(clipped)) == expected
        decoded = codec.decode(expected, spec.outer_chunks, spec.dtype)
        assert decoded.shape == n5_size[::-1] and (decoded == value).all()


def test_parse_block_header_modes():
    assert parse_block_header(bytes.fromhex("0000000200000005000000040000")) == (0, (5, 4), None, 12)
    varlen = bytes.fromhex("0001 0001 00000003 00000003") + b"\x01\x02\x03"
    assert parse_block_header(varlen) == (1, (3,), 3, 12)
    assert parse_block_header(bytes.fromhex("0002 00000004") + b"abcd") == (2, (), 4, 6)


# --- decode validation ------------------------------------------------------------------------------------
def test_decode_varlength_block_with_matching_count():
    data = bytes.fromhex("0001 0001 00000003 00000003") + b"\x01\x02\x03"
    out = N5BlockCodec().decode(data, (3,), np.dtype("uint8"))
    assert out.tolist() == [1, 2, 3]


def test_decode_varlength_block_with_other_count_is_refused():
    data = bytes.fromhex("0001 0001 00000003 00000005") + bytes(5)
    with pytest.raises(UnsupportedError, match="numElements 5"):
        N5BlockCodec().decode(data, (3,), np.dtype("uint8"))


def test_object_block_refused():
    data = bytes.fromhex("0002 00000004") + b"abcd"
    with pytest.raises(UnsupportedError, match="object block") as ei:
        N5BlockCodec().decode(data, (4,), np.dtype("uint8"))
    assert ei.value.codec == "n5bytes"


@pytest.mark.parametrize(
    "header_size, dataset_block, match",
    [
        ((5, 4, 1), (4, 5), "does not fit"),  # ndim 3 in a 2-D dataset
        ((6, 4), (4, 5), "does not fit"),  # larger than the block size (N5 dim 0)
        ((5, 5), (4, 5), "does not fit"),  # larger in N5 dim 1
    ],
)
def test_decode_rejects_header_disagreeing_with_dataset(header_size, dataset_block, match):
    n = int(np.prod(header_size))
    data = struct.pack(f">HH{len(header_size)}I", 0, len(header_size), *header_size) + bytes(n)
    with pytest.raises(CorruptChunkError, match=match) as ei:
        N5BlockCodec().decode(data, dataset_block, np.dtype("uint8"))
    assert ei.value.codec == "n5bytes"
    # the dataset layer adds the key
    assert "key='ds/0/0'" in str(ei.value.with_context(key="ds/0/0"))


@pytest.mark.parametrize("compression", [RawCompression(), GzipCompression(), Lz4Compression()])
def test_decode_truncated_payload(compression):
    codec = N5BlockCodec(compression)
    data = bytes(codec.encode(np.arange(20, dtype="uint16").reshape(4, 5)))
    with pytest.raises(CorruptChunkError):
        codec.decode(data[:-3], (4, 5), np.dtype("uint16"))


def test_decode_truncated_header():
    with pytest.raises(CorruptChunkError, match="header truncated"):
        N5BlockCodec().decode(b"\x00\x00\x00\x02\x00\x00", (4, 5), np.dtype("uint8"))
    with pytest.raises(CorruptChunkError, match="unknown mode 7"):
        N5BlockCodec().decode(b"\x00\x07\x00\x01\x00\x00\x00\x01\x00", (4,), np.dtype("uint8"))


def test_raw_payload_longer_than_header_says_is_corrupt():
    data = bytes.fromhex("0000 0001 00000002") + bytes(3)
    with pytest.raises(CorruptChunkError, match="expected 2"):
        N5BlockCodec().decode(data, (4,), np.dtype("uint8"))


def test_encode_refuses_types_n5_lacks():
    for dt in ("bool", "complex64", "float16"):
        with pytest.raises(UnsupportedError, match="N5 has no data type"):
            N5BlockCodec().encode(np.zeros(3, dtype=dt))


# --- every type x every compression -------------------------------------------------------------------------
@pytest.mark.parametrize("compression", ALL_COMPRESSIONS, ids=lambda c: repr(c.to_n5_json()))
@pytest.mark.parametrize("dtype", list(N5_DATA_TYPES))
def test_round_trip_every_type_and_compression(dtype, compression, rng):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = rng.standard_normal((6, 5, 3)).astype(dt)
    else:
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, (6, 5, 3), dtype=dt, endpoint=True)
    codec = N5BlockCodec(compression)
    data = bytes(codec.encode(a[:4, :, 1:]))  # a truncated edge block
    assert data[:16] == struct.pack(">HHIII", 0, 3, 2, 5, 4)
    out = codec.decode(data, (6, 5, 3), dt)
    assert out.dtype == dt and out.shape == (4, 5, 2)
    np.testing.assert_array_equal(out, a[:4, :, 1:])
    if isinstance(compression, RawCompression):
        # payload is big-endian, C order over the NumPy shape
        assert data[16:] == a[:4, :, 1:].astype(dt.newbyteorder(">")).tobytes()


def test_empty_block_round_trip():
    codec = N5BlockCodec(GzipCompression())
    data = codec.encode(np.zeros((0, 0), dtype="uint8"))
    assert bytes(data)[:12] == bytes.fromhex("0000 0002 00000000 00000000")
    assert codec.decode(data, (2, 2), np.dtype("uint8")).shape == (0, 0)


def test_compression_chain_with_crc32c():
    codec = N5BlockCodec([GzipCompression(level=6), n5_codec_from_json({"name": "crc32c"})])
    a = np.arange(12, dtype="int32").reshape(3, 4)
    data = bytearray(codec.encode(a))
    np.testing.assert_array_equal(codec.decode(bytes(data), (3, 4), np.dtype("int32")), a)
    data[-1] ^= 0xFF
    with pytest.raises(ChecksumError):
        codec.decode(bytes(data), (3, 4), np.dtype("int32"))
    assert codec.codecs_json() == [
        {"name": "n5bytes"},
        {"name": "gzip", "configuration": {"level": 6}},  # Java's codecs form: level only
        {"name": "crc32c"},
    ]


def test_raw_and_id_are_dropped_from_the_data_codecs():
    codec = N5BlockCodec([RawCompression(), IdentityCodec()])
    assert codec.data_codecs == ()
    assert N5BlockCodec(RawCompression()) == N5BlockCodec()
    assert N5BlockCodec(GzipCompression(1)) != N5BlockCodec(GzipCompression(2))


# --- gzip ---------------------------------------------------------------------------------------------------
def test_gzip_member_and_zlib_stream():
    payload = bytes(range(256)) * 4
    g = GzipCompression(level=-1)
    enc = bytes(g.encode(payload))
    assert enc[:2] == b"\x1f\x8b" and gzip.decompress(enc) == payload
    z = GzipCompression(level=9, use_zlib=True)
    enc = bytes(z.encode(payload))
    assert enc[0] == 0x78 and zlib.decompress(enc) == payload
    assert z.decode(enc) == payload


def test_gzip_decoder_accepts_concatenated_members():
    data = gzip.compress(b"hello ") + gzip.compress(b"world")
    assert GzipCompression().decode(data) == b"hello world"


def test_gzip_level_minus_one_is_zlib_default_with_javas_os_byte():
    payload = b"abcdefgh" * 500
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    python = c.compress(payload) + c.flush()
    java = bytes(GzipCompression(-1).encode(payload))
    # commons-compress writes OS "unknown" (0xff) where zlib writes its build's OS: the only difference
    assert java[9] == 0xFF and java[:9] + java[10:] == python[:9] + python[10:]
    assert java == bytes(GzipCompression(6).encode(payload)) == bytes(GzipCompression().encode(payload))
    assert gzip.decompress(java) == payload


def test_gzip_garbage_is_corrupt():
    with pytest.raises(CorruptChunkError, match="gzip"):
        GzipCompression().decode(b"not gzip at all")


def test_other_compressions_use_standard_streams():
    payload = b"0123456789" * 100
    assert bz2.decompress(Bzip2Compression(block_size=3).encode(payload)) == payload
    assert lzma.decompress(XzCompression(preset=2).encode(payload), format=lzma.FORMAT_XZ) == payload
    assert XzCompression().decode(lzma.compress(payload, format=lzma.FORMAT_XZ)) == payload
    zs = bytes(ZstdCompression(level=5).encode(payload))
    assert zs[:4] == b"\x28\xb5\x2f\xfd"
    assert zs[4] & 0xC0 or zs[4] & 0x20  # frame content size present (FCS flag or single segment)
    import numcodecs

    blosc = bytes(BloscCompression(cname="lz4", clevel=5, shuffle=1).encode(payload))
    assert numcodecs.Blosc().decode(blosc) == payload


def test_blosc_uses_element_size_as_typesize():
    codec = N5BlockCodec(BloscCompression(cname="lz4", shuffle=1))
    data = bytes(codec.encode(np.arange(100, dtype="int32")))
    blosc_header = data[8:]  # 1-D header: 2 + 2 + 4 bytes
    assert blosc_header[3] == 4  # blosc header byte 3 = typesize


# --- lz4-java block stream -------------------------------------------------------------------------------
LZ4_SEED = 0x9747B28C


def _lz4_header(stream: bytes, at: int) -> tuple[bytes, int, int, int, int]:
    magic = stream[at : at + 8]
    token = stream[at + 8]
    clen, dlen, check = struct.unpack_from("<iiI", stream, at + 9)
    return magic, token, clen, dlen, check


def test_lz4_block_stream_layout_byte_by_byte():
    payload = b"abcd" * 100  # compressible: one LZ4 block
    stream = bytes(Lz4Compression(block_size=65536).encode(payload))
    magic, token, clen, dlen, check = _lz4_header(stream, 0)
    assert magic == b"LZ4Block"
    assert token == 0x20 | 6  # LZ4 method | level (log2(65536) - 10)
    assert dlen == len(payload) and 0 < clen < len(payload)
    assert check == xxhash.xxh32_intdigest(payload, seed=LZ4_SEED) & 0x0FFFFFFF
    import lz4.block

    assert lz4.block.decompress(stream[21 : 21 + clen], uncompressed_size=dlen) == payload
    # end mark: an empty raw block with zero lengths and checksum
    end = stream[21 + clen :]
    assert end == b"LZ4Block" + bytes([0x10 | 6]) + bytes(12)
    assert Lz4Compression().decode(stream) == payload


def test_lz4_incompressible_block_is_stored_raw():
    payload = bytes(range(40))
    stream = bytes(Lz4Compression(block_size=64).encode(payload))
    magic, token, clen, dlen, check = _lz4_header(stream, 0)
    assert token == 0x10 | 0  # raw method, level max(0, 6 - 10) = 0
    assert clen == dlen == 40
    assert stream[21:61] == payload
    assert check == xxhash.xxh32_intdigest(payload, seed=LZ4_SEED) & 0x0FFFFFFF
    assert stream[61:] == b"LZ4Block\x10" + bytes(12)


def test_lz4_multi_block_stream_and_levels():
    payload = np.random.default_rng(1).integers(0, 3, 1000, dtype="uint8").tobytes()
    c = Lz4Compression(block_size=256)
    stream = bytes(c.encode(payload))
    pos, sizes = 0, []
    while True:
        magic, token, clen, dlen, _ = _lz4_header(stream, pos)
        assert magic == b"LZ4Block" and token & 0x0F == 0  # 256 -> ceil(log2) 8 - 10 -> 0
        pos += 21 + clen
        if dlen == 0:
            break
        sizes.append(dlen)
    assert sizes == [256, 256, 256, 232] and pos == len(stream)
    assert c.decode(stream) == payload
    assert Lz4Compression(block_size=1 << 20).level == 10
    assert Lz4Compression(block_size=100000).level == 7  # ceil(log2(100000)) = 17


def test_lz4_empty_payload_is_only_the_end_mark():
    stream = bytes(Lz4Compression().encode(b""))
    assert stream == b"LZ4Block\x16" + bytes(12)
    assert Lz4Compression().decode(stream) == b""


def test_lz4_corruption_is_detected():
    payload = b"xyz" * 300
    stream = bytearray(Lz4Compression().encode(payload))
    bad_check = bytearray(stream)
    bad_check[17] ^= 0x01  # checksum field of block 1
    with pytest.raises(ChecksumError, match="xxhash32"):
        Lz4Compression().decode(bytes(bad_check))
    with pytest.raises(CorruptChunkError, match="missing block header or end mark"):
        Lz4Compression().decode(bytes(stream[:-21]))  # end mark cut off
    bad_magic = bytearray(stream)
    bad_magic[0:8] = b"LZ4Blokk"
    with pytest.raises(CorruptChunkError, match="bad magic"):
        Lz4Compression().decode(bytes(bad_magic))
    with pytest.raises(CorruptChunkError):
        Lz4Compression().decode(bytes(stream[:30]))


def test_lz4_accepts_concatenated_streams():
    c = Lz4Compression()
    assert c.decode(bytes(c.encode(b"one")) + bytes(c.encode(b"two"))) == b"onetwo"


def test_lz4_block_size_bounds():
    with pytest.raises(MetadataError, match="blockSize"):
        Lz4Compression(block_size=32)
    with pytest.raises(MetadataError, match="blockSize"):
        compression_from_n5_json({"type": "lz4", "blockSize": 1 << 26})


# --- N5 JSON forms ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "obj",
    [
        {"type": "raw"},
        {"type": "gzip", "level": -1, "useZlib": False},
        {"type": "gzip", "level": 6, "useZlib": True},
        {"type": "bzip2", "blockSize": 9},
        {"type": "xz", "preset": 6},
        {"type": "lz4", "blockSize": 65536},
        {"type": "zstd", "level": 3},
        {"type": "blosc", "cname": "blosclz", "clevel": 6, "shuffle": 0, "blocksize": 0},
        {"type": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 256, "nthreads": 4},
    ],
)
def test_n5_json_round_trip(obj):
    c = compression_from_n5_json(obj)
    assert c.to_n5_json() == obj
    params = {k: v for k, v in obj.items() if k != "type"}
    if obj["type"] == "gzip" and not params["useZlib"]:
        del params["useZlib"]  # Java's codecs form has the level only; useZlib only when set
    as_codec = {"name": obj["type"], **({"configuration": params} if params else {})}
    assert c.to_json() == as_codec
    assert n5_codec_from_json(as_codec) == c


def test_n5_json_defaults_and_legacy_names():
    assert compression_from_n5_json({"type": "gzip"}).params() == {"useZlib": False, "level": 6}  # Java 4.x
    assert compression_from_n5_json({"type": "bzip2"}).params() == {"blockSize": 9}
    assert compression_from_n5_json({"type": "lz4"}).params() == {"blockSize": 65536}
    assert compression_from_n5_json({"type": "zstd"}).params() == {"level": 3}
    blosc = compression_from_n5_json({"type": "blosc"}).params()
    assert blosc == {"cname": "blosclz", "clevel": 6, "shuffle": 0, "blocksize": 0}  # nthreads 1 not written
    assert compression_from_n5_json({"type": "blosc", "nthreads": 1}) == compression_from_n5_json(
        {"type": "blosc"}
    )
    for legacy in ("raw", "gzip", "bzip2", "lz4", "xz"):
        assert compression_from_n5_json(legacy).name == legacy


def test_unknown_compression_names_the_key():
    with pytest.raises(UnknownCodecError, match="'snappy'") as ei:
        compression_from_n5_json({"type": "snappy"}, key="ds/attributes.json")
    assert ei.value.key == "ds/attributes.json" and ei.value.codec == "snappy"
    with pytest.raises(UnknownCodecError) as ei:
        n5_codec_from_json({"name": "bitshift", "configuration": {"shift": 3}}, key="k")
    assert ei.value.key == "k"
    with pytest.raises(MetadataError, match="level") as ei:
        compression_from_n5_json({"type": "gzip", "level": 11}, key="k2")
    assert ei.value.key == "k2"
    with pytest.raises(MetadataError, match="'type'"):
        compression_from_n5_json({"level": 1}, key="k3")
