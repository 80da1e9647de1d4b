"""Adding a store takes one new module and one registration (``toy_store.py``): it passes the conformance
suite and serves arrays through ``altarr.open``/``store_from_url`` by its URL scheme."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

import altarr
from altarr.stores import store_from_url
from store_conformance import StoreConformance
from toy_store import ToyStore


class TestToyStore(StoreConformance):
    @pytest.fixture
    def store(self):
        store, prefix = store_from_url(f"toy://{uuid.uuid4().hex}", mode="w")
        assert isinstance(store, ToyStore) and prefix == ""
        yield store


@pytest.mark.parametrize("format", ["zarr3", "zarr2", "n5"])
def test_an_array_on_the_toy_store(format):
    url = f"toy://{uuid.uuid4().hex}"
    data = np.arange(600, dtype="<i4").reshape(20, 30)
    kw = {"shards": (10, 30)} if format == "zarr3" else {}
    ds = altarr.create_dataset(url, shape=data.shape, dtype="<i4", chunks=(5, 10), format=format, **kw)
    ds[:] = data
    again = altarr.open(url)  # a lazy array over the dataset, read through the registered scheme
    np.testing.assert_array_equal(np.asarray(again[3:17, 4:29]), data[3:17, 4:29])
    ro = altarr.open_dataset(url)
    assert ro.store.read_only and isinstance(ro.store, ToyStore)
    np.testing.assert_array_equal(ro[:], data)
