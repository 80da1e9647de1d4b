"""Lazy arrays over the engine's datasets (:func:`open`, :class:`DatasetFetch`), CF unpacking and the Zarr
v2 demo (docs/lazy-arrays.md, "Datasets").
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..dataset import Dataset, check_chunk_room, create_dataset, open_dataset
from ..errors import MetadataError
from .functions import altarr

__all__ = [
    "DatasetFetch",
    "CFDecoder",
    "open",
    "zarr_v2",
    "example_zarr",
]


def _scalar(v: Any) -> Any:
    if isinstance(v, list | tuple | np.ndarray) and np.size(v) == 1:
        return np.asarray(v).reshape(-1)[0].item()
    return v


def _choose_float_dtype(raw: np.dtype, scale: Any, offset: Any) -> np.dtype:
    """xarray's rule (``coding/variables.py::_choose_float_dtype``), always giving a float type."""
    if scale is not None or offset is not None:
        scale_type = np.dtype(type(scale)) if scale is not None else None
        offset_type = np.dtype(type(offset)) if offset is not None else None
        if (
            scale_type is not None
            and offset_type == scale_type
            and scale_type.kind == "f"
            and scale_type.itemsize >= 4
        ):
            if raw.kind in "iu" and raw.itemsize == 4:
                return np.dtype(np.float64)
            return scale_type
        if offset is not None:
            return np.dtype(np.float64)
        if scale_type is not None and scale_type.kind == "f" and scale_type.itemsize >= 4:
            return scale_type
        return np.dtype(np.float64)
    if raw.kind == "f" and raw.itemsize <= 4:
        return np.dtype(np.float32)
    if raw.kind in "iub" and raw.itemsize <= 2:
        return np.dtype(np.float32)
    return np.dtype(np.float64)


class CFDecoder:
    """CF unpacking of one variable: ``_Unsigned``, missing values, valid range, scale and offset."""

    def __init__(self, raw_dtype: np.dtype, attrs: dict[str, Any]) -> None:
        raw = np.dtype(raw_dtype)
        self.view: np.dtype | None = None
        unsigned = str(attrs.get("_Unsigned", "")).lower()
        if raw.kind == "i" and unsigned == "true":
            self.view = np.dtype(f"{raw.byteorder if raw.byteorder != '=' else ''}u{raw.itemsize}")
        elif raw.kind == "u" and unsigned == "false":
            self.view = np.dtype(f"{raw.byteorder if raw.byteorder != '=' else ''}i{raw.itemsize}")
        packed = self.view if self.view is not None else raw
        self.packed = packed
        missing: list[Any] = []
        for name in ("_FillValue", "missing_value"):
            if attrs.get(name) is not None:
                missing.extend(np.atleast_1d(np.asarray(attrs[name])).tolist())
        self.missing_nan = any(isinstance(v, float) and np.isnan(v) for v in missing)
        finite = [v for v in missing if not (isinstance(v, float) and np.isnan(v))]
        self.missing = np.asarray(finite).astype(packed) if finite else None
        vr = attrs.get("valid_range")
        lo = _scalar(attrs.get("valid_min"))
        hi = _scalar(attrs.get("valid_max"))
        if vr is not None and np.size(vr) == 2:
            lo, hi = np.asarray(vr).reshape(-1).tolist()
        self.valid_min = lo
        self.valid_max = hi
        self.scale = _scalar(attrs.get("scale_factor"))
        self.offset = _scalar(attrs.get("add_offset"))
        self.masks = self.missing is not None or self.missing_nan or lo is not None or hi is not None
        packs = self.scale is not None or self.offset is not None
        self.active = self.masks or packs or self.view is not None
        if self.masks or packs:
            self.dtype = _choose_float_dtype(packed, self.scale, self.offset)
        else:
            self.dtype = packed

    def __call__(self, raw: np.ndarray) -> np.ndarray:
        if not self.active:
            return raw
        if self.view is not None:
            raw = raw.view(self.view)
        mask = None
        if self.masks:
            mask = np.zeros(raw.shape, dtype=bool)
            if self.missing is not None:
                mask |= np.isin(raw, self.missing)
            if self.missing_nan and raw.dtype.kind in "fc":
                mask |= np.isnan(raw)
            if self.valid_min is not None:
                mask |= raw < self.valid_min
            if self.valid_max is not None:
                mask |= raw > self.valid_max
        out = raw.astype(self.dtype)
        if mask is not None:
            out[mask] = np.nan
        if self.scale is not None:
            out *= self.dtype.type(self.scale)
        if self.offset is not None:
            out += self.dtype.type(self.offset)
        return out


class DatasetFetch:
    """Fetch factory over an engine dataset: holds the location (or an opened :class:`~altarr.Dataset`,
    which pickles as its location) and options, never data; opens the dataset on first use in the calling
    process and drops it when pickled."""

    def __init__(self, path_or_url: Any, unpack: bool = False, storage_options: dict[str, Any] | None = None):
        if isinstance(path_or_url, os.PathLike):
            path_or_url = os.fspath(path_or_url)
        if isinstance(path_or_url, str) and "://" not in path_or_url:
            path_or_url = os.path.abspath(path_or_url)  # workers may run in another directory
        self.path_or_url = path_or_url
        self.unpack = bool(unpack)
        self.storage_options = dict(storage_options or {})
        self._lock = threading.Lock()
        self._ds: Any = None
        self._decoder: CFDecoder | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        return (DatasetFetch, (self.path_or_url, self.unpack, self.storage_options))

    def __repr__(self) -> str:
        return f"DatasetFetch({self.path_or_url!r}, unpack={self.unpack})"

    def __dask_tokenize__(self) -> Any:
        where = self.path_or_url
        return (
            "altarr.DatasetFetch",
            (where.store.identity, where.path) if isinstance(where, Dataset) else str(where),
            self.unpack,
            repr(sorted(self.storage_options.items())),
        )

    def dataset(self) -> Any:
        """The opened dataset (opened once per process, thread-safe)."""
        ds = self._ds
        if ds is None:
            with self._lock:
                if self._ds is None:
                    ds = self.path_or_url
                    if not isinstance(ds, Dataset):
                        ds = open_dataset(ds, mode="r", **self.storage_options)
                    self._decoder = CFDecoder(ds.dtype, ds.attrs.asdict() if self.unpack else {})
                    self._ds = ds
                ds = self._ds
        return ds

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the values this fetch returns (decoded when ``unpack``)."""
        self.dataset()
        assert self._decoder is not None
        return self._decoder.dtype

    def visit(self, chunks: np.ndarray, fn: Any) -> None:
        """Streaming form of a fetch: ``fn(i, values)`` per row, on the engine's pool, ``values`` valid only
        during the call (:meth:`altarr.Dataset.visit_chunks`); after a retried read the last call of a
        row holds its values."""
        ds = self.dataset()
        decoder = self._decoder
        assert decoder is not None
        ds.visit_chunks(chunks, lambda i, a: fn(i, decoder(a)))

    # --- shard versions: the lazy cache never combines chunks of two versions of one shard -------------
    def chunk_groups(self, chunks: np.ndarray) -> list[str] | None:
        """The store key of the shard holding each chunk, or ``None`` for an unsharded dataset."""
        ds = self.dataset()
        if ds.shards is None:
            return None
        rows = [tuple(r) for r in np.asarray(chunks, dtype=np.int64).tolist()]
        key_of: dict[tuple[int, ...], str] = {}
        for members in ds.group_by_shard(rows).values():  # one key per shard, not per chunk
            key_of.update(dict.fromkeys(members, ds.chunk_key(members[0])))
        return [key_of[r] for r in rows]

    def current_versions(self, groups: Sequence[str]) -> dict[str, Any] | None:
        """The current version of each shard where the store tells it cheaply, else ``None``
        (:meth:`altarr.Dataset.shard_versions`)."""
        versions: dict[str, Any] | None = self.dataset().shard_versions(list(groups))
        return versions

    def fetch_versioned(self, chunks: np.ndarray) -> tuple[list[np.ndarray], dict[str, Any]]:
        """:meth:`__call__` and the version of every shard it read (``None`` where the store reports
        none)."""
        versions: dict[str, Any] = {}
        return self(chunks, versions), versions

    def __call__(self, chunks: np.ndarray, versions: dict[str, Any] | None = None) -> list[np.ndarray]:
        ds = self.dataset()
        decoder = self._decoder
        assert decoder is not None
        fill = ds.fill_value if ds.fill_value is not None else 0
        out = []
        for coords, arr in zip(
            np.asarray(chunks).tolist(), ds.read_chunks(chunks, versions=versions), strict=True
        ):
            if arr is None:  # not stored: the fill value
                ext = tuple(min(c, n - i * c) for i, c, n in zip(coords, ds.chunks, ds.shape, strict=True))
                check_chunk_room(ext, ds.dtype, key=lambda: ds.chunk_key(coords), chunk=tuple(coords))
                arr = np.full(ext, fill, dtype=ds.dtype)
            out.append(decoder(arr))
        return out


def _dims_of(ds: Any) -> tuple[str, ...] | None:
    names = getattr(ds, "dimension_names", None)
    if names and all(isinstance(n, str) for n in names) and len(set(names)) == len(names):
        return tuple(names)
    dims = ds.attrs.get("_ARRAY_DIMENSIONS")
    if isinstance(dims, list) and len(dims) == ds.ndim and len(set(dims)) == len(dims):
        return tuple(str(d) for d in dims)
    return None


def open(path_or_url: Any, unpack: bool = False, **storage_options: Any) -> Any:
    """A lazy array over an N5 / Zarr v2 / Zarr v3 dataset (format detected from its metadata).

    One lazy chunk is one chunk of the dataset (the innermost of a sharded array); each batch of missing
    chunks is one ``read_chunks`` call. ``unpack`` applies the CF attributes (docs/lazy-arrays.md).
    ``storage_options`` go to the store.

    Example:
        >>> import tempfile, altarr as aa
        >>> x = aa.open(aa.example_zarr(tempfile.mkdtemp(), shape=(6, 4), chunks=(3, 2)))
        >>> x.shape, x.chunks, float(x.sum())
        ((6, 4), (3, 2), 276.0)
    """
    fetch = DatasetFetch(path_or_url, unpack=unpack, storage_options=storage_options)
    ds = fetch.dataset()
    return altarr(ds.shape, ds.chunks, fetch, dtype=fetch.dtype, dims=_dims_of(ds))


def zarr_v2(path: Any, unpack: bool = True, **storage_options: Any) -> Any:
    """A lazy array over a Zarr v2 array, CF-unpacked by default (see :func:`open`).

    Example:
        >>> import tempfile, altarr as aa
        >>> x = aa.zarr_v2(aa.example_zarr(tempfile.mkdtemp()))
        >>> x.shape, x.chunks, x[29, 49, 69]
        ((30, 50, 70), (7, 16, 20), np.float64(104999.0))
    """
    x = open(path, unpack=unpack, **storage_options)
    fmt = x._source.fetch.dataset().format
    if fmt != "zarr2":
        raise MetadataError(
            f"not a Zarr v2 array (found {fmt}); use altarr.open for any format", key=str(path)
        )
    return x


def example_zarr(
    path: str | os.PathLike[str] | None = None,
    shape: Sequence[int] = (30, 50, 70),
    chunks: Sequence[int] = (7, 16, 20),
) -> str:
    """Write a demo Zarr v2 array at ``path`` and return its path.

    zlib, float64, each value its own C-order flat position; written at ``path`` (replacing an array
    there) or, with ``path=None``, as ``example.zarr`` in a new temporary directory.

    Example:
        >>> import os, tempfile, zarr, altarr as aa
        >>> path = aa.example_zarr(os.path.join(tempfile.mkdtemp(), "demo.zarr"), shape=(3, 4), chunks=(2, 3))
        >>> os.path.basename(path), float(zarr.open_array(path, mode="r")[2, 3])
        ('demo.zarr', 11.0)
    """
    shp = tuple(int(s) for s in shape)
    chk = tuple(int(c) for c in chunks)
    if len(chk) != len(shp):
        raise ValueError(f"chunks {chk} do not match shape {shp}")
    if path is None:
        path = os.path.join(tempfile.mkdtemp(prefix="altarr-example-"), "example.zarr")
    path = os.fspath(path)
    ds = create_dataset(
        path,
        shape=shp,
        dtype="float64",
        chunks=chk,
        format="zarr2",
        compressor="zlib",
        fill_value=0.0,
        attributes={"_ARRAY_DIMENSIONS": [f"dim_{d}" for d in range(len(shp))]},
        overwrite=True,
    )
    row = int(np.prod(shp[1:], dtype=np.int64))
    for r0 in range(0, shp[0] if shp else 0, chk[0] if shp else 1):  # a 0-d array holds the fill value 0
        r1 = min(r0 + chk[0], shp[0])
        ds[r0:r1] = np.arange(r0 * row, r1 * row, dtype=np.float64).reshape((r1 - r0, *shp[1:]))
    return path
