"""Issue 12: the docs' table of NumPy functions matches the code, streamed comparisons' fetch counts,
Dataset fancy selections in one batched call, lazy views keep the fetch contract, small things."""

from __future__ import annotations

import ast
import inspect
import pathlib
import re

import numpy as np
import pytest

import altarr as aa
from _lazy_support import lazy
from altarr.errors import CodecError, ReadOnlyError
from altarr.lazy.numpy_api import FUNCTION_KINDS
from altarr.stores import MemoryStore

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "lazy-arrays.md"


def test_docs_table_lists_exactly_the_codes_function_kinds():
    rows = dict(re.findall(r"^\| `np\.(\w+)` \| (streamed|lazy|refused) \|$", DOCS.read_text(), re.M))
    assert rows == FUNCTION_KINDS


def test_streamed_functions_never_materialize_and_refused_ones_raise():
    data = np.arange(24.0).reshape(4, 6)
    x, _ = lazy(data, (2, 4))
    calls = {
        "allclose": lambda f: f(x, data),
        "array_equal": lambda f: f(x, data),
        "array_equiv": lambda f: f(x, data),
        "argwhere": lambda f: f(x > 3),
        "flatnonzero": lambda f: f(x),
        "nonzero": lambda f: f(x),
    }
    for name, kind in FUNCTION_KINDS.items():
        f = getattr(np, name)
        if kind == "streamed":
            with aa.set_options(max_materialize=0):
                got = calls.get(name, lambda f: f(x))(f)
            want = calls.get(name, lambda f: f(data))(f) if name not in calls else None
            if want is not None:
                np.testing.assert_allclose(got, want)
        elif kind == "refused":
            with pytest.raises(ReadOnlyError):
                f(x, np.zeros_like(data, dtype=bool), 1.0) if name in ("place", "putmask") else (
                    f(x, 1.0)
                    if name in ("copyto", "fill_diagonal")
                    else f(x, np.array([[0]]), 1.0, 0)
                    if name == "put_along_axis"
                    else f(x, [0], [1.0])
                )
    assert aa.stats(x)["materialize"] == 0


def test_numpy_audit_finds_only_the_handled_try_except_conversions():
    """Every NumPy function that converts an argument inside try/except Exception is streamed here."""
    src = inspect.getsource(np._core.numeric)
    found = set()
    for fn in ast.walk(ast.parse(src)):
        if not isinstance(fn, ast.FunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id == "Exception" for h in node.handlers
            ):
                calls = {
                    getattr(c.func, "id", None)
                    for b in node.body
                    for c in ast.walk(b)
                    if isinstance(c, ast.Call)
                }
                if "asarray" in calls:
                    found.add(fn.name)
    assert found == {"array_equal", "array_equiv"}
    assert all(FUNCTION_KINDS[n] == "streamed" for n in found)


def test_equal_arrays_read_each_chunk_once_and_a_first_batch_difference_stops_after_one_call():
    data = np.arange(100.0).reshape(10, 10)
    for func in (np.array_equal, np.array_equiv, np.allclose):
        x, fetch = lazy(data, (2, 5))  # 10 chunks
        with aa.set_options(batch_chunks=3, max_materialize=0):
            assert func(x, data)
        assert sorted(fetch.fetched) == sorted({(i, j) for i in range(5) for j in range(2)})
        assert len(fetch.calls) == 4  # ceil(10 / 3)
        other = data.copy()
        other[0, 0] = -1
        x, fetch = lazy(data, (2, 5))
        with aa.set_options(batch_chunks=3, max_materialize=0):
            assert not func(x, other)
        assert len(fetch.calls) == 1 and len(fetch.fetched) == 3
        assert aa.stats(x)["chunks_cached"] == 0


def test_dataset_fancy_selections_are_one_batched_read():
    """A fancy selection costs the store requests of one batched read_chunks of the chunks it touches."""
    store = MemoryStore()
    ds = aa.create_dataset(store, shape=(8, 8), dtype="i4", chunks=(2, 2), shards=(4, 4))
    data = np.arange(64, dtype="i4").reshape(8, 8)
    ds[...] = data
    cases = [
        (lambda d: d[[0, 7, 3], [1, 6, 2]], data[[0, 7, 3], [1, 6, 2]], [(0, 0), (3, 3), (1, 1)]),
        (lambda d: d[data > 50], data[data > 50], [(3, 1), (3, 2), (3, 3), (2, 3)]),
        (lambda d: d.oindex[[0, 7], [6, 1]], data[np.ix_([0, 7], [6, 1])], [(0, 3), (0, 0), (3, 3), (3, 0)]),
        (lambda d: d.vindex[[0, 7], [6, 1]], data[[0, 7], [6, 1]], [(0, 3), (3, 0)]),
    ]
    for select, want, chunks in cases:
        store.stats.reset()
        np.testing.assert_array_equal(select(aa.open_dataset(store)), want)
        fancy = store.stats.reads
        store.stats.reset()
        aa.open_dataset(store).read_chunks(chunks)
        assert fancy <= store.stats.reads, (fancy, store.stats.reads)


def test_lazy_views_keep_one_fetch_call_per_batch():
    data = np.arange(60.0).reshape(3, 4, 5)
    x, fetch = lazy(data, (2, 2, 5))
    with aa.set_options(batch_chunks=4, cache_bytes=0):
        assert float(x.T.sum()) == data.sum()
        assert len(fetch.calls) == 1  # 4 chunks, one batch
        fetch.calls.clear()
        np.testing.assert_array_equal(x.swapaxes(0, 2)[::-1, 1], data.swapaxes(0, 2)[::-1, 1])
        assert len(fetch.calls) == 1
        fetch.calls.clear()
        y = np.concatenate([x[...].view() * 0 + x.sum() * 0 + data, data])  # NumPy data: NumPy's result
        assert y.shape == (6, 4, 5)
        z = np.stack([x, x], axis=1)
        assert aa.is_altarr(z) and z.shape == (3, 2, 4, 5)
        fetch.calls.clear()
        np.testing.assert_array_equal(z[...], np.stack([data, data], axis=1))
        assert len(fetch.calls) == 4  # 8 chunks, 2 batches of 4: one call per batch and stacked array
    x, fetch = lazy(data, (2, 4, 5))  # chunks span the trailing dimensions: ravel stays lazy
    r = x.ravel()
    assert aa.is_altarr(r) and r.chunks == (40,)
    np.testing.assert_array_equal(r[7:50], data.ravel()[7:50])
    np.testing.assert_array_equal(x.flatten()[[0, 59]], data.flatten()[[0, 59]])
    np.testing.assert_array_equal(x.mT[...], data.mT)  # the last two axes swapped, as NumPy's mT
    assert x.item(59) == 59.0 and x.item(1, 2, 3) == data[1, 2, 3] and isinstance(x.item(0), float)
    assert x.argmax() == 59 and (x.argmin(axis=2) == 0).all()


def test_small_things(tmp_path):
    ns: dict = {}
    exec("from altarr import *", ns)
    assert "open" not in ns and "altarr" in ns
    path = aa.example_zarr(tmp_path / "e.zarr", shape=(4,), chunks=(2,))
    assert path == str(tmp_path / "e.zarr")
    x = aa.open(path)
    assert f"nchunks={x.nchunks}" in repr(x) and x.nchunks == (2,)
    ds = aa.create_dataset(
        str(tmp_path / "f.zarr"),
        shape=np.array([4]),
        dtype="i2",
        chunks=np.array([2]),
        fill_value=np.int16(3),
    )
    assert "np." not in repr(ds) and repr(ds.fill_value) == "3"
    with pytest.raises(Exception) as e:
        ds.read_chunk((np.int64(5),))
    assert "np.int64" not in str(e.value)
    ds[...] = 1
    (tmp_path / "f.zarr" / "c" / "1").write_bytes(b"garbage")
    with pytest.raises(CodecError) as e:
        aa.open_dataset(str(tmp_path / "f.zarr"))[...]
    assert e.value.byte_range == (0, 7) and "byte_range=(0, 7)" in str(e.value)
