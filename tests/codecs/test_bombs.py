"""Decompression bombs: a few KB that inflate to GBs must fail with CorruptChunkError at the chunk's size,
with peak memory growth (measured in a fresh subprocess: peak RSS after the read minus RSS before it)
under 64 MB, on every read path (region read, batched read_chunks, visit, lazy altarr.open).

The bombs are the four of issue 11 (a bzip2 N5 block for a 4x4 chunk, zstd frames without a content
size, gzip, blosc), plus the Zarr v2 zlib/bz2/lzma compressors and a bomb inside a shard. Each would
decode to at least 1 GiB (checked below), so the bound is real: the decoders stop at the chunk size."""

from __future__ import annotations

import bz2
import functools
import gzip
import json
import lzma
import os
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

import altarr as aa

GiB = 1 << 30
LIMIT = 64 << 20


# Each bomb is one small stream of zeros repeated (formats that allow concatenated streams or frames)
# or one stream compressed from a repeated block; built once per session.
@functools.cache
def _gzip_bomb(total: int, wbits: int = 31) -> bytes:
    """Concatenated gzip members (or one zlib stream) of zeros, ``total`` bytes decoded."""
    block = bytes(64 << 20)
    if wbits == 15:
        c = zlib.compressobj(1, zlib.DEFLATED, 15)
        return b"".join(c.compress(block) for _ in range(total // len(block))) + c.flush()
    return gzip.compress(block, 1, mtime=0) * (total // len(block))


@functools.cache
def _bz2_stream() -> bytes:
    return bz2.compress(bytes(16 << 20), 9)


def _bz2_bomb(total: int) -> bytes:
    return _bz2_stream() * (total // (16 << 20))


@functools.cache
def _zstd_bomb(total: int) -> bytes:
    import zstandard

    c = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
    frame = c.compress(bytes(64 << 20)) + c.flush()
    return frame * (total // (64 << 20))  # frames without a content size


@functools.cache
def _blosc_bomb(total: int) -> bytes:
    import numcodecs.blosc

    return bytes(numcodecs.blosc.compress(np.zeros(total, np.uint8), b"lz4", 9, 0))


@functools.cache
def _xz_stream() -> bytes:
    return lzma.compress(bytes(16 << 20), format=lzma.FORMAT_XZ, preset=0)


def _xz_bomb(total: int) -> bytes:
    return _xz_stream() * (total // (16 << 20))  # concatenated .xz streams


@functools.cache
def _lz4_bomb(total: int) -> bytes:
    import numcodecs

    return bytes(numcodecs.LZ4().encode(bytes(total)))  # numcodecs' LZ4: the size first, then one block


def _filter_bomb(cid: str) -> bytes:
    """A stream of ``cid`` that decodes to at least 256 MiB (one zlib stream and one lz4 block cannot
    be concatenated: 256 MiB of zeros, 4x the limit, compress fast)."""
    return {
        "zlib": lambda: _gzip_bomb(GiB // 4, 15),
        "zstd": lambda: _zstd_bomb(GiB),
        "lz4": lambda: _lz4_bomb(GiB // 4),
        "blosc": lambda: _blosc_bomb(GiB),
        "lzma": lambda: _xz_bomb(GiB),
        "bz2": lambda: _bz2_bomb(GiB),
    }[cid]()


FILTER_BOMBS = ["zlib", "zstd", "lz4", "blosc", "lzma", "bz2"]


_READER = r"""
import json, resource, sys
import numpy as np, altarr as aa
from altarr.errors import CorruptChunkError

path, how = sys.argv[1], sys.argv[2]
ds = aa.open_dataset(path)
good = ds.read_chunks([(0,) * ds.ndim])[0]  # warm up: libraries loaded, pools started
assert good is not None and good.any()
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()
before = rss()
try:
    if how == "region":
        ds[...]
    elif how == "chunks":
        ds.read_chunks([(1,) + (0,) * (ds.ndim - 1)])
    elif how == "visit":
        ds.visit_chunks([(1,) + (0,) * (ds.ndim - 1)], lambda i, a: None)
    elif how == "lazy":
        np.asarray(aa.open(path))
    outcome = "no error"
except CorruptChunkError as e:
    outcome = "CorruptChunkError: " + str(e)
except BaseException as e:
    outcome = type(e).__name__ + ": " + str(e)
# VmHWM: this process's own peak RSS (ru_maxrss would carry the forking parent's over the exec)
with open("/proc/self/status") as f:
    peak = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
print(json.dumps({"outcome": outcome, "growth": peak - before}))
"""


def _read_in_subprocess(path: str, how: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", _READER, path, how], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _dataset_with_bomb(tmp_path, kind: str) -> tuple[str, int]:
    """A dataset whose chunk 0 is good and whose chunk 1 is the bomb; returns its path and the bomb's
    decoded size (always >= 1 GiB)."""
    path = str(tmp_path / kind)
    if kind == "n5-bzip2":  # issue 11: a bzip2 N5 block for a 4x4 chunk
        ds = aa.create_dataset(path, shape=(8, 4), dtype="u1", chunks=(4, 4), format="n5", compressor="bzip2")
        payload = _bz2_bomb(GiB)
        bomb = struct.pack(">HHII", 0, 2, 4, 4) + payload
    elif kind in ("n5-gzip", "n5-xz", "n5-zstd"):
        comp = kind.split("-")[1]
        ds = aa.create_dataset(path, shape=(8, 4), dtype="u1", chunks=(4, 4), format="n5", compressor=comp)
        payload = {"gzip": _gzip_bomb, "xz": _xz_bomb, "zstd": _zstd_bomb}[comp](GiB)
        bomb = struct.pack(">HHII", 0, 2, 4, 4) + payload
    elif kind in ("zstd", "gzip", "blosc"):  # issue 11: zstd without content size, gzip, blosc
        # no chunk checksum: the decoder, not the crc32c after blosc, must stop the bomb
        ds = aa.create_dataset(
            path, shape=(128, 64), dtype="u1", chunks=(64, 64), compressor=kind, checksum=False
        )
        bomb = {"zstd": _zstd_bomb, "gzip": _gzip_bomb, "blosc": _blosc_bomb}[kind](GiB)
    elif kind == "sharded-gzip":  # refused by the index check: 4.6 MB is more than a 4 KB chunk can take
        ds = aa.create_dataset(
            path, shape=(128, 64), dtype="u1", chunks=(64, 64), shards=(64, 64), compressor="gzip"
        )
        sc = ds._access.layout.sharding[1]
        bomb = sc.assemble([_gzip_bomb(GiB)], (1, 1))
    elif kind == "sharded-zstd":  # small enough for the index check (10 KB): the decoder must stop it
        ds = aa.create_dataset(
            path, shape=(128, 64), dtype="u1", chunks=(64, 64), shards=(64, 64), compressor="zstd"
        )
        sc = ds._access.layout.sharding[1]
        frames = _zstd_bomb(5 * (64 << 20))  # 5 frames without content size: 320 MiB
        assert len(frames) <= ds._access.layout.max_block_bytes[0]
        bomb = sc.assemble([frames], (1, 1))
    elif kind.startswith("zarr2filter-"):  # issue 34: the same streams as a Zarr v2 *filter*
        cid = kind.split("-")[1]
        ds = aa.create_dataset(
            path,
            shape=(128, 64),
            dtype="u1",
            chunks=(64, 64),
            format="zarr2",
            compressor=None,
            filters=[{"id": cid}],
        )
        bomb = _filter_bomb(cid)
    elif kind.startswith("zarr2-"):
        cid = kind.split("-")[1]
        ds = aa.create_dataset(
            path, shape=(128, 64), dtype="u1", chunks=(64, 64), format="zarr2", compressor={"id": cid}
        )
        # (one zlib stream cannot be concatenated: 256 MiB of zeros, still 4x the limit, compresses fast)
        bomb = {"zlib": lambda n: _gzip_bomb(n // 4, 15), "bz2": _bz2_bomb, "lzma": _xz_bomb}[cid](GiB)
    else:
        raise AssertionError(kind)
    ds[...] = 0
    ds.write_chunks([(0,) * ds.ndim], [np.full(ds.chunks, 7, ds.dtype)])
    key = ds._access.layout.key((1,) + (0,) * (ds.ndim - 1))
    ds.store.set(key, bomb)
    assert len(bomb) < 16 << 20  # a small object...
    return path, GiB  # ...that decodes to 1 GiB


ISSUE_BOMBS = ["n5-bzip2", "zstd", "gzip", "blosc"]


def test_bomb_payloads_really_are_bombs():
    """The payloads used below decode (without a cap) to what they claim: each is one stream repeated,
    and one stream decodes to its block, so the whole decodes to 1 GiB (not decoded here)."""
    assert len(bz2.decompress(_bz2_stream())) == 16 << 20
    assert _bz2_bomb(GiB) == _bz2_stream() * 64 and len(_bz2_bomb(GiB)) < 8 << 10
    assert len(lzma.decompress(_xz_stream())) == 16 << 20 and _xz_bomb(GiB) == _xz_stream() * 64
    member = _gzip_bomb(64 << 20)
    assert len(gzip.decompress(member)) == 64 << 20 and _gzip_bomb(GiB) == member * 16
    d = zlib.decompressobj()
    assert len(d.decompress(_gzip_bomb(GiB // 4, 15), 1 << 20)) == 1 << 20 and not d.eof  # 256 MiB
    assert int.from_bytes(_blosc_bomb(GiB)[4:8], "little") == GiB  # blosc 1 header: the decoded size
    import numcodecs

    assert len(numcodecs.LZ4().decode(_lz4_bomb(GiB // 4))) == GiB // 4 and len(_lz4_bomb(GiB // 4)) < 2 << 20


@pytest.mark.parametrize("kind", ISSUE_BOMBS)
@pytest.mark.parametrize("how", ["region", "chunks"])
def test_issue_bombs_fail_with_bounded_memory(tmp_path, kind, how):
    path, size = _dataset_with_bomb(tmp_path, kind)
    got = _read_in_subprocess(path, how)
    assert got["outcome"].startswith("CorruptChunkError"), got
    assert "decompression" in got["outcome"] or "announces" in got["outcome"]
    assert got["growth"] < LIMIT, f"{kind}/{how}: peak memory grew by {got['growth'] / 2**20:.0f} MiB"


@pytest.mark.parametrize(
    "kind,how",
    [
        ("n5-bzip2", "visit"),
        ("n5-bzip2", "lazy"),
        ("gzip", "lazy"),
        ("zstd", "visit"),
        ("sharded-gzip", "region"),
        ("sharded-gzip", "chunks"),
        ("sharded-zstd", "region"),
        ("sharded-zstd", "chunks"),
        ("sharded-zstd", "visit"),
        ("zarr2-zlib", "region"),
        ("zarr2-bz2", "chunks"),
        ("zarr2-lzma", "chunks"),
        ("n5-gzip", "chunks"),
        ("n5-xz", "region"),
        ("n5-zstd", "chunks"),
    ],
)
def test_more_bombs_on_every_read_path(tmp_path, kind, how):
    path, _ = _dataset_with_bomb(tmp_path, kind)
    got = _read_in_subprocess(path, how)
    expected = "CorruptShardError" if kind == "sharded-gzip" else "CorruptChunkError"
    assert got["outcome"].startswith(expected), got
    assert got["growth"] < LIMIT, f"{kind}/{how}: peak memory grew by {got['growth'] / 2**20:.0f} MiB"


def test_measurement_can_fail(tmp_path):
    """The subprocess measurement sees real growth: a legitimate 96 MiB read grows the peak past the
    limit, so a decoder that inflated a bomb would fail the tests above."""
    path = str(tmp_path / "big")
    n = 48 << 20
    ds = aa.create_dataset(path, shape=(2, n), dtype="u1", chunks=(1, n), compressor="zstd")
    ds.write_chunks([(0, 0)], [np.full((1, n), 7, "u1")])
    ds.write_chunks([(1, 0)], [np.full((1, n), 9, "u1")])
    del ds
    got = _read_in_subprocess(path, "region")
    assert got["outcome"] == "no error"
    assert got["growth"] > LIMIT


@pytest.mark.parametrize("cid", FILTER_BOMBS)
def test_zarr2_filter_bombs_fail_with_bounded_memory(tmp_path, cid):
    """Issue 34: a compressor used as a Zarr v2 *filter* stops at what its stage can hold (a 131 KB zstd
    chunk inflated to 4 GiB through a filter before)."""
    path, _ = _dataset_with_bomb(tmp_path, f"zarr2filter-{cid}")
    got = _read_in_subprocess(path, "chunks")
    assert got["outcome"].startswith("CorruptChunkError"), got
    assert f"{cid} decompression stopped" in got["outcome"], got
    assert got["growth"] < LIMIT, f"filter {cid}: peak memory grew by {got['growth'] / 2**20:.0f} MiB"
