"""The R package's example: a 10x7 array in 4x3 chunks whose values are their own positions (here
0-based C-order positions), through every entry point, with the fetch counts one would predict.

The chunk grid is 3x3; chunk (i, j) covers rows 4i..4i+3 and columns 3j..3j+2, clipped at the edge.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import altarr as aa
from _lazy_support import ArrayFetch
from altarr.errors import MaterializeError

SHAPE, CHUNKS = (10, 7), (4, 3)
VALUES = np.arange(70.0).reshape(SHAPE)


class PositionFetch:
    """fetch(chunks): each chunk's values are their own C-order positions (module level: picklable)."""

    def __call__(self, chunks: np.ndarray) -> list[np.ndarray]:
        out = []
        for i, j in chunks:
            rows = np.arange(4 * i, min(4 * i + 4, 10))
            cols = np.arange(3 * j, min(3 * j + 3, 7))
            out.append((rows[:, None] * 7 + cols).astype(float))
        return out


def counts(x):
    s = aa.stats(x)
    return s["fetch_calls"], s["chunks_fetched"], s["chunks_cached"]


def test_every_entry_point_with_predicted_counts():
    x = aa.altarr(SHAPE, CHUNKS, PositionFetch(), dims=("row", "col"))
    assert aa.is_altarr(x) and x.nchunks == (3, 3) and counts(x) == (0, 0, 0)

    assert x[0, 0] == 0.0 and counts(x) == (1, 1, 1)
    np.testing.assert_array_equal(x[:, 0], VALUES[:, 0])  # (1,0),(2,0) in one call; (0,0) cached
    assert counts(x) == (2, 3, 3)
    assert x[9, 6] == 69.0 and counts(x) == (3, 4, 4)  # the clipped corner chunk (2, 2)

    p = aa.plan(x, slice(3, 5), 1)
    assert p[
        ["chunk_row", "chunk_col", "start_row", "start_col", "extent_row", "extent_col"]
    ].values.tolist() == [
        [0, 0, 0, 0, 4, 3],
        [1, 0, 4, 0, 4, 3],
    ]
    assert p["elements"].tolist() == [1, 1] and p["cached"].tolist() == [True, True]
    full = aa.plan(x)
    assert len(full) == 9 and full["elements"].sum() == 70
    assert full["extent_col"].tolist() == [3, 3, 1] * 3 and full["extent_row"].tolist() == [4] * 6 + [2] * 3
    assert counts(x) == (3, 4, 4)  # planning reads nothing

    got = aa.extract(x, [1, 8], None)  # chunk rows 0 and 2, all 3 chunk columns; 3 of 6 cached
    np.testing.assert_array_equal(got, VALUES[[1, 8]])
    assert counts(x) == (4, 7, 7) and aa.stats(x)["hyperslab"] == 1
    np.testing.assert_array_equal(aa.extract(x, 8, [6, 0], drop=False), [[62.0, 56.0]])

    np.testing.assert_array_equal(x.vindex[[0, 9], [6, 0]], [6.0, 63.0])  # chunks (0,2), (2,0): cached
    np.testing.assert_array_equal(x.flat[[35, 69]], [35.0, 69.0])
    np.testing.assert_array_equal(x[[5, 1], 2:0:-1], VALUES[[5, 1], 2:0:-1])
    assert counts(x) == (4, 7, 7)
    np.testing.assert_array_equal(x.oindex[[4, 5], [3, 4]], [[31.0, 32.0], [38.0, 39.0]])  # chunk (1, 1)
    assert counts(x) == (5, 8, 8)

    with aa.set_options(batch_chunks=4):
        assert x.sum() == 2415.0  # only (1, 2) is missing: one call, nothing added to the cache
        assert counts(x) == (6, 9, 8)
        aa.reset(x)
        assert counts(x) == (0, 0, 0)
        assert x.mean() == 34.5 and counts(x) == (3, 9, 0)  # ceil(9 / 4) calls
        np.testing.assert_array_equal(np.max(x, axis=0), VALUES[-1])
        assert not np.isnan(x).any() and int((x > 60).sum()) == 9
        assert counts(x) == (12, 36, 0) and aa.stats(x)["reduce"] == 4

    np.testing.assert_array_equal(np.asarray(x), VALUES)  # materialize: one call for all 9 chunks
    assert counts(x) == (13, 45, 9) and aa.stats(x)["materialize"] == 1
    with aa.set_options(max_materialize=50):
        with pytest.raises(MaterializeError, match="70 elements"):
            np.sort(x)
    s = aa.stats(x)
    assert s["extract_subset"] == 0 and s["hyperslab"] == 0  # reset above zeroed the earlier ones

    y = pickle.loads(pickle.dumps(x))
    assert counts(y) == (0, 0, 0) and y.dims == ("row", "col")
    np.testing.assert_array_equal(y[...], VALUES)

    d = x.to_dask()
    assert d.chunks == ((4, 4, 2), (3, 3, 1)) and float(d.sum().compute()) == 2415.0
    da = x.to_xarray(name="pos")
    assert da.dims == ("row", "col") and float(da.isel(row=9, col=6)) == 69.0


def test_the_same_example_with_flat_chunks_and_an_async_fetch():
    sync = ArrayFetch(VALUES, CHUNKS, flat=True)

    async def fetch(chunks):
        return sync(chunks)

    x = aa.altarr(SHAPE, CHUNKS, fetch)
    np.testing.assert_array_equal(x[...], VALUES)
    assert aa.stats(x)["fetch_calls"] == 1 and aa.stats(x)["chunks_fetched"] == 9
