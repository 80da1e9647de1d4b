"""The native shard kernel (altarr.dataset.kernel + the C extension altarr._native): the same values,
requests and errors as the pure-Python path, frames each path and numcodecs read from the other, and
bounded decoding. Whether it is built and active, and why not: tests/test_native.py.

The request-contract, interop and bad-input modules run on both paths too (the ``engine_path`` fixture
in conftest.py)."""

from __future__ import annotations

import numcodecs
import numpy as np
import pytest

import altarr as aa
from altarr.codecs import ShardingCodec
from altarr.codecs.compress import BloscCodec, ZstdCodec
from altarr.errors import AltarrError, CodecError
from altarr.native import use_native
from altarr.stores import LocalStore, MemoryStore

pytestmark = pytest.mark.usefixtures("native_required")

BLOSC_LZ4 = {
    "name": "blosc",
    "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2},
}
COMPRESSORS = {
    "zstd3": {"name": "zstd", "configuration": {"level": 3, "checksum": False}},
    "zstd0-checksum": {"name": "zstd", "configuration": {"level": 0, "checksum": True}},
    "zstd-neg": {"name": "zstd", "configuration": {"level": -2, "checksum": False}},
    "blosc-lz4": BLOSC_LZ4,
    "blosc-zstd-bit": {
        "name": "blosc",
        "configuration": {
            "cname": "zstd",
            "clevel": 3,
            "shuffle": "bitshuffle",
            "typesize": 4,
            "blocksize": 4096,
        },
    },
    "blosc-noshuffle": {
        "name": "blosc",
        "configuration": {"cname": "blosclz", "clevel": 9, "shuffle": "noshuffle"},
    },
}


def test_datasets_of_kernel_chains_get_a_kernel_plan():
    ds = aa.create_dataset(MemoryStore(), shape=(8, 8), dtype="u2", chunks=(4, 4), shards=(8, 8))
    assert ds._access.codec.native is not None and ds._access.codec.native.writes


def _stores(tmp_path, name):
    return {"memory": MemoryStore(), "local": LocalStore(tmp_path / name)}


def _objects(store):
    return {k: bytes(store.get(k)) for k in store.list("") if not k.endswith(".json")}


def _chunk_frames(ds):
    """Every stored chunk's frame, by chunk: the shards split by their index."""
    sc, grid = ds._access.layout.sharding[1], ds._access.grid
    frames = {}
    for key in ds.store.list(""):
        if key.endswith(".json"):
            continue
        shard = tuple(int(p) for p in key.split("/")[1:])
        pieces = sc.split(ds.store.get(key), grid.per_block(1))
        for i, piece in enumerate(pieces):
            if piece is not None:
                frames[(shard, i)] = bytes(piece)
    return frames


def _numcodecs_codec(config):
    """numcodecs' own codec for one of COMPRESSORS (what numcodecs-based readers decode with)."""
    cfg = dict(config["configuration"])
    if config["name"] == "zstd":
        return numcodecs.Zstd(level=cfg["level"], checksum=cfg["checksum"])
    shuffle = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}[cfg["shuffle"]]
    return numcodecs.Blosc(
        cname=cfg["cname"],
        clevel=cfg["clevel"],
        shuffle=shuffle,
        blocksize=cfg["blocksize"] if "blocksize" in cfg else 0,
    )


@pytest.mark.parametrize("where", ["memory", "local"])
@pytest.mark.parametrize("comp", list(COMPRESSORS))
@pytest.mark.parametrize("dtype", ["uint8", "uint16", "int32", "float32", "float64"])
def test_each_path_reads_what_the_other_wrote(tmp_path, where, comp, dtype):
    """The kernel (libzstd and c-blosc as linked) and the pure-Python path (python-zstandard, numcodecs)
    store the same chunks, each reads the other's, and numcodecs decodes every frame of both."""
    rng = np.random.default_rng(1)
    shape = (21, 18, 13)  # edge chunks and edge shards along every axis
    data = (rng.normal(50, 20, shape)).astype(dtype)
    data[:8, :8, :8] = 0  # whole chunks of the fill value: not stored on either path
    want = data.copy()
    want[3:20:2, ::-3, 5] += 1
    made = {}
    for on in (True, False):
        store = _stores(tmp_path, f"s{on}")[where]
        ds = aa.create_dataset(
            store, shape=shape, dtype=dtype, chunks=(4, 4, 4), shards=(8, 8, 8), compressor=COMPRESSORS[comp]
        )
        with use_native(on):
            ds[...] = data
            ds[3:20:2, ::-3, 5] = data[3:20:2, ::-3, 5] + 1  # merges of partly covered chunks
        made[on] = ds
    frames = {on: _chunk_frames(ds) for on, ds in made.items()}
    assert frames[True].keys() == frames[False].keys()  # the same chunks stored, fill chunks in neither
    reference = _numcodecs_codec(COMPRESSORS[comp])
    for on in (True, False):
        for frame in frames[on].values():
            assert len(reference.decode(frame)) == 4 * 4 * 4 * np.dtype(dtype).itemsize
    sels = [
        np.s_[...],
        np.s_[1:20, 2:17:3, ::-1],
        np.s_[7, :, 4:9],
        np.s_[::5, ::-4, ::6],
        np.s_[4:8, 8:16, 0:4],
    ]
    for written_by, ds in made.items():
        for read_by in (True, False):
            with use_native(read_by):
                for sel in sels:
                    np.testing.assert_array_equal(
                        ds[sel], want[sel], err_msg=f"{written_by=} {read_by=} {sel}"
                    )


@pytest.mark.parametrize(
    ("dtype", "inner"), [("u1", 16), ("u2", 16), ("f4", 16), ("u2", 48), ("f8", 16), ("u1", 12)]
)
def test_rows_of_16_to_128_bytes_take_the_fixed_size_copy(dtype, inner):
    """Chunk rows of 16, 32, 64 and 128 bytes are copied by the kernel's fixed-size loop (reads: scratch
    to result; writes: source to scratch); 12 and 96 bytes take the general one. Values equal NumPy's
    and the pure-Python path's, over whole, partial, stepped and reversed selections."""
    rng = np.random.default_rng(3)
    shape = (7, 9, 2 * inner + 5)
    data = rng.integers(0, 200, shape).astype(dtype)
    stores = {}
    for on in (True, False):
        ds = aa.create_dataset(
            MemoryStore(), shape=shape, dtype=dtype, chunks=(3, 4, inner), shards=(6, 8, 2 * inner),
            compressor="zstd",
        )  # fmt: skip
        with use_native(on):
            ds[...] = data
            ds[1:6, 2:9, inner : 2 * inner] = data[1:6, 2:9, inner : 2 * inner] + 1
        stores[on] = ds
    want = data.copy()
    want[1:6, 2:9, inner : 2 * inner] += 1
    sels = [np.s_[...], np.s_[1:6, 3:8, :], np.s_[::2, ::-1, inner:], np.s_[2, :, 1:-1], np.s_[:, :, ::3]]
    for on, ds in stores.items():
        for sel in sels:
            with use_native(on):
                np.testing.assert_array_equal(ds[sel], want[sel])


def test_chunks_that_are_one_run_of_the_result_decode_straight_into_it(tmp_path):
    """Chunks spanning the trailing dimensions are contiguous in the result (decoded in place)."""
    data = np.arange(16 * 32 * 24, dtype="uint16").reshape(16, 32, 24)
    ds = aa.create_dataset(
        LocalStore(tmp_path / "s"), shape=data.shape, dtype="u2", chunks=(2, 32, 24), shards=(8, 32, 24)
    )
    ds[...] = data
    np.testing.assert_array_equal(ds[...], data)
    np.testing.assert_array_equal(ds[2:14], data[2:14])
    np.testing.assert_array_equal(ds[3:13], data[3:13])  # partial first/last chunks: scattered


@pytest.mark.parametrize(
    "values",
    [
        lambda d: 7,  # a broadcast scalar: zero strides
        lambda d: d[::-1, ::-1],  # negative strides
        lambda d: np.asfortranarray(d),
        lambda d: d.astype("int64"),  # cast to the dataset's dtype first
    ],
)
def test_writes_gather_any_source_layout(values):
    data = np.arange(40 * 36, dtype="uint16").reshape(40, 36)
    src = values(data)
    want = np.broadcast_to(np.asarray(src).astype("uint16"), data.shape)
    for on in (True, False):
        made = {}
        for values_written in (src, np.ascontiguousarray(want)):
            ds = aa.create_dataset(
                MemoryStore(), shape=data.shape, dtype="u2", chunks=(8, 8), shards=(16, 16)
            )
            with use_native(on):
                ds[...] = values_written
            np.testing.assert_array_equal(ds[...], want)
            made[values_written is src] = _objects(ds.store)
        assert made[True] == made[False]  # byte for byte what a C-ordered copy of the values writes


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fill_chunks_by_value_not_bytes(dtype):
    """-0.0 equals a 0.0 fill and any NaN a NaN fill (as in DatasetAccess.is_fill), on both paths."""
    for fill, stored_as in ((0.0, -0.0), (float("nan"), np.float64("nan") * -1)):
        keys = {}
        for on in (True, False):
            ds = aa.create_dataset(
                MemoryStore(), shape=(8, 8), dtype=dtype, chunks=(4, 4), shards=(8, 8), fill_value=fill
            )
            with use_native(on):
                ds[...] = np.full((8, 8), stored_as, dtype)
                ds[0, 0] = 1.5
            keys[on] = sorted(ds.store.list(""))
            np.testing.assert_array_equal(ds[4:, 4:], np.full((4, 4), fill, dtype))
        assert keys[True] == keys[False]


def test_write_empty_chunks_stores_fill_chunks_on_both_paths():
    out = {}
    for on in (True, False):
        ds = aa.create_dataset(
            MemoryStore(), shape=(8, 8), dtype="u2", chunks=(4, 4), shards=(8, 8), write_empty_chunks=True
        )
        with use_native(on):
            ds[...] = 0
        out[on] = _chunk_frames(ds)
        np.testing.assert_array_equal(ds[...], np.zeros((8, 8), "u2"))
    assert out[True].keys() == out[False].keys() and len(out[True]) == 4  # all 4 chunks of the one shard


@pytest.mark.parametrize("comp", ["zstd3", "blosc-lz4"])
def test_same_requests_on_both_paths(tmp_path, comp):
    """Region reads on local files: the kernel's own preads count as the engine's reads did."""
    data = np.arange(32 * 32, dtype="uint16").reshape(32, 32)
    store = LocalStore(tmp_path / "s")
    ds = aa.create_dataset(
        store, shape=(32, 32), dtype="u2", chunks=(4, 4), shards=(16, 16), compressor=COMPRESSORS[comp]
    )
    ds[...] = data
    counts = {}
    for on in (True, False):
        with use_native(on):
            ds._access.index_cache.clear()
            store.stats.reset()
            np.testing.assert_array_equal(ds[1:7, 14:19], data[1:7, 14:19])
            cold = store.stats.as_dict()
            store.stats.reset()
            np.testing.assert_array_equal(ds[...], data)
            counts[on] = (cold, store.stats.as_dict())
    assert counts[True] == counts[False]
    # 2 indexes + 4 chunks; then the 2 indexes not cached yet + 64 chunks
    assert counts[True][0]["reads"] == 2 + 4 and counts[True][1]["reads"] == 2 + 64


def _corrupt_shard(ds, chunk, payload):
    """Replace one chunk's stored bytes (the shard rebuilt around it, index and checksum included)."""
    key = ds.chunk_key(chunk)
    sc = ds._access.layout.sharding[1]
    cps = ds._access.grid.per_block(1)
    entries = sc.split(ds.store.get(key), cps)
    entries = [None if e is None else bytes(e) for e in entries]
    entries[ds._access.grid.flat_index([c % n for c, n in zip(chunk, cps, strict=True)], 1)] = payload
    ds.store.set(key, sc.assemble(entries, cps))
    return key


def _error(ds, on, sel=np.s_[...]):
    with use_native(on), pytest.raises(AltarrError) as info:
        ds[sel]
    return info.value


@pytest.mark.parametrize("where", ["memory", "local"])
@pytest.mark.parametrize(
    "comp, payload",
    [
        ("zstd3", lambda: ZstdCodec(3).encode(np.zeros(15, "u2").tobytes())),  # one element short
        ("zstd3", lambda: ZstdCodec(3).encode(np.zeros(10_000, "u2").tobytes())),  # a bomb, 600x larger
        ("zstd3", lambda: b"\x28\xb5\x2f\xfd" + b"\x00garbage" * 3),
        ("zstd3", lambda: b""),
        ("blosc-lz4", lambda: bytes(16) + b"x" * 20),
        ("blosc-lz4", lambda: _blosc(np.zeros(10_000, "u2"))),  # claims far more than the chunk
        ("blosc-lz4", lambda: _blosc(np.zeros(15, "u2"))),
    ],
)
def test_bad_chunks_raise_the_same_error_on_both_paths(tmp_path, where, comp, payload):
    """A frame that does not decode to exactly the chunk's size is an error naming key, chunk and codec
    (the destination is never overrun): the kernel hands the chunk to the Python path, which says why."""
    store = _stores(tmp_path, "s")[where]
    ds = aa.create_dataset(
        store, shape=(8, 8), dtype="u2", chunks=(4, 4), shards=(8, 8), compressor=COMPRESSORS[comp]
    )
    ds[...] = np.arange(64, dtype="uint16").reshape(8, 8) + 1
    key = _corrupt_shard(ds, (1, 0), payload())
    kernel_error, python_error = _error(ds, True), _error(ds, False)
    assert type(kernel_error) is type(python_error) and str(kernel_error) == str(python_error)
    assert kernel_error.key == key and kernel_error.chunk == (1, 0)
    np.testing.assert_array_equal(ds[:4, :], np.arange(32).reshape(4, 8) + 1)  # its neighbours still read


def _blosc(a):
    return bytes(BloscCodec(cname="lz4", clevel=5, shuffle="shuffle", typesize=2).encode(a.tobytes()))


@pytest.mark.parametrize("comp", ["zstd3", "blosc-lz4"])
def test_a_failing_encode_in_the_kernel_goes_to_the_python_path_and_nothing_is_written(monkeypatch, comp):
    """The codec refuses a chunk the kernel gathered; the Python path then raises naming the chunk, and
    nothing is written."""
    ds = aa.create_dataset(
        MemoryStore(), shape=(8, 8), dtype="u2", chunks=(4, 4), shards=(8, 8), compressor=COMPRESSORS[comp]
    )
    ds[...] = 1
    before = _objects(ds.store)

    calls = []

    def failing(self, data, out=None):
        calls.append(1)
        raise CodecError("disk on fire", codec=self.name)

    codec = ZstdCodec if comp == "zstd3" else BloscCodec
    monkeypatch.setattr(codec, "encode", failing)
    monkeypatch.setattr(codec, "encode_into", failing)
    with pytest.raises(CodecError, match="disk on fire") as info:
        ds[...] = np.arange(64, dtype="uint16").reshape(8, 8)
    assert info.value.key == ds.chunk_key((0, 0)) and calls
    assert _objects(ds.store) == before


def test_missing_chunks_and_other_chains_mix_with_kernel_chunks(tmp_path):
    ds = aa.create_dataset(
        LocalStore(tmp_path / "s"), shape=(16, 16), dtype="i4", chunks=(4, 4), shards=(8, 8), fill_value=-1
    )
    ds[0:8, 0:8] = 5  # one shard stored, three missing
    want = np.full((16, 16), -1, "i4")
    want[:8, :8] = 5
    np.testing.assert_array_equal(ds[...], want)
    gz = aa.create_dataset(MemoryStore(), shape=(16, 16), dtype="i4", chunks=(4, 4), compressor="gzip")
    assert gz._access.codec.native is None  # gzip: pure-Python path
    gz[...] = want
    np.testing.assert_array_equal(gz[...], want)


def test_shard_assembly_of_kernel_output_is_the_codecs():
    """The kernel compresses into arena rows; the shard around them is ShardingCodec's (index, crc32c)."""
    ds = aa.create_dataset(MemoryStore(), shape=(8, 8), dtype="u2", chunks=(4, 4), shards=(8, 8))
    ds[...] = np.arange(64, dtype="uint16").reshape(8, 8)
    blob = ds.store.get(ds.chunk_key((0, 0)))
    zstd = {"name": "zstd", "configuration": {"level": 0, "checksum": False}}
    sc = ShardingCodec((4, 4), codecs=[{"name": "bytes", "configuration": {"endian": "little"}}, zstd])
    pieces = sc.split(blob, (2, 2))
    assert all(p is not None for p in pieces)
    np.testing.assert_array_equal(sc.decode(blob, (8, 8), "uint16"), np.arange(64).reshape(8, 8))


def test_region_reads_leave_no_stored_chunk_to_the_python_path(monkeypatch):
    """Every stored chunk of a region read is decoded by the kernel, whatever the selection: a task
    whose geometry were wrong (a count or a start off) would be refused by the kernel's bounds check and
    fall back to the Python path with the same values, so values alone cannot tell."""
    from altarr.dataset.chunk_codec import ChunkCodec

    rng = np.random.default_rng(5)
    data = rng.integers(1, 60000, (21, 18, 13)).astype("u2")  # no chunk equals the fill value
    ds = aa.create_dataset(
        MemoryStore(), shape=data.shape, dtype="u2", chunks=(4, 4, 4), shards=(8, 8, 8), compressor="zstd"
    )
    ds[...] = data
    python_path = []
    real = ChunkCodec.decode_chunk
    monkeypatch.setattr(
        ChunkCodec, "decode_chunk", lambda self, *a, **k: python_path.append(a[1]) or real(self, *a, **k)
    )
    sels = [np.s_[...], np.s_[1:20, 2:17:3, ::-1], np.s_[7, :, 4:9], np.s_[::5, ::-4, 6], np.s_[5:6, 9:, :3]]
    for sel in sels:
        np.testing.assert_array_equal(ds[sel], data[sel])
    assert python_path == []
    with use_native(False):  # the check can fail: the Python path is seen when it is taken
        np.testing.assert_array_equal(ds[1:3], data[1:3])
    assert python_path


@pytest.mark.parametrize("comp", ["zstd3", "blosc-lz4"])
def test_whole_chunk_writes_leave_nothing_to_the_python_path(monkeypatch, comp):
    """Every chunk of a region write that covers it (edge chunks too) is gathered, tested and compressed
    through the kernel: the Python path's encoder is never called (it is, with the kernel off)."""
    from altarr.dataset.chunk_codec import ChunkCodec

    rng = np.random.default_rng(6)
    data = rng.integers(1, 60000, (21, 18, 13)).astype("u2")
    data[:8, :8, :8] = 0  # whole chunks of the fill value: tested in C, not stored
    python_path = []
    real = ChunkCodec.encode_chunk
    monkeypatch.setattr(
        ChunkCodec, "encode_chunk", lambda self, *a, **k: python_path.append(a[1]) or real(self, *a, **k)
    )
    for on in (True, False):
        ds = aa.create_dataset(
            MemoryStore(), shape=data.shape, dtype="u2", chunks=(4, 4, 4), shards=(8, 8, 8),
            compressor=COMPRESSORS[comp], checksum=False,
        )  # fmt: skip
        with use_native(on):
            ds[...] = data
        np.testing.assert_array_equal(ds[...], data)
        assert (python_path == []) is on, len(python_path)
        assert len(_chunk_frames(ds)) == 6 * 5 * 4 - 8  # the 8 fill chunks are not stored


@pytest.mark.parametrize("comp", ["zstd3", "zstd0-checksum", "blosc-lz4"])
def test_kernel_writes_compress_into_the_groups_arena(comp):
    """The kernel's frames of a write group are views of the group's arena rows (one array whose pages
    are faulted in once and reused, not a fresh buffer per chunk), zstd frames too; each is a standard
    frame that announces the chunk's size, with zstd's checksum when the codec asks for it."""
    import zstandard

    from altarr.dataset import kernel

    ds = aa.create_dataset(
        MemoryStore(), shape=(8, 8, 8), dtype="u2", chunks=(4, 4, 4), shards=(8, 8, 8),
        compressor=COMPRESSORS[comp], checksum=False,
    )  # fmt: skip
    plan = ds._access.codec.native
    data = np.random.default_rng(2).integers(1, 1000, (8, 8, 8)).astype("u2")
    items = [((i, j, k), data[4 * i : 4 * i + 4, 4 * j : 4 * j + 4, 4 * k : 4 * k + 4]) for i in (0, 1)
             for j in (0, 1) for k in (0, 1)]  # fmt: skip
    items.append(((9, 9, 9), np.zeros((4, 4, 4), "u2")))  # the fill value: not stored
    arena = np.empty((len(items), ds._access.codec.encode_slot), np.uint8)
    frames, rows = kernel.encode(plan, items, arena)
    assert frames[-1] is None
    for (_, values), frame, row in zip(items[:-1], frames, rows, strict=False):
        assert np.shares_memory(frame, arena[row])
        decoded = ds._access.codec.chain.decode(bytes(frame), (4, 4, 4), "u2")
        np.testing.assert_array_equal(decoded, values)
        if comp.startswith("zstd"):
            params = zstandard.get_frame_parameters(bytes(frame))
            assert params.content_size == values.nbytes
            assert params.has_checksum == (comp == "zstd0-checksum")
