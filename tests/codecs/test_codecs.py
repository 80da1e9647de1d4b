"""Zarr v3 codecs: registry, bytes, transpose, compressors, crc32c and the codec chain."""

from __future__ import annotations

import gzip
import struct
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

import numcodecs
import numpy as np
import pytest

from altarr.codecs import (
    ArrayArrayCodec,
    BloscCodec,
    BytesBytesCodec,
    BytesCodec,
    CodecChain,
    Crc32cCodec,
    GzipCodec,
    ShardingCodec,
    TransposeCodec,
    ZstdCodec,
    codec_from_json,
    crc32c_value,
    register_codec,
)
from altarr.errors import (
    ChecksumError,
    CodecError,
    CorruptChunkError,
    MetadataError,
    UnknownCodecError,
)

DTYPES = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]
NATIVE = "little" if sys.byteorder == "little" else "big"
FOREIGN = "big" if NATIVE == "little" else "little"


def sample(dtype: str, shape: tuple[int, ...] = (3, 5, 4), seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True).reshape(shape)
    if dt.kind == "f":
        return (rng.standard_normal(n) * 1000).astype(dt).reshape(shape)
    return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt).reshape(shape)


# --- registry -------------------------------------------------------------------------------------------
def test_codec_from_json_forms() -> None:
    assert codec_from_json({"name": "gzip", "configuration": {"level": 3}}) == GzipCodec(3)
    assert codec_from_json("crc32c") == Crc32cCodec()
    assert codec_from_json({"name": "crc32c"}) == Crc32cCodec()
    assert codec_from_json(
        {"name": "zstd", "configuration": {"level": 2}, "must_understand": False}
    ) == ZstdCodec(2)
    assert codec_from_json("bytes") == BytesCodec(None)
    c = ZstdCodec(1)
    assert codec_from_json(c) is c


@pytest.mark.parametrize("must_understand", [None, True, False])
def test_unknown_codec_always_fails(must_understand: bool | None) -> None:
    obj: dict[str, Any] = {"name": "no_such_codec", "configuration": {}}
    if must_understand is not None:
        obj["must_understand"] = must_understand
    with pytest.raises(UnknownCodecError, match="no_such_codec") as info:
        codec_from_json(obj)
    assert info.value.codec == "no_such_codec"
    with pytest.raises(UnknownCodecError, match="no_such_codec"):
        codec_from_json("no_such_codec")


@pytest.mark.parametrize(
    "obj, codec, field",
    [
        ({"name": "gzip", "configuration": {"level": 10}}, "gzip", "level"),
        ({"name": "gzip", "configuration": {"level": "5"}}, "gzip", "level"),
        ({"name": "gzip", "configuration": {"level": True}}, "gzip", "level"),
        ({"name": "gzip", "configuration": {"lvl": 5}}, "gzip", "lvl"),
        ({"name": "zstd", "configuration": {"level": 23}}, "zstd", "level"),
        ({"name": "zstd", "configuration": {"checksum": "yes"}}, "zstd", "checksum"),
        ({"name": "blosc", "configuration": {"cname": "lzma", "typesize": 4}}, "blosc", "cname"),
        ({"name": "blosc", "configuration": {"shuffle": "bytes", "typesize": 4}}, "blosc", "shuffle"),
        ({"name": "blosc", "configuration": {"shuffle": "shuffle"}}, "blosc", "typesize"),
        ({"name": "blosc", "configuration": {"clevel": -1, "shuffle": "noshuffle"}}, "blosc", "clevel"),
        ({"name": "bytes", "configuration": {"endian": "middle"}}, "bytes", "endian"),
        ({"name": "transpose", "configuration": {"order": [0, 0]}}, "transpose", "order"),
        ({"name": "transpose", "configuration": {}}, "transpose", "order"),
        ({"name": "crc32c", "configuration": {"seed": 1}}, "crc32c", "seed"),
        (
            {
                "name": "sharding_indexed",
                "configuration": {"chunk_shape": [2, 0], "codecs": ["bytes"], "index_codecs": ["bytes"]},
            },
            "sharding_indexed",
            "chunk_shape",
        ),
        (
            {"name": "sharding_indexed", "configuration": {"chunk_shape": [2], "codecs": ["bytes"]}},
            "sharding_indexed",
            "index_codecs",
        ),
        (
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": [2],
                    "codecs": ["bytes"],
                    "index_codecs": ["bytes"],
                    "index_location": "middle",
                },
            },
            "sharding_indexed",
            "index_location",
        ),
    ],
)
def test_bad_configuration_names_codec_and_field(obj: dict, codec: str, field: str) -> None:
    with pytest.raises(MetadataError) as info:
        codec_from_json(obj)
    assert not isinstance(info.value, UnknownCodecError)
    assert codec in str(info.value)
    assert field in str(info.value)


def test_malformed_codec_descriptions() -> None:
    for bad in (
        42,
        {"configuration": {}},
        {"name": "gzip", "configuration": [1]},
        {"name": "gzip", "extra": 1},
    ):
        with pytest.raises(MetadataError):
            codec_from_json(bad)
    with pytest.raises(MetadataError, match="must_understand"):
        codec_from_json({"name": "gzip", "must_understand": "no"})


def test_register_codec_refuses_silent_override() -> None:
    class FakeGzip(BytesBytesCodec):
        name: ClassVar[str] = "gzip"

        def encode(self, data):  # pragma: no cover - never called
            return data

        def decode(self, data):  # pragma: no cover - never called
            return data

    with pytest.raises(MetadataError, match="already registered"):
        register_codec(FakeGzip)
    assert type(codec_from_json("gzip")) is GzipCodec
    assert register_codec(GzipCodec) is GzipCodec  # re-registering the same class is fine


@pytest.mark.parametrize(
    "codec",
    [
        BytesCodec("little"),
        BytesCodec("big"),
        BytesCodec(None),
        TransposeCodec([2, 0, 1]),
        GzipCodec(7),
        ZstdCodec(-3, checksum=True),
        BloscCodec("zstd", 3, "bitshuffle", typesize=8, blocksize=4096),
        BloscCodec("lz4", 5, "noshuffle"),
        Crc32cCodec(),
        ShardingCodec([2, 3], [BytesCodec("big"), GzipCodec(1)], [BytesCodec("little")], "start"),
    ],
)
def test_json_round_trip(codec: Any) -> None:
    js = codec.to_json()
    again = codec_from_json(js)
    assert again == codec and again.to_json() == js
    assert hash(again) == hash(codec)


# --- bytes ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("endian", ["little", "big"])
def test_bytes_codec_round_trip_and_layout(dtype: str, endian: str) -> None:
    a = sample(dtype)
    c = BytesCodec(endian)
    enc = c.encode(a)
    assert bytes(enc) == a.astype(a.dtype.newbyteorder("<" if endian == "little" else ">")).tobytes(order="C")
    assert c.encoded_size(a.shape, a.dtype) == len(bytes(enc))
    out = c.decode(bytes(enc), a.shape, a.dtype)
    assert out.dtype == np.dtype(dtype) and out.dtype.isnative
    np.testing.assert_array_equal(out, a)
    # decoding into a provided output array
    dest = np.empty(a.shape, dtype)
    assert c.decode(bytes(enc), a.shape, a.dtype, out=dest) is dest
    np.testing.assert_array_equal(dest, a)
    # non-native dtype requests still give native results
    assert c.decode(bytes(enc), a.shape, a.dtype.newbyteorder("S")).dtype.isnative


def test_bytes_codec_is_zero_copy_in_native_order() -> None:
    a = np.arange(24, dtype="float64").reshape(4, 6)
    c = BytesCodec(NATIVE)
    enc = c.encode(a)
    assert np.shares_memory(np.frombuffer(enc, np.uint8), a)  # no copy on encode
    data = bytes(enc)
    out = c.decode(data, (4, 6), a.dtype)
    assert np.shares_memory(out, np.frombuffer(data, np.uint8))  # a view, no copy on decode
    swapped = BytesCodec(FOREIGN).decode(BytesCodec(FOREIGN).encode(a), (4, 6), a.dtype)
    assert swapped.dtype.isnative and swapped.flags.writeable
    np.testing.assert_array_equal(swapped, a)


def test_bytes_codec_non_contiguous_input() -> None:
    a = np.arange(60, dtype="int32").reshape(6, 10)[::2, 1::3]
    enc = BytesCodec("big").encode(a)
    assert bytes(enc) == np.ascontiguousarray(a).astype(">i4").tobytes()


def test_bytes_codec_endian_rules() -> None:
    c = BytesCodec(None)
    for dt in ("uint8", "int8", "bool"):
        a = sample(dt)
        np.testing.assert_array_equal(c.decode(c.encode(a), a.shape, a.dtype), a)
        c.validate(a.shape, dt)
    with pytest.raises(MetadataError, match="endian"):
        c.encode(np.zeros(3, "int16"))
    with pytest.raises(MetadataError, match="endian"):
        c.decode(b"\x00" * 6, (3,), np.dtype("int16"))
    with pytest.raises(MetadataError, match="endian"):
        CodecChain([c]).validate((3,), "float32")


def test_bytes_codec_wrong_size_and_dtypes() -> None:
    c = BytesCodec("little")
    with pytest.raises(CorruptChunkError, match="needs 24 bytes, got 20") as info:
        c.decode(b"\x00" * 20, (2, 3), np.dtype("int32"))
    assert info.value.codec == "bytes"
    with pytest.raises(CodecError):
        c.encode(np.array([object()], dtype=object))
    with pytest.raises(CodecError, match="out has shape"):
        c.decode(b"\x00" * 24, (2, 3), np.dtype("int32"), out=np.empty((3, 2), "int32"))
    # zero-size and 0-d chunks
    assert c.decode(b"", (0, 3), np.dtype("int32")).shape == (0, 3)
    assert c.decode(b"\x07\x00", (), np.dtype("int16")) == 7


# --- transpose ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("order", [(0, 1, 2), (2, 0, 1), (1, 2, 0), (2, 1, 0)])
def test_transpose_in_chain(order: tuple[int, ...]) -> None:
    a = sample("uint16", (3, 5, 4))
    chain = CodecChain([TransposeCodec(order), BytesCodec("little"), ZstdCodec(1)])
    enc = chain.encode(a)
    raw = numcodecs.Zstd().decode(enc)
    assert bytes(raw) == np.transpose(a, order).astype("<u2").tobytes()
    dec = chain.decode(enc, a.shape, a.dtype)
    assert dec.flags.c_contiguous
    np.testing.assert_array_equal(dec, a)
    dest = np.empty_like(a)
    assert chain.decode(enc, a.shape, a.dtype, out=dest) is dest
    np.testing.assert_array_equal(dest, a)
    assert chain.encoded_size(a.shape, a.dtype) is None
    assert CodecChain([TransposeCodec(order), BytesCodec("big")]).encoded_size(a.shape, a.dtype) == a.nbytes


def test_transpose_rank_mismatch() -> None:
    t = TransposeCodec([1, 0])
    with pytest.raises(MetadataError, match="dimensions"):
        CodecChain([t, BytesCodec()]).validate((2, 3, 4), "uint8")
    with pytest.raises(MetadataError):
        t.resolve((2, 3, 4), np.dtype("uint8"))


# --- compressors ----------------------------------------------------------------------------------------
COMPRESSORS = [
    GzipCodec(5),
    GzipCodec(0),
    ZstdCodec(0),
    ZstdCodec(5, checksum=True),
    BloscCodec("lz4", 5, "shuffle", typesize=4),
    BloscCodec("zstd", 9, "bitshuffle", typesize=2),
    BloscCodec("blosclz", 1, "noshuffle"),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("compressor", COMPRESSORS, ids=repr)
def test_compressor_round_trip(compressor: Any, dtype: str) -> None:
    a = sample(dtype, (7, 9))
    chain = CodecChain([BytesCodec("little"), compressor])
    enc = bytes(chain.encode(a))
    np.testing.assert_array_equal(chain.decode(enc, a.shape, a.dtype), a)
    dest = np.empty(a.shape, a.dtype)
    got = chain.decode(enc, a.shape, a.dtype, out=dest)
    assert got is dest
    np.testing.assert_array_equal(dest, a)


def test_gzip_is_rfc1952_and_reads_other_writers() -> None:
    data = b"zarr " * 100
    enc = bytes(GzipCodec(6).encode(data))
    assert enc[:3] == b"\x1f\x8b\x08"  # gzip magic + deflate
    assert gzip.decompress(enc) == data
    two_members = gzip.compress(b"abc") + gzip.compress(b"def")
    assert bytes(GzipCodec().decode(two_members)) == b"abcdef"


def test_zstd_and_blosc_interoperate_with_numcodecs() -> None:
    data = np.arange(1000, dtype="<u4").tobytes()
    assert bytes(numcodecs.Zstd().decode(ZstdCodec(3).encode(data))) == data
    assert bytes(ZstdCodec().decode(numcodecs.Zstd(level=7).encode(data))) == data
    enc = bytes(BloscCodec("lz4", 5, "shuffle", typesize=4).encode(data))
    assert enc[3] == 4  # blosc header: typesize
    assert enc[2] & 0x1  # byte-shuffle flag
    assert bytes(numcodecs.Blosc().decode(enc)) == data


def test_decode_into_out_is_direct_for_zstd_and_blosc() -> None:
    a = np.arange(4096, dtype="float64").reshape(64, 64)
    for comp in (ZstdCodec(1), BloscCodec("lz4", 5, "shuffle", typesize=8)):
        enc = comp.encode(memoryview(a.astype(f"{'<' if NATIVE == 'little' else '>'}f8").tobytes()))
        dest = np.zeros_like(a)
        assert comp.decode(enc, out=dest) is dest  # straight into the caller's buffer
        np.testing.assert_array_equal(dest, a)
        small = np.zeros(4095)
        with pytest.raises(CorruptChunkError):  # more than out holds: refused before decoding (bombs)
            comp.decode(enc, out=small)
        large = np.zeros(4097)
        assert comp.decode(enc, out=large) is not large  # fewer bytes: out ignored, the caller checks
    # a zstd frame without a content size (streaming writer) still decodes
    assert bytes(ZstdCodec().decode(b"\x28\xb5\x2f\xfd" + bytes(ZstdCodec().encode(b"x"))[4:])) == b"x"


@pytest.mark.parametrize("compressor", COMPRESSORS[::2], ids=repr)
def test_compressor_garbage_raises_codec_error(compressor: Any) -> None:
    with pytest.raises(CodecError) as info:
        compressor.decode(b"this is not compressed data at all")
    assert info.value.codec == compressor.name
    assert info.value.__cause__ is not None


def test_wrong_decoded_size_through_compressor() -> None:
    chain = CodecChain([BytesCodec("little"), ZstdCodec()])
    enc = chain.encode(np.zeros((2, 3), "int32"))
    with pytest.raises(CorruptChunkError, match="needs 32 bytes, got 24"):
        chain.decode(enc, (2, 4), np.dtype("int32"))
    with pytest.raises(CorruptChunkError, match="needs 32 bytes, got 24"):
        chain.decode(enc, (2, 4), np.dtype("int32"), out=np.empty((2, 4), "int32"))


@pytest.mark.parametrize(
    "codec",
    [GzipCodec(3), ZstdCodec(3, checksum=True), BloscCodec("zstd", 5, "shuffle", typesize=2)],
    ids=repr,
)
def test_codec_objects_are_thread_safe(codec: Any) -> None:
    rng = np.random.default_rng(1)
    datas = [rng.integers(0, 20, 20_000).astype("<u2").tobytes() for _ in range(8)]
    encoded = [bytes(codec.encode(d)) for d in datas]
    barrier = threading.Barrier(4)

    def work(i: int) -> bool:
        if i < 4:
            barrier.wait()
        d = datas[i % 8]
        return bytes(codec.decode(codec.encode(d))) == d and bytes(codec.decode(encoded[i % 8])) == d

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(64)))


# --- crc32c ---------------------------------------------------------------------------------------------
def test_crc32c_vectors() -> None:
    assert crc32c_value(b"123456789") == 0xE3069283
    c = Crc32cCodec()
    enc = bytes(c.encode(bytes(range(10))))
    assert enc == bytes(range(10)) + bytes([0x31, 0x21, 0x2C, 0x02])
    assert c.encoded_size(10) == 14
    assert bytes(c.decode(enc)) == bytes(range(10))
    assert bytes(c.encode(b"123456789"))[-4:] == struct.pack("<I", 0xE3069283)


def test_crc32c_mismatch_and_truncation() -> None:
    c = Crc32cCodec()
    enc = bytearray(c.encode(bytes(range(10))))
    enc[3] ^= 0xFF
    with pytest.raises(ChecksumError) as info:
        c.decode(bytes(enc))
    msg = str(info.value)
    assert "0x022C2131" in msg  # stored value
    assert f"0x{crc32c_value(bytes(enc[:-4])):08X}" in msg  # computed value
    assert info.value.codec == "crc32c"
    with pytest.raises(CorruptChunkError):
        c.decode(b"\x01\x02")
    # the PR-era N5 checksum (plain CRC-32, big-endian) is refused
    import zlib

    bad = bytes(range(10)) + struct.pack(">I", zlib.crc32(bytes(range(10))))
    with pytest.raises(ChecksumError):
        c.decode(bad)


def test_crc32c_decode_is_zero_copy() -> None:
    enc = bytearray(Crc32cCodec().encode(b"abcdef"))
    out = Crc32cCodec().decode(enc)
    enc[0] = ord("X")
    assert bytes(out) == b"Xbcdef"


# --- chain ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "codecs, match",
    [
        ([], "empty"),
        ([GzipCodec()], "before the array->bytes"),
        ([TransposeCodec([0])], "no array->bytes"),
        ([BytesCodec(), BytesCodec()], "second array->bytes"),
        ([BytesCodec(), TransposeCodec([0])], "after the array->bytes"),
        ([BytesCodec(), GzipCodec(), TransposeCodec([0])], "after the array->bytes"),
        ("bytes", "list of codecs"),
    ],
)
def test_chain_order_validation(codecs: Any, match: str) -> None:
    with pytest.raises(MetadataError, match=match):
        CodecChain(codecs)


def test_chain_attributes_json_and_sizes() -> None:
    js = [
        {"name": "transpose", "configuration": {"order": [1, 0]}},
        {"name": "bytes", "configuration": {"endian": "big"}},
        {"name": "crc32c"},
        {"name": "crc32c"},
    ]
    chain = CodecChain.from_json(js)
    assert chain.to_json() == js
    assert isinstance(chain.array_array[0], ArrayArrayCodec)
    assert chain.array_bytes == BytesCodec("big")
    assert chain.bytes_bytes == (Crc32cCodec(), Crc32cCodec())
    assert not isinstance(chain.array_bytes, ShardingCodec)
    assert chain.encoded_size((3, 4), np.dtype("float32")) == 48 + 8
    assert chain == CodecChain.from_json(js) and chain != CodecChain.from_json(js[1:])
    assert len({chain, CodecChain.from_json(js)}) == 1
    a = sample("float32", (3, 4))
    enc = bytes(chain.encode(a))
    assert len(enc) == 56
    np.testing.assert_array_equal(chain.decode(enc, (3, 4), "float32"), a)
    sharded = CodecChain([ShardingCodec((2, 2))])
    assert sharded.encoded_size((4, 4), "uint8") is None
    assert CodecChain([BytesCodec(), GzipCodec()]).encoded_size((3,), "uint8") is None


def test_chain_fast_path_is_zero_copy() -> None:
    a = np.arange(12, dtype="float32").reshape(3, 4)
    chain = CodecChain([BytesCodec(NATIVE)])
    enc = chain.encode(a)
    assert np.shares_memory(np.frombuffer(enc, np.uint8), a)
    data = bytes(enc)
    assert np.shares_memory(chain.decode(data, (3, 4), "float32"), np.frombuffer(data, np.uint8))


class _BoomCodec(BytesBytesCodec):
    name: ClassVar[str] = "test_boom"

    def encode(self, data):
        raise struct.error("boom on encode")

    def decode(self, data):
        raise KeyError("boom on decode")


def test_chain_wraps_foreign_exceptions() -> None:
    register_codec(_BoomCodec)
    chain = CodecChain([BytesCodec(), {"name": "test_boom"}])
    with pytest.raises(CodecError, match="test_boom") as info:
        chain.encode(np.zeros(3, "uint8"))
    assert info.value.codec == "test_boom" and isinstance(info.value.__cause__, struct.error)
    with pytest.raises(CodecError, match="test_boom") as info:
        chain.decode(b"abc", (3,), "uint8")
    assert isinstance(info.value.__cause__, KeyError)
    # altarr errors pass through unchanged
    with pytest.raises(ChecksumError):
        CodecChain([BytesCodec(), Crc32cCodec()]).decode(b"abcdefg", (3,), "uint8")


class _SpyZstd(ZstdCodec):
    """Records whether the chain handed the decompressor the caller's output buffer."""

    def __init__(self) -> None:
        super().__init__(1)
        self.outs: list[Any] = []

    def decode_capped(self, data, max_size, out=None):
        self.outs.append(out)
        return super().decode_capped(data, max_size, out)


@pytest.mark.parametrize("endian", [NATIVE, FOREIGN])
def test_chain_decompresses_straight_into_out(endian: str) -> None:
    spy = _SpyZstd()
    chain = CodecChain([BytesCodec(endian), spy, Crc32cCodec()])
    a = sample("int32", (16, 8))
    enc = chain.encode(a)
    dest = np.empty_like(a)
    assert chain.decode(enc, a.shape, a.dtype, out=dest) is dest
    np.testing.assert_array_equal(dest, a)
    # only when no byte swap is needed may the decompressor write into out directly
    assert (spy.outs[-1] is dest) == (endian == NATIVE)
    view = np.empty((16, 16), "int32")[:, ::2]  # non-contiguous destination: copied into
    assert chain.decode(enc, a.shape, a.dtype, out=view) is view
    assert spy.outs[-1] is None
    np.testing.assert_array_equal(view, a)


@pytest.mark.parametrize("level", [-5, 0, 3, 19])
@pytest.mark.parametrize("checksum", [False, True])
def test_zstd_frames_decode_everywhere_with_content_size_and_asked_checksum(level, checksum):
    """ZstdCodec compresses with python-zstandard (its cffi backend where cffi is installed): the frames
    must carry the content size (decoding straight into a buffer relies on it) and the checksum flag
    when asked, be the frames python-zstandard's default backend writes, and decode with numcodecs' zstd."""
    import zstandard
    from numcodecs import Zstd

    from altarr.codecs.bounded import zstd_content_size
    from altarr.codecs.compress import ZstdCodec

    a = (np.arange(50_000) % 977).astype("<u2")
    frame = memoryview(ZstdCodec(level=level, checksum=checksum).encode(a)).cast("B")
    assert zstd_content_size(frame) == a.nbytes
    assert bool(frame[4] & 0x04) == checksum  # Content_Checksum_flag of the frame header
    default = zstandard.ZstdCompressor(level=level, write_checksum=checksum, write_content_size=True)
    assert bytes(frame) == default.compress(a)
    np.testing.assert_array_equal(np.frombuffer(Zstd().decode(frame), "<u2"), a)
    out = np.empty_like(a)
    assert ZstdCodec().decode(frame, out=out) is out and np.array_equal(out, a)


def test_zstd_decodes_into_out_with_the_kernel_and_numcodecs_names_what_it_refuses(monkeypatch):
    """With the native kernel active, a zstd frame announcing out's size decodes into ``out`` through the
    kernel's libzstd (one reused context a thread); a frame the kernel refuses (a bad checksum) goes to
    numcodecs, whose error names the failure; a frame of another size never reaches the kernel."""
    from altarr import native
    from altarr.codecs.compress import ZstdCodec

    ext = native.loaded()
    if ext is None:
        pytest.skip("native kernel not built here")
    calls: list[int] = []

    class Counting:
        def decompress(self, codec: int, frame: Any, out: Any) -> bool:
            calls.append(codec)
            return bool(ext.decompress(codec, frame, out))

    monkeypatch.setattr(native, "ext", Counting())
    a = (np.arange(50_000) % 977).astype("<u2")
    codec = ZstdCodec(level=3, checksum=True)
    frame = bytes(codec.encode(a))
    out = np.empty_like(a)
    assert codec.decode(frame, out=out) is out and np.array_equal(out, a) and calls == [1]
    bad = bytearray(frame)
    bad[-1] ^= 0xFF  # the frame's checksum
    with pytest.raises(ChecksumError, match="zstd decompression failed"):
        codec.decode(bytes(bad), out=np.empty_like(a))
    assert calls == [1, 1]
    assert np.array_equal(np.frombuffer(codec.decode(frame, out=np.empty(a.size + 5, "<u2")), "<u2"), a)
    assert calls == [1, 1]
