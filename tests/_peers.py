"""Helpers shared by the interoperability tests: deterministic values of any dtype, Zarr v3 codec chains
as JSON (what altarr, zarr-python and tensorstore all accept), and thin wrappers over the peers.

The peers are used for real (zarr-python 3.1, tensorstore, z5py); nothing here mocks them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import tensorstore as ts

import altarr as aa

__all__ = [
    "sample",
    "fill_array",
    "assert_same",
    "bytes_codec",
    "shard_codec",
    "chain_json",
    "ts_read",
    "ts_fill_value",
    "altarr_chunks_match",
    "chunk_slices",
    "all_chunks",
    "read_json",
]


def sample(shape: Sequence[int], dtype: Any, seed: int = 0) -> np.ndarray:
    """Deterministic values of ``dtype`` spanning its range; floats include NaN, +-inf and -0.0."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    n = math.prod(shape)
    if dt.kind == "b":
        flat = rng.random(n) < 0.5
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        flat = rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)
    elif dt.kind == "f":
        flat = (rng.standard_normal(n) * 1000).astype(dt)
        flat[: min(n, 4)] = np.array([np.nan, np.inf, -np.inf, -0.0], dtype=dt)[: min(n, 4)]
    elif dt.kind == "c":
        part = np.dtype(f"f{dt.itemsize // 2}")
        flat = (rng.standard_normal(n) * 1000).astype(part) + 1j * (rng.standard_normal(n) * 10).astype(part)
        flat = flat.astype(dt)
        if n:
            flat[0] = complex(np.nan, 1.0)
    else:  # pragma: no cover - the tests only use the types above
        raise TypeError(dt)
    return np.asarray(flat, dtype=dt).reshape(shape)


def fill_array(shape: Sequence[int], dtype: Any, fill_value: Any) -> np.ndarray:
    return np.full(tuple(shape), fill_value, dtype=np.dtype(dtype))


def assert_same(got: Any, expected: np.ndarray, what: str = "") -> None:
    """Equal values, dtype kind and shape (NaN equals NaN, at any position)."""
    got = np.asarray(got)
    assert got.shape == expected.shape, (what, got.shape, expected.shape)
    assert got.dtype == expected.dtype, (what, got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected, err_msg=what)


# --- Zarr v3 codec JSON -------------------------------------------------------------------------------------
def bytes_codec(endian: str = "little") -> dict[str, Any]:
    return {"name": "bytes", "configuration": {"endian": endian}}


def shard_codec(
    chunk_shape: Sequence[int], codecs: list[dict], index_location: str = "end"
) -> dict[str, Any]:
    """A ``sharding_indexed`` codec with the recommended index chain (little-endian bytes + crc32c)."""
    return {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": list(chunk_shape),
            "codecs": codecs,
            "index_codecs": [bytes_codec("little"), {"name": "crc32c"}],
            "index_location": index_location,
        },
    }


def chain_json(
    chunks: Sequence[int],
    shards: Sequence[int] | Sequence[Sequence[int]] | None,
    inner: list[dict[str, Any]],
    index_location: str = "end",
) -> tuple[list[dict[str, Any]], tuple[int, ...]]:
    """The ``codecs`` of an array whose chunks are encoded by ``inner``, nested in ``shards`` (one shape
    or shapes from the innermost level out), and the outer grid's chunk shape."""
    if shards is None:
        return list(inner), tuple(chunks)
    levels = [tuple(chunks)]
    levels += [tuple(s) for s in shards] if isinstance(shards[0], Sequence) else [tuple(shards)]
    codecs = list(inner)
    for i in range(1, len(levels)):
        codecs = [shard_codec(levels[i - 1], codecs, index_location)]
    return codecs, levels[-1]


# --- peers --------------------------------------------------------------------------------------------------
def ts_read(path: str | Path, driver: str = "zarr3") -> np.ndarray:
    """Read a whole array with tensorstore."""
    t = ts.open({"driver": driver, "kvstore": {"driver": "file", "path": str(path)}}).result()
    return np.asarray(t.read().result())


def ts_fill_value(path: str | Path, driver: str = "zarr3") -> Any:
    t = ts.open({"driver": driver, "kvstore": {"driver": "file", "path": str(path)}}).result()
    return t.fill_value


def read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text())


# --- chunk-level comparisons --------------------------------------------------------------------------------
def all_chunks(ds: aa.Dataset) -> list[tuple[int, ...]]:
    return [tuple(int(v) for v in c) for c in np.ndindex(*ds.grid_shape)]


def chunk_slices(ds: aa.Dataset, c: Sequence[int]) -> tuple[slice, ...]:
    return tuple(slice(i * n, min((i + 1) * n, s)) for i, n, s in zip(c, ds.chunks, ds.shape, strict=True))


def altarr_chunks_match(ds: aa.Dataset, expected: np.ndarray) -> tuple[int, int]:
    """``read_chunks`` of every chunk of ``ds`` in one call agrees with ``expected``: a stored chunk equals
    its (edge-clipped) slice, a missing one (``None``) is all fill value there. Returns (stored, missing)."""
    coords = all_chunks(ds)
    got = ds.read_chunks(coords)
    assert len(got) == len(coords)
    stored = missing = 0
    fill = fill_array((), ds.dtype, ds.fill_value)
    for c, a in zip(coords, got, strict=True):
        want = expected[chunk_slices(ds, c)]
        if a is None:
            missing += 1
            np.testing.assert_array_equal(want, np.broadcast_to(fill, want.shape), err_msg=f"chunk {c}")
        else:
            stored += 1
            assert_same(a, want, f"chunk {c}")
    return stored, missing
