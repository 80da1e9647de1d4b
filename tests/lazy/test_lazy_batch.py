"""``altarr.batch()``: reads of lazy arrays made inside the block are fetched together when it exits (one
fetch call per array; over a store one round per shard level plus one for data), asserted by fetch-call
and store round counts."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import altarr as aa
from altarr.lazy.batch import BatchError, BatchResult, current
from altarr.stores import ObstoreStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from netservers import http_server

SHAPE = (32, 32)
VALUES = (np.arange(32 * 32, dtype="uint16").reshape(SHAPE) * 7) % 5003
SELS = [np.s_[1:6, 2:9], np.s_[3:11, 5:7], np.s_[20:30, 1:3], np.s_[17, 3:14], np.s_[[3, 30, 3], 5:9]]


def _counting(values=VALUES, chunks=(4, 4)):
    calls: list[int] = []

    def fetch(coords):
        calls.append(len(coords))
        return [
            values[i * chunks[0] : (i + 1) * chunks[0], j * chunks[1] : (j + 1) * chunks[1]]
            for i, j in coords
        ]

    return aa.altarr(values.shape, chunks, fetch, dtype=values.dtype), calls


def _chunks_of(sels) -> set[tuple[int, int]]:
    out = set()
    for s in sels:
        mask = np.zeros(SHAPE, bool)
        mask[s] = True
        out |= {(int(i) // 4, int(j) // 4) for i, j in zip(*np.nonzero(mask), strict=True)}
    return out


def test_reads_in_a_batch_are_one_fetch_call_and_equal_numpy():
    x, calls = _counting()
    with aa.batch() as b:
        got = [x[s] for s in SELS]
        o = x.oindex[[2, 9], [4, 30]]
        v = x.vindex[[2, 9], [4, 30]]
        assert current() is b and len(b) == len(SELS) + 2
        assert calls == [] and not any(g.done() for g in got)
    assert current() is None
    assert len(calls) == 1 and calls[0] == len(_chunks_of(SELS) | {(0, 1), (0, 7), (2, 1), (2, 7)})
    for g, s in zip(got, SELS, strict=True):
        assert isinstance(g, BatchResult) and g.done()
        np.testing.assert_array_equal(g.result(), VALUES[s])
    np.testing.assert_array_equal(np.asarray(o), VALUES[np.ix_([2, 9], [4, 30])])
    np.testing.assert_array_equal(np.asarray(v, dtype="int64"), VALUES[[2, 9], [4, 30]])
    assert aa.stats(x)["fetch_calls"] == 1
    # outside the batch, a read is immediate again (its chunks are cached now: no fetch)
    np.testing.assert_array_equal(x[SELS[0]], VALUES[SELS[0]])
    assert len(calls) == 1


def test_one_fetch_per_array_and_nested_batches():
    x, xc = _counting()
    y, yc = _counting(VALUES[::-1].copy())
    with aa.batch():
        a = x[0:5, 0:5]
        with aa.batch() as inner:
            c = y[10:12, 3]
            assert len(inner) == 1
        assert c.done() and not a.done() and len(yc) == 1  # the inner batch was fetched at its exit
        b = y[0, :]
    assert (len(xc), len(yc)) == (1, 2)
    np.testing.assert_array_equal(a.result(), VALUES[0:5, 0:5])
    np.testing.assert_array_equal(b.result(), VALUES[::-1][0, :])
    np.testing.assert_array_equal(c.result(), VALUES[::-1][10:12, 3])


def test_result_before_exit_and_failed_block_raise():
    x, calls = _counting()
    with aa.batch():
        r = x[1]
        with pytest.raises(BatchError, match="not been fetched"):
            r.result()
    assert r.result().tolist() == VALUES[1].tolist()
    with pytest.raises(ZeroDivisionError), aa.batch():
        r = x[2]
        1 / 0  # noqa: B018
    assert len(calls) == 1  # the failed block fetched nothing
    with pytest.raises(BatchError, match="failed"):
        r.result()
    assert current() is None


def test_a_failing_fetch_fails_every_read_of_the_batch():
    def fetch(coords):
        raise OSError("backend down")

    x = aa.altarr(SHAPE, (4, 4), fetch, dtype="uint16")
    with pytest.raises(OSError, match="backend down"), aa.batch():
        a, b = x[0], x[5:9, 5]
    for r in (a, b):
        with pytest.raises(BatchError):
            r.result()


def test_batch_of_an_open_dataset_costs_one_round_per_level_plus_data():
    store = ObstoreStore("memory://")
    ds = aa.create_dataset(store, shape=SHAPE, dtype="uint16", chunks=(4, 4), shards=(16, 16))
    ds[...] = VALUES
    ds._access.index_cache.clear()
    x = aa.open(store)
    store.stats.reset()
    with aa.batch():
        got = [x[s] for s in SELS]
    for g, s in zip(got, SELS, strict=True):
        np.testing.assert_array_equal(g.result(), VALUES[s])
    assert store.stats.rounds == 2  # every touched shard's index, then all the chunks' ranges
    assert aa.stats(x)["fetch_calls"] == 1


def test_batch_over_http_rounds_against_a_loop(tmp_path):
    ds = aa.create_dataset(
        str(tmp_path / "a.zarr"), shape=SHAPE, dtype="uint16", chunks=(4, 4), shards=(16, 16)
    )
    ds[...] = VALUES
    with http_server(tmp_path) as (url, log):
        x = aa.open(f"{url}/a.zarr")
        log.reset()
        with aa.batch():
            got = [x[s] for s in SELS]
        batch_requests = log.requests()
        for g, s in zip(got, SELS, strict=True):
            np.testing.assert_array_equal(g.result(), VALUES[s])
        y = aa.open(f"{url}/a.zarr")
        log.reset()
        for s in SELS:
            np.testing.assert_array_equal(y[s], VALUES[s])
        assert aa.stats(x)["fetch_calls"] == 1 and aa.stats(y)["fetch_calls"] == len(SELS)
        assert batch_requests < log.requests()
