"""Region reads and writes (ds[sel], ds[sel] = v) equal NumPy's on the same data, for every format."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import altarr as aa
from altarr.errors import ReadOnlyError, SelectionError
from altarr.stores import MemoryStore

FORMATS = [
    ("zarr3", None),
    ("zarr3", "shard"),
    ("zarr3", "nested"),
    ("zarr2", None),
    ("n5", None),
    ("n5", "shard"),
]


def _make(fmt, layout, shape, chunks, dtype="int32", fill_value=0):
    shards = None
    if layout == "shard":
        shards = tuple(c * 2 for c in chunks)
    elif layout == "nested":
        shards = [tuple(c * 2 for c in chunks), tuple(c * 4 for c in chunks)]
    return aa.create_dataset(
        MemoryStore(),
        shape=shape,
        dtype=dtype,
        chunks=chunks,
        shards=shards,
        format=fmt,
        fill_value=fill_value,
    )


def _slices(draw, shape):
    sel = []
    for n in shape:
        kind = draw(st.sampled_from(["slice", "int", "all"]))
        if kind == "int":
            sel.append(draw(st.integers(-n, n - 1)))
        elif kind == "all":
            sel.append(slice(None))
        else:
            start = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
            stop = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
            step = draw(st.one_of(st.none(), st.sampled_from([1, 2, 3, -1, -2, 5])))
            sel.append(slice(start, stop, step))
    return tuple(sel)


@st.composite
def cases(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 13)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, 5)) for _ in range(ndim))
    fmt = draw(st.sampled_from(FORMATS))
    return fmt, shape, chunks, _slices(draw, shape), _slices(draw, shape)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_regions_match_numpy(case):
    (fmt, layout), shape, chunks, write_sel, read_sel = case
    fill = 0 if fmt == "n5" else -1  # N5 has no fill value: missing blocks read as 0
    ds = _make(fmt, layout, shape, chunks, fill_value=fill)
    ref = np.full(shape, fill, dtype="int32")
    rng = np.random.default_rng(0)
    values = rng.integers(-1000, 1000, size=ref[write_sel].shape).astype("int32")
    ds[write_sel] = values
    ref[write_sel] = values
    np.testing.assert_array_equal(ds[read_sel], ref[read_sel])
    np.testing.assert_array_equal(ds[...], ref)
    # and through the chunk API: every chunk holds the clipped piece of the reference
    grid = ds._access.grid
    for c in [tuple(0 for _ in shape), tuple(g - 1 for g in grid.grid_shape(0))]:
        a = ds.read_chunk(c)
        piece = ref[tuple(slice(i * n, (i + 1) * n) for i, n in zip(c, chunks, strict=True))]
        if a is None:
            assert (piece == fill).all()
        else:
            np.testing.assert_array_equal(a, piece)


def test_scalar_broadcast_and_newaxis():
    ds = _make("zarr3", "shard", (9, 10), (2, 3))
    ds[2:7, 1:9] = 4
    ref = np.zeros((9, 10), "int32")
    ref[2:7, 1:9] = 4
    np.testing.assert_array_equal(ds[None, 1:5, ..., None], ref[None, 1:5, ..., None])
    assert ds[3, 4] == 4 and ds[3, 4].shape == ()


def test_region_write_covering_whole_shards_never_reads():
    store = MemoryStore()
    ds = aa.create_dataset(store, shape=(16, 16), dtype="uint8", chunks=(4, 4), shards=(8, 8))
    ds[...] = 1
    store.stats.reset()
    ds[0:8, 8:16] = 2  # exactly shard (0, 1)
    assert store.stats.reads == 0 and store.stats.writes == 1
    store.stats.reset()
    ds[1:3, 1:3] = 3  # inside one chunk of shard (0, 0): one read, one write
    assert store.stats.reads == 1 and store.stats.writes == 1
    expect = np.ones((16, 16), "uint8")
    expect[0:8, 8:16] = 2
    expect[1:3, 1:3] = 3
    np.testing.assert_array_equal(ds[...], expect)


def test_region_read_is_one_batched_call_per_level():
    store = MemoryStore()
    ds = aa.create_dataset(store, shape=(64, 64), dtype="uint8", chunks=(4, 4), shards=(16, 16))
    ds[...] = np.arange(64 * 64, dtype="uint8").reshape(64, 64)
    store.stats.reset()
    calls = []
    for name in ("get_ranges", "get_ranges_versioned", "get_ranges_sized"):
        orig = getattr(store, name)

        def spy(requests, _orig=orig):
            calls.append(len(requests))
            return _orig(requests)

        setattr(store, name, spy)
    ds[5:7, 3:60]  # 15 chunks in 4 shards: one call for the indexes, one for the chunks
    assert len(calls) == 2 and calls[0] == 4


def test_bad_selections_and_read_only():
    ds = _make("zarr3", None, (4, 5), (2, 2))
    with pytest.raises(SelectionError):
        ds[4, 0]
    with pytest.raises(IndexError):
        ds[0, 0, 0]
    with pytest.raises(SelectionError, match="out of bounds"):
        ds[[0, 4], :]  # advanced indexing is NumPy's since issue 12; out of bounds is still refused
    with pytest.raises(SelectionError):
        ds[1.5]
    with pytest.raises(ValueError, match="broadcast"):
        ds[0:2, 0:2] = np.zeros((3, 3))
    ro = aa.open_dataset(ds.store, mode="r")
    with pytest.raises(ReadOnlyError):
        ro[0, 0] = 1
    with pytest.raises(ReadOnlyError):
        ro.write_chunk((0, 0), np.zeros((2, 2)))
    with pytest.raises(ReadOnlyError):
        ro.attrs["x"] = 1


def test_numpy_conversion():
    ds = _make("zarr3", "shard", (5, 6), (2, 3))
    ds[...] = np.arange(30).reshape(5, 6)
    np.testing.assert_array_equal(np.asarray(ds), np.arange(30).reshape(5, 6))
    assert np.asarray(ds, dtype="f8").dtype == np.float64
    with pytest.raises(ValueError, match="copy"):
        np.asarray(ds, copy=False)


def test_a_partial_write_of_an_unstored_chunk_keeps_every_bit_of_a_uint64():
    ds = aa.create_dataset("memory://", shape=(4, 4), dtype="uint64", chunks=(2, 2), shards=(4, 4))
    ds[1, 1] = 2**63 + 1  # merged into the fill value of a chunk that is not stored yet
    ds[0, 0] = 2**64 - 1
    want = np.zeros((4, 4), "uint64")
    want[1, 1], want[0, 0] = 2**63 + 1, 2**64 - 1
    np.testing.assert_array_equal(ds[...], want)
    assert ds[...].dtype == np.dtype("uint64")


def test_visit_chunks_hands_unstored_chunks_over_in_the_dataset_dtype_whatever_the_fill_value_type():
    """A plain Python fill value (a format plug-in's spec) still gives unstored chunks of the dataset's
    dtype to ``visit_chunks`` callbacks and region reads."""
    import dataclasses

    from altarr.dataset.dataset import Dataset
    from altarr.formats import get_format

    store = MemoryStore()
    made = aa.create_dataset(store, shape=(4,), dtype="f4", chunks=(2,), compressor=None)
    made[0:2] = 1.5
    ds = Dataset(store, "", dataclasses.replace(made.spec, fill_value=0), get_format("zarr3"), mode="r")
    seen = {}
    ds.visit_chunks([(0,), (1,)], lambda i, a: seen.__setitem__(i, (a.dtype, a.tolist())))
    assert seen == {0: (np.dtype("f4"), [1.5, 1.5]), 1: (np.dtype("f4"), [0.0, 0.0])}
    got = ds[1:4]
    assert got.dtype == np.dtype("f4") and got.tolist() == [1.5, 0.0, 0.0]


@pytest.mark.parametrize("shards", [(4,), None])
def test_a_partial_write_of_an_unstored_chunk_keeps_the_dtype_of_a_plain_python_fill_value(shards):
    """A spec's fill value may be a plain Python number (a format plug-in may hand over what it was
    given): the chunk a partial write merges into still has the dataset's dtype."""
    import dataclasses

    from altarr.dataset.dataset import Dataset
    from altarr.formats import get_format

    store = MemoryStore()
    made = aa.create_dataset(store, shape=(8,), dtype="f4", chunks=(2,), shards=shards, compressor=None)
    ds = Dataset(store, "", dataclasses.replace(made.spec, fill_value=0), get_format("zarr3"), mode="r+")
    ds[0:1] = 1.5
    ds[5:6] = -0.5
    np.testing.assert_array_equal(aa.open_dataset(store)[...], [1.5, 0, 0, 0, 0, -0.5, 0, 0])


@pytest.mark.parametrize("dtype", ["uint16", ">f8"])
def test_a_result_of_a_mebibyte_or_more_starts_on_a_cache_line(dtype):
    """From 1 MiB on a region read's result starts on a 64-byte line (threads decoding neighbouring chunks
    into it then share no line: benchmarks/README.md, "Results start on a cache line"), and is otherwise a
    fresh array: values, dtype, writeable, C order, holding at most 63 bytes more than its own."""
    values = np.arange(64 * 128 * 128).reshape(64, 128, 128).astype(dtype)
    ds = _make("zarr3", "shard", values.shape, (16, 32, 32), dtype=dtype)
    ds[...] = values
    for sel in [np.s_[...], np.s_[0:40, 3:, :], np.s_[7, :, :], np.s_[0:2]]:
        got = ds[sel]
        np.testing.assert_array_equal(got, values[sel])
        assert got.dtype == ds.dtype and got.flags.writeable and got.flags.c_contiguous
        assert got.base is None or got.base.nbytes < got.nbytes + 64
        assert got.ctypes.data % 64 == 0 or got.nbytes < 1 << 20
