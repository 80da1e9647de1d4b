"""One codec registry: N5 compressions live in it (namespace "n5") and adapt the shared compressors."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from altarr.codecs import get_codec_class, registered_codecs
from altarr.codecs.compress import BloscCodec, ZstdCodec
from altarr.codecs.n5 import N5BlockCodec
from altarr.codecs.n5_compressions import (
    BloscCompression,
    ZstdCompression,
    compression_from_n5_json,
    register_n5_compression,
)
from altarr.errors import MetadataError, UnknownCodecError

SRC = Path(__file__).resolve().parents[2] / "src" / "altarr"


def test_n5_compressions_are_in_the_shared_registry_under_their_namespace():
    n5 = registered_codecs("n5")
    assert sorted(n5) == ["blosc", "bzip2", "gzip", "lz4", "raw", "xz", "zstd"]
    assert get_codec_class("zstd", namespace="n5") is ZstdCompression
    assert get_codec_class("zstd") is ZstdCodec  # the Zarr v3 name is another class
    assert "raw" not in registered_codecs()  # namespaces do not leak into each other
    with pytest.raises(UnknownCodecError, match="unknown N5 compression type 'nope'"):
        compression_from_n5_json({"type": "nope"})
    with pytest.raises(MetadataError, match="already registered"):

        @register_n5_compression
        class Other(ZstdCompression):  # a second class under a taken name is refused
            name = "zstd"


@pytest.mark.parametrize("level", [1, 3, 9])
def test_n5_zstd_is_the_shared_compressor(level):
    data = np.arange(50_000, dtype=">u2").tobytes()
    assert bytes(ZstdCompression(level).encode(data)) == bytes(ZstdCodec(level=level).encode(data))


@pytest.mark.parametrize("shuffle", [-1, 0, 1, 2])
@pytest.mark.parametrize("typesize", [1, 2, 4, 8])
def test_n5_blosc_frames_are_numcodecs_frames(shuffle, typesize):
    from numcodecs import Blosc

    data = (np.arange(40_000, dtype="<u4") % 1013).astype(">u4").tobytes()
    arr = np.frombuffer(data, np.uint8)
    typed = arr.view(f"u{typesize}") if typesize > 1 else arr
    expected = Blosc(cname="lz4", clevel=5, shuffle=shuffle, blocksize=0).encode(typed)
    c = BloscCompression(cname="lz4", clevel=5, shuffle=shuffle)
    frame = c.encode_typed(data, typesize)
    assert bytes(frame) == bytes(expected)
    assert bytes(c.decode(frame)) == data
    assert isinstance(c._shared(typesize), BloscCodec)


@pytest.mark.parametrize("compression", [ZstdCompression(3), BloscCompression("zstd", 5, 1)])
def test_n5_blocks_decode_into_their_buffer(compression, monkeypatch):
    """The innermost zstd/blosc compression of an N5 block decodes into a buffer the size of the block
    (the shared compressors' ``out=`` path), not into a new buffer numcodecs allocates."""
    seen = []
    owner = ZstdCodec if isinstance(compression, ZstdCompression) else BloscCodec
    orig = owner._decode

    def spy(self, mv, out):
        seen.append(None if out is None else out.nbytes)
        return orig(self, mv, out)

    monkeypatch.setattr(owner, "_decode", spy)
    codec = N5BlockCodec(compression)
    block = np.arange(64 * 32, dtype="uint16").reshape(64, 32)
    got = codec.decode(codec.encode(block), (64, 32), np.dtype("uint16"))
    np.testing.assert_array_equal(got, block)
    assert seen == [block.nbytes]


def _function_level_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef):
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom):
                    found.append("." * node.level + (node.module or ""))
    return found


def test_no_import_cycles_hidden_in_functions():
    assert ".sharding" not in _function_level_imports(SRC / "codecs" / "chain.py")
    assert ".api" not in _function_level_imports(SRC / "dataset" / "group.py")
    group_top = [
        n.module
        for n in ast.parse((SRC / "dataset" / "group.py").read_text()).body
        if isinstance(n, ast.ImportFrom)
    ]
    assert "api" not in group_top
