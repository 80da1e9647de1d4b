"""Zip members stored compressed are inflated by decoders with a cap (issue 34: a 2.5 KB archive whose
bzip2 member ``zipfile`` inflated whole grew memory by 2 GB).

Two kinds of bomb per method, each read through ``altarr.open_dataset("x.zip")`` in a fresh child
process (:mod:`tests.codecs.test_bombs`' reader: peak RSS growth under 64 MB): a member whose entry
declares the size it inflates to (refused before decoding: more than ``MAX_INFLATE_RATIO`` times its
compressed size) and a member whose entry declares a chunk's size while its stream inflates to hundreds
of MiB (the decoder stops at the declared size)."""

from __future__ import annotations

import functools
import lzma
import os
import struct
import zipfile
import zlib

import numpy as np
import pytest
from tests.codecs.test_bombs import LIMIT, GiB, _bz2_bomb, _gzip_bomb, _read_in_subprocess

import altarr as aa
from altarr.capped import bunzip2, inflate
from altarr.stores import ZipStore
from altarr.stores.zip_store import MAX_INFLATE_RATIO, _unlzma

CHUNK = 64 * 64


@functools.cache
def _lzma_member(total: int) -> bytes:
    """A zip LZMA member's data (APPNOTE 5.8.8) of ``total`` zeros: version, properties size, the LZMA1
    properties, then the raw stream (with its end marker)."""
    c = lzma.LZMACompressor(lzma.FORMAT_RAW, filters=[{"id": lzma.FILTER_LZMA1, "preset": 0}])
    block = bytes(64 << 20)
    stream = b"".join(c.compress(block) for _ in range(total // len(block))) + c.flush()
    lc, lp, pb, dict_size = 3, 0, 2, 1 << 20  # preset 0's properties
    props = bytes([(pb * 5 + lp) * 9 + lc]) + dict_size.to_bytes(4, "little")
    return bytes([9, 20, 5, 0]) + props + stream


def _stream(method: int, total: int) -> bytes:
    """A member's compressed data that inflates to ``total`` zeros."""
    if method == zipfile.ZIP_DEFLATED:
        return _gzip_bomb(total, 15)[2:-4]  # the zlib stream's raw deflate data
    if method == zipfile.ZIP_BZIP2:
        return _bz2_bomb(total)
    return _lzma_member(total)


def _zero_crc(n: int) -> int:
    crc, block = 0, bytes(64 << 20)
    for i in range(0, n, len(block)):
        crc = zlib.crc32(block[: min(len(block), n - i)], crc)
    return crc


def _patch(path: str, key: str, method: int, declared: int, crc: int) -> None:
    """Make the stored member ``key`` of ``path`` a ``method`` member declaring ``declared`` bytes."""
    with zipfile.ZipFile(path) as zf:
        info, c = zf.getinfo(key), zf.start_dir  # the central directory's start
    with open(path, "r+b") as f:
        buf = bytearray(f.read())
        h = info.header_offset
        struct.pack_into("<H", buf, h + 8, method)
        struct.pack_into("<II", buf, h + 14, crc, info.compress_size)
        struct.pack_into("<I", buf, h + 22, declared)
        while buf[c + 46 : c + 46 + len(key)] != key.encode():
            c = buf.index(b"PK\x01\x02", c + 4)
        struct.pack_into("<H", buf, c + 10, method)
        struct.pack_into("<II", buf, c + 16, crc, info.compress_size)
        struct.pack_into("<I", buf, c + 24, declared)
        f.seek(0)
        f.write(buf)


def _archive_with_bomb(tmp_path, method: int, honest: bool) -> str:
    """A Zarr v3 array in a zip whose chunk (0, 0) is good and chunk (1, 0) is a ``method`` bomb."""
    path = str(tmp_path / "bomb.zip")
    with ZipStore(path, mode="w") as store:
        ds = aa.create_dataset(store, shape=(128, 64), dtype="u1", chunks=(64, 64), compressor=None)
        ds.write_chunks([(0, 0)], [np.full((64, 64), 7, "u1")])
        total = GiB if honest and method == zipfile.ZIP_BZIP2 else 128 << 20
        store.set("c/1/0", _stream(method, total))
    declared = total if honest else CHUNK
    _patch(path, "c/1/0", method, declared, _zero_crc(declared))
    return path


METHODS = {"deflate": zipfile.ZIP_DEFLATED, "bzip2": zipfile.ZIP_BZIP2, "lzma": zipfile.ZIP_LZMA}


@pytest.mark.parametrize("name", list(METHODS))
def test_a_member_whose_stream_outgrows_its_entry_stops_there(tmp_path, name):
    path = _archive_with_bomb(tmp_path, METHODS[name], honest=False)
    got = _read_in_subprocess(path, "chunks")
    assert got["outcome"].startswith("StoreError: zip member failed to decompress"), got
    assert "c/1/0" in got["outcome"] and "decompression stopped" in got["outcome"], got
    assert got["growth"] < LIMIT, f"{name}: peak memory grew by {got['growth'] / 2**20:.0f} MiB"


@pytest.mark.parametrize("name", ["bzip2", "lzma"])  # deflate cannot pass 1032:1
def test_a_member_declaring_a_bomb_is_refused_before_inflating(tmp_path, name):
    path = _archive_with_bomb(tmp_path, METHODS[name], honest=True)
    got = _read_in_subprocess(path, "region")
    assert got["outcome"].startswith("StoreError: zip member declares"), got
    assert f"more than {MAX_INFLATE_RATIO}:1" in got["outcome"] and "c/1/0" in got["outcome"], got
    assert got["growth"] < LIMIT, f"{name}: peak memory grew by {got['growth'] / 2**20:.0f} MiB"


@pytest.mark.parametrize("name", list(METHODS))
def test_the_bomb_streams_really_inflate_past_the_limit(name):
    """Each stream above inflates to more than the limit (so the caps, not the payloads, keep memory
    down): decoded with the limit as the cap, each stops."""
    raw = _stream(METHODS[name], 128 << 20)
    decode = {"deflate": lambda: inflate(raw, LIMIT, wbits=-15), "bzip2": lambda: bunzip2(raw, LIMIT)}
    with pytest.raises(aa.errors.CorruptChunkError, match="decompression stopped"):
        decode.get(name, lambda: _unlzma(raw, LIMIT))()


@pytest.mark.parametrize("name", list(METHODS))
def test_compressed_members_read_and_append(tmp_path, name):
    """Members compressed by ``zipfile`` read back whole and by range, also while appending (staging)."""
    path = str(tmp_path / "ok.zip")
    data = os.urandom(3000) + bytes(200_000)
    with zipfile.ZipFile(path, "w", compression=METHODS[name]) as zf:
        zf.writestr("k", data)
    with ZipStore(path) as z:
        assert z.get("k") == data and z.get_ranges([("k", aa.stores.Range(2990, 3010))])[0] == data[2990:3010]
    with ZipStore(path, mode="a") as z:
        assert z.get("k") == data
        z.set("k", b"new")
        assert z.get("k") == b"new"
    with zipfile.ZipFile(path) as zf:
        assert zf.read("k") == b"new"
