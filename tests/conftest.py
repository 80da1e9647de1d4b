"""Shared fixtures: stores of every local kind, and a seeded random generator."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture(params=["memory", "local"])
def store(request, tmp_path):
    """A fresh store: in memory, or local files under tmp_path."""
    from altarr.stores import LocalStore, MemoryStore

    if request.param == "memory":
        return MemoryStore()
    return LocalStore(tmp_path / "store")
